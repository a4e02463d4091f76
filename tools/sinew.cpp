// The `sinew` command-line tool.
//
//   sinew --version                      prints "sinew <version>"
//   sinew demo [--images N] [--size S] [--workers W] [--seed X] [--sigma F] [--threshold T]
//       runs the Marrow thesis image pipeline (Gaussian noise -> farm(Solarize, W)
//       -> Mirror) over N generated S x S RGBA images, prints throughput, and
//       checks the outputs' checksum against the sequential reference.
//
// Exit codes: 0 success, 1 failure (checksum mismatch, run error), 2 usage error.
//
// Adding a subcommand: write `struct <name>_options`, `int run_<name>(const
// <name>_options&)` and `void add_<name>(CLI::App&, command_table&)`, and call
// add_<name> from main().
#include <CLI/CLI.hpp>

#include <sinew/sinew.hpp>
#include <sinew/workloads.hpp>

#include <algorithm>
#include <chrono>
#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace {

namespace wl = sinew::workloads;

constexpr int exit_ok = 0;
constexpr int exit_failure = 1;
constexpr int exit_usage = 2;

/// The action of the subcommand the user picked (set by CLI11 callbacks).
struct command_table {
  std::function<int()> action;
};

// ---------------------------------------------------------------------------
// sinew demo
// ---------------------------------------------------------------------------

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

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Sinew data-flow skeleton engine", "sinew"};
  app.set_version_flag("--version", std::string("sinew ") + sinew::version_string(), "Print the version and exit");
  app.require_subcommand(1);

  command_table table;
  add_demo(app, table);

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    app.exit(e);  // prints the message
    return exit_usage;
  }

  if (!table.action) {
    std::fprintf(stderr, "sinew: no subcommand\n");
    return exit_usage;
  }
  try {
    return table.action();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "sinew: error: %s\n", e.what());
    return exit_failure;
  }
}
