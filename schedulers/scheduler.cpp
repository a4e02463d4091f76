// The parts of the scheduler interface every policy shares: statistics
// sums, locality hints, task_group and its counter, help_latch.
#include <sinew/detail/futex.hpp>
#include <sinew/engine/error.hpp>
#include <sinew/schedulers/placement.hpp>
#include <sinew/schedulers/scheduler.hpp>

#include "locality.hpp"

#include <algorithm>
#include <climits>
#include <cstdlib>
#include <string>

namespace sinew {

double scheduler_stats::load_balance() const {
  std::uint64_t lo = UINT64_MAX, hi = 0;
  for (const auto& w : workers) {
    if (w.tasks == 0) continue;
    lo = std::min(lo, w.busy_ns);
    hi = std::max(hi, w.busy_ns);
  }
  if (hi == 0) return 1.0;
  return double(lo) / double(hi);
}

std::uint64_t scheduler_stats::steals_same_node() const {
  std::uint64_t s = 0;
  for (const auto& w : workers) s += w.steals_same_node;
  return s;
}
std::uint64_t scheduler_stats::steals_remote() const {
  std::uint64_t s = 0;
  for (const auto& w : workers) s += w.steals_remote;
  return s;
}
std::uint64_t scheduler_stats::hinted_bytes() const {
  std::uint64_t s = 0;
  for (const auto& w : workers) s += w.hinted_bytes;
  return s;
}
std::uint64_t scheduler_stats::remote_bytes() const {
  std::uint64_t s = 0;
  for (const auto& w : workers) s += w.remote_bytes;
  return s;
}
double scheduler_stats::remote_fraction() const {
  const std::uint64_t h = hinted_bytes();
  return h ? double(remote_bytes()) / double(h) : 0.0;
}

namespace detail {

std::uint64_t hint_bytes(const locality_hint& hint, std::size_t nodes, std::vector<std::uint64_t>& D,
                         const char* who) {
  if (!hint.bytes_on_node.empty() && hint.bytes_on_node.size() != nodes)
    throw error(std::string(who) + ": locality_hint::bytes_on_node has " +
                std::to_string(hint.bytes_on_node.size()) + " entries, topology has " +
                std::to_string(nodes) + " nodes");
  D.assign(nodes, 0);
  if (!hint.bytes_on_node.empty()) {
    std::copy(hint.bytes_on_node.begin(), hint.bytes_on_node.end(), D.begin());
  } else {
    for (const buffer_ref& b : hint.reads)
      if (b) add_bytes_on_nodes(*b, D);  // unknown placement: not counted
  }
  std::uint64_t total = 0;
  for (auto d : D) total += d;
  return total;
}

int cheapest_node(const topology& t, std::span<const std::uint64_t> D, int prefer) {
  using u128 = unsigned __int128;
  const std::size_t N = t.nodes();
  // Among equally cheap nodes the one holding most of D reads the fewest
  // remote bytes (on a line of nodes a node between two holders costs as
  // much as either holder, yet reads everything from afar); then `prefer`,
  // then the lowest index.
  int best = -1;
  u128 best_cost = 0;
  for (std::size_t i = 0; i < N; ++i) {
    u128 c = 0;
    for (std::size_t j = 0; j < N; ++j) c += u128(D[j]) * t.distance(i, j);
    const bool better = best < 0 || c < best_cost ||
                        (c == best_cost && (D[i] > D[std::size_t(best)] ||
                                            (D[i] == D[std::size_t(best)] && int(i) == prefer)));
    if (better) {
      best = int(i);
      best_cost = c;
    }
  }
  return best;
}

}  // namespace detail

void detail::task_counter::invoke(task_function& fn) noexcept {
  try {
    fn();
  } catch (...) {
    std::lock_guard<std::mutex> lk(m);
    if (!error) error = std::current_exception();
  }
  fn.reset();  // captures go before the waiter can return
}

bool detail::task_counter::finish() noexcept {
  if (pending.fetch_sub(1, std::memory_order_acq_rel) != 1) return false;
  detail::futex_wake(pending, INT_MAX);
  return true;
}

void detail::task_counter::wait() noexcept {
  for (std::uint32_t p = pending.load(std::memory_order_acquire); p != 0; p = pending.load(std::memory_order_acquire))
    detail::futex_wait(pending, p);
}

void detail::help_latch::open() {
  std::vector<std::function<void()>> hooks;
  {
    std::lock_guard<std::mutex> lk(m_);
    if (open_) return;
    open_ = true;
    hooks.swap(hooks_);
    cv_.notify_all();  // under the lock: a waiter returns (and may free us) only after it
  }
  for (auto& h : hooks) h();  // touch only what the hooks captured
}

bool detail::help_latch::is_open() const {
  std::lock_guard<std::mutex> lk(m_);
  return open_;
}

void detail::help_latch::wait() const {
  std::unique_lock<std::mutex> lk(m_);
  cv_.wait(lk, [&] { return open_; });
}

void detail::help_latch::reset() {
  std::lock_guard<std::mutex> lk(m_);
  open_ = false;
  hooks_.clear();
}

bool detail::help_latch::arm(std::function<void()> hook) {
  std::lock_guard<std::mutex> lk(m_);
  if (open_) return false;
  hooks_.push_back(std::move(hook));
  return true;
}

void task_group::run(task_function fn, const locality_hint& hint) {
  c_.pending.fetch_add(1, std::memory_order_relaxed);
  try {
    s_.submit_counted(std::move(fn), c_, hint);
  } catch (...) {
    c_.pending.fetch_sub(1, std::memory_order_relaxed);  // never queued
    throw;
  }
}

void task_group::wait() {
  wait_no_throw();
  std::exception_ptr e;
  {
    std::lock_guard<std::mutex> lk(c_.m);
    std::swap(e, c_.error);
  }
  if (e) std::rethrow_exception(e);
}

}  // namespace sinew
