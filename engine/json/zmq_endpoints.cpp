// The "zmq" source and sink types of graph files (docs/json.md, "Sources"
// and "Sinks"); built with the sinew::zmq component.
#include <sinew/io/zmq.hpp>

#include <regex>

#include "json_cursor.hpp"
#include "record_fields.hpp"
#include "sink_types.hpp"
#include "source_types.hpp"

namespace sinew::detail {
namespace {

/// "endpoint": tcp://host:port (port a number or "*"), ipc://path or inproc://name.
std::string endpoint_at(const json_cursor& c) {
  const json_cursor e = c.required("endpoint");
  const std::string s = e.as_string();
  static const std::regex ok(R"(^(tcp://(\[[0-9A-Fa-f:.]+\]|[^:/\[\]]+):(\*|[0-9]{1,5})|ipc://.+|inproc://.+)$)");
  if (!std::regex_match(s, ok))
    e.fail("'" + s + "' is not a ZeroMQ endpoint (tcp://host:port, tcp://*:* to bind a free port, ipc:///path, inproc://name)");
  return s;
}

int hwm_at(const json_cursor& c) { return int(c.get_uint("hwm", 1000, 0, 1u << 30)); }

}  // namespace

void register_zmq_sources(source_registry& r) {
  r.add({.name = "zmq",
         .fields = {"socket", "endpoint", "bind", "topics", "format", "buffers", "shape", "multipart", "malformed",
                    "batch", "count", "idle_timeout", "hwm"},
         .required = {"socket", "endpoint"},
         .live_input = "a ZeroMQ socket",
         .parse = [](const json_cursor& c) {
           io::zmq_source_options o;
           o.socket = c.at("socket").as_choice({"pull", "sub"}) == "sub" ? io::zmq_socket::sub : io::zmq_socket::pull;
           o.endpoint = endpoint_at(c);
           o.bind = c.get_bool("bind", false);
           if (c.has("topics")) {
             const json_cursor t = c.at("topics");
             if (o.socket != io::zmq_socket::sub) t.fail("topics filter a sub socket's messages");
             t.expect_array();
             o.topics.clear();
             for (std::size_t i = 0; i < t.value().size(); ++i) o.topics.push_back(t.at(i).as_string());
           }
           o.format = message_format_at(c, true);
           o.batch = batching_at(c);
           o.count = count_at(c, false);
           o.idle_timeout = milliseconds_at(c, "idle_timeout");
           o.hwm = hwm_at(c);
           source_plan p = message_source_plan(o.format, o.count, o.batch);
           p.make = [o](bool) { return io::zmq_source(o); };
           return p;
         }});
}

void register_zmq_sinks(sink_registry& r) {
  r.add({.name = "zmq",
         .fields = {"socket", "endpoint", "bind", "topic", "multipart", "hwm", "linger"},
         .required = {"socket", "endpoint"},
         .parse = [](const json_cursor& c, const flow&) -> sink_factory {
           io::zmq_sink_options o;
           o.socket = c.at("socket").as_choice({"push", "pub"}) == "pub" ? io::zmq_socket::pub : io::zmq_socket::push;
           o.endpoint = endpoint_at(c);
           o.bind = c.get_bool("bind", false);
           if (c.has("topic")) {
             if (o.socket != io::zmq_socket::pub) c.at("topic").fail("a topic is the first frame of a pub socket's messages");
             o.topic = c.at("topic").as_string();
           }
           o.multipart = c.get_bool("multipart", false);
           o.hwm = hwm_at(c);
           if (c.has("linger")) o.linger = milliseconds_at(c, "linger");
           return [o](auto) { return io::zmq_sink(o); };
         }});
}

}  // namespace sinew::detail
