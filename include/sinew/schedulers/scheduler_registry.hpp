#pragma once
/// \file scheduler_registry.hpp
/// Schedulers by name: `make_scheduler("deal", options)` builds the policy
/// that registered under that name. Each policy registers itself beside its
/// code (`tbb`, `steal`, `deal`); graph files, `SINEW_SCHEDULER` and the
/// benchmarks all build their schedulers here.
///
/// \code
/// auto s = sinew::make_scheduler("steal", {.threads = 8});
/// sinew::scheduler_options o{.topology = sinew::topology::synthetic(4, 4)};
/// o.deal.vicinities = {{0, 1}, {2, 3}};
/// auto d = sinew::make_scheduler("deal", o);        // NUMA work-dealing on 4 x 4 cores
/// for (const auto& n : sinew::scheduler_names()) std::puts(n.c_str());   // deal, steal, tbb
///
/// // A policy of your own, in its .cpp file:
/// static sinew::scheduler_registration mine("mine", [](const sinew::scheduler_options& o) {
///   return std::make_unique<my_scheduler>(o.threads);
/// });
/// \endcode
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <sinew/schedulers/deal_scheduler.hpp>
#include <sinew/schedulers/scheduler.hpp>
#include <sinew/schedulers/topology.hpp>

namespace sinew {

/// What every policy's factory is given; a policy ignores what it has no use for.
struct scheduler_options {
  /// Workers; 0: one per core (`tbb`: oneTBB's default concurrency).
  unsigned threads = 0;
  /// A NUMA topology to run on (one worker per core of it, tasks placed by
  /// their locality hints). Unset: `topology::current()` when it has several
  /// nodes and `threads` is 0, else one node of `threads` cores.
  std::optional<sinew::topology> topology{};
  /// Pin each worker to its core (`steal`).
  bool pin = true;
  /// Thresholds, vicinities and back-off of `deal`.
  deal_options deal{};

  /// The topology a NUMA-aware policy runs on: `topology` when given, else
  /// `topology::current()` when it has several nodes and `threads` is 0;
  /// none (a flat pool of `threads` workers) otherwise.
  std::optional<sinew::topology> numa_topology() const;
};

using scheduler_factory = std::function<std::unique_ptr<scheduler>(const scheduler_options&)>;

/// Builds the policy registered as `name`; throws `sinew::error` naming the
/// known policies when there is none.
std::unique_ptr<scheduler> make_scheduler(std::string_view name, const scheduler_options& o = {});

/// The registered policy names, sorted.
std::vector<std::string> scheduler_names();

/// Registers `factory` under `name` for as long as the program runs
/// (a static object in the policy's .cpp). A second registration of one
/// name throws `sinew::error`.
struct scheduler_registration {
  scheduler_registration(std::string name, scheduler_factory factory);
};

}  // namespace sinew
