#pragma once
/// \file group_exec.hpp
/// The node and the executable of a group-kernel leaf
/// (skeletons/group_kernel.hpp): binds the unit's buffers to the kernel's
/// views, runs the measured policy's calibration groups, then deals the
/// remaining work-groups to the scheduler's workers.
///
/// \code
/// auto n = std::make_shared<sinew::detail::group_node<Scale2>>(Scale2{}, std::nullopt, sinew::range1d{64},
///                                                            sinew::group_options{});
/// sinew::node leaf(n);   // what sinew::group_kernel<Scale2>(sinew::range1d{64}) returns
/// \endcode
#include <algorithm>
#include <concepts>
#include <cstddef>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include <sinew/detail/group_launch.hpp>
#include <sinew/detail/group_sig.hpp>
#include <sinew/engine/node.hpp>
#include <sinew/schedulers/scheduler.hpp>
#include <sinew/skeletons/group.hpp>

namespace sinew::detail {

template <class K>
concept kernel_with_output_shape = requires(const K& k, const shape& s, const range& groups) {
  { k.output_shape(s, groups) } -> std::convertible_to<shape>;
};

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
  /// Runs the unit's first groups as calibration groups; returns how many it
  /// ran. The first group of each unit runs untimed in the declared order
  /// (cold caches, first touch of the arena and the data). Then groups are
  /// timed, candidates taking turns, until `3 * calibration_rounds` groups
  /// are timed and their samples are settled (group_plan::settled), or
  /// `extend_factor` times as many while they stay noisy. The timed groups
  /// run in parallel on the scheduler's workers, as the groups after them
  /// will: a loop bound by memory bandwidth is timed under the same
  /// contention it meets afterwards (timed alone on one core, its orders can
  /// look alike). Calibration may span several units and decides once; a
  /// unit that finds it in progress (another thread, or a task this thread
  /// picked up while waiting) runs the declared order.
  template <class Views>
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
      return A(out[unsigned(slot<I>())].template data<T>(), out.shape_of(unsigned(slot<I>())));
    else
      return A(in[unsigned(slot<I>())].template data<T>(), in.shape_of(unsigned(slot<I>())));
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

}  // namespace sinew::detail
