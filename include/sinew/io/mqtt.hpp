#pragma once
/// \file io/mqtt.hpp
/// MQTT sources and sinks over libmosquitto (component `sinew::mqtt`, built
/// when libmosquitto is found; `SINEW_HAVE_MQTT` is then defined). A
/// message's payload is one record (message_format.hpp; text or binary, no
/// multipart). docs/io.md, "MQTT", states the delivery guarantees.
///
/// Sources subscribe to topic filters at QoS 0 or 1. At QoS 1 the source is
/// **at least once, end to end**: it acknowledges a message (PUBACK) only
/// after every sink the message reached has written it (delivery notes,
/// delivery.hpp), and keeps a persistent session under its client id, so a
/// process killed mid-stream gets the unacknowledged messages again when it
/// comes back with the same id. libmosquitto 2.0 acknowledges when its
/// message callback returns, so a QoS 1 source has one message in flight at
/// a time. At QoS 0 messages are queued (up to `queue`, then the network
/// thread waits: TCP back pressure to the broker) and at most once.
///
/// Sinks publish each record at QoS 0 or 1 to a topic made from a template:
/// `{seq}` is the unit's sequence number, `{bN}` element 0 of buffer N of
/// the record, as a number. At QoS 1 a unit counts as written (its delivery
/// note is released) once the broker acknowledged all of its messages; at
/// most `max_unacked` wait for acknowledgement before the sink waits.
///
/// Both connect when made (a broker that cannot be reached is an error
/// naming it) and reconnect with back-off (1 s doubling to 30 s) when the
/// broker goes away, counted in their report (`--stats`, the status line);
/// with `reconnect = false` a lost connection fails the run instead.
///
/// \code
/// sinew::io::mqtt_source_options in;
/// in.broker.port = 1883;
/// in.topics = {"sensors/+/temperature"};
/// in.qos = 1;
/// in.broker.client_id = "means";              // the persistent session's name
/// in.format = sinew::io::message_format::binary(sinew::io::record_layout::of<std::uint32_t, float>(sinew::shape::d1(1)));
/// sinew::io::mqtt_sink_options out;
/// out.topic = "means/{b0}";
/// g.run(sinew::io::mqtt_source(in), sinew::io::mqtt_sink(out)).get();
/// \endcode
#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <sinew/engine/sink.hpp>
#include <sinew/engine/source.hpp>
#include <sinew/io/batching.hpp>
#include <sinew/io/message_format.hpp>

namespace sinew::io {

struct mqtt_broker {
  std::string host = "127.0.0.1";
  int port = 1883;
  /// The client id; empty: "sinew-" with the process id and a counter (a
  /// QoS 1 source needs a fixed one to find its session again).
  std::string client_id;
  int keepalive = 30;      ///< seconds
  bool reconnect = true;   ///< reconnect when the broker goes away, or fail the run
};

struct mqtt_source_options {
  mqtt_broker broker;
  std::vector<std::string> topics;  ///< topic filters ('+' and '#' allowed)
  int qos = 0;                      ///< 0: at most once; 1: at least once, end to end
  message_format format;            ///< multipart does not apply
  batching batch;
  std::optional<std::uint64_t> count;         ///< end after this many records
  std::chrono::milliseconds idle_timeout{0};  ///< end after this long without a message; 0 = never
  std::size_t queue = 1024;                   ///< QoS 0: messages waiting for the source (which takes them all at once); at least 1
};

struct mqtt_sink_options {
  mqtt_broker broker;
  std::string topic;  ///< template: {seq}, {b0}..{b7}
  int qos = 0;
  bool retain = false;
  std::size_t max_unacked = 1000;  ///< QoS 1: publishes awaiting the broker's acknowledgement
};

/// Empty when `filter` is an MQTT topic filter one can subscribe to, else why not.
std::string mqtt_filter_error(const std::string& filter);
/// Empty when `topic` is a topic template a sink can publish to, else why not.
std::string mqtt_topic_error(const std::string& topic);

/// A source subscribing to `o.topics` (connects here: throws sinew::error
/// naming the broker when it cannot).
sinew::source mqtt_source(mqtt_source_options o);
/// A sink publishing one message per record (connects when the run starts).
sinew::sink mqtt_sink(mqtt_sink_options o);

}  // namespace sinew::io
