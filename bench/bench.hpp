#pragma once
// sinew-bench: a small registry of named benchmarks with a common measuring
// method (warm-up, R repetitions, median / mean of the middle third / min /
// max), a human-readable table, one `RATIO ...` line per comparison, and an
// optional JSON report (see bench_main.cpp and README.md).
//
// Adding a benchmark: one .cpp file in bench/ (the CMake glob picks it up):
//
//   #include "bench.hpp"
//   namespace {
//   void run(sinew_bench::context& ctx) {
//     std::size_t n = ctx.quick() ? 1'000'000 : 10'000'000;
//     ctx.param("elements", n);
//     auto& a = ctx.measure({.name = "sinew", .unit = "GB/s", .better = sinew_bench::higher,
//                            .setup = nullptr,  // (GCC warns about skipped members)
//                            .run = [&] { ... },
//                            .to_metric = [&](double s) { return 12.0 * n / s / 1e9; }});
//     auto& b = ctx.measure({...});
//     ctx.ratio("my_bench", a.stats.median / b.stats.median, 0.95, sinew_bench::higher);
//   }
//   const sinew_bench::registrar reg("my_bench", "one-line description", run);
//   }  // namespace
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <oneapi/tbb/task_arena.h>

namespace sinew {
class scheduler;
}

namespace sinew_bench {

enum direction { lower, higher };
inline const char* to_string(direction d) { return d == lower ? "lower" : "higher"; }

/// Command-line settings shared by every benchmark.
struct config {
  bool quick = false;
  /// --smoke: tiny sizes (implies quick), only to check that every benchmark
  /// still runs and computes right (the `bench` ctest); numbers mean nothing.
  bool smoke = false;
  int reps = 15;     ///< timed repetitions per variant
  int warmup = 1;    ///< untimed runs before them
  unsigned threads = 0;  ///< 0 = all hardware threads
  /// --variant: measure only variants whose name contains this (for
  /// profiling one implementation); ratios are then not reported.
  std::string variant_filter;
};

/// Robust summary of a set of samples.
struct summary {
  double median = 0;
  double mid_mean = 0;  ///< mean of the middle third (sorted samples)
  double min = 0;
  double max = 0;
  std::size_t n = 0;
};
summary summarize(std::vector<double> v);

/// Round-by-round ratios a[i] / b[i] of two series of one
/// measure_interleaved call, appended to `out` (rounds where b took no time
/// are skipped).
///
/// \code
/// std::vector<double> r;
/// sinew_bench::append_round_ratios(s[0]->seconds, s[1]->seconds, r);
/// double median = sinew_bench::summarize(r).median;
/// \endcode
void append_round_ratios(const std::vector<double>& a, const std::vector<double>& b, std::vector<double>& out);

struct series;
/// The median of the round-by-round ratios of a's metric to b's, two series
/// of one measure_interleaved call: b's time / a's for a metric where higher
/// is better (a rate), a's time / b's otherwise.
///
/// \code
/// auto s = ctx.measure_interleaved({mine, peer});
/// ctx.ratio("mine_vs_peer", sinew_bench::paired_ratio(*s[0], *s[1]), 1.0, sinew_bench::higher);
/// \endcode
double paired_ratio(const series& a, const series& b);

/// How one variant (one implementation of the benchmark's task) is measured.
struct variant {
  std::string name;                 ///< e.g. "sinew", "tbb::parallel_for"
  std::string unit;                 ///< of the reported metric, e.g. "ns/unit", "GB/s"
  direction better = lower;         ///< which way the metric improves
  std::function<void()> setup;      ///< optional, before every run, untimed
  std::function<void()> run;        ///< the timed work
  std::function<double(double)> to_metric;  ///< seconds of one run -> metric
  /// Optional, after every run, untimed: returns "" when the result is
  /// right, otherwise what is wrong (recorded as an error of the benchmark).
  std::function<std::string()> check;
  std::string note;                 ///< shown in the table, e.g. "hardware bound"
};

/// Result of measuring one variant.
struct series {
  std::string name, unit, note;
  direction better = lower;
  std::vector<double> seconds;  ///< one per timed repetition
  std::vector<double> samples;  ///< the same, converted to the metric
  summary stats;                ///< of `samples`
  summary time;                 ///< of `seconds`
};

struct ratio_line {
  std::string name;
  double value = 0;
  double target = 0;
  direction better = lower;
  std::string info;  ///< how the value was computed
  /// Why the line is informational (it cannot miss by construction, or its
  /// sides are not like for like); empty for a target, which reports count.
  std::string informational;
  bool met() const { return better == lower ? value <= target : value >= target; }
};

/// Everything one benchmark reported.
struct result {
  std::string name, description;
  std::vector<std::pair<std::string, std::string>> params;
  std::deque<series> measurements;  // deque: references stay valid
  std::vector<ratio_line> ratios;
  std::vector<std::string> notes;
  std::vector<std::string> errors;
  double wall_seconds = 0;
  std::string load_before, load_after;  ///< load_average() around the benchmark
  double foreign_cpu_seconds = 0;  ///< CPU time other processes used meanwhile
  double steal_seconds = 0;        ///< CPU time the hypervisor stole meanwhile
};

/// Handed to a benchmark: settings in, measurements out.
class context {
 public:
  context(const config& c, result& r) : cfg_(c), r_(r) {}
  const config& cfg() const noexcept { return cfg_; }
  bool quick() const noexcept { return cfg_.quick; }
  /// --smoke (then quick() is true as well): use the smallest sizes.
  bool smoke() const noexcept { return cfg_.smoke; }
  int reps() const noexcept { return cfg_.reps; }

  /// A parameter of this run (sizes, capacities, thread counts).
  void param(const std::string& key, const std::string& value);
  void param(const std::string& key, const char* value) { param(key, std::string(value)); }
  template <class T>
  void param(const std::string& key, T value) { param(key, std::to_string(value)); }

  /// Warm-up run(s), then `reps()` timed runs of `v.run`. The returned
  /// reference stays valid for the whole benchmark. A variant excluded by
  /// --variant is not run: its series has no samples (stats.n == 0).
  const series& measure(const variant& v);
  /// Several variants measured together: warm-up run(s) of each, then
  /// `reps()` rounds that run every variant once, each round in a shuffled
  /// order (fixed seed), so that no variant always follows the same one. Slow drifts of the machine (other load, clock
  /// frequency) then hit all variants alike, and `seconds[i]` of the
  /// returned series are paired: all from round i (compare them round by
  /// round). Variants excluded by --variant are not run (empty series).
  /// With `min_seconds` > 0, short variants get more rounds: as many as
  /// make the slowest warm-up run times the rounds reach `min_seconds`,
  /// between `reps()` and 4 x `reps()` (a millisecond variant's paired
  /// ratios swing widely round to round; more rounds steady their median).
  ///
  /// \code
  /// auto s = ctx.measure_interleaved({va, vb});
  /// std::vector<double> r;
  /// sinew_bench::append_round_ratios(s[0]->seconds, s[1]->seconds, r);
  /// ctx.ratio("a_over_b", sinew_bench::summarize(r).median, 1.0, sinew_bench::lower);
  /// \endcode
  std::vector<const series*> measure_interleaved(const std::vector<variant>& vs, double min_seconds = 0);
  /// One comparison; printed as a RATIO line after the table (dropped when
  /// --variant excluded some variants).
  void ratio(const std::string& name, double value, double target, direction better,
             const std::string& info = "");
  /// A comparison reported for information only (`kind=informational` on its
  /// RATIO line, `"met": null` in the JSON), never counted as a target met:
  /// one that cannot miss by construction (both sides timed the same
  /// configuration, 0/0) or whose sides are not like for like. `why` says which.
  ///
  /// \code
  /// if (same_split) ctx.informational_ratio("x_vs_optimum", r, 0.95, sb::higher, "both chose host 100%", info);
  /// else ctx.ratio("x_vs_optimum", r, 0.95, sb::higher, info);
  /// \endcode
  void informational_ratio(const std::string& name, double value, double target, direction better,
                           const std::string& why, const std::string& info = "");
  /// Free-form line printed under the table (and stored in the JSON).
  void note(const std::string& text);
  /// A wrong result or failed precondition; the run exits non-zero.
  void error(const std::string& text);

 private:
  void add_ratio(ratio_line x);

  const config& cfg_;
  result& r_;
  bool skipped_ = false;
};

using bench_fn = void (*)(context&);

struct benchmark {
  std::string name, description;
  bench_fn fn;
};

/// Benchmarks in registration order (sorted by name when listed).
std::vector<benchmark>& registry();

/// `static const registrar r("name", "description", fn);` in a benchmark file.
struct registrar {
  registrar(const char* name, const char* description, bench_fn fn) {
    registry().push_back({name, description, fn});
  }
};

// ---------------------------------------------------------------- helpers

/// Keeps `v` (and what it points to) alive as far as the optimiser knows.
template <class T>
inline void do_not_optimize(const T& v) {
  asm volatile("" : : "r,m"(v) : "memory");
}
inline void clobber_memory() { asm volatile("" : : : "memory"); }

/// Seconds since an arbitrary epoch (steady clock).
double now_seconds();

/// Busy work of a known length for grain benchmarks: `iters` rounds of a
/// dependent multiply-add on a register (cannot be vectorised or folded:
/// each round needs the previous one; no memory, so no store-forwarding or
/// memory-renaming effects, which make a volatile stack counter's cost per
/// round vary from run to run). The empty
/// volatile asm makes the call a side effect, so the compiler cannot move it
/// out of a timed region.
[[gnu::noinline]] inline float burn(float x, std::uint32_t iters) {
  asm volatile("" : "+x"(x) : : "memory");
  for (std::uint32_t k = 0; k < iters; ++k) x = x * 0.99990f + 0.00011f;
  return x;
}

/// burn() rounds per microsecond on this core (best of 7 tries of >= 5 ms),
/// measured once per process.
double burn_rounds_per_us();

/// burn() rounds for `us` microseconds of work (at least 1).
inline std::uint32_t burn_rounds(double us) {
  const double r = us * burn_rounds_per_us() + 0.5;
  return r < 1.0 ? 1u : r > 4.0e9 ? 4000000000u : std::uint32_t(r);
}

/// Threads the peers (TBB, OpenMP) and Sinew's default scheduler use.
unsigned thread_count();

/// Run oneTBB peer code inside this arena (`peer_arena().execute([&] {...})`):
/// it has `thread_count()` slots, so `--threads N` limits the peers to N
/// threads the same way SINEW_THREADS limits Sinew's scheduler.
tbb::task_arena& peer_arena();
void set_thread_count(unsigned n);  // --threads (0: all hardware threads)

/// One Sinew scheduler of `thread_count()` workers alive at a time, for
/// variants of several policies measured in interleaved rounds: a Sinew
/// variant's setup calls `use(policy)` (made anew when another policy, or
/// none, was alive), a peer's calls `none()`, so that no idle worker or
/// arena of another scheduler runs beside the measured one.
///
/// \code
/// sinew_bench::policy_slot slot;
/// variant v{.name = "sinew steal", .setup = [&] { slot.use("steal"); }, .run = [&] { work(slot.get()); }};
/// variant p{.name = "peer", .setup = [&] { slot.none(); }, .run = peer_work};
/// \endcode
class policy_slot {
 public:
  policy_slot();
  ~policy_slot();
  void use(const std::string& policy);
  void none();
  sinew::scheduler& get() const;  // precondition: use() was called since none()

 private:
  std::string policy_;
  std::unique_ptr<sinew::scheduler> s_;
};

/// "1min 5min 15min" from getloadavg(): other work running on the machine
/// skews every number (recorded per benchmark, warned about when high).
std::string load_average();

/// CPU seconds used so far by the whole machine (/proc/stat) and by this
/// process; the difference over a benchmark is what other processes took.
struct cpu_snapshot {
  double busy = 0, steal = 0, self = 0;
};
cpu_snapshot cpu_now();

/// Fills `v` in parallel with fn(i) (tbb::parallel_for, static partition),
/// after giving the vector's pages back to the OS, so that its pages are
/// first touched by the threads that will later work on them (matters on
/// NUMA machines; a no-op difference on one socket).
void parallel_first_touch(std::vector<float>& v, float (*fn)(std::size_t));

std::string format_double(double v, int decimals);

}  // namespace sinew_bench
