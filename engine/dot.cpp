// Graphviz (DOT) export of a compiled graph. The skeleton tree is recovered
// from the stage paths ("pipeline[1]/farm/map<B>": the stage map<B> inside a
// farm inside child 1 of the root pipeline), so it shows exactly what runs.
#include <sinew/engine/dot.hpp>

#include <cstdio>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include <sinew/engine/error.hpp>

#include "channel.hpp"
#include "compiled_graph.hpp"

namespace sinew {

namespace {

/// Text for a DOT double-quoted string; `\n` in the result is DOT's line
/// break, so backslashes in names are doubled.
std::string esc(const std::string& s) {
  std::string r;
  for (char c : s) {
    if (c == '"' || c == '\\') r += '\\';
    if (c == '\n' || c == '\r') {
      r += "\\n";
      continue;
    }
    r += c;
  }
  return r;
}

/// Path segments, split at '/' outside <...>, (...) and [...] (type names
/// such as map<ratio<1/2>> keep their slash).
std::vector<std::string> segments(const std::string& path) {
  std::vector<std::string> out(1);
  int depth = 0;
  for (char c : path) {
    if (c == '<' || c == '(' || c == '[') ++depth;
    if (c == '>' || c == ')' || c == ']') --depth;
    if (c == '/' && depth == 0) out.emplace_back();
    else out.back() += c;
  }
  return out;
}

/// "pipeline[2]" -> "pipeline": the index says which child the path goes
/// on to, not which node this is.
std::string strip_child_index(const std::string& seg) {
  if (seg.empty() || seg.back() != ']') return seg;
  int depth = 0;
  for (std::size_t i = seg.size(); i-- > 0;) {
    if (seg[i] == ']') ++depth;
    else if (seg[i] == '[' && --depth == 0) {
      bool digits = i + 2 < seg.size();
      for (std::size_t j = i + 1; j + 1 < seg.size(); ++j) digits &= seg[j] >= '0' && seg[j] <= '9';
      return digits ? seg.substr(0, i) : seg;
    }
  }
  return seg;
}

struct cluster {
  std::string label;
  std::vector<std::unique_ptr<cluster>> children;
  std::map<std::string, cluster*> by_key;
  std::vector<std::size_t> stages;  // stages directly inside
  std::vector<std::size_t> all;     // stages at any depth inside
};

std::string ms(std::uint64_t ns) {
  char b[32];
  std::snprintf(b, sizeof b, "%.1f", double(ns) / 1e6);
  return b;
}

}  // namespace

std::string to_dot(const graph& g, const run_stats* st) {
  const detail::compiled_graph& cg = *g.g_;
  const std::size_t n = cg.stages.size();
  const std::size_t vertices = n + cg.junctions.size() + cg.sinks.size();
  if (st && st->stages.size() != vertices)
    throw graph_error("to_dot", "the statistics have " + std::to_string(st->stages.size()) +
                                    " stages, this graph has " + std::to_string(vertices) +
                                    " (with junctions and sinks): not a run of it");

  // The tree of containers, from the stage paths.
  cluster root;
  std::vector<std::string> leaf_label(n);
  for (std::size_t i = 0; i < n; ++i) {
    std::vector<std::string> seg = segments(cg.stages[i].path);
    cluster* c = &root;
    c->all.push_back(i);
    std::string key;
    for (std::size_t k = 0; k + 1 < seg.size(); ++k) {
      key += '/';
      key += strip_child_index(seg[k]);
      auto it = c->by_key.find(key);
      if (it == c->by_key.end()) {
        c->children.push_back(std::make_unique<cluster>());
        c->children.back()->label = strip_child_index(seg[k]);
        it = c->by_key.emplace(key, c->children.back().get()).first;
      }
      c = it->second;
      c->all.push_back(i);
      key += seg[k].substr(strip_child_index(seg[k]).size());  // keep the child index in deeper keys
    }
    c->stages.push_back(i);
    leaf_label[i] = seg.back();
  }

  std::ostringstream os;
  os << "digraph sinew {\n"
        "  rankdir=LR;\n"
        "  compound=true;\n"
        "  node [shape=box, style=rounded, fontname=\"Helvetica\", fontsize=10];\n"
        "  edge [fontname=\"Helvetica\", fontsize=9];\n";
  // Sources and sinks: a tree's are "source" and "sink"; a dag's are named.
  auto endpoint_id = [&](const char* kind, std::size_t i) {
    return std::string(kind) + (cg.is_dag() ? std::to_string(i) : std::string());
  };
  for (std::size_t i = 0; i < cg.sources.size(); ++i) {
    os << "  " << endpoint_id("source", i) << " [shape=ellipse, label=\"" << esc(cg.is_dag() ? cg.sources[i].name : "source");
    if (st && i < st->sources.size()) os << "\\nunits " << st->sources[i].units << "\\nbytes " << st->sources[i].bytes;
    os << "\"];\n";
  }

  auto stage_node = [&](std::size_t i, const std::string& indent) {
    const detail::stage_spec& s = cg.stages[i];
    os << indent << "s" << i << " [label=\"" << esc(leaf_label[i]);
    if (s.concurrency > 1) os << " x" << s.concurrency;
    if (s.in_place) os << "\\n(in place)";
    if (st) {
      const stage_stats& x = st->stages[i];
      os << "\\nunits " << x.units << ", busy " << ms(x.busy_ns) << " ms";
      os << "\\nwait in " << ms(x.wait_in_ns) << " ms, out " << ms(x.wait_out_ns) << " ms";
      if (x.chunks) os << "\\nchunks " << x.chunks;
    }
    os << "\", tooltip=\"" << esc(s.path) << "\"];\n";
  };

  // Farm widths: a farm multiplies the concurrency of every stage inside it,
  // so its width is the smallest concurrency inside over the enclosing farms'.
  int next_id = 0;
  auto emit = [&](auto& self, const cluster& c, const std::string& indent, unsigned outer) -> void {
    for (std::size_t i : c.stages) stage_node(i, indent);
    for (const auto& ch : c.children) {
      unsigned width = 0;
      if (ch->label.rfind("farm", 0) == 0) {
        for (std::size_t i : ch->all)
          if (width == 0 || cg.stages[i].concurrency / outer < width) width = cg.stages[i].concurrency / outer;
      }
      os << indent << "subgraph cluster_" << next_id++ << " {\n";
      os << indent << "  label=\"" << esc(ch->label);
      if (width > 1) os << " x" << width;
      os << "\";\n" << indent << "  style=rounded;\n";
      self(self, *ch, indent + "  ", width > 1 ? outer * width : outer);
      os << indent << "}\n";
    }
  };
  emit(emit, root, "  ", 1);

  for (std::size_t j = 0; j < cg.junctions.size(); ++j) {
    os << "  j" << j << " [shape=diamond, label=\"" << esc(cg.junctions[j].path) << "\\n"
       << detail::junction_kind_name(cg.junctions[j].k);
    if (st) {
      os << "\\nunits " << st->stages[n + j].units;
      for (const auto& [name, v] : st->stages[n + j].counters) os << "\\n" << esc(name) << " " << v;  // a join's "unmatched"
    }
    os << "\"];\n";
  }
  for (std::size_t i = 0; i < cg.sinks.size(); ++i) {
    const std::size_t at = n + cg.junctions.size() + i;
    os << "  " << endpoint_id("sink", i) << " [shape=ellipse, label=\""
       << esc(st ? st->stages[at].path : cg.is_dag() ? cg.sinks[i].name : std::string("sink"));
    if (st) os << "\\nunits " << st->stages[at].units << "\\nbytes " << st->stages[at].bytes;
    os << "\"];\n";
  }

  auto vertex_id = [&](detail::vertex_ref v) -> std::string {
    switch (v.k) {
      case detail::vertex_ref::stage: return "s" + std::to_string(v.i);
      case detail::vertex_ref::junction: return "j" + std::to_string(v.i);
      case detail::vertex_ref::source: return endpoint_id("source", v.i);
      case detail::vertex_ref::sink: break;
    }
    return endpoint_id("sink", v.i);
  };
  // The stats row of a channel's consumer (its input queue).
  auto consumer_row = [&](detail::vertex_ref v) -> std::size_t {
    switch (v.k) {
      case detail::vertex_ref::stage: return v.i;
      case detail::vertex_ref::junction: return n + v.i;
      default: return n + cg.junctions.size() + v.i;
    }
  };
  for (std::size_t i = 0; i < cg.channels.size(); ++i) {
    detail::channel_spec c = detail::channel_for(cg, i);
    os << "  " << vertex_id(cg.channels[i].from) << " -> " << vertex_id(cg.channels[i].to);
    os << " [label=\"cap " << c.cap << " " << detail::kind_name(c.k);
    if (st) os << "\\nhigh " << st->stages[consumer_row(cg.channels[i].to)].high_water;
    os << "\"];\n";
  }
  os << "}\n";
  return os.str();
}

}  // namespace sinew
