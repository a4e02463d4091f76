#include <sinew/deal_scheduler.hpp>
#include <sinew/error.hpp>
#include <sinew/scheduler.hpp>
#include <sinew/steal_scheduler.hpp>
#include <sinew/tbb_scheduler.hpp>

#include <algorithm>
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

scheduler& default_scheduler() {
  // SINEW_SCHEDULER picks the policy (tbb when unset or empty), SINEW_THREADS
  // the number of workers. An unknown policy throws (and the next call tries
  // again).
  static scheduler* s = []() -> scheduler* {
    unsigned n = 0;
    if (const char* e = std::getenv("SINEW_THREADS")) n = unsigned(std::strtoul(e, nullptr, 10));
    std::string policy = "tbb";
    if (const char* e = std::getenv("SINEW_SCHEDULER"); e && *e) policy = e;
    // Immortal: tasks may still run during exit.
    if (policy == "tbb") return new tbb_scheduler(n);
    if (policy == "steal") return new steal_scheduler(n);
    if (policy == "deal") return new deal_scheduler(topology::current());  // one worker per core
    throw error("SINEW_SCHEDULER: unknown policy '" + policy + "' (known: tbb, steal, deal)");
  }();
  return *s;
}

void task_group::run(std::function<void()> fn, const locality_hint& hint) {
  st_->pending.fetch_add(1, std::memory_order_relaxed);
  s_.submit(
      [st = st_, fn = std::move(fn)] {
        try {
          fn();
        } catch (...) {
          std::lock_guard<std::mutex> lk(st->m);
          if (!st->error) st->error = std::current_exception();
        }
        if (st->pending.fetch_sub(1, std::memory_order_acq_rel) == 1) st->pending.notify_all();
      },
      hint);
}

void task_group::wait_no_throw() noexcept {
  for (std::uint32_t p = st_->pending.load(std::memory_order_acquire); p != 0;
       p = st_->pending.load(std::memory_order_acquire))
    st_->pending.wait(p, std::memory_order_acquire);
}

void task_group::wait() {
  wait_no_throw();
  std::exception_ptr e;
  {
    std::lock_guard<std::mutex> lk(st_->m);
    std::swap(e, st_->error);
  }
  if (e) std::rethrow_exception(e);
}

}  // namespace sinew
