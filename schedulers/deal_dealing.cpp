// The `deal` policy's Algorithm 1, deal-work [Muddukrishna15, Algorithm 1]:
// where `submit` and `parallel_for_at` put a task, from the bytes it reads
// on each node.
#include <algorithm>
#include <climits>
#include <cstdint>
#include <exception>
#include <string>
#include <vector>

#include <sinew/engine/error.hpp>

#include "deal_impl.hpp"
#include "locality.hpp"
#include "workers/map_dispatch.hpp"

namespace sinew {

namespace {
using detail::deal::tl_cache;
using task = deal_scheduler::impl::task;
namespace workers = detail::workers;
}  // namespace

bool deal_scheduler::impl::deals(std::span<const std::uint64_t> D) const noexcept {
  using u128 = unsigned __int128;
  u128 sum = 0;
  std::uint64_t lo = UINT64_MAX, hi = 0;
  for (auto d : D) {
    sum += d;
    lo = std::min(lo, d);
    hi = std::max(hi, d);
  }
  if (sum <= u128(size_threshold)) return false;  // Sum(D) > sizeof(LLC)/C fails
  // Evenly spread: max - min <= tolerance * sum (tolerance 0: all equal,
  // i.e. Standard_Deviation(D) == 0).
  if (opt.spread_tolerance <= 0.0) return hi != lo;
  return double(hi - lo) > opt.spread_tolerance * double(sum);
}

int deal_scheduler::impl::argmin_cost(std::span<const std::uint64_t> D, int local) const {
  return detail::cheapest_node(topo, D, local);
}

int deal_scheduler::choose_node(std::span<const std::uint64_t> D, int local_node) const {
  if (D.size() != p_->N)
    throw error("deal_scheduler::choose_node: D has " + std::to_string(D.size()) +
                " entries, topology has " + std::to_string(p_->N) + " nodes");
  if (local_node < 0 || std::size_t(local_node) >= p_->N)
    throw error("deal_scheduler::choose_node: local node " + std::to_string(local_node) +
                " is not a node");
  return p_->choose(D, local_node);
}

void deal_scheduler::submit(task_function fn, const locality_hint& hint) {
  submit_counted_impl(std::move(fn), nullptr, hint);
}

void deal_scheduler::submit_counted(task_function fn, detail::task_counter& c, const locality_hint& hint) {
  submit_counted_impl(std::move(fn), &c, hint);
}

void deal_scheduler::wait_counted(detail::task_counter& c) noexcept { workers::wait_counted(*p_, p_->me(), c); }

void deal_scheduler::help_until(detail::help_latch& l) { workers::help_until(*p_, p_->me(), l); }

void deal_scheduler::submit_counted_impl(task_function&& fn, detail::task_counter* c, const locality_hint& hint) {
  if (!fn) throw error("deal_scheduler::submit: empty function");
  impl& p = *p_;
  impl::worker* w = p.me();
  task* t = tl_cache.get();
  // D of Algorithm 1 (line 2). A task without one leaves t->D empty: a
  // fresh task's D would be a heap allocation per submit (an outside
  // thread's tasks are always fresh: the workers that run them keep them).
  std::uint64_t total = 0;
  if (detail::hint_has_data(hint)) {
    try {
      total = detail::hint_bytes(hint, p.N, t->D, "deal_scheduler::submit");
    } catch (...) {
      tl_cache.put(t);
      throw;
    }
  }
  t->loop = nullptr;
  t->submitter = w ? int(w->index) : -1;
  t->total = total;
  int node;
  if (total != 0) {
    const int local = w ? w->node : p.outside_node();
    if (p.deals(t->D)) {
      node = p.argmin_cost(t->D, local);
      (w ? p.nodes[std::size_t(w->node)] : p.nodes[0])->dealt[std::size_t(node)].fetch_add(
          1, std::memory_order_relaxed);
    } else {
      node = local;
      workers::count_one(w, &impl::worker::kept_local, p.ext_kept_local);
    }
  } else {
    t->D.clear();
    if (hint.numa_node >= 0 && std::size_t(hint.numa_node) < p.N) {
      node = hint.numa_node;
      (w ? p.nodes[std::size_t(w->node)] : p.nodes[0])->directed[std::size_t(node)].fetch_add(
          1, std::memory_order_relaxed);
    } else {
      node = w ? w->node : p.outside_node();
      workers::count_one(w, &impl::worker::kept_local, p.ext_kept_local);
    }
  }
  workers::count_one(w, &impl::worker::submitted, p.sc.ext_submitted);
  t->fn = std::move(fn);
  t->counter = c;
  // One node: nothing to deal or steal across nodes, so a worker's task goes
  // to its own deque (the fast path of `steal`: announced only when it was
  // empty, workers::push_own); else the node's FIFO.
  if (w && p.N == 1) {
    if (workers::push_own(w->dq, t)) p.announce_work(node);
  } else {
    p.push(node, t, w);
  }
}

void deal_scheduler::parallel_for(std::size_t n, std::size_t grain,
                                  detail::function_ref<void(std::size_t, std::size_t)> body) {
  parallel_for_at({}, n, grain, body);
}

void deal_scheduler::parallel_for_at(const locality_hint& hint, std::size_t n, std::size_t grain,
                                     detail::function_ref<void(std::size_t, std::size_t)> body) {
  if (n == 0) return;
  if (grain == 0) grain = 1;
  impl& p = *p_;
  impl::worker* w = p.me();
  impl::loop_ctx L(body, grain, n);
  // Map dispatch (workers/map_dispatch.hpp) over the workers of one node:
  // the blocks go to the caller's node queue (an outside caller's:
  // round-robin), where Algorithm 2 lets other nodes steal only past its
  // threshold -- or, when the hint's data passes Algorithm 1's thresholds,
  // to the node Algorithm 1 chooses for it.
  const int local = w ? w->node : p.outside_node();
  int q = local;
  std::vector<std::uint64_t> D;
  if (detail::hint_has_data(hint)) {
    L.total = detail::hint_bytes(hint, p.N, D, "deal_scheduler::parallel_for_at");
    L.D = D;
    if (L.total != 0 && p.deals(D)) q = p.argmin_cost(D, local);
  }
  // Dealt elsewhere: every block goes to q (the caller only helps with
  // what Algorithm 2 lets it take); the data is big (past the size
  // threshold), so moving the work costs less than reading it from afar.
  const bool away = q != local || !w;
  const std::size_t node_workers = std::max<std::size_t>(1, p.topo.cores(std::size_t(q)).size());
  std::size_t b = 0;
  if (!workers::begin_loop(p.sc, L, n, node_workers, w, local, b, q == local)) {
    const std::size_t parts = std::min(workers::chunk_count(n - b, grain), node_workers);
    // With the static assignment (workers::affine_gate), segment i goes to
    // the shard of the node's i-th worker and a caller on that node runs
    // its own.
    impl::node_queue& Q = *p.nodes[std::size_t(q)];
    const workers::affine_gate::claim aff(p.affine, hint.affinity && parts == Q.shards.size(), parts);
    const bool affine = aff.held();
    const std::size_t mine = away ? parts : affine ? w->rank : 0;
    std::vector<task*> segs;
    segs.reserve(parts);
    for (std::size_t i = 0; i < parts; ++i) {
      task* t = tl_cache.get();
      t->loop = &L;
      t->b = workers::segment_begin(b, n, parts, i);
      t->e = workers::segment_begin(b, n, parts, i + 1);
      t->submitter = w ? int(w->index) : -1;
      segs.push_back(t);
    }
    if (affine) {
      for (std::size_t i = 0; i < parts; ++i)
        if (i != mine) Q.shards[i]->push(segs[i]);
    } else {
      p.push_all(q, segs.data() + (mine < parts), segs.data() + parts);
    }
    const std::size_t pushed = parts - (mine < parts);
    if (pushed) p.announce_work_n(q, pushed);
    if (w) {
      if (!away) p.run_task(*w, segs[mine]);  // halves onto our deque, runs the leftmost block
      p.help_until_done(*w, workers::count_done(L.remaining));
    } else {
      workers::wait_outside(L, p.ext_waiters, p.ext_epoch);
    }
  }
  if (L.error) std::rethrow_exception(L.error);
}

}  // namespace sinew
