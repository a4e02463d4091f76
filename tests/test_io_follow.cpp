// Followed files (io/follow.hpp): growth, rotation, truncation, a file that
// appears later, the idle timeout, stop, and the graph-file fields.
#include <catch2/catch.hpp>


#include <cstdio>
#include <fstream>
#include <mutex>
#include <string>
#include <vector>

#include "test_io_common.hpp"

using namespace sinew;
using namespace sinew_io_test;

namespace {

void append(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary | std::ios::app);
  out << text;
}

// Collects the lines a graph delivers, one unit per line (for_each sees units as items).
struct line_log {
  std::mutex m;
  std::vector<std::string> lines;
  sink make() {
    return for_each([this](const work_unit& u) {
      auto v = u.input<std::uint8_t>(0);
      std::lock_guard<std::mutex> lk(m);
      lines.emplace_back(reinterpret_cast<const char*>(v.data()), u.in().count());
    });
  }
  std::size_t size() {
    std::lock_guard<std::mutex> lk(m);
    return lines.size();
  }
};

}  // namespace

TEST_CASE("io a followed file delivers lines as it grows and across a rotation and a truncation", "[io][tsan]") {
  temp_dir d;
  const std::string path = d.file("app.log");
  append(path, "a1\na2\n");
  line_log log;
  graph g(map<keep<std::uint8_t>>());
  auto f = g.run(io::follow_lines_file(path), log.make());
  REQUIRE(eventually([&] { return log.size() == 2; }));
  append(path, "b1\nb2\nb3\n");  // growth
  REQUIRE(eventually([&] { return log.size() == 5; }));
  std::filesystem::rename(path, path + ".1");  // rotation: the old file's last lines first
  append(path + ".1", "c1\n");
  append(path, "d1 after the rotation\n");
  REQUIRE(eventually([&] { return log.size() == 7; }));
  // Truncation, then fewer bytes than were read (a file that regrows past
  // that before the source looks again is not seen to shrink: see follow.hpp).
  { std::ofstream trunc(path, std::ios::binary | std::ios::trunc); }
  append(path, "e1\n");
  REQUIRE(eventually([&] { return log.size() == 8; }));
  CHECK_FALSE(f.wait_for(std::chrono::milliseconds(50)));  // the stream does not end by itself
  f.stop();
  f.get();
  CHECK(log.lines == std::vector<std::string>{"a1", "a2", "b1", "b2", "b3", "c1", "d1 after the rotation", "e1"});
  CHECK(f.stats().units_in == 8);
  CHECK(f.stats().units_out == 8);
}

TEST_CASE("io a followed file that does not exist yet is waited for, and from_end skips what a file held", "[io][tsan]") {
  temp_dir d;
  const std::string path = d.file("later.log");
  line_log log;
  graph g(map<keep<std::uint8_t>>());
  io::follow_options o;
  o.idle_timeout = std::chrono::milliseconds(1500);
  auto f = g.run(io::follow_lines_file(path, o), log.make());
  std::this_thread::sleep_for(std::chrono::milliseconds(30));
  append(path, "x\ny\n");
  f.get();  // ends 1.5 s after the last byte
  CHECK(log.lines == std::vector<std::string>{"x", "y"});

  line_log tail;
  o.from_end = true;
  o.idle_timeout = std::chrono::milliseconds(300);
  auto t = g.run(io::follow_lines_file(path, o), tail.make());
  std::this_thread::sleep_for(std::chrono::milliseconds(30));
  append(path, "z\n");
  t.get();
  CHECK(tail.lines == std::vector<std::string>{"z"});

  CHECK_THROWS_WITH(io::follow_lines_file(d.file("no-such-dir/x.log")), Catch::Contains("no-such-dir") && Catch::Contains("does not exist"));
  CHECK_THROWS_WITH(io::follow_lines_file(d.path.string()), Catch::Contains("is a directory"));
}

TEST_CASE("io a followed binary file batches records, and a record cut at the idle timeout is an error after the whole ones", "[io]") {
  temp_dir d;
  const std::string path = d.file("samples.bin");
  std::vector<float> rec(3 * 4);
  for (std::size_t i = 0; i < rec.size(); ++i) rec[i] = float(i);
  write_bytes(path, rec.data(), rec.size() * 4);
  io::follow_options o;
  o.idle_timeout = std::chrono::milliseconds(400);
  const std::string out = d.file("out.bin");
  graph g(map<bump<float>>());
  auto f = g.run(io::follow_file(path, io::record_layout::of<float>(shape::d1(4)), o), io::write_file(out));
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  std::ofstream(path, std::ios::binary | std::ios::app).write(reinterpret_cast<const char*>(rec.data()), 4 * 4 + 6);
  try {
    f.get();
    FAIL("a record cut by the idle timeout was accepted");
  } catch (const sinew::error& e) {
    CHECK_THAT(e.what(), Catch::Contains("follow_file '" + path + "'") && Catch::Contains("byte offset 64") &&
                             Catch::Contains("6 of 16 bytes"));
  }
  const auto bytes = file_bytes(out);
  REQUIRE(bytes.size() == 4 * 16);
  std::vector<float> got(16);
  std::memcpy(got.data(), bytes.data(), bytes.size());
  for (std::size_t i = 0; i < 16; ++i) CHECK(got[i] == float(i % 12) + 1);
  CHECK(f.stats().records_in == 4);
  CHECK(f.stats().units_in < 4);  // the first three records came as one batch
}

TEST_CASE("graph files: a followed file source, and its fields checked at their pointers", "[json]") {
  temp_dir d;
  const std::string path = d.file("in.log");
  append(path, "one\ntwo\n");
  const std::string out = d.file("out.log");
  auto doc = [&](const std::string& extra) {
    return R"({"sinew": 1, "name": "t", "source": {"type": "file", "format": "lines", "path": ")" + path + "\"" + extra +
           R"(}, "graph": {"map": "xor", "args": {"key": 0}}, "sink": {"type": "file", "format": "lines", "path": ")" + out +
           "\"}}";
  };
  auto f = sinew::graph_file::parse(doc(R"(, "follow": true, "idle_timeout": 0.3)"), "inline.json");
  CHECK_FALSE(f.replayable());
  CHECK_FALSE(f.unit_count());
  auto g = f.make_graph({});
  auto r = g.run(f.make_source(), io::write_lines_file(out));
  std::this_thread::sleep_for(std::chrono::milliseconds(30));
  append(path, "three\n");
  r.get();
  const auto bytes = file_bytes(out);
  CHECK(std::string(bytes.begin(), bytes.end()) == "one\ntwo\nthree\n");

  auto bad = [&](const std::string& extra) { return load_error_text(doc(extra)); };
  CHECK_THAT(bad(R"(, "idle_timeout": 1)"), Catch::StartsWith("/source/idle_timeout") && Catch::Contains("\"follow\": true"));
  CHECK_THAT(bad(R"(, "follow": true, "idle_timeout": -1)"), Catch::StartsWith("/source/idle_timeout"));
  CHECK_THAT(bad(R"(, "follow": true, "from": "middle")"), Catch::StartsWith("/source/from"));
  CHECK_THAT(bad(R"(, "follow": 1)"), Catch::StartsWith("/source/follow"));
}
