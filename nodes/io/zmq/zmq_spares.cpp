// The pool of received ZeroMQ messages that sinks send in (zmq_spares.hpp).
#include "zmq_spares.hpp"

namespace sinew::io::detail {

zmq_spares& zmq_spares::process() {
  static zmq_spares pool;
  return pool;
}

void zmq_spares::give(std::vector<zmq::message_t>& batch) {
  if (batch.empty()) return;
  std::size_t bytes = 0;
  for (const zmq::message_t& m : batch) bytes += m.size();
  std::vector<zmq::message_t> full;  // closed outside the lock
  {
    std::lock_guard<std::mutex> lk(m_);
    if (held_ + batch.size() <= max_messages && held_bytes_ + bytes <= max_bytes) {
      held_ += batch.size();
      held_bytes_ += bytes;
      batches_.emplace_back(std::move(batch), bytes);
    } else {
      full.swap(batch);
    }
  }
  batch.clear();
}

void zmq_spares::take(std::vector<zmq::message_t>& out) {
  std::lock_guard<std::mutex> lk(m_);
  if (batches_.empty()) return;
  out.swap(batches_.front().first);
  held_ -= out.size();
  held_bytes_ -= batches_.front().second;
  batches_.pop_front();
}

}  // namespace sinew::io::detail
