#pragma once
// The state of a parallel_for in progress under steal or deal.
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <span>

#include <sinew/detail/function_ref.hpp>

namespace sinew::detail::workers {

// Lives on the caller's stack. `remaining` counts the elements not yet
// processed: the block that brings it to zero finishes the loop, and nothing
// may touch the loop_ctx after that (the caller may already have returned),
// which is why finished loops are announced on scheduler-owned futex words
// rather than on the loop itself.
//
//   loop_ctx L(body, grain, n);
//   if (L.run_leaf(b, e)) announce_loop_done();   // the last block
struct loop_ctx {
  loop_ctx(function_ref<void(std::size_t, std::size_t)> bd, std::size_t g, std::size_t n)
      : body(bd), grain(g), remaining(n), n(n) {}
  function_ref<void(std::size_t, std::size_t)> body;
  std::size_t grain;
  std::atomic<std::size_t> remaining;
  std::atomic<bool> failed{false};
  std::exception_ptr error;  // written once, by whoever set `failed`
  // D of the loop's locality hint (parallel_for_at; empty: none) and its
  // sum over the n elements: a block [b, e) reads (e - b) / n of it.
  std::span<const std::uint64_t> D{};
  std::uint64_t total = 0;
  std::size_t n = 0;

  // Runs body(b, e), keeping the first exception; does not count it done.
  void run_body(std::size_t b, std::size_t e) noexcept {
    try {
      body(b, e);
    } catch (...) {
      bool expected = false;
      if (failed.compare_exchange_strong(expected, true, std::memory_order_acq_rel))
        error = std::current_exception();
    }
  }
  // Counts `k` elements done. Returns true when they finished the loop
  // (nothing may touch the loop_ctx after that).
  bool finish(std::size_t k) noexcept { return remaining.fetch_sub(k, std::memory_order_acq_rel) == k; }
  // run_body then finish: one block counted on its own.
  bool run_leaf(std::size_t b, std::size_t e) noexcept {
    run_body(b, e);
    return finish(e - b);
  }
  // Runs [b, e) on this thread in the blocks the halving split would make.
  void run_inline(std::size_t b, std::size_t e) noexcept {
    while (e - b > grain) {
      const std::size_t mid = b + (e - b) / 2;
      run_inline(mid, e);
      e = mid;
    }
    run_leaf(b, e);
  }
};

}  // namespace sinew::detail::workers
