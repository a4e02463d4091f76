#pragma once
/// \file stream.hpp
/// `sinew::stream<Item>`: a source fed by the caller's own threads, for
/// continuous streams. `push` sleeps while the graph is full (back pressure
/// reaches the producer); `close` ends the stream. `run_future::stop()`
/// closes it too: items already pushed are still processed and delivered,
/// later pushes (and one blocked in `push`) return false. `cancel()` drops
/// what is in flight.
///
/// \code
/// sinew::stream<sinew::array<float>> in(64);
/// auto f = g.run(in.source(), sinew::for_each([](const sinew::work_unit& u) { use(u); }));
/// while (auto item = read_next()) in.push(std::move(*item));   // from any thread(s)
/// in.close();
/// f.get();
/// \endcode
///
/// Items are owned by the stream once pushed: `sinew::array` items are
/// handed to the graph without copying, `std::vector` items are copied into
/// pooled buffers (their storage cannot be shared).
#include <cstring>
#include <memory>
#include <type_traits>

#include <sinew/engine/bounded_queue.hpp>
#include <sinew/engine/source.hpp>

namespace sinew {

namespace detail {

template <class Item>
struct owned_item {
  /// Adds `it`'s data to `l` with buffers that keep it alive.
  static void add_to(Item& it, layer& l) { item_traits<Item>::add_to(it, l); }  // sinew::array: shares
};
template <class T>
struct owned_item<std::vector<T>> {
  static void add_to(std::vector<T>& v, layer& l) {
    auto b = buffer_pool::global().acquire<T>(v.size());
    if (!v.empty()) std::memcpy(b.template data<T>(), v.data(), v.size() * sizeof(T));
    l.add(std::move(b));
  }
};
template <class... I>
struct owned_item<std::tuple<I...>> {
  static void add_to(std::tuple<I...>& t, layer& l) {
    std::apply([&](auto&... x) { (owned_item<std::decay_t<decltype(x)>>::add_to(x, l), ...); }, t);
  }
};

template <class Item>
class stream_source final : public source_impl {
 public:
  explicit stream_source(std::size_t capacity) : q_(capacity) {}
  bool next(unit_builder& b) override {
    Item it;
    if (!q_.pop(it)) return false;  // closed (by the caller or by interrupt) and drained
    b.set_shape(item_traits<Item>::shape(it));
    owned_item<Item>::add_to(it, b.input());
    return true;
  }
  bool blocking() const override { return true; }
  void interrupt() override { q_.close(); }
  bool drains_on_stop() const override { return true; }
  std::string label() const override { return "source(stream)"; }
  bounded_queue<Item>& queue() { return q_; }

 private:
  bounded_queue<Item> q_;
};

}  // namespace detail

template <class Item>
class stream {
 public:
  /// `capacity`: items buffered before `push` waits for the graph.
  explicit stream(std::size_t capacity = 64)
      : p_(std::make_shared<detail::stream_source<Item>>(capacity)) {}
  /// Hands `item` to the graph, sleeping while the buffer is full. False if
  /// the stream was closed or the run is ending: the item was not accepted
  /// (and is discarded). Every item accepted is processed, also on `stop()`.
  bool push(Item item) { return p_->queue().push(std::move(item)); }
  /// As push, but never waits: false when full or closed.
  bool try_push(Item item) { return p_->queue().try_push(std::move(item)); }
  /// Ends the stream: the graph finishes the items already pushed.
  void close() { p_->queue().close(); }
  /// The source to give to `graph::run` (once: one stream feeds one run).
  sinew::source source() const { return sinew::source(p_); }

 private:
  std::shared_ptr<detail::stream_source<Item>> p_;
};

}  // namespace sinew
