#pragma once
// Internal to the ZeroMQ source and sink: a context and one socket, bound
// or connected when made, named in errors.
#include <zmq.hpp>

#include <memory>
#include <string>

#include <sinew/io/zmq.hpp>

namespace sinew::io::detail {

/// "zmq pull tcp://127.0.0.1:5555".
std::string zmq_who(zmq_socket t, const std::string& endpoint);

/// A socket of its own context. The endpoint is bound or connected at
/// construction (errors throw sinew::error naming it); `bound` receives
/// the endpoint bound, a "*" port resolved.
struct zmq_socket_of {
  zmq::context_t ctx;
  zmq::socket_t sock;
  std::string who;
  std::string at;  ///< the endpoint, a bound "*" port resolved
  zmq_socket_of(zmq_socket type, const std::string& endpoint, bool bind, int hwm,
                const std::shared_ptr<std::string>& bound);
  /// Closes the socket, waiting up to `linger_ms` for queued messages to leave.
  void close(int linger_ms);
};

}  // namespace sinew::io::detail
