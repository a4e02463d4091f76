#include <sinew/tbb_scheduler.hpp>

#include <algorithm>
#include <chrono>

#include <sinew/detail/clock.hpp>
#include <condition_variable>
#include <mutex>
#include <thread>

#include <oneapi/tbb/blocked_range.h>
#include <oneapi/tbb/global_control.h>
#include <oneapi/tbb/parallel_for.h>
#include <oneapi/tbb/partitioner.h>
#include <oneapi/tbb/task_arena.h>

namespace sinew {

namespace {
using detail::now_ns;
// oneTBB's pool holds hardware_concurrency - 1 workers unless told otherwise;
// our arenas reserve no slot for an external thread (stage activations are
// enqueued from threads that never join), so an arena of n needs n workers.
// The active limit is the smallest among live global_controls and replacing
// one while arenas run is unsafe, so one is set, once, generously: the pool
// only grows as arenas ask for workers.
void ensure_workers(unsigned n) {
  static const std::size_t cap = std::max<std::size_t>({n, std::thread::hardware_concurrency(), 256}) + 1;
  static tbb::global_control gc(tbb::global_control::max_allowed_parallelism, cap);
  (void)gc;
}

}  // namespace

struct tbb_scheduler::impl {
  struct alignas(64) counters {
    std::atomic<std::uint64_t> tasks{0}, busy{0};
  };
  explicit impl(unsigned n) : threads(n), arena(int(n), 0), per_worker(new counters[n + 1]) {}
  unsigned threads;
  tbb::task_arena arena;
  std::unique_ptr<counters[]> per_worker;  // last slot: threads outside the arena
  std::atomic<std::uint64_t> submitted{0}, run{0}, pfors{0};
  // Tasks enqueued and not yet finished. ~task_arena does not wait for them,
  // and they touch this object after their function returns, so the
  // destructor waits. Decremented under the lock, so the destructor cannot
  // see zero while a task still holds a reference.
  std::mutex m;
  std::condition_variable idle;
  std::uint64_t outstanding = 0;

  counters& mine() {
    int i = tbb::this_task_arena::current_thread_index();
    return per_worker[(i >= 0 && unsigned(i) < threads) ? unsigned(i) : threads];
  }
  void account(std::uint64_t t0) {
    auto& c = mine();
    c.tasks.fetch_add(1, std::memory_order_relaxed);
    c.busy.fetch_add(now_ns() - t0, std::memory_order_relaxed);
  }
};

tbb_scheduler::tbb_scheduler(unsigned threads)
    : p_(std::make_unique<impl>(threads ? threads : std::max(1u, std::thread::hardware_concurrency()))) {
  ensure_workers(p_->threads);
  p_->arena.initialize();
}

tbb_scheduler::~tbb_scheduler() {
  std::unique_lock<std::mutex> lk(p_->m);
  p_->idle.wait(lk, [&] { return p_->outstanding == 0; });
}

unsigned tbb_scheduler::concurrency() const noexcept { return p_->threads; }

void tbb_scheduler::submit(std::function<void()> fn, const locality_hint&) {
  p_->submitted.fetch_add(1, std::memory_order_relaxed);
  impl* p = p_.get();
  {
    std::lock_guard<std::mutex> lk(p->m);
    ++p->outstanding;
  }
  struct task {  // oneTBB calls it through a const reference
    impl* p;
    mutable std::function<void()> fn;
    void operator()() const {
      std::uint64_t t0 = now_ns();
      fn();
      fn = nullptr;  // release captures before the scheduler may go away
      p->run.fetch_add(1, std::memory_order_relaxed);
      p->account(t0);
      std::lock_guard<std::mutex> lk(p->m);
      if (--p->outstanding == 0) p->idle.notify_all();
    }
  };
  p_->arena.enqueue(task{p, std::move(fn)});
}

void tbb_scheduler::parallel_for(std::size_t n, std::size_t grain,
                                 detail::function_ref<void(std::size_t, std::size_t)> body) {
  if (n == 0) return;
  if (grain == 0) grain = 1;
  p_->pfors.fetch_add(1, std::memory_order_relaxed);
  impl* p = p_.get();
  auto loop = [&] {
    tbb::parallel_for(
        tbb::blocked_range<std::size_t>(0, n, grain),
        [&](const tbb::blocked_range<std::size_t>& r) {
          std::uint64_t t0 = now_ns();
          body(r.begin(), r.end());
          p->account(t0);
        },
        tbb::auto_partitioner());
  };
  p_->arena.execute(loop);  // runs in place when already inside the arena
}

scheduler_stats tbb_scheduler::stats() const {
  scheduler_stats s;
  s.tasks_submitted = p_->submitted.load();
  s.tasks_run = p_->run.load();
  s.parallel_fors = p_->pfors.load();
  for (unsigned i = 0; i <= p_->threads; ++i)
    s.workers.push_back({p_->per_worker[i].tasks.load(), p_->per_worker[i].busy.load()});
  return s;
}

void tbb_scheduler::reset_stats() {
  p_->submitted = 0;
  p_->run = 0;
  p_->pfors = 0;
  for (unsigned i = 0; i <= p_->threads; ++i) {
    p_->per_worker[i].tasks = 0;
    p_->per_worker[i].busy = 0;
  }
}

}  // namespace sinew
