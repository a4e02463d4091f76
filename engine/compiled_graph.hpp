#pragma once
// Internal: a skeleton tree or a dag compiled into stages, junctions,
// sources, sinks and the channels between them (graph's constructors).
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include <sinew/engine/dag.hpp>
#include <sinew/engine/graph.hpp>
#include <sinew/engine/node.hpp>

#include "run_cache.hpp"

namespace sinew::detail {

/// An ordered farm whose order is restored at `exit` (the outermost of those
/// ending there): units between its entry and the reorder channel after
/// `exit` are bounded by that channel's capacity (the window).
struct region_spec {
  std::size_t entry, exit;
};

/// One end of a channel: a tree stage, a junction, a source or a sink
/// (`i` indexes the matching list of compiled_graph).
struct vertex_ref {
  enum kind : std::uint8_t { stage, junction, source, sink } k;
  std::uint32_t i;
};

/// A channel of the compiled graph: one producer, one consumer (its kind
/// and capacity follow from them: channel_for).
struct channel_plan {
  vertex_ref from, to;
};

/// A fan-out or fan-in vertex of a dag (docs/runtime.md, "Dags").
struct junction_spec {
  enum kind : std::uint8_t { broadcast, round_robin, least_loaded, by_key, merge, zip, join } k;
  std::string path;
  std::vector<std::uint32_t> ins, outs;  // channels, in declared order
  std::function<std::uint64_t(const work_unit&)> key;  // by_key
  std::vector<std::function<std::uint64_t(const work_unit&)>> keys;  // join: one, or one per input
  join_options join_opts;  // join
};

const char* junction_kind_name(junction_spec::kind k) noexcept;

/// A named source or sink of the graph and its channel.
struct endpoint_spec {
  std::string name;
  std::uint32_t channel;
  type_list types;  // what the units on that channel hold (any: unknown)
};

/// What every run of a graph shares: its options, its stages, junctions,
/// endpoints and channels, and its live ordered regions. A tree compiles
/// to one source, its stages in order and one sink, channel i feeding
/// stage i; a dag lists every tree's stages, tree by tree.
///
/// \code
/// auto g = std::make_shared<compiled_graph>();
/// tree.impl()->compile_stream(c, path);        // c.stages -> g->stages
/// g->link_chain(...);                           // channels and endpoints
/// auto run = std::make_shared<run_state>(g, sources, sinks);
/// \endcode
struct compiled_graph {
  node root;  // the tree (empty for a dag)
  graph_options opts;
  std::vector<stage_spec> stages;
  std::vector<std::uint32_t> stage_in, stage_out;  // channel of each stage
  std::vector<region_spec> regions;
  std::vector<junction_spec> junctions;
  std::vector<endpoint_spec> sources, sinks;
  std::vector<channel_plan> channels;
  /// Tree stages whose segment starts in place after a broadcast: they
  /// copy the shared buffers of layer 0 before writing them.
  std::vector<bool> copies_shared;
  /// Where the graph treats a unit as a whole (empty: its sources may make
  /// record batches; node_impl::whole_unit_leaf, dag::whole_unit_at).
  std::string whole_unit_at;
  /// A tree's result layer (empty when the tree works in place): the source
  /// adds it when the sink may supply the caller's memory, else the first
  /// stage does (run_state::run_state).
  layer_plan result;
  /// Finished runs, reset for the next (run_state::make).
  mutable run_cache runs;

  bool is_dag() const noexcept { return !root; }
  /// Concurrency of a vertex (junctions, sources and sinks are serial).
  unsigned concurrency(vertex_ref v) const noexcept {
    return v.k == vertex_ref::stage ? stages[v.i].concurrency : 1;
  }
  std::string vertex_path(vertex_ref v) const;
  /// Adds a channel and returns its index.
  std::uint32_t add_channel(vertex_ref from, vertex_ref to);
  /// Wires stages [first, last) in a chain fed by channel `in` (already
  /// added, its consumer set here); returns the chain's output channel,
  /// whose consumer is set by the caller (`to`).
  std::uint32_t chain(std::size_t first, std::size_t last, std::uint32_t in);
  /// Live ordered regions of stages [first, last): each recorded exit with
  /// the nearest entry of the same depth before it.
  void find_regions(std::size_t first, std::size_t last);
};

}  // namespace sinew::detail
