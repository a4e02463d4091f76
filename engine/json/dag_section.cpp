// The dag form of a graph file ("sources", "nodes", "sinks"; docs/json.md,
// "Dags"): every name an edge uses is checked, the nodes are ordered so that
// each comes after its inputs (a cycle is an error naming its nodes), the
// element types are followed along every edge, and the dag is built.
#include "dag_section.hpp"

#include <sinew/engine/graph.hpp>

#include <algorithm>
#include <cstring>
#include <functional>
#include <map>

#include <sinew/io/type_names.hpp>

#include "graph_file_state.hpp"
#include "json_cursor.hpp"
#include "record_fields.hpp"
#include "tree_builder.hpp"

namespace sinew::detail {
namespace {

/// One node of "nodes": its kind and the names it reads.
struct node_entry {
  std::string name;
  json_cursor c;
  std::string kind;  // "graph", "merge", "zip", "join", "split", "keyed_farm"
  std::vector<std::pair<std::string, json_cursor>> inputs;  // the name, where it is written
  std::size_t ways = 1;  // outputs it offers ("name:k" for k < ways when ways > 1)
};

/// What a name refers to while the dag is built.
struct output_ref {
  std::vector<dag::port> ports;
  std::vector<flow> flows;
  std::string pointer;  // where it is defined
  bool read = false;
  std::size_t vertex = 0;  // in graph_file_state::ref_dag
};

/// "key": {"buffer": b, "element": e}: the element's value (integers) or bit
/// pattern (floating point) as the key.
key_function key_at(const json_cursor& c, const flow& in) {
  c.expect_object({"buffer", "element"}, {});
  const unsigned b = unsigned(c.get_uint("buffer", 0, 0, 7));
  const std::size_t e = std::size_t(c.get_uint("element", 0));
  if (b >= in.types.types.size())
    c.at("buffer").fail("the input has " + std::to_string(in.types.types.size()) + " buffer(s); buffer " +
                        std::to_string(b) + " does not exist");
  const std::size_t size = in.types.types[b]->size;
  if (size != 1 && size != 2 && size != 4 && size != 8)
    c.at("buffer").fail("a key is read from a 1-, 2-, 4- or 8-byte element; buffer " + std::to_string(b) + " holds " +
                        io::type_name(*in.types.types[b]));
  return [b, e, size](const work_unit& u) -> std::uint64_t {
    const layer& l = u.in();
    if (b >= l.size() || e >= l[b]->count())
      throw error("the key's element " + std::to_string(e) + " of buffer " + std::to_string(b) + " is not in the unit");
    std::uint64_t k = 0;
    std::memcpy(&k, static_cast<const char*>(l[b]->data()) + e * size, size);
    return k;
  };
}

class dag_loader {
 public:
  dag_loader(const json_cursor& root, graph_file_state& s) : root_(root), s_(s) {}

  void load() {
    json_cursor srcs = root_.at("sources"), nodes = root_.at("nodes"), snks = root_.at("sinks");
    for (const json_cursor* c : {&srcs, &nodes, &snks})
      if (!c->value().is_object() || c->value().empty())
        c->fail("expected an object of named " + std::string(c == &srcs ? "sources" : c == &nodes ? "nodes" : "sinks") +
                ", got " + (c->value().is_object() ? std::string("an empty one") : json_kind(c->value())));
    s_.dag = std::make_shared<dag>();
    for (auto it = srcs.value().begin(); it != srcs.value().end(); ++it) add_source(it.key(), srcs.at(it.key()));
    for (auto it = nodes.value().begin(); it != nodes.value().end(); ++it) read_node(it.key(), nodes.at(it.key()));
    for (std::size_t i : order()) build(entries_[i]);
    for (auto it = snks.value().begin(); it != snks.value().end(); ++it) add_sink(it.key(), snks.at(it.key()));
    for (auto& [name, out] : outputs_)
      if (!out.read)
        throw json_error(root_.file(), out.pointer,
                         "'" + name + "' is read by no node and no sink (every output must go somewhere)");
    try {  // the engine's own checks (types along edges, keyed farms' replicas, ...)
      graph g(*s_.dag);
    } catch (const graph_error& e) {
      throw json_error(root_.file(), pointer_of(e.path()), e.what());
    }
    // Record batches: where every tree works per element or per record,
    // no zip or split by key, and every sink writes records.
    s_.whole_unit_at = s_.dag->whole_unit_at();
    for (const auto& k : s_.sinks)
      if (s_.whole_unit_at.empty() && !k.type->writes_records) s_.whole_unit_at = "sink '" + k.name + "'";
    for (const auto& src : s_.sources) check_batching(srcs.at(src.name), src.plan.batch, s_.whole_unit_at);
  }

 private:
  static void check_name(const std::string& name, const json_cursor& c) {
    if (name.empty()) c.fail("a name must not be empty");
    if (name.find_first_of("/:") != std::string::npos)
      c.fail("'" + name + "': names must not contain '/' or ':' (\"split:1\" names an output of a split)");
  }

  void add_source(const std::string& name, const json_cursor& c) {
    check_name(name, c);
    const source_type_info& t = source_types().at(c);
    source_plan p = t.parse(c);
    flow f;
    f.types.types = p.layout.buffers;
    f.rank = p.rank ? p.rank : p.layout.shape.rank;
    outputs_[name] = {{s_.dag->source(name)}, {f}, c.pointer(), false, s_.ref_dag.size()};
    s_.ref_dag.push_back({graph_file_state::ref_vertex::source, name, {}, {}, 1, {}, s_.sources.size()});
    s_.sources.push_back({name, &t, std::move(p)});
  }

  void read_node(const std::string& name, const json_cursor& c) {
    check_name(name, c);
    if (outputs_.count(name)) c.fail("'" + name + "' names a source too");
    if (!c.value().is_object()) c.fail("expected a node object, got " + json_kind(c.value()));
    node_entry e{name, c, "", {}, 1};
    for (const char* k : {"graph", "merge", "zip", "join", "split", "keyed_farm"})
      if (c.has(k) && (std::strcmp(k, "graph") || !c.has("keyed_farm"))) {
        if (!e.kind.empty())
          c.fail("a node is one of graph, merge, zip, join, split, keyed_farm; this one has '" + e.kind + "' and '" + k +
                 "'");
        e.kind = k;
      }
    if (e.kind.empty()) c.fail("a node needs one of: graph (with input), merge, zip, join, split, keyed_farm");
    if (e.kind == "graph") {
      c.expect_object({"input", "graph"}, {"input", "graph"});
      e.inputs.push_back({c.at("input").as_string(), c.at("input")});
    } else if (e.kind == "merge" || e.kind == "zip" || e.kind == "join") {
      if (e.kind == "join") {
        c.expect_object({"join", "key", "keys", "window", "unmatched"}, {"join"});
        if (c.has("key") == c.has("keys")) c.fail("a join needs \"key\" (for every input) or \"keys\" (one per input)");
      } else {
        c.expect_object({e.kind.c_str()}, {});
      }
      json_cursor l = c.at(e.kind);
      l.expect_array();
      if (l.value().size() < 2) l.fail("a " + e.kind + " needs at least 2 inputs");
      if (e.kind != "merge" && l.value().size() > layer::max_buffers) l.fail("a " + e.kind + " takes at most 8 inputs");
      for (std::size_t i = 0; i < l.value().size(); ++i) e.inputs.push_back({l.at(i).as_string(), l.at(i)});
      if (c.has("keys")) {
        json_cursor k = c.at("keys");
        k.expect_array();
        if (k.value().size() != l.value().size())
          k.fail("one key per input: " + std::to_string(l.value().size()) + " input(s), " +
                 std::to_string(k.value().size()) + " key(s)");
      }
    } else if (e.kind == "split") {
      c.expect_object({"split", "ways", "policy", "key"}, {"split", "ways"});
      e.inputs.push_back({c.at("split").as_string(), c.at("split")});
      e.ways = std::size_t(c.at("ways").as_uint(2, 64));
      if (c.has("policy") && c.has("key")) c.at("key").fail("a split goes by \"policy\" or by \"key\", not both");
    } else {
      c.expect_object({"keyed_farm", "replicas", "key", "graph"}, {"keyed_farm", "replicas", "key", "graph"});
      e.inputs.push_back({c.at("keyed_farm").as_string(), c.at("keyed_farm")});
    }
    entries_.push_back(std::move(e));
    outputs_[name].pointer = c.pointer();
  }

  /// The nodes in an order where every node follows its inputs.
  std::vector<std::size_t> order() {
    std::map<std::string, std::size_t> index;
    for (std::size_t i = 0; i < entries_.size(); ++i) index[entries_[i].name] = i;
    std::vector<int> state(entries_.size(), 0);  // 0 new, 1 on the path, 2 done
    std::vector<std::size_t> out, path;
    std::function<void(std::size_t)> visit = [&](std::size_t i) {
      state[i] = 1;
      path.push_back(i);
      for (auto& [ref, at] : entries_[i].inputs) {
        const std::string base = resolve(ref, at);
        auto it = index.find(base);
        if (it == index.end()) continue;  // a source
        if (state[it->second] == 1) {
          std::string cycle;
          for (std::size_t k = std::size_t(std::find(path.begin(), path.end(), it->second) - path.begin());
               k < path.size(); ++k)
            cycle += entries_[path[k]].name + " -> ";
          at.fail("the nodes " + cycle + base + " form a cycle (iterate with the loop or for skeletons)");
        }
        if (state[it->second] == 0) visit(it->second);
      }
      path.pop_back();
      state[i] = 2;
      out.push_back(i);
    };
    for (std::size_t i = 0; i < entries_.size(); ++i)
      if (state[i] == 0) visit(i);
    return out;
  }

  /// The node or source a reference names ("split:1" -> "split"); fails on
  /// unknown names and bad output numbers.
  std::string resolve(const std::string& ref, const json_cursor& at) const {
    const std::size_t colon = ref.find(':');
    const std::string base = ref.substr(0, colon);
    auto known = [&] {
      std::vector<std::string> names;
      for (auto& [n, o] : outputs_) names.push_back(n);
      return comma_list(names);
    };
    if (!outputs_.count(base)) at.fail("no source or node named '" + base + "' (known: " + known() + ")");
    const node_entry* e = nullptr;
    for (const auto& x : entries_)
      if (x.name == base) e = &x;
    const std::size_t ways = e ? e->ways : 1;
    if (colon == std::string::npos) {
      if (ways > 1) at.fail("'" + base + "' is a split of " + std::to_string(ways) + " outputs: name one, e.g. '" + base + ":0'");
      return base;
    }
    const std::string k = ref.substr(colon + 1);
    if (ways == 1 || k.empty() || k.find_first_not_of("0123456789") != std::string::npos || std::stoul(k) >= ways)
      at.fail("'" + ref + "': " + (ways == 1 ? "'" + base + "' has one output (name it without ':')"
                                              : "outputs of '" + base + "' are " + base + ":0 to " + base + ":" +
                                                    std::to_string(ways - 1)));
    return base;
  }

  /// The port and flow a reference names, marked as read; `ins` gets its
  /// (vertex, output) for the reference.
  std::pair<dag::port, flow> input(const std::string& ref, const json_cursor& at,
                                   std::vector<std::pair<std::size_t, std::size_t>>& ins) {
    const std::string base = resolve(ref, at);
    output_ref& o = outputs_.at(base);
    const std::size_t k = ref.size() > base.size() ? std::stoul(ref.substr(base.size() + 1)) : 0;
    o.read = true;
    ins.emplace_back(o.vertex, k);
    return {o.ports[k], o.flows[k]};
  }

  void build(const node_entry& e) {
    using rv = graph_file_state::ref_vertex;
    dag& d = *s_.dag;
    output_ref& mine = outputs_[e.name];
    mine.vertex = s_.ref_dag.size();
    rv v{rv::tree, e.name, {}, {}, 1, {}, 0};
    const json_cursor& c = e.c;
    if (e.kind == "graph" || e.kind == "keyed_farm") {
      auto [p, in] = input(e.inputs[0].first, e.inputs[0].second, v.ins);
      built t = node_at(c.at("graph"), in, s_);
      v.ref = t.ref;
      if (e.kind == "graph") {
        mine.ports = {d.add(e.name, t.real, p)};
      } else {
        const unsigned n = unsigned(c.at("replicas").as_uint(1, 64));
        key_function key = key_at(c.at("key"), in);
        // Each replica is built from the file anew: kernels with state get
        // an object of their own per replica.
        std::vector<node> replicas{t.real};
        for (unsigned r = 1; r < n; ++r) replicas.push_back(node_at(c.at("graph"), in, s_).real);
        mine.ports = {d.keyed_farm(e.name, p, n, key, [&](unsigned r) { return replicas[r]; })};
      }
      mine.flows = {t.out};
    } else if (e.kind == "split") {
      auto [p, in] = input(e.inputs[0].first, e.inputs[0].second, v.ins);
      v.ways = e.ways;
      if (c.has("key")) {
        v.k = rv::split_by_key;
        v.key = key_at(c.at("key"), in);
        mine.ports = d.split_by_key(e.name, p, unsigned(e.ways), v.key);
      } else {
        v.k = rv::split_by_policy;
        const std::string pol = c.has("policy") ? c.at("policy").as_choice({"round_robin", "least_loaded"}) : "round_robin";
        mine.ports = d.split(e.name, p, unsigned(e.ways),
                             pol == "least_loaded" ? split_policy::least_loaded : split_policy::round_robin);
      }
      mine.flows.assign(e.ways, in);
    } else {
      v.k = e.kind == "merge" ? rv::merge : e.kind == "zip" ? rv::zip : rv::join;
      std::vector<dag::port> ports;
      std::vector<key_function> keys;
      flow out;
      for (std::size_t i = 0; i < e.inputs.size(); ++i) {
        auto [p, in] = input(e.inputs[i].first, e.inputs[i].second, v.ins);
        ports.push_back(p);
        if (e.kind == "join") keys.push_back(key_at(c.has("key") ? c.at("key") : c.at("keys").at(i), in));
        if (i == 0) {
          out = in;
          continue;
        }
        if (in.rank && out.rank && in.rank != out.rank)
          e.inputs[i].second.fail("'" + e.inputs[i].first + "' gives units of rank " + std::to_string(in.rank) + ", '" +
                                  e.inputs[0].first + "' of rank " + std::to_string(out.rank));
        if (e.kind == "merge") {
          if (!same_types(in.types, out.types))
            e.inputs[i].second.fail("a merge's inputs must hold the same types: '" + e.inputs[i].first + "' gives " +
                                    types_text(in.types) + ", '" + e.inputs[0].first + "' " + types_text(out.types));
        } else {
          out.types.types.insert(out.types.types.end(), in.types.types.begin(), in.types.types.end());
        }
      }
      if (e.kind != "merge" && out.types.types.size() > layer::max_buffers)
        c.fail(std::string(e.kind == "zip" ? "the zipped" : "the joined") + " unit would hold " +
               std::to_string(out.types.types.size()) + " buffers (at most 8)");
      if (e.kind == "join") {
        join_options o;
        o.window = std::size_t(c.get_uint("window", o.window, 1, std::uint64_t(1) << 30));
        if (c.has("unmatched") && c.at("unmatched").as_choice({"drop", "fail"}) == "fail")
          o.unmatched = join_unmatched::fail;
        mine.ports = {d.join(e.name, ports, std::move(keys), o)};
      } else {
        mine.ports = {e.kind == "merge" ? d.merge(e.name, ports) : d.zip(e.name, ports)};
      }
      mine.flows = {out};
    }
    s_.ref_dag.push_back(std::move(v));
  }

  /// The JSON pointer of the node a stage path ("count[2]/map<k>") is in.
  std::string pointer_of(const std::string& path) const {
    std::string base = path.substr(0, path.find_first_of("/["));
    auto it = outputs_.find(base);
    return it != outputs_.end() ? it->second.pointer : root_.pointer() + "/nodes";
  }

  void add_sink(const std::string& name, const json_cursor& c) {
    check_name(name, c);
    if (outputs_.count(name)) c.fail("'" + name + "' names a source or node too");
    c.expect_object({"input", "sink"}, {"input", "sink"});
    graph_file_state::ref_vertex v{graph_file_state::ref_vertex::sink, name, {}, {}, 1, {}, s_.sinks.size()};
    auto [p, in] = input(c.at("input").as_string(), c.at("input"), v.ins);
    json_cursor k = c.at("sink");
    const sink_type_info& t = sink_types().at(k);
    s_.sinks.push_back({name, &t, t.parse(k, in)});
    s_.ref_dag.push_back(std::move(v));
    s_.dag->sink(name, p);
  }

  const json_cursor& root_;
  graph_file_state& s_;
  std::vector<node_entry> entries_;
  std::map<std::string, output_ref> outputs_;
};

}  // namespace

void load_dag(const json_cursor& root, graph_file_state& s) { dag_loader(root, s).load(); }

}  // namespace sinew::detail
