// sinew::io over pipes and sockets: read_fd/write_fd, lines, TCP (docs/io.md).
#include <catch2/catch.hpp>

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <memory>

#include "test_io_common.hpp"

using namespace sinew;
using namespace sinew_io_test;

namespace {

struct pipe_pair {
  int r = -1, w = -1;
  pipe_pair() {
    int p[2];
    REQUIRE(::pipe2(p, O_CLOEXEC) == 0);
    r = p[0], w = p[1];
  }
  void close_r() {
    if (r >= 0) ::close(r), r = -1;
  }
  void close_w() {
    if (w >= 0) ::close(w), w = -1;
  }
  ~pipe_pair() {
    close_r();
    close_w();
  }
};

struct upper {
  void operator()(std::uint8_t& c) const {
    if (c >= 'a' && c <= 'z') c = std::uint8_t(c - 'a' + 'A');
  }
};

// A plain client socket connected to 127.0.0.1:port.
int connect_loopback(int port) {
  int s = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(std::uint16_t(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(s, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
    ::close(s);
    return -1;
  }
  return s;
}

}  // namespace

TEST_CASE("io read_fd and write_fd carry records through pipes", "[io][tsan]") {
  // Small records (served from the reader's buffer) and records larger than
  // it and than the pipe (read straight into the unit's buffer, written with
  // writev), through an unordered farm: the sink restores the order.
  auto [n, len] = GENERATE(table<std::size_t, std::size_t>({{200, 100}, {6, 300000}}));
  INFO(n << " records of " << len << " i32");
  pipe_pair in, out;
  std::vector<std::int32_t> data(n * len);
  for (std::size_t i = 0; i < data.size(); ++i) data[i] = std::int32_t(i * 7);
  std::thread producer([&] {
    write_all(in.w, data.data(), data.size() * 4);
    in.close_w();
  });
  std::vector<unsigned char> got;
  std::thread consumer([&] { got = read_all(out.r); });
  graph g(farm(map<bump<std::int32_t>>(), 2, farm_order::unordered));
  auto f = g.run(io::read_fd(in.r, io::record_layout::of<std::int32_t>(shape::d1(len))), io::write_fd(out.w));
  f.get();
  out.close_w();
  producer.join();
  consumer.join();
  REQUIRE(got.size() == data.size() * 4);
  std::vector<std::int32_t> back(data.size());
  std::memcpy(back.data(), got.data(), got.size());
  bool ok = true;
  for (std::size_t i = 0; i < data.size(); ++i) ok &= back[i] == data[i] + 1;
  CHECK(ok);
  CHECK(f.stats().records_out == n);
  CHECK(f.stats().records_in == n);
  CHECK(f.stats().units_out <= n);
}

TEST_CASE("io a blocked read_fd is interrupted by stop and drains what it accepted", "[io][tsan]") {
  pipe_pair in;
  std::vector<float> rec(5 * 32, 1.0f);
  REQUIRE(write_all(in.w, rec.data(), rec.size() * 4));  // 5 records; the pipe stays open
  std::atomic<std::uint64_t> seen{0};
  graph g(pipeline(map<bump<float>>(), farm(map<bump<float>>(), 2)));
  auto f = g.run(io::read_fd(in.r, io::record_layout::of<float>(shape::d1(32))),
                 for_each([&](const work_unit& u) {
                   if (u.input<float>(0)[0] == 3.0f) seen++;
                 }));
  REQUIRE(eventually([&] { return seen.load() == 5; }));
  CHECK_FALSE(f.wait_for(std::chrono::milliseconds(20)));  // waiting in read
  f.stop();
  f.get();
  CHECK(f.stats().units_in == 5);
  CHECK(f.stats().units_out == 5);
}

TEST_CASE("io cancel wakes a blocked read_fd", "[io][tsan]") {
  pipe_pair in;
  float rec[8] = {};
  REQUIRE(write_all(in.w, rec, sizeof rec));  // one record; the pipe stays open
  std::atomic<int> seen{0};
  graph g(map<bump<float>>());
  auto f = g.run(io::read_fd(in.r, io::record_layout::of<float>(shape::d1(8))),
                 for_each([&](const work_unit&) { seen++; }));
  REQUIRE(eventually([&] { return seen.load() == 1; }));
  f.cancel();
  CHECK_THROWS_AS(f.get(), sinew::cancelled);
}

TEST_CASE("io a partial record on a pipe is an error after the whole ones", "[io]") {
  pipe_pair in;
  std::vector<std::uint8_t> bytes(3 * 10 + 4, 9);
  write_all(in.w, bytes.data(), bytes.size());
  in.close_w();
  std::uint64_t units = 0;
  graph g(map<keep<std::uint8_t>>());
  auto f = g.run(io::read_fd(in.r, io::record_layout::of<std::uint8_t>(shape::d1(10))),
                 for_each([&](const work_unit&) { units++; }));
  CHECK_THROWS_WITH(f.get(), Catch::Contains("descriptor " + std::to_string(in.r)) &&
                                 Catch::Contains("byte offset 30") && Catch::Contains("4 of 10 bytes"));
  CHECK(units == 3);
}

TEST_CASE("io write_fd to a closed pipe reports the error instead of dying of SIGPIPE", "[io]") {
  pipe_pair p;
  p.close_r();
  io::generator_options o = gen(io::record_layout::of<float>(shape::d1(1 << 16)), 4);
  graph g(map<keep<float>>());
  CHECK_THROWS_WITH(g.run(io::generator(o), io::write_fd(p.w)).get(),
                    Catch::Contains("descriptor " + std::to_string(p.w)) && Catch::Contains("Broken pipe"));
}

TEST_CASE("io lines through a graph, empty lines included", "[io][tsan]") {
  pipe_pair in, out;
  const std::string longest(1500000, 'x');  // longer than the reader's buffer and the (enlarged) pipe
  const std::string text = "alpha\n\nbeta gamma\n" + longest + "\n\n\ndelta";  // no newline at the end
  std::thread producer([&] {
    write_all(in.w, text.data(), text.size());
    in.close_w();
  });
  std::vector<unsigned char> got;
  std::thread consumer([&] { got = read_all(out.r); });
  graph g(farm(map<upper>(), 2));
  auto f = g.run(io::read_lines(in.r), io::write_lines(out.w));
  f.get();
  out.close_w();
  producer.join();
  consumer.join();
  CHECK(std::string(got.begin(), got.end()) == "ALPHA\n\nBETA GAMMA\n" + std::string(1500000, 'X') + "\n\n\nDELTA\n");
  CHECK(f.stats().records_out == 7);
}

TEST_CASE("io write_lines refuses graphs that do not produce bytes", "[io]") {
  graph g(map<keep<float>>());
  io::generator_options o = gen(io::record_layout::of<float>(shape::d1(4)), 1);
  CHECK_THROWS_WITH(g.run(io::generator(o), io::write_lines(1)), Catch::Contains("1-byte"));
}

TEST_CASE("io TCP source and sink exchange a stream over loopback", "[io][tsan]") {
  io::generator_options o = gen(io::record_layout::of<float, std::uint16_t>(shape::d1(500)), 150);
  const auto ref = reference<float>(o);
  graph g(map<keep<float>>());

  SECTION("listening source, connecting sink") {
    auto port = std::make_shared<std::atomic<int>>(0);
    auto r = std::make_shared<io::checksum_result>();
    auto rx = g.run(io::tcp_listen("127.0.0.1", 0, o.layout, port), io::checksum(r));
    REQUIRE(port->load() > 0);
    auto tx = g.run(io::generator(o), io::tcp_connect_sink("127.0.0.1", std::uint16_t(port->load())));
    tx.get();
    rx.get();
    CHECK(r->value == ref.value);
    CHECK(r->units == 150);
  }
  SECTION("listening sink, connecting source") {
    auto port = std::make_shared<std::atomic<int>>(0);
    auto tx = g.run(io::generator(o), io::tcp_listen_sink("127.0.0.1", 0, port));
    REQUIRE(port->load() > 0);
    auto r = std::make_shared<io::checksum_result>();
    auto rx = g.run(io::tcp_connect("127.0.0.1", std::uint16_t(port->load()), o.layout), io::checksum(r));
    rx.get();
    tx.get();
    CHECK(r->value == ref.value);
    CHECK(r->bytes == ref.bytes);
  }
}

TEST_CASE("io a TCP peer that disconnects mid-record fails the run", "[io]") {
  auto l = io::record_layout::of<std::uint32_t>(shape::d1(8));  // 32-byte payloads
  auto port = std::make_shared<std::atomic<int>>(0);
  std::uint64_t units = 0;
  graph g(map<keep<std::uint32_t>>());
  auto f = g.run(io::tcp_listen("127.0.0.1", 0, l, port), for_each([&](const work_unit&) { units++; }));
  std::uint32_t payload[8] = {1, 2, 3, 4, 5, 6, 7, 8};
  std::uint64_t len = sizeof payload;

  SECTION("inside the payload") {
    int s = connect_loopback(port->load());
    REQUIRE(s >= 0);
    write_all(s, &len, 8);
    write_all(s, payload, sizeof payload);  // record 0 whole
    write_all(s, &len, 8);
    write_all(s, payload, 10);  // record 1 cut
    ::close(s);
    CHECK_THROWS_WITH(f.get(), Catch::Contains("127.0.0.1:" + std::to_string(port->load())) &&
                                   Catch::Contains("disconnected inside record 1") && Catch::Contains("10 of 32"));
    CHECK(units == 1);
  }
  SECTION("with a wrong length") {
    int s = connect_loopback(port->load());
    REQUIRE(s >= 0);
    std::uint64_t bad = 31;
    write_all(s, &bad, 8);
    write_all(s, payload, 31);
    ::close(s);
    CHECK_THROWS_WITH(f.get(), Catch::Contains("announces 31 bytes") && Catch::Contains("has 32"));
    CHECK(units == 0);
  }
}

TEST_CASE("io a TCP source waiting for a peer is interrupted by stop", "[io][tsan]") {
  auto port = std::make_shared<std::atomic<int>>(0);
  graph g(map<keep<float>>());
  auto f = g.run(io::tcp_listen("127.0.0.1", 0, io::record_layout::of<float>(shape::d1(4)), port));
  CHECK_FALSE(f.wait_for(std::chrono::milliseconds(20)));
  f.stop();
  f.get();
  CHECK(f.stats().units_out == 0);
}

// Throws inside unit 1 (units of 4 floats: calls 1-4 are unit 0).
struct throw_in_unit_1 {
  std::shared_ptr<std::atomic<int>> calls = std::make_shared<std::atomic<int>>(0);
  void operator()(float&) const {
    if (calls->fetch_add(1) == 4) throw std::runtime_error("leaf fault in unit 1");
  }
};

TEST_CASE("io a TCP listening sink that no peer reaches does not hold up cancel or a failure", "[io][tsan]") {
  auto l = io::record_layout::of<float>(shape::d1(4));
  auto port = std::make_shared<std::atomic<int>>(0);

  SECTION("cancel while the sink waits for a peer") {
    graph g(map<keep<float>>());
    auto f = g.run(io::generator(gen(l, std::nullopt)), io::tcp_listen_sink("127.0.0.1", 0, port));
    REQUIRE(eventually([&] { return f.stats().units_in > 0; }));  // unit 0 is on its way to the waiting sink
    f.cancel();
    REQUIRE(f.wait_for(std::chrono::seconds(60)));
    CHECK_THROWS_AS(f.get(), sinew::cancelled);
    CHECK(f.stats().units_alive == 0);
  }
  SECTION("a leaf that throws while the sink waits for a peer") {
    graph g(map<throw_in_unit_1>());
    auto f = g.run(io::generator(gen(l, 100)), io::tcp_listen_sink("127.0.0.1", 0, port));
    REQUIRE(f.wait_for(std::chrono::seconds(60)));
    CHECK_THROWS_WITH(f.get(), Catch::Contains("leaf fault in unit 1"));  // the leaf's error, not the sink's
    CHECK(f.stats().units_alive == 0);
  }
  SECTION("stop drains into the sink: a peer that connects later gets every accepted unit") {
    graph g(map<keep<float>>());
    auto f = g.run(io::generator(gen(l, std::nullopt)), io::tcp_listen_sink("127.0.0.1", 0, port));
    REQUIRE(eventually([&] { return f.stats().units_in > 0; }));
    f.stop();
    int s = connect_loopback(port->load());
    REQUIRE(s >= 0);
    std::vector<unsigned char> got = read_all(s);
    ::close(s);
    f.get();
    CHECK(f.stats().units_in == f.stats().units_out);
    CHECK(got.size() == f.stats().units_out * (8 + l.bytes()));  // u64 length + payload per unit
  }
}

TEST_CASE("io a TCP sink whose peer stops reading does not hold up cancel", "[io][tsan]") {
  auto l = io::record_layout::of<float>(shape::d1(1 << 16));  // 256 KiB units fill the socket buffers fast
  auto port = std::make_shared<std::atomic<int>>(0);
  graph g(map<keep<float>>());
  auto f = g.run(io::generator(gen(l, std::nullopt)), io::tcp_listen_sink("127.0.0.1", 0, port));
  int s = connect_loopback(port->load());  // connects, never reads
  REQUIRE(s >= 0);
  REQUIRE(eventually([&] { return f.stats().units_in > 8; }));  // more than the socket buffers hold
  f.cancel();
  REQUIRE(f.wait_for(std::chrono::seconds(60)));
  CHECK_THROWS_AS(f.get(), sinew::cancelled);
  CHECK(f.stats().units_alive == 0);
  ::close(s);
}

TEST_CASE("io a TCP peer that disconnects from a sink fails the run naming the endpoint", "[io]") {
  auto l = io::record_layout::of<float>(shape::d1(1024));
  auto port = std::make_shared<std::atomic<int>>(0);
  graph g(map<keep<float>>());
  auto f = g.run(io::generator(gen(l, std::nullopt)), io::tcp_listen_sink("127.0.0.1", 0, port));
  int s = connect_loopback(port->load());
  REQUIRE(s >= 0);
  ::close(s);  // gone before reading anything: the sink's writes fail (EPIPE / ECONNRESET)
  REQUIRE(f.wait_for(std::chrono::seconds(60)));
  CHECK_THROWS_WITH(f.get(), Catch::Contains("tcp_listen_sink 127.0.0.1:" + std::to_string(port->load())) &&
                                 Catch::Contains("write failed"));
  CHECK(f.stats().units_alive == 0);
}

TEST_CASE("io a listening TCP sink serves one run", "[io]") {
  auto l = io::record_layout::of<float>(shape::d1(4));
  auto port = std::make_shared<std::atomic<int>>(0);
  auto snk = io::tcp_listen_sink("127.0.0.1", 0, port);
  graph g(map<keep<float>>());
  auto f = g.run(io::generator(gen(l, 3)), snk);
  int s = connect_loopback(port->load());
  REQUIRE(s >= 0);
  CHECK(read_all(s).size() == 3 * (8 + l.bytes()));
  ::close(s);
  f.get();
  CHECK_THROWS_WITH(g.run(io::generator(gen(l, 3)), snk), Catch::Contains("serves one run"));
}

TEST_CASE("io TCP endpoints that cannot be reached are errors naming them", "[io]") {
  // Bind a port, then close it: nobody listens there.
  int port = 0;
  {
    auto p = std::make_shared<std::atomic<int>>(0);
    io::tcp_listen("127.0.0.1", 0, io::record_layout::of<float>(shape::d1(4)), p);
    port = p->load();
  }
  graph g(map<keep<float>>());
  io::generator_options o = gen(io::record_layout::of<float>(shape::d1(4)), 1);
  CHECK_THROWS_WITH(g.run(io::generator(o), io::tcp_connect_sink("127.0.0.1", std::uint16_t(port))),
                    Catch::Contains("127.0.0.1:" + std::to_string(port)) && Catch::Contains("refused"));
  CHECK_THROWS_WITH(g.run(io::tcp_connect("127.0.0.1", std::uint16_t(port), o.layout)).get(),
                    Catch::Contains("127.0.0.1:" + std::to_string(port)) && Catch::Contains("refused"));
  // (No unknown-host case: resolving one may wait for a DNS timeout on an offline machine.)
  auto held = std::make_shared<std::atomic<int>>(0);
  auto busy = io::tcp_listen("127.0.0.1", 0, o.layout, held);
  CHECK_THROWS_WITH(io::tcp_listen("127.0.0.1", std::uint16_t(held->load()), o.layout),
                    Catch::Contains("127.0.0.1:" + std::to_string(held->load())) && Catch::Contains("in use"));
}
