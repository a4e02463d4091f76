// Kernels named in graph files (kernel_nodes.hpp).
#include "kernel_nodes.hpp"

#include <cstdint>
#include <map>

#include "json_cursor.hpp"

namespace sinew::detail {
namespace {

/// A leaf replaced by its kernel's sequential reference (see reference_fn);
/// types and shapes are the real leaf's.
class reference_leaf final : public node_impl {
 public:
  reference_leaf(const kernel_info& k, kernel_args a, node real) : k_(k), a_(std::move(a)), real_(std::move(real)) {}
  std::string label() const override { return "reference<" + k_.name + ">"; }
  type_list input_types() const override { return real_.impl()->input_types(); }
  type_list output_types() const override { return real_.impl()->output_types(); }
  bool in_place() const override { return real_.impl()->in_place(); }
  shape output_shape(const shape& in) const override { return real_.impl()->output_shape(in); }
  std::string whole_unit_leaf(const std::string& path) const override { return real_.impl()->whole_unit_leaf(path); }
  std::shared_ptr<executable> compile_inline(const std::string&) const override {
    struct exec final : executable {
      reference_fn fn;
      kernel_args args;
      bool per_record = false;
      void execute(exec_args& a) override {
        if (!per_record || !a.records || !a.records->fits(a.in->count())) return fn(*a.in, *a.out, args);
        // A per-record kernel's reference sees one record at a time: layers
        // over each record's part of the buffers.
        const record_index& r = *a.records;
        for (std::size_t i = 0; i < r.size(); ++i) {
          layer in = slice(*a.in, r, i), out = a.out == a.in ? layer() : slice(*a.out, r, i);
          fn(in, a.out == a.in ? in : out, args);
        }
      }
      static layer slice(const layer& l, const record_index& r, std::size_t i) {
        layer s(r.shape_of(i, l.shape()));
        for (unsigned b = 0; b < l.size(); ++b)
          s.add(buffer_ref::wrap_bytes(static_cast<char*>(l[b]->data()) + r.begin(i) * l[b]->type().size,
                                       r.end(i) - r.begin(i), l[b]->type()));
        return s;
      }
    };
    auto e = std::make_shared<exec>();
    e->fn = k_.reference;
    e->args = a_;
    e->per_record = k_.per_record;
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
           "; known kernels: " + comma_list(names));
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

}  // namespace sinew::detail
