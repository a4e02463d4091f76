// Placement bound to memory through libnuma on a real
// machine (page maps that the OS confirms with move_pages), the accounting
// model on a synthetic topology.
#include <catch2/catch.hpp>

#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>
#include <cstring>

#include <sinew/engine/error.hpp>
#include <sinew/schedulers/placement.hpp>

using namespace sinew;

namespace {

// Fresh anonymous pages (not touched yet), unmapped at scope exit.
struct pages {
  std::size_t bytes;
  void* p;
  explicit pages(std::size_t n) : bytes(n * std::size_t(sysconf(_SC_PAGESIZE))) {
    p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    REQUIRE(p != MAP_FAILED);
  }
  ~pages() { munmap(p, bytes); }
  void touch() { std::memset(p, 1, bytes); }
};

}  // namespace

TEST_CASE("placement: bound pages are where the map says once touched", "[sched3][topology]") {
  const topology t = topology::detect();
  const std::size_t ps = std::size_t(sysconf(_SC_PAGESIZE));
  for (placement pol : {placement::fine, placement::coarse, placement::standard}) {
    INFO("policy " << to_string(pol) << ", " << t.describe());
    placer pl(t, pol, {}, ps);
    if (t.nodes() == 1) CHECK_FALSE(pl.binds());
    pages mem(3 * t.nodes() + 1);
    const page_map m = pl.bind(mem.p, mem.bytes);
    CHECK(m.bytes() == mem.bytes);
    CHECK(m.pages() == 3 * t.nodes() + 1);
    mem.touch();
    const page_map q = query_pages(t, mem.p, mem.bytes);
    REQUIRE(q.pages() == m.pages());
    for (std::size_t i = 0; i < q.pages(); ++i) {
      INFO("page " << i);
      // A page of known node is exactly there; first-touch pages (standard
      // on a NUMA machine) are on some node of the machine.
      if (m.node_of_page(i) >= 0) CHECK(q.node_of_page(i) == m.node_of_page(i));
      else CHECK(q.node_of_page(i) >= 0);
    }
    if (unknown_bytes(m, 0, m.bytes()) == 0)
      CHECK(bytes_per_node(q, 0, q.bytes()) == bytes_per_node(m, 0, m.bytes()));
    CHECK(unknown_bytes(q, 0, q.bytes()) == 0);  // every touched page is somewhere
  }
}

TEST_CASE("placement: bind and query_pages reject what they cannot do", "[sched3][topology]") {
  pages mem(2);
  const topology syn = topology::synthetic(4, 4);
  placer fine(syn, placement::fine);
  CHECK_FALSE(fine.binds());  // synthetic: the accounting model only
  // On a synthetic topology bind() is place(): page i on node i % 4.
  const page_map m = fine.bind(mem.p, mem.bytes);
  CHECK(m.node_of_page(0) == 0);
  CHECK(m.node_of_page(1) == 1);
  CHECK_THROWS_WITH(query_pages(syn, mem.p, mem.bytes), Catch::Contains("synthetic"));
  CHECK_THROWS_WITH(fine.bind(static_cast<char*>(mem.p) + 8, 4096), Catch::Contains("placer::bind") &&
                                                                      Catch::Contains("aligned"));
  CHECK_THROWS_WITH(query_pages(topology::detect(), static_cast<char*>(mem.p) + 8, 4096),
                    Catch::Contains("query_pages") && Catch::Contains("aligned"));
  // Nothing is asked of the OS for an empty range.
  CHECK(query_pages(topology::detect(), mem.p, 0).pages() == 0);
}
