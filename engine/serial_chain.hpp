#pragma once
// Internal: serial stages joined one to the next, which run together on one
// worker while that costs less than handing units between cores
// (docs/runtime.md, "Activation").
#include <atomic>
#include <cstdint>
#include <memory>
#include <vector>

#include <sinew/detail/scalable_new.hpp>

namespace sinew::detail {

struct stage_rt;

/// A source, serial stages and a sink, each the only producer of the next
/// (no farm, junction or async stage among them). While the sum of their
/// costs per unit stays below what the slowest one plus a hand-off between
/// cores costs, a member's leave() runs its producer on the same worker
/// once the chain's next stage has run there, instead of waking it as a
/// task another worker may take: the units then go through every stage in
/// the cache of the core that made them.
///
/// \code
/// auto chains = serial_chain::find(stages);   // at the start of a run
/// if (st.chain && st.chain->together()) { /* run the producer here later */ }
/// \endcode
struct serial_chain : scalable_new {
  std::vector<stage_rt*> members;  // in the order units pass
  /// Whether the members run together now (from their measured costs; true
  /// until they are measured).
  bool together() noexcept;
  /// As found, for the graph's next run: no cost seen yet.
  void restart() noexcept;
  /// Links the chains of `stages` (each stage_rt::chain set; chains of one
  /// stage are not made).
  static std::vector<std::unique_ptr<serial_chain>> find(const std::vector<stage_rt*>& stages);

 private:
  explicit serial_chain(std::vector<stage_rt*> m);
  /// Per member, the lowest cost per unit its activations showed lately: it
  /// follows a lower cost at once and a higher one by an eighth per look,
  /// so that an activation preempted for milliseconds, or one that ran
  /// while the chain was split (its units crossing cores), does not keep
  /// the chain split.
  std::unique_ptr<std::atomic<std::uint32_t>[]> floor_;
  /// Looks so far: the first few keep the chain together whatever the
  /// costs, while the first activations pay for cold caches and pools.
  std::atomic<std::uint32_t> looks_{0};
  std::atomic<bool> together_{true};
};

}  // namespace sinew::detail
