// Built-in image feature kernels: an edge map, a luminance histogram (a group
// kernel whose output has another shape than its input) and the edge map
// scaled by the image's contrast, read from the histogram after a zip of the
// two. Together they make the feature graph of graphs/image_features.json.
#include "image_kernels.hpp"

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <string>

#include <sinew/skeletons/group_kernel.hpp>
#include <sinew/workloads/image.hpp>

namespace sinew::detail {
namespace {

using workloads::rgba8;
constexpr std::size_t bins = 256;

/// Luminance of a pixel, 0-255 (integer BT.601 weights).
inline int luma(const rgba8& p) { return (77 * p.r + 150 * p.g + 29 * p.b) >> 8; }

/// Sobel gradient magnitude of the luminance at (r, c), |gx| + |gy| scaled to
/// 0-255, the border replicated. `at(y, x)` reads a pixel.
template <class At>
std::uint8_t sobel(const At& at, std::size_t rows, std::size_t cols, std::size_t r, std::size_t c) {
  auto l = [&](std::ptrdiff_t dy, std::ptrdiff_t dx) {
    const std::size_t y = std::size_t(std::clamp<std::ptrdiff_t>(std::ptrdiff_t(r) + dy, 0, std::ptrdiff_t(rows) - 1));
    const std::size_t x = std::size_t(std::clamp<std::ptrdiff_t>(std::ptrdiff_t(c) + dx, 0, std::ptrdiff_t(cols) - 1));
    return luma(at(y, x));
  };
  const int gx = l(-1, 1) + 2 * l(0, 1) + l(1, 1) - l(-1, -1) - 2 * l(0, -1) - l(1, -1);
  const int gy = l(1, -1) + 2 * l(1, 0) + l(1, 1) - l(-1, -1) - 2 * l(-1, 0) - l(-1, 1);
  return std::uint8_t(std::min(255, (std::abs(gx) + std::abs(gy)) / 4));
}

/// Per chunk of rows: the edge map (u8) of an rgba8 image.
struct edges {
  void operator()(chunk ch, in<rgba8, 2> img, out<std::uint8_t, 2> e) const {
    const std::size_t rows = img.rows(), cols = img.cols();
    for (std::size_t r = ch.begin; r < ch.end; ++r)
      for (std::size_t c = 0; c < cols; ++c) e(r, c) = sobel(img, rows, cols, r, c);
  }
};

/// The luminance histogram of an rgba8 image: 256 u32 bins, whatever the
/// image's shape. One work-group of 256 work-items, one per bin: each clears
/// its bin of a local histogram, counts rows i, i + 256, ... into it, then
/// writes its bin out (the one-group histogram of OpenCL's samples).
struct luma_histogram {
  static range global_range(const shape&) { return range1d{bins}; }
  static shape output_shape(const shape&, const range&) { return shape::d1(bins); }
  void operator()(group& g, in<rgba8, 2> img, out<std::uint32_t> hist) const {
    auto local = g.local_mem<std::uint32_t>(bins);
    g.each([&](const item& it) { local[it.local_linear()] = 0; });
    g.each([&](const item& it) {
      for (std::size_t r = it.local_linear(); r < img.rows(); r += bins)
        for (std::size_t c = 0; c < img.cols(); ++c) group::atomic_add(local[std::size_t(luma(img(r, c)))], 1u);
    });
    g.each([&](const item& it) { hist[it.local_linear()] = local[it.local_linear()]; });
  }
};

[[noreturn]] void not_a_histogram(std::size_t n) {
  throw error("edge_contrast: input buffer 1 has " + std::to_string(n) + " elements, a histogram 256");
}

/// The luminance below which `pct` percent of the pixels lie.
int percentile(const std::uint32_t* hist, double pct) {
  std::uint64_t total = 0;
  for (std::size_t b = 0; b < bins; ++b) total += hist[b];
  const double want = double(total) * pct / 100.0;
  std::uint64_t below = 0;
  for (std::size_t b = 0; b < bins; ++b) {
    below += hist[b];
    if (double(below) >= want) return int(b);
  }
  return int(bins) - 1;
}

/// Per chunk over a zip of an edge map (u8, H x W) and its image's histogram
/// (u32, [256]): each edge scaled by 255 / (high - low), the luminance range
/// between two percentiles, so that edges of a low-contrast image count as
/// much as those of a high-contrast one.
struct edge_contrast {
  double low = 5, high = 95;
  void operator()(chunk ch, in<std::uint8_t, 2> e, in<std::uint32_t> hist, out<std::uint8_t, 2> y) const {
    if (hist.size() != bins) not_a_histogram(hist.size());
    const int spread = std::max(1, percentile(hist.data(), high) - percentile(hist.data(), low));
    for (std::size_t r = ch.begin; r < ch.end; ++r)
      for (std::size_t c = 0; c < e.cols(); ++c) y(r, c) = std::uint8_t(std::min(255, e(r, c) * 255 / spread));
  }
};

}  // namespace

void register_image_kernels(kernel_registry& r) {
  using P = kernel_param;

  r.add_map<edges>(
      "edges", "Sobel gradient magnitude of the luminance, (|gx| + |gy|) / 4 (rgba8 -> u8, 2-D, border replicated)", {},
      [](const kernel_args&) { return edges{}; }, {}, 2, [](const layer& in, layer& out, const kernel_args&) {
        const std::size_t rows = in.shape().ext[0], cols = in.shape().ext[1];
        const rgba8* p = in[0].data<rgba8>();
        std::uint8_t* o = out[0].data<std::uint8_t>();
        auto at = [&](std::size_t y, std::size_t x) { return p[y * cols + x]; };
        for (std::size_t y = 0; y < rows; ++y)
          for (std::size_t x = 0; x < cols; ++x) o[y * cols + x] = sobel(at, rows, cols, y, x);
      });

  kernel_info h;
  h.name = "luma_histogram";
  h.doc = "the luminance histogram of an rgba8 image: 256 u32 bins (a unit of shape [256], whatever the image's)";
  h.make = [](const kernel_args&) { return group_kernel<luma_histogram>(range1d{bins}); };
  h.rank = 2;
  h.reference = [](const layer& in, layer& out, const kernel_args&) {
    const rgba8* p = in[0].data<rgba8>();
    std::uint32_t* o = out[0].data<std::uint32_t>();
    std::fill(o, o + bins, 0u);
    for (std::size_t i = 0; i < in.count(); ++i) ++o[luma(p[i])];
  };
  r.add(std::move(h));

  r.add_map<edge_contrast>(
      "edge_contrast",
      "per pixel of an edge map (u8, 2-D) zipped with its image's luminance histogram (u32, [256]): the edge "
      "scaled by 255 / (luminance at the 'high' percentile - at the 'low' one), at most 255 (u8)",
      {P::real("low", "lower percentile of the luminance", 5.0, 0.0, 100.0),
       P::real("high", "upper percentile of the luminance", 95.0, 0.0, 100.0)},
      [](const kernel_args& a) { return edge_contrast{a.get<double>("low"), a.get<double>("high")}; }, {}, 2,
      [](const layer& in, layer& out, const kernel_args& a) {
        const std::uint8_t* e = in[0].data<std::uint8_t>();
        const std::uint32_t* hist = in[1].data<std::uint32_t>();
        if (in.shape_of(1).count() != bins) not_a_histogram(in.shape_of(1).count());
        const int spread = std::max(1, percentile(hist, a.get<double>("high")) - percentile(hist, a.get<double>("low")));
        std::uint8_t* o = out[0].data<std::uint8_t>();
        for (std::size_t i = 0; i < in.count(); ++i) o[i] = std::uint8_t(std::min(255, e[i] * 255 / spread));
      });
}

}  // namespace sinew::detail
