// libmosquitto clients for the sinew::io MQTT endpoints.
#include "mqtt_client.hpp"

#include <sys/socket.h>
#include <unistd.h>

#include <sinew/engine/error.hpp>

namespace sinew::io::detail {

namespace {
// libmosquitto's global state: set up once, for the life of the process.
void init_library() {
  static const int once = [] { return mosquitto_lib_init(); }();
  (void)once;
}
std::string default_id() {
  static std::atomic<unsigned> n{0};
  return "sinew-" + std::to_string(::getpid()) + "-" + std::to_string(n.fetch_add(1));
}
}  // namespace

std::string mqtt_error(int rc) {
  return rc == MOSQ_ERR_ERRNO ? std::string(strerror(errno)) : std::string(mosquitto_strerror(rc));
}

mqtt_client::mqtt_client(const mqtt_broker& b, const std::string& what, bool persistent)
    : b_(b), who_(what + " " + b.host + ":" + std::to_string(b.port)) {
  init_library();
  if (b_.client_id.empty()) b_.client_id = default_id();
  if (b_.port < 1 || b_.port > 65535) throw sinew::error(who_ + ": the port is out of range");
  m_ = mosquitto_new(b_.client_id.c_str(), !persistent, this);
  if (!m_) throw sinew::error(who_ + ": cannot make a client: " + std::string(strerror(errno)));
  mosquitto_connect_callback_set(m_, &mqtt_client::connected);
  mosquitto_disconnect_callback_set(m_, &mqtt_client::disconnected);
  mosquitto_message_callback_set(m_, &mqtt_client::message);
  mosquitto_publish_callback_set(m_, &mqtt_client::published);
  mosquitto_subscribe_callback_set(m_, &mqtt_client::subscribed);
  mosquitto_reconnect_delay_set(m_, 1, 30, true);
  mosquitto_int_option(m_, MOSQ_OPT_TCP_NODELAY, 1);
}

mqtt_client::~mqtt_client() {
  stop(false);
  mosquitto_destroy(m_);
}

void mqtt_client::start() {
  const int rc = mosquitto_connect(m_, b_.host.c_str(), b_.port, b_.keepalive);
  if (rc != MOSQ_ERR_SUCCESS) throw sinew::error(who_ + ": cannot connect: " + mqtt_error(rc));
  const int lr = mosquitto_loop_start(m_);
  if (lr != MOSQ_ERR_SUCCESS) throw sinew::error(who_ + ": cannot start the network thread: " + mqtt_error(lr));
  running_ = true;
}

void mqtt_client::stop(bool abrupt) {
  if (!running_) return;
  running_ = false;
  stopping_ = true;
  if (abrupt) cut(m_);
  mosquitto_disconnect(m_);  // after what is queued: publishes go out first
  mosquitto_loop_stop(m_, false);
}

void mqtt_client::cut(mosquitto* m) noexcept {
  const int fd = mosquitto_socket(m);
  if (fd >= 0) ::shutdown(fd, SHUT_RDWR);
}

std::string mqtt_client::state() const {
  const std::uint64_t c = connects_.load(std::memory_order_relaxed);
  std::string s = connected_.load(std::memory_order_relaxed) ? "connected" : "reconnecting";
  if (c > 1) s += ", " + std::to_string(c - 1) + (c == 2 ? " reconnect" : " reconnects");
  return s;
}

std::string mqtt_client::failure() const {
  std::lock_guard<std::mutex> lk(m_failed_);
  return failed_;
}

void mqtt_client::fail(std::string why) {
  std::lock_guard<std::mutex> lk(m_failed_);
  if (failed_.empty()) failed_ = std::move(why);
}

void mqtt_client::connected(mosquitto*, void* self, int rc) {
  auto* c = static_cast<mqtt_client*>(self);
  if (rc != 0) return;  // refused (CONNACK): the network thread tries again
  c->connected_ = true;
  c->connects_.fetch_add(1, std::memory_order_relaxed);
  if (c->on_connect) c->on_connect();
}

void mqtt_client::disconnected(mosquitto* m, void* self, int rc) {
  auto* c = static_cast<mqtt_client*>(self);
  c->connected_ = false;
  if (rc == 0 || c->stopping_) return;  // asked for
  if (!c->b_.reconnect) {
    c->fail(c->who_ + ": the connection to the broker was lost (" + mqtt_error(rc) + ")");
    mosquitto_disconnect(m);  // no reconnection
  }
}

void mqtt_client::message(mosquitto*, void* self, const mosquitto_message* msg) {
  auto* c = static_cast<mqtt_client*>(self);
  if (c->on_message) c->on_message(*msg);
}

void mqtt_client::published(mosquitto*, void* self, int mid) {
  auto* c = static_cast<mqtt_client*>(self);
  if (c->on_publish) c->on_publish(mid);
}

void mqtt_client::subscribed(mosquitto*, void* self, int mid, int n, const int* granted) {
  auto* c = static_cast<mqtt_client*>(self);
  if (c->on_subscribe) c->on_subscribe(mid, n, granted);
}

}  // namespace sinew::io::detail
