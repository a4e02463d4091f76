#pragma once
// Internal to the MQTT source and sink: one libmosquitto client with its
// network thread, reconnecting with back-off, named in errors.
#include <mosquitto.h>

#include <atomic>
#include <functional>
#include <mutex>
#include <string>

#include <sinew/io/mqtt.hpp>

namespace sinew::io::detail {

class mqtt_client {
 public:
  /// `what` names the role in errors ("mqtt source"); `persistent`: keep
  /// the session (subscriptions, unacknowledged messages) across connections.
  mqtt_client(const mqtt_broker& b, const std::string& what, bool persistent);
  ~mqtt_client();
  mqtt_client(const mqtt_client&) = delete;
  mqtt_client& operator=(const mqtt_client&) = delete;

  /// Called on the network thread: after each (re)connection, for each
  /// message, for each acknowledged publish (mid), for each acknowledged
  /// subscription (mid, the QoS granted per topic filter; 128: refused).
  std::function<void()> on_connect;
  std::function<void(const mosquitto_message&)> on_message;
  std::function<void(int)> on_publish;
  std::function<void(int mid, int n, const int* granted)> on_subscribe;

  /// Connects (blocking; throws naming the broker) and starts the network thread.
  void start();
  /// Stops the network thread and disconnects; `abrupt`: closes the socket
  /// first, so nothing queued (an acknowledgement) goes out.
  void stop(bool abrupt);
  mosquitto* handle() const noexcept { return m_; }
  /// Closes `m`'s socket under it: nothing queued leaves (an acknowledgement
  /// the broker must not get); its network thread then reconnects or stops.
  static void cut(mosquitto* m) noexcept;
  const std::string& who() const noexcept { return who_; }
  /// Whether the broker has acknowledged the connection (CONNACK) and it
  /// has not been lost since.
  bool is_connected() const noexcept { return connected_.load(std::memory_order_acquire); }
  /// "connected, 2 reconnects" for reports.
  std::string state() const;
  /// The lost connection when reconnecting is off, or what `fail` recorded
  /// first; else empty.
  std::string failure() const;
  /// Records `why` as the failure (the first one stays).
  void fail(std::string why);

 private:
  static void connected(mosquitto*, void* self, int rc);
  static void disconnected(mosquitto*, void* self, int rc);
  static void message(mosquitto*, void* self, const mosquitto_message* msg);
  static void published(mosquitto*, void* self, int mid);
  static void subscribed(mosquitto*, void* self, int mid, int n, const int* granted);

  mosquitto* m_ = nullptr;
  mqtt_broker b_;
  std::string who_;
  bool running_ = false;
  std::atomic<bool> connected_{false}, stopping_{false};
  std::atomic<std::uint64_t> connects_{0};
  mutable std::mutex m_failed_;
  std::string failed_;
};

/// "mosquitto: <text>" of a libmosquitto return code.
std::string mqtt_error(int rc);

}  // namespace sinew::io::detail
