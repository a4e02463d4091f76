// Record batches (engine/records.hpp, io/batching.hpp): the record index,
// text lines and fixed-size binary records batched by the io sources and
// written record by record by the io sinks, per-record leaves, the graphs
// that turn batching off, the latency bound of live streams, stop, TCP
// frames, and the JSON "batch" field.
#include <catch2/catch.hpp>

#include <poll.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <sinew/json/graph_file.hpp>
#include <sinew/workloads.hpp>

#include "test_io_common.hpp"

using namespace sinew;
using namespace sinew_io_test;

namespace {

/// A descriptor closed at scope exit (or earlier by close()).
struct owned_fd {
  int fd = -1;
  void close() {
    if (fd >= 0) ::close(fd);
    fd = -1;
  }
  ~owned_fd() { close(); }
};

/// A pipe: `from` reads what `to` writes.
void open_pipe(owned_fd& from, owned_fd& to) {
  int p[2];
  REQUIRE(::pipe2(p, O_CLOEXEC) == 0);
  from.fd = p[0];
  to.fd = p[1];
}

/// Up to `n` bytes from `fd`, waiting at most `limit` in all (poll: a
/// missing flush fails the test instead of hanging it).
std::string read_within(int fd, std::size_t n, std::chrono::milliseconds limit) {
  const auto end = std::chrono::steady_clock::now() + limit;
  std::string got;
  while (got.size() < n) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(end - std::chrono::steady_clock::now());
    if (left.count() <= 0) break;
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, int(left.count())) <= 0) continue;
    char buf[256];
    const ssize_t r = ::read(fd, buf, std::min(sizeof buf, n - got.size()));
    if (r <= 0) break;
    got.append(buf, std::size_t(r));
  }
  return got;
}

constexpr std::uint8_t upper_byte(std::uint8_t c) { return c >= 'a' && c <= 'z' ? std::uint8_t(c - 'a' + 'A') : c; }

std::string upper_of(std::string s) {
  for (char& c : s) c = char(upper_byte(std::uint8_t(c)));
  return s;
}

/// What the JSON kernel "xor" makes of a line (its default key 0x5a).
std::string xor_of(std::string s) {
  for (char& c : s) c = char(std::uint8_t(c) ^ 0x5a);
  return s;
}

/// The lines, each followed by '\n'.
std::string joined(const std::vector<std::string>& lines) {
  std::string s;
  for (const auto& l : lines) s += l + "\n";
  return s;
}

std::string text_of(const std::string& path) {
  auto b = file_bytes(path);
  return std::string(b.begin(), b.end());
}

void write_text(const std::string& path, const std::string& text) { write_bytes(path, text.data(), text.size()); }

io::batching batch_mode(io::batching::when w) {
  io::batching b;
  b.mode = w;
  return b;
}

/// Per element, in place.
struct upper {
  void operator()(std::uint8_t& c) const { c = upper_byte(c); }
};

/// The first of two zipped byte buffers.
struct first_buffer {
  void operator()(std::uint8_t a, std::uint8_t, std::uint8_t* o) const { *o = a; }
};

/// Per element with its position: a batch would change what it sees.
struct with_position {
  void operator()(sinew::index, std::uint8_t& c) const { (void)c; }
};

/// Per record, in place: the record's bytes reversed.
struct reverse_line {
  void operator()(sinew::record, sinew::inout<std::uint8_t> line) const { std::reverse(line.begin(), line.end()); }
};

/// Per record, out of place: the same into layer 1.
struct reverse_into {
  void operator()(sinew::record, sinew::in<std::uint8_t> x, sinew::out<std::uint8_t> y) const {
    std::reverse_copy(x.begin(), x.end(), y.begin());
  }
};

/// Per record: notes (index, first) of every record it is called for.
struct record_log {
  struct seen_list {
    std::mutex m;
    std::vector<std::pair<std::size_t, std::size_t>> v;
  };
  std::shared_ptr<seen_list> seen = std::make_shared<seen_list>();
  void operator()(sinew::record r, sinew::inout<std::uint8_t>) const {
    std::lock_guard lk(seen->m);
    seen->v.emplace_back(r.index, r.first);
  }
  std::vector<std::pair<std::size_t, std::size_t>> sorted() const {
    auto v = seen->v;
    std::sort(v.begin(), v.end());
    return v;
  }
  std::size_t most_records_a_unit() const {
    std::size_t m = 0;
    for (const auto& [i, first] : seen->v) m = std::max(m, i + 1);
    return m;
  }
};

/// Binary records of layout<float, i32>(d1(3)): 24 bytes, 3 floats then 3
/// ints, as read_file reads and write_file writes them.
const io::record_layout pair_layout = io::record_layout::of<float, std::int32_t>(shape::d1(3));
constexpr std::size_t pair_bytes = 24;

/// `n` such records, every value plus `plus`.
std::vector<unsigned char> pair_records(std::size_t n, int plus) {
  std::vector<unsigned char> v(n * pair_bytes);
  for (std::size_t r = 0; r < n; ++r) {
    float f[3];
    std::int32_t i[3];
    for (std::size_t j = 0; j < 3; ++j) {
      f[j] = float(r * 3 + j) * 0.5f + float(plus);
      i[j] = -7 * std::int32_t(r * 3 + j) + plus;
    }
    std::memcpy(v.data() + r * pair_bytes, f, 12);
    std::memcpy(v.data() + r * pair_bytes + 12, i, 12);
  }
  return v;
}

std::uint64_t fnv_of(const std::vector<unsigned char>& b) {
  return workloads::checksum(b.data(), b.size(), workloads::fnv1a_offset);
}

struct add_one {
  void operator()(float& f, std::int32_t& i) const {
    f += 1;
    i += 1;
  }
};

/// Per record of two buffers: the record's first element index into i[0].
struct stamp_first {
  void operator()(sinew::record r, sinew::inout<float> f, sinew::inout<std::int32_t> i) const {
    if (f.size() == 3 && i.size() == 3) i[0] = std::int32_t(r.first);
  }
};

/// Lines through pipes: `text` into read_lines(b), write_lines out.
struct piped_run {
  std::string out;
  run_stats stats;
};
piped_run run_piped(graph& g, const std::string& text, io::batching b) {
  owned_fd in_r, in_w, out_r, out_w;
  open_pipe(in_r, in_w);
  open_pipe(out_r, out_w);
  std::thread producer([&] {
    write_all(in_w.fd, text.data(), text.size());
    in_w.close();
  });
  std::vector<unsigned char> got;
  std::thread consumer([&] { got = read_all(out_r.fd); });
  auto f = g.run(io::read_lines(in_r.fd, b), io::write_lines(out_w.fd));
  std::exception_ptr err;
  try {
    f.get();
  } catch (...) {
    err = std::current_exception();
  }
  out_w.close();
  in_r.close();  // a producer still writing into a failed run gets EPIPE
  producer.join();
  consumer.join();
  if (err) std::rethrow_exception(err);
  return {std::string(got.begin(), got.end()), f.stats()};
}

/// Lines from file `in` through `g` into file `out`.
run_stats run_lines_files(graph& g, const std::string& in, const std::string& out, io::batching b = {}) {
  auto f = g.run(io::read_lines_file(in, b), io::write_lines_file(out));
  f.get();
  return f.stats();
}

/// A graph file run with every sink verified against its sequential reference.
struct verified_run {
  verify_report verify;
  run_stats stats;
};
verified_run run_verified(const std::string& doc) {
  auto f = graph_file::parse(doc, "inline.json");
  auto sched = f.make_scheduler(2);
  graph g = f.make_graph(f.options(sched.get()));
  std::vector<std::pair<std::string, std::shared_ptr<io::checksum_result>>> sums;
  auto rep = std::make_shared<verify_report>();
  auto run = g.run(f.make_sources(), verifying_sinks(f, f.make_sinks(sums), rep));
  run.get();
  return {*rep, run.stats()};
}

json_error json_refusal(const std::string& doc) {
  try {
    graph_file::parse(doc, "inline.json");
  } catch (const json_error& e) {
    return e;
  }
  FAIL("the document was accepted: " << doc);
  throw;  // unreachable
}

/// A tree document: a file of lines through `tree` (JSON) into a file of lines.
std::string lines_doc(const std::string& in, const std::string& tree, const std::string& batch,
                      const std::string& out) {
  return R"({"sinew": 1, "name": "lines",
    "source": {"type": "file", "path": ")" + in + R"(", "format": "lines")" + batch + R"(},
    "graph": )" + tree + R"(,
    "sink": {"type": "file", "path": ")" + out + R"(", "format": "lines"}})";
}

}  // namespace

TEST_CASE("records record_index describes fixed and varying records", "[records]") {
  SECTION("fixed records stack along the outermost dimension") {
    auto ix = record_index::fixed(4, shape::d2(2, 3));
    CHECK(ix.batch());
    CHECK(ix.size() == 4);
    CHECK(ix.records() == 4);
    CHECK(ix.begin(0) == 0);
    CHECK(ix.begin(3) == 18);
    CHECK(ix.end(3) == 24);
    CHECK(ix.elements() == 24);
    CHECK(ix.shape_of(2, shape::d2(8, 3)) == shape::d2(2, 3));
    CHECK(ix.fits(24));
    CHECK_FALSE(ix.fits(23));
    CHECK_FALSE(ix.offsets());
  }
  SECTION("varying records by offsets with an empty one in the middle") {
    auto off = buffer_pool::global().acquire<std::uint64_t>(4);
    const std::uint64_t o[4] = {0, 2, 2, 5};  // "ab", "", "cde"
    std::memcpy(off.data<std::uint64_t>(), o, sizeof o);
    auto ix = record_index::varying(off, 3);
    CHECK(ix.batch());
    CHECK(ix.records() == 3);
    CHECK(ix.begin(1) == 2);
    CHECK(ix.end(1) == 2);
    CHECK(ix.shape_of(0, shape::d1(5)) == shape::d1(2));
    CHECK(ix.shape_of(1, shape::d1(5)) == shape::d1(0));
    CHECK(ix.shape_of(2, shape::d1(5)) == shape::d1(3));
    CHECK(ix.elements() == 5);
    CHECK(ix.fits(5));
    CHECK_FALSE(ix.fits(6));
    CHECK(ix.offsets() == off);  // shared, not copied

    SECTION("a work_unit keeps it when copied and drops it when cleared") {
      auto u = std::make_unique<work_unit>();
      u->push_layer(layer(shape::d1(5), {buffer_pool::global().acquire<std::uint8_t>(5)}));
      u->set_records(ix);
      auto c = std::make_unique<work_unit>();
      *c = *u;
      CHECK(c->records().size() == 3);
      CHECK(c->records().offsets() == off);
      CHECK(c->records().fits(c->count()));
      c->clear();
      CHECK_FALSE(c->records().batch());
      CHECK(c->records().records() == 1);
      CHECK(u->records().size() == 3);
    }
  }
  SECTION("the default is one record") {
    record_index ix;
    CHECK_FALSE(ix.batch());
    CHECK(ix.size() == 0);
    CHECK(ix.records() == 1);
    CHECK_FALSE(ix.fits(0));
    CHECK_FALSE(ix.fits(1));
  }
}

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

TEST_CASE("records per-record leaves see one record of a batch", "[records]") {
  temp_dir d;
  const std::string in = d.file("in.txt"), out = d.file("out.txt");
  write_text(in, "abc\n\nde\n");
  record_log log;

  SECTION("in place") {
    graph g(pipeline(map<reverse_line>(), map<record_log>(log)));
    auto st = run_lines_files(g, in, out);
    CHECK(text_of(out) == "cba\n\ned\n");
    CHECK(st.units_out == 1);
    CHECK(st.records_out == 3);
    CHECK(log.sorted() == std::vector<std::pair<std::size_t, std::size_t>>{{0, 0}, {1, 3}, {2, 3}});
  }
  SECTION("out of place") {
    graph g(pipeline(map<reverse_into>(), map<record_log>(log)));
    auto st = run_lines_files(g, in, out);
    CHECK(text_of(out) == "cba\n\ned\n");
    CHECK(st.units_out == 1);
    CHECK(log.sorted() == std::vector<std::pair<std::size_t, std::size_t>>{{0, 0}, {1, 3}, {2, 3}});
  }
  SECTION("many records split over tasks") {
    std::vector<std::string> lines(5000);
    for (std::size_t i = 0; i < lines.size(); ++i) lines[i] = std::to_string(i * 7919);
    write_text(in, joined(lines));
    graph g(farm(map<reverse_line>(), 2));
    auto st = run_lines_files(g, in, out);
    for (auto& l : lines) std::reverse(l.begin(), l.end());
    CHECK(text_of(out) == joined(lines));
    CHECK(st.units_out < 5000);
    CHECK(st.records_out == 5000);
  }
  SECTION("a unit that is not a batch is record 0") {
    std::vector<std::vector<std::uint8_t>> items = {{'h', 'e', 'l', 'l', 'o'}, {'x', 'y'}}, res;
    graph g(pipeline(map<reverse_line>(), map<record_log>(log)));
    g.run(from(items), into(res)).get();
    REQUIRE(res.size() == 2);
    CHECK(res[0] == std::vector<std::uint8_t>{'o', 'l', 'l', 'e', 'h'});
    CHECK(res[1] == std::vector<std::uint8_t>{'y', 'x'});
    CHECK(log.sorted() == std::vector<std::pair<std::size_t, std::size_t>>{{0, 0}, {0, 0}});
  }
}

TEST_CASE("records whole-unit leaves and item sinks turn batching off", "[records]") {
  temp_dir d;
  const std::string in = d.file("in.txt"), out = d.file("out.txt");
  std::vector<std::string> lines(50);
  for (std::size_t i = 0; i < lines.size(); ++i) lines[i] = "item " + std::to_string(i);
  write_text(in, joined(lines));
  const auto always = batch_mode(io::batching::when::always);

  SECTION("a chunk leaf") {
    graph g(pipeline(map<upper>(), map<keep<std::uint8_t>>().named("whole")));
    auto st = run_lines_files(g, in, out);
    CHECK(st.units_out == 50);
    CHECK(st.records_out == 50);
    CHECK(text_of(out) == upper_of(joined(lines)));
    CHECK_THROWS_AS(g.run(io::read_lines_file(in, always), io::write_lines_file(out)), graph_error);
    CHECK_THROWS_WITH(g.run(io::read_lines_file(in, always), io::write_lines_file(out)),
                      Catch::Contains("whole") && Catch::Contains("told to make record batches"));
  }
  SECTION("an index leaf") {
    graph g(farm(map<with_position>().named("positions"), 2));
    auto st = run_lines_files(g, in, out);
    CHECK(st.units_out == 50);
    CHECK(text_of(out) == joined(lines));
    CHECK_THROWS_WITH(g.run(io::read_lines_file(in, always), io::write_lines_file(out)),
                      Catch::Contains("positions") && Catch::Contains("told to make record batches"));
  }
  SECTION("a for_each sink") {
    std::atomic<std::uint64_t> units{0}, batches{0};
    graph g(map<upper>());
    auto sink = for_each([&](const work_unit& u) {
      units++;
      if (u.records().batch()) batches++;
    });
    auto f = g.run(io::read_lines_file(in), sink);
    f.get();
    CHECK(units == 50);
    CHECK(batches == 0);
    CHECK(f.stats().units_out == 50);
    CHECK(f.stats().records_out == 50);
    CHECK_THROWS_WITH(g.run(io::read_lines_file(in, always), sink), Catch::Contains("sink(for_each)"));
  }
  SECTION("a discard sink allows batches") {
    graph g(map<upper>());
    auto f = g.run(io::read_lines_file(in), discard());
    f.get();
    CHECK(f.stats().units_out < 50);
    CHECK(f.stats().records_out == 50);
    g.run(io::read_lines_file(in, always), discard()).get();
  }
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

TEST_CASE("records graph files batch lines of a file source", "[records][json]") {
  temp_dir d;
  const std::string in = d.file("in.txt"), out = d.file("out.txt");
  std::vector<std::string> lines(1000);
  for (std::size_t i = 0; i < lines.size(); ++i)
    lines[i] = i % 50 == 0 ? std::string() : "rec" + std::to_string(i * 31);
  write_text(in, joined(lines));

  SECTION("xor by batches of 100 records") {
    auto r = run_verified(lines_doc(in, R"({"map": "xor"})", R"(, "batch": {"records": 100})", out));
    CHECK(r.verify.ok());
    INFO(r.verify.first);
    CHECK(r.verify.units == 10);
    CHECK(r.stats.units_out == 10);
    CHECK(r.stats.records_out == 1000);
    for (auto& l : lines) l = xor_of(l);
    CHECK(text_of(out) == joined(lines));
  }
  SECTION("the per-record kernel reverse after xor in an unordered farm matches its reference") {
    auto r = run_verified(lines_doc(
        in, R"({"pipeline": [{"map": "xor"}, {"farm": {"map": "reverse"}, "workers": 3, "ordered": false}]})",
        R"(, "batch": {"records": 7})", out));
    CHECK(r.verify.ok());
    INFO(r.verify.first);
    CHECK(r.stats.units_out == (1000 + 6) / 7);
    CHECK(r.verify.units == r.stats.units_out);
    CHECK(r.stats.records_out == 1000);
    for (auto& l : lines) {
      l = xor_of(l);
      std::reverse(l.begin(), l.end());
    }
    CHECK(text_of(out) == joined(lines));
  }
  SECTION("batch true with a whole-unit kernel is refused at /source/batch") {
    auto e =
        json_refusal(lines_doc(in, R"({"pipeline": [{"map": "xor"}, {"map": "delay"}]})", R"(, "batch": true)", out));
    CHECK(e.pointer() == "/source/batch");
    CHECK_THAT(std::string(e.what()), Catch::Contains("delay") && Catch::Contains("treats a unit as a whole"));
  }
  SECTION("a ppm_dir sink takes whole images: no batches by default and batch true refused") {
    const std::string images = d.file("images.bin"), dir = d.file("ppm");
    std::filesystem::create_directory(dir);
    std::vector<unsigned char> pixels(3 * 4 * 4 * 4);
    for (std::size_t i = 0; i < pixels.size(); ++i) pixels[i] = static_cast<unsigned char>(i * 37);
    write_bytes(images, pixels.data(), pixels.size());
    auto doc = [&](const std::string& batch) {
      return R"({"sinew": 1, "name": "images",
        "source": {"type": "file", "path": ")" + images + R"(", "buffers": ["rgba8"], "shape": [4, 4])" + batch + R"(},
        "graph": {"map": "solarize"},
        "sink": {"type": "ppm_dir", "path": ")" + dir + R"("}})";
    };
    auto r = run_verified(doc(""));
    CHECK(r.verify.ok());
    CHECK(r.stats.units_out == 3);
    CHECK(std::distance(std::filesystem::directory_iterator(dir), std::filesystem::directory_iterator()) == 3);
    auto e = json_refusal(doc(R"(, "batch": true)"));
    CHECK(e.pointer() == "/source/batch");
    CHECK_THAT(std::string(e.what()), Catch::Contains("ppm_dir sink takes units, not records"));
  }
  SECTION("batch false makes one unit a line") {
    auto r = run_verified(lines_doc(in, R"({"map": "reverse"})", R"(, "batch": false)", out));
    CHECK(r.verify.ok());
    CHECK(r.stats.units_out == 1000);
    for (auto& l : lines) std::reverse(l.begin(), l.end());
    CHECK(text_of(out) == joined(lines));
  }
}

TEST_CASE("records a dag's sources batch where the dag allows it", "[records][dag]") {
  temp_dir d;
  const std::string in = d.file("in.txt"), out = d.file("out.txt");
  std::vector<std::string> lines(3000);
  for (std::size_t i = 0; i < lines.size(); ++i) lines[i] = i % 40 == 0 ? std::string() : "line" + std::to_string(i * 7);
  write_text(in, joined(lines));
  auto up = [&] {
    std::vector<std::string> u = lines;
    for (auto& l : u) l = upper_of(l);
    return joined(u);
  };

  SECTION("a source, a tree and a sink") {
    dag g;
    g.sink("out", g.add("up", map<upper>(), g.source("in")));
    CHECK(g.whole_unit_at().empty());
    graph run_g(g);
    auto f = run_g.run({{"in", io::read_lines_file(in)}}, {{"out", io::write_lines_file(out)}});
    f.get();
    CHECK(f.stats().records_out == lines.size());
    CHECK(f.stats().units_out < lines.size());
    CHECK(text_of(out) == up());
  }
  SECTION("a zip pairs units: one unit a record") {
    dag g;
    auto src = g.source("in");
    auto z = g.zip("both", {g.add("a", map<upper>(), src), g.add("b", map<upper>(), src)});
    g.sink("out", g.add("first", map<first_buffer>(), z));
    CHECK_THAT(g.whole_unit_at(), Catch::Contains("both") && Catch::Contains("zip"));
    graph run_g(g);
    auto f = run_g.run({{"in", io::read_lines_file(in)}}, {{"out", io::write_lines_file(out)}});
    f.get();
    CHECK(f.stats().units_out == lines.size());
    CHECK(text_of(out) == up());
    io::batching always;
    always.mode = io::batching::when::always;
    CHECK_THROWS_WITH(run_g.run({{"in", io::read_lines_file(in, always)}}, {{"out", io::write_lines_file(out)}}),
                      Catch::Contains("both") && Catch::Contains("told to make record batches"));
  }
  SECTION("a graph file dag: a broadcast to two trees and two sinks, verified") {
    const std::string out2 = d.file("out2.txt");
    auto r = run_verified(R"({"sinew": 1, "name": "lines_dag",
      "sources": {"lines": {"type": "file", "path": ")" + in + R"(", "format": "lines", "batch": {"records": 64}}},
      "nodes": {"x": {"input": "lines", "graph": {"map": "xor"}},
                "r": {"input": "lines", "graph": {"farm": {"map": "reverse"}, "workers": 2, "ordered": false}}},
      "sinks": {"xored": {"input": "x", "sink": {"type": "file", "path": ")" + out + R"(", "format": "lines"}},
                "reversed": {"input": "r", "sink": {"type": "file", "path": ")" + out2 + R"(", "format": "lines"}}}})");
    CHECK(r.verify.ok());
    INFO(r.verify.first);
    CHECK(r.stats.records_in == lines.size());
    CHECK(r.stats.records_out == 2 * lines.size());
    CHECK(r.stats.units_in == (lines.size() + 63) / 64);
    std::vector<std::string> x = lines, rv = lines;
    for (auto& l : x) l = xor_of(l);
    for (auto& l : rv) std::reverse(l.begin(), l.end());
    CHECK(text_of(out) == joined(x));
    CHECK(text_of(out2) == joined(rv));
  }
}
