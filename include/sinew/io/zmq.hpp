#pragma once
/// \file io/zmq.hpp
/// ZeroMQ sources and sinks (component `sinew::zmq`, built when libzmq is
/// found; `SINEW_HAVE_ZMQ` is then defined). A message is one record
/// (message_format.hpp); on PUB/SUB the first frame is the topic, then the
/// record's frames (docs/io.md, "Messages").
///
/// Sources: `pull` (PUSH peers; every message reaches one PULL) or `sub`
/// (PUB peers; messages whose topic frame starts with one of `topics`).
/// They run on a thread of their own and stop reading while the graph is
/// full: ZeroMQ then queues up to the high-water mark, after which a PUSH
/// peer blocks and a PUB peer drops (ZeroMQ's rules; a SUB cannot see what
/// its publisher dropped). ZeroMQ has no end of stream: a source ends after
/// `count` records, after `idle_timeout` without a message (an error naming
/// the endpoint if none ever came: the peer never appeared), or on `stop()`.
///
/// Sinks: `push` (blocks while no peer can take a message, interrupted by
/// cancel or a failure) or `pub` (never blocks; ZeroMQ drops what no
/// subscriber can take). Messages go out in sequence order; `finish()`
/// closes the socket and waits up to `linger` for the queued ones to leave.
///
/// \code
/// sinew::io::zmq_source_options in;
/// in.endpoint = "tcp://127.0.0.1:5555";
/// in.bind = true;
/// in.format = sinew::io::message_format::binary(sinew::io::record_layout::of<float>(sinew::shape::d1(256)));
/// sinew::io::zmq_sink_options out;
/// out.socket = sinew::io::zmq_socket::pub;
/// out.endpoint = "tcp://*:5556";
/// out.bind = true;
/// out.topic = "frames";
/// g.run(sinew::io::zmq_source(in), sinew::io::zmq_sink(out)).get();
/// \endcode
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <sinew/engine/sink.hpp>
#include <sinew/engine/source.hpp>
#include <sinew/io/batching.hpp>
#include <sinew/io/message_format.hpp>

namespace sinew::io {

enum class zmq_socket { pull, sub, push, pub };

struct zmq_source_options {
  zmq_socket socket = zmq_socket::pull;  ///< pull or sub
  /// A ZeroMQ endpoint: "tcp://host:port" ("tcp://*:*" binds a free port),
  /// "ipc:///path", "inproc://name".
  std::string endpoint;
  bool bind = false;                    ///< bind (peers connect) rather than connect
  std::vector<std::string> topics{""};  ///< sub: topic prefixes ("" = every message)
  message_format format;
  batching batch;
  std::optional<std::uint64_t> count;      ///< end after this many records
  std::chrono::milliseconds idle_timeout{0};  ///< end after this long without a message; 0 = never
  int hwm = 1000;                          ///< ZMQ_RCVHWM, in messages (0 = none)
  /// Set to the endpoint bound (a "*" port resolved), when given.
  std::shared_ptr<std::string> bound;
};

struct zmq_sink_options {
  zmq_socket socket = zmq_socket::push;  ///< push or pub
  std::string endpoint;
  bool bind = false;
  std::string topic;       ///< pub: the topic frame of every message
  bool multipart = false;  ///< a frame per buffer (else the buffers back to back)
  int hwm = 1000;          ///< ZMQ_SNDHWM, in messages (0 = none)
  std::chrono::milliseconds linger{30000};  ///< most time finish() waits for queued messages to leave
  std::shared_ptr<std::string> bound;
};

/// A source reading messages; the socket is made and bound or connected
/// here (a bad endpoint, an unknown socket type for a source or a bind
/// that fails throws `sinew::error` naming the endpoint).
sinew::source zmq_source(zmq_source_options o);
/// A sink sending one message per record; the socket is made here as above.
sinew::sink zmq_sink(zmq_sink_options o);

}  // namespace sinew::io
