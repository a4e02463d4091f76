// workers::owned_ranges: one contiguous range of a loop's chunks per worker
// slot; an owner takes its own range first and in order, then the others',
// in runs that shrink with what is left.
#include <catch2/catch.hpp>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <thread>
#include <vector>

#include "../schedulers/workers/owned_ranges.hpp"

using sinew::detail::workers::owned_ranges;

namespace {
// Every chunk that `own` takes until none is left, in order.
std::vector<std::size_t> drain(owned_ranges& r, unsigned own) {
  std::vector<std::size_t> got;
  for (std::size_t b, e; r.next(own, b, e);)
    for (std::size_t c = b; c < e; ++c) got.push_back(c);
  return got;
}
constexpr std::size_t none_left = SIZE_MAX;
// The first chunk of the next run `own` takes, or none_left.
std::size_t take(owned_ranges& r, unsigned own) {
  std::size_t b, e;
  return r.next(own, b, e) ? b : none_left;
}
}  // namespace

TEST_CASE("owned_ranges: an owner takes its own slice in order, then the next slots' slices", "[scheduler][tsan]") {
  owned_ranges r(10, 4);  // slices [0,2) [2,5) [5,7) [7,10)
  CHECK(take(r, 2) == 5);
  CHECK(take(r, 2) == 6);
  CHECK(take(r, 1) == 2);
  // Slot 2's slice is empty: it goes on with slot 3's, then 0's, then the rest of 1's.
  CHECK(drain(r, 2) == std::vector<std::size_t>{7, 8, 9, 0, 1, 3, 4});
  CHECK(take(r, 0) == none_left);
  CHECK(take(r, 3) == none_left);
}

TEST_CASE("owned_ranges: a thread that owns no slice starts at the first, and fewer chunks than slots", "[scheduler][tsan]") {
  owned_ranges r(3, 4);  // slices [0,0) [0,1) [1,2) [2,3)
  CHECK(drain(r, 4) == std::vector<std::size_t>{0, 1, 2});
  owned_ranges one(5, 1);
  CHECK(drain(one, 0) == std::vector<std::size_t>{0, 1, 2, 3, 4});
  owned_ranges none(0, 3);
  CHECK(take(none, 1) == none_left);
  owned_ranges many(1000, 40);  // more slots than kept in the object
  CHECK(take(many, 39) == 975);  // a run of 1 chunk: slot 39's 25 over 40 slots
  CHECK(drain(many, 39).size() == 999);
}

TEST_CASE("owned_ranges: a claim takes what is left of the range over the slots, at most 16 chunks, one at the end",
          "[scheduler][tsan]") {
  owned_ranges r(2000, 4);  // slices [0,500) [500,1000) ...
  std::vector<std::size_t> runs;
  std::size_t at = 0;
  for (std::size_t b, e; r.next(0, b, e) && b < 500;) {
    CHECK(b == at);  // in order, nothing skipped
    const std::size_t left = 500 - b;
    CHECK(e - b == std::min<std::size_t>(16, std::max<std::size_t>(1, left / 4)));
    runs.push_back(e - b);
    at = e;
  }
  CHECK(at == 500);
  REQUIRE(runs.size() > 8);
  CHECK(runs.front() == 16);
  CHECK(std::vector<std::size_t>(runs.end() - 7, runs.end()) == std::vector<std::size_t>(7, 1));  // left < 8
}

TEST_CASE("owned_ranges: threads racing hand out every chunk exactly once", "[scheduler][tsan]") {
  constexpr unsigned T = 4;
  constexpr std::size_t N = 20000;
  owned_ranges r(N, T);
  std::vector<std::atomic<int>> seen(N);
  std::vector<std::thread> ts;
  for (unsigned t = 0; t <= T; ++t)  // the last owns no slice
    ts.emplace_back([&, t] {
      for (std::size_t b, e; r.next(t, b, e);)
        for (std::size_t c = b; c < e; ++c) seen[c].fetch_add(1, std::memory_order_relaxed);
    });
  for (auto& t : ts) t.join();
  bool once = true;
  for (auto& s : seen) once &= s.load() == 1;
  CHECK(once);
}
