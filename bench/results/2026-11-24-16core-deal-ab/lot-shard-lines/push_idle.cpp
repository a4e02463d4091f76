// Diagnostic: an outside thread submits 1023 tiny tasks at a time to waiting workers (Reduction's merge levels).
#include <sinew/sinew.hpp>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <memory>
#include <vector>
using clk = std::chrono::steady_clock;
int main(int argc, char** argv) {
  const unsigned threads = argc > 1 ? unsigned(atoi(argv[1])) : 16;
  const int reps = argc > 2 ? atoi(argv[2]) : 1000;
  const bool deal = argc > 3 && !strcmp(argv[3], "deal");
  std::unique_ptr<sinew::scheduler> s;
  if (deal) s = std::make_unique<sinew::deal_scheduler>(sinew::topology::synthetic(1, threads, {}, 32u << 20));
  else s = std::make_unique<sinew::steal_scheduler>(threads);
  std::vector<double> part(4096, 1.0), ns;
  for (int r = 0; r < reps; ++r) {
    sinew::task_group g(*s);
    auto t0 = clk::now();
    for (std::size_t k = 0; k < 1023; ++k) g.run([&part, k] { part[k] += part[k + 1]; });
    auto t1 = clk::now();
    g.wait();
    ns.push_back(std::chrono::duration<double, std::nano>(t1 - t0).count() / 1023);
  }
  std::sort(ns.begin(), ns.end());
  std::printf("%s: median %.1f ns per submit\n", deal ? "deal" : "steal", ns[ns.size() / 2]);
}
