#include <sinew/json/kernel_registry.hpp>

#include <dlfcn.h>

#include <algorithm>
#include <cmath>
#include <sstream>

namespace sinew {

const char* to_string(param_kind k) noexcept {
  switch (k) {
    case param_kind::real: return "number";
    case param_kind::integer: return "integer";
    case param_kind::boolean: return "boolean";
    case param_kind::text: return "string";
  }
  return "?";
}

kernel_param kernel_param::real(std::string name, std::string doc, std::optional<double> def, double min,
                                double max) {
  kernel_param p{std::move(name), param_kind::real, std::move(doc), std::nullopt, min, max};
  if (def) p.default_value = *def;
  return p;
}

kernel_param kernel_param::integer(std::string name, std::string doc, std::optional<std::int64_t> def,
                                   double min, double max) {
  kernel_param p{std::move(name), param_kind::integer, std::move(doc), std::nullopt, min, max};
  if (def) p.default_value = *def;
  return p;
}

kernel_param kernel_param::boolean(std::string name, std::string doc, std::optional<bool> def) {
  kernel_param p{std::move(name), param_kind::boolean, std::move(doc), std::nullopt, 0, 1};
  if (def) p.default_value = *def;
  return p;
}

kernel_param kernel_param::text(std::string name, std::string doc, std::optional<std::string> def) {
  kernel_param p{std::move(name), param_kind::text, std::move(doc), std::nullopt, 0, 0};
  if (def) p.default_value = *def;
  return p;
}

const arg_value& kernel_args::raw(const std::string& name) const {
  auto it = v_.find(name);
  if (it == v_.end()) throw error("kernel argument '" + name + "' is not set");
  return it->second;
}

namespace {

std::string show(const arg_value& v) {
  if (auto* b = std::get_if<bool>(&v)) return *b ? "true" : "false";
  if (auto* i = std::get_if<std::int64_t>(&v)) return std::to_string(*i);
  if (auto* d = std::get_if<double>(&v)) {
    std::ostringstream os;
    os << *d;
    return os.str();
  }
  return "\"" + std::get<std::string>(v) + "\"";
}

std::string range_text(const kernel_param& p) {
  std::ostringstream os;
  os << p.min << " .. " << p.max;
  return os.str();
}

/// `v` converted to what `p` accepts, or an explanation why not.
arg_value convert(const kernel_param& p, const arg_value& v) {
  auto bad = [&](const std::string& why) -> kernel_arg_error {
    return kernel_arg_error(p.name, "argument '" + p.name + "' " + why);
  };
  switch (p.kind) {
    case param_kind::boolean:
      if (std::holds_alternative<bool>(v)) return v;
      throw bad("must be a boolean, got " + show(v));
    case param_kind::text:
      if (std::holds_alternative<std::string>(v)) return v;
      throw bad("must be a string, got " + show(v));
    case param_kind::integer: {
      double d;
      if (auto* i = std::get_if<std::int64_t>(&v)) d = double(*i);
      else if (auto* f = std::get_if<double>(&v); f && std::floor(*f) == *f && std::isfinite(*f)) d = *f;
      else throw bad("must be an integer, got " + show(v));
      if (d < p.min || d > p.max) throw bad("must be in " + range_text(p) + ", got " + show(v));
      return std::int64_t(d);
    }
    case param_kind::real: {
      double d;
      if (auto* i = std::get_if<std::int64_t>(&v)) d = double(*i);
      else if (auto* f = std::get_if<double>(&v)) d = *f;
      else throw bad("must be a number, got " + show(v));
      if (!std::isfinite(d)) throw bad("must be finite");
      if (d < p.min || d > p.max) throw bad("must be in " + range_text(p) + ", got " + show(v));
      return d;
    }
  }
  throw bad("has an unknown kind");
}

std::size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<std::size_t> row(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diag = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      std::size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diag + (a[i - 1] == b[j - 1] ? 0u : 1u)});
      diag = up;
    }
  }
  return row[b.size()];
}

/// A stand-in value for a required parameter, used once to learn the leaf's
/// buffer types at registration.
arg_value sample_value(const kernel_param& p) {
  switch (p.kind) {
    case param_kind::boolean: return false;
    case param_kind::text: return std::string();
    case param_kind::integer: return std::int64_t(std::max(p.min, std::min(p.max, 1.0)));
    case param_kind::real: return std::max(p.min, std::min(p.max, 1.0));
  }
  return false;
}

}  // namespace

kernel_registry& kernel_registry::global() {
  static kernel_registry* r = [] {
    auto* reg = new kernel_registry;  // never destroyed: plugins may hold kernels
    reg->loading_origin_ = "builtin";
    register_builtin_kernels(*reg);
    reg->loading_origin_.clear();
    return reg;
  }();
  return *r;
}

kernel_args kernel_registry::bind(const kernel_info& k, const std::map<std::string, arg_value>& given) const {
  std::map<std::string, arg_value> out;
  for (const auto& entry : given) {
    const std::string& name = entry.first;
    const arg_value& v = entry.second;
    auto p = std::find_if(k.params.begin(), k.params.end(), [&](const kernel_param& q) { return q.name == name; });
    if (p == k.params.end()) {
      std::string known;
      for (auto& q : k.params) known += (known.empty() ? "" : ", ") + q.name;
      throw kernel_arg_error(name, "kernel '" + k.name + "' has no argument '" + name + "' (arguments: " +
                                       (known.empty() ? "none" : known) + ")");
    }
    out[name] = convert(*p, v);
  }
  for (auto& p : k.params) {
    if (out.count(p.name)) continue;
    if (!p.default_value)
      throw kernel_arg_error(p.name, "kernel '" + k.name + "' needs argument '" + p.name + "' (" +
                                         to_string(p.kind) + ": " + p.doc + ")");
    out[p.name] = *p.default_value;
  }
  return kernel_args(std::move(out));
}

void kernel_registry::add(kernel_info k) {
  if (k.name.empty()) throw error("kernel_registry: a kernel needs a name");
  if (!k.make) throw error("kernel_registry: kernel '" + k.name + "' has no factory");
  for (auto& p : k.params)
    if (p.default_value) convert(p, *p.default_value);  // a bad default is the registrant's bug
  std::map<std::string, arg_value> sample;
  for (auto& p : k.params) sample[p.name] = p.default_value ? *p.default_value : sample_value(p);
  node n = k.make(kernel_args(sample));
  if (!n) throw error("kernel_registry: kernel '" + k.name + "' built an empty node");
  k.inputs = n.impl()->input_types();
  k.outputs = n.impl()->output_types();
  k.in_place = n.impl()->in_place();
  std::lock_guard lk(m_);
  if (!loading_origin_.empty()) k.origin = loading_origin_;
  if (k_.count(k.name)) throw error("kernel_registry: a kernel named '" + k.name + "' is already registered");
  std::string name = k.name;
  k_.emplace(std::move(name), std::make_shared<const kernel_info>(std::move(k)));
}

const kernel_info* kernel_registry::find(std::string_view name) const {
  std::lock_guard lk(m_);
  auto it = k_.find(name);
  return it == k_.end() ? nullptr : it->second.get();
}

std::vector<std::string> kernel_registry::names() const {
  std::lock_guard lk(m_);
  std::vector<std::string> v;
  for (auto& [n, k] : k_) v.push_back(n);
  return v;
}

std::string kernel_registry::closest(std::string_view name) const {
  std::lock_guard lk(m_);
  std::string best;
  std::size_t bd = SIZE_MAX;
  for (auto& [n, k] : k_) {
    std::size_t d = edit_distance(name, n);
    if (d < bd) bd = d, best = n;
  }
  // Only a plausible typo is worth suggesting.
  return bd <= std::max<std::size_t>(2, name.size() / 3) ? best : std::string();
}

void kernel_registry::load_plugin(const std::string& path) {
  {
    std::lock_guard lk(m_);
    if (std::find(plugins_.begin(), plugins_.end(), path) != plugins_.end()) return;
  }
  // RTLD_NODELETE: kernels registered by the plugin hold code from it.
  void* h = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
  if (!h) {
    const char* e = ::dlerror();
    throw error("plugin '" + path + "': cannot load: " + (e ? e : "unknown error"));
  }
  using reg_fn = void (*)(kernel_registry&);
  auto fn = reinterpret_cast<reg_fn>(::dlsym(h, "sinew_register_kernels"));
  if (!fn) {
    ::dlclose(h);
    throw error("plugin '" + path + "': no function 'extern \"C\" void sinew_register_kernels(sinew::kernel_registry&)'");
  }
  {
    std::lock_guard lk(m_);
    loading_origin_ = "plugin:" + path;
  }
  try {
    fn(*this);
  } catch (const std::exception& e) {
    std::lock_guard lk(m_);
    loading_origin_.clear();
    throw error("plugin '" + path + "': sinew_register_kernels failed: " + e.what());
  }
  std::lock_guard lk(m_);
  loading_origin_.clear();
  plugins_.push_back(path);
}

}  // namespace sinew
