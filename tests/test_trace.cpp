// Chrome trace output: valid JSON, exactly one `leaf` event per (stage, unit)
// and one `chunk` event per map chunk, source and sink events, thread names,
// the emit hook, escaping, and snapshots taken while threads record.
#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <map>
#include <set>
#include <sstream>
#include <thread>
#include <utility>

#include <sinew/engine/trace.hpp>

#include "test_common.hpp"

using namespace sinew;
using namespace sinew_test;
using json = nlohmann::json;

namespace {

json parse(const trace& rec) {
  std::ostringstream os;
  rec.write_chrome_json(os);
  json j = json::parse(os.str());  // throws on invalid JSON
  REQUIRE(j.is_object());
  REQUIRE(j.at("displayTimeUnit") == "ms");
  REQUIRE(j.at("traceEvents").is_array());
  return j;
}

std::vector<json> of_category(const json& j, const std::string& cat) {
  std::vector<json> r;
  for (const json& e : j.at("traceEvents"))
    if (e.value("cat", "") == cat) r.push_back(e);
  return r;
}

struct emitting_inc {
  void operator()(int x, int* y) const {
    trace::emit("test", "inside leaf", trace::now_ns(), 5, {{"x", x}, {"why", "checking"}, {"r", 0.5}});
    *y = x + 1;
  }
};

struct per_chunk_inc {
  void operator()(chunk c, in<int> x, out<int> y) const {
    for (std::size_t i = c.begin; i < c.end; ++i) y(i) = x(i) + 1;
  }
};

}  // namespace

TEST_CASE("trace has one leaf event per stage and unit, and names every thread", "[trace][tsan]") {
  const std::size_t n = 150;
  auto in = make_items(n, 5);
  std::vector<std::vector<int>> out;
  trace rec;
  scheduler& s = default_scheduler();  // under ThreadSanitizer: steal (TBB is not instrumented)
  graph g(pipeline(map<inc>(), farm(map<twice>(), 2), map<inc>()), {.scheduler = &s, .trace = &rec});
  auto f = g.run(in, out);
  f.get();
  REQUIRE(out.size() == n);
  run_stats st = f.stats();
  json j = parse(rec);

  std::set<std::string> stage_paths;
  for (std::size_t i = 0; i + 1 < st.stages.size(); ++i) stage_paths.insert(st.stages[i].path);
  REQUIRE(stage_paths.size() == 3);

  std::map<std::pair<std::string, std::uint64_t>, int> seen;
  std::set<int> tids;
  for (const json& e : of_category(j, "leaf")) {
    CHECK(e.at("ph") == "X");
    CHECK(e.at("dur").get<double>() >= 0);
    CHECK(stage_paths.count(e.at("name").get<std::string>()) == 1);
    ++seen[{e.at("name").get<std::string>(), e.at("args").at("seq").get<std::uint64_t>()}];
    tids.insert(e.at("tid").get<int>());
  }
  CHECK(seen.size() == 3 * n);  // every (stage, unit) ...
  bool once = true;
  for (auto& [key, count] : seen) once &= count == 1 && key.second < n;
  CHECK(once);  // ... exactly once

  CHECK(of_category(j, "source").size() == n);
  CHECK(of_category(j, "sink").size() == n);
  CHECK(of_category(j, "chunk").empty());  // units of 5 ints are never split

  // Every track an event is on has a thread_name metadata event.
  std::set<int> named;
  for (const json& e : j.at("traceEvents"))
    if (e.at("ph") == "M" && e.at("name") == "thread_name") {
      CHECK(!e.at("args").at("name").get<std::string>().empty());
      named.insert(e.at("tid").get<int>());
    }
  for (int t : tids) CHECK(named.count(t) == 1);
}

TEST_CASE("trace has one chunk event per piece a map splits a unit into", "[trace][tsan]") {
  const std::size_t units = 10, len = 32;
  auto in = make_items(units, len);
  std::vector<std::vector<int>> out;
  trace rec;
  scheduler& s = default_scheduler();  // under ThreadSanitizer: steal (TBB is not instrumented)
  graph g(map<per_chunk_inc>({}, {.grain = 0, .inline_below = 1, .min_task = 1}), {.scheduler = &s, .trace = &rec});
  auto f = g.run(in, out);
  f.get();
  run_stats st = f.stats();
  json j = parse(rec);
  auto chunks = of_category(j, "chunk");
  CHECK(chunks.size() == st.stages[0].chunks);
  CHECK(of_category(j, "leaf").size() == units);
  // Per unit, the chunks' [begin, end) ranges tile the unit's blocks.
  std::map<std::uint64_t, std::vector<std::pair<std::size_t, std::size_t>>> by_unit;
  for (const json& e : chunks) {
    CHECK(e.at("name") == st.stages[0].path);
    by_unit[e.at("args").at("seq").get<std::uint64_t>()].push_back(
        {e.at("args").at("begin").get<std::size_t>(), e.at("args").at("end").get<std::size_t>()});
  }
  CHECK(by_unit.size() == units);
  for (auto& [seq, ranges] : by_unit) {
    std::sort(ranges.begin(), ranges.end());
    std::size_t at = 0;
    bool tiled = true;
    for (auto [b, e] : ranges) {
      tiled &= b == at && e > b;
      at = e;
    }
    INFO("unit " << seq);
    CHECK(tiled);
    CHECK(at == len);
  }
}

TEST_CASE("trace emit records on the recorder of a live traced run only", "[trace]") {
  CHECK(trace::current() == nullptr);
  trace::emit("test", "nobody records this", trace::now_ns(), 1);

  const std::size_t n = 40;
  auto in = make_items(n, 1);  // the leaf is called once per element
  std::vector<std::vector<int>> out;
  trace rec;
  graph g(pipeline(map<emitting_inc>(), map<inc>()), {.trace = &rec});
  g.run(in, out).get();
  CHECK(trace::current() == nullptr);  // the run ended: uninstalled

  json j = parse(rec);
  auto mine = of_category(j, "test");
  REQUIRE(mine.size() == n);
  CHECK(mine[0].at("name") == "inside leaf");
  CHECK(mine[0].at("args").at("why") == "checking");
  CHECK(mine[0].at("args").at("r").get<double>() == 0.5);

  // Untraced graphs record nothing anywhere.
  CHECK(of_category(j, "leaf").size() == 2 * n);
  CHECK(of_category(j, "source").size() == n);
  CHECK(of_category(j, "sink").size() == n);
  const std::size_t before = rec.size();  // (plus any steals the scheduler traced)
  graph plain(map<emitting_inc>());
  plain.run(in, out).get();
  CHECK(rec.size() == before);
}

TEST_CASE("trace escapes names and writes instant events", "[trace]") {
  trace rec;
  rec.name_thread("main \"thread\"");
  rec.instant("mark", "quote \" backslash \\ newline \n tab \t ctl \x01 end", trace::now_ns(), {{"k\"ey", "v\\al"}});
  rec.complete("c", "plain", trace::now_ns(), 2500);
  json j = parse(rec);
  bool found_instant = false, found_complete = false, found_name = false;
  for (const json& e : j.at("traceEvents")) {
    if (e.value("cat", "") == "mark") {
      found_instant = true;
      CHECK(e.at("ph") == "i");
      CHECK(e.at("name") == "quote \" backslash \\ newline \n tab \t ctl \x01 end");
      CHECK(e.at("args").at("k\"ey") == "v\\al");
    }
    if (e.value("cat", "") == "c") {
      found_complete = true;
      CHECK(e.at("dur").get<double>() == Approx(2.5));  // microseconds
    }
    if (e.at("ph") == "M" && e.at("name") == "thread_name" && e.at("args").at("name") == "main \"thread\"")
      found_name = true;
  }
  CHECK(found_instant);
  CHECK(found_complete);
  CHECK(found_name);
  CHECK(rec.size() == 2);
  rec.clear();
  CHECK(rec.size() == 0);
}

TEST_CASE("a trace can be written while threads are recording", "[trace][tsan]") {
  trace rec;
  constexpr int threads = 3, per_thread = 2000;
  std::vector<std::thread> ts;
  for (int t = 0; t < threads; ++t)
    ts.emplace_back([&rec, t] {
      trace::scope s(rec);
      for (int i = 0; i < per_thread; ++i) trace::emit("work", "item", trace::now_ns(), 10, {{"t", t}, {"i", i}});
    });
  for (int k = 0; k < 5; ++k) {
    std::ostringstream os;
    rec.write_chrome_json(os);
    CHECK_NOTHROW(json::parse(os.str()));
  }
  for (auto& t : ts) t.join();
  CHECK(rec.size() == std::size_t(threads * per_thread));
  json j = parse(rec);
  CHECK(of_category(j, "work").size() == std::size_t(threads * per_thread));
  CHECK(trace::current() == nullptr);  // scopes ended
}

TEST_CASE("a trace keeps at most its per-thread limit and counts the rest", "[trace]") {
  trace rec(10);
  for (int i = 0; i < 25; ++i) rec.complete("c", "e", trace::now_ns(), 1, {{"i", i}});
  CHECK(rec.size() == 10);
  CHECK(rec.dropped() == 15);
  json j = parse(rec);
  CHECK(of_category(j, "c").size() == 10);
  CHECK(j.at("otherData").at("dropped_events") == 15);
  rec.clear();
  CHECK(rec.dropped() == 0);
}
