#pragma once
/// \file workloads/image_pipeline.hpp
/// The image pipeline of [Marques14, §5.1.1] (its running example):
/// Gaussian noise -> Solarize -> Mirror over a stream of RGBA images,
/// optionally with the Solarize stage replicated in an ordered farm.
///
/// \code
/// std::vector<sinew::array<sinew::workloads::rgba8, 2>> in, out;
/// for (int k = 0; k < 20; ++k) in.push_back(sinew::workloads::make_image(256, 256, k));
/// sinew::graph g(sinew::workloads::image_pipeline(42, 20.0f, 128, /*solarize farm*/ 4));
/// g.run(in, out).get();
/// assert(out[3] == sinew::workloads::image_pipeline_reference(in[3], 42, 20.0f, 128));
/// \endcode
#include <cstddef>
#include <cstdint>

#include <sinew/engine/array.hpp>
#include <sinew/skeletons/farm.hpp>
#include <sinew/skeletons/map.hpp>
#include <sinew/skeletons/pipeline.hpp>
#include <sinew/workloads/gaussian_noise.hpp>
#include <sinew/workloads/image.hpp>
#include <sinew/workloads/mirror.hpp>
#include <sinew/workloads/solarize.hpp>

namespace sinew::workloads {

/// `pipeline(map<gaussian_noise>{seed, sigma}, map<solarize>{threshold}, map<mirror>)`;
/// with `solarize_farm` > 0 the middle stage is `farm(map<solarize>, solarize_farm)`
/// (ordered, so results keep the input order).
///
/// \code
/// sinew::graph plain(sinew::workloads::image_pipeline(42, 20.0f, 128));
/// sinew::graph farmed(sinew::workloads::image_pipeline(42, 20.0f, 128, 4));
/// \endcode
inline sinew::node image_pipeline(std::uint64_t seed, float sigma, std::uint8_t threshold,
                                  unsigned solarize_farm = 0) {
  sinew::node sol = sinew::map<solarize>(solarize{threshold});
  if (solarize_farm > 0) sol = sinew::farm(sol, solarize_farm);
  return sinew::pipeline(sinew::map<gaussian_noise>(gaussian_noise{seed, sigma}), sol, sinew::map<mirror>());
}

/// Sequential reference of the whole pipeline for one image.
///
/// \code
/// auto ref = sinew::workloads::image_pipeline_reference(img, 42, 20.0f, 128);
/// \endcode
inline sinew::array<rgba8, 2> image_pipeline_reference(const sinew::array<rgba8, 2>& in, std::uint64_t seed,
                                                        float sigma, std::uint8_t threshold) {
  return mirror_reference(solarize_reference(gaussian_noise_reference(in, seed, sigma), threshold));
}

}  // namespace sinew::workloads
