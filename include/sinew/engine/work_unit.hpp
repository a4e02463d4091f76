#pragma once
/// \file work_unit.hpp
/// What flows on a graph edge [Marques14, §4.3, Listing 4.7]: a sequence
/// number, an end-of-stream flag, a partition granularity, and a *stack of
/// buffer layers*. A leaf reads layer 0 and writes layer 1; the unit it passes
/// on has layer 0 popped, so the next stage reads what the previous one wrote.
/// A pipeline, when entered, inserts one layer per intermediate result right
/// after layer 0 [Marques14, Fig. 4.6].
///
/// \code
/// sinew::work_unit u;
/// u.push_layer(sinew::layer(sinew::shape::d1(n), {out}));  // bottom: final output
/// u.push_layer(sinew::layer(sinew::shape::d1(n), {x, y})); // top: input (layer 0)
/// auto xs = u.input<float>(0);   // view of x
/// auto zs = u.output<float>(0);  // view of out
/// u.pop_layer();                 // now layer 0 is {out}
/// \endcode
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include <sinew/engine/buffer.hpp>
#include <sinew/engine/delivery.hpp>
#include <sinew/engine/error.hpp>
#include <sinew/engine/records.hpp>
#include <sinew/engine/shape.hpp>
#include <sinew/engine/view.hpp>

namespace sinew {

/// A set of buffers (at most `layer::max_buffers`) with the layer's shape. A
/// buffer may have a shape of its own (`add(b, s)`): a zip or join of units of
/// different shapes keeps each part's shape, and a per-chunk leaf sees every
/// buffer with its own (leaf.hpp); leaves that index every buffer by the same
/// element (per-element and per-record maps, OpenCL kernels) refuse such a
/// layer. A layer may have a shape and no buffers: an index space with no
/// data (e.g. the coefficient indices of the Series benchmark).
///
/// \code
/// sinew::layer l(sinew::shape::d2(480, 640), {edges});   // edges: 480x640
/// l.add(hist, sinew::shape::d1(256));                     // its own shape
/// assert(!l.uniform() && l.shape_of(1).count() == 256);
/// auto h = l.get<const std::uint32_t>(1);                 // a view of 256 elements
/// \endcode
class layer {
 public:
  static constexpr unsigned max_buffers = 8;

  layer() noexcept : bufs_{} {}
  explicit layer(const sinew::shape& s) noexcept : shape_(s), bufs_{} {}
  layer(const sinew::shape& s, std::initializer_list<buffer_ref> bufs) : shape_(s), bufs_{} {
    for (auto& b : bufs) add(b);
  }
  // Copies, moves and destruction touch the n_ buffers held, not all
  // max_buffers slots: a unit moves and drops layers on every hop.
  layer(const layer& o) : shape_(o.shape_), n_(o.n_), own_(o.own_), bufs_{} {
    for (unsigned i = 0; i < n_; ++i) bufs_[i] = o.bufs_[i];
  }
  layer(layer&& o) noexcept : shape_(o.shape_), n_(o.n_), own_(std::move(o.own_)), bufs_{} {
    for (unsigned i = 0; i < n_; ++i) bufs_[i].swap(o.bufs_[i]);
    o.n_ = 0;
    o.own_.mask = 0;
  }
  layer& operator=(const layer& o) {
    if (this != &o) *this = layer(o);
    return *this;
  }
  layer& operator=(layer&& o) noexcept {
    if (this == &o) return *this;
    clear();
    shape_ = o.shape_;
    own_ = std::move(o.own_);
    for (unsigned i = 0; i < o.n_; ++i) bufs_[i].swap(o.bufs_[i]);
    n_ = std::exchange(o.n_, 0u);
    o.own_.mask = 0;
    return *this;
  }
  ~layer() { clear(); }

  const sinew::shape& shape() const noexcept { return shape_; }
  /// Sets the layer's shape; buffers added with a shape of their own keep it.
  void set_shape(const sinew::shape& s) noexcept { shape_ = s; }
  std::size_t count() const noexcept { return shape_.count(); }
  unsigned size() const noexcept { return n_; }
  bool empty() const noexcept { return n_ == 0; }
  const buffer_ref& operator[](unsigned i) const noexcept { return bufs_[i]; }
  buffer_ref& operator[](unsigned i) noexcept { return bufs_[i]; }
  void add(buffer_ref b) {
    if (n_ == max_buffers) throw error("a layer holds at most 8 buffers");
    bufs_[n_++] = std::move(b);
  }
  /// Adds `b` with shape `s` (the layer's shape when equal to it).
  void add(buffer_ref b, const sinew::shape& s) {
    add(std::move(b));
    if (s == shape_) return;
    if (!own_.shapes) own_.shapes.reset(new sinew::shape[max_buffers]);
    own_.shapes[n_ - 1] = s;
    own_.mask |= std::uint8_t(1u << (n_ - 1));
  }
  /// Shape of buffer `i`: its own if it was added with one, else the layer's.
  const sinew::shape& shape_of(unsigned i) const noexcept {
    return (own_.mask >> i) & 1 ? own_.shapes[i] : shape_;
  }
  /// Every buffer has the layer's shape.
  bool uniform() const noexcept {
    for (unsigned m = own_.mask, i = 0; m; m >>= 1, ++i)
      if ((m & 1) && !(own_.shapes[i] == shape_)) return false;
    return true;
  }
  void clear() noexcept {
    for (unsigned i = 0; i < n_; ++i) bufs_[i].reset();
    n_ = 0;
    own_.mask = 0;
  }
  /// Typed view of buffer `i` with its shape (checked: index and element size).
  ///
  /// \code
  /// auto xs = unit.in().get<const float>(0);
  /// \endcode
  template <class T, unsigned Rank = 1>
  view<T, Rank> get(unsigned i) const {
    if (i >= n_ || bufs_[i]->type().size != sizeof(T)) [[unlikely]]
      bad_get(i, sizeof(T));
    return view<T, Rank>(bufs_[i].template data<std::remove_const_t<T>>(), shape_of(i));
  }
  /// Bytes of buffer `i`'s elements: those of its shape (shape_of).
  std::size_t bytes_of(unsigned i) const noexcept { return shape_of(i).count() * bufs_[i]->type().size; }
  /// Bytes of data held by the layer's buffers.
  std::size_t bytes() const noexcept {
    std::size_t s = 0;
    for (unsigned i = 0; i < n_; ++i) s += bufs_[i]->bytes();
    return s;
  }

 private:
  // Out of line and cold, so that get() inlines to a compare and a load.
  [[noreturn, gnu::cold, gnu::noinline]] void bad_get(unsigned i, std::size_t elem_size) const {
    if (i >= n_)
      throw error("buffer " + std::to_string(i) + " does not exist (layer has " + std::to_string(n_) + ")");
    throw error("buffer " + std::to_string(i) + " holds " + std::to_string(bufs_[i]->type().size) +
                "-byte elements, view wants " + std::to_string(elem_size));
  }
  /// The buffers' own shapes: bit i of `mask` set = shapes[i] is buffer i's.
  /// Allocated on the first buffer of another shape, copied with the layer.
  struct own_shapes {
    std::uint8_t mask = 0;
    std::unique_ptr<sinew::shape[]> shapes;
    own_shapes() = default;
    own_shapes(own_shapes&&) noexcept = default;
    own_shapes& operator=(own_shapes&&) noexcept = default;
    own_shapes(const own_shapes& o) : mask(o.mask) {
      if (o.mask) shapes.reset(new sinew::shape[max_buffers]), std::copy_n(o.shapes.get(), max_buffers, shapes.get());
    }
    own_shapes& operator=(const own_shapes& o) {
      if (this != &o) *this = own_shapes(o);
      return *this;
    }
  };

  sinew::shape shape_{};
  unsigned n_ = 0;
  own_shapes own_;
  // Slots [0, n_) hold the buffers, the others are null: a union, so that
  // destroying a layer does not visit all max_buffers slots (clear() does
  // the n_ that may hold one).
  union {
    buffer_ref bufs_[max_buffers];
  };
};

namespace detail {

/// The layers of a unit, bottom first. Up to `inline_n` live inside the
/// unit, so a stage reaches layer 0 without following a pointer to another
/// block (each of which is a cache miss on the next core a unit visits);
/// deeper stacks move to the heap until clear().
class layer_stack {
 public:
  static constexpr unsigned inline_n = 3;

  layer_stack() noexcept {}
  layer_stack(const layer_stack& o) : layer_stack() { *this = o; }
  layer_stack& operator=(const layer_stack& o) {
    if (this == &o) return *this;
    clear();
    for (std::size_t i = 0; i < o.size(); ++i) insert(i, layer(o[i]));
    return *this;
  }
  ~layer_stack() { clear(); }

  std::size_t size() const noexcept { return n_; }
  bool empty() const noexcept { return n_ == 0; }
  layer& operator[](std::size_t i) noexcept { return heap_on_ ? heap_[i] : in_[i]; }
  const layer& operator[](std::size_t i) const noexcept { return heap_on_ ? heap_[i] : in_[i]; }
  layer& back() noexcept { return (*this)[n_ - 1]; }
  const layer& back() const noexcept { return (*this)[n_ - 1]; }

  /// Inserts `l` at position `pos` (<= size()).
  void insert(std::size_t pos, layer&& l) {
    if (heap_on_ || n_ == inline_n) [[unlikely]]
      return insert_heap(pos, std::move(l));
    if (pos == n_) {
      new (&in_[n_]) layer(std::move(l));
    } else {
      new (&in_[n_]) layer(std::move(in_[n_ - 1]));
      for (std::size_t i = n_ - 1; i > pos; --i) in_[i] = std::move(in_[i - 1]);
      in_[pos] = std::move(l);
    }
    ++n_;
  }
  void pop_back() noexcept {
    if (heap_on_) heap_.pop_back();
    else in_[n_ - 1].~layer();
    --n_;
  }
  /// Releases every layer; a stack that moved to the heap comes back inside
  /// (the heap block is kept for the next deep stack).
  void clear() noexcept {
    if (heap_on_) {
      heap_.clear();
      heap_on_ = false;
    } else {
      for (unsigned i = 0; i < n_; ++i) in_[i].~layer();
    }
    n_ = 0;
  }

 private:
  [[gnu::noinline]] void insert_heap(std::size_t pos, layer&& l) {
    if (!heap_on_) {  // the inside is full: every layer moves out
      heap_.reserve(2 * inline_n);
      for (unsigned i = 0; i < n_; ++i) heap_.push_back(std::move(in_[i]));
      for (unsigned i = 0; i < n_; ++i) in_[i].~layer();
      heap_on_ = true;
    }
    heap_.insert(heap_.begin() + std::ptrdiff_t(pos), std::move(l));
    ++n_;
  }

  unsigned n_ = 0;
  bool heap_on_ = false;
  union {
    layer in_[inline_n];  // [0, n_) constructed while !heap_on_
  };
  std::vector<layer> heap_;  // all the layers while heap_on_
};

}  // namespace detail

class work_unit {
 public:
  work_unit() = default;

  /// Element count of layer 0 (what the next leaf reads).
  std::size_t count() const noexcept { return layers_.empty() ? 0 : layers_.back().count(); }
  const sinew::shape& shape() const noexcept { return layers_.back().shape(); }
  /// Position in the source's stream (0, 1, 2, ...). The end-of-stream unit
  /// carries the number of data units before it.
  std::uint64_t seq() const noexcept { return seq_; }
  void set_seq(std::uint64_t s) noexcept { seq_ = s; }
  bool end_of_stream() const noexcept { return eos_; }
  void set_end_of_stream(bool e) noexcept { eos_ = e; }
  /// Indivisible partition granularity in elements: a map never splits a
  /// unit inside a block of `grain()` elements (Marrow's "elements per thread").
  std::size_t grain() const noexcept { return grain_; }
  void set_grain(std::size_t g) noexcept { grain_ = g ? g : 1; }
  /// Which source of the graph made the unit (its index among the graph's
  /// sources; 0 in a tree). A merge keeps it, so a sink can tell the
  /// streams apart.
  std::uint32_t origin() const noexcept { return origin_; }
  void set_origin(std::uint32_t o) noexcept { origin_ = o; }
  /// When the source produced the unit (steady clock, ns), for latency
  /// statistics; 0 = not timed (the runtime times a sample of the units).
  std::uint64_t accepted_ns() const noexcept { return accepted_ns_; }
  void set_accepted_ns(std::uint64_t t) noexcept { accepted_ns_ = t; }

  /// How layer 0 divides into records when the unit is a record batch
  /// (records.hpp); not a batch by default.
  const record_index& records() const noexcept { return records_; }
  void set_records(record_index r) noexcept { records_ = std::move(r); }
  /// The delivery note of an at-least-once source (delivery.hpp), or none.
  note_ref& note() noexcept { return note_; }
  void set_note(note_ref n) noexcept { note_ = std::move(n); }

  std::size_t depth() const noexcept { return layers_.size(); }
  /// Layer `k` counted from the top (0 = input of the next leaf).
  layer& at(std::size_t k) {
    check_depth(k);
    return layers_[layers_.size() - 1 - k];
  }
  const layer& at(std::size_t k) const {
    check_depth(k);
    return layers_[layers_.size() - 1 - k];
  }
  layer& in() { return at(0); }
  layer& out() { return at(1); }
  const layer& in() const { return at(0); }
  const layer& out() const { return at(1); }

  /// Pushes a new top layer (it becomes layer 0).
  void push_layer(layer l) { layers_.insert(layers_.size(), std::move(l)); }
  /// Inserts `l` right below layer 0 (a pipeline's intermediate results).
  void insert_below_top(layer l) {
    if (layers_.empty()) throw error("insert_below_top on a unit without layers");
    layers_.insert(layers_.size() - 1, std::move(l));
  }
  /// Inserts `l` right below layer `k`: it becomes layer k + 1.
  void insert_below(std::size_t k, layer l) {
    check_depth(k);
    layers_.insert(layers_.size() - 1 - k, std::move(l));
  }
  /// Drops layer 0, releasing its buffers.
  void pop_layer() {
    if (layers_.empty()) throw error("pop_layer on a unit without layers");
    layers_.pop_back();
  }
  void clear() noexcept {
    layers_.clear();
    seq_ = 0;
    eos_ = false;
    grain_ = 1;
    accepted_ns_ = 0;
    origin_ = 0;
    records_ = record_index();
    if (note_) note_ = note_ref();  // a unit dropped before a sink wrote it: lost
    for (auto& t : tickets_) t = 0;
  }

  /// Typed view of buffer `i` of layer 0 / layer 1 (checked: element size).
  template <class T, unsigned Rank = 1>
  view<const T, Rank> input(unsigned i) const { return at(0).template get<const T, Rank>(i); }
  template <class T, unsigned Rank = 1>
  view<T, Rank> output(unsigned i) { return at(1).template get<T, Rank>(i); }

  /// Ordering tickets of nested ordered farms (runtime use).
  static constexpr unsigned max_ordered_depth = 8;
  std::uint64_t ticket(unsigned d) const noexcept { return tickets_[d]; }
  void set_ticket(unsigned d, std::uint64_t t) noexcept { tickets_[d] = t; }

 private:
  void check_depth(std::size_t k) const {
    if (k >= layers_.size()) [[unlikely]]
      bad_depth(k);
  }
  // Out of line and cold, so that at(), in() and out() inline.
  [[noreturn, gnu::cold, gnu::noinline]] void bad_depth(std::size_t k) const {
    throw error("the unit has " + std::to_string(layers_.size()) + " layer(s); layer " + std::to_string(k) +
                " does not exist");
  }

  std::uint64_t seq_ = 0;
  std::size_t grain_ = 1;
  bool eos_ = false;
  std::uint32_t origin_ = 0;
  std::uint64_t accepted_ns_ = 0;
  detail::layer_stack layers_;  // back() is layer 0
  std::uint64_t tickets_[max_ordered_depth] = {};
  record_index records_;  // after the fields every stage reads
  note_ref note_;          // read only by sources that ask for notes and by sinks
};

}  // namespace sinew
