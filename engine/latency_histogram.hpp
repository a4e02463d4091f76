#pragma once
// Internal: the histogram behind run_stats::latency.
#include <atomic>
#include <cstdint>

#include <sinew/engine/graph.hpp>

namespace sinew::detail {

/// Unit latencies in fixed log buckets (8 per power of two: within 12.5%),
/// lock-free: one relaxed add and two relaxed low/high-water updates per
/// timed unit.
///
/// \code
/// latency_histogram h;
/// h.add(1500);                         // ns
/// latency_stats s = h.read();          // s.samples == 1, s.p50_ns == s.max_ns == 1500
/// \endcode
struct latency_histogram {
  static constexpr unsigned sub_bits = 3, buckets = (64 - sub_bits + 1) << sub_bits;
  std::atomic<std::uint64_t> count[buckets] = {};
  std::atomic<std::uint64_t> min{UINT64_MAX}, max{0};  // of the samples: they bound the buckets in use
  static unsigned bucket(std::uint64_t v) noexcept;
  static std::uint64_t upper(unsigned b) noexcept;  // largest value of bucket b
  void add(std::uint64_t v) noexcept;
  /// No sample, as new. No add() may run meanwhile (a run clears it when reset).
  void clear() noexcept;
  /// Percentiles: the smallest bucket bound with that share of the samples
  /// at or below it, capped at the maximum.
  latency_stats read() const;
};

}  // namespace sinew::detail
