// Program cache: memory, then disk binaries, then the compiler (see
// include/sinew/opencl/program_cache.hpp).
#include <sinew/opencl/program_cache.hpp>

#include "device.hpp"

#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <sstream>

namespace sinew::opencl {

namespace {

std::atomic<std::uint64_t> n_built{0}, n_disk{0}, n_memory{0}, n_rejects{0};

std::uint64_t fnv1a(std::string_view s, std::uint64_t h = 1469598103934665603ull) {
  for (unsigned char c : s) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return h;
}
std::string hex(std::uint64_t v) {
  char b[17];
  std::snprintf(b, sizeof b, "%016llx", static_cast<unsigned long long>(v));
  return b;
}

struct entry {
  std::mutex m;
  cl_program program = nullptr;
  // The cache's reference; every compiled kernel holds its own, and a
  // cl_kernel keeps its program alive, so forgetting an entry is safe.
  ~entry() {
    if (program) clReleaseProgram(program);
  }
};
std::mutex cache_m;
std::map<std::string, std::shared_ptr<entry>>& memory_cache() {
  static auto* c = new std::map<std::string, std::shared_ptr<entry>>();  // immortal
  return *c;
}

constexpr char magic[8] = {'S', 'I', 'N', 'E', 'W', 'C', 'L', '1'};

// File layout: magic, u64 key hash (second seed), u64 binary size, u64
// binary hash, binary. Any mismatch = reject and rebuild.
bool load_binary(const std::string& path, std::uint64_t key_check, std::string& bin) {
  std::ifstream f(path, std::ios::binary);
  if (!f) return false;
  char m[8];
  std::uint64_t kc = 0, size = 0, bh = 0;
  if (!f.read(m, 8) || std::memcmp(m, magic, 8) != 0) return false;
  if (!f.read(reinterpret_cast<char*>(&kc), 8) || !f.read(reinterpret_cast<char*>(&size), 8) ||
      !f.read(reinterpret_cast<char*>(&bh), 8))
    return false;
  if (kc != key_check || size == 0 || size > (std::uint64_t(1) << 31)) return false;
  bin.resize(size);
  if (!f.read(bin.data(), std::streamsize(size))) return false;
  if (f.peek() != std::char_traits<char>::eof()) return false;
  return fnv1a(bin) == bh;
}

void store_binary(const std::string& dir, const std::string& path, std::uint64_t key_check, const std::string& bin) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  // Unique temporary name, then an atomic rename: concurrent writers of the
  // same key each write whole files and the last rename wins.
  std::random_device rd;
  std::string tmp = path + ".tmp." + std::to_string(::getpid()) + "." + hex((std::uint64_t(rd()) << 32) ^ rd());
  {
    std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
    if (!f) return;  // an unwritable cache only costs rebuilds
    std::uint64_t size = bin.size(), bh = fnv1a(bin);
    f.write(magic, 8);
    f.write(reinterpret_cast<const char*>(&key_check), 8);
    f.write(reinterpret_cast<const char*>(&size), 8);
    f.write(reinterpret_cast<const char*>(&bh), 8);
    f.write(bin.data(), std::streamsize(bin.size()));
    if (!f) {
      f.close();
      std::filesystem::remove(tmp, ec);
      return;
    }
  }
  std::filesystem::rename(tmp, path, ec);
  if (ec) std::filesystem::remove(tmp, ec);
}

std::string build_log(cl_program p, cl_device_id d) {
  std::size_t n = 0;
  clGetProgramBuildInfo(p, d, CL_PROGRAM_BUILD_LOG, 0, nullptr, &n);
  std::string log(n, '\0');
  if (n) clGetProgramBuildInfo(p, d, CL_PROGRAM_BUILD_LOG, n, log.data(), nullptr);
  while (!log.empty() && (log.back() == '\0' || log.back() == '\n' || log.back() == ' ')) log.pop_back();
  return log;
}

cl_program from_binary(detail::device_state& d, const std::string& bin, const std::string& options) {
  const unsigned char* p = reinterpret_cast<const unsigned char*>(bin.data());
  std::size_t n = bin.size();
  cl_int status = CL_SUCCESS, e = CL_SUCCESS;
  cl_program prog = clCreateProgramWithBinary(d.ctx, 1, &d.id, &n, &p, &status, &e);
  if (e != CL_SUCCESS || status != CL_SUCCESS) {
    if (prog) clReleaseProgram(prog);
    return nullptr;
  }
  if (clBuildProgram(prog, 1, &d.id, options.c_str(), nullptr, nullptr) != CL_SUCCESS) {
    clReleaseProgram(prog);
    return nullptr;
  }
  return prog;
}

std::string binary_of(cl_program p) {
  std::size_t size = 0;
  if (clGetProgramInfo(p, CL_PROGRAM_BINARY_SIZES, sizeof size, &size, nullptr) != CL_SUCCESS || !size) return {};
  std::string bin(size, '\0');
  unsigned char* ptr = reinterpret_cast<unsigned char*>(bin.data());
  if (clGetProgramInfo(p, CL_PROGRAM_BINARIES, sizeof ptr, &ptr, nullptr) != CL_SUCCESS) return {};
  return bin;
}

}  // namespace

program_cache_counters program_cache_stats() {
  return {n_built.load(), n_disk.load(), n_memory.load(), n_rejects.load()};
}

std::string program_cache_dir() {
  if (const char* s = std::getenv("SINEW_CACHE_DIR"); s && *s) return s;
  if (const char* x = std::getenv("XDG_CACHE_HOME"); x && *x) return std::string(x) + "/sinew";
  if (const char* h = std::getenv("HOME"); h && *h) return std::string(h) + "/.cache/sinew";
  return "/tmp/sinew-cache";
}

void clear_program_memory_cache() {
  std::lock_guard g(cache_m);
  // Each entry releases the cache's reference; programs still used by
  // compiled kernels live on through theirs.
  memory_cache().clear();
}

namespace detail {

cl_program get_program(device_state& d, const std::string& source, const std::string& options,
                       const std::string& origin) {
  const std::string key = d.info.platform + '\n' + d.info.name + '\n' + d.info.driver_version + '\n' +
                          d.info.opencl_version + '\n' + options + '\n' + source;
  const std::uint64_t h = fnv1a(key), key_check = fnv1a(key, 0x9e3779b97f4a7c15ull);
  std::shared_ptr<entry> en;
  {
    std::lock_guard g(cache_m);
    auto& slot = memory_cache()[hex(h) + hex(key_check) + '@' + std::to_string(reinterpret_cast<std::uintptr_t>(&d))];
    if (!slot) slot = std::make_shared<entry>();
    en = slot;
  }
  std::lock_guard g(en->m);  // one build per key at a time; other keys go on
  if (en->program) {
    n_memory++;
    return en->program;
  }
  const std::string dir = program_cache_dir();
  const std::string path = dir + "/" + hex(h) + ".clbin";
  std::string bin;
  if (load_binary(path, key_check, bin)) {
    if (cl_program p = from_binary(d, bin, options)) {
      n_disk++;
      return en->program = p;
    }
  }
  if (std::filesystem::exists(path)) n_rejects++;

  const char* src = source.c_str();
  std::size_t len = source.size();
  cl_int e = CL_SUCCESS;
  cl_program p = clCreateProgramWithSource(d.ctx, 1, &src, &len, &e);
  check(e, "clCreateProgramWithSource", d.label());
  cl_int be = clBuildProgram(p, 1, &d.id, options.c_str(), nullptr, nullptr);
  if (be != CL_SUCCESS) {
    std::string log = build_log(p, d.id);
    clReleaseProgram(p);
    throw error("opencl: " + origin + " does not build for " + d.label() + " " + d.info.name +
                (options.empty() ? std::string() : " with options '" + options + "'") + " (" + cl_error_name(be) +
                "); build log:\n" + log);
  }
  n_built++;
  std::string out = binary_of(p);
  if (!out.empty()) store_binary(dir, path, key_check, out);
  return en->program = p;
}

}  // namespace detail

}  // namespace sinew::opencl
