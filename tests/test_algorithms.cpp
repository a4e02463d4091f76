// sinew/schedulers/algorithms.hpp: invoke, reduce, scan and sort against
// their std:: serial results, on every policy with 1, 2 and 4 workers.
#include <catch2/catch.hpp>

#include <sinew/sinew.hpp>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <numeric>
#include <random>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace {

const char* const policies[] = {"tbb", "steal", "deal"};

/// Calls fn(scheduler&) for a scheduler of every policy with each worker count.
template <class F>
void for_each_scheduler(std::initializer_list<unsigned> counts, F&& fn) {
  for (const char* policy : policies)
    for (unsigned threads : counts) {
      INFO(policy << " with " << threads << " workers");
      auto s = sinew::make_scheduler(policy, {.threads = threads, .pin = false});
      fn(*s);
    }
}

std::vector<std::uint32_t> random_values(std::size_t n, std::uint32_t seed, std::uint32_t range = 0) {
  std::mt19937 g(seed);
  std::vector<std::uint32_t> v(n);
  for (auto& x : v) x = range ? g() % range : g();
  return v;
}

/// x -> a x + b (mod 2^64): composing maps is associative, not commutative.
struct affine {
  std::uint64_t a = 1, b = 0;
  bool operator==(const affine&) const = default;
};
/// f, then g.
affine then(const affine& f, const affine& g) { return {g.a * f.a, g.a * f.b + g.b}; }

std::vector<affine> random_maps(std::size_t n) {
  std::mt19937_64 g(7);
  std::vector<affine> v(n);
  for (auto& m : v) m = {g() | 1, g()};
  return v;
}

// Lengths around reduce's smallest automatic block (16384) and its grains.
const std::size_t lengths[] = {0, 1, 2, 1000, 16384, 16385, 100'003};

// Big vectors compared with CHECK((a == b)): Catch would print them whole.

}  // namespace

TEST_CASE("parallel_invoke runs every function and rethrows", "[algorithms][tsan]") {
  for_each_scheduler({1u, 2u, 4u}, [&](sinew::scheduler& s) {
    std::atomic<int> ran{0};
    sinew::parallel_invoke(s);
    sinew::parallel_invoke(s, [&] { ran += 1; });
    sinew::parallel_invoke(
        s, [&] { ran += 10; }, [&] { ran += 100; }, [&] { ran += 1000; });
    CHECK(ran.load() == 1111);

    ran = 0;
    CHECK_THROWS_WITH(sinew::parallel_invoke(
                          s, [&] { ran += 1; }, [] { throw std::runtime_error("task"); }, [&] { ran += 1; }),
                      "task");
    CHECK(ran.load() == 2);  // the others still ran
    CHECK_THROWS_WITH(sinew::parallel_invoke(
                          s, [] { throw std::runtime_error("first"); }, [] { throw std::runtime_error("last"); }),
                      "last");  // the caller's own exception wins
    CHECK_THROWS_WITH(sinew::parallel_invoke(s, [] { throw std::runtime_error("only"); }), "only");
  });
}

TEST_CASE("parallel_reduce matches the serial fold, in index order", "[algorithms][tsan]") {
  const auto v = random_values(100'003, 1, 1000);
  const auto maps = random_maps(100'003);
  for_each_scheduler({1u, 2u, 4u}, [&](sinew::scheduler& s) {
    for (std::size_t n : lengths)
      for (std::size_t grain : {1000u, 4096u, 200'000u}) {
        INFO("n = " << n << ", grain = " << grain);
        {
          const std::uint64_t want = std::accumulate(v.begin(), v.begin() + std::ptrdiff_t(n), std::uint64_t(0));
          CHECK(sinew::parallel_reduce(
                    s, n, grain, std::uint64_t(0),
                    [&](std::size_t b, std::size_t e, std::uint64_t acc) {
                      for (std::size_t i = b; i < e; ++i) acc += v[i];
                      return acc;
                    },
                    std::plus<>{}) == want);
        }
        // Non-commutative: composing maps left to right.
        const affine want_map = std::accumulate(maps.begin(), maps.begin() + std::ptrdiff_t(n), affine{}, then);
        CHECK(sinew::parallel_reduce(s, n, grain, affine{},
                                     [&](std::size_t b, std::size_t e, affine acc) {
                                       for (std::size_t i = b; i < e; ++i) acc = then(acc, maps[i]);
                                       return acc;
                                     },
                                     then, {.numa_node = 0}) == want_map);
        CHECK(sinew::parallel_reduce(s, maps.begin(), maps.begin() + std::ptrdiff_t(n), affine{3, 4}, then) ==
              std::accumulate(maps.begin(), maps.begin() + std::ptrdiff_t(n), affine{3, 4}, then));
      }
    CHECK(sinew::parallel_reduce(s, v.begin(), v.end(), std::uint64_t(5)) ==
          std::accumulate(v.begin(), v.end(), std::uint64_t(5)));

    // Strings: concatenation keeps the words in order.
    std::vector<std::string> words(5000);
    for (std::size_t i = 0; i < words.size(); ++i) words[i] = std::to_string(i) + ",";
    const std::string all = std::accumulate(words.begin(), words.end(), std::string{});
    CHECK(sinew::parallel_reduce(
              s, words.size(), 64, std::string{},
              [&](std::size_t b, std::size_t e, std::string acc) {
                for (std::size_t i = b; i < e; ++i) acc += words[i];
                return acc;
              },
              [](std::string l, const std::string& r) { return l + r; }) == all);
    CHECK(sinew::parallel_reduce(s, words.begin(), words.end(), std::string("<")) == "<" + all);
  });
}

TEST_CASE("parallel scans match std inclusive_scan and exclusive_scan, in place or not", "[algorithms][tsan]") {
  const auto v = random_values(300'007, 2, 1000);
  const auto maps = random_maps(300'007);
  for_each_scheduler({1u, 2u, 4u}, [&](sinew::scheduler& s) {
    // 300'007: long enough for the two parallel passes with 4 workers.
    for (std::size_t n :
         {std::size_t(0), std::size_t(1), std::size_t(1000), std::size_t(100'003), std::size_t(300'007)}) {
      INFO("n = " << n);
      const std::vector<std::uint64_t> x(v.begin(), v.begin() + std::ptrdiff_t(n));
      std::vector<std::uint64_t> want(n), got(n, 99);

      std::inclusive_scan(x.begin(), x.end(), want.begin());
      CHECK(sinew::parallel_inclusive_scan(s, x.begin(), x.end(), got.begin()) == got.end());
      CHECK((got == want));
      std::inclusive_scan(x.begin(), x.end(), want.begin(), std::plus<>{}, std::uint64_t(7));
      got = x;
      sinew::parallel_inclusive_scan(s, got.begin(), got.end(), got.begin(), std::plus<>{}, std::uint64_t(7));
      CHECK((got == want));

      std::exclusive_scan(x.begin(), x.end(), want.begin(), std::uint64_t(3));
      std::fill(got.begin(), got.end(), 99);
      CHECK(sinew::parallel_exclusive_scan(s, x.begin(), x.end(), got.begin(), std::uint64_t(3)) == got.end());
      CHECK((got == want));
      got = x;
      sinew::parallel_exclusive_scan(s, got.begin(), got.end(), got.begin(), std::uint64_t(3));
      CHECK((got == want));

      // Non-commutative: prefix compositions of maps, both kinds, in place.
      std::vector<affine> m(maps.begin(), maps.begin() + std::ptrdiff_t(n)), mwant(n);
      std::inclusive_scan(m.begin(), m.end(), mwant.begin(), then);
      std::vector<affine> mgot = m;
      sinew::parallel_inclusive_scan(s, mgot.begin(), mgot.end(), mgot.begin(), then);
      CHECK((mgot == mwant));
      std::exclusive_scan(m.begin(), m.end(), mwant.begin(), affine{5, 6}, then);
      mgot = m;
      sinew::parallel_exclusive_scan(s, mgot.begin(), mgot.end(), mgot.begin(), affine{5, 6}, then);
      CHECK((mgot == mwant));
    }
  });
}

TEST_CASE("parallel_sort matches std sort for every input shape and type", "[algorithms][tsan]") {
  for_each_scheduler({1u, 2u, 3u, 4u}, [&](sinew::scheduler& s) {
    for (std::size_t n : {std::size_t(0), std::size_t(1), std::size_t(1000), std::size_t(100'003)}) {
      INFO("n = " << n);
      auto r = random_values(n, 3);
      std::vector<std::vector<std::uint32_t>> inputs = {r, r, r, std::vector<std::uint32_t>(n, 42u),
                                                        random_values(n, 4, 10)};
      std::sort(inputs[1].begin(), inputs[1].end());
      std::sort(inputs[2].begin(), inputs[2].end(), std::greater<>{});
      for (auto& in : inputs) {
        auto want = in;
        std::sort(want.begin(), want.end());
        sinew::parallel_sort(s, in.begin(), in.end());
        CHECK((in == want));
      }
      std::vector<double> d(r.begin(), r.end()), dwant = d;
      std::sort(dwant.begin(), dwant.end(), std::greater<>{});
      sinew::parallel_sort(s, d.begin(), d.end(), std::greater<>{});
      CHECK((d == dwant));
      // Not trivially copyable: sorted through the buffer's objects.
      std::vector<std::pair<std::uint32_t, std::uint32_t>> p(n), pwant;
      for (std::size_t i = 0; i < n; ++i) p[i] = {r[i] % 100, std::uint32_t(i)};
      pwant = p;
      auto by_first = [](const auto& a, const auto& b) { return a.first < b.first; };
      std::stable_sort(pwant.begin(), pwant.end(), by_first);
      sinew::parallel_sort(s, p.begin(), p.end(), by_first);
      std::sort(p.begin(), p.end());  // equal keys may be in any order
      std::sort(pwant.begin(), pwant.end());
      CHECK((p == pwant));
    }
    // A type whose move is not a copy.
    std::vector<std::string> str(60'000);
    auto r = random_values(str.size(), 5);
    for (std::size_t i = 0; i < str.size(); ++i) str[i] = "key-with-a-long-prefix-" + std::to_string(r[i]);
    auto swant = str;
    std::sort(swant.begin(), swant.end());
    sinew::parallel_sort(s, str.begin(), str.end());
    CHECK((str == swant));
  });
}

TEST_CASE("algorithms rethrow what a user function threw", "[algorithms][tsan]") {
  const auto v = random_values(200'000, 6);
  for_each_scheduler({1u, 2u, 4u}, [&](sinew::scheduler& s) {
    CHECK_THROWS_WITH(sinew::parallel_reduce(
                          s, v.size(), 1000, 0,
                          [&](std::size_t b, std::size_t, int acc) {
                            if (b == 50'000) throw std::runtime_error("block");
                            return acc;
                          },
                          std::plus<>{}),
                      "block");
    auto throwing_plus = [](std::uint64_t a, std::uint64_t b) {
      if (b == 12345) throw std::runtime_error("op");
      return a + b;
    };
    std::vector<std::uint64_t> x(v.size(), 1), y(v.size());
    x[150'001] = 12345;  // not a block's first element (that one starts its fold without op)
    CHECK_THROWS_WITH(sinew::parallel_reduce(s, x.begin(), x.end(), std::uint64_t(0), throwing_plus), "op");
    CHECK_THROWS_WITH(sinew::parallel_inclusive_scan(s, x.begin(), x.end(), y.begin(), throwing_plus), "op");
    CHECK_THROWS_WITH(sinew::parallel_exclusive_scan(s, x.begin(), x.end(), y.begin(), std::uint64_t(0), throwing_plus),
                      "op");
    std::atomic<int> calls{0};
    auto w = v;
    CHECK_THROWS_WITH(sinew::parallel_sort(s, w.begin(), w.end(),
                                           [&](std::uint32_t a, std::uint32_t b) {
                                             if (calls.fetch_add(1, std::memory_order_relaxed) == 300'000)
                                               throw std::runtime_error("comp");
                                             return a < b;
                                           }),
                      "comp");
    std::vector<std::string> str(70'000);
    for (std::size_t i = 0; i < str.size(); ++i) str[i] = "string-longer-than-the-small-buffer-" + std::to_string(v[i]);
    calls = 0;
    CHECK_THROWS_WITH(sinew::parallel_sort(s, str.begin(), str.end(),
                                           [&](const std::string& a, const std::string& b) {
                                             if (calls.fetch_add(1, std::memory_order_relaxed) == 500'000)
                                               throw std::runtime_error("comp");
                                             return a < b;
                                           }),
                      "comp");
    // Still usable afterwards.
    auto ok = v;
    sinew::parallel_sort(s, ok.begin(), ok.end());
    CHECK(std::is_sorted(ok.begin(), ok.end()));
  });
}

TEST_CASE("algorithms called from inside tasks finish (nested)", "[algorithms][nested][tsan]") {
  sinew::steal_scheduler s(2);
  const auto v = random_values(150'000, 8);
  const auto want_sum = std::accumulate(v.begin(), v.end(), std::uint64_t(0));
  auto sorted = v;
  std::sort(sorted.begin(), sorted.end());
  std::vector<std::uint64_t> want_scan(v.size());
  std::inclusive_scan(v.begin(), v.end(), want_scan.begin(), std::plus<>{}, std::uint64_t(0));

  constexpr int tasks = 6;
  std::vector<int> ok(tasks, 0);
  sinew::task_group g(s);
  for (int t = 0; t < tasks; ++t)
    g.run([&, t] {
      auto w = v;
      std::vector<std::uint64_t> scan(v.size());
      std::uint64_t sum = 0;
      sinew::parallel_invoke(
          s, [&] { sinew::parallel_sort(s, w.begin(), w.end()); },
          [&] { sum = sinew::parallel_reduce(s, v.begin(), v.end(), std::uint64_t(0)); },
          [&] {
            sinew::parallel_inclusive_scan(s, v.begin(), v.end(), scan.begin(), std::plus<>{}, std::uint64_t(0));
          });
      ok[std::size_t(t)] = w == sorted && sum == want_sum && scan == want_scan;
    });
  g.wait();
  CHECK(std::count(ok.begin(), ok.end(), 1) == tasks);
}
