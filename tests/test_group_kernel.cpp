// Group kernels: results against sequential references for many
// range and work-group sizes under every order policy, composition in
// pipelines and farms, schedulers, and errors (the order of work-items is
// in test_group_order.cpp).
#include <catch2/catch.hpp>

#include "group_examples.hpp"
#include <sinew/skeletons/group_kernel.hpp>
#include <sinew/sinew.hpp>

#include <algorithm>
#include <cstdint>
#include <numeric>
#include <utility>
#include <vector>

using namespace sinew;
using namespace sinew::group_examples;

namespace {

const order_policy all_policies[] = {order_policy::declared, order_policy::depth_first, order_policy::breadth_first,
                                     order_policy::measured};

const char* policy_name(order_policy p) {
  switch (p) {
    case order_policy::declared: return "declared";
    case order_policy::depth_first: return "depth_first";
    case order_policy::breadth_first: return "breadth_first";
    case order_policy::measured: return "measured";
  }
  return "?";
}

// Small integers: every product and sum below is exact in float, so the
// results must be equal bit for bit whatever the order of work-items.
float small_value(std::size_t i, std::size_t salt) { return float(int((i * 7 + salt * 13) % 9) - 4); }

array<float, 2> matrix(std::size_t n, std::size_t salt) {
  array<float, 2> m(shape::d2(n, n));
  for (std::size_t i = 0; i < n * n; ++i) m[i] = small_value(i, salt);
  return m;
}

std::vector<float> product(const array<float, 2>& a, const array<float, 2>& b, std::size_t n) {
  std::vector<float> c(n * n);
  for (std::size_t i = 0; i < n; ++i)
    for (std::size_t j = 0; j < n; ++j) {
      float s = 0;
      for (std::size_t k = 0; k < n; ++k) s += a(i, k) * b(k, j);
      c[i * n + j] = s;
    }
  return c;
}

std::vector<float> stencil(const array<float, 2>& src) {
  const std::size_t rows = src.shape().ext[0], cols = src.shape().ext[1];
  auto at = [&](long y, long x) {
    y = std::clamp<long>(y, 0, long(rows) - 1);
    x = std::clamp<long>(x, 0, long(cols) - 1);
    return src(std::size_t(y), std::size_t(x));
  };
  std::vector<float> out(rows * cols);
  for (std::size_t y = 0; y < rows; ++y)
    for (std::size_t x = 0; x < cols; ++x) {
      float s = 0;
      for (int dy = 0; dy < 3; ++dy)
        for (int dx = 0; dx < 3; ++dx) s += StencilTile::weights[dy * 3 + dx] * at(long(y) + dy - 1, long(x) + dx - 1);
      out[y * cols + x] = s;
    }
  return out;
}

template <class T>
std::vector<T> as_vector(const array<T, 2>& a) {
  return std::vector<T>(a.begin(), a.end());
}

// Every element becomes the sum of its work-group's in-range elements (3-D,
// local atomics, two barriers) plus a check of the work-item ids.
struct GroupSum3D {
  void operator()(group& g, in<int, 3> x, out<int, 3> y) const {
    auto sum = g.local_mem<int>(1);
    g.each([&](const item& it) {
      if (it.lin == 0) sum[0] = 0;
    });
    g.each([&](const item& it) {
      bool ids = it.lin == (it.l[0] * g.local_size(1) + it.l[1]) * g.local_size(2) + it.l[2];
      for (unsigned d = 0; d < 3; ++d) ids = ids && it.g[d] == g.group_id(d) * g.local_size(d) + it.l[d];
      if (!ids) throw error("GroupSum3D: wrong work-item ids");
      if (it.in_range()) group::atomic_add(sum[0], x(it.g[0], it.g[1], it.g[2]));
    });
    g.each([&](const item& it) {
      if (it.in_range()) y(it.g[0], it.g[1], it.g[2]) = sum[0];
    });
  }
};

// 3-D groups with loops: a carried sum (y = 10 x) and a divergent loop
// (work-item (.., .., z) stays for min(z, 5) iterations), under any order.
struct Loop3D {
  static constexpr std::array<mem_access, 1> df{mem_access{0, 1}};
  static constexpr std::array<mem_access, 1> bf{mem_access{1, 0}};
  void operator()(group& g, in<int, 3> x, out<int, 3> y) const {
    auto s = g.per_item<int>();
    g.loop(4, df, s, [&](const item& it, std::size_t k, int& v) {
      if (it.in_range()) v += x(it.g[0], it.g[1], it.g[2]) * int(k + 1);
    });
    g.loop(5, bf, [&](const item& it, std::size_t k) {
      if (k >= it.l[2]) return false;
      s[it] += 1;
      return true;
    });
    g.each([&](const item& it) {
      if (it.in_range()) y(it.g[0], it.g[1], it.g[2]) = s[it];
    });
  }
};

// Each work-item folds k = 0..n-1 into a carried value (v = 3v + k + id,
// order-sensitive), leaving early once v passes a limit; a 2-deep nest
// carries a second value.
struct Carry {
  std::size_t n = 5;
  static constexpr std::array<mem_access, 1> any{mem_access{1, 0}};
  void operator()(group& g, in<std::int64_t> x, out<std::int64_t> y) const {
    auto v = g.per_item<std::int64_t>(), w = g.per_item<std::int64_t>();
    g.each([&](const item& it) { v[it] = it.in_range() ? x[it.g[0]] : 0; });
    g.loop(n, any, v, [&](const item& it, std::size_t k, std::int64_t& a) {
      a = 3 * a + std::int64_t(k + it.lin);
      return a < 500;
    });
    g.loop({n, n}, any, any, w, [&](const item&, std::size_t a, std::size_t b, std::int64_t& c) {
      c = 2 * c + std::int64_t(a * n + b) % 7;
    });
    g.each([&](const item& it) {
      if (it.in_range()) y[it.g[0]] = v[it] * 1000003 + w[it];
    });
  }
};

// In place: each work-group's in-range block is reversed (through local
// memory: every read happens before any write, thanks to the barrier).
struct ReverseBlocks {
  void operator()(group& g, inout<int> v) const {
    auto tile = g.local_mem<int>(g.local_count());
    const std::size_t first = g.global_offset(0);
    const std::size_t len = std::min(g.local_size(0), g.global_size(0) - first);
    g.each([&](const item& it) {
      if (it.in_range()) tile[it.lin] = v[it.g[0]];
    });
    g.each([&](const item& it) {
      if (it.in_range()) v[it.g[0]] = tile[len - 1 - it.lin];
    });
  }
};

}  // namespace

TEST_CASE("group kernel in place, repeated in a for loop", "[group]") {
  for (std::size_t n : {1, 10, 33})
    for (std::size_t l : {1, 4, 7}) {
      INFO("n=" << n << " local=" << l);
      std::vector<int> x(n);
      std::iota(x.begin(), x.end(), 0);
      graph g1(group_kernel<ReverseBlocks>(range1d{l}));
      std::vector<std::vector<int>> in{x}, out;
      g1.run(in, out).get();
      std::vector<int> want = x;
      for (std::size_t b = 0; b < n; b += l) std::reverse(want.begin() + long(b), want.begin() + long(std::min(n, b + l)));
      REQUIRE(out.at(0) == want);
      // Three reversals in a for loop are one reversal (fresh input: from()
      // wraps the caller's vectors, which an in-place leaf updates).
      graph g3(for_loop(group_kernel<ReverseBlocks>(range1d{l}), 3));
      std::vector<std::vector<int>> in3{x}, out3;
      g3.run(in3, out3).get();
      REQUIRE(out3.at(0) == want);
    }
}

TEST_CASE("group loops carry a value per work-item in every order", "[group]") {
  const std::size_t items = 37, local = 8, n = 5;
  std::vector<std::int64_t> x(items), want(items);
  for (std::size_t i = 0; i < items; ++i) {
    x[i] = std::int64_t(i % 4);
    std::int64_t v = x[i], w = 0;
    for (std::size_t k = 0; k < n; ++k) {
      v = 3 * v + std::int64_t(k + i % local);
      if (v >= 500) break;
    }
    for (std::size_t a = 0; a < n; ++a)
      for (std::size_t b = 0; b < n; ++b) w = 2 * w + std::int64_t(a * n + b) % 7;
    want[i] = v * 1000003 + w;
  }
  for (order_policy p : all_policies) {
    INFO("policy=" << policy_name(p));
    std::vector<std::int64_t> y;
    graph g(group_kernel<Carry>(range1d{local}, Carry{n}, {.order = p}));
    g.run(from_arrays(x), into_arrays(y)).get();
    REQUIRE(y == want);
  }
}

TEST_CASE("group kernel tiled matrix multiply matches the sequential product", "[group]") {
  for (std::size_t n : {1, 5, 16, 37, 64})
    for (std::size_t t : {1, 4, 8, 16}) {
      auto a = matrix(n, 1), b = matrix(n, 2);
      auto ref = product(a, b, n);
      for (order_policy p : all_policies) {
        INFO("n=" << n << " tile=" << t << " policy=" << policy_name(p));
        array<float, 2> c;
        graph g(group_kernel<TiledMM>(range2d{n, n}, range2d{t, t}, {}, {.order = p}));
        g.run(from_arrays(a, b), into_arrays(c)).get();
        REQUIRE(as_vector(c) == ref);
      }
    }
}

TEST_CASE("group kernel tree reduction with barriers matches block sums", "[group]") {
  for (std::size_t n : {1, 7, 100, 1000, 4097})
    for (std::size_t l : {1, 3, 8, 64, 100})
      for (std::size_t per : {1, 4}) {
        std::vector<std::int32_t> x(n);
        for (std::size_t i = 0; i < n; ++i) x[i] = std::int32_t(i % 23) - 11;
        std::size_t block = l * per, groups = (n + block - 1) / block;
        std::vector<std::int32_t> ref(groups, 0);
        for (std::size_t i = 0; i < n; ++i) ref[i / block] += x[i];
        for (order_policy p : all_policies) {
          INFO("n=" << n << " local=" << l << " per_item=" << per << " policy=" << policy_name(p));
          std::vector<std::int32_t> partial;
          graph g(group_kernel<TreeReduce>(range1d{l}, TreeReduce{per}, {.order = p}));
          g.run(from_arrays(x), into_arrays(partial)).get();
          REQUIRE(partial == ref);
        }
      }
}

TEST_CASE("group kernel histogram with local atomics matches the sequential count", "[group]") {
  for (std::size_t n : {1, 1000, 5003})
    for (std::size_t l : {1, 16, 100})
      for (std::size_t bins : {7, 256})
        for (std::size_t per : {1, 8}) {
          std::vector<std::uint32_t> x(n);
          for (std::size_t i = 0; i < n; ++i) x[i] = std::uint32_t((i * 2654435761u) >> 7);
          std::size_t block = l * per, groups = (n + block - 1) / block;
          std::vector<std::uint32_t> ref(groups * bins, 0);
          for (std::size_t i = 0; i < n; ++i) ++ref[(i / block) * bins + x[i] % bins];
          for (order_policy p : all_policies) {
            INFO("n=" << n << " local=" << l << " bins=" << bins << " per_item=" << per << " policy=" << policy_name(p));
            array<std::uint32_t, 2> h;
            graph g(group_kernel<Histogram>(range1d{l}, Histogram{bins, per}, {.order = p}));
            g.run(from_arrays(x), into_arrays(h)).get();
            REQUIRE(h.shape() == shape::d2(groups, bins));
            REQUIRE(as_vector(h) == ref);
          }
        }
}

TEST_CASE("group kernel 2-D stencil with a shared tile matches the sequential stencil", "[group]") {
  const std::pair<std::size_t, std::size_t> sizes[] = {{1, 1}, {5, 7}, {33, 17}, {64, 64}};
  const std::pair<std::size_t, std::size_t> locals[] = {{1, 1}, {4, 4}, {8, 16}, {16, 8}, {3, 5}};
  for (auto [rows, cols] : sizes)
    for (auto [ly, lx] : locals) {
      array<float, 2> src(shape::d2(rows, cols));
      for (std::size_t i = 0; i < rows * cols; ++i) src[i] = small_value(i, 3);
      auto ref = stencil(src);
      for (order_policy p : all_policies) {
        INFO(rows << "x" << cols << " local " << ly << "x" << lx << " policy=" << policy_name(p));
        array<float, 2> dst;
        graph g(group_kernel<StencilTile>(range2d{ly, lx}, {}, {.order = p}));
        g.run(from_arrays(src), into_arrays(dst)).get();
        REQUIRE(as_vector(dst) == ref);
      }
    }
}

TEST_CASE("group kernel over a 3-D range sums each work-group", "[group]") {
  const std::array<std::size_t, 3> sizes[] = {{5, 6, 7}, {4, 4, 4}, {1, 9, 2}};
  const std::array<std::size_t, 3> locals[] = {{2, 3, 4}, {1, 1, 8}, {4, 4, 4}, {1, 1, 1}};
  for (auto s : sizes)
    for (auto l : locals) {
      INFO("range " << s[0] << "x" << s[1] << "x" << s[2] << " local " << l[0] << "x" << l[1] << "x" << l[2]);
      array<int, 3> x(shape::d3(s[0], s[1], s[2])), y;
      for (std::size_t i = 0; i < x.size(); ++i) x[i] = int(i % 11);
      graph g(group_kernel<GroupSum3D>(range3d{l[0], l[1], l[2]}));
      g.run(from_arrays(x), into_arrays(y)).get();
      for (std::size_t a = 0; a < s[0]; ++a)
        for (std::size_t b = 0; b < s[1]; ++b)
          for (std::size_t c = 0; c < s[2]; ++c) {
            int want = 0;
            for (std::size_t p = a / l[0] * l[0]; p < std::min(s[0], (a / l[0] + 1) * l[0]); ++p)
              for (std::size_t q = b / l[1] * l[1]; q < std::min(s[1], (b / l[1] + 1) * l[1]); ++q)
                for (std::size_t r = c / l[2] * l[2]; r < std::min(s[2], (c / l[2] + 1) * l[2]); ++r) want += x(p, q, r);
            REQUIRE(y(a, b, c) == want);
          }
      for (order_policy p : all_policies) {
        INFO("loops, policy=" << policy_name(p));
        array<int, 3> z;
        graph gl(group_kernel<Loop3D>(range3d{l[0], l[1], l[2]}, {}, {.order = p, .calibration_rounds = 1}));
        gl.run(from_arrays(x), into_arrays(z)).get();
        for (std::size_t i = 0; i < x.size(); ++i)
          REQUIRE(z[i] == 10 * x[i] + int(std::min<std::size_t>(i % s[2] % l[2], 5)));
      }
    }
}

TEST_CASE("group kernels run under every scheduler, work-groups dealt to its workers", "[group]") {
  const std::size_t n = 20'011, l = 64, per = 4;
  std::vector<std::int32_t> x(n);
  for (std::size_t i = 0; i < n; ++i) x[i] = std::int32_t(i % 31) - 15;
  std::vector<std::int32_t> ref((n + l * per - 1) / (l * per), 0);
  for (std::size_t i = 0; i < n; ++i) ref[i / (l * per)] += x[i];
  array<float, 2> src(shape::d2(70, 45));
  for (std::size_t i = 0; i < src.size(); ++i) src[i] = small_value(i, 5);
  const auto st_ref = stencil(src);

  tbb_scheduler tbb(3);
  steal_scheduler steal(3, false);
  deal_scheduler deal(topology::synthetic(2, 2));
  scheduler* all[] = {&tbb, &steal, &deal};
  for (scheduler* s : all)
    for (order_policy p : all_policies)
      for (std::size_t grain : {0, 1, 5}) {
        INFO("scheduler=" << s->name() << " policy=" << policy_name(p) << " groups_per_task=" << grain);
        const auto before = s->stats().parallel_fors;
        std::vector<std::int32_t> partial;
        graph g(group_kernel<TreeReduce>(range1d{l}, TreeReduce{per}, {.order = p, .calibration_rounds = 1, .groups_per_task = grain}),
                {.scheduler = s});
        g.run(from_arrays(x), into_arrays(partial)).get();
        REQUIRE(partial == ref);
        array<float, 2> dst;
        graph gs(group_kernel<StencilTile>(range2d{8, 16}, {}, {.order = p, .calibration_rounds = 1, .groups_per_task = grain}),
                 {.scheduler = s});
        gs.run(from_arrays(src), into_arrays(dst)).get();
        REQUIRE(as_vector(dst) == st_ref);
        // 79 and 27 work-groups (fewer calibration groups): both leaves deal
        // the rest to workers with the scheduler's parallel_for.
        CHECK(s->stats().parallel_fors >= before + 2);
      }
}

TEST_CASE("group kernels compose in pipelines and farms", "[group][tsan]") {
  // Two reductions in a pipeline: partial sums, then their sum.
  std::vector<std::int32_t> x(20000);
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = std::int32_t(i % 101) - 50;
  std::vector<std::int32_t> total;
  graph two(pipeline(group_kernel<TreeReduce>(range1d{64}, TreeReduce{4}),
                     group_kernel<TreeReduce>(range1d{128}, TreeReduce{8})));
  two.run(from_arrays(x), into_arrays(total)).get();
  REQUIRE(total.size() == 1);
  CHECK(total[0] == std::accumulate(x.begin(), x.end(), 0));

  // A farm of stencils over a stream of images, measured order, concurrent calibration.
  std::vector<array<float, 2>> imgs, outs;
  for (std::size_t k = 0; k < 24; ++k) {
    array<float, 2> im(shape::d2(20 + k, 31));
    for (std::size_t i = 0; i < im.size(); ++i) im[i] = small_value(i, k);
    imgs.push_back(im);
  }
  graph f(farm(group_kernel<StencilTile>(range2d{8, 8}, {}, {.order = order_policy::measured, .calibration_rounds = 1}), 3));
  f.run(imgs, outs).get();
  REQUIRE(outs.size() == imgs.size());
  for (std::size_t k = 0; k < imgs.size(); ++k) REQUIRE(as_vector(outs[k]) == stencil(imgs[k]));
}

TEST_CASE("group kernel errors name the node", "[group]") {
  CHECK_THROWS_AS(graph(group_kernel<TiledMM>(range2d{8, 8}, range1d{8})), graph_error);
  CHECK_THROWS_AS(graph(group_kernel<TiledMM>(range2d{0, 8})), graph_error);
  try {
    graph g(pipeline(group_kernel<TreeReduce>(range1d{0})));
    FAIL("no error");
  } catch (const graph_error& e) {
    CHECK_THAT(e.what(), Catch::Contains("group_kernel<TreeReduce>") && Catch::Contains("empty dimension"));
  }
  // The unit's rank differs from the work-group's.
  std::vector<float> x(10), y;
  graph g(group_kernel<StencilTile>(range2d{4, 4}));
  try {
    g.run(from_arrays(x), into_arrays(y)).get();
    FAIL("no error");
  } catch (const node_error& e) {
    CHECK_THAT(e.what(), Catch::Contains("group_kernel<StencilTile>") && Catch::Contains("rank"));
  }
  // A kernel's own check: TiledMM wants square work-groups.
  auto a = matrix(8, 1), b = matrix(8, 2);
  array<float, 2> c;
  graph mm(group_kernel<TiledMM>(range2d{4, 8}));
  CHECK_THROWS_WITH(mm.run(from_arrays(a, b), into_arrays(c)).get(), Catch::Contains("square"));
}
