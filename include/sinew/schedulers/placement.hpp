#pragma once
/// \file placement.hpp
/// Data placement policies for buffers [Muddukrishna15, Tables 1-3].
///
/// On a NUMA system the distribution *unit* is a page and the *location* is a
/// NUMA node (Table 2). The policies of Table 1:
///
/// | policy     | Table 1 behaviour                                             | here                                   |
/// |------------|---------------------------------------------------------------|----------------------------------------|
/// | `standard` | delegate data distribution to the OS (first touch)            | every page on the toucher's node        |
/// | `fine`     | distribute data, unit-wise round-robin, across all locations  | page `i` on node `i % nodes`            |
/// | `coarse`   | distribute data units, per-allocation round-robin             | whole buffer on one node; the `placer` |
/// |            |                                                               | advances a counter per allocation      |
/// | `automatic`| ("auto") Table 3 heuristic, see `choose_placement()`          | resolves to one of the three above     |
///
/// `placer::place()` computes where the pages of a buffer live (a `page_map`)
/// so that the `deal` scheduler can compute D[j] = bytes of a unit's data on
/// node j (`bytes_per_node()`) and tests can count remote bytes exactly on a
/// synthetic topology: there it is an accounting model. `placer::bind()`
/// also moves memory: on a real machine with several nodes it binds the
/// pages of a buffer as the map says, through libnuma (`numa_tonode_memory`,
/// i.e. mbind), and `query_pages()` asks the OS (`move_pages`) where pages
/// really are. On a real multi-node machine a `standard` buffer is reported
/// as "unknown" (-1), since first touch decides. Page indices are counted
/// from the start of the buffer, i.e. the buffer starts on a page boundary.
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <sinew/engine/buffer.hpp>
#include <sinew/schedulers/topology.hpp>

namespace sinew {

/// Data distribution policy ([Muddukrishna15, Table 1]; `automatic` = Table 3).
enum class placement { standard, fine, coarse, automatic };

/// "standard", "fine", "coarse" or "auto".
std::string_view to_string(placement p) noexcept;
/// Inverse of `to_string` ("automatic" is accepted too); throws `sinew::error`
/// listing the valid names otherwise.
///
/// \code
/// sinew::parse_placement("fine") == sinew::placement::fine;
/// \endcode
placement parse_placement(std::string_view name);

/// What the Table 3 heuristic needs to know: how many allocations ("malloc
/// calls") hold the data and how many tasks (units) operate on it.
struct usage_hint {
  std::size_t allocations = 0;
  std::size_t tasks = 0;
};

/// The "auto" policy: [Muddukrishna15, Table 3] ("Heuristics to select data
/// distribution scheme"), exactly:
///
/// |                         | one task operating on data | many tasks          |
/// |-------------------------|----------------------------|---------------------|
/// | **one malloc call**     | regular malloc (`standard`)| `fine`              |
/// | **many malloc calls**   | `coarse`                   | `coarse`            |
///
/// "one" means exactly 1, "many" means 2 or more. Throws `sinew::error` if a
/// count is 0.
///
/// \code
/// sinew::choose_placement(1, 1);    // standard
/// sinew::choose_placement(1, 64);   // fine:   one big array, many tasks
/// sinew::choose_placement(63, 1);   // coarse
/// sinew::choose_placement(63, 63);  // coarse: e.g. a list of vectors, one task each
/// \endcode
placement choose_placement(std::size_t allocations, std::size_t tasks);
inline placement choose_placement(usage_hint h) { return choose_placement(h.allocations, h.tasks); }

/// Where each page of one buffer lives. Node -1 means unknown (first touch
/// on a real machine, not yet touched).
///
/// \code
/// // 10000 bytes, fine over 4 nodes: pages 0,1,2 on nodes 0,1,2 (page 2 partial)
/// auto m = sinew::page_map::interleaved(10000, 4);
/// m.node_of_page(2);            // 2
/// m.node_of_byte(8192);         // 2
/// sinew::bytes_per_node(m, 4000, 5000);   // {96, 4096, 808, 0}
/// \endcode
class page_map {
 public:
  static constexpr std::size_t default_page_size = 4096;

  /// Empty map (0 bytes, 0 nodes).
  page_map() = default;
  /// Every page on `node` (-1: unknown). `nodes` = nodes of the topology.
  static page_map single(std::size_t bytes, std::size_t nodes, int node,
                         std::size_t page_size = default_page_size);
  /// Page `i` on node `(first_node + i) % nodes`.
  static page_map interleaved(std::size_t bytes, std::size_t nodes, std::size_t first_node = 0,
                              std::size_t page_size = default_page_size);
  /// Page `i` on `page_nodes[i]` (-1: unknown); needs one entry per page.
  static page_map explicit_pages(std::size_t bytes, std::size_t nodes, std::vector<int> page_nodes,
                                 std::size_t page_size = default_page_size);

  std::size_t bytes() const noexcept { return bytes_; }
  std::size_t page_size() const noexcept { return page_size_; }
  /// Number of pages, the last one possibly partial.
  std::size_t pages() const noexcept { return (bytes_ + page_size_ - 1) / page_size_; }
  /// Nodes of the topology the map was made for (size of `bytes_per_node`'s result).
  std::size_t nodes() const noexcept { return nodes_; }
  /// Node of page `i` (-1 unknown); throws `sinew::error` if `i >= pages()`.
  int node_of_page(std::size_t i) const;
  /// Node of the page holding byte `offset`.
  int node_of_byte(std::size_t offset) const { return node_of_page(offset / page_size_); }
  /// The node holding every page, or -1 if spread over several or unknown
  /// (what `buffer::numa_node()` reports).
  int home_node() const noexcept;
  /// The policy that produced the map (after resolving `automatic`).
  placement policy() const noexcept { return policy_; }

 private:
  friend class placer;
  friend std::vector<std::size_t> bytes_per_node(const page_map&, std::size_t, std::size_t);
  enum class kind { single, interleaved, explicit_pages };
  kind kind_ = kind::single;
  std::size_t bytes_ = 0;
  std::size_t page_size_ = default_page_size;
  std::size_t nodes_ = 0;
  int node_ = -1;             // single: the node; interleaved: the first node
  std::vector<int> pages_;    // explicit_pages
  placement policy_ = placement::standard;
};

/// Bytes of `[offset, offset + length)` on each node: element `j` is D[j] of
/// Algorithm 1 (the `deal` scheduler). Bytes on pages of unknown node are not
/// counted (see `unknown_bytes`), so the elements sum to `length` when every
/// page is known. O(nodes) for single/interleaved maps. Throws `sinew::error`
/// if the range is not inside the buffer.
///
/// \code
/// auto m = sinew::page_map::interleaved(4 * 4096, 4);
/// sinew::bytes_per_node(m, 2048, 4096);   // {2048, 2048, 0, 0}
/// \endcode
std::vector<std::size_t> bytes_per_node(const page_map& map, std::size_t offset, std::size_t length);
/// Bytes of `[offset, offset + length)` on pages of unknown node.
std::size_t unknown_bytes(const page_map& map, std::size_t offset, std::size_t length);

/// Applies one policy to a sequence of allocations on a topology. Thread-safe
/// (the coarse counter is atomic).
///
/// \code
/// auto topo = sinew::topology::synthetic(4, 4);
/// sinew::placer coarse(topo, sinew::placement::coarse);
/// coarse.place(8192).home_node();   // 0
/// coarse.place(8192).home_node();   // 1  (per-allocation round-robin)
///
/// sinew::placer fine(topo, sinew::placement::fine);
/// fine.place(8 * 4096).node_of_page(5);      // 1
///
/// sinew::placer first_touch(topo, sinew::placement::standard);
/// first_touch.place(8192, /*toucher_node=*/2).home_node();   // 2 (synthetic topology)
///
/// // auto: Table 3 with 1 allocation and 16 tasks -> fine
/// sinew::placer a(topo, sinew::placement::automatic, {1, 16});
/// a.effective_policy();   // placement::fine
/// \endcode
/// Where the pages of `[p, p + bytes)` are now, from the OS (`move_pages`):
/// an explicit map over `t`'s nodes (a node is identified by the OS node of
/// its first cpu); pages not touched yet, or on a node `t` does not have, are
/// unknown (-1). `t` must be the machine's topology (not synthetic) and `p`
/// page-aligned, else `sinew::error`.
///
/// \code
/// auto m = sinew::query_pages(sinew::topology::detect(), p, bytes);
/// m.node_of_page(0);   // 0 on a one-node machine once the page is touched
/// \endcode
page_map query_pages(const topology& t, const void* p, std::size_t bytes);

/// Adds the bytes of `b` on each node to `D` (D of Algorithm 1 for a task
/// reading `b`), from its recorded placement: all on `numa_node()`, or pages
/// round-robin from `interleave_first()`. Unknown placement, or one made for
/// another node count than `D.size()`, adds nothing. Returns the bytes added.
///
/// \code
/// std::vector<std::uint64_t> D(4, 0);
/// sinew::add_bytes_on_nodes(*b, D);   // b fine-placed over 4 nodes: ~bytes/4 each
/// \endcode
std::uint64_t add_bytes_on_nodes(const buffer& b, std::span<std::uint64_t> D) noexcept;

class placer {
 public:
  /// `policy == automatic` needs `hint` with both counts > 0 (else throws
  /// `sinew::error`); it is resolved once with `choose_placement(hint)`.
  placer(topology topo, placement policy, usage_hint hint = {},
         std::size_t page_size = page_map::default_page_size);
  placer(const placer&) = delete;
  placer& operator=(const placer&) = delete;

  /// Where a new buffer of `bytes` goes. `toucher_node` is the node of the
  /// thread that will first touch it (-1: unknown); only `standard` uses it:
  /// all pages on that node if the topology is synthetic or has one node,
  /// unknown (-1) on a real multi-node machine. `fine` starts every buffer at
  /// node 0; `coarse` puts buffer k (k-th call, from 0) on node k % nodes.
  /// Throws `sinew::error` if `toucher_node` is not -1 or a node.
  page_map place(std::size_t bytes, int toucher_node = -1);

  /// Like `place()`, then, when `binds()`, binds the pages of `[p, p +
  /// bytes)` to the nodes of the map (`fine`: page by page). The map is what
  /// the memory will hold once touched; pages already touched elsewhere are
  /// moved (MPOL_MF_MOVE). Without binding the memory is left alone. Throws
  /// `sinew::error` if `p` is not aligned to the page size, or if binding is
  /// asked with a page size other than the OS's or the OS refuses.
  ///
  /// \code
  /// sinew::placer coarse(sinew::topology::current(), sinew::placement::coarse);
  /// void* p = std::aligned_alloc(4096, 1 << 20);
  /// sinew::page_map m = coarse.bind(p, 1 << 20);   // bound to node 0 on a NUMA machine
  /// \endcode
  page_map bind(void* p, std::size_t bytes, int toucher_node = -1);
  /// Places a buffer a graph stage is about to write (the engine calls it
  /// for every output buffer of a stage that has a placement, see
  /// `graph_options::placement`): `place(b.bytes(), toucher_node)`, then
  /// the pages are bound as `bind()` would when `binds()` and the block
  /// starts on a page (pool blocks of 64 KiB and more do), and the result is
  /// recorded on the buffer (`record_placement`) so that the schedulers read
  /// D from it. Returns the map.
  ///
  /// \code
  /// sinew::placer coarse(sinew::topology::parse("4x4"), sinew::placement::coarse);
  /// auto b = sinew::buffer_pool::global().acquire<float>(1 << 20);
  /// coarse.place_buffer(*b);
  /// b->numa_node();   // 0 (the next buffer: 1)
  /// \endcode
  page_map place_buffer(buffer& b, int toucher_node = -1);

  /// Whether `bind()` binds memory: a real (not synthetic) topology with more
  /// than one node, and libnuma usable on this machine.
  bool binds() const noexcept;

  placement policy() const noexcept { return policy_; }
  /// `policy()` with `automatic` resolved.
  placement effective_policy() const noexcept { return effective_; }
  const topology& topo() const noexcept { return topo_; }
  std::size_t page_size() const noexcept { return page_size_; }

 private:
  topology topo_;
  placement policy_;
  placement effective_;
  std::size_t page_size_;
  alignas(64) std::atomic_size_t next_{0};
};

}  // namespace sinew
