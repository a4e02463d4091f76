// sinew::io: generator, binary record files, checksum sink (docs/io.md).
#include <catch2/catch.hpp>

#include <atomic>
#include <cstring>

#include "test_io_common.hpp"

using namespace sinew;
using namespace sinew_io_test;
using workloads::rgba8;

namespace {

// generator -> checksum, generator -> write_file, read_file -> checksum:
// the same value three ways, and the file's own FNV-1a equals it.
template <class T, unsigned R = 1>
void round_trip(io::generator_options o, const temp_dir& d) {
  INFO("layout " << o.layout.str() << ", pattern " << o.pattern);
  const auto ref = reference<T, R>(o);
  REQUIRE(ref.units == *o.count);
  REQUIRE(ref.bytes == *o.count * o.layout.bytes());
  graph g(map<keep<T, R>>());
  const std::string path = d.file("records.bin");
  g.run(io::generator(o), io::write_file(path)).get();
  auto bytes = file_bytes(path);
  REQUIRE(bytes.size() == ref.bytes);
  CHECK(workloads::checksum(bytes.data(), bytes.size()) == ref.value);
  auto src = io::read_file(path, o.layout);
  CHECK(src.impl().size_hint() == o.count);
  auto back = std::make_shared<io::checksum_result>();
  g.run(src, io::checksum(back)).get();
  CHECK(back->value == ref.value);
  CHECK(back->units == ref.units);
  CHECK(back->bytes == ref.bytes);
}

}  // namespace

TEST_CASE("io round trip through binary files for every element type", "[io]") {
  temp_dir d;
  for (const char* pattern : {"random", "ramp", "constant"}) {
    io::generator_options o;
    o.pattern = pattern;
    o.value = 7;
    o.count = 13;
    o.layout = io::record_layout::of<float>(shape::d1(1000));
    round_trip<float>(o, d);
    o.layout = io::record_layout::of<double, std::int32_t, std::uint8_t>(shape::d1(33));
    round_trip<double>(o, d);
    o.layout = io::record_layout::of<std::int8_t, std::int16_t, std::uint16_t, std::uint32_t>(shape::d2(3, 5));
    round_trip<std::int8_t, 2>(o, d);
    o.layout = io::record_layout::of<std::int64_t, std::uint64_t>(shape::d3(2, 3, 4));
    round_trip<std::int64_t, 3>(o, d);
    o.layout = io::record_layout::of<rgba8>(shape::d2(17, 9));
    round_trip<rgba8, 2>(o, d);
  }
  // 1 MiB records: larger than the reader's buffer, read straight into the unit.
  io::generator_options big = gen(io::record_layout::of<float>(shape::d1(std::size_t(1) << 18)), 3);
  big.pattern = "ramp";
  round_trip<float>(big, d);
}

TEST_CASE("io generator patterns are typed and deterministic", "[io]") {
  io::generator_options o = gen(io::record_layout::of<float, std::int32_t, rgba8>(shape::d1(300)), 4);
  o.pattern = "ramp";
  graph g(map<keep<float>>());
  std::vector<std::vector<float>> f;
  std::vector<std::vector<std::int32_t>> n;
  std::vector<std::vector<rgba8>> c;
  auto collect = for_each([&](const work_unit& u) {
    auto a = u.input<float>(0);
    auto b = u.input<std::int32_t>(1);
    auto p = u.input<rgba8>(2);
    f.emplace_back(a.data(), a.data() + 300);
    n.emplace_back(b.data(), b.data() + 300);
    c.emplace_back(p.data(), p.data() + 300);
  });
  g.run(io::generator(o), collect).get();
  REQUIRE(f.size() == 4);
  bool ok = true;
  for (std::size_t s = 0; s < 4; ++s)
    for (std::size_t i = 0; i < 300; ++i) {
      unsigned v = unsigned((s + i) % 251);
      ok &= f[s][i] == float(v) && n[s][i] == std::int32_t(v) && c[s][i] == rgba8{std::uint8_t(v), std::uint8_t(v), std::uint8_t(v), 255};
    }
  CHECK(ok);

  f.clear(), n.clear(), c.clear();
  o.pattern = "constant";
  o.value = 300;  // rgba8 clamps to 255
  g.run(io::generator(o), collect).get();
  REQUIRE(f.size() == 4);
  CHECK(f[3][299] == 300.0f);
  CHECK(n[2][7] == 300);
  CHECK(c[0][0] == rgba8{255, 255, 255, 255});

  // random: values in [0, 1) for floats, same data for the same seed, other data for another seed.
  o.pattern = "random";
  o.layout = io::record_layout::of<float>(shape::d1(4096));
  float lo = 1, hi = 0;
  graph(map<keep<float>>()).run(io::generator(o), for_each([&](const work_unit& u) {
    for (float x : u.input<float>(0)) lo = std::min(lo, x), hi = std::max(hi, x);
  })).get();
  CHECK(lo >= 0.0f);
  CHECK(lo < 0.01f);
  CHECK(hi < 1.0f);
  CHECK(hi > 0.99f);
  auto a = reference<float>(o);
  auto b = reference<float>(o);
  o.seed = 43;
  auto other = reference<float>(o);
  CHECK(a.value == b.value);
  CHECK(a.value != other.value);
}

TEST_CASE("io random rgba8 images are the image workload's images", "[io]") {
  io::generator_options o = gen(io::record_layout::of<rgba8>(shape::d2(24, 40)), 3);
  o.seed = 9;
  std::uint64_t want = workloads::fnv1a_offset;
  for (std::uint64_t s = 0; s < 3; ++s)
    want = workloads::checksum_of(workloads::make_image(24, 40, workloads::hash64(9, s)), want);
  CHECK(reference<rgba8, 2>(o).value == want);
}

TEST_CASE("io generator options are checked", "[io]") {
  io::generator_options o;
  CHECK_THROWS_WITH(io::generator(o), Catch::Contains("no buffers"));
  o.layout = io::record_layout::of<float>(shape::d1(0));
  CHECK_THROWS_WITH(io::generator(o), Catch::Contains("zero-byte"));
  o.layout = io::record_layout::of<float>(shape::d1(8));
  o.pattern = "sawtooth";
  CHECK_THROWS_WITH(io::generator(o), Catch::Contains("unknown pattern 'sawtooth'"));
  o.pattern = "constant";
  o.layout = io::record_layout::of<std::uint8_t>(shape::d1(8));
  o.value = 256;
  CHECK_THROWS_WITH(io::generator(o), Catch::Contains("does not fit buffer 0 of type u8"));
  o.value = 1;
  o.rate = -1;
  CHECK_THROWS_WITH(io::generator(o), Catch::Contains("rate"));
}

TEST_CASE("io checksum follows sequence order through an unordered farm", "[io][tsan]") {
  struct jitter {
    void operator()(float& x) const {
      if (int(x) % 7 == 0) std::this_thread::sleep_for(std::chrono::microseconds(300));
      x += 1;
    }
  };
  io::generator_options o;
  o.layout = io::record_layout::of<float>(shape::d1(16));
  o.pattern = "ramp";
  o.count = 300;
  graph g(farm(map<jitter>(), 4, farm_order::unordered), {.capacity = 8});
  auto r = std::make_shared<io::checksum_result>();
  auto f = g.run(io::generator(o), io::checksum(r));
  f.get();
  // Sequential reference: the ramp plus one, checksummed unit by unit.
  std::uint64_t h = workloads::fnv1a_offset;
  std::vector<float> v(16);
  for (std::size_t s = 0; s < 300; ++s) {
    for (std::size_t i = 0; i < 16; ++i) v[i] = float((s + i) % 251) + 1;
    layer l(shape::d1(16), {buffer_ref::wrap(v.data(), v.size())});
    h = io::checksum_of_layer(l, h);
  }
  CHECK(r->value == h);
  CHECK(r->units == 300);
  CHECK(r->bytes == 300 * 16 * 4);
  CHECK(f.stats().units_out == 300);
}

TEST_CASE("io a truncated file delivers the whole records then fails naming the offset", "[io]") {
  temp_dir d;
  const std::string path = d.file("short.bin");
  std::vector<float> data(10 * 16 + 3);  // 10 records of 16 floats and 12 bytes more
  for (std::size_t i = 0; i < data.size(); ++i) data[i] = float(i);
  write_bytes(path, data.data(), data.size() * 4);
  auto src = io::read_file(path, io::record_layout::of<float>(shape::d1(16)));
  CHECK(src.impl().size_hint() == 10u);
  std::vector<float> firsts;
  graph g(map<keep<float>>());
  auto f = g.run(src, for_each([&](const work_unit& u) { firsts.push_back(u.input<float>(0)[0]); }));
  try {
    f.get();
    FAIL("the run should fail");
  } catch (const node_error& e) {
    std::string m = e.what();
    CHECK_THAT(m, Catch::Contains(path));
    CHECK_THAT(m, Catch::Contains("byte offset 640"));
    CHECK_THAT(m, Catch::Contains("12 of 64 bytes"));
  }
  REQUIRE(firsts.size() == 10);
  for (std::size_t k = 0; k < 10; ++k) CHECK(firsts[k] == float(16 * k));
}

TEST_CASE("io a file cut short while it is read fails naming the path and the offset", "[io]") {
  temp_dir d;
  const std::string path = d.file("shrinking.bin");
  const std::size_t per = 4096;                  // floats per record: 16 KiB records
  std::vector<float> data(400 * per, 1.0f);      // 400 records, far more than the queues hold
  write_bytes(path, data.data(), data.size() * 4);
  auto src = io::read_file(path, io::record_layout::of<float>(shape::d1(per)));
  REQUIRE(src.impl().size_hint() == 400u);
  graph_options opt;
  opt.capacity = 2;  // the source is at most a few records ahead of the sink
  std::uint64_t seen = 0;
  SECTION("at a record boundary") {
    graph g(map<keep<float>>(), opt);
    auto f = g.run(src, for_each([&](const work_unit&) {
      if (seen++ == 0) REQUIRE(::truncate(path.c_str(), off_t(100 * per * 4)) == 0);
    }));
    CHECK_THROWS_WITH(f.get(), Catch::Contains(path) && Catch::Contains("shrank while it was read") &&
                                   Catch::Contains("held 400 records") && Catch::Contains("ends after 100") &&
                                   Catch::Contains("byte offset " + std::to_string(100 * per * 4)));
    CHECK(seen == 100);  // every whole record before the cut was delivered
  }
  SECTION("inside a record") {
    graph g(map<keep<float>>(), opt);
    auto f = g.run(src, for_each([&](const work_unit&) {
      if (seen++ == 0) REQUIRE(::truncate(path.c_str(), off_t(100 * per * 4 + 10)) == 0);
    }));
    CHECK_THROWS_WITH(f.get(), Catch::Contains(path) && Catch::Contains("inside record 100") &&
                                   Catch::Contains("10 of " + std::to_string(per * 4) + " bytes"));
    CHECK(seen == 100);
  }
}

TEST_CASE("io missing files and bad layouts are errors naming the path", "[io]") {
  auto l = io::record_layout::of<float>(shape::d1(4));
  CHECK_THROWS_WITH(io::read_file("/nonexistent/sinew/in.bin", l),
                    Catch::Contains("/nonexistent/sinew/in.bin") && Catch::Contains("No such file"));
  CHECK_THROWS_WITH(io::read_file("/tmp", l), Catch::Contains("'/tmp'") && Catch::Contains("directory"));
  CHECK_THROWS_WITH(io::read_file("/dev/null", io::record_layout{}), Catch::Contains("no buffers"));
  CHECK_THROWS_WITH(io::read_ppm_dir("/nonexistent/sinew/frames"), Catch::Contains("/nonexistent/sinew/frames"));
  io::generator_options o = gen(l, 1);
  graph g(map<keep<float>>());
  CHECK_THROWS_WITH(g.run(io::generator(o), io::write_file("/nonexistent/sinew/out.bin")).get(),
                    Catch::Contains("/nonexistent/sinew/out.bin") && Catch::Contains("cannot open"));
}

TEST_CASE("io write_file to a full disk fails naming the path", "[io]") {
  io::generator_options o = gen(io::record_layout::of<float>(shape::d1(1 << 16)), 8);
  graph g(map<keep<float>>());
  CHECK_THROWS_WITH(g.run(io::generator(o), io::write_file("/dev/full")).get(),
                    Catch::Contains("write_file '/dev/full'") && Catch::Contains("No space left"));
}

TEST_CASE("io an unbounded generator stops with every accepted unit delivered", "[io][tsan]") {
  io::generator_options o;
  o.layout = io::record_layout::of<float>(shape::d1(64));
  graph g(pipeline(map<bump<float>>(), farm(map<bump<float>>(), 3)));
  auto r = std::make_shared<io::checksum_result>();
  auto f = g.run(io::generator(o), io::checksum(r));
  REQUIRE(eventually([&] { return f.stats().units_out >= 500; }));
  f.stop();
  f.get();
  auto st = f.stats();
  CHECK(st.units_in == st.units_out);
  CHECK(r->units == st.units_out);
  CHECK(r->bytes == st.units_out * 64 * 4);
}

TEST_CASE("io the rate option paces the generator", "[io]") {
  io::generator_options o;
  o.layout = io::record_layout::of<std::uint8_t>(shape::d1(8));
  o.rate = 200;  // units per second
  auto src = io::generator(o);
  CHECK(src.impl().blocking());
  graph g(map<keep<std::uint8_t>>());
  std::atomic<std::uint64_t> got{0};
  auto f = g.run(src, for_each([&](const work_unit&) { got++; }));
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  std::uint64_t seen = got.load();
  f.stop();  // interrupts the sleep between units
  f.get();
  // About 100 units are due in 0.5 s; an unpaced generator would make
  // millions. The bounds leave room for a loaded machine.
  CHECK(seen >= 5);
  CHECK(seen <= 400);
  CHECK(f.stats().units_in == f.stats().units_out);

  o.count = 20;
  o.rate = 2000;
  auto r = std::make_shared<io::checksum_result>();
  g.run(io::generator(o), io::checksum(r)).get();
  CHECK(r->units == 20);
}
