#pragma once
/// \file io/records.hpp
/// Binary record streams: sources that read, and sinks that write, units as
/// raw records (each unit's layer-0 buffers back to back, see
/// record_layout.hpp), from files, pipes and standard input/output.
///
/// Sources read straight into pooled buffers (bulk `read`, no per-element
/// work) and run on a thread of their own: a read may block. A blocked read
/// returns when the run is stopped (`poll` on the descriptor and an
/// eventfd), so Ctrl-C on `sinew` drains. A stream that ends inside a
/// record is an error naming the file (or descriptor) and the byte offset of
/// the partial record; it is raised after every whole record before it has
/// been delivered (see `source_impl::after_delivery`).
///
/// Sources group records into record batches where the graph allows it
/// (batching.hpp): a unit of `k` records has the layout's shape with its
/// outermost extent times `k`, each buffer holding that buffer of every
/// record in turn. Sinks write records as they were read.
///
/// Sinks write each unit's layer-0 buffers back to back (`shape.count()`
/// elements per buffer), in sequence order (units arriving early through an
/// unordered farm are held until their turn), through a 256 KiB buffer
/// (large units are written directly with `writev`), and flush on
/// `finish()`. A write error (disk full, closed pipe: SIGPIPE is blocked on
/// the writing thread while it writes) throws `sinew::error` naming the path.
///
/// \code
/// auto l = sinew::io::record_layout::of<float>(sinew::shape::d1(4096));
/// g.run(sinew::io::read_file("in.bin", l), sinew::io::write_file("out.bin")).get();
/// g.run(sinew::io::read_stdin(l), sinew::io::write_fd(1)).get();   // a filter in a shell pipe
/// \endcode
#include <string>

#include <sinew/io/batching.hpp>
#include <sinew/io/record_layout.hpp>
#include <sinew/engine/sink.hpp>
#include <sinew/engine/source.hpp>

namespace sinew::io {

/// Records from the file at `path`. Throws `sinew::error` naming the path if
/// it cannot be opened. `size_hint` = file size / record bytes (regular files).
sinew::source read_file(std::string path, record_layout layout, batching b = {});
/// Records from descriptor `fd` (a pipe, a socket, a file); the descriptor
/// is not closed.
sinew::source read_fd(int fd, record_layout layout, batching b = {});
/// `read_fd(0, layout, b)`.
sinew::source read_stdin(record_layout layout, batching b = {});

/// Writes every unit to `path` (created or truncated when the run starts).
sinew::sink write_file(std::string path);
/// Writes every unit to descriptor `fd` (1 = standard output); not closed.
sinew::sink write_fd(int fd);

}  // namespace sinew::io
