#pragma once
// The source types a graph file's "source" can name. One registration per
// type (builtin_sources.cpp; docs/json.md, "Adding a source, sink or kernel")
// says which fields it takes, how it validates them and what it makes, e.g.
// one unit of zeros:
//
//   r.add({.name = "zeros", .fields = {"buffers", "shape"}, .required = {"buffers", "shape"},
//          .live_input = "",
//          .parse = [](const json_cursor& c) {
//            source_plan p;
//            p.layout = layout_at(c, false);
//            p.count = 1;
//            p.make = [l = p.layout](bool) {
//              return io::generator({.layout = l, .pattern = "constant", .value = 0, .count = 1});
//            };
//            return p;
//          }});
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <sinew/engine/source.hpp>
#include <sinew/io/batching.hpp>
#include <sinew/io/message_format.hpp>
#include <sinew/io/record_layout.hpp>

#include "type_registry.hpp"

namespace sinew::detail {

/// What a validated "source" section makes.
struct source_plan {
  io::record_layout layout;  ///< element types and shape of the units
  /// Rank of the units when the layout's shape is only a placeholder (PPM
  /// images, text lines: known rank, varying extents); 0 = the layout's.
  unsigned rank = 0;
  std::optional<std::uint64_t> count;  ///< units it makes, when known (records when it batches)
  /// How it groups records into units ("batch"); `when::always` makes the
  /// loader check that the graph allows record batches.
  io::batching batch = io::batching::off();
  /// What this source reads that cannot be read twice, when its fields make
  /// it live though its type is not (a followed file); see source_type_info.
  std::string live_input;
  /// A new source from the beginning of the stream; `replay` is --verify's
  /// second instance, which needs the same units but not the same pacing.
  std::function<source(bool replay)> make;
};

/// The plan of a source of messages (zmq, mqtt) but its `make`: the units
/// are `f`'s records (1-D u8 lines for text), `count` of them when known.
source_plan message_source_plan(const io::message_format& f, std::optional<std::uint64_t> count, const io::batching& b);

/// One source type.
struct source_type_info {
  std::string name;
  std::vector<std::string> fields;    ///< allowed besides "type", in the order messages list them
  std::vector<std::string> required;  ///< checked before `parse`
  /// What the source reads that cannot be read twice, for --verify's error
  /// ("standard input"); empty when two sources of one plan make the same units.
  std::string live_input;
  /// Validates the fields beyond the checks of `fields`/`required` (errors
  /// at their JSON pointer) and says what the source makes.
  std::function<source_plan(const json_cursor&)> parse;
};

using source_registry = type_registry<source_type_info>;

/// The source types, the built-in ones registered on first use.
const source_registry& source_types();
/// Registers generator, nbody, file, stdin, ppm_dir and tcp into `r`, and
/// zmq and mqtt where the sinew::zmq and sinew::mqtt components are built.
void register_builtin_sources(source_registry& r);
/// Registers zmq (zmq_endpoints.cpp).
void register_zmq_sources(source_registry& r);
/// Registers mqtt (mqtt_endpoints.cpp).
void register_mqtt_sources(source_registry& r);

}  // namespace sinew::detail
