#pragma once
/// \file node.hpp
/// `sinew::node`: a handle to one node of a skeleton tree (a skeleton or a
/// leaf). Nodes are built by `map`, `pipeline`, `farm`, `map_reduce`,
/// `loop`, `for_loop` and nest freely; `graph` compiles a tree into stages
/// joined by bounded queues.
///
/// \code
/// sinew::node t = sinew::pipeline(sinew::map<Scale>(), sinew::farm(sinew::map<Heavy>(), 4));
/// t.named("preprocess");          // used in error paths instead of "pipeline"
/// \endcode
#include <cstddef>
#include <cstdint>
#include <exception>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <sinew/engine/elem_type.hpp>
#include <sinew/engine/error.hpp>
#include <sinew/engine/layer_plan.hpp>
#include <sinew/engine/shape.hpp>
#include <sinew/engine/type_list.hpp>
#include <sinew/engine/work_unit.hpp>
#include <sinew/schedulers/placement.hpp>

namespace sinew {

class scheduler;

namespace detail {

/// Arguments of one synchronous execution of a compiled subtree on a unit:
/// read `*in`, write `*out` (the same layer for in-place execution).
struct exec_args {
  layer* in;
  layer* out;
  std::size_t grain;
  std::uint64_t seq;
  scheduler* sched;
  /// The unit's records when it is a batch (null: one record); applies to
  /// `*in` only while `records->fits(in->count())`.
  const record_index* records = nullptr;
};

/// A subtree compiled to run synchronously on one unit (maps still split the
/// unit over the scheduler's workers).
class executable {
 public:
  virtual ~executable() = default;
  virtual void execute(exec_args& a) = 0;
  /// Asynchronous execution (stages whose `stage_spec::async` is set): either
  /// takes the unit and returns true, then calls `done` exactly once, from
  /// any thread, when `*a.out` is written (with the exception, or null); or
  /// returns false and the caller runs `execute` itself. Used by distributed
  /// farms, whose units wait for another process without holding a worker.
  virtual bool start(exec_args& a, std::function<void(std::exception_ptr)> done) {
    (void)a;
    (void)done;
    return false;
  }
};

/// An executable that can run part of a unit: outermost indices [rb, re)
/// (rows in 2-D, planes in 3-D, elements in 1-D). Maps are; a distributed
/// map splits units over processes with it.
class row_executable : public executable {
 public:
  virtual void execute_rows(exec_args& a, std::size_t rb, std::size_t re) = 0;
};

class node_impl;
using node_ptr = std::shared_ptr<const node_impl>;

/// One streaming stage produced by compiling a subtree.
struct stage_spec {
  std::string path;
  std::shared_ptr<executable> exec;
  bool in_place = false;    ///< layer 0 is kept (no pop after the stage)
  unsigned concurrency = 1; ///< activations at once (farms multiply it)
  /// Layers of the pipelines entered here, outermost first: each one's
  /// intermediate layers go below layer 0 of every unit the stage takes.
  std::vector<layer_plan> entry_layers;
  std::vector<unsigned> enter_regions;    ///< ordered farms entered here (depths)
  int exit_region = -1;                   ///< outermost ordered farm left here
  std::size_t capacity = 0;               ///< input queue capacity, 0 = default
  bool async = false;                     ///< exec->start() may finish units later (needs concurrency > 1)
  /// Placement of the buffers this stage writes, from its node or the
  /// nearest enclosing node that has one (unset: graph_options::placement).
  std::optional<sinew::placement> placement{};
};

struct stream_compiler {
  std::vector<stage_spec> stages;
  unsigned ordered_depth = 0;
};

class node_impl {
 public:
  virtual ~node_impl() = default;
  /// Kind and leaf type, e.g. "map<Solarize>", "pipeline", "farm".
  virtual std::string label() const = 0;
  virtual type_list input_types() const = 0;
  virtual type_list output_types() const = 0;
  /// In-place nodes update layer 0 and leave the stack as it was.
  virtual bool in_place() const { return false; }
  virtual shape output_shape(const shape& in) const { return in; }
  /// Where this subtree treats a unit as a whole, so that a record batch
  /// would change its result: the path of the first such leaf, or empty
  /// when every leaf works per element or per record (records.hpp). Sources
  /// batch records by default only for trees that return empty.
  virtual std::string whole_unit_leaf(const std::string& path) const { return path; }
  /// Checks the subtree; throws graph_error naming the path.
  virtual void check(const std::string& path) const { (void)path; }
  virtual std::shared_ptr<executable> compile_inline(const std::string& path) const = 0;
  /// Appends this subtree's stages. Default: one serial stage.
  virtual void compile_stream(stream_compiler& c, const std::string& path) const;

  std::string segment() const { return name.empty() ? label() : name; }
  /// Gives this node's placement to the stages [first, end) its subtree
  /// compiled into that have none of their own (pipelines and farms).
  void inherit_placement(stream_compiler& c, std::size_t first) const {
    if (!placement_policy) return;
    for (std::size_t i = first; i < c.stages.size(); ++i)
      if (!c.stages[i].placement) c.stages[i].placement = placement_policy;
  }
  std::string name;
  std::size_t capacity = 0;
  std::optional<sinew::placement> placement_policy;  ///< node::placement
};

std::string demangle(const char* mangled);
/// Unqualified type name of T ("Solarize" for "app::filters::Solarize").
template <class T>
std::string short_type_name() {
  std::string s = demangle(typeid(T).name());
  int depth = 0;
  std::size_t cut = 0;
  for (std::size_t i = 0; i < s.size(); ++i) {
    char ch = s[i];
    if (ch == '<' || ch == '(') ++depth;
    else if (ch == '>' || ch == ')') --depth;
    else if (depth == 0 && ch == ':' && i + 1 < s.size() && s[i + 1] == ':') cut = i + 2;
  }
  return s.substr(cut);
}

}  // namespace detail

class node {
 public:
  node() = default;
  explicit node(std::shared_ptr<detail::node_impl> p) : p_(std::move(p)) {}

  /// Name used for this node in error paths and statistics.
  node& named(std::string n) { p_->name = std::move(n); return *this; }
  /// Capacity (in units) of the queue in front of this node's first stage.
  node& capacity(std::size_t c) { p_->capacity = c; return *this; }
  /// NUMA placement of the buffers the stages of this node write (their
  /// output layers), overriding `graph_options::placement`; set on a
  /// pipeline or farm it applies to every stage inside without its own.
  ///
  /// \code
  /// auto p = sinew::pipeline(sinew::map<A>().placement(sinew::placement::fine),
  ///                          sinew::map<B>());   // B: the graph's default
  /// \endcode
  node& placement(sinew::placement p) { p_->placement_policy = p; return *this; }
  std::string label() const { return p_ ? p_->segment() : std::string("(empty)"); }
  const std::shared_ptr<detail::node_impl>& impl() const noexcept { return p_; }
  explicit operator bool() const noexcept { return p_ != nullptr; }

 private:
  std::shared_ptr<detail::node_impl> p_;
};

}  // namespace sinew
