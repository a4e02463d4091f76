// MQTT sources: topic filters at QoS 0 (at most once) or 1 (at least once,
// end to end through delivery notes), a message a record (io/mqtt.hpp).
#include <condition_variable>
#include <deque>
#include <memory>
#include <optional>

#include <sinew/detail/clock.hpp>

#include "../message_batch.hpp"
#include "../stream.hpp"
#include "mqtt_client.hpp"

namespace sinew::io {
namespace {

// What the network thread hands the source thread, and the acknowledgements
// flowing back. Shared with the delivery notes, which may outlive the source.
struct inbox {
  std::mutex m;
  std::condition_variable cv;
  struct item {
    std::string payload;
    std::uint64_t id;  // 1, 2, ... in arrival order
  };
  std::deque<item> q;
  std::uint64_t arrived = 0, acked = 0;  // QoS 1: messages whose callback may return
  bool stopping = false;                 // the source ended: nothing more is taken
  bool cut = false;                      // QoS 1: a message will not be acknowledged
  mosquitto* live = nullptr;             // the client while it runs (for cutting)

  // A QoS 1 message that must not be acknowledged: the connection is cut
  // before its callback returns, so the broker sends it again. Under m.
  void cut_connection() {
    cut = true;
    if (live) detail::mqtt_client::cut(live);
  }
};

// Released once every sink wrote the unit of messages [first, last].
class ack_note final : public delivery_note {
 public:
  ack_note(std::shared_ptr<inbox> in, std::uint64_t last) : in_(std::move(in)), last_(last) {}

 protected:
  void complete(bool delivered) noexcept override {
    {
      std::lock_guard<std::mutex> lk(in_->m);
      if (delivered) in_->acked = std::max(in_->acked, last_);
      else in_->cut_connection();
    }
    in_->cv.notify_all();
    delete this;
  }

 private:
  std::shared_ptr<inbox> in_;
  std::uint64_t last_;
};

class mqtt_source_impl final : public detail::io_source {
 public:
  explicit mqtt_source_impl(mqtt_source_options o)
      : io_source(o.batch), o_(std::move(o)), in_(std::make_shared<inbox>()), c_(o_.broker, "mqtt source", o_.qos == 1) {
    if (o_.qos < 0 || o_.qos > 1) throw error(c_.who() + ": QoS " + std::to_string(o_.qos) + " (0 or 1)");
    if (o_.topics.empty()) throw error(c_.who() + ": no topic to subscribe to");
    if (o_.format.multipart) throw error(c_.who() + ": an MQTT message has one payload (no multipart)");
    if (o_.format.layout) o_.format.layout->check(c_.who());
    for (const std::string& t : o_.topics)
      if (const std::string e = mqtt_filter_error(t); !e.empty()) throw error(c_.who() + ": " + e);
    c_.on_connect = [this] {
      for (const std::string& t : o_.topics) mosquitto_subscribe(c_.handle(), nullptr, t.c_str(), o_.qos);
    };
    c_.on_message = [this](const mosquitto_message& m) { arrived(m); };
    c_.start();
    std::lock_guard<std::mutex> lk(in_->m);
    in_->live = c_.handle();
  }
  ~mqtt_source_impl() override {
    bool cut;
    {
      std::lock_guard<std::mutex> lk(in_->m);
      in_->stopping = true;
      // A QoS 1 message waiting in its callback never became a unit.
      cut = o_.qos == 1 && in_->arrived > in_->acked;
      if (cut) in_->cut_connection();
      in_->live = nullptr;
    }
    in_->cv.notify_all();
    c_.stop(cut);
  }
  std::string label() const override { return "source(" + c_.who() + ")"; }
  bool blocking() const override { return true; }
  void interrupt() override {
    io_source::interrupt();
    {
      std::lock_guard<std::mutex> lk(in_->m);
      in_->stopping = true;
    }
    in_->cv.notify_all();
  }
  std::string report() const override {
    std::string r = c_.state() + ", " + std::to_string(messages_.load(std::memory_order_relaxed)) + " messages";
    if (const std::uint64_t k = skipped_.load(std::memory_order_relaxed)) r += ", " + std::to_string(k) + " malformed skipped";
    return r;
  }

 private:
  // The network thread: queue the message; at QoS 1 wait until the unit it
  // goes into was written by every sink (its PUBACK leaves when this returns).
  void arrived(const mosquitto_message& m) {
    std::unique_lock<std::mutex> lk(in_->m);
    if (o_.qos == 0) in_->cv.wait(lk, [&] { return in_->q.size() < o_.queue || in_->stopping; });
    if (in_->stopping) {
      if (o_.qos == 1) in_->cut_connection();
      return;
    }
    const std::uint64_t id = ++in_->arrived;
    in_->q.push_back({std::string(static_cast<const char*>(m.payload), std::size_t(m.payloadlen)), id});
    in_->cv.notify_all();
    if (o_.qos == 1) in_->cv.wait(lk, [&] { return in_->acked >= id || in_->cut; });
  }

  // The next message: 1, 0 when `deadline_ns` (or, with 0, the idle
  // timeout) passed first, -1 when stopping. Throws when the connection was
  // lost and reconnecting is off.
  int take(inbox::item& it, std::uint64_t deadline_ns) {
    const std::uint64_t idle = std::uint64_t(o_.idle_timeout.count()) * 1000000u;
    if (!deadline_ns && idle) deadline_ns = last_ns_ + idle;
    std::unique_lock<std::mutex> lk(in_->m);
    for (;;) {
      if (!in_->q.empty()) {
        it = std::move(in_->q.front());
        in_->q.pop_front();
        in_->cv.notify_all();  // room for the network thread (QoS 0)
        messages_.fetch_add(1, std::memory_order_relaxed);
        last_ns_ = sinew::detail::now_ns();
        return 1;
      }
      if (in_->stopping || wake_.signalled()) return -1;
      if (const std::string f = c_.failure(); !f.empty()) throw error(f);
      const std::uint64_t now = sinew::detail::now_ns();
      if (deadline_ns && now >= deadline_ns) return 0;
      // Wake at least every 100 ms to see a lost connection.
      const std::uint64_t wait = deadline_ns ? std::min<std::uint64_t>(deadline_ns - now, 100000000u) : 100000000u;
      in_->cv.wait_for(lk, std::chrono::nanoseconds(wait));
    }
  }

  // A message the policy skips counts as handled: at QoS 1 it is acknowledged.
  void handled(std::uint64_t id) {
    if (o_.qos != 1) return;
    {
      std::lock_guard<std::mutex> lk(in_->m);
      in_->acked = std::max(in_->acked, id);
    }
    in_->cv.notify_all();
  }

  bool produce(unit_builder& b) override {
    if (!batch_) {  // the first unit: the run has started. At QoS 1 one message is in flight: one a unit.
      batch_.emplace(o_.format, batching_on() && o_.qos == 0 ? batch().records : 1, batch().bytes);
      last_ns_ = sinew::detail::now_ns();
    }
    std::uint64_t deadline = 0, last = 0;
    for (;;) {
      if (o_.count && records_ >= *o_.count) break;
      if (!held_) {
        inbox::item it;
        const int r = take(it, batch_->size() ? deadline : 0);
        if (r < 0) break;
        if (r == 0) {
          if (batch_->size()) break;  // the latency bound
          return false;               // idle: the end of the stream
        }
        held_ = std::move(it);
      }
      const detail::frame f{held_->payload.data(), held_->payload.size()};
      const auto a = batch_->add(&f, 1);
      if (a == detail::message_batch::added::full) break;  // held_ starts the next unit
      const std::uint64_t id = held_->id;
      held_.reset();
      if (a == detail::message_batch::added::malformed) {
        const std::string why = c_.who() + ": message " + std::to_string(id - 1) + " is not a record: " + batch_->why();
        if (o_.format.malformed == on_malformed::skip) {
          skipped_.fetch_add(1, std::memory_order_relaxed);
          handled(id);
          continue;
        }
        if (batch_->size() == 0) throw error(why);
        fail_later(why);
        break;
      }
      last = id;
      if (++records_, batch_->size() == 1) deadline = sinew::detail::now_ns() + std::uint64_t(batch().latency.count()) * 1000;
      if (batch_->full()) break;
    }
    if (batch_->size() == 0) return false;
    if (o_.qos == 1) b.set_note(note_ref(new ack_note(in_, last)));
    batch_->finish(b, batching_on());
    return true;
  }

  mqtt_source_options o_;
  std::shared_ptr<inbox> in_;
  detail::mqtt_client c_;
  std::optional<detail::message_batch> batch_;
  std::optional<inbox::item> held_;  // taken, not yet in a unit
  std::uint64_t records_ = 0, last_ns_ = 0;
  std::atomic<std::uint64_t> messages_{0}, skipped_{0};
};

}  // namespace

std::string mqtt_filter_error(const std::string& filter) {
  if (mosquitto_sub_topic_check(filter.c_str()) != MOSQ_ERR_SUCCESS)
    return "'" + filter + "' is not a topic filter ('+' stands for a whole level, '#' for the last ones)";
  return {};
}

sinew::source mqtt_source(mqtt_source_options o) { return sinew::source(std::make_shared<mqtt_source_impl>(std::move(o))); }

}  // namespace sinew::io
