// The OpenCL versions of the group-kernel examples (graphs/kernels/*.cl) on
// an OpenCL CPU device (PoCL) give the same results as the group leaves.
#include <catch2/catch.hpp>

#include "group_examples.hpp"
#include "group_opencl.hpp"
#include <sinew/sinew.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

using namespace sinew;
using namespace sinew::group_examples;
using sinew_support::group_cl;

namespace {

std::optional<group_cl>& device() {
  static std::optional<group_cl> cl;
  static std::string why;
  static bool tried = false;
  if (!tried) {
    tried = true;
    cl = group_cl::open(sinew_support::kernel_dir(), why);
  }
  if (!cl) WARN("SINEW-SKIP: " << why);  // ctest reports the case skipped (tests/CMakeLists.txt)
  return cl;
}

float small_value(std::size_t i, std::size_t salt) { return float(int((i * 5 + salt * 11) % 9) - 4); }

}  // namespace

TEST_CASE("group kernels on PoCL match the group leaves", "[group][opencl]") {
  auto& cl = device();
  if (!cl) return;
  INFO("device: " << cl->device_name());

  for (std::size_t n : {1, 19, 64})
    for (std::size_t t : {4, 8}) {
      INFO("tiled_mm n=" << n << " tile=" << t);
      array<float, 2> a(shape::d2(n, n)), b(shape::d2(n, n)), c, c_cl(shape::d2(n, n));
      for (std::size_t i = 0; i < n * n; ++i) a[i] = small_value(i, 1), b[i] = small_value(i, 2);
      graph g(group_kernel<TiledMM>(range2d{t, t}));
      g.run(from_arrays(a, b), into_arrays(c)).get();
      cl->tiled_mm(a.data(), b.data(), c_cl.data(), n, t).run();
      REQUIRE(c == c_cl);
    }

  for (std::size_t n : {1, 1000, 4099})
    for (std::size_t l : {3, 64})
      for (std::size_t per : {1, 4}) {
        INFO("tree_reduce/histogram n=" << n << " local=" << l << " per_item=" << per);
        std::vector<std::int32_t> x(n), partial;
        std::vector<std::uint32_t> u(n);
        for (std::size_t i = 0; i < n; ++i) x[i] = std::int32_t(i % 17) - 8, u[i] = std::uint32_t(i * 2654435761u >> 9);
        std::size_t groups = group_cl::groups_of(n, l, per);
        graph r(group_kernel<TreeReduce>(range1d{l}, TreeReduce{per}));
        r.run(from_arrays(x), into_arrays(partial)).get();
        std::vector<std::int32_t> partial_cl(groups);
        cl->tree_reduce(x.data(), partial_cl.data(), n, l, per).run();
        REQUIRE(partial == partial_cl);

        const std::size_t bins = 64;
        array<std::uint32_t, 2> h;
        graph hg(group_kernel<Histogram>(range1d{l}, Histogram{bins, per}));
        hg.run(from_arrays(u), into_arrays(h)).get();
        std::vector<std::uint32_t> h_cl(groups * bins);
        cl->histogram(u.data(), h_cl.data(), n, l, per, bins).run();
        REQUIRE(std::vector<std::uint32_t>(h.begin(), h.end()) == h_cl);
      }

  const std::pair<std::size_t, std::size_t> sizes[] = {{1, 1}, {17, 30}, {64, 48}};
  for (auto [rows, cols] : sizes)
    for (auto [ly, lx] : {std::pair<std::size_t, std::size_t>{4, 4}, {8, 16}}) {
      INFO("stencil_tile " << rows << "x" << cols << " local " << ly << "x" << lx);
      array<float, 2> src(shape::d2(rows, cols)), dst, dst_cl(shape::d2(rows, cols));
      for (std::size_t i = 0; i < src.size(); ++i) src[i] = small_value(i, 3);
      graph s(group_kernel<StencilTile>(range2d{ly, lx}));
      s.run(from_arrays(src), into_arrays(dst)).get();
      cl->stencil_tile(src.data(), dst_cl.data(), rows, cols, ly, lx).run();
      REQUIRE(dst == dst_cl);
    }
}
