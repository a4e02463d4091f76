// The C++ example of README.md, compiled and checked, so the README stays true.
#include <catch2/catch.hpp>

#include <sinew/sinew.hpp>
#include <sinew/workloads.hpp>

namespace readme {

using namespace sinew;
using workloads::rgba8;

// A per-element leaf: inputs by value, outputs by pointer (as in Marrow's Saxpy functor).
struct Solarize {
  std::uint8_t t;
  void operator()(rgba8 in, rgba8* out) const {
    auto s = [&](std::uint8_t c) { return std::uint8_t(c < t ? c : 255 - c); };
    *out = {s(in.r), s(in.g), s(in.b), in.a};
  }
};

struct Fails {
  void operator()(rgba8, rgba8*) const { throw std::runtime_error("no"); }
};

}  // namespace readme

TEST_CASE("the README example runs and matches the sequential reference", "[readme]") {
  using namespace readme;
  std::vector<array<rgba8, 2>> images, results;
  for (int k = 0; k < 6; ++k) images.push_back(workloads::make_image(64 + std::size_t(k), 48, std::uint64_t(k)));

  // Gaussian noise -> 4 replicas of Solarize (order kept) -> Mirror.
  graph g(pipeline(map(workloads::gaussian_noise{/*seed*/ 1, /*sigma*/ 8.f}),
                   farm(map(Solarize{128}), 4),
                   map<workloads::mirror>()));

  run_future f = g.run(images, results);
  f.get();
  CHECK(f.stats().units_out == images.size());
  REQUIRE(results.size() == images.size());
  for (std::size_t k = 0; k < images.size(); ++k)
    CHECK(results[k] == workloads::image_pipeline_reference(images[k], 1, 8.f, 128));

  graph bad(pipeline(map(workloads::gaussian_noise{1, 8.f}), farm(map(Fails{}), 4), map<workloads::mirror>()));
  CHECK_THROWS_WITH(bad.run(images, results).get(), "pipeline[1]/farm/map<Fails>: no");
}
