// sinew-bench: registry, measuring method, helpers.
#include "bench.hpp"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <numeric>
#include <random>

#include <oneapi/tbb/blocked_range.h>
#include <oneapi/tbb/global_control.h>
#include <oneapi/tbb/info.h>
#include <oneapi/tbb/parallel_for.h>
#include <oneapi/tbb/partitioner.h>
#include <sinew/schedulers/scheduler_registry.hpp>

namespace sinew_bench {

std::vector<benchmark>& registry() {
  static std::vector<benchmark> r;  // function-local: safe from static-init order
  return r;
}

void append_round_ratios(const std::vector<double>& a, const std::vector<double>& b, std::vector<double>& out) {
  for (std::size_t i = 0; i < a.size() && i < b.size(); ++i)
    if (b[i] > 0) out.push_back(a[i] / b[i]);
}

double paired_ratio(const series& a, const series& b) {
  std::vector<double> r;
  if (a.better == higher) append_round_ratios(b.seconds, a.seconds, r);
  else append_round_ratios(a.seconds, b.seconds, r);
  return summarize(std::move(r)).median;
}

summary summarize(std::vector<double> v) {
  summary s;
  s.n = v.size();
  if (v.empty()) return s;
  std::sort(v.begin(), v.end());
  std::size_t n = v.size();
  s.min = v.front();
  s.max = v.back();
  s.median = n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
  // Middle third: drop the lowest and highest n/3 samples (at least one kept).
  std::size_t cut = n / 3;
  if (n - 2 * cut == 0) cut = 0;
  double sum = std::accumulate(v.begin() + std::ptrdiff_t(cut), v.end() - std::ptrdiff_t(cut), 0.0);
  s.mid_mean = sum / double(n - 2 * cut);
  return s;
}

void context::param(const std::string& key, const std::string& value) {
  for (auto& p : r_.params)
    if (p.first == key) {
      p.second = value;
      return;
    }
  r_.params.emplace_back(key, value);
}

void context::note(const std::string& text) { r_.notes.push_back(text); }
void context::error(const std::string& text) { r_.errors.push_back(text); }

void context::ratio(const std::string& name, double value, double target, direction better,
                    const std::string& info) {
  add_ratio({name, value, target, better, info, {}});
}

void context::informational_ratio(const std::string& name, double value, double target, direction better,
                                  const std::string& why, const std::string& info) {
  add_ratio({name, value, target, better, info, why.empty() ? "informational" : why});
}

void context::add_ratio(ratio_line x) {
  if (skipped_) {
    note("ratio " + x.name + " not computed: --variant " + cfg_.variant_filter + " skipped some variants");
    return;
  }
  r_.ratios.push_back(std::move(x));
}

const series& context::measure(const variant& v) {
  const bool progress = isatty(2);
  series s;
  s.name = v.name;
  s.unit = v.unit;
  s.note = v.note;
  s.better = v.better;
  if (!cfg_.variant_filter.empty() && v.name.find(cfg_.variant_filter) == std::string::npos) {
    skipped_ = true;
    s.note = "skipped (--variant)";
    r_.measurements.push_back(std::move(s));
    return r_.measurements.back();
  }
  std::string first_error;
  auto one = [&](bool timed) {
    if (v.setup) v.setup();
    double t0 = now_seconds();
    v.run();
    double t1 = now_seconds();
    if (timed) s.seconds.push_back(t1 - t0);
    if (v.check && first_error.empty()) first_error = v.check();
  };
  if (progress) std::fprintf(stderr, "  [%s] %s: warm-up", r_.name.c_str(), v.name.c_str());
  for (int i = 0; i < cfg_.warmup; ++i) one(false);
  for (int i = 0; i < cfg_.reps; ++i) {
    if (progress) std::fprintf(stderr, "\r  [%s] %s: rep %d/%d   ", r_.name.c_str(), v.name.c_str(), i + 1, cfg_.reps);
    one(true);
  }
  if (progress) std::fprintf(stderr, "\r\033[K");
  for (double t : s.seconds) s.samples.push_back(v.to_metric ? v.to_metric(t) : t);
  s.stats = summarize(s.samples);
  s.time = summarize(s.seconds);
  if (!first_error.empty()) error(v.name + ": " + first_error);
  r_.measurements.push_back(std::move(s));
  return r_.measurements.back();
}

std::vector<const series*> context::measure_interleaved(const std::vector<variant>& vs, double min_seconds) {
  const bool progress = isatty(2);
  std::vector<series> ss(vs.size());
  std::vector<bool> on(vs.size());
  std::vector<std::string> first_error(vs.size());
  for (std::size_t i = 0; i < vs.size(); ++i) {
    ss[i].name = vs[i].name;
    ss[i].unit = vs[i].unit;
    ss[i].note = vs[i].note;
    ss[i].better = vs[i].better;
    on[i] = cfg_.variant_filter.empty() || vs[i].name.find(cfg_.variant_filter) != std::string::npos;
    if (!on[i]) {
      skipped_ = true;
      ss[i].note = "skipped (--variant)";
    }
  }
  double slowest_warmup = 0;
  auto one = [&](std::size_t i, bool timed) {
    const variant& v = vs[i];
    if (v.setup) v.setup();
    double t0 = now_seconds();
    v.run();
    double t1 = now_seconds();
    if (timed) ss[i].seconds.push_back(t1 - t0);
    else slowest_warmup = std::max(slowest_warmup, t1 - t0);
    if (v.check && first_error[i].empty()) first_error[i] = v.check();
  };
  for (std::size_t i = 0; i < vs.size(); ++i)
    if (on[i]) {
      if (progress) std::fprintf(stderr, "\r\033[K  [%s] %s: warm-up", r_.name.c_str(), vs[i].name.c_str());
      for (int w = 0; w < cfg_.warmup; ++w) one(i, false);
    }
  int rounds = cfg_.reps;
  if (min_seconds > 0 && slowest_warmup > 0)
    rounds = int(std::clamp(std::ceil(min_seconds / slowest_warmup), double(cfg_.reps), 4.0 * cfg_.reps));
  // Each round in a new order (shuffled, fixed seed: runs are repeatable).
  // A rotation would keep the cyclic order: every variant would always
  // follow the same one and inherit its after-effects (a GPU left idle by
  // the previous variant's host-only unit, caches it filled).
  std::vector<std::size_t> order(vs.size());
  std::iota(order.begin(), order.end(), std::size_t(0));
  std::mt19937 rng(std::uint32_t(std::hash<std::string>{}(r_.name)));
  for (int r = 0; r < rounds; ++r) {
    if (progress) std::fprintf(stderr, "\r\033[K  [%s] %zu variants: round %d/%d", r_.name.c_str(), vs.size(), r + 1, rounds);
    std::shuffle(order.begin(), order.end(), rng);
    for (std::size_t i : order)
      if (on[i]) one(i, true);
  }
  if (progress) std::fprintf(stderr, "\r\033[K");
  std::vector<const series*> out;
  for (std::size_t i = 0; i < vs.size(); ++i) {
    series& s = ss[i];
    for (double t : s.seconds) s.samples.push_back(vs[i].to_metric ? vs[i].to_metric(t) : t);
    s.stats = summarize(s.samples);
    s.time = summarize(s.seconds);
    if (!first_error[i].empty()) error(vs[i].name + ": " + first_error[i]);
    r_.measurements.push_back(std::move(s));
    out.push_back(&r_.measurements.back());
  }
  return out;
}

double now_seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

double burn_rounds_per_us() {
  static const double v = [] {
    std::uint32_t iters = 1 << 14;
    for (;;) {  // grow until one try takes >= 5 ms
      double t0 = now_seconds();
      do_not_optimize(burn(1.5f, iters));
      if (now_seconds() - t0 >= 5e-3 || iters >= (1u << 30)) break;
      iters *= 2;
    }
    double best = 1e30;
    for (int k = 0; k < 7; ++k) {
      double t0 = now_seconds();
      do_not_optimize(burn(1.5f, iters));
      best = std::min(best, now_seconds() - t0);
    }
    return double(iters) / (best * 1e6);
  }();
  return v;
}

namespace {
unsigned g_threads = 0;
}
void set_thread_count(unsigned n) { g_threads = n; }
unsigned thread_count() { return g_threads ? g_threads : unsigned(tbb::info::default_concurrency()); }

cpu_snapshot cpu_now() {
  cpu_snapshot c;
  const double tick = double(sysconf(_SC_CLK_TCK));
  if (FILE* f = std::fopen("/proc/stat", "r")) {
    unsigned long long v[8] = {};
    if (std::fscanf(f, "cpu %llu %llu %llu %llu %llu %llu %llu %llu", &v[0], &v[1], &v[2], &v[3], &v[4], &v[5], &v[6],
                    &v[7]) == 8) {
      c.busy = double(v[0] + v[1] + v[2] + v[5] + v[6]) / tick;  // user nice system irq softirq
      c.steal = double(v[7]) / tick;
    }
    std::fclose(f);
  }
  if (FILE* f = std::fopen("/proc/self/stat", "r")) {
    char buf[1024];
    std::size_t n = std::fread(buf, 1, sizeof buf - 1, f);
    buf[n] = 0;
    std::fclose(f);
    // Fields after the ")" that ends the command name: state is field 3,
    // utime and stime are fields 14 and 15, then cutime and cstime: the
    // children a benchmark started and waited for (its MQTT brokers) are its own.
    if (const char* p = std::strrchr(buf, ')')) {
      unsigned long long ut = 0, st = 0;
      long long cut = 0, cst = 0;
      if (std::sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu %lld %lld", &ut, &st, &cut, &cst) == 4)
        c.self = double(ut + st + std::max(0LL, cut) + std::max(0LL, cst)) / tick;
    }
  }
  return c;
}

tbb::task_arena& peer_arena() {
  static tbb::task_arena* a = new tbb::task_arena(int(thread_count()));  // immortal, like Sinew's scheduler
  return *a;
}

policy_slot::policy_slot() = default;
policy_slot::~policy_slot() = default;

void policy_slot::use(const std::string& policy) {
  if (s_ && policy_ == policy) return;
  s_.reset();  // one at a time: the old workers end before the new ones start
  s_ = sinew::make_scheduler(policy, {.threads = thread_count()});
  policy_ = policy;
}

void policy_slot::none() { s_.reset(); }

sinew::scheduler& policy_slot::get() const { return *s_; }

std::string load_average() {
  double l[3] = {0, 0, 0};
  if (getloadavg(l, 3) != 3) return "?";
  return format_double(l[0], 2) + " " + format_double(l[1], 2) + " " + format_double(l[2], 2);
}

void parallel_first_touch(std::vector<float>& v, float (*fn)(std::size_t)) {
  // std::vector<float>(n) has already zero-filled (touched) every page on the
  // calling thread. Hand the page-aligned interior back to the OS: anonymous
  // memory then reads as zero again and each page is placed by the first
  // thread to write it, i.e. by the parallel loop below.
  const std::size_t page = std::size_t(sysconf(_SC_PAGESIZE));
  auto b = reinterpret_cast<std::uintptr_t>(v.data());
  auto e = b + v.size() * sizeof(float);
  std::uintptr_t pb = (b + page - 1) / page * page, pe = e / page * page;
  if (pe > pb) (void)madvise(reinterpret_cast<void*>(pb), pe - pb, MADV_DONTNEED);
  float* p = v.data();
  peer_arena().execute([&] {
    tbb::parallel_for(
        tbb::blocked_range<std::size_t>(0, v.size(), 1 << 16),
        [&](const tbb::blocked_range<std::size_t>& r) {
          for (std::size_t i = r.begin(); i < r.end(); ++i) p[i] = fn(i);
        },
        tbb::static_partitioner());
  });
}

std::string format_double(double v, int decimals) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
  return buf;
}

}  // namespace sinew_bench
