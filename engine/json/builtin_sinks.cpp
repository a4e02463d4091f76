// The sink types of graph files (docs/json.md, "Sinks"), one registration
// each: its fields, their checks against what the graph writes, and the sink
// it makes.
#include <sinew/io/type_names.hpp>
#include <sinew/engine/elem_type.hpp>
#include <sinew/io.hpp>

#include "json_cursor.hpp"
#include "record_fields.hpp"
#include "sink_types.hpp"

namespace sinew::detail {
namespace {

/// "format": "lines" (each record of one u8 buffer, then '\n') or "binary".
bool lines_format(const json_cursor& c, const flow& out) {
  if (!c.has("format") || c.at("format").as_choice({"binary", "lines"}) != "lines") return false;
  if (!same_types(out.types, type_list{false, {&elem_type_of<std::uint8_t>()}}))
    c.at("format").fail("text lines need units of one u8 buffer; the graph writes " + types_text(out.types));
  return true;
}

}  // namespace

void register_builtin_sinks(sink_registry& r) {
  r.add({.name = "checksum",
         .fields = {},
         .required = {},
         .parse = [](const json_cursor& c, const flow&) -> sink_factory {
           return [origin = c.file()](std::shared_ptr<io::checksum_result> sum) {
             if (!sum) throw error(origin + ": the sink is a checksum; make_sink needs a checksum_result");
             return io::checksum(std::move(sum));
           };
         }});

  r.add({.name = "null",
         .fields = {},
         .required = {},
         .parse = [](const json_cursor&, const flow&) -> sink_factory { return [](auto) { return discard(); }; }});

  r.add({.name = "file",
         .fields = {"path", "format"},
         .required = {"path"},
         .parse = [](const json_cursor& c, const flow& out) -> sink_factory {
           std::string path = c.at("path").as_string();
           if (path.empty()) c.at("path").fail("an empty path");
           return [path, lines = lines_format(c, out)](auto) {
             return lines ? io::write_lines_file(path) : io::write_file(path);
           };
         }});

  r.add({.name = "stdout",
         .fields = {"format"},
         .required = {},
         .parse = [](const json_cursor& c, const flow& out) -> sink_factory {
           return [lines = lines_format(c, out)](auto) { return lines ? io::write_lines(1) : io::write_fd(1); };
         }});

  r.add({.name = "ppm_dir",
         .fields = {"path", "prefix"},
         .required = {"path"},
         .parse = [](const json_cursor& c, const flow& out) -> sink_factory {
           std::string dir = c.at("path").as_string();
           std::string prefix = c.get_string("prefix", "frame");
           if (!same_types(out.types, type_list{false, {elem_type_by_name("rgba8")}}) || (out.rank && out.rank != 2))
             c.fail("a PPM directory takes 2-D images of one rgba8 buffer; the graph writes " + types_text(out.types) +
                    (out.rank ? std::string(" ") + std::to_string(out.rank) + "-D" : std::string()));
           return [dir, prefix](auto) { return io::write_ppm_dir(dir, prefix); };
         },
         .writes_records = false});

  r.add({.name = "tcp",
         .fields = {"mode", "host", "port"},
         .required = {"mode", "port"},
         .parse = [](const json_cursor& c, const flow&) -> sink_factory {
           bool listen = c.at("mode").as_choice({"listen", "connect"}) == "listen";
           std::string host = c.get_string("host", "127.0.0.1");
           std::uint16_t port = port_at(c);
           return [listen, host, port](auto) {
             return listen ? io::tcp_listen_sink(host, port) : io::tcp_connect_sink(host, port);
           };
         }});
#ifdef SINEW_HAVE_ZMQ
  register_zmq_sinks(r);
#endif
#ifdef SINEW_HAVE_MQTT
  register_mqtt_sinks(r);
#endif
}

const sink_registry& sink_types() { return filled_registry<sink_type_info, register_builtin_sinks>("sink"); }

}  // namespace sinew::detail
