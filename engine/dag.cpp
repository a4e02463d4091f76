// Building a dag, and compiling it into stages, junctions, endpoints and
// channels (docs/runtime.md, "Dags").
#include <sinew/engine/dag.hpp>


#include <sinew/engine/graph.hpp>

#include "compiled_graph.hpp"

namespace sinew {

std::uint32_t dag::add_vertex(vertex v) {
  if (v.name.empty()) throw graph_error("dag", "a vertex needs a name");
  for (const vertex& o : v_)
    if (o.name == v.name) throw graph_error(v.name, "two vertices of the dag have this name");
  for (std::size_t i = 0; i < v.ins.size(); ++i) {
    const port& p = v.ins[i];
    if (!p.valid() || p.v_ >= v_.size() || p.k_ >= v_[p.v_].outs)
      throw graph_error(v.name, "input " + std::to_string(i) + " is not an output of this dag");
    if (v_[p.v_].k == vertex::sink) throw graph_error(v.name, "a sink has no output");
  }
  v_.push_back(std::move(v));
  return std::uint32_t(v_.size() - 1);
}

dag::port dag::source(std::string name) { return {add_vertex({vertex::source, std::move(name), {}, {}}), 0}; }

dag::port dag::add(std::string name, node tree, port in) {
  if (!tree) throw graph_error(name, "empty tree");
  return {add_vertex({vertex::tree, std::move(name), std::move(tree), {in}}), 0};
}

dag::port dag::merge(std::string name, std::vector<port> ins) {
  if (ins.size() < 2) throw graph_error(name, "a merge needs at least 2 inputs");
  return {add_vertex({vertex::merge, std::move(name), {}, std::move(ins)}), 0};
}

dag::port dag::zip(std::string name, std::vector<port> ins) {
  if (ins.size() < 2) throw graph_error(name, "a zip needs at least 2 inputs");
  if (ins.size() > layer::max_buffers) throw graph_error(name, "a zip takes at most 8 inputs (8 buffers a layer)");
  return {add_vertex({vertex::zip, std::move(name), {}, std::move(ins)}), 0};
}

dag::port dag::join(std::string name, std::vector<port> ins, std::vector<key_function> keys, join_options o) {
  if (ins.size() < 2) throw graph_error(name, "a join needs at least 2 inputs");
  if (ins.size() > layer::max_buffers) throw graph_error(name, "a join takes at most 8 inputs (8 buffers a layer)");
  if (keys.size() != 1 && keys.size() != ins.size())
    throw graph_error(name, "a join needs one key function for every input, or one per input (" +
                                std::to_string(ins.size()) + "), not " + std::to_string(keys.size()));
  for (std::size_t i = 0; i < keys.size(); ++i)
    if (!keys[i]) throw graph_error(name, "key function " + std::to_string(i) + " is empty");
  if (o.window == 0) throw graph_error(name, "a join's window must hold at least 1 unit");
  vertex v{vertex::join, std::move(name), {}, std::move(ins)};
  v.keys = std::move(keys);
  v.join_opts = o;
  return {add_vertex(std::move(v)), 0};
}

std::vector<dag::port> dag::split(std::string name, port in, unsigned n, split_policy p) {
  if (n < 2 || n > 64) throw graph_error(name, "a split has 2 to 64 outputs, not " + std::to_string(n));
  vertex v{vertex::split, std::move(name), {}, {in}, n};
  v.policy = p;
  const std::uint32_t id = add_vertex(std::move(v));
  std::vector<port> out;
  for (unsigned k = 0; k < n; ++k) out.push_back({id, k});
  return out;
}

std::vector<dag::port> dag::split_by_key(std::string name, port in, unsigned n, key_function key) {
  if (!key) throw graph_error(name, "split_by_key needs a key function");
  std::vector<port> out = split(std::move(name), in, n);
  v_.back().key = std::move(key);
  return out;
}

dag::port dag::keyed_farm(std::string name, port in, unsigned replicas, key_function key,
                          const std::function<node(unsigned replica)>& make_replica) {
  if (replicas < 1 || replicas > 64) throw graph_error(name, "a keyed farm has 1 to 64 replicas");
  if (!make_replica) throw graph_error(name, "a keyed farm needs a function making its replicas");
  auto replica = [&](unsigned r, port p) {
    node t = make_replica(r);
    if (!t) throw graph_error(name, "replica " + std::to_string(r) + " is an empty tree");
    port out = add(replicas == 1 ? name : name + "[" + std::to_string(r) + "]", std::move(t), p);
    v_.back().serial = true;
    return out;
  };
  if (replicas == 1) return replica(0, in);
  std::vector<port> parts = split_by_key(name + "/route", in, replicas, std::move(key));
  std::vector<port> outs;
  for (unsigned r = 0; r < replicas; ++r) outs.push_back(replica(r, parts[r]));
  return merge(std::move(name), std::move(outs));
}

void dag::sink(std::string name, port in) { add_vertex({vertex::sink, std::move(name), {}, {in}, 0}); }

namespace {

using detail::compiled_graph;
using detail::junction_spec;
using detail::type_list;
using detail::vertex_ref;

/// Compiles a dag: vertices in the order added (inputs before the vertices
/// that read them), each output a channel whose consumer is set when a
/// vertex reads it; an output read by several gets a broadcast junction.
struct dag_compiler {
  const dag& d;
  compiled_graph& g;
  std::vector<std::vector<std::vector<unsigned>>> readers;  // per vertex and output: vertices reading it
  std::vector<std::vector<std::uint32_t>> port_ch;  // the channel of each output
  std::vector<std::vector<int>> broadcast;  // its broadcast junction (-1: none)
  std::vector<std::vector<type_list>> port_types;
  std::vector<std::vector<bool>> port_shared;  // its units share buffers with other units
  std::vector<std::size_t> first_stage;  // trees: their first stage

  using V = dag::vertex;

  std::uint32_t add_junction(junction_spec::kind k, std::string path) {
    g.junctions.push_back({k, std::move(path), {}, {}, {}, {}, {}});
    return std::uint32_t(g.junctions.size() - 1);
  }

  /// The channel from output `p` to vertex `to` (its consumer set by the caller).
  std::uint32_t input(dag::port p) {
    const std::uint32_t v = dag::vertex_of(p), k = dag::output_of(p);
    if (readers[v][k].size() == 1) return port_ch[v][k];
    if (broadcast[v][k] < 0) {
      const std::uint32_t j = add_junction(junction_spec::broadcast, d.vertices()[v].name + "/broadcast");
      broadcast[v][k] = int(j);
      g.junctions[j].ins.push_back(port_ch[v][k]);
      g.channels[port_ch[v][k]].to = {vertex_ref::junction, j};
    }
    const std::uint32_t j = std::uint32_t(broadcast[v][k]);
    const std::uint32_t c = g.add_channel({vertex_ref::junction, j}, {vertex_ref::sink, 0});
    g.junctions[j].outs.push_back(c);
    return c;
  }
  bool shared(dag::port p) const {
    const std::uint32_t v = dag::vertex_of(p), k = dag::output_of(p);
    return readers[v][k].size() > 1 || port_shared[v][k];
  }
  const type_list& types(dag::port p) const { return port_types[dag::vertex_of(p)][dag::output_of(p)]; }

  void check_edge(const V& to, std::size_t i, const type_list& reads) {
    const dag::port p = to.ins[i];
    const type_list& writes = types(p);
    if (!writes.matches(reads))
      throw graph_error(to.name, "reads " + reads.str() + " but its input '" + d.vertices()[dag::vertex_of(p)].name +
                                     "' gives " + writes.str());
  }

  void run() {
    const auto& vs = d.vertices();
    readers.resize(vs.size());
    port_ch.resize(vs.size());
    broadcast.resize(vs.size());
    port_types.resize(vs.size());
    port_shared.resize(vs.size());
    first_stage.assign(vs.size(), 0);
    for (std::size_t v = 0; v < vs.size(); ++v) {
      readers[v].resize(vs[v].outs);
      broadcast[v].assign(vs[v].outs, -1);
      port_types[v].assign(vs[v].outs, type_list{true, {}});
      port_shared[v].assign(vs[v].outs, false);
      for (const dag::port& p : vs[v].ins) readers[dag::vertex_of(p)][dag::output_of(p)].push_back(unsigned(v));
    }
    bool any_source = false, any_sink = false;
    for (std::size_t v = 0; v < vs.size(); ++v) {
      for (std::size_t k = 0; k < vs[v].outs; ++k)
        if (readers[v][k].empty())
          throw graph_error(vs[v].name, vs[v].outs > 1 ? "output " + std::to_string(k) + " is not connected"
                                                       : std::string("its output is not connected"));
      any_source |= vs[v].k == V::source;
      any_sink |= vs[v].k == V::sink;
    }
    if (!any_source) throw graph_error("dag", "no source");
    if (!any_sink) throw graph_error("dag", "no sink");
    for (std::size_t v = 0; v < vs.size(); ++v) compile(std::uint32_t(v));
    source_types();
  }

  void compile(std::uint32_t v) {
    const V& x = d.vertices()[v];
    switch (x.k) {
      case V::source: {
        g.sources.push_back({x.name, 0, type_list{true, {}}});
        port_ch[v] = {g.add_channel({vertex_ref::source, std::uint32_t(g.sources.size() - 1)}, {vertex_ref::sink, 0})};
        g.sources.back().channel = port_ch[v][0];
        return;
      }
      case V::sink: {
        const std::uint32_t c = input(x.ins[0]);
        g.channels[c].to = {vertex_ref::sink, std::uint32_t(g.sinks.size())};
        g.sinks.push_back({x.name, c, types(x.ins[0])});
        return;
      }
      case V::tree: return compile_tree(v, x);
      case V::merge:
      case V::zip:
      case V::join: {
        const std::uint32_t j = add_junction(x.k == V::merge ? junction_spec::merge
                                             : x.k == V::zip ? junction_spec::zip
                                                             : junction_spec::join,
                                             x.name);
        g.junctions[j].keys = x.keys;
        g.junctions[j].join_opts = x.join_opts;
        type_list out{false, {}};
        bool sh = false;
        for (std::size_t i = 0; i < x.ins.size(); ++i) {
          const std::uint32_t c = input(x.ins[i]);
          g.channels[c].to = {vertex_ref::junction, j};
          g.junctions[j].ins.push_back(c);
          const type_list& t = types(x.ins[i]);
          sh |= shared(x.ins[i]);
          if (x.k == V::merge) {
            if (i == 0) out = t;
            else if (!out.matches(t))
              throw graph_error(x.name, "input " + std::to_string(i) + " gives " + t.str() + ", input 0 " + out.str() +
                                            " (merged units must hold the same types)");
            else if (out.any) out = t;
          } else {
            out.any |= t.any;
            out.types.insert(out.types.end(), t.types.begin(), t.types.end());
          }
        }
        if (x.k != V::merge && !out.any && out.types.size() > layer::max_buffers)
          throw graph_error(x.name, std::string(x.k == V::zip ? "the zipped" : "the joined") + " unit would hold " +
                                        std::to_string(out.types.size()) + " buffers (at most 8)");
        port_types[v][0] = out;
        port_shared[v][0] = sh;
        port_ch[v] = {g.add_channel({vertex_ref::junction, j}, {vertex_ref::sink, 0})};
        g.junctions[j].outs.push_back(port_ch[v][0]);
        return;
      }
      case V::split: {
        const junction_spec::kind k = x.key ? junction_spec::by_key
                                      : x.policy == split_policy::least_loaded ? junction_spec::least_loaded
                                                                               : junction_spec::round_robin;
        const std::uint32_t j = add_junction(k, x.name);
        g.junctions[j].key = x.key;
        const std::uint32_t c = input(x.ins[0]);
        g.channels[c].to = {vertex_ref::junction, j};
        g.junctions[j].ins.push_back(c);
        for (unsigned o = 0; o < x.outs; ++o) {
          port_ch[v].push_back(g.add_channel({vertex_ref::junction, j}, {vertex_ref::sink, 0}));
          g.junctions[j].outs.push_back(port_ch[v].back());
          port_types[v][o] = types(x.ins[0]);
          port_shared[v][o] = shared(x.ins[0]);
        }
        return;
      }
    }
  }

  void compile_tree(std::uint32_t v, const V& x) {
    const detail::node_impl& root = *x.root.impl();
    root.check(x.name);
    check_edge(x, 0, root.input_types());
    detail::stream_compiler c;
    root.compile_stream(c, x.name);
    if (c.stages.empty()) throw graph_error(x.name, "the tree compiles to no stage");
    if (x.serial)
      for (const auto& s : c.stages)
        if (s.concurrency > 1)
          throw graph_error(s.path, "a keyed farm's replica runs its units one at a time (its state and each key's "
                                    "order live in it): no farm inside");
    const std::size_t first = g.stages.size();
    first_stage[v] = first;
    // The tree's own result layer, made when a unit enters it (below every
    // layer its pipelines insert): a tree's units arrive holding one layer.
    if (!root.in_place()) {
      detail::layer_plan out;
      out.add(x.root.impl(), true, root.output_types());
      c.stages.front().entry_layers.insert(c.stages.front().entry_layers.begin(), std::move(out));
    }
    for (auto& s : c.stages) g.stages.push_back(std::move(s));
    g.copies_shared.resize(g.stages.size(), false);
    // A tree that writes its input in place must not write buffers other
    // units share: its first stage copies them (only those still shared).
    g.copies_shared[first] = g.stages[first].in_place && shared(x.ins[0]);
    const std::uint32_t in = input(x.ins[0]);
    port_ch[v] = {g.chain(first, g.stages.size(), in)};
    g.find_regions(first, g.stages.size());
    port_types[v][0] = root.output_types();
  }

  /// What a source's units must hold: what the trees its units reach first
  /// read (through broadcasts and splits; a merge's or zip's inputs are not
  /// followed). Trees that read different types from one source are an error.
  void source_types() {
    const auto& vs = d.vertices();
    std::uint32_t si = 0;
    for (std::uint32_t v = 0; v < vs.size(); ++v) {
      if (vs[v].k != V::source) continue;
      type_list want{true, {}};
      std::string who;
      std::vector<std::uint32_t> frontier{v};  // vertices whose readers are still to see
      while (!frontier.empty()) {
        const std::uint32_t u = frontier.back();
        frontier.pop_back();
        for (const auto& rs : readers[u])
          for (unsigned r : rs) {
            const V& x = vs[r];
            if (x.k == V::split) frontier.push_back(r);
            if (x.k != V::tree) continue;
            const type_list t = x.root.impl()->input_types();
            if (t.any) continue;
            if (!want.any && !want.matches(t))
              throw graph_error(vs[v].name, "'" + who + "' reads " + want.str() + " from it, '" + x.name + "' " + t.str());
            if (want.any) want = t, who = x.name;
          }
      }
      g.sources[si++].types = want;
    }
  }
};

}  // namespace

std::string dag::whole_unit_at() const {
  for (const vertex& v : v_) {
    if (v.k == vertex::tree) {
      if (std::string w = v.root.impl()->whole_unit_leaf(v.name); !w.empty()) return w;
    } else if (v.k == vertex::zip || v.k == vertex::join) {
      return v.name + (v.k == vertex::zip ? " (a zip pairs units)" : " (a join pairs units)");
    } else if (v.k == vertex::split && v.key) {
      return v.name + " (a split by key routes units)";
    }
  }
  return {};
}

graph::graph(const dag& d, graph_options o) {
  auto g = std::make_shared<detail::compiled_graph>();
  g->opts = o;
  g->whole_unit_at = d.whole_unit_at();
  dag_compiler c{d, *g, {}, {}, {}, {}, {}, {}};
  c.run();
  g_ = std::move(g);
}

}  // namespace sinew
