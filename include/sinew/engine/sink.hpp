#pragma once
/// \file sink.hpp
/// Where results go. The sink sees units one at a time, in stream order
/// when every farm on the way is ordered, and sees end of stream once.
///
/// \code
/// std::vector<std::vector<float>> out;
/// g.run(sinew::from(in), sinew::into(out)).get();     // out[k] = result of in[k]
/// g.run(sinew::from(in), sinew::for_each([](const sinew::work_unit& u) {
///   auto r = u.input<float>(0);                         // layer 0 = the result
///   std::printf("%zu: %f\n", size_t(u.seq()), r[0]);
/// })).get();
/// \endcode
#include <cstring>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include <sinew/engine/node.hpp>
#include <sinew/engine/source.hpp>

namespace sinew {

namespace detail {

class sink_impl {
 public:
  virtual ~sink_impl() = default;
  /// Checks the graph's output types before anything runs.
  virtual void prepare(const type_list& outputs, std::optional<std::uint64_t> units) {
    (void)outputs;
    (void)units;
  }
  /// May supply the output layer of unit `seq` (zero copy into the caller's
  /// memory). Called on the source thread, in order. False: pool buffers.
  virtual bool provide(std::uint64_t seq, const shape& s, layer& out) {
    (void)seq, (void)s, (void)out;
    return false;
  }
  /// Receives a finished unit; its layer 0 holds the result.
  virtual void consume(work_unit& u) = 0;
  /// End of stream: called once, after the last unit, unless the run failed
  /// or was cancelled.
  virtual void finish() {}
  /// Every unit queued for the sink has been consumed and more may take a
  /// while: a sink that buffers output writes it now (a slow stream's lines
  /// reach the reader as they come, not when a buffer fills).
  virtual void idle() {}
  virtual std::string label() const { return "sink"; }
  /// True if it handles record batches (records.hpp) record by record, as
  /// the sinks of sinew::io do; a sink that takes units as items (`into`,
  /// `for_each`) does not, and sources then make one unit per record.
  virtual bool writes_records() const { return false; }
  /// The run failed or was cancelled: a `consume` or `finish` blocked
  /// waiting (for a peer to connect, for room to write) must return soon,
  /// by throwing. Not called on `stop()`, which drains into the sink. Called
  /// from any thread, possibly more than once.
  virtual void interrupt() {}
  /// True if `consume` takes the unit's delivery note (delivery.hpp) and
  /// releases it as written once the unit's bytes are out of its hands (a
  /// sink that buffers writes); otherwise the runtime releases it as written
  /// when `consume` returns.
  virtual bool takes_notes() const { return false; }
  /// As source_impl::report: what the sink knows of its stream (reconnects,
  /// messages the transport dropped), or empty. Called from any thread.
  virtual std::string report() const { return {}; }
  /// True if `provide` (above) may supply a layer. Otherwise the tree's
  /// first stage makes its result layer (in every replica of a farm, not on
  /// the source).
  virtual bool provides() const { return false; }
};

void copy_layer_into(const layer& from, unsigned buffers, void* const* dst, const char* who);

template <class Item>
class container_sink final : public sink_impl {
 public:
  explicit container_sink(std::vector<Item>& out) : out_(out) {}
  void prepare(const type_list& outputs, std::optional<std::uint64_t> units) override {
    std::vector<const elem_type*> want;
    item_traits<Item>::types(want);
    if (!outputs.any) {
      bool ok = outputs.types.size() == want.size();
      for (std::size_t i = 0; ok && i < want.size(); ++i) ok = outputs.types[i]->size == want[i]->size;
      if (!ok)
        throw graph_error("sink", "container elements do not match the graph's outputs " + outputs.str());
    }
    // The source (provide) and the sink (consume) run on different threads.
    // With a known count the vector is sized once here and never moves;
    // otherwise it grows under a lock held by both sides.
    // With a known count the items already there are kept and written over:
    // an item of the right size keeps its memory (array::resize), so running
    // a graph again into the same vector allocates nothing, where clearing
    // it would free every result and allocate (and page-fault) it anew.
    sized_ = units.has_value();
    if (sized_) out_.resize(*units);
    else out_.clear();
  }
  bool provides() const override { return true; }
  bool provide(std::uint64_t seq, const shape& s, layer& l) override {
    std::unique_lock<std::mutex> lk(m_, std::defer_lock);
    if (!sized_) {
      lk.lock();
      if (out_.size() <= seq) out_.resize(seq + 1);
    }
    if (seq >= out_.size()) throw error("into(): the source produced more units than it announced");
    item_traits<Item>::resize(out_[seq], s);
    item_traits<Item>::add_to(out_[seq], l);
    return true;
  }
  void consume(work_unit& u) override {
    std::unique_lock<std::mutex> lk(m_, std::defer_lock);
    if (!sized_) lk.lock();
    if (u.seq() >= out_.size()) out_.resize(u.seq() + 1);
    Item& it = out_[u.seq()];
    // In-place graphs leave the result in the input buffers: copy it over.
    const layer& r = u.in();
    if (!(item_traits<Item>::shape(it) == r.shape())) item_traits<Item>::resize(it, r.shape());
    layer mine(r.shape());
    item_traits<Item>::add_to(it, mine);
    void* dst[layer::max_buffers];
    for (unsigned i = 0; i < mine.size(); ++i) dst[i] = mine[i]->data();
    copy_layer_into(r, mine.size(), dst, "into()");
  }
  std::string label() const override { return "sink(container)"; }

 private:
  std::vector<Item>& out_;
  bool sized_ = false;
  std::mutex m_;
};

template <class... C>
class arrays_sink final : public sink_impl {
 public:
  explicit arrays_sink(C&... c) : t_(c...) {}
  bool provides() const override { return true; }
  bool provide(std::uint64_t seq, const shape& s, layer& l) override {
    if (seq != 0) return false;
    std::apply([&](auto&... x) { (item_traits<std::decay_t<decltype(x)>>::resize(x, s), ...); }, t_);
    std::apply([&](auto&... x) { (item_traits<std::decay_t<decltype(x)>>::add_to(x, l), ...); }, t_);
    return true;
  }
  void consume(work_unit& u) override {
    if (u.seq() != 0) throw error("into_arrays: the source produced more than one unit");
    const layer& r = u.in();
    layer mine(r.shape());
    std::apply([&](auto&... x) {
      (item_traits<std::decay_t<decltype(x)>>::resize(x, r.shape()), ...);
      (item_traits<std::decay_t<decltype(x)>>::add_to(x, mine), ...);
    }, t_);
    void* dst[layer::max_buffers];
    for (unsigned i = 0; i < mine.size(); ++i) dst[i] = mine[i]->data();
    copy_layer_into(r, mine.size(), dst, "into_arrays()");
  }
  std::string label() const override { return "sink(arrays)"; }

 private:
  std::tuple<C&...> t_;
};

class callback_sink final : public sink_impl {
 public:
  callback_sink(std::function<void(const work_unit&)> f, std::function<void()> end)
      : f_(std::move(f)), end_(std::move(end)) {}
  void consume(work_unit& u) override { if (f_) f_(u); }
  void finish() override { if (end_) end_(); }
  std::string label() const override { return f_ ? "sink(for_each)" : "sink(discard)"; }
  bool writes_records() const override { return !f_; }  // discard: nothing to tell apart

 private:
  std::function<void(const work_unit&)> f_;
  std::function<void()> end_;
};

}  // namespace detail

/// Type-erased sink handle (see the factory functions below); a run takes
/// it by value.
///
/// \code
/// std::vector<std::vector<float>> out;
/// sinew::sink k = sinew::into(out);                    // or into_arrays, for_each, ...
/// g.run(sinew::from(items), std::move(k)).get();
/// \endcode
class sink {
 public:
  explicit sink(std::shared_ptr<detail::sink_impl> p) : p_(std::move(p)) {}
  detail::sink_impl& impl() const { return *p_; }
  std::shared_ptr<detail::sink_impl> ptr() const { return p_; }

 private:
  std::shared_ptr<detail::sink_impl> p_;
};

/// Results into `out[k]` for unit k (resized as needed; written in place).
/// When the source knows its length (`from`, `from_arrays`, ...), `out` is
/// resized to it and the items already there are reused: an item whose size
/// fits keeps its memory and receives the result in place.
template <class Item>
sink into(std::vector<Item>& out) {
  return sink(std::make_shared<detail::container_sink<Item>>(out));
}
/// The single unit's result buffers into these arrays.
template <class... C>
sink into_arrays(C&... arrays) {
  return sink(std::make_shared<detail::arrays_sink<C...>>(arrays...));
}
/// Calls `fn` for every unit, one at a time, then `at_end` once at end of
/// stream (not after a failure or cancellation).
inline sink for_each(std::function<void(const work_unit&)> fn, std::function<void()> at_end = nullptr) {
  return sink(std::make_shared<detail::callback_sink>(std::move(fn), std::move(at_end)));
}
/// Drops results.
inline sink discard() { return sink(std::make_shared<detail::callback_sink>(nullptr, nullptr)); }

}  // namespace sinew
