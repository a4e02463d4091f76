// sinew::graph_file: reads a file (or text), applies the --set overrides,
// validates the document (document_loader.cpp), and makes the pieces of a
// run from what its sections made.
#include <sinew/json/graph_file.hpp>

#include <fstream>
#include <sstream>

#include "graph_file_state.hpp"
#include "json_cursor.hpp"

namespace sinew {

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
const std::string& graph_file::scheduler_policy() const { return s_->scheduler.policy; }
namespace {
// The accessors of a tree's one source and sink, called on a dag file.
void tree_only(const detail::graph_file_state& s, const char* what) {
  if (s.dag)
    throw error(s.origin + ": " + what + ": a dag file has named sources and sinks (make_sources, make_sinks)");
}
}  // namespace

const std::string& graph_file::source_type() const {
  tree_only(*s_, "source_type");
  return s_->source_type->name;
}
const io::record_layout& graph_file::source_layout() const {
  tree_only(*s_, "source_layout");
  return s_->source.layout;
}
bool graph_file::is_dag() const { return s_->dag != nullptr; }

std::optional<std::uint64_t> graph_file::unit_count() const {
  if (!s_->dag) return s_->source.count;
  std::uint64_t n = 0;
  for (const auto& x : s_->sources) {
    if (!x.plan.count) return std::nullopt;
    n += *x.plan.count;
  }
  return n;
}

bool graph_file::replayable() const {
  if (!s_->dag) return s_->source_type->live_input.empty() && s_->source.live_input.empty();
  for (const auto& x : s_->sources)
    if (!x.type->live_input.empty() || !x.plan.live_input.empty()) return false;
  return true;
}

graph graph_file::make_graph(const graph_options& o) const { return s_->dag ? graph(*s_->dag, o) : graph(s_->root, o); }

graph::named_sources graph_file::make_sources() const {
  graph::named_sources v;
  if (!s_->dag) v.push_back({"source", make_source()});
  for (const auto& x : s_->sources) v.push_back({x.name, x.plan.make(false)});
  return v;
}

graph::named_sinks graph_file::make_sinks(
    std::vector<std::pair<std::string, std::shared_ptr<io::checksum_result>>>& sums, bool stdout_discards) const {
  graph::named_sinks v;
  auto one = [&](const std::string& name, const std::string& type, const detail::sink_factory& make) {
    if (stdout_discards && type == "stdout") {
      v.push_back({name, discard()});
      return;
    }
    std::shared_ptr<io::checksum_result> sum;
    if (type == "checksum") sums.push_back({name, sum = std::make_shared<io::checksum_result>()});
    v.push_back({name, make(sum)});
  };
  if (!s_->dag) one("sink", s_->sink_type->name, s_->sink);
  for (const auto& x : s_->sinks) one(x.name, x.type->name, x.make);
  return v;
}
const std::string& graph_file::sink_type() const {
  tree_only(*s_, "sink_type");
  return s_->sink_type->name;
}
double graph_file::tolerance() const { return s_->tolerance; }
std::size_t graph_file::memory_limit() const { return s_->memory_limit; }
const std::vector<std::pair<std::string, node>>& graph_file::device_maps() const { return s_->device_maps; }

std::vector<std::string> graph_file::replayable_source_types() {
  std::vector<std::string> v;
  for (const auto& t : detail::source_types().entries())
    if (t.live_input.empty()) v.push_back(t.name);
  return v;
}

std::unique_ptr<scheduler> graph_file::make_scheduler(unsigned threads) const { return s_->scheduler.make(threads); }

graph_options graph_file::options(scheduler* sched) const {
  graph_options o;
  o.scheduler = sched;
  o.capacity = s_->capacity;
  o.batch = s_->batch;
  o.placement = s_->placement;
  return o;
}

std::vector<std::string> graph_file::source_names() const {
  std::vector<std::string> v;
  if (!s_->dag) v.push_back("source");
  for (const auto& x : s_->sources) v.push_back(x.name);
  return v;
}

std::vector<std::string> graph_file::sink_names() const {
  std::vector<std::string> v;
  if (!s_->dag) v.push_back("sink");
  for (const auto& x : s_->sinks) v.push_back(x.name);
  return v;
}

source graph_file::make_source() const {
  tree_only(*s_, "make_source");
  return s_->source.make(false);
}

sink graph_file::make_sink(std::shared_ptr<io::checksum_result> checksum) const {
  tree_only(*s_, "make_sink");
  return s_->sink(std::move(checksum));
}

namespace detail {
const graph_file_state& state_of(const graph_file& f) { return *f.s_; }
}  // namespace detail

}  // namespace sinew
