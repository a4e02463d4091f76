#pragma once
/// \file multi_device_map.hpp
/// `multi_device_map(devices, policy)`: a node that splits every unit along
/// its outermost dimension over several `device_executor`s, in proportion to
/// the weights a balancer finds ([Vinas17, §3.3], execution plans; formulas in
/// balancer.hpp and docs/balancing.md), runs the shares concurrently and
/// feeds the measured times back to the balancer. It can stand wherever a
/// leaf can: in a pipeline, a farm, a loop body.
///
/// Where each device runs: a host executor on the graph's own scheduler runs
/// on the calling worker (its chunks spread over the workers by
/// `parallel_for`, like `map<F>`); every other device is driven by one thread
/// of its own, shared by every node using that executor ([Xu15]:
/// one thread and command queue per device). An OpenCL device blocks its
/// caller until the kernel ends, and a blocked scheduler worker would be a
/// core lost to every other stage; a device thread sleeps instead. Executors
/// on device threads get `exec_args::sched == nullptr` (they must not
/// submit to the graph's scheduler and then wait on it from outside).
///
/// Tuning executions (until the balancer says it is tuned) process real
/// units, one at a time; units of the same node that arrive meanwhile (a
/// farm of it, a deep queue) run with the current proposal and their times
/// are not fed back, so they cannot disturb the search. Tuned units run
/// concurrently; one feeds the stream's re-tuning watch only if no
/// re-tuning began while it ran (it ran with the weights being judged).
/// Weights are cached per (node path, unit size, device set) in a
/// `balance_cache`.
///
/// \code
/// struct Series { void operator()(sinew::index i, coeff* c) const; };
/// auto cpu = sinew::host<Series>({}, {.min_task = 1});
/// auto gpu = sinew::opencl::kernel_executors(spec).at(0);   // the same leaf as a kernel
/// sinew::node m = sinew::multi_device_map({cpu, gpu}, sinew::balance::iterative());
/// sinew::graph g(m);
/// g.run(src, snk).get();
/// std::puts(sinew::device_stats(m).str().c_str());  // "device shares: host 31.0%, ..."
/// \endcode
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <sinew/opencl/balancer.hpp>
#include <sinew/opencl/device_executor.hpp>
#include <sinew/engine/node.hpp>

namespace sinew {

struct multi_device_options {
  /// Tuned weights are kept here; null = balance_cache::global().
  balance_cache* cache = nullptr;
  /// Look tuned weights up before tuning (and store them once tuned).
  bool use_cache = true;
  /// Units whose shares and timings `device_stats` keeps (the most recent).
  std::size_t history = 64;
  /// Add to a real device's share time (`share_timing::total`) what the
  /// unit waits for beyond the device's own clock: waking its device thread
  /// and, when the worker waited for it last, waking the worker. These are
  /// fixed costs of using the device (tens of microseconds) that the
  /// balancer must see to tell when a device does not pay off.
  bool dispatch_in_timings = true;
};

/// One unit's split.
struct unit_shares {
  std::uint64_t seq = 0;               ///< the unit's sequence number
  std::size_t unit_size = 0;           ///< elements of the unit
  std::vector<device_share> shares;    ///< one per device, in device order
  std::vector<share_timing> timings;   ///< as the devices reported them
  bool tuning = false;                 ///< a tuning execution
};

/// What a multi-device map did, accumulated over every run of the node.
struct multi_device_stats {
  std::string policy;
  std::vector<std::string> devices;
  std::vector<double> weights;          ///< current weights (percent) of the last unit size seen
  std::vector<std::uint64_t> rows;      ///< outermost indices each device ran, all units
  std::vector<double> seconds;          ///< time attributed to each device (timings' total)
  std::uint64_t units = 0;
  std::uint64_t tuning_executions = 0;  ///< units that were tuning executions
  std::uint64_t retunes = 0;            ///< re-tunings after the imbalance grew past δ
  std::uint64_t cache_hits = 0;         ///< unit sizes whose weights came from the cache
  bool tuned = false;                   ///< for the last unit size seen
  /// Each device's fitted share time `fixed + per_percent·v` in the
  /// iterative search of the last unit size seen ({0, 0}: not measured, or
  /// another policy); see balance::fit_share_time.
  std::vector<balance::share_time_fit> fits;
  std::vector<unit_shares> recent;      ///< the last `history` units, oldest first
  /// "device shares: host 62.0%, sim:gpu 38.0% (iterative, tuned, 3 tuning executions)".
  std::string str() const;
};

/// A map whose units are split over `devices` (all running the same leaf:
/// same input/output types, all in place or none). Throws graph_error
/// ("multi_device_map: ...") for no device, a null one, mismatched devices,
/// or a bad policy.
node multi_device_map(std::vector<std::shared_ptr<device_executor>> devices,
                      balance_policy policy = balance::iterative(), multi_device_options o = {});

/// Statistics of a multi-device map node; throws sinew::error if `n` is not one.
multi_device_stats device_stats(const node& n);
/// True if `n` is a multi-device map node.
bool is_multi_device_map(const node& n);

}  // namespace sinew
