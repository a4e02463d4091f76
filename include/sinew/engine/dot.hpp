#pragma once
/// \file dot.hpp
/// Graphviz export of a compiled graph: the skeleton tree as nested clusters
/// (pipeline, farm, loop, ... as they appear in the stage paths), each stage
/// as a box (label: node, leaf, concurrency), the source and the sink as
/// ellipses, and every queue as an edge labelled with its capacity and kind
/// (spsc / mpmc / reorder). Given the statistics of a run, stages also show
/// units, busy and wait times, and edges the queue's high-water mark.
///
/// \code
/// sinew::graph g(sinew::pipeline(sinew::map<A>(), sinew::farm(sinew::map<B>(), 4)));
/// auto f = g.run(in, out);
/// f.get();
/// auto st = f.stats();
/// std::ofstream("g.dot") << sinew::to_dot(g, &st);   // dot -Tsvg g.dot -o g.svg
/// \endcode
#include <string>

#include <sinew/engine/graph.hpp>

namespace sinew {

/// DOT text of `g` (a `digraph`); names are escaped. With `annotate` (the
/// stats of a run of `g`), stages and queues carry its counters.
std::string to_dot(const graph& g, const run_stats* annotate = nullptr);

}  // namespace sinew
