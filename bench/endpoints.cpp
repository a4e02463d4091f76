// endpoints: messages through a message system and back, Sinew's ZeroMQ
// source -> map -> sink against a hand-written loop on the same library
// (a PULL recv / work / PUSH send loop on one thread), in the same run. A
// producer thread PUSHes N messages of 100 bytes or 64 KiB; the system under
// test XORs every byte with a key and PUSHes each message on; a consumer
// thread PULLs them all and checks the last. Time: first send to last
// receive. Sinew runs map(xor) on every core and batches records
// (docs/io.md, "Record batches").
#include "bench.hpp"

#ifdef SINEW_HAVE_ZMQ
#include <sinew/io/zmq.hpp>
#include <sinew/sinew.hpp>

#include <zmq.hpp>

#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

namespace {

namespace sb = sinew_bench;

constexpr std::uint8_t kKey = 90;

struct xor_key {
  void operator()(std::uint8_t& c) const { c = std::uint8_t(c ^ kKey); }
};

// One run's producer and consumer around a system under test that PULLs at
// `in` and PUSHes to `out` (bound here, port picked).
struct harness {
  zmq::context_t ctx;
  zmq::socket_t push{ctx, zmq::socket_type::push}, pull{ctx, zmq::socket_type::pull};
  std::string out;
  harness() {
    pull.bind("tcp://127.0.0.1:*");
    out = pull.get(zmq::sockopt::last_endpoint);
  }
  // Sends `n` copies of `payload` to `in` and receives `n` messages; "" when
  // the last one is the payload XORed with the key.
  std::string exchange(const std::string& in, const std::vector<std::uint8_t>& payload, std::size_t n) {
    push.connect(in);
    std::thread producer([&] {
      for (std::size_t i = 0; i < n; ++i) push.send(zmq::buffer(payload), zmq::send_flags::none);
    });
    zmq::message_t m;
    for (std::size_t i = 0; i < n; ++i)
      if (!pull.recv(m)) break;
    producer.join();
    if (m.size() != payload.size()) return "the last message holds " + std::to_string(m.size()) + " bytes";
    const auto* p = static_cast<const std::uint8_t*>(m.data());
    for (std::size_t i = 0; i < payload.size(); ++i)
      if (p[i] != (payload[i] ^ kKey)) return "byte " + std::to_string(i) + " of the last message is wrong";
    return "";
  }
};

// The hand-written loop: one thread, recv / xor / send.
void loop_through(zmq::socket_t& in, const std::string& out, std::size_t n) {
  zmq::context_t ctx;
  zmq::socket_t push(ctx, zmq::socket_type::push);
  push.connect(out);
  zmq::message_t m;
  for (std::size_t i = 0; i < n; ++i) {
    if (!in.recv(m)) return;
    auto* p = static_cast<std::uint8_t*>(m.data());
    const std::size_t bytes = m.size();  // one call, not one per byte
    for (std::size_t k = 0; k < bytes; ++k) p[k] = std::uint8_t(p[k] ^ kKey);
    push.send(m, zmq::send_flags::none);
  }
}  // the context waits for the queued messages to leave

void run(sb::context& ctx) {
  const unsigned threads = sb::thread_count();
  ctx.param("threads", threads);
  struct size_case {
    const char* name;
    std::size_t bytes, n;
  };
  const size_case cases[] = {
      {"100B", 100, ctx.smoke() ? 2000u : ctx.quick() ? 200000u : 1000000u},
      {"64KiB", 65536, ctx.smoke() ? 50u : ctx.quick() ? 4000u : 20000u},
  };
  for (const size_case& c : cases) {
    ctx.param(std::string("messages_") + c.name, c.n);
    std::vector<std::uint8_t> payload(c.bytes);
    for (std::size_t i = 0; i < payload.size(); ++i) payload[i] = std::uint8_t(i * 131 + 7);
    const double mb = double(c.bytes) * double(c.n) / 1e6;
    std::string err_loop, err_sinew;

    std::unique_ptr<harness> h;
    std::unique_ptr<zmq::context_t> lctx;
    std::unique_ptr<zmq::socket_t> lin;
    std::string lin_at;
    auto loop_setup = [&] {
      h = std::make_unique<harness>();
      lctx = std::make_unique<zmq::context_t>();
      lin = std::make_unique<zmq::socket_t>(*lctx, zmq::socket_type::pull);
      lin->bind("tcp://127.0.0.1:*");
      lin_at = lin->get(zmq::sockopt::last_endpoint);
    };
    auto loop_run = [&] {
      std::thread t([&] { loop_through(*lin, h->out, c.n); });
      err_loop = h->exchange(lin_at, payload, c.n);
      t.join();
      lin.reset();
      lctx.reset();
      h.reset();
    };

    std::unique_ptr<sinew::graph> g;
    std::optional<sinew::source> src;
    std::optional<sinew::sink> snk;
    std::string src_at;
    auto sinew_setup = [&] {
      h = std::make_unique<harness>();
      sinew::io::zmq_source_options in;
      in.endpoint = "tcp://127.0.0.1:*";
      in.bind = true;
      in.bound = std::make_shared<std::string>();
      in.format = sinew::io::message_format::binary(sinew::io::record_layout::of<std::uint8_t>(sinew::shape::d1(c.bytes)));
      in.count = c.n;
      src = sinew::io::zmq_source(in);
      src_at = *in.bound;
      sinew::io::zmq_sink_options out;
      out.endpoint = h->out;
      snk = sinew::io::zmq_sink(out);
      g = std::make_unique<sinew::graph>(sinew::map<xor_key>(), sinew::graph_options{.scheduler = &sinew::default_scheduler()});
    };
    auto sinew_run = [&] {
      auto f = g->run(*src, *snk);
      err_sinew = h->exchange(src_at, payload, c.n);
      f.get();
      src.reset();
      snk.reset();
      h.reset();
    };
    const std::string n = c.name;
    auto to_mbs = [mb](double s) { return mb / s; };
    auto s = ctx.measure_interleaved(
        {{.name = n + " zmq loop", .unit = "MB/s", .better = sb::higher, .setup = loop_setup, .run = loop_run,
          .to_metric = to_mbs, .check = [&] { return err_loop; }, .note = "one thread: recv, xor, send"},
         {.name = n + " sinew", .unit = "MB/s", .better = sb::higher, .setup = sinew_setup, .run = sinew_run,
          .to_metric = to_mbs, .check = [&] { return err_sinew; },
          .note = "zmq_source(pull) -> map(xor) -> zmq_sink(push), " + std::to_string(threads) + " workers"}});
    if (s[0]->stats.n == 0 || s[1]->stats.n == 0) continue;
    std::vector<double> r;
    sb::append_round_ratios(s[0]->seconds, s[1]->seconds, r);  // loop time / sinew time = sinew MB/s / loop MB/s
    ctx.ratio("endpoints_zmq_" + n, sb::summarize(r).median, 1.0, sb::higher,
              "Sinew MB/s / hand-written zmq loop MB/s, paired rounds (" + std::to_string(c.n) + " messages of " +
                  std::to_string(c.bytes) + " bytes; records/s scale alike)");
  }
}

const sb::registrar reg("endpoints",
                        "messages through ZeroMQ PULL -> xor -> PUSH: Sinew's zmq source -> map -> sink vs a "
                        "hand-written recv/xor/send loop; MB/s at 100 B and 64 KiB",
                        run);

}  // namespace
#endif
