#pragma once
/// \file distributed.hpp
/// `distributed(farm_or_map)`: marks a farm or a map whose work may run on
/// other processes (MPI ranks, see docs/distributed.md). Without an active
/// transport (no MPI, or one process) the node runs exactly as the node it
/// wraps; under `sinew::mpi::session` with several ranks:
///
/// * a farm's units are dealt, demand-driven, to ranks 1..N-1 (at most
///   `in_flight` units per rank; rank 0's own `n` workers take the rest),
///   each rank running the whole worker subtree on its own scheduler; an
///   ordered farm still delivers in order;
/// * a map's units are split along the outermost dimension into N
///   contiguous row ranges, one per rank (rank 0 computes its own).
///
/// \code
/// sinew::mpi::session mpi(argc, argv);   // sinew/distributed/mpi_session.hpp
/// sinew::graph g(sinew::pipeline(sinew::map<Prep>(),
///                                sinew::distributed(sinew::farm(sinew::map<Heavy>(), 4)),
///                                sinew::distributed(sinew::map<Series>())));
/// mpi.run(g, src, snk);                   // rank 0 runs the graph, the others serve
/// \endcode
#include <cstddef>
#include <cstdint>
#include <exception>
#include <functional>
#include <memory>
#include <string>

#include <sinew/engine/node.hpp>

namespace sinew {

struct distributed_options {
  /// Units a farm keeps in flight on each other rank (back pressure across
  /// the network: a rank with `in_flight` units gets no more until one
  /// returns). At least 1.
  unsigned in_flight = 2;
};

/// Wraps `n`, which must be a farm or a map (one whose leaf can run a range
/// of rows: `map<F>`, kernels of graph files). Throws graph_error otherwise.
node distributed(node n, distributed_options o = {});

/// True if `n` was made by `distributed`.
bool is_distributed(const node& n);

namespace detail {

/// What a distributed node hands to the process transport. The transport is
/// rank 0's dealer of the MPI session (nodes/distributed/mpi_dealer.hpp);
/// the core only sees this interface, so builds without MPI run distributed
/// nodes locally.
class dist_transport {
 public:
  virtual ~dist_transport() = default;
  /// Processes taking part (1: everything is local).
  virtual int ranks() const noexcept = 0;
  /// Farm: sends the unit (`*a.in`; `*a.out` is written when it returns) to
  /// a rank with fewer than `in_flight` units of this node in flight, and
  /// returns true; `done` is called once the result is in `*a.out` (or with
  /// the remote exception). False when every rank is full.
  virtual bool try_send_unit(const std::string& path, exec_args& a, bool in_place, unsigned in_flight,
                             std::function<void(std::exception_ptr)> done) = 0;
  /// Map: rows [r*R/N, (r+1)*R/N) of the unit run on rank r, `local` runs
  /// rank 0's; returns when every row is in `*a.out` (or throws).
  virtual void run_rows(const std::string& path, exec_args& a, bool in_place,
                        const std::function<void(std::size_t, std::size_t)>& local) = 0;
};

/// The process's transport, null when none (set by mpi::session).
dist_transport* active_transport() noexcept;
void set_active_transport(dist_transport* t) noexcept;

/// The executable of a distributed node's subtree, looked up by node path by
/// the ranks that serve units (they build the same tree). The most recently
/// compiled node of a path wins.
struct dist_entry {
  std::shared_ptr<executable> exec;  ///< farm: the worker; map: a row_executable
  bool rows = false;                 ///< a map (run_rows) rather than a farm
  bool in_place = false;
  type_list in_types, out_types;     ///< element types of the layers it reads and writes
  std::string where;                 ///< node path named by errors (a farm's worker)
};
void register_dist(const std::string& path, dist_entry e);
/// Throws error ("no distributed node '<path>' ...") when unknown.
dist_entry find_dist(const std::string& path);

}  // namespace detail
}  // namespace sinew
