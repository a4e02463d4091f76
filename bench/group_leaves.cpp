// group_leaves: OpenCL-style kernels (work-groups, local memory, barriers)
// as Sinew group leaves vs the same kernels (graphs/kernels/*.cl) on PoCL,
// and the work-item orders of the group leaf: depth-first, breadth-first,
// the order the stride rule of [Kim15, §3.2] picks from the declared strides, and the
// order measured on the first groups.
//
// RATIO lines per kernel:
//   group_leaves.<k>.pocl_over_group    PoCL time / group leaf time (declared order)
//   group_leaves.<k>.chosen_over_worse  chosen-order time / slower of DF and BF (<= 1 + noise)
//   group_leaves.<k>.other_over_chosen  the order not chosen / the chosen one (how much it wins)
//   group_leaves.<k>.measured_over_best measured-order time / faster of DF and BF
// The variants of a kernel run interleaved (each round runs every variant
// once); each ratio is the median of the round-by-round ratios, and its
// info gives their middle half (the noise). A note per kernel gives the
// paired ratio of two variants running the same code (declared vs the
// forced order the rule picks): the noise floor of the machine.
#include <algorithm>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "group_examples.hpp"
#include "group_opencl.hpp"
#include <sinew/skeletons/group_kernel.hpp>
#include <sinew/sinew.hpp>

#include "bench.hpp"

namespace {

namespace sb = sinew_bench;
using namespace sinew::group_examples;
using sinew::order_policy;

/// Each work-item sums its own row: x[row * K + k] has loop stride 1 and a
/// large work-item stride (WX L1), so the rule picks depth-first. A
/// counterweight to the four examples, whose loops prefer breadth-first.
struct RowSum {
  std::size_t cols = 256;
  static constexpr std::array<sinew::mem_access, 1> accesses{sinew::mem_access{1, sinew::mem_access::any_stride}};
  sinew::range global_range(const sinew::shape& in) const { return sinew::range1d{in.count() / cols}; }
  sinew::shape output_shape(const sinew::shape& in, const sinew::range&) const {
    return sinew::shape::d1(in.count() / cols);
  }
  void operator()(sinew::group& g, sinew::in<float> x, sinew::out<float> y) const {
    auto acc = g.per_item<float>();
    const std::size_t K = cols;
    g.loop(K, accesses, acc, [&](const sinew::item& it, std::size_t k, float& sum) {
      if (it.in_range()) sum += x[it.g[0] * K + k];
    });
    g.each([&](const sinew::item& it) {
      if (it.in_range()) y[it.g[0]] = acc[it];
    });
  }
};

/// One kernel of the benchmark: how to build its leaf, run it, run it on
/// PoCL, and check the outputs of both.
struct kernel_case {
  std::string name;
  sinew::item_order rule;  ///< what the declared strides pick (outermost loop level)
  std::function<sinew::node(order_policy)> leaf;
  std::function<void(sinew::graph&)> run;  ///< one run of a graph built from `leaf`
  std::function<std::string()> check;      ///< after a run: "" when the output is right
  std::function<void()> poison;            ///< before a run: spoil the output
  std::function<void()> run_cl = nullptr;  ///< null: no OpenCL version
  std::function<std::string()> check_cl = nullptr;
  std::function<void()> poison_cl = nullptr;
};

const char* order_name(sinew::item_order o) {
  return o == sinew::item_order::depth_first ? "depth-first" : "breadth-first";
}

/// Quantile q of `v` (nearest rank).
double quantile(std::vector<double> v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[std::size_t(q * double(v.size() - 1) + 0.5)];
}

/// Round-by-round ratio a[i] / b[i] of two interleaved series.
std::vector<double> paired(const sb::series& a, const sb::series& b) {
  std::vector<double> r;
  sb::append_round_ratios(a.seconds, b.seconds, r);
  return r;
}

/// "median of 15 paired rounds, middle half 0.97-1.02".
std::string spread_info(const std::vector<double>& r) {
  return "median of " + std::to_string(r.size()) + " paired rounds, middle half " + sb::format_double(quantile(r, 0.25), 3) +
         "-" + sb::format_double(quantile(r, 0.75), 3);
}

void measure_case(sb::context& ctx, kernel_case& kc) {
  auto ms = [](double s) { return s * 1e3; };
  auto leaf = [&](const std::string& variant, order_policy p) {
    auto g = std::make_shared<sinew::graph>(kc.leaf(p));
    return sb::variant{.name = kc.name + " " + variant,
                       .unit = "ms",
                       .better = sb::lower,
                       .setup = kc.poison,
                       .run = [&kc, g] { kc.run(*g); },
                       .to_metric = ms,
                       .check = kc.check,
                       .note = ""};
  };
  std::vector<sb::variant> vs{leaf("group/declared (" + std::string(order_name(kc.rule)) + ")", order_policy::declared),
                              leaf("group/depth-first", order_policy::depth_first),
                              leaf("group/breadth-first", order_policy::breadth_first),
                              leaf("group/measured", order_policy::measured)};
  if (kc.run_cl)
    vs.push_back({.name = kc.name + " pocl",
                  .unit = "ms",
                  .better = sb::lower,
                  .setup = kc.poison_cl,
                  .run = kc.run_cl,
                  .to_metric = ms,
                  .check = kc.check_cl,
                  .note = "graphs/kernels, USE_HOST_PTR buffers"});
  // Interleaved rounds: every round runs each variant once, so the ratios
  // below compare runs made moments apart (paired), and their spread over
  // the rounds is the noise of the comparison.
  auto s = ctx.measure_interleaved(vs);
  const sb::series &chosen = *s[0], &df = *s[1], &bf = *s[2], &measured = *s[3];
  const sb::series* cl = kc.run_cl ? s[4] : nullptr;
  if (chosen.stats.n == 0 || df.stats.n == 0 || bf.stats.n == 0) return;  // --variant filter: no ratios
  const bool df_worse = df.time.median >= bf.time.median;  // the slower order, over all rounds
  const sb::series& worse = df_worse ? df : bf;
  const sb::series& better = df_worse ? bf : df;
  const sb::series& same = kc.rule == sinew::item_order::depth_first ? df : bf;   // what the rule runs
  const sb::series& other = kc.rule == sinew::item_order::depth_first ? bf : df;  // the order not chosen
  const std::string k = "group_leaves." + kc.name;
  auto r = paired(chosen, worse);
  ctx.ratio(k + ".chosen_over_worse", sb::summarize(r).median, 1.05, sb::lower,
            std::string("declared-order time / slower order (") + (df_worse ? "depth-first" : "breadth-first") + "), " +
                spread_info(r));
  r = paired(other, chosen);
  ctx.ratio(k + ".other_over_chosen", sb::summarize(r).median, 1.0, sb::higher,
            std::string("order not chosen / chosen (") + order_name(kc.rule) + "), " + spread_info(r));
  if (measured.stats.n) {
    r = paired(measured, better);
    ctx.ratio(k + ".measured_over_best", sb::summarize(r).median, 1.10, sb::lower,
              std::string("measured-order time / faster order (") + (df_worse ? "breadth-first" : "depth-first") + "), " +
                  spread_info(r));
  }
  if (cl && cl->stats.n) {
    r = paired(*cl, chosen);
    ctx.ratio(k + ".pocl_over_group", sb::summarize(r).median, 1.0, sb::higher,
              "PoCL kernel time / group leaf time (declared order), " + spread_info(r));
  }
  // Noise floor: the declared variant runs the same positions as the forced
  // order the rule picks, i.e. the same code; their paired ratio should be 1.
  r = paired(chosen, same);
  ctx.note(kc.name + ": same code (declared vs forced " + order_name(kc.rule) + ") paired ratio " +
           sb::format_double(sb::summarize(r).median, 3) + ", " + spread_info(r));
}

/// "" if `got` holds the values of `want`, else where it differs.
template <class A, class B>
std::string compare(const A& got, const B& want, const char* what) {
  if (std::size_t(got.end() - got.begin()) != want.size()) return std::string(what) + ": wrong size";
  for (std::size_t i = 0; i < want.size(); ++i)
    if (!(got.begin()[i] == want[i])) return std::string(what) + ": wrong value at " + std::to_string(i);
  return {};
}

float small_value(std::size_t i) { return float(int((i * 7 + 3) % 9) - 4); }

void run(sb::context& ctx) {
  const bool q = ctx.quick();
  const std::size_t mm_n = q ? 256 : 768, tile = 16;
  const std::size_t red_n = q ? (4u << 20) : (32u << 20), red_l = 256, red_per = 16;
  const std::size_t bins = 256;
  const std::size_t st_n = q ? 1024 : 4096, st_ly = 16, st_lx = 16;
  const std::size_t rs_rows = q ? 16384 : 131072, rs_cols = 256, rs_l = 64;
  ctx.param("threads", sb::thread_count());
  ctx.param("tiled_mm", std::to_string(mm_n) + "^2, tile " + std::to_string(tile));
  ctx.param("tree_reduce", std::to_string(red_n) + " ints, local " + std::to_string(red_l) + ", per item " +
                               std::to_string(red_per));
  ctx.param("histogram", std::to_string(red_n) + " uints, " + std::to_string(bins) + " bins, local " +
                             std::to_string(red_l) + ", per item " + std::to_string(red_per));
  ctx.param("stencil_tile", std::to_string(st_n) + "^2, local 16x16");
  ctx.param("row_sum", std::to_string(rs_rows) + " x " + std::to_string(rs_cols) + ", local " + std::to_string(rs_l));

  std::string why;
  std::optional<sinew_support::group_cl> cl;
  try {
    cl = sinew_support::group_cl::open(sinew_support::kernel_dir(), why);
  } catch (const std::exception& e) {
    why = e.what();
  }
  if (cl) ctx.param("opencl_device", cl->device_name());
  else ctx.note("PoCL comparison skipped: " + why);

  // ---- data (small integers: every result is exact, so all variants must agree bit for bit)
  sinew::array<float, 2> a(sinew::shape::d2(mm_n, mm_n)), b(sinew::shape::d2(mm_n, mm_n)), c;
  for (std::size_t i = 0; i < a.size(); ++i) a[i] = small_value(i), b[i] = small_value(i + 5);
  std::vector<std::int32_t> rx(red_n), partial;
  std::vector<std::uint32_t> hx(red_n);
  for (std::size_t i = 0; i < red_n; ++i) rx[i] = std::int32_t(i % 37) - 18, hx[i] = std::uint32_t(i * 2654435761u >> 8);
  sinew::array<std::uint32_t, 2> hist;
  sinew::array<float, 2> src(sinew::shape::d2(st_n, st_n)), dst;
  for (std::size_t i = 0; i < src.size(); ++i) src[i] = small_value(i);
  std::vector<float> rs_x(rs_rows * rs_cols), rs_y;
  for (std::size_t i = 0; i < rs_x.size(); ++i) rs_x[i] = small_value(i);

  // References: one run of each leaf in the declared order; every variant,
  // PoCL included, must reproduce them exactly.
  std::vector<float> mm_ref, st_ref, rs_ref;
  std::vector<std::int32_t> red_ref;
  std::vector<std::uint32_t> hist_ref;
  std::vector<kernel_case> cases;
  // Rules as group::loop applies them: a carried accumulator counts as an
  // L0 W1 access (tiled_mm, tree_reduce and row_sum carry one).
  cases.push_back({"tiled_mm", sinew::choose_order(TiledMM::accesses, 1),
                   [&](order_policy p) { return sinew::group_kernel<TiledMM>(sinew::range2d{tile, tile}, {}, {.order = p}); },
                   [&](sinew::graph& g) { g.run(sinew::from_arrays(a, b), sinew::into_arrays(c)).get(); },
                   [&] { return compare(c, mm_ref, "tiled_mm"); }, [&] { std::fill(c.begin(), c.end(), -1.0f); }});
  cases.push_back({"tree_reduce", sinew::choose_order(TreeReduce::accesses, 1),
                   [&](order_policy p) {
                     return sinew::group_kernel<TreeReduce>(sinew::range1d{red_l}, TreeReduce{red_per}, {.order = p});
                   },
                   [&](sinew::graph& g) { g.run(sinew::from_arrays(rx), sinew::into_arrays(partial)).get(); },
                   [&] { return compare(partial, red_ref, "tree_reduce"); },
                   [&] { std::fill(partial.begin(), partial.end(), -1); }});
  cases.push_back({"histogram", sinew::choose_order(Histogram::accesses),
                   [&](order_policy p) {
                     return sinew::group_kernel<Histogram>(sinew::range1d{red_l}, Histogram{bins, red_per}, {.order = p});
                   },
                   [&](sinew::graph& g) { g.run(sinew::from_arrays(hx), sinew::into_arrays(hist)).get(); },
                   [&] { return compare(hist, hist_ref, "histogram"); },
                   [&] { std::fill(hist.begin(), hist.end(), 0xffffffffu); }});
  // The 3x3 nest is short enough to be unrolled: depth-first under the
  // default unroll_limit [Kim15, §4.2], whatever Table 1 says of it.
  cases.push_back({"stencil_tile", sinew::item_order::depth_first,
                   [&](order_policy p) {
                     return sinew::group_kernel<StencilTile>(sinew::range2d{st_ly, st_lx}, {}, {.order = p});
                   },
                   [&](sinew::graph& g) { g.run(sinew::from_arrays(src), sinew::into_arrays(dst)).get(); },
                   [&] { return compare(dst, st_ref, "stencil_tile"); },
                   [&] { std::fill(dst.begin(), dst.end(), -1.0f); }});
  cases.push_back({"row_sum", sinew::choose_order(RowSum::accesses, 1),
                   [&](order_policy p) {
                     return sinew::group_kernel<RowSum>(sinew::range1d{rs_l}, RowSum{rs_cols}, {.order = p});
                   },
                   [&](sinew::graph& g) { g.run(sinew::from_arrays(rs_x), sinew::into_arrays(rs_y)).get(); },
                   [&] { return compare(rs_y, rs_ref, "row_sum"); },
                   [&] { std::fill(rs_y.begin(), rs_y.end(), -1.0f); }});
  auto ref = [&](kernel_case& kc) {
    sinew::graph g(kc.leaf(order_policy::declared));
    kc.run(g);
  };
  ref(cases[0]), mm_ref.assign(c.begin(), c.end());
  ref(cases[1]), red_ref = partial;
  ref(cases[2]), hist_ref.assign(hist.begin(), hist.end());
  ref(cases[3]), st_ref.assign(dst.begin(), dst.end());
  ref(cases[4]), rs_ref = rs_y;

  // PoCL: its own output arrays (wrapped with USE_HOST_PTR: never resized).
  std::vector<float> c_cl(mm_n * mm_n), dst_cl(st_n * st_n);
  std::vector<std::int32_t> partial_cl(red_ref.size());
  std::vector<std::uint32_t> hist_cl(hist_ref.size());
  if (cl) {
    try {
      auto l_mm = std::make_shared<sinew_support::group_cl::launch>(cl->tiled_mm(a.data(), b.data(), c_cl.data(), mm_n, tile));
      auto l_red = std::make_shared<sinew_support::group_cl::launch>(
          cl->tree_reduce(rx.data(), partial_cl.data(), red_n, red_l, red_per));
      auto l_hist = std::make_shared<sinew_support::group_cl::launch>(
          cl->histogram(hx.data(), hist_cl.data(), red_n, red_l, red_per, bins));
      auto l_st = std::make_shared<sinew_support::group_cl::launch>(
          cl->stencil_tile(src.data(), dst_cl.data(), st_n, st_n, st_ly, st_lx));
      cases[0].run_cl = [l_mm] { l_mm->run(); };
      cases[0].check_cl = [&] { return compare(c_cl, mm_ref, "tiled_mm on PoCL"); };
      cases[0].poison_cl = [&] { std::fill(c_cl.begin(), c_cl.end(), -1.0f); };
      cases[1].run_cl = [l_red] { l_red->run(); };
      cases[1].check_cl = [&] { return compare(partial_cl, red_ref, "tree_reduce on PoCL"); };
      cases[1].poison_cl = [&] { std::fill(partial_cl.begin(), partial_cl.end(), -1); };
      cases[2].run_cl = [l_hist] { l_hist->run(); };
      cases[2].check_cl = [&] { return compare(hist_cl, hist_ref, "histogram on PoCL"); };
      cases[2].poison_cl = [&] { std::fill(hist_cl.begin(), hist_cl.end(), 0xffffffffu); };
      cases[3].run_cl = [l_st] { l_st->run(); };
      cases[3].check_cl = [&] { return compare(dst_cl, st_ref, "stencil_tile on PoCL"); };
      cases[3].poison_cl = [&] { std::fill(dst_cl.begin(), dst_cl.end(), -1.0f); };
    } catch (const std::exception& e) {
      ctx.error(std::string("PoCL launch setup failed: ") + e.what());
    }
  }
  for (auto& kc : cases) measure_case(ctx, kc);
  ctx.note("chosen = the order Kim15's rule picks from the declared strides; measured = the order timed on the "
           "first work-groups (24 or more, medians; calibration runs in the warm-up), kept only if it beats the declared "
           "one by more than noise; variants run interleaved, ratios are medians of paired rounds; PoCL runs on its own "
           "threads (POCL_MAX_PTHREAD_COUNT limits them)");
}

const sb::registrar reg("group_leaves",
                        "OpenCL-style group kernels as Sinew leaves vs PoCL; depth-first vs breadth-first vs chosen order",
                        run);

}  // namespace
