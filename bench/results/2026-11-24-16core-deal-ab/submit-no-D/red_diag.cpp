// Diagnostic: mir Reduction phases, steal vs deal, interleaved.
#include <sinew/sinew.hpp>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <memory>
#include <vector>
using clk = std::chrono::steady_clock;
static double us(clk::time_point a, clk::time_point b) { return std::chrono::duration<double, std::micro>(b - a).count(); }
struct res { double leaves_submit, leaves_total, merge_submit, merge_total, total; };
int main(int argc, char** argv) {
  const unsigned threads = argc > 1 ? unsigned(atoi(argv[1])) : 16;
  const int reps = argc > 2 ? atoi(argv[2]) : 41;
  const bool no_hint = argc > 3 && !strcmp(argv[3], "nohint");
  const int only = argc > 4 ? atoi(argv[4]) : -1;
  const std::size_t floats = 32u << 20; const unsigned depth = 10; const std::size_t L = 1u << depth;
  std::vector<float> a(floats); for (std::size_t i = 0; i < floats; ++i) a[i] = float(i % 7);
  std::vector<std::vector<std::uint64_t>> D(L, std::vector<std::uint64_t>{floats * 4 / L});
  std::vector<double> part(L);
  auto topo = sinew::topology::current();
  const bool with_tbb = argc > 5 && !strcmp(argv[5], "tbb");
  const int P = with_tbb ? 3 : 2;
  std::unique_ptr<sinew::scheduler> s[3] = {std::make_unique<sinew::steal_scheduler>(threads),
                                            std::make_unique<sinew::deal_scheduler>(topo),
                                            std::make_unique<sinew::tbb_scheduler>(threads)};
  const char* nm[3] = {"steal", "deal", "tbb"};
  std::vector<res> R[3];
  for (int r = 0; r < reps + 3; ++r)
    for (int pi = 0; pi < P; ++pi) {
      const int p = (pi + r) % P;
      if (only >= 0 && p != only) { R[p].push_back({1,1,1,1,1}); continue; }
      auto& S = *s[p];
      auto t0 = clk::now();
      sinew::task_group g(S);
      for (std::size_t k = 0; k < L; ++k) {
        sinew::locality_hint h; if (!no_hint) h.bytes_on_node = D[k];
        g.run([&, k] { std::size_t b = floats * k / L, e = floats * (k + 1) / L; double sum = 0; for (std::size_t i = b; i < e; ++i) sum += a[i]; part[k] = sum; }, h);
      }
      auto t1 = clk::now();
      g.wait();
      auto t2 = clk::now();
      double msub = 0;
      for (std::size_t w = L / 2; w >= 1; w /= 2) {
        sinew::task_group h(S);
        auto u0 = clk::now();
        for (std::size_t k = 0; k < w; ++k) h.run([&, k, w] { part[k] = part[k] + part[k + w]; });
        msub += us(u0, clk::now());
        h.wait();
      }
      auto t3 = clk::now();
      if (r >= 3) R[p].push_back({us(t0, t1), us(t0, t2), msub, us(t2, t3), us(t0, t3)});
    }
  auto med = [](std::vector<double> v) { std::sort(v.begin(), v.end()); return v[v.size() / 2]; };
  for (int p = 0; p < P; ++p) {
    std::vector<double> c[5];
    for (auto& x : R[p]) { c[0].push_back(x.leaves_submit); c[1].push_back(x.leaves_total); c[2].push_back(x.merge_submit); c[3].push_back(x.merge_total); c[4].push_back(x.total); }
    std::printf("%-6s leaves_submit %8.1f us leaves_total %8.1f us merge_submit %8.1f us merge_total %8.1f us total %8.1f us\n", nm[p], med(c[0]), med(c[1]), med(c[2]), med(c[3]), med(c[4]));
  }
  std::vector<double> ratio;
  for (std::size_t i = 0; i < R[0].size(); ++i) ratio.push_back(R[0][i].total / R[1][i].total);
  std::printf("paired ratio steal/deal median %.3f\n", med(ratio));
  for (int p = 0; p < 2; ++p) {
    auto st = s[p]->stats();
    (void)st;
  }
}
