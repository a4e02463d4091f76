#include "latency_histogram.hpp"

#include <algorithm>
#include <bit>
#include <cmath>

#include "counters.hpp"

namespace sinew::detail {

unsigned latency_histogram::bucket(std::uint64_t v) noexcept {
  if (v < (2u << sub_bits)) return unsigned(v);  // exact below 16
  unsigned e = unsigned(std::bit_width(v)) - 1 - sub_bits;  // v >> e is in [8, 16)
  return ((e + 1) << sub_bits) | unsigned((v >> e) & ((1u << sub_bits) - 1));
}

std::uint64_t latency_histogram::upper(unsigned b) noexcept {
  if (b < (2u << sub_bits)) return b;
  unsigned e = (b >> sub_bits) - 1;
  std::uint64_t m = (1u << sub_bits) | (b & ((1u << sub_bits) - 1));
  return ((m + 1) << e) - 1;
}

void latency_histogram::add(std::uint64_t v) noexcept {
  count[bucket(v)].fetch_add(1, std::memory_order_relaxed);
  lower_min(min, v);
  raise_max(max, v);
}

void latency_histogram::clear() noexcept {
  // Every sample lies in [min, max], so only the buckets between theirs can
  // hold one: a run clears the line or two its samples touched, not 4 KiB.
  const std::uint64_t lo = min.load(std::memory_order_relaxed);
  if (lo == UINT64_MAX) return;  // no sample
  const unsigned top = bucket(max.load(std::memory_order_relaxed));
  for (unsigned b = bucket(lo); b <= top; ++b) count[b].store(0, std::memory_order_relaxed);
  min.store(UINT64_MAX, std::memory_order_relaxed);
  max.store(0, std::memory_order_relaxed);
}

latency_stats latency_histogram::read() const {
  latency_stats r;
  r.max_ns = max.load(std::memory_order_relaxed);
  const unsigned top = bucket(r.max_ns);  // no sample above max (see clear)
  std::uint64_t c[buckets] = {}, n = 0;
  for (unsigned b = 0; b <= top; ++b) n += c[b] = count[b].load(std::memory_order_relaxed);
  r.samples = n;
  if (n == 0) return r;
  auto pct = [&](double p) {
    std::uint64_t want = std::max<std::uint64_t>(1, std::uint64_t(std::ceil(p * double(n)))), seen = 0;
    for (unsigned b = 0; b < buckets; ++b)
      if ((seen += c[b]) >= want) return std::min(upper(b), r.max_ns);
    return r.max_ns;
  };
  r.p50_ns = pct(0.50);
  r.p90_ns = pct(0.90);
  r.p99_ns = pct(0.99);
  return r;
}

}  // namespace sinew::detail
