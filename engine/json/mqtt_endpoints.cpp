// The "mqtt" source and sink types of graph files (docs/json.md, "Sources"
// and "Sinks"); built with the sinew::mqtt component.
#include <sinew/io/mqtt.hpp>

#include "json_cursor.hpp"
#include "record_fields.hpp"
#include "sink_types.hpp"
#include "source_types.hpp"

namespace sinew::detail {
namespace {

/// "host", "port", "client_id", "keepalive", "reconnect".
io::mqtt_broker broker_at(const json_cursor& c) {
  io::mqtt_broker b;
  b.host = c.get_string("host", b.host);
  if (b.host.empty()) c.at("host").fail("an empty host");
  b.port = int(c.get_uint("port", 1883, 1, 65535));
  b.client_id = c.get_string("client_id", "");
  b.keepalive = int(c.get_uint("keepalive", 30, 5, 65535));
  b.reconnect = c.get_bool("reconnect", true);
  return b;
}

int qos_at(const json_cursor& c) { return int(c.get_uint("qos", 0, 0, 1)); }

}  // namespace

void register_mqtt_sources(source_registry& r) {
  r.add({.name = "mqtt",
         .fields = {"host", "port", "client_id", "keepalive", "reconnect", "topics", "qos", "format", "buffers", "shape",
                    "malformed", "batch", "count", "idle_timeout", "queue"},
         .required = {"topics"},
         .live_input = "an MQTT subscription",
         .parse = [](const json_cursor& c) {
           io::mqtt_source_options o;
           o.broker = broker_at(c);
           const json_cursor t = c.at("topics");
           t.expect_array();
           if (t.value().empty()) t.fail("at least one topic filter");
           for (std::size_t i = 0; i < t.value().size(); ++i) {
             o.topics.push_back(t.at(i).as_string());
             if (const std::string e = io::mqtt_filter_error(o.topics.back()); !e.empty()) t.at(i).fail(e);
           }
           o.qos = qos_at(c);
           if (o.qos == 1 && o.broker.client_id.empty())
             c.fail("a QoS 1 source needs a \"client_id\": its session (what the broker keeps for it) is found by it");
           o.format = message_format_at(c, false);
           o.batch = batching_at(c);
           o.count = count_at(c, false);
           o.idle_timeout = milliseconds_at(c, "idle_timeout");
           o.queue = c.get_uint("queue", 1024, 1, 1u << 24);
           source_plan p = message_source_plan(o.format, o.count, o.batch);
           p.make = [o](bool) { return io::mqtt_source(o); };
           return p;
         }});
}

void register_mqtt_sinks(sink_registry& r) {
  r.add({.name = "mqtt",
         .fields = {"host", "port", "client_id", "keepalive", "reconnect", "topic", "qos", "retain", "max_unacked"},
         .required = {"topic"},
         .parse = [](const json_cursor& c, const flow&) -> sink_factory {
           io::mqtt_sink_options o;
           o.broker = broker_at(c);
           o.topic = c.at("topic").as_string();
           if (const std::string e = io::mqtt_topic_error(o.topic); !e.empty()) c.at("topic").fail(e);
           o.qos = qos_at(c);
           o.retain = c.get_bool("retain", false);
           o.max_unacked = c.get_uint("max_unacked", 1000, 1, 1u << 24);
           return [o](auto) { return io::mqtt_sink(o); };
         }});
}

}  // namespace sinew::detail
