#pragma once
/// \file delivery.hpp
/// Delivery notes: how an at-least-once source (MQTT at QoS 1) learns that a
/// unit it made has been written by every sink it reached, so that it
/// acknowledges the message only then (docs/runtime.md, "Delivery notes").
///
/// A source attaches a note to a unit (`unit_builder::set_note`). The unit
/// carries it through the graph: a broadcast's copies share it (one
/// reference each), a zip joins the notes of its parts. A sink writes the
/// unit and the note's reference is released as *written*: by the runtime
/// when `consume` returns, or by the sink itself when it takes the note
/// (`sink_impl::takes_notes`: a sink that buffers releases it once the
/// bytes are out of its hands). A unit dropped instead (the run failed or
/// was cancelled) releases it as *lost*. When the last reference goes,
/// `complete(delivered)` runs once, on that thread: delivered is true only
/// when every reference was released as written.
///
/// \code
/// struct ack final : sinew::delivery_note {
///   std::promise<bool> p;
///   void complete(bool delivered) noexcept override { p.set_value(delivered); delete this; }
/// };
/// auto* n = new ack;
/// auto done = n->p.get_future();
/// builder.set_note(sinew::note_ref(n));   // in source_impl::next
/// bool ok = done.get();                   // true once every sink wrote the unit
/// \endcode
#include <atomic>
#include <utility>

namespace sinew {

class delivery_note {
 public:
  virtual ~delivery_note() = default;
  void add_ref() noexcept { refs_.fetch_add(1, std::memory_order_relaxed); }
  /// One holder is done with the unit: its sink wrote it (`written`), or
  /// the unit was dropped. acq_rel: what every holder did before releasing
  /// happens before `complete`.
  void release(bool written) noexcept {
    if (!written) lost_.store(true, std::memory_order_relaxed);
    if (refs_.fetch_sub(1, std::memory_order_acq_rel) == 1) complete(!lost_.load(std::memory_order_relaxed));
  }

 protected:
  /// Every reference was released; runs once. The note may delete itself.
  virtual void complete(bool delivered) noexcept = 0;

 private:
  std::atomic<unsigned> refs_{1};
  std::atomic<bool> lost_{false};
};

/// A counted reference to a note (like a shared pointer). Destroyed or
/// reset while it holds one, it releases it as lost; `written()` releases it
/// as written.
class note_ref {
 public:
  note_ref() noexcept = default;
  /// Adopts the note's first reference (a new note has one).
  explicit note_ref(delivery_note* n) noexcept : n_(n) {}
  note_ref(const note_ref& o) noexcept : n_(o.n_) {
    if (n_) n_->add_ref();
  }
  note_ref(note_ref&& o) noexcept : n_(std::exchange(o.n_, nullptr)) {}
  note_ref& operator=(note_ref o) noexcept {
    std::swap(n_, o.n_);
    return *this;
  }
  ~note_ref() {
    if (n_) n_->release(false);
  }
  explicit operator bool() const noexcept { return n_ != nullptr; }
  /// The holder's sink wrote the unit.
  void written() noexcept {
    if (n_) std::exchange(n_, nullptr)->release(true);
  }
  /// One reference standing for both: written when both would be (a zip's
  /// unit carries its parts' notes).
  void join(note_ref other);

 private:
  delivery_note* n_ = nullptr;
};

}  // namespace sinew
