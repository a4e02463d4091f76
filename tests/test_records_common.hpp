#pragma once
// Helpers of the record-batch tests (test_records.cpp, test_records_io.cpp):
// pipes, files, small functors and graph-file runs.
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

namespace sinew_records_test {

using namespace sinew;
using namespace sinew_io_test;

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
inline void open_pipe(owned_fd& from, owned_fd& to) {
  int p[2];
  REQUIRE(::pipe2(p, O_CLOEXEC) == 0);
  from.fd = p[0];
  to.fd = p[1];
}

/// Up to `n` bytes from `fd`, waiting at most `limit` in all (poll: a
/// missing flush fails the test instead of hanging it).
inline std::string read_within(int fd, std::size_t n, std::chrono::milliseconds limit) {
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

inline std::string upper_of(std::string s) {
  for (char& c : s) c = char(upper_byte(std::uint8_t(c)));
  return s;
}

/// What the JSON kernel "xor" makes of a line (its default key 0x5a).
inline std::string xor_of(std::string s) {
  for (char& c : s) c = char(std::uint8_t(c) ^ 0x5a);
  return s;
}

/// The lines, each followed by '\n'.
inline std::string joined(const std::vector<std::string>& lines) {
  std::string s;
  for (const auto& l : lines) s += l + "\n";
  return s;
}

inline std::string text_of(const std::string& path) {
  auto b = file_bytes(path);
  return std::string(b.begin(), b.end());
}

inline void write_text(const std::string& path, const std::string& text) { write_bytes(path, text.data(), text.size()); }

inline io::batching batch_mode(io::batching::when w) {
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
inline const io::record_layout pair_layout = io::record_layout::of<float, std::int32_t>(shape::d1(3));
constexpr std::size_t pair_bytes = 24;

/// `n` such records, every value plus `plus`.
inline std::vector<unsigned char> pair_records(std::size_t n, int plus) {
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

inline std::uint64_t fnv_of(const std::vector<unsigned char>& b) {
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
inline piped_run run_piped(graph& g, const std::string& text, io::batching b) {
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
inline run_stats run_lines_files(graph& g, const std::string& in, const std::string& out, io::batching b = {}) {
  auto f = g.run(io::read_lines_file(in, b), io::write_lines_file(out));
  f.get();
  return f.stats();
}

/// A graph file run with every sink verified against its sequential reference.
struct verified_run {
  verify_report verify;
  run_stats stats;
};
inline verified_run run_verified(const std::string& doc) {
  auto f = graph_file::parse(doc, "inline.json");
  auto sched = f.make_scheduler(2);
  graph g = f.make_graph(f.options(sched.get()));
  std::vector<std::pair<std::string, std::shared_ptr<io::checksum_result>>> sums;
  auto rep = std::make_shared<verify_report>();
  auto run = g.run(f.make_sources(), verifying_sinks(f, f.make_sinks(sums), rep));
  run.get();
  return {*rep, run.stats()};
}

inline json_error json_refusal(const std::string& doc) {
  try {
    graph_file::parse(doc, "inline.json");
  } catch (const json_error& e) {
    return e;
  }
  FAIL("the document was accepted: " << doc);
  throw;  // unreachable
}

/// A tree document: a file of lines through `tree` (JSON) into a file of lines.
inline std::string lines_doc(const std::string& in, const std::string& tree, const std::string& batch,
                      const std::string& out) {
  return R"({"sinew": 1, "name": "lines",
    "source": {"type": "file", "path": ")" + in + R"(", "format": "lines")" + batch + R"(},
    "graph": )" + tree + R"(,
    "sink": {"type": "file", "path": ")" + out + R"(", "format": "lines"}})";
}

}  // namespace sinew_records_test
