// ZeroMQ sockets for the sinew::io endpoints: made, tuned, bound or connected.
#include "zmq_socket.hpp"

namespace sinew::io::detail {

std::string zmq_who(zmq_socket t, const std::string& endpoint) {
  static const char* const names[] = {"pull", "sub", "push", "pub"};
  return std::string("zmq ") + names[int(t)] + " " + endpoint;
}

zmq_socket_of::zmq_socket_of(zmq_socket type, const std::string& endpoint, bool bind, int hwm,
                             const std::shared_ptr<std::string>& bound)
    : ctx(1), who(zmq_who(type, endpoint)), at(endpoint) {
  static const zmq::socket_type types[] = {zmq::socket_type::pull, zmq::socket_type::sub, zmq::socket_type::push,
                                           zmq::socket_type::pub};
  if (hwm < 0) throw sinew::error(who + ": a negative high-water mark");
  try {
    sock = zmq::socket_t(ctx, types[int(type)]);
    sock.set(zmq::sockopt::linger, 0);  // until close() says otherwise: a failed run does not wait
    if (type == zmq_socket::pull || type == zmq_socket::sub) sock.set(zmq::sockopt::rcvhwm, hwm);
    else sock.set(zmq::sockopt::sndhwm, hwm);
    if (bind) {
      sock.bind(endpoint);
      at = sock.get(zmq::sockopt::last_endpoint);
      who = zmq_who(type, at);
      if (bound) *bound = at;
    } else {
      sock.connect(endpoint);
    }
  } catch (const zmq::error_t& e) {
    throw sinew::error(who + ": cannot " + (bind ? "bind" : "connect") + ": " + e.what());
  }
}

void zmq_socket_of::close(int linger_ms) {
  if (!sock) return;
  sock.set(zmq::sockopt::linger, linger_ms);
  sock.close();
  ctx.close();  // returns once the queued messages left or the linger passed
}

}  // namespace sinew::io::detail
