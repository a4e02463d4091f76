// The iterative search against devices modeled on share times measured on
// the 16-core host with an H100 (t = a + b·v, ms and percent; docs/balancing.md
// "Verified device sets", "Bracketing", "Envelope"), with what its fits
// cannot see -- the cost a second device adds to the unit beyond the slowest
// share (dispatch, joining), the host slowing while a GPU's transfers run --
// and with noise (seeded: every run is the same). Every time here is
// modeled, none measured.
#include <sinew/opencl/balancer.hpp>
#include <sinew/opencl/host_executor.hpp>
#include <sinew/opencl/multi_device_map.hpp>
#include <sinew/opencl/simulated_device.hpp>
#include <sinew/sinew.hpp>

#include <catch2/catch.hpp>

#include <algorithm>
#include <functional>
#include <random>

namespace {

using sinew::balance_policy;
using sinew::balance_tuner;
namespace balance = sinew::balance;

/// One device: share time a + b·v seconds for v percent of the unit (0 for
/// no share), times `shared` while another device also runs a share.
struct fitted_device {
  double a, b;
  double shared = 1.0;
  double spike_p = 0;  ///< probability that one execution takes `spike` times longer
  double spike = 1;
};

/// Devices of one benchmark case plus what a unit costs beyond its slowest share.
struct testbed {
  std::vector<fitted_device> d;
  /// Share time of device i at v percent, in place of a + b·v (work not
  /// uniform over the rows); null: the fitted line.
  std::function<double(std::size_t i, double v)> model;
  double dispatch = 0;  ///< seconds per device beyond the first that runs a share
  double jitter = 0;    ///< each time × U(1, 1 + jitter)
  std::size_t rows = 1000;
  std::mt19937 rng{1};

  std::vector<double> share_times(const std::vector<double>& v, bool noisy) {
    std::size_t active = 0;
    for (double x : v) active += x > 0;
    std::uniform_real_distribution<double> u(0, 1);
    std::vector<double> t(d.size(), 0.0);
    for (std::size_t i = 0; i < d.size(); ++i) {
      if (!(v[i] > 0)) continue;
      t[i] = (model ? model(i, v[i]) : d[i].a + d[i].b * v[i]) * (active > 1 ? d[i].shared : 1.0);
      if (noisy) {
        t[i] *= 1 + jitter * u(rng);
        if (u(rng) < d[i].spike_p) t[i] *= d[i].spike;
      }
    }
    return t;
  }
  /// Unit time without noise: the slowest share plus the dispatch of the others.
  double unit(const std::vector<double>& w) {
    auto v = sinew::share_percent(sinew::split_shares(rows, w, std::vector<std::size_t>(d.size(), 1)));
    auto t = share_times(v, false);
    std::size_t active = 0;
    for (double x : v) active += x > 0;
    return *std::max_element(t.begin(), t.end()) + dispatch * double(active - 1);
  }
  /// Runs a search to the end on noisy devices; each report carries the unit time.
  balance_tuner tune(const balance_policy& p) {
    balance_tuner tu(p, d.size());
    for (unsigned k = 0; !tu.tuned(); ++k) {
      REQUIRE(k < 100000);
      auto s = sinew::split_shares(rows, tu.weights(), std::vector<std::size_t>(d.size(), 1));
      auto v = sinew::share_percent(s);
      auto t = share_times(v, true);
      std::size_t active = 0;
      for (double x : v) active += x > 0;
      std::vector<sinew::share_timing> st;
      for (double x : t) st.push_back({x, x});
      tu.report(s, st, *std::max_element(t.begin(), t.end()) + dispatch * double(active - 1));
    }
    return tu;
  }
  /// The 1% optimum on the noiseless model.
  double optimum() {
    double best = 1e300;
    for (auto& w : balance::exhaustive_candidates(d.size(), 0.01)) best = std::min(best, unit(w));
    return best;
  }
};

balance_policy bench_iterative() {
  balance_policy p = balance::iterative();
  p.repeats = 2;  // as bench/multidevice.cpp
  p.retune = false;
  return p;
}

/// A testbed of `d` with its noise drawn from `seed`.
testbed seeded(unsigned seed, std::vector<fitted_device> d, double dispatch, double jitter) {
  testbed tb;
  tb.rng.seed(seed);
  tb.d = std::move(d);
  tb.dispatch = dispatch;
  tb.jitter = jitter;
  return tb;
}

/// Two devices whose share times follow `model` (non-uniform rows), with
/// jitter and spikes of `spike_p` doubling a time, noise drawn from `seed`.
testbed modeled(unsigned seed, std::function<double(std::size_t, double)> model, double spike_p, double jitter) {
  testbed tb = seeded(seed, {{0, 0, 1, spike_p, 2}, {0, 0, 1, spike_p, 2}}, 0.0, jitter);
  tb.model = std::move(model);
  return tb;
}

/// The best unit over splits of two devices in steps of 0.1%, without noise.
double fine_optimum(testbed tb) {
  double best = 1e300;
  for (int k = 0; k <= 1000; ++k) best = std::min(best, tb.unit({k / 10.0, 100 - k / 10.0}));
  return best;
}

}  // namespace

TEST_CASE("iterative keeps the host alone when the fits predict a GPU share gains 2 percent (saxpy, 16 cores)",
          "[balance]") {
  // Fits from executions that ran both devices: host 1.028 ms + 0.0255 ms/%,
  // GPU 1.762 ms + 0.5612 ms/%. Balanced over both they predict 3.50 ms (GPU
  // 3.1%) against 3.58 ms for the host alone: 2.2%, just above min_gain. But
  // the host's fit includes the GPU's transfers competing for memory
  // bandwidth (the host is 6% faster alone), and a second device adds to the
  // unit beyond its slowest share, so the optimum is the host alone: only
  // measuring the smaller set (verify_gain) finds it.
  for (unsigned seed = 1; seed <= 20; ++seed) {
    testbed tb = seeded(seed, {{1.028e-3, 0.0255e-3, 1.0}, {1.762e-3, 0.5612e-3}}, 0.25e-3, 0.03);
    tb.d[0].a /= 1.06, tb.d[0].b /= 1.06, tb.d[0].shared = 1.06;  // alone 6% faster
    const double best = tb.optimum();
    REQUIRE(tb.unit({100, 0}) == Approx(best));
    auto it = tb.tune(bench_iterative());
    INFO("seed " << seed << ": optimum " << best << " s, iterative " << tb.unit(it.weights()) << " s, weights "
                 << it.weights()[0] << " / " << it.weights()[1] << ", " << it.tuning_executions() << " executions");
    CHECK(best / tb.unit(it.weights()) >= 0.95);
    CHECK(it.weights()[1] == 0);
    CHECK(it.tuning_executions() <= 12);
  }
}

TEST_CASE("iterative gives the host 0 percent on the unbalanced kernel at 100 percent despite GPU spikes (16 cores)",
          "[balance]") {
  // Host 0.141 ms + 0.9038 ms/%, the GPU ~1.0 ms + 0.0034 ms/% with spikes
  // (x4, one execution in five): the optimum is the GPU alone. One slow
  // GPU-alone sample must not undo the host's drop (a drop is undone only
  // past δ) and force the host into every later set.
  unsigned bad = 0;
  for (unsigned seed = 1; seed <= 40; ++seed) {
    testbed tb = seeded(seed, {{0.141e-3, 0.9038e-3}, {1.0e-3, 0.0034e-3, 1.0, 0.2, 4.0}}, 0.05e-3, 0.05);
    const double best = tb.optimum();
    REQUIRE(tb.unit({0, 100}) == Approx(best));
    auto it = tb.tune(bench_iterative());
    INFO("seed " << seed << ": optimum " << best << " s, iterative " << tb.unit(it.weights()) << " s, host weight "
                 << it.weights()[0] << ", " << it.tuning_executions() << " executions");
    CHECK(best / tb.unit(it.weights()) >= 0.95);
    bad += it.weights()[0] != 0;
  }
  CHECK(bad == 0);
}

TEST_CASE("iterative leaves a fixed-cost GPU idle on the unbalanced kernel at 0 percent, and idle costs nothing",
          "[balance]") {
  // Host 0.195 ms + 0.0009 ms/%, GPU 0.359 ms + 0.011 ms/%: the GPU's fixed
  // cost alone exceeds the host's whole unit (0.285 ms).
  for (unsigned seed = 1; seed <= 20; ++seed) {
    testbed tb = seeded(seed, {{0.195e-3, 0.0009e-3}, {0.359e-3, 0.011e-3}}, 0.03e-3, 0.05);
    auto it = tb.tune(bench_iterative());
    INFO("seed " << seed << ": weights " << it.weights()[0] << " / " << it.weights()[1]);
    CHECK(it.weights() == std::vector<double>{100, 0});
  }
  // In a graph: once tuned, the GPU (simulated, on a device thread of its
  // own) runs no share, and the steady state re-tunes nothing and probes
  // nothing while the unit keeps its time.
  struct copy_leaf {
    void operator()(float x, float* y) const { *y = x; }
  };
  const std::size_t rows = 1024;
  auto real = sinew::host<copy_leaf>();
  auto host = sinew::simulate(real, {.name = "sim:host", .speed = double(rows) / 0.09e-3, .launch_overhead = 0.195e-3});
  auto gpu = sinew::simulate(real, {.name = "sim:gpu", .speed = double(rows) / 1.1e-3, .launch_overhead = 0.359e-3});
  sinew::balance_cache cache;
  sinew::node m = sinew::multi_device_map({host, gpu}, balance::iterative(), {.cache = &cache});
  sinew::graph g(m);
  sinew::array<float> in(rows), out(rows);
  for (std::size_t i = 0; i < rows; ++i) in[i] = float(i);
  for (int k = 0; k < 50 && !sinew::device_stats(m).tuned; ++k) g.run(sinew::from_arrays(in), sinew::into_arrays(out)).get();
  REQUIRE(sinew::device_stats(m).tuned);
  REQUIRE(sinew::device_stats(m).weights == std::vector<double>{100, 0});
  const auto runs = gpu->executions();
  const auto st0 = sinew::device_stats(m);
  for (int k = 0; k < 30; ++k) g.run(sinew::from_arrays(in), sinew::into_arrays(out)).get();
  const auto st = sinew::device_stats(m);
  CHECK(gpu->executions() == runs);
  CHECK(st.tuning_executions == st0.tuning_executions);
  CHECK(st.retunes == 0);
  CHECK(st.rows[1] == st0.rows[1]);
  CHECK(out[rows - 1] == float(rows - 1));
}

TEST_CASE("iterative finds the kink of the unbalanced kernel at 25 percent, through noise", "[balance]") {
  // The host's top rows are zeros (0.09 ms + 0.0006 ms/%) up to 75%, then
  // every percent of non-zero rows costs it ~1 ms; the GPU (bottom rows)
  // 0.36 ms + 0.0076 ms/%. The optimum sits just past the kink (host 75.4%),
  // where HPL's proportional step overshoots back and forth and the fitted
  // lines do not hold: the bracketed step must find it. Sub-millisecond
  // shares are noisy: times x U(1, 1.2), and one in ten takes twice as long.
  auto kinked = [](std::size_t i, double v) {
    return i == 0 ? 0.09e-3 + 0.0006e-3 * v + 1.0e-3 * std::max(0.0, v - 75) : 0.36e-3 + 0.0076e-3 * v;
  };
  auto bed = [&](unsigned seed) { return modeled(seed, kinked, 0.1, 0.2); };
  const double best = fine_optimum(bed(1));
  int hpl_step_misses = 0;
  for (unsigned seed = 1; seed <= 40; ++seed) {
    testbed tb = bed(seed);
    auto it = tb.tune(bench_iterative());
    INFO("seed " << seed << ": optimum " << best << " s, iterative " << tb.unit(it.weights()) << " s, host weight "
                 << it.weights()[0] << ", " << it.tuning_executions() << " executions");
    CHECK(best / tb.unit(it.weights()) >= 0.95);
    CHECK(it.tuning_executions() <= 22);
    // Without the bracketed step: HPL's step and relaxation alone.
    balance_policy hpl_only = bench_iterative();
    hpl_only.bracket = false;
    testbed tb2 = bed(seed);
    hpl_step_misses += best / tb2.unit(tb2.tune(hpl_only).weights()) < 0.95;
  }
  CHECK(hpl_step_misses > 0);  // the case tells the two apart
}

TEST_CASE("iterative measures the host alone when the GPU keeps a small share (saxpy, 16 cores, verify_share)",
          "[balance]") {
  // Fitted while both ran: host 0.0815 ms/%, GPU 2.173 ms + 0.5769 ms/%;
  // balanced they predict ~7.4 ms at GPU ~9%, and the host alone 8.15 ms,
  // 10% slower: outside verify_gain. But the host alone runs at 0.067 ms/%
  // (the GPU's transfers slow it by a fifth), which only measuring the set
  // without the GPU shows: verify_share makes the search do so.
  auto bed = [](unsigned seed) {
    testbed tb = seeded(seed, {{0.0, 0.067e-3, 1.216}, {2.173e-3, 0.5769e-3}}, 0.25e-3, 0.05);
    return tb;
  };
  for (unsigned seed = 1; seed <= 20; ++seed) {
    testbed tb = bed(seed);
    const double best = tb.optimum();
    REQUIRE(tb.unit({100, 0}) == Approx(best));
    auto it = tb.tune(bench_iterative());
    INFO("seed " << seed << ": weights " << it.weights()[0] << " / " << it.weights()[1] << ", "
                 << it.tuning_executions() << " executions");
    CHECK(it.weights() == std::vector<double>{100, 0});
    CHECK(it.tuning_executions() <= 24);
  }
  // With the share threshold at verify_gain's 5%, some searches keep the GPU.
  balance_policy narrow = bench_iterative();
  narrow.verify_share = 0.05;
  int kept_gpu = 0;
  for (unsigned seed = 1; seed <= 20; ++seed) {
    testbed tb = bed(seed);
    kept_gpu += tb.tune(narrow).weights()[1] > 0;
  }
  CHECK(kept_gpu > 0);
}

TEST_CASE("iterative stays below the host's jump on the unbalanced kernel at 75 percent, through noise", "[balance]") {
  // The host's top 25% of rows are zeros (~0.1 ms); its first non-zero rows
  // cost a step of ~1.3 ms, then ~1 ms per percent; the GPU ~0.12 ms +
  // 0.0121 ms/% with spikes. The optimum keeps the host just below the step
  // (GPU-bound); one row past it costs half the speed. A GPU that spiked in
  // both repeats just past the step makes f < 0 look true there on raw
  // times, and the fastest unit seen at the iteration limit may be a lucky
  // one: the envelope (a device's time at a share is at most its least at
  // a larger one) and ending on the bracket's faster end guard both.
  auto stepped = [](std::size_t i, double v) {
    return i == 0 ? 0.09e-3 + 0.0006e-3 * v + (v > 25 ? 1.3e-3 + 1.0e-3 * (v - 25) : 0.0) : 0.122e-3 + 0.0121e-3 * v;
  };
  auto bed = [&](unsigned seed) { return modeled(seed, stepped, 0.15, 0.3); };
  const double best = fine_optimum(bed(1));
  for (unsigned seed = 1; seed <= 200; ++seed) {
    testbed tb = bed(seed);
    auto it = tb.tune(bench_iterative());
    INFO("seed " << seed << ": optimum " << best << " s, iterative " << tb.unit(it.weights()) << " s, host weight "
                 << it.weights()[0] << ", " << it.tuning_executions() << " executions");
    CHECK(best / tb.unit(it.weights()) >= 0.95);
    CHECK(it.weights()[0] <= 25);  // never past the step
    CHECK(it.tuning_executions() <= 22);
  }
}

TEST_CASE("iterative keeps the GPU alone on series when one lucky GPU time favoured both devices (16 cores)",
          "[balance]") {
  // Series: the GPU runs 10,000 coefficients in one wave, ~4.7 ms whatever
  // its share (4.723 ms + 0.0005 ms/%), the host 0.955 ms + 0.458 ms/%. The
  // GPU is bimodal (modeled: one time in seven at 0.6x): one fast GPU time
  // at a small host share makes both devices look faster than the GPU
  // alone, though in the steady state they are not. The search's own
  // distribution is measured again beside the probe of the GPU alone.
  auto bed = [](unsigned seed) {
    testbed tb = seeded(seed, {{0.955e-3, 0.458e-3}, {4.723e-3, 0.0005e-3, 1.0, 0.15, 0.6}}, 0.0, 0.03);
    return tb;
  };
  int kept_host = 0;
  for (unsigned seed = 1; seed <= 100; ++seed) {
    testbed tb = bed(seed);
    auto it = tb.tune(bench_iterative());
    INFO("seed " << seed << ": weights " << it.weights()[0] << " / " << it.weights()[1] << ", "
                 << it.tuning_executions() << " executions");
    CHECK(it.tuning_executions() <= 24);
    kept_host += it.weights()[0] > 0;
  }
  // A recheck can be lucky too (a unit of either set is 4.8 ms in the GPU's
  // usual mode): a few seeds may keep the host.
  CHECK(kept_host <= 2);
}
