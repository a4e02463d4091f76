// image_pipeline: the image pipeline of [Marques14, §5.1.1]
// (Gaussian noise -> Solarize -> Mirror) over a stream of RGBA images of
// 1024^2 ... 8192^2 pixels: Sinew's `workloads::image_pipeline` vs the same
// three stages written directly as a oneTBB flow graph.
//
//   sinew pipeline         image_pipeline(seed, sigma, t, farm = threads): three maps (each image
//                          split over the workers), Solarize replicated in an ordered farm;
//                          g.run(images, results)
//   sinew pipeline, no farm  informational: the same without the farm
//   tbb flow graph         input_node -> limiter_node(L) -> noise function_node (serial) ->
//                          solarize function_node (unlimited, like the farm) -> mirror
//                          function_node (serial) whose continue_msg frees a limiter slot.
//                          Each stage splits its image with tbb::parallel_for (like Sinew's
//                          maps); intermediate images come from a free list (like Sinew's
//                          buffer pool); L = the number of units Sinew's queues hold
//                          (run_stats::capacity_total), so both bound the images in flight alike.
//
// Metric: images/s (higher is better). Every output image is compared with
// the sequential reference (workloads::image_pipeline_reference).
//
// RATIO per size: image_pipeline_<side> = Sinew images/s / flow graph
// images/s (medians), target >= 1.0.
#include <algorithm>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include <oneapi/tbb/blocked_range.h>
#include <oneapi/tbb/concurrent_queue.h>
#include <oneapi/tbb/flow_graph.h>
#include <oneapi/tbb/parallel_for.h>
#include <sinew/sinew.hpp>
#include <sinew/workloads.hpp>

#include "bench.hpp"

namespace {

namespace sb = sinew_bench;
namespace wl = sinew::workloads;
using image = sinew::array<wl::rgba8, 2>;

constexpr std::uint64_t kSeed = 42;
constexpr float kSigma = 20.0f;
constexpr std::uint8_t kThreshold = 128;

/// Spare intermediate images for the flow graph (reused, like Sinew's pool).
class image_pool {
 public:
  explicit image_pool(std::size_t pixels) : pixels_(pixels) {}
  wl::rgba8* take() {
    wl::rgba8* p = nullptr;
    if (free_.try_pop(p)) return p;
    std::lock_guard<std::mutex> lk(m_);
    all_.push_back(std::make_unique<wl::rgba8[]>(pixels_));
    return all_.back().get();
  }
  void give(wl::rgba8* p) { free_.push(p); }

 private:
  std::size_t pixels_;
  tbb::concurrent_queue<wl::rgba8*> free_;
  std::mutex m_;
  std::vector<std::unique_ptr<wl::rgba8[]>> all_;
};

/// One image in flight through the flow graph.
struct msg {
  std::size_t index = 0;
  wl::rgba8* a = nullptr;  ///< noise output
  wl::rgba8* b = nullptr;  ///< solarize output
};

/// The three stages as a oneTBB flow graph; out[i] = pipeline(in[i]).
void flow_graph_run(std::vector<image>& in, std::vector<image>& out, image_pool& pool, std::size_t limit) {
  namespace fl = tbb::flow;
  const std::size_t rows = in[0].shape().ext[0], cols = in[0].shape().ext[1];
  auto rows_for = [rows](auto body) {
    tbb::parallel_for(tbb::blocked_range<std::size_t>(0, rows), [&](const tbb::blocked_range<std::size_t>& r) {
      for (std::size_t y = r.begin(); y < r.end(); ++y) body(y);
    });
  };
  fl::graph g;
  std::size_t next = 0;
  fl::input_node<msg> src(g, [&](tbb::flow_control& fc) -> msg {
    if (next >= in.size()) {
      fc.stop();
      return msg{};
    }
    return msg{next++, nullptr, nullptr};
  });
  fl::limiter_node<msg> lim(g, limit);
  fl::function_node<msg, msg> noise(g, fl::serial, [&](msg m) {
    m.a = pool.take();
    const wl::rgba8* s = in[m.index].data();
    rows_for([&](std::size_t y) {
      for (std::size_t x = y * cols; x < (y + 1) * cols; ++x) m.a[x] = wl::noisy_pixel(s[x], kSeed, kSigma, x);
    });
    return m;
  });
  fl::function_node<msg, msg> solar(g, fl::unlimited, [&](msg m) {
    m.b = pool.take();
    const wl::solarize f{kThreshold};
    rows_for([&](std::size_t y) {
      for (std::size_t x = y * cols; x < (y + 1) * cols; ++x) f(m.a[x], m.b + x);
    });
    pool.give(m.a);
    return m;
  });
  fl::function_node<msg, fl::continue_msg> mirror(g, fl::serial, [&](msg m) {
    wl::rgba8* d = out[m.index].data();
    rows_for([&](std::size_t y) {
      const wl::rgba8* s = m.b + y * cols;
      wl::rgba8* o = d + y * cols;
      for (std::size_t x = 0; x < cols; ++x) o[x] = s[cols - 1 - x];
    });
    pool.give(m.b);
    return fl::continue_msg();
  });
  fl::make_edge(src, lim);
  fl::make_edge(lim, noise);
  fl::make_edge(noise, solar);
  fl::make_edge(solar, mirror);
  fl::make_edge(mirror, lim.decrementer());
  src.activate();
  g.wait_for_all();
}

void one_size(sb::context& ctx, std::size_t side, std::size_t frames, bool informational) {
  const std::size_t distinct = std::min<std::size_t>(frames, 4);
  std::vector<image> in, ref, out;
  for (std::size_t k = 0; k < distinct; ++k) {
    in.push_back(wl::make_image(side, side, k + 1));
    ref.push_back(wl::image_pipeline_reference(in.back(), kSeed, kSigma, kThreshold));
  }
  for (std::size_t k = distinct; k < frames; ++k) in.push_back(in[k % distinct]);
  const std::string sz = std::to_string(side);
  auto images_per_s = [frames](double s) { return double(frames) / s; };
  auto poison = [&] {
    out.resize(frames);
    for (auto& o : out) {
      if (!(o.shape() == in[0].shape())) o = image(in[0].shape());
      std::fill(o.begin(), o.end(), wl::rgba8{7, 7, 7, 7});
    }
  };
  auto check = [&]() -> std::string {
    if (out.size() != frames) return "got " + std::to_string(out.size()) + " images, expected " + std::to_string(frames);
    for (std::size_t k = 0; k < frames; ++k)
      if (!(out[k] == ref[k % distinct])) return "image " + std::to_string(k) + " differs from the reference";
    return {};
  };

  const unsigned threads = sb::thread_count();
  sinew::graph g(wl::image_pipeline(kSeed, kSigma, kThreshold, threads));
  std::size_t in_flight = 0;
  const auto& s_sinew = ctx.measure({.name = sz + "^2 sinew pipeline",
                                     .unit = "images/s",
                                     .better = sb::higher,
                                     .setup = poison,
                                     .run =
                                         [&] {
                                           auto f = g.run(in, out);
                                           f.get();
                                           in_flight = f.stats().capacity_total;
                                         },
                                     .to_metric = images_per_s,
                                     .check = check,
                                     .note = "image_pipeline(..., farm " + std::to_string(threads) + ")"});
  sinew::graph g0(wl::image_pipeline(kSeed, kSigma, kThreshold, 0));
  if (informational)
    ctx.measure({.name = sz + "^2 sinew pipeline, no farm",
                 .unit = "images/s",
                 .better = sb::higher,
                 .setup = poison,
                 .run = [&] { g0.run(in, out).get(); },
                 .to_metric = images_per_s,
                 .check = check,
                 .note = "informational: solarize not farmed"});
  // Same bound on images in flight as Sinew's queues (at least 2 per stage
  // when the Sinew variant was filtered out by --variant).
  const std::size_t limit = in_flight ? in_flight : 2 * 3 + 2 * threads;
  image_pool pool(side * side);
  const auto& s_fg = ctx.measure({.name = sz + "^2 tbb flow graph",
                                  .unit = "images/s",
                                  .better = sb::higher,
                                  .setup = poison,
                                  .run = [&] { sb::peer_arena().execute([&] { flow_graph_run(in, out, pool, limit); }); },
                                  .to_metric = images_per_s,
                                  .check = check,
                                  .note = "limiter_node(" + std::to_string(limit) +
                                          "), noise serial, solarize unlimited, mirror serial"});
  if (s_sinew.stats.n && s_fg.stats.n)
    ctx.ratio("image_pipeline_" + sz, s_sinew.stats.median / s_fg.stats.median, 1.0, sb::higher,
              "sinew images/s / flow graph images/s, " + sz + "^2 (medians)");
}

void run(sb::context& ctx) {
  // Frames per size: about 2^24 pixels per run (full and quick; smoke 2^18),
  // at least 2 images so that the stages overlap.
  const std::vector<std::size_t> sides = ctx.smoke()   ? std::vector<std::size_t>{256}
                                         : ctx.quick() ? std::vector<std::size_t>{1024}
                                                       : std::vector<std::size_t>{1024, 2048, 4096, 8192};
  const std::size_t pixels = ctx.smoke() ? (1u << 18) : (1u << 24);
  ctx.param("threads", sb::thread_count());
  ctx.param("seed_sigma_threshold", "42, 20, 128");
  for (std::size_t side : sides) {
    const std::size_t frames = std::max<std::size_t>(2, pixels / (side * side));
    ctx.param("frames_" + std::to_string(side), frames);
    one_size(ctx, side, frames, side == sides.front());  // the no-farm variant at the first size only
  }
}

const sb::registrar reg("image_pipeline",
                        "noise -> solarize -> mirror over RGBA image streams 1024^2..8192^2 (quick 1024^2): images/s "
                        "of Sinew image_pipeline vs the same stages in a oneTBB flow graph",
                        run);

}  // namespace
