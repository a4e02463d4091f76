#pragma once
/// \file distributed/mpi_session.hpp
/// `sinew::mpi::session`: runs one graph over the processes of an MPI job
/// (Open MPI's `mpirun`). Available when Sinew was built with MPI
/// (`SINEW_HAVE_MPI`; CMake option `SINEW_MPI`). Every rank builds the same
/// graph; rank 0 runs it (sources, sinks and every stage), and the farms and
/// maps marked `distributed` (distributed.hpp) deal their work to all ranks.
/// The other ranks serve: receive a unit, run the same subtree on their own
/// scheduler, send the result back. Protocol and invariants:
/// docs/distributed.md.
///
/// \code
/// int main(int argc, char** argv) {
///   sinew::mpi::session mpi(argc, argv);        // MPI_Init_thread; MPI_Finalize at the end
///   sinew::graph g(sinew::distributed(sinew::farm(sinew::map<Heavy>(), 4)));
///   std::vector<sinew::array<float>> in = make_items(), out;
///   sinew::run_stats st = mpi.run(g, sinew::from(in), sinew::into(out));  // rank 0 runs, others serve
///   if (mpi.rank() == 0) std::printf("%llu units\n", (unsigned long long)st.units_out);
/// }
/// \endcode
/// `mpirun -np 4 ./app`; run alone (no mpirun) it is one rank and runs locally.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <sinew/distributed/distributed.hpp>
#include <sinew/engine/graph.hpp>
#include <sinew/engine/sink.hpp>
#include <sinew/engine/source.hpp>

namespace sinew::mpi {

/// What one rank did for the distributed nodes during the last run.
struct rank_stats {
  int rank = 0;
  std::uint64_t units = 0;       ///< farm units it ran
  std::uint64_t row_ranges = 0;  ///< map row ranges it ran
  std::uint64_t busy_ns = 0;     ///< time its leaves ran (summed over its concurrent units)
  std::uint64_t bytes_in = 0;    ///< bytes received (unit inputs)
  std::uint64_t bytes_out = 0;   ///< bytes sent back (results)
  std::uint64_t cpu_ns = 0;      ///< CPU time the process used while serving (all its threads)
  /// "rank 1: 40 units, 0 row ranges, busy 41.2 ms, cpu 45.0 ms, 2.6 MB in, 2.6 MB out".
  std::string str() const;
};

struct session_options {
  /// Seconds rank 0 waits for the other ranks to report at the end of a run
  /// before aborting the job (MPI_Abort): a rank that never answers must not
  /// hang the run.
  double end_timeout_s = 60;
};

class session {
 public:
  /// Initialises MPI (MPI_Init_thread, at least MPI_THREAD_SERIALIZED) and,
  /// with more than one rank, makes this the process's transport for
  /// distributed nodes. Create it before the graphs. Throws sinew::error if
  /// MPI is already initialised or lacks thread support.
  session(int& argc, char**& argv, session_options o = {});
  /// Without the program's arguments (MPI allows null).
  explicit session(session_options o = {});
  ~session();  ///< MPI_Finalize
  session(const session&) = delete;
  session& operator=(const session&) = delete;

  int rank() const noexcept;
  int size() const noexcept;

  /// Ranks other than 0: serves units of the distributed nodes compiled in
  /// this process until rank 0 calls `finish`; returns rank 0's verdict
  /// (true: its run succeeded). Rank 0: throws.
  bool serve();
  /// Rank 0, once its run has ended: tells every rank to stop serving
  /// (`ok` = the run succeeded) and returns their statistics (ranks 1..N-1).
  std::vector<rank_stats> finish(bool ok);
  /// Farm units rank 0 sent to each rank (index = rank) during this session.
  std::vector<std::uint64_t> units_sent() const;

  /// Collective (every rank calls it, once per set-up): true when every rank
  /// passed `ok`. Lets ranks that built their graph learn that another could
  /// not (a missing file, a plugin), instead of waiting for it.
  bool agree(bool ok);
  /// Ends every process of the job at once (MPI_Abort): the last resort.
  [[noreturn]] void abort(int code);

  /// Every rank calls it with the same graph: rank 0 runs `g` (returns its
  /// statistics; rethrows the run's error after every rank stopped), the
  /// others serve (return empty statistics; throw sinew::error if rank 0's
  /// run failed). Statistics of the other ranks: `last_rank_stats()`.
  run_stats run(graph& g, source src, sink snk);
  const std::vector<rank_stats>& last_rank_stats() const noexcept;

  struct impl;

 private:
  std::unique_ptr<impl> p_;
};

/// True when the process looks started by mpirun (Open MPI's
/// OMPI_COMM_WORLD_SIZE, or PMI_SIZE / PMIX_RANK of other launchers).
bool launched_by_mpirun() noexcept;

}  // namespace sinew::mpi
