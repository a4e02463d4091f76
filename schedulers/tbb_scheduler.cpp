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
#include "workers/owned_ranges.hpp"
#include "workers/slot_counters.hpp"
#include "workers/tick_clock.hpp"

#include <oneapi/tbb/blocked_range.h>
#include <oneapi/tbb/global_control.h>
#include <oneapi/tbb/info.h>
#include <oneapi/tbb/parallel_for.h>
#include <oneapi/tbb/partitioner.h>
#include <oneapi/tbb/task_arena.h>
#include <oneapi/tbb/task_group.h>

namespace sinew {

namespace {
using detail::workers::ticks;
// oneTBB's pool holds hardware_concurrency - 1 workers unless told otherwise;
// our arenas have n slots for workers (stage activations are enqueued from
// threads that never join), so an arena of n needs n workers.
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
    ensure_workers(unsigned(total));  // before any arena asks for workers
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
    counters::add(c.busy, ticks() - t0);
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
    const detail::workers::loop_linger::plan pl = A.linger.loop_ends(ticks(), awake, opened);
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

thread_local tbb_scheduler::impl::counters* tbb_scheduler::impl::tl_slot __attribute__((tls_model("initial-exec"))) =
    nullptr;

tbb_scheduler::tbb_scheduler(unsigned threads)
    : p_(std::make_unique<impl>(topology::synthetic(
          1, threads ? threads : std::max(1u, std::thread::hardware_concurrency())))) {
  p_->build();
}

tbb_scheduler::tbb_scheduler(const topology& t) : p_(std::make_unique<impl>(t)) { p_->build(); }

tbb_scheduler::~tbb_scheduler() {
  p_->backups.stop();  // what the checks submit is waited for below
  for (const auto& A : p_->arenas) A->linger.stop();
  // ~task_arena does not wait for tasks: wait until every submitted
  // function has ended (the arenas' workers run them meanwhile).
  for (unsigned round = 0; !p_->quiescent(); ++round) {
    if (round < 64) std::this_thread::yield();
    else std::this_thread::sleep_for(std::chrono::microseconds(50));
  }
  // Lingering workers leave at once on stop(), queued ones return at
  // once; until then their tasks hold the arenas' addresses.
  for (const auto& A : p_->arenas)
    while (A->linger.outstanding() != 0) std::this_thread::yield();
}

unsigned tbb_scheduler::concurrency() const noexcept { return p_->threads; }
const topology& tbb_scheduler::topo() const noexcept { return p_->topo; }
std::size_t tbb_scheduler::arenas() const noexcept { return p_->arenas.size(); }
int tbb_scheduler::current_node() const noexcept { return p_->current_arena(); }

unsigned tbb_scheduler::impl::pick_slow(const locality_hint& hint, int current, std::uint64_t& hinted,
                                        std::uint64_t& remote, const char* who) {
  // Where: the arena of the hint's data, of the hinted node, of the
  // submitting task, or the next one round-robin.
  int a = -1;
  if (detail::hint_has_data(hint)) {
    thread_local std::vector<std::uint64_t> D;
    hinted = detail::hint_bytes(hint, topo.nodes(), D, who);
    if (hinted != 0) {
      a = arenas.size() == 1 ? 0 : detail::cheapest_node(topo, D, current);
      remote = hinted - D[std::size_t(a)];
    }
  }
  if (a < 0 && hint.numa_node >= 0 && std::size_t(hint.numa_node) < arenas.size()) a = hint.numa_node;
  if (a < 0) a = current;
  if (a < 0) a = int(round_robin());
  return unsigned(a);
}

// Runs a submitted function in arena slot `c`, and counts it there
// (a throwing submitted function terminates). `counter`: its task_group's.
inline void tbb_scheduler::impl::run(counters& c, task_function& fn, std::uint64_t hinted, std::uint64_t remote,
                                     detail::task_counter* counter) noexcept {
  std::atomic<std::uint64_t>* const timed = c.time_into();
  const std::uint64_t t0 = timed ? ticks() : 0;
  counters::add(c.started, 1);
  if (counter) detail::tsan_acquire(counter);  // what its submitter did before (submit_counted)
  if (hinted) {  // before fn: counted once a waiter sees the task done
    counters::add(c.hinted, hinted);
    counters::add(c.remote, remote);
  }
  {
    scope in(c);
    if (counter) counter->invoke(fn);
    else fn();
  }
  fn.reset();  // release captures before the scheduler may go away
  if (timed) counters::add(*timed, ticks() - t0);
  // Last but for the group: ~tbb_scheduler may return once it is counted.
  counters::add(c.retired, 1, std::memory_order_release);
  // The group's waiter may return, and free the scheduler, at once (its
  // oneTBB group still waits for this oneTBB task to return).
  if (counter) counter->finish();
}

// A task_group's function, as its oneTBB group runs it (through a const
// reference).
struct tbb_scheduler::impl::group_body {
  // A constructor, not an aggregate: GCC zero-fills a braced aggregate
  // temporary before moving the function in.
  group_body(impl* p, unsigned a, std::uint64_t hinted, std::uint64_t remote, task_function&& fn,
             detail::task_counter* counter) noexcept
      : p(p), a(a), hinted(hinted), remote(remote), fn(std::move(fn)), counter(counter) {}
  impl* p;
  unsigned a;
  std::uint64_t hinted, remote;
  mutable task_function fn;
  detail::task_counter* counter;
  void operator()() const noexcept { p->run(p->slot(a), fn, hinted, remote, counter); }
};

// A plain submission is a oneTBB task of its own, not a task_group's: a
// group's wait count costs two locked instructions per task (reserve on
// spawn, release at the end), as much as the rest of a spawn, and the
// scheduler counts its functions itself (quiescent()). detail::d1::task is
// the base of oneTBB's own task_group and task_arena::enqueue tasks. The
// task knows its arena from its context, so that without a hint it fills
// two cache lines, as a tbb::task_group task of two pointers does: a
// stolen task moves no more than oneTBB's.
struct tbb_scheduler::impl::no_hint {};
struct tbb_scheduler::impl::hint_bytes {  // counted where the task runs
  std::uint64_t hinted, remote;
};
template <class Hint>
struct tbb_scheduler::impl::task final : tbb::detail::d1::task {
  using allocator = tbb::detail::d1::small_object_allocator;
  task(allocator al, task_function&& fn, Hint h) noexcept : fn(std::move(fn)), alloc(al), h(h) {}
  [[no_unique_address]] task_function fn;  // `alloc` goes in its tail padding
  allocator alloc;
  [[no_unique_address]] Hint h;
  tbb::detail::d1::task* execute(tbb::detail::d1::execution_data& ed) override {
    detail::tsan_acquire(this);  // what its submitter did before (submit)
    node_arena& A = arena_of(*ed.context);
    // The slot from ed: no thread-local lookup.
    counters& c = A.slot(int(tbb::detail::d1::execution_slot(ed)));
    if constexpr (std::is_same_v<Hint, hint_bytes>) A.owner->run(c, fn, h.hinted, h.remote);
    else A.owner->run(c, fn);
    auto al = alloc;
    this->~task();
    al.deallocate(this, ed);
    return nullptr;
  }
  // Nothing cancels the context (isolated, never cancelled): run it all the same.
  tbb::detail::d1::task* cancel(tbb::detail::d1::execution_data& ed) override { return execute(ed); }
  static node_arena& arena_of(tbb::detail::d1::task_group_context& ctx) noexcept {
    return *reinterpret_cast<node_arena*>(reinterpret_cast<char*>(&ctx) - offsetof(node_arena, ctx));
  }
};

void tbb_scheduler::submit_backup(task_function fn) {
  // From a task of ours, onto the worker's deque: its own wait takes it.
  p_->backups.submit_backup(*this, p_->own_slot() != nullptr, std::move(fn));
}

void tbb_scheduler::submit(task_function fn, const locality_hint& hint) {
  if (!fn) throw error("tbb_scheduler::submit: empty function");
  impl* p = p_.get();
  tbb::detail::d1::small_object_allocator al{};
  static_assert(sizeof(impl::task<impl::no_hint>) == 2 * tbb::detail::d1::task_alignment);
  // A task of ours submitting without a hint, the common case: onto its
  // thread's deque in its own arena, decided from its slot alone.
  if (impl::counters* in = p->own_slot(); in && hint.numa_node < 0 && !detail::hint_has_data(hint)) {
    auto* t = al.new_object<impl::task<impl::no_hint>>(al, std::move(fn), impl::no_hint{});
    p->count_submit(in);  // once nothing can throw: a counted function always runs
    detail::tsan_release(t);  // oneTBB's hand-off, which ThreadSanitizer cannot see (detail/tsan.hpp)
    return tbb::detail::d1::spawn(*t, in->home->ctx);
  }
  const impl::target w = p->place(hint);
  tbb::detail::d1::task* t;
  if (w.hinted) t = al.new_object<impl::task<impl::hint_bytes>>(al, std::move(fn), impl::hint_bytes{w.hinted, w.remote});
  else t = al.new_object<impl::task<impl::no_hint>>(al, std::move(fn), impl::no_hint{});
  p->count_submit(w.in);  // once nothing can throw: a counted function always runs
  detail::tsan_release(t);
  impl::node_arena& A = *p->arenas[w.arena];
  if (w.local()) {
    tbb::detail::d1::spawn(*t, A.ctx);
  } else {
    tbb::detail::r1::enqueue(*t, A.ctx, &A.arena);
    A.linger.poke();
  }
}

namespace {
// A task_group's oneTBB group: its tasks are oneTBB tasks of this group
// (spawned on the submitting worker's deque when it is in their arena,
// else deferred and enqueued into it), so that the waiter can join the
// arena and run them (tbb::task_group::wait) instead of sleeping.
struct tbb_group final : detail::task_counter::extension {
  tbb::task_group tg;
  unsigned arena = 0;  // where the first task went: the waiter helps there
  // oneTBB's ~task_group may throw (when tasks are left); the counter is
  // destroyed only after its wait, with none left.
  ~tbb_group() noexcept override {}
};
}  // namespace

void tbb_scheduler::submit_counted(task_function fn, detail::task_counter& c, const locality_hint& hint) {
  if (!fn) throw error("tbb_scheduler::submit: empty function");
  impl* p = p_.get();
  auto* g = static_cast<tbb_group*>(c.ext.load(std::memory_order_acquire));
  const impl::target w = p->place(hint);
  if (!g) {
    auto fresh = std::make_unique<tbb_group>();
    fresh->arena = w.arena;
    detail::task_counter::extension* expected = nullptr;
    if (c.ext.compare_exchange_strong(expected, fresh.get(), std::memory_order_acq_rel)) g = fresh.release();
    else g = static_cast<tbb_group*>(expected);
  }
  // A worker of the arena spawns onto its own deque (LIFO, as oneTBB's
  // task_group::run): its wait then runs its own subtasks first, so nested
  // groups nest about as deep as the recursion, not as the arena's queue.
  auto h = g->tg.defer(impl::group_body(p, w.arena, w.hinted, w.remote, std::move(fn), &c));
  p->count_submit(w.in);  // once nothing can throw: a counted function always runs
  // Keyed by the counter (the task's own address is oneTBB's): a task takes
  // over what was done before every submission into its group so far.
  detail::tsan_release(&c);
  if (w.local()) {
    g->tg.run(std::move(h));
  } else {
    p->arenas[w.arena]->arena.enqueue(std::move(h));
    p->arenas[w.arena]->linger.poke();
  }
}

void tbb_scheduler::wait_counted(detail::task_counter& c) noexcept {
  // Always through the oneTBB group when there is one, even with nothing
  // pending: a task counts itself done in `c` before its oneTBB task has
  // returned, and ~task_group with a task still returning throws
  // (missing_wait). A worker of ours waits inside its arena, running tasks
  // meanwhile (nested groups cannot all be stuck behind waiting workers);
  // a thread from outside waits outside the arena, asleep, so that n
  // workers run a group on n threads. oneTBB bounds the stack of nested
  // waits itself: past its stealing threshold (half the thread's stack) a
  // waiter runs only tasks of its own deque.
  if (auto* g = static_cast<tbb_group*>(c.ext.load(std::memory_order_acquire))) {
    try {
      if (p_->current_arena() >= 0) {
        p_->arenas[g->arena]->arena.execute([&] { g->tg.wait(); });
      } else {
        g->tg.wait();
      }
    } catch (...) {  // c.run keeps the tasks' exceptions: nothing of theirs gets here
    }
  }
  c.wait();
}

void tbb_scheduler::help_until(detail::help_latch& l) {
  if (l.is_open()) return;
  // A thread from outside sleeps, so that n workers run the graph on n
  // threads (a helper beside them moves every unit between two cores); a
  // worker of ours waiting (a run started from a task) works in its arena,
  // so nested waits cannot hang (the stack: as in wait_counted).
  const int ca = p_->current_arena();
  if (ca < 0) return l.wait();
  tbb::task_arena& arena = p_->arenas[unsigned(ca)]->arena;
  arena.execute([&] {
    // A group with one deferred empty task, enqueued when the latch opens:
    // tg.wait() runs the arena's tasks on this thread until that task has
    // run (oneTBB sleeps the thread when there is nothing to take).
    tbb::task_group tg;
    auto done = std::make_shared<tbb::task_handle>(tg.defer([] {}));
    tbb::task_arena* ap = &arena;
    if (!l.arm([ap, done] { ap->enqueue(std::move(*done)); })) tg.run(std::move(*done));
    tg.wait();
  });
}

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

scheduler_stats tbb_scheduler::stats() const {
  scheduler_stats s;
  s.tasks_submitted = p_->submitted_total() - p_->submits_base.load(std::memory_order_relaxed);
  s.parallel_fors = p_->pfors.load();
  s.workers.resize(p_->threads + 1);
  const detail::workers::tick_rate rate = detail::workers::tick_rate::now();
  for (std::size_t a = 0; a < p_->arenas.size(); ++a)
    for (unsigned i = 0; i < p_->arenas[a]->threads; ++i) s.workers[p_->arenas[a]->first + i].node = int(a);
  p_->each_counters([&](const impl::counters& c, unsigned row) {
    scheduler_stats::worker& w = s.workers[row];
    const std::uint64_t fns = c.functions_run();
    s.tasks_run += fns;
    w.tasks += c.chunks.load() + fns;
    w.busy_ns += rate.to_ns(c.busy_ticks());
    w.hinted_bytes += c.hinted.load();
    w.remote_bytes += c.remote.load();
  });
  return s;
}

void tbb_scheduler::reset_stats() {
  p_->pfors = 0;
  p_->submits_base.store(p_->submitted_total(), std::memory_order_relaxed);
  p_->each_counters([](impl::counters& c, unsigned) {
    c.retired_base.store(c.retired.load());
    for (auto* x : {&c.chunks, &c.busy, &c.sampled, &c.sampled_n, &c.hinted, &c.remote}) x->store(0);
  });
}

// "tbb": one arena per NUMA node of the topology, or one arena of `threads`.
static scheduler_registration tbb_registration("tbb", [](const scheduler_options& o) -> std::unique_ptr<scheduler> {
  if (auto t = o.numa_topology()) return std::make_unique<tbb_scheduler>(*t);
  return std::make_unique<tbb_scheduler>(o.threads);
});

}  // namespace sinew
