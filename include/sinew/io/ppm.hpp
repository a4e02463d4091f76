#pragma once
/// \file io/ppm.hpp
/// Directories of PPM images (Netpbm: P6 binary and P3 ASCII, maxval 255).
/// One unit per image, one 2-D `rgba8` buffer [rows x cols], alpha 255 on
/// input and dropped on output.
///
/// \code
/// sinew::graph g(sinew::pipeline(sinew::map<Solarize>(), sinew::map<Mirror>()));
/// g.run(sinew::io::read_ppm_dir("frames/"), sinew::io::write_ppm_dir("out/", "frame")).get();
/// // out/frame_000000.ppm, out/frame_000001.ppm, ...
/// \endcode
#include <string>

#include <sinew/engine/array.hpp>
#include <sinew/engine/sink.hpp>
#include <sinew/engine/source.hpp>
#include <sinew/workloads/image.hpp>

namespace sinew::io {

/// Every `*.ppm` file of `dir`, sorted by name. Throws `sinew::error` naming
/// the directory if it cannot be read. A bad file (header, maxval, short
/// pixel data) fails the run naming the file and the problem, after the
/// images before it were delivered.
sinew::source read_ppm_dir(std::string dir);
/// Writes unit k as `dir/prefix_<k, 6 digits>.ppm` (P6). Creates `dir`
/// (and its parents). Units must have one 2-D buffer of 4-byte pixels.
sinew::sink write_ppm_dir(std::string dir, std::string prefix = "frame");

/// One PPM image (P6 or P3, maxval 255) as rgba8 with alpha 255; errors name
/// `path` and what was wrong.
sinew::array<workloads::rgba8, 2> read_ppm(const std::string& path);
/// Writes `img` (rows x cols, alpha dropped) as a P6 file.
void write_ppm(const std::string& path, const sinew::array<workloads::rgba8, 2>& img);

}  // namespace sinew::io
