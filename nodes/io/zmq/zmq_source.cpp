// ZeroMQ sources: PULL and SUB sockets, a message a record (io/zmq.hpp).
#include <zmq_addon.hpp>

#include <vector>

#include <sinew/detail/clock.hpp>

#include "../message_source.hpp"
#include "zmq_socket.hpp"
#include "zmq_spares.hpp"

namespace sinew::io {
namespace {

class zmq_source_impl final : public detail::message_source {
 public:
  explicit zmq_source_impl(zmq_source_options o)
      : message_source(o.format, o.batch, o.count, o.idle_timeout, false), o_(std::move(o)),
        s_(check(o_.socket), o_.endpoint, o_.bind, o_.hwm, o_.bound) {
    if (o_.format.layout) o_.format.layout->check(s_.who);
    if (o_.format.multipart && !o_.format.layout) throw error(s_.who + ": multipart messages carry binary records (give a layout)");
    if (o_.socket == zmq_socket::sub)
      for (const std::string& t : o_.topics) s_.sock.set(zmq::sockopt::subscribe, t);
  }
  std::string label() const override { return "source(" + s_.who + ")"; }
  bool blocking() const override { return true; }
  std::string report() const override { return counts(); }

 private:
  static zmq_socket check(zmq_socket t) {
    if (t != zmq_socket::pull && t != zmq_socket::sub)
      throw error(detail::zmq_who(t, "") + ": a source reads from a pull or sub socket");
    return t;
  }
  const std::string& who() const override { return s_.who; }
  bool idle_end() override {
    if (messages() == 0)
      throw error(s_.who + ": no message within the idle timeout of " + std::to_string(o_.idle_timeout.count()) +
                  " ms (no peer?)");
    return false;
  }
  std::size_t frames(detail::frame* out, std::string& bad) override {
    const std::size_t skip = o_.socket == zmq_socket::sub ? 1 : 0;  // the topic frame
    const std::size_t n = parts_.size() > skip ? parts_.size() - skip : 0;
    if (n == 0) bad = "no frame after the topic";
    else if (n > layer::max_buffers) bad = std::to_string(n) + " frames";
    for (std::size_t i = 0; bad.empty() && i < n; ++i) out[i] = {parts_[skip + i].data(), parts_[skip + i].size()};
    return n;
  }
  // The frames' memory does not move with the vector that owns them.
  std::shared_ptr<void> keep_message() override { return std::make_shared<std::vector<zmq::message_t>>(std::move(parts_)); }
  // A one-frame record copied into the unit leaves its message to the sinks (zmq_spares.hpp).
  void consumed(bool) override {
    const std::size_t skip = o_.socket == zmq_socket::sub ? 1 : 0;
    if (parts_.size() != skip + 1) return;  // kept by the unit, or multipart
    const std::size_t n = parts_[skip].size();
    if (n > detail::zmq_spares::inline_bytes && n <= detail::zmq_spares::largest) spares_.push_back(std::move(parts_[skip]));
  }
  void seal(unit_builder&) override {
    const std::size_t k = spares_.size();
    detail::zmq_spares::process().give(spares_);
    spares_.reserve(k);  // the pool took the storage
  }
  got receive(std::uint64_t deadline_ns) override {
    for (;;) {
      if (wake_.signalled()) return got::stopped;
      parts_.clear();
      try {
        if (zmq::recv_multipart(s_.sock, std::back_inserter(parts_), zmq::recv_flags::dontwait)) {
          detail::zmq_spares::received();
          return got::message;
        }
      } catch (const zmq::error_t& e) {
        throw error(s_.who + ": receive failed: " + e.what());
      }
      long timeout = -1;
      if (deadline_ns) {
        const std::uint64_t now = sinew::detail::now_ns();
        if (now >= deadline_ns) return got::timeout;
        timeout = long((deadline_ns - now + 999999) / 1000000);
      }
      zmq::pollitem_t items[2] = {{s_.sock.handle(), 0, ZMQ_POLLIN, 0}, {nullptr, wake_.fd(), ZMQ_POLLIN, 0}};
      try {
        zmq::poll(items, 2, std::chrono::milliseconds(timeout));
      } catch (const zmq::error_t& e) {
        if (e.num() != EINTR) throw error(s_.who + ": poll failed: " + e.what());
      }
    }
  }

  zmq_source_options o_;
  detail::zmq_socket_of s_;
  std::vector<zmq::message_t> parts_;  // the message received last
  std::vector<zmq::message_t> spares_;  // the unit's copied-out messages
};

}  // namespace

sinew::source zmq_source(zmq_source_options o) { return sinew::source(std::make_shared<zmq_source_impl>(std::move(o))); }

}  // namespace sinew::io
