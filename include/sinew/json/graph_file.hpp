#pragma once
/// \file graph_file.hpp
/// Graphs defined in JSON (format documented in docs/json.md, schema in
/// graphs/schema.json). `graph_file::load` parses and validates the whole file
/// before anything runs: every error names the file and the JSON pointer of the
/// offending field (or the line and column of a syntax error) and says what was
/// expected. A loaded file makes the pieces of a run: the skeleton tree, a
/// scheduler, a source, a sink, and a sequential reference for `--verify`.
///
/// \code
/// auto f = sinew::graph_file::load("graphs/saxpy.json", {"/source/count=4"});
/// auto sched = f.make_scheduler();
/// sinew::graph g(f.root(), f.options(sched.get()));
/// auto sum = std::make_shared<sinew::io::checksum_result>();
/// g.run(f.make_source(), f.make_sink(sum)).get();
/// std::printf("%016llx\n", (unsigned long long)sum->value);
/// \endcode
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <sinew/engine/error.hpp>
#include <sinew/engine/graph.hpp>
#include <sinew/io/checksum.hpp>
#include <sinew/io/record_layout.hpp>
#include <sinew/engine/node.hpp>
#include <sinew/schedulers/scheduler.hpp>
#include <sinew/engine/sink.hpp>
#include <sinew/engine/source.hpp>

namespace sinew {

/// An invalid graph file. `what()` is "<file>:<line>:<column>: <message>" for
/// syntax errors and "<file>: <pointer>: <message>" otherwise.
///
/// \code
/// try { sinew::graph_file::load("bad.json"); }
/// catch (const sinew::json_error& e) { std::cerr << e.pointer() << ": " << e.message() << "\n"; }
/// \endcode
class json_error : public error {
 public:
  json_error(std::string file, std::string pointer, std::string message, std::size_t line = 0,
             std::size_t column = 0);
  const std::string& file() const noexcept { return file_; }
  /// JSON pointer of the offending value ("" = the whole document).
  const std::string& pointer() const noexcept { return pointer_; }
  const std::string& message() const noexcept { return message_; }
  /// 1-based line and column of a syntax error; 0 otherwise.
  std::size_t line() const noexcept { return line_; }
  std::size_t column() const noexcept { return column_; }

 private:
  std::string file_, pointer_, message_;
  std::size_t line_, column_;
};

class graph_file;
namespace detail {
struct graph_file_state;
const graph_file_state& state_of(const graph_file& f);
}  // namespace detail

/// A validated graph file.
class graph_file {
 public:
  /// The JSON format version this build reads (the file's "sinew" field).
  static constexpr int format_version = 1;

  /// Reads and validates `path`. `overrides` are "pointer=value" strings
  /// (`--set`): the pointer is a JSON pointer ("/source/count") or a dotted
  /// path ("source.count", "graph.pipeline.1.workers"); the value is JSON if
  /// it parses as JSON, else a string. Throws `json_error`.
  static graph_file load(const std::string& path, const std::vector<std::string>& overrides = {});
  /// As `load`, from text; relative paths in it resolve against `base_dir`.
  static graph_file parse(std::string_view text, const std::string& origin,
                          const std::vector<std::string>& overrides = {}, const std::string& base_dir = ".");

  graph_file(graph_file&&) noexcept;
  graph_file& operator=(graph_file&&) noexcept;
  ~graph_file();

  const std::string& name() const;
  const std::string& description() const;
  /// The file (or origin) it was read from.
  const std::string& origin() const;
  /// The document after overrides, pretty-printed.
  std::string document() const;

  /// True for the dag form ("sources", "nodes", "sinks"; docs/json.md,
  /// "Dags"); false for a tree ("source", "graph", "sink").
  bool is_dag() const;
  /// The graph the file describes, its tree or its dag, compiled with `o`.
  ///
  /// \code
  /// auto f = sinew::graph_file::load("graphs/image_features.json");
  /// auto sched = f.make_scheduler();
  /// sinew::graph g = f.make_graph(f.options(sched.get()));
  /// std::vector<std::pair<std::string, std::shared_ptr<sinew::io::checksum_result>>> sums;
  /// g.run(f.make_sources(), f.make_sinks(sums)).get();   // sums: one per checksum sink
  /// \endcode
  graph make_graph(const graph_options& o) const;
  /// Every source and sink, by name (a tree's are "source" and "sink"); the
  /// result of each checksum sink is appended to `sums` under its name.
  /// `stdout_discards`: sinks writing to standard output drop their units
  /// instead (the caller prints something else there).
  graph::named_sources make_sources() const;
  graph::named_sinks make_sinks(std::vector<std::pair<std::string, std::shared_ptr<io::checksum_result>>>& sums,
                                bool stdout_discards = false) const;
  /// The names of the sources and sinks (a dag's in name order).
  std::vector<std::string> source_names() const;
  std::vector<std::string> sink_names() const;

  /// The skeleton tree (empty in the dag form).
  const node& root() const;
  /// The same tree with every leaf replaced by its sequential reference (or
  /// the leaf itself where it has none), for `compile_inline` execution.
  const node& reference_root() const;

  /// A new scheduler as the file asks ("scheduler" field); `threads` > 0
  /// overrides the file's thread count.
  std::unique_ptr<sinew::scheduler> make_scheduler(unsigned threads = 0) const;
  const std::string& scheduler_policy() const;
  /// Graph options (queue capacity, batch) on `sched`.
  graph_options options(sinew::scheduler* sched) const;

  /// A new source (each call starts the stream from the beginning where the
  /// type allows: see `replayable`).
  sinew::source make_source() const;
  /// The source's "type" ("generator", "file", "stdin", ...).
  const std::string& source_type() const;
  /// True if two sources made by `make_source` produce the same units (in
  /// the dag form: every source).
  bool replayable() const;
  /// The source types that are replayable ("generator", "nbody", ...), in
  /// the order docs/json.md lists them.
  static std::vector<std::string> replayable_source_types();
  /// Records the source will produce (units, unless it makes record
  /// batches), when known (in the dag form: all sources together, when every
  /// count is known).
  std::optional<std::uint64_t> unit_count() const;
  /// Layout of the units the source makes (types and shape).
  const io::record_layout& source_layout() const;

  /// A new sink as the file asks; when the sink is "checksum" the result goes
  /// to `*checksum` (which may be null otherwise).
  sinew::sink make_sink(std::shared_ptr<io::checksum_result> checksum) const;
  /// The sink's "type".
  const std::string& sink_type() const;

  /// The "memory_limit_mib" budget in bytes (0 = none); `sinew run` applies
  /// it to the global buffer pool (buffer_pool::set_memory_limit).
  std::size_t memory_limit() const;

  /// Relative tolerance of `--verify` for floating-point outputs (0 = exact).
  double tolerance() const;

  /// The maps split over several devices, with their JSON pointers (their
  /// `device_stats` say how units were shared).
  const std::vector<std::pair<std::string, node>>& device_maps() const;

 private:
  friend const detail::graph_file_state& detail::state_of(const graph_file& f);
  explicit graph_file(std::unique_ptr<detail::graph_file_state> s);
  std::unique_ptr<detail::graph_file_state> s_;
};

/// Result of `verify_run`.
struct verify_report {
  std::uint64_t units = 0;       ///< units compared
  std::uint64_t mismatches = 0;  ///< units that differ from the reference
  std::string first;             ///< description of the first difference
  bool ok() const noexcept { return mismatches == 0; }
};

/// Wraps `inner`: every unit the graph delivers is compared with the
/// sequential reference of `f` (`reference_root()` executed on a replay of the
/// source) before it is passed on. Results go to `*report` (final after the
/// run). Throws `sinew::error` if the file's source cannot be replayed.
///
/// \code
/// auto rep = std::make_shared<sinew::verify_report>();
/// g.run(f.make_source(), sinew::verifying_sink(f, f.make_sink(sum), rep)).get();
/// if (!rep->ok()) std::puts(rep->first.c_str());
/// \endcode
sinew::sink verifying_sink(const graph_file& f, sinew::sink inner, std::shared_ptr<verify_report> report);

/// `verifying_sink` for every sink of `f`, a tree's or a dag's. In a dag the
/// sources are replayed and each sequence number followed through the
/// reference trees, merges, zips and splits by key; a unit a sink receives
/// is matched by origin and sequence number, and what no sink received is
/// reported once every sink has ended. Throws `sinew::error` if a source
/// cannot be replayed or a split routes by policy (no reference can follow it).
///
/// \code
/// std::vector<std::pair<std::string, std::shared_ptr<sinew::io::checksum_result>>> sums;
/// auto rep = std::make_shared<sinew::verify_report>();
/// g.run(f.make_sources(), sinew::verifying_sinks(f, f.make_sinks(sums), rep)).get();
/// \endcode
graph::named_sinks verifying_sinks(const graph_file& f, graph::named_sinks inner, std::shared_ptr<verify_report> report);

}  // namespace sinew
