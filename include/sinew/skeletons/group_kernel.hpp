#pragma once
/// \file group_kernel.hpp
/// `group_kernel<K>`: a leaf written in the OpenCL style -- an index space of
/// work-items grouped into work-groups, with group-local memory and barriers
/// -- run on CPU workers without OpenCL and without a thread per work-item.
///
/// A work-group runs on one worker. The kernel's `operator()` is called once
/// per group with a `sinew::group&` and views of the unit's buffers; it is
/// written as a sequence of *regions*: each `g.each(...)` / `g.loop(...)`
/// call runs its body for every work-item of the group (a work-item loop,
/// seed 004 §3.2.2, seed 002 §2) and a barrier separates consecutive calls,
/// so barrier semantics are exact. Control flow between regions is uniform
/// (the same for the whole group), which is what OpenCL requires of code
/// around a barrier; a barrier inside a uniform loop is a C++ loop around
/// regions. Values that live across barriers are kept per work-item
/// (`g.per_item<T>()`, the scalar expansion of seed 004 §3.4.1); group-local
/// memory (`g.local_mem<T>(n)`) and group-local atomics (`group::atomic_add`,
/// ...) are plain memory and plain read-modify-write (seed 004 §3.2.3, Fig. 6),
/// since no two work-items of a group ever run at once.
///
/// A loop inside a region (`g.loop(K, accesses, body)`) runs depth-first or
/// breadth-first over the work-items (seed 002): chosen from the strides the
/// kernel declares for the loop's memory accesses (Table 1), by timing both
/// orders on the first groups (`order_policy::measured`), or forced. A loop
/// may carry a per-work-item accumulator (`g.loop(K, accesses, acc, body)`),
/// kept in a register when the loop runs depth-first.
///
/// The index space is rounded up to whole work-groups (the usual OpenCL 1.2
/// host idiom): work-items past the range run too, so every work-item reaches
/// every barrier, and must not touch data out of range (`it.in_range()`).
/// Dimension 0 is the outermost (as in `sinew::shape`); the last dimension is
/// the fastest, i.e. OpenCL's dimension 0.
///
/// \code
/// struct Scale2 {   // out[i] = 2 * in[i], staged through local memory
///   void operator()(sinew::group& g, sinew::in<float> x, sinew::out<float> y) const {
///     auto tile = g.local_mem<float>(g.local_count());
///     g.each([&](const sinew::item& it) { tile[it.local_linear()] = it.in_range() ? x[it.global_id(0)] : 0; });
///     g.each([&](const sinew::item& it) { if (it.in_range()) y[it.global_id(0)] = 2 * tile[it.local_linear()]; });
///   }
/// };
/// sinew::graph gr(sinew::group_kernel<Scale2>(sinew::range1d{64}));  // index space = the unit's shape
/// gr.run(sinew::from_arrays(x), sinew::into_arrays(y)).get();
/// \endcode
#include <algorithm>
#include <array>
#include <chrono>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include <sinew/detail/group_arena.hpp>
#include <sinew/detail/group_order.hpp>
#include <sinew/detail/group_plan.hpp>
#include <sinew/skeletons/leaf.hpp>
#include <sinew/engine/node.hpp>
#include <sinew/schedulers/scheduler.hpp>

// The regions and work-item loops are inlined into the kernel's body, down
// to the body of the loop: trip counts the kernel states as constants then
// reach the loops (short nests unroll, work-item loops vectorise), and the
// code a calibration group times (order_policy::measured) is the code that
// runs once the order is decided -- with the timed call compiled apart,
// GCC 12 left the 3x3 stencil nest un-unrolled in one copy only, and the
// calibration misjudged it by 3x.
#if defined(__GNUC__)
#define SINEW_GROUP_INLINE [[gnu::always_inline]] inline
#define SINEW_GROUP_INLINE_LAMBDA __attribute__((always_inline))
#else
#define SINEW_GROUP_INLINE inline
#define SINEW_GROUP_INLINE_LAMBDA
#endif

namespace sinew {

/// A 1-, 2- or 3-D index space; dimension 0 is the outermost.
///
/// \code
/// sinew::range r = sinew::range2d{1080, 1920};   // rows, columns
/// assert(r.rank == 2 && r.count() == 1080 * 1920 && r[2] == 1);
/// \endcode
struct range {
  unsigned rank = 1;
  std::array<std::size_t, 3> ext{1, 1, 1};
  constexpr std::size_t operator[](unsigned d) const noexcept { return d < 3 ? ext[d] : 1; }
  constexpr std::size_t count() const noexcept { return ext[0] * ext[1] * ext[2]; }
  /// "[64x64]".
  std::string str() const {
    std::string s = "[";
    for (unsigned d = 0; d < rank; ++d) s += (d ? "x" : "") + std::to_string(ext[d]);
    return s + "]";
  }
  friend constexpr bool operator==(const range&, const range&) = default;
};
struct range1d : range {
  constexpr range1d(std::size_t n) : range{1, {n, 1, 1}} {}
};
struct range2d : range {
  constexpr range2d(std::size_t rows, std::size_t cols) : range{2, {rows, cols, 1}} {}
};
struct range3d : range {
  constexpr range3d(std::size_t planes, std::size_t rows, std::size_t cols) : range{3, {planes, rows, cols}} {}
};

/// How a group kernel orders work-items around the loops of its regions.
enum class order_policy {
  declared,       ///< from the access strides each `loop` declares (seed 002, Table 1)
  measured,       ///< time every order on the first groups; keep the fastest if it beats the declared order by more than noise
  depth_first,    ///< always depth-first (what most OpenCL CPU compilers do)
  breadth_first,  ///< always breadth-first
};

/// \code
/// auto leaf = sinew::group_kernel<Stencil>(sinew::range2d{16, 16}, Stencil{},
///                                          {.order = sinew::order_policy::measured, .groups_per_task = 4});
/// \endcode
struct group_options {
  order_policy order = order_policy::declared;
  /// measured: calibration groups per candidate order (at least
  /// `3 * calibration_rounds` groups run serially while being timed; up to
  /// 4 times as many while the samples stay noisy).
  unsigned calibration_rounds = 8;
  /// Work-groups per scheduler task at least; 0 = 1.
  std::size_t groups_per_task = 0;
  /// declared: a loop level of at most this many iterations runs depth-first
  /// whatever its strides -- the seed's compiler unrolls such loops, so they
  /// are never scheduled (seed 002 §4.2). 0 = every loop follows Table 1.
  std::size_t unroll_limit = 4;
};

/// One work-item as a region body sees it.
///
/// \code
/// g.each([&](const sinew::item& it) {
///   if (it.in_range()) out(it.global_id(0), it.global_id(1)) = tile[it.local_linear()];
/// });
/// \endcode
struct item {
  std::size_t lin;                 ///< local linear id (row-major in the group)
  std::array<std::size_t, 3> l;    ///< local id per dimension
  std::array<std::size_t, 3> g;    ///< global id per dimension
  const std::size_t* lim;          ///< global range per dimension (1 past the rank)

  std::size_t local_linear() const noexcept { return lin; }
  std::size_t local_id(unsigned d) const noexcept { return l[d]; }
  std::size_t global_id(unsigned d) const noexcept { return g[d]; }
  /// False for the work-items that pad the last group of a dimension.
  bool in_range() const noexcept { return g[0] < lim[0] && g[1] < lim[1] && g[2] < lim[2]; }
};

/// A value per work-item that lives across barriers, indexed by the item.
///
/// \code
/// auto sum = g.per_item<int>();                                  // all 0
/// g.each([&](const sinew::item& it) { sum[it] = x[it.global_id(0)]; });
/// g.each([&](const sinew::item& it) { y[it.global_id(0)] = sum[it] * 2; });  // after a barrier
/// \endcode
template <class T>
class per_item_array {
 public:
  per_item_array(T* p, std::size_t n) : p_(p), n_(n) {}
  T& operator[](const item& it) const noexcept { return p_[it.lin]; }
  T& operator[](std::size_t local_linear) const noexcept { return p_[local_linear]; }
  std::size_t size() const noexcept { return n_; }
  T* data() const noexcept { return p_; }

 private:
  T* p_;
  std::size_t n_;
};

/// The accesses a loop declares: a braced list, a std::array or a span.
///
/// \code
/// g.loop(n, {sinew::mem_access{1, 0}, sinew::mem_access{0, 1}}, body);   // braced list
/// static constexpr std::array<sinew::mem_access, 1> acc{sinew::mem_access{1, 0}};
/// g.loop(n, acc, body);                                                 // array
/// \endcode
class access_list {
 public:
  access_list(std::initializer_list<mem_access> l) : s_(l.begin(), l.size()) {}
  access_list(std::span<const mem_access> s) : s_(s) {}
  template <std::size_t N>
  access_list(const std::array<mem_access, N>& a) : s_(a.data(), N) {}
  std::span<const mem_access> span() const noexcept { return s_; }

 private:
  std::span<const mem_access> s_;
};

namespace detail {
template <class B>
inline constexpr char loop_site_tag = 0;  // its address names a loop (one per body type)

struct all_items {
  constexpr bool operator()(const item&) const noexcept { return true; }
};

struct group_launch {
  range global;       ///< the index space as given (not rounded up)
  range local;
  range groups;       ///< work-groups per dimension
  std::array<std::size_t, 3> lim{1, 1, 1};
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
  /// accesses of the body, seed 002 Table 1). A body returning bool leaves
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
  /// for the whole loop (a register: the scalar expansion is avoided, seed
  /// 002 §2), written back at the end; breadth-first it is `carry[item]`, a
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
  /// whole group one work-item at a time (seed 004 §3.2.3). Return the old value.
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

  /// Predicate state of a divergent breadth-first nest (seed 002 §3.4).
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
      // All active (runtime check, seed 002 Fig. 6): no predicate test.
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

namespace detail {

template <class K>
concept kernel_with_output_shape = requires(const K& k, const shape& s, const range& groups) {
  { k.output_shape(s, groups) } -> std::convertible_to<shape>;
};
template <class K>
concept kernel_with_global_range = requires(const K& k, const shape& s) {
  { k.global_range(s) } -> std::convertible_to<range>;
};

/// Signature of a group kernel: `(group&, in/out/inout views...)`.
template <class K>
struct group_sig {
  using args = functor_args<K>;
  static constexpr std::size_t N = std::tuple_size_v<args>;
  static_assert(N >= 1 && std::is_same_v<std::tuple_element_t<0, args>, group&>,
                "a group kernel's operator() takes sinew::group& first, then sinew::in/out/inout views");
  template <std::size_t I>
  using arg_t = std::remove_cv_t<std::remove_reference_t<std::tuple_element_t<I, args>>>;
  template <std::size_t I>
  using tr = chunk_arg_traits<arg_t<I>>;

  template <std::size_t... I>
  static constexpr std::array<role, N - 1> roles_impl(std::index_sequence<I...>) { return {tr<I + 1>::r...}; }
  static constexpr std::array<role, N - 1> roles = roles_impl(std::make_index_sequence<N - 1>{});
  static constexpr bool in_place = [] {
    for (role r : roles)
      if (r == role::inplace) return true;
    return false;
  }();
  static constexpr bool valid = [] {
    bool out = false;
    for (role r : roles) {
      if (r != role::input && r != role::output && r != role::inplace) return false;
      out = out || r == role::output;
    }
    return !(in_place && out);
  }();
  static_assert(valid, "group kernel views are sinew::in/out/inout, and a kernel either updates "
                       "its input in place (inout) or writes outputs (out), not both");

  static type_list types(bool outputs) {
    type_list t;
    add_types<0>(t, outputs);
    return t;
  }
  template <std::size_t I>
  static void add_types(type_list& t, bool outputs) {
    if constexpr (I < N - 1) {
      role r = roles[I];
      bool is_out = r == role::output, is_in = r == role::input || r == role::inplace;
      if ((outputs && (is_out || (in_place && is_in))) || (!outputs && is_in))
        t.types.push_back(&elem_type_of<typename tr<I + 1>::elem>());
      add_types<I + 1>(t, outputs);
    }
  }
};

/// Index space of a launch: the explicit one, the kernel's `global_range`,
/// or the input shape; rounded up to whole groups.
template <class K>
group_launch make_launch(const K& k, const range* global, const range& local, const shape& in) {
  group_launch L;
  L.local = local;
  if (global) L.global = *global;
  else if constexpr (kernel_with_global_range<K>) L.global = k.global_range(in);
  else L.global = range{in.rank, in.ext};
  if (L.global.rank != local.rank)
    throw error("index space " + L.global.str() + " has rank " + std::to_string(L.global.rank) +
                " but the work-group " + local.str() + " has rank " + std::to_string(local.rank));
  L.groups.rank = local.rank;
  for (unsigned d = 0; d < 3; ++d) {
    std::size_t g = d < local.rank ? L.global.ext[d] : 1, l = d < local.rank ? local.ext[d] : 1;
    L.lim[d] = g;
    L.groups.ext[d] = (g + l - 1) / l;
  }
  return L;
}

template <class K>
class group_exec final : public executable {
  using S = group_sig<K>;

 public:
  group_exec(const K& k, std::optional<range> global, range local, group_options o)
      : k_(k), global_(global), local_(local), o_(o), in_t_(S::types(false)), out_t_(S::types(true)) {}

  void execute(exec_args& a) override {
    const layer& in = *a.in;
    layer& out = *a.out;
#ifndef NDEBUG
    check_layer(in, in_t_, "input");
    if (!S::in_place) check_layer(out, out_t_, "output");
#endif
    const group_launch L = make_launch(k_, global_ ? &*global_ : nullptr, local_, in.shape());
    const std::size_t total = L.groups.count();
    if (total == 0 || L.global.count() == 0) return;
    auto views = bind(in, out, std::make_index_sequence<S::N - 1>{});

    group::mode m{o_.order, o_.order == order_policy::measured ? &plan_ : nullptr, false, 0, o_.unroll_limit};
    std::size_t start = 0;
    if (o_.order == order_policy::measured && !plan_.decided()) start = calibrate(L, views, total, m, a.sched);
    if (start == total) return;
    if (o_.order == order_policy::measured && !plan_.decided()) m.plan = nullptr;  // another run calibrates

    auto body = [&](std::size_t b, std::size_t e) {
      arena_lease lease;
      for (std::size_t gi = b; gi < e; ++gi) run_group(L, start + gi, lease.get(), m, views);
    };
    std::size_t n = total - start;
    std::size_t grain = o_.groups_per_task ? o_.groups_per_task : 1;
    if (!a.sched || n <= grain) body(0, n);
    else a.sched->parallel_for(n, grain, body);
  }

  /// Positions the measured policy picked (one per loop, in the order first
  /// met; 3 = not measured), empty before calibration ends.
  std::vector<unsigned> measured_positions() const {
    return plan_.decided() ? plan_.positions() : std::vector<unsigned>{};
  }
  /// The measured policy's samples and decisions (read-only once decided).
  const group_plan& plan() const noexcept { return plan_; }

 private:
  template <class Views>
  /// Runs the unit's first groups as calibration groups; returns how many it
  /// ran. The first group of each unit runs untimed in the declared order
  /// (cold caches, first touch of the arena and the data). Then groups are
  /// timed, candidates taking turns, until `3 * calibration_rounds` groups
  /// are timed and their samples are settled (group_plan::settled), or
  /// `extend_factor` times as many while they stay noisy. The timed groups
  /// run in parallel on the scheduler's workers, as the groups after them
  /// will: a loop bound by memory bandwidth is timed under the same
  /// contention it meets afterwards (timed one at a time on one core, the
  /// tree reduction's orders looked alike while in parallel depth-first was
  /// 1.3x faster on 2 cores). Calibration may span several units and
  /// decides once; a unit that finds it in progress (another thread, or a
  /// task this thread picked up while waiting) runs the declared order.
  std::size_t calibrate(const group_launch& L, const Views& views, std::size_t total, group::mode m,
                        scheduler* sched) {
    std::unique_lock<std::mutex> lk(plan_.calibration, std::try_to_lock);
    if (!lk.owns_lock() || plan_.decided()) return 0;
    const std::size_t want = std::size_t(group_plan::candidates) * (o_.calibration_rounds ? o_.calibration_rounds : 1);
    const std::size_t cap = want * group_plan::extend_factor;
    auto done = [&] { return plan_.groups() >= cap || (plan_.groups() >= want && plan_.settled()); };
    std::size_t gi = 0;
    if (total >= 2) {
      arena_lease lease;
      group::mode warm = m;
      warm.plan = nullptr;  // declared order, not timed
      run_group(L, gi++, lease.get(), warm, views);
    }
    while (gi < total && !done()) {
      // Up to the planned count, then 6 more at a time (every candidate of
      // 1- and 2-deep loops gets the same number of new samples).
      const std::size_t step = plan_.groups() < want ? want - plan_.groups() : 2 * group_plan::candidates;
      const std::size_t b = std::min(total - gi, step), first = gi, base = plan_.groups();
      auto body = [&](std::size_t lo, std::size_t hi) {
        arena_lease lease;
        for (std::size_t i = lo; i < hi; ++i) {
          group_sample times;
          group::mode c = m;
          c.calibrating = true;
          c.sample = unsigned(base + i);
          c.times = &times;
          run_group(L, first + i, lease.get(), c, views);
          plan_.add_group(times);
        }
      };
      if (sched && b > 1) sched->parallel_for(b, 1, body);
      else body(0, b);
      gi += b;
    }
    if (done()) plan_.decide();
    return gi;
  }

  template <class Views>
  void run_group(const group_launch& L, std::size_t gi, group_arena& arena, const group::mode& m,
                 const Views& views) const {
    arena.reset();
    group g(L, gi, arena, m);
    std::apply([&](const auto&... v) { k_(g, v...); }, views);
  }

  template <std::size_t I>
  static auto view_of(const layer& in, layer& out) {
    using A = typename S::template arg_t<I + 1>;
    using T = typename S::template tr<I + 1>::elem;
    if constexpr (S::roles[I] == role::output)
      return A(out[unsigned(slot<I>())].template data<T>(), out.shape());
    else
      return A(in[unsigned(slot<I>())].template data<T>(), in.shape());
  }
  /// Position of view I among the views of its layer.
  template <std::size_t I>
  static constexpr std::size_t slot() {
    std::size_t s = 0;
    bool is_out = S::roles[I] == role::output;
    for (std::size_t j = 0; j < I; ++j) s += (S::roles[j] == role::output) == is_out;
    return s;
  }
  template <std::size_t... I>
  static auto bind(const layer& in, layer& out, std::index_sequence<I...>) {
    return std::make_tuple(view_of<I>(in, out)...);
  }

  K k_;
  std::optional<range> global_;
  range local_;
  group_options o_;
  type_list in_t_, out_t_;
  group_plan plan_;
};

template <class K>
class group_node final : public node_impl {
  using S = group_sig<K>;

 public:
  group_node(K k, std::optional<range> global, range local, group_options o)
      : k_(std::move(k)), global_(global), local_(local), o_(o) {}
  std::string label() const override { return "group_kernel<" + short_type_name<K>() + ">"; }
  type_list input_types() const override { return S::types(false); }
  type_list output_types() const override { return S::types(true); }
  bool in_place() const override { return S::in_place; }
  shape output_shape(const shape& in) const override {
    if constexpr (kernel_with_output_shape<K>) {
      group_launch L = make_launch(k_, global_ ? &*global_ : nullptr, local_, in);
      return k_.output_shape(in, L.groups);
    } else {
      return in;
    }
  }
  void check(const std::string& path) const override {
    auto bad = [&](const std::string& what) { throw graph_error(path, what); };
    if (local_.rank < 1 || local_.rank > 3) bad("work-group rank must be 1, 2 or 3, not " + std::to_string(local_.rank));
    for (unsigned d = 0; d < local_.rank; ++d)
      if (local_.ext[d] == 0) bad("work-group size " + local_.str() + " has an empty dimension");
    if (global_ && global_->rank != local_.rank)
      bad("index space " + global_->str() + " and work-group " + local_.str() + " differ in rank");
  }
  std::shared_ptr<executable> compile_inline(const std::string& path) const override {
    check(path);
    return std::make_shared<group_exec<K>>(k_, global_, local_, o_);
  }

 private:
  K k_;
  std::optional<range> global_;
  range local_;
  group_options o_;
};

}  // namespace detail

/// A group-kernel leaf over the index space `global` in work-groups of
/// `local` (same rank). Usable wherever a leaf is (pipeline, farm, graph).
template <class K>
node group_kernel(range global, range local, K k = K{}, group_options o = {}) {
  return node(std::make_shared<detail::group_node<K>>(std::move(k), global, local, o));
}
/// As above; the index space is the kernel's `range global_range(const
/// shape&) const` if it has one, else the shape of each unit's input.
template <class K>
node group_kernel(range local, K k = K{}, group_options o = {}) {
  return node(std::make_shared<detail::group_node<K>>(std::move(k), std::nullopt, local, o));
}

}  // namespace sinew
