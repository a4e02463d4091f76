// Placement of a graph's buffers (a policy standard/fine/coarse/auto,
// globally or per stage) on the synthetic 4-node topology: the nodes recorded on the buffers stages write
// are what the policy says, and a map over node-placed data reads fewer
// remote bytes under `deal` than under `steal` (counted, not timed).
#include <catch2/catch.hpp>

#include <sinew/json/graph_file.hpp>
#include <sinew/sinew.hpp>

#include "test_sched_common.hpp"

#include <algorithm>
#include <mutex>
#include <vector>

using namespace sinew;
using sched_test::line4x4;

namespace {

struct add1 {
  void operator()(float x, float* y) const { *y = x + 1; }
};
struct twice_in_place {
  void operator()(float& x) const { x *= 2; }
};
// A per-element leaf with some work, so that its maps split.
struct heavy {
  void operator()(float x, float* y) const {
    float s = x;
    for (int k = 0; k < 4; ++k) s = s * 0.5f + 1.0f;
    *y = s;
  }
};

// Where the final output buffer of each unit was placed, by sequence number.
struct seen_placement {
  int node = -2;
  int interleave_first = -2;
  unsigned nodes = 0;
  std::uint64_t bytes = 0;
  std::vector<std::uint64_t> D;
};

std::vector<seen_placement> run_and_record(const node& tree, const graph_options& o, std::size_t units,
                                           std::size_t len) {
  std::vector<std::vector<float>> in(units, std::vector<float>(len, 1.0f));
  std::vector<seen_placement> seen(units);
  std::mutex m;
  graph g(tree, o);
  g.run(from(in), for_each([&](const work_unit& u) {
     const buffer& b = *u.in()[0];
     seen_placement s{b.numa_node(), b.interleave_first(), b.placed_nodes(), b.bytes(),
                      std::vector<std::uint64_t>(4, 0)};
     add_bytes_on_nodes(b, s.D);
     std::lock_guard<std::mutex> lk(m);
     seen[u.seq()] = s;
   })).get();
  return seen;
}

// 4096 floats: 16 KiB, 4 pages (one per node under fine).
constexpr std::size_t len = 4096;

void check_coarse(const std::vector<seen_placement>& seen) {
  for (std::size_t k = 0; k < seen.size(); ++k) {
    INFO("unit " << k);
    CHECK(seen[k].node == int(k % 4));  // the k-th buffer the last stage wrote
    CHECK(seen[k].interleave_first == -1);
    CHECK(seen[k].nodes == 4);
    CHECK(seen[k].D[k % 4] == seen[k].bytes);
  }
}

void check_fine(const std::vector<seen_placement>& seen) {
  for (std::size_t k = 0; k < seen.size(); ++k) {
    INFO("unit " << k);
    CHECK(seen[k].node == -1);
    CHECK(seen[k].interleave_first == 0);
    CHECK(seen[k].nodes == 4);
    CHECK(seen[k].D == std::vector<std::uint64_t>(4, len));  // one 4 KiB page per node
  }
}

}  // namespace

TEST_CASE("add_bytes_on_nodes reads D from a buffer's recorded placement", "[placement][graph]") {
  auto b = buffer_pool::global().acquire<char>(3 * 4096 + 100);
  std::vector<std::uint64_t> D(4, 0);
  CHECK(add_bytes_on_nodes(*b, D) == 0);  // never placed: unknown
  record_placement(*b, -1, 2, 4, 4096);   // pages 0..3 on nodes 2, 3, 0, 1 (page 3: 100 bytes)
  CHECK(add_bytes_on_nodes(*b, D) == b->bytes());
  CHECK(D == std::vector<std::uint64_t>{4096, 100, 4096, 4096});
  std::vector<std::uint64_t> three(3, 0);
  CHECK(add_bytes_on_nodes(*b, three) == 0);  // made for 4 nodes
  record_placement(*b, 1, -1, 4, 4096);
  std::fill(D.begin(), D.end(), 0);
  add_bytes_on_nodes(*b, D);
  CHECK(D == std::vector<std::uint64_t>{0, b->bytes(), 0, 0});
  // The pool forgets the placement of a block it hands out again.
  buffer* raw = b.get();
  b.reset();
  auto c = buffer_pool::global().acquire<char>(3 * 4096 + 100);
  if (c.get() == raw) CHECK(c->placed_nodes() == 0);
  CHECK(c->numa_node() == -1);

  placer coarse(line4x4(), placement::coarse);
  coarse.place_buffer(*c);
  CHECK(c->numa_node() == 0);
  coarse.place_buffer(*c);
  CHECK(c->numa_node() == 1);
}

TEST_CASE("a graph places the buffers its stages write: coarse, fine, per stage", "[placement][graph]") {
  deal_scheduler s(line4x4());
  const std::size_t units = 12;
  SECTION("graph-wide coarse: unit k's output on node k % 4") {
    check_coarse(run_and_record(pipeline(map<add1>(), map<add1>()),
                                {.scheduler = &s, .placement = placement::coarse}, units, len));
  }
  SECTION("graph-wide fine: pages round-robin from node 0") {
    check_fine(run_and_record(pipeline(map<add1>(), map<add1>()), {.scheduler = &s, .placement = placement::fine},
                              units, len));
  }
  SECTION("no placement: nothing recorded") {
    for (const auto& p : run_and_record(pipeline(map<add1>(), map<add1>()), {.scheduler = &s}, units, len)) {
      CHECK(p.nodes == 0);
      CHECK(p.node == -1);
    }
  }
  SECTION("a stage's own placement overrides the graph's") {
    check_fine(run_and_record(pipeline(map<add1>(), map<add1>().placement(placement::fine)),
                              {.scheduler = &s, .placement = placement::coarse}, units, len));
    // The first stage's output reaches the sink through an in-place stage.
    check_fine(run_and_record(pipeline(map<add1>().placement(placement::fine), map<twice_in_place>()),
                              {.scheduler = &s, .placement = placement::coarse}, units, len));
    check_coarse(run_and_record(pipeline(map<add1>().placement(placement::coarse), map<twice_in_place>()),
                                {.scheduler = &s, .placement = placement::fine}, units, len));
    // Set on a pipeline: every stage inside without its own.
    check_fine(run_and_record(pipeline(map<add1>(), map<add1>()).placement(placement::fine),
                              {.scheduler = &s, .placement = placement::coarse}, units, len));
    check_coarse(run_and_record(pipeline(map<add1>(), map<add1>().placement(placement::coarse)).placement(placement::fine),
                                {.scheduler = &s}, units, len));
    // Inside a farm (the stage's replicas share one placer: nodes are a
    // permutation of the round-robin, not in unit order).
    auto seen = run_and_record(pipeline(map<add1>(), farm(map<add1>().placement(placement::coarse), 3)),
                               {.scheduler = &s}, units, len);
    std::vector<int> per_node(4, 0);
    for (const auto& p : seen)
      if (p.node >= 0 && p.node < 4) per_node[std::size_t(p.node)]++;
    CHECK(per_node == std::vector<int>(4, int(units / 4)));
  }
  SECTION("standard: on the node of the worker that wrote it (first touch)") {
    for (const auto& p : run_and_record(pipeline(map<add1>(), map<add1>()),
                                        {.scheduler = &s, .placement = placement::standard}, units, len)) {
      CHECK(p.node >= 0);
      CHECK(p.node < 4);
      CHECK(p.D[std::size_t(std::clamp(p.node, 0, 3))] == p.bytes);
    }
  }
  SECTION("auto: Table 3 per unit (one buffer: standard until the stage splits units, then fine)") {
    // 1 MiB units: a map splits them into many chunks.
    auto seen = run_and_record(map<heavy>(), {.scheduler = &s, .placement = placement::automatic}, 6, 1 << 18);
    CHECK(seen[0].node >= 0);  // first unit: one task known so far -> standard
    for (std::size_t k = 1; k < seen.size(); ++k) {
      INFO("unit " << k);
      CHECK(seen[k].interleave_first == 0);  // many tasks, one allocation -> fine
    }
  }
}

TEST_CASE("a graph that places its buffers submits its start at once", "[placement][graph]") {
  // Its caller may not run the stages (it has no node), so the start is a
  // task from run() on, not a check after a grace period.
  deal_scheduler s(line4x4());
  graph g(map<add1>(), {.scheduler = &s, .placement = placement::coarse});
  std::vector<std::vector<float>> in(4, std::vector<float>(64, 1.0f)), out;
  const std::uint64_t before = s.stats().tasks_submitted;
  auto f = g.run(in, out);
  CHECK(s.stats().tasks_submitted > before);
  f.get();
  REQUIRE(out.size() == in.size());
  CHECK(out[3][63] == 2.0f);
}

TEST_CASE("a map over node-placed data: deal reads at most half the remote bytes steal does", "[placement][graph][deal]") {
  // 2 MiB units, placed coarse by the first stage (unit k on node k % 4),
  // then read by a map: under deal its chunks run on the data's node
  // (Algorithm 1: 2 MiB > LLC / C = 1 MiB, all on one node), under steal
  // anywhere. Counted: the bytes of the map's input each chunk read from
  // another node than its worker's.
  const std::size_t units = sched_test::scaled(16, 8), n = std::size_t(1) << 19;
  auto measure = [&](scheduler& s) {
    std::vector<std::vector<float>> in(units, std::vector<float>(n, 1.0f));
    graph g(pipeline(map<add1>().placement(placement::coarse), map<heavy>()), {.scheduler = &s});
    s.reset_stats();
    std::size_t got = 0;
    g.run(from(in), for_each([&](const work_unit&) { ++got; })).get();
    REQUIRE(got == units);
    return s.stats();
  };
  deal_scheduler d(line4x4());
  steal_scheduler st(line4x4());
  const scheduler_stats sd = measure(d), ss = measure(st);
  // Every byte of the second map's input was counted once, under both.
  CHECK(sd.hinted_bytes() == units * n * sizeof(float));
  CHECK(ss.hinted_bytes() == units * n * sizeof(float));
  INFO("remote bytes: deal " << sd.remote_bytes() << ", steal " << ss.remote_bytes());
  CHECK(ss.remote_bytes() > 0);
  CHECK(double(sd.remote_bytes()) <= 0.5 * double(ss.remote_bytes()));
}

TEST_CASE("graph files: top-level and per-node placement", "[placement][json]") {
  const char* doc = R"({
    "sinew": 1, "name": "p", "placement": "coarse",
    "scheduler": {"policy": "deal", "topology": "4x4"},
    "source": {"type": "generator", "buffers": ["f32", "f32"], "shape": [4096], "count": 8},
    "graph": {"pipeline": [{"map": "saxpy", "args": {"a": 2}, "placement": "fine"},
                           {"farm": {"map": "scale"}, "workers": 2}]},
    "sink": {"type": "checksum"}})";
  auto f = graph_file::parse(doc, "inline.json");
  auto s = f.make_scheduler();
  const graph_options o = f.options(s.get());
  REQUIRE(o.placement);
  CHECK(*o.placement == placement::coarse);
  graph g(f.root(), o);
  // Stage 0 (the saxpy map) has its own placement; the farm's stage takes
  // the graph's.
  const auto& spec = f.root().impl();
  REQUIRE(spec);
  detail::stream_compiler c;
  spec->compile_stream(c, "graph");
  REQUIRE(c.stages.size() == 2);
  REQUIRE(c.stages[0].placement);
  CHECK(*c.stages[0].placement == placement::fine);
  CHECK_FALSE(c.stages[1].placement);  // the graph's default applies at run time
  // "auto" and "standard" are accepted; a bad name names its pointer (tests/json_bad).
  std::string a = doc;
  a.replace(a.find("\"coarse\""), 8, "\"auto\"");
  CHECK(*graph_file::parse(a, "inline.json").options(nullptr).placement == placement::automatic);
}
