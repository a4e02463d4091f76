// The built-in kernels a graph file can name: the benchmark workloads of
// [Marques14, §5.1.1] plus a few small utilities for streams and tests. Each
// has a sequential reference written as a plain loop over the whole unit,
// used by `sinew run --verify`.
#include <sinew/engine/run_id.hpp>
#include <sinew/json/kernel_registry.hpp>
#include <sinew/workloads.hpp>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstring>
#include <memory>
#include <thread>

#include "image_kernels.hpp"

namespace sinew {
namespace {

namespace wl = workloads;

template <class T>
T* out_ptr(layer& l, unsigned i) {
  return l[i].template data<T>();
}
template <class T>
const T* in_ptr(const layer& l, unsigned i) {
  return l[i].template data<T>();
}

/// y = k * x (f32).
struct scale_f32 {
  float k = 1.0f;
  void operator()(float x, float* y) const { *y = k * x; }
};
/// y = x * x (f32); with "reduce": "sum" a sum of squares.
struct square_f32 {
  void operator()(float x, float* y) const { *y = x * x; }
};
/// z = x + y (f32).
struct add_f32 {
  void operator()(float x, float y, float* z) const { *z = x + y; }
};
/// Bytes unchanged, after waiting `micros` per unit: a stage of known cost
/// for stream and back-pressure tests. Runs once per unit (one chunk).
struct delay_u8 {
  std::int64_t micros = 1000;
  void operator()(sinew::chunk c, sinew::in<std::uint8_t> x, sinew::out<std::uint8_t> y) const {
    if (c.begin == 0 && micros > 0) std::this_thread::sleep_for(std::chrono::microseconds(micros));
    std::memcpy(y.data() + c.begin, x.data() + c.begin, c.size());
  }
};
/// State of a kernel instance that starts afresh with every run of its
/// graph, unless told to keep it across runs (`across_runs`).
template <class T>
struct per_run {
  T value{};
  std::uint64_t run = 0;  // current_run_id() of the run that last used it
  bool across_runs = false;
  T& get() {
    if (const std::uint64_t id = current_run_id(); id != run) {
      if (!across_runs) value = T{};
      run = id;
    }
    return value;
  }
};
kernel_param across_runs_param() {
  return kernel_param::boolean("across_runs", "keep the state from one run of the loaded graph to the next", false);
}

/// Per record (a u8 key): how many records of its key this instance has
/// seen in this run, this one included (u32). The counts belong to the
/// kernel instance, so it must see its records one at a time, in order: one
/// call per unit (whole_unit_chunks) in a serial stage, e.g. a keyed farm's
/// replica.
struct running_count_u8 {
  std::shared_ptr<per_run<std::array<std::uint32_t, 256>>> s;
  void operator()(sinew::chunk c, sinew::in<std::uint8_t> key, sinew::out<std::uint32_t> count) const {
    auto& counts = s->get();
    for (std::size_t i = c.begin; i < c.end; ++i) count(i) = ++counts[key(i)];
  }
};
/// Per record (u8 key, f32 value): the key, and the mean of its key's values
/// so far, this one included; the sums live in the node, as running_count's.
struct running_mean_u8 {
  struct sums {
    std::array<double, 256> total{};
    std::array<std::uint64_t, 256> n{};
  };
  std::shared_ptr<per_run<sums>> state;
  void operator()(sinew::chunk c, sinew::in<std::uint8_t> key, sinew::in<float> value, sinew::out<std::uint8_t> key_out,
                  sinew::out<float> mean) const {
    sums* s = &state->get();
    for (std::size_t i = c.begin; i < c.end; ++i) {
      const std::uint8_t k = key(i);
      s->total[k] += value(i);
      key_out(i) = k;
      mean(i) = float(s->total[k] / double(++s->n[k]));
    }
  }
};
/// Byte-wise x XOR key (u8): a cheap reversible transform for stream tests.
struct xor_u8 {
  std::uint8_t key = 0x5a;
  void operator()(std::uint8_t x, std::uint8_t* y) const { *y = std::uint8_t(x ^ key); }
};

/// Reverses the bytes of each record (u8, in place): of each line of a
/// batch of text lines, not of the whole batch.
struct reverse_record {
  void operator()(record, inout<std::uint8_t> r) const { std::reverse(r.begin(), r.end()); }
};

map_options whole_unit_chunks() {
  map_options o;
  o.inline_below = std::size_t(-1);  // one call per unit: `delay` waits once
  return o;
}

}  // namespace

void register_builtin_kernels(kernel_registry& r) {
  using P = kernel_param;

  r.add_map<wl::saxpy>(
      "saxpy", "z = a*x + y over two f32 buffers (Marrow thesis Saxpy)", {P::real("a", "scalar factor", 2.0)},
      [](const kernel_args& a) { return wl::saxpy{a.get<float>("a")}; }, {}, 0,
      [](const layer& in, layer& out, const kernel_args& a) {
        const float k = a.get<float>("a");
        const float *x = in_ptr<float>(in, 0), *y = in_ptr<float>(in, 1);
        float* z = out_ptr<float>(out, 0);
        for (std::size_t i = 0; i < in.count(); ++i) z[i] = k * x[i] + y[i];
      });

  {
    map_options o;
    o.grain = 1;
    o.inline_below = 2;
    o.min_task = 1;
    r.add_map<wl::series_block>(
        "series",
        "Fourier coefficient i of (x+1)^x on [0,2] for every index i of the unit (Java Grande Series); "
        "reads no buffer, writes coeff {f64 a, f64 b}",
        {P::integer("steps", "trapezoid intervals per integral", 1000, 1, 1e7)},
        [](const kernel_args& a) { return wl::series_block{a.get<int>("steps")}; }, o, 1,
        [](const layer& in, layer& out, const kernel_args& a) {
          const int steps = a.get<int>("steps");
          wl::coeff* c = out_ptr<wl::coeff>(out, 0);
          for (std::size_t i = 0; i < in.count(); ++i) c[i] = wl::series_coefficient(i, steps);
        });
  }

  r.add_map<wl::segmentation>(
      "segmentation", "voxel -> 0 below lo, 255 above hi, 128 between (u8 volume)",
      {P::integer("lo", "below: black", 85, 0, 255), P::integer("hi", "above: white", 170, 0, 255)},
      [](const kernel_args& a) {
        return wl::segmentation{a.get<std::uint8_t>("lo"), a.get<std::uint8_t>("hi")};
      },
      {}, 0,
      [](const layer& in, layer& out, const kernel_args& a) {
        const auto lo = a.get<std::uint8_t>("lo"), hi = a.get<std::uint8_t>("hi");
        const std::uint8_t* v = in_ptr<std::uint8_t>(in, 0);
        std::uint8_t* o = out_ptr<std::uint8_t>(out, 0);
        for (std::size_t i = 0; i < in.count(); ++i) o[i] = v[i] > hi ? 255 : v[i] < lo ? 0 : 128;
      });

  r.add_map<wl::solarize>(
      "solarize", "per RGB channel: c < threshold ? c : 255 - c (rgba8, alpha kept)",
      {P::integer("threshold", "channels >= threshold are inverted", 128, 0, 255)},
      [](const kernel_args& a) { return wl::solarize{a.get<std::uint8_t>("threshold")}; }, {}, 0,
      [](const layer& in, layer& out, const kernel_args& a) {
        const auto t = a.get<int>("threshold");
        const std::uint8_t* p = reinterpret_cast<const std::uint8_t*>(in_ptr<wl::rgba8>(in, 0));
        std::uint8_t* o = reinterpret_cast<std::uint8_t*>(out_ptr<wl::rgba8>(out, 0));
        for (std::size_t i = 0; i < 4 * in.count(); ++i)
          o[i] = (i % 4 == 3 || p[i] < t) ? p[i] : std::uint8_t(255 - p[i]);
      });

  r.add_map<wl::gaussian_noise>(
      "gaussian_noise", "adds N(0, sigma) noise to the RGB channels (rgba8); deterministic per (seed, pixel)",
      {P::integer("seed", "noise seed", 42, 0, 9.007199254740992e15),
       P::real("sigma", "standard deviation", 20.0, 0.0, 1000.0)},
      [](const kernel_args& a) {
        return wl::gaussian_noise{a.get<std::uint64_t>("seed"), a.get<float>("sigma")};
      },
      {}, 0,
      [](const layer& in, layer& out, const kernel_args& a) {
        const auto seed = a.get<std::uint64_t>("seed");
        const auto sigma = a.get<float>("sigma");
        const wl::rgba8* p = in_ptr<wl::rgba8>(in, 0);
        wl::rgba8* o = out_ptr<wl::rgba8>(out, 0);
        for (std::size_t i = 0; i < in.count(); ++i) o[i] = wl::noisy_pixel(p[i], seed, sigma, i);
      });

  r.add_map<wl::mirror>(
      "mirror", "flips each row of a 2-D rgba8 image left to right", {},
      [](const kernel_args&) { return wl::mirror{}; }, {}, 2,
      [](const layer& in, layer& out, const kernel_args&) {
        const std::size_t rows = in.shape().ext[0], cols = in.shape().ext[1];
        const wl::rgba8* p = in_ptr<wl::rgba8>(in, 0);
        wl::rgba8* o = out_ptr<wl::rgba8>(out, 0);
        for (std::size_t y = 0; y < rows; ++y)
          for (std::size_t x = 0; x < cols; ++x) o[y * cols + x] = p[y * cols + cols - 1 - x];
      });

  r.add_map<wl::nbody_step>(
      "nbody_step",
      "one O(N^2) time step: reads positions {x,y,z,m} and velocities {x,y,z,w} (f32x4), writes new ones",
      {P::real("eps2", "softening squared", 500.0, 0.0), P::real("dt", "time step", 0.005, 0.0)},
      [](const kernel_args& a) { return wl::nbody_step{a.get<float>("eps2"), a.get<float>("dt")}; }, {}, 1,
      [](const layer& in, layer& out, const kernel_args& a) {
        const float eps2 = a.get<float>("eps2"), dt = a.get<float>("dt");
        const wl::body* pos = in_ptr<wl::body>(in, 0);
        const wl::vel* v = in_ptr<wl::vel>(in, 1);
        wl::body* np = out_ptr<wl::body>(out, 0);
        wl::vel* nv = out_ptr<wl::vel>(out, 1);
        for (std::size_t i = 0; i < in.count(); ++i) wl::nbody_advance(i, pos, v, in.count(), eps2, dt, np + i, nv + i);
      });

  r.add_map<scale_f32>(
      "scale", "y = k*x (f32)", {P::real("k", "factor", 1.0)},
      [](const kernel_args& a) { return scale_f32{a.get<float>("k")}; }, {}, 0,
      [](const layer& in, layer& out, const kernel_args& a) {
        const float k = a.get<float>("k");
        const float* x = in_ptr<float>(in, 0);
        float* y = out_ptr<float>(out, 0);
        for (std::size_t i = 0; i < in.count(); ++i) y[i] = k * x[i];
      });

  r.add_map<square_f32>(
      "square", "y = x*x (f32); reducible (sum, prod, min, max)", {},
      [](const kernel_args&) { return square_f32{}; }, {}, 0,
      [](const layer& in, layer& out, const kernel_args&) {
        const float* x = in_ptr<float>(in, 0);
        float* y = out_ptr<float>(out, 0);
        for (std::size_t i = 0; i < in.count(); ++i) y[i] = x[i] * x[i];
      });

  r.add_map<add_f32>(
      "add", "z = x + y (f32)", {}, [](const kernel_args&) { return add_f32{}; }, {}, 0,
      [](const layer& in, layer& out, const kernel_args&) {
        const float *x = in_ptr<float>(in, 0), *y = in_ptr<float>(in, 1);
        float* z = out_ptr<float>(out, 0);
        for (std::size_t i = 0; i < in.count(); ++i) z[i] = x[i] + y[i];
      });

  r.add_map<xor_u8>(
      "xor", "y = x XOR key, byte-wise (u8)", {P::integer("key", "byte to XOR with", 0x5a, 0, 255)},
      [](const kernel_args& a) { return xor_u8{a.get<std::uint8_t>("key")}; }, {}, 0,
      [](const layer& in, layer& out, const kernel_args& a) {
        const auto key = a.get<std::uint8_t>("key");
        const std::uint8_t* x = in_ptr<std::uint8_t>(in, 0);
        std::uint8_t* y = out_ptr<std::uint8_t>(out, 0);
        for (std::size_t i = 0; i < in.count(); ++i) y[i] = std::uint8_t(x[i] ^ key);
      });

  r.add_map<reverse_record>(
      "reverse", "per record (u8, in place): its bytes in reverse order (a text line reversed)", {},
      [](const kernel_args&) { return reverse_record{}; }, {}, 1,
      [](const layer&, layer& out, const kernel_args&) {  // in place: `out` is the input
        std::uint8_t* x = out_ptr<std::uint8_t>(out, 0);
        std::reverse(x, x + out.count());
      });

  // No separate reference: --verify runs a fresh instance of the kernel
  // itself, which counts the same records in the same per-key order.
  r.add_map<running_count_u8>(
      "running_count",
      "per record (u8 key): the records of its key so far in this run, this one included (u32); the counts "
      "live in the node (each keyed_farm replica has its own; 'across_runs' keeps them from run to run): use it "
      "where units come one at a time, in order, e.g. a keyed_farm routed by the key",
      {across_runs_param()},
      [](const kernel_args& a) {
        auto s = std::make_shared<per_run<std::array<std::uint32_t, 256>>>();
        s->across_runs = a.get<bool>("across_runs");
        return running_count_u8{std::move(s)};
      },
      whole_unit_chunks(), 1);

  r.add_map<running_mean_u8>(
      "running_mean",
      "per record (u8 key, f32 value): the key and the mean of its values so far, this one included (u8, f32); "
      "the sums live in the node, as running_count's (per run unless 'across_runs'): use it in a keyed_farm "
      "routed by the key",
      {across_runs_param()},
      [](const kernel_args& a) {
        auto s = std::make_shared<per_run<running_mean_u8::sums>>();
        s->across_runs = a.get<bool>("across_runs");
        return running_mean_u8{std::move(s)};
      },
      whole_unit_chunks(), 1);

  r.add_map<delay_u8>(
      "delay", "copies u8 data after waiting 'micros' microseconds per unit (a stage of known cost)",
      {P::integer("micros", "wait per unit in microseconds", 1000, 0, 60e6)},
      [](const kernel_args& a) { return delay_u8{a.get<std::int64_t>("micros")}; }, whole_unit_chunks(), 1,
      [](const layer& in, layer& out, const kernel_args&) {
        if (in.count()) std::memcpy(out_ptr<std::uint8_t>(out, 0), in_ptr<std::uint8_t>(in, 0), in.count());
      });

  detail::register_image_kernels(r);
}

}  // namespace sinew
