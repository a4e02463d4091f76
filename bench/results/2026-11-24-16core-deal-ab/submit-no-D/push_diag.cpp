// Diagnostic: cost of an outside thread's submit, workers busy (no takers) vs idle.
#include <sinew/sinew.hpp>
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <memory>
#include <thread>
#include <vector>
using clk = std::chrono::steady_clock;
static double ns(clk::time_point a, clk::time_point b) { return std::chrono::duration<double, std::nano>(b - a).count(); }
int main(int argc, char** argv) {
  const unsigned threads = argc > 1 ? unsigned(atoi(argv[1])) : 16;
  const int reps = argc > 2 ? atoi(argv[2]) : 41;
  const std::size_t n = 1023;
  std::unique_ptr<sinew::scheduler> s[2] = {std::make_unique<sinew::steal_scheduler>(threads),
                                            std::make_unique<sinew::deal_scheduler>(sinew::topology::synthetic(1, threads, {}, 32u << 20))};
  const char* nm[2] = {"steal", "deal"};
  std::vector<double> busy[2], idle[2][3], idlew[2][3];
  const int gaps[3] = {0, 20, 500};
  std::vector<double> part(2048, 1.0);
  for (int r = 0; r < reps + 3; ++r)
    for (int p = 0; p < 2; ++p) {
      auto& S = *s[p];
      std::atomic<bool> go{false};
      std::atomic<unsigned> started{0};
      {
        sinew::task_group g(S);
        for (unsigned i = 0; i < threads; ++i) g.run([&] { started.fetch_add(1); while (!go.load()) {} });
        while (started.load() < threads) {}
        auto t0 = clk::now();
        for (std::size_t k = 0; k < n; ++k) g.run([&part, k] { part[k] += part[k + 1]; });
        auto t1 = clk::now();
        go = true;
        g.wait();
        if (r >= 3) busy[p].push_back(ns(t0, t1) / n);
      }
      const int gi = r % 3;
      if (gaps[gi]) std::this_thread::sleep_for(std::chrono::microseconds(gaps[gi]));
      {
        sinew::task_group g(S);
        auto t0 = clk::now();
        for (std::size_t k = 0; k < n; ++k) g.run([&part, k] { part[k] += part[k + 1]; });
        auto t1 = clk::now();
        g.wait();
        auto t2 = clk::now();
        if (r >= 3) { idle[p][gi].push_back(ns(t0, t1) / n); idlew[p][gi].push_back(ns(t1, t2)); }
      }
    }
  auto med = [](std::vector<double> v) { std::sort(v.begin(), v.end()); return v[v.size() / 2]; };
  for (int p = 0; p < 2; ++p)
  {
    std::printf("%-6s push ns/task: workers busy %7.1f", nm[p], med(busy[p]));
    for (int gi = 0; gi < 3; ++gi) std::printf(" | gap %3d us: push %6.1f ns/task, wait %7.1f us", gaps[gi], med(idle[p][gi]), med(idlew[p][gi]) / 1000);
    std::printf("\n");
  }
}
