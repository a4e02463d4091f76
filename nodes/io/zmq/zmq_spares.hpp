#pragma once
// Internal to the ZeroMQ source and sink: received messages whose records
// were copied into units, kept for sinks to send their next frames in.
//
// ZeroMQ allocates a header for every frame a sink hands it (a slice of a
// unit's buffer or a copy), freed on its I/O thread. A received message
// lives in its decoder's buffer and costs no allocation to send again:
// a hand-written recv/send loop forwards it. A source gives its copied-out
// messages here a unit at a time; a sink whose frame has a spare's size
// copies the frame into it and sends that.
#include <zmq.hpp>

#include <cstddef>
#include <deque>
#include <mutex>
#include <utility>
#include <vector>

#include <sinew/detail/tsan.hpp>

namespace sinew::io::detail {

class zmq_spares {
 public:
  /// For ThreadSanitizer: libzmq (not built with it) reuses a decoder
  /// buffer once every message in it is closed, a hand-over through its own
  /// reference counts that TSan cannot see. A sink calls sent() after it
  /// wrote a spare and before it hands it to ZeroMQ, a source received()
  /// after each message it receives, so that a spare's bytes the sink wrote
  /// come before the source's reads of a message ZeroMQ later put there.
  /// Nothing in other builds (not even a look at the pool).
  static void sent() noexcept {
#if defined(__SANITIZE_THREAD__)
    sinew::detail::tsan_release(&process().reuse_);
#endif
  }
  static void received() noexcept {
#if defined(__SANITIZE_THREAD__)
    sinew::detail::tsan_acquire(&process().reuse_);
#endif
  }

  /// libzmq stores a message of up to this many bytes inside the message
  /// itself (msg_t's max_vsm_size): sending a copy of one allocates nothing.
  static constexpr std::size_t inline_bytes = 33;
  /// Frames of at most this many bytes are spared (larger records travel
  /// in the received message itself, message_batch::adopt_from).
  static constexpr std::size_t largest = 16384;
  /// The process's pool: every ZeroMQ source gives, every sink takes.
  static zmq_spares& process();

  /// Takes the messages of `batch` (left empty). Beyond the pool's bounds
  /// they are closed instead: a pool nobody takes from holds `max_messages`
  /// and `max_bytes` at most (each message also keeps its share of the
  /// buffer ZeroMQ received it in).
  void give(std::vector<zmq::message_t>& batch);
  /// Moves the oldest batch given into `out` (which must be empty), or
  /// leaves it empty when there is none.
  void take(std::vector<zmq::message_t>& out);

  /// Room for the batches of the units between a source and a sink (a
  /// unit of 100-byte records holds 2,621 of them).
  static constexpr std::size_t max_messages = 65536;
  static constexpr std::size_t max_bytes = std::size_t(8) << 20;

 private:
  std::mutex m_;
  std::deque<std::pair<std::vector<zmq::message_t>, std::size_t>> batches_;  // and their bytes
  std::size_t held_ = 0, held_bytes_ = 0;
  [[maybe_unused]] char reuse_ = 0;  // the address sent() and received() synchronise on
};

}  // namespace sinew::io::detail
