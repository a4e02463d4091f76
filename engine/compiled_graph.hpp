#pragma once
// Internal: a skeleton tree compiled into stages (graph's constructor).
#include <cstddef>
#include <vector>

#include <sinew/engine/graph.hpp>
#include <sinew/engine/node.hpp>

namespace sinew::detail {

/// An ordered farm whose order is restored at `exit` (the outermost of those
/// ending there): units between its entry and the reorder channel after
/// `exit` are bounded by that channel's capacity (the window).
struct region_spec {
  std::size_t entry, exit;
};

/// What every run of a graph shares: the tree, its options, its stages in
/// order and its live ordered regions.
///
/// \code
/// auto g = std::make_shared<compiled_graph>();
/// g->root = tree;
/// g->root.impl()->compile_stream(c, path);   // c.stages -> g->stages
/// auto run = std::make_shared<run_state>(g, src, snk);
/// \endcode
struct compiled_graph {
  node root;
  graph_options opts;
  std::vector<stage_spec> stages;
  std::vector<region_spec> regions;
};

}  // namespace sinew::detail
