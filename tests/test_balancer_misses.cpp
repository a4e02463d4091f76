// The misses of the 16-core run of 2026-11-24 (/tmp/ocl-keep/2026-11-24-16core-opencl,
// docs/balancing.md "Verified device sets"): the iterative search against
// devices modeled on the share times it fitted there (t = a + b·v, ms and
// percent), with what the fits cannot see — the cost a second device adds to
// the unit beyond the slowest share (dispatch, joining), the host slowing
// while a GPU's transfers run — and with noise (seeded: every run is the
// same). Every time here is modeled, none measured.
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
  // The fit there: host 1.028 ms + 0.0255 ms/%, GPU 1.762 ms + 0.5612 ms/%,
  // from executions that ran both. Balanced over both they predict 3.50 ms
  // (GPU 3.1%) against the host alone's 3.58 ms: 2.2%, just above min_gain.
  // But the host's fit includes the GPU's transfers competing for memory
  // bandwidth (alone it took ~3.6 ms at 100%, 3.70 ms at 96.6% beside the
  // GPU), and a second device adds to the unit (wall 4.54 ms, shares
  // 3.70/3.97 ms). The 1% optimum was the host alone (3.70 ms); the search
  // ended on 96.6% / 3.4% (4.54 ms): RATIO 0.816.
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
  // 16-core nz 100%: host 0.141 ms + 0.9038 ms/% (the search's fit), the
  // GPU ~1.0 ms + 0.0034 ms/% (1.34 ms alone) with spikes (its alone runs
  // reached 6.2 ms). The search kept 3.5% on the host (3.4 ms per unit) —
  // one slow GPU-alone sample undid the drop and forced the host into every
  // later set — while the optimum is the GPU alone (1.49 ms): RATIO 0.400.
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
  // 16-core nz 0%: host 0.195 ms + 0.0009 ms/%, GPU 0.359 ms + 0.011 ms/%:
  // the GPU's fixed cost alone exceeds the host's whole unit (0.285 ms).
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
  // 16-core nz 25% (2026-11-24, bench/results/2026-11-24-16core-opencl-interleaved):
  // the host's top rows are zeros (0.09 ms + 0.0006 ms/%) up to 75%, then
  // every percent of non-zero rows costs it ~1 ms; the GPU (bottom rows)
  // 0.36 ms + 0.0076 ms/%. The optimum sits just past the kink (host
  // 75.4%); the seed's proportional step overshoots across it back and
  // forth, and the run kept host 68.4% (GPU share 0.665 ms vs 0.550).
  // Sub-millisecond shares on that VM are noisy: times x U(1, 1.2), and one
  // in ten takes twice as long.
  auto kinked = [](std::size_t i, double v) {
    return i == 0 ? 0.09e-3 + 0.0006e-3 * v + 1.0e-3 * std::max(0.0, v - 75) : 0.36e-3 + 0.0076e-3 * v;
  };
  auto bed = [&](unsigned seed) { return modeled(seed, kinked, 0.1, 0.2); };
  const double best = fine_optimum(bed(1));
  int seed_step_misses = 0;
  for (unsigned seed = 1; seed <= 40; ++seed) {
    testbed tb = bed(seed);
    auto it = tb.tune(bench_iterative());
    INFO("seed " << seed << ": optimum " << best << " s, iterative " << tb.unit(it.weights()) << " s, host weight "
                 << it.weights()[0] << ", " << it.tuning_executions() << " executions");
    CHECK(best / tb.unit(it.weights()) >= 0.95);
    CHECK(it.tuning_executions() <= 22);
    // Without the bracketed step: seed 001's step and relaxation alone.
    balance_policy seed_only = bench_iterative();
    seed_only.bracket = false;
    testbed tb2 = bed(seed);
    seed_step_misses += best / tb2.unit(tb2.tune(seed_only).weights()) < 0.95;
  }
  CHECK(seed_step_misses > 0);  // the case tells the two apart (2 of 40 seeds)
}

TEST_CASE("iterative measures the host alone when the GPU keeps a small share (saxpy, 16 cores, verify_share)",
          "[balance]") {
  // 16-core saxpy (bench/results/2026-11-24-16core-opencl-shuffled, a loaded VM):
  // fitted while both ran, host 0.0815 ms/%, GPU 2.173 ms + 0.5769 ms/%;
  // balanced they predict ~7.4 ms at GPU ~9%, and the host alone 8.15 ms,
  // 10% slower: outside verify_gain. But the host alone ran at ~6.7 ms
  // (0.067 ms/%): the GPU's transfers slowed it by a fifth. The search kept
  // GPU 7.4% (9.4 ms a unit); the set without the GPU was never measured.
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
  // The share threshold at 5% (verify_gain's, before verify_share) keeps the GPU.
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
  // 16-core nz 75% (bench/results/2026-11-24-16core-unbalanced-reruns, the
  // search's paths): the host's top 25% of rows are zeros (~0.1 ms); its
  // first non-zero rows cost a step of ~1.3 ms, then ~1 ms per percent
  // (25.3%: 1.6 ms, 26.3%: 2.3-3.2 ms, 29.4%: 5-7 ms); the GPU ~0.12 ms +
  // 0.0121 ms/% with spikes. The optimum keeps the host just below the step
  // (GPU-bound, ~1.03 ms); one past it costs half the speed. A run ended at
  // host 26.8% (2.27 ms per unit, RATIO 0.470). Judging the bracket on raw
  // times, 14 of these 200 seeds missed: a GPU that spiked in both repeats
  // just past the step made it look like f < 0 there (the search then ended
  // past it), or picked the end below it as the slower one; and at the
  // iteration limit the fastest unit seen was a lucky one at host ~20%.
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
  // 16-core series (bench/results/2026-11-24-16core-opencl-envelope, run 2):
  // the GPU runs 10,000 coefficients in one wave, ~4.7 ms whatever its
  // share (fitted 4.723 ms + 0.0005 ms/%), the host 0.955 ms + 0.458 ms/%.
  // The GPU is bimodal: most units 5.5 ms, some 2.9-4.0 ms. One fast GPU
  // time at host 8.1% made both devices look 16% faster than the GPU alone
  // (probed at 5.49 ms); the search kept host 8.2% -- in the steady state no
  // faster than the GPU alone (5.731 vs 5.717 ms, RATIO 0.997). Modeled:
  // one GPU time in seven at 0.6x.
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
  // Without measuring the search's own distribution again beside the probe,
  // 5 of these 100 seeds kept the host; with it 2 (whose recheck was lucky
  // too: a unit of either set is 4.8 ms in the GPU's usual mode).
  CHECK(kept_host <= 2);
}
