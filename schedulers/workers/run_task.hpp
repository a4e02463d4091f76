#pragma once
// How a steal or deal worker runs one task, and what it counts.
#include <atomic>
#include <cstdint>

#include <sinew/schedulers/scheduler.hpp>

namespace sinew::detail::workers {

// Tasks a worker may have on its stack while it waits for a parallel_for,
// a task_group or a graph run and runs any task it finds. Deeper, a waiter
// runs only the newest tasks it queued itself (its own deque, LIFO, as
// oneTBB does past its stealing threshold): in a nested wait those are the
// waited tasks' descendants, so the stack grows with the recursion's depth
// only, and every queued task keeps a worker that may run it (a waiter
// that slept at the bound could leave its own queued subtasks to no one
// once every worker was that deep).
constexpr unsigned max_help_depth = 64;

// What a helping waiter waits for, read with a given memory order: a count
// reaching 0 (a loop's elements, a group's tasks), or a latch opening (a
// graph run's end; its mutex orders the read).
//
//   help_until_done(w, workers::count_done(L.remaining));
template <class Count>
auto count_done(const std::atomic<Count>& n) noexcept {
  return [&n](std::memory_order mo) { return n.load(mo) == 0; };
}
inline auto latch_open(const help_latch& l) noexcept {
  return [&l](std::memory_order) { return l.is_open(); };
}

// scheduler::wait_counted and help_until of a policy whose `impl` has
// help_until_done(worker&, done) and announce_loop_done(): worker `w` (null:
// not one of the policy's) helps until the group or run is done, so nested
// waits cannot deadlock (past max_help_depth with its own tasks only);
// another thread sleeps. A run's latch wakes the helpers when it opens.
template <class Impl, class Worker>
void wait_counted(Impl& p, Worker* w, task_counter& c) noexcept {
  if (w) p.help_until_done(*w, count_done(c.pending));
  else c.wait();
}
template <class Impl, class Worker>
void help_until(Impl& p, Worker* w, help_latch& l) {
  if (!w || !l.arm([&p] { p.announce_loop_done(); })) return l.wait();
  p.help_until_done(*w, latch_open(l));
}

// Runs task t on worker w: a parallel_for block through `block(w, t)`, or
// a submitted function (its hinted bytes counted on w's node), counting
// the task; a task run while w is idle opens a busy spell
// (worker_counters). Returns true when t was the last pending task of its
// task_group: the caller wakes the workers that wait for groups.
//
//   if (workers::run_task(w, t, tl_cache, [this](worker& x, task* y) { run_block(x, y); })) announce_loop_done();
template <class Worker, class Task, class Cache, class Block>
bool run_task(Worker& w, Task* t, Cache& cache, Block&& block) noexcept {
  if (w.depth == 0) w.busy_begin();
  ++w.depth;
  bool group_done = false;
  if (t->loop) {
    block(w, t);
    Worker::add(w.tasks, 1);
  } else {
    if (t->total != 0) w.count_bytes(t->D, t->total, w.node);
    if (t->counter) {
      group_done = t->counter->run(t->fn);  // keeps its exception, releases captures, then counts it done
    } else {
      t->fn();          // noexcept context: a throwing submitted task terminates
      t->fn.reset();  // release captures now, not when the object is reused
    }
    cache.put(t);
    Worker::add(w.tasks, 1);  // before fn_run: stats() sums fn_run
    Worker::add(w.fn_run, 1, std::memory_order_release);
  }
  --w.depth;
  return group_done;
}

}  // namespace sinew::detail::workers
