// queue_handoff: one producer thread hands 10^7 pointers (quick 10^6) to one
// consumer thread through a bounded queue of 1024 slots: Sinew's
// spsc_queue and bounded_queue (the queues on every graph edge, sleeping on
// futexes when empty or full) vs tbb::concurrent_bounded_queue with the same
// capacity. Metric: ns per item (wall time of the whole hand-off, both
// threads' creation included, over the item count); lower is better. The
// consumer checks that it got every pointer, in order.
//
// RATIO (target <= 1.0, lower is better):
//   queue_handoff_spsc     spsc_queue ns/item / tbb::concurrent_bounded_queue ns/item
//   queue_handoff_bounded  bounded_queue ns/item / tbb::concurrent_bounded_queue ns/item
#include <cstdint>
#include <string>
#include <thread>
#include <vector>

#include <oneapi/tbb/concurrent_queue.h>
#include <sinew/engine/bounded_queue.hpp>
#include <sinew/engine/spsc_queue.hpp>

#include "bench.hpp"

namespace {

namespace sb = sinew_bench;

constexpr std::size_t kCapacity = 1024;

/// What the consumer saw: items, and the first out-of-order pointer.
struct tally {
  std::size_t items = 0;
  std::size_t first_wrong = SIZE_MAX;
};

/// Pointer number i: into a real array (never null: null is TBB's end marker below).
void** item(std::vector<void*>& base, std::size_t i) { return &base[i]; }

std::string verdict(const tally& t, std::size_t n) {
  if (t.first_wrong != SIZE_MAX) return "item " + std::to_string(t.first_wrong) + " arrived out of order or wrong";
  if (t.items != n) return "consumer got " + std::to_string(t.items) + " items, expected " + std::to_string(n);
  return {};
}

/// One hand-off through a Sinew queue (push / pop / close).
template <class Q>
tally sinew_handoff(std::vector<void*>& base, std::size_t n) {
  Q q(kCapacity);
  tally t;
  std::thread consumer([&] {
    void* p = nullptr;
    std::size_t k = 0;
    while (q.pop(p)) {
      if (p != item(base, k) && t.first_wrong == SIZE_MAX) t.first_wrong = k;
      ++k;
    }
    t.items = k;
  });
  std::thread producer([&] {
    for (std::size_t i = 0; i < n; ++i) q.push(item(base, i));
    q.close();
  });
  producer.join();
  consumer.join();
  return t;
}

/// The same through oneTBB's bounded queue; a null pointer ends the stream.
tally tbb_handoff(std::vector<void*>& base, std::size_t n) {
  tbb::concurrent_bounded_queue<void*> q;
  q.set_capacity(std::ptrdiff_t(kCapacity));
  tally t;
  std::thread consumer([&] {
    void* p = nullptr;
    std::size_t k = 0;
    for (;;) {
      q.pop(p);
      if (!p) break;
      if (p != item(base, k) && t.first_wrong == SIZE_MAX) t.first_wrong = k;
      ++k;
    }
    t.items = k;
  });
  std::thread producer([&] {
    for (std::size_t i = 0; i < n; ++i) q.push(item(base, i));
    q.push(nullptr);
  });
  producer.join();
  consumer.join();
  return t;
}

void run(sb::context& ctx) {
  const std::size_t n = ctx.smoke() ? 100'000 : ctx.quick() ? 1'000'000 : 10'000'000;
  ctx.param("items", n);
  ctx.param("capacity", kCapacity);
  std::vector<void*> base(n);  // the pointers point into this array (never null)
  auto ns_per_item = [n](double s) { return s * 1e9 / double(n); };
  tally last;
  auto variant = [&](const char* name, auto fn, const char* note) -> const sb::series& {
    return ctx.measure({.name = name,
                        .unit = "ns/item",
                        .better = sb::lower,
                        .setup = [&] { last = tally{}; },
                        .run = [&, fn] { last = fn(base, n); },
                        .to_metric = ns_per_item,
                        .check = [&] { return verdict(last, n); },
                        .note = note});
  };
  const auto& spsc = variant("sinew::spsc_queue", sinew_handoff<sinew::spsc_queue<void*>>,
                             "single-producer/single-consumer ring, futex sleep");
  const auto& mpmc = variant("sinew::bounded_queue", sinew_handoff<sinew::bounded_queue<void*>>,
                             "multi-producer/multi-consumer ring, futex sleep");
  const auto& peer = variant("tbb::concurrent_bounded_queue", tbb_handoff, "set_capacity(1024), null ends");
  if (spsc.stats.n && peer.stats.n && mpmc.stats.n) {
    ctx.ratio("queue_handoff_spsc", spsc.stats.median / peer.stats.median, 1.0, sb::lower,
              "sinew::spsc_queue ns/item / tbb::concurrent_bounded_queue ns/item (medians)");
    ctx.ratio("queue_handoff_bounded", mpmc.stats.median / peer.stats.median, 1.0, sb::lower,
              "sinew::bounded_queue ns/item / tbb::concurrent_bounded_queue ns/item (medians)");
  }
}

const sb::registrar reg("queue_handoff",
                        "1 producer, 1 consumer, 10^7 pointers (quick 10^6), capacity 1024: ns/item of Sinew's "
                        "spsc_queue and bounded_queue vs tbb::concurrent_bounded_queue",
                        run);

}  // namespace
