#pragma once
/// \file io/follow.hpp
/// Followed files, like `tail -F`: a source that reads a file as it grows
/// and goes on after the file is rotated or truncated. The stream is the
/// file's bytes, then, after a rotation (the path renamed away and a new
/// file created in its place), the new file's bytes from its start; after a
/// truncation (the file shorter than what was read), the file's bytes again
/// from its start (a file truncated and written past its old length before
/// the source looks again is not seen to shrink, as with `tail -F`).
/// Writers rotate at record boundaries (whole lines, whole
/// records), as log writers do: a record cut by a rotation is joined with
/// the start of the new file.
///
/// The stream never ends by itself: `stop()` (SIGINT/SIGTERM in `sinew run`)
/// ends it after the records read so far have been delivered, and an idle
/// timeout, when given, ends it once no byte arrived for that long. A file
/// that does not exist yet is waited for (its directory must exist). Growth
/// and rotation are seen through inotify on the file's directory, with a
/// check at least once a second (file systems without inotify events).
///
/// \code
/// sinew::io::follow_options f;
/// f.idle_timeout = std::chrono::seconds(30);        // end after 30 s of silence
/// g.run(sinew::io::follow_lines_file("/var/log/app.log", f), sinew::io::write_lines(1)).get();
/// auto l = sinew::io::record_layout::of<float>(sinew::shape::d1(16));
/// g.run(sinew::io::follow_file("samples.bin", l), sinew::io::write_file("out.bin")).get();
/// \endcode
#include <chrono>
#include <string>

#include <sinew/engine/source.hpp>
#include <sinew/io/batching.hpp>
#include <sinew/io/record_layout.hpp>

namespace sinew::io {

struct follow_options {
  /// End of stream once no byte arrived for this long; 0 = never.
  std::chrono::milliseconds idle_timeout{0};
  /// Start at the file's end (only what is appended from now on), not at its start.
  bool from_end = false;
};

/// Binary records of `layout` from the file at `path`, followed. A stream
/// that ends inside a record (idle timeout, stop) is an error naming the
/// byte offset, raised after the whole records were delivered.
sinew::source follow_file(std::string path, record_layout layout, follow_options f = {}, batching b = {});
/// Text lines (lines.hpp) from the file at `path`, followed; a last line
/// without '\n' at the end of the stream is still a line.
sinew::source follow_lines_file(std::string path, follow_options f = {}, batching b = {});

}  // namespace sinew::io
