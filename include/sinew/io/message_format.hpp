#pragma once
/// \file io/message_format.hpp
/// How a message of a message system (ZeroMQ, MQTT) carries a record. A
/// message is one record (docs/io.md, "Messages"):
/// - **binary** (`layout` given): the record's buffers back to back, exactly
///   `layout.bytes()` bytes; with `multipart` (ZeroMQ only), one frame per
///   buffer instead, frame i holding buffer i's `shape.count()` elements;
/// - **text** (no layout): the message's bytes are one line, of any length
///   (a 1-D `u8` record, as lines.hpp reads them); nothing is added or
///   removed, so a message may hold '\n' or be empty.
///
/// A message that does not fit (wrong size, wrong number of frames) is
/// *malformed*: by default the run fails naming the endpoint and the
/// message's position, after the records before it were delivered; with
/// `on_malformed::skip` it is counted (the source's report) and dropped.
/// Sources group messages into record batches where the graph allows it
/// (batching.hpp), as the byte-stream sources do.
///
/// \code
/// auto bin = sinew::io::message_format::binary(sinew::io::record_layout::of<std::uint32_t, float>(sinew::shape::d1(1)));
/// auto txt = sinew::io::message_format::text();
/// txt.malformed = sinew::io::on_malformed::skip;      // text is never malformed; binary may be
/// \endcode
#include <optional>

#include <sinew/io/record_layout.hpp>

namespace sinew::io {

/// What a source does with a message that is not a record of its format.
enum class on_malformed {
  fail,  ///< the run fails naming the message (after the records before it)
  skip,  ///< counted in the source's report and dropped
};

struct message_format {
  std::optional<record_layout> layout;  ///< binary records of this layout; none: text
  bool multipart = false;               ///< binary: a frame per buffer (ZeroMQ)
  on_malformed malformed = on_malformed::fail;

  static message_format text() { return {}; }
  static message_format binary(record_layout l, bool multipart = false) {
    message_format f;
    f.layout = std::move(l);
    f.multipart = multipart;
    return f;
  }
};

}  // namespace sinew::io
