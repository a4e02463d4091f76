// MQTT sources: topic filters at QoS 0 (at most once) or 1 (at least once,
// end to end through delivery notes), a message a record (io/mqtt.hpp).
#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include <sinew/detail/clock.hpp>

#include "../message_source.hpp"
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
  std::size_t want = 1;                  // the queue length that wakes the waiting source
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

class mqtt_source_impl final : public detail::message_source {
 public:
  // At QoS 1 one message is in flight (its callback waits for its note): one a unit.
  explicit mqtt_source_impl(mqtt_source_options o)
      : message_source(o.format, o.batch, o.count, o.idle_timeout, o.qos == 1), o_(std::move(o)), in_(std::make_shared<inbox>()), c_(o_.broker, "mqtt source", o_.qos == 1) {
    if (o_.qos < 0 || o_.qos > 1) throw error(c_.who() + ": QoS " + std::to_string(o_.qos) + " (0 or 1)");
    if (o_.queue == 0) throw error(c_.who() + ": a queue of 0 messages (at least 1)");
    if (o_.topics.empty()) throw error(c_.who() + ": no topic to subscribe to");
    if (o_.format.multipart) throw error(c_.who() + ": an MQTT message has one payload (no multipart)");
    if (o_.format.layout) o_.format.layout->check(c_.who());
    for (const std::string& t : o_.topics)
      if (const std::string e = mqtt_filter_error(t); !e.empty()) throw error(c_.who() + ": " + e);
    // Subscribed once the broker acknowledged every filter (again after a
    // reconnection); a filter it refuses fails the run, naming it.
    c_.on_connect = [this] {
      std::lock_guard<std::mutex> lk(subs_m_);
      subscribed_.store(false, std::memory_order_relaxed);
      subs_.clear();
      for (const std::string& t : o_.topics) {
        int mid = 0;
        if (mosquitto_subscribe(c_.handle(), &mid, t.c_str(), o_.qos) == MOSQ_ERR_SUCCESS) subs_[mid] = t;
      }
    };
    c_.on_subscribe = [this](int mid, int n, const int* granted) {
      std::lock_guard<std::mutex> lk(subs_m_);
      auto it = subs_.find(mid);
      if (it == subs_.end()) return;
      for (int i = 0; i < n; ++i)
        if (granted[i] < 0 || granted[i] > 2) c_.fail(c_.who() + ": the broker refused the subscription to '" + it->second + "'");
      subs_.erase(it);
      if (subs_.empty()) subscribed_.store(true, std::memory_order_relaxed);
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
    return c_.state() + (subscribed_.load(std::memory_order_relaxed) ? "" : ", subscribing") + ", " + counts();
  }

 private:
  // The network thread: queue the message; at QoS 1 wait until the unit it
  // goes into was written by every sink (its PUBACK leaves when this returns).
  void arrived(const mosquitto_message& m) {
    std::string payload(static_cast<const char*>(m.payload), std::size_t(m.payloadlen));  // copied outside the lock
    std::unique_lock<std::mutex> lk(in_->m);
    if (o_.qos == 0) in_->cv.wait(lk, [&] { return in_->q.size() < o_.queue || in_->stopping; });
    if (in_->stopping) {
      if (o_.qos == 1) in_->cut_connection();
      return;
    }
    const std::uint64_t id = ++in_->arrived;
    in_->q.push_back({std::move(payload), id});
    if (in_->q.size() == in_->want) in_->cv.notify_all();  // the source waits on an empty queue for `want`
    if (o_.qos == 1) in_->cv.wait(lk, [&] { return in_->acked >= id || in_->cut; });
  }

  const std::string& who() const override { return c_.who(); }
  // The next message into cur_. Throws when the connection was lost and
  // reconnecting is off.
  got receive(std::uint64_t deadline_ns) override {
    if (!taken_.empty()) return next();
    std::unique_lock<std::mutex> lk(in_->m);
    for (;;) {
      if (!in_->q.empty()) {  // all of them at once: one lock for many messages
        const bool full = in_->q.size() >= o_.queue;
        taken_.swap(in_->q);
        if (full) in_->cv.notify_all();  // room for the network thread (QoS 0)
        return next();
      }
      if (in_->stopping || wake_.signalled()) return got::stopped;
      if (const std::string f = c_.failure(); !f.empty()) throw error(f);
      const std::uint64_t now = sinew::detail::now_ns();
      if (deadline_ns && now >= deadline_ns) return got::timeout;
      // Wake at least every 100 ms to see a lost connection. With records
      // in the unit, wait for a few more messages or its deadline: woken by
      // every message, the source's thread would sleep and wake once per
      // message of a steady stream that it drains as fast as it comes.
      const std::uint64_t wait = deadline_ns ? std::min<std::uint64_t>(deadline_ns - now, 100000000u) : 100000000u;
      in_->want = deadline_ns && o_.qos == 0 ? std::clamp<std::size_t>(room(), 1, std::min(wake_after, o_.queue)) : 1;
      in_->cv.wait_for(lk, std::chrono::nanoseconds(wait));
      in_->want = 1;
    }
  }
  got next() {
    cur_ = std::move(taken_.front());
    taken_.pop_front();
    return got::message;
  }
  // A payload this large lives on the heap: moving the string does not move it.
  std::shared_ptr<void> keep_message() override { return std::make_shared<std::string>(std::move(cur_.payload)); }
  std::size_t frames(detail::frame* out, std::string&) override {
    out[0] = {cur_.payload.data(), cur_.payload.size()};
    return 1;
  }
  // At QoS 1 a message the policy skips counts as handled: it is acknowledged.
  void consumed(bool added) override {
    if (added) {
      last_ = cur_.id;
      return;
    }
    if (o_.qos != 1) return;
    {
      std::lock_guard<std::mutex> lk(in_->m);
      in_->acked = std::max(in_->acked, cur_.id);
    }
    in_->cv.notify_all();
  }
  void seal(unit_builder& b) override {
    if (o_.qos == 1) b.set_note(note_ref(new ack_note(in_, last_)));
  }

  static constexpr std::size_t wake_after = 32;  // messages that wake a source with records in its unit
  mqtt_source_options o_;
  std::shared_ptr<inbox> in_;
  std::mutex subs_m_;                // guards subs_ (the network thread's callbacks)
  std::map<int, std::string> subs_;  // subscriptions not acknowledged yet: mid -> filter
  std::atomic<bool> subscribed_{false};
  detail::mqtt_client c_;
  std::deque<inbox::item> taken_;  // taken from the inbox, not yet received
  inbox::item cur_;                // the message received last
  std::uint64_t last_ = 0;  // the last message in the unit being filled
};

}  // namespace

std::string mqtt_filter_error(const std::string& filter) {
  if (mosquitto_sub_topic_check(filter.c_str()) != MOSQ_ERR_SUCCESS)
    return "'" + filter + "' is not a topic filter ('+' stands for a whole level, '#' for the last ones)";
  return {};
}

sinew::source mqtt_source(mqtt_source_options o) { return sinew::source(std::make_shared<mqtt_source_impl>(std::move(o))); }

}  // namespace sinew::io
