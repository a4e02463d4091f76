// `sinew run FILE`: validates the graph file, runs it, shows a live status line
// (stderr, when it is a terminal, or plain periodic lines with --progress),
// and prints a summary. SIGINT/SIGTERM stop the source and drain every unit
// already accepted (a second signal cancels); the exit code is then 130.
#include "cli.hpp"

#include <sinew/engine/buffer_pool.hpp>
#include <sinew/engine/dot.hpp>
#include <sinew/engine/graph.hpp>
#include <sinew/json/graph_file.hpp>
#include <sinew/opencl/multi_device_map.hpp>
#include <sinew/engine/trace.hpp>
#ifdef SINEW_HAVE_MPI
#include <sinew/distributed/mpi_session.hpp>
#endif

#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cinttypes>
#include <csignal>
#include <cstdlib>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

namespace sinew_cli {
namespace {

struct run_options {
  std::string file;
  std::vector<std::string> sets;
  bool stats = false;
  std::string trace_file;
  bool progress = false;
  bool verify = false;
  unsigned threads = 0;
  double progress_interval = 1.0;
  std::uint64_t memory_limit_mib = 0;
  bool mpi = false;
};

#ifdef SINEW_HAVE_MPI
/// Under mpirun (docs/distributed.md): the session and how far this rank got.
struct mpi_run {
  sinew::mpi::session* s = nullptr;
  bool agreed = false;   // agree() was called (once per run)
  bool finished = false; // rank 0: finish() was called
  int rank() const { return s ? s->rank() : 0; }
  bool distributed() const { return s && s->size() > 1; }
};
mpi_run g_mpi;
#endif

std::atomic<int> g_signals{0};

extern "C" void on_signal(int) { g_signals.fetch_add(1, std::memory_order_relaxed); }

/// Installs SIGINT/SIGTERM handlers for the lifetime of the object.
class signal_guard {
 public:
  signal_guard() {
    g_signals.store(0);
    struct sigaction sa {};
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, &old_int_);
    sigaction(SIGTERM, &sa, &old_term_);
  }
  ~signal_guard() {
    sigaction(SIGINT, &old_int_, nullptr);
    sigaction(SIGTERM, &old_term_, nullptr);
  }

 private:
  struct sigaction old_int_ {}, old_term_ {};
};

std::string human_ns(std::uint64_t ns) {
  char b[32];
  if (ns < 10'000) std::snprintf(b, sizeof b, "%" PRIu64 " ns", ns);
  else if (ns < 10'000'000) std::snprintf(b, sizeof b, "%.1f us", double(ns) / 1e3);
  else if (ns < 10'000'000'000ULL) std::snprintf(b, sizeof b, "%.1f ms", double(ns) / 1e6);
  else std::snprintf(b, sizeof b, "%.1f s", double(ns) / 1e9);
  return b;
}

/// "name: report" of every source and sink with something to say, or empty.
std::string endpoint_reports(const sinew::run_stats& s) {
  std::string r;
  for (const auto* v : {&s.sources, &s.sinks})
    for (const auto& e : *v)
      if (!e.report.empty()) r += (r.empty() ? "" : "; ") + e.name + ": " + e.report;
  return r;
}

/// The live status line: rates over the last interval, latency, queue depths
/// and, when the unit count is known, a progress bar with ETA.
class status_line {
 public:
  status_line(bool tty, std::optional<std::uint64_t> total) : tty_(tty), total_(total) {}

  void update(const sinew::run_stats& s, double now) {
    const double dt = now - last_t_;
    const double ups = dt > 0 ? double(s.units_out - last_units_) / dt : 0;
    const double rps = dt > 0 ? double(s.records_out - last_records_) / dt : 0;
    const double mbs = dt > 0 ? double(s.bytes_out - last_bytes_) / dt / 1e6 : 0;
    last_t_ = now, last_units_ = s.units_out, last_bytes_ = s.bytes_out, last_records_ = s.records_out;
    std::string line;
    char b[256];
    if (total_ && *total_) {
      const double f = double(s.records_out) / double(*total_);
      const int width = 20, full = int(f * width);
      line += "[" + std::string(std::size_t(std::max(0, std::min(width, full))), '#') +
              std::string(std::size_t(width - std::max(0, std::min(width, full))), ' ') + "] ";
      std::snprintf(b, sizeof b, "%3.0f%% ", 100 * f);
      line += b;
    }
    std::snprintf(b, sizeof b, "%" PRIu64 " units  %.1f units/s  %.1f MB/s", s.units_out, ups, mbs);
    line += b;
    if (s.records_out != s.units_out) {  // record batches
      std::snprintf(b, sizeof b, "  %" PRIu64 " records  %.0f records/s", s.records_out, rps);
      line += b;
    }
    if (s.latency.samples)
      line += "  latency p50 " + human_ns(s.latency.p50_ns) + " p99 " + human_ns(s.latency.p99_ns);
    line += "  queues";
    for (std::size_t i = 0; i < s.stages.size(); ++i) {
      std::snprintf(b, sizeof b, " %zu/%zu", s.stages[i].queued, s.stages[i].capacity);
      line += b;
    }
    if (const std::string r = endpoint_reports(s); !r.empty()) line += "  " + r;
    if (total_ && rps > 0 && s.records_out < *total_) {
      std::snprintf(b, sizeof b, "  ETA %.0f s", double(*total_ - s.records_out) / rps);
      line += b;
    }
    if (tty_) std::fprintf(stderr, "\r%s\033[K", line.c_str());
    else std::fprintf(stderr, "sinew: progress: %s\n", line.c_str());
    std::fflush(stderr);
    shown_ = true;
  }
  void clear() {
    if (tty_ && shown_) std::fprintf(stderr, "\r\033[K");
  }

 private:
  bool tty_;
  std::optional<std::uint64_t> total_;
  double last_t_ = 0;
  std::uint64_t last_units_ = 0, last_bytes_ = 0, last_records_ = 0;
  bool shown_ = false;
};

void print_stats(const sinew::run_stats& s) {
  std::fprintf(stderr, "%-44s %5s %10s %10s %10s %10s %9s %8s\n", "stage", "conc", "units", "busy ms", "wait-in ms",
               "wait-out ms", "hwm/cap", "chunks");
  for (const auto& st : s.stages) {
    char hw[32];
    std::snprintf(hw, sizeof hw, "%zu/%zu", st.high_water, st.capacity);
    std::fprintf(stderr, "%-44s %5u %10" PRIu64 " %10.1f %10.1f %10.1f %9s %8" PRIu64 "\n", st.path.c_str(),
                 st.concurrency, st.units, double(st.busy_ns) / 1e6, double(st.wait_in_ns) / 1e6,
                 double(st.wait_out_ns) / 1e6, hw, st.chunks);
    for (const auto& [name, v] : st.counters) std::fprintf(stderr, "%-44s   %s = %g\n", "", name.c_str(), v);
  }
  // A dag's endpoints, and any run whose units are record batches.
  if (s.sources.size() > 1 || s.sinks.size() > 1 || s.records_in != s.units_in || s.records_out != s.units_out ||
      !endpoint_reports(s).empty()) {
    auto endpoint = [](const char* kind, const sinew::endpoint_stats& e) {
      std::fprintf(stderr, "%s %-*s %16" PRIu64 " units %14" PRIu64 " bytes %14" PRIu64 " records%s%s\n", kind,
                   int(43 - std::strlen(kind)), e.name.c_str(), e.units, e.bytes, e.records,
                   e.report.empty() ? "" : "  ", e.report.c_str());
    };
    for (const auto& e : s.sources) endpoint("source", e);
    for (const auto& e : s.sinks) endpoint("sink", e);
  }
  std::uint64_t tasks = 0, steals = 0;
  for (const auto& w : s.scheduler.workers) tasks += w.tasks, steals += w.steals;
  std::fprintf(stderr,
               "scheduler: %zu workers, %" PRIu64 " tasks, %" PRIu64 " steals (%" PRIu64 " remote), load balance %.2f; "
               "units alive at most %" PRIu64 " (queue capacity %zu)\n",
               s.scheduler.workers.size(), tasks, steals, s.scheduler.steals_remote(), s.scheduler.load_balance(),
               s.units_alive_max, s.capacity_total);
  if (s.latency.samples)
    std::fprintf(stderr, "latency (%" PRIu64 " units timed): p50 %s  p90 %s  p99 %s  max %s\n", s.latency.samples,
                 human_ns(s.latency.p50_ns).c_str(), human_ns(s.latency.p90_ns).c_str(),
                 human_ns(s.latency.p99_ns).c_str(), human_ns(s.latency.max_ns).c_str());
}

int run_file(const run_options& o) {
  // 1. Validate everything before anything runs (json_error -> exit 2).
  sinew::graph_file f = sinew::graph_file::load(o.file, o.sets);
  if (o.verify && !f.replayable()) {
    std::string types;
    for (const auto& t : sinew::graph_file::replayable_source_types()) types += (types.empty() ? "" : ", ") + t;
    throw sinew::json_error(o.file, f.is_dag() ? "/sources" : "/source",
                            "--verify needs sources that can be read twice (" + types + ")");
  }

  const std::size_t limit = o.memory_limit_mib ? std::size_t(o.memory_limit_mib) << 20 : f.memory_limit();
  sinew::buffer_pool::global().set_memory_limit(limit);
  auto sched = f.make_scheduler(o.threads);
  std::unique_ptr<sinew::trace> rec;
  sinew::graph_options go = f.options(sched.get());
  go.scheduler_stats = o.stats;  // the summary's scheduler line
  if (!o.trace_file.empty()) {
    rec = std::make_unique<sinew::trace>();
    go.trace = rec.get();
  }
  sinew::graph g = f.make_graph(go);
#ifdef SINEW_HAVE_MPI
  std::vector<sinew::mpi::rank_stats> rank_stats;
  if (g_mpi.distributed()) {
    g_mpi.agreed = true;
    if (!g_mpi.s->agree(true)) {
      g_mpi.finished = true;  // nothing ran: the other ranks stop on their own
      if (g_mpi.rank() > 0) return exit_failure;
      throw sinew::error("another MPI rank could not set the graph up (see its message)");
    }
    // Ranks other than 0 serve the distributed nodes of the same graph until
    // rank 0's run ends; they exit 1 when that run failed.
    if (g_mpi.rank() > 0) return g_mpi.s->serve() ? exit_ok : exit_failure;
  }
#endif

  std::vector<std::pair<std::string, std::shared_ptr<sinew::io::checksum_result>>> sums;
  sinew::graph::named_sinks sinks = f.make_sinks(sums);
  auto report = std::make_shared<sinew::verify_report>();
  if (o.verify) sinks = sinew::verifying_sinks(f, std::move(sinks), report);

  // 2. Run, watching for signals and showing the status line.
  signal_guard guard;
  const bool tty = ::isatty(2) == 1;
  const bool show = tty || o.progress;
  status_line status(tty, f.unit_count());
  auto t0 = std::chrono::steady_clock::now();
  sinew::run_future run = g.run(f.make_sources(), std::move(sinks));
  int handled = 0;
  double next_status = tty ? 0.25 : o.progress_interval;
  while (!run.wait_for(std::chrono::milliseconds(50))) {
    int sig = g_signals.load(std::memory_order_relaxed);
    if (sig > handled) {
      if (handled == 0) {
        status.clear();
        std::fprintf(stderr, "sinew: interrupted: stopping the source and draining the units already accepted "
                             "(again to abort)\n");
        run.stop();
      } else {
        std::fprintf(stderr, "sinew: interrupted again: cancelling\n");
        run.cancel();
      }
      handled = sig;
    }
    double now = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (show && now >= next_status) {
      status.update(run.stats(), now);
      next_status = now + (tty ? 0.25 : o.progress_interval);
    }
  }
  status.clear();

  int code = exit_ok;
  bool cancelled = false;
  try {
    run.get();
  } catch (const sinew::cancelled&) {
    cancelled = true;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "sinew: error: run failed: %s\n", e.what());
    code = exit_failure;
  }
  const bool interrupted = g_signals.load() > 0;
  sinew::run_stats st = run.stats();
#ifdef SINEW_HAVE_MPI
  if (g_mpi.distributed()) {
    g_mpi.finished = true;
    rank_stats = g_mpi.s->finish(code == exit_ok && !cancelled);
  }
#endif

  // 3. Report.
  // A tree's checksum as "checksum=...", a dag's as "checksum[<sink>]=...".
  if (code == exit_ok && !cancelled)
    for (const auto& [name, sum] : sums)
      std::printf("checksum%s=%016" PRIx64 " units=%" PRIu64 " bytes=%" PRIu64 " records=%" PRIu64 "\n",
                  f.is_dag() ? ("[" + name + "]").c_str() : "", sum->value, sum->units, sum->bytes, sum->records);
  std::fflush(stdout);
  if (o.stats) {
    print_stats(st);
    for (const auto& [ptr, n] : f.device_maps())
      std::fprintf(stderr, "%s: %s\n", ptr.c_str(), sinew::device_stats(n).str().c_str());
#ifdef SINEW_HAVE_MPI
    if (g_mpi.distributed()) {
      auto sent = g_mpi.s->units_sent();
      std::fprintf(stderr, "mpi: %d ranks; farm units sent:", g_mpi.s->size());
      for (std::size_t r = 1; r < sent.size(); ++r) std::fprintf(stderr, " rank %zu: %llu", r, (unsigned long long)sent[r]);
      std::fprintf(stderr, "\n");
      for (const auto& r : rank_stats) std::fprintf(stderr, "mpi: %s\n", r.str().c_str());
    }
#endif
  }
  const double secs = st.seconds > 0 ? st.seconds : 1e-9;
  std::fprintf(stderr,
               "sinew: %s: %s units_in=%" PRIu64 " units_out=%" PRIu64 " bytes_in=%" PRIu64 " bytes_out=%" PRIu64
               " records_in=%" PRIu64 " records_out=%" PRIu64 " time=%.3fs %.1f units/s %.1f MB/s\n",
               f.name().c_str(),
               code != exit_ok ? "failed" : interrupted ? (cancelled ? "cancelled" : "interrupted, drained") : "done",
               st.units_in,
               st.units_out, st.bytes_in, st.bytes_out, st.records_in, st.records_out, st.seconds, double(st.units_out) / secs,
               double(st.bytes_out) / secs / 1e6);
  for (const auto& sg : st.stages)  // a join's dropped units (docs/json.md, "Dags")
    for (const auto& [name, v] : sg.counters)
      if (name == "unmatched" && v > 0)
        std::fprintf(stderr, "sinew: join '%s': %.0f unit(s) without a match dropped\n", sg.path.c_str(), v);
  if (o.verify && code == exit_ok && !cancelled) {
    if (report->ok()) {
      std::fprintf(stderr, "verify: OK: %" PRIu64 " units equal the sequential reference%s\n", report->units,
                   f.tolerance() > 0 ? " (within the file's tolerance)" : "");
    } else {
      std::fprintf(stderr, "verify: MISMATCH in %" PRIu64 " of %" PRIu64 " units; first: %s\n", report->mismatches,
                   report->units, report->first.c_str());
      code = exit_failure;
    }
  }
  if (rec) {
    std::ofstream out(o.trace_file);
    rec->write_chrome_json(out);
    if (!out) {
      std::fprintf(stderr, "sinew: error: cannot write the trace to '%s'\n", o.trace_file.c_str());
      if (code == exit_ok) code = exit_failure;
    } else {
      std::fprintf(stderr, "sinew: trace: %zu events written to %s\n", rec->size(), o.trace_file.c_str());
    }
  }
  if (code != exit_ok) return code;
  if (interrupted || cancelled) return exit_interrupted;
  return exit_ok;
}

/// run_file, inside an MPI session when launched by mpirun (or --mpi).
int run_entry(const run_options& o) {
#ifdef SINEW_HAVE_MPI
  if (!o.mpi && !sinew::mpi::launched_by_mpirun()) return run_file(o);
  sinew::mpi::session s;
  g_mpi = {&s, false, false};
  try {
    int code = run_file(o);
    g_mpi = {};
    return code;
  } catch (const std::exception& e) {
    if (g_mpi.distributed()) {
      // Every rank must learn of the failure, or the others wait for it.
      if (!g_mpi.agreed) s.agree(false);
      else if (g_mpi.rank() == 0 && !g_mpi.finished) s.finish(false);
      else if (g_mpi.rank() > 0) {
        std::fprintf(stderr, "sinew: error: rank %d: %s\n", g_mpi.rank(), e.what());
        s.abort(exit_failure);  // rank 0 may be waiting for this rank's results
      }
      if (g_mpi.rank() > 0) std::fprintf(stderr, "sinew: error: rank %d: %s\n", g_mpi.rank(), e.what());
    }
    g_mpi = {};
    if (s.rank() > 0) return dynamic_cast<const sinew::json_error*>(&e) ? exit_usage : exit_failure;
    throw;
  }
#else
  if (o.mpi)
    throw sinew::json_error(o.file, "", "--mpi: this sinew was built without MPI (install libopenmpi-dev and rebuild)");
  if (std::getenv("OMPI_COMM_WORLD_SIZE"))
    std::fprintf(stderr, "sinew: warning: started by mpirun but built without MPI: every rank runs the whole graph\n");
  return run_file(o);
#endif
}

}  // namespace

void add_run(CLI::App& app, command_table& t) {
  auto o = std::make_shared<run_options>();
  CLI::App* cmd = app.add_subcommand("run", "Validate and run a JSON graph file");
  cmd->add_option("file", o->file, "graph file (docs/json.md)")->required();
  cmd->add_option("--set", o->sets,
                  "override a field: POINTER=VALUE, e.g. --set /source/count=100 or --set graph.farm.workers=4 "
                  "(VALUE is JSON, or else a string)");
  cmd->add_flag("--stats", o->stats, "print per-stage statistics after the run");
  cmd->add_option("--trace", o->trace_file, "write a Chrome trace-event JSON file (Perfetto, chrome://tracing)");
  cmd->add_flag("--progress", o->progress, "print a progress line every second even when stderr is not a terminal");
  cmd->add_option("--progress-interval", o->progress_interval, "seconds between --progress lines")
      ->check(CLI::Range(0.05, 3600.0));
  cmd->add_flag("--verify", o->verify, "compare every unit with the sequential reference (exit 1 on a mismatch)");
  cmd->add_option("--threads", o->threads, "worker threads (default: the file's, else all cores)")
      ->check(CLI::Range(1u, 4096u));
  cmd->add_option("--memory-limit", o->memory_limit_mib,
                  "MiB of unit buffers the run may hold (default: the file's memory_limit_mib, else none); "
                  "past it the run fails naming the stage")
      ->check(CLI::Range(std::uint64_t(1), std::uint64_t(1) << 30));
  cmd->add_flag("--mpi", o->mpi,
                "run over the ranks of an MPI job (implied under mpirun): rank 0 runs the graph, distributed "
                "farms and maps use every rank (docs/distributed.md)");
  cmd->callback([o, &t] { t.action = [o] { return run_entry(*o); }; });
}

}  // namespace sinew_cli
