// distributed(): without an MPI transport (one process) a distributed farm
// or map computes what the node it wraps computes; bad uses fail when the
// graph is built. Across ranks: tests/cli/mpi.sh.
#include <catch2/catch.hpp>

#include <sinew/distributed/distributed.hpp>
#include <sinew/sinew.hpp>

#include <vector>

namespace {
struct add_one {
  void operator()(float x, float* y) const { *y = x + 1; }
};
struct rows_sum {  // per chunk: reads its row only
  void operator()(sinew::chunk c, sinew::in<float, 2> x, sinew::out<float, 2> y) const {
    for (std::size_t r = c.begin; r < c.end; ++r)
      for (std::size_t j = 0; j < x.extent(1); ++j) y(r, j) = x(r, j) * 2 + float(r);
  }
};
struct sq {
  void operator()(float x, float* y) const { *y = x * x; }
};
}  // namespace

TEST_CASE("distributed farm and map run locally without a transport", "[runtime][distributed]") {
  REQUIRE(sinew::detail::active_transport() == nullptr);
  std::vector<sinew::array<float>> in, out_plain, out_dist;
  for (int k = 0; k < 40; ++k) {
    sinew::array<float> a(1000);
    for (std::size_t i = 0; i < a.size(); ++i) a[i] = float(k * 1000 + int(i));
    in.push_back(std::move(a));
  }
  auto tree = [](bool d) {
    sinew::node f = sinew::farm(sinew::pipeline(sinew::map<add_one>(), sinew::map<sq>()), 3);
    sinew::node m = sinew::map<add_one>();
    return sinew::pipeline(d ? sinew::distributed(f) : f, d ? sinew::distributed(m) : m);
  };
  sinew::graph plain(tree(false)), dist(tree(true));
  plain.run(sinew::from(in), sinew::into(out_plain)).get();
  auto f = dist.run(sinew::from(in), sinew::into(out_dist));
  f.get();
  REQUIRE(out_dist.size() == in.size());
  for (std::size_t k = 0; k < in.size(); ++k)
    for (std::size_t i = 0; i < in[k].size(); ++i) REQUIRE(out_dist[k][i] == out_plain[k][i]);  // same order
  CHECK(f.stats().units_out == in.size());
  CHECK(sinew::is_distributed(sinew::distributed(sinew::map<sq>())));
  CHECK_FALSE(sinew::is_distributed(sinew::map<sq>()));
}

TEST_CASE("distributed: 2-D per-chunk map, registry, bad uses", "[runtime][distributed]") {
  const auto s = sinew::shape::d2(64, 32);
  sinew::array<float, 2> x(s), y(s), z(s);
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = float(i % 7);
  sinew::graph a(sinew::map<rows_sum>()), b(sinew::distributed(sinew::map<rows_sum>().named("rows")));
  a.run(sinew::from_arrays(x), sinew::into_arrays(y)).get();
  b.run(sinew::from_arrays(x), sinew::into_arrays(z)).get();
  CHECK(y == z);
  CHECK(z(3, 1) == x(3, 1) * 2 + 3);
  // Serving ranks find the compiled subtree by its node path.
  auto e = sinew::detail::find_dist("rows");
  CHECK(e.rows);
  CHECK(e.where == "rows");
  CHECK_THROWS_WITH(sinew::detail::find_dist("no/such/node"), Catch::Contains("no distributed node 'no/such/node'"));

  CHECK_THROWS_WITH(sinew::distributed(sinew::pipeline(sinew::map<sq>(), sinew::map<sq>())),
                    Catch::Contains("only a farm or a map can be distributed"));
  CHECK_THROWS_WITH(sinew::distributed(sinew::map<sq>(), {.in_flight = 0}), Catch::Contains("in_flight"));
  CHECK_THROWS_WITH(sinew::graph(sinew::distributed(sinew::map_reduce(sq{}, std::plus<float>{}))),
                    Catch::Contains("distributed"));
}
