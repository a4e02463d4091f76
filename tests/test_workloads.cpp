// The workloads of [Marques14, §5.1.1] (include/sinew/workloads/): each leaf run through a graph
// against its plain sequential reference.
#include <catch2/catch.hpp>

#include <sinew/sinew.hpp>
#include <sinew/workloads.hpp>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

namespace wl = sinew::workloads;

namespace {

using image = sinew::array<wl::rgba8, 2>;

/// Index of the first element where a and b differ, -1 if equal (sizes
/// must match: a size mismatch reports -2).
template <class A, class B>
long long first_diff(const A& a, const B& b) {
  if (a.size() != b.size()) return -2;
  for (std::size_t i = 0; i < a.size(); ++i)
    if (std::memcmp(&a.data()[i], &b.data()[i], sizeof(a.data()[i])) != 0) return (long long)i;
  return -1;
}

/// The image sizes of the pipeline tests: square, non-square, odd widths,
/// a single row / column, and one big enough to be split across workers.
const std::vector<std::pair<std::size_t, std::size_t>> image_sizes = {
    {64, 64}, {37, 101}, {120, 33}, {1, 17}, {29, 1}, {200, 257}, {45, 63}};

std::vector<image> make_images(std::size_t n, std::uint64_t seed) {
  std::vector<image> v;
  for (std::size_t k = 0; k < n; ++k) {
    auto [r, c] = image_sizes[k % image_sizes.size()];
    v.push_back(wl::make_image(r, c, seed + k));
  }
  return v;
}

/// "rows x cols" of an image, for messages.
std::string dims(const image& img) {
  return std::to_string(img.shape().ext[0]) + "x" + std::to_string(img.shape().ext[1]);
}

bool all_zero(const void* p, std::size_t bytes) {
  const unsigned char* b = static_cast<const unsigned char*>(p);
  for (std::size_t i = 0; i < bytes; ++i)
    if (b[i]) return false;
  return true;
}

}  // namespace

TEST_CASE("workloads: FNV-1a 64 checksum matches the published test vectors", "[workloads]") {
  CHECK(wl::checksum("", 0) == 0xcbf29ce484222325ULL);
  CHECK(wl::checksum("a", 1) == 0xaf63dc4c8601ec8cULL);
  CHECK(wl::checksum("foobar", 6) == 0x85944171f73967e8ULL);
  // chaining equals hashing the concatenation
  CHECK(wl::checksum("bar", 3, wl::checksum("foo", 3)) == wl::checksum("foobar", 6));
  std::vector<std::uint8_t> v{1, 2, 3};
  CHECK(wl::checksum_of(v) == wl::checksum(v.data(), 3));
}

TEST_CASE("workloads: generators are deterministic and never all zeros", "[workloads]") {
  auto s1 = wl::make_saxpy_inputs(1000, 5), s2 = wl::make_saxpy_inputs(1000, 5), s3 = wl::make_saxpy_inputs(1000, 6);
  CHECK(s1.x == s2.x);
  CHECK(s1.y == s2.y);
  CHECK(s1.x != s3.x);
  CHECK_FALSE(all_zero(s1.x.data(), 4000));
  CHECK_FALSE(all_zero(s1.y.data(), 4000));

  image a = wl::make_image(33, 47, 2), b = wl::make_image(33, 47, 2), c = wl::make_image(33, 47, 3);
  CHECK(a == b);
  CHECK_FALSE(a == c);
  CHECK_FALSE(all_zero(a.data(), a.size() * 4));

  auto v1 = wl::make_volume(20, 21, 22, 4), v2 = wl::make_volume(20, 21, 22, 4);
  CHECK(v1 == v2);
  CHECK(v1.shape() == sinew::shape::d3(20, 21, 22));
  CHECK_FALSE(all_zero(v1.data(), v1.size()));

  auto n1 = wl::make_bodies(64, 8), n2 = wl::make_bodies(64, 8);
  CHECK(n1.positions == n2.positions);
  CHECK(n1.velocities == n2.velocities);
  CHECK_FALSE(all_zero(n1.velocities.data(), 64 * sizeof(wl::vel)));
  for (auto& p : n1.positions) {
    CHECK(p.m >= 1.0f);
    CHECK(p.x >= 3.0f);
    CHECK(p.x < 50.0f);
  }
}

TEST_CASE("workloads: saxpy through a map is bit-identical to the reference", "[workloads]") {
  const float a = 2.5f;
  sinew::graph g(sinew::map<wl::saxpy>({a}));
  for (std::size_t n : {std::size_t(1), std::size_t(1000), std::size_t(100003)}) {
    auto in = wl::make_saxpy_inputs(n, 11);
    std::vector<float> z;
    g.run(sinew::from_arrays(in.x, in.y), sinew::into_arrays(z)).get();
    auto ref = wl::saxpy_reference(a, in.x, in.y);
    INFO("n = " << n);
    REQUIRE(z.size() == n);
    CHECK(first_diff(z, ref) == -1);
  }

  // A stream of units, each holding (x, y).
  using item = std::tuple<std::vector<float>, std::vector<float>>;
  std::vector<item> items;
  for (std::size_t k = 0; k < 6; ++k) {
    auto in = wl::make_saxpy_inputs(5000 + 777 * k, 100 + k);
    items.emplace_back(std::move(in.x), std::move(in.y));
  }
  std::vector<std::vector<float>> out;
  g.run(items, out).get();
  REQUIRE(out.size() == items.size());
  for (std::size_t k = 0; k < items.size(); ++k) {
    INFO("unit " << k);
    CHECK(first_diff(out[k], wl::saxpy_reference(a, std::get<0>(items[k]), std::get<1>(items[k]))) == -1);
  }
}

TEST_CASE("workloads: series matches Java Grande's reference values", "[workloads]") {
  // JGFSeriesBench.JGFvalidate: first 4 coefficients to 1e-12.
  for (std::size_t i = 0; i < 4; ++i) {
    wl::coeff c = wl::series_coefficient(i);
    INFO("coefficient " << i);
    CHECK(std::abs(c.a - wl::series_jgf_reference[i].a) <= 1e-12);
    CHECK(std::abs(c.b - wl::series_jgf_reference[i].b) <= 1e-12);
  }
}

TEST_CASE("workloads: series through a map over a buffer-less unit matches the reference", "[workloads]") {
  auto close = [](double x, double r) { return std::abs(x - r) <= 1e-9 * std::max(1.0, std::abs(r)); };
  struct variant {
    const char* name;
    sinew::node node;
    std::size_t n;
    int steps;
  };
  // series_node(): per-chunk leaf split down to single coefficients;
  // map<series>: per-element leaf with sinew::index (600 < one task; 6000
  // with cheap 50-step integrals is split across tasks).
  std::vector<variant> variants = {{"series_node", wl::series_node(), 600, 1000},
                                   {"map<series>", sinew::map<wl::series>(), 600, 1000},
                                   {"map<series> steps=50", sinew::map<wl::series>({50}), 6000, 50}};
  for (auto& v : variants) {
    const auto ref = wl::series_reference(v.n, v.steps);
    sinew::graph g(v.node);
    std::vector<std::vector<wl::coeff>> out;
    g.run(wl::series_source(v.n, 2), sinew::into(out)).get();
    INFO(v.name);
    REQUIRE(out.size() == 2);
    for (auto& o : out) {
      REQUIRE(o.size() == v.n);
      std::size_t bad = 0, exact = 0;
      for (std::size_t i = 0; i < v.n; ++i) {
        bad += !(close(o[i].a, ref[i].a) && close(o[i].b, ref[i].b));
        exact += o[i] == ref[i];
      }
      CHECK(bad == 0);
      // Same code, same order of operations: expected to be bit-identical.
      CHECK(exact == v.n);
    }
  }
}

TEST_CASE("workloads: segmentation of a volume is bit-identical to the reference", "[workloads]") {
  sinew::graph g(sinew::map<wl::segmentation>({85, 170}));
  for (auto dims : {std::tuple<std::size_t, std::size_t, std::size_t>{100, 100, 100}, {7, 13, 31}, {1, 1, 1}}) {
    auto [p, r, c] = dims;
    auto vol = wl::make_volume(p, r, c, 21);
    sinew::array<std::uint8_t, 3> seg;
    g.run(sinew::from_arrays(vol), sinew::into_arrays(seg)).get();
    auto ref = wl::segmentation_reference(vol, 85, 170);
    INFO("volume " << p << "x" << r << "x" << c);
    REQUIRE(seg.shape() == vol.shape());
    CHECK(first_diff(seg, ref) == -1);
    if (p == 100) {  // the generated volume spans all three classes
      std::size_t cls[3] = {0, 0, 0};
      for (std::uint8_t v : seg) cls[v == 0 ? 0 : v == 128 ? 1 : 2]++;
      CHECK(cls[0] > 0);
      CHECK(cls[1] > 0);
      CHECK(cls[2] > 0);
      CHECK(cls[0] + cls[1] + cls[2] == seg.size());
    }
  }
}

TEST_CASE("workloads: solarize is bit-identical to the reference and keeps alpha", "[workloads]") {
  auto in = make_images(8, 300);
  std::vector<image> out;
  sinew::graph g(sinew::map<wl::solarize>({100}));
  g.run(in, out).get();
  REQUIRE(out.size() == in.size());
  for (std::size_t k = 0; k < in.size(); ++k) {
    INFO("image " << k);
    REQUIRE(out[k].shape() == in[k].shape());
    CHECK(first_diff(out[k], wl::solarize_reference(in[k], 100)) == -1);
    for (std::size_t i = 0; i < in[k].size(); ++i) REQUIRE(out[k][i].a == in[k][i].a);
  }
  wl::rgba8 o;
  wl::solarize{128}(wl::rgba8{127, 128, 255, 7}, &o);
  CHECK(o == wl::rgba8{127, 127, 0, 7});
}

TEST_CASE("workloads: gaussian noise is bit-identical to the reference", "[workloads]") {
  auto in = make_images(7, 400);
  std::vector<image> out;
  sinew::graph g(sinew::map<wl::gaussian_noise>({77, 20.0f}));
  g.run(in, out).get();
  REQUIRE(out.size() == in.size());
  for (std::size_t k = 0; k < in.size(); ++k) {
    INFO("image " << k);
    CHECK(first_diff(out[k], wl::gaussian_noise_reference(in[k], 77, 20.0f)) == -1);
    CHECK_FALSE(out[k] == in[k]);
  }
}

TEST_CASE("workloads: gaussian noise has the requested mean and deviation", "[workloads]") {
  image grey(sinew::shape::d2(256, 256));
  for (auto& p : grey) p = wl::rgba8{128, 128, 128, 255};
  const float sigma = 10.0f;
  auto noisy = wl::gaussian_noise_reference(grey, 5, sigma);
  double sum[3] = {0, 0, 0}, sq[3] = {0, 0, 0};
  for (auto& p : noisy) {
    double d[3] = {p.r - 128.0, p.g - 128.0, p.b - 128.0};
    for (int ch = 0; ch < 3; ++ch) sum[ch] += d[ch], sq[ch] += d[ch] * d[ch];
    REQUIRE(p.a == 255);
  }
  const double n = double(noisy.size());
  for (int ch = 0; ch < 3; ++ch) {
    double mean = sum[ch] / n, sd = std::sqrt(sq[ch] / n - mean * mean);
    INFO("channel " << ch << " mean " << mean << " sd " << sd);
    CHECK(std::abs(mean) < 0.2);
    // rounding adds 1/12 of a level squared to the variance
    CHECK(std::abs(sd - std::sqrt(sigma * sigma + 1.0 / 12)) < 0.2);
  }
  // Different seeds, different fields; same seed, same field.
  CHECK_FALSE(wl::gaussian_noise_reference(grey, 6, sigma) == noisy);
  CHECK(wl::gaussian_noise_reference(grey, 5, sigma) == noisy);
}

TEST_CASE("workloads: mirror per chunk is bit-identical to the reference", "[workloads]") {
  auto in = make_images(7, 500);
  in.push_back(wl::make_image(1000, 3, 9));  // many rows: split across workers
  std::vector<image> out;
  sinew::graph g(sinew::map<wl::mirror>());
  g.run(in, out).get();
  REQUIRE(out.size() == in.size());
  for (std::size_t k = 0; k < in.size(); ++k) {
    INFO("image " << k << " " << dims(in[k]));
    CHECK(first_diff(out[k], wl::mirror_reference(in[k])) == -1);
    const std::size_t rows = in[k].shape().ext[0], cols = in[k].shape().ext[1];
    CHECK(out[k](rows - 1, 0) == in[k](rows - 1, cols - 1));
  }
}

TEST_CASE("workloads: image pipeline over a stream of images matches the reference", "[workloads]") {
  const std::uint64_t seed = 1234;
  const float sigma = 18.0f;
  const std::uint8_t threshold = 140;
  auto in = make_images(24, 600);
  std::vector<image> ref;
  std::uint64_t ref_sum = wl::fnv1a_offset;
  for (auto& img : in) {
    ref.push_back(wl::image_pipeline_reference(img, seed, sigma, threshold));
    ref_sum = wl::checksum_of(ref.back(), ref_sum);
  }

  for (unsigned farm : {0u, 4u}) {
    sinew::graph g(wl::image_pipeline(seed, sigma, threshold, farm));
    for (int rep = 0; rep < 2; ++rep) {  // a graph can be run again
      std::vector<image> out;
      g.run(in, out).get();
      INFO("solarize farm " << farm << ", run " << rep);
      REQUIRE(out.size() == in.size());
      std::uint64_t sum = wl::fnv1a_offset;
      for (std::size_t k = 0; k < in.size(); ++k) {
        INFO("image " << k << " " << dims(in[k]));
        REQUIRE(out[k].shape() == in[k].shape());
        CHECK(first_diff(out[k], ref[k]) == -1);
        sum = wl::checksum_of(out[k], sum);
      }
      CHECK(sum == ref_sum);
    }
  }
}

TEST_CASE("workloads: image pipeline stages compose like the separate maps", "[workloads]") {
  // The reference pipeline is the composition of the per-stage references,
  // and the per-stage maps chained by hand give the same images.
  auto in = make_images(3, 700);
  sinew::graph noise(sinew::map<wl::gaussian_noise>({9, 12.0f})), sol(sinew::map<wl::solarize>({90})),
      mir(sinew::map<wl::mirror>());
  std::vector<image> a, b, c;
  noise.run(in, a).get();
  sol.run(a, b).get();
  mir.run(b, c).get();
  for (std::size_t k = 0; k < in.size(); ++k) {
    INFO("image " << k);
    CHECK(c[k] == wl::image_pipeline_reference(in[k], 9, 12.0f, 90));
  }
}

TEST_CASE("workloads: nbody for_loop of 3 steps is bit-identical to the reference", "[workloads]") {
  // Each body sums forces over j = 0..N-1 in order in both the leaf and the
  // reference (the same out-of-line nbody_advance), so the results are
  // compared exactly.
  const std::size_t n = 257;
  auto start = wl::make_bodies(n, 31);
  for (std::size_t steps : {std::size_t(1), std::size_t(3)}) {
    std::vector<wl::body> pos;
    std::vector<wl::vel> vel;
    sinew::graph g(wl::nbody_simulation(steps));
    g.run(sinew::from_arrays(start.positions, start.velocities), sinew::into_arrays(pos, vel)).get();
    auto ref = wl::nbody_reference(start, steps);
    INFO("steps " << steps);
    REQUIRE(pos.size() == n);
    REQUIRE(vel.size() == n);
    CHECK(first_diff(pos, ref.positions) == -1);
    CHECK(first_diff(vel, ref.velocities) == -1);
    CHECK_FALSE(pos == start.positions);  // the bodies moved
  }
  // The input arrays are not modified by the loop.
  CHECK(start.positions == wl::make_bodies(n, 31).positions);
}
