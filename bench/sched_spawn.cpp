// sched_spawn: task-graph spawn overhead of the scheduling policies, as in
// Taskflow's "binary tree" and "linear chain" benchmarks. Tasks do nothing
// but count themselves (one relaxed fetch_add, as Taskflow's do), so the
// time per task is the policy's cost of creating, queueing, handing off and
// running a task.
//
//  * tree: a binary tree of depth D (2^(D+1) - 1 tasks); every inner task
//    submits its two children from inside the worker. The Sinew variants
//    measure the bare submit path (no group per task), so they keep a
//    shared atomic count of outstanding tasks: a task adds 2 before
//    submitting its children and subtracts 1 when it ends; the one that
//    brings it to 0 wakes the root thread, which sleeps on an atomic (futex).
//  * chain: N tasks, each submitting the next; the last wakes the root.
//
// Peer: tbb::task_group in the peers' arena, children spawned with tg.run
// from inside the tasks, tg.wait() on the root thread (which, being in the
// arena, also runs tasks; the Sinew root thread only sleeps).
#include <atomic>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>

#include <oneapi/tbb/task_arena.h>
#include <oneapi/tbb/task_group.h>
#include <sinew/schedulers/scheduler_registry.hpp>
#include <sinew/sinew.hpp>

#include "bench.hpp"

namespace {

namespace sb = sinew_bench;

/// State of one run, shared by its tasks (each counter on its own line).
struct spawn_state {
  alignas(64) std::atomic<std::uint64_t> pending{0};  ///< outstanding tasks (tree)
  alignas(64) std::atomic<std::uint64_t> ran{0};      ///< tasks run (checked)
  alignas(64) std::atomic<std::uint32_t> done{0};     ///< the root thread sleeps on it
  sinew::scheduler* sched = nullptr;

  void reset(sinew::scheduler* s, std::uint64_t outstanding) {
    sched = s;
    pending.store(outstanding, std::memory_order_relaxed);
    ran.store(0, std::memory_order_relaxed);
    done.store(0, std::memory_order_relaxed);
  }
  void signal() {
    done.store(1, std::memory_order_release);
    done.notify_one();
  }
  void finish_one() {
    if (pending.fetch_sub(1, std::memory_order_acq_rel) == 1) signal();
  }
  void wait() {
    while (done.load(std::memory_order_acquire) == 0) done.wait(0, std::memory_order_acquire);
  }
};

// Captures (a pointer and a counter) fit std::function's small buffer: no
// allocation beyond what the scheduler itself does.
void tree_node(spawn_state* st, unsigned depth) {
  st->ran.fetch_add(1, std::memory_order_relaxed);
  if (depth > 0) {
    st->pending.fetch_add(2, std::memory_order_relaxed);
    st->sched->submit([st, depth] { tree_node(st, depth - 1); });
    st->sched->submit([st, depth] { tree_node(st, depth - 1); });
  }
  st->finish_one();
}

void chain_node(spawn_state* st, std::uint64_t left) {
  st->ran.fetch_add(1, std::memory_order_relaxed);
  if (left > 1) st->sched->submit([st, left] { chain_node(st, left - 1); });
  else st->signal();
}

struct tbb_tree {
  tbb::task_group* tg;
  std::atomic<std::uint64_t>* ran;
  unsigned depth;
  void operator()() const {
    ran->fetch_add(1, std::memory_order_relaxed);
    if (depth > 0) {
      tg->run(tbb_tree{tg, ran, depth - 1});
      tg->run(tbb_tree{tg, ran, depth - 1});
    }
  }
};

struct tbb_chain {
  tbb::task_group* tg;
  std::atomic<std::uint64_t>* ran;
  std::uint64_t left;
  void operator()() const {
    ran->fetch_add(1, std::memory_order_relaxed);
    if (left > 1) tg->run(tbb_chain{tg, ran, left - 1});
  }
};

std::string check_count(std::uint64_t got, std::uint64_t want) {
  if (got == want) return {};
  char b[128];
  std::snprintf(b, sizeof b, "%llu tasks ran, expected %llu", (unsigned long long)got, (unsigned long long)want);
  return b;
}

/// The `deal` policy over the machine's topology (1 node x N cores here),
/// or over a synthetic 1 x threads when --threads asks for fewer workers.
void run(sb::context& ctx) {
  const unsigned depth = ctx.quick() ? 16 : 20;
  const std::uint64_t tree_tasks = (std::uint64_t(2) << depth) - 1;
  const std::uint64_t chain_tasks = ctx.quick() ? 100'000 : 1'000'000;
  const unsigned threads = sb::thread_count();
  ctx.param("tree_depth", depth);
  ctx.param("tree_tasks", tree_tasks);
  ctx.param("chain_tasks", chain_tasks);
  ctx.param("threads", threads);
  {
    sinew::topology t = sinew::topology::current();
    ctx.param("deal_topology", t.total_cores() == threads ? t.describe()
                                                          : sinew::topology::synthetic(1, threads).describe());
  }
  auto tree_ns = [tree_tasks](double s) { return s / double(tree_tasks) * 1e9; };
  auto chain_ns = [chain_tasks](double s) { return s / double(chain_tasks) * 1e9; };

  spawn_state st;
  struct policy_result {
    std::string name;
    const sb::series* tree;
    const sb::series* chain;
  };
  std::vector<policy_result> policies;

  // ---- Sinew's policies, one at a time (each scheduler lives only while it
  // is measured, so that idle workers of another cannot disturb it).
  for (const char* policy : {"tbb", "steal", "deal"}) {
    std::string p = policy;
    std::unique_ptr<sinew::scheduler> s = sinew::make_scheduler(p, {.threads = threads});
    sinew::scheduler* sp = s.get();
    const auto& tree = ctx.measure({.name = "tree, sinew " + p,
                                    .unit = "ns/task",
                                    .better = sb::lower,
                                    .setup = nullptr,
                                    .run =
                                        [&] {
                                          st.reset(sp, 1);
                                          sp->submit([stp = &st, depth] { tree_node(stp, depth); });
                                          st.wait();
                                        },
                                    .to_metric = tree_ns,
                                    .check = [&] { return check_count(st.ran.load(), tree_tasks); },
                                    .note = p + "_scheduler(" + std::to_string(sp->concurrency()) +
                                            "), submit from tasks, atomic count"});
    const auto& chain = ctx.measure({.name = "chain, sinew " + p,
                                     .unit = "ns/task",
                                     .better = sb::lower,
                                     .setup = nullptr,
                                     .run =
                                         [&] {
                                           st.reset(sp, 0);
                                           sp->submit([stp = &st, chain_tasks] { chain_node(stp, chain_tasks); });
                                           st.wait();
                                         },
                                     .to_metric = chain_ns,
                                     .check = [&] { return check_count(st.ran.load(), chain_tasks); },
                                     .note = "each task submits the next"});
    policies.push_back({p, &tree, &chain});
  }

  // ---- Peer: tbb::task_group in the peers' arena.
  std::atomic<std::uint64_t> tbb_ran{0};
  const auto& t_tree = ctx.measure({.name = "tree, tbb::task_group",
                                    .unit = "ns/task",
                                    .better = sb::lower,
                                    .setup = nullptr,
                                    .run =
                                        [&] {
                                          tbb_ran.store(0, std::memory_order_relaxed);
                                          sb::peer_arena().execute([&] {
                                            tbb::task_group tg;
                                            tg.run(tbb_tree{&tg, &tbb_ran, depth});
                                            tg.wait();
                                          });
                                        },
                                    .to_metric = tree_ns,
                                    .check = [&] { return check_count(tbb_ran.load(), tree_tasks); },
                                    .note = "tg.run from inside tasks, tg.wait on the root"});
  const auto& t_chain = ctx.measure({.name = "chain, tbb::task_group",
                                     .unit = "ns/task",
                                     .better = sb::lower,
                                     .setup = nullptr,
                                     .run =
                                         [&] {
                                           tbb_ran.store(0, std::memory_order_relaxed);
                                           sb::peer_arena().execute([&] {
                                             tbb::task_group tg;
                                             tg.run(tbb_chain{&tg, &tbb_ran, chain_tasks});
                                             tg.wait();
                                           });
                                         },
                                     .to_metric = chain_ns,
                                     .check = [&] { return check_count(tbb_ran.load(), chain_tasks); },
                                     .note = "each task runs the next with tg.run"});

  for (const auto& p : policies) {
    ctx.ratio("sched_spawn_tree_" + p.name, p.tree->stats.median / t_tree.stats.median, 1.0, sb::lower,
              "sinew " + p.name + " ns/task / tbb::task_group ns/task, binary tree (medians)");
  }
  for (const auto& p : policies) {
    ctx.ratio("sched_spawn_chain_" + p.name, p.chain->stats.median / t_chain.stats.median, 1.0, sb::lower,
              "sinew " + p.name + " ns/task / tbb::task_group ns/task, linear chain (medians)");
  }
}

const sb::registrar reg("sched_spawn",
                        "spawn overhead: binary tree of depth 20 (quick 16) and chain of 1M tasks (quick 100k), "
                        "ns/task of Sinew's tbb/steal/deal policies vs tbb::task_group",
                        run);

}  // namespace
