// `sinew demo`: the Marrow thesis image pipeline (Gaussian noise ->
// farm(Solarize, W) -> Mirror) over N generated S x S RGBA images; prints
// throughput and checks the outputs' checksum against the sequential reference.
#include "cli.hpp"

#include <sinew/sinew.hpp>
#include <sinew/workloads.hpp>

#include <algorithm>
#include <chrono>
#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <thread>
#include <vector>

namespace sinew_cli {
namespace {

namespace wl = sinew::workloads;

struct demo_options {
  std::size_t images = 32;
  std::size_t size = 1024;
  unsigned workers = 0;  // 0: hardware threads
  std::uint64_t seed = 42;
  float sigma = 20.0f;
  unsigned threshold = 128;
};

int run_demo(const demo_options& o) {
  const unsigned workers = o.workers ? o.workers : std::max(1u, std::thread::hardware_concurrency());
  const std::uint8_t threshold = std::uint8_t(o.threshold);
  std::printf("sinew demo: %zu images of %zux%zu RGBA8, pipeline(gaussian_noise, farm(solarize, %u), mirror)\n",
              o.images, o.size, o.size, workers);

  std::vector<sinew::array<wl::rgba8, 2>> in, out;
  in.reserve(o.images);
  for (std::size_t k = 0; k < o.images; ++k) in.push_back(wl::make_image(o.size, o.size, o.seed + k));

  sinew::graph g(wl::image_pipeline(o.seed, o.sigma, threshold, workers));
  auto t0 = std::chrono::steady_clock::now();
  g.run(in, out).get();
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();

  const double bytes = double(o.images) * double(o.size) * double(o.size) * sizeof(wl::rgba8);
  std::printf("time=%.3f s  %.1f images/s  %.1f MB/s\n", secs, double(o.images) / secs, bytes / secs / 1e6);

  if (out.size() != in.size()) {
    std::printf("MISMATCH: %zu results for %zu images\n", out.size(), in.size());
    return exit_failure;
  }
  std::uint64_t got = wl::fnv1a_offset, want = wl::fnv1a_offset;
  for (std::size_t k = 0; k < in.size(); ++k) {
    got = wl::checksum_of(out[k], got);
    want = wl::checksum_of(wl::image_pipeline_reference(in[k], o.seed, o.sigma, threshold), want);
  }
  const bool ok = got == want;
  std::printf("checksum=%016" PRIx64 " reference=%016" PRIx64 " %s\n", got, want, ok ? "OK" : "MISMATCH");
  return ok ? exit_ok : exit_failure;
}

}  // namespace

void add_demo(CLI::App& app, command_table& t) {
  auto o = std::make_shared<demo_options>();
  CLI::App* cmd = app.add_subcommand(
      "demo", "Run the image pipeline (Gaussian noise -> farm(Solarize) -> Mirror) and check it");
  cmd->add_option("--images,-n", o->images, "number of images")
      ->check(CLI::Range(std::size_t(1), std::size_t(1) << 20))
      ->capture_default_str();
  cmd->add_option("--size,-s", o->size, "image width and height in pixels")
      ->check(CLI::Range(std::size_t(1), std::size_t(1) << 16))
      ->capture_default_str();
  cmd->add_option("--workers,-w", o->workers, "replicas of the Solarize farm (default: hardware threads)")
      ->check(CLI::Range(1u, 4096u));
  cmd->add_option("--seed", o->seed, "seed of the images and of the noise")->capture_default_str();
  cmd->add_option("--sigma", o->sigma, "deviation of the Gaussian noise")
      ->check(CLI::Range(0.0f, 1000.0f))
      ->capture_default_str();
  cmd->add_option("--threshold", o->threshold, "Solarize threshold")->check(CLI::Range(0u, 255u))
      ->capture_default_str();
  cmd->callback([o, &t] { t.action = [o] { return run_demo(*o); }; });
}

}  // namespace sinew_cli
