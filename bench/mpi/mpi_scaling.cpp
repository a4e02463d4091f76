// sinew-mpi-scaling: distributed farms and maps over MPI ranks, with the C++
// API (docs/distributed.md). Every rank runs this same program; rank 0 runs
// the graph, the others serve.
//
//   mpirun -np 4 build/bench/sinew-mpi-scaling farm   [--items N] [--ms T] [--workers W]
//   mpirun -np 4 build/bench/sinew-mpi-scaling series [--coeffs N] [--units U]
//   mpirun -np 3 build/bench/sinew-mpi-scaling check  (small runs checked against one process; exit 1 on a mismatch)
//
// farm: N units of 256 floats, each costing T ms of CPU (a fixed number of
// dependent multiply-adds, calibrated once on rank 0 and sent to every rank
// inside the unit), through distributed(farm(map<spin>, W)), ordered.
// series: U units of N Java Grande Series coefficients (1000 steps each)
// through distributed(map<series_block>). Prints one RESULT line per run;
// bench/mpi_scaling.sh runs it on 1, 2 and 4 ranks and adds the efficiency.
#include <sinew/sinew.hpp>
#include <sinew/distributed/distributed.hpp>
#include <sinew/distributed/mpi_session.hpp>
#include <sinew/workloads/series.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <string>
#include <vector>

namespace {

/// y = x after `iters` dependent multiply-adds per unit (CPU work of a known
/// cost; the count travels in element 0 of the unit so every rank spins the
/// same). Per chunk: one unit is one item.
struct spin {
  void operator()(sinew::chunk c, sinew::in<float> x, sinew::out<float> y) const {
    const auto iters = std::uint64_t(x[0]);
    double a = 1.0;
    for (std::uint64_t i = 0; i < iters; ++i) a = a * 0.999999 + 1e-7;
    for (std::size_t i = c.begin; i < c.end; ++i) y[i] = x[i] * 2.0f + float(a > 0 ? 0 : 1);
  }
};

double process_cpu_s() {
  timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return double(ts.tv_sec) + double(ts.tv_nsec) / 1e9;
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

/// CPU time of the calling thread (ms): not inflated when other processes
/// take the core away.
double thread_cpu_ms() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return double(ts.tv_sec) * 1e3 + double(ts.tv_nsec) / 1e6;
}

/// Multiply-add iterations that take `ms` milliseconds of CPU here: the
/// fastest of 7 timings of >= 20 ms.
std::uint64_t calibrate(double ms) {
  std::uint64_t n = 1 << 16;
  double best = 0;
  for (int rep = 0; rep < 7;) {
    const double t0 = thread_cpu_ms();
    volatile double a = 1.0;
    double b = a;
    for (std::uint64_t i = 0; i < n; ++i) b = b * 0.999999 + 1e-7;
    a = b;
    double t = thread_cpu_ms() - t0;
    if (t < 20) {
      n *= 2;
      continue;
    }
    best = rep++ == 0 ? t : std::min(best, t);
  }
  return std::uint64_t(double(n) * ms / best);
}

struct args {
  std::string mode = "check";
  std::size_t items = 400, workers = 2, coeffs = 4000, units = 4;
  double ms = 1.0;
};

/// Farm of `items` units; returns the checksum of the outputs (rank 0).
double run_farm(sinew::mpi::session& mpi, const args& a, bool distributed, std::uint64_t iters, double* secs) {
  sinew::node f = sinew::farm(sinew::map<spin>({}, {.inline_below = 1u << 20}), unsigned(a.workers));
  sinew::graph g(distributed ? sinew::distributed(f) : f);
  std::vector<sinew::array<float>> in, out;
  if (mpi.rank() == 0) {
    for (std::size_t k = 0; k < a.items; ++k) {
      sinew::array<float> v(256);
      v[0] = float(iters);
      for (std::size_t i = 1; i < 256; ++i) v[i] = float((k * 131 + i) % 97);
      in.push_back(std::move(v));
    }
  }
  auto t0 = std::chrono::steady_clock::now();
  mpi.run(g, sinew::from(in), sinew::into(out));
  *secs = seconds_since(t0);
  double sum = 0;
  for (std::size_t k = 0; k < out.size(); ++k)
    for (std::size_t i = 1; i < out[k].size(); ++i) sum += double(out[k][i]) * double(k + 1);
  return sum;
}

/// Series map over `units` units of `coeffs` coefficients; checksum (rank 0).
double run_series(sinew::mpi::session& mpi, const args& a, bool distributed, double* secs) {
  sinew::node m = sinew::map(sinew::workloads::series_block{1000}, {.min_task = 1});
  sinew::graph g(distributed ? sinew::distributed(m) : m);
  std::size_t made = 0;
  double sum = 0;
  auto src = sinew::generate([&](sinew::unit_builder& u) {
    if (mpi.rank() != 0 || made == a.units) return false;
    ++made;
    u.set_shape(sinew::shape::d1(a.coeffs));  // an index space: no input buffer
    return true;
  });
  auto snk = sinew::for_each([&](const sinew::work_unit& u) {
    auto c = u.input<sinew::workloads::coeff>(0);
    for (std::size_t i = 0; i < c.size(); ++i) sum += c[i].a + 2 * c[i].b;
  });
  auto t0 = std::chrono::steady_clock::now();
  mpi.run(g, std::move(src), std::move(snk));
  *secs = seconds_since(t0);
  return sum;
}

}  // namespace

int main(int argc, char** argv) {
  sinew::mpi::session mpi(argc, argv);
  args a;
  for (int i = 1; i < argc; ++i) {
    std::string s = argv[i];
    auto next = [&] {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "sinew-mpi-scaling: %s needs a value\n", s.c_str());
        std::exit(2);
      }
      return std::string(argv[++i]);
    };
    if (s == "farm" || s == "series" || s == "check") a.mode = s;
    else if (s == "--items") a.items = std::stoul(next());
    else if (s == "--ms") a.ms = std::stod(next());
    else if (s == "--workers") a.workers = std::stoul(next());
    else if (s == "--coeffs") a.coeffs = std::stoul(next());
    else if (s == "--units") a.units = std::stoul(next());
    else {
      if (mpi.rank() == 0) std::fprintf(stderr, "sinew-mpi-scaling: unknown argument '%s' (farm|series|check, --items N, --ms T, --workers W, --coeffs N, --units U)\n", s.c_str());
      return 2;
    }
  }
  // Every rank spins the count rank 0 calibrated (it travels in the units).
  const std::uint64_t iters = mpi.rank() == 0 ? calibrate(a.ms) : 0;
  const bool root = mpi.rank() == 0;
  try {
    if (a.mode == "check") {
      // Small runs, distributed vs plain in one process: the same results.
      a.items = 60, a.ms = 0.2, a.coeffs = 600, a.units = 3;
      const std::uint64_t it = root ? calibrate(a.ms) : 0;
      double t, local = 0, dist;
      if (root) {  // the plain graphs, on rank 0 alone
        sinew::graph g(sinew::farm(sinew::map<spin>({}, {.inline_below = 1u << 20}), 2));
        std::vector<sinew::array<float>> in, out;
        for (std::size_t k = 0; k < a.items; ++k) {
          sinew::array<float> v(256);
          v[0] = float(it);
          for (std::size_t i = 1; i < 256; ++i) v[i] = float((k * 131 + i) % 97);
          in.push_back(std::move(v));
        }
        g.run(sinew::from(in), sinew::into(out)).get();
        for (std::size_t k = 0; k < out.size(); ++k)
          for (std::size_t i = 1; i < out[k].size(); ++i) local += double(out[k][i]) * double(k + 1);
      }
      dist = run_farm(mpi, a, true, it, &t);
      double s_local = 0, s_dist;
      if (root) {
        sinew::graph g(sinew::map(sinew::workloads::series_block{1000}, {.min_task = 1}));
        std::size_t made = 0;
        g.run(sinew::generate([&](sinew::unit_builder& u) {
                if (made == a.units) return false;
                ++made;
                u.set_shape(sinew::shape::d1(a.coeffs));
                return true;
              }),
              sinew::for_each([&](const sinew::work_unit& u) {
                auto c = u.input<sinew::workloads::coeff>(0);
                for (std::size_t i = 0; i < c.size(); ++i) s_local += c[i].a + 2 * c[i].b;
              }))
            .get();
      }
      s_dist = run_series(mpi, a, true, &t);
      if (!root) return 0;
      std::uint64_t remote = 0;
      for (auto n : mpi.units_sent()) remote += n;
      std::printf("check: farm %s (%.6g vs %.6g, %llu units on other ranks), series %s (%.9g vs %.9g)\n",
                  local == dist ? "OK" : "MISMATCH", dist, local, (unsigned long long)remote,
                  s_local == s_dist ? "OK" : "MISMATCH", s_dist, s_local);
      return local == dist && s_local == s_dist && (mpi.size() == 1 || remote > 0) ? 0 : 1;
    }
    // CPU seconds of every rank during the run: on a machine whose cores
    // other jobs share, the work done per CPU second shows the cost of
    // distributing where wall time mostly shows the share of the cores got.
    double t = 0;
    const double c0 = process_cpu_s();
    double sum = a.mode == "farm" ? run_farm(mpi, a, true, iters, &t) : run_series(mpi, a, true, &t);
    double cpu = process_cpu_s() - c0;
    for (const auto& r : mpi.last_rank_stats()) cpu += double(r.cpu_ns) / 1e9;
    if (root && a.mode == "farm")
      std::printf("RESULT mode=farm ranks=%d items=%zu item_ms=%.2f workers=%zu seconds=%.4f items_per_s=%.1f "
                  "cpu_s=%.3f cpu_ms_per_item=%.3f checksum=%.9g\n",
                  mpi.size(), a.items, a.ms, a.workers, t, double(a.items) / t, cpu, cpu * 1e3 / double(a.items), sum);
    else if (root)
      std::printf("RESULT mode=series ranks=%d units=%zu coeffs=%zu seconds=%.4f coeffs_per_s=%.1f cpu_s=%.3f "
                  "cpu_ms_per_unit=%.3f checksum=%.9g\n",
                  mpi.size(), a.units, a.coeffs, t, double(a.units * a.coeffs) / t, cpu, cpu * 1e3 / double(a.units),
                  sum);
    if (root)
      for (const auto& r : mpi.last_rank_stats()) std::printf("  %s\n", r.str().c_str());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "sinew-mpi-scaling: rank %d: %s\n", mpi.rank(), e.what());
    return 1;
  }
  return 0;
}
