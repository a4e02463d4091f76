// DOT export: structure (clusters, one node per stage, one edge per queue),
// escaping, annotation with a run's statistics, and acceptance by Graphviz
// (`dot -Tsvg`) when it is installed.
#include <catch2/catch.hpp>

#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <string>

#include <sinew/engine/dot.hpp>

#include "test_common.hpp"

using namespace sinew;
using namespace sinew_test;

namespace {

std::size_t count(const std::string& s, const std::string& what) {
  std::size_t n = 0;
  for (std::size_t at = s.find(what); at != std::string::npos; at = s.find(what, at + what.size())) ++n;
  return n;
}

/// Lines that start, after indentation, with `what`.
std::size_t lines_starting(const std::string& s, const std::string& what) {
  std::size_t n = 0, at = 0;
  while (at < s.size()) {
    std::size_t end = s.find('\n', at);
    if (end == std::string::npos) end = s.size();
    std::size_t b = s.find_first_not_of(' ', at);
    if (b < end && s.compare(b, what.size(), what) == 0) ++n;
    at = end + 1;
  }
  return n;
}

const char* const graphviz = "/usr/bin/dot";

/// Runs Graphviz on `text`: true if it produced an SVG without a warning.
bool graphviz_accepts(const std::string& text) {
  const char* dot = graphviz;
  char in_path[] = "/tmp/sinew-dot-XXXXXX";
  int fd = mkstemp(in_path);
  REQUIRE(fd >= 0);
  close(fd);
  std::ofstream(in_path) << text;
  std::string out_path = std::string(in_path) + ".svg";
  std::string cmd = std::string(dot) + " -Tsvg " + in_path + " -o " + out_path + " 2>" + out_path + ".err";
  int rc = std::system(cmd.c_str());
  std::ifstream svg(out_path);
  std::string body((std::istreambuf_iterator<char>(svg)), std::istreambuf_iterator<char>());
  std::ifstream err(out_path + ".err");
  std::string errors((std::istreambuf_iterator<char>(err)), std::istreambuf_iterator<char>());
  INFO("dot said: " << errors);
  std::remove(in_path);
  std::remove(out_path.c_str());
  std::remove((out_path + ".err").c_str());
  CHECK(errors.empty());  // no syntax warnings either
  return rc == 0 && body.find("<svg") != std::string::npos;
}

}  // namespace

/// A pipeline of nested farms with a name that needs escaping.
graph nested_graph() {
  node inner = map<twice>();
  inner.named("we \"quote\" \\ and <angle>");
  return graph(pipeline(map<inc>(), farm(pipeline(inner, farm(map<inc>(), 2)), 3, farm_order::unordered),
                        for_loop(map<inc>(), 2)));
}

TEST_CASE("to_dot draws clusters, one node per stage and one edge per queue", "[dot]") {
  graph g = nested_graph();
  REQUIRE(g.stage_count() == 4);
  std::string d = to_dot(g);
  INFO(d);
  CHECK(d.rfind("digraph sinew {", 0) == 0);
  CHECK(d.back() == '\n');
  for (int i = 0; i < 4; ++i) CHECK(lines_starting(d, "s" + std::to_string(i) + " [label=") == 1);
  CHECK(count(d, " -> ") == 5);  // source, 3 inner queues, sink
  CHECK(count(d, "subgraph cluster_") == 4);  // pipeline, farm, pipeline, farm
  CHECK(d.find("label=\"farm(unordered) x3\"") != std::string::npos);
  CHECK(d.find("label=\"farm x2\"") != std::string::npos);
  CHECK(d.find("we \\\"quote\\\" \\\\ and <angle>") != std::string::npos);  // escaped
  CHECK(d.find("cap ") != std::string::npos);
  CHECK(d.find("mpmc") != std::string::npos);  // into the farm
}

TEST_CASE("to_dot annotates stages and queues with a run's statistics", "[dot]") {
  const std::size_t n = 50;
  auto in = make_items(n, 4);
  std::vector<std::vector<int>> out;
  graph g(pipeline(map<inc>(), farm(map<twice>(), 2)), {.capacity = 3});
  auto f = g.run(in, out);
  f.get();
  run_stats st = f.stats();
  std::string d = to_dot(g, &st);
  INFO(d);
  CHECK(count(d, "units 50") == 4);  // source, two stages, sink
  CHECK(count(d, "cap 3") == 3);
  CHECK(count(d, "high ") == 3);
  CHECK(d.find("busy ") != std::string::npos);
  CHECK(d.find("wait in ") != std::string::npos);

  // Statistics of another graph are refused, naming the function.
  graph other(map<inc>());
  CHECK_THROWS_AS(to_dot(other, &st), graph_error);
  CHECK_THROWS_WITH(to_dot(other, &st), Catch::Contains("to_dot"));
}

TEST_CASE("to_dot of a single leaf has no cluster", "[dot]") {
  graph g(map<inc>());
  std::string d = to_dot(g);
  CHECK(count(d, "subgraph") == 0);
  CHECK(count(d, " -> ") == 2);
  CHECK(d.find("map<inc>") != std::string::npos);
}

TEST_CASE("Graphviz renders to_dot's output without a warning", "[dot]") {
  if (access(graphviz, X_OK) != 0) {
    WARN("SINEW-SKIP: Graphviz is not installed (" << graphviz << ")");  // ctest reports the case skipped
    return;
  }
  graph nested = nested_graph();
  CHECK(graphviz_accepts(to_dot(nested)));
  graph g(pipeline(map<inc>(), farm(map<twice>(), 2)), {.capacity = 3});
  auto in = make_items(20, 4);
  std::vector<std::vector<int>> out;
  auto f = g.run(in, out);
  f.get();
  run_stats st = f.stats();
  CHECK(graphviz_accepts(to_dot(g, &st)));
  graph leaf(map<inc>());
  CHECK(graphviz_accepts(to_dot(leaf)));
}
