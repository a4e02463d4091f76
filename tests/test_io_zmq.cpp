// ZeroMQ sources and sinks (io/zmq.hpp) against real libzmq peers on
// loopback: byte-exact round trips, topics, multipart, malformed messages,
// idle timeouts, stop and cancel, and the graph-file fields.
#include <catch2/catch.hpp>

#include "test_io_common.hpp"
#include "test_records_common.hpp"

#ifdef SINEW_HAVE_ZMQ
#include <sinew/io/zmq.hpp>

#include <zmq.hpp>

#include "../nodes/io/message_source.hpp"
#include "../nodes/io/zmq/zmq_spares.hpp"

#include <cstring>
#include <mutex>

using namespace sinew;
using namespace sinew_io_test;

namespace {

// Record k of byte_layout(): 16 bytes, a u32 then three f32.
std::string record_bytes(std::uint32_t k) {
  std::string r(16, '\0');
  const float v[3] = {float(k), float(k) * 0.5f, -float(k)};
  std::memcpy(&r[0], &k, 4);
  std::memcpy(&r[4], v, 12);
  return r;
}
io::record_layout byte_layout() { return io::record_layout::of<std::uint8_t>(shape::d1(16)); }
// A u32 and an f32 per record: two buffers, 8 bytes.
io::record_layout rec_layout() { return io::record_layout::of<std::uint32_t, float>(shape::d1(1)); }

io::zmq_source_options pull_bound(io::message_format f) {
  io::zmq_source_options o;
  o.endpoint = "tcp://127.0.0.1:*";
  o.bind = true;
  o.format = std::move(f);
  o.bound = std::make_shared<std::string>();
  return o;
}

io::zmq_sink_options push_bound() {
  io::zmq_sink_options o;
  o.endpoint = "tcp://127.0.0.1:*";
  o.bind = true;
  o.bound = std::make_shared<std::string>();
  return o;
}

// A PUSH peer feeding a source at `in` and a PULL peer draining a sink at `out`.
struct peers {
  zmq::context_t ctx;
  zmq::socket_t push{ctx, zmq::socket_type::push}, pull{ctx, zmq::socket_type::pull};
  peers(const std::string& in, const std::string& out) {
    push.connect(in);
    pull.connect(out);
    pull.set(zmq::sockopt::rcvtimeo, 20000);
  }
};

}  // namespace

TEST_CASE("io ZeroMQ PUSH to a PULL source to a PUSH sink to PULL round trips records byte-exact", "[io][zmq][tsan]") {
  const std::size_t n = GENERATE(1, 5000);
  auto in = pull_bound(io::message_format::binary(byte_layout()));
  in.count = n;
  auto out = push_bound();
  graph g(farm(map<keep<std::uint8_t>>(), 2, farm_order::unordered));
  auto src = io::zmq_source(in);
  auto snk = io::zmq_sink(out);
  peers p(*in.bound, *out.bound);
  zmq::socket_t &push = p.push, &pull = p.pull;
  auto f = g.run(src, snk);
  std::thread producer([&] {
    for (std::uint32_t k = 0; k < n; ++k) {
      const std::string r = record_bytes(k);
      push.send(zmq::buffer(r), zmq::send_flags::none);
    }
  });
  std::size_t ok = 0;
  for (std::uint32_t k = 0; k < n; ++k) {
    zmq::message_t m;
    if (!pull.recv(m)) break;
    ok += m.to_string() == record_bytes(k);
  }
  producer.join();
  f.get();
  CHECK(ok == n);
  CHECK(f.stats().records_in == n);
  CHECK(f.stats().records_out == n);
  CHECK(f.stats().sources[0].report == std::to_string(n) + " messages");
}

// Adds 1 to every byte, in place.
struct add_one {
  void operator()(std::uint8_t& c) const { c = std::uint8_t(c + 1); }
};

TEST_CASE("io large ZeroMQ records travel without copies: a unit each with the message's memory, sent from it", "[io][zmq][tsan]") {
  const bool multipart = GENERATE(false, true);
  const std::size_t n = 40, half = 12000;  // two buffers of 12000 bytes: 24000-byte records
  auto in = pull_bound(io::message_format::binary(
      io::record_layout::of<std::uint8_t, std::uint8_t>(shape::d1(half)), multipart));
  in.count = n;
  auto out = push_bound();
  out.multipart = multipart;
  graph g(farm(map<add_one>(), 2, farm_order::ordered));
  auto src = io::zmq_source(in);
  auto snk = io::zmq_sink(out);
  peers p(*in.bound, *out.bound);
  zmq::socket_t &push = p.push, &pull = p.pull;
  auto record = [&](std::size_t k) {
    std::string r(2 * half, '\0');
    for (std::size_t i = 0; i < r.size(); ++i) r[i] = char((k * 7 + i * 13) & 0xff);
    return r;
  };
  auto f = g.run(src, snk);
  std::thread producer([&] {
    for (std::size_t k = 0; k < n; ++k) {
      const std::string r = record(k);
      if (multipart) {
        push.send(zmq::buffer(r.data(), half), zmq::send_flags::sndmore);
        push.send(zmq::buffer(r.data() + half, half), zmq::send_flags::none);
      } else {
        push.send(zmq::buffer(r), zmq::send_flags::none);
      }
    }
  });
  std::size_t ok = 0;
  for (std::size_t k = 0; k < n; ++k) {
    std::string got;
    zmq::message_t m;
    do {
      if (!pull.recv(m)) break;
      got += m.to_string();
    } while (m.more());
    std::string want = record(k);
    for (std::size_t i = 0; i < half; ++i) want[i] = char(std::uint8_t(want[i]) + 1);  // the leaf's buffer, 0
    ok += got == want;
  }
  producer.join();
  f.get();
  CHECK(ok == n);
  CHECK(f.stats().units_in == n);  // one record a unit, though batching would pack ten
  CHECK(f.stats().records_out == n);
}

TEST_CASE("io the pool of received ZeroMQ messages gives back the oldest batch first and keeps within its bounds", "[io][zmq]") {
  using io::detail::zmq_spares;
  zmq_spares pool;
  std::vector<zmq::message_t> out;
  pool.take(out);
  CHECK(out.empty());
  std::vector<zmq::message_t> a, b;
  for (int i = 0; i < 3; ++i) a.emplace_back(std::string(100, char('a' + i)));
  b.emplace_back(std::string(60, 'x'));
  pool.give(a);
  pool.give(b);
  CHECK(a.empty());
  CHECK(b.empty());
  // Past either bound a batch is closed, not kept.
  std::vector<zmq::message_t> many(zmq_spares::max_messages);
  pool.give(many);
  CHECK(many.empty());
  std::vector<zmq::message_t> heavy;
  heavy.emplace_back(zmq_spares::max_bytes);
  pool.give(heavy);
  CHECK(heavy.empty());
  pool.take(out);
  REQUIRE(out.size() == 3);
  CHECK(out[2].to_string() == std::string(100, 'c'));
  out.clear();
  pool.take(out);
  REQUIRE(out.size() == 1);
  CHECK(out[0].size() == 60);
  out.clear();
  pool.take(out);
  CHECK(out.empty());
  // Taken batches make room again.
  std::vector<zmq::message_t> fits;
  fits.emplace_back(zmq_spares::max_bytes - 1000);
  pool.give(fits);
  pool.take(out);
  CHECK(out.size() == 1);
}

// Records of 100 bytes, then of 60: the sink sends the first in the
// messages the source received (a spare of the frame's size), and the
// second, whose spares are 100 bytes long, as before; every message carries
// what the leaf wrote.
TEST_CASE("io ZeroMQ frames sent in received messages carry the unit's bytes whatever their sizes", "[io][zmq][tsan]") {
  const std::size_t n = 3000;
  const std::size_t size[2] = {100, 60};
  for (int part = 0; part < 2; ++part) {
    auto in = pull_bound(io::message_format::binary(io::record_layout::of<std::uint8_t>(shape::d1(size[part]))));
    in.count = n;
    auto out = push_bound();
    graph g(map<add_one>());
    auto src = io::zmq_source(in);
    auto snk = io::zmq_sink(out);
    peers p(*in.bound, *out.bound);
    auto record = [&](std::size_t k) {
      std::string r(size[part], '\0');
      for (std::size_t i = 0; i < r.size(); ++i) r[i] = char((k * 7 + i * 13 + part) & 0xff);
      return r;
    };
    auto f = g.run(src, snk);
    std::thread producer([&] {
      for (std::size_t k = 0; k < n; ++k) p.push.send(zmq::buffer(record(k)), zmq::send_flags::none);
    });
    std::size_t ok = 0;
    for (std::size_t k = 0; k < n; ++k) {
      zmq::message_t m;
      if (!p.pull.recv(m)) break;
      std::string want = record(k);
      for (char& c : want) c = char(std::uint8_t(c) + 1);
      ok += m.to_string() == want;
    }
    producer.join();
    f.get();
    CHECK(ok == n);
    CHECK(f.stats().records_out == n);
  }
}

// Messages already waiting when the run starts: a source that reads them
// more slowly than they came would otherwise fill units up to the batch's
// limits while the first record waits. With a latency of 0 each unit closes
// at the first check of its bound.
TEST_CASE("io a ZeroMQ source closes a unit at its latency bound while messages keep coming", "[io][zmq]") {
  const std::size_t n = 2000;
  auto in = pull_bound(io::message_format::binary(byte_layout()));
  in.count = n;
  in.batch.latency = std::chrono::microseconds(0);
  auto out = push_bound();
  auto src = io::zmq_source(in);
  auto snk = io::zmq_sink(out);
  peers p(*in.bound, *out.bound);
  for (std::uint32_t k = 0; k < n; ++k) p.push.send(zmq::buffer(record_bytes(k)), zmq::send_flags::none);
  std::this_thread::sleep_for(std::chrono::milliseconds(100));  // most of them reach the source's queue
  sinew_records_test::record_log log;
  graph g(map<sinew_records_test::record_log>(log));
  auto f = g.run(src, snk);
  std::size_t ok = 0;
  for (std::uint32_t k = 0; k < n; ++k) {
    zmq::message_t m;
    if (!p.pull.recv(m)) break;
    ok += m.to_string() == record_bytes(k);
  }
  f.get();
  CHECK(ok == n);
  CHECK(f.stats().records_out == n);
  CHECK(log.seen->v.size() == n);
  CHECK(log.most_records_a_unit() <= io::detail::message_source::deadline_stride);
}

TEST_CASE("io ZeroMQ multipart messages carry a buffer a frame, and a SUB source keeps its topics", "[io][zmq]") {
  io::zmq_source_options in;
  in.socket = io::zmq_socket::sub;
  in.endpoint = "tcp://127.0.0.1:*";
  in.bind = true;
  in.topics = {"sensor/a"};
  in.format = io::message_format::binary(rec_layout(), true);
  in.count = 20;
  in.bound = std::make_shared<std::string>();
  std::mutex m;
  std::vector<std::pair<std::uint32_t, float>> got;
  graph g(map<keep<std::uint32_t>>());
  auto f = g.run(io::zmq_source(in), for_each([&](const work_unit& u) {
                   std::lock_guard<std::mutex> lk(m);
                   got.emplace_back(u.input<std::uint32_t>(0)[0], u.input<float>(1)[0]);
                 }));
  zmq::context_t ctx;
  zmq::socket_t pub(ctx, zmq::socket_type::pub);
  pub.connect(*in.bound);
  // PUB drops what is sent before the subscription arrives: publish until the source has its 20.
  for (std::uint32_t k = 0; !f.wait_for(std::chrono::milliseconds(0)); ++k) {
    const float v = float(k) + 0.25f;
    for (const char* topic : {"sensor/a1", "sensor/b"}) {
      pub.send(zmq::buffer(std::string(topic)), zmq::send_flags::sndmore);
      pub.send(zmq::buffer(&k, 4), zmq::send_flags::sndmore);
      pub.send(zmq::buffer(&v, 4), zmq::send_flags::none);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  f.get();
  REQUIRE(got.size() == 20);
  for (std::size_t i = 0; i < got.size(); ++i) {
    CHECK(got[i].second == float(got[i].first) + 0.25f);
    if (i) CHECK(got[i].first == got[i - 1].first + 1);  // in order, no "sensor/b" between
  }
}

TEST_CASE("io a ZeroMQ PUB sink sends the topic frame then the record", "[io][zmq]") {
  io::zmq_sink_options out;
  out.socket = io::zmq_socket::pub;
  out.endpoint = "tcp://127.0.0.1:*";
  out.bind = true;
  out.topic = "t/1";
  out.multipart = true;
  out.bound = std::make_shared<std::string>();
  auto snk = io::zmq_sink(out);
  zmq::context_t ctx;
  zmq::socket_t sub(ctx, zmq::socket_type::sub);
  sub.set(zmq::sockopt::subscribe, "t/");
  sub.set(zmq::sockopt::rcvtimeo, 20000);
  sub.connect(*out.bound);
  const std::vector<std::uint32_t> a{1, 2, 3};
  const std::vector<float> b{1.5f, 2.5f, 3.5f};
  std::atomic<bool> arrived{false};
  // The subscription travels to the publisher asynchronously: send until one arrives.
  auto src = generate(
      [&](unit_builder& u) {
        if (arrived.load() || u.stop_requested()) return false;
        std::this_thread::sleep_for(std::chrono::milliseconds(2));
        u.set_shape(shape::d1(3));
        std::copy(a.begin(), a.end(), u.add<std::uint32_t>().data());
        std::copy(b.begin(), b.end(), u.add<float>().data());
        return true;
      },
      source_mode::thread);
  graph g(map<keep<std::uint32_t>>());
  auto f = g.run(src, snk);
  zmq::message_t topic, p0, p1;
  REQUIRE(sub.recv(topic));
  arrived = true;
  f.get();
  REQUIRE(topic.to_string() == "t/1");
  REQUIRE(sub.get(zmq::sockopt::rcvmore));
  REQUIRE(sub.recv(p0));
  REQUIRE(sub.recv(p1));
  CHECK_FALSE(sub.get(zmq::sockopt::rcvmore));
  REQUIRE(p0.size() == 12);
  REQUIRE(p1.size() == 12);
  CHECK(std::memcmp(p0.data(), a.data(), 12) == 0);
  CHECK(std::memcmp(p1.data(), b.data(), 12) == 0);
}

TEST_CASE("io a malformed ZeroMQ message fails the run after the records before it, or is skipped and counted", "[io][zmq]") {
  const bool skip = GENERATE(false, true);
  auto in = pull_bound(io::message_format::binary(byte_layout()));
  in.format.malformed = skip ? io::on_malformed::skip : io::on_malformed::fail;
  in.idle_timeout = std::chrono::milliseconds(300);
  in.batch = io::batching::off();
  std::atomic<int> seen{0};
  graph g(map<keep<std::uint8_t>>());
  auto f = g.run(io::zmq_source(in), for_each([&](const work_unit&) { seen++; }));
  zmq::context_t ctx;
  zmq::socket_t push(ctx, zmq::socket_type::push);
  push.connect(*in.bound);
  push.send(zmq::buffer(record_bytes(0)), zmq::send_flags::none);
  push.send(zmq::buffer(std::string("short")), zmq::send_flags::none);
  push.send(zmq::buffer(record_bytes(2)), zmq::send_flags::none);
  if (skip) {
    f.get();
    CHECK(seen == 2);
    CHECK(f.stats().sources[0].report == "3 messages, 1 malformed skipped");
  } else {
    CHECK_THROWS_WITH(f.get(), Catch::Contains("zmq pull tcp://127.0.0.1:") && Catch::Contains("message 1 is not a record") &&
                                   Catch::Contains("5 bytes where a record of the layout u8 [16] has 16"));
    CHECK(seen == 1);
  }
}

TEST_CASE("io a ZeroMQ source with no peer ends at its idle timeout with an error, and stop drains a waiting one", "[io][zmq][tsan]") {
  auto in = pull_bound(io::message_format::text());
  in.idle_timeout = std::chrono::milliseconds(200);
  graph g(map<keep<std::uint8_t>>());
  auto f = g.run(io::zmq_source(in), discard());
  CHECK_THROWS_WITH(f.get(), Catch::Contains("no message within the idle timeout of 200 ms"));

  auto in2 = pull_bound(io::message_format::text());
  std::atomic<int> seen{0};
  auto f2 = g.run(io::zmq_source(in2), for_each([&](const work_unit&) { seen++; }));
  zmq::context_t ctx;
  zmq::socket_t push(ctx, zmq::socket_type::push);
  push.connect(*in2.bound);
  push.send(zmq::buffer(std::string("hello")), zmq::send_flags::none);
  REQUIRE(eventually([&] { return seen.load() == 1; }));
  CHECK_FALSE(f2.wait_for(std::chrono::milliseconds(20)));
  f2.stop();
  f2.get();
  CHECK(f2.stats().units_in == 1);
  CHECK(f2.stats().units_out == 1);
}

TEST_CASE("io a ZeroMQ PUSH sink that no peer drains does not hold up cancel", "[io][zmq][tsan]") {
  io::zmq_sink_options out;
  out.endpoint = "tcp://127.0.0.1:*";
  out.bind = true;
  out.hwm = 4;
  graph g(map<keep<std::uint8_t>>());
  io::generator_options gen;
  gen.layout = io::record_layout::of<std::uint8_t>(shape::d1(64));
  auto f = g.run(io::generator(gen), io::zmq_sink(out));  // unbounded; no peer ever connects
  CHECK_FALSE(f.wait_for(std::chrono::milliseconds(100)));
  f.cancel();
  CHECK_THROWS_AS(f.get(), sinew::cancelled);
}

TEST_CASE("io ZeroMQ endpoints that cannot be used are errors naming them", "[io][zmq]") {
  io::zmq_source_options in;
  in.endpoint = "tcp://127.0.0.1:notaport";
  in.bind = true;
  CHECK_THROWS_WITH(io::zmq_source(in), Catch::Contains("zmq pull tcp://127.0.0.1:notaport: cannot bind"));
  in.socket = io::zmq_socket::push;
  CHECK_THROWS_WITH(io::zmq_source(in), Catch::Contains("a source reads from a pull or sub socket"));
  auto a = pull_bound(io::message_format::text());
  auto s = io::zmq_source(a);
  io::zmq_sink_options out;
  out.endpoint = *a.bound;  // in use
  out.bind = true;
  CHECK_THROWS_WITH(io::zmq_sink(out), Catch::Contains("zmq push " + *a.bound + ": cannot bind"));
}

TEST_CASE("graph files: zmq sources and sinks, and their fields checked at their pointers", "[json][zmq]") {
  auto doc = [](const std::string& src, const std::string& snk) {
    return R"({"sinew": 1, "name": "t", "source": {"type": "zmq")" + src +
           R"(}, "graph": {"map": "xor", "args": {"key": 32}}, "sink": {"type": "zmq")" + snk + "}}";
  };
  auto f = sinew::graph_file::parse(
      doc(R"(, "socket": "pull", "endpoint": "inproc://in", "bind": true, "format": "lines", "count": 3)",
          R"(, "socket": "push", "endpoint": "inproc://out", "bind": true)"),
      "inline.json");
  CHECK_FALSE(f.replayable());
  CHECK(*f.unit_count() == 3);
  auto bad = [&](const std::string& src, const std::string& snk) { return load_error_text(doc(src, snk)); };
  const std::string ok_src = R"(, "socket": "pull", "endpoint": "tcp://*:5555", "format": "lines")";
  const std::string ok_snk = R"(, "socket": "push", "endpoint": "tcp://localhost:5556")";
  CHECK(bad(ok_src, ok_snk) == "accepted");
  CHECK_THAT(bad(R"(, "socket": "router", "endpoint": "tcp://*:1")", ok_snk), Catch::StartsWith("/source/socket"));
  CHECK_THAT(bad(R"(, "socket": "pull", "endpoint": "tcp://host", "format": "lines")", ok_snk),
             Catch::StartsWith("/source/endpoint") && Catch::Contains("not a ZeroMQ endpoint"));
  CHECK_THAT(bad(R"(, "socket": "pull", "endpoint": "http://x:1", "format": "lines")", ok_snk), Catch::StartsWith("/source/endpoint"));
  CHECK_THAT(bad(ok_src + R"(, "topics": ["a"])", ok_snk), Catch::StartsWith("/source/topics"));
  CHECK_THAT(bad(ok_src + R"(, "multipart": true)", ok_snk), Catch::StartsWith("/source/multipart"));
  CHECK_THAT(bad(ok_src + R"(, "malformed": "ignore")", ok_snk), Catch::StartsWith("/source/malformed"));
  CHECK_THAT(bad(ok_src + R"(, "hwm": -1)", ok_snk), Catch::StartsWith("/source/hwm"));
  CHECK_THAT(bad(R"(, "socket": "pull", "endpoint": "tcp://*:1")", ok_snk), Catch::StartsWith("/source") && Catch::Contains("buffers"));
  CHECK_THAT(bad(ok_src, R"(, "socket": "pull", "endpoint": "tcp://*:1")"), Catch::StartsWith("/sink/socket"));
  CHECK_THAT(bad(ok_src, ok_snk + R"(, "topic": "x")"), Catch::StartsWith("/sink/topic"));
  CHECK_THAT(bad(ok_src, ok_snk + R"(, "linger": -2)"), Catch::StartsWith("/sink/linger"));
}

#else

TEST_CASE("io ZeroMQ endpoints", "[io][zmq]") {
  WARN("SINEW-SKIP: built without ZeroMQ (libzmq3-dev, cppzmq-dev)");  // ctest reports the case skipped
}

#endif
