#pragma once
/// \file host_executor.hpp
/// `host_executor<F>`: the C++ functor leaf of `map<F>` as one device of a
/// multi-device map. It runs its share's rows exactly as `map<F>` runs a
/// whole unit: split into chunks over the workers of a scheduler
/// (`parallel_for`). By default that is the graph's scheduler (the executor
/// then runs on the calling worker); give it a scheduler of its own to model
/// a second host device (e.g. two executors of half the cores each).
///
/// \code
/// struct Saxpy { float a; void operator()(float x, float y, float* z) const { *z = a * x + y; } };
/// auto cpu = sinew::host<Saxpy>({2.0f});                        // on the graph's workers
/// sinew::tbb_scheduler half(2);
/// auto cpu2 = sinew::host<Saxpy>({2.0f}, {}, {.sched = &half});  // on 2 workers of its own
/// sinew::graph g(sinew::multi_device_map({cpu, cpu2}, sinew::balance::iterative()));
/// \endcode
///
/// Task size: a share is split into tasks of `map_options::min_task` items
/// (elements, or outermost indices for per-chunk leaves; default 2048 / 1),
/// and runs inline when it cannot make two. A balancer may give the host a
/// few rows of costly work, which at that size would run on one or a few
/// workers: the executor times every share, estimates the work of one item
/// (`seconds × min(tasks, workers) / items`) and, for the next share, lowers
/// the task size to what takes about `host_options::task_seconds` (100 us),
/// never raising it above `min_task`. Cheap items (saxpy: nanoseconds) keep
/// the configured size.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <memory>
#include <string>

#include <sinew/opencl/device_executor.hpp>
#include <sinew/skeletons/map.hpp>

namespace sinew {

struct host_options {
  /// Scheduler whose workers run the share; null = the graph's (`exec_args::sched`).
  scheduler* sched = nullptr;
  /// Shares are multiples of this many outermost indices (0 = the map's
  /// `grain` for per-chunk leaves, else 1).
  std::size_t granularity = 0;
  /// Shown in statistics; "" = "host" (or "host:<scheduler name>" with a scheduler of its own).
  std::string name;
  /// Work a task should hold, in seconds of one worker: tasks are made
  /// smaller than `map_options::min_task` items when items are so costly
  /// that a task of min_task would take longer (measured on the previous
  /// share). 0 = always min_task.
  double task_seconds = 100e-6;
};

/// Base of every host executor: lets a multi-device map run the one that
/// uses the graph's own scheduler on the calling worker (no thread hop).
class host_executor_base : public device_executor {
 public:
  /// The scheduler of its own, or null when it uses the graph's.
  virtual scheduler* own_scheduler() const noexcept = 0;
};

template <class F>
class host_executor final : public host_executor_base {
  using S = detail::leaf_sig<F>;
  static_assert(!S::per_record, "a multi-device map splits units by rows: per-record leaves run in a plain map");

 public:
  explicit host_executor(F f = F{}, map_options mo = {}, host_options ho = {})
      : exec_(f, mo), mo_(mo), ho_(std::move(ho)) {}

  std::string name() const override {
    if (!ho_.name.empty()) return ho_.name;
    return ho_.sched ? std::string("host:") + ho_.sched->name() + "/" + std::to_string(ho_.sched->concurrency())
                     : "host";
  }
  std::size_t granularity() const override {
    if (ho_.granularity) return ho_.granularity;
    return S::chunked && mo_.grain ? mo_.grain : 1;
  }
  detail::type_list input_types() const override { return S::inputs(); }
  detail::type_list output_types() const override { return S::outputs(); }
  bool in_place() const override { return S::in_place; }
  scheduler* own_scheduler() const noexcept override { return ho_.sched; }

  share_timing execute(const device_share& s, detail::exec_args& a) override {
    detail::exec_args mine = a;
    if (ho_.sched) mine.sched = ho_.sched;
    const shape& shp = a.in->shape();
    const std::size_t rows = std::min(s.end, shp.ext[0]) - std::min(s.begin, shp.ext[0]);
    const std::size_t items = S::chunked ? rows : rows * (shp.inner() ? shp.inner() : 1);
    auto t0 = std::chrono::steady_clock::now();
    std::size_t tasks = exec_.run_rows(mine, s.begin, s.end, task_size());
    double sec = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (items && sec > 0) {
      std::size_t workers = mine.sched ? std::max(1u, mine.sched->concurrency()) : 1;
      item_seconds_.store(sec * double(std::min(tasks, workers)) / double(items), std::memory_order_relaxed);
    }
    return {sec, sec};  // host memory: no transfers
  }

  /// Items per task for the next share (see the file comment).
  std::size_t task_size() const noexcept {
    const std::size_t configured = mo_.min_task ? mo_.min_task : S::chunked ? 1 : 2048;
    const double c = item_seconds_.load(std::memory_order_relaxed);
    if (!(ho_.task_seconds > 0) || !(c > 0)) return configured;
    const double want = std::ceil(ho_.task_seconds / c);
    return want >= double(configured) ? configured : std::max<std::size_t>(1, std::size_t(want));
  }

 private:
  detail::map_exec<F> exec_;
  map_options mo_;
  host_options ho_;
  std::atomic<double> item_seconds_{0};  // one worker's seconds per item, last share
};

/// A host executor for the functor leaf `F` (see leaf.hpp for its forms).
template <class F>
std::shared_ptr<device_executor> host(F f = F{}, map_options mo = {}, host_options ho = {}) {
  return std::make_shared<host_executor<F>>(std::move(f), mo, std::move(ho));
}

}  // namespace sinew
