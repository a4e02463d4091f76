#pragma once
/// \file spsc_queue.hpp
/// The single-producer/single-consumer variant of `bounded_queue`: same
/// interface and guarantees, but only one thread may push and one may pop,
/// which makes each operation a few plain loads and stores.
///
/// \code
/// sinew::spsc_queue<float*> q(256);
/// std::thread c([&] { float* p; while (q.pop(p)) consume(p); });
/// for (auto* p : items) q.push(p);
/// q.close();
/// c.join();
/// \endcode
#include <sinew/detail/blocking_queue.hpp>

namespace sinew {

template <class T>
class spsc_queue : public detail::blocking_queue<detail::spsc_ring<T>, T> {
 public:
  explicit spsc_queue(std::size_t capacity)
      : detail::blocking_queue<detail::spsc_ring<T>, T>(capacity) {}
};

}  // namespace sinew
