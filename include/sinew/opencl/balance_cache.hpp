#pragma once
/// \file balance_cache.hpp
/// Tuned weights per (node path, unit size, device set), so that a node
/// built again (another graph, another run) starts tuned.
///
/// \code
/// sinew::balance_cache cache;
/// sinew::balance_key k{"pipeline[1]/multi_device_map", 4096, "host|sim:gpu"};
/// cache.store(k, {30, 70});
/// auto w = cache.find(k);   // {30, 70}
/// \endcode
#include <cstddef>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

namespace sinew {

struct balance_key {
  std::string path;
  std::size_t unit_size = 0;
  std::string devices;  ///< executor names joined by '|'
  friend bool operator<(const balance_key& a, const balance_key& b) {
    return std::tie(a.path, a.unit_size, a.devices) < std::tie(b.path, b.unit_size, b.devices);
  }
};

/// Thread safe.
class balance_cache {
 public:
  /// The process-wide cache multi-device maps use unless given their own.
  static balance_cache& global();
  std::optional<std::vector<double>> find(const balance_key& k) const;
  void store(const balance_key& k, std::vector<double> weights);
  void erase(const balance_key& k);
  void clear();
  std::size_t size() const;

 private:
  mutable std::mutex m_;
  std::map<balance_key, std::vector<double>> w_;
};

}  // namespace sinew
