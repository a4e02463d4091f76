// MQTT sinks: a message per record, published at QoS 0 or 1 to a topic
// template (io/mqtt.hpp).
#include <condition_variable>
#include <cstdio>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <vector>

#include "../message_batch.hpp"
#include "../stream.hpp"
#include "mqtt_client.hpp"

namespace sinew::io {
namespace {

// Element 0 of a buffer as a number (the {bN} of a topic template).
template <class... T>
bool format_as(const elem_type& t, const void* p, std::string& out) {
  return ((&t == &elem_type_of<T>() ? (out += std::to_string(*static_cast<const T*>(p)), true) : false) || ...);
}
std::string element_text(const elem_type& t, const void* p) {
  std::string s;
  if (format_as<std::uint8_t, std::int8_t, std::uint16_t, std::int16_t, std::uint32_t, std::int32_t, std::uint64_t,
                std::int64_t>(t, p, s))
    return s;
  char b[32];
  if (&t == &elem_type_of<float>()) std::snprintf(b, sizeof b, "%g", double(*static_cast<const float*>(p)));
  else if (&t == &elem_type_of<double>()) std::snprintf(b, sizeof b, "%g", *static_cast<const double*>(p));
  else return "?";
  return b;
}

// A topic template split into text and fields: {seq}, {b0}..{b7}.
class topic_template {
 public:
  topic_template(const std::string& t, const std::string& who) {
    std::size_t i = 0;
    while (i < t.size()) {
      const std::size_t open = t.find('{', i);
      if (open == std::string::npos) {
        parts_.push_back({t.substr(i), -2});
        break;
      }
      if (open > i) parts_.push_back({t.substr(i, open - i), -2});
      const std::size_t close = t.find('}', open);
      const std::string f = close == std::string::npos ? std::string() : t.substr(open + 1, close - open - 1);
      if (f == "seq") parts_.push_back({"", -1});
      else if (f.size() == 2 && f[0] == 'b' && f[1] >= '0' && f[1] <= '7') parts_.push_back({"", f[1] - '0'});
      else throw error(who + ": the topic template '" + t + "' has an unknown field at " + std::to_string(open) + " ({seq}, {b0}..{b7})");
      i = close + 1;
    }
    if (t.empty() || t.find_first_of("+#") != std::string::npos)
      throw error(who + ": '" + t + "' is not a topic to publish to (empty, or holds a wildcard)");
  }
  // The topic of the record whose buffer b starts at rec[b].
  std::string expand(std::uint64_t seq, const layer& l, const detail::frame* rec) const {
    std::string s;
    for (const part& p : parts_) {
      if (p.field == -2) s += p.text;
      else if (p.field == -1) s += std::to_string(seq);
      else if (unsigned(p.field) < l.size() && rec[p.field].size) s += element_text(l[unsigned(p.field)]->type(), rec[p.field].data);
      else s += "?";
    }
    return s;
  }

 private:
  struct part {
    std::string text;
    int field;  // -2 text, -1 seq, else a buffer
  };
  std::vector<part> parts_;
};

class mqtt_sink_impl final : public sinew::detail::sink_impl {
 public:
  explicit mqtt_sink_impl(mqtt_sink_options o)
      : o_(std::move(o)), who_("mqtt sink " + o_.broker.host + ":" + std::to_string(o_.broker.port)), topic_(o_.topic, who_) {
    if (o_.qos < 0 || o_.qos > 1) throw error(who_ + ": QoS " + std::to_string(o_.qos) + " (0 or 1)");
    if (o_.max_unacked == 0) throw error(who_ + ": max_unacked must be at least 1");
  }
  void prepare(const sinew::detail::type_list&, std::optional<std::uint64_t>) override {
    order_.reset();
    close_client();
    {
      std::lock_guard<std::mutex> lk(m_);
      stopping_ = false;
      published_ = acked_prefix_ = 0;
      mids_.clear();
      acked_.clear();
      waiting_.clear();
    }
    auto c = std::make_unique<detail::mqtt_client>(o_.broker, "mqtt sink", false);
    c->on_publish = [this](int mid) { acked(mid); };
    c->on_connect = [this] {  // publish() waits for the connection
      std::lock_guard<std::mutex> lk(m_);
      cv_.notify_all();
    };
    {
      std::lock_guard<std::mutex> lk(client_m_);
      c_ = std::move(c);
    }
    c_->start();  // graph::run throws naming the broker when it cannot be reached
  }
  void consume(work_unit& u) override {
    order_.deliver(u, [&](std::uint64_t seq, const layer& l, const record_index& r) { send(seq, l, r); });
    settle();
  }
  void finish() override {
    order_.finish([&](std::uint64_t seq, const layer& l, const record_index& r) { send(seq, l, r); });
    settle();
    if (o_.qos == 1) {  // every publish acknowledged before the end
      std::unique_lock<std::mutex> lk(m_);
      wait(lk, [&] { return acked_prefix_ == published_; }, "the broker's acknowledgements");
    }
    c_->stop(false);
    close_client();
  }
  void interrupt() override {
    {
      std::lock_guard<std::mutex> lk(m_);
      stopping_ = true;
    }
    cv_.notify_all();
  }
  bool writes_records() const override { return true; }
  bool takes_notes() const override { return true; }
  std::string label() const override { return "sink(" + who_ + ")"; }
  std::string report() const override {
    std::string r;
    {
      std::lock_guard<std::mutex> lk(client_m_);
      if (!c_) return r;
      r = c_->state();
    }
    std::lock_guard<std::mutex> lk(m_);
    if (o_.qos == 1 && published_ > acked_prefix_) r += ", " + std::to_string(published_ - acked_prefix_) + " unacknowledged";
    return r;
  }

 private:
  // Ends the client (its network thread) outside both locks: the thread may
  // wait for m_ in acked(), and report() reads c_ under client_m_.
  void close_client() {
    std::unique_ptr<detail::mqtt_client> c;
    {
      std::lock_guard<std::mutex> lk(client_m_);
      c = std::move(c_);
    }
  }

  // Waits on m_ for `ready`, interrupted by a failing or cancelled run and
  // by a lost connection when reconnecting is off.
  template <class P>
  void wait(std::unique_lock<std::mutex>& lk, P ready, const char* what) {
    while (!ready()) {
      if (stopping_) throw error(who_ + ": interrupted while waiting for " + what);
      if (const std::string f = c_->failure(); !f.empty()) throw error(f);
      cv_.wait_for(lk, std::chrono::milliseconds(100));
    }
  }
  void send(std::uint64_t seq, const layer& l, const record_index& r) {
    detail::for_each_message(l, r, false, scratch_, [&](const detail::frame* f, std::size_t, const detail::frame* bufs) {
      publish(topic_.expand(seq, l, bufs), f[0]);
    });
  }
  // At QoS 1 the lock is held across the publish, so that its mid is recorded
  // before the acknowledgement can come; at QoS 0 (nothing to record) it is
  // taken only to wait for a reconnection, and the network thread, writing
  // the messages before, never waits for a copy of the next.
  void publish(const std::string& topic, const detail::frame& f) {
    std::unique_lock<std::mutex> lk(m_, std::defer_lock);
    if (o_.qos == 1) {
      lk.lock();
      wait(lk, [&] { return published_ - acked_prefix_ < o_.max_unacked; }, "room among the unacknowledged messages");
    }
    for (;;) {
      // Only once the broker has acknowledged the connection: QoS 1
      // messages published before the CONNACK may leave twice (libmosquitto
      // 2.0.11: a subscriber got a run of 20 messages again).
      if (c_->is_connected()) {
        int mid = 0;
        const int rc = mosquitto_publish(c_->handle(), &mid, topic.c_str(), int(f.size), f.data, o_.qos, o_.retain);
        if (rc == MOSQ_ERR_SUCCESS) {
          if (o_.qos == 1) mids_[mid] = published_++;  // published_ counts only QoS 1 publishes (under m_)
          return;
        }
        if (rc != MOSQ_ERR_NO_CONN && rc != MOSQ_ERR_CONN_LOST)
          throw error(who_ + ": cannot publish to '" + topic + "': " + detail::mqtt_error(rc));
      }
      // Not connected (or not acknowledged yet): wait for the network thread
      // to connect; its on_connect wakes us.
      if (!lk.owns_lock()) lk.lock();
      if (stopping_) throw error(who_ + ": interrupted while the broker was away");
      if (const std::string fl = c_->failure(); !fl.empty()) throw error(fl);
      if (!c_->is_connected()) cv_.wait_for(lk, std::chrono::milliseconds(50));  // set before on_connect takes m_
    }
  }
  // The network thread: the broker acknowledged publish `mid`.
  void acked(int mid) {
    if (o_.qos == 0) return;  // called for QoS 0 publishes too, once written
    std::vector<note_ref> done;
    {
      std::lock_guard<std::mutex> lk(m_);
      auto it = mids_.find(mid);
      if (it == mids_.end()) return;  // QoS 0
      acked_.insert(it->second);
      mids_.erase(it);
      while (!acked_.empty() && *acked_.begin() == acked_prefix_) {
        acked_.erase(acked_.begin());
        ++acked_prefix_;
      }
      while (!waiting_.empty() && waiting_.front().first <= acked_prefix_) {
        done.push_back(std::move(waiting_.front().second));
        waiting_.erase(waiting_.begin());
      }
    }
    cv_.notify_all();
    for (note_ref& n : done) n.written();
  }
  // The notes of the units just published: written now (QoS 0: handed to
  // the library), or once the broker acknowledged every publish so far (QoS 1).
  void settle() {
    if (!order_.unwritten()) return;
    if (o_.qos == 0) {
      order_.written();
      return;
    }
    std::unique_lock<std::mutex> lk(m_);
    order_.take_unwritten([&](note_ref n) { waiting_.emplace_back(published_, std::move(n)); });
    // Acknowledgements that came while publishing.
    std::vector<note_ref> done;
    while (!waiting_.empty() && waiting_.front().first <= acked_prefix_) {
      done.push_back(std::move(waiting_.front().second));
      waiting_.erase(waiting_.begin());
    }
    lk.unlock();
    for (note_ref& n : done) n.written();
  }

  mqtt_sink_options o_;
  std::string who_;
  topic_template topic_;
  std::unique_ptr<detail::mqtt_client> c_;  // set and reset by the sink's thread, read by report() under client_m_
  mutable std::mutex client_m_;
  mutable std::mutex m_;
  std::condition_variable cv_;
  bool stopping_ = false;
  std::uint64_t published_ = 0, acked_prefix_ = 0;  // QoS 1 publishes, and how many from the first are acknowledged
  std::map<int, std::uint64_t> mids_;               // QoS 1 publishes in flight: mid -> index
  std::set<std::uint64_t> acked_;                   // acknowledged beyond the prefix
  std::vector<std::pair<std::uint64_t, note_ref>> waiting_;  // written once the prefix reaches .first
  std::vector<char> scratch_;
  detail::in_order order_;
};

}  // namespace

std::string mqtt_topic_error(const std::string& topic) {
  try {
    topic_template t(topic, "the topic");
  } catch (const error& e) {
    return e.what();
  }
  return {};
}

sinew::sink mqtt_sink(mqtt_sink_options o) { return sinew::sink(std::make_shared<mqtt_sink_impl>(std::move(o))); }

}  // namespace sinew::io
