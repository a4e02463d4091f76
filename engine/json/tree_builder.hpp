#pragma once
// The "graph" of a graph file: builds the skeleton tree, node by node, with
// the sequential reference tree --verify runs, checking the element types
// that flow along it (errors at the JSON pointer of the node).
#include <sinew/engine/node.hpp>
#include <sinew/schedulers/placement.hpp>

#include "element_types.hpp"

namespace sinew::detail {

class json_cursor;
struct graph_file_state;

/// A node built from the file: the real one, its sequential reference, and
/// what it writes.
struct built {
  node real, ref;
  flow out;
};

/// The node at `c` reading `in`, with everything nested in it.
built node_at(const json_cursor& c, const flow& in, graph_file_state& s);

/// A map whose "map" is an OpenCL kernel object (opencl_map.cpp): on one
/// device, or split over several (and the host) by a balancer.
built opencl_map_at(const json_cursor& c, const flow& in, graph_file_state& s);

/// "placement": standard, fine, coarse or auto [Muddukrishna15, Tables 1-3];
/// a bad name fails naming the JSON pointer.
placement placement_at(const json_cursor& c);

}  // namespace sinew::detail
