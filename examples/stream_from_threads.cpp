// A continuous stream fed by the program's own threads: four producers push
// readings into a bounded stream (push sleeps while the graph is full), the
// graph scales them in an unordered farm, and a sink adds them up.
//   usage: stream_from_threads [items per producer]      (default 2,000)
#include <sinew/sinew.hpp>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <thread>
#include <vector>

struct calibrate {
  void operator()(float raw, float* out) const { *out = raw * 0.5f + 1.f; }
};

int main(int argc, char** argv) {
  const int per_producer = argc > 1 ? std::atoi(argv[1]) : 2000;
  const int producers = 4;
  const std::size_t samples = 256;  // floats per item

  sinew::graph g(sinew::farm(sinew::map(calibrate{}), 3, sinew::farm_order::unordered));
  sinew::stream<sinew::array<float>> in(16);  // at most 16 items wait in the stream
  std::atomic<std::uint64_t> items{0};
  std::atomic<double> total{0};
  auto f = g.run(in.source(), sinew::for_each([&](const sinew::work_unit& u) {
    auto v = u.input<float>(0);
    double t = 0;
    for (std::size_t i = 0; i < v.size(); ++i) t += v[i];
    items.fetch_add(1, std::memory_order_relaxed);
    total.fetch_add(t, std::memory_order_relaxed);
  }));

  std::vector<std::thread> threads;
  for (int p = 0; p < producers; ++p)
    threads.emplace_back([&, p] {
      for (int k = 0; k < per_producer; ++k) {
        sinew::array<float> a(samples);
        for (std::size_t i = 0; i < samples; ++i) a.data()[i] = float(p + k % 7);
        in.push(std::move(a));
      }
    });
  for (auto& t : threads) t.join();
  in.close();  // end of stream: what was pushed is still delivered
  f.get();

  // Every item holds `samples` copies of p + k % 7; each becomes v * 0.5 + 1.
  double want = 0;
  for (int p = 0; p < producers; ++p)
    for (int k = 0; k < per_producer; ++k) want += double(samples) * ((p + k % 7) * 0.5 + 1.0);
  const std::uint64_t n = std::uint64_t(producers) * std::uint64_t(per_producer);
  if (items != n || total != want) {
    std::printf("stream_from_threads: %llu items, total %.1f; expected %llu, %.1f\n",
                (unsigned long long)items.load(), total.load(), (unsigned long long)n, want);
    return 1;
  }
  std::printf("stream_from_threads: OK items=%llu units_in=%llu units_out=%llu\n", (unsigned long long)n,
              (unsigned long long)f.stats().units_in, (unsigned long long)f.stats().units_out);
  return 0;
}
