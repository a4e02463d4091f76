// The `deal` policy [Muddukrishna15, Algorithms 1-2]: building the node
// queues and workers from a topology, statistics, and the policy's
// registration. See deal_impl.hpp for how the rest is split.
#include <algorithm>
#include <memory>
#include <string>
#include <thread>

#include <sinew/engine/error.hpp>
#include <sinew/schedulers/scheduler_registry.hpp>

#include "deal_impl.hpp"

namespace sinew {

deal_scheduler::deal_scheduler(const topology& t, deal_options o)
    : p_(std::make_unique<impl>(t, std::move(o))) {
  impl& p = *p_;
  p.N = p.topo.nodes();
  p.C = std::max<std::size_t>(1, p.topo.cores_per_node());
  if (p.N == 0 || p.topo.total_cores() == 0) throw error("deal_scheduler: topology has no cores");
  if (!(p.opt.spread_tolerance >= 0.0))
    throw error("deal_scheduler: spread_tolerance must be >= 0 (got " +
                std::to_string(p.opt.spread_tolerance) + ")");
  if (p.opt.backoff_min.count() <= 0 || p.opt.backoff_max < p.opt.backoff_min)
    throw error("deal_scheduler: need 0 < backoff_min <= backoff_max");
  if (p.opt.backoff_poll.count() < 0) throw error("deal_scheduler: backoff_poll must be >= 0");
  p.size_threshold = p.opt.size_threshold ? *p.opt.size_threshold
                                          : std::uint64_t(p.topo.llc_bytes() / p.C);
  // Vicinities: group id per node; unlisted nodes are singleton groups.
  p.group.assign(p.N, -1);
  int g = 0;
  for (const auto& grp : p.opt.vicinities) {
    for (int n : grp) {
      if (n < 0 || std::size_t(n) >= p.N)
        throw error("deal_scheduler: vicinity names node " + std::to_string(n) + ", topology has " +
                    std::to_string(p.N) + " nodes");
      if (p.group[std::size_t(n)] != -1)
        throw error("deal_scheduler: node " + std::to_string(n) + " is in two vicinities");
      p.group[std::size_t(n)] = g;
    }
    ++g;
  }
  if (p.opt.vicinities.empty()) std::fill(p.group.begin(), p.group.end(), g++);
  for (auto& x : p.group)
    if (x == -1) x = g++;
  for (std::size_t n = 0; n < p.N; ++n) {
    auto q = std::make_unique<impl::node_queue>();
    q->dealt = std::make_unique<std::atomic<std::uint64_t>[]>(p.N);
    q->directed = std::make_unique<std::atomic<std::uint64_t>[]>(p.N);
    for (std::size_t j = 0; j < p.N; ++j) {
      q->dealt[j].store(0, std::memory_order_relaxed);
      q->directed[j].store(0, std::memory_order_relaxed);
    }
    q->threshold.resize(p.N);
    // Algorithm 2 line (4): sizeof(Q_i) > distance(i, n) * C, i = victim, n = thief.
    for (std::size_t v = 0; v < p.N; ++v) q->threshold[v] = std::size_t(p.topo.distance(v, n)) * p.C;
    for (std::size_t v : p.topo.nodes_by_distance(n))
      if (p.group[v] == p.group[n]) q->steal_order.push_back(int(v));
    p.nodes.push_back(std::move(q));
  }
  // One worker per core, on the node of its core.
  unsigned idx = 0;
  for (std::size_t n = 0; n < p.N; ++n)
    for (int cpu : p.topo.cores(n)) {
      auto w = std::make_unique<impl::worker>();
      w->index = idx++;
      w->node = int(n);
      w->cpu = cpu;
      w->owner = &p;
      w->rank = unsigned(p.nodes[n]->members.size());
      p.nodes[n]->members.push_back(w->index);
      p.workers.push_back(std::move(w));
    }
  for (auto& q : p.nodes)
    for (std::size_t k = 0; k < std::max<std::size_t>(1, q->members.size()); ++k)
      q->shards.push_back(std::make_unique<impl::shard>());
  p.backups.start();  // the scheduler is whole but for its workers' threads
  try {
    for (auto& w : p.workers) {
      impl::worker* wp = w.get();
      impl* pp = &p;
      w->th = std::thread([pp, wp] { pp->worker_main(*wp); });
    }
  } catch (...) {
    p.stopping.store(true, std::memory_order_seq_cst);
    p.wake_all();
    for (auto& w : p.workers)
      if (w->th.joinable()) w->th.join();
    throw;
  }
}

deal_scheduler::~deal_scheduler() {
  p_->backups.stop();  // before the workers leave: a check may submit
  p_->stopping.store(true, std::memory_order_seq_cst);
  p_->wake_all();
  for (auto& w : p_->workers) w->th.join();
  // Only a submit racing with the destructor (undefined) can leave tasks;
  // the shards free them.
}

void deal_scheduler::submit_backup(task_function fn) { p_->backups.submit_backup(*this, p_->me() != nullptr, std::move(fn)); }

unsigned deal_scheduler::concurrency() const noexcept { return unsigned(p_->workers.size()); }
const topology& deal_scheduler::topo() const noexcept { return p_->topo; }

int deal_scheduler::worker_node(unsigned w) const {
  if (w >= p_->workers.size())
    throw error("deal_scheduler::worker_node: no worker " + std::to_string(w));
  return p_->workers[w]->node;
}

int deal_scheduler::current_node() const noexcept {
  impl::worker* w = p_->me();
  return w ? w->node : -1;
}

scheduler_stats deal_scheduler::stats() const { return p_->sc.read(p_->workers); }

sinew::deal_stats deal_scheduler::deal_stats() const {
  sinew::deal_stats s;
  const std::size_t N = p_->N;
  s.dealt.assign(N, 0);
  s.directed.assign(N, 0);
  for (const auto& Q : p_->nodes)
    for (std::size_t j = 0; j < N; ++j) {
      s.dealt[j] += Q->dealt[j].load(std::memory_order_relaxed);
      s.directed[j] += Q->directed[j].load(std::memory_order_relaxed);
    }
  s.kept_local = p_->ext_kept_local.load(std::memory_order_relaxed);
  for (const auto& w : p_->workers) {
    s.kept_local += w->kept_local.load(std::memory_order_relaxed);
    s.steals_same_node += w->steals_same.load(std::memory_order_relaxed);
    s.steals_remote += w->steals_remote.load(std::memory_order_relaxed);
    s.steals_refused += w->refused.load(std::memory_order_relaxed);
    s.remote_bytes += w->remote_bytes.load(std::memory_order_relaxed);
  }
  return s;
}

void deal_scheduler::reset_stats() {
  p_->ext_kept_local.store(0, std::memory_order_relaxed);
  p_->sc.reset(p_->workers);
  for (auto& Q : p_->nodes)
    for (std::size_t j = 0; j < p_->N; ++j) {
      Q->dealt[j].store(0, std::memory_order_relaxed);
      Q->directed[j].store(0, std::memory_order_relaxed);
    }
  for (auto& w : p_->workers) {
    w->refused.store(0, std::memory_order_relaxed);
    w->kept_local.store(0, std::memory_order_relaxed);
  }
}

// "deal": one worker per core of the topology; `threads` alone gives one node
// of that many cores (the machine's own when it has exactly those, else a
// synthetic node with the machine's last-level cache).
static scheduler_registration deal_registration("deal", [](const scheduler_options& o) -> std::unique_ptr<scheduler> {
  if (auto t = o.numa_topology()) return std::make_unique<deal_scheduler>(*t, o.deal);
  topology here = topology::current();
  if (o.threads && (here.nodes() != 1 || here.total_cores() != o.threads))
    here = topology::synthetic(1, o.threads, {}, here.llc_bytes());
  return std::make_unique<deal_scheduler>(here, o.deal);
});

}  // namespace sinew
