// The `tbb` policy's parallel_for: one range of chunks per worker slot
// (workers/owned_ranges.hpp), run by oneTBB tasks and by the workers
// lingering since the last loop (workers/loop_linger.hpp).
#include "tbb_impl.hpp"

#include "workers/owned_ranges.hpp"

#include <oneapi/tbb/blocked_range.h>
#include <oneapi/tbb/parallel_for.h>
#include <oneapi/tbb/partitioner.h>

namespace sinew {

namespace {
using detail::workers::ticks;
}  // namespace

void tbb_scheduler::parallel_for(std::size_t n, std::size_t grain,
                                 detail::function_ref<void(std::size_t, std::size_t)> body) {
  parallel_for_at({}, n, grain, body);
}

void tbb_scheduler::parallel_for_at(const locality_hint&, std::size_t n, std::size_t grain,
                                    detail::function_ref<void(std::size_t, std::size_t)> body) {
  if (n == 0) return;
  if (grain == 0) grain = 1;
  p_->pfors.fetch_add(1, std::memory_order_relaxed);
  impl* p = p_.get();
  int ca = p->current_arena();
  const unsigned a = ca >= 0 ? unsigned(ca) : p->round_robin();
  impl::node_arena& A = *p->arenas[a];
  // Chunks of at least `grain` items, at most 1024 a worker; a claim takes
  // up to 16 of them while a range is long (owned_ranges), so that a grain
  // of 1 over many items does not become a claim per item, and a long
  // loop's last claims are short.
  const std::size_t most = std::size_t(A.threads) * 1024;
  const std::size_t chunk = std::max(grain, (n + most - 1) / most), chunks = (n + chunk - 1) / chunk;
  // One range of chunks per worker slot (workers/owned_ranges.hpp): the
  // worker of slot s runs the same slice of every loop of this shape, as
  // under OpenMP's static schedule, and takes others' chunks when its own
  // are done. The thread from outside (slot 0) owns none.
  detail::workers::owned_ranges R(chunks, A.threads);
  std::atomic<bool> failed{false};  // a body threw: the others claim no more
  // oneTBB orders the caller's writes before the loop's tasks and their
  // accesses before its join returns; ThreadSanitizer cannot see inside
  // libtbb, so the hand-overs are told to it (detail/tsan.hpp): in through
  // `failed`, out through R.
  struct handed_over {
    void* frame;
    ~handed_over() { detail::tsan_release(frame); }
  };
  auto work = [&] {
    detail::tsan_acquire(&failed);
    handed_over h{&R};
    const int s = tbb::this_task_arena::current_thread_index();
    const unsigned own = s >= 1 ? unsigned(s - 1) : R.slots();
    impl::counters& c = A.slot(s);
    try {
      for (std::size_t kb, ke; !failed.load(std::memory_order_relaxed) && R.next(own, kb, ke);) {
        const std::uint64_t t0 = ticks();
        {
          impl::scope in(c);
          body(kb * chunk, std::min(n, ke * chunk));
        }
        impl::account(c, t0);
      }
    } catch (...) {
      failed.store(true, std::memory_order_relaxed);
      throw;
    }
  };
  // One task per worker that can take part, and one for a caller from
  // outside, which owns no range. Isolated: while the caller waits for its
  // loop it runs only the loop's own tasks. Without isolation a worker
  // waiting for a map's loop would also take stage activations queued in
  // the arena (another stage's, or another replica's, which may go on with
  // unit after unit) and the stage that called the loop, often the serial
  // one every unit waits for, would resume only when that activation ends.
  std::size_t tasks = std::min<std::size_t>(chunks, A.threads + (ca >= 0 ? 0 : 1));
  auto loop = [&] {
    tbb::this_task_arena::isolate([&] {
      if (tasks == 1) return work();
      tbb::parallel_for(tbb::blocked_range<std::size_t>(0, tasks, 1),
                        [&](const tbb::blocked_range<std::size_t>&) { work(); }, tbb::simple_partitioner());
    });
  };
  // Workers lingering since the last loop run their slots' blocks in place
  // (workers/loop_linger.hpp); a body's exception there comes back here.
  struct team {
    decltype(work)& w;
    std::atomic<bool> threw{false};
    std::exception_ptr error;
    static void run(void* self) noexcept {
      auto& t = *static_cast<team*>(self);
      try {
        t.w();
      } catch (...) {
        if (!t.threw.exchange(true, std::memory_order_acq_rel)) t.error = std::current_exception();
      }
    }
  } tm{work, {}, {}};
  detail::workers::loop_linger::team_loop tl{&team::run, &tm};
  detail::tsan_release(&failed);
  const bool opened = A.linger.open(&tl);
  if (opened) {
    // The lingering workers take their part in place: oneTBB tasks only for
    // the rest, and none that would wake a worker beyond the cores (unless
    // the scheduler was given more workers than cores).
    const std::size_t in_place = A.linger.outstanding(), cores = impl::cores();
    tasks = tasks > in_place ? tasks - in_place : 1;
    if (A.threads <= cores) tasks = std::min(tasks, cores > in_place ? cores - in_place : 1);
  }
  A.linger.loop_starts(ticks());
  struct ends {  // also when the body throws: the lingerers leave the frame first
    impl* p;
    impl::node_arena& A;
    void* frame;
    detail::workers::loop_linger::team_loop* opened;
    bool done = false;
    void finish() noexcept {
      if (std::exchange(done, true)) return;
      p->linger_after_loop(A, opened);
      detail::tsan_acquire(frame);
    }
    ~ends() { finish(); }
  } at_end{p, A, &R, opened ? &tl : nullptr};
  A.arena.execute(loop);  // runs in place when already inside the arena
  at_end.finish();
  if (tm.error) std::rethrow_exception(tm.error);
}

}  // namespace sinew
