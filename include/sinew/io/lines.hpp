#pragma once
/// \file io/lines.hpp
/// Text lines as units: one unit per line, one 1-D `u8` buffer holding the
/// line's bytes without the newline. An empty line is a unit of zero
/// elements (it flows through maps, which have nothing to do for it). A last
/// line without a newline is still a line; "\r\n" keeps its '\r'.
///
/// \code
/// // Upper-case standard input to standard output.
/// struct upper { void operator()(std::uint8_t& c) const { c = std::toupper(c); } };
/// sinew::graph g(sinew::map<upper>());
/// g.run(sinew::io::read_lines(0), sinew::io::write_lines(1)).get();
/// \endcode
#include <sinew/engine/sink.hpp>
#include <sinew/engine/source.hpp>

namespace sinew::io {

/// Lines read from `fd` (not closed); blocking source, interrupted by stop().
sinew::source read_lines(int fd);
/// Writes each unit's buffer 0 (1-byte elements) followed by '\n', in
/// sequence order; flushes on finish(). Errors name the descriptor.
sinew::sink write_lines(int fd);

}  // namespace sinew::io
