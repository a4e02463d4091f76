// endpoints: messages through a message system and back, Sinew's ZeroMQ
// source -> map -> sink against a hand-written loop on the same library
// (a PULL recv / work / PUSH send loop on one thread), in the same run. Two
// producer threads PUSH N messages of 100 bytes or 64 KiB; the system under
// test XORs every byte with a key and PUSHes each message on; two consumer
// threads PULL them all and check the last one. Every socket of this side
// has an I/O thread of its own: with one for all, that thread bounded both
// systems alike. Time: first send to last receive. Sinew runs map(xor) on
// every core and batches records (docs/io.md, "Record batches").
#include "endpoints.hpp"

#ifdef SINEW_HAVE_ZMQ
#include <sinew/io/zmq.hpp>
#include <sinew/sinew.hpp>

#include <zmq.hpp>

#include <atomic>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

namespace {

namespace sb = sinew_bench;

using namespace sinew_bench::endpoints;

// One run's producers and consumers around a system under test that PULLs
// at `in` and PUSHes to `out` (both bound by it). Two of each, every socket
// on a context (and I/O thread) of its own, so that the system under test,
// not this side, bounds the rate.
struct harness {
  static constexpr int peers = 2;
  struct end {
    zmq::context_t ctx{1};
    zmq::socket_t sock;
    explicit end(zmq::socket_type t) : sock(ctx, t) {}
  };
  std::vector<std::unique_ptr<end>> pushes, pulls;
  harness() {
    for (int i = 0; i < peers; ++i) {
      pushes.push_back(std::make_unique<end>(zmq::socket_type::push));
      pulls.push_back(std::make_unique<end>(zmq::socket_type::pull));
      pulls.back()->sock.set(zmq::sockopt::rcvtimeo, 5);
    }
  }
  // Sends `n` copies of `payload` to `in` and receives `n` messages from
  // `out`; "" when the last one is the payload XORed with the key.
  std::string exchange(const std::string& in, const std::string& out, const std::vector<std::uint8_t>& payload,
                       std::size_t n) {
    std::atomic<std::size_t> received{0};
    std::vector<std::string> errs(peers);
    std::vector<std::thread> threads;
    for (int i = 0; i < peers; ++i) {
      pushes[i]->sock.connect(in);
      pulls[i]->sock.connect(out);
      threads.emplace_back([&, i] {
        const std::size_t mine = n / peers + (std::size_t(i) < n % peers ? 1 : 0);
        for (std::size_t k = 0; k < mine; ++k) pushes[i]->sock.send(zmq::buffer(payload), zmq::send_flags::none);
      });
      // The system under test's PUSH deals its messages over both
      // consumers: each receives until all `n` have come.
      threads.emplace_back([&, i] {
        zmq::message_t m;
        while (received.load(std::memory_order_relaxed) < n) {
          if (!pulls[i]->sock.recv(m)) continue;  // the 5 ms receive timeout: look at the count again
          if (received.fetch_add(1, std::memory_order_relaxed) + 1 == n) errs[i] = check_xored(m.data(), m.size(), payload);  // the last
        }
      });
    }
    for (auto& t : threads) t.join();
    for (const std::string& e : errs)
      if (!e.empty()) return e;
    return "";
  }
};

// The hand-written loop: one thread, recv / xor / send, each socket on a
// context of its own (as Sinew's source and sink).
struct hand_loop {
  zmq::context_t ctx_in{1}, ctx_out{1};
  zmq::socket_t in{ctx_in, zmq::socket_type::pull}, out{ctx_out, zmq::socket_type::push};
  std::string in_at, out_at;
  hand_loop() {
    in.bind("tcp://127.0.0.1:*");
    out.bind("tcp://127.0.0.1:*");
    in_at = in.get(zmq::sockopt::last_endpoint);
    out_at = out.get(zmq::sockopt::last_endpoint);
  }
  void run(std::size_t n) {
    zmq::message_t m;
    for (std::size_t i = 0; i < n; ++i) {
      if (!in.recv(m)) return;
      auto* p = static_cast<std::uint8_t*>(m.data());
      const std::size_t bytes = m.size();  // one call, not one per byte
      for (std::size_t k = 0; k < bytes; ++k) p[k] = std::uint8_t(p[k] ^ key);
      out.send(m, zmq::send_flags::none);
    }
  }
};

void run_zmq(sb::context& ctx) {
  const unsigned threads = sb::thread_count();
  const size_case cases[] = {
      {"100B", 100, ctx.smoke() ? 2000u : ctx.quick() ? 200000u : 1000000u},
      {"64KiB", 65536, ctx.smoke() ? 50u : ctx.quick() ? 4000u : 20000u},
  };
  for (const size_case& c : cases) {
    ctx.param(std::string("messages_") + c.name, c.n);
    const std::vector<std::uint8_t> msg = payload(c.bytes);
    std::string err_loop, err_sinew;

    std::unique_ptr<harness> h;
    std::unique_ptr<hand_loop> loop;
    auto loop_setup = [&] {
      h = std::make_unique<harness>();
      loop = std::make_unique<hand_loop>();
    };
    auto loop_run = [&] {
      std::thread t([&] { loop->run(c.n); });
      err_loop = h->exchange(loop->in_at, loop->out_at, msg, c.n);
      t.join();
      loop.reset();  // its contexts wait for the queued messages to leave (none are left)
      h.reset();
    };

    std::unique_ptr<sinew::graph> g;
    std::optional<sinew::source> src;
    std::optional<sinew::sink> snk;
    std::string src_at, snk_at;
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
      out.endpoint = "tcp://127.0.0.1:*";
      out.bind = true;
      out.bound = std::make_shared<std::string>();
      snk = sinew::io::zmq_sink(out);
      snk_at = *out.bound;
      g = std::make_unique<sinew::graph>(sinew::map<xor_key>(), sinew::graph_options{.scheduler = &sinew::default_scheduler()});
    };
    auto sinew_run = [&] {
      auto f = g->run(*src, *snk);
      err_sinew = h->exchange(src_at, snk_at, msg, c.n);
      f.get();
      src.reset();
      snk.reset();
      h.reset();
    };
    compare(ctx, std::string("zmq ") + c.name, c,
            {loop_setup, loop_run, "one thread: recv, xor, send", &err_loop},
            {sinew_setup, sinew_run,
             "zmq_source(pull) -> map(xor) -> zmq_sink(push), " + std::to_string(threads) + " workers", &err_sinew},
            std::string("endpoints_zmq_") + c.name, "(" + std::to_string(c.n) + " messages of " + std::to_string(c.bytes) +
            " bytes; records/s scale alike)");
  }
}

}  // namespace
#endif

namespace sinew_bench::endpoints {

std::vector<std::uint8_t> payload(std::size_t bytes) {
  std::vector<std::uint8_t> p(bytes);
  for (std::size_t i = 0; i < p.size(); ++i) p[i] = std::uint8_t(i * 131 + 7);
  return p;
}

std::string check_xored(const void* got, std::size_t size, const std::vector<std::uint8_t>& sent) {
  if (size != sent.size()) return "a message holds " + std::to_string(size) + " bytes";
  const auto* p = static_cast<const std::uint8_t*>(got);
  for (std::size_t i = 0; i < size; ++i)
    if (p[i] != (sent[i] ^ key)) return "byte " + std::to_string(i) + " of a message is wrong";
  return "";
}

void compare(context& ctx, const std::string& label, const size_case& c, side loop, side sinew,
             const std::string& ratio, const std::string& what) {
  const double mb = double(c.bytes) * double(c.n) / 1e6;
  auto to_mbs = [mb](double s) { return mb / s; };
  auto s = ctx.measure_interleaved(
      {{.name = label + " loop", .unit = "MB/s", .better = higher, .setup = loop.setup, .run = loop.run,
        .to_metric = to_mbs, .check = [e = loop.error] { return *e; }, .note = loop.note},
       {.name = label + " sinew", .unit = "MB/s", .better = higher, .setup = sinew.setup, .run = sinew.run,
        .to_metric = to_mbs, .check = [e = sinew.error] { return *e; }, .note = sinew.note}});
  if (s[0]->stats.n == 0 || s[1]->stats.n == 0) return;
  ctx.ratio(ratio, paired_ratio(*s[1], *s[0]), 1.0, higher, "Sinew MB/s / hand-written loop MB/s, paired rounds " + what);
}

}  // namespace sinew_bench::endpoints

namespace {

void run(sinew_bench::context& ctx) {
  ctx.param("threads", sinew_bench::thread_count());
#ifdef SINEW_HAVE_ZMQ
  run_zmq(ctx);
#else
  ctx.note("ZeroMQ cases skipped: built without ZeroMQ (libzmq3-dev, cppzmq-dev)");
#endif
  sinew_bench::endpoints::run_mqtt(ctx);
}

const sinew_bench::registrar reg("endpoints",
                                 "messages through ZeroMQ PULL -> xor -> PUSH and MQTT brokers: Sinew's source -> map "
                                 "-> sink vs a hand-written loop on the same library; MB/s at 100 B and 64 KiB",
                                 run);

}  // namespace
