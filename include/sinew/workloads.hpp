#pragma once
/// \file workloads.hpp
/// The benchmark workloads of [Marques14, §5.1.1] as Sinew leaves, each
/// with a plain sequential reference and a deterministic input generator,
/// in namespace `sinew::workloads`:
///
/// | header                          | workload                                   | leaf form          |
/// |---------------------------------|--------------------------------------------|--------------------|
/// | workloads/saxpy.hpp             | z = a*x + y (float32)                       | per element        |
/// | workloads/series.hpp            | Fourier coefficients (Java Grande Series)  | per element, index |
/// | workloads/segmentation.hpp      | 3-D volume thresholding                    | per element        |
/// | workloads/solarize.hpp          | RGBA solarize                              | per element        |
/// | workloads/gaussian_noise.hpp    | RGBA Gaussian noise (counter-based)        | per element, index |
/// | workloads/mirror.hpp            | RGBA horizontal mirror                     | per chunk (rows)   |
/// | workloads/nbody.hpp             | O(N²) NBody step (AMD APP SDK sample)      | per chunk          |
/// | workloads/image_pipeline.hpp    | noise -> solarize -> mirror pipeline       | pipeline           |
/// | workloads/checksum.hpp          | FNV-1a 64 checksum of outputs              | —                  |
///
/// \code
/// #include <sinew/sinew.hpp>
/// #include <sinew/workloads.hpp>
/// namespace wl = sinew::workloads;
/// std::vector<sinew::array<wl::rgba8, 2>> in{wl::make_image(480, 640, 1)}, out;
/// sinew::graph g(wl::image_pipeline(/*seed*/ 42, /*sigma*/ 20.0f, /*threshold*/ 128));
/// g.run(in, out).get();
/// assert(out[0] == wl::image_pipeline_reference(in[0], 42, 20.0f, 128));
/// \endcode
#include <sinew/workloads/checksum.hpp>
#include <sinew/workloads/gaussian_noise.hpp>
#include <sinew/workloads/image.hpp>
#include <sinew/workloads/image_pipeline.hpp>
#include <sinew/workloads/mirror.hpp>
#include <sinew/workloads/nbody.hpp>
#include <sinew/workloads/random.hpp>
#include <sinew/workloads/saxpy.hpp>
#include <sinew/workloads/segmentation.hpp>
#include <sinew/workloads/series.hpp>
#include <sinew/workloads/solarize.hpp>
