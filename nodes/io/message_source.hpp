#pragma once
// Internal to the message sources (ZeroMQ, MQTT): the loop that fills units
// with the records of consecutive messages.
#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "message_batch.hpp"
#include "stream.hpp"

namespace sinew::io::detail {

/// Base of the sources that read messages. A unit closes at the batch's
/// limits, its latency bound (even while messages keep coming), after
/// `count` records, or when the stream ends; a malformed message fails the
/// stream (after the records before it) or is skipped and counted, per the
/// format. No message within the idle timeout (and none in the unit) ends
/// the stream.
class message_source : public io_source {
 public:
  /// A unit checks its latency bound every this many records while
  /// messages keep coming (a clock read per record would cost more than
  /// copying a small one).
  static constexpr std::size_t deadline_stride = 8;

 protected:
  /// `one_per_unit`: one record a unit whatever the batching (a source
  /// with one message in flight).
  message_source(message_format f, batching b, std::optional<std::uint64_t> count,
                 std::chrono::milliseconds idle_timeout, bool one_per_unit);

  enum class got { message, timeout, stopped };
  /// Waits for the next message until `deadline_ns` (steady clock; 0: no
  /// deadline) and keeps it for frames(); `stopped` once the run stops.
  virtual got receive(std::uint64_t deadline_ns) = 0;
  /// The record frames of the message kept by receive() into `out`
  /// (layer::max_buffers of them at most); sets `bad` when it cannot be a
  /// record whatever the format.
  virtual std::size_t frames(frame* out, std::string& bad) = 0;
  /// Names the stream in errors ("zmq pull tcp://127.0.0.1:5555").
  virtual const std::string& who() const = 0;
  /// The kept message went into the unit (`added`) or was skipped as malformed.
  virtual void consumed(bool added) { (void)added; }
  /// Ownership of the kept message, whose frames stay where frames() said:
  /// a large binary record then becomes a unit of its own without a copy.
  /// Null (the default): records are copied.
  virtual std::shared_ptr<void> keep_message() { return nullptr; }
  /// The unit is complete (a source that asks for delivery notes adds one).
  virtual void seal(unit_builder& b) { (void)b; }
  /// No message within the idle timeout, none in the unit: end the stream
  /// (false), or throw.
  virtual bool idle_end() { return false; }

  /// Records the unit being filled can still take (1 before the first unit).
  std::size_t room() const noexcept { return batch_ ? batch_->room() : 1; }
  /// Messages received, and skipped as malformed.
  std::uint64_t messages() const noexcept { return messages_.load(std::memory_order_relaxed); }
  /// "12 messages, 1 malformed skipped", for report().
  std::string counts() const;

 private:
  bool produce(unit_builder& b) final;

  message_format format_;
  std::optional<std::uint64_t> count_;
  std::uint64_t idle_ns_;
  bool one_per_unit_;
  std::optional<message_batch> batch_;  // made at the first unit, when batch_for has run
  bool held_ = false;                   // the kept message did not fit in the last unit
  std::uint64_t records_ = 0;
  std::uint64_t last_ns_ = 0;  // when the last message (or the run's start) came
  std::atomic<std::uint64_t> messages_{0}, skipped_{0};
};

}  // namespace sinew::io::detail
