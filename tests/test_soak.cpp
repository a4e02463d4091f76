// Soak: an unbounded stream through a multi-stage pipeline with an ordered
// farm for SINEW_SOAK_SECONDS (default 600). Resident memory must stay flat
// after warm-up (within 5%), throughput must not decay, and after stop()
// every accepted unit is delivered (units_in == units_out). Prints the
// memory and throughput curve. Hidden from `make test`; run with `make soak`
// or `build/tests/sinew-tests "[.soak]"`.
#include <catch2/catch.hpp>

#include <sinew/engine/graph.hpp>
#include <sinew/json/graph_file.hpp>
#include <sinew/io.hpp>

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <thread>
#include <vector>

namespace {

std::size_t resident_kib() {
  std::ifstream f("/proc/self/statm");
  std::size_t pages = 0, resident = 0;
  f >> pages >> resident;
  return resident * std::size_t(::sysconf(_SC_PAGESIZE)) / 1024;
}

const char* soak_graph = R"({"sinew": 1, "name": "soak",
  "source": {"type": "generator", "buffers": ["u8"], "shape": [262144], "count": "unbounded", "pattern": "random"},
  "graph": {"pipeline": [
    {"map": "xor", "args": {"key": 17}},
    {"farm": {"pipeline": [{"map": "segmentation"}, {"map": "xor", "args": {"key": 99}}]}, "workers": 3, "ordered": true},
    {"map": "delay", "args": {"micros": 0}}
  ]},
  "sink": {"type": "checksum"}})";

}  // namespace

TEST_CASE("soak: a stream runs for minutes with flat memory and steady throughput", "[.soak]") {
  double seconds = 600;
  if (const char* s = std::getenv("SINEW_SOAK_SECONDS")) seconds = std::atof(s);
  const double interval = std::max(1.0, seconds / 60);
  auto f = sinew::graph_file::parse(soak_graph, "soak.json");
  auto sched = f.make_scheduler();
  sinew::graph g(f.root(), f.options(sched.get()));
  auto sum = std::make_shared<sinew::io::checksum_result>();
  auto run = g.run(f.make_source(), f.make_sink(sum));

  struct sample {
    double t;
    std::size_t rss_kib;
    double units_per_s;
  };
  std::vector<sample> curve;
  auto t0 = std::chrono::steady_clock::now();
  std::uint64_t last_units = 0;
  double last_t = 0;
  std::printf("soak: %.0f s, a sample every %.1f s\n%8s %10s %12s\n", seconds, interval, "t (s)", "RSS (KiB)", "units/s");
  while (true) {
    std::this_thread::sleep_for(std::chrono::duration<double>(interval));
    REQUIRE_FALSE(run.ready());  // an unbounded stream only ends when stopped (or on an error)
    double t = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    auto st = run.stats();
    sample s{t, resident_kib(), double(st.units_out - last_units) / (t - last_t)};
    last_units = st.units_out;
    last_t = t;
    curve.push_back(s);
    std::printf("%8.1f %10zu %12.1f\n", s.t, s.rss_kib, s.units_per_s);
    std::fflush(stdout);
    if (t >= seconds) break;
  }
  run.stop();
  REQUIRE(run.wait_for(std::chrono::seconds(60)));
  run.get();
  auto st = run.stats();
  std::printf("soak: units_in=%llu units_out=%llu checksum=%016llx\n", (unsigned long long)st.units_in,
              (unsigned long long)st.units_out, (unsigned long long)sum->value);
  CHECK(st.units_in == st.units_out);
  CHECK(sum->units == st.units_out);

  // Warm-up: the first 10% of the samples (pools and queues fill up).
  REQUIRE(curve.size() >= 10);
  const std::size_t warm = curve.size() / 10;
  std::size_t base = curve[warm].rss_kib, peak = 0;
  for (std::size_t i = warm; i < curve.size(); ++i) peak = std::max(peak, curve[i].rss_kib);
  INFO("RSS after warm-up " << base << " KiB, peak " << peak << " KiB");
  CHECK(double(peak) <= 1.05 * double(base));
  // Throughput: the last third is no slower than 80% of the first third after warm-up.
  auto mean = [&](std::size_t b, std::size_t e) {
    double s = 0;
    for (std::size_t i = b; i < e; ++i) s += curve[i].units_per_s;
    return s / double(e - b);
  };
  const std::size_t n = curve.size() - warm, third = std::max<std::size_t>(1, n / 3);
  double first = mean(warm, warm + third), last = mean(curve.size() - third, curve.size());
  INFO("units/s first third " << first << ", last third " << last);
  CHECK(last >= 0.8 * first);
}
