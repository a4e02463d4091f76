// multidevice_series / multidevice_saxpy / multidevice_unbalanced: one map
// split over several devices by the balancers of [Vinas17, §3.3.2].
//
// For each workload: each device alone, all devices under every balancer
// (static equal shares, single-step, iterative, exhaustive 5%), and the
// exhaustive 1% search as the optimum; RATIO lines for iterative vs that
// optimum (target ≥ 0.95) and, for series, all devices vs the best single
// device (target ≥ 1.0); a line whose sides are one timed configuration
// (both chose the same split) is informational, the split printed beside it.
// Tuning executions process real units; how many
// each balancer needed (each distribution tried is timed on two units, as
// in [Vinas17]; and how long they took) is printed as a note, and
// so is each device's median share time once tuned (the steady state) and
// the iterative search's fitted share times (fixed cost + per percent).
//
// Every balancer, the optimum included, balances the share times *with*
// transfers (the default, `balance_policy::with_transfers`): the benchmark
// times whole units, and a GPU's kernel-only time leaves out the uploads and
// downloads that dominate saxpy (balanced on kernel times alone, most of
// saxpy would go to a GPU that is slower than the host end to end).
//
// Devices: with an OpenCL GPU, the host executor (all workers) plus each
// GPU running the workload's kernel from graphs/kernels/. Without one, two
// host executors with a scheduler of half the workers each (PoCL's CPU
// device would share the host's cores; SINEW_BENCH_OPENCL=cpu adds it
// anyway, against the host). The output says which.
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <functional>
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <sinew/opencl/host_executor.hpp>
#include <sinew/opencl/multi_device_map.hpp>
#include <sinew/opencl/kernel.hpp>
#include <sinew/opencl/simulated_device.hpp>
#include <sinew/sinew.hpp>
#include <sinew/schedulers/tbb_scheduler.hpp>
#include <sinew/workloads.hpp>

#include "bench.hpp"
#include "source_tree.hpp"
#include "unbalanced.hpp"

namespace {

namespace sb = sinew_bench;
namespace wl = sinew::workloads;
using dev_list = std::vector<std::shared_ptr<sinew::device_executor>>;

namespace cl = sinew::opencl;


cl::kernel_spec kernel(const char* file, const char* name, std::vector<cl::arg::spec> args) {
  cl::kernel_spec k;
  k.file = sinew_support::kernel_file(file);
  k.kernel = name;
  k.args = std::move(args);
  return k;
}

/// Which devices the benchmarks split over (see the file comment).
struct testbed {
  std::string opencl;  ///< select_devices() string of the OpenCL devices used; "" = none
  std::unique_ptr<sinew::tbb_scheduler> a, b;
  unsigned wa = 1, wb = 1;
  testbed() {
    bool gpu = false, cpu = false;
    for (auto& d : cl::list_devices()) gpu |= d.kind == cl::device_kind::gpu, cpu |= d.kind == cl::device_kind::cpu;
    const char* env = std::getenv("SINEW_BENCH_OPENCL");
    if (gpu) opencl = "gpu";
    else if (cpu && env && std::string(env) == "cpu") opencl = "cpu";
    if (!opencl.empty()) return;
    unsigned t = std::max(2u, sb::thread_count());
    wa = (t + 1) / 2;
    wb = t / 2;
    a = std::make_unique<sinew::tbb_scheduler>(wa);
    b = std::make_unique<sinew::tbb_scheduler>(wb);
  }
  std::string what() const {
    if (!opencl.empty())
      return "devices: the host executor (the graph's " + std::to_string(sb::thread_count()) +
             " workers) and every OpenCL '" + opencl + "' device running the workload's kernel";
    return "devices: two host executors with schedulers of their own (" + std::to_string(wa) + " and " +
           std::to_string(wb) + " workers); no OpenCL GPU here";
  }
};

template <class F>
dev_list devices_for(testbed& tb, F f, sinew::map_options mo, cl::kernel_spec k) {
  dev_list d;
  if (tb.opencl.empty()) {
    d.push_back(sinew::host<F>(f, mo, {.sched = tb.a.get(), .name = "host/" + std::to_string(tb.wa) + "a"}));
    d.push_back(sinew::host<F>(f, mo, {.sched = tb.b.get(), .name = "host/" + std::to_string(tb.wb) + "b"}));
    return d;
  }
  d.push_back(sinew::host<F>(f, mo));
  k.devices = tb.opencl;
  for (auto& e : cl::kernel_executors(k)) d.push_back(e);
  return d;
}

/// Median share time (with transfers) of each device over the last `units`
/// units and the imbalance of those medians: what the tuned weights give in
/// the steady state, to tell a balancer's choice from measurement noise.
std::string steady_state(const sinew::multi_device_stats& st, std::size_t units) {
  const std::size_t d = st.devices.size();
  const std::size_t from = st.recent.size() > units ? st.recent.size() - units : 0;
  std::string out = "steady state (median share time over " + std::to_string(st.recent.size() - from) + " units):";
  double lo = 1e300, hi = 0;
  for (std::size_t i = 0; i < d; ++i) {
    std::vector<double> t;
    for (std::size_t u = from; u < st.recent.size(); ++u) {
      const auto& x = st.recent[u];
      if (x.shares[i].size()) t.push_back(x.timings[i].total);
    }
    if (t.empty()) {
      out += (i ? ", " : " ") + st.devices[i] + " idle";
      continue;
    }
    std::nth_element(t.begin(), t.begin() + std::ptrdiff_t(t.size() / 2), t.end());
    const double med = t[t.size() / 2];
    lo = std::min(lo, med);
    hi = std::max(hi, med);
    out += (i ? ", " : " ") + st.devices[i] + " " + sb::format_double(med * 1e3, 3) + " ms";
  }
  if (hi > 0 && lo < 1e300) out += "; imbalance " + sb::format_double((hi / lo - 1) * 100, 1) + "%";
  return out;
}

const std::string paired_info = "t(exhaustive 1%) / t(iterative), median of paired rounds";

struct result_times {
  double optimum_vs_iterative = 0;  ///< median over rounds of t(optimum) / t(iterative)
  double single_vs_iterative = 0;   ///< the same for the best single device
  /// Both sides of the ratio are one timed configuration (the same split):
  /// 1.0 by construction, so informational.
  bool optimum_same = false, single_same = false;
  std::string iterative_split, optimum_split, best_single;  ///< "host 96.0%, nvidia:0 (gpu) 4.0%"; a device name
};

/// "host 96.0%, nvidia:0 (gpu) 4.0%": a balancer's chosen split.
std::string split_of(const sinew::multi_device_stats& st) {
  std::string w;
  for (std::size_t i = 0; i < st.weights.size(); ++i)
    w += (i ? ", " : "") + st.devices[i] + " " + sb::format_double(st.weights[i], 1) + "%";
  return w;
}

/// Median over paired rounds of a[i] / b[i] (0 when there are none).
double paired_median(const std::vector<double>& a, const std::vector<double>& b) {
  std::vector<double> r;
  sb::append_round_ratios(a, b, r);
  return r.empty() ? 0.0 : sb::summarize(r).median;
}

/// Measures every configuration of one workload. `run_once(g)` runs one unit
/// through `g`; `check` verifies the output of the last run.
///
/// Every configuration is built (and the balancers tuned) first; then all
/// are timed together, interleaved (rounds that run each once, the order
/// rotating), so that the host's drift (on a VM, its neighbours' steal
/// time) hits every configuration alike, and the RATIO lines are medians of
/// round-by-round ratios.
result_times drive(sb::context& ctx, const std::string& tag, const dev_list& devs,
                   const std::function<void(sinew::graph&)>& run_once, const std::function<std::string()>& check,
                   const std::function<void()>& poison) {
  struct config {
    std::string name, note;
    sinew::balance_policy p;
    sinew::balance_cache cache;
    std::optional<sinew::node> m;
    std::optional<sinew::graph> g;
  };
  std::deque<config> cs;  // deque: graphs keep pointers to their cache
  // Each device alone.
  for (std::size_t i = 0; i < devs.size(); ++i) {
    auto& c = cs.emplace_back();
    c.name = devs[i]->name() + " alone";
    c.note = "one device";
    c.m = sinew::multi_device_map({devs[i]}, sinew::balance::static_weights({1}), {.cache = &c.cache});
  }
  // All devices under each balancer.
  // 1% over 3 devices would be 5151 executions: 2% (1326) there.
  const std::size_t singles = cs.size();
  std::vector<double> equal(devs.size(), 1.0);
  const std::pair<const char*, sinew::balance_policy> balancers[] = {
      {"all, static equal", sinew::balance::static_weights(equal)},
      {"all, single-step", sinew::balance::single_step()},
      {"all, iterative", sinew::balance::iterative()},
      {"all, exhaustive 5%", sinew::balance::exhaustive(0.05)},
      {devs.size() <= 2 ? "all, optimum (exhaustive 1%)" : "all, optimum (exhaustive 2%)",
       sinew::balance::exhaustive(devs.size() <= 2 ? 0.01 : 0.02)}};
  for (const auto& [name, p] : balancers) {
    auto& c = cs.emplace_back();
    c.name = name;
    c.p = p;
    // Real devices are noisy: every distribution a search tries is timed on
    // two units and the times averaged ([Vinas17]'s default), so that a lucky
    // sample neither ends the iterative search early nor wins the sweep.
    // The steady state measures the split each balancer chose: stream
    // re-tuning stays off. With it on, noisy share times (a device given a
    // few rows takes microseconds, so its imbalance ratio swings widely)
    // would restart searches in the middle of the timed runs. Re-tuning has
    // its own tests.
    if (c.p.kind != sinew::balance_kind::fixed) c.p.repeats = 2, c.p.retune = false;
    c.m = sinew::multi_device_map(devs, c.p, {.cache = &c.cache});
  }
  for (auto& c : cs) c.g.emplace(*c.m);
  // Tuning first, on real units.
  for (std::size_t k = singles; k < cs.size(); ++k) {
    config& c = cs[k];
    double t0 = sb::now_seconds();
    for (int runs = 0; !sinew::device_stats(*c.m).tuned && runs < 20000; ++runs) {
      if (poison) poison();
      run_once(*c.g);
    }
    double tuning_s = sb::now_seconds() - t0;
    auto st = sinew::device_stats(*c.m);
    ctx.note(tag + c.name + ": tuned in " + std::to_string(st.tuning_executions) + " execution(s), " +
             sb::format_double(tuning_s * 1e3, 1) + " ms; weights " + split_of(st));
    if (!st.fits.empty()) {
      // The iterative search's fitted share times (fixed cost + per percent
      // of the unit), to tell a device dropped for its fixed cost.
      std::string f;
      for (std::size_t i = 0; i < st.fits.size(); ++i)
        f += (i ? ", " : "") + st.devices[i] + " " + sb::format_double(st.fits[i].fixed * 1e3, 3) + " ms + " +
             sb::format_double(st.fits[i].per_percent * 1e3, 4) + " ms/%";
      ctx.note(tag + c.name + ": fitted share times " + f);
    }
    if (c.p.kind == sinew::balance_kind::iterative) {
      // The search's path: each tuning execution's shares and share times.
      std::string path;
      for (const auto& u : st.recent) {
        if (!u.tuning) continue;
        const auto v = sinew::share_percent(u.shares);
        path += path.empty() ? "" : "; ";
        for (std::size_t i = 0; i < v.size(); ++i)
          path += (i ? " / " : "") + sb::format_double(v[i], 1) + "% " + sb::format_double(u.timings[i].total * 1e3, 3);
      }
      ctx.note(tag + c.name + ": path (share % and ms per device) " + path);
    }
    c.note = "tuned: " + std::to_string(st.tuning_executions) + " tuning execs";
  }
  // Then the steady state of every split, interleaved: each distinct split
  // on a fresh graph with its weights fixed, timed once -- configurations
  // that chose the same split are the same configuration from here on (a
  // split that gives one device the whole unit is that device alone: the
  // map posts its one share to the same device thread). Timing one split
  // twice only measures noise (two balancers with the same split can differ
  // by as much as the gap being measured on a noisy GPU).
  struct split {
    std::vector<double> w;
    sinew::balance_cache cache;
    std::optional<sinew::node> m;
    std::optional<sinew::graph> g;
    std::size_t timed = 0;  // its variant
  };
  std::deque<split> splits;
  std::vector<std::size_t> timed_of(cs.size());  // each configuration's variant
  std::vector<sinew::graph*> timed_graph;
  std::vector<const sinew::node*> timed_map;  // its map, for the steady-state note
  std::vector<std::string> timed_name, timed_note;
  for (std::size_t k = 0; k < singles; ++k) {
    timed_of[k] = k;
    timed_graph.push_back(&*cs[k].g), timed_map.push_back(&*cs[k].m);
    timed_name.push_back(cs[k].name), timed_note.push_back(cs[k].note);
  }
  for (std::size_t k = singles; k < cs.size(); ++k) {
    const std::vector<double> w = sinew::device_stats(*cs[k].m).weights;
    std::size_t only = devs.size(), used = 0;
    for (std::size_t i = 0; i < w.size(); ++i)
      if (w[i] > 0) only = i, ++used;
    std::optional<std::size_t> same;
    if (used == 1 && singles == devs.size()) same = only;
    for (auto& sp : splits)
      if (sp.w == w) same = sp.timed;
    if (same) {
      timed_of[k] = *same;
      timed_note[*same] += "; also " + cs[k].name + " (" + cs[k].note + ")";
      continue;
    }
    auto& sp = splits.emplace_back();
    sp.w = w;
    sp.m = sinew::multi_device_map(devs, sinew::balance::static_weights(w), {.cache = &sp.cache});
    sp.g.emplace(*sp.m);
    sp.timed = timed_of[k] = timed_graph.size();
    timed_graph.push_back(&*sp.g), timed_map.push_back(&*sp.m);
    timed_name.push_back(cs[k].name), timed_note.push_back(cs[k].note);
  }
  std::vector<sb::variant> vs;
  for (std::size_t j = 0; j < timed_graph.size(); ++j) {
    sinew::graph* g = timed_graph[j];
    vs.push_back({.name = tag + timed_name[j],
                  .unit = "ms/unit",
                  .better = sb::lower,
                  // One unit of the same configuration first, untimed: the
                  // timed unit then finds the devices as a stream of this
                  // configuration leaves them (a GPU that worked a moment ago),
                  // whatever ran before in the round.
                  .setup =
                      [&run_once, &poison, g] {
                        if (poison) poison();
                        run_once(*g);
                        if (poison) poison();
                      },
                  .run = [&run_once, g] { run_once(*g); },
                  .to_metric = [](double s) { return s * 1e3; },
                  .check = check,
                  .note = timed_note[j]});
  }
  const auto ser = ctx.measure_interleaved(vs);
  result_times r;
  double best_single = 1e300;
  std::size_t best = cs.size(), iterative = cs.size(), optimum = cs.size();  // indices into cs
  for (std::size_t k = 0; k < cs.size(); ++k) {
    const sb::series& s = *ser[timed_of[k]];
    if (!s.stats.n) continue;
    if (k < singles) {
      if (s.time.median < best_single) best_single = s.time.median, best = k;
      continue;
    }
    const std::size_t t = timed_of[k];
    ctx.note(tag + cs[k].name + ": " + (timed_name[t] != cs[k].name ? "timed as '" + timed_name[t] + "'; " : std::string()) +
             steady_state(sinew::device_stats(*timed_map[t]), std::size_t(ctx.reps())));
    if (cs[k].p.kind == sinew::balance_kind::iterative) iterative = k;
    if (cs[k].p.kind == sinew::balance_kind::exhaustive && cs[k].p.step < 0.03) optimum = k;
  }
  auto times = [&](std::size_t k) -> const std::vector<double>& { return ser[timed_of[k]]->seconds; };
  if (iterative < cs.size()) r.iterative_split = split_of(sinew::device_stats(*cs[iterative].m));
  if (iterative < cs.size() && optimum < cs.size()) {
    r.optimum_vs_iterative = paired_median(times(optimum), times(iterative));
    r.optimum_same = timed_of[optimum] == timed_of[iterative];
    r.optimum_split = split_of(sinew::device_stats(*cs[optimum].m));
  }
  if (iterative < cs.size() && best < cs.size()) {
    r.single_vs_iterative = paired_median(times(best), times(iterative));
    r.single_same = timed_of[best] == timed_of[iterative];
    r.best_single = devs[best]->name();
  }
  return r;
}

/// The RATIO lines of one workload: iterative vs the optimum and, with
/// `vs_single`, all devices vs the best single one. A line whose two sides
/// are one timed configuration (both chose the same split) is 1.0 by
/// construction: informational, with the chosen split beside it.
void report(sb::context& ctx, const result_times& r, const std::string& key, const std::string& what, bool vs_single) {
  if (r.optimum_vs_iterative > 0) {
    const std::string info = what + paired_info + "; iterative chose " + r.iterative_split + ", the optimum " +
                             r.optimum_split;
    if (r.optimum_same)
      ctx.informational_ratio("multidevice_" + key + "_iterative_vs_optimum", r.optimum_vs_iterative, 0.95, sb::higher,
                              "both chose the same split (" + r.iterative_split + "): one timed configuration", info);
    else
      ctx.ratio("multidevice_" + key + "_iterative_vs_optimum", r.optimum_vs_iterative, 0.95, sb::higher, info);
  }
  if (vs_single && r.single_vs_iterative > 0) {
    const std::string info = "t(best single device) / t(all devices, iterative), median of paired rounds; best single " +
                             r.best_single + ", iterative chose " + r.iterative_split;
    if (r.single_same)
      ctx.informational_ratio("multidevice_" + key + "_all_vs_best_single", r.single_vs_iterative, 1.0, sb::higher,
                              "iterative gave the whole unit to the best single device (" + r.best_single +
                                  "): one timed configuration",
                              info);
    else
      ctx.ratio("multidevice_" + key + "_all_vs_best_single", r.single_vs_iterative, 1.0, sb::higher, info);
  }
}

// ------------------------------------------------------------------ series

void run_series(sb::context& ctx) {
  const std::size_t n = ctx.quick() ? 1000 : 10000;
  ctx.param("coefficients", n);
  testbed tb;
  ctx.note(tb.what());
  dev_list devs = devices_for(tb, wl::series{1000}, {.min_task = 1},
                              kernel("series.cl", "series", {cl::arg::output<wl::coeff>(), cl::arg::scalar<int>(1000), cl::arg::count()}));
  std::vector<std::vector<wl::coeff>> out;
  const std::vector<wl::coeff> ref = wl::series_reference(n);
  auto run_once = [&](sinew::graph& g) { g.run(wl::series_source(n), sinew::into(out)).get(); };
  auto check = [&]() -> std::string {
    if (out.size() != 1 || out[0].size() != n) return "series: no result";
    // OpenCL's pow/cos/sin may differ in the last bits from the C++ leaf's.
    auto close = [](double x, double y) { return std::fabs(x - y) <= 1e-12 * std::fabs(y) + 1e-14; };
    for (std::size_t i = 0; i < n; ++i)
      if (!close(out[0][i].a, ref[i].a) || !close(out[0][i].b, ref[i].b))
        return "series coefficient " + std::to_string(i) + " differs from the sequential reference";
    return {};
  };
  report(ctx, drive(ctx, "", devs, run_once, check, [&] { out.clear(); }), "series", "", true);
}

// ------------------------------------------------------------------- saxpy

void run_saxpy(sb::context& ctx) {
  const std::size_t n = ctx.quick() ? 4'000'000 : 32'000'000;
  ctx.param("elements", n);
  testbed tb;
  ctx.note(tb.what());
  const float a = 2.5f;
  dev_list devs = devices_for(tb, wl::saxpy{a}, {},
                              kernel("saxpy.cl", "saxpy",
                                     {cl::arg::input<float>(), cl::arg::input<float>(), cl::arg::output<float>(),
                                      cl::arg::scalar(a), cl::arg::count()}));
  wl::saxpy_inputs in = wl::make_saxpy_inputs(n, 7);
  std::vector<float> z(n);
  auto run_once = [&](sinew::graph& g) { g.run(sinew::from_arrays(in.x, in.y), sinew::into_arrays(z)).get(); };
  auto check = [&]() -> std::string {
    for (std::size_t k = 0; k <= 1000; ++k) {
      std::size_t i = k == 1000 ? n - 1 : k * (n / 1000);
      if (z[i] != a * in.x[i] + in.y[i]) return "z[" + std::to_string(i) + "] is wrong";
    }
    return {};
  };
  report(ctx, drive(ctx, "", devs, run_once, check, [&] { std::fill(z.begin(), z.end(), -7.0f); }), "saxpy", "", false);
}

// -------------------------------------------------------------- unbalanced

void run_unbalanced(sb::context& ctx) {
  // Big enough that a unit's fixed costs (launch, transfers' latency, waking
  // the device thread) are small beside its work on every split: a unit of
  // a fraction of a millisecond makes the balancers compare noise.
  // 1024x1024 costs the host alone ~90 ms at 100% on 16 cores.
  const std::size_t side = ctx.smoke() ? 64 : ctx.quick() ? 256 : 1024;
  const std::size_t rows = side, cols = side;
  ctx.param("matrix", std::to_string(rows) + "x" + std::to_string(cols));
  testbed tb;
  ctx.note(tb.what() + "; zeros in the top rows");
  dev_list devs = devices_for(tb, sb::unbalanced{}, {},
                              kernel("unbalanced.cl", "unbalanced",
                                     {cl::arg::input<float>(), cl::arg::output<float>(), cl::arg::cols(), cl::arg::rows()}));
  sinew::array<float, 2> m(sinew::shape::d2(rows, cols)), out(sinew::shape::d2(rows, cols));
  for (int pct : {0, 25, 50, 75, 100}) {
    sb::fill_unbalanced(m, pct / 100.0);
    auto run_once = [&](sinew::graph& g) { g.run(sinew::from_arrays(m), sinew::into_arrays(out)).get(); };
    auto check = [&]() -> std::string {
      sb::unbalanced f;
      for (std::size_t r = 0; r < rows; r += 7)
        for (std::size_t c = 0; c < cols; c += 13) {
          float want;
          f(m(r, c), &want);
          if (out(r, c) != want) return "out(" + std::to_string(r) + ", " + std::to_string(c) + ") is wrong";
        }
      return {};
    };
    const std::string tag = "nz " + std::to_string(pct) + "%: ";
    report(ctx, drive(ctx, tag, devs, run_once, check, [&] { std::fill(out.data(), out.data() + out.shape().count(), -1.0f); }),
           "unbalanced_" + std::to_string(pct), "non-zero fraction " + std::to_string(pct) + "%: ", false);
  }
}

const sb::registrar reg_series("multidevice_series",
                               "Series (10000 coefficients, quick 1000) split over several devices: each device "
                               "alone, every balancer, the exhaustive 1% optimum",
                               run_series);
const sb::registrar reg_saxpy("multidevice_saxpy",
                              "saxpy (32M floats, quick 4M) split over several devices: each device alone, every "
                              "balancer, the exhaustive 1% optimum",
                              run_saxpy);
const sb::registrar reg_unbalanced("multidevice_unbalanced",
                                   "Vinas17's unbalanced kernel (non-zero fraction 0/25/50/75/100%, zeros on top) "
                                   "split over several devices under every balancer vs the exhaustive 1% optimum",
                                   run_unbalanced);

}  // namespace
