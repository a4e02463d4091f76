// OpenCL maps in graph files: {"map": {"file": ..., "kernel": ..., "args": [...]},
// "devices": ..., "balance": ..., "reference": {...}}. One selected device
// gives a kernel leaf; several (or "host" among them) give a multi-device map
// whose units are split by a balancer (docs/json.md, docs/balancing.md).
#include <cstdio>

#include <sinew/opencl/balancer.hpp>
#include <sinew/opencl/kernel.hpp>
#include <sinew/opencl/multi_device_map.hpp>
#include <sinew/opencl/platform.hpp>

#include "element_types.hpp"
#include "graph_file_state.hpp"
#include "json_cursor.hpp"
#include "kernel_nodes.hpp"
#include "tree_builder.hpp"

namespace sinew::detail {
namespace {

/// Bytes of scalar `v` as the OpenCL type named `type`.
opencl::arg::spec scalar_at(const json_cursor& c) {
  c.expect_object({"scalar", "value"}, {"scalar", "value"});
  std::string t = c.at("scalar").as_choice({"f32", "f64", "i32", "u32", "i64", "u64"});
  json_cursor v = c.at("value");
  if (t == "f32") return opencl::arg::scalar(float(v.as_number()));
  if (t == "f64") return opencl::arg::scalar(v.as_number());
  if (t == "i32") return opencl::arg::scalar(std::int32_t(v.as_number(-2147483648.0, 2147483647.0)));
  if (t == "u32") return opencl::arg::scalar(std::uint32_t(v.as_uint(0, 0xffffffffu)));
  if (t == "i64") return opencl::arg::scalar(std::int64_t(v.as_number(-9.2e18, 9.2e18)));
  return opencl::arg::scalar(std::uint64_t(v.as_uint()));
}

opencl::arg::spec arg_at(const json_cursor& c) {
  namespace A = opencl::arg;
  if (c.value().is_string()) {
    std::string s = c.as_string();
    if (s == "count") return A::count();
    if (s == "rows") return A::rows();
    if (s == "cols") return A::cols();
    if (s == "planes") return A::planes();
    if (s == "seq") return A::seq();
    c.fail("expected a kernel argument: \"count\", \"rows\", \"cols\", \"planes\", \"seq\", or an object "
           "{\"in\"|\"out\"|\"inout\": type}, {\"scalar\": type, \"value\": v}, {\"local\": bytes}, "
           "{\"local_per_item\": bytes}; got \"" + s + "\"");
  }
  if (!c.value().is_object()) c.fail("expected a kernel argument (a string or an object), got " + json_kind(c.value()));
  if (c.has("scalar")) return scalar_at(c);
  if (c.has("local")) {
    c.expect_object({"local"});
    return A::local(std::size_t(c.at("local").as_uint(1, 1u << 30)));
  }
  if (c.has("local_per_item")) {
    c.expect_object({"local_per_item"});
    return A::local_per_item(std::size_t(c.at("local_per_item").as_uint(1, 1u << 20)));
  }
  for (const char* k : {"in", "out", "inout"}) {
    if (!c.has(k)) continue;
    c.expect_object({"in", "out", "inout", "halo", "whole"}, {k});
    const elem_type& t = elem_type_at(c.at(k));
    A::spec s = std::string(k) == "in" ? A::input(t) : std::string(k) == "out" ? A::output(t) : A::inout(t);
    if (c.has("halo")) s.with_halo(std::size_t(c.at("halo").as_uint(0, 1u << 20)));
    if (c.get_bool("whole", false)) s.read_whole();
    return s;
  }
  c.fail("expected one of the fields in, out, inout, scalar, local, local_per_item");
}

opencl::kernel_spec spec_at(const json_cursor& m, const graph_file_state& s) {
  m.expect_object({"file", "source", "kernel", "args", "defines", "build_options", "work_group", "memory"},
                  {"kernel", "args"});
  opencl::kernel_spec k;
  if (m.has("file") == m.has("source")) m.fail("give the kernel's \"file\" or its \"source\" text (one of them)");
  if (m.has("file")) {
    k.file = m.at("file").as_string();
    if (!k.file.empty() && k.file[0] != '/') k.file = s.base_dir + "/" + k.file;
    if (FILE* f = std::fopen(k.file.c_str(), "r")) std::fclose(f);
    else m.at("file").fail("no such kernel file: '" + k.file + "'");
  } else {
    k.source = m.at("source").as_string();
    k.file = s.origin + m.pointer() + "/source";
  }
  k.kernel = m.at("kernel").as_string();
  json_cursor args = m.at("args");
  args.expect_array();
  for (std::size_t i = 0; i < args.value().size(); ++i) k.args.push_back(arg_at(args.at(i)));
  if (m.has("defines")) {
    json_cursor d = m.at("defines");
    if (!d.value().is_object()) d.fail("expected an object of NAME: value, got " + json_kind(d.value()));
    for (auto& [name, v] : d.value().items()) {
      if (!(v.is_number() || v.is_string() || v.is_boolean()))
        d.at(name).fail("a define is a number, a string or a boolean, got " + json_kind(v));
      k.defines.emplace_back(name, v.is_string() ? v.get<std::string>() : v.dump());
    }
  }
  k.options = m.get_string("build_options", "");
  if (m.has("work_group")) {
    json_cursor w = m.at("work_group");
    w.expect_array();
    if (w.value().empty() || w.value().size() > 3) w.fail("a work-group size has 1, 2 or 3 extents");
    for (std::size_t i = 0; i < w.value().size(); ++i) k.local[i] = std::size_t(w.at(i).as_uint(1, 4096));
  }
  if (m.has("memory"))
    k.memory = m.at("memory").as_choice({"auto", "copy"}) == "copy" ? opencl::memory_mode::copy : opencl::memory_mode::automatic;
  return k;
}

balance_policy balance_at(const json_cursor& c) {
  if (c.value().is_string()) {
    std::string p = c.as_choice({"static", "single-step", "iterative", "exhaustive"});
    if (p == "static") c.fail("the static balancer needs weights: {\"policy\": \"static\", \"weights\": [...]}");
    if (p == "single-step") return balance::single_step();
    if (p == "exhaustive") return balance::exhaustive();
    return balance::iterative();
  }
  c.expect_object({"policy", "weights", "delta", "threshold", "step", "with_transfers", "repeats", "max_iterations"},
                  {"policy"});
  std::string p = c.at("policy").as_choice({"static", "single-step", "iterative", "exhaustive"});
  balance_policy b;
  if (p == "static") {
    json_cursor w = c.required("weights");
    w.expect_array();
    std::vector<double> ws;
    for (std::size_t i = 0; i < w.value().size(); ++i) ws.push_back(w.at(i).as_number(0, 1e9));
    b = balance::static_weights(ws);
  } else if (p == "single-step") {
    b = balance::single_step(c.get_number("threshold", 0, 0, 1e6));
  } else if (p == "exhaustive") {
    b = balance::exhaustive(c.get_number("step", 0.05, 0.001, 0.5));
  } else {
    b = balance::iterative(c.get_number("delta", 0.05, 0.001, 1), c.get_number("threshold", 0, 0, 1e6));
    b.max_iterations = unsigned(c.get_uint("max_iterations", b.max_iterations, 1, 1000));
  }
  b.with_transfers = c.get_bool("with_transfers", b.with_transfers);
  b.repeats = unsigned(c.get_uint("repeats", b.repeats, 1, 100));
  return b;
}

}  // namespace

built opencl_map_at(const json_cursor& c, const flow& in, graph_file_state& s) {
  c.expect_object({"map", "devices", "balance", "reference", "name", "capacity", "placement"});
  opencl::kernel_spec k = spec_at(c.at("map"), s);

  // "devices": a selection string, or a list of them where "host" is the
  // reference kernel run on the scheduler's workers.
  std::vector<std::string> sel;
  bool host = false;
  json_cursor dc = c.has("devices") ? c.at("devices") : c;
  if (!c.has("devices")) sel.push_back(s.devices);
  else if (dc.value().is_string()) sel.push_back(dc.as_string());
  else {
    dc.expect_array();
    if (dc.value().empty()) dc.fail("at least one device");
    for (std::size_t i = 0; i < dc.value().size(); ++i) {
      std::string d = dc.at(i).as_string();
      if (d == "host") host = true;
      else sel.push_back(d);
    }
  }

  // The C++ kernel computing the same thing: --verify's reference and the
  // host's device.
  const kernel_info* ref = nullptr;
  kernel_args ref_args;
  if (c.has("reference")) {
    json_cursor r = c.at("reference");
    r.expect_object({"kernel", "args"}, {"kernel"});
    ref = &kernel_at(r.at("kernel"));
    ref_args = args_at(r, *ref);
  } else if (host) {
    c.fail("\"host\" among the devices needs a \"reference\" C++ kernel to run there");
  }

  // "gpu?": that device if this machine has one.
  bool dropped = false;
  for (std::size_t i = 0; i < sel.size();) {
    if (!sel[i].empty() && sel[i].back() == '?') {
      sel[i].pop_back();
      bool found = false;
      try {
        found = !opencl::select_devices(sel[i]).empty();
      } catch (const error&) {
      }
      if (!found) {
        dropped = true;
        sel.erase(sel.begin() + std::ptrdiff_t(i));
        continue;
      }
    }
    ++i;
  }
  if (sel.empty() && !host) (c.has("devices") ? dc : c).fail("none of the optional devices is present");

  std::vector<std::shared_ptr<device_executor>> execs;
  node one;
  for (const auto& d : sel) {
    k.devices = d;
    try {
      if (sel.size() == 1 && !host) {
        one = opencl::kernel_leaf(k);  // builds the program now: errors carry the build log
      } else {
        for (auto& e : opencl::kernel_executors(k)) execs.push_back(e);
      }
    } catch (const error& e) {
      (c.has("devices") ? dc : c.at("map")).fail(e.what());
    }
  }
  if (host) execs.insert(execs.begin(), ref->make_host(ref_args));

  built b;
  if (one) {
    b.real = one;
  } else if (execs.size() == 1) {
    b.real = ref->make(ref_args);  // only the host is left: the C++ map itself
    one = b.real;
  } else {
    balance_policy p = c.has("balance") ? balance_at(c.at("balance")) : balance::iterative();
    try {
      b.real = multi_device_map(execs, p);
      s.device_maps.emplace_back(c.pointer(), b.real);
    } catch (const error& e) {
      c.fail(e.what());
    }
  }
  if (c.has("balance") && one && !dropped) c.at("balance").fail("a balancer needs more than one device; this map runs on one");

  const type_list ins = b.real.impl()->input_types(), outs = b.real.impl()->output_types();
  if (!same_types(ins, in.types))
    c.at("map").fail("kernel '" + k.kernel + "' reads " + types_text(ins) + " but its input is " + types_text(in.types));
  if (ref) {
    if (!same_types(ref->inputs, ins) || !same_types(ref->outputs, outs) || ref->in_place != b.real.impl()->in_place())
      c.at("reference").fail("the reference kernel '" + ref->name + "' reads " + types_text(ref->inputs) +
                             " and writes " + types_text(ref->outputs) + "; the OpenCL kernel reads " + types_text(ins) +
                             " and writes " + types_text(outs));
    b.ref = reference_node(*ref, ref_args);
  } else {
    b.ref = b.real;  // no C++ counterpart: the kernel itself, one unit at a time
  }
  b.out.types = outs;
  b.out.rank = in.rank;
  return b;
}

}  // namespace sinew::detail
