#pragma once
/// \file bounded_queue.hpp
/// Bounded multi-producer/multi-consumer queue with back pressure and end of
/// stream. `push` sleeps while the queue is full, `pop` sleeps while it is
/// empty; `close()` ends the stream (pops drain what is left, then return
/// false). Sleeping uses futexes: no thread busy-waits.
///
/// \code
/// sinew::bounded_queue<int> q(64);
/// std::thread producer([&] { for (int i = 0; i < 1000; ++i) q.push(i); q.close(); });
/// int v, sum = 0;
/// while (q.pop(v)) sum += v;      // ends after close() once drained
/// producer.join();
/// \endcode
#include <sinew/detail/blocking_queue.hpp>

namespace sinew {

template <class T>
class bounded_queue : public detail::blocking_queue<detail::mpmc_ring<T>, T> {
 public:
  explicit bounded_queue(std::size_t capacity)
      : detail::blocking_queue<detail::mpmc_ring<T>, T>(capacity) {}
};

}  // namespace sinew
