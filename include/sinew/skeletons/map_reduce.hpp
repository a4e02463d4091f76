#pragma once
/// \file map_reduce.hpp
/// `map_reduce<F, Op>`: maps a per-element functor with exactly one output,
/// then combines the results with an associative `Op`. The unit's output is
/// one element. Chunk boundaries depend only on the unit size and `chunk`,
/// and partial results are combined in chunk order, so floating-point results
/// are the same for any number of workers.
///
/// \code
/// struct Square { void operator()(float x, float* y) const { *y = x * x; } };
/// auto sum_sq = sinew::map_reduce<Square>({}, std::plus<float>{});
/// auto total  = sinew::reduce<float>(std::plus<float>{});   // identity map
/// \endcode
#include <functional>
#include <vector>

#include <sinew/skeletons/map.hpp>

namespace sinew {

struct reduce_options {
  std::size_t chunk = 16384;  ///< elements per partial result
};

namespace detail {

template <class F, class Op>
class map_reduce_exec final : public executable {
  using S = leaf_sig<F>;
  static_assert(!S::chunked && S::n_out == 1 && !S::in_place,
                "map_reduce needs a per-element functor with exactly one output pointer");
  template <std::size_t I>
  using elem_t = typename S::template tr<I>::elem;
  static constexpr std::size_t out_pos = [] {
    for (std::size_t i = 0; i < S::N; ++i)
      if (S::roles[i] == role::output) return i;
    return std::size_t(0);
  }();

 public:
  using R = elem_t<out_pos>;
  map_reduce_exec(F f, Op op, reduce_options o) : f_(f), op_(op), o_(o), in_t_(S::inputs()) {
    out_t_.types.push_back(&elem_type_of<R>());
  }

  void execute(exec_args& a) override {
    const layer& in = *a.in;
    layer& out = *a.out;
    check_layer(in, in_t_, "input");
    check_layer(out, out_t_, "output");
    require_uniform(in, "a map_reduce");
    std::size_t n = in.count();
    R* dst = out[0].template data<R>();
    if (n == 0) {
      *dst = R{};
      return;
    }
    std::size_t c = o_.chunk ? o_.chunk : 16384;
    std::size_t chunks = (n + c - 1) / c;
    std::vector<R> part(chunks);
    auto ptrs = bind(in, std::make_index_sequence<S::N>{});
    const shape* shp = &in.shape();
    auto body = [&](std::size_t cb, std::size_t ce) {
      for (std::size_t k = cb; k < ce; ++k)
        part[k] = fold(k * c, std::min(n, (k + 1) * c), shp, ptrs, std::make_index_sequence<S::N>{});
    };
    if (chunks == 1 || !a.sched) body(0, chunks);
    else a.sched->parallel_for(chunks, 1, body);
    R acc = part[0];
    for (std::size_t k = 1; k < chunks; ++k) acc = op_(acc, part[k]);
    *dst = acc;
  }

 private:
  template <std::size_t I>
  static auto ptr_of(const layer& in) {
    using T = elem_t<I>;
    if constexpr (S::roles[I] == role::input) return in[S::slots[I]].template data<T>();
    else return static_cast<T*>(nullptr);
  }
  template <std::size_t... I>
  static auto bind(const layer& in, std::index_sequence<I...>) {
    return std::make_tuple(ptr_of<I>(in)...);
  }
  template <std::size_t I, class P>
  static decltype(auto) arg(P p, std::size_t i, const shape* shp, R* tmp) {
    if constexpr (S::roles[I] == role::index) return index{i, shp};
    else if constexpr (S::roles[I] == role::output) return tmp;
    else return (p[i]);
  }
  template <class Ptrs, std::size_t... I>
  R fold(std::size_t b, std::size_t e, const shape* shp, const Ptrs& ptrs, std::index_sequence<I...>) const {
    F f = f_;
    Op op = op_;
    R acc, tmp;
    f(arg<I>(std::get<I>(ptrs), b, shp, &acc)...);
    for (std::size_t i = b + 1; i < e; ++i) {
      f(arg<I>(std::get<I>(ptrs), i, shp, &tmp)...);
      acc = op(acc, tmp);
    }
    return acc;
  }

  F f_;
  Op op_;
  reduce_options o_;
  type_list in_t_, out_t_;
};

template <class F, class Op>
class map_reduce_node final : public node_impl {
 public:
  using E = map_reduce_exec<F, Op>;
  map_reduce_node(F f, Op op, reduce_options o, std::string label)
      : f_(f), op_(op), o_(o), label_(std::move(label)) {}
  std::string label() const override { return label_; }
  type_list input_types() const override { return leaf_sig<F>::inputs(); }
  type_list output_types() const override {
    type_list t;
    t.types.push_back(&elem_type_of<typename E::R>());
    return t;
  }
  shape output_shape(const shape&) const override { return shape::d1(1); }
  std::shared_ptr<executable> compile_inline(const std::string&) const override {
    return std::make_shared<E>(f_, op_, o_);
  }

 private:
  F f_;
  Op op_;
  reduce_options o_;
  std::string label_;
};

template <class T>
struct identity_leaf {
  void operator()(T x, T* y) const { *y = x; }
};

}  // namespace detail

/// Map with `f` then combine with `op` (associative).
template <class F, class Op>
node map_reduce(F f, Op op, reduce_options o = {}) {
  return node(std::make_shared<detail::map_reduce_node<F, Op>>(
      std::move(f), std::move(op), o, "map_reduce<" + detail::short_type_name<F>() + ">"));
}

/// Combine the elements of the unit's first buffer with `op`.
template <class T, class Op>
node reduce(Op op, reduce_options o = {}) {
  return node(std::make_shared<detail::map_reduce_node<detail::identity_leaf<T>, Op>>(
      detail::identity_leaf<T>{}, std::move(op), o, "reduce<" + detail::short_type_name<T>() + ">"));
}

}  // namespace sinew
