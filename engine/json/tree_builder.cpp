// The skeleton tree of a graph file (tree_builder.hpp). Each node kind is one
// row of `kinds`: the key that names it, its own fields, and its builder;
// messages list the kinds from that table.
#include "tree_builder.hpp"

#include <algorithm>
#include <cmath>

#include <sinew/distributed/distributed.hpp>
#include <sinew/io/type_names.hpp>
#include <sinew/skeletons/farm.hpp>
#include <sinew/skeletons/loop.hpp>
#include <sinew/skeletons/pipeline.hpp>

#include "graph_file_state.hpp"
#include "json_cursor.hpp"
#include "kernel_nodes.hpp"

namespace sinew::detail {
namespace {

/// Loop predicates a graph file can name, over f32 buffer "buffer" of the body's result.
loop_predicate predicate_at(const json_cursor& c, const flow& body_out) {
  c.expect_object({"predicate", "buffer", "value"}, {"predicate", "value"});
  std::string p = c.at("predicate").as_choice({"first_below", "first_above", "max_abs_below"});
  unsigned b = unsigned(c.get_uint("buffer", 0, 0, 7));
  double v = c.at("value").as_number();
  if (b >= body_out.types.types.size())
    c.at("buffer").fail("the loop body writes " + std::to_string(body_out.types.types.size()) + " buffer(s); buffer " +
                        std::to_string(b) + " does not exist");
  if (!body_out.types.types[b]->same_as(elem_type_of<float>()))
    c.fail("predicate '" + p + "' reads an f32 buffer; buffer " + std::to_string(b) + " holds " +
           io::type_name(*body_out.types.types[b]));
  const float fv = float(v);
  if (p == "first_below") return [b, fv](const layer& l, std::size_t) { return l.count() && l.get<const float>(b)[0] < fv; };
  if (p == "first_above") return [b, fv](const layer& l, std::size_t) { return l.count() && l.get<const float>(b)[0] > fv; };
  return [b, fv](const layer& l, std::size_t) {
    auto x = l.get<const float>(b);
    float m = 0;
    for (std::size_t i = 0; i < x.size(); ++i) m = std::max(m, std::fabs(x[i]));
    return m < fv;
  };
}

class tree_builder;

/// One node kind: {"<name>": ..., fields...}.
struct node_kind {
  std::string name;
  std::vector<std::string> fields;    ///< its own fields besides the key (name, capacity, placement: every node's)
  std::vector<std::string> required;
  bool distributable;                 ///< takes "distributed": its work may go to other MPI ranks
  built (tree_builder::*build)(const json_cursor&, const flow&, const node_kind&);

  /// `c` holds only this kind's fields and every required one.
  void expect_fields(const json_cursor& c) const {
    std::vector<std::string> allowed{name};
    allowed.insert(allowed.end(), fields.begin(), fields.end());
    allowed.insert(allowed.end(), {"name", "capacity", "placement"});
    if (distributable) allowed.push_back("distributed");
    c.expect_object(allowed, required);
  }
};

class tree_builder {
 public:
  explicit tree_builder(graph_file_state& s) : s_(s) {}

  built node_at(const json_cursor& c, const flow& in) {
    const std::string list = kind_names();
    if (!c.value().is_object()) c.fail("expected a node object (one of " + list + "), got " + json_kind(c.value()));
    const node_kind* kind = nullptr;
    for (const node_kind& k : kinds())
      if (c.has(k.name)) {
        if (kind) c.fail("a node has exactly one of " + list + "; found '" + kind->name + "' and '" + k.name + "'");
        kind = &k;
      }
    if (!kind) {
      std::string keys;
      for (auto& [k, v] : c.value().items()) keys += (keys.empty() ? "" : ", ") + k;
      c.fail("expected a node: an object with one of " + list + " (found fields: " +
             (keys.empty() ? std::string("none") : keys) + ")");
    }
    built b;
    try {
      b = (this->*kind->build)(c, in, *kind);
      if (kind->distributable && c.get_bool("distributed", false)) b.real = distributed(b.real);  // docs/distributed.md
    } catch (const json_error&) {
      throw;
    } catch (const error& e) {  // the engine's own checks of a node: still an invalid file
      c.fail(e.what());
    }
    if (c.has("name")) {
      std::string n = c.at("name").as_string();
      if (n.empty() || n.find('/') != std::string::npos) c.at("name").fail("a node name must be non-empty and contain no '/'");
      b.real.named(n);
      b.ref.named(n);
    }
    if (c.has("capacity")) b.real.capacity(std::size_t(c.at("capacity").as_uint(1, 1u << 20)));
    if (c.has("placement")) b.real.placement(placement_at(c.at("placement")));
    return b;
  }

 private:
  static const std::vector<node_kind>& kinds() {
    static const std::vector<node_kind> k = {
        {"pipeline", {}, {}, false, &tree_builder::pipeline_at},
        {"farm", {"workers", "ordered"}, {"workers"}, true, &tree_builder::farm_at},
        {"map", {"args"}, {}, true, &tree_builder::map_at},
        {"map_reduce", {"args", "reduce"}, {"reduce"}, false, &tree_builder::map_reduce_at},
        {"for", {"iterations"}, {"iterations"}, false, &tree_builder::for_at},
        {"loop", {"until", "max_iterations"}, {"until"}, false, &tree_builder::loop_at},
    };
    return k;
  }

  static std::string kind_names() {
    std::vector<std::string> v;
    for (const node_kind& k : kinds()) v.push_back(k.name);
    return comma_list(v);
  }

  built pipeline_at(const json_cursor& c, const flow& in, const node_kind& kind) {
    kind.expect_fields(c);
    json_cursor stages = c.at("pipeline");
    stages.expect_array();
    if (stages.value().empty()) stages.fail("a pipeline needs at least one stage");
    std::vector<node> real, ref;
    flow f = in;
    for (std::size_t i = 0; i < stages.value().size(); ++i) {
      built b = node_at(stages.at(i), f);
      real.push_back(b.real);
      ref.push_back(b.ref);
      f = b.out;
    }
    return {pipeline(real), pipeline(ref), f};
  }

  built farm_at(const json_cursor& c, const flow& in, const node_kind& kind) {
    kind.expect_fields(c);
    unsigned n = unsigned(c.at("workers").as_uint(1, 4096));
    bool ordered = c.get_bool("ordered", true);
    built w = node_at(c.at("farm"), in);
    return {farm(w.real, n, ordered ? farm_order::ordered : farm_order::unordered), farm(w.ref, n), w.out};
  }

  /// The body of a for or a loop, which must write what it reads.
  built body_at(const json_cursor& c, const flow& in, const node_kind& kind) {
    kind.expect_fields(c);
    built body = node_at(c.at(kind.name), in);
    if (!same_types(body.out.types, in.types))
      c.at(kind.name).fail("a loop body must write what it reads (iteration k+1 reads iteration k's output): it reads " +
                           types_text(in.types) + " and writes " + types_text(body.out.types));
    return body;
  }

  built for_at(const json_cursor& c, const flow& in, const node_kind& kind) {
    built body = body_at(c, in, kind);
    auto n = std::size_t(c.at("iterations").as_uint(1, std::uint64_t(1) << 40));
    return {for_loop(body.real, n), for_loop(body.ref, n), body.out};
  }

  built loop_at(const json_cursor& c, const flow& in, const node_kind& kind) {
    built body = body_at(c, in, kind);
    auto until = predicate_at(c.at("until"), body.out);
    auto max = std::size_t(c.get_uint("max_iterations", 1000000, 1, std::uint64_t(1) << 40));
    return {loop(body.real, until, max), loop(body.ref, until, max), body.out};
  }

  /// The C++ kernel named by the node's key, its arguments, and the check
  /// that it reads what flows in.
  std::pair<const kernel_info*, kernel_args> kernel_of(const json_cursor& c, const flow& in, const node_kind& kind) {
    kind.expect_fields(c);
    json_cursor kc = c.at(kind.name);
    const kernel_info& k = kernel_at(kc);
    kernel_args args = args_at(c, k);
    if (!same_types(k.inputs, in.types))
      kc.fail("kernel '" + k.name + "' reads " + types_text(k.inputs) + " but its input is " + types_text(in.types));
    if (k.rank && in.rank && k.rank != in.rank)
      kc.fail("kernel '" + k.name + "' works on " + std::to_string(k.rank) + "-D units; its input is " +
              std::to_string(in.rank) + "-D");
    return {&k, std::move(args)};
  }

  built map_at(const json_cursor& c, const flow& in, const node_kind& kind) {
    if (c.at("map").value().is_object()) return opencl_map_at(c, in, s_);
    auto [k, args] = kernel_of(c, in, kind);
    built b;
    b.real = k->make(args);
    b.ref = reference_node(*k, args);
    b.out.types = b.real.impl()->output_types();
    b.out.rank = in.rank;
    return b;
  }

  built map_reduce_at(const json_cursor& c, const flow& in, const node_kind& kind) {
    auto [k, args] = kernel_of(c, in, kind);
    if (!k->make_reduce)
      c.at(kind.name).fail("kernel '" + k->name + "' cannot be reduced (it needs one arithmetic output per element)");
    json_cursor oc = c.at("reduce");
    std::string op = oc.as_string();
    if (std::find(k->reduce_ops.begin(), k->reduce_ops.end(), op) == k->reduce_ops.end())
      oc.fail("unknown reduce operation '" + op + "' (use " + comma_list(k->reduce_ops) + ")");
    built b;
    b.real = k->make_reduce(args, op);
    b.ref = k->make_reduce(args, op);
    b.out.types = b.real.impl()->output_types();
    b.out.rank = 1;
    return b;
  }

  graph_file_state& s_;
};

}  // namespace

placement placement_at(const json_cursor& c) {
  std::string name = c.as_string();
  try {
    return parse_placement(name);
  } catch (const error& e) {
    c.fail(e.what());
  }
}

built node_at(const json_cursor& c, const flow& in, graph_file_state& s) { return tree_builder(s).node_at(c, in); }

}  // namespace sinew::detail
