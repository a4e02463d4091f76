// Record batches through the io sources and sinks: text lines and
// fixed-size records from pipes and files, batch limits, the latency bound
// of live streams, file formats, truncated streams, TCP frames and stop.
#include <catch2/catch.hpp>

#include "test_records_common.hpp"

using namespace sinew;
using namespace sinew_io_test;
using namespace sinew_records_test;

TEST_CASE("records lines from a pipe are batched through a farm and written line by line", "[io][records][tsan]") {
  // Lines of every length: empty ones, one longer than a batch's byte
  // limit, "\r\n" endings (the '\r' stays in the line), no final newline.
  constexpr std::size_t n = 10000;
  std::vector<std::string> lines(n);
  for (std::size_t i = 0; i < n; ++i) {
    if (i % 97 == 0) continue;
    if (i == 5000) {
      lines[i] = std::string(300000, 'q');
      continue;
    }
    for (std::size_t k = 0; k < i % 61; ++k) lines[i] += "abcdefghijklmnopqrstuvwxyz0123456789 -"[(i + k) % 38];
    if (i % 13 == 0) lines[i] += '\r';
  }
  REQUIRE(lines[5000].size() > io::batching{}.bytes);
  std::string text = joined(lines);
  text.pop_back();  // the last line ends without '\n'
  std::vector<std::string> want(lines);
  for (auto& l : want) l = upper_of(l);

  graph g(farm(map<upper>(), 3));
  SECTION("batched by default") {
    auto r = run_piped(g, text, {});
    CHECK(r.out == joined(want));
    CHECK(r.stats.records_in == n);
    CHECK(r.stats.records_out == n);
    CHECK(r.stats.units_out == r.stats.units_in);
    CHECK(r.stats.units_out < n);
  }
  SECTION("one unit a line with batching off") {
    auto r = run_piped(g, text, io::batching::off());
    CHECK(r.out == joined(want));
    CHECK(r.stats.units_out == n);
    CHECK(r.stats.records_out == n);
  }
}

TEST_CASE("records a batch holds at most its records and bytes and a longer line alone", "[records]") {
  temp_dir d;
  const std::string in = d.file("in.txt"), out = d.file("out.txt");

  SECTION("records limit") {
    std::vector<std::string> lines(1000);
    for (std::size_t i = 0; i < lines.size(); ++i) lines[i] = "line " + std::to_string(i);
    write_text(in, joined(lines));
    io::batching b;
    b.records = 7;
    graph g(map<upper>());
    auto st = run_lines_files(g, in, out, b);  // a regular file: no latency cuts
    CHECK(st.units_out == (1000 + 6) / 7);
    CHECK(st.records_out == 1000);
    for (auto& l : lines) l = upper_of(l);
    CHECK(text_of(out) == joined(lines));
  }
  SECTION("bytes limit") {
    // Lines of 10 bytes (the '\n' is not part of a line): 6 fit in 64 bytes.
    std::vector<std::string> lines(1000);
    for (std::size_t i = 0; i < lines.size(); ++i)
      lines[i] = std::string("abcdefghij").substr(i % 10) + std::string(i % 10, '*');
    write_text(in, joined(lines));
    io::batching b;
    b.bytes = 64;
    record_log log;
    graph g(pipeline(map<upper>(), map<record_log>(log)));
    auto st = run_lines_files(g, in, out, b);
    CHECK(log.most_records_a_unit() == 6);
    CHECK(log.seen->v.size() == 1000);
    CHECK(st.units_out == (1000 + 5) / 6);
    CHECK(st.records_out == 1000);
    for (auto& l : lines) l = upper_of(l);
    CHECK(text_of(out) == joined(lines));
  }
  SECTION("a line longer than the byte limit is a unit of its own, intact") {
    const std::vector<std::string> lines = {"aaaa", "bbbb", "cccc", std::string(200, 'x') + "end", "dddd", "eeee"};
    write_text(in, joined(lines));
    io::batching b;
    b.bytes = 64;
    graph g(map<upper>());
    auto st = run_lines_files(g, in, out, b);
    CHECK(st.units_out == 3);
    CHECK(st.records_out == 6);
    CHECK(text_of(out) == joined({"AAAA", "BBBB", "CCCC", std::string(200, 'X') + "END", "DDDD", "EEEE"}));
  }
  SECTION("a batch of no records or no bytes is refused") {
    write_text(in, "a\n");
    io::batching b;
    b.records = 0;
    graph g(map<upper>());
    CHECK_THROWS_AS(g.run(io::read_lines_file(in, b), io::write_lines_file(out)), graph_error);
    b.records = 1;
    b.bytes = 0;
    CHECK_THROWS_WITH(g.run(io::read_lines_file(in, b), io::write_lines_file(out)),
                      Catch::Contains("at least one record and one byte"));
  }
}

TEST_CASE("records lines at the edges: no input and only newlines and carriage returns and tiny limits", "[records]") {
  temp_dir d;
  const std::string in = d.file("in.txt"), out = d.file("out.txt");
  graph g(map<upper>());
  auto round_trip = [&](const std::string& text, io::batching b) {
    write_text(in, text);
    const auto st = run_lines_files(g, in, out, b);
    CHECK(st.records_in == st.records_out);
    return text_of(out);
  };
  const io::batching plain;
  CHECK(round_trip("", plain).empty());
  CHECK(round_trip("\n", plain) == "\n");
  CHECK(round_trip("\n\n\n", plain) == "\n\n\n");
  CHECK(round_trip("x", plain) == "X\n");
  CHECK(round_trip("a\r\nb\r\n", plain) == "A\r\nB\r\n");
  io::batching one_record;
  one_record.records = 1;
  CHECK(round_trip("a\nb\n\nc", one_record) == "A\nB\n\nC\n");
  const std::string mixed = "abcdef\n\n\nab\nabc\nabcd\n\n";
  for (std::size_t bytes : {1, 2, 3, 4}) {
    INFO(bytes << " bytes a batch");
    io::batching tiny;
    tiny.bytes = bytes;
    CHECK(round_trip(mixed, tiny) == upper_of(mixed));
  }
}

TEST_CASE("records long lines from a pipe close their batch and arrive intact", "[io][records][tsan]") {
  std::vector<std::string> lines(200);
  for (std::size_t i = 0; i < lines.size(); ++i)
    lines[i] = i % 17 == 3 ? std::string(70000 + i, 'z') : "short " + std::to_string(i);  // longer than a read
  std::vector<std::string> want(lines);
  for (auto& l : want) l = upper_of(l);
  io::batching b;
  b.bytes = 100000;
  graph g(farm(map<upper>(), 2));
  auto r = run_piped(g, joined(lines), b);
  CHECK(r.out == joined(want));
  CHECK(r.stats.records_out == 200);
  CHECK(r.stats.units_out < 200);
}

TEST_CASE("records a live pipe's lines reach the output while its input stays open", "[io][records][tsan]") {
  owned_fd in_r, in_w, out_r, out_w;
  open_pipe(in_r, in_w);
  open_pipe(out_r, out_w);
  graph g(map<upper>());
  auto f = g.run(io::read_lines(in_r.fd), io::write_lines(out_w.fd));
  // CHECK, not REQUIRE: closing the input below ends the run either way.
  CHECK(write_all(in_w.fd, "one\n", 4));
  CHECK(read_within(out_r.fd, 4, std::chrono::seconds(5)) == "ONE\n");
  CHECK_FALSE(f.ready());
  CHECK(write_all(in_w.fd, "two\n", 4));
  CHECK(read_within(out_r.fd, 4, std::chrono::seconds(5)) == "TWO\n");
  in_w.close();
  f.get();
  out_w.close();
  CHECK(read_all(out_r.fd).empty());
  CHECK(f.stats().records_out == 2);
  CHECK(f.stats().units_out == 2);  // the latency bound cut each batch after its line
}

// A pipe that is never empty when the source looks (a writer ahead of it;
// 9-byte lines, so each read ends inside a line): with a latency of 0 a
// batch closes after each read instead of growing to the byte limit.
TEST_CASE("records a pipe read behind its writer closes a batch at its latency bound", "[io][records]") {
  std::vector<std::string> lines(200000);
  for (std::size_t i = 0; i < lines.size(); ++i) lines[i] = std::to_string(10000000 + i);  // 8 bytes and '\n'
  io::batching b;
  b.records = lines.size();
  b.bytes = std::size_t(1) << 20;
  b.latency = std::chrono::microseconds(0);
  record_log log;
  graph g(pipeline(map<upper>(), map<record_log>(log)));
  auto r = run_piped(g, joined(lines), b);
  CHECK(r.out == joined(lines));
  CHECK(r.stats.records_out == lines.size());
  // A batch holds one read's lines (the reader's buffer is 256 KiB).
  CHECK(log.most_records_a_unit() * 9 < b.bytes / 2);
}

TEST_CASE("records a live pipe's binary records reach the output while its input stays open", "[io][records][tsan]") {
  owned_fd in_r, in_w, out_r, out_w;
  open_pipe(in_r, in_w);
  open_pipe(out_r, out_w);
  const bool farmed = GENERATE(false, true);
  graph g(farmed ? farm(map<add_one>(), 3) : map<add_one>());
  auto f = g.run(io::read_fd(in_r.fd, pair_layout), io::write_fd(out_w.fd));
  const auto data = pair_records(3, 0), want = pair_records(3, 1);
  auto bytes_of = [](const std::string& s) { return std::vector<unsigned char>(s.begin(), s.end()); };
  CHECK(write_all(in_w.fd, data.data(), pair_bytes));
  CHECK(bytes_of(read_within(out_r.fd, pair_bytes, std::chrono::seconds(5))) ==
        std::vector<unsigned char>(want.begin(), want.begin() + pair_bytes));
  CHECK(write_all(in_w.fd, data.data() + pair_bytes, 2 * pair_bytes));
  CHECK(bytes_of(read_within(out_r.fd, 2 * pair_bytes, std::chrono::seconds(5))) ==
        std::vector<unsigned char>(want.begin() + pair_bytes, want.end()));
  in_w.close();
  f.get();
  CHECK(f.stats().records_out == 3);
}

TEST_CASE("records fixed-size records of two buffers keep their file format", "[records]") {
  temp_dir d;
  const std::string in = d.file("in.bin"), out = d.file("out.bin");
  const auto data = pair_records(1000, 0);
  write_bytes(in, data.data(), data.size());

  SECTION("batched by default") {
    graph g(map<add_one>());
    auto f = g.run(io::read_file(in, pair_layout), io::write_file(out));
    f.get();
    CHECK(file_bytes(out) == pair_records(1000, 1));
    CHECK(f.stats().units_out < 1000);
    CHECK(f.stats().records_in == 1000);
    CHECK(f.stats().records_out == 1000);
  }
  SECTION("small batches through an unordered farm") {
    io::batching b;
    b.records = 64;
    graph g(farm(map<add_one>(), 3, farm_order::unordered));
    auto f = g.run(io::read_file(in, pair_layout, b), io::write_file(out));
    f.get();
    CHECK(file_bytes(out) == pair_records(1000, 1));
    CHECK(f.stats().units_out == (1000 + 63) / 64);
  }
  SECTION("a per-record leaf sees each record's part of both buffers") {
    graph g(map<stamp_first>());
    auto f = g.run(io::read_file(in, pair_layout), io::write_file(out));
    f.get();
    auto want = pair_records(1000, 0);
    for (std::size_t r = 0; r < 1000; ++r) {
      const std::int32_t first = std::int32_t(r * 3);
      std::memcpy(want.data() + r * pair_bytes + 12, &first, 4);
    }
    CHECK(file_bytes(out) == want);
    CHECK(f.stats().units_out < 1000);
  }
  SECTION("a checksum of batches equals one of single records") {
    graph g(map<add_one>());
    auto batched = std::make_shared<io::checksum_result>(), single = std::make_shared<io::checksum_result>();
    g.run(io::read_file(in, pair_layout), io::checksum(batched)).get();
    g.run(io::read_file(in, pair_layout, io::batching::off()), io::checksum(single)).get();
    CHECK(batched->value == single->value);
    CHECK(batched->value == fnv_of(pair_records(1000, 1)));
    CHECK(batched->records == 1000);
    CHECK(single->records == 1000);
    CHECK(batched->units < 1000);
    CHECK(single->units == 1000);
    CHECK(batched->bytes == single->bytes);
  }
}

TEST_CASE("records one-buffer records are read straight into batches and a partial one fails last", "[records]") {
  // Records of one buffer and at most the read buffer's size are read
  // straight into the batch (no copy): whole records in order, batches as
  // large as allowed, the bytes of a partial last record kept for the error.
  temp_dir d;
  const std::string in = d.file("in.bin"), out = d.file("out.bin");
  constexpr std::size_t n = 5000, rec = 64;
  std::vector<std::uint8_t> data(n * rec + rec / 2);
  for (std::size_t i = 0; i < data.size(); ++i) data[i] = std::uint8_t(i * 31 + i / 7);
  write_bytes(in, data.data(), data.size());
  graph g(map<upper>());
  io::batching b;
  b.bytes = std::size_t(1) << 20;  // the records limit decides
  // 1000 records: 64,000 bytes, under the 256 KiB read buffer (copied from it); 5000: read straight in
  for (std::size_t per : {std::size_t(1000), std::size_t(5000)}) {
    INFO(per);
    b.records = per;
    auto f = g.run(io::read_file(in, io::record_layout::of<std::uint8_t>(shape::d1(rec)), b), io::write_file(out));
    CHECK_THROWS_WITH(f.get(), Catch::Contains("byte offset " + std::to_string(n * rec)) && Catch::Contains("32 of 64 bytes"));
    CHECK(f.stats().records_out == n);
    CHECK(f.stats().units_out == (n + per - 1) / per);
    std::vector<unsigned char> want(data.begin(), data.begin() + std::ptrdiff_t(n * rec));
    for (auto& c : want) c = upper_byte(c);
    CHECK(file_bytes(out) == want);
  }
}

TEST_CASE("records a truncated file fails after its whole records were delivered", "[records]") {
  temp_dir d;
  const std::string in = d.file("in.bin"), out = d.file("out.bin");
  auto data = pair_records(10, 0);
  data.resize(data.size() + pair_bytes / 2, 0);  // and half a record
  write_bytes(in, data.data(), data.size());
  graph g(map<add_one>());

  SECTION("into a checksum") {
    auto sum = std::make_shared<io::checksum_result>();
    auto f = g.run(io::read_file(in, pair_layout), io::checksum(sum));
    CHECK_THROWS_WITH(f.get(), Catch::Contains("byte offset 240") && Catch::Contains("in.bin") &&
                                   Catch::Contains("inside record 10"));
    CHECK(f.stats().records_out == 10);
    CHECK(sum->records == 10);
    CHECK(sum->value == fnv_of(pair_records(10, 1)));
  }
  SECTION("into a file") {
    auto f = g.run(io::read_file(in, pair_layout), io::write_file(out));
    CHECK_THROWS_AS(f.get(), sinew::error);
    CHECK(f.stats().records_out == 10);
    CHECK(f.stats().units_out == 1);
    CHECK(file_bytes(out) == pair_records(10, 1));
  }
  SECTION("from a pipe") {
    owned_fd in_r, in_w;
    open_pipe(in_r, in_w);
    REQUIRE(write_all(in_w.fd, data.data(), data.size()));  // one write: the reader gets it at once
    in_w.close();
    auto f = g.run(io::read_fd(in_r.fd, pair_layout), io::write_file(out));
    CHECK_THROWS_WITH(f.get(), Catch::Contains("descriptor " + std::to_string(in_r.fd)) &&
                                   Catch::Contains("byte offset 240") && Catch::Contains("12 of 24 bytes"));
    CHECK(f.stats().units_out == 1);
    CHECK(f.stats().records_out == 10);
    CHECK(file_bytes(out) == pair_records(10, 1));
  }
}

TEST_CASE("records a batched file source sends one TCP frame a record", "[io][records][tsan]") {
  temp_dir d;
  const std::string in = d.file("in.bin");
  const auto data = pair_records(1000, 0);
  write_bytes(in, data.data(), data.size());
  graph g(map<add_one>());

  auto single = std::make_shared<io::checksum_result>();
  g.run(io::read_file(in, pair_layout, io::batching::off()), io::checksum(single)).get();

  auto port = std::make_shared<std::atomic<int>>(0);
  auto got = std::make_shared<io::checksum_result>();
  graph rx_graph(map<add_one>());
  auto rx = rx_graph.run(io::tcp_listen("127.0.0.1", 0, pair_layout, port, io::batching::off()), io::checksum(got));
  REQUIRE(port->load() > 0);
  auto tx = g.run(io::read_file(in, pair_layout), io::tcp_connect_sink("127.0.0.1", std::uint16_t(port->load())));
  tx.get();
  rx.get();
  CHECK(tx.stats().units_out < 1000);  // batched on the way out
  CHECK(tx.stats().records_out == 1000);
  CHECK(got->units == 1000);  // one frame (unit) a record
  CHECK(got->value == fnv_of(pair_records(1000, 2)));
  CHECK(single->value == fnv_of(pair_records(1000, 1)));

  // The TCP source batches frames by default: fewer units, the same records.
  auto batched = std::make_shared<io::checksum_result>();
  auto rx2 = rx_graph.run(io::tcp_listen("127.0.0.1", 0, pair_layout, port), io::checksum(batched));
  REQUIRE(port->load() > 0);
  g.run(io::read_file(in, pair_layout, io::batching::off()), io::tcp_connect_sink("127.0.0.1", std::uint16_t(port->load())))
      .get();
  rx2.get();
  CHECK(rx2.stats().records_out == 1000);
  CHECK(batched->records == 1000);
  CHECK(batched->units < 1000);
  CHECK(batched->value == fnv_of(pair_records(1000, 2)));
}

TEST_CASE("records stop drains a live batched line stream", "[io][records][tsan]") {
  owned_fd in_r, in_w, out_r, out_w;
  open_pipe(in_r, in_w);
  open_pipe(out_r, out_w);
  std::vector<std::string> lines(150);
  for (std::size_t i = 0; i < lines.size(); ++i) lines[i] = "line " + std::to_string(i);
  const std::string text = joined(lines);
  const std::size_t first_part = joined({lines.begin(), lines.begin() + 100}).size();
  std::vector<unsigned char> got;
  std::thread consumer([&] { got = read_all(out_r.fd); });
  graph g(farm(map<upper>(), 2));
  auto f = g.run(io::read_lines(in_r.fd), io::write_lines(out_w.fd));
  CHECK(write_all(in_w.fd, text.data(), first_part));
  CHECK(eventually([&] { return f.stats().records_in == 100; }));
  CHECK(write_all(in_w.fd, text.data() + first_part, text.size() - first_part));  // the pipe stays open
  f.stop();
  f.get();
  out_w.close();
  consumer.join();
  const auto st = f.stats();
  CHECK(st.records_in == st.records_out);
  CHECK(st.records_out >= 100);
  REQUIRE(st.records_out <= lines.size());
  CHECK(std::string(got.begin(), got.end()) ==
        upper_of(joined({lines.begin(), lines.begin() + std::ptrdiff_t(st.records_out)})));
}
