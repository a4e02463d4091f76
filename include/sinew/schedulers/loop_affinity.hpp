#pragma once
/// \file loop_affinity.hpp
/// Where the blocks of a repeated parallel loop ran last time. The loop's
/// owner (a map, for the successive units of a stream) keeps one and passes
/// it in the `locality_hint` of `scheduler::parallel_for_at`; a policy that
/// can then gives each worker the blocks it ran the last time, whose data
/// may still be in its core's cache, as OpenMP's static schedule does by
/// construction. No policy needs a record today: `tbb` gives every loop's
/// worker slots the same ranges, and under `steal` and `deal` any loop with an affinity and one
/// segment per worker gives segment i to worker i, while few such loops run
/// at once (docs/schedulers.md, "Locality hints"). It is a hint: blocks
/// still move to idle workers.
///
/// One loop at a time uses the record: a loop that finds it held by another
/// (a map running two units at once in a farm) runs without it. A record
/// made by one scheduler is replaced when another scheduler takes it.
///
/// \code
/// sinew::loop_affinity aff;                       // kept across the loop's runs
/// for (auto& frame : frames)
///   s.parallel_for_at({.affinity = &aff}, n, 4096, [&](std::size_t b, std::size_t e) { f(frame, b, e); });
/// \endcode
#include <atomic>
#include <memory>

namespace sinew {

class loop_affinity {
 public:
  /// A policy's record of where blocks ran.
  struct record {
    virtual ~record() = default;
  };

  loop_affinity() = default;
  /// A copy starts without a record (blocks ran nowhere yet).
  loop_affinity(const loop_affinity&) noexcept {}
  loop_affinity& operator=(const loop_affinity&) noexcept { return *this; }

  /// Holds the affinity for one loop of the scheduler `owner`: `get()` is its
  /// record of type R (made by `make()` on first use or after another
  /// scheduler's), or null when another loop holds the affinity. An owner
  /// always uses the same R.
  ///
  /// \code
  /// sinew::loop_affinity::hold<my_record> h(*hint.affinity, this, [] { return std::make_unique<my_record>(); });
  /// if (my_record* r = h.get()) use(*r); else run_without();
  /// \endcode
  template <class R>
  class hold {
   public:
    template <class Make>
    hold(loop_affinity& a, const void* owner, Make&& make) {
      // acquire: the previous holder's writes to the record happen before ours.
      if (a.busy_.exchange(true, std::memory_order_acquire)) return;
      a_ = &a;
      if (a.owner_ != owner || !a.rec_) {
        a.rec_ = make();
        a.owner_ = owner;
      }
      r_ = static_cast<R*>(a.rec_.get());
    }
    hold(const hold&) = delete;
    hold& operator=(const hold&) = delete;
    ~hold() {
      if (a_) a_->busy_.store(false, std::memory_order_release);  // publishes the record's updates
    }
    R* get() const noexcept { return r_; }

   private:
    loop_affinity* a_ = nullptr;
    R* r_ = nullptr;
  };

 private:
  std::atomic<bool> busy_{false};
  const void* owner_ = nullptr;
  std::unique_ptr<record> rec_;
};

}  // namespace sinew
