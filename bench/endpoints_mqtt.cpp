// endpoints, MQTT half: messages through mosquitto brokers, Sinew's MQTT
// source -> map -> sink against a hand-written libmosquitto callback loop
// (on each message: XOR, publish), in the same run. A producer publishes N
// messages of 100 bytes or 64 KiB at QoS 0 to broker A; the system under
// test subscribes there, XORs every byte with a key and publishes each
// message to broker B, where a consumer counts them and checks the last.
// Two brokers, each its own process started here on a loopback port
// (tests/support/mosquitto_broker.hpp; $SINEW_MOSQUITTO names the binary):
// one broker would route every message twice and bound both systems alike.
// The brokers queue QoS 0 messages for a slow subscriber without limit
// (max_queued_messages 0) instead of dropping them, and the producer keeps
// at most a window of messages (10 MB, 32 MiB) ahead of the consumer, wide
// enough not to bound either system. Time: first publish to
// last receive.
#include "endpoints.hpp"

#ifdef SINEW_HAVE_MQTT
#include <sinew/io/mqtt.hpp>
#include <sinew/sinew.hpp>

#include <mosquitto.h>

#include <atomic>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "mosquitto_broker.hpp"

namespace sinew_bench::endpoints {

namespace {

// One libmosquitto client with its network thread; `on_message` and
// `on_subscribe` run there.
struct client {
  mosquitto* m;
  std::function<void(const mosquitto_message&)> on_message;
  std::mutex mx;
  std::condition_variable cv;
  bool subscribed = false;

  explicit client(int port) {
    mosquitto_lib_init();
    m = mosquitto_new(nullptr, true, this);
    mosquitto_message_callback_set(m, [](mosquitto*, void* self, const mosquitto_message* msg) {
      static_cast<client*>(self)->on_message(*msg);
    });
    mosquitto_subscribe_callback_set(m, [](mosquitto*, void* self, int, int, const int*) {
      auto* c = static_cast<client*>(self);
      std::lock_guard<std::mutex> lk(c->mx);
      c->subscribed = true;
      c->cv.notify_all();
    });
    if (mosquitto_connect(m, "127.0.0.1", port, 30) != MOSQ_ERR_SUCCESS || mosquitto_loop_start(m) != MOSQ_ERR_SUCCESS)
      throw std::runtime_error("cannot connect to the broker on port " + std::to_string(port));
  }
  ~client() {
    mosquitto_disconnect(m);
    mosquitto_loop_stop(m, false);
    mosquitto_destroy(m);
  }
  // Subscribes to `topic` at QoS 0 and waits for the broker's SUBACK.
  void subscribe(const char* topic) {
    mosquitto_subscribe(m, nullptr, topic, 0);
    std::unique_lock<std::mutex> lk(mx);
    cv.wait(lk, [&] { return subscribed; });
  }
  void publish(const char* topic, const void* p, std::size_t n) {
    mosquitto_publish(m, nullptr, topic, int(n), p, 0, false);
  }
};

// Two brokers, a producer on A and a consumer on B, for one run.
struct harness {
  sinew_support::mosquitto_broker a{"max_queued_messages 0"}, b{"max_queued_messages 0"};
  std::unique_ptr<client> producer, consumer;
  std::atomic<std::size_t> received{0};
  std::vector<std::uint8_t> last;
  std::mutex mx;
  std::condition_variable cv;

  std::string why() const { return !a.why.empty() ? a.why : b.why; }
  void connect() {
    producer = std::make_unique<client>(a.port);
    consumer = std::make_unique<client>(b.port);
    consumer->on_message = [this](const mosquitto_message& m) {
      const std::size_t k = received.fetch_add(1, std::memory_order_relaxed) + 1;
      if (k == expected) {
        std::lock_guard<std::mutex> lk(mx);
        const auto* p = static_cast<const std::uint8_t*>(m.payload);
        last.assign(p, p + m.payloadlen);
        cv.notify_all();
      }
    };
    consumer->subscribe("out");
  }
  std::size_t expected = 0;

  // Publishes `n` copies of `payload`, at most `window` ahead of the
  // consumer, and waits for the last; "" when it is the payload XORed.
  std::string exchange(const std::vector<std::uint8_t>& payload, std::size_t n, std::size_t window) {
    for (std::size_t i = 0; i < n; ++i) {
      while (i - received.load(std::memory_order_relaxed) >= window) std::this_thread::yield();
      producer->publish("in", payload.data(), payload.size());
    }
    std::unique_lock<std::mutex> lk(mx);
    if (!cv.wait_for(lk, std::chrono::seconds(60), [&] { return received.load() >= n; }))
      return std::to_string(received.load()) + " of " + std::to_string(n) + " messages came through in 60 s";
    return check_xored(last.data(), last.size(), payload);
  }
};

// The hand-written loop: a client on each broker; the subscriber's message
// callback XORs the payload and publishes it through the other.
struct hand_loop {
  client in, out;
  hand_loop(int a, int b) : in(a), out(b) {
    in.on_message = [this](const mosquitto_message& m) {
      auto* p = static_cast<std::uint8_t*>(m.payload);
      const std::size_t bytes = std::size_t(m.payloadlen);
      for (std::size_t k = 0; k < bytes; ++k) p[k] = std::uint8_t(p[k] ^ key);
      out.publish("out", p, bytes);
    };
    in.subscribe("in");
  }
};

}  // namespace

void run_mqtt(context& ctx) {
  const unsigned threads = thread_count();
  // The producer keeps at most `window` messages ahead of the consumer.
  const struct {
    size_case c;
    std::size_t window;
  } cases[] = {
      {{"100B", 100, ctx.smoke() ? 2000u : ctx.quick() ? 100000u : 200000u}, 100000},
      {{"64KiB", 65536, ctx.smoke() ? 50u : ctx.quick() ? 2000u : 8000u}, 512},
  };
  {
    harness probe;
    if (!probe.why().empty()) {
      ctx.note("MQTT cases skipped: " + probe.why());
      return;
    }
  }
  for (const auto& [c, window] : cases) {
    ctx.param(std::string("mqtt_messages_") + c.name, c.n);
    const std::vector<std::uint8_t> msg = payload(c.bytes);
    std::string err_loop, err_sinew;
    std::unique_ptr<harness> h;

    std::unique_ptr<hand_loop> loop;
    auto loop_setup = [&] {
      h = std::make_unique<harness>();
      h->expected = c.n;
      h->connect();
      loop = std::make_unique<hand_loop>(h->a.port, h->b.port);
    };
    auto loop_run = [&] {
      err_loop = h->exchange(msg, c.n, window);
      loop.reset();
      h.reset();
    };

    std::unique_ptr<sinew::graph> g;
    std::optional<sinew::source> src;
    std::optional<sinew::sink> snk;
    auto sinew_setup = [&] {
      h = std::make_unique<harness>();
      h->expected = c.n;
      h->connect();
      sinew::io::mqtt_source_options in;
      in.broker.port = h->a.port;
      in.topics = {"in"};
      in.format = sinew::io::message_format::binary(sinew::io::record_layout::of<std::uint8_t>(sinew::shape::d1(c.bytes)));
      in.count = c.n;
      src = sinew::io::mqtt_source(in);
      // Until the broker acknowledged the subscription (the report then loses "subscribing").
      for (std::string r; (r = src->impl().report()).rfind("connected", 0) != 0 || r.find("subscribing") != std::string::npos;)
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
      sinew::io::mqtt_sink_options out;
      out.broker.port = h->b.port;
      out.topic = "out";
      snk = sinew::io::mqtt_sink(out);
      g = std::make_unique<sinew::graph>(sinew::map<xor_key>(), sinew::graph_options{.scheduler = &sinew::default_scheduler()});
    };
    auto sinew_run = [&] {
      auto f = g->run(*src, *snk);
      err_sinew = h->exchange(msg, c.n, window);
      f.get();
      src.reset();
      snk.reset();
      h.reset();
    };
    compare(ctx, std::string("mqtt ") + c.name, c, {loop_setup, loop_run, "message callback: xor, publish", &err_loop},
            {sinew_setup, sinew_run, "mqtt_source -> map(xor) -> mqtt_sink, QoS 0, " + std::to_string(threads) + " workers",
             &err_sinew},
            std::string("endpoints_mqtt_") + c.name,
            "(" + std::to_string(c.n) + " messages of " + std::to_string(c.bytes) + " bytes at QoS 0 through two brokers)");
  }
}

}  // namespace sinew_bench::endpoints

#else

namespace sinew_bench::endpoints {
void run_mqtt(context& ctx) { ctx.note("MQTT cases skipped: built without MQTT (libmosquitto-dev)"); }
}  // namespace sinew_bench::endpoints

#endif
