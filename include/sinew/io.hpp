#pragma once
/// \file io.hpp
/// Stream sources and sinks: a synthetic generator, binary record files and
/// pipes, followed files, text lines, PPM image directories, TCP, and a
/// checksum sink.
/// Formats and error cases: docs/io.md.
///
/// \code
/// #include <sinew/io.hpp>
/// auto l = sinew::io::record_layout::of<float>(sinew::shape::d1(1 << 16));
/// auto res = std::make_shared<sinew::io::checksum_result>();
/// g.run(sinew::io::read_file("in.bin", l), sinew::io::checksum(res)).get();
/// \endcode
#include <sinew/io/batching.hpp>
#include <sinew/io/checksum.hpp>
#include <sinew/io/follow.hpp>
#include <sinew/io/generator.hpp>
#include <sinew/io/lines.hpp>
#include <sinew/io/ppm.hpp>
#include <sinew/io/record_layout.hpp>
#include <sinew/io/records.hpp>
#include <sinew/io/tcp.hpp>
#include <sinew/io/type_names.hpp>

namespace sinew::io {
using sinew::discard;  ///< the null sink, from sink.hpp
}  // namespace sinew::io
