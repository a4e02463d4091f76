#include "unit_pool.hpp"

namespace sinew::detail {

work_unit* unit_pool::acquire_slow() {
  std::lock_guard<std::mutex> lk(m_);
  if (!spare_.empty()) {
    work_unit* u = spare_.back();
    spare_.pop_back();
    return u;
  }
  all_.push_back(std::make_unique<work_unit>());
  return all_.back().get();
}

void unit_pool::release_slow(work_unit* u) {
  std::lock_guard<std::mutex> lk(m_);  // ring full (or a cell still in use): rare
  spare_.push_back(u);
}

bool unit_pool::recycle() noexcept {
  work_unit* u = nullptr;
  while (free_.try_pop(u)) {
  }
  spare_.clear();
  try {
    spare_.reserve(all_.size());  // what the ring cannot take, without allocating below
  } catch (...) {
    return false;
  }
  for (auto& p : all_) {
    p->clear();
    if (work_unit* w = p.get(); !free_.try_push(w)) spare_.push_back(w);
  }
  acquired_.store(0, std::memory_order_relaxed);
  released_.store(0, std::memory_order_relaxed);
  alive_max_.store(0, std::memory_order_relaxed);
  return true;
}

}  // namespace sinew::detail
