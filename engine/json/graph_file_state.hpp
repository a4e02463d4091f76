#pragma once
// Everything a validated graph file knows: the document, the skeleton tree
// and its reference, and what its scheduler, source and sink sections made.
// document_loader.cpp fills it; graph_file.cpp and verifying_sink.cpp read it.
#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include <sinew/engine/dag.hpp>
#include <sinew/json/graph_file.hpp>
#include <sinew/schedulers/placement.hpp>

#include "scheduler_section.hpp"
#include "sink_types.hpp"
#include "source_types.hpp"

namespace sinew::detail {

struct graph_file_state {
  std::string origin, base_dir;
  std::string devices = "all";  ///< default device selection of OpenCL leaves
  nlohmann::json doc;
  std::string name, description;

  node root, ref_root;

  scheduler_section scheduler;
  std::size_t capacity = 0;
  unsigned batch = 256;
  std::size_t memory_limit = 0;               ///< bytes; 0 = none
  std::optional<sinew::placement> placement;  ///< top-level "placement" (graph_options::placement)

  const source_type_info* source_type = nullptr;
  source_plan source;
  const sink_type_info* sink_type = nullptr;
  sink_factory sink;

  /// The dag form ("sources", "nodes", "sinks"): the dag, and its sources
  /// and sinks in name order. Null for a tree.
  std::shared_ptr<sinew::dag> dag;
  struct named_source {
    std::string name;
    const source_type_info* type;
    source_plan plan;
  };
  std::vector<named_source> sources;
  struct named_sink {
    std::string name;
    const sink_type_info* type;
    sink_factory make;
  };
  std::vector<named_sink> sinks;
  /// Where the dag or a sink treats a unit as a whole (empty: its sources
  /// may make record batches, and --verify's replays make the same).
  std::string whole_unit_at;
  /// The dag's vertices in an order where each follows its inputs, with the
  /// sequential reference of each tree (--verify, dag_verifier.cpp).
  struct ref_vertex {
    enum kind { source, tree, merge, zip, join, split_by_key, split_by_policy, sink } k;
    std::string name;
    node ref;                                       // tree (a keyed farm: one replica's)
    std::vector<std::pair<std::size_t, std::size_t>> ins;  // (vertex, output)
    std::size_t ways = 1;
    key_function key;
    std::size_t endpoint = 0;  // source / sink: its index in sources / sinks
  };
  std::vector<ref_vertex> ref_dag;

  double tolerance = 0;  ///< "verify": relative tolerance of floating-point outputs

  /// Multi-device maps of the tree and their JSON pointers (for --stats).
  std::vector<std::pair<std::string, node>> device_maps;
};

/// Validates `s.doc` and fills the rest of `s` (throws json_error).
void load_document(graph_file_state& s);

}  // namespace sinew::detail
