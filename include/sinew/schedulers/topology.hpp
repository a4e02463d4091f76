#pragma once
/// \file topology.hpp
/// NUMA topology: nodes, the OS cpu ids of each node, the last-level cache
/// size and the node distance matrix (ACPI SLIT style: 10 local, larger
/// remote). The NUMA schedulers ([Muddukrishna15, Algorithms 1-2]) and the
/// data placement policies (`placement.hpp`) read it.
///
/// A topology is either detected from the machine with hwloc (`detect()`) or
/// synthetic (`synthetic()`, `parse()`): test machines have one NUMA node, so
/// placement decisions, remote-byte counts and steal counts are tested on a
/// synthetic topology such as 4 nodes x 4 cores.
#include <cstddef>
#include <string>
#include <vector>

namespace sinew {

/// Description of the NUMA nodes of a machine (real or synthetic).
///
/// Synthetic topologies number their cpus consecutively: node `n` of a
/// `N x C` topology has cpus `n*C .. n*C + C-1`.
///
/// \code
/// // 4 nodes x 4 cores; node 3 is far from node 0.
/// auto t = sinew::topology::synthetic(4, 4, {{10, 20, 30, 40},
///                                            {20, 10, 20, 30},
///                                            {30, 20, 10, 20},
///                                            {40, 30, 20, 10}});
/// t.nodes();                 // 4
/// t.cores(2);                // {8, 9, 10, 11}
/// t.node_of_core(9);         // 2
/// t.distance(0, 3);          // 40
/// t.nodes_by_distance(1);    // {0, 2, 3}: 20, 20 (ties by index), 30
///
/// // Same thing from the SINEW_TOPOLOGY format:
/// auto u = sinew::topology::parse("4x4:10,20,30,40;20,10,20,30;30,20,10,20;40,30,20,10");
///
/// // The process-wide topology: $SINEW_TOPOLOGY if set, else hwloc.
/// const sinew::topology cur = sinew::topology::current();
/// sinew::topology::set_current(sinew::topology::parse("2x8"));  // tests/programs
/// \endcode
class topology {
 public:
  /// Node x node distance matrix, row `i` = distances from node `i`.
  using distance_matrix = std::vector<std::vector<unsigned>>;

  /// Default last-level cache size of synthetic topologies (32 MiB).
  static constexpr std::size_t default_llc_bytes = std::size_t(32) << 20;
  /// Distance of a node to itself and to any other node when no matrix is given.
  static constexpr unsigned local_distance = 10;
  static constexpr unsigned remote_distance = 20;

  /// One node holding every cpu of the machine (`std::thread::hardware_concurrency()`),
  /// default LLC size; not synthetic. Also what `detect()` falls back to.
  topology();

  /// The machine's topology from hwloc: NUMA nodes that have cpus (cpu-less
  /// memory nodes are left out), the cpus (PUs, OS ids) this process may use,
  /// distances from hwloc's OS-provided latency matrix (10 / 20 when the OS
  /// gives none or an inconsistent one), LLC = size of an L3 cache, or of the
  /// deepest cache level when there is no L3. A machine without NUMA gives one
  /// node with all cpus; if hwloc fails, the default constructor's result.
  static topology detect();

  /// `nodes` x `cores_per_node`, cpus numbered consecutively. `distances`
  /// empty means 10 on the diagonal and 20 elsewhere; otherwise it must be
  /// `nodes` x `nodes`, entries > 0, and each diagonal entry strictly smaller
  /// than every other entry of its row (not necessarily symmetric).
  /// Throws `sinew::error` naming what is wrong.
  static topology synthetic(std::size_t nodes, std::size_t cores_per_node,
                            distance_matrix distances = {},
                            std::size_t llc_bytes = default_llc_bytes);

  /// Parses the `SINEW_TOPOLOGY` format: `"<nodes>x<cores>"` (default
  /// distances) or `"<nodes>x<cores>:<row>;<row>;..."` with comma-separated
  /// distances per row, e.g. `"2x4:10,21;21,10"`. Spaces around numbers are
  /// allowed. Throws `sinew::error` quoting the string and naming the problem.
  static topology parse(const std::string& spec);

  /// The process-wide topology: the one given to `set_current()` if any, else
  /// `$SINEW_TOPOLOGY` parsed (read at every call; a bad value throws
  /// `sinew::error` naming the variable and the problem), else `detect()`
  /// (detected once, then cached). Thread-safe; returns a copy.
  static topology current();
  /// Overrides `current()` for the rest of the process (or until `clear_current()`).
  static void set_current(topology t);
  /// Drops the override of `set_current()`.
  static void clear_current();

  std::size_t nodes() const noexcept { return cores_.size(); }
  /// OS cpu ids of `node` (throws `sinew::error` if `node >= nodes()`).
  const std::vector<int>& cores(std::size_t node) const;
  /// Largest number of cpus on a node.
  std::size_t cores_per_node() const noexcept { return cores_per_node_; }
  std::size_t total_cores() const noexcept { return total_cores_; }
  /// Distance from node `i` to node `j` (throws `sinew::error` if out of range).
  unsigned distance(std::size_t i, std::size_t j) const;
  const distance_matrix& distances() const noexcept { return distances_; }
  /// Bytes of one last-level cache.
  std::size_t llc_bytes() const noexcept { return llc_bytes_; }
  /// Node of OS cpu `cpu`, -1 if the topology does not contain it.
  int node_of_core(int cpu) const noexcept;
  /// The other nodes, nearest first (ties by index); excludes `node` itself.
  std::vector<std::size_t> nodes_by_distance(std::size_t node) const;
  /// True for `synthetic()` / `parse()` topologies.
  bool synthetic() const noexcept { return synthetic_; }
  /// One line, e.g. `"synthetic: 2 nodes x 4 cores (8 cpus), LLC 32 MiB, distances 10,20;20,10"`.
  std::string describe() const;

 private:
  std::vector<std::vector<int>> cores_;
  distance_matrix distances_;
  std::size_t cores_per_node_ = 0;
  std::size_t total_cores_ = 0;
  std::size_t llc_bytes_ = default_llc_bytes;
  bool synthetic_ = false;

  void finish();  // fills cores_per_node_ / total_cores_
};

}  // namespace sinew
