// workers::owned_ranges: one contiguous range of a loop's chunks per worker
// slot; an owner takes its own range first and in order, then the others'.
#include <catch2/catch.hpp>

#include <atomic>
#include <thread>
#include <vector>

#include "../schedulers/workers/owned_ranges.hpp"

using sinew::detail::workers::owned_ranges;

namespace {
// Every chunk that `own` takes until none is left, in order.
std::vector<std::size_t> drain(owned_ranges& r, unsigned own) {
  std::vector<std::size_t> got;
  for (std::size_t c; r.next(own, c);) got.push_back(c);
  return got;
}
}  // namespace

TEST_CASE("owned_ranges: an owner takes its own slice in order, then the next slots' slices", "[scheduler][tsan]") {
  owned_ranges r(10, 4);  // slices [0,2) [2,5) [5,7) [7,10)
  std::size_t c = 99;
  REQUIRE(r.next(2, c));
  CHECK(c == 5);
  REQUIRE(r.next(2, c));
  CHECK(c == 6);
  REQUIRE(r.next(1, c));
  CHECK(c == 2);
  // Slot 2's slice is empty: it goes on with slot 3's, then 0's, then the rest of 1's.
  CHECK(drain(r, 2) == std::vector<std::size_t>{7, 8, 9, 0, 1, 3, 4});
  CHECK_FALSE(r.next(0, c));
  CHECK_FALSE(r.next(3, c));
}

TEST_CASE("owned_ranges: a thread that owns no slice starts at the first, and fewer chunks than slots", "[scheduler][tsan]") {
  owned_ranges r(3, 4);  // slices [0,0) [0,1) [1,2) [2,3)
  CHECK(drain(r, 4) == std::vector<std::size_t>{0, 1, 2});
  owned_ranges one(5, 1);
  CHECK(drain(one, 0) == std::vector<std::size_t>{0, 1, 2, 3, 4});
  owned_ranges none(0, 3);
  std::size_t c;
  CHECK_FALSE(none.next(1, c));
  owned_ranges many(1000, 40);  // more slots than kept in the object
  std::size_t c0 = 0;
  REQUIRE(many.next(39, c0));
  CHECK(c0 == 975);
  CHECK(drain(many, 39).size() == 999);
}

TEST_CASE("owned_ranges: threads racing hand out every chunk exactly once", "[scheduler][tsan]") {
  constexpr unsigned T = 4;
  constexpr std::size_t N = 20000;
  owned_ranges r(N, T);
  std::vector<std::atomic<int>> seen(N);
  std::vector<std::thread> ts;
  for (unsigned t = 0; t <= T; ++t)  // the last owns no slice
    ts.emplace_back([&, t] {
      for (std::size_t c; r.next(t, c);) seen[c].fetch_add(1, std::memory_order_relaxed);
    });
  for (auto& t : ts) t.join();
  bool once = true;
  for (auto& s : seen) once &= s.load() == 1;
  CHECK(once);
}
