// sinew::io PPM directories (docs/io.md).
#include <catch2/catch.hpp>

#include "test_io_common.hpp"

using namespace sinew;
using namespace sinew_io_test;
using workloads::rgba8;

namespace {
struct invert {
  void operator()(rgba8& p) const {
    p.r = std::uint8_t(255 - p.r);
    p.g = std::uint8_t(255 - p.g);
    p.b = std::uint8_t(255 - p.b);
  }
};
void write_text(const std::string& path, const std::string& s) { write_bytes(path, s.data(), s.size()); }
}  // namespace

TEST_CASE("io PPM directories round trip", "[io]") {
  temp_dir d;
  io::generator_options o = gen(io::record_layout::of<rgba8>(shape::d2(12, 20)), 3);
  graph g(map<invert>());
  g.run(io::generator(o), io::write_ppm_dir(d.file("out/frames"), "img")).get();
  for (const char* n : {"img_000000.ppm", "img_000001.ppm", "img_000002.ppm"})
    CHECK(std::filesystem::exists(d.path / "out/frames" / n));
  CHECK(file_bytes(d.file("out/frames/img_000000.ppm")).size() == std::string("P6\n20 12\n255\n").size() + 12 * 20 * 3);

  std::vector<array<rgba8, 2>> back;
  auto src = io::read_ppm_dir(d.file("out/frames"));
  CHECK(src.impl().size_hint() == 3u);
  graph(map<invert>()).run(src, for_each([&](const work_unit& u) {
    auto v = u.input<rgba8, 2>(0);
    array<rgba8, 2> a(u.shape());
    std::copy(v.data(), v.data() + u.count(), a.data());
    back.push_back(std::move(a));
  })).get();
  REQUIRE(back.size() == 3);
  for (std::uint64_t s = 0; s < 3; ++s) {
    auto want = workloads::make_image(12, 20, workloads::hash64(o.seed, s));
    REQUIRE(back[s].shape() == want.shape());
    bool same = true;
    for (std::size_t i = 0; i < want.size(); ++i) {
      rgba8 w = want.data()[i];
      w.a = 255;  // PPM has no alpha
      same &= back[s].data()[i] == w;
    }
    CHECK(same);
  }
}

TEST_CASE("io PPM reading: P3 and P6 with comments, sorted by name", "[io]") {
  temp_dir d;
  write_text(d.file("b.ppm"), "P3\n# a comment\n2 1 255\n255 0 0   0 255 7\n");
  write_text(d.file("a.PPM"), std::string("P6 #c\n1 1\n255\n") + char(1) + char(2) + char(3));
  write_text(d.file("notes.txt"), "not an image");
  auto b = io::read_ppm(d.file("b.ppm"));
  REQUIRE(b.shape() == shape::d2(1, 2));
  CHECK(b(0, 0) == rgba8{255, 0, 0, 255});
  CHECK(b(0, 1) == rgba8{0, 255, 7, 255});
  std::vector<std::size_t> cols;
  graph(map<invert>()).run(io::read_ppm_dir(d.path.string()), for_each([&](const work_unit& u) {
    cols.push_back(u.shape().ext[1]);
  })).get();
  CHECK(cols == std::vector<std::size_t>{1, 2});  // a.PPM, then b.ppm
}

TEST_CASE("io bad PPM files are errors naming the file and the problem", "[io]") {
  temp_dir d;
  auto bad = [&](const std::string& content, const std::string& what) {
    write_text(d.file("x.ppm"), content);
    CHECK_THROWS_WITH(io::read_ppm(d.file("x.ppm")), Catch::Contains(d.file("x.ppm")) && Catch::Contains(what));
  };
  bad("P5\n1 1\n255\n\x01", "does not start with P6 or P3");
  bad("P6\n2 2\n65535\n", "maxval 65535");
  bad("P6\n2 2\n255\n\x01\x02", "truncated");
  bad("P6\nx 2\n255\n", "bad width");
  bad("P6\n0 2\n255\n", "empty image");
  bad("P3\n1 1\n255\n1 2 300\n", "exceeds the maxval");
  bad("P6\n4", "ends before the height");

  // In a directory: the good image before the bad one is delivered first.
  temp_dir dir;
  write_text(dir.file("0.ppm"), std::string("P6\n1 1\n255\n") + "abc");
  write_text(dir.file("1.ppm"), "P6\n1 1\n255\n");
  std::size_t units = 0;
  auto f = graph(map<invert>()).run(io::read_ppm_dir(dir.path.string()), for_each([&](const work_unit&) { units++; }));
  CHECK_THROWS_WITH(f.get(), Catch::Contains(dir.file("1.ppm")) && Catch::Contains("truncated"));
  CHECK(units == 1);
}

TEST_CASE("io write_ppm_dir refuses units that are not images", "[io]") {
  temp_dir d;
  io::generator_options o = gen(io::record_layout::of<float>(shape::d1(16)), 1);
  graph g(map<keep<float>>());
  // 4-byte elements pass the type check, but a 1-D unit is not an image.
  CHECK_THROWS_WITH(g.run(io::generator(o), io::write_ppm_dir(d.file("o"))).get(),
                    Catch::Contains("not a 2-D image") && Catch::Contains(d.file("o")));
  o.layout = io::record_layout::of<double>(shape::d2(2, 2));
  CHECK_THROWS_WITH(graph(map<keep<double, 2>>()).run(io::generator(o), io::write_ppm_dir(d.file("o"))),
                    Catch::Contains("4-byte"));
}
