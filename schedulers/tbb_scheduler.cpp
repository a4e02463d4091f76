// The `tbb` policy: arenas, tasks, groups, waits and statistics (its
// parallel_for is in tbb_loop.cpp, its state in tbb_impl.hpp).
#include "tbb_impl.hpp"

namespace sinew {

namespace {
using detail::workers::ticks;
}  // namespace

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

