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
// arena, also runs tasks; the Sinew root thread only sleeps). Per shape the
// three policies and the peer run in interleaved rounds, one scheduler
// alive at a time (made in the variant's untimed setup); each ratio is the
// median of the round-by-round ratios.
#include <atomic>
#include <cstdint>
#include <cstdio>
#include <functional>
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

  spawn_state st;
  const char* const policy_names[] = {"tbb", "steal", "deal"};
  sb::policy_slot slot;
  std::atomic<std::uint64_t> tbb_ran{0};

  // One shape: the three policies (`root(sp)` submits the first task to sp,
  // `outstanding` starts the atomic count) and the peer (`peer()` inside
  // its arena) in interleaved rounds (a 2-core VM's timings drift by more
  // than the margins over a sequential run); each ratio is the median of
  // its round-by-round ratios.
  auto compare = [&](const char* shape, const char* what, std::uint64_t tasks, std::uint64_t outstanding,
                     std::function<void(sinew::scheduler*)> root, std::function<void()> peer,
                     const std::string& sinew_note, const std::string& peer_note) {
    auto to_ns = [tasks](double s) { return s / double(tasks) * 1e9; };
    std::vector<sb::variant> vs;
    for (const char* policy : policy_names) {
      vs.push_back({.name = std::string(shape) + ", sinew " + policy,
                    .unit = "ns/task",
                    .better = sb::lower,
                    .setup = [&slot, policy] { slot.use(policy); },
                    .run =
                        [&st, &root, &slot, outstanding] {
                          st.reset(&slot.get(), outstanding);
                          root(&slot.get());
                          st.wait();
                        },
                    .to_metric = to_ns,
                    .check = [&st, tasks] { return check_count(st.ran.load(), tasks); },
                    .note = std::string(policy) + "_scheduler(" + std::to_string(threads) + "), " + sinew_note});
    }
    vs.push_back({.name = std::string(shape) + ", tbb::task_group",
                  .unit = "ns/task",
                  .better = sb::lower,
                  .setup = [&slot] { slot.none(); },
                  .run =
                      [&] {
                        tbb_ran.store(0, std::memory_order_relaxed);
                        sb::peer_arena().execute(peer);
                      },
                  .to_metric = to_ns,
                  .check = [&tbb_ran, tasks] { return check_count(tbb_ran.load(), tasks); },
                  .note = peer_note});
    const auto s = ctx.measure_interleaved(vs);
    const std::size_t p = vs.size() - 1;
    for (std::size_t i = 0; i < p; ++i)
      ctx.ratio(std::string("sched_spawn_") + shape + "_" + policy_names[i], sb::paired_ratio(*s[i], *s[p]), 1.0,
                sb::lower,
                std::string("sinew ") + policy_names[i] + " ns/task / tbb::task_group ns/task, " + what +
                    " (median of paired rounds)");
  };

  compare(
      "tree", "binary tree", tree_tasks, 1,
      [&st, depth](sinew::scheduler* sp) { sp->submit([stp = &st, depth] { tree_node(stp, depth); }); },
      [&] {
        tbb::task_group tg;
        tg.run(tbb_tree{&tg, &tbb_ran, depth});
        tg.wait();
      },
      "submit from tasks, atomic count", "tg.run from inside tasks, tg.wait on the root");
  compare(
      "chain", "linear chain", chain_tasks, 0,
      [&st, chain_tasks](sinew::scheduler* sp) {
        sp->submit([stp = &st, chain_tasks] { chain_node(stp, chain_tasks); });
      },
      [&] {
        tbb::task_group tg;
        tg.run(tbb_chain{&tg, &tbb_ran, chain_tasks});
        tg.wait();
      },
      "each task submits the next", "each task runs the next with tg.run");
}

const sb::registrar reg("sched_spawn",
                        "spawn overhead: binary tree of depth 20 (quick 16) and chain of 1M tasks (quick 100k), "
                        "ns/task of Sinew's tbb/steal/deal policies vs tbb::task_group",
                        run);

}  // namespace
