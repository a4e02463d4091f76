#pragma once
// The dag form of a graph file: "sources", "nodes" and "sinks" instead of
// "source", "graph" and "sink" (docs/json.md, "Dags").

namespace sinew::detail {

class json_cursor;
struct graph_file_state;

/// Validates the dag sections of `root` and fills `s.dag`, `s.sources` and
/// `s.sinks` (throws json_error naming the JSON pointer).
void load_dag(const json_cursor& root, graph_file_state& s);

}  // namespace sinew::detail
