// sinew::topology and sinew::placement [Muddukrishna15, Tables 1-3].
#include <catch2/catch.hpp>

#include <sinew/engine/error.hpp>
#include <sinew/schedulers/placement.hpp>
#include <sinew/schedulers/topology.hpp>

#include <cstdlib>
#include <numeric>
#include <optional>
#include <random>
#include <string>
#include <vector>

using namespace sinew;

namespace {

const topology::distance_matrix slit4 = {
    {10, 20, 30, 40}, {20, 10, 20, 30}, {30, 20, 10, 20}, {40, 30, 20, 10}};

// Runs `f`, which must throw sinew::error; returns the message.
template <class F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const sinew::error& e) {
    return e.what();
  }
  FAIL("no sinew::error thrown");
  return {};
}

std::size_t sum(const std::vector<std::size_t>& v) { return std::accumulate(v.begin(), v.end(), std::size_t(0)); }

using sizes = std::vector<std::size_t>;

// Restores SINEW_TOPOLOGY and the set_current() override on scope exit.
struct env_guard {
  std::optional<std::string> saved;
  env_guard() {
    if (const char* v = std::getenv("SINEW_TOPOLOGY")) saved = v;
    topology::clear_current();
  }
  ~env_guard() {
    if (saved) setenv("SINEW_TOPOLOGY", saved->c_str(), 1);
    else unsetenv("SINEW_TOPOLOGY");
    topology::clear_current();
  }
};

}  // namespace

TEST_CASE("synthetic 4x4 topology accessors", "[topology]") {
  auto t = topology::synthetic(4, 4, slit4);
  CHECK(t.synthetic());
  CHECK(t.nodes() == 4);
  CHECK(t.cores_per_node() == 4);
  CHECK(t.total_cores() == 16);
  CHECK(t.llc_bytes() == std::size_t(32) << 20);
  CHECK(t.cores(0) == std::vector<int>{0, 1, 2, 3});
  CHECK(t.cores(2) == std::vector<int>{8, 9, 10, 11});
  CHECK(t.cores(3) == std::vector<int>{12, 13, 14, 15});
  for (int cpu = 0; cpu < 16; ++cpu) CHECK(t.node_of_core(cpu) == cpu / 4);
  CHECK(t.node_of_core(16) == -1);
  CHECK(t.node_of_core(-1) == -1);
  for (std::size_t i = 0; i < 4; ++i)
    for (std::size_t j = 0; j < 4; ++j) CHECK(t.distance(i, j) == slit4[i][j]);
  CHECK(t.distances() == slit4);
  CHECK_THROWS_AS(t.distance(4, 0), sinew::error);
  CHECK_THROWS_AS(t.cores(4), sinew::error);
  CHECK(t.describe() ==
        "synthetic: 4 nodes x 4 cores (16 cpus), LLC 32 MiB, distances "
        "10,20,30,40;20,10,20,30;30,20,10,20;40,30,20,10");

  auto d = topology::synthetic(2, 3, {}, 1 << 20);
  CHECK(d.distance(0, 0) == 10);
  CHECK(d.distance(0, 1) == 20);
  CHECK(d.distance(1, 0) == 20);
  CHECK(d.llc_bytes() == std::size_t(1) << 20);
  CHECK(d.cores(1) == std::vector<int>{3, 4, 5});
}

TEST_CASE("nodes_by_distance sorts other nodes nearest first with ties by index", "[topology]") {
  auto t = topology::synthetic(4, 4, slit4);
  CHECK(t.nodes_by_distance(0) == sizes{1, 2, 3});
  CHECK(t.nodes_by_distance(1) == sizes{0, 2, 3});
  CHECK(t.nodes_by_distance(2) == sizes{1, 3, 0});
  CHECK(t.nodes_by_distance(3) == sizes{2, 1, 0});
  CHECK_THROWS_AS(t.nodes_by_distance(4), sinew::error);

  // Asymmetric matrices are accepted; rows are read as "from".
  auto a = topology::synthetic(3, 1, {{10, 30, 20}, {15, 10, 40}, {11, 12, 10}});
  CHECK(a.nodes_by_distance(0) == sizes{2, 1});
  CHECK(a.nodes_by_distance(1) == sizes{0, 2});
  CHECK(a.nodes_by_distance(2) == sizes{0, 1});
  CHECK(topology::synthetic(1, 2).nodes_by_distance(0).empty());
}

TEST_CASE("synthetic topology validation names the problem", "[topology]") {
  CHECK_THAT(error_of([] { topology::synthetic(0, 4); }), Catch::Contains("nodes must be at least 1"));
  CHECK_THAT(error_of([] { topology::synthetic(4, 0); }), Catch::Contains("cores per node must be at least 1"));
  CHECK_THAT(error_of([] { topology::synthetic(2, 2, {}, 0); }), Catch::Contains("LLC"));
  CHECK_THAT(error_of([] { topology::synthetic(2, 2, {{10, 20}}); }),
             Catch::Contains("1 rows, expected 2"));
  CHECK_THAT(error_of([] { topology::synthetic(2, 2, {{10, 20}, {20}}); }),
             Catch::Contains("row 1 has 1 entries") && Catch::Contains("square"));
  CHECK_THAT(error_of([] { topology::synthetic(2, 2, {{10, 20}, {5, 10}}); }),
             Catch::Contains("diagonal not smallest") && Catch::Contains("distance(1,0)=5"));
  CHECK_THAT(error_of([] { topology::synthetic(2, 2, {{10, 10}, {20, 10}}); }),
             Catch::Contains("diagonal not smallest"));
  CHECK_THAT(error_of([] { topology::synthetic(2, 2, {{0, 20}, {20, 10}}); }), Catch::Contains("is 0"));
}

TEST_CASE("parse reads NxC and NxC with distance rows", "[topology]") {
  auto t = topology::parse("4x4");
  CHECK(t.synthetic());
  CHECK(t.nodes() == 4);
  CHECK(t.total_cores() == 16);
  CHECK(t.distance(1, 2) == 20);
  CHECK(t.distance(3, 3) == 10);

  auto u = topology::parse("4x4:10,20,30,40;20,10,20,30;30,20,10,20;40,30,20,10");
  CHECK(u.distances() == slit4);
  CHECK(u.nodes_by_distance(2) == sizes{1, 3, 0});

  auto v = topology::parse(" 2 x 8 : 10, 21 ; 21, 10 ");
  CHECK(v.nodes() == 2);
  CHECK(v.cores_per_node() == 8);
  CHECK(v.distance(0, 1) == 21);
  CHECK(topology::parse("1x1").total_cores() == 1);
}

TEST_CASE("parse rejects bad strings with a message naming the problem", "[topology]") {
  struct bad {
    const char* spec;
    const char* says;
  };
  const bad cases[] = {
      {"", "empty"},
      {"4", "missing 'x'"},
      {"x4", "number of nodes '' is not"},
      {"4x", "cores per node '' is not"},
      {"ax4", "number of nodes 'a' is not"},
      {"-1x4", "number of nodes '-1' is not"},
      {"4x4x4", "cores per node '4x4' is not"},
      {"0x4", "nodes must be at least 1"},
      {"4x0", "cores per node must be at least 1"},
      {"99999x1", "too many nodes"},
      {"4x4:", "distance matrix after ':' is empty"},
      {"2x2:10,20", "1 rows, expected 2"},
      {"2x2:10,20;20", "row 1 has 1 entries"},
      {"2x2:10,20;20,10;10,20", "3 rows, expected 2"},
      {"2x2:10,zz;20,10", "row 0 entry 1 'zz'"},
      {"2x2:10,;20,10", "row 0 entry 1 ''"},
      {"2x2:20,10;10,20", "diagonal not smallest"},
  };
  for (const auto& c : cases) {
    INFO("spec: " << c.spec);
    std::string msg = error_of([&] { topology::parse(c.spec); });
    CHECK_THAT(msg, Catch::Contains(c.says));
    CHECK_THAT(msg, Catch::StartsWith(std::string("topology '") + c.spec + "'"));
  }
}

TEST_CASE("detect finds at least one node and one core on this machine", "[topology]") {
  auto t = topology::detect();
  INFO(t.describe());
  CHECK_FALSE(t.synthetic());
  REQUIRE(t.nodes() >= 1);
  CHECK(t.total_cores() >= 1);
  CHECK(t.cores_per_node() >= 1);
  CHECK(t.llc_bytes() > 0);
  std::size_t total = 0;
  for (std::size_t n = 0; n < t.nodes(); ++n) {
    total += t.cores(n).size();
    for (int cpu : t.cores(n)) CHECK(t.node_of_core(cpu) == int(n));
    for (std::size_t m = 0; m < t.nodes(); ++m)
      if (m != n) CHECK(t.distance(n, m) > t.distance(n, n));
  }
  CHECK(total == t.total_cores());
  CHECK_THAT(t.describe(), Catch::StartsWith("detected: "));
}

TEST_CASE("current uses set_current then SINEW_TOPOLOGY then detect", "[topology]") {
  env_guard guard;
  unsetenv("SINEW_TOPOLOGY");
  auto detected = topology::current();
  CHECK_FALSE(detected.synthetic());
  CHECK(detected.total_cores() == topology::detect().total_cores());

  setenv("SINEW_TOPOLOGY", "2x3:10,15;15,10", 1);
  auto e = topology::current();
  CHECK(e.synthetic());
  CHECK(e.nodes() == 2);
  CHECK(e.total_cores() == 6);
  CHECK(e.distance(1, 0) == 15);

  setenv("SINEW_TOPOLOGY", "2y3", 1);
  std::string msg = error_of([] { topology::current(); });
  CHECK_THAT(msg, Catch::StartsWith("SINEW_TOPOLOGY: topology '2y3'") && Catch::Contains("missing 'x'"));

  topology::set_current(topology::synthetic(4, 4, slit4));  // wins over the bad variable
  CHECK(topology::current().distances() == slit4);
  topology::clear_current();
  CHECK_THROWS_AS(topology::current(), sinew::error);

  unsetenv("SINEW_TOPOLOGY");
  CHECK_FALSE(topology::current().synthetic());
}

// ---- placement ----------------------------------------------------------------

TEST_CASE("placement names round trip", "[topology]") {
  for (auto p : {placement::standard, placement::fine, placement::coarse, placement::automatic})
    CHECK(parse_placement(to_string(p)) == p);
  CHECK(to_string(placement::automatic) == "auto");
  CHECK(parse_placement("automatic") == placement::automatic);
  CHECK_THAT(error_of([] { parse_placement("blocked"); }),
             Catch::Contains("unknown placement 'blocked'") && Catch::Contains("standard, fine, coarse or auto"));
}

TEST_CASE("Table 3 heuristic picks standard fine or coarse", "[topology]") {
  // rows: number of malloc calls, columns: number of tasks operating on data
  CHECK(choose_placement(1, 1) == placement::standard);  // one, one: regular malloc
  CHECK(choose_placement(1, 2) == placement::fine);      // one malloc, many tasks
  CHECK(choose_placement(1, 1000) == placement::fine);
  CHECK(choose_placement(2, 1) == placement::coarse);    // many mallocs, one task
  CHECK(choose_placement(63, 1) == placement::coarse);
  CHECK(choose_placement(2, 2) == placement::coarse);    // many, many
  CHECK(choose_placement(63, 63) == placement::coarse);
  CHECK(choose_placement(usage_hint{1, 8}) == placement::fine);
  CHECK_THAT(error_of([] { choose_placement(0, 4); }), Catch::Contains("Table 3"));
  CHECK_THROWS_AS(choose_placement(4, 0), sinew::error);
}

TEST_CASE("fine placement puts page i on node i mod 4", "[topology]") {
  auto t = topology::synthetic(4, 4, slit4);
  placer p(t, placement::fine);
  const std::size_t bytes = 10 * 4096 + 100;  // 11 pages, the last one holds 100 bytes
  auto m = p.place(bytes, 3);                  // the toucher does not matter
  CHECK(m.policy() == placement::fine);
  CHECK(m.pages() == 11);
  CHECK(m.nodes() == 4);
  for (std::size_t i = 0; i < 11; ++i) CHECK(m.node_of_page(i) == int(i % 4));
  CHECK(m.node_of_byte(4095) == 0);
  CHECK(m.node_of_byte(4096) == 1);
  CHECK(m.node_of_byte(bytes - 1) == 2);
  CHECK(m.home_node() == -1);
  CHECK_THROWS_AS(m.node_of_page(11), sinew::error);

  // Whole buffer: nodes 0,1 hold 3 full pages, node 2 two full + 100 bytes, node 3 two.
  CHECK(bytes_per_node(m, 0, bytes) == sizes{12288, 12288, 8292, 8192});
  // Partial pages at both ends: [1000, 13288) = 3096 | 4096 | 4096 | 1000.
  CHECK(bytes_per_node(m, 1000, 3 * 4096) == sizes{3096, 4096, 4096, 1000});
  // Inside one page.
  CHECK(bytes_per_node(m, 5000, 100) == sizes{0, 100, 0, 0});
  // Exactly one page, page aligned.
  CHECK(bytes_per_node(m, 8192, 4096) == sizes{0, 0, 4096, 0});
  // Head page 0 (1 byte), full pages 1..6 on nodes 1,2,3,0,1,2, tail page 7 (2 bytes) on node 3.
  CHECK(bytes_per_node(m, 4095, 1 + 6 * 4096 + 2) == sizes{1 + 4096, 8192, 8192, 4096 + 2});
  CHECK(bytes_per_node(m, 0, 0) == sizes{0, 0, 0, 0});
  CHECK(bytes_per_node(m, bytes, 0) == sizes{0, 0, 0, 0});
  CHECK_THAT(error_of([&] { bytes_per_node(m, 1, bytes); }), Catch::Contains("outside the buffer"));
  CHECK_THROWS_AS(bytes_per_node(m, bytes + 1, 0), sinew::error);

  // [Muddukrishna15, Listing 2]: 8 units (pages) interleaved over the four-node machine: 2 each.
  auto eight = p.place(8 * 4096);
  CHECK(bytes_per_node(eight, 0, 8 * 4096) == sizes{8192, 8192, 8192, 8192});
  // Every buffer starts at node 0.
  CHECK(p.place(4096).node_of_page(0) == 0);
}

TEST_CASE("bytes_per_node of interleaved maps matches a page by page count", "[topology]") {
  std::mt19937 rng(7);
  for (std::size_t nodes : {1u, 3u, 4u}) {
    for (std::size_t first : {std::size_t(0), nodes - 1}) {
      const std::size_t P = 64, bytes = 37 * P + 13;
      auto m = page_map::interleaved(bytes, nodes, first, P);
      std::vector<int> pages;
      for (std::size_t i = 0; i < m.pages(); ++i) pages.push_back(int((first + i) % nodes));
      auto e = page_map::explicit_pages(bytes, nodes, pages, P);
      for (int k = 0; k < 300; ++k) {
        std::size_t off = rng() % (bytes + 1);
        std::size_t len = rng() % (bytes - off + 1);
        sizes brute(nodes, 0);
        for (std::size_t b = off; b < off + len; ++b) ++brute[std::size_t(m.node_of_byte(b))];
        INFO("nodes " << nodes << " first " << first << " range " << off << "+" << len);
        CHECK(bytes_per_node(m, off, len) == brute);
        CHECK(bytes_per_node(e, off, len) == brute);
        CHECK(sum(bytes_per_node(m, off, len)) == len);
        CHECK(unknown_bytes(m, off, len) == 0);
      }
    }
  }
}

TEST_CASE("coarse placement puts whole buffers round robin over nodes", "[topology]") {
  auto t = topology::synthetic(4, 4, slit4);
  placer p(t, placement::coarse);
  const int expect[] = {0, 1, 2, 3, 0, 1};
  for (int k = 0; k < 6; ++k) {
    auto m = p.place(3 * 4096 + 7, 3);  // toucher ignored
    CHECK(m.policy() == placement::coarse);
    CHECK(m.home_node() == expect[k]);
    for (std::size_t i = 0; i < m.pages(); ++i) CHECK(m.node_of_page(i) == expect[k]);
    sizes whole(4, 0);
    whole[std::size_t(expect[k])] = 3 * 4096 + 7;
    CHECK(bytes_per_node(m, 0, m.bytes()) == whole);
    sizes part(4, 0);
    part[std::size_t(expect[k])] = 5000;
    CHECK(bytes_per_node(m, 4000, 5000) == part);
  }
  // Separate placers keep separate counters.
  placer q(t, placement::coarse);
  CHECK(q.place(64).home_node() == 0);
}

TEST_CASE("standard placement follows the first toucher on a synthetic topology", "[topology]") {
  auto t = topology::synthetic(4, 4, slit4);
  placer p(t, placement::standard);
  auto m = p.place(5 * 4096, 2);
  CHECK(m.policy() == placement::standard);
  CHECK(m.home_node() == 2);
  CHECK(bytes_per_node(m, 100, 3 * 4096) == sizes{0, 0, 3 * 4096, 0});
  CHECK(p.place(4096, 0).home_node() == 0);  // no counter: each buffer follows its toucher

  auto u = p.place(5 * 4096);  // toucher unknown
  CHECK(u.home_node() == -1);
  CHECK(u.node_of_page(3) == -1);
  CHECK(bytes_per_node(u, 0, 5 * 4096) == sizes{0, 0, 0, 0});
  CHECK(unknown_bytes(u, 10, 4096) == 4096);

  CHECK_THAT(error_of([&] { p.place(4096, 4); }), Catch::Contains("toucher node 4 out of range"));
  CHECK_THROWS_AS(p.place(4096, -2), sinew::error);

  // One node: every page is on node 0 whatever the policy or toucher.
  placer one(topology(), placement::standard);
  CHECK(one.place(3 * 4096).home_node() == 0);
}

TEST_CASE("auto placement applies Table 3 then the chosen policy", "[topology]") {
  auto t = topology::synthetic(4, 4, slit4);
  {  // one allocation, many tasks: fine
    placer p(t, placement::automatic, {1, 16});
    CHECK(p.policy() == placement::automatic);
    CHECK(p.effective_policy() == placement::fine);
    auto m = p.place(8 * 4096, 1);
    CHECK(m.policy() == placement::fine);
    CHECK(bytes_per_node(m, 0, 8 * 4096) == sizes{8192, 8192, 8192, 8192});
  }
  {  // many allocations, many tasks ([Muddukrishna15]'s Map program: 63 vectors, a task each): coarse
    placer p(t, placement::automatic, {63, 63});
    CHECK(p.effective_policy() == placement::coarse);
    CHECK(p.place(4096).home_node() == 0);
    CHECK(p.place(4096).home_node() == 1);
    CHECK(p.place(4096).home_node() == 2);
  }
  {  // many allocations, one task: coarse
    placer p(t, placement::automatic, {4, 1});
    CHECK(p.effective_policy() == placement::coarse);
  }
  {  // one allocation, one task: regular malloc (first touch)
    placer p(t, placement::automatic, {1, 1});
    CHECK(p.effective_policy() == placement::standard);
    CHECK(p.place(2 * 4096, 3).home_node() == 3);
  }
  CHECK_THAT(error_of([&] { placer p(t, placement::automatic); }), Catch::Contains("Table 3"));
}

TEST_CASE("page_map factories validate their arguments", "[topology]") {
  CHECK_THROWS_AS(page_map::single(100, 4, 4), sinew::error);
  CHECK_THROWS_AS(page_map::interleaved(100, 0), sinew::error);
  CHECK_THROWS_AS(page_map::interleaved(100, 4, 4), sinew::error);
  CHECK_THAT(error_of([] { page_map::explicit_pages(3 * 4096, 2, {0, 1}); }),
             Catch::Contains("2 page nodes for 3 pages"));
  CHECK_THROWS_AS(page_map::explicit_pages(4096, 2, {2}), sinew::error);
  auto e = page_map::explicit_pages(3 * 4096, 2, {1, -1, 1});
  CHECK(e.home_node() == -1);
  CHECK(bytes_per_node(e, 0, 3 * 4096) == sizes{0, 8192});
  CHECK(unknown_bytes(e, 0, 3 * 4096) == 4096);
  CHECK(page_map::explicit_pages(2 * 4096, 2, {1, 1}).home_node() == 1);
  CHECK(page_map().pages() == 0);
}
