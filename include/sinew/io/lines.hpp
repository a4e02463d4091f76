#pragma once
/// \file io/lines.hpp
/// Text lines as units. A line is its bytes without the newline ("\r\n"
/// keeps its '\r'); a last line without a newline is still a line. Read as
/// record batches (batching.hpp, the default where the graph allows it),
/// a unit holds many lines: one 1-D `u8` buffer of their bytes back to back
/// and a record index of their offsets (records.hpp). One unit per line
/// otherwise: its bytes, an empty line a unit of zero elements.
///
/// \code
/// // Upper-case standard input to standard output.
/// struct upper { void operator()(std::uint8_t& c) const { c = std::toupper(c); } };
/// sinew::graph g(sinew::map<upper>());
/// g.run(sinew::io::read_lines(0), sinew::io::write_lines(1)).get();
/// \endcode
#include <string>

#include <sinew/engine/sink.hpp>
#include <sinew/engine/source.hpp>
#include <sinew/io/batching.hpp>

namespace sinew::io {

/// Lines read from `fd` (not closed); a pipe or terminal is read on a
/// thread of its own, and a read waiting for data returns on stop().
sinew::source read_lines(int fd, batching b = {});
/// Lines of the file at `path`; throws `sinew::error` naming it if it cannot
/// be opened.
sinew::source read_lines_file(std::string path, batching b = {});
/// Writes every record (line) of buffer 0 (1-byte elements) followed by
/// '\n', in sequence order; flushes on finish(). Errors name the descriptor.
sinew::sink write_lines(int fd);
/// The same into the file at `path` (created or truncated when the run starts).
sinew::sink write_lines_file(std::string path);

}  // namespace sinew::io
