#pragma once
/// \file map.hpp
/// `map<F>`: applies a C++ functor leaf to every element (or every chunk) of
/// a unit. Only maps split units: the unit's range is cut into chunks (never
/// inside the unit's `grain`) that run in parallel on the scheduler. A
/// per-element leaf declared `noexcept` has its loop vectorised with `omp
/// simd` (sinew::core compiles dependents with -fopenmp-simd), so at -O2 as
/// well as -O3; one that may throw runs a plain loop.
///
/// \code
/// struct Saxpy { float a; void operator()(float x, float y, float* z) const noexcept { *z = a * x + y; } };
/// std::vector<float> x(n, 1), y(n, 2), z(n);
/// sinew::graph g(sinew::map<Saxpy>({2.0f}));
/// g.run(sinew::from_arrays(x, y), sinew::into_arrays(z)).get();
/// \endcode
#include <algorithm>
#include <array>
#include <numeric>
#include <memory>
#include <string>
#include <tuple>
#include <utility>

#include <sinew/detail/item_cost.hpp>
#include <sinew/skeletons/leaf.hpp>
#include <sinew/engine/node.hpp>
#include <sinew/schedulers/scheduler.hpp>

namespace sinew {

struct map_options {
  /// Indivisible block: elements (per-element functors) or outermost indices
  /// (per-chunk functors). Chunks are multiples of it. 0 = 1.
  std::size_t grain = 0;
  /// Units smaller than this (elements, outermost indices for per-chunk
  /// functors, records for per-record ones) run inline on the calling
  /// worker. 0 = twice the task size (`min_task`), i.e. a unit runs inline
  /// when it cannot make two tasks.
  std::size_t inline_below = 0;
  /// Smallest number of elements (outermost indices for per-chunk functors,
  /// records for per-record ones) worth a task of its own. 0 = 2048
  /// elements / 1 index / 256 records. Lower it for costly leaves (e.g. 1
  /// for Series, where one element is a whole integral). Once the leaf's
  /// cost per item is measured, a task also gets as many items as take
  /// about 10 µs (detail/item_cost.hpp).
  std::size_t min_task = 0;
};

namespace detail {

template <class F>
struct leaf_sig {
  using args = functor_args<F>;
  static constexpr std::size_t N = std::tuple_size_v<args>;
  static constexpr bool chunked = first_is_chunk<args>::value;
  static constexpr bool per_record = first_is_record<args>::value;
  template <std::size_t I>
  using arg_t = std::tuple_element_t<I, args>;
  template <std::size_t I>
  using tr = std::conditional_t<chunked, chunk_arg_traits<arg_t<I>>, arg_traits<arg_t<I>>>;

  template <std::size_t... I>
  static constexpr std::array<role, N> roles_impl(std::index_sequence<I...>) { return {tr<I>::r...}; }
  static constexpr std::array<role, N> roles = roles_impl(std::make_index_sequence<N>{});

  static constexpr unsigned count(role r) {
    unsigned c = 0;
    for (role x : roles) c += (x == r);
    return c;
  }
  static constexpr unsigned n_in = count(role::input), n_out = count(role::output),
                            n_inplace = count(role::inplace);
  static constexpr bool in_place = n_inplace > 0;
  /// Slot of parameter I in its layer: inputs and in-place params number the
  /// layer-0 buffers in order, outputs the layer-1 buffers.
  static constexpr std::array<unsigned, N> slots = [] {
    std::array<unsigned, N> s{};
    unsigned in = 0, out = 0;
    for (std::size_t i = 0; i < N; ++i) {
      if (roles[i] == role::input || roles[i] == role::inplace) s[i] = in++;
      else if (roles[i] == role::output) s[i] = out++;
    }
    return s;
  }();
  static constexpr bool valid() {
    for (std::size_t i = 1; i < N; ++i)
      if (roles[i] == role::index || roles[i] == role::chunk || roles[i] == role::record) return false;  // only first
    return !(in_place && n_out > 0);
  }
  static_assert(valid(), "leaf functor: sinew::index/sinew::chunk/sinew::record may only be the first parameter, "
                         "and a leaf is either in place (T& / inout) or writes outputs (T* / out)");

  template <std::size_t... I>
  static type_list types_impl(bool outputs, std::index_sequence<I...>) {
    type_list t;
    auto add = [&](role r, const elem_type* e) {
      bool is_out = r == role::output;
      bool is_in = r == role::input || r == role::inplace;
      if ((outputs && is_out) || (!outputs && is_in)) t.types.push_back(e);
    };
    (add(tr<I>::r, elem_ptr<typename tr<I>::elem>()), ...);
    return t;
  }
  template <class T>
  static const elem_type* elem_ptr() {
    if constexpr (std::is_void_v<T> || std::is_same_v<T, index> || std::is_same_v<T, chunk> || std::is_same_v<T, record>)
      return nullptr;
    else return &elem_type_of<T>();
  }
  static type_list inputs() { return types_impl(false, std::make_index_sequence<N>{}); }
  static type_list outputs() {
    return in_place ? inputs() : types_impl(true, std::make_index_sequence<N>{});
  }
  /// Works per element without reading positions, or per record: a record
  /// batch gives it the same results as its records one by one.
  static constexpr bool batch_safe() {
    if (per_record) return true;
    if (chunked) return false;
    for (role r : roles)
      if (r == role::index) return false;
    return true;
  }
};


template <class F>
class map_exec final : public row_executable {
  using S = leaf_sig<F>;

 public:
  map_exec(const F& f, map_options o) : f_(f), o_(o), in_t_(S::inputs()), out_t_(S::outputs()) {}

  void execute(exec_args& a) override { execute_rows(a, 0, SIZE_MAX); }

  /// Runs only outermost indices [rb, min(re, rows)) of the unit: one
  /// device's share when a multi_device_map splits it (host_executor.hpp).
  void execute_rows(exec_args& a, std::size_t rb, std::size_t re) override { run_rows(a, rb, re, 0); }

  /// As execute_rows, with the task size given (`min_task` in elements, or
  /// outermost indices for per-chunk functors; 0 = the map's option): a host
  /// executor lowers it for costly elements. Returns how many tasks the rows
  /// were split into (1: run inline).
  std::size_t run_rows(exec_args& a, std::size_t rb, std::size_t re, std::size_t min_task) {
    const layer& in = *a.in;
    layer& out = *a.out;
#ifndef NDEBUG
    // Release builds rely on the check where units enter the graph (every
    // later layer is built from the tree's declared types).
    check_layer(in, in_t_, "input");
    if (!S::in_place) check_layer(out, out_t_, "output");
#endif
    if (!S::in_place) {
      if (!(out.shape() == in.shape()))
        throw error("output shape " + out.shape().str() + " differs from input shape " + in.shape().str());
    }
    // Per-chunk leaves view each buffer with its own shape; the others read
    // every buffer at one element index.
    if constexpr (!S::chunked) require_uniform(in, S::per_record ? "a per-record map" : "a per-element map");
    auto ptrs = bind(in, out, std::make_index_sequence<S::N>{});
    if constexpr (S::per_record) {
      // Records [rb, re) of the batch; a unit that is not one is one record.
      const record_index* ix = a.records && a.records->fits(in.count()) ? a.records : nullptr;
      const std::size_t n = std::min(re, ix ? ix->size() : 1), r0 = std::min(rb, n);
      const std::size_t mt = cost_.task_items(min_task ? min_task : o_.min_task ? o_.min_task : 256);
      const std::size_t lim = o_.inline_below ? o_.inline_below : 2 * mt;
      auto body = [&](std::size_t b, std::size_t e) {
        for (std::size_t i = r0 + b; i < r0 + e; ++i) {
          const std::size_t first = ix ? ix->begin(i) : 0;
          const shape rs = ix ? ix->shape_of(i, in.shape()) : in.shape();
          call_record(i, first, rs, ptrs, std::make_index_sequence<S::N>{});
        }
      };
      if (n - r0 < lim || !a.sched) return run_inline(body, n - r0, 128);
      return split(a, n - r0, 1, mt, body);
    } else if constexpr (S::chunked) {
      const shape& dom = S::in_place ? in.shape() : out.shape();
      std::size_t rows = std::min(re, dom.ext[0]);
      std::size_t r0 = std::min(rb, rows), n = rows - r0;
      std::size_t mt = cost_.task_items(min_task ? min_task : o_.min_task ? o_.min_task : 1);
      std::size_t lim = o_.inline_below ? o_.inline_below : 2 * mt;
      auto body = [&](std::size_t b, std::size_t e) {
        call_chunk(r0 + b, r0 + e, in, out, ptrs, std::make_index_sequence<S::N>{});
      };
      if (n < lim || !a.sched) return run_inline(body, n, 1);
      std::size_t inner = dom.inner() ? dom.inner() : 1;
      std::size_t g = std::max<std::size_t>(o_.grain ? o_.grain : 1, (a.grain + inner - 1) / inner);
      return split(a, n, g, mt, body);
    } else {
      std::size_t inner = in.shape().inner();
      std::size_t rows = std::min(re, in.shape().ext[0]);
      std::size_t e0 = std::min(rb, rows) * inner, n = rows * inner - e0;
      std::size_t mt = cost_.task_items(min_task ? min_task : o_.min_task ? o_.min_task : 2048);
      std::size_t lim = o_.inline_below ? o_.inline_below : 2 * mt;
      const shape* shp = &in.shape();
      auto body = [&](std::size_t b, std::size_t e) {
        run_elems(e0 + b, e0 + e, shp, ptrs, std::make_index_sequence<S::N>{});
      };
      if (n < lim || !a.sched) return run_inline(body, n, 1024);
      std::size_t g = std::lcm(o_.grain ? o_.grain : 1, a.grain ? a.grain : 1);  // only a split needs it
      return split(a, n, g, mt, body);
    }
  }

  /// Parallel loop over [0, n) in blocks that are multiples of `g` (the
  /// indivisible unit), each task at least `min_items` long where possible.
  /// The first task is timed (the cost per item sizes later splits).
  /// Returns the number of tasks.
  template <class Body>
  std::size_t split(exec_args& a, std::size_t n, std::size_t g, std::size_t min_items, Body& body) {
    std::size_t blocks = (n + g - 1) / g;
    const std::size_t per_task = cost_.steady(std::max<std::size_t>(1, (min_items + g - 1) / g));
    // Successive units give each worker the blocks it ran for the last one
    // (steal, deal; tbb does so for every loop). A run's first unit goes
    // without: between runs the caller has usually touched the data (filled
    // the input, read the output), so where the blocks ran says little.
    const locality_hint hint{.affinity = a.seq == 0 ? nullptr : &affinity_};
    a.sched->parallel_for_at(hint, blocks, per_task, [&](std::size_t bb, std::size_t be) {
      if (bb == 0) cost_.timed(body, 0, std::min(n, be * g));
      else body(bb * g, std::min(n, be * g));
    });
    return (blocks + per_task - 1) / per_task;
  }
  /// body(0, n) on this thread, timed when it has `timed_from` items or more
  /// (two clock reads would weigh on a unit of a few elements).
  template <class Body>
  std::size_t run_inline(Body& body, std::size_t n, std::size_t timed_from) {
    if (n >= timed_from) cost_.timed(body, 0, n);
    else body(0, n);
    return 1;
  }

 private:
  template <std::size_t I>
  using elem_t = typename S::template tr<I>::elem;

  template <std::size_t I>
  static auto ptr_of(const layer& in, const layer& out) {
    using T = elem_t<I>;
    if constexpr (std::is_void_v<T> || S::roles[I] == role::index || S::roles[I] == role::chunk ||
                  S::roles[I] == role::record)
      return static_cast<void*>(nullptr);
    else if constexpr (S::roles[I] == role::output)
      return out[S::slots[I]].template data<T>();
    else
      return in[S::slots[I]].template data<T>();
  }
  template <std::size_t... I>
  static auto bind(const layer& in, const layer& out, std::index_sequence<I...>) {
    return std::make_tuple(ptr_of<I>(in, out)...);
  }

  template <std::size_t I, class P>
  static decltype(auto) elem_arg(P p, std::size_t i, const shape* shp) noexcept {
    if constexpr (S::roles[I] == role::index) return index{i, shp};
    else if constexpr (S::roles[I] == role::output) return p + i;
    else return (p[i]);  // input (copied or const&) or in-place (T&)
  }
  template <class Ptrs, std::size_t... I>
  void run_elems(std::size_t b, std::size_t e, const shape* shp, const Ptrs& ptrs,
                 std::index_sequence<I...>) const {
    F f = f_;  // a local copy the optimiser can keep in registers
    auto local = ptrs;
    if constexpr (noexcept(f(elem_arg<I>(std::get<I>(local), b, shp)...))) {
      // Elements are independent (each a leaf call of its own); `omp simd`
      // vectorises at any optimisation level. No exception may leave a simd
      // loop, so a leaf that may throw runs the loop below.
#if defined(SINEW_OPENMP_SIMD) || defined(_OPENMP)
#pragma omp simd
#endif
      for (std::size_t i = b; i < e; ++i) f(elem_arg<I>(std::get<I>(local), i, shp)...);
    } else {
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC ivdep
#endif
      for (std::size_t i = b; i < e; ++i) f(elem_arg<I>(std::get<I>(local), i, shp)...);
    }
  }

  /// A view of a whole buffer, with the buffer's own shape.
  template <std::size_t I, class P>
  static auto chunk_arg(P p, std::size_t b, std::size_t e, const layer& in, const layer& out) {
    using A = std::remove_cv_t<std::remove_reference_t<typename S::template arg_t<I>>>;
    if constexpr (S::roles[I] == role::chunk) return chunk{b, e};
    else if constexpr (S::roles[I] == role::output) return A(p, out.shape_of(S::slots[I]));
    else return A(p, in.shape_of(S::slots[I]));
  }
  template <class Ptrs, std::size_t... I>
  void call_chunk(std::size_t b, std::size_t e, const layer& in, const layer& out, const Ptrs& ptrs,
                  std::index_sequence<I...>) const {
    f_(chunk_arg<I>(std::get<I>(ptrs), b, e, in, out)...);
  }

  template <class Ptrs, std::size_t... I>
  void call_record(std::size_t i, std::size_t first, const shape& rs, const Ptrs& ptrs,
                   std::index_sequence<I...>) const {
    f_(record_arg<I>(std::get<I>(ptrs), i, first, rs)...);
  }
  template <std::size_t I, class P>
  static auto record_arg(P p, std::size_t i, std::size_t first, const shape& rs) {
    using A = std::remove_cv_t<std::remove_reference_t<typename S::template arg_t<I>>>;
    if constexpr (S::roles[I] == role::record) return record{i, first};
    else return A(p + first, rs);
  }

  F f_;
  map_options o_;
  type_list in_t_, out_t_;
  item_cost cost_;  // sizes tasks from the measured cost per item
  loop_affinity affinity_;  // where the last unit's blocks ran
};

template <class F>
class map_node final : public node_impl {
  using S = leaf_sig<F>;

 public:
  map_node(F f, map_options o) : f_(std::move(f)), o_(o) {}
  std::string label() const override { return "map<" + short_type_name<F>() + ">"; }
  type_list input_types() const override { return S::inputs(); }
  type_list output_types() const override { return S::outputs(); }
  bool in_place() const override { return S::in_place; }
  std::string whole_unit_leaf(const std::string& path) const override { return S::batch_safe() ? std::string() : path; }
  std::shared_ptr<executable> compile_inline(const std::string&) const override {
    return std::make_shared<map_exec<F>>(f_, o_);
  }

 private:
  F f_;
  map_options o_;
};

}  // namespace detail

/// A map over a C++ functor leaf (see leaf.hpp for the functor forms).
template <class F>
node map(F f = F{}, map_options o = {}) {
  return node(std::make_shared<detail::map_node<F>>(std::move(f), o));
}

}  // namespace sinew
