#pragma once
// Everything a validated graph file knows (engine/graph_file.cpp fills it;
// engine/graph_file_verify.cpp reads it).
#include <cstdint>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include <sinew/deal_scheduler.hpp>
#include <sinew/graph_file.hpp>
#include <sinew/io/generator.hpp>

namespace sinew::detail {

struct graph_file_state {
  std::string origin, base_dir;
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
};

void load_document(graph_file_state& s);
source make_source(const graph_file_state& s, bool replay);

}  // namespace sinew::detail
