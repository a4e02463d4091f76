// The `steal` policy: per-worker Chase-Lev deques [ChaseLev05, Le13], a
// sharded injection queue, round-robin stealing, futex sleep when idle.
// This file: construction, submit, parallel_for and statistics; the
// workers' loop is in steal_workers.cpp, the protocols in steal_impl.hpp.
#include <algorithm>
#include <thread>

#include "steal_impl.hpp"

#if defined(__linux__)
#include <sched.h>  // sched_getaffinity
#endif

namespace sinew {


namespace {

// CPUs this process may run on.
std::vector<int> usable_cpus() {
  std::vector<int> cpus;
#if defined(__linux__)
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) == 0)
    for (int c = 0; c < CPU_SETSIZE; ++c)
      if (CPU_ISSET(c, &set)) cpus.push_back(c);
#endif
  return cpus;
}

// The topology a thread-count scheduler reports: the process's when it is
// real and the workers are pinned (their CPUs tell their nodes), else one
// node (a synthetic topology's CPU ids are not this machine's).
topology placement_topology(bool pin) {
  if (pin) {
    topology t = topology::current();
    if (!t.synthetic()) return t;
  }
  return topology();
}

}  // namespace

steal_scheduler::steal_scheduler(unsigned threads, bool pin)
    : p_(std::make_unique<impl>(threads ? threads : std::max(1u, std::thread::hardware_concurrency()),
                                pin, placement_topology(pin))) {
  const std::vector<int> cpus = pin ? usable_cpus() : std::vector<int>{};
  for (unsigned i = 0; i < p_->threads; ++i) {
    auto w = std::make_unique<impl::worker>();
    w->index = i;
    w->owner = p_.get();
    if (!cpus.empty()) {
      w->cpu = cpus[i % cpus.size()];
      w->node = std::max(0, p_->topo.node_of_core(w->cpu));
    }
    p_->workers.push_back(std::move(w));
  }
  start();
}

steal_scheduler::steal_scheduler(const topology& t, bool pin)
    : p_(std::make_unique<impl>(unsigned(t.total_cores()), pin && !t.synthetic(), t)) {
  if (t.total_cores() == 0) throw error("steal_scheduler: topology has no cores");
  unsigned idx = 0;
  for (std::size_t n = 0; n < t.nodes(); ++n)
    for (int cpu : t.cores(n)) {
      auto w = std::make_unique<impl::worker>();
      w->index = idx++;
      w->node = int(n);
      w->cpu = p_->pin ? cpu : -1;
      w->owner = p_.get();
      p_->workers.push_back(std::move(w));
    }
  start();
}

void steal_scheduler::start() {
  for (unsigned i = 0; i < p_->threads; ++i) p_->shards.push_back(std::make_unique<impl::shard>());
  for (auto& w : p_->workers) w->lone_top.assign(p_->threads, -1);
  p_->backups.start();  // the scheduler is whole but for its workers' threads
  // Every worker exists before any starts (they steal from each other).
  try {
    for (auto& w : p_->workers) {
      impl::worker* wp = w.get();
      impl* p = p_.get();
      w->th = std::thread([p, wp] { p->worker_main(*wp); });
    }
  } catch (...) {
    p_->stopping.store(true, std::memory_order_seq_cst);
    p_->lot.wake_all();
    for (auto& w : p_->workers)
      if (w->th.joinable()) w->th.join();
    throw;
  }
}

steal_scheduler::~steal_scheduler() {
  p_->backups.stop();  // before the workers leave: a check may submit
  // Workers leave once they see `stopping` and find no work; tasks still
  // queued (and the ones they spawn) run first.
  p_->stopping.store(true, std::memory_order_seq_cst);
  p_->lot.wake_all();
  for (auto& w : p_->workers) w->th.join();
  // A task left in the injection queue after every worker left can only come
  // from a submit that raced with the destructor (undefined): the shards
  // free it.
}

unsigned steal_scheduler::concurrency() const noexcept { return p_->threads; }

void steal_scheduler::submit(task_function fn, const locality_hint& hint) {
  submit_counted_impl(std::move(fn), nullptr, hint);
}

void steal_scheduler::submit_backup(task_function fn) { p_->backups.submit_backup(*this, p_->me() != nullptr, std::move(fn)); }

void steal_scheduler::submit_counted(task_function fn, detail::task_counter& c, const locality_hint& hint) {
  submit_counted_impl(std::move(fn), &c, hint);
}

void steal_scheduler::submit_counted_impl(task_function&& fn, detail::task_counter* c, const locality_hint& hint) {
  if (!fn) throw error("steal_scheduler::submit: empty function");
  impl::worker* w = p_->me();
  workers::count_one(w, &impl::worker::submitted, p_->sc.ext_submitted);
  task* t = tl_cache.get();
  t->loop = nullptr;
  if (detail::hint_has_data(hint)) {
    try {
      t->total = detail::hint_bytes(hint, p_->topo.nodes(), t->D, "steal_scheduler::submit");
    } catch (...) {
      tl_cache.put(t);
      throw;
    }
  }
  t->fn = std::move(fn);
  t->counter = c;
  p_->push(w, t);
}

void steal_scheduler::wait_counted(detail::task_counter& c) noexcept { workers::wait_counted(*p_, p_->me(), c); }

void steal_scheduler::help_until(detail::help_latch& l) { workers::help_until(*p_, p_->me(), l); }

void steal_scheduler::parallel_for(std::size_t n, std::size_t grain,
                                   detail::function_ref<void(std::size_t, std::size_t)> body) {
  parallel_for_at({}, n, grain, body);
}

void steal_scheduler::parallel_for_at(const locality_hint& hint, std::size_t n, std::size_t grain,
                                      detail::function_ref<void(std::size_t, std::size_t)> body) {
  if (n == 0) return;
  if (grain == 0) grain = 1;
  impl& p = *p_;
  impl::worker* w = p.me();
  loop_ctx L(body, grain, n);
  // The hint never moves the loop (this is the baseline): its D is only
  // counted, block by block, where the blocks run.
  std::vector<std::uint64_t> D;
  if (detail::hint_has_data(hint)) {
    L.total = detail::hint_bytes(hint, p.topo.nodes(), D, "steal_scheduler::parallel_for_at");
    L.D = D;
  }
  // Map dispatch (workers/map_dispatch.hpp).
  std::size_t b = 0;
  if (!workers::begin_loop(p.sc, L, n, p.threads, w, w ? w->node : 0, b)) {
    // One segment per participant, pushed in one step, then one wake for
    // the others. Each segment goes to the injection shard of a worker of
    // its own, where that worker looks first and idle ones may still take
    // it: with the static assignment (workers::affine_gate) segment i to
    // worker i, the caller keeping its own; else the caller keeps segment 0
    // and segment i goes to the i-th worker after it, so that thieves do
    // not all steal from the caller's deque.
    const std::size_t parts = std::min<std::size_t>(workers::chunk_count(n - b, grain), p.threads);
    // A caller past max_help_depth helps only from its own deque, where it
    // must find its loop's segments (workers/run_task.hpp).
    const bool deep = w && w->depth >= workers::max_help_depth;
    const workers::affine_gate::claim aff(p.affine, hint.affinity && parts == p.threads && !deep, p.threads);
    const bool affine = aff.held();
    const std::size_t mine = !w ? parts : affine ? w->index : 0;
    auto make = [&](std::size_t i) {
      task* t = tl_cache.get();
      t->loop = &L;
      t->b = workers::segment_begin(b, n, parts, i);
      t->e = workers::segment_begin(b, n, parts, i + 1);
      return t;
    };
    if (deep) {
      for (std::size_t i = parts; i-- > 1;) w->dq.push(make(i));
    } else {
      const std::size_t first = w && !affine ? w->index : 0;
      for (std::size_t i = 0; i < parts; ++i)
        if (i != mine) p.shards[(first + i) % p.shards.size()]->push(make(i));
    }
    const std::size_t pushed = parts - (mine < parts);
    if (pushed) p.announce_work(pushed);
    if (w) {
      p.run_task(*w, make(mine));  // halves onto our deque, runs the leftmost block
      p.help_until_done(*w, workers::count_done(L.remaining));
    } else {
      workers::wait_outside(L, p.ext_waiters, p.ext_epoch);
    }
  }
  if (L.error) std::rethrow_exception(L.error);
}

scheduler_stats steal_scheduler::stats() const { return p_->sc.read(p_->workers); }

void steal_scheduler::reset_stats() { p_->sc.reset(p_->workers); }

const topology& steal_scheduler::topo() const noexcept { return p_->topo; }

int steal_scheduler::current_node() const noexcept {
  impl::worker* w = p_->me();
  return w ? w->node : -1;
}

int steal_scheduler::worker_node(unsigned w) const {
  if (w >= p_->workers.size())
    throw error("steal_scheduler::worker_node: no worker " + std::to_string(w));
  return p_->workers[w]->node;
}


// "steal": one worker per core of the topology, or `threads` workers.
static scheduler_registration steal_registration("steal", [](const scheduler_options& o) -> std::unique_ptr<scheduler> {
  if (auto t = o.numa_topology()) return std::make_unique<steal_scheduler>(*t, o.pin);
  return std::make_unique<steal_scheduler>(o.threads, o.pin);
});

}  // namespace sinew
