#pragma once
/// \file io/generator.hpp
/// A synthetic source: units of a given layout filled with deterministic
/// data, at full speed or at a fixed rate. Buffers are filled with tight
/// loops over whole buffers (no per-element virtual call).
///
/// Patterns (value of element `i` of buffer `b` of unit `seq`):
/// * "random": a pure function of (seed, seq, b, i). Integer and rgba8
///   buffers get uniformly random bytes, f32/f64 values in [0, 1). A layout
///   of exactly one 2-D rgba8 buffer gets `workloads::make_image(rows, cols,
///   hash64(seed, seq))` instead, so generated images look like the
///   image-filter workloads' inputs.
/// * "ramp": `(seq + i) mod 251`, converted to the element type (rgba8:
///   r = g = b = that value, a = 255).
/// * "constant": `value` converted to the element type (rgba8: r = g = b =
///   value clamped to 0..255, a = 255).
///
/// \code
/// sinew::io::generator_options o;
/// o.layout = sinew::io::record_layout::of<float>(sinew::shape::d1(1 << 20));
/// o.count = 100;                       // nullopt = until stop()
/// auto res = std::make_shared<sinew::io::checksum_result>();
/// g.run(sinew::io::generator(o), sinew::io::checksum(res)).get();
/// \endcode
#include <cstdint>
#include <optional>
#include <string>

#include <sinew/io/record_layout.hpp>
#include <sinew/engine/source.hpp>

namespace sinew::io {

struct generator_options {
  record_layout layout;
  /// "random", "ramp" or "constant".
  std::string pattern = "random";
  /// The "constant" pattern's value.
  double value = 1;
  std::uint64_t seed = 42;
  /// Units to produce; nullopt = unbounded (until `run_future::stop()`).
  std::optional<std::uint64_t> count;
  /// Units per second; 0 = as fast as the graph takes them. With a rate the
  /// source runs on its own thread and sleeps (interruptibly) between units;
  /// unit k is due at start + k / rate, so the rate does not drift.
  double rate = 0;
};

/// Throws `sinew::error` for a bad layout, an unknown pattern, a negative
/// rate, or "ramp"/"constant" on an element type it cannot convert to.
sinew::source generator(const generator_options& o);

}  // namespace sinew::io
