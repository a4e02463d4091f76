// sinew-bench: machine description and the JSON report.
#include "bench_report.hpp"

#include "source_tree.hpp"

#include <sys/utsname.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <ctime>
#include <fstream>
#include <set>
#include <sstream>
#include <thread>

#include <filesystem>

#include <oneapi/tbb/version.h>
#include <sinew/opencl/platform.hpp>
#include <sinew/schedulers/scheduler.hpp>
#include <sinew/engine/version.hpp>

#if defined(SINEW_BENCH_HAVE_OPENMP)
#include <omp.h>
#endif

namespace sinew_bench {

namespace {

std::string trim(std::string s) {
  auto b = s.find_first_not_of(" \t\r\n");
  auto e = s.find_last_not_of(" \t\r\n");
  return b == std::string::npos ? std::string() : s.substr(b, e - b + 1);
}

std::string read_file(const std::string& path) {
  std::ifstream f(path);
  if (!f) return {};
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

std::string run_command(const std::string& cmd) {
  std::string out;
  if (FILE* p = popen(cmd.c_str(), "r")) {
    char buf[256];
    while (std::fgets(buf, sizeof buf, p)) out += buf;
    pclose(p);
  }
  return trim(out);
}

std::string dir_of(const std::string& path) {
  auto k = path.find_last_of('/');
  return k == std::string::npos ? std::string(".") : path.substr(0, k);
}

std::string self_exe() {
  char buf[4096];
  ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
  return n > 0 ? std::string(buf, std::size_t(n)) : std::string();
}

/// Flags the compiler itself reveals (always available).
std::string flags_from_macros() {
  std::string f;
#if defined(__OPTIMIZE_SIZE__)
  f += " -Os";
#elif defined(__OPTIMIZE__)
  f += " -O(>=1)";
#else
  f += " -O0";
#endif
#if defined(NDEBUG)
  f += " -DNDEBUG";
#endif
#if defined(__AVX512F__)
  f += " avx512f";
#endif
#if defined(__AVX2__)
  f += " avx2";
#endif
#if defined(__FMA__)
  f += " fma";
#endif
#if defined(__AVX__) && !defined(__AVX2__)
  f += " avx";
#endif
#if defined(__SSE4_2__) && !defined(__AVX__)
  f += " sse4.2";
#endif
#if defined(_OPENMP)
  f += " -fopenmp";
#endif
#if defined(__SANITIZE_ADDRESS__)
  f += " -fsanitize=address";
#endif
#if defined(__SANITIZE_THREAD__)
  f += " -fsanitize=thread";
#endif
  return trim(f);
}

/// The compile command CMake recorded for this file, without include paths,
/// output/input names and the compiler path.
std::string flags_from_compile_commands(const std::string& build_dir) {
  std::string db = read_file(build_dir + "/compile_commands.json");
  if (db.empty()) return {};
  std::string key = "\"file\": \"" + sinew_support::source_path("bench/bench_report.cpp") + "\"";
  auto at = db.find(key);
  if (at == std::string::npos) return {};
  auto c = db.rfind("\"command\": \"", at);
  if (c == std::string::npos) return {};
  c += 12;
  std::string cmd;
  for (std::size_t i = c; i < db.size() && db[i] != '"'; ++i) {
    if (db[i] == '\\' && i + 1 < db.size()) ++i;
    cmd += db[i];
  }
  std::istringstream words(cmd);
  std::string w, out;
  bool skip_next = false, first = true;
  while (words >> w) {
    if (first) {  // the compiler
      first = false;
      continue;
    }
    if (skip_next) {
      skip_next = false;
      continue;
    }
    if (w == "-o" || w == "-c" || w == "-isystem" || w == "-I" || w == "-MF" || w == "-MT") {
      skip_next = true;
      continue;
    }
    if (w.rfind("-I", 0) == 0 || w.rfind("-isystem", 0) == 0) continue;
    out += (out.empty() ? "" : " ") + w;
  }
  return out;
}

std::string cmake_cache_value(const std::string& build_dir, const std::string& key) {
  std::istringstream in(read_file(build_dir + "/CMakeCache.txt"));
  std::string line;
  while (std::getline(in, line))
    if (line.rfind(key + ":", 0) == 0) {
      auto eq = line.find('=');
      if (eq != std::string::npos) return line.substr(eq + 1);
    }
  return {};
}

}  // namespace

machine_info describe_machine() {
  machine_info m;
  {
    std::istringstream in(read_file("/proc/cpuinfo"));
    std::string line;
    std::set<std::string> cores;  // (physical id, core id)
    std::string phys;
    while (std::getline(in, line)) {
      auto colon = line.find(':');
      if (colon == std::string::npos) continue;
      std::string k = trim(line.substr(0, colon)), v = trim(line.substr(colon + 1));
      if (k == "model name" && m.cpu_model.empty()) m.cpu_model = v;
      else if (k == "processor") ++m.logical_cpus;
      else if (k == "physical id") phys = v;
      else if (k == "core id") cores.insert(phys + ":" + v);
      else if (k == "flags" && m.cpu_flags.empty()) {
        for (const char* f : {"avx512f", "avx2", "fma", "avx", "sse4_2"})
          if ((" " + v + " ").find(std::string(" ") + f + " ") != std::string::npos)
            m.cpu_flags += (m.cpu_flags.empty() ? "" : " ") + std::string(f);
      }
    }
    m.physical_cores = unsigned(cores.size());
  }
  m.hardware_concurrency = std::thread::hardware_concurrency();
  {
    char h[256] = {};
    if (gethostname(h, sizeof h - 1) == 0) m.hostname = h;
  }
  {
    struct utsname u;
    if (uname(&u) == 0) m.kernel = std::string(u.sysname) + " " + u.release + " " + u.machine;
  }
  m.compiler = __VERSION__;
#if defined(__clang__)
  m.compiler = "clang " + m.compiler;
#elif defined(__GNUC__)
  m.compiler = "gcc " + m.compiler;
#endif
  std::string build_dir = dir_of(dir_of(self_exe()));  // build/bench/sinew-bench -> build
  m.build_type = cmake_cache_value(build_dir, "CMAKE_BUILD_TYPE");
  m.build_flags = flags_from_compile_commands(build_dir);
  m.build_flags_from_macros = flags_from_macros();
  {
    std::time_t t = std::time(nullptr);
    char buf[64];
    std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&t));
    m.date = buf;
  }
  m.sinew_version = sinew::version_string();
  m.build_commit = sinew::build_commit();
  m.tbb_version = TBB_runtime_version();
#if defined(_OPENMP)
  m.openmp = std::to_string(_OPENMP);
#endif
  const std::string src = sinew_support::source_dir();
  m.git_commit = run_command("git -C '" + src + "' rev-parse --short HEAD 2>/dev/null");
  if (!m.git_commit.empty() &&
      !run_command("git -C '" + src + "' status --porcelain --untracked-files=no 2>/dev/null").empty())
    m.git_commit += "-dirty";
  {
    std::error_code ec;
    for (const auto& e : std::filesystem::directory_iterator("/sys/devices/system/node", ec)) {
      std::string n = e.path().filename().string();
      if (n.size() > 4 && n.rfind("node", 0) == 0 && n.find_first_not_of("0123456789", 4) == std::string::npos)
        ++m.numa_nodes;
    }
    if (m.numa_nodes == 0) m.numa_nodes = 1;  // no sysfs node directory: not a NUMA kernel
  }
  try {
    for (const auto& d : sinew::opencl::list_devices())
      m.opencl_devices.push_back(d.id + ": " + d.name + " (" + sinew::opencl::to_string(d.kind) + ", " +
                                 std::to_string(d.compute_units) + " CUs, " + d.platform + ")");
  } catch (const std::exception& e) {
    m.opencl_devices.push_back(std::string("error listing OpenCL devices: ") + e.what());
  }
  m.sinew_scheduler = sinew::default_scheduler().name();
  m.sinew_scheduler_threads = sinew::default_scheduler().concurrency();
  return m;
}

// ---------------------------------------------------------------- JSON

namespace {

std::string q(const std::string& s) {
  std::string o = "\"";
  for (unsigned char c : s) {
    switch (c) {
      case '"': o += "\\\""; break;
      case '\\': o += "\\\\"; break;
      case '\n': o += "\\n"; break;
      case '\t': o += "\\t"; break;
      case '\r': o += "\\r"; break;
      default:
        if (c < 0x20) {
          char b[8];
          std::snprintf(b, sizeof b, "\\u%04x", c);
          o += b;
        } else {
          o += char(c);
        }
    }
  }
  return o + "\"";
}

std::string num(double v) {
  if (!std::isfinite(v)) return "null";
  char b[64];
  std::snprintf(b, sizeof b, "%.9g", v);
  return b;
}

std::string summary_json(const summary& s) {
  return "{\"median\": " + num(s.median) + ", \"mid_mean\": " + num(s.mid_mean) + ", \"min\": " + num(s.min) +
         ", \"max\": " + num(s.max) + ", \"n\": " + std::to_string(s.n) + "}";
}

std::string array_json(const std::vector<double>& v) {
  std::string o = "[";
  for (std::size_t i = 0; i < v.size(); ++i) o += (i ? ", " : "") + num(v[i]);
  return o + "]";
}

}  // namespace

bool write_json(const std::string& path, const machine_info& m, const config& c,
                const std::vector<result>& results, const std::string& command_line) {
  std::ostringstream o;
  o << "{\n  \"schema\": \"sinew-bench/1\",\n";
  o << "  \"command_line\": " << q(command_line) << ",\n";
  o << "  \"machine\": {\n"
    << "    \"cpu_model\": " << q(m.cpu_model) << ",\n"
    << "    \"cpu_flags\": " << q(m.cpu_flags) << ",\n"
    << "    \"logical_cpus\": " << m.logical_cpus << ",\n"
    << "    \"physical_cores\": " << m.physical_cores << ",\n"
    << "    \"hardware_concurrency\": " << m.hardware_concurrency << ",\n"
    << "    \"hostname\": " << q(m.hostname) << ",\n"
    << "    \"kernel\": " << q(m.kernel) << ",\n"
    << "    \"compiler\": " << q(m.compiler) << ",\n"
    << "    \"build_type\": " << q(m.build_type) << ",\n"
    << "    \"build_flags\": " << q(m.build_flags) << ",\n"
    << "    \"build_flags_from_macros\": " << q(m.build_flags_from_macros) << ",\n"
    << "    \"date\": " << q(m.date) << ",\n"
    << "    \"sinew_version\": " << q(m.sinew_version) << ",\n"
    << "    \"git_commit\": " << q(m.git_commit) << ",\n"
    << "    \"build_commit\": " << q(m.build_commit) << ",\n"
    << "    \"tbb_version\": " << q(m.tbb_version) << ",\n"
    << "    \"openmp\": " << q(m.openmp) << ",\n"
    << "    \"sinew_scheduler\": " << q(m.sinew_scheduler) << ",\n"
    << "    \"sinew_scheduler_threads\": " << m.sinew_scheduler_threads << ",\n"
    << "    \"numa_nodes\": " << m.numa_nodes << ",\n"
    << "    \"opencl_devices\": [";
  for (std::size_t k = 0; k < m.opencl_devices.size(); ++k) o << (k ? ", " : "") << q(m.opencl_devices[k]);
  o << "],\n"
    << "    \"stream_triad_GBps\": " << (m.stream_triad_gbs > 0 ? num(m.stream_triad_gbs) : "null") << "\n  },\n";
  o << "  \"config\": {\"quick\": " << (c.quick ? "true" : "false") << ", \"smoke\": " << (c.smoke ? "true" : "false")
    << ", \"reps\": " << c.reps
    << ", \"warmup\": " << c.warmup << ", \"threads\": " << thread_count()
    << ", \"variant_filter\": " << q(c.variant_filter) << "},\n";
  o << "  \"benchmarks\": [";
  for (std::size_t i = 0; i < results.size(); ++i) {
    const result& r = results[i];
    o << (i ? "," : "") << "\n    {\n      \"name\": " << q(r.name) << ",\n      \"description\": " << q(r.description)
      << ",\n      \"wall_seconds\": " << num(r.wall_seconds) << ",\n      \"load_average_before\": " << q(r.load_before)
      << ",\n      \"load_average_after\": " << q(r.load_after)
      << ",\n      \"foreign_cpu_seconds\": " << num(r.foreign_cpu_seconds)
      << ",\n      \"steal_seconds\": " << num(r.steal_seconds) << ",\n      \"params\": {";
    for (std::size_t k = 0; k < r.params.size(); ++k)
      o << (k ? ", " : "") << q(r.params[k].first) << ": " << q(r.params[k].second);
    o << "},\n      \"measurements\": [";
    for (std::size_t k = 0; k < r.measurements.size(); ++k) {
      const series& s = r.measurements[k];
      o << (k ? "," : "") << "\n        {\"name\": " << q(s.name) << ", \"unit\": " << q(s.unit)
        << ", \"better\": " << q(to_string(s.better)) << ", \"note\": " << q(s.note)
        << ",\n         \"metric\": " << summary_json(s.stats) << ",\n         \"seconds\": " << summary_json(s.time)
        << ",\n         \"samples\": " << array_json(s.samples) << ",\n         \"samples_seconds\": "
        << array_json(s.seconds) << "}";
    }
    o << "\n      ],\n      \"ratios\": [";
    for (std::size_t k = 0; k < r.ratios.size(); ++k) {
      const ratio_line& x = r.ratios[k];
      o << (k ? "," : "") << "\n        {\"name\": " << q(x.name) << ", \"value\": " << num(x.value)
        << ", \"target\": " << num(x.target) << ", \"better\": " << q(to_string(x.better))
        << ", \"met\": " << (!x.informational.empty() ? "null" : x.met() ? "true" : "false")
        << ", \"informational\": " << (x.informational.empty() ? "false" : "true")
        << ", \"informational_reason\": " << q(x.informational) << ", \"info\": " << q(x.info) << "}";
    }
    o << "\n      ],\n      \"notes\": [";
    for (std::size_t k = 0; k < r.notes.size(); ++k) o << (k ? ", " : "") << q(r.notes[k]);
    o << "],\n      \"errors\": [";
    for (std::size_t k = 0; k < r.errors.size(); ++k) o << (k ? ", " : "") << q(r.errors[k]);
    o << "]\n    }";
  }
  o << "\n  ]\n}\n";
  std::ofstream f(path);
  if (!f) return false;
  f << o.str();
  return bool(f);
}

}  // namespace sinew_bench
