// Graph files: parse, apply --set overrides, validate every field (errors name
// the JSON pointer), build the skeleton tree from the kernel registry, and
// check that the types flowing source -> tree -> sink fit, before anything
// runs. The format is documented in docs/json.md.
#include <sinew/json/graph_file.hpp>

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <sstream>

#include <sinew/schedulers/deal_scheduler.hpp>
#include <sinew/engine/elem_type.hpp>
#include <sinew/distributed/distributed.hpp>
#include <sinew/skeletons/farm.hpp>
#include <sinew/io.hpp>
#include <sinew/json/kernel_registry.hpp>
#include <sinew/skeletons/loop.hpp>
#include <sinew/skeletons/pipeline.hpp>
#include <sinew/schedulers/scheduler_registry.hpp>
#include <sinew/schedulers/topology.hpp>
#include <sinew/workloads/nbody.hpp>

#include "graph_file_state.hpp"
#include "json_cursor.hpp"

namespace sinew {
namespace detail {
namespace {

std::string type_name(const elem_type* t) {
  if (!t) return "?";
  for (auto n : elem_type_names())
    if (elem_type_by_name(n) == t || elem_type_by_name(n)->same_as(*t)) return std::string(n);
  return demangle(t->name);
}

}  // namespace

std::string types_text(const type_list& t) {
  if (t.any) return "[any]";
  std::string s = "[";
  for (std::size_t i = 0; i < t.types.size(); ++i) s += (i ? ", " : "") + type_name(t.types[i]);
  return s + "]";
}

bool same_types(const type_list& a, const type_list& b) {
  if (a.any || b.any) return true;
  if (a.types.size() != b.types.size()) return false;
  for (std::size_t i = 0; i < a.types.size(); ++i)
    if (!a.types[i]->same_as(*b.types[i])) return false;
  return true;
}

namespace {

std::string names_list(const std::vector<std::string>& v) {
  std::string s;
  for (auto& n : v) s += (s.empty() ? "" : ", ") + n;
  return s;
}

bool file_exists(const std::string& p, bool dir) {
  struct stat st {};
  if (::stat(p.c_str(), &st) != 0) return false;
  return dir ? S_ISDIR(st.st_mode) : S_ISREG(st.st_mode);
}

std::uint64_t physical_memory() {
  long pages = ::sysconf(_SC_PHYS_PAGES), size = ::sysconf(_SC_PAGE_SIZE);
  return pages > 0 && size > 0 ? std::uint64_t(pages) * std::uint64_t(size) : (std::uint64_t(1) << 34);
}

/// A leaf replaced by its kernel's sequential reference (see reference_fn).
class reference_leaf final : public node_impl {
 public:
  reference_leaf(const kernel_info& k, kernel_args a, node real) : k_(k), a_(std::move(a)), real_(std::move(real)) {}
  std::string label() const override { return "reference<" + k_.name + ">"; }
  type_list input_types() const override { return real_.impl()->input_types(); }
  type_list output_types() const override { return real_.impl()->output_types(); }
  bool in_place() const override { return real_.impl()->in_place(); }
  shape output_shape(const shape& in) const override { return real_.impl()->output_shape(in); }
  std::shared_ptr<executable> compile_inline(const std::string&) const override {
    struct exec final : executable {
      reference_fn fn;
      kernel_args args;
      void execute(exec_args& a) override { fn(*a.in, *a.out, args); }
    };
    auto e = std::make_shared<exec>();
    e->fn = k_.reference;
    e->args = a_;
    return e;
  }

 private:
  const kernel_info& k_;
  kernel_args a_;
  node real_;
};

}  // namespace

node reference_node(const kernel_info& k, const kernel_args& args) {
  node real = k.make(args);
  return k.reference ? node(std::make_shared<reference_leaf>(k, args, real)) : real;
}

const kernel_info& kernel_at(const json_cursor& c) {
  std::string name = c.as_string();
  const kernel_info* k = kernel_registry::global().find(name);
  if (!k) {
    auto names = kernel_registry::global().names();
    std::string near = kernel_registry::global().closest(name);
    c.fail("unknown kernel '" + name + "'" + (near.empty() ? "" : " (did you mean '" + near + "'?)") +
           "; known kernels: " + names_list(names));
  }
  return *k;
}

kernel_args args_at(const json_cursor& c, const kernel_info& k) {
  std::map<std::string, arg_value> given;
  if (c.has("args")) {
    json_cursor a = c.at("args");
    if (!a.value().is_object()) a.fail("expected an object of kernel arguments, got " + json_kind(a.value()));
    for (auto& [key, v] : a.value().items()) {
      json_cursor vc = a.at(key);
      if (v.is_boolean()) given[key] = v.get<bool>();
      else if (v.is_number_integer() || v.is_number_unsigned()) {
        if (v.is_number_unsigned() && v.get<std::uint64_t>() > std::uint64_t(INT64_MAX)) vc.fail("integer too large");
        given[key] = v.get<std::int64_t>();
      } else if (v.is_number_float()) given[key] = v.get<double>();
      else if (v.is_string()) given[key] = v.get<std::string>();
      else vc.fail("a kernel argument is a number, a boolean or a string, got " + json_kind(v));
    }
  }
  try {
    return kernel_registry::global().bind(k, given);
  } catch (const kernel_arg_error& e) {
    if (!e.arg().empty() && given.count(e.arg())) c.at("args").at(e.arg()).fail(e.what());
    c.fail(e.what());
  }
}

namespace {

/// "placement": standard, fine, coarse or auto (seed 000 paper 1, Tables 1-3);
/// a bad name fails naming the JSON pointer.
placement placement_at(const json_cursor& c) {
  std::string name = c.as_string();
  try {
    return parse_placement(name);
  } catch (const error& e) {
    c.fail(e.what());
  }
}

/// Loop predicates a graph file can name.
loop_predicate make_predicate(const json_cursor& c, const flow& body_out) {
  c.expect_object({"predicate", "buffer", "value"}, {"predicate", "value"});
  std::string p = c.at("predicate").as_choice({"first_below", "first_above", "max_abs_below"});
  unsigned b = unsigned(c.get_uint("buffer", 0, 0, 7));
  double v = c.at("value").as_number();
  if (b >= body_out.types.types.size())
    c.at("buffer").fail("the loop body writes " + std::to_string(body_out.types.types.size()) + " buffer(s); buffer " +
                        std::to_string(b) + " does not exist");
  if (!body_out.types.types[b]->same_as(elem_type_of<float>()))
    c.fail("predicate '" + p + "' reads an f32 buffer; buffer " + std::to_string(b) + " holds " +
           type_name(body_out.types.types[b]));
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

class builder {
 public:
  explicit builder(graph_file_state& s) : s_(s) {}

  built node_at(const json_cursor& c, const flow& in) {
    if (!c.value().is_object()) c.fail("expected a node object (one of pipeline, farm, map, map_reduce, for, loop), got " + json_kind(c.value()));
    static const char* kinds[] = {"pipeline", "farm", "map", "map_reduce", "for", "loop"};
    std::string kind;
    for (const char* k : kinds)
      if (c.has(k)) {
        if (!kind.empty()) c.fail("a node has exactly one of pipeline, farm, map, map_reduce, for, loop; found '" + kind + "' and '" + k + "'");
        kind = k;
      }
    if (kind.empty()) {
      std::string keys;
      for (auto& [k, v] : c.value().items()) keys += (keys.empty() ? "" : ", ") + k;
      c.fail("expected a node: an object with one of pipeline, farm, map, map_reduce, for, loop (found fields: " +
             (keys.empty() ? std::string("none") : keys) + ")");
    }
    built b;
    try {
      if (kind == "pipeline") b = pipeline_at(c, in);
      else if (kind == "farm") b = farm_at(c, in);
      else if (kind == "map" || kind == "map_reduce") b = leaf_at(c, in, kind);
      else b = loop_at(c, in, kind);
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
  built pipeline_at(const json_cursor& c, const flow& in) {
    c.expect_object({"pipeline", "name", "capacity", "placement"});
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

  built farm_at(const json_cursor& c, const flow& in) {
    c.expect_object({"farm", "workers", "ordered", "name", "capacity", "placement", "distributed"}, {"workers"});
    unsigned n = unsigned(c.at("workers").as_uint(1, 4096));
    bool ordered = c.get_bool("ordered", true);
    built w = node_at(c.at("farm"), in);
    node real = farm(w.real, n, ordered ? farm_order::ordered : farm_order::unordered);
    if (c.get_bool("distributed", false)) real = distributed(real);  // over MPI ranks (docs/distributed.md)
    return {real, farm(w.ref, n), w.out};
  }

  built loop_at(const json_cursor& c, const flow& in, const std::string& kind) {
    if (kind == "for") c.expect_object({"for", "iterations", "name", "capacity", "placement"}, {"iterations"});
    else c.expect_object({"loop", "until", "max_iterations", "name", "capacity", "placement"}, {"until"});
    built body = node_at(c.at(kind), in);
    if (!same_types(body.out.types, in.types))
      c.at(kind).fail("a loop body must write what it reads (iteration k+1 reads iteration k's output): it reads " +
                      types_text(in.types) + " and writes " + types_text(body.out.types));
    if (kind == "for") {
      auto n = std::size_t(c.at("iterations").as_uint(1, std::uint64_t(1) << 40));
      return {for_loop(body.real, n), for_loop(body.ref, n), body.out};
    }
    auto until = make_predicate(c.at("until"), body.out);
    auto max = std::size_t(c.get_uint("max_iterations", 1000000, 1, std::uint64_t(1) << 40));
    return {loop(body.real, until, max), loop(body.ref, until, max), body.out};
  }

  built leaf_at(const json_cursor& c, const flow& in, const std::string& kind) {
    if (kind == "map" && c.at("map").value().is_object()) return opencl_map_at(c, in, s_);
    if (kind == "map") c.expect_object({"map", "args", "name", "capacity", "placement", "distributed"});
    else c.expect_object({"map_reduce", "args", "reduce", "name", "capacity", "placement"}, {"reduce"});
    json_cursor kc = c.at(kind);
    const kernel_info& k = kernel_at(kc);
    kernel_args args = args_at(c, k);
    if (!same_types(k.inputs, in.types))
      kc.fail("kernel '" + k.name + "' reads " + types_text(k.inputs) + " but its input is " + types_text(in.types));
    if (k.rank && in.rank && k.rank != in.rank)
      kc.fail("kernel '" + k.name + "' works on " + std::to_string(k.rank) + "-D units; its input is " +
              std::to_string(in.rank) + "-D");
    built b;
    if (kind == "map") {
      b.real = k.make(args);
      if (c.get_bool("distributed", false)) b.real = distributed(b.real);  // rows split over MPI ranks
      b.ref = reference_node(k, args);
      b.out.types = b.real.impl()->output_types();
      b.out.rank = in.rank;
    } else {
      json_cursor oc = c.at("reduce");
      if (!k.make_reduce) kc.fail("kernel '" + k.name + "' cannot be reduced (it needs one arithmetic output per element)");
      std::string op = oc.as_string();
      if (std::find(k.reduce_ops.begin(), k.reduce_ops.end(), op) == k.reduce_ops.end())
        oc.fail("unknown reduce operation '" + op + "' (use " + names_list(k.reduce_ops) + ")");
      b.real = k.make_reduce(args, op);
      b.ref = k.make_reduce(args, op);
      b.out.types = b.real.impl()->output_types();
      b.out.rank = 1;
    }
    return b;
  }

  graph_file_state& s_;
};

// ---------------------------------------------------------------------------
// source / sink / scheduler sections
// ---------------------------------------------------------------------------

io::record_layout layout_at(const json_cursor& c, bool allow_no_buffers) {
  io::record_layout l;
  json_cursor bufs = c.required("buffers");
  bufs.expect_array();
  if (bufs.value().size() > layer::max_buffers) bufs.fail("at most 8 buffers per unit");
  if (bufs.value().empty() && !allow_no_buffers) bufs.fail("at least one buffer is needed here");
  for (std::size_t i = 0; i < bufs.value().size(); ++i) {
    std::string n = bufs.at(i).as_string();
    const elem_type* t = elem_type_by_name(n);
    if (!t) {
      std::string known;
      for (auto k : elem_type_names()) known += (known.empty() ? "" : ", ") + std::string(k);
      bufs.at(i).fail("unknown element type '" + n + "' (known: " + known + ")");
    }
    l.buffers.push_back(t);
  }
  json_cursor sh = c.required("shape");
  sh.expect_array();
  std::size_t r = sh.value().size();
  if (r < 1 || r > 3) sh.fail("a shape has 1, 2 or 3 extents, got " + std::to_string(r));
  std::size_t e[3] = {1, 1, 1};
  double total = 1;
  for (std::size_t i = 0; i < r; ++i) {
    e[i] = std::size_t(sh.at(i).as_uint(1, std::uint64_t(1) << 40));
    total *= double(e[i]);
  }
  l.shape = r == 1 ? shape::d1(e[0]) : r == 2 ? shape::d2(e[0], e[1]) : shape::d3(e[0], e[1], e[2]);
  double bytes = 0;
  for (auto* t : l.buffers) bytes += total * double(t->size);
  const double limit = double(physical_memory()) / 4;
  if (bytes > limit || total > 9e15) {
    std::ostringstream os;
    os << "a unit of " << bytes / double(1 << 20) << " MiB is more than a quarter of this machine's memory ("
       << limit / double(1 << 20) << " MiB)";
    sh.fail(os.str());
  }
  return l;
}

std::optional<std::uint64_t> count_at(const json_cursor& c, bool required) {
  if (!c.has("count")) {
    if (required) c.fail("missing required field 'count' (a number of units, or \"unbounded\")");
    return std::nullopt;
  }
  json_cursor n = c.at("count");
  if (n.value().is_string()) {
    n.as_choice({"unbounded"});
    return std::nullopt;
  }
  return n.as_uint(0, std::uint64_t(1) << 53);
}

std::uint16_t port_at(const json_cursor& c, bool allow_zero) {
  return std::uint16_t(c.required("port").as_uint(allow_zero ? 0 : 1, 65535));
}

void source_at(graph_file_state& s, const json_cursor& c) {
  if (!c.value().is_object()) c.fail("expected a source object with a \"type\", got " + json_kind(c.value()));
  std::string type = c.required("type").as_choice({"generator", "nbody", "file", "stdin", "ppm_dir", "tcp"});
  if (type == "generator") {
    c.expect_object({"type", "buffers", "shape", "count", "pattern", "seed", "value", "rate"}, {"buffers", "shape"});
    s.layout = layout_at(c, true);
    s.count = count_at(c, true);
    s.gen.layout = s.layout;
    s.gen.count = s.count;
    s.gen.pattern = c.has("pattern") ? c.at("pattern").as_choice({"random", "ramp", "constant"}) : "random";
    s.gen.seed = c.get_uint("seed", 42);
    s.gen.value = c.get_number("value", 1);
    s.gen.rate = c.get_number("rate", 0, 0, 1e9);
    s.skind = s.layout.buffers.empty() ? source_kind::index : source_kind::generator;
    if (s.layout.buffers.empty() && c.has("rate")) c.at("rate").fail("an index source (no buffers) has no rate");
    if (!s.layout.buffers.empty()) {
      try {  // the generator's own checks (pattern vs element type)
        io::generator(s.gen);
      } catch (const error& e) {
        c.fail(e.what());
      }
    }
  } else if (type == "nbody") {
    c.expect_object({"type", "bodies", "seed", "count"}, {"bodies"});
    s.skind = source_kind::nbody;
    s.bodies = c.at("bodies").as_uint(1, std::uint64_t(1) << 28);
    s.gen.seed = c.get_uint("seed", 42);
    s.count = count_at(c, false);
    if (!s.count) s.count = 1;
    s.layout = io::record_layout::of<workloads::body, workloads::vel>(shape::d1(s.bodies));
  } else if (type == "file") {
    c.expect_object({"type", "path", "buffers", "shape"}, {"path", "buffers", "shape"});
    s.skind = source_kind::file;
    s.layout = layout_at(c, false);
    s.path = c.at("path").as_string();
    if (!file_exists(s.path, false)) c.at("path").fail("no such file: '" + s.path + "'");
    struct stat st {};
    ::stat(s.path.c_str(), &st);
    if (std::uint64_t(st.st_size) % s.layout.bytes() != 0)
      c.at("path").fail("'" + s.path + "' holds " + std::to_string(st.st_size) + " bytes, not a whole number of " +
                        std::to_string(s.layout.bytes()) + "-byte records");
    s.count = std::uint64_t(st.st_size) / s.layout.bytes();
  } else if (type == "stdin") {
    std::string fmt = c.has("format") ? c.at("format").as_choice({"binary", "lines"}) : "binary";
    if (fmt == "lines") {
      c.expect_object({"type", "format"});
      s.skind = source_kind::stdin_lines;
      s.layout = io::record_layout::of<std::uint8_t>(shape::d1(1));
      s.layout_rank = 1;
    } else {
      c.expect_object({"type", "format", "buffers", "shape"}, {"buffers", "shape"});
      s.skind = source_kind::stdin_binary;
      s.layout = layout_at(c, false);
    }
  } else if (type == "ppm_dir") {
    c.expect_object({"type", "path"}, {"path"});
    s.skind = source_kind::ppm_dir;
    s.path = c.at("path").as_string();
    if (!file_exists(s.path, true)) c.at("path").fail("no such directory: '" + s.path + "'");
    s.layout = io::record_layout::of<workloads::rgba8>(shape::d2(1, 1));
    s.layout_rank = 2;
  } else {
    c.expect_object({"type", "mode", "host", "port", "buffers", "shape"}, {"mode", "port", "buffers", "shape"});
    s.skind = source_kind::tcp;
    s.listen = c.at("mode").as_choice({"listen", "connect"}) == "listen";
    s.host = c.get_string("host", "127.0.0.1");
    s.port = port_at(c, false);
    s.layout = layout_at(c, false);
  }
  if (!s.layout_rank) s.layout_rank = s.layout.shape.rank;
}

void sink_at(graph_file_state& s, const json_cursor& c, const flow& out) {
  if (!c.value().is_object()) c.fail("expected a sink object with a \"type\", got " + json_kind(c.value()));
  s.sink_type = c.required("type").as_choice({"checksum", "null", "file", "stdout", "ppm_dir", "tcp"});
  const std::string& t = s.sink_type;
  if (t == "checksum" || t == "null") c.expect_object({"type"});
  else if (t == "file") {
    c.expect_object({"type", "path"}, {"path"});
    s.sink_path = c.at("path").as_string();
    if (s.sink_path.empty()) c.at("path").fail("an empty path");
  } else if (t == "stdout") {
    c.expect_object({"type", "format"});
    s.sink_lines = c.has("format") && c.at("format").as_choice({"binary", "lines"}) == "lines";
    if (s.sink_lines && !same_types(out.types, type_list{false, {&elem_type_of<std::uint8_t>()}}))
      c.at("format").fail("text lines need units of one u8 buffer; the graph writes " + types_text(out.types));
  } else if (t == "ppm_dir") {
    c.expect_object({"type", "path", "prefix"}, {"path"});
    s.sink_path = c.at("path").as_string();
    s.sink_prefix = c.get_string("prefix", "frame");
    if (!same_types(out.types, type_list{false, {elem_type_by_name("rgba8")}}) || (out.rank && out.rank != 2))
      c.fail("a PPM directory takes 2-D images of one rgba8 buffer; the graph writes " + types_text(out.types) +
             (out.rank ? " " + std::to_string(out.rank) + "-D" : ""));
  } else {
    c.expect_object({"type", "mode", "host", "port"}, {"mode", "port"});
    s.sink_listen = c.at("mode").as_choice({"listen", "connect"}) == "listen";
    s.sink_host = c.get_string("host", "127.0.0.1");
    s.sink_port = port_at(c, false);
  }
}

void scheduler_at(graph_file_state& s, const json_cursor& c) {
  if (c.value().is_string()) {
    s.policy = c.as_choice(scheduler_names());
    return;
  }
  c.expect_object({"policy", "threads", "pin", "topology", "size_threshold", "spread_tolerance", "vicinities"}, {"policy"});
  s.policy = c.at("policy").as_choice(scheduler_names());
  s.threads = unsigned(c.get_uint("threads", 0, 0, 4096));
  s.pin = c.get_bool("pin", true);
  if (c.has("topology")) {
    s.topology_spec = c.at("topology").as_string();
    try {
      topology::parse(s.topology_spec);
    } catch (const error& e) {
      c.at("topology").fail(e.what());
    }
    if (s.threads) c.at("threads").fail("give either 'threads' or 'topology', not both");
  }
  bool deal_field = c.has("size_threshold") || c.has("spread_tolerance") || c.has("vicinities");
  if (deal_field && s.policy != "deal") c.fail("size_threshold, spread_tolerance and vicinities are options of the 'deal' policy");
  if (c.has("size_threshold")) s.deal.size_threshold = c.at("size_threshold").as_uint();
  s.deal.spread_tolerance = c.get_number("spread_tolerance", 0, 0, 1);
  if (c.has("vicinities")) {
    json_cursor v = c.at("vicinities");
    v.expect_array();
    for (std::size_t i = 0; i < v.value().size(); ++i) {
      json_cursor g = v.at(i);
      g.expect_array();
      std::vector<int> grp;
      for (std::size_t j = 0; j < g.value().size(); ++j) grp.push_back(int(g.at(j).as_uint(0, 4095)));
      s.deal.vicinities.push_back(grp);
    }
  }
  s.deal.pin = s.pin;
}

}  // namespace

void load_document(graph_file_state& s) {
  json_cursor root(s.doc, "", &s.origin);
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
  if (root.has("scheduler")) scheduler_at(s, root.at("scheduler"));
  if (root.has("placement")) s.placement = placement_at(root.at("placement"));
  s.capacity = std::size_t(root.get_uint("queue_capacity", 0, 0, 1u << 20));
  s.batch = unsigned(root.get_uint("batch", 256, 1, 1u << 20));
  s.memory_limit = std::size_t(root.get_uint("memory_limit_mib", 0, 0, std::uint64_t(1) << 30)) << 20;
  if (root.has("verify")) {
    json_cursor vc = root.at("verify");
    vc.expect_object({"tolerance"});
    s.tolerance = vc.get_number("tolerance", 0, 0, 1);
  }
  if (root.has("plugins")) {
    json_cursor pl = root.at("plugins");
    pl.expect_array();
    for (std::size_t i = 0; i < pl.value().size(); ++i) {
      std::string p = pl.at(i).as_string();
      if (!p.empty() && p[0] != '/') p = s.base_dir + "/" + p;
      if (!file_exists(p, false)) pl.at(i).fail("no such plugin file: '" + p + "'");
      try {
        kernel_registry::global().load_plugin(p);
      } catch (const error& e) {
        pl.at(i).fail(e.what());
      }
    }
  }
  source_at(s, root.at("source"));
  flow in;
  in.types.types = s.layout.buffers;
  in.rank = s.layout_rank;
  builder b(s);
  built t = b.node_at(root.at("graph"), in);
  s.root = t.real;
  s.ref_root = t.ref;
  s.out_types = t.out.types;
  sink_at(s, root.at("sink"), t.out);
  try {  // the engine's own checks (nesting, ordered depth, ...)
    graph g(s.root);
  } catch (const graph_error& e) {
    root.at("graph").fail(e.what());
  }
}

}  // namespace detail

// ---------------------------------------------------------------------------
// graph_file
// ---------------------------------------------------------------------------

graph_file::graph_file(std::unique_ptr<detail::graph_file_state> s) : s_(std::move(s)) {}
graph_file::graph_file(graph_file&&) noexcept = default;
graph_file& graph_file::operator=(graph_file&&) noexcept = default;
graph_file::~graph_file() = default;

graph_file graph_file::load(const std::string& path, const std::vector<std::string>& overrides) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw json_error(path, "", "cannot open the file");
  std::stringstream ss;
  ss << in.rdbuf();
  std::string dir = ".";
  if (auto slash = path.rfind('/'); slash != std::string::npos) dir = slash == 0 ? "/" : path.substr(0, slash);
  return parse(ss.str(), path, overrides, dir);
}

graph_file graph_file::parse(std::string_view text, const std::string& origin, const std::vector<std::string>& overrides,
                             const std::string& base_dir) {
  auto s = std::make_unique<detail::graph_file_state>();
  s->origin = origin;
  s->base_dir = base_dir;
  try {
    s->doc = detail::json::parse(text.begin(), text.end());
  } catch (const detail::json::parse_error& e) {
    std::size_t line = 0, col = 0;
    detail::line_column(text, e.byte ? e.byte - 1 : 0, line, col);
    std::string msg = e.what();
    // nlohmann: "[json.exception.parse_error.101] parse error at line 3, column 5: syntax error ..."
    if (auto p = msg.find("syntax error"); p != std::string::npos) msg = msg.substr(p);
    throw json_error(origin, "", "invalid JSON: " + msg, line, col);
  } catch (const detail::json::exception& e) {
    // e.g. "number overflow parsing '1E99999'" (out_of_range): no position.
    std::string msg = e.what();
    if (auto p = msg.find("] "); p != std::string::npos) msg = msg.substr(p + 2);
    throw json_error(origin, "/", "invalid JSON: " + msg);
  }
  for (const auto& o : overrides) detail::apply_override(s->doc, o, origin);
  detail::load_document(*s);
  return graph_file(std::move(s));
}

const std::string& graph_file::name() const { return s_->name; }
const std::string& graph_file::description() const { return s_->description; }
const std::string& graph_file::origin() const { return s_->origin; }
std::string graph_file::document() const { return s_->doc.dump(2); }
const node& graph_file::root() const { return s_->root; }
const node& graph_file::reference_root() const { return s_->ref_root; }
const std::string& graph_file::scheduler_policy() const { return s_->policy; }
source_kind graph_file::source_type() const { return s_->skind; }
const io::record_layout& graph_file::source_layout() const { return s_->layout; }
const std::string& graph_file::sink_type() const { return s_->sink_type; }
double graph_file::tolerance() const { return s_->tolerance; }
std::size_t graph_file::memory_limit() const { return s_->memory_limit; }
const std::vector<std::pair<std::string, node>>& graph_file::device_maps() const { return s_->device_maps; }
std::optional<std::uint64_t> graph_file::unit_count() const { return s_->count; }

bool graph_file::replayable() const {
  switch (s_->skind) {
    case source_kind::generator:
    case source_kind::index:
    case source_kind::nbody:
    case source_kind::file:
    case source_kind::ppm_dir: return true;
    default: return false;
  }
}

std::unique_ptr<scheduler> graph_file::make_scheduler(unsigned threads) const {
  const auto& s = *s_;
  scheduler_options o{.threads = threads ? threads : s.threads, .pin = s.pin, .deal = s.deal};
  // A thread count given at run time overrides the file's topology.
  if (!s.topology_spec.empty() && !threads) o.topology = topology::parse(s.topology_spec);
  return sinew::make_scheduler(s.policy, o);
}

graph_options graph_file::options(scheduler* sched) const {
  graph_options o;
  o.scheduler = sched;
  o.capacity = s_->capacity;
  o.batch = s_->batch;
  o.placement = s_->placement;
  return o;
}

namespace detail {

source make_source(const graph_file_state& s, bool replay) {
  switch (s.skind) {
    case source_kind::generator: {
      io::generator_options g = s.gen;
      if (replay) g.rate = 0;
      return io::generator(g);
    }
    case source_kind::index: {
      shape sh = s.layout.shape;
      auto count = s.count;
      return generate([sh, count](unit_builder& u) {
        if ((count && u.seq() >= *count) || u.stop_requested()) return false;
        u.set_shape(sh);
        return true;
      });
    }
    case source_kind::nbody: {
      std::size_t n = s.bodies;
      std::uint64_t seed = s.gen.seed, count = s.count.value_or(1);
      return generate([n, seed, count](unit_builder& u) {
        if (u.seq() >= count || u.stop_requested()) return false;
        auto st = workloads::make_bodies(n, seed + u.seq());
        u.set_shape(shape::d1(n));
        auto p = u.add<workloads::body>();
        auto v = u.add<workloads::vel>();
        std::copy(st.positions.begin(), st.positions.end(), p.data());
        std::copy(st.velocities.begin(), st.velocities.end(), v.data());
        return true;
      });
    }
    case source_kind::file: return io::read_file(s.path, s.layout);
    case source_kind::stdin_binary: return io::read_stdin(s.layout);
    case source_kind::stdin_lines: return io::read_lines(0);
    case source_kind::ppm_dir: return io::read_ppm_dir(s.path);
    case source_kind::tcp:
      return s.listen ? io::tcp_listen(s.host, s.port, s.layout) : io::tcp_connect(s.host, s.port, s.layout);
  }
  throw error("unknown source kind");
}

const graph_file_state& state_of(const graph_file& f) { return *f.s_; }

}  // namespace detail

source graph_file::make_source() const { return detail::make_source(*s_, false); }

sink graph_file::make_sink(std::shared_ptr<io::checksum_result> checksum) const {
  const auto& s = *s_;
  const std::string& t = s.sink_type;
  if (t == "checksum") {
    if (!checksum) throw error(s.origin + ": the sink is a checksum; make_sink needs a checksum_result");
    return io::checksum(std::move(checksum));
  }
  if (t == "null") return discard();
  if (t == "file") return io::write_file(s.sink_path);
  if (t == "stdout") return s.sink_lines ? io::write_lines(1) : io::write_fd(1);
  if (t == "ppm_dir") return io::write_ppm_dir(s.sink_path, s.sink_prefix);
  return s.sink_listen ? io::tcp_listen_sink(s.sink_host, s.sink_port) : io::tcp_connect_sink(s.sink_host, s.sink_port);
}

}  // namespace sinew
