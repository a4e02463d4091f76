#pragma once
// The sink types a graph file's "sink" can name. One registration per type
// (builtin_sinks.cpp; docs/json.md, "Adding a source, sink or kernel") says
// which fields it takes, checks them against what the graph writes, and
// returns the factory of the sink, e.g. binary records to standard error:
//
//   r.add({.name = "stderr", .fields = {}, .required = {},
//          .parse = [](const json_cursor&, const flow&) -> sink_factory {
//            return [](auto) { return io::write_fd(2); };
//          }});
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <sinew/engine/sink.hpp>
#include <sinew/io/checksum.hpp>

#include "element_types.hpp"
#include "type_registry.hpp"

namespace sinew::detail {

/// Makes a new sink; a "checksum" sink writes its result to the argument.
using sink_factory = std::function<sink(std::shared_ptr<io::checksum_result>)>;

/// One sink type.
struct sink_type_info {
  std::string name;
  std::vector<std::string> fields;    ///< allowed besides "type", in the order messages list them
  std::vector<std::string> required;  ///< checked before `parse`
  /// Validates the fields against `out`, what the graph writes (errors at
  /// their JSON pointer), and returns the factory of the sink.
  std::function<sink_factory(const json_cursor&, const flow& out)> parse;
  /// Its sink writes record batches record by record (sink_impl::writes_records).
  bool writes_records = true;
};

using sink_registry = type_registry<sink_type_info>;

/// The sink types, the built-in ones registered on first use.
const sink_registry& sink_types();
/// Registers checksum, null, file, stdout, ppm_dir and tcp into `r`, and
/// zmq and mqtt where the sinew::zmq and sinew::mqtt components are built.
void register_builtin_sinks(sink_registry& r);
/// Registers zmq (zmq_endpoints.cpp).
void register_zmq_sinks(sink_registry& r);
/// Registers mqtt (mqtt_endpoints.cpp).
void register_mqtt_sinks(sink_registry& r);

}  // namespace sinew::detail
