#pragma once
// Helpers shared by the sinew::io tests (tests/test_io*.cpp).
#include <sinew/io.hpp>
#include <sinew/json.hpp>
#include <sinew/sinew.hpp>

#include <fcntl.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <optional>
#include <string>
#include <thread>
#include <vector>

namespace sinew_io_test {

/// A fresh directory under /tmp, removed with its contents at scope exit.
struct temp_dir {
  std::filesystem::path path;
  temp_dir() {
    char t[] = "/tmp/sinew-io-XXXXXX";
    path = ::mkdtemp(t);
  }
  ~temp_dir() {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
  std::string file(const std::string& name) const { return (path / name).string(); }
};

/// No-op in-place leaf: units pass through a real graph stage unchanged.
template <class T, unsigned R = 1>
struct keep {
  void operator()(sinew::chunk, sinew::inout<T, R>) const {}
};

/// Adds one in place.
template <class T>
struct bump {
  void operator()(T& x) const { x = T(x + 1); }
};

inline std::vector<unsigned char> file_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::vector<unsigned char>(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

inline void write_bytes(const std::string& path, const void* p, std::size_t n) {
  std::ofstream out(path, std::ios::binary);
  out.write(static_cast<const char*>(p), std::streamsize(n));
}

/// Writes all of [p, p+n) to `fd`.
inline bool write_all(int fd, const void* p, std::size_t n) {
  const char* c = static_cast<const char*>(p);
  while (n) {
    ssize_t r = ::write(fd, c, n);
    if (r <= 0) return false;
    c += r;
    n -= std::size_t(r);
  }
  return true;
}

/// Reads `fd` to EOF.
inline std::vector<unsigned char> read_all(int fd) {
  std::vector<unsigned char> v;
  char buf[65536];
  for (;;) {
    ssize_t r = ::read(fd, buf, sizeof buf);
    if (r <= 0) break;
    v.insert(v.end(), buf, buf + r);
  }
  return v;
}

/// Waits (up to 20 s, generous for loaded machines) until `pred()` holds.
template <class P>
bool eventually(P pred) {
  auto end = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (!pred()) {
    if (std::chrono::steady_clock::now() > end) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  return true;
}

/// Generator options for `count` units of layout `l` (random pattern).
inline sinew::io::generator_options gen(sinew::io::record_layout l, std::optional<std::uint64_t> count) {
  sinew::io::generator_options o;
  o.layout = std::move(l);
  o.count = count;
  return o;
}

/// Checksum of the generator's stream, computed through a trivial graph.
template <class T, unsigned R = 1>
sinew::io::checksum_result reference(const sinew::io::generator_options& o) {
  auto r = std::make_shared<sinew::io::checksum_result>();
  sinew::graph g(sinew::map<keep<T, R>>());
  g.run(sinew::io::generator(o), sinew::io::checksum(r)).get();
  return *r;
}

/// "<JSON pointer> <message>" of the error loading graph-file text `doc`
/// makes, or "accepted".
inline std::string load_error_text(const std::string& doc) {
  try {
    sinew::graph_file::parse(doc, "inline.json");
  } catch (const sinew::json_error& e) {
    return std::string(e.pointer()) + " " + e.what();
  }
  return "accepted";
}

}  // namespace sinew_io_test
