// Uses the scheduler alone and a C++ pipeline: what a program linking only
// sinew::core can do. Prints "core consumer: OK <version>" when every result
// is right.
#include <sinew/sinew.hpp>

#include <atomic>
#include <cstdio>
#include <vector>

struct scale {
  float a;
  void operator()(float x, float* y) const { *y = a * x; }
};
struct add_one {
  void operator()(float x, float* y) const { *y = x + 1.f; }
};

int main() {
  sinew::steal_scheduler s(2);
  std::atomic<int> sum{0};
  sinew::task_group tg(s);
  for (int i = 1; i <= 100; ++i) tg.run([&sum, i] { sum += i; });
  tg.wait();
  if (sum != 5050) {
    std::printf("core consumer: task_group sum %d, expected 5050\n", sum.load());
    return 1;
  }

  std::vector<sinew::array<float>> in, out;
  for (int k = 0; k < 8; ++k) {
    sinew::array<float> a(std::size_t(1000));
    for (std::size_t i = 0; i < 1000; ++i) a.data()[i] = float(k + i);
    in.push_back(std::move(a));
  }
  sinew::graph g(sinew::pipeline(sinew::map(scale{2.f}), sinew::farm(sinew::map(add_one{}), 2)),
                 {.scheduler = &s});
  g.run(in, out).get();
  for (int k = 0; k < 8; ++k)
    for (std::size_t i = 0; i < 1000; ++i)
      if (out[k].data()[i] != 2.f * float(k + i) + 1.f) {
        std::printf("core consumer: out[%d][%zu] = %g\n", k, i, double(out[k].data()[i]));
        return 1;
      }
  std::printf("core consumer: OK %s\n", sinew::version_string());
  return 0;
}
