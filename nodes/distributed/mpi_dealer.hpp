#pragma once
// Rank 0's side of the MPI transport: the process's dist_transport. Workers
// hand requests (a farm unit, a map's row ranges) to one communication
// thread, the only thread of rank 0 that calls MPI after MPI_Init_thread;
// it sends them, matches the results and completes the requests, and at the
// end of a run tells the serving ranks to stop and gathers their statistics.
#include <mpi.h>

#include <condition_variable>
#include <cstdio>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <sinew/distributed/distributed.hpp>
#include <sinew/distributed/mpi_session.hpp>
#include <sinew/engine/trace.hpp>

#include "mpi_wire.hpp"

namespace sinew::mpi::detail {

class dealer final : public sinew::detail::dist_transport {
 public:
  dealer(int size, int tag_ub, double end_timeout_s)
      : size_(size), tag_ub_(tag_ub), end_timeout_s_(end_timeout_s), sent_units_(std::size_t(size), 0) {
    comm_ = std::thread([this] { comm_loop(); });
  }
  /// Lets the communication thread finish what is in flight, then joins it.
  ~dealer() override {
    {
      std::lock_guard<std::mutex> lk(m_);
      quit_ = true;
    }
    cv_.notify_all();
    comm_.join();
  }
  dealer(const dealer&) = delete;
  dealer& operator=(const dealer&) = delete;

  int ranks() const noexcept override { return size_; }

  /// The farm protocol: a unit goes, whole, to the rank with the fewest
  /// units of this node in flight that has room (demand-driven, round robin
  /// among equals); false when every rank holds `limit`.
  bool try_send_unit(const std::string& path, sinew::detail::exec_args& a, bool in_place, unsigned limit,
                     std::function<void(std::exception_ptr)> done) override {
    auto p = std::make_unique<pending>();
    {
      std::lock_guard<std::mutex> lk(m_);
      auto& counts = in_flight_[path];
      counts.resize(std::size_t(size_), 0);
      int best = -1;
      for (int k = 0; k < size_ - 1; ++k) {
        int r = 1 + int((rr_ + unsigned(k)) % unsigned(size_ - 1));
        if (counts[std::size_t(r)] < limit && (best < 0 || counts[std::size_t(r)] < counts[std::size_t(best)])) best = r;
      }
      if (best < 0) return false;
      rr_ = unsigned(best) % unsigned(size_ - 1);
      ++counts[std::size_t(best)];
      ++sent_units_[std::size_t(best)];
      p->id = next_id_++;
      p->peer = best;
    }
    p->key = path;
    fill(*p, op_unit, path, a, in_place);
    p->h.id = p->id;
    p->dst = in_place ? a.in : a.out;
    p->done = std::move(done);
    {
      std::lock_guard<std::mutex> lk(m_);
      outbox_.push_back(std::move(p));
    }
    cv_.notify_all();
    return true;
  }

  /// The map protocol: rank r computes rows [R·r/N, R·(r+1)/N) of the unit,
  /// rank 0 its own share meanwhile (`local`); returns once every row is in,
  /// rethrowing rank 0's error first, else the first remote one.
  void run_rows(const std::string& path, sinew::detail::exec_args& a, bool in_place,
                const std::function<void(std::size_t, std::size_t)>& local) override {
    layer& dst = in_place ? *a.in : *a.out;
    const std::size_t rows = dst.shape().ext[0];
    const std::size_t n = std::size_t(size_);
    struct latch {
      std::mutex m;
      std::condition_variable cv;
      unsigned left = 0;
      std::exception_ptr err;
    };
    auto l = std::make_shared<latch>();
    std::vector<std::unique_ptr<pending>> parts;
    for (std::size_t r = 1; r < n; ++r) {
      std::size_t rb = rows * r / n, re = rows * (r + 1) / n;
      if (rb == re) continue;
      auto p = std::make_unique<pending>();
      p->peer = int(r);
      fill(*p, op_rows, path, a, in_place);
      p->h.rb = rb;
      p->h.re = re;
      p->dst = &dst;
      p->rb = rb;
      p->re = re;
      p->done = [l](std::exception_ptr e) {
        std::lock_guard<std::mutex> lk(l->m);
        if (e && !l->err) l->err = e;
        if (--l->left == 0) l->cv.notify_all();
      };
      parts.push_back(std::move(p));
    }
    {
      std::lock_guard<std::mutex> lk(m_);
      l->left = unsigned(parts.size());
      for (auto& p : parts) {
        p->id = next_id_++;
        p->h.id = p->id;
        outbox_.push_back(std::move(p));
      }
    }
    cv_.notify_all();
    std::exception_ptr mine;
    try {
      local(0, rows / n);  // rank 0's share, while the others compute theirs
    } catch (...) {
      mine = std::current_exception();
    }
    std::unique_lock<std::mutex> lk(l->m);
    l->cv.wait(lk, [&] { return l->left == 0; });
    if (mine) std::rethrow_exception(mine);
    if (l->err) std::rethrow_exception(l->err);
  }

  /// Once the run has ended (nothing in flight): op_end with rank 0's
  /// verdict to every rank, then their statistics (ranks 1..N-1).
  std::vector<rank_stats> end_run(bool ok) {
    std::unique_lock<std::mutex> lk(m_);
    end_requested_ = true;
    end_ok_ = ok;
    end_done_ = false;
    cv_.notify_all();
    cv_.wait(lk, [&] { return end_done_; });
    end_requested_ = false;
    return std::move(end_stats_);
  }

  /// Farm units sent to each rank (index = rank) so far.
  std::vector<std::uint64_t> units_sent() const {
    std::lock_guard<std::mutex> lk(m_);
    return sent_units_;
  }

 private:
  /// A request on its way: queued by a worker, then live on the
  /// communication thread until its result (or error) is in.
  struct pending {
    std::uint64_t id = 0;
    int peer = 0;
    header h;                       // sent
    const layer* in = nullptr;      // data sent from here
    layer* dst = nullptr;           // result received into here (rows rb..re)
    std::size_t rb = 0, re = SIZE_MAX;
    std::function<void(std::exception_ptr)> done;
    std::string key;                // in-flight count this unit holds ("" for rows)
    MPI_Request send_h = MPI_REQUEST_NULL, send_d = MPI_REQUEST_NULL, recv_d = MPI_REQUEST_NULL;
    bool receiving = false;
    trace* tr = nullptr;
    std::uint64_t t_sent = 0, remote_busy = 0;
  };

  /// The header fields and data source both protocols share.
  static void fill(pending& p, std::uint32_t op, const std::string& path, const sinew::detail::exec_args& a,
                   bool in_place) {
    p.h.op = op;
    p.h.in_place = in_place;
    p.h.seq = a.seq;
    p.h.grain = a.grain;
    p.h.in = describe(*a.in);
    p.h.out = describe(*a.out);
    copy_str(p.h.path, sizeof p.h.path, path);
    p.in = a.in;
    p.tr = trace::current();
  }

  void complete(pending& p, std::exception_ptr e) {
    if (!p.key.empty()) {
      std::lock_guard<std::mutex> lk(m_);
      --in_flight_[p.key][std::size_t(p.peer)];
    }
    if (p.tr && !e) {
      const std::uint64_t t = trace::now_ns();
      const std::uint64_t d = std::min(p.remote_busy, t - p.t_sent);
      p.tr->complete("remote", p.h.path, t - d, d,
                     {{"rank", p.peer}, {"seq", p.h.seq}, {"rows", p.h.op == op_rows ? p.re - p.rb : 0}});
    }
    p.done(e);
  }

  void comm_loop() {
    std::map<std::uint64_t, std::unique_ptr<pending>> live;  // sent, awaiting their result
    backoff bo;
    for (;;) {
      std::deque<std::unique_ptr<pending>> todo;
      bool want_end = false;
      {
        std::unique_lock<std::mutex> lk(m_);
        if (outbox_.empty() && live.empty() && !quit_ && !(end_requested_ && !end_done_))
          cv_.wait_for(lk, std::chrono::milliseconds(20));
        todo.swap(outbox_);
        if (quit_ && live.empty() && todo.empty()) return;
        want_end = end_requested_ && !end_done_;
      }
      bool progressed = !todo.empty();
      for (auto& p : todo) send(std::move(p), live);
      progressed |= receive_headers(live);
      // Results whose data is in.
      for (auto it = live.begin(); it != live.end();) {
        pending& p = *it->second;
        if (p.receiving && test(p.recv_d)) {
          MPI_Wait(&p.send_h, MPI_STATUS_IGNORE);
          MPI_Wait(&p.send_d, MPI_STATUS_IGNORE);
          complete(p, nullptr);
          it = live.erase(it);
          progressed = true;
        } else {
          ++it;
        }
      }
      if (want_end && live.empty()) {
        gather_end();
        progressed = true;
      }
      if (progressed) bo.busy();
      else if (!live.empty()) bo.idle();
    }
  }

  /// Posts a request's header and its input data.
  void send(std::unique_ptr<pending> p, std::map<std::uint64_t, std::unique_ptr<pending>>& live) {
    p->t_sent = trace::now_ns();
    MPI_Isend(&p->h, int(sizeof(header)), MPI_BYTE, p->peer, tag_ctl, MPI_COMM_WORLD, &p->send_h);
    blocks b;
    try {
      b.add_layer(*p->in, 0, SIZE_MAX);
    } catch (...) {
      MPI_Abort(MPI_COMM_WORLD, 3);  // the header is out: the peer waits for this data
    }
    p->send_d = post(b, p->peer, data_tag(p->id, tag_ub_), true);
    const std::uint64_t id = p->id;
    live.emplace(id, std::move(p));
  }

  /// Takes every result header that has arrived: an error completes its
  /// request, a result posts the receive of its data. True if any came.
  bool receive_headers(std::map<std::uint64_t, std::unique_ptr<pending>>& live) {
    bool any = false;
    for (;;) {
      int flag = 0;
      MPI_Status st;
      MPI_Iprobe(MPI_ANY_SOURCE, tag_res, MPI_COMM_WORLD, &flag, &st);
      if (!flag) return any;
      any = true;
      header h;
      MPI_Recv(&h, int(sizeof h), MPI_BYTE, st.MPI_SOURCE, tag_res, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      auto it = live.find(h.id);
      if (it == live.end()) {
        std::fprintf(stderr, "sinew: mpi: rank %d answered unit %llu, which rank 0 never sent\n", st.MPI_SOURCE,
                     (unsigned long long)h.id);
        MPI_Abort(MPI_COMM_WORLD, 3);
      }
      pending& p = *it->second;
      p.remote_busy = h.busy_ns;
      if (h.op == op_error) {
        MPI_Wait(&p.send_h, MPI_STATUS_IGNORE);
        MPI_Wait(&p.send_d, MPI_STATUS_IGNORE);
        complete(p, std::make_exception_ptr(error(std::string(h.what))));
        live.erase(it);
        continue;
      }
      blocks b;
      b.add_layer(*p.dst, p.rb, p.re);
      p.recv_d = post(b, st.MPI_SOURCE, data_tag(p.id, tag_ub_), false);
      p.receiving = true;
    }
  }

  /// op_end to every rank, then their statistics; a rank that does not
  /// report within end_timeout_s ends the job (MPI_Abort) rather than hang it.
  void gather_end() {
    std::vector<header> ends(static_cast<std::size_t>(size_));
    std::vector<MPI_Request> sends, recvs;
    std::vector<std::uint64_t> got(std::size_t(size_) * st_count, 0);
    for (int r = 1; r < size_; ++r) {
      header& h = ends[std::size_t(r)];
      h.op = op_end;
      h.ok = end_ok_;
      sends.emplace_back();
      MPI_Isend(&h, int(sizeof h), MPI_BYTE, r, tag_ctl, MPI_COMM_WORLD, &sends.back());
      recvs.emplace_back();
      MPI_Irecv(&got[std::size_t(r) * st_count], int(st_count), MPI_UINT64_T, r, tag_stats, MPI_COMM_WORLD,
                &recvs.back());
    }
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(end_timeout_s_);
    backoff bo;
    for (;;) {
      int all = 0;
      MPI_Testall(int(recvs.size()), recvs.data(), &all, MPI_STATUSES_IGNORE);
      if (all) break;
      if (std::chrono::steady_clock::now() > deadline) {
        std::fprintf(stderr, "sinew: mpi: a rank did not report within %.0f s of the end of the run; aborting the job\n",
                     end_timeout_s_);
        MPI_Abort(MPI_COMM_WORLD, 1);
      }
      bo.idle();
    }
    MPI_Waitall(int(sends.size()), sends.data(), MPI_STATUSES_IGNORE);
    std::vector<rank_stats> out;
    for (int r = 1; r < size_; ++r) {
      const std::uint64_t* g = &got[std::size_t(r) * st_count];
      out.push_back({r, g[st_units], g[st_row_ranges], g[st_busy], g[st_bytes_in], g[st_bytes_out], g[st_cpu]});
    }
    std::lock_guard<std::mutex> lk(m_);
    end_stats_ = std::move(out);
    end_done_ = true;
    cv_.notify_all();
  }

  const int size_, tag_ub_;
  const double end_timeout_s_;
  mutable std::mutex m_;
  std::condition_variable cv_;
  std::deque<std::unique_ptr<pending>> outbox_;                // queued by workers
  std::map<std::string, std::vector<unsigned>> in_flight_;  // farm units per node path, per rank
  std::vector<std::uint64_t> sent_units_;
  std::uint64_t next_id_ = 1;
  unsigned rr_ = 0;
  bool quit_ = false;
  // end_run(): the communication thread sends op_end and gathers the stats
  bool end_requested_ = false, end_ok_ = false, end_done_ = false;
  std::vector<rank_stats> end_stats_;
  std::thread comm_;
};

}  // namespace sinew::mpi::detail
