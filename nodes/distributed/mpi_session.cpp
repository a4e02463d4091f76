// `sinew::mpi::session`: MPI's set-up and tear-down, and the run that rank 0
// makes while the other ranks serve (docs/distributed.md). The transport
// itself is in three parts: the wire format (mpi_wire.hpp), rank 0's dealer
// (mpi_dealer.hpp: the communication thread, the farm and map protocols)
// and the serving ranks' loop (mpi_server.hpp). One thread per process makes
// every MPI call after MPI_Init_thread: rank 0's communication thread, or
// the thread in serve().
#include <sinew/distributed/mpi_session.hpp>

#include <mpi.h>

#include <cstdio>
#include <cstdlib>
#include <optional>

#include "mpi_dealer.hpp"
#include "mpi_server.hpp"

namespace sinew::mpi {

std::string rank_stats::str() const {
  char b[200];
  std::snprintf(b, sizeof b, "rank %d: %llu units, %llu row ranges, busy %.1f ms, cpu %.1f ms, %.1f MB in, %.1f MB out",
                rank, (unsigned long long)units, (unsigned long long)row_ranges, double(busy_ns) / 1e6,
                double(cpu_ns) / 1e6, double(bytes_in) / 1e6, double(bytes_out) / 1e6);
  return b;
}

bool launched_by_mpirun() noexcept {
  return std::getenv("OMPI_COMM_WORLD_SIZE") || std::getenv("PMI_SIZE") || std::getenv("PMIX_RANK");
}

struct session::impl {
  session_options opts;
  int rank_ = 0, size_ = 1, tag_ub = 32767;
  std::vector<rank_stats> last;
  /// Rank 0 of several: the process's transport. Only rank 0 deals work, so
  /// a serving rank registers none and a distributed node nested in a
  /// subtree it runs stays local there.
  std::optional<detail::dealer> dealer;

  void init(int* argc, char*** argv, session_options o) {
    opts = o;
    int inited = 0;
    MPI_Initialized(&inited);
    if (inited) throw error("mpi::session: MPI is already initialised (one session per process)");
    int provided = 0;
    MPI_Init_thread(argc, argv, MPI_THREAD_MULTIPLE, &provided);
    if (provided < MPI_THREAD_SERIALIZED) {
      MPI_Finalize();
      throw error("mpi::session: the MPI library gives no MPI_THREAD_SERIALIZED support (got level " +
                  std::to_string(provided) + ")");
    }
    MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
    MPI_Comm_size(MPI_COMM_WORLD, &size_);
    int* ub = nullptr;
    int flag = 0;
    MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_TAG_UB, &ub, &flag);
    if (flag && ub) tag_ub = *ub;
    if (size_ > 1 && rank_ == 0) {
      dealer.emplace(size_, tag_ub, opts.end_timeout_s);
      sinew::detail::set_active_transport(&*dealer);
    }
  }

  void shutdown() {
    if (dealer) {
      if (sinew::detail::active_transport() == &*dealer) sinew::detail::set_active_transport(nullptr);
      dealer.reset();  // joins the communication thread
    }
    int fin = 0;
    MPI_Finalized(&fin);
    if (!fin) MPI_Finalize();
  }
};

session::session(int& argc, char**& argv, session_options o) : p_(std::make_unique<impl>()) {
  p_->init(&argc, &argv, o);
}
session::session(session_options o) : p_(std::make_unique<impl>()) { p_->init(nullptr, nullptr, o); }
session::~session() { p_->shutdown(); }

int session::rank() const noexcept { return p_->rank_; }
int session::size() const noexcept { return p_->size_; }

bool session::serve() {
  if (p_->rank_ == 0) throw error("mpi::session::serve: rank 0 runs the graph (call run or finish)");
  if (p_->size_ < 2) return true;
  return detail::server(p_->rank_, p_->tag_ub).serve();
}

std::vector<rank_stats> session::finish(bool ok) {
  if (p_->rank_ != 0) throw error("mpi::session::finish: only rank 0 ends a run");
  p_->last.clear();
  if (p_->dealer) p_->last = p_->dealer->end_run(ok);
  return p_->last;
}

bool session::agree(bool ok) {
  int mine = ok ? 1 : 0, all = 0;
  MPI_Allreduce(&mine, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  return all == 1;
}

void session::abort(int code) {
  std::fflush(stdout);
  std::fflush(stderr);
  MPI_Abort(MPI_COMM_WORLD, code);
  std::abort();  // MPI_Abort does not return
}

const std::vector<rank_stats>& session::last_rank_stats() const noexcept { return p_->last; }

std::vector<std::uint64_t> session::units_sent() const {
  if (p_->dealer) return p_->dealer->units_sent();
  return std::vector<std::uint64_t>(std::size_t(p_->size_), 0);
}

run_stats session::run(graph& g, source src, sink snk) {
  if (rank() != 0) {
    if (!serve()) throw error("mpi::session::run: the run on rank 0 failed");
    return {};
  }
  run_future f = g.run(std::move(src), std::move(snk));
  f.wait();
  std::exception_ptr e;
  try {
    f.get();
  } catch (...) {
    e = std::current_exception();
  }
  finish(!e);
  if (e) std::rethrow_exception(e);
  return f.stats();
}

}  // namespace sinew::mpi
