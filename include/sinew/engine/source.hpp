#pragma once
/// \file source.hpp
/// Where units come from. A source runs on its own thread (it may block, e.g.
/// on a socket), builds one unit at a time, and waits while the first queue
/// is full, so a fast source never outruns the graph.
///
/// \code
/// std::vector<std::vector<float>> items = ...;
/// auto a = sinew::from(items);                 // one unit per item, no copy
/// auto b = sinew::from_arrays(x, y);           // one unit holding x and y
/// auto c = sinew::generate([](sinew::unit_builder& u) {   // unbounded
///   u.set_shape(sinew::shape::d1(1024));
///   auto v = u.add<float>();
///   fill(v);
///   return !u.stop_requested();
/// });
/// \endcode
#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include <sinew/engine/array.hpp>
#include <sinew/engine/buffer_pool.hpp>
#include <sinew/engine/delivery.hpp>
#include <sinew/engine/work_unit.hpp>

namespace sinew {

/// Handed to a source to fill the input layer of the next unit.
class unit_builder {
 public:
  unit_builder(layer& l, std::uint64_t seq, const std::atomic<bool>* stop) : l_(l), seq_(seq), stop_(stop) {}
  /// Position of this unit in the stream.
  std::uint64_t seq() const noexcept { return seq_; }
  /// True once the run is being stopped or cancelled: finish and return false.
  bool stop_requested() const noexcept { return stop_->load(std::memory_order_acquire); }
  void set_shape(const sinew::shape& s) { l_.set_shape(s); }
  const sinew::shape& shape() const noexcept { return l_.shape(); }
  /// The unit is a record batch (records.hpp); default: one record.
  void set_records(record_index r) noexcept { records_ = std::move(r); }
  const record_index& records() const noexcept { return records_; }
  /// Indivisible block in elements (see work_unit::grain).
  void set_grain(std::size_t g) noexcept { grain_ = g; }
  std::size_t grain() const noexcept { return grain_; }
  /// Asks to be told when every sink the unit reaches has written it
  /// (delivery.hpp): at-least-once sources acknowledge their input then.
  void set_note(note_ref n) noexcept { note_ = std::move(n); }
  note_ref& note() noexcept { return note_; }
  /// Adds a pooled buffer of the current shape and returns a view to fill.
  template <class T, unsigned R = 1>
  view<T, R> add() {
    auto b = buffer_pool::global().acquire<T>(l_.count());
    view<T, R> v(b.template data<T>(), l_.shape());
    l_.add(std::move(b));
    return v;
  }
  /// Adds caller memory of `shape().count()` elements (not copied, not freed).
  template <class T>
  void add_wrapped(T* data) { l_.add(buffer_ref::wrap(data, l_.count())); }
  void add(buffer_ref b) { l_.add(std::move(b)); }
  layer& input() noexcept { return l_; }

 private:
  layer& l_;
  std::uint64_t seq_;
  const std::atomic<bool>* stop_;
  std::size_t grain_ = 1;
  record_index records_;
  note_ref note_;
};

/// How a container type maps onto a layer. Provided for `std::vector<T>`,
/// `sinew::array<T, R>` and `std::tuple` of those (several buffers, one shape).
template <class Item, class = void>
struct item_traits;

template <class T>
struct item_traits<std::vector<T>> {
  static sinew::shape shape(const std::vector<T>& v) { return sinew::shape::d1(v.size()); }
  static void add_to(std::vector<T>& v, layer& l) { l.add(buffer_ref::wrap(v.data(), v.size())); }
  static void resize(std::vector<T>& v, const sinew::shape& s) { v.resize(s.count()); }
  static void types(std::vector<const elem_type*>& t) { t.push_back(&elem_type_of<T>()); }
  static void* data(std::vector<T>& v, unsigned) { return v.data(); }
  static constexpr unsigned buffers = 1;
};
template <class T, unsigned R>
struct item_traits<array<T, R>> {
  static sinew::shape shape(const array<T, R>& a) { return a.shape(); }
  static void add_to(array<T, R>& a, layer& l) { l.add(a.buffer()); }
  static void resize(array<T, R>& a, const sinew::shape& s) { a.resize(s); }
  static void types(std::vector<const elem_type*>& t) { t.push_back(&elem_type_of<T>()); }
  static void* data(array<T, R>& a, unsigned) { return a.data(); }
  static constexpr unsigned buffers = 1;
};
template <class... I>
struct item_traits<std::tuple<I...>> {
  static sinew::shape shape(const std::tuple<I...>& t) { return item_traits<std::tuple_element_t<0, std::tuple<I...>>>::shape(std::get<0>(t)); }
  static void add_to(std::tuple<I...>& t, layer& l) {
    std::apply([&](auto&... x) { (item_traits<std::decay_t<decltype(x)>>::add_to(x, l), ...); }, t);
  }
  static void resize(std::tuple<I...>& t, const sinew::shape& s) {
    std::apply([&](auto&... x) { (item_traits<std::decay_t<decltype(x)>>::resize(x, s), ...); }, t);
  }
  static void types(std::vector<const elem_type*>& v) { (item_traits<I>::types(v), ...); }
  static constexpr unsigned buffers = sizeof...(I);
};

namespace detail {

class source_impl {
 public:
  virtual ~source_impl() = default;
  /// Fills the next unit's input layer; false at end of stream. May block.
  virtual bool next(unit_builder& b) = 0;
  /// Number of units, when known in advance.
  virtual std::optional<std::uint64_t> size_hint() const { return std::nullopt; }
  virtual std::string label() const { return "source"; }
  /// True if `next` may block (I/O, waiting for data): the source then gets
  /// a thread of its own. Otherwise it runs as a task on the scheduler.
  virtual bool blocking() const { return false; }
  /// The run is stopping or failing: a `next` blocked waiting for data must
  /// return soon (false). Called from any thread, possibly more than once.
  virtual void interrupt() {}
  /// True if items the source holds were already accepted from a producer
  /// (a stream's buffer): on `stop()` it is drained rather than dropped.
  virtual bool drains_on_stop() const { return false; }
  /// Called once after the sink has received every unit and finished (not
  /// after a failure or cancellation). A source whose stream ended badly
  /// (a truncated file, a peer gone mid-record) returns false from `next`
  /// and throws here, so the run fails only after every unit before the bad
  /// record was delivered.
  virtual void after_delivery() {}
  /// Called once before the run starts with what would keep a record batch
  /// (records.hpp) from giving the results of its records one by one: empty
  /// when every leaf the units reach works per element or per record and
  /// every sink writes records, else the place that does not (a leaf's
  /// path, a sink). A source that batches by default batches only when it is
  /// empty; one told to batch throws graph_error naming that place.
  virtual void batch_for(const std::string& whole_unit_at) { (void)whole_unit_at; }
  /// What the source knows of its stream beyond units and records, for the
  /// run's statistics and status line ("2 malformed skipped, 1 reconnect"):
  /// empty when nothing is worth saying. Called from any thread while it runs.
  virtual std::string report() const { return {}; }
};

template <class Item>
class container_source final : public source_impl {
 public:
  explicit container_source(std::vector<Item>& items) : items_(items) {}
  bool next(unit_builder& b) override {
    if (i_ >= items_.size()) return false;
    Item& it = items_[i_++];
    b.set_shape(item_traits<Item>::shape(it));
    item_traits<Item>::add_to(it, b.input());
    return true;
  }
  std::optional<std::uint64_t> size_hint() const override { return items_.size(); }
  std::string label() const override { return "source(container)"; }

 private:
  std::vector<Item>& items_;
  std::size_t i_ = 0;
};

template <class... C>
class arrays_source final : public source_impl {
 public:
  explicit arrays_source(C&... c) : t_(c...) {}
  bool next(unit_builder& b) override {
    if (done_) return false;
    done_ = true;
    b.set_shape(item_traits<std::decay_t<std::tuple_element_t<0, std::tuple<C...>>>>::shape(std::get<0>(t_)));
    std::apply([&](auto&... x) {
      (check_shape(b, item_traits<std::decay_t<decltype(x)>>::shape(x)), ...);
      (item_traits<std::decay_t<decltype(x)>>::add_to(x, b.input()), ...);
    }, t_);
    return true;
  }
  std::optional<std::uint64_t> size_hint() const override { return 1; }
  std::string label() const override { return "source(arrays)"; }

 private:
  static void check_shape(unit_builder& b, const sinew::shape& s) {
    if (!(s == b.shape()))
      throw error("from_arrays: arrays differ in shape (" + s.str() + " vs " + b.shape().str() + ")");
  }
  std::tuple<C&...> t_;
  bool done_ = false;
};

class generator_source final : public source_impl {
 public:
  generator_source(std::function<bool(unit_builder&)> f, bool blocking) : f_(std::move(f)), blocking_(blocking) {}
  bool next(unit_builder& b) override { return f_(b); }
  std::string label() const override { return "source(generator)"; }
  bool blocking() const override { return blocking_; }

 private:
  std::function<bool(unit_builder&)> f_;
  bool blocking_;
};

}  // namespace detail

/// Type-erased source handle (see the factory functions below); a run takes
/// it by value.
///
/// \code
/// sinew::source s = sinew::from(items);               // or from_arrays, generate, ...
/// std::vector<std::vector<float>> out;
/// g.run(std::move(s), sinew::into(out)).get();
/// \endcode
class source {
 public:
  explicit source(std::shared_ptr<detail::source_impl> p) : p_(std::move(p)) {}
  detail::source_impl& impl() const { return *p_; }
  std::shared_ptr<detail::source_impl> ptr() const { return p_; }

 private:
  std::shared_ptr<detail::source_impl> p_;
};

/// One unit per item (zero copy; the items must outlive the run).
template <class Item>
source from(std::vector<Item>& items) {
  return source(std::make_shared<detail::container_source<Item>>(items));
}
/// One unit whose layer holds every array (same shape required).
template <class... C>
source from_arrays(C&... arrays) {
  return source(std::make_shared<detail::arrays_source<C...>>(arrays...));
}
/// How a generator source runs.
enum class source_mode {
  task,    ///< on the scheduler's workers, between other stages: `fn` must not block
  thread,  ///< on a thread of its own: `fn` may block (sockets, pipes, waiting for data)
};

/// Calls `fn` for each unit until it returns false (or forever).
inline source generate(std::function<bool(unit_builder&)> fn, source_mode mode = source_mode::task) {
  return source(std::make_shared<detail::generator_source>(std::move(fn), mode == source_mode::thread));
}

}  // namespace sinew
