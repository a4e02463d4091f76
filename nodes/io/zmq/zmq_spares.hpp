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
#include <mutex>
#include <vector>

namespace sinew::io::detail {

class zmq_spares {
 public:
  /// libzmq stores a message of up to this many bytes inside the message
  /// itself (msg_t's max_vsm_size): sending a copy of one allocates nothing.
  static constexpr std::size_t inline_bytes = 33;
  /// Frames of at most this many bytes are spared (larger records travel
  /// in the received message itself, message_batch::adopt_from).
  static constexpr std::size_t largest = 16384;
  /// The process's pool: every ZeroMQ source gives, every sink takes.
  static zmq_spares& process();

  /// Takes the messages of `batch` (left empty). Beyond the pool's bound
  /// they are closed instead: a pool nobody takes from holds
  /// `max_messages` at most.
  void give(std::vector<zmq::message_t>& batch);
  /// Moves one batch given earlier into `out` (which must be empty), or
  /// leaves it empty when there is none.
  void take(std::vector<zmq::message_t>& out);

  static constexpr std::size_t max_messages = 4096;

 private:
  std::mutex m_;
  std::vector<std::vector<zmq::message_t>> batches_;
  std::size_t held_ = 0;  // messages in batches_
};

}  // namespace sinew::io::detail
