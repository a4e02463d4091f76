// The `deal` policy's node queues and Algorithm 2, find-work
// [Muddukrishna15, Algorithm 2]: where a task is pushed, and where an idle
// worker may take one from -- its own node first, then the nodes of its
// vicinity by distance, each only past the distance threshold.
#include <cstddef>
#include <functional>
#include <string>
#include <thread>

#include <sinew/engine/error.hpp>
#include <sinew/engine/trace.hpp>

#include "deal_impl.hpp"

namespace sinew {

namespace {
using task = deal_scheduler::impl::task;
}  // namespace

void deal_scheduler::impl::enqueue(int q, task* t, const worker* w) {
  node_queue& Q = *nodes[std::size_t(q)];
  thread_local unsigned next = unsigned(std::hash<std::thread::id>{}(std::this_thread::get_id()));
  const std::size_t k = w && w->node == q ? w->rank : next++;
  Q.shards[k % Q.shards.size()]->push(t);
}

void deal_scheduler::impl::push_all(int q, task* const* first, task* const* last) {
  node_queue& Q = *nodes[std::size_t(q)];
  const std::size_t S = Q.shards.size();
  for (std::size_t i = 0; first != last; ++first, ++i) Q.shards[i % S]->push(*first);
}

// Takes the oldest task of a shard of node v's queue, the shards looked at
// from `first` on; with `share`, also half the rest of that shard onto
// share's deque, where the node's other workers may steal them
// (task_shard::try_take). A worker never waits for a lock: a shard whose
// lock is taken is skipped and reported as `contended`. (Algorithm 2's
// threshold is the caller's, on the length it read.)
task* deal_scheduler::impl::take(int v, std::size_t first, bool& contended, worker* share) {
  node_queue& Q = *nodes[std::size_t(v)];
  const std::size_t S = Q.shards.size();
  auto* dq = share ? &share->dq : nullptr;
  for (std::size_t j = 0; j < S; ++j) {
    shard& sh = *Q.shards[(first + j) % S];
    if (sh.size.load(std::memory_order_relaxed) == 0) continue;
    if (task* t = sh.try_take(dq, contended)) return t;
  }
  return nullptr;
}

// Algorithm 2 for worker w: its deque, its node's queue, the deques of its
// node's other workers, then one task from the nearest node of its
// vicinity whose queue passes the threshold. `contended`: a queue that
// looked stealable was not any more when locked (someone else took from
// it: look again).
task* deal_scheduler::impl::find_work(worker& w, bool& contended) {
  const int n = w.node;
  node_queue& own = *nodes[std::size_t(n)];
  task* t = nullptr;
  if (w.dq.pop(t)) return t;
  if (own.has_work())
    // One node: with a share onto w's deque (nothing to deal or steal
    // across nodes); else one task, the rest stays where other nodes'
    // workers may steal it.
    if (task* x = take(n, w.rank, contended, N == 1 ? &w : nullptr)) {
      if (x->submitter >= 0 && x->submitter != int(w.index) &&
          workers[std::size_t(x->submitter)]->node == n)
        w.steals_same.fetch_add(1, std::memory_order_relaxed);
      return x;
    }
  // The deques of the node's other workers, round-robin after w.
  const std::size_t m = own.members.size();
  for (std::size_t k = 1; k < m; ++k) {
    worker& v = *workers[own.members[(w.rank + k) % m]];
    if (v.dq.empty_approx()) continue;
    auto r = v.dq.steal(t);
    if (r == deque::steal_result::success) {
      w.steals_same.fetch_add(1, std::memory_order_relaxed);
      return t;
    }
    if (r == deque::steal_result::lost_race) contended = true;
  }
  const bool drain = stopping.load(std::memory_order_relaxed);
  if (drain) {
    for (std::size_t v = 0; v < N; ++v)
      if (nodes[v]->has_work())
        if (task* x = take(int(v), w.index, contended)) return x;
    for (auto& v : workers)
      if (!v->dq.empty_approx() && v->dq.steal(t) == deque::steal_result::success) return t;
    return nullptr;
  }
  for (int v : own.steal_order) {
    std::size_t len = nodes[std::size_t(v)]->length();
    if (len == 0) continue;
    w.steal_attempts.fetch_add(1, std::memory_order_relaxed);
    if (!may_steal(n, v, len)) {
      w.refused.fetch_add(1, std::memory_order_relaxed);
      continue;
    }
    if (task* x = take(v, w.index, contended)) {
      w.steals_remote.fetch_add(1, std::memory_order_relaxed);
      if (trace::active()) [[unlikely]]  // a traced run is live (docs/observability.md)
        trace::emit_instant("steal", "steal", trace::now_ns(), {{"from_node", v}, {"to", w.index}});
      return x;  // ONE task, then back to the own queue
    }
    contended = true;
  }
  return nullptr;
}

// Whether any queue w may take from looks non-empty (a waiter's re-check;
// takes nothing).
bool deal_scheduler::impl::work_visible(const worker& w) const noexcept {
  const int n = w.node;
  if (nodes[std::size_t(n)]->has_work()) return true;
  for (unsigned k : nodes[std::size_t(n)]->members)
    if (!workers[k]->dq.empty_approx()) return true;
  const bool drain = stopping.load(std::memory_order_relaxed);
  for (std::size_t v = 0; v < N; ++v) {
    std::size_t len = nodes[v]->length();
    if (len != 0 && (drain || may_steal(n, int(v), len))) return true;
  }
  return false;
}

bool deal_scheduler::impl::all_empty() const noexcept {
  for (const auto& Q : nodes)
    if (Q->has_work(std::memory_order_seq_cst)) return false;
  for (const auto& w : workers)
    if (!w->dq.empty_approx()) return false;
  return true;
}

bool deal_scheduler::may_steal(int thief_node, int victim_node, std::size_t victim_queue_len) const {
  if (thief_node < 0 || std::size_t(thief_node) >= p_->N || victim_node < 0 ||
      std::size_t(victim_node) >= p_->N)
    throw error("deal_scheduler::may_steal: node out of range");
  return p_->may_steal(thief_node, victim_node, victim_queue_len);
}

int deal_scheduler::find_victim(int thief_node, std::span<const std::size_t> queue_lens) const {
  const impl& p = *p_;
  if (thief_node < 0 || std::size_t(thief_node) >= p.N)
    throw error("deal_scheduler::find_victim: node " + std::to_string(thief_node) + " is not a node");
  if (queue_lens.size() != p.N)
    throw error("deal_scheduler::find_victim: " + std::to_string(queue_lens.size()) + " queue lengths, topology has " +
                std::to_string(p.N) + " nodes");
  if (queue_lens[std::size_t(thief_node)] != 0) return thief_node;
  // The order and test of impl::find_work.
  for (int v : p.nodes[std::size_t(thief_node)]->steal_order)
    if (p.may_steal(thief_node, v, queue_lens[std::size_t(v)])) return v;
  return -1;
}

}  // namespace sinew
