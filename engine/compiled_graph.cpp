// Wiring a compiled graph: channels between stages, junctions and endpoints,
// and the ordered regions of a chain of stages.
#include "compiled_graph.hpp"

#include <algorithm>

namespace sinew::detail {

const char* junction_kind_name(junction_spec::kind k) noexcept {
  switch (k) {
    case junction_spec::broadcast: return "broadcast";
    case junction_spec::round_robin: return "split(round_robin)";
    case junction_spec::least_loaded: return "split(least_loaded)";
    case junction_spec::by_key: return "split(by_key)";
    case junction_spec::merge: return "merge";
    case junction_spec::zip: return "zip";
    case junction_spec::join: break;
  }
  return "join";
}

std::string compiled_graph::vertex_path(vertex_ref v) const {
  switch (v.k) {
    case vertex_ref::stage: return stages[v.i].path;
    case vertex_ref::junction: return junctions[v.i].path;
    case vertex_ref::source: return sources[v.i].name;
    case vertex_ref::sink: break;
  }
  return sinks[v.i].name;
}

std::uint32_t compiled_graph::add_channel(vertex_ref from, vertex_ref to) {
  channels.push_back({from, to});
  return std::uint32_t(channels.size() - 1);
}

std::uint32_t compiled_graph::chain(std::size_t first, std::size_t last, std::uint32_t in) {
  stage_in.resize(stages.size());
  stage_out.resize(stages.size());
  for (std::size_t i = first; i < last; ++i) {
    channels[in].to = {vertex_ref::stage, std::uint32_t(i)};
    stage_in[i] = in;
    in = add_channel({vertex_ref::stage, std::uint32_t(i)}, {vertex_ref::sink, 0});  // consumer set next
    stage_out[i] = in;
  }
  return in;
}

void compiled_graph::find_regions(std::size_t first, std::size_t last) {
  for (std::size_t i = first; i < last; ++i) {
    int d = stages[i].exit_region;
    if (d < 0) continue;
    for (std::size_t j = i + 1; j-- > first;) {
      const auto& er = stages[j].enter_regions;
      if (std::find(er.begin(), er.end(), unsigned(d)) != er.end()) {
        regions.push_back({j, i});
        break;
      }
    }
  }
}

}  // namespace sinew::detail
