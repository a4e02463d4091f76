// sinew::topology: hwloc detection, synthetic topologies, SINEW_TOPOLOGY.
#include <sinew/schedulers/topology.hpp>

#include <sinew/engine/error.hpp>

#include <hwloc.h>

#include <algorithm>
#include <charconv>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <optional>
#include <sstream>
#include <thread>

namespace sinew {

namespace {

constexpr std::size_t max_nodes = 4096;
constexpr std::size_t max_cores_per_node = 1 << 16;

std::string matrix_text(const topology::distance_matrix& d) {
  std::string s;
  for (std::size_t i = 0; i < d.size(); ++i) {
    if (i) s += ';';
    for (std::size_t j = 0; j < d[i].size(); ++j) {
      if (j) s += ',';
      s += std::to_string(d[i][j]);
    }
  }
  return s;
}

// Empty string when `d` is a valid distance matrix for `nodes` nodes,
// else what is wrong with it.
std::string check_matrix(const topology::distance_matrix& d, std::size_t nodes) {
  if (d.size() != nodes)
    return "distance matrix has " + std::to_string(d.size()) + " rows, expected " +
           std::to_string(nodes) + " (one per node)";
  for (std::size_t i = 0; i < nodes; ++i) {
    if (d[i].size() != nodes)
      return "distance matrix row " + std::to_string(i) + " has " + std::to_string(d[i].size()) +
             " entries, expected " + std::to_string(nodes) + " (matrix must be square)";
    for (std::size_t j = 0; j < nodes; ++j)
      if (d[i][j] == 0)
        return "distance(" + std::to_string(i) + "," + std::to_string(j) + ") is 0, must be > 0";
    for (std::size_t j = 0; j < nodes; ++j)
      if (j != i && d[i][j] <= d[i][i])
        return "diagonal not smallest: distance(" + std::to_string(i) + "," + std::to_string(j) +
               ")=" + std::to_string(d[i][j]) + " <= distance(" + std::to_string(i) + "," +
               std::to_string(i) + ")=" + std::to_string(d[i][i]);
  }
  return {};
}

topology::distance_matrix default_matrix(std::size_t nodes) {
  topology::distance_matrix d(nodes, std::vector<unsigned>(nodes, topology::remote_distance));
  for (std::size_t i = 0; i < nodes; ++i) d[i][i] = topology::local_distance;
  return d;
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

// Parses a whole non-negative decimal number; nullopt if not one.
std::optional<unsigned long long> to_number(std::string_view s) {
  s = trim(s);
  if (s.empty()) return std::nullopt;
  unsigned long long v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size()) return std::nullopt;
  return v;
}

std::string size_text(std::size_t b) {
  if (b >= (std::size_t(1) << 20) && b % (std::size_t(1) << 20) == 0)
    return std::to_string(b >> 20) + " MiB";
  if (b >= 1024 && b % 1024 == 0) return std::to_string(b >> 10) + " KiB";
  return std::to_string(b) + " B";
}

// ---- process-wide topology ------------------------------------------------
std::mutex g_mutex;
std::unique_ptr<topology> g_override;  // set_current()
std::unique_ptr<topology> g_detected;  // detect(), once

}  // namespace

topology::topology() {
  unsigned n = std::thread::hardware_concurrency();
  if (n == 0) n = 1;
  cores_.assign(1, {});
  for (unsigned c = 0; c < n; ++c) cores_[0].push_back(int(c));
  distances_ = default_matrix(1);
  finish();
}

void topology::finish() {
  cores_per_node_ = 0;
  total_cores_ = 0;
  for (auto& c : cores_) {
    cores_per_node_ = std::max(cores_per_node_, c.size());
    total_cores_ += c.size();
  }
}

topology topology::synthetic(std::size_t nodes, std::size_t cores_per_node,
                             distance_matrix distances, std::size_t llc_bytes) {
  if (nodes == 0) throw error("synthetic topology: number of nodes must be at least 1");
  if (nodes > max_nodes)
    throw error("synthetic topology: " + std::to_string(nodes) + " nodes, at most " +
                std::to_string(max_nodes));
  if (cores_per_node == 0) throw error("synthetic topology: cores per node must be at least 1");
  if (cores_per_node > max_cores_per_node)
    throw error("synthetic topology: " + std::to_string(cores_per_node) +
                " cores per node, at most " + std::to_string(max_cores_per_node));
  if (llc_bytes == 0) throw error("synthetic topology: LLC size must be > 0");
  if (distances.empty()) {
    distances = default_matrix(nodes);
  } else if (auto why = check_matrix(distances, nodes); !why.empty()) {
    throw error("synthetic topology: " + why);
  }
  topology t;
  t.cores_.assign(nodes, {});
  for (std::size_t n = 0; n < nodes; ++n)
    for (std::size_t c = 0; c < cores_per_node; ++c)
      t.cores_[n].push_back(int(n * cores_per_node + c));
  t.distances_ = std::move(distances);
  t.llc_bytes_ = llc_bytes;
  t.synthetic_ = true;
  t.finish();
  return t;
}

topology topology::parse(const std::string& spec) {
  const std::string head = "topology '" + spec + "': ";
  const std::string form = " (expected <nodes>x<cores>[:<row>;<row>;...], e.g. 4x4 or 2x4:10,20;20,10)";
  std::string_view s = spec;
  std::string_view dims = s, rows;
  bool has_rows = false;
  if (auto colon = s.find(':'); colon != std::string_view::npos) {
    dims = s.substr(0, colon);
    rows = s.substr(colon + 1);
    has_rows = true;
  }
  dims = trim(dims);
  if (dims.empty()) throw error(head + "empty" + form);
  auto x = dims.find_first_of("xX");
  if (x == std::string_view::npos) throw error(head + "missing 'x' between nodes and cores" + form);
  auto nodes = to_number(dims.substr(0, x));
  auto cores = to_number(dims.substr(x + 1));
  if (!nodes) throw error(head + "number of nodes '" + std::string(trim(dims.substr(0, x))) +
                          "' is not a non-negative integer" + form);
  if (!cores) throw error(head + "cores per node '" + std::string(trim(dims.substr(x + 1))) +
                          "' is not a non-negative integer" + form);
  if (*nodes == 0) throw error(head + "number of nodes must be at least 1");
  if (*cores == 0) throw error(head + "cores per node must be at least 1");
  if (*nodes > max_nodes) throw error(head + "too many nodes (at most " + std::to_string(max_nodes) + ")");
  if (*cores > max_cores_per_node)
    throw error(head + "too many cores per node (at most " + std::to_string(max_cores_per_node) + ")");

  distance_matrix d;
  if (has_rows) {
    if (trim(rows).empty()) throw error(head + "distance matrix after ':' is empty" + form);
    std::size_t r = 0;
    while (true) {
      auto semi = rows.find(';');
      std::string_view row = rows.substr(0, semi);
      std::vector<unsigned> vals;
      std::size_t c = 0;
      while (true) {
        auto comma = row.find(',');
        std::string_view cell = row.substr(0, comma);
        auto v = to_number(cell);
        if (!v || *v > 0xffffffffull)
          throw error(head + "distance matrix row " + std::to_string(r) + " entry " +
                      std::to_string(c) + " '" + std::string(trim(cell)) +
                      "' is not a non-negative integer");
        vals.push_back(unsigned(*v));
        ++c;
        if (comma == std::string_view::npos) break;
        row.remove_prefix(comma + 1);
      }
      d.push_back(std::move(vals));
      ++r;
      if (semi == std::string_view::npos) break;
      rows.remove_prefix(semi + 1);
    }
    if (auto why = check_matrix(d, std::size_t(*nodes)); !why.empty()) throw error(head + why);
  }
  return synthetic(std::size_t(*nodes), std::size_t(*cores), std::move(d));
}

topology topology::detect() {
  hwloc_topology_t h;
  if (hwloc_topology_init(&h) != 0) return topology();
  struct guard {
    hwloc_topology_t h;
    ~guard() { hwloc_topology_destroy(h); }
  } g{h};
  if (hwloc_topology_load(h) != 0) return topology();

  // Nodes that hold cpus, in hwloc's logical order.
  std::vector<hwloc_obj_t> numa;
  std::vector<std::vector<int>> cores;
  const int n_numa = hwloc_get_nbobjs_by_type(h, HWLOC_OBJ_NUMANODE);
  const int n_pu = hwloc_get_nbobjs_by_type(h, HWLOC_OBJ_PU);
  if (n_pu <= 0) return topology();
  for (int i = 0; i < n_numa; ++i) {
    hwloc_obj_t node = hwloc_get_obj_by_type(h, HWLOC_OBJ_NUMANODE, unsigned(i));
    if (!node || !node->cpuset) continue;
    std::vector<int> cpus;
    for (int p = 0; p < n_pu; ++p) {
      hwloc_obj_t pu = hwloc_get_obj_by_type(h, HWLOC_OBJ_PU, unsigned(p));
      if (pu && hwloc_bitmap_isset(node->cpuset, pu->os_index)) cpus.push_back(int(pu->os_index));
    }
    if (cpus.empty()) continue;  // cpu-less memory node
    std::sort(cpus.begin(), cpus.end());
    numa.push_back(node);
    cores.push_back(std::move(cpus));
  }
  topology t;
  if (cores.empty()) {  // no NUMA information: one node with every cpu
    std::vector<int> cpus;
    for (int p = 0; p < n_pu; ++p)
      if (hwloc_obj_t pu = hwloc_get_obj_by_type(h, HWLOC_OBJ_PU, unsigned(p)))
        cpus.push_back(int(pu->os_index));
    std::sort(cpus.begin(), cpus.end());
    cores.push_back(std::move(cpus));
    numa.clear();
  }
  // A cpu must belong to one node only.
  {
    std::vector<int> all;
    for (auto& c : cores) all.insert(all.end(), c.begin(), c.end());
    std::sort(all.begin(), all.end());
    if (std::adjacent_find(all.begin(), all.end()) != all.end()) return topology();
  }
  t.cores_ = std::move(cores);
  const std::size_t n = t.cores_.size();
  t.distances_ = default_matrix(n);

  // Distances: the OS latency matrix (ACPI SLIT on Linux) if hwloc has one.
  if (n > 1) {
    unsigned nr = 1;
    hwloc_distances_s* dist = nullptr;
    if (hwloc_distances_get_by_type(h, HWLOC_OBJ_NUMANODE, &nr, &dist,
                                    HWLOC_DISTANCES_KIND_FROM_OS | HWLOC_DISTANCES_KIND_MEANS_LATENCY,
                                    0) == 0 &&
        nr >= 1 && dist) {
      distance_matrix d(n, std::vector<unsigned>(n, 0));
      bool complete = true;
      for (std::size_t i = 0; i < n && complete; ++i) {
        for (std::size_t j = 0; j < n; ++j) {
          int a = -1, b = -1;
          for (unsigned k = 0; k < dist->nbobjs; ++k) {
            if (dist->objs[k] == numa[i]) a = int(k);
            if (dist->objs[k] == numa[j]) b = int(k);
          }
          if (a < 0 || b < 0) { complete = false; break; }
          std::uint64_t v = dist->values[std::size_t(a) * dist->nbobjs + std::size_t(b)];
          if (v == 0 || v > 0xffffffffull) { complete = false; break; }
          d[i][j] = unsigned(v);
        }
      }
      if (complete && check_matrix(d, n).empty()) t.distances_ = std::move(d);
      hwloc_distances_release(h, dist);
    }
  }

  // LLC: an L3 if there is one, else the deepest cache level present.
  const hwloc_obj_type_t order[] = {HWLOC_OBJ_L3CACHE, HWLOC_OBJ_L5CACHE, HWLOC_OBJ_L4CACHE,
                                    HWLOC_OBJ_L2CACHE, HWLOC_OBJ_L1CACHE};
  for (hwloc_obj_type_t type : order) {
    hwloc_obj_t c = hwloc_get_obj_by_type(h, type, 0);
    if (c && c->attr && c->attr->cache.size > 0) {
      t.llc_bytes_ = std::size_t(c->attr->cache.size);
      break;
    }
  }
  t.synthetic_ = false;
  t.finish();
  return t;
}

topology topology::current() {
  std::lock_guard<std::mutex> lock(g_mutex);
  if (g_override) return *g_override;
  if (const char* env = std::getenv("SINEW_TOPOLOGY")) {
    try {
      return parse(env);
    } catch (const error& e) {
      throw error(std::string("SINEW_TOPOLOGY: ") + e.what());
    }
  }
  if (!g_detected) g_detected = std::make_unique<topology>(detect());
  return *g_detected;
}

void topology::set_current(topology t) {
  std::lock_guard<std::mutex> lock(g_mutex);
  g_override = std::make_unique<topology>(std::move(t));
}

void topology::clear_current() {
  std::lock_guard<std::mutex> lock(g_mutex);
  g_override.reset();
}

const std::vector<int>& topology::cores(std::size_t node) const {
  if (node >= cores_.size())
    throw error("topology: node " + std::to_string(node) + " out of range (" +
                std::to_string(cores_.size()) + " nodes)");
  return cores_[node];
}

unsigned topology::distance(std::size_t i, std::size_t j) const {
  if (i >= cores_.size() || j >= cores_.size())
    throw error("topology: distance(" + std::to_string(i) + "," + std::to_string(j) +
                ") out of range (" + std::to_string(cores_.size()) + " nodes)");
  return distances_[i][j];
}

int topology::node_of_core(int cpu) const noexcept {
  for (std::size_t n = 0; n < cores_.size(); ++n)
    if (std::binary_search(cores_[n].begin(), cores_[n].end(), cpu)) return int(n);
  return -1;
}

std::vector<std::size_t> topology::nodes_by_distance(std::size_t node) const {
  if (node >= cores_.size())
    throw error("topology: node " + std::to_string(node) + " out of range (" +
                std::to_string(cores_.size()) + " nodes)");
  std::vector<std::size_t> v;
  for (std::size_t j = 0; j < cores_.size(); ++j)
    if (j != node) v.push_back(j);
  std::stable_sort(v.begin(), v.end(), [&](std::size_t a, std::size_t b) {
    return distances_[node][a] < distances_[node][b];
  });
  return v;
}

std::string topology::describe() const {
  std::ostringstream o;
  o << (synthetic_ ? "synthetic" : "detected") << ": " << nodes() << (nodes() == 1 ? " node" : " nodes")
    << " x ";
  bool uniform = std::all_of(cores_.begin(), cores_.end(),
                             [&](const std::vector<int>& c) { return c.size() == cores_per_node_; });
  if (uniform) {
    o << cores_per_node_ << (cores_per_node_ == 1 ? " core" : " cores");
  } else {
    o << "{";
    for (std::size_t i = 0; i < cores_.size(); ++i) o << (i ? "," : "") << cores_[i].size();
    o << "} cores";
  }
  o << " (" << total_cores_ << " cpus), LLC " << size_text(llc_bytes_) << ", distances "
    << matrix_text(distances_);
  return o.str();
}

}  // namespace sinew
