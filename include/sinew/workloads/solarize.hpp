#pragma once
/// \file workloads/solarize.hpp
/// **Solarize** ([Marques14, §5.1.1] image filters): per colour channel
/// (R, G, B; alpha untouched) `c < t ? c : 255 - c`.
///
/// \code
/// std::vector<sinew::array<sinew::workloads::rgba8, 2>> in{sinew::workloads::make_image(64, 64, 1)}, out;
/// sinew::graph g(sinew::map<sinew::workloads::solarize>({128}));
/// g.run(in, out).get();
/// assert(out[0] == sinew::workloads::solarize_reference(in[0], 128));
/// \endcode
#include <cstddef>
#include <cstdint>

#include <sinew/engine/array.hpp>
#include <sinew/workloads/image.hpp>

namespace sinew::workloads {

/// Per-element leaf: solarizes one pixel with threshold `t`.
///
/// \code
/// auto node = sinew::map<sinew::workloads::solarize>({100});
/// \endcode
struct solarize {
  std::uint8_t t = 128;  ///< threshold: channels >= t are inverted
  /// One channel: `c < t ? c : 255 - c` (e.g. `channel(200, 128) == 55`).
  static std::uint8_t channel(std::uint8_t c, std::uint8_t t) { return c < t ? c : std::uint8_t(255 - c); }
  void operator()(rgba8 p, rgba8* o) const { *o = rgba8{channel(p.r, t), channel(p.g, t), channel(p.b, t), p.a}; }
};

/// Sequential reference (a plain loop, independent of the leaf).
///
/// \code
/// auto ref = sinew::workloads::solarize_reference(img, 128);
/// \endcode
inline sinew::array<rgba8, 2> solarize_reference(const sinew::array<rgba8, 2>& in, std::uint8_t t) {
  sinew::array<rgba8, 2> out(in.shape());
  for (std::size_t i = 0; i < in.size(); ++i) {
    rgba8 p = in[i];
    if (p.r >= t) p.r = std::uint8_t(255 - p.r);
    if (p.g >= t) p.g = std::uint8_t(255 - p.g);
    if (p.b >= t) p.b = std::uint8_t(255 - p.b);
    out[i] = p;
  }
  return out;
}

}  // namespace sinew::workloads
