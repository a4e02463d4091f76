// image_features: a dag, not a tree. Each image is smoothed once; its edge map
// and its intensity histogram (64 bins: a unit of another shape than the
// image) are computed from it in parallel (a broadcast), joined per image (a
// zip) into the edge map scaled by the image's contrast, written to one sink,
// while the edge maps also go to a second sink as previews. Every result is
// checked against a sequential reference; prints "image_features: OK ..."
// on success.
//
//   image_features [images] [policy]      (default 24 images, the default scheduler)
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include <sinew/skeletons/group_kernel.hpp>
#include <sinew/sinew.hpp>

namespace {

constexpr std::size_t rows = 96, cols = 128, bins = 64;

/// 3x3 box blur (borders copied).
struct Smooth {
  void operator()(sinew::chunk c, sinew::in<float, 2> src, sinew::out<float, 2> dst) const {
    for (std::size_t r = c.begin; r < c.end; ++r)
      for (std::size_t x = 0; x < src.cols(); ++x) {
        if (r == 0 || x == 0 || r + 1 == src.rows() || x + 1 == src.cols()) {
          dst(r, x) = src(r, x);
          continue;
        }
        float s = 0;
        for (int dr = -1; dr <= 1; ++dr)
          for (int dx = -1; dx <= 1; ++dx) s += src(r + std::size_t(dr), x + std::size_t(dx));
        dst(r, x) = s / 9.0f;
      }
  }
};

/// Gradient magnitude (central differences; 0 on the borders).
struct Edges {
  void operator()(sinew::chunk c, sinew::in<float, 2> src, sinew::out<float, 2> dst) const {
    for (std::size_t r = c.begin; r < c.end; ++r)
      for (std::size_t x = 0; x < src.cols(); ++x) {
        if (r == 0 || x == 0 || r + 1 == src.rows() || x + 1 == src.cols()) {
          dst(r, x) = 0;
          continue;
        }
        const float gx = src(r, x + 1) - src(r, x - 1), gy = src(r + 1, x) - src(r - 1, x);
        dst(r, x) = std::sqrt(gx * gx + gy * gy);
      }
  }
};

std::size_t bin_of(float v) { return std::min(bins - 1, std::size_t(std::max(0.0f, v) * float(bins))); }

/// The intensity histogram of an image: a unit of shape [64], whatever the
/// image's. A group kernel of one work-group, a work-item per bin: each
/// clears its bin of a local histogram, counts rows i, i + 64, ... into it
/// (group-local atomics), then writes its bin out.
struct Histogram {
  static sinew::range global_range(const sinew::shape&) { return sinew::range1d{bins}; }
  static sinew::shape output_shape(const sinew::shape&, const sinew::range&) { return sinew::shape::d1(bins); }
  void operator()(sinew::group& g, sinew::in<float, 2> img, sinew::out<std::uint32_t> hist) const {
    auto local = g.local_mem<std::uint32_t>(bins);
    g.each([&](const sinew::item& it) { local[it.local_linear()] = 0; });
    g.each([&](const sinew::item& it) {
      for (std::size_t r = it.local_linear(); r < img.rows(); r += bins)
        for (std::size_t x = 0; x < img.cols(); ++x) sinew::group::atomic_add(local[bin_of(img(r, x))], 1u);
    });
    g.each([&](const sinew::item& it) { hist[it.local_linear()] = local[it.local_linear()]; });
  }
};

/// The intensity range between the 5th and 95th percentiles, from a histogram.
float spread(const std::uint32_t* hist) {
  std::uint32_t total = 0, below = 0;
  for (std::size_t b = 0; b < bins; ++b) total += hist[b];
  std::size_t lo = bins, hi = bins;
  for (std::size_t b = 0; b < bins && hi == bins; ++b) {
    below += hist[b];
    if (lo == bins && 20 * below >= total) lo = b;
    if (20 * below >= 19 * total) hi = b;
  }
  return float(hi - lo + 1) / float(bins);
}

/// Per chunk over a zip of an edge map and its image's histogram (each buffer
/// with its own shape): the edges divided by the image's contrast.
struct Normalise {
  void operator()(sinew::chunk c, sinew::in<float, 2> edges, sinew::in<std::uint32_t> hist,
                  sinew::out<float, 2> out) const {
    const float s = spread(hist.data());
    for (std::size_t r = c.begin; r < c.end; ++r)
      for (std::size_t x = 0; x < edges.cols(); ++x) out(r, x) = edges(r, x) / s;
  }
};

std::vector<float> make_image(std::size_t k) {
  std::vector<float> img(rows * cols);
  for (std::size_t r = 0; r < rows; ++r)
    for (std::size_t x = 0; x < cols; ++x)
      img[r * cols + x] = float((r * 7 + x * 3 + k * 11) % 64) / 64.0f;
  return img;
}

// The same computation, sequentially.
std::vector<float> reference(const std::vector<float>& img, std::vector<float>& edges) {
  auto at = [](const std::vector<float>& v, std::size_t r, std::size_t x) { return v[r * cols + x]; };
  std::vector<float> sm(img.size()), out(img.size());
  edges.assign(img.size(), 0.0f);
  for (std::size_t r = 0; r < rows; ++r)
    for (std::size_t x = 0; x < cols; ++x) {
      if (r == 0 || x == 0 || r + 1 == rows || x + 1 == cols) {
        sm[r * cols + x] = at(img, r, x);
        continue;
      }
      float s = 0;
      for (int dr = -1; dr <= 1; ++dr)
        for (int dx = -1; dx <= 1; ++dx) s += at(img, r + std::size_t(dr), x + std::size_t(dx));
      sm[r * cols + x] = s / 9.0f;
    }
  for (std::size_t r = 1; r + 1 < rows; ++r)
    for (std::size_t x = 1; x + 1 < cols; ++x) {
      const float gx = at(sm, r, x + 1) - at(sm, r, x - 1), gy = at(sm, r + 1, x) - at(sm, r - 1, x);
      edges[r * cols + x] = std::sqrt(gx * gx + gy * gy);
    }
  std::uint32_t hist[bins] = {};
  for (float v : sm) ++hist[bin_of(v)];
  const float s = spread(hist);
  for (std::size_t i = 0; i < img.size(); ++i) out[i] = edges[i] / s;
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  const std::size_t n = argc > 1 ? std::strtoul(argv[1], nullptr, 10) : 24;
  std::unique_ptr<sinew::scheduler> own;
  if (argc > 2) own = sinew::make_scheduler(argv[2], {});
  sinew::scheduler& sched = own ? *own : sinew::default_scheduler();

  sinew::dag d;
  auto frames = d.source("frames");
  auto smooth = d.add("smooth", sinew::map<Smooth>(), frames);
  auto edges = d.add("edges", sinew::farm(sinew::map<Edges>(), 2), smooth);  // smooth feeds two trees:
  auto hist = d.add("histogram", sinew::group_kernel<Histogram>(sinew::range1d{bins}), smooth);  // a broadcast
  auto both = d.zip("both", {edges, hist});   // one unit per image: edge map [96x128], histogram [64]
  d.sink("weighted", d.add("normalise", sinew::map<Normalise>(), both));
  d.sink("preview", edges);                   // the edge maps again: a second broadcast
  sinew::graph g(d, {.scheduler = &sched});

  std::vector<sinew::array<float, 2>> images(n);
  for (std::size_t k = 0; k < n; ++k) {
    images[k] = sinew::array<float, 2>(sinew::shape::d2(rows, cols));
    auto v = make_image(k);
    std::copy(v.begin(), v.end(), images[k].data());
  }
  std::vector<sinew::array<float, 2>> weighted, previews;
  auto f = g.run({{"frames", sinew::from(images)}},
                 {{"weighted", sinew::into(weighted)}, {"preview", sinew::into(previews)}});
  f.get();

  std::size_t bad = 0;
  for (std::size_t k = 0; k < n; ++k) {
    std::vector<float> e;
    const std::vector<float> want = reference(make_image(k), e);
    for (std::size_t i = 0; i < want.size(); ++i) {
      if (std::fabs(weighted[k].data()[i] - want[i]) > 1e-5f) ++bad;
      if (std::fabs(previews[k].data()[i] - e[i]) > 1e-5f) ++bad;
    }
  }
  const sinew::run_stats st = f.stats();
  if (bad || weighted.size() != n || previews.size() != n) {
    std::printf("image_features: FAILED %zu wrong values\n", bad);
    return 1;
  }
  std::printf("image_features: OK images=%zu units_in=%llu units_out=%llu (weighted %llu, preview %llu)\n", n,
              (unsigned long long)st.units_in, (unsigned long long)st.units_out,
              (unsigned long long)st.sinks[0].units, (unsigned long long)st.sinks[1].units);
  return 0;
}
