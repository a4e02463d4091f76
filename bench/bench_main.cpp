// sinew-bench: command line, runner and the human-readable report.
//
//   sinew-bench --list
//   sinew-bench pipeline_overhead map_saxpy
//   sinew-bench --all [--quick] [--reps N] [--warmup N] [--threads N] [--json FILE]
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <memory>
#include <string>
#include <vector>

#include <unistd.h>

#include <oneapi/tbb/global_control.h>

#if defined(SINEW_BENCH_HAVE_OPENMP)
#include <omp.h>
#endif

#include "bench.hpp"
#include "bench_report.hpp"
#include "triad.hpp"

namespace sb = sinew_bench;

namespace {

void usage(FILE* f) {
  std::fprintf(f,
               "usage: sinew-bench [options] [NAME...]\n"
               "  --list        list the benchmarks (name and description)\n"
               "  --all         run every benchmark\n"
               "  NAME...       run these benchmarks (in the order given)\n"
               "  --quick       smaller sizes, 5 repetitions\n"
               "  --smoke       tiny sizes, 1 repetition, no warm-up (implies --quick; checks\n"
               "                that benchmarks run and compute right, numbers mean nothing)\n"
               "  --reps N      timed repetitions per variant (default 15, --quick 5)\n"
               "  --warmup N    untimed warm-up runs per variant (default 1)\n"
               "  --threads N   threads for Sinew, oneTBB and OpenMP (default: all)\n"
               "  --json FILE   also write the results as JSON\n"
               "  --variant S   run only the variants whose name contains S (e.g. to profile\n"
               "                Sinew alone: --variant sinew); no RATIO lines then\n"
               "Each benchmark prints a table, then one line per comparison:\n"
               "  RATIO name=<bench> value=<v> target=<t> better=<lower|higher> kind=<target|informational>\n"
               "(informational: cannot miss by construction or not like for like; never a target met)\n");
}

std::string fmt_target(double t) {
  char b[32];
  std::snprintf(b, sizeof b, "%.3g", t);
  std::string s = b;
  if (s.find_first_of(".e") == std::string::npos) s += ".0";
  return s;
}

std::string fmt_metric(double v) {
  char b[32];
  if (v != 0 && (v >= 1e7 || v < 1e-3)) std::snprintf(b, sizeof b, "%.4g", v);
  else std::snprintf(b, sizeof b, "%.3f", v);
  return b;
}

std::string fmt_time(double s) {
  char b[32];
  if (s >= 1) std::snprintf(b, sizeof b, "%.3f s", s);
  else if (s >= 1e-3) std::snprintf(b, sizeof b, "%.3f ms", s * 1e3);
  else std::snprintf(b, sizeof b, "%.3f us", s * 1e6);
  return b;
}

void print_result(const sb::result& r) {
  std::printf("\n== %s: %s\n", r.name.c_str(), r.description.c_str());
  std::printf("   wall %.1f s; other processes used %.1f CPU-s meanwhile (%.2f cores on average), steal %.1f s; "
              "load average before: %s, after: %s\n",
              r.wall_seconds, r.foreign_cpu_seconds, r.wall_seconds > 0 ? r.foreign_cpu_seconds / r.wall_seconds : 0.0,
              r.steal_seconds, r.load_before.c_str(), r.load_after.c_str());
  if (r.wall_seconds > 0 && r.foreign_cpu_seconds / r.wall_seconds > 0.05)
    std::printf("   WARNING: the machine was not quiet during this benchmark; its numbers are unreliable\n");
  if (!r.params.empty()) {
    std::printf("   params:");
    for (const auto& p : r.params) std::printf(" %s=%s", p.first.c_str(), p.second.c_str());
    std::printf("\n");
  }
  std::size_t w = 7;
  for (const auto& s : r.measurements) w = std::max(w, s.name.size());
  std::printf("   %-*s  %-8s %12s %12s %12s %12s %5s %12s  %s\n", int(w), "variant", "unit", "median", "mid-mean",
              "min", "max", "reps", "time/run", "note");
  for (const auto& s : r.measurements) {
    std::printf("   %-*s  %-8s %12s %12s %12s %12s %5zu %12s  %s%s\n", int(w), s.name.c_str(), s.unit.c_str(),
                fmt_metric(s.stats.median).c_str(), fmt_metric(s.stats.mid_mean).c_str(),
                fmt_metric(s.stats.min).c_str(), fmt_metric(s.stats.max).c_str(), s.stats.n,
                fmt_time(s.time.median).c_str(), s.better == sb::lower ? "(lower is better)" : "(higher is better)",
                s.note.empty() ? "" : ("; " + s.note).c_str());
  }
  for (const auto& n : r.notes) std::printf("   note: %s\n", n.c_str());
  for (const auto& e : r.errors) std::printf("   ERROR: %s\n", e.c_str());
  for (const auto& x : r.ratios) {
    if (!x.info.empty() || !x.informational.empty())
      std::printf("   %s = %s -> %s (%s %s %s%s%s)\n", x.name.c_str(), x.info.c_str(), sb::format_double(x.value, 3).c_str(),
                  x.informational.empty() ? "target" : "informational, not counted; target would be",
                  x.better == sb::lower ? "<=" : ">=", fmt_target(x.target).c_str(),
                  x.informational.empty() ? "" : ": ", x.informational.c_str());
  }
  for (const auto& x : r.ratios)
    std::printf("RATIO name=%s value=%s target=%s better=%s kind=%s\n", x.name.c_str(),
                sb::format_double(x.value, 3).c_str(), fmt_target(x.target).c_str(), sb::to_string(x.better),
                x.informational.empty() ? "target" : "informational");
  std::fflush(stdout);
}

bool parse_int(const char* s, int& out) {
  char* end = nullptr;
  long v = std::strtol(s, &end, 10);
  if (!s[0] || *end || v < 0 || v > 1000000) return false;
  out = int(v);
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  sb::config cfg;
  bool list = false, all = false;
  int reps = -1, warmup = -1, threads = -1;
  std::string json;
  std::vector<std::string> names;
  std::string command_line;
  for (int i = 0; i < argc; ++i) {
    if (i) command_line += ' ';
    command_line += argv[i];
  }

  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto need = [&](const char* what) -> const char* {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "sinew-bench: %s needs %s\n", a.c_str(), what);
        std::exit(2);
      }
      return argv[++i];
    };
    auto need_int = [&](int& out) {
      if (!parse_int(need("a number"), out)) {
        std::fprintf(stderr, "sinew-bench: %s: not a number: %s\n", a.c_str(), argv[i]);
        std::exit(2);
      }
    };
    if (a == "--list") list = true;
    else if (a == "--all") all = true;
    else if (a == "--quick") cfg.quick = true;
    else if (a == "--smoke") cfg.quick = cfg.smoke = true;
    else if (a == "--json") json = need("a file name");
    else if (a == "--reps") need_int(reps);
    else if (a == "--warmup") need_int(warmup);
    else if (a == "--threads") need_int(threads);
    else if (a == "--variant") cfg.variant_filter = need("a name");
    else if (a == "-h" || a == "--help") {
      usage(stdout);
      return 0;
    } else if (!a.empty() && a[0] == '-') {
      std::fprintf(stderr, "sinew-bench: unknown option %s\n", a.c_str());
      usage(stderr);
      return 2;
    } else {
      names.push_back(a);
    }
  }

  auto reg = sb::registry();
  std::sort(reg.begin(), reg.end(), [](const sb::benchmark& x, const sb::benchmark& y) { return x.name < y.name; });

  if (list) {
    std::size_t w = 0;
    for (const auto& b : reg) w = std::max(w, b.name.size());
    for (const auto& b : reg) std::printf("%-*s  %s\n", int(w), b.name.c_str(), b.description.c_str());
    return 0;
  }

  std::vector<sb::benchmark> selected;
  if (all) selected = reg;
  for (const auto& n : names) {
    auto it = std::find_if(reg.begin(), reg.end(), [&](const sb::benchmark& b) { return b.name == n; });
    if (it == reg.end()) {
      std::fprintf(stderr, "sinew-bench: no benchmark named '%s' (see --list)\n", n.c_str());
      return 2;
    }
    if (std::none_of(selected.begin(), selected.end(), [&](const sb::benchmark& b) { return b.name == n; }))
      selected.push_back(*it);
  }
  if (selected.empty()) {
    usage(stderr);
    return 2;
  }

  cfg.reps = reps > 0 ? reps : (cfg.smoke ? 1 : cfg.quick ? 5 : 15);
  cfg.warmup = warmup >= 0 ? warmup : (cfg.smoke ? 0 : 1);
  std::unique_ptr<tbb::global_control> limit;
  if (threads > 0) {
    cfg.threads = unsigned(threads);
    sb::set_thread_count(cfg.threads);
    // Before anything creates Sinew's default scheduler or a TBB arena.
    setenv("SINEW_THREADS", std::to_string(threads).c_str(), 1);
    // N + 1: Sinew's scheduler runs N workers in an arena without a slot for
    // the calling thread; the peers run in sb::peer_arena() of N slots.
    limit = std::make_unique<tbb::global_control>(tbb::global_control::max_allowed_parallelism,
                                                  std::size_t(threads) + 1);
#if defined(SINEW_BENCH_HAVE_OPENMP)
    omp_set_num_threads(threads);
#endif
  }

  sb::machine_info m = sb::describe_machine();
  // The library's own commit; the checkout's only where it differs.
  const bool other_checkout = !m.git_commit.empty() && m.git_commit != m.build_commit;
  std::printf("sinew-bench: sinew %s built from %s%s%s | %s | %u logical CPUs (%u cores) | host %s\n",
              m.sinew_version.c_str(), m.build_commit.c_str(), other_checkout ? ", checkout @ " : "",
              other_checkout ? m.git_commit.c_str() : "", m.cpu_model.c_str(), m.logical_cpus, m.physical_cores,
              m.hostname.c_str());
  std::printf("             %s | %s %s | oneTBB %s | OpenMP %s | threads %u | sinew scheduler %s x%u\n",
              m.compiler.c_str(), m.build_type.empty() ? "build type ?" : m.build_type.c_str(),
              m.build_flags.empty() ? m.build_flags_from_macros.c_str() : m.build_flags.c_str(), m.tbb_version.c_str(),
              m.openmp.empty() ? "no" : m.openmp.c_str(), sb::thread_count(), m.sinew_scheduler.c_str(),
              m.sinew_scheduler_threads);
  {
    std::string cl;
    for (const auto& d : m.opencl_devices) cl += (cl.empty() ? "" : "; ") + d;
    std::printf("             NUMA nodes %u | OpenCL: %s\n", m.numa_nodes, cl.empty() ? "no device" : cl.c_str());
  }
  {
    // Are other processes running right now? (The load average lags by a minute.)
    sb::cpu_snapshot c0 = sb::cpu_now();
    double t0 = sb::now_seconds();
    usleep(250000);
    sb::cpu_snapshot c1 = sb::cpu_now();
    double others = std::max(0.0, (c1.busy - c0.busy) - (c1.self - c0.self)) / (sb::now_seconds() - t0);
    if (others > 0.05)
      std::printf("WARNING: other processes are using %.2f cores right now: the numbers will be noisy\n", others);
  }
  std::printf("             %s, %d warm-up + %d timed runs per variant; date %s\n",
              cfg.smoke ? "smoke sizes" : cfg.quick ? "quick sizes" : "full sizes", cfg.warmup, cfg.reps, m.date.c_str());
  std::fflush(stdout);

  std::vector<sb::result> results;
  bool failed = false;
  for (const auto& b : selected) {
    sb::result r;
    r.name = b.name;
    r.description = b.description;
    sb::context ctx(cfg, r);
    r.load_before = sb::load_average();
    sb::cpu_snapshot c0 = sb::cpu_now();
    double t0 = sb::now_seconds();
    try {
      b.fn(ctx);
    } catch (const std::exception& e) {
      r.errors.push_back(std::string("exception: ") + e.what());
    } catch (...) {
      r.errors.push_back("unknown exception");
    }
    r.wall_seconds = sb::now_seconds() - t0;
    r.load_after = sb::load_average();
    sb::cpu_snapshot c1 = sb::cpu_now();
    r.foreign_cpu_seconds = std::max(0.0, (c1.busy - c0.busy) - (c1.self - c0.self));
    r.steal_seconds = c1.steal - c0.steal;
    print_result(r);
    failed |= !r.errors.empty();
    results.push_back(std::move(r));
  }

  if (!json.empty()) {
    m.stream_triad_gbs = sb::triad_measured_gbs();  // 0 unless stream_triad (or a user of it) ran
    if (!sb::write_json(json, m, cfg, results, command_line)) {
      std::fprintf(stderr, "sinew-bench: cannot write %s\n", json.c_str());
      return 1;
    }
    std::printf("\nwrote %s\n", json.c_str());
  }
  return failed ? 1 : 0;
}
