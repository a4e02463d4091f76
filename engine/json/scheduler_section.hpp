#pragma once
// The "scheduler" section of a graph file: a policy name, or an object with
// the policy, its threads or synthetic topology, pinning, and the options of
// `deal`. The policy names are those of sinew::make_scheduler.
#include <memory>
#include <string>

#include <sinew/schedulers/scheduler_registry.hpp>

namespace sinew::detail {

class json_cursor;

struct scheduler_section {
  std::string policy = "tbb";
  scheduler_options options;

  /// A new scheduler; `threads` > 0 overrides the file's threads and topology.
  std::unique_ptr<scheduler> make(unsigned threads) const;
};

/// The section at `c` (errors at their JSON pointer).
scheduler_section scheduler_at(const json_cursor& c);

}  // namespace sinew::detail
