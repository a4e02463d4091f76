// The top level of a graph file: the format version, the run's options, the
// plugins to load, then the source, the tree and the sink, each validated
// against what flows into it before anything runs (docs/json.md).
#include <sinew/engine/graph.hpp>
#include <sinew/json/kernel_registry.hpp>

#include "dag_section.hpp"
#include "graph_file_state.hpp"
#include "json_cursor.hpp"
#include "record_fields.hpp"
#include "tree_builder.hpp"

namespace sinew::detail {
namespace {

/// "plugins": shared libraries of kernels, relative to the graph file.
void load_plugins(const json_cursor& pl, const std::string& base_dir) {
  pl.expect_array();
  for (std::size_t i = 0; i < pl.value().size(); ++i) {
    std::string p = pl.at(i).as_string();
    if (!p.empty() && p[0] != '/') p = base_dir + "/" + p;
    if (!path_exists(p, false)) pl.at(i).fail("no such plugin file: '" + p + "'");
    try {
      kernel_registry::global().load_plugin(p);
    } catch (const error& e) {
      pl.at(i).fail(e.what());
    }
  }
}

}  // namespace

void load_document(graph_file_state& s) {
  json_cursor root(s.doc, "", &s.origin);
  // A tree ("source", "graph", "sink") or a dag ("sources", "nodes", "sinks").
  const bool is_dag = root.has("nodes") || root.has("sources") || root.has("sinks");
  if (is_dag)
    root.expect_object({"sinew", "name", "description", "scheduler", "devices", "queue_capacity", "batch",
                        "memory_limit_mib", "plugins", "sources", "nodes", "sinks", "verify", "placement"},
                       {"sinew", "name", "sources", "nodes", "sinks"});
  else
    root.expect_object({"sinew", "name", "description", "scheduler", "devices", "queue_capacity", "batch",
                        "memory_limit_mib", "plugins", "source", "graph", "sink", "verify", "placement"},
                       {"sinew", "name", "source", "graph", "sink"});
  std::uint64_t v = root.at("sinew").as_uint();
  if (v != std::uint64_t(graph_file::format_version))
    root.at("sinew").fail("this is format version " + std::to_string(v) + "; this sinew reads version " +
                          std::to_string(graph_file::format_version));
  s.name = root.at("name").as_string();
  if (s.name.empty()) root.at("name").fail("the name must not be empty");
  s.description = root.get_string("description", "");
  s.devices = root.get_string("devices", "all");
  if (root.has("scheduler")) s.scheduler = scheduler_at(root.at("scheduler"));
  if (root.has("placement")) s.placement = placement_at(root.at("placement"));
  s.capacity = std::size_t(root.get_uint("queue_capacity", 0, 0, 1u << 20));
  s.batch = unsigned(root.get_uint("batch", 256, 1, 1u << 20));
  s.memory_limit = std::size_t(root.get_uint("memory_limit_mib", 0, 0, std::uint64_t(1) << 30)) << 20;
  if (root.has("verify")) {
    json_cursor vc = root.at("verify");
    vc.expect_object({"tolerance"});
    s.tolerance = vc.get_number("tolerance", 0, 0, 1);
  }
  if (root.has("plugins")) load_plugins(root.at("plugins"), s.base_dir);

  if (is_dag) {
    load_dag(root, s);
    return;
  }
  json_cursor src = root.at("source");
  s.source_type = &source_types().at(src);
  s.source = s.source_type->parse(src);
  flow in;
  in.types.types = s.source.layout.buffers;
  in.rank = s.source.rank ? s.source.rank : s.source.layout.shape.rank;

  built t = node_at(root.at("graph"), in, s);
  s.root = t.real;
  s.ref_root = t.ref;

  json_cursor snk = root.at("sink");
  s.sink_type = &sink_types().at(snk);
  s.sink = s.sink_type->parse(snk, t.out);
  try {  // the engine's own checks (nesting, ordered depth, ...)
    graph g(s.root);
  } catch (const graph_error& e) {
    root.at("graph").fail(e.what());
  }
  check_batching(src, s.source.batch, s.root.impl()->whole_unit_leaf(s.root.impl()->segment()));
  if (s.source.batch.mode == io::batching::when::always && !s.sink_type->writes_records)
    src.at("batch").fail("a " + s.sink_type->name + " sink takes units, not records");
}

}  // namespace sinew::detail
