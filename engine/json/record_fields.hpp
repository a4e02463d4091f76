#pragma once
// Fields that several source and sink types of a graph file share: the
// record layout ("buffers" + "shape"), "count", "port", and paths that must
// exist. Each reports errors at its JSON pointer.
#include <chrono>
#include <cstdint>
#include <optional>
#include <string>

#include <sinew/io/batching.hpp>
#include <sinew/io/message_format.hpp>
#include <sinew/io/record_layout.hpp>

namespace sinew::detail {

class json_cursor;

/// "buffers" (element type names) and "shape" (1-3 extents) of `c`; a unit
/// over a quarter of this machine's memory is an error at "shape".
io::record_layout layout_at(const json_cursor& c, bool allow_no_buffers);
/// "count": a number of units, or "unbounded" (nullopt); nullopt if absent
/// and not `required`.
std::optional<std::uint64_t> count_at(const json_cursor& c, bool required);
/// The required "port" (1-65535).
std::uint16_t port_at(const json_cursor& c);
/// "batch": how a stream source groups records into units (absent: the
/// default, batching where the graph allows it; false: one unit per record;
/// true or {"records", "bytes", "latency_ms"}: batches, required).
io::batching batching_at(const json_cursor& c);
/// A source with "batch": true (`b`) in a graph that treats a unit as a
/// whole at `whole_unit_at` (a leaf, zip, split by key or sink; empty: none)
/// fails at the source's "batch" field, naming that place.
void check_batching(const json_cursor& source, const io::batching& b, const std::string& whole_unit_at);
/// True if "format" is "lines" (text lines: then no "buffers" or "shape"),
/// false if it is "binary" or absent.
bool lines_format_at(const json_cursor& c);
/// How a message carries a record: "format" ("binary" with "buffers" and
/// "shape", or "lines": text), "multipart" (when `multipart` is allowed)
/// and "malformed" ("fail" or "skip").
io::message_format message_format_at(const json_cursor& c, bool multipart);
/// A duration in seconds at `key` (>= 0; 0 when absent).
std::chrono::milliseconds milliseconds_at(const json_cursor& c, const std::string& key);
/// True if `path` names an existing directory (`dir`) or regular file.
bool path_exists(const std::string& path, bool dir);

}  // namespace sinew::detail
