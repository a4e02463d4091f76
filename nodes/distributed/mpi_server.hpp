#pragma once
// The serving ranks' side of the MPI transport (ranks 1..N-1). The thread
// in serve() is the only one of its process that calls MPI: it receives
// units and row ranges from rank 0, runs each as a task of the rank's own
// scheduler (the subtree found by node path in the distributed registry),
// sends the results back, and on op_end reports the run's statistics.
#include <mpi.h>

#include <atomic>
#include <csignal>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include <sinew/distributed/distributed.hpp>
#include <sinew/schedulers/scheduler.hpp>

#include "mpi_wire.hpp"

namespace sinew::mpi::detail {

class server {
 public:
  server(int rank, int tag_ub) : rank_(rank), tag_ub_(tag_ub) {}

  /// Serves until rank 0 sends op_end; returns rank 0's verdict.
  bool serve() {
    // mpirun turns Ctrl-C into SIGTERM for every rank: only rank 0 decides
    // (it drains and then ends the run), so the serving ranks ignore them.
    struct sigaction ign {}, old_int {}, old_term {};
    ign.sa_handler = SIG_IGN;
    sigaction(SIGINT, &ign, &old_int);
    sigaction(SIGTERM, &ign, &old_term);
    scheduler& sched = default_scheduler();
    std::mutex dm;
    std::vector<std::unique_ptr<job>> finished;  // run (or refused), result not sent yet
    std::vector<std::unique_ptr<job>> sending;   // result posted, not yet sent
    std::atomic<unsigned> running{0};
    std::uint64_t stats[st_count] = {};
    const std::uint64_t cpu0 = process_cpu_ns();
    bool ended = false, ok = false;
    backoff bo;
    for (;;) {
      {
        std::lock_guard<std::mutex> lk(dm);
        // Rank 0 ends a run only once every result is in, so nothing runs
        // then; the check keeps a late result from being dropped anyway.
        if (ended && running.load() == 0 && finished.empty() && sending.empty()) break;
      }
      bool progressed = false;
      int flag = 0;
      MPI_Status st;
      if (!ended) MPI_Iprobe(0, tag_ctl, MPI_COMM_WORLD, &flag, &st);
      if (flag) {
        progressed = true;
        auto j = std::make_unique<job>();
        MPI_Recv(&j->h, int(sizeof j->h), MPI_BYTE, 0, tag_ctl, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        if (j->h.op == op_end) {
          ended = true;
          ok = j->h.ok != 0;
        } else {
          receive_job(*j, stats);
          if (!j->err.empty()) {
            std::lock_guard<std::mutex> lk(dm);
            finished.push_back(std::move(j));
          } else {
            running.fetch_add(1);
            job* jp = j.release();
            sched.submit([this, jp, &sched, &dm, &finished, &running] {
              std::unique_ptr<job> mine(jp);
              run_job(*mine, sched);
              std::lock_guard<std::mutex> lk(dm);
              finished.push_back(std::move(mine));
              running.fetch_sub(1);
            });
          }
        }
      }
      std::vector<std::unique_ptr<job>> done;
      {
        std::lock_guard<std::mutex> lk(dm);
        done.swap(finished);
      }
      for (auto& j : done) {
        progressed = true;
        send_result(*j, stats);
        sending.push_back(std::move(j));
      }
      for (auto it = sending.begin(); it != sending.end();) {
        if (test((*it)->send_h) && test((*it)->send_d)) {
          it = sending.erase(it);
          progressed = true;
        } else {
          ++it;
        }
      }
      if (progressed) bo.busy();
      else bo.idle();
    }
    stats[st_cpu] = process_cpu_ns() - cpu0;
    MPI_Send(stats, int(st_count), MPI_UINT64_T, 0, tag_stats, MPI_COMM_WORLD);
    sigaction(SIGINT, &old_int, nullptr);
    sigaction(SIGTERM, &old_term, nullptr);
    return ok;
  }

 private:
  /// One unit or row range received from rank 0.
  struct job {
    header h;
    sinew::detail::dist_entry e;
    layer in, out;
    std::string err;  ///< non-empty: goes back as op_error
    std::uint64_t busy = 0;
    MPI_Request send_h = MPI_REQUEST_NULL, send_d = MPI_REQUEST_NULL;
  };

  /// Finds the job's subtree and receives its input; a failure is kept in
  /// `j.err` (rank 0 gets it as the job's result).
  void receive_job(job& j, std::uint64_t* stats) {
    const std::string path(j.h.path);
    try {
      j.e = sinew::detail::find_dist(path);
      if (j.e.rows != (j.h.op == op_rows)) throw error("rank 0 and this rank disagree on what node '" + path + "' is");
      j.in = make_layer(j.h.in, j.e.in_types);
    } catch (const std::exception& ex) {
      j.err = "rank " + std::to_string(rank_) + ": " + path + ": " + ex.what();
      j.in = layer(shape_of(j.h.in));
    }
    // The data message comes whatever happened: receive it (into scratch
    // memory when the layer could not be made).
    if (!j.err.empty()) {
      int count = 0;
      MPI_Status st;
      MPI_Probe(0, data_tag(j.h.id, tag_ub_), MPI_COMM_WORLD, &st);
      MPI_Get_count(&st, MPI_BYTE, &count);
      std::vector<char> scratch(std::size_t(count) + 1);
      MPI_Recv(scratch.data(), count, MPI_BYTE, 0, data_tag(j.h.id, tag_ub_), MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      return;
    }
    blocks b;
    b.add_layer(j.in, 0, SIZE_MAX);
    MPI_Request r = post(b, 0, data_tag(j.h.id, tag_ub_), false);
    MPI_Wait(&r, MPI_STATUS_IGNORE);
    stats[st_bytes_in] += b.bytes;
    if (!j.h.in_place) {
      try {
        j.out = make_layer(j.h.out, j.e.out_types);
      } catch (const std::exception& ex) {
        j.err = "rank " + std::to_string(rank_) + ": " + path + ": " + ex.what();
      }
    }
  }

  /// Runs the job's subtree on this rank's scheduler (a scheduler task).
  void run_job(job& j, scheduler& sched) {
    const std::uint64_t t0 = now_ns();
    try {
      sinew::detail::exec_args a{&j.in, j.h.in_place ? &j.in : &j.out, std::size_t(j.h.grain), j.h.seq, &sched};
      if (j.h.op == op_rows) static_cast<sinew::detail::row_executable&>(*j.e.exec).execute_rows(a, j.h.rb, j.h.re);
      else j.e.exec->execute(a);
    } catch (const std::exception& ex) {
      j.err = "rank " + std::to_string(rank_) + ": " + j.e.where + ": " + ex.what();
    } catch (...) {
      j.err = "rank " + std::to_string(rank_) + ": " + j.e.where + ": unknown exception";
    }
    j.busy = now_ns() - t0;
  }

  /// Posts the result header and (unless an error) the output rows.
  void send_result(job& j, std::uint64_t* stats) {
    header& h = j.h;
    h.busy_ns = j.busy;
    stats[st_busy] += j.busy;
    if (!j.err.empty()) {
      h.op = op_error;
      copy_str(h.what, sizeof h.what, j.err);
      MPI_Isend(&h, int(sizeof h), MPI_BYTE, 0, tag_res, MPI_COMM_WORLD, &j.send_h);
      return;
    }
    const bool rows = h.op == op_rows;
    ++stats[rows ? st_row_ranges : st_units];
    h.op = op_result;
    MPI_Isend(&h, int(sizeof h), MPI_BYTE, 0, tag_res, MPI_COMM_WORLD, &j.send_h);
    blocks b;
    b.add_layer(h.in_place ? j.in : j.out, rows ? h.rb : 0, rows ? h.re : SIZE_MAX);
    stats[st_bytes_out] += b.bytes;
    j.send_d = post(b, 0, data_tag(h.id, tag_ub_), true);
  }

  const int rank_, tag_ub_;
};

}  // namespace sinew::mpi::detail
