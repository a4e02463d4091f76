// balance_cache: tuned weights per (node path, unit size, device set).
#include <sinew/opencl/balance_cache.hpp>

namespace sinew {

balance_cache& balance_cache::global() {
  static balance_cache c;
  return c;
}

std::optional<std::vector<double>> balance_cache::find(const balance_key& k) const {
  std::lock_guard<std::mutex> l(m_);
  auto it = w_.find(k);
  if (it == w_.end()) return std::nullopt;
  return it->second;
}

void balance_cache::store(const balance_key& k, std::vector<double> weights) {
  std::lock_guard<std::mutex> l(m_);
  w_[k] = std::move(weights);
}

void balance_cache::erase(const balance_key& k) {
  std::lock_guard<std::mutex> l(m_);
  w_.erase(k);
}

void balance_cache::clear() {
  std::lock_guard<std::mutex> l(m_);
  w_.clear();
}

std::size_t balance_cache::size() const {
  std::lock_guard<std::mutex> l(m_);
  return w_.size();
}

}  // namespace sinew
