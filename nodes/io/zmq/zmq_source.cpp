// ZeroMQ sources: PULL and SUB sockets, a message a record (io/zmq.hpp).
#include <zmq_addon.hpp>

#include <atomic>
#include <optional>
#include <vector>

#include <sinew/detail/clock.hpp>

#include "../message_batch.hpp"
#include "../stream.hpp"
#include "zmq_socket.hpp"

namespace sinew::io {
namespace {

class zmq_source_impl final : public detail::io_source {
 public:
  explicit zmq_source_impl(zmq_source_options o)
      : io_source(o.batch), o_(std::move(o)), s_(check(o_.socket), o_.endpoint, o_.bind, o_.hwm, o_.bound) {
    if (o_.format.layout) o_.format.layout->check(s_.who);
    if (o_.format.multipart && !o_.format.layout) throw error(s_.who + ": multipart messages carry binary records (give a layout)");
    if (o_.socket == zmq_socket::sub)
      for (const std::string& t : o_.topics) s_.sock.set(zmq::sockopt::subscribe, t);
  }
  std::string label() const override { return "source(" + s_.who + ")"; }
  bool blocking() const override { return true; }
  std::string report() const override {
    const std::uint64_t k = skipped_.load(std::memory_order_relaxed);
    std::string r = std::to_string(messages_.load(std::memory_order_relaxed)) + " messages";
    if (k) r += ", " + std::to_string(k) + " malformed skipped";
    return r;
  }

 private:
  static zmq_socket check(zmq_socket t) {
    if (t != zmq_socket::pull && t != zmq_socket::sub)
      throw error(detail::zmq_who(t, "") + ": a source reads from a pull or sub socket");
    return t;
  }

  bool produce(unit_builder& b) override {
    if (!batch_) {  // the first unit: the run has started
      batch_.emplace(o_.format, batching_on() ? batch().records : 1, batch().bytes);
      last_ns_ = sinew::detail::now_ns();
    }
    std::uint64_t deadline = 0;  // of the unit's latency bound, from its first record
    for (;;) {
      if (o_.count && records_ >= *o_.count) break;
      if (!held_) {
        const int r = next_message(batch_->size() ? deadline : 0);
        if (r < 0) break;  // stopped: what is in the unit is delivered
        if (r == 0) {
          if (batch_->size()) break;  // the latency bound
          if (messages_.load(std::memory_order_relaxed) == 0)
            throw error(s_.who + ": no message within the idle timeout of " +
                        std::to_string(o_.idle_timeout.count()) + " ms (no peer?)");
          return false;  // idle: the end of the stream
        }
      }
      const std::size_t skip = o_.socket == zmq_socket::sub ? 1 : 0;  // the topic frame
      const std::size_t n = parts_.size() > skip ? parts_.size() - skip : 0;
      std::string bad;  // why the message cannot be a record whatever the format
      if (n == 0) bad = "no frame after the topic";
      else if (n > layer::max_buffers) bad = std::to_string(n) + " frames";
      detail::frame fr[layer::max_buffers];
      for (std::size_t i = 0; bad.empty() && i < n; ++i) fr[i] = {parts_[skip + i].data(), parts_[skip + i].size()};
      const auto a = bad.empty() ? batch_->add(fr, n) : detail::message_batch::added::malformed;
      if (a == detail::message_batch::added::full) {
        held_ = true;  // the first record of the next unit
        break;
      }
      held_ = false;
      const std::uint64_t at = position_++;
      if (a == detail::message_batch::added::malformed) {
        const std::string why = s_.who + ": message " + std::to_string(at) + " is not a record: " + (bad.empty() ? batch_->why() : bad);
        if (o_.format.malformed == on_malformed::skip) {
          skipped_.fetch_add(1, std::memory_order_relaxed);
          continue;
        }
        if (batch_->size() == 0) throw error(why);
        fail_later(why);
        break;
      }
      if (++records_, batch_->size() == 1) deadline = sinew::detail::now_ns() + std::uint64_t(batch().latency.count()) * 1000;
      if (batch_->full()) break;
    }
    if (batch_->size() == 0) return false;
    batch_->finish(b, batching_on());
    return true;
  }

  // Receives the next message into parts_: 1, 0 when `deadline_ns` (or,
  // with 0, the idle timeout) passed first, -1 when stopped.
  int next_message(std::uint64_t deadline_ns) {
    const std::uint64_t idle = std::uint64_t(o_.idle_timeout.count()) * 1000000u;
    if (!deadline_ns && idle) deadline_ns = last_ns_ + idle;
    for (;;) {
      if (wake_.signalled()) return -1;
      parts_.clear();
      try {
        if (zmq::recv_multipart(s_.sock, std::back_inserter(parts_), zmq::recv_flags::dontwait)) {
          messages_.fetch_add(1, std::memory_order_relaxed);
          last_ns_ = sinew::detail::now_ns();
          return 1;
        }
      } catch (const zmq::error_t& e) {
        throw error(s_.who + ": receive failed: " + e.what());
      }
      long timeout = -1;
      if (deadline_ns) {
        const std::uint64_t now = sinew::detail::now_ns();
        if (now >= deadline_ns) return 0;
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
  std::optional<detail::message_batch> batch_;
  std::vector<zmq::message_t> parts_;  // the message received last
  bool held_ = false;                  // parts_ did not fit in the last unit
  std::uint64_t records_ = 0, position_ = 0;
  std::uint64_t last_ns_ = 0;  // when the last message (or the run's start) came
  std::atomic<std::uint64_t> messages_{0}, skipped_{0};
};

}  // namespace

sinew::source zmq_source(zmq_source_options o) { return sinew::source(std::make_shared<zmq_source_impl>(std::move(o))); }

}  // namespace sinew::io
