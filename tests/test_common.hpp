#pragma once
// Helpers shared by the engine tests.
#include <sinew/sinew.hpp>

#include <sys/resource.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <future>
#include <memory>
#include <string>
#include <thread>
#include <vector>

namespace sinew_test {

/// Runs `body` on its own thread; fails the test case (and ends the
/// process, which a hung scheduler would otherwise keep alive) when it has
/// not returned within `limit`.
template <class F>
inline void within(std::chrono::seconds limit, const std::string& what, F body) {
  auto done = std::make_shared<std::promise<void>>();
  auto f = done->get_future();
  std::thread t([done, body]() mutable {
    try {
      body();
      done->set_value();
    } catch (...) {
      done->set_exception(std::current_exception());
    }
  });
  if (f.wait_for(limit) != std::future_status::ready) {
    std::fprintf(stderr, "%s: still waiting after %lld s (deadlock)\n", what.c_str(), (long long)limit.count());
    std::fflush(stderr);
    std::_Exit(3);
  }
  t.join();
  f.get();
}

/// CPU time (user + system) used by this process so far.
inline double cpu_seconds() {
  rusage r{};
  getrusage(RUSAGE_SELF, &r);
  return double(r.ru_utime.tv_sec + r.ru_stime.tv_sec) + 1e-6 * double(r.ru_utime.tv_usec + r.ru_stime.tv_usec);
}

// Units in the large equality tests. ThreadSanitizer runs ~10x slower, so it
// uses fewer (the interleavings, not the count, are what it checks).
#if defined(__SANITIZE_THREAD__)
inline constexpr std::size_t big_units = 20'000;
#else
inline constexpr std::size_t big_units = 100'000;
#endif

struct inc {
  void operator()(int x, int* y) const { *y = x + 1; }
};
struct twice {
  void operator()(int x, int* y) const { *y = 2 * x; }
};
struct square_in_place {
  void operator()(int& x) const { x = int((long long)x * x % 1000003); }
};
struct add_pair {
  void operator()(int a, int b, int* s, int* d) const {
    *s = a + b;
    *d = a - b;
  }
};

inline int sq_mod(int x) { return int((long long)x * x % 1000003); }

/// Items 0..n-1, each `len` ints: item k holds k*len + j.
inline std::vector<std::vector<int>> make_items(std::size_t n, std::size_t len) {
  std::vector<std::vector<int>> v(n, std::vector<int>(len));
  for (std::size_t k = 0; k < n; ++k)
    for (std::size_t j = 0; j < len; ++j) v[k][j] = int((k * len + j) % 100000);
  return v;
}

}  // namespace sinew_test
