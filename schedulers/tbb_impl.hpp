#pragma once
// Internal: the state of the `tbb` policy, tbb_scheduler::impl (its arenas,
// per-slot counters, lingering workers and backup timer), shared by
// tbb_scheduler.cpp (construction, tasks, groups, statistics) and
// tbb_loop.cpp (parallel_for).
#include <sinew/schedulers/scheduler_registry.hpp>
#include <sinew/schedulers/tbb_scheduler.hpp>

#include <algorithm>
#include <cassert>
#include <chrono>
#include <cstddef>
#include <exception>
#include <memory>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

#include <sinew/detail/clock.hpp>
#include <sinew/detail/tsan.hpp>
#include <sinew/engine/error.hpp>

#include "locality.hpp"
#include "workers/backup_timer.hpp"
#include "workers/loop_linger.hpp"
#include "workers/slot_counters.hpp"
#include "workers/tick_clock.hpp"

#include <oneapi/tbb/global_control.h>
#include <oneapi/tbb/info.h>
#include <oneapi/tbb/task_arena.h>
#include <oneapi/tbb/task_group.h>

namespace sinew {

namespace detail {
// oneTBB's pool holds hardware_concurrency - 1 workers unless told otherwise;
// our arenas have n slots for workers (stage activations are enqueued from
// threads that never join), so an arena of n needs n workers.
// The active limit is the smallest among live global_controls and replacing
// one while arenas run is unsafe, so one is set, once, generously: the pool
// only grows as arenas ask for workers.
inline void tbb_ensure_workers(unsigned n) {
  static const std::size_t cap = std::max<std::size_t>({n, std::thread::hardware_concurrency(), 256}) + 1;
  static tbb::global_control gc(tbb::global_control::max_allowed_parallelism, cap);
  (void)gc;
}
}  // namespace detail

struct tbb_scheduler::impl {
  struct node_arena;
  using counters = detail::workers::slot_counters<node_arena>;  // one per arena slot
  struct node_arena {
    tbb::task_arena arena;
    // The context of plain submissions: spawned onto the deque of a thread
    // running in the arena (LIFO, stolen FIFO by idle workers), else
    // enqueued (FIFO). Isolated: nothing outside cancels them.
    // A plain task finds its arena from its context (arena_of).
    tbb::task_group_context ctx{tbb::task_group_context::isolated};
    impl* owner = nullptr;
    unsigned index = 0;    // in arenas
    unsigned first = 0;    // index of its first worker slot in per_worker
    unsigned threads = 0;
    counters* workers = nullptr;  // per_worker + first: the counters of slots 1..threads
    detail::workers::loop_linger linger;  // idle workers kept awake between loops
    // Slot 0, reserved for a thread from outside (a parallel_for caller, a
    // worker of another arena waiting for a group there): counted on the
    // arena's last worker in stats(), so that per-node totals include what
    // it ran.
    counters outside_slot;
    // The counters of slot i (the calling thread runs there).
    counters& slot(int i) noexcept {
      assert(i >= 0 && unsigned(i) <= threads);  // the arena has n + 1 slots
      return i == 0 ? outside_slot : workers[i - 1];
    }
  };

  explicit impl(topology t) : topo(std::move(t)) {}
  topology topo;
  std::vector<std::unique_ptr<node_arena>> arenas;
  unsigned threads = 0;                    // sum over the arenas
  std::unique_ptr<counters[]> per_worker;  // slots 1..n of each arena; last: threads outside the arenas
  std::atomic<std::uint64_t> pfors{0}, rr{0};
  detail::workers::backup_timer backups;  // submit_backup from threads outside the arenas
  std::atomic<std::uint64_t> submits_base{0};  // submitted_total() at the last reset_stats

  // The counters of the arena slot whose task (or loop chunk) this thread
  // is running (null: none): a task it submits without a hint stays in
  // that slot's arena (`home`), and is counted in that slot. One pointer,
  // so that a task saves and restores one word.
  // initial-exec: read without a call to __tls_get_addr, which on every
  // submit and task costs as much as a queue operation (libsinew_core is
  // loaded with the program, not by dlopen late).
  static thread_local counters* tl_slot __attribute__((tls_model("initial-exec")));
  struct scope {  // sets tl_slot for the duration of one task
    counters* saved;
    explicit scope(counters& c) : saved(tl_slot) { tl_slot = &c; }
    ~scope() { tl_slot = saved; }
  };
  // The calling thread's slot when it runs a task of ours, else null.
  counters* own_slot() const noexcept {
    counters* c = tl_slot;
    return c && c->home->owner == this ? c : nullptr;
  }
  int current_arena() const noexcept {
    const counters* c = own_slot();
    return c ? int(c->home->index) : -1;
  }

  void build() {
    const std::size_t N = topo.nodes();
    if (N == 0 || topo.total_cores() == 0) throw error("tbb_scheduler: topology has no cores");
    // oneTBB's NUMA ids, used when they correspond one to one to the real
    // topology's nodes (oneTBB without tbbbind reports one node, id -1).
    std::vector<tbb::numa_node_id> ids;
    if (!topo.synthetic() && N > 1) {
      ids = tbb::info::numa_nodes();
      if (ids.size() != N) ids.clear();
    }
    std::size_t total = 0;
    for (std::size_t n = 0; n < N; ++n) total += std::max<std::size_t>(1, topo.cores(n).size());
    detail::tbb_ensure_workers(unsigned(total));  // before any arena asks for workers
    for (std::size_t n = 0; n < N; ++n) {
      auto a = std::make_unique<node_arena>();
      a->owner = this;
      a->index = unsigned(n);
      a->first = threads;
      a->threads = unsigned(std::max<std::size_t>(1, topo.cores(n).size()));
      threads += a->threads;
      // n worker slots and one reserved for an outside thread: a caller of
      // parallel_for joins its loop at once, and n workers run the rest
      // (a thread waiting for a run sleeps, help_until).
      const int slots = int(a->threads) + 1;
      if (!ids.empty()) {
        tbb::task_arena::constraints c;
        c.set_numa_id(ids[n]).set_max_concurrency(slots);
        a->arena.initialize(c, 1);
      } else {
        a->arena.initialize(slots, 1);
      }
      arenas.push_back(std::move(a));
    }
    per_worker.reset(new counters[threads + 1]);
    for (const auto& A : arenas) {
      A->workers = &per_worker[A->first];
      A->outside_slot.home = A.get();
      for (unsigned i = 0; i < A->threads; ++i) A->workers[i].home = A.get();
    }
    backups.start();  // last: its thread sees the scheduler whole
  }

  // The counters of the calling thread's slot in arena a (it runs there).
  counters& slot(unsigned a) { return arenas[a]->slot(tbb::this_task_arena::current_thread_index()); }
  // Calls f(c, row) for every counters entry (mutable: the counters are
  // atomics) with the index of its row in stats().workers (`threads`:
  // threads outside the arenas).
  template <class F>
  void each_counters(F&& f) const {
    for (unsigned i = 0; i <= threads; ++i) f(per_worker[i], i);
    for (const auto& A : arenas) f(A->outside_slot, A->first + A->threads - 1);
  }
  // The arena a task with `hint` goes to, submitted by a thread in arena
  // `current` (-1: none of ours), and the hint's bytes (hinted, and remote
  // from that arena's node).
  unsigned pick(const locality_hint& hint, int current, std::uint64_t& hinted, std::uint64_t& remote,
                const char* who) {
    hinted = remote = 0;
    if (current >= 0 && hint.numa_node < 0 && !detail::hint_has_data(hint)) return unsigned(current);
    return pick_slow(hint, current, hinted, remote, who);
  }
  unsigned pick_slow(const locality_hint& hint, int current, std::uint64_t& hinted, std::uint64_t& remote,
                     const char* who);
  // Where the calling thread is, and where a task it submits now goes.
  struct target {
    counters* in;  // own_slot()
    unsigned arena;
    std::uint64_t hinted, remote;
    // The caller is a worker of the target arena: the task goes on its deque.
    bool local() const noexcept { return in && in->home->index == arena; }
  };
  target place(const locality_hint& hint) {
    target t{own_slot(), 0, 0, 0};
    t.arena = pick(hint, t.in ? int(t.in->home->index) : -1, t.hinted, t.remote, "tbb_scheduler::submit");
    return t;
  }
  std::uint64_t submitted_total() const {
    std::uint64_t n = 0;
    each_counters([&](const counters& c, unsigned) { n += c.submits.load(std::memory_order_acquire); });
    return n;
  }
  // Whether every submitted function has ended. `retired` is read first:
  // a function counted there was counted in `submits` before it was queued,
  // and so were the functions it submitted (release/acquire), so a function
  // still queued or running keeps the sums apart.
  bool quiescent() const {
    std::uint64_t done = 0;
    each_counters([&](const counters& c, unsigned) { done += c.retired.load(std::memory_order_acquire); });
    return done == submitted_total();
  }
  // Inlined into each task's execute: a call more per task is measurable.
  [[gnu::always_inline]] inline void run(counters& c, task_function& fn, std::uint64_t hinted = 0,
                                         std::uint64_t remote = 0, detail::task_counter* counter = nullptr) noexcept;
  struct group_body;  // a task_group's function, as its oneTBB group runs it
  struct no_hint;
  struct hint_bytes;
  template <class Hint>
  struct task;  // a plain submission, as oneTBB runs it
  // Counts a submission by the calling thread (before it is queued: see
  // quiescent()); `in` is its own_slot().
  void count_submit(counters* in) {
    if (in) counters::add(in->submits, 1, std::memory_order_release);
    else per_worker[threads].submits.fetch_add(1, std::memory_order_release);
  }
  static void account(counters& c, std::uint64_t t0) {
    counters::add(c.chunks, 1);
    counters::add(c.busy, detail::workers::ticks() - t0);
  }
  // Whether functions wait queued while none has begun since the previous
  // call (`seen`: the begun count then): a lingering worker leaves to take them.
  bool starved(std::uint64_t& seen) const noexcept {
    std::uint64_t begun = 0;
    each_counters([&](const counters& c, unsigned) { begun += c.started.load(std::memory_order_relaxed); });
    const bool stuck = begun == seen && submitted_total() > begun;  // submits after: counted before queued
    seen = begun;
    return stuck;
  }
  // Keeps up to `awake` idle workers of arena A spinning after a loop
  // (workers/loop_linger.hpp): at most one runnable thread per core with
  // the thread that ran the loop's end, which goes on, and the thread
  // that waits for the run beside them.
  // noexcept: it runs in a guard's destructor, also while a loop's
  // exception unwinds; a task that cannot be queued gives its claim back.
  // Logical CPUs of the machine: what lingering and team loops keep runnable threads within.
  static unsigned cores() noexcept {
    static const unsigned n = std::max(1u, std::thread::hardware_concurrency());
    return n;
  }
  // `opened`: the loop, when open() offered it to the lingering workers.
  void linger_after_loop(node_arena& A, detail::workers::loop_linger::team_loop* opened) noexcept {
    const unsigned most = std::min(A.threads, cores() - 1), self = own_slot() ? 1 : 0;
    const unsigned awake = most > self ? most - self : 0;
    const detail::workers::loop_linger::plan pl = A.linger.loop_ends(detail::workers::ticks(), awake, opened);
    for (unsigned i = 0; i < pl.workers; ++i) {
      try {
        A.arena.enqueue([this, &A] {
          std::uint64_t seen = ~std::uint64_t(0);
          A.linger.linger([&] { return starved(seen); });
        });
      } catch (...) {  // out of memory: the rest stay asleep
        A.linger.unclaim(pl.workers - i);
        return;
      }
    }
  }
  unsigned round_robin() noexcept {
    return arenas.size() == 1 ? 0u : unsigned(rr.fetch_add(1, std::memory_order_relaxed) % arenas.size());
  }
};

}  // namespace sinew
