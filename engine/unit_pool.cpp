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

}  // namespace sinew::detail
