#pragma once
/// \file group_examples.hpp
/// GPU-shaped algorithms as group kernels: tiled matrix multiply, a tree
/// reduction with barriers, a histogram with group-local atomics and a 2-D
/// stencil over a shared tile. The same algorithms, line for line, are the
/// OpenCL kernels in graphs/kernels/ (tiled_mm.cl, tree_reduce.cl,
/// histogram.cl, stencil_tile.cl), so the two executors can be compared
/// (tests/test_group_kernel_opencl.cpp, bench/group_leaves.cpp).
///
/// Each loop's `accesses` are its global/local memory accesses with their
/// strides along the loop index and the fastest work-item id
/// [Kim15, Table 1]; the carried accumulators are not listed: `group::loop` counts
/// each as one L0 W1 access (memory when run breadth-first, a register
/// depth-first).
///
/// \code
/// using namespace sinew::group_examples;
/// sinew::graph g(sinew::group_kernel<TiledMM>(sinew::range2d{16, 16}));    // C = A * B, N x N
/// g.run(sinew::from_arrays(a, b), sinew::into_arrays(c)).get();
/// \endcode
#include <array>
#include <cstddef>
#include <cstdint>
#include <string>

#include <sinew/engine/error.hpp>
#include <sinew/skeletons/group_kernel.hpp>

namespace sinew::group_examples {

/// C = A * B for square N x N matrices (the unit's shape), in square tiles
/// of the work-group's size staged through local memory.
struct TiledMM {
  // acc += ta[ly * T + k] * tb[k * T + lx]
  static constexpr std::array<mem_access, 2> accesses{mem_access{1, 0},                    // ta: L1 W0 -> BFO
                                                  mem_access{mem_access::any_stride, 1}};  // tb: LX W1 -> BFO

  void operator()(group& g, in<float, 2> a, in<float, 2> b, out<float, 2> c) const {
    const std::size_t T = g.local_size(1), n = a.cols();
    if (g.local_size(0) != T)
      throw error("TiledMM: work-groups must be square, not " + std::to_string(g.local_size(0)) + "x" +
                  std::to_string(T));
    if (a.rows() != n) throw error("TiledMM: matrices must be square, not " + a.shape().str());
    auto ta = g.local_mem<float>(T * T), tb = g.local_mem<float>(T * T);
    auto acc = g.per_item<float>();
    for (std::size_t t0 = 0; t0 < n; t0 += T) {
      g.each([&](const item& it) {  // load both tiles (zeros past the edges)
        const std::size_t y = it.l[0], x = it.l[1], gy = it.g[0], gx = it.g[1];
        ta[y * T + x] = gy < n && t0 + x < n ? a(gy, t0 + x) : 0.0f;
        tb[y * T + x] = t0 + y < n && gx < n ? b(t0 + y, gx) : 0.0f;
      });
      g.loop(T, accesses, acc, [&](const item& it, std::size_t k, float& sum) {
        sum += ta[it.l[0] * T + k] * tb[k * T + it.l[1]];
      });
    }
    g.each([&](const item& it) {
      if (it.in_range()) c(it.g[0], it.g[1]) = acc[it];
    });
  }
};

/// Sum of each group's block of `local * per_item` elements: every
/// work-item first adds `per_item` elements strided by the group size
/// (GPU-coalesced), then a tree in local memory with a barrier per level.
/// Output: one partial sum per work-group.
struct TreeReduce {
  std::size_t per_item = 1;
  // sum += x[block + k * L + lid]
  // With the carried sum (L0 W1 -> DFO) the tally ties: depth-first.
  static constexpr std::array<mem_access, 1> accesses{mem_access{mem_access::any_stride, 1}};  // x: LX W1 -> BFO

  range global_range(const shape& in) const {
    std::size_t p = per_item ? per_item : 1;
    return range1d{(in.count() + p - 1) / p};
  }
  shape output_shape(const shape&, const range& groups) const { return shape::d1(groups[0]); }

  void operator()(group& g, in<std::int32_t> x, out<std::int32_t> partial) const {
    const std::size_t L = g.local_size(0), n = x.size(), p = per_item ? per_item : 1;
    const std::size_t block = g.group_id(0) * L * p;
    auto s = g.local_mem<std::int32_t>(L);
    auto sum = g.per_item<std::int32_t>();
    g.loop(p, accesses, sum, [&](const item& it, std::size_t k, std::int32_t& v) {
      std::size_t e = block + k * L + it.l[0];
      if (e < n) v += x[e];
    });
    g.each([&](const item& it) { s[it.l[0]] = sum[it]; });
    std::size_t half = 1;
    while (half * 2 < L) half *= 2;
    for (; half > 0; half /= 2)  // uniform loop: a barrier after every level
      g.each([&](const item& it) {
        std::size_t i = it.l[0];
        if (i < half && i + half < L) s[i] += s[i + half];
      });
    g.each([&](const item& it) {
      if (it.l[0] == 0) partial[g.group_id(0)] = s[0];
    });
  }
};

/// Per-group histograms of `bins` bins (output: groups x bins): local bins
/// updated with group-local atomics, then copied out. Values are taken
/// modulo `bins`.
struct Histogram {
  std::size_t bins = 256;
  std::size_t per_item = 1;
  // bin[x[block + k * L + lid] % B]++
  static constexpr std::array<mem_access, 2> accesses{mem_access{mem_access::any_stride, 1},  // x: LX W1 -> BFO
                                                  mem_access{mem_access::any_stride, mem_access::any_stride}};  // bins: none

  range global_range(const shape& in) const {
    std::size_t p = per_item ? per_item : 1;
    return range1d{(in.count() + p - 1) / p};
  }
  shape output_shape(const shape&, const range& groups) const { return shape::d2(groups[0], bins); }

  void operator()(group& g, in<std::uint32_t> x, out<std::uint32_t, 2> hist) const {
    const std::size_t L = g.local_size(0), n = x.size(), p = per_item ? per_item : 1, B = bins;
    const std::size_t block = g.group_id(0) * L * p;
    auto h = g.local_mem<std::uint32_t>(B);
    g.each([&](const item& it) {
      for (std::size_t b = it.l[0]; b < B; b += L) h[b] = 0;
    });
    g.loop(p, accesses, [&](const item& it, std::size_t k) {
      std::size_t e = block + k * L + it.l[0];
      if (e < n) group::atomic_inc(h[x[e] % B]);
    });
    g.each([&](const item& it) {
      for (std::size_t b = it.l[0]; b < B; b += L) hist(g.group_id(0), b) = h[b];
    });
  }
};

/// 3x3 weighted stencil (weights 1 2 1 / 2 4 2 / 1 2 1, edges clamped) over a
/// tile with a one-element halo staged in local memory.
struct StencilTile {
  // tile[k * L + lid] = in(...): work-items fill the (Ly+2) x (Lx+2) tile
  static constexpr std::array<mem_access, 2> load_accesses{mem_access{mem_access::any_stride, 1},   // tile: LX W1 -> BFO
                                                       mem_access{mem_access::any_stride, 1}};  // in:   LX W1 -> BFO
  // acc += w[dy][dx] * tile[(ly + dy) * W + lx + dx]
  static constexpr std::array<mem_access, 2> dy_accesses{mem_access{3, 0},                      // w:    LX W0 -> BFO
                                                     mem_access{mem_access::any_stride, 1}};    // tile: LX W1 -> BFO
  static constexpr std::array<mem_access, 2> dx_accesses{mem_access{1, 0},                      // w:    L1 W0 -> BFO
                                                     mem_access{1, 1}};                     // tile: L1 W1 -> none
  static constexpr float weights[9] = {1, 2, 1, 2, 4, 2, 1, 2, 1};

  void operator()(group& g, in<float, 2> src, out<float, 2> dst) const {
    const std::size_t Ly = g.local_size(0), Lx = g.local_size(1), L = Ly * Lx;
    const std::size_t H = Ly + 2, W = Lx + 2, rows = src.rows(), cols = src.cols();
    const long oy = long(g.global_offset(0)) - 1, ox = long(g.global_offset(1)) - 1;
    auto tile = g.local_mem<float>(H * W);
    auto clampi = [](long v, std::size_t n) { return std::size_t(v < 0 ? 0 : v >= long(n) ? long(n) - 1 : v); };
    // Divergent loop: a work-item leaves once its next tile slot is past the end.
    g.loop((H * W + L - 1) / L, load_accesses, [&](const item& it, std::size_t k) {
      std::size_t t = k * L + it.lin;
      if (t >= H * W) return false;
      tile[t] = src(clampi(oy + long(t / W), rows), clampi(ox + long(t % W), cols));
      return true;
    });
    auto acc = g.per_item<float>();
    g.loop({3, 3}, dy_accesses, dx_accesses, acc, [&](const item& it, std::size_t dy, std::size_t dx, float& v) {
      v += weights[dy * 3 + dx] * tile[(it.l[0] + dy) * W + it.l[1] + dx];
    });
    g.each([&](const item& it) {
      if (it.in_range()) dst(it.g[0], it.g[1]) = acc[it];
    });
  }
};

}  // namespace sinew::group_examples
