#pragma once
/// \file group.hpp
/// `sinew::group`: the work-group a group kernel's body runs for
/// (skeletons/group_kernel.hpp) -- its ids and sizes, local memory, and the
/// regions that run its work-items: `each` and the loops whose work-item
/// order the policy picks (depth-first or breadth-first, divergent or not).
#include <algorithm>
#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <new>
#include <span>
#include <type_traits>
#include <utility>

#include <sinew/detail/group_arena.hpp>
#include <sinew/detail/group_launch.hpp>
#include <sinew/detail/group_order.hpp>
#include <sinew/detail/group_plan.hpp>
#include <sinew/skeletons/group_item.hpp>
#include <sinew/skeletons/group_options.hpp>

// The regions and work-item loops are inlined into the kernel's body, down
// to the body of the loop: trip counts the kernel states as constants then
// reach the loops (short nests unroll, work-item loops vectorise), and the
// code a calibration group times (order_policy::measured) is the code that
// runs once the order is decided -- a copy compiled apart can be optimised
// differently (a short nest left rolled) and mislead the calibration.
#if defined(__GNUC__)
#define SINEW_GROUP_INLINE [[gnu::always_inline]] inline
#define SINEW_GROUP_INLINE_LAMBDA __attribute__((always_inline))
#else
#define SINEW_GROUP_INLINE inline
#define SINEW_GROUP_INLINE_LAMBDA
#endif

namespace sinew {

namespace detail {
template <class B>
inline constexpr char loop_site_tag = 0;  // its address names a loop (one per body type)

struct all_items {
  constexpr bool operator()(const item&) const noexcept { return true; }
};
}  // namespace detail

/// The work-group a kernel body runs for: its sizes and ids, its local
/// memory, and the regions (`each`, `loop`) that run work-items.
///
/// \code
/// void operator()(sinew::group& g, sinew::in<int> x, sinew::out<int> y) const {
///   auto sum = g.local_mem<int>(1);
///   g.each([&](const sinew::item& it) { if (it.local_linear() == 0) sum[0] = 0; });
///   g.each([&](const sinew::item& it) { if (it.in_range()) sinew::group::atomic_add(sum[0], x[it.global_id(0)]); });
///   g.each([&](const sinew::item& it) { if (it.in_range()) y[it.global_id(0)] = sum[0]; });
/// }
/// \endcode
class group {
 public:
  unsigned rank() const noexcept { return L_->local.rank; }
  /// Work-items per dimension (the enqueued size; every group is full).
  std::size_t local_size(unsigned d) const noexcept { return L_->local[d]; }
  std::size_t local_count() const noexcept { return count_; }
  std::size_t group_id(unsigned d) const noexcept { return gid_[d]; }
  std::size_t num_groups(unsigned d) const noexcept { return L_->groups[d]; }
  /// The index space as given (before rounding up to whole groups).
  std::size_t global_size(unsigned d) const noexcept { return L_->lim[d]; }
  /// Global id of this group's first work-item along `d`.
  std::size_t global_offset(unsigned d) const noexcept { return base_[d]; }

  /// `n` elements of group-local memory (uninitialised, as in OpenCL),
  /// 64-byte aligned, valid until the group ends.
  template <class T>
  std::span<T> local_mem(std::size_t n) {
    static_assert(std::is_trivially_destructible_v<T> && std::is_trivially_default_constructible_v<T>,
                  "local memory holds trivial types");
    return {static_cast<T*>(arena_->allocate(n * sizeof(T), std::max(alignof(T), detail::group_arena::align))), n};
  }
  /// One value-initialised T per work-item (a private variable that lives
  /// across barriers), 64-byte aligned.
  template <class T>
  per_item_array<T> per_item() {
    static_assert(std::is_trivially_destructible_v<T>, "per-item values hold trivially destructible types");
    T* p = static_cast<T*>(arena_->allocate(count_ * sizeof(T), std::max(alignof(T), detail::group_arena::align)));
    for (std::size_t i = 0; i < count_; ++i) new (p + i) T{};
    return {p, count_};
  }

  /// A region: `f(item)` for every work-item, then a barrier.
  template <class F>
  SINEW_GROUP_INLINE void each(F&& f) {
    for_items(f);
  }

  /// A region made of one loop: `body(item, k)` for k in [0, n) and every
  /// work-item, in the order the policy picks from `accesses` (the memory
  /// accesses of the body, [Kim15, Table 1]). A body returning bool leaves
  /// the loop for its work-item when it returns false (divergent loop).
  template <class B>
  SINEW_GROUP_INLINE void loop(std::size_t n, access_list accesses, B&& body) {
    detail::all_items all;
    run_loop<1>({n}, {declared_order(n, accesses)}, all, body);
  }
  /// A two-deep loop nest: `body(item, k0, k1)`; `outer` / `inner` are the
  /// accesses with their strides along k0 / k1. A bool body returning false
  /// leaves the whole nest for its work-item.
  template <class B>
  SINEW_GROUP_INLINE void loop(std::array<std::size_t, 2> n, access_list outer, access_list inner, B&& body) {
    detail::all_items all;
    run_loop<2>(n, {declared_order(n[0], outer), declared_order(n[1], inner)}, all, body);
  }
  /// A loop in a divergent branch: only work-items with `pred(item)` run it.
  template <class P, class B>
  SINEW_GROUP_INLINE void loop_where(P&& pred, std::size_t n, access_list accesses, B&& body) {
    run_loop<1>({n}, {declared_order(n, accesses)}, pred, body);
  }
  template <class P, class B>
  SINEW_GROUP_INLINE void loop_where(P&& pred, std::array<std::size_t, 2> n, access_list outer, access_list inner, B&& body) {
    run_loop<2>(n, {declared_order(n[0], outer), declared_order(n[1], inner)}, pred, body);
  }
  /// A loop carrying one per-work-item value (an accumulator):
  /// `body(item, k, T& v)`. Depth-first, `v` is a local copy of `carry[item]`
  /// for the whole loop (a register: the scalar expansion is avoided,
  /// [Kim15, §2]), written back at the end; breadth-first it is `carry[item]`, a
  /// memory access of loop stride 0 and work-item stride 1 on every
  /// iteration, so the declared rule counts it (at every level) as one
  /// access more that prefers depth-first (Table 1, L0 W1).
  template <class T, class B>
  SINEW_GROUP_INLINE void loop(std::size_t n, access_list accesses, per_item_array<T> carry, B&& body) {
    detail::all_items all;
    run_carried<1>({n}, {declared_order(n, accesses, true)}, all, carry, body);
  }
  template <class T, class B>
  SINEW_GROUP_INLINE void loop(std::array<std::size_t, 2> n, access_list outer, access_list inner, per_item_array<T> carry, B&& body) {
    detail::all_items all;
    run_carried<2>(n, {declared_order(n[0], outer, true), declared_order(n[1], inner, true)}, all, carry, body);
  }

  /// Group-local atomics: plain read-modify-write, since one worker runs the
  /// whole group one work-item at a time [Zhang18, §3.2.3]. Return the old value.
  template <class T>
  static T atomic_add(T& x, T v) noexcept { T o = x; x = o + v; return o; }
  template <class T>
  static T atomic_sub(T& x, T v) noexcept { T o = x; x = o - v; return o; }
  template <class T>
  static T atomic_inc(T& x) noexcept { return atomic_add(x, T(1)); }
  template <class T>
  static T atomic_min(T& x, T v) noexcept { T o = x; x = v < o ? v : o; return o; }
  template <class T>
  static T atomic_max(T& x, T v) noexcept { T o = x; x = o < v ? v : o; return o; }
  template <class T>
  static T atomic_xchg(T& x, T v) noexcept { T o = x; x = v; return o; }
  template <class T>
  static T atomic_cmpxchg(T& x, T expected, T v) noexcept { T o = x; if (o == expected) x = v; return o; }

  // -- used by the executor
  struct mode {
    order_policy policy = order_policy::declared;
    detail::group_plan* plan = nullptr;  ///< measured
    bool calibrating = false;            ///< time each loop (this group is a sample)
    unsigned sample = 0;                 ///< index of this calibration group
    std::size_t unroll_limit = 0;        ///< see group_options::unroll_limit
    detail::group_sample* times = nullptr;  ///< calibrating: this group's loop times
  };
  group(const detail::group_launch& L, std::size_t linear_group, detail::group_arena& a, const mode& m)
      : L_(&L), arena_(&a), mode_(m) {
    count_ = L.local.count();
    std::size_t r = linear_group;
    for (int d = 2; d >= 0; --d) {
      gid_[d] = r % L.groups.ext[d];
      r /= L.groups.ext[d];
      base_[d] = gid_[d] * L.local.ext[d];
    }
  }

 private:
  template <class F>
  SINEW_GROUP_INLINE void for_items(F& f) const {
    const std::size_t* lim = L_->lim.data();
    const std::size_t n0 = L_->local.ext[0], n1 = L_->local.ext[1], n2 = L_->local.ext[2];
    const std::size_t b0 = base_[0], b1 = base_[1], b2 = base_[2];
    switch (L_->local.rank) {
      case 1:
        for (std::size_t x = 0; x < n0; ++x) f(item{x, {x, 0, 0}, {b0 + x, 0, 0}, lim});
        break;
      case 2:
        for (std::size_t y = 0; y < n0; ++y)
          for (std::size_t x = 0; x < n1; ++x) f(item{y * n1 + x, {y, x, 0}, {b0 + y, b1 + x, 0}, lim});
        break;
      default:
        for (std::size_t z = 0; z < n0; ++z)
          for (std::size_t y = 0; y < n1; ++y)
            for (std::size_t x = 0; x < n2; ++x)
              f(item{(z * n1 + y) * n2 + x, {z, y, x}, {b0 + z, b1 + y, b2 + x}, lim});
    }
  }

  template <class B, std::size_t D>
  static constexpr bool returns_void() {
    if constexpr (D == 1) return std::is_void_v<std::invoke_result_t<B&, const item&, std::size_t>>;
    else return std::is_void_v<std::invoke_result_t<B&, const item&, std::size_t, std::size_t>>;
  }
  template <std::size_t D, class B>
  SINEW_GROUP_INLINE static bool call(B& body, const item& it, const std::array<std::size_t, D>& k) {
    if constexpr (returns_void<B, D>()) {
      if constexpr (D == 1) body(it, k[0]);
      else body(it, k[0], k[1]);
      return true;
    } else {
      if constexpr (D == 1) return static_cast<bool>(body(it, k[0]));
      else return static_cast<bool>(body(it, k[0], k[1]));
    }
  }
  /// Loop levels [Lv, D) for one work-item (its depth-first part). False if
  /// the body asked to leave the nest.
  template <std::size_t Lv, std::size_t D, class B>
  SINEW_GROUP_INLINE static bool inner(B& body, const item& it, std::array<std::size_t, D> k, const std::array<std::size_t, D>& n) {
    if constexpr (Lv == D) {
      return call<D>(body, it, k);
    } else {
      for (std::size_t i = 0; i < n[Lv]; ++i) {
        k[Lv] = i;
        if (!inner<Lv + 1, D>(body, it, k, n)) return false;
      }
      return true;
    }
  }

  /// Predicate state of a divergent breadth-first nest [Kim15, §3.4].
  struct preds {
    unsigned char* on = nullptr;
    std::size_t active = 0;
  };

  /// One pass of the work-item loop at the current outer indices.
  template <std::size_t P, std::size_t D, bool Divergent, class B>
  SINEW_GROUP_INLINE void item_pass(B& body, const std::array<std::size_t, D>& k, const std::array<std::size_t, D>& n, preds& p) {
    if constexpr (!Divergent) {
      // Convergent: a plain work-item loop the compiler can vectorise.
      auto f = [&](const item& it) SINEW_GROUP_INLINE_LAMBDA { inner<P, D>(body, it, k, n); };
      for_items(f);
    } else if (p.active == count_) {
      // All active (runtime check, [Kim15, Fig. 6]): no predicate test.
      auto f = [&](const item& it) SINEW_GROUP_INLINE_LAMBDA {
        bool stay = inner<P, D>(body, it, k, n);
        p.on[it.lin] = stay;
        p.active -= !stay;
      };
      for_items(f);
    } else {
      auto f = [&](const item& it) SINEW_GROUP_INLINE_LAMBDA {
        if (p.on[it.lin] && !inner<P, D>(body, it, k, n)) {
          p.on[it.lin] = 0;
          --p.active;
        }
      };
      for_items(f);
    }
  }
  /// Loop levels [Lv, P) outside the work-item loop (breadth-first).
  template <std::size_t Lv, std::size_t P, std::size_t D, bool Divergent, class B>
  SINEW_GROUP_INLINE void outer(B& body, std::array<std::size_t, D>& k, const std::array<std::size_t, D>& n, preds& p) {
    if constexpr (Lv == P) {
      item_pass<P, D, Divergent>(body, k, n, p);
    } else {
      for (std::size_t i = 0; i < n[Lv]; ++i) {
        k[Lv] = i;
        outer<Lv + 1, P, D, Divergent>(body, k, n, p);
        if (Divergent && p.active == 0) return;  // every work-item has left the loop
      }
    }
  }
  /// The nest with the work-item loop at position P.
  template <std::size_t P, std::size_t D, class Pred, class B>
  SINEW_GROUP_INLINE void nest(const std::array<std::size_t, D>& n, Pred& pred, B& body) {
    constexpr bool has_pred = !std::is_same_v<std::decay_t<Pred>, detail::all_items>;
    constexpr bool divergent = has_pred || !returns_void<B, D>();
    if constexpr (P == 0) {
      // Depth-first: one work-item loop around the whole nest; divergence is
      // just control flow inside it.
      auto f = [&](const item& it) SINEW_GROUP_INLINE_LAMBDA {
        if constexpr (has_pred)
          if (!pred(it)) return;
        inner<0, D>(body, it, std::array<std::size_t, D>{}, n);
      };
      for_items(f);
    } else {
      preds p;
      if constexpr (divergent) {
        p.on = static_cast<unsigned char*>(arena_->allocate(count_, 1));
        auto init = [&](const item& it) SINEW_GROUP_INLINE_LAMBDA {
          bool on = true;
          if constexpr (has_pred) on = static_cast<bool>(pred(it));
          p.on[it.lin] = on;
          p.active += on;
        };
        for_items(init);
        if (p.active == 0) return;
      }
      std::array<std::size_t, D> k{};
      outer<0, P, D, divergent>(body, k, n, p);
    }
  }
  template <std::size_t D, class Pred, class B>
  SINEW_GROUP_INLINE void run_at(unsigned pos, const std::array<std::size_t, D>& n, Pred& pred, B& body) {
    if (pos == 0) nest<0, D>(n, pred, body);
    else if (pos == 1 || D == 1) nest<1, D>(n, pred, body);
    else if constexpr (D >= 2) nest<2, D>(n, pred, body);
  }
  template <std::size_t D, class Pred, class B>
  SINEW_GROUP_INLINE void run_loop(const std::array<std::size_t, D>& n, const std::array<item_order, D>& declared, Pred& pred,
                B& body) {
    in_order<D, B>(declared, [&](unsigned pos) SINEW_GROUP_INLINE_LAMBDA { run_at<D>(pos, n, pred, body); });
  }
  template <std::size_t D, class Pred, class T, class B>
  SINEW_GROUP_INLINE void run_carried(const std::array<std::size_t, D>& n, const std::array<item_order, D>& declared, Pred& pred,
                   per_item_array<T> carry, B& body) {
    in_order<D, B>(declared, [&](unsigned pos) SINEW_GROUP_INLINE_LAMBDA {
      if (pos == 0) {
        auto f = [&](const item& it) SINEW_GROUP_INLINE_LAMBDA {
          if constexpr (!std::is_same_v<std::decay_t<Pred>, detail::all_items>)
            if (!pred(it)) return;
          T v = carry[it];
          auto b = [&](const item& i, auto... k) SINEW_GROUP_INLINE_LAMBDA { return body(i, k..., v); };
          inner<0, D>(b, it, std::array<std::size_t, D>{}, n);
          carry[it] = v;
        };
        for_items(f);
      } else {
        auto b = [&](const item& i, auto... k) SINEW_GROUP_INLINE_LAMBDA { return body(i, k..., carry[i]); };
        run_at<D>(pos, n, pred, b);
      }
    });
  }
  /// The declared order of one loop level (Table 1, or depth-first when
  /// the level is short enough to be unrolled); `carried`: the loop's
  /// per-item value counts as an L0 W1 access.
  item_order declared_order(std::size_t n, const access_list& a, bool carried = false) const noexcept {
    return n <= mode_.unroll_limit ? item_order::depth_first : choose_order(a.span(), carried ? 1u : 0u);
  }
  /// Runs `run(position)` with the position the policy gives loop B.
  template <std::size_t D, class B, class Run>
  SINEW_GROUP_INLINE void in_order(const std::array<item_order, D>& declared, Run&& run) {
    static_assert(D <= detail::group_plan::max_depth, "loop nests are at most 2 deep");
    const void* key = &detail::loop_site_tag<std::decay_t<B>>;
    const unsigned rule = nest_position(declared);
    unsigned pos = rule;
    switch (mode_.policy) {
      case order_policy::declared: break;
      case order_policy::depth_first: pos = 0; break;
      case order_policy::breadth_first: pos = unsigned(D); break;
      case order_policy::measured:
        if (mode_.calibrating) pos = mode_.sample % unsigned(D + 1);  // candidates take turns
        else if (mode_.plan) pos = mode_.plan->decided_position(key, rule);
        break;
    }
    // One call site for timed and untimed runs: a calibration group times
    // the same machine code that runs once the order is decided.
    std::chrono::steady_clock::time_point t0{};
    if (mode_.calibrating) t0 = std::chrono::steady_clock::now();
    run(pos);
    if (mode_.calibrating) {
      auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - t0);
      mode_.times->add(key, unsigned(D), rule, pos, std::uint64_t(ns.count()) + 1);
    }
  }

  const detail::group_launch* L_;
  detail::group_arena* arena_;
  mode mode_;
  std::size_t count_ = 1;
  std::array<std::size_t, 3> gid_{}, base_{};
};

}  // namespace sinew
