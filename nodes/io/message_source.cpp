// The unit-filling loop of the message sources (message_source.hpp).
#include "message_source.hpp"

#include <sinew/detail/clock.hpp>

namespace sinew::io::detail {

message_source::message_source(message_format f, batching b, std::optional<std::uint64_t> count,
                               std::chrono::milliseconds idle_timeout, bool one_per_unit)
    : io_source(b), format_(std::move(f)), count_(count), idle_ns_(std::uint64_t(idle_timeout.count()) * 1000000u),
      one_per_unit_(one_per_unit) {}

std::string message_source::counts() const {
  std::string r = std::to_string(messages()) + " messages";
  if (const std::uint64_t k = skipped_.load(std::memory_order_relaxed)) r += ", " + std::to_string(k) + " malformed skipped";
  return r;
}

bool message_source::produce(unit_builder& b) {
  if (!batch_) {  // the first unit: the run has started
    batch_.emplace(format_, batching_on() && !one_per_unit_ ? batch().records : 1, batch().bytes);
    last_ns_ = sinew::detail::now_ns();
  }
  std::uint64_t deadline = 0;  // of the unit's latency bound, from its first record
  for (;;) {
    if (count_ && records_ >= *count_) break;
    if (!held_) {
      const got r = receive(batch_->size() ? deadline : idle_ns_ ? last_ns_ + idle_ns_ : 0);
      if (r == got::stopped) break;  // what is in the unit is delivered
      if (r == got::timeout) {
        if (batch_->size()) break;  // the latency bound
        return idle_end();
      }
      messages_.store(messages_.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);  // one writer
      if (idle_ns_) last_ns_ = sinew::detail::now_ns();
    }
    frame fr[layer::max_buffers];
    std::string bad;
    const std::size_t n = frames(fr, bad);
    if (bad.empty() && batch_->adoptable(fr, n)) {  // a large record: a unit of its own, not copied
      if (batch_->size()) {
        held_ = true;  // after the records before it
        break;
      }
      if (std::shared_ptr<void> m = keep_message()) {
        held_ = false;
        consumed(true);
        ++records_;
        seal(b);
        batch_->adopt(fr, n, std::move(m), b, batching_on());
        return true;
      }
    }
    const auto a = bad.empty() ? batch_->add(fr, n) : message_batch::added::malformed;
    held_ = a == message_batch::added::full;
    if (held_) break;  // the first record of the next unit
    if (a == message_batch::added::malformed) {
      const std::string why = who() + ": message " + std::to_string(messages() - 1) + " is not a record: " +
                              (bad.empty() ? batch_->why() : bad);
      if (format_.malformed == on_malformed::skip) {
        skipped_.fetch_add(1, std::memory_order_relaxed);
        consumed(false);
        continue;
      }
      if (batch_->size() == 0) throw error(why);
      fail_later(why);
      break;
    }
    consumed(true);
    ++records_;
    const std::size_t k = batch_->size();
    if (k == 1) deadline = sinew::detail::now_ns() + std::uint64_t(batch().latency.count()) * 1000;
    if (batch_->full()) break;
    // The latency bound holds while messages keep coming too (receive()
    // checks it only when none is waiting).
    if (k % deadline_stride == 0 && sinew::detail::now_ns() >= deadline) break;
  }
  if (batch_->size() == 0) return false;
  seal(b);
  batch_->finish(b, batching_on());
  return true;
}

}  // namespace sinew::io::detail
