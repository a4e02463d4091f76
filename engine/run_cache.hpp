#pragma once
// Internal: finished runs of a graph, kept for its next runs.
#include <cstddef>
#include <mutex>

namespace sinew::detail {

struct run_state;

/// Runs of one graph that ended and were reset (run_state::park), kept so
/// that its next run builds no channel, stage, ring or unit again. Several
/// are kept because runs overlap: a worker often drops a run's last
/// reference after the caller has started the next run, which then finds
/// the cache empty. Runs at once each take one; a run given back when
/// `max_kept` are kept is deleted. A kept run holds no reference to the
/// graph (whose cache this is), nor any endpoint or source thread.
///
/// \code
/// run_state* s = cache.take();   // kept, or null: build one
/// ...                            // the run; its last reference parks it:
/// cache.give(s);
/// \endcode
class run_cache {
 public:
  static constexpr std::size_t max_kept = 4;

  run_cache() = default;
  run_cache(const run_cache&) = delete;
  run_cache& operator=(const run_cache&) = delete;
  ~run_cache();
  run_state* take() noexcept {
    std::lock_guard<std::mutex> lk(m_);  // once per run: uncontended; publishes the parked state
    return n_ ? kept_[--n_] : nullptr;
  }
  /// `s` is parked: its run ended and no thread touches it.
  void give(run_state* s) noexcept;
  std::size_t kept() const noexcept {
    std::lock_guard<std::mutex> lk(m_);
    return n_;
  }

 private:
  mutable std::mutex m_;
  run_state* kept_[max_kept] = {};  // [0, n_) are kept
  std::size_t n_ = 0;
};

}  // namespace sinew::detail
