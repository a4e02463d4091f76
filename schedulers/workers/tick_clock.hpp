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
//   w.busy += workers::ticks() - t0;        // ... stats: rate.to_ns(w.busy)
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

// The counter's reading and rate, taken once per statistics snapshot and
// used for each of its rows: a clock read may cost a trap to the hypervisor
// on a VM, and a snapshot has a row per worker.
//
//   const tick_rate rate = tick_rate::now();
//   for (auto& w : workers) row.busy_ns = rate.to_ns(w.busy + (w.spell ? rate.at - w.spell : 0));
struct tick_rate {
  std::uint64_t at = 0;          // ticks() when taken
  std::uint64_t dt = 0, dn = 0;  // ticks and ns since the origin; 0: ticks are ns
  static tick_rate now() noexcept {
#if defined(__x86_64__)
    const tick_origin& o = ticks_origin();
    const std::uint64_t t = ticks();
    return {t, t - o.ticks, now_ns() - o.ns};
#else
    return {ticks(), 0, 0};
#endif
  }
  std::uint64_t to_ns(std::uint64_t t) const noexcept {
    if (dt == 0 || dn == 0) return t;
    return std::uint64_t((unsigned __int128)t * dn / dt);
  }
};

}  // namespace sinew::detail::workers
