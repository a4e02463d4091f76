// The pool of received ZeroMQ messages that sinks send in (zmq_spares.hpp).
#include "zmq_spares.hpp"

namespace sinew::io::detail {

zmq_spares& zmq_spares::process() {
  static zmq_spares pool;
  return pool;
}

void zmq_spares::give(std::vector<zmq::message_t>& batch) {
  if (batch.empty()) return;
  std::vector<zmq::message_t> full;  // closed outside the lock
  {
    std::lock_guard<std::mutex> lk(m_);
    if (held_ + batch.size() <= max_messages) {
      held_ += batch.size();
      batches_.push_back(std::move(batch));
    } else {
      full.swap(batch);
    }
  }
  batch.clear();
}

void zmq_spares::take(std::vector<zmq::message_t>& out) {
  std::lock_guard<std::mutex> lk(m_);
  if (batches_.empty()) return;
  out.swap(batches_.back());
  batches_.pop_back();
  held_ -= out.size();
}

}  // namespace sinew::io::detail
