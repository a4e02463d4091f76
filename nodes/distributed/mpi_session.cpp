// The MPI transport of distributed farms and maps (docs/distributed.md).
// One thread per process makes every MPI call after MPI_Init_thread: on rank
// 0 the communication thread of the session, on the other ranks the thread
// in serve(). Units travel as a fixed-size header (tag_ctl / tag_res) and
// one data message of raw buffer bytes described by an hindexed datatype
// over the buffers themselves (no copy, no per-element serialisation), on a
// tag derived from the unit's id.
#include <sinew/distributed/mpi_session.hpp>

#include <mpi.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <deque>
#include <map>
#include <mutex>
#include <thread>

#include <sinew/engine/buffer_pool.hpp>
#include <sinew/schedulers/scheduler.hpp>
#include <sinew/engine/trace.hpp>

namespace sinew::mpi {

namespace {

using detail::exec_args;

enum : int { tag_ctl = 1, tag_res = 2, tag_stats = 3, tag_data0 = 16 };
enum : std::uint32_t { op_unit = 1, op_rows = 2, op_end = 3, op_result = 4, op_error = 5 };

struct layer_desc {
  std::uint32_t rank = 1, nbuf = 0;
  std::uint64_t ext[3] = {0, 1, 1};
  std::uint32_t esize[layer::max_buffers] = {};
};

/// The fixed part of every message (plain bytes: all ranks run the same build).
struct header {
  std::uint32_t op = 0, in_place = 0;
  std::uint64_t id = 0, seq = 0, grain = 1, rb = 0, re = 0;
  layer_desc in, out;
  std::uint64_t busy_ns = 0;
  std::uint32_t ok = 0;
  char path[512] = {};
  char what[1024] = {};
};

void copy_str(char* dst, std::size_t cap, const std::string& s) {
  std::size_t n = std::min(cap - 1, s.size());
  std::memcpy(dst, s.data(), n);
  dst[n] = 0;
}

layer_desc describe(const layer& l) {
  layer_desc d;
  d.rank = l.shape().rank;
  for (int i = 0; i < 3; ++i) d.ext[i] = l.shape().ext[std::size_t(i)];
  d.nbuf = l.size();
  for (unsigned i = 0; i < l.size(); ++i) d.esize[i] = std::uint32_t(l[i]->type().size);
  return d;
}

shape shape_of(const layer_desc& d) {
  shape s;
  s.rank = d.rank;
  for (int i = 0; i < 3; ++i) s.ext[std::size_t(i)] = d.ext[i];
  return s;
}

/// An element type of `size` bytes: the declared one when it fits, else a
/// registered type of that size (leaves' views check sizes only).
const elem_type& type_for(const detail::type_list& t, unsigned i, std::size_t size) {
  if (!t.any && i < t.types.size() && t.types[i] && t.types[i]->size == size) return *t.types[i];
  for (std::string_view n : elem_type_names())
    if (const elem_type* e = elem_type_by_name(n); e && e->size == size) return *e;
  throw error("no element type of " + std::to_string(size) + " bytes to receive a buffer into");
}

/// Allocates the buffers `d` describes.
layer make_layer(const layer_desc& d, const detail::type_list& types) {
  layer l(shape_of(d));
  for (unsigned i = 0; i < d.nbuf; ++i) l.add(buffer_pool::global().acquire(l.count(), type_for(types, i, d.esize[i])));
  return l;
}

/// Bytes [row_b, row_e) rows of every buffer of `l` (all rows: 0, SIZE_MAX).
struct blocks {
  std::vector<int> len;
  std::vector<MPI_Aint> disp;
  std::uint64_t bytes = 0;
  void add_layer(const layer& l, std::size_t rb, std::size_t re) {
    const std::size_t rows = l.shape().ext[0], inner = l.shape().inner();
    re = std::min(re, rows);
    rb = std::min(rb, re);
    for (unsigned i = 0; i < l.size(); ++i) {
      const std::size_t es = l[i]->type().size;
      const std::size_t n = (re - rb) * inner * es;
      if (n == 0) continue;
      if (n > std::size_t(INT32_MAX)) throw error("a buffer slice over 2 GiB cannot travel in one MPI message");
      MPI_Aint a;
      MPI_Get_address(static_cast<char*>(l[i]->data()) + rb * inner * es, &a);
      len.push_back(int(n));
      disp.push_back(a);
      bytes += n;
    }
  }
};

/// Posts a send or receive of `b` (MPI_BOTTOM + absolute displacements).
MPI_Request post(const blocks& b, int peer, int tag, bool send) {
  MPI_Request r;
  if (b.len.empty()) {
    if (send) MPI_Isend(nullptr, 0, MPI_BYTE, peer, tag, MPI_COMM_WORLD, &r);
    else MPI_Irecv(nullptr, 0, MPI_BYTE, peer, tag, MPI_COMM_WORLD, &r);
    return r;
  }
  MPI_Datatype t;
  MPI_Type_create_hindexed(int(b.len.size()), b.len.data(), b.disp.data(), MPI_BYTE, &t);
  MPI_Type_commit(&t);
  if (send) MPI_Isend(MPI_BOTTOM, 1, t, peer, tag, MPI_COMM_WORLD, &r);
  else MPI_Irecv(MPI_BOTTOM, 1, t, peer, tag, MPI_COMM_WORLD, &r);
  MPI_Type_free(&t);  // freed once the operation completes
  return r;
}

int data_tag(std::uint64_t id, int tag_ub) { return tag_data0 + int(id % std::uint64_t(tag_ub - tag_data0)); }

bool test(MPI_Request& r) {
  int f = 0;
  MPI_Test(&r, &f, MPI_STATUS_IGNORE);
  return f != 0;
}

std::uint64_t now_ns() {
  return std::uint64_t(std::chrono::duration_cast<std::chrono::nanoseconds>(
                           std::chrono::steady_clock::now().time_since_epoch())
                           .count());
}

/// CPU time of the whole process (every thread).
std::uint64_t process_cpu_ns() {
  timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return std::uint64_t(ts.tv_sec) * 1000000000ull + std::uint64_t(ts.tv_nsec);
}

/// Sleeps a little when a polling loop found nothing to do (ranks share cores).
struct backoff {
  unsigned us = 0;
  void idle() {
    us = us ? std::min(us * 2, 200u) : 5;
    std::this_thread::sleep_for(std::chrono::microseconds(us));
  }
  void busy() { us = 0; }
};

}  // namespace

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

struct session::impl final : detail::dist_transport {
  session_options opts;
  int rank_ = 0, size_ = 1, tag_ub = 32767;
  std::vector<rank_stats> last;

  // ---- rank 0: requests from workers to the communication thread
  struct pending {
    std::uint64_t id;
    int peer;
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
  std::mutex m;
  std::condition_variable cv;
  std::deque<std::unique_ptr<pending>> outbox;
  std::map<std::string, std::vector<unsigned>> in_flight;  // per node path, per rank
  std::vector<std::uint64_t> sent_units;
  std::uint64_t next_id = 1;
  unsigned rr = 0;
  bool quit = false;
  // finish(): the communication thread sends op_end and gathers the stats
  bool end_requested = false, end_ok = false, end_done = false;
  std::thread comm;

  // Only rank 0 deals work: a distributed node nested in a subtree that a
  // serving rank runs stays local there (it has no communication thread).
  int ranks() const noexcept override { return rank_ == 0 ? size_ : 1; }

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
    sent_units.assign(std::size_t(size_), 0);
    if (size_ > 1) {
      detail::set_active_transport(this);
      if (rank_ == 0) comm = std::thread([this] { comm_loop(); });
    }
  }

  void shutdown() {
    if (comm.joinable()) {
      {
        std::lock_guard<std::mutex> lk(m);
        quit = true;
      }
      cv.notify_all();
      comm.join();
    }
    if (detail::active_transport() == this) detail::set_active_transport(nullptr);
    int fin = 0;
    MPI_Finalized(&fin);
    if (!fin) MPI_Finalize();
  }

  // ------------------------------------------------------------ rank 0 API

  bool try_send_unit(const std::string& path, exec_args& a, bool in_place, unsigned limit,
                     std::function<void(std::exception_ptr)> done) override {
    auto p = std::make_unique<pending>();
    {
      std::lock_guard<std::mutex> lk(m);
      auto& counts = in_flight[path];
      counts.resize(std::size_t(size_), 0);
      // Demand-driven: the rank with the fewest units in flight (that has
      // room), round robin among equals.
      int best = -1;
      for (int k = 0; k < size_ - 1; ++k) {
        int r = 1 + int((rr + unsigned(k)) % unsigned(size_ - 1));
        if (counts[std::size_t(r)] < limit && (best < 0 || counts[std::size_t(r)] < counts[std::size_t(best)])) best = r;
      }
      if (best < 0) return false;
      rr = unsigned(best) % unsigned(size_ - 1);
      ++counts[std::size_t(best)];
      ++sent_units[std::size_t(best)];
      p->id = next_id++;
      p->peer = best;
    }
    p->key = path;
    p->h.op = op_unit;
    p->h.in_place = in_place;
    p->h.id = p->id;
    p->h.seq = a.seq;
    p->h.grain = a.grain;
    p->h.in = describe(*a.in);
    p->h.out = describe(*a.out);
    copy_str(p->h.path, sizeof p->h.path, path);
    p->in = a.in;
    p->dst = in_place ? a.in : a.out;
    p->done = std::move(done);
    p->tr = trace::current();
    {
      std::lock_guard<std::mutex> lk(m);
      outbox.push_back(std::move(p));
    }
    cv.notify_all();
    return true;
  }

  void run_rows(const std::string& path, exec_args& a, bool in_place,
                const std::function<void(std::size_t, std::size_t)>& local) override {
    layer& dst = in_place ? *a.in : *a.out;
    const std::size_t rows = dst.shape().ext[0];
    const std::size_t n = std::size_t(size_);
    // Waits for the other ranks' parts; the first error wins.
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
      p->h.op = op_rows;
      p->h.in_place = in_place;
      p->h.seq = a.seq;
      p->h.grain = a.grain;
      p->h.rb = rb;
      p->h.re = re;
      p->h.in = describe(*a.in);
      p->h.out = describe(*a.out);
      copy_str(p->h.path, sizeof p->h.path, path);
      p->in = a.in;
      p->dst = &dst;
      p->rb = rb;
      p->re = re;
      p->tr = trace::current();
      p->done = [l](std::exception_ptr e) {
        std::lock_guard<std::mutex> lk(l->m);
        if (e && !l->err) l->err = e;
        if (--l->left == 0) l->cv.notify_all();
      };
      parts.push_back(std::move(p));
    }
    {
      std::lock_guard<std::mutex> lk(m);
      l->left = unsigned(parts.size());
      for (auto& p : parts) {
        p->id = next_id++;
        p->h.id = p->id;
        outbox.push_back(std::move(p));
      }
    }
    cv.notify_all();
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

  std::vector<rank_stats> finish(bool ok) {
    if (rank_ != 0) throw error("mpi::session::finish: only rank 0 ends a run");
    last.clear();
    if (size_ < 2) return last;
    std::unique_lock<std::mutex> lk(m);
    end_requested = true;
    end_ok = ok;
    end_done = false;
    cv.notify_all();
    cv.wait(lk, [&] { return end_done; });
    end_requested = false;
    return last;
  }

  // ------------------------------------------------------------ rank 0 thread

  void complete(pending& p, std::exception_ptr e) {
    if (!p.key.empty()) {
      std::lock_guard<std::mutex> lk(m);
      --in_flight[p.key][std::size_t(p.peer)];
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
        std::unique_lock<std::mutex> lk(m);
        if (outbox.empty() && live.empty() && !quit && !(end_requested && !end_done))
          cv.wait_for(lk, std::chrono::milliseconds(20));
        todo.swap(outbox);
        if (quit && live.empty() && todo.empty()) return;
        want_end = end_requested && !end_done;
      }
      bool progressed = !todo.empty();
      for (auto& p : todo) {
        p->t_sent = trace::now_ns();
        MPI_Isend(&p->h, int(sizeof(header)), MPI_BYTE, p->peer, tag_ctl, MPI_COMM_WORLD, &p->send_h);
        blocks b;
        try {
          b.add_layer(*p->in, 0, SIZE_MAX);
        } catch (...) {
          MPI_Abort(MPI_COMM_WORLD, 3);  // the header is out: the peer waits for this data
        }
        p->send_d = post(b, p->peer, data_tag(p->id, tag_ub), true);
        live.emplace(p->id, std::move(p));
      }
      // Result headers.
      for (;;) {
        int flag = 0;
        MPI_Status st;
        MPI_Iprobe(MPI_ANY_SOURCE, tag_res, MPI_COMM_WORLD, &flag, &st);
        if (!flag) break;
        progressed = true;
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
        p.recv_d = post(b, st.MPI_SOURCE, data_tag(p.id, tag_ub), false);
        p.receiving = true;
      }
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
        end_run();
        progressed = true;
      }
      if (progressed) bo.busy();
      else if (!live.empty()) bo.idle();
    }
  }

  /// op_end to every rank, then their statistics (bounded wait).
  void end_run() {
    std::vector<header> ends(static_cast<std::size_t>(size_));
    std::vector<MPI_Request> sends, recvs;
    std::vector<std::uint64_t> got(std::size_t(size_) * 6, 0);
    for (int r = 1; r < size_; ++r) {
      header& h = ends[std::size_t(r)];
      h.op = op_end;
      h.ok = end_ok;
      sends.emplace_back();
      MPI_Isend(&h, int(sizeof h), MPI_BYTE, r, tag_ctl, MPI_COMM_WORLD, &sends.back());
      recvs.emplace_back();
      MPI_Irecv(&got[std::size_t(r) * 6], 6, MPI_UINT64_T, r, tag_stats, MPI_COMM_WORLD, &recvs.back());
    }
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(opts.end_timeout_s);
    backoff bo;
    for (;;) {
      int all = 0;
      MPI_Testall(int(recvs.size()), recvs.data(), &all, MPI_STATUSES_IGNORE);
      if (all) break;
      if (std::chrono::steady_clock::now() > deadline) {
        std::fprintf(stderr, "sinew: mpi: a rank did not report within %.0f s of the end of the run; aborting the job\n",
                     opts.end_timeout_s);
        MPI_Abort(MPI_COMM_WORLD, 1);
      }
      bo.idle();
    }
    MPI_Waitall(int(sends.size()), sends.data(), MPI_STATUSES_IGNORE);
    std::vector<rank_stats> out;
    for (int r = 1; r < size_; ++r) {
      const std::uint64_t* g = &got[std::size_t(r) * 6];
      out.push_back({r, g[0], g[1], g[2], g[3], g[4], g[5]});
    }
    std::lock_guard<std::mutex> lk(m);
    last = std::move(out);
    end_done = true;
    cv.notify_all();
  }

  // ------------------------------------------------------------ ranks 1..N-1

  struct job {
    header h;
    detail::dist_entry e;
    layer in, out;
    std::string err;
    std::uint64_t busy = 0;
    MPI_Request send_h = MPI_REQUEST_NULL, send_d = MPI_REQUEST_NULL;
  };

  bool serve() {
    if (rank_ == 0) throw error("mpi::session::serve: rank 0 runs the graph (call run or finish)");
    if (size_ < 2) return true;
    // mpirun turns Ctrl-C into SIGTERM for every rank: only rank 0 decides
    // (it drains and then ends the run), so the serving ranks ignore them.
    struct sigaction ign {}, old_int {}, old_term {};
    ign.sa_handler = SIG_IGN;
    sigaction(SIGINT, &ign, &old_int);
    sigaction(SIGTERM, &ign, &old_term);
    scheduler& sched = default_scheduler();
    std::mutex dm;
    std::vector<std::unique_ptr<job>> finished;
    std::vector<std::unique_ptr<job>> sending;
    std::atomic<unsigned> running{0};
    std::uint64_t stats[6] = {};  // units, row ranges, busy, bytes in, bytes out, cpu
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
    stats[5] = process_cpu_ns() - cpu0;
    MPI_Send(stats, 6, MPI_UINT64_T, 0, tag_stats, MPI_COMM_WORLD);
    sigaction(SIGINT, &old_int, nullptr);
    sigaction(SIGTERM, &old_term, nullptr);
    return ok;
  }

  void receive_job(job& j, std::uint64_t* stats) {
    const std::string path(j.h.path);
    try {
      j.e = detail::find_dist(path);
      if (j.e.rows != (j.h.op == op_rows)) throw error("rank 0 and this rank disagree on what node '" + path + "' is");
      j.in = make_layer(j.h.in, j.e.in_types);
    } catch (const std::exception& ex) {
      j.err = "rank " + std::to_string(rank_) + ": " + path + ": " + ex.what();
      j.in = layer(shape_of(j.h.in));
    }
    // The data message comes whatever happened: receive it (into scratch
    // memory when the layer could not be made).
    blocks b;
    std::vector<char> scratch;
    if (j.err.empty()) {
      b.add_layer(j.in, 0, SIZE_MAX);
    } else {
      int count = 0;
      MPI_Status st;
      MPI_Probe(0, data_tag(j.h.id, tag_ub), MPI_COMM_WORLD, &st);
      MPI_Get_count(&st, MPI_BYTE, &count);
      scratch.resize(std::size_t(count) + 1);
      MPI_Recv(scratch.data(), count, MPI_BYTE, 0, data_tag(j.h.id, tag_ub), MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      return;
    }
    MPI_Request r = post(b, 0, data_tag(j.h.id, tag_ub), false);
    MPI_Wait(&r, MPI_STATUS_IGNORE);
    stats[3] += b.bytes;
    if (!j.h.in_place) {
      try {
        j.out = make_layer(j.h.out, j.e.out_types);
      } catch (const std::exception& ex) {
        j.err = "rank " + std::to_string(rank_) + ": " + path + ": " + ex.what();
      }
    }
  }

  void run_job(job& j, scheduler& sched) {
    const std::uint64_t t0 = now_ns();
    try {
      exec_args a{&j.in, j.h.in_place ? &j.in : &j.out, std::size_t(j.h.grain), j.h.seq, &sched};
      if (j.h.op == op_rows) static_cast<detail::row_executable&>(*j.e.exec).execute_rows(a, j.h.rb, j.h.re);
      else j.e.exec->execute(a);
    } catch (const std::exception& ex) {
      j.err = "rank " + std::to_string(rank_) + ": " + j.e.where + ": " + ex.what();
    } catch (...) {
      j.err = "rank " + std::to_string(rank_) + ": " + j.e.where + ": unknown exception";
    }
    j.busy = now_ns() - t0;
  }

  void send_result(job& j, std::uint64_t* stats) {
    header& h = j.h;
    h.busy_ns = j.busy;
    stats[2] += j.busy;
    if (!j.err.empty()) {
      h.op = op_error;
      copy_str(h.what, sizeof h.what, j.err);
      MPI_Isend(&h, int(sizeof h), MPI_BYTE, 0, tag_res, MPI_COMM_WORLD, &j.send_h);
      return;
    }
    const bool rows = h.op == op_rows;
    ++stats[rows ? 1 : 0];
    h.op = op_result;
    MPI_Isend(&h, int(sizeof h), MPI_BYTE, 0, tag_res, MPI_COMM_WORLD, &j.send_h);
    blocks b;
    b.add_layer(h.in_place ? j.in : j.out, rows ? h.rb : 0, rows ? h.re : SIZE_MAX);
    stats[4] += b.bytes;
    j.send_d = post(b, 0, data_tag(h.id, tag_ub), true);
  }
};

session::session(int& argc, char**& argv, session_options o) : p_(std::make_unique<impl>()) {
  p_->init(&argc, &argv, o);
}
session::session(session_options o) : p_(std::make_unique<impl>()) { p_->init(nullptr, nullptr, o); }
session::~session() { p_->shutdown(); }

int session::rank() const noexcept { return p_->rank_; }
int session::size() const noexcept { return p_->size_; }
bool session::serve() { return p_->serve(); }
std::vector<rank_stats> session::finish(bool ok) { return p_->finish(ok); }
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
  std::lock_guard<std::mutex> lk(p_->m);
  return p_->sent_units;
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
