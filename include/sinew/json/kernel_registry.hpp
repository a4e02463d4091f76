#pragma once
/// \file kernel_registry.hpp
/// Named leaves for graphs defined in JSON. A kernel is a factory that builds
/// a leaf node from named, typed arguments (`{"kernel": "saxpy", "args":
/// {"a": 2}}`). The built-in workloads are registered on first use; a host
/// program registers its own functors with `add_map`, and a plugin shared
/// library named in a graph file registers kernels from its
/// `sinew_register_kernels` function.
///
/// \code
/// struct Scale { float k; void operator()(float x, float* y) const { *y = k * x; } };
/// sinew::kernel_registry::global().add_map<Scale>(
///     "scale", "y = k * x",
///     {sinew::kernel_param::real("k", "factor", 1.0)},
///     [](const sinew::kernel_args& a) { return Scale{a.get<float>("k")}; });
/// // A graph file can now say {"map": {"kernel": "scale", "args": {"k": 3}}}.
/// \endcode
///
/// A plugin (`g++ -shared -fPIC my_kernels.cpp -o libmy_kernels.so`):
/// \code
/// extern "C" void sinew_register_kernels(sinew::kernel_registry& r) {
///   r.add_map<Scale>("scale", "y = k * x", {...}, [](const sinew::kernel_args& a) { ... });
/// }
/// \endcode
#include <cstdint>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include <sinew/engine/error.hpp>
#include <sinew/opencl/host_executor.hpp>
#include <sinew/skeletons/map.hpp>
#include <sinew/skeletons/map_reduce.hpp>
#include <sinew/engine/node.hpp>
#include <sinew/engine/work_unit.hpp>

namespace sinew {

/// Value of one kernel argument, as written in the graph file.
using arg_value = std::variant<bool, std::int64_t, double, std::string>;

/// What a kernel parameter accepts.
enum class param_kind { real, integer, boolean, text };
const char* to_string(param_kind k) noexcept;

/// Declaration of one kernel parameter: its name, kind, range and default
/// (no default = required).
///
/// \code
/// auto p = sinew::kernel_param::integer("threshold", "channels >= t are inverted", 128, 0, 255);
/// \endcode
struct kernel_param {
  std::string name;
  param_kind kind = param_kind::real;
  std::string doc;
  std::optional<arg_value> default_value;
  double min = -std::numeric_limits<double>::infinity();
  double max = std::numeric_limits<double>::infinity();

  static kernel_param real(std::string name, std::string doc, std::optional<double> def,
                           double min = -std::numeric_limits<double>::infinity(),
                           double max = std::numeric_limits<double>::infinity());
  static kernel_param integer(std::string name, std::string doc, std::optional<std::int64_t> def,
                              double min = double(std::numeric_limits<std::int64_t>::min()),
                              double max = double(std::numeric_limits<std::int64_t>::max()));
  static kernel_param boolean(std::string name, std::string doc, std::optional<bool> def);
  static kernel_param text(std::string name, std::string doc, std::optional<std::string> def);
};

/// Arguments of one kernel instance, checked against its parameters (every
/// declared parameter is present: given or defaulted).
///
/// \code
/// float a = args.get<float>("a");
/// auto t = args.get<std::uint8_t>("threshold");
/// \endcode
class kernel_args {
 public:
  kernel_args() = default;
  explicit kernel_args(std::map<std::string, arg_value> v) : v_(std::move(v)) {}
  bool has(const std::string& name) const { return v_.count(name) != 0; }
  const arg_value& raw(const std::string& name) const;
  /// The argument converted to T (arithmetic types, bool or std::string).
  template <class T>
  T get(const std::string& name) const {
    const arg_value& v = raw(name);
    if constexpr (std::is_same_v<T, std::string>) {
      if (auto* s = std::get_if<std::string>(&v)) return *s;
      throw error("kernel argument '" + name + "' is not a string");
    } else if constexpr (std::is_same_v<T, bool>) {
      if (auto* b = std::get_if<bool>(&v)) return *b;
      throw error("kernel argument '" + name + "' is not a boolean");
    } else {
      if (auto* i = std::get_if<std::int64_t>(&v)) return T(*i);
      if (auto* d = std::get_if<double>(&v)) return T(*d);
      throw error("kernel argument '" + name + "' is not a number");
    }
  }
  const std::map<std::string, arg_value>& values() const noexcept { return v_; }
  void set(const std::string& name, arg_value v) { v_[name] = std::move(v); }

 private:
  std::map<std::string, arg_value> v_;
};

/// Sequential reference of a kernel: fills `out` (allocated with the kernel's
/// output types and shape; `out` is `in` itself for in-place kernels) from
/// `in`. Used by `sinew run --verify`; written independently of the leaf
/// where possible.
using reference_fn = std::function<void(const layer& in, layer& out, const kernel_args& args)>;

/// One registered kernel.
struct kernel_info {
  std::string name;
  std::string doc;
  std::string origin = "host";  ///< "builtin", "host" or "plugin:<path>"
  std::vector<kernel_param> params;
  /// Builds the leaf (a map over the functor).
  std::function<node(const kernel_args&)> make;
  /// The same functor as a device of a multi-device map (the host's share);
  /// empty if the kernel cannot run on part of a unit.
  std::function<std::shared_ptr<device_executor>(const kernel_args&)> make_host;
  /// Builds a map_reduce over the functor with a named combiner ("sum",
  /// "min", "max", "prod"); empty if the kernel cannot be reduced.
  std::function<node(const kernel_args&, const std::string& op)> make_reduce;
  std::vector<std::string> reduce_ops;
  /// Optional independent sequential reference (see reference_fn).
  reference_fn reference;
  /// Rank the unit must have (1, 2 or 3); 0 = any.
  unsigned rank = 0;
  /// Its leaf works per record (`sinew::record`): the reference then runs
  /// record by record on record batches.
  bool per_record = false;
  /// Filled by `kernel_registry::add` from a leaf built with the defaults.
  detail::type_list inputs, outputs;
  bool in_place = false;
};

/// Name -> kernel table. Thread-safe.
class kernel_registry {
 public:
  /// The process-wide registry; the built-in kernels are registered the first
  /// time it is used.
  static kernel_registry& global();

  /// Adds a kernel; throws `sinew::error` if the name is taken or a default
  /// does not fit its parameter. Fills `inputs`/`outputs`/`in_place`.
  void add(kernel_info k);

  /// Registers `map<F>` built by `make` (per-element or per-chunk functor).
  /// Per-element functors with one output and arithmetic results also get
  /// `map_reduce` with sum/min/max/prod.
  template <class F>
  void add_map(std::string name, std::string doc, std::vector<kernel_param> params,
               std::function<F(const kernel_args&)> make, map_options opt = {}, unsigned rank = 0,
               reference_fn reference = {});

  const kernel_info* find(std::string_view name) const;
  std::vector<std::string> names() const;
  /// The registered name nearest to `name` by edit distance, if it is a
  /// plausible typo (at most max(2, size/3) edits); "" otherwise.
  std::string closest(std::string_view name) const;
  /// Checks `given` against `k`'s parameters and fills in defaults. Throws
  /// `kernel_arg_error` naming the argument.
  kernel_args bind(const kernel_info& k, const std::map<std::string, arg_value>& given) const;

  /// Loads a plugin shared library and calls its `sinew_register_kernels`.
  /// Loading the same path twice is a no-op. Throws `sinew::error` naming the
  /// path (with dlerror's message) on failure.
  void load_plugin(const std::string& path);

 private:
  mutable std::mutex m_;
  std::map<std::string, std::shared_ptr<const kernel_info>, std::less<>> k_;
  std::vector<std::string> plugins_;
  std::string loading_origin_;
};

/// A bad argument: `arg()` is the argument's name ("" for the whole set).
class kernel_arg_error : public error {
 public:
  kernel_arg_error(std::string arg, const std::string& what) : error(what), arg_(std::move(arg)) {}
  const std::string& arg() const noexcept { return arg_; }

 private:
  std::string arg_;
};

/// Registers the built-in kernels (saxpy, series, segmentation, solarize,
/// gaussian_noise, mirror, nbody_step, ...) into `r`.
void register_builtin_kernels(kernel_registry& r);

namespace detail {

template <class T>
constexpr bool reducible_v = std::is_arithmetic_v<T> && !std::is_same_v<T, bool>;

template <class F, class R>
node make_reduce_node(const F& f, const std::string& op) {
  if (op == "sum") return map_reduce(f, [](R a, R b) { return R(a + b); });
  if (op == "prod") return map_reduce(f, [](R a, R b) { return R(a * b); });
  if (op == "min") return map_reduce(f, [](R a, R b) { return b < a ? b : a; });
  if (op == "max") return map_reduce(f, [](R a, R b) { return a < b ? b : a; });
  throw error("unknown reduce operation '" + op + "' (use sum, prod, min or max)");
}

template <class F>
struct single_output {
  using S = leaf_sig<F>;
  static constexpr bool ok = !S::chunked && S::n_out == 1 && !S::in_place;
  static constexpr std::size_t pos = [] {
    for (std::size_t i = 0; i < S::N; ++i)
      if (S::roles[i] == role::output) return i;
    return std::size_t(0);
  }();
};

}  // namespace detail

template <class F>
void kernel_registry::add_map(std::string name, std::string doc, std::vector<kernel_param> params,
                              std::function<F(const kernel_args&)> make, map_options opt, unsigned rank,
                              reference_fn reference) {
  kernel_info k;
  k.name = std::move(name);
  k.doc = std::move(doc);
  k.params = std::move(params);
  k.rank = rank;
  k.reference = std::move(reference);
  k.per_record = detail::leaf_sig<F>::per_record;
  k.make = [make, opt](const kernel_args& a) { return sinew::map<F>(make(a), opt); };
  if constexpr (!detail::leaf_sig<F>::per_record)
    k.make_host = [make, opt](const kernel_args& a) { return sinew::host<F>(make(a), opt); };
  if constexpr (detail::single_output<F>::ok) {
    using S = detail::leaf_sig<F>;
    using R = typename S::template tr<detail::single_output<F>::pos>::elem;
    if constexpr (detail::reducible_v<R>) {
      k.reduce_ops = {"sum", "prod", "min", "max"};
      k.make_reduce = [make](const kernel_args& a, const std::string& op) {
        return detail::make_reduce_node<F, R>(make(a), op);
      };
    }
  }
  add(std::move(k));
}

}  // namespace sinew
