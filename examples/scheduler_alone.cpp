// The scheduler alone: a policy chosen by name, a parallel loop, a task
// group of independent tasks, nested groups (divide and conquer), a task
// graph run ten times, the parallel algorithms (reduce, scan, sort), and
// the statistics of the run.
//   usage: scheduler_alone [policy] [threads]        (default: steal 4)
#include <sinew/sinew.hpp>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <numeric>
#include <string>
#include <vector>

int main(int argc, char** argv) {
  const std::string policy = argc > 1 ? argv[1] : "steal";
  const unsigned threads = argc > 2 ? unsigned(std::atoi(argv[2])) : 4;
  std::unique_ptr<sinew::scheduler> s = sinew::make_scheduler(policy, {.threads = threads});

  // A parallel loop: y = 2x + 1 over a million floats, in blocks of 4,096.
  std::vector<float> x(1'000'000), y(x.size());
  std::iota(x.begin(), x.end(), 0.f);
  s->parallel_for(x.size(), 4096, [&](std::size_t b, std::size_t e) {
    for (std::size_t i = b; i < e; ++i) y[i] = 2.f * x[i] + 1.f;
  });
  for (std::size_t i = 0; i < x.size(); ++i)
    if (y[i] != 2.f * x[i] + 1.f) {
      std::printf("scheduler_alone: y[%zu] = %g\n", i, double(y[i]));
      return 1;
    }

  // A task group: the sum of 0 .. 9,999,999 in 1,000 tasks of 10,000 numbers.
  const std::uint64_t n = 10'000'000, want = n * (n - 1) / 2, per_task = 10'000;
  std::atomic<std::uint64_t> got{0};
  sinew::task_group g(*s);
  for (std::uint64_t b = 0; b < n; b += per_task)
    g.run([&got, b, per_task] {
      std::uint64_t t = 0;
      for (std::uint64_t i = b; i < b + per_task; ++i) t += i;
      got.fetch_add(t, std::memory_order_relaxed);
    });
  g.wait();  // rethrows the first exception a task threw
  if (got != want) {
    std::printf("scheduler_alone: sum %llu, expected %llu\n", (unsigned long long)got.load(),
                (unsigned long long)want);
    return 1;
  }

  // Divide and conquer: each task sums its range by running its two halves
  // in a group of its own and waiting for them; the waiting worker runs
  // other tasks meanwhile, so the recursion never leaves every worker idle.
  std::function<std::uint64_t(std::uint64_t, std::uint64_t)> sum = [&](std::uint64_t b, std::uint64_t e) {
    if (e - b <= per_task) {
      std::uint64_t t = 0;
      for (std::uint64_t i = b; i < e; ++i) t += i;
      return t;
    }
    std::uint64_t left = 0, right = 0, mid = b + (e - b) / 2;
    sinew::task_group halves(*s);
    halves.run([&] { left = sum(b, mid); });
    halves.run([&] { right = sum(mid, e); });
    halves.wait();
    return left + right;
  };
  std::uint64_t nested = 0;
  sinew::task_group root(*s);
  root.run([&] { nested = sum(0, n); });
  root.wait();
  if (nested != want) {
    std::printf("scheduler_alone: nested sum %llu, expected %llu\n", (unsigned long long)nested,
                (unsigned long long)want);
    return 1;
  }

  // A task graph, built once and run ten times: split the range in four
  // parts summed in parallel, then add them up after all four.
  std::uint64_t part[4] = {}, total = 0;
  sinew::task_graph graph("four parts");
  auto add_up = graph.emplace([&] { total = part[0] + part[1] + part[2] + part[3]; }).name("add up");
  for (std::uint64_t k = 0; k < 4; ++k)
    graph.emplace([&part, &sum, k, n] { part[k] = sum(k * n / 4, (k + 1) * n / 4); }).precede(add_up);
  graph.run_n(*s, 10).wait();
  if (total != want) {
    std::printf("scheduler_alone: task graph sum %llu, expected %llu\n", (unsigned long long)total,
                (unsigned long long)want);
    return 1;
  }

  // The algorithms: the same sum by parallel_reduce, prefix sums by a scan,
  // and y (increasing) sorted in decreasing order.
  std::vector<std::uint64_t> ints(n), prefix(n);
  std::iota(ints.begin(), ints.end(), std::uint64_t(0));
  const std::uint64_t reduced = sinew::parallel_reduce(*s, ints.begin(), ints.end(), std::uint64_t(0));
  sinew::parallel_inclusive_scan(*s, ints.begin(), ints.end(), prefix.begin());
  sinew::parallel_sort(*s, y.begin(), y.end(), std::greater<>{});
  if (reduced != want || prefix.back() != want || y.front() != 2.f * x.back() + 1.f ||
      !std::is_sorted(y.begin(), y.end(), std::greater<>{})) {
    std::printf("scheduler_alone: parallel_reduce %llu, scan %llu (expected %llu), or the sort is wrong\n",
                (unsigned long long)reduced, (unsigned long long)prefix.back(), (unsigned long long)want);
    return 1;
  }

  const sinew::scheduler_stats st = s->stats();
  std::uint64_t tasks = 0;
  for (const auto& w : st.workers) tasks += w.tasks;
  std::printf("scheduler_alone: OK policy=%s workers=%zu tasks=%llu load_balance=%.2f\n", s->name(),
              st.workers.size(), (unsigned long long)tasks, st.load_balance());
  return 0;
}
