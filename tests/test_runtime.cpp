// Skeleton semantics, alone and nested, against sequential results:
// maps, pipelines, farms, loops, reductions, ordering, describe(), into()
// and a leaf's view of its scheduler. A run's control (end of stream,
// errors, cancellation) is in test_run_control.cpp, activation in
// test_activation.cpp.
#include <catch2/catch.hpp>

#include <atomic>
#include <thread>

#include "test_common.hpp"

using namespace sinew;
using namespace sinew_test;

namespace {

// Runs `tree` over generated items and compares each output with `ref`.
template <class Ref>
void check_against(const node& tree, std::size_t n, std::size_t len, Ref ref, graph_options o = {}) {
  auto in = make_items(n, len);
  const auto original = in;  // in-place leaves update the caller's input
  std::vector<std::vector<int>> out;
  graph g(tree, o);
  auto f = g.run(in, out);
  f.get();
  REQUIRE(out.size() == n);
  std::size_t bad = 0;
  for (std::size_t k = 0; k < n; ++k) {
    std::vector<int> want = original[k];
    ref(want);
    if (out[k] != want) ++bad;
  }
  CHECK(bad == 0);
  auto st = f.stats();
  CHECK(st.units_in == n);
  CHECK(st.units_out == n);
  CHECK(st.units_alive == 0);
}

}  // namespace

TEST_CASE("map alone, per element and in place", "[runtime][tsan]") {
  check_against(map<inc>(), big_units, 4, [](auto& v) { for (auto& x : v) x += 1; });
  check_against(map<square_in_place>(), 1000, 5000, [](auto& v) { for (auto& x : v) x = sq_mod(x); });
}

TEST_CASE("map splits a large unit over the workers", "[runtime]") {
  std::vector<int> x(1 << 20);
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = int(i % 1000);
  std::vector<int> y;
  tbb_scheduler s(2);
  graph g(map<twice>(), {.scheduler = &s});
  g.run(from_arrays(x), into_arrays(y)).get();
  REQUIRE(y.size() == x.size());
  bool ok = true;
  for (std::size_t i = 0; i < x.size(); ++i) ok &= y[i] == 2 * x[i];
  CHECK(ok);
  CHECK(s.stats().parallel_fors >= 1);
}

namespace {
// One byte threshold as a noexcept leaf (its loop runs under `omp simd`) and
// as a leaf that may throw (the plain loop); an index leaf beside them.
struct threshold_nothrow {
  std::uint8_t lo;
  void operator()(std::uint8_t v, std::uint8_t* o) const noexcept { *o = v < lo ? 0 : v; }
};
struct threshold_may_throw {
  std::uint8_t lo;
  void operator()(std::uint8_t v, std::uint8_t* o) const { *o = v < lo ? 0 : v; }
};
struct index_nothrow {
  void operator()(sinew::index i, std::uint32_t v, std::uint32_t* o) const noexcept { *o = v + std::uint32_t(i.linear); }
};
}  // namespace

TEST_CASE("noexcept per-element leaves (the simd loop) and throwing ones agree on every element", "[runtime]") {
  static_assert(noexcept(threshold_nothrow{1}(std::uint8_t{}, nullptr)));
  static_assert(!noexcept(threshold_may_throw{1}(std::uint8_t{}, nullptr)));
  tbb_scheduler s(2);
  // Sizes off the vector widths, split over the workers and not.
  for (std::size_t n : {std::size_t(1), std::size_t(31), std::size_t(1000), std::size_t(1 << 20) + 13}) {
    std::vector<std::uint8_t> x(n), a, b;
    for (std::size_t i = 0; i < n; ++i) x[i] = std::uint8_t(i * 37 + i / 251);
    graph ga(map<threshold_nothrow>({100}), {.scheduler = &s});
    graph gb(map<threshold_may_throw>({100}), {.scheduler = &s});
    ga.run(from_arrays(x), into_arrays(a)).get();
    gb.run(from_arrays(x), into_arrays(b)).get();
    REQUIRE(a.size() == n);
    std::size_t bad = 0;
    for (std::size_t i = 0; i < n; ++i) bad += a[i] != (x[i] < 100 ? 0 : x[i]);
    CHECK(bad == 0);
    CHECK(a == b);
    std::vector<std::uint32_t> u(n, 5), w;
    graph gi(map<index_nothrow>(), {.scheduler = &s});
    gi.run(from_arrays(u), into_arrays(w)).get();
    REQUIRE(w.size() == n);
    bad = 0;
    for (std::size_t i = 0; i < n; ++i) bad += w[i] != 5 + std::uint32_t(i);
    CHECK(bad == 0);
  }
}

TEST_CASE("a leaf with several inputs and outputs", "[runtime]") {
  std::vector<int> a(10000), b(10000), s, d;
  for (int i = 0; i < 10000; ++i) a[std::size_t(i)] = i, b[std::size_t(i)] = 3 * i;
  graph g(map<add_pair>());
  g.run(from_arrays(a, b), into_arrays(s, d)).get();
  REQUIRE(s.size() == 10000);
  CHECK(s[9999] == 4 * 9999);
  CHECK(d[9999] == -2 * 9999);
}

TEST_CASE("pipeline of three stages", "[runtime][tsan]") {
  check_against(pipeline(map<inc>(), map<twice>(), map<inc>()), big_units, 3,
                [](auto& v) { for (auto& x : v) x = 2 * (x + 1) + 1; });
}

TEST_CASE("pipeline mixing in-place and producing stages", "[runtime]") {
  check_against(pipeline(map<square_in_place>(), map<inc>(), map<square_in_place>(), map<twice>(),
                         map<square_in_place>()),
                20000, 3, [](auto& v) {
                  for (auto& x : v) {
                    x = sq_mod(x);
                    x = x + 1;
                    x = sq_mod(x);
                    x = 2 * x;
                    x = sq_mod(x);
                  }
                });
}

TEST_CASE("pipeline of farms of maps", "[runtime][tsan]") {
  check_against(pipeline(farm(map<inc>(), 3), farm(pipeline(map<twice>(), map<inc>()), 2), map<inc>()),
                big_units, 2, [](auto& v) { for (auto& x : v) x = 2 * (x + 1) + 1 + 1; });
}

TEST_CASE("farm inside farm", "[runtime][tsan]") {
  check_against(farm(farm(map<inc>(), 2), 3), big_units, 2, [](auto& v) { for (auto& x : v) x += 1; });
  check_against(farm(pipeline(map<inc>(), farm(map<twice>(), 2, farm_order::unordered)), 2), 20000, 2,
                [](auto& v) { for (auto& x : v) x = 2 * (x + 1); });
}

TEST_CASE("loop inside pipeline", "[runtime][tsan]") {
  auto until = [](const layer& l, std::size_t) { return l.get<const int>(0)[0] >= 1000; };
  check_against(pipeline(map<inc>(), loop(map<twice>(), until), map<inc>()), big_units, 2, [](auto& v) {
    int first = v[0] + 1;
    int iters = 0;
    do {
      first *= 2;
      ++iters;
    } while (first < 1000);
    for (auto& x : v) {
      x += 1;
      for (int i = 0; i < iters; ++i) x *= 2;
      x += 1;
    }
  });
}

TEST_CASE("for loop repeats a fixed number of times, in place and not", "[runtime]") {
  check_against(for_loop(map<inc>(), 5), 20000, 3, [](auto& v) { for (auto& x : v) x += 5; });
  check_against(for_loop(map<square_in_place>(), 3), 20000, 3, [](auto& v) {
    for (auto& x : v)
      for (int i = 0; i < 3; ++i) x = sq_mod(x);
  });
  check_against(for_loop(pipeline(map<inc>(), map<twice>()), 3), 2000, 3, [](auto& v) {
    for (auto& x : v)
      for (int i = 0; i < 3; ++i) x = 2 * (x + 1);
  });
}

TEST_CASE("map_reduce and reduce", "[runtime]") {
  struct sq {
    void operator()(int x, long long* y) const { *y = (long long)x * x; }
  };
  std::vector<int> x(100003);
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = int(i % 977) - 400;
  long long want = 0;
  for (int v : x) want += (long long)v * v;
  std::vector<long long> r;
  graph g(map_reduce(sq{}, std::plus<long long>{}, {.chunk = 1000}));
  g.run(from_arrays(x), into_arrays(r)).get();
  REQUIRE(r.size() == 1);
  CHECK(r[0] == want);

  std::vector<int> s;
  graph h(reduce<int>([](int a, int b) { return std::max(a, b); }));
  h.run(from_arrays(x), into_arrays(s)).get();
  CHECK(s[0] == 576);
}

TEST_CASE("map_reduce inside loop, over many units", "[runtime][tsan]") {
  // Iteration 1 reduces the unit to its sum; later ones reduce one element.
  struct half {
    void operator()(int x, int* y) const { *y = x / 2; }
  };
  auto body = map_reduce(half{}, std::plus<int>{});
  auto in = make_items(big_units, 4);
  std::vector<std::vector<int>> out;
  graph g(pipeline(map<inc>(), for_loop(body, 3)));
  g.run(in, out).get();
  REQUIRE(out.size() == in.size());
  std::size_t bad = 0;
  for (std::size_t k = 0; k < in.size(); ++k) {
    int s = 0;
    for (int x : in[k]) s += (x + 1) / 2;
    s /= 2;
    s /= 2;
    if (out[k].size() != 1 || out[k][0] != s) ++bad;
  }
  CHECK(bad == 0);
}

TEST_CASE("ordered farms keep order and unordered ones deliver everything", "[runtime][tsan]") {
  struct jitter {
    void operator()(sinew::index i, int x, int* y) const {
      // Uneven cost so replicas finish out of order.
      volatile int s = 0;
      for (int k = 0; k < (x % 7) * 300; ++k) s = s + k;
      *y = x + int(i.linear) * 0;
    }
  };
  for (auto order : {farm_order::ordered, farm_order::unordered}) {
    std::vector<std::uint64_t> seen;
    auto items = make_items(20000, 1);
    graph g(pipeline(farm(map<jitter>(), 4, order), map<inc>()));
    g.run(from(items), for_each([&](const work_unit& u) { seen.push_back(u.seq()); })).get();
    REQUIRE(seen.size() == items.size());
    bool in_order = std::is_sorted(seen.begin(), seen.end());
    std::sort(seen.begin(), seen.end());
    bool all = std::adjacent_find(seen.begin(), seen.end()) == seen.end() && seen.back() == items.size() - 1;
    CHECK(all);
    if (order == farm_order::ordered) CHECK(in_order);
  }
}

TEST_CASE("describe lists stages with concurrency and ordering", "[runtime]") {
  graph g(pipeline(map<inc>(), farm(pipeline(map<twice>(), map<square_in_place>()), 3), map<inc>()));
  std::string d = g.describe();
  CHECK(g.stage_count() == 4);
  CHECK(d.find("pipeline[1]/farm/pipeline[0]/map<twice> x3") != std::string::npos);
  CHECK(d.find("enter-ordered(0)") != std::string::npos);
  CHECK(d.find("pipeline[1]/farm/pipeline[1]/map<square_in_place> x3 in-place exit-ordered(0)") != std::string::npos);
}

TEST_CASE("ordered farm of a pipeline with uneven work and small queues", "[runtime][tsan]") {
  struct uneven {
    void operator()(int x, int* y) const {
      if (x % 101 == 0) std::this_thread::sleep_for(std::chrono::milliseconds(2));
      *y = x + 1;
    }
  };
  for (std::size_t cap : {1, 2, 3}) {
    std::vector<std::uint64_t> seen;
    auto items = make_items(1000, 1);
    graph g(farm(pipeline(map<uneven>(), map<inc>(), map<uneven>()), 4), {.capacity = cap});
    auto f = g.run(from(items), for_each([&](const work_unit& u) { seen.push_back(u.seq()); }));
    REQUIRE(f.wait_for(std::chrono::seconds(60)));
    f.get();
    CHECK(seen.size() == items.size());
    CHECK(std::is_sorted(seen.begin(), seen.end()));
  }
}

TEST_CASE("a tree's first stage makes its result layer when the sink supplies no memory", "[runtime][tsan]") {
  // into() supplies the caller's memory (the source adds the result layer);
  // for_each does not, and the tree's first stage (a farm's replicas) adds
  // it below the layers its pipelines insert. Both give the same results.
  const node trees[] = {
      pipeline(map<square_in_place>(), map<inc>(), map<square_in_place>(), map<twice>()),
      pipeline(farm(map<inc>(), 3), farm(pipeline(map<twice>(), map<inc>()), 2), map<inc>()),
      farm(pipeline(map<inc>(), farm(map<twice>(), 2, farm_order::unordered)), 2),
      farm(map<square_in_place>(), 2),
      // The result (one int) is smaller than the intermediate layer (three).
      farm(pipeline(map<inc>(), reduce<int>(std::plus<int>{})), 2),
      pipeline(map<twice>(), farm(pipeline(map<inc>(), reduce<int>(std::plus<int>{})), 3)),
  };
  for (const node& t : trees) {
    auto in = make_items(2000, 3);
    const auto original = in;
    std::vector<std::vector<int>> want;
    graph g(t);
    g.run(in, want).get();
    in = original;
    std::vector<std::vector<int>> got(in.size());
    std::atomic<std::size_t> layers_seen{0};
    auto f = g.run(from(in), for_each([&](const work_unit& u) {
                     if (u.depth() != 1) ++layers_seen;
                     auto v = u.input<int>(0);
                     got[u.seq()].assign(v.begin(), v.end());
                   }));
    f.get();
    INFO(g.describe());
    CHECK(layers_seen.load() == 0);
    CHECK(got == want);
    CHECK(f.stats().units_alive == 0);
  }
}

TEST_CASE("into() writes the results into the items already in the vector", "[runtime]") {
  // A second run into the same vector allocates nothing: each item of the
  // right size keeps its memory and receives the result in place.
  std::vector<array<int>> in, out;
  for (int k = 0; k < 6; ++k) {
    array<int> a(std::size_t(5000));
    for (std::size_t i = 0; i < a.size(); ++i) a[i] = int(i) + k;
    in.push_back(std::move(a));
  }
  graph g(pipeline(map<inc>(), map<twice>()));
  g.run(in, out).get();
  REQUIRE(out.size() == in.size());
  std::vector<const int*> where;
  for (auto& o : out) where.push_back(o.data());
  out.resize(4);                                // shorter: grown back to 6
  out[1] = array<int>(std::size_t(10));         // wrong size: replaced
  where[4] = where[5] = where[1] = nullptr;     // (new items)
  g.run(in, out).get();
  REQUIRE(out.size() == in.size());
  for (std::size_t k = 0; k < out.size(); ++k) {
    INFO("item " << k);
    if (where[k]) CHECK(out[k].data() == where[k]);
    REQUIRE(out[k].size() == in[k].size());
    for (std::size_t i = 0; i < out[k].size(); ++i)
      if (out[k][i] != 2 * (in[k][i] + 1)) FAIL("wrong result at " << i);
  }
}

namespace {

// A leaf that records what it sees through its stage's scheduler
// (exec_args::sched): name, workers, topology, task groups and loops.
struct sched_probe final : detail::node_impl {
  struct seen {
    std::mutex m;
    std::string name;
    unsigned workers = 0;
    const topology* topo = nullptr;
    std::atomic<int> tasks{0}, blocks{0};
  };
  std::shared_ptr<seen> s = std::make_shared<seen>();

  std::string label() const override { return "probe"; }
  detail::type_list input_types() const override { return {true, {}}; }
  detail::type_list output_types() const override { return {true, {}}; }
  bool in_place() const override { return true; }
  std::shared_ptr<detail::executable> compile_inline(const std::string&) const override {
    struct exec final : detail::executable {
      std::shared_ptr<seen> s;
      void execute(detail::exec_args& a) override {
        scheduler& sc = *a.sched;
        {
          std::lock_guard<std::mutex> lk(s->m);
          s->name = sc.name();
          s->workers = sc.concurrency();
          s->topo = sc.numa_topology();
        }
        task_group tg(sc);  // submit_counted and wait_counted
        for (int i = 0; i < 4; ++i) tg.run([p = s] { p->tasks.fetch_add(1); });
        tg.wait();
        sc.parallel_for_at({}, 8, 1, [p = s](std::size_t b, std::size_t e) { p->blocks.fetch_add(int(e - b)); });
      }
    };
    auto e = std::make_shared<exec>();
    e->s = s;
    return e;
  }
};

}  // namespace

TEST_CASE("a leaf's scheduler forwards to the run's and counts its loops' chunks", "[runtime][tsan]") {
  steal_scheduler real(topology::synthetic(2, 1));
  auto probe = std::make_shared<sched_probe>();
  auto seen = probe->s;
  graph g(pipeline(map<inc>(), node(probe)), {.scheduler = &real});
  auto in = make_items(5, 4);
  std::vector<std::vector<int>> out;
  auto f = g.run(in, out);
  f.get();
  CHECK(seen->name == std::string(real.name()));
  CHECK(seen->workers == real.concurrency());
  CHECK(seen->topo == real.numa_topology());
  CHECK(seen->tasks.load() == 4 * 5);
  CHECK(seen->blocks.load() == 8 * 5);
  const auto st = f.stats();
  CHECK(st.stages[1].chunks >= 5);  // parallel_for_at's blocks are counted as the stage's chunks
  CHECK(st.units_out == 5);
}
