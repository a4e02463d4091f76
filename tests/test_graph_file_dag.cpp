// Graph files in the dag form: every sink's units against values computed
// here from the source's units, on every scheduler; a sink of a dag equals
// the same tree run alone; `sinew`-style endpoints by name.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <map>
#include <string>
#include <vector>

#include <sinew/engine/graph.hpp>
#include <sinew/io.hpp>
#include <sinew/json/graph_file.hpp>

namespace {

const char* const diamond_doc = R"({
  "sinew": 1,
  "name": "diamond",
  "sources": {"in": {"type": "generator", "buffers": ["f32"], "shape": [1000], "count": 40, "seed": 3}},
  "nodes": {
    "scaled": {"input": "in", "graph": {"map": "scale", "args": {"k": 2}}},
    "squared": {"input": "in", "graph": {"farm": {"map": "square"}, "workers": 2}},
    "pair": {"zip": ["scaled", "squared"]},
    "sum": {"input": "pair", "graph": {"map": "add"}},
    "parts": {"split": "sum", "ways": 2, "key": {"buffer": 0, "element": 0}},
    "again": {"merge": ["parts:1", "parts:0"]}
  },
  "sinks": {
    "out": {"input": "again", "sink": {"type": "checksum"}},
    "scaled_only": {"input": "scaled", "sink": {"type": "checksum"}},
    "raw": {"input": "in", "sink": {"type": "null"}}
  }
})";

using values = std::map<std::uint64_t, std::vector<float>>;

sinew::sink recorder(values& v) {
  return sinew::for_each([&v](const sinew::work_unit& u) {
    auto x = u.input<float>(0);
    v[u.seq()].assign(x.data(), x.data() + x.size());
  });
}

}  // namespace

TEST_CASE("graph files: a dag file's sinks get what its nodes compute on every scheduler", "[json][dag]") {
  for (const char* policy : {"tbb", "steal", "deal"}) {
    INFO(policy);
    auto f = sinew::graph_file::parse(diamond_doc, "diamond.json", {std::string("/scheduler=\"") + policy + "\""});
    REQUIRE(f.is_dag());
    CHECK(f.source_names() == std::vector<std::string>{"in"});
    CHECK(f.sink_names() == std::vector<std::string>{"out", "raw", "scaled_only"});  // by name
    CHECK(*f.unit_count() == 40);
    auto sched = f.make_scheduler(2);
    sinew::graph g = f.make_graph(f.options(sched.get()));
    values in, out, scaled;
    auto run = g.run(f.make_sources(), {{"raw", recorder(in)}, {"out", recorder(out)}, {"scaled_only", recorder(scaled)}});
    run.get();
    REQUIRE(in.size() == 40);
    REQUIRE(out.size() == 40);
    REQUIRE(scaled.size() == 40);
    std::size_t bad = 0;
    for (auto& [seq, x] : in)
      for (std::size_t i = 0; i < x.size(); ++i) {
        if (scaled[seq][i] != 2 * x[i]) ++bad;
        if (std::fabs(out[seq][i] - (2 * x[i] + x[i] * x[i])) > 1e-5f * (1 + std::fabs(out[seq][i]))) ++bad;
      }
    CHECK(bad == 0);
    auto st = run.stats();
    CHECK(st.units_in == 40);
    CHECK(st.units_out == 120);
  }
}

TEST_CASE("graph files: a dag's checksum sink equals the same tree run alone", "[json][dag]") {
  auto dag_file = sinew::graph_file::parse(diamond_doc, "diamond.json");
  auto tree_file = sinew::graph_file::parse(R"({"sinew": 1, "name": "scale",
    "source": {"type": "generator", "buffers": ["f32"], "shape": [1000], "count": 40, "seed": 3},
    "graph": {"map": "scale", "args": {"k": 2}}, "sink": {"type": "checksum"}})",
                                            "scale.json");
  auto sched = dag_file.make_scheduler(2);
  std::vector<std::pair<std::string, std::shared_ptr<sinew::io::checksum_result>>> dag_sums, tree_sums;
  dag_file.make_graph(dag_file.options(sched.get())).run(dag_file.make_sources(), dag_file.make_sinks(dag_sums)).get();
  tree_file.make_graph(tree_file.options(sched.get())).run(tree_file.make_sources(), tree_file.make_sinks(tree_sums)).get();
  REQUIRE(dag_sums.size() == 2);
  REQUIRE(tree_sums.size() == 1);
  CHECK(dag_sums[1].first == "scaled_only");
  CHECK(dag_sums[1].second->units == 40);
  CHECK(dag_sums[1].second->value == tree_sums[0].second->value);
  CHECK(dag_sums[0].second->units == 40);
  // The tree-only accessors name what to use instead.
  CHECK_THROWS_WITH(dag_file.make_source(), Catch::Contains("make_sources"));
}

TEST_CASE("graph files: --verify follows a dag and catches a sink's wrong units", "[json][dag]") {
  auto f = sinew::graph_file::parse(diamond_doc, "diamond.json");
  auto sched = f.make_scheduler(2);
  std::vector<std::pair<std::string, std::shared_ptr<sinew::io::checksum_result>>> sums;
  auto rep = std::make_shared<sinew::verify_report>();
  f.make_graph(f.options(sched.get())).run(f.make_sources(), sinew::verifying_sinks(f, f.make_sinks(sums), rep)).get();
  CHECK(rep->ok());
  CHECK(rep->units == 120);  // every sink's units
  // The same sinks' reference, but the graph scales by 3: the scaled units
  // and their sums differ; the raw ones do not.
  auto other = sinew::graph_file::parse(diamond_doc, "diamond.json", {"/nodes/scaled/graph/args/k=3"});
  sums.clear();
  auto bad = std::make_shared<sinew::verify_report>();
  other.make_graph(other.options(sched.get())).run(other.make_sources(), sinew::verifying_sinks(f, f.make_sinks(sums), bad)).get();
  CHECK(bad->units == 120);
  CHECK(bad->mismatches == 80);
  CHECK(bad->first.find("differs") != std::string::npos);
  // A split by policy cannot be followed.
  auto rr = sinew::graph_file::parse(diamond_doc, "diamond.json", {"/nodes/parts={\"split\": \"sum\", \"ways\": 2}"});
  CHECK_THROWS_WITH(sinew::verifying_sinks(rr, rr.make_sinks(sums), bad), Catch::Contains("split 'parts'"));
}

TEST_CASE("graph files: a join pairs units by key and counts the unmatched and --verify refuses it", "[json][dag][join]") {
  // Ramps: element 0 of unit s is s mod 251, so "a" has keys 0..250 and
  // 0..48, "b" keys 0..199: 200 pairs, 100 units without a match.
  const char* doc = R"({
    "sinew": 1, "name": "join",
    "sources": {"a": {"type": "generator", "buffers": ["f32"], "shape": [8], "count": 300, "pattern": "ramp"},
                "b": {"type": "generator", "buffers": ["f32"], "shape": [8], "count": 200, "pattern": "ramp"}},
    "nodes": {"j": {"join": ["a", "b"], "key": {"buffer": 0, "element": 0}},
              "sum": {"input": "j", "graph": {"map": "add"}}},
    "sinks": {"out": {"input": "sum", "sink": {"type": "checksum"}}}
  })";
  for (const char* policy : {"tbb", "steal", "deal"}) {
    INFO(policy);
    auto f = sinew::graph_file::parse(doc, "join.json", {std::string("/scheduler=\"") + policy + "\""});
    auto sched = f.make_scheduler(2);
    values out;
    auto run = f.make_graph(f.options(sched.get())).run(f.make_sources(), {{"out", recorder(out)}});
    run.get();
    REQUIRE(out.size() == 200);
    // Each unit is a + b of two ramps with the same key k: 2 (k + i) mod 251.
    std::size_t bad = 0;
    std::map<int, int> keys;
    for (const auto& [seq, v] : out) {
      const int k = int(v[0] / 2);
      ++keys[k];
      for (std::size_t i = 0; i < v.size(); ++i)
        if (v[i] != float(2 * ((k + int(i)) % 251))) ++bad;
    }
    CHECK(bad == 0);
    CHECK(keys.size() == 200);
    CHECK(keys.rbegin()->first == 199);
    double unmatched = 0;
    for (const auto& s : run.stats().stages)
      if (s.path == "j")
        for (const auto& [name, v] : s.counters)
          if (name == "unmatched") unmatched = v;
    CHECK(unmatched == 100);
  }
  auto f = sinew::graph_file::parse(doc, "join.json");
  std::vector<std::pair<std::string, std::shared_ptr<sinew::io::checksum_result>>> sums;
  auto rep = std::make_shared<sinew::verify_report>();
  CHECK_THROWS_WITH(sinew::verifying_sinks(f, f.make_sinks(sums), rep), Catch::Contains("join 'j'"));
}

TEST_CASE("graph files: stateful kernels start every run afresh unless across_runs", "[json][dag]") {
  const std::string doc = R"({"sinew": 1, "name": "counts",
    "sources": {"records": {"type": "generator", "buffers": ["u8"], "shape": [1], "count": 3000, "seed": 9}},
    "nodes": {"counts": {"keyed_farm": "records", "replicas": 3, "key": {"buffer": 0, "element": 0},
                         "graph": {"map": "running_count"}}},
    "sinks": {"out": {"input": "counts", "sink": {"type": "checksum"}}}})";
  for (bool across : {false, true}) {
    INFO((across ? "across runs" : "per run"));
    auto f = sinew::graph_file::parse(doc, "counts.json",
                                      {std::string("/nodes/counts/graph/args={\"across_runs\": ") +
                                       (across ? "true" : "false") + "}"});
    auto sched = f.make_scheduler(2);
    sinew::graph g = f.make_graph(f.options(sched.get()));
    std::uint32_t most[2] = {0, 0};  // the highest count each run saw
    for (int r = 0; r < 2; ++r) {
      auto run = g.run(f.make_sources(), {{"out", sinew::for_each([&, r](const sinew::work_unit& u) {
                                             most[r] = std::max(most[r], u.input<std::uint32_t>(0)[0]);
                                           })}});
      run.get();
    }
    REQUIRE(most[0] > 1);
    // Every key's counts restart (the same maximum) or go on (twice it).
    CHECK(most[1] == (across ? 2 * most[0] : most[0]));
  }
}
