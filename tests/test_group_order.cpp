// Group kernels' order of work-items: the order rule of [Kim15] (Table 1,
// ties, nesting), the order loops run in under each policy, divergence, and
// the measured policy's calibration (results and composition are in
// test_group_kernel.cpp).
#include <catch2/catch.hpp>

#include "group_examples.hpp"
#include <sinew/skeletons/group_kernel.hpp>
#include <sinew/sinew.hpp>

#include <algorithm>
#include <array>
#include <cstdint>
#include <numeric>
#include <utility>
#include <vector>

using namespace sinew;
using namespace sinew::group_examples;

namespace {

// Records the order in which one group runs its loop bodies.
struct order_log {
  std::vector<std::array<std::size_t, 3>>* log;  // (local id, k0, k1)
  std::size_t n = 3;
  int mode = 0;  // 0: loop, 1: nest, 2: divergent loop (item i runs i iterations), 3: loop_where (odd items),
                // 4: loop declaring `declared`, 5: carried loop with one BFO access, 6: carried loop with two
  std::array<mem_access, 1> declared{};
  static constexpr std::array<mem_access, 1> prefers_bf{mem_access{1, 0}};  // W0 L1
  static constexpr std::array<mem_access, 1> prefers_df{mem_access{0, 1}};  // W1 L0
  static constexpr std::array<mem_access, 2> two_bf{mem_access{1, 0}, mem_access{9, 1}};

  void operator()(group& g, in<int> x, out<int> y) const {
    (void)x;
    auto rec = [this](const item& it, std::size_t k0, std::size_t k1) { log->push_back({it.lin, k0, k1}); };
    if (mode == 0) g.loop(n, prefers_bf, [&](const item& it, std::size_t k) { rec(it, k, 0); });
    if (mode == 1)
      g.loop({n, n}, prefers_df, prefers_bf, [&](const item& it, std::size_t a, std::size_t b) { rec(it, a, b); });
    if (mode == 2)
      g.loop(n, prefers_bf, [&](const item& it, std::size_t k) {
        if (k >= it.lin) return false;
        rec(it, k, 0);
        return true;
      });
    if (mode == 3)
      g.loop_where([](const item& it) { return it.lin % 2 == 1; }, n, prefers_bf,
                   [&](const item& it, std::size_t k) { rec(it, k, 0); });
    if (mode == 4) g.loop(n, declared, [&](const item& it, std::size_t k) { rec(it, k, 0); });
    auto carry = g.per_item<int>();
    if (mode == 5) g.loop(n, prefers_bf, carry, [&](const item& it, std::size_t k, int&) { rec(it, k, 0); });
    if (mode == 6) g.loop(n, two_bf, carry, [&](const item& it, std::size_t k, int&) { rec(it, k, 0); });
    g.each([&](const item& it) {
      if (it.in_range()) y[it.g[0]] = int(it.lin);
    });
  }
};

std::vector<std::array<std::size_t, 3>> run_logged(int mode, std::size_t items, order_policy p,
                                                   mem_access declared = {}, std::size_t n = 3,
                                                   std::size_t unroll_limit = 0) {
  std::vector<std::array<std::size_t, 3>> log;
  std::vector<int> x(items, 0), y;
  graph g(group_kernel<order_log>(range1d{items}, order_log{&log, n, mode, {declared}},
                                  {.order = p, .unroll_limit = unroll_limit}));
  g.run(from_arrays(x), into_arrays(y)).get();
  return log;
}

std::vector<std::array<std::size_t, 3>> depth_first_order(std::size_t items, std::size_t n) {
  std::vector<std::array<std::size_t, 3>> v;
  for (std::size_t i = 0; i < items; ++i)
    for (std::size_t k = 0; k < n; ++k) v.push_back({i, k, 0});
  return v;
}
std::vector<std::array<std::size_t, 3>> breadth_first_order(std::size_t items, std::size_t n) {
  std::vector<std::array<std::size_t, 3>> v;
  for (std::size_t k = 0; k < n; ++k)
    for (std::size_t i = 0; i < items; ++i) v.push_back({i, k, 0});
  return v;
}

}  // namespace

TEST_CASE("group order rule picks the order of Table 1 of Kim15", "[group]") {
  using O = item_order;
  // Rows: loop stride 0, 1, other; columns: work-item stride 0, 1, other.
  const long s[3] = {0, 1, 5};
  const preference table[3][3] = {{preference::none, preference::depth_first, preference::depth_first},
                                  {preference::breadth_first, preference::none, preference::depth_first},
                                  {preference::breadth_first, preference::breadth_first, preference::none}};
  for (int l = 0; l < 3; ++l)
    for (int w = 0; w < 3; ++w) {
      INFO("loop stride " << s[l] << ", item stride " << s[w]);
      CHECK(prefers(mem_access{s[l], s[w]}) == table[l][w]);
      // One access alone: its preference, and depth-first where it has none.
      CHECK(choose_order({mem_access{s[l], s[w]}}) == (table[l][w] == preference::breadth_first ? O::breadth_first : O::depth_first));
    }
  CHECK(classify_stride(-1) == stride_class::one);
  CHECK(classify_stride(mem_access::any_stride) == stride_class::other);
  // Table 2 examples: arr[k] (W0L1), arr[f(k)] (W0LX), arr[f(k)+wid] (W1LX) prefer BFO;
  // arr[wid] (W1L0), arr[f(wid)] (WXL0), arr[f(wid)+k] (WXL1) prefer DFO.
  CHECK(choose_order({mem_access{1, 0}}) == O::breadth_first);
  CHECK(choose_order({mem_access{9, 0}}) == O::breadth_first);
  CHECK(choose_order({mem_access{9, 1}}) == O::breadth_first);
  CHECK(choose_order({mem_access{0, 1}}) == O::depth_first);
  CHECK(choose_order({mem_access{0, 9}}) == O::depth_first);
  CHECK(choose_order({mem_access{1, 9}}) == O::depth_first);
  // Tally: majority wins, a tie goes to depth-first, neutral accesses do not count.
  CHECK(choose_order({mem_access{1, 0}, mem_access{9, 1}, mem_access{0, 1}}) == O::breadth_first);
  CHECK(choose_order({mem_access{1, 0}, mem_access{0, 1}}) == O::depth_first);
  CHECK(choose_order({mem_access{1, 0}, mem_access{0, 1}, mem_access{1, 1}, mem_access{9, 9}}) == O::depth_first);
  CHECK(choose_order({}) == O::depth_first);
  // Nesting: an inner breadth-first loop makes the loops around it breadth-first.
  CHECK(nest_position<2>({O::depth_first, O::depth_first}) == 0);
  CHECK(nest_position<2>({O::breadth_first, O::depth_first}) == 1);
  CHECK(nest_position<2>({O::depth_first, O::breadth_first}) == 2);
  CHECK(nest_position<2>({O::breadth_first, O::breadth_first}) == 2);
  // The example kernels' declared loops.
  CHECK(choose_order(TiledMM::accesses) == O::breadth_first);
  CHECK(choose_order(TreeReduce::accesses) == O::breadth_first);
  // ... counting their carried accumulators (L0 W1): tiled_mm stays BFO, the reduction ties -> DFO.
  CHECK(choose_order(TiledMM::accesses, 1) == O::breadth_first);
  CHECK(choose_order(TreeReduce::accesses, 1) == O::depth_first);
  CHECK(choose_order({mem_access{1, 0}}, 2) == O::depth_first);
  CHECK(choose_order(Histogram::accesses) == O::breadth_first);
  CHECK(nest_position<2>({choose_order(StencilTile::dy_accesses), choose_order(StencilTile::dx_accesses)}) == 2);
}

TEST_CASE("group loops run work-items in the order the policy picks", "[group]") {
  const std::size_t items = 4, n = 3;
  auto df = depth_first_order(items, n), bf = breadth_first_order(items, n);
  // A kernel declaring one access of each class of Table 1 runs in the order the table gives.
  const long strides[3] = {0, 1, 7};
  const bool table_bf[3][3] = {{false, false, false}, {true, false, false}, {true, true, false}};
  for (int l = 0; l < 3; ++l)
    for (int w = 0; w < 3; ++w) {
      INFO("loop stride " << strides[l] << ", item stride " << strides[w]);
      CHECK(run_logged(4, items, order_policy::declared, mem_access{strides[l], strides[w]}) == (table_bf[l][w] ? bf : df));
    }
  CHECK(run_logged(0, items, order_policy::depth_first) == df);
  CHECK(run_logged(0, items, order_policy::breadth_first) == bf);
  CHECK(run_logged(0, items, order_policy::declared) == bf);  // the loop declares a W0 L1 access
  // A carried value is an L0 W1 access when run breadth-first: it ties one
  // breadth-first access (depth-first wins), not two.
  CHECK(run_logged(5, items, order_policy::declared) == df);
  CHECK(run_logged(6, items, order_policy::declared) == bf);
  CHECK(run_logged(5, items, order_policy::breadth_first) == bf);

  // A 2-deep nest: outer declared depth-first, inner breadth-first -> both breadth-first.
  std::vector<std::array<std::size_t, 3>> nest_df, nest_bf;
  for (std::size_t i = 0; i < items; ++i)
    for (std::size_t a = 0; a < n; ++a)
      for (std::size_t b = 0; b < n; ++b) nest_df.push_back({i, a, b});
  for (std::size_t a = 0; a < n; ++a)
    for (std::size_t b = 0; b < n; ++b)
      for (std::size_t i = 0; i < items; ++i) nest_bf.push_back({i, a, b});
  CHECK(run_logged(1, items, order_policy::depth_first) == nest_df);
  CHECK(run_logged(1, items, order_policy::breadth_first) == nest_bf);
  CHECK(run_logged(1, items, order_policy::declared) == nest_bf);

  // Loops short enough to be unrolled run depth-first under the declared
  // policy [Kim15, §4.2], whatever their strides; forced orders still apply.
  const mem_access prefers_bf{1, 0};
  CHECK(run_logged(4, items, order_policy::declared, prefers_bf, 3, 4) == depth_first_order(items, 3));
  CHECK(run_logged(4, items, order_policy::declared, prefers_bf, 5, 4) == breadth_first_order(items, 5));
  CHECK(run_logged(4, items, order_policy::breadth_first, prefers_bf, 3, 4) == breadth_first_order(items, 3));
  CHECK(run_logged(1, items, order_policy::declared, {}, 3, 4) == nest_df);
}

TEST_CASE("group loops handle divergence with a predicate per work-item", "[group]") {
  const std::size_t items = 5, n = 3;
  // Work-item i leaves the loop at iteration i (items 3 and 4 run all 3).
  std::vector<std::array<std::size_t, 3>> df, bf;
  for (std::size_t i = 0; i < items; ++i)
    for (std::size_t k = 0; k < std::min(i, n); ++k) df.push_back({i, k, 0});
  for (std::size_t k = 0; k < n; ++k)
    for (std::size_t i = 0; i < items; ++i)
      if (k < i) bf.push_back({i, k, 0});
  CHECK(run_logged(2, items, order_policy::depth_first) == df);
  CHECK(run_logged(2, items, order_policy::breadth_first) == bf);
  // A loop in a branch only odd work-items take.
  std::vector<std::array<std::size_t, 3>> odd_df, odd_bf;
  for (std::size_t i = 1; i < items; i += 2)
    for (std::size_t k = 0; k < n; ++k) odd_df.push_back({i, k, 0});
  for (std::size_t k = 0; k < n; ++k)
    for (std::size_t i = 1; i < items; i += 2) odd_bf.push_back({i, k, 0});
  CHECK(run_logged(3, items, order_policy::depth_first) == odd_df);
  CHECK(run_logged(3, items, order_policy::breadth_first) == odd_bf);
  // Every work-item leaves at once (item 0): the breadth-first loop stops early.
  CHECK(run_logged(2, 1, order_policy::breadth_first).empty());
}

TEST_CASE("group measured policy keeps the fastest median order beyond noise, else the declared one", "[group]") {
  using P = detail::group_plan;
  static const char a = 0, b = 0, c = 0, d = 0, e = 0;
  P p;
  // Nine groups; candidates take turns (loops: 0 1 0 1 ..., nest c: 0 1 2 0 1 2 ...).
  // The first sample of each loop candidate is an outlier (a cold group),
  // and nest c has one more: medians ignore them.
  for (unsigned g = 0; g < 9; ++g) {
    const std::uint64_t cold = g < 2 ? 5000 : 0;
    p.record(&a, 1, 0, g % 2, g % 2 ? 600 + cold : 1000);  // loop a: breadth-first 40 % faster -> 1
    p.record(&b, 1, 0, g % 2, g % 2 ? 990 : 1000 + cold);  // loop b: 1 % apart -> its declared 0
    p.record(&e, 1, 1, g % 2, g % 2 ? 1000 : 990);         // loop e: 1 % apart the other way -> its declared 1
    p.record(&c, 2, 2, g % 3, std::array<std::uint64_t, 3>{900, 500, 700}[g % 3] + (g == 1 ? 9000 : 0));
    p.end_group();
  }
  CHECK(p.groups() == 9);
  CHECK(p.settled());
  CHECK_FALSE(p.decided());
  p.decide();
  REQUIRE(p.decided());
  CHECK(p.decided_position(&a, 0) == 1);
  CHECK(p.decided_position(&b, 1) == 0);
  CHECK(p.decided_position(&e, 0) == 1);
  CHECK(p.decided_position(&c, 0) == 1);  // median 500 despite the 9500 outlier
  CHECK(p.decided_position(&d, 2) == 2);  // not measured: the caller's fallback
  CHECK(p.positions() == std::vector<unsigned>{1, 0, 1, 1});

  // A gain (10 %) smaller than the samples' spread keeps the declared order.
  P q;
  for (unsigned g = 0; g < 8; ++g) {
    q.record(&a, 1, 0, g % 2, g % 2 ? std::array<std::uint64_t, 4>{500, 1300, 600, 1200}[g / 2] : 1000);
    q.record(&b, 1, 0, 0, 1);  // b: only candidate 0 timed
    q.end_group();
  }
  CHECK(P::spread(q.sites()[0].ns[1]) > P::noisy_spread);
  CHECK_FALSE(q.settled());  // too noisy: calibration goes on
  q.decide();
  CHECK(q.decided_position(&a, 1) == 0);  // median 900 vs 1000: within noise, declared depth-first
  CHECK(q.decided_position(&b, 1) == 1);  // not timed in every candidate: the fallback
  CHECK(P::median({3, 1, 2}) == 2);
  CHECK(P::median({4, 1, 2, 3}) == 2.5);
  CHECK(P::median({}) == 0);
  CHECK(P::spread({10, 10, 10, 1000}) == 0);  // one outlier does not count as noise

  // A group's times as a worker collects them: calls of one loop in one position add up.
  detail::group_sample t;
  t.add(&a, 1, 0, 1, 300);
  t.add(&a, 1, 0, 1, 200);
  t.add(&b, 2, 2, 0, 70);
  P r;
  r.add_group(t);
  REQUIRE(r.sites().size() == 2);
  CHECK(r.groups() == 1);
  CHECK(r.sites()[0].ns[1] == std::vector<std::uint64_t>{500});
  CHECK(r.sites()[1].ns[0] == std::vector<std::uint64_t>{70});
  CHECK(r.sites()[1].declared == 2);
}

TEST_CASE("group measured policy calibrates on the first groups and then runs the decided order", "[group]") {
  // The leaf driven directly, to see its calibration table: the first unit
  // calibrates, the second runs the decided order; results stay exact.
  const std::size_t n = 40'000, l = 64, per = 8;
  std::vector<std::int32_t> x(n);
  for (std::size_t i = 0; i < n; ++i) x[i] = std::int32_t(i % 29) - 14;
  detail::group_exec<TreeReduce> ex(TreeReduce{per}, std::nullopt, range1d{l}, {.order = order_policy::measured, .calibration_rounds = 2});
  std::vector<std::int32_t> partial((n + l * per - 1) / (l * per));
  layer in(shape::d1(n), {buffer_ref::wrap(x.data(), x.size())});
  layer out(shape::d1(partial.size()), {buffer_ref::wrap(partial.data(), partial.size())});
  detail::exec_args args{&in, &out, 0, 0, nullptr};
  CHECK(ex.measured_positions().empty());
  ex.execute(args);
  // One untimed warm-up group, then at least 3 x 2 timed groups (at most 4 x as many).
  REQUIRE(ex.plan().sites().size() == 1);
  const auto& site = ex.plan().sites()[0];
  CHECK(ex.plan().groups() >= 6);
  CHECK(ex.plan().groups() <= 24);
  CHECK(site.ns[0].size() >= 3);
  CHECK(site.ns[1].size() >= 3);
  CHECK(site.declared == 0);  // TreeReduce: an LX W1 access and its carried sum (L0 W1) tie: depth-first
  REQUIRE(ex.measured_positions().size() == 1);
  CHECK(ex.measured_positions()[0] <= 1);
  std::vector<std::int32_t> ref(partial.size(), 0);
  for (std::size_t i = 0; i < n; ++i) ref[i / (l * per)] += x[i];
  CHECK(partial == ref);
  std::fill(partial.begin(), partial.end(), -1);
  const std::size_t groups = ex.plan().groups();
  ex.execute(args);  // decided: no more calibration
  CHECK(ex.plan().groups() == groups);
  CHECK(partial == ref);
}
