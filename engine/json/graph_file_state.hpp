#pragma once
// Everything a validated graph file knows (engine/json/graph_file.cpp fills it;
// engine/json/graph_file_verify.cpp reads it).
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include <sinew/schedulers/deal_scheduler.hpp>
#include <sinew/json/graph_file.hpp>
#include <sinew/io/generator.hpp>
#include <sinew/json/kernel_registry.hpp>
#include <sinew/schedulers/placement.hpp>

namespace sinew::detail {

struct graph_file_state {
  std::string origin, base_dir;
  std::string devices = "all";  ///< default device selection of OpenCL leaves
  nlohmann::json doc;
  std::string name, description;

  node root, ref_root;
  type_list out_types;

  // "scheduler"
  std::string policy = "tbb";
  unsigned threads = 0;
  bool pin = true;
  std::string topology_spec;
  deal_options deal;
  std::size_t capacity = 0;
  unsigned batch = 256;
  std::size_t memory_limit = 0;  ///< bytes; 0 = none
  std::optional<sinew::placement> placement;  ///< top-level "placement" (graph_options::placement)

  // "source"
  source_kind skind = source_kind::generator;
  io::record_layout layout;
  unsigned layout_rank = 0;  ///< rank of the units (ppm/lines: known rank, varying extents)
  io::generator_options gen;
  std::optional<std::uint64_t> count;
  std::string path, host;
  std::uint16_t port = 0;
  bool listen = false;
  std::uint64_t bodies = 0;

  // "sink"
  std::string sink_type = "checksum";
  std::string sink_path, sink_prefix = "frame", sink_host;
  std::uint16_t sink_port = 0;
  bool sink_listen = false;
  bool sink_lines = false;

  // "verify"
  double tolerance = 0;

  /// Multi-device maps of the tree and their JSON pointers (for --stats).
  std::vector<std::pair<std::string, node>> device_maps;
};

void load_document(graph_file_state& s);
source make_source(const graph_file_state& s, bool replay);

class json_cursor;

/// What flows on an edge while the tree is checked.
struct flow {
  type_list types;
  unsigned rank = 0;  ///< 0 = unknown
};

/// A node built from the file: the real one, its sequential reference, and
/// what it writes.
struct built {
  node real, ref;
  flow out;
};

/// "[f32, rgba8]" with the graph-file names of the types.
std::string types_text(const type_list& t);
/// Same element types (by name, not only by size).
bool same_types(const type_list& a, const type_list& b);
/// The registered C++ kernel named at `c` (error with the known names).
const kernel_info& kernel_at(const json_cursor& c);
/// `k`'s sequential reference as a leaf (the kernel's own leaf if it has none).
node reference_node(const kernel_info& k, const kernel_args& args);
/// The "args" object of `c` bound to `k`'s parameters.
kernel_args args_at(const json_cursor& c, const kernel_info& k);

/// A map whose "map" is an OpenCL kernel object (engine/json/graph_file_opencl.cpp):
/// on one device, or split over several (and the host) by a balancer.
built opencl_map_at(const json_cursor& c, const flow& in, graph_file_state& s);

}  // namespace sinew::detail
