// Units of different shapes in one layer: buffers with shapes of their own,
// zips and joins of branches whose units differ in shape, per-chunk and
// group leaves that read them, and the leaves that refuse them.
#include <catch2/catch.hpp>

#include <cstdint>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include <sinew/io.hpp>
#include <sinew/skeletons/group_kernel.hpp>
#include <sinew/sinew.hpp>

#include "test_common.hpp"

using namespace sinew;

namespace {

const char* const policies[] = {"tbb", "steal", "deal"};
constexpr std::size_t rows = 6, cols = 10;

int pixel(std::uint64_t seq, std::size_t r, std::size_t c) { return int(seq * 1000 + r * cols + c); }

/// Images of rows x cols ints, unit k's pixel (r, c) = pixel(k, r, c).
source images(std::size_t n) {
  return generate([n](unit_builder& b) {
    if (b.seq() == n) return false;
    b.set_shape(shape::d2(rows, cols));
    auto v = b.add<int, 2>();
    for (std::size_t r = 0; r < rows; ++r)
      for (std::size_t c = 0; c < cols; ++c) v(r, c) = pixel(b.seq(), r, c);
    return true;
  });
}

/// A group kernel whose output has another shape: the sum of each row.
struct RowTotals {
  range global_range(const shape& in) const { return range1d{in.ext[0]}; }
  shape output_shape(const shape& in, const range&) const { return shape::d1(in.ext[0]); }
  void operator()(group& g, in<int, 2> img, out<int> tot) const {
    g.each([&](const item& it) {
      if (!it.in_range()) return;
      int s = 0;
      for (std::size_t c = 0; c < img.cols(); ++c) s += img(it.global_id(0), c);
      tot[it.global_id(0)] = s;
    });
  }
};

struct twice {
  void operator()(int x, int* y) const { *y = 2 * x; }
};

/// Per chunk over a zip of an image and its row totals: y = 2x * cols - total.
struct centre {
  void operator()(chunk c, in<int, 2> img, in<int> tot, out<int, 2> y) const {
    for (std::size_t r = c.begin; r < c.end; ++r)
      for (std::size_t x = 0; x < img.cols(); ++x) y(r, x) = img(r, x) * int(img.cols()) - 2 * tot[r];
  }
};

/// The same with the inputs the other way round: the unit has the totals' shape.
struct centre_swapped {
  void operator()(chunk c, in<int> tot, in<int, 2> img, out<int> y) const {
    for (std::size_t r = c.begin; r < c.end; ++r) y[r] = img(r, 0) * int(img.cols()) - 2 * tot[r];
  }
};

int row_total(std::uint64_t seq, std::size_t r) {
  int s = 0;
  for (std::size_t c = 0; c < cols; ++c) s += pixel(seq, r, c);
  return s;
}

/// image -> {twice, row totals} -> zip -> (the zip's unit through `tail`) -> "out".
dag diamond(node tail, bool totals_first) {
  dag d;
  auto in = d.source("img");
  auto a = d.add("twice", farm(map<twice>(), 2), in);
  auto t = d.add("totals", group_kernel<RowTotals>(range1d{2}), in);
  auto z = totals_first ? d.zip("both", {t, a}) : d.zip("both", {a, t});
  d.sink("out", d.add("tail", std::move(tail), z));
  return d;
}

}  // namespace

TEST_CASE("layer buffers keep shapes of their own through copies", "[dag][shapes]") {
  auto img = buffer_pool::global().acquire<int>(rows * cols);
  auto tot = buffer_pool::global().acquire<int>(rows);
  layer l(shape::d2(rows, cols), {img});
  CHECK(l.uniform());
  l.add(img, shape::d2(rows, cols));  // the layer's shape: not its own
  CHECK(l.uniform());
  l.add(tot, shape::d1(rows));
  CHECK_FALSE(l.uniform());
  CHECK(l.shape_of(0) == shape::d2(rows, cols));
  CHECK(l.shape_of(1) == shape::d2(rows, cols));
  CHECK(l.shape_of(2) == shape::d1(rows));
  CHECK(l.get<int>(2).size() == rows);
  CHECK(l.get<int, 2>(0).size() == rows * cols);

  layer c = l;  // a broadcast copies layers
  CHECK_FALSE(c.uniform());
  CHECK(c.shape_of(2) == shape::d1(rows));
  l.clear();
  CHECK(c.shape_of(2) == shape::d1(rows));
  CHECK(l.uniform());
  l.add(tot);
  CHECK(l.shape_of(0) == l.shape());

  // A buffer shorter than its own shape is refused where units are checked.
  detail::type_list t{false, {&elem_type_of<int>(), &elem_type_of<int>()}};
  layer s(shape::d1(4), {buffer_pool::global().acquire<int>(4)});
  s.add(buffer_pool::global().acquire<int>(3), shape::d1(8));
  CHECK_THROWS_WITH(detail::check_layer(s, t, "input"), Catch::Contains("its shape [8] has 8"));
}

TEST_CASE("dag zip of branches of different shapes on every policy", "[dag][shapes][tsan]") {
  const std::size_t n = 120;
  for (bool totals_first : {false, true}) {
    for (const char* p : policies) {
      INFO(p << (totals_first ? " totals first" : " image first"));
      auto s = make_scheduler(p, {.threads = 2, .pin = false});
      node tail = totals_first ? farm(map<centre_swapped>(), 2) : farm(map<centre>(), 2);
      graph g(diamond(std::move(tail), totals_first), {.scheduler = s.get()});
      std::size_t bad = 0, got = 0;
      auto f = g.run({{"img", images(n)}}, {{"out", for_each([&](const work_unit& u) {
                                                 ++got;
                                                 const std::size_t len = totals_first ? rows : rows * cols;
                                                 if (u.in().size() != 1 || u.count() != len) return void(++bad);
                                                 auto y = u.input<int>(0);
                                                 for (std::size_t r = 0; r < rows; ++r)
                                                   for (std::size_t c = 0; c < (totals_first ? 1 : cols); ++c) {
                                                     const int want = 2 * pixel(u.seq(), r, c) * int(cols) -
                                                                      2 * row_total(u.seq(), r);
                                                     if (y[r * (totals_first ? 1 : cols) + c] != want) ++bad;
                                                   }
                                               })}});
      f.get();
      CHECK(got == n);
      CHECK(bad == 0);
      CHECK(f.stats().units_alive == 0);
    }
  }
}

TEST_CASE("dag zip of different shapes reaches a sink with each buffer's shape", "[dag][shapes]") {
  auto s = make_scheduler("steal", {.threads = 2, .pin = false});
  dag d;
  auto in = d.source("img");
  d.sink("out", d.zip("both", {in, d.add("totals", group_kernel<RowTotals>(range1d{2}), in)}));
  graph g(d, {.scheduler = s.get()});
  std::size_t bad = 0;
  auto sum = std::make_shared<io::checksum_result>();
  auto f = g.run({{"img", images(20)}}, {{"out", for_each([&](const work_unit& u) {
                                             const layer& l = u.in();
                                             if (l.size() != 2 || !(l.shape_of(0) == shape::d2(rows, cols)) ||
                                                 !(l.shape_of(1) == shape::d1(rows)) || l.uniform())
                                               return void(++bad);
                                             auto t = u.input<int>(1);
                                             if (t.size() != rows) return void(++bad);
                                             for (std::size_t r = 0; r < rows; ++r)
                                               if (t[r] != row_total(u.seq(), r)) ++bad;
                                           })}});
  f.get();
  CHECK(bad == 0);
  // The checksum sink hashes each buffer's own elements: the totals' rows,
  // not the image's rows x cols (which would read past them).
  auto f2 = g.run({{"img", images(3)}}, {{"out", io::checksum(sum)}});
  f2.get();
  std::uint64_t want = workloads::fnv1a_offset;
  for (std::uint64_t k = 0; k < 3; ++k) {
    std::vector<int> img(rows * cols), tot(rows);
    for (std::size_t r = 0; r < rows; ++r) {
      tot[r] = row_total(k, r);
      for (std::size_t c = 0; c < cols; ++c) img[r * cols + c] = pixel(k, r, c);
    }
    want = workloads::checksum(img.data(), img.size() * sizeof(int), want);
    want = workloads::checksum(tot.data(), tot.size() * sizeof(int), want);
  }
  CHECK(sum->value == want);

  // A binary file sink writes the same bytes: each unit its image, then its totals.
  const std::string path = "dag_shapes_out.bin";
  g.run({{"img", images(3)}}, {{"out", io::write_file(path)}}).get();
  std::ifstream file(path, std::ios::binary);
  std::vector<char> bytes((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
  std::remove(path.c_str());
  REQUIRE(bytes.size() == 3 * (rows * cols + rows) * sizeof(int));
  CHECK(workloads::checksum(bytes.data(), bytes.size()) == want);
}

TEST_CASE("dag a per-element map after a zip of different shapes fails naming the stage", "[dag][shapes][tsan]") {
  for (const char* p : policies) {
    INFO(p);
    auto s = make_scheduler(p, {.threads = 2, .pin = false});
    struct add {
      void operator()(int x, int y, int* z) const { *z = x + y; }
    };
    graph g(diamond(map<add>(), false), {.scheduler = s.get()});
    auto f = g.run({{"img", images(10)}}, {{"out", discard()}});
    try {
      f.get();
      FAIL("no error");
    } catch (const node_error& e) {
      CHECK(e.path() == "tail");
      CHECK_THAT(e.what(), Catch::Contains("input buffer 1 has shape [6]") &&
                               Catch::Contains("the unit [6x10]") && Catch::Contains("a per-element map"));
    }
    CHECK(f.stats().units_alive == 0);
  }
}

TEST_CASE("dag join of units of different shapes by key", "[dag][shapes][tsan]") {
  for (const char* p : policies) {
    INFO(p);
    auto s = make_scheduler(p, {.threads = 2, .pin = false});
    dag d;
    auto in = d.source("img");
    auto seq_key = [](const work_unit& u) { return u.seq(); };
    auto first_pixel = [](const work_unit& u) { return std::uint64_t(u.input<int, 2>(0)(0, 0) / 1000); };
    d.sink("out", d.join("j", {d.add("totals", group_kernel<RowTotals>(range1d{2}), in), in},
                         {seq_key, first_pixel}));
    graph g(d, {.scheduler = s.get()});
    std::size_t bad = 0, got = 0;
    auto f = g.run({{"img", images(50)}}, {{"out", for_each([&](const work_unit& u) {
                                              ++got;
                                              const layer& l = u.in();
                                              if (l.size() != 2 || !(l.shape() == shape::d1(rows)) ||
                                                  !(l.shape_of(1) == shape::d2(rows, cols)))
                                                return void(++bad);
                                              auto img = u.input<int, 2>(1);
                                              auto t = u.input<int>(0);
                                              const std::uint64_t k = std::uint64_t(img(0, 0) / 1000);
                                              for (std::size_t r = 0; r < rows; ++r)
                                                if (t[r] != row_total(k, r) || img(r, cols - 1) != pixel(k, r, cols - 1))
                                                  ++bad;
                                            })}});
    f.get();
    CHECK(got == 50);
    CHECK(bad == 0);
  }
}
