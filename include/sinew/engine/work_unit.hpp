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
#include <cstddef>
#include <cstdint>
#include <string>

#include <sinew/detail/layer_stack.hpp>
#include <sinew/engine/delivery.hpp>
#include <sinew/engine/error.hpp>
#include <sinew/engine/layer.hpp>
#include <sinew/engine/records.hpp>
#include <sinew/engine/shape.hpp>

namespace sinew {

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
