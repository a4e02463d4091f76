#include "stage_placement.hpp"

#include <algorithm>

namespace sinew::detail {

stage_placement::stage_placement(const topology& t, sinew::placement p) : policy(p) {
  const sinew::placement concrete[3] = {sinew::placement::standard, sinew::placement::fine,
                                        sinew::placement::coarse};
  for (int i = 0; i < 3; ++i)
    if (p == sinew::placement::automatic || p == concrete[i])
      by_policy[i] = std::make_unique<placer>(t, concrete[i]);
}

void stage_placement::place(layer& out, int toucher_node, bool split) {
  sinew::placement p = policy;
  // [Muddukrishna15, Table 3] per unit: the stage's output buffers are the
  // allocations, its chunks the tasks operating on them.
  if (p == sinew::placement::automatic) p = choose_placement(std::max(1u, out.size()), split ? 2 : 1);
  placer& pl = *by_policy[p == sinew::placement::standard ? 0 : p == sinew::placement::fine ? 1 : 2];
  if (toucher_node >= 0 && std::size_t(toucher_node) >= pl.topo().nodes()) toucher_node = -1;
  for (unsigned i = 0; i < out.size(); ++i)
    if (out[i] && !out[i]->external()) pl.place_buffer(*out[i], toucher_node);
}

}  // namespace sinew::detail
