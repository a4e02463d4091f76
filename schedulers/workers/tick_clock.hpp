#pragma once
// The busy-time clock of the schedulers' statistics, read at the ends of a
// busy spell (steal, deal) or around a timed task (tbb). On x86-64 it is
// the time-stamp counter (constant-rate on the CPUs this runs on; one
// `rdtsc`, half the cost of a steady_clock read, a vDSO call); elsewhere
// steady_clock. Differences are converted to nanoseconds when read, at the
// rate the counter ran against steady_clock since the process started.
//
//   const std::uint64_t t0 = workers::ticks();
//   run(t);
//   w.busy += workers::ticks() - t0;        // ... stats: workers::ticks_to_ns(w.busy)
#include <cstdint>

#include <sinew/detail/clock.hpp>

#if defined(__x86_64__)
#include <x86intrin.h>
#endif

namespace sinew::detail::workers {

inline std::uint64_t ticks() noexcept {
#if defined(__x86_64__)
  return __rdtsc();
#else
  return now_ns();
#endif
}

// The (ticks, ns) pair the rate is measured from, taken when the library
// is loaded.
struct tick_origin {
  std::uint64_t ticks, ns;
};
inline const tick_origin& ticks_origin() noexcept {
  static const tick_origin o{ticks(), now_ns()};
  return o;
}
inline const tick_origin& ticks_anchor = ticks_origin();

inline std::uint64_t ticks_to_ns(std::uint64_t t) noexcept {
#if defined(__x86_64__)
  const tick_origin& o = ticks_origin();
  const std::uint64_t dt = ticks() - o.ticks, dn = now_ns() - o.ns;
  if (dt == 0 || dn == 0) return t;
  return std::uint64_t((unsigned __int128)t * dn / dt);
#else
  return t;
#endif
}

}  // namespace sinew::detail::workers
