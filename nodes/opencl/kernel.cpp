// OpenCL kernel leaves and device executors (include/sinew/opencl/kernel.hpp).
#include <sinew/opencl/kernel.hpp>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <fstream>
#include <mutex>
#include <optional>
#include <sstream>

#include <sinew/opencl/coherence.hpp>
#include <sinew/skeletons/pipeline.hpp>

#include "../nodes/opencl/device.hpp"

namespace sinew::opencl {

namespace {

using detail::check;
using detail::device_state;
namespace coh = sinew::coherence;

std::string read_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw error("opencl: cannot read kernel file '" + path + "'");
  std::ostringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

bool is_buffer(arg::kind k) { return k == arg::kind::input || k == arg::kind::output || k == arg::kind::inout; }

std::string kernel_names(cl_program p) {
  std::size_t n = 0;
  clGetProgramInfo(p, CL_PROGRAM_KERNEL_NAMES, 0, nullptr, &n);
  std::string s(n, '\0');
  if (n) clGetProgramInfo(p, CL_PROGRAM_KERNEL_NAMES, n, s.data(), nullptr);
  s.resize(s.find('\0') == std::string::npos ? s.size() : s.find('\0'));
  std::replace(s.begin(), s.end(), ';', ' ');
  return s.empty() ? "(none)" : s;
}

/// What the completion callbacks of one wait share with the waiting thread.
struct wait_state {
  std::mutex m;
  std::condition_variable cv;
  std::uint64_t fired = 0;
};

void CL_CALLBACK on_complete(cl_event, cl_int, void* p) {
  auto* ref = static_cast<std::shared_ptr<wait_state>*>(p);
  {
    std::lock_guard<std::mutex> l((*ref)->m);
    ++(*ref)->fired;
  }
  (*ref)->cv.notify_all();
  delete ref;
}

bool all_complete(const std::vector<cl_event>& evs) {
  for (cl_event ev : evs) {
    cl_int st = CL_COMPLETE;
    if (clGetEventInfo(ev, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof st, &st, nullptr) != CL_SUCCESS) continue;
    if (st > CL_COMPLETE) return false;  // queued, submitted or running; negative = failed = finished
  }
  return true;
}

/// Blocks until every event of `evs` (whose commands were flushed) finished
/// or failed, asleep. clWaitForEvents spins on a core in NVIDIA's driver,
/// and while a GPU share runs, the host share of the same multi-device map
/// runs on every core: the spinning thread preempts one of its workers,
/// whose chunk then straggles and the host's times turn to noise.
/// Completion callbacks wake this thread, and once every event's has come
/// the wait is over: a driver may report CL_COMPLETE through
/// clGetEventInfo only later. The events' status is also polled, every
/// 50 us at first, doubling up to 250 us: NVIDIA's callbacks come
/// milliseconds late more often than not.
void sleep_until_complete(const std::vector<cl_event>& evs) {
  if (evs.empty()) return;
  auto st = std::make_shared<wait_state>();
  std::uint64_t registered = 0;
  for (cl_event ev : evs) {
    auto* ref = new std::shared_ptr<wait_state>(st);
    if (clSetEventCallback(ev, CL_COMPLETE, on_complete, ref) == CL_SUCCESS) ++registered;
    else delete ref;
  }
  const bool all_registered = registered == evs.size();
  const auto called_back = [&] { return all_registered && st->fired == registered; };
  std::unique_lock<std::mutex> l(st->m);
  for (auto poll = std::chrono::microseconds(50);; poll = std::min(2 * poll, std::chrono::microseconds(250))) {
    if (called_back()) return;
    l.unlock();
    const bool done = all_complete(evs);
    l.lock();
    if (done || st->cv.wait_for(l, poll, called_back)) return;
  }
}

/// True when `v` (sorted, merged) covers `r`.
bool covers(const std::vector<coh::range>& v, coh::range r) {
  if (r.empty()) return true;
  for (const coh::range& x : v)
    if (x.begin <= r.begin && r.end <= x.end) return true;
  return false;
}

/// One kernel built for one device, shared by every stage and executor that
/// runs it there. cl_kernel objects are not safe to set arguments on from two
/// threads, so concurrent runs take one each from a small pool.
class compiled_kernel {
 public:
  compiled_kernel(const kernel_spec& s, std::shared_ptr<device_state> d, const std::string& source)
      : s_(s), d_(std::move(d)), where_("kernel '" + s.kernel + "' of " + origin(s) + " on " + d_->label()) {
    std::string options = s.options;
    for (auto& [k, v] : s.defines) options += " -D" + k + (v.empty() ? "" : "=" + v);
    // The program is shared by every kernel of the source; errors name the one asked for.
    program_ = detail::get_program(*d_, source, options, "kernel '" + s.kernel + "' of " + origin(s));
    clRetainProgram(program_);  // ours, beside the cache's (clear_program_memory_cache releases that one)
    hold_.p = program_;
    cl_int e = CL_SUCCESS;
    cl_kernel k = clCreateKernel(program_, s.kernel.c_str(), &e);
    if (e == CL_INVALID_KERNEL_NAME)
      throw error("opencl: " + origin(s) + " has no kernel '" + s.kernel + "' (kernels: " + kernel_names(program_) +
                  ")");
    check(e, "clCreateKernel", where_);
    free_.push_back(k);
    cl_uint nargs = 0;
    clGetKernelInfo(k, CL_KERNEL_NUM_ARGS, sizeof nargs, &nargs, nullptr);
    if (nargs != s.args.size())
      throw error("opencl: " + where_ + " takes " + std::to_string(nargs) + " arguments, the leaf gives " +
                  std::to_string(s.args.size()));
    bool local_args = false;
    for (auto& a : s.args) local_args |= a.kind == arg::kind::local || a.kind == arg::kind::local_per_item;
    // Work-group size: given, else the driver's on CPUs, else a default.
    if (s.local[0]) {
      local_ = s.local;
      for (auto& l : local_) l = l ? l : 1;
      use_local_ = true;
    } else if (d_->info.kind != device_kind::cpu || local_args) {
      use_local_ = true;
    }
    if (use_local_ && local_[0] * local_[1] * local_[2] > d_->info.max_work_group)
      throw error("opencl: " + where_ + ": work-group " + std::to_string(local_[0]) + "x" + std::to_string(local_[1]) +
                  "x" + std::to_string(local_[2]) + " exceeds the device's " + std::to_string(d_->info.max_work_group));
  }
  ~compiled_kernel() {
    for (cl_kernel k : free_) clReleaseKernel(k);
  }

  static std::string origin(const kernel_spec& s) {
    return s.file.empty() ? std::string("<source>") : s.file;
  }
  const std::string& where() const { return where_; }
  const device_state& dev() const { return *d_; }
  /// Outermost-dimension work-group size for a unit of rank `rank`.
  std::size_t granularity(unsigned rank) const { return use_local_ ? local_for(rank)[rank - 1] : 1; }

  /// Who runs the commands, which decides how its thread waits on a GPU or
  /// accelerator and whether the kernels' device time is read.
  enum class runner {
    leaf,   ///< a kernel leaf on a worker or the caller: clWaitForEvents (spins in NVIDIA's
            ///< driver; the thread holds its core anyway); nothing reads its timing
    share,  ///< a multi-device map's device thread: sleep_until_complete (the host share runs
            ///< on every core meanwhile); the balancer reads its compute time
  };

  share_timing run(const device_share& sh, sinew::detail::exec_args& a, runner who) {
    auto t0 = std::chrono::steady_clock::now();
    const bool inplace = in_place();
    const layer& in = *a.in;
    const layer& out = *a.out;
    bool has_out = false;
    for (auto& x : s_.args) has_out |= x.kind == arg::kind::output;
    if (has_out && !inplace && !(out.shape() == in.shape()))
      throw error("output shape " + out.shape().str() + " differs from input shape " + in.shape().str());
    sinew::detail::require_uniform(in, "an OpenCL kernel leaf");
    const shape& shp = in.shape();
    const unsigned rank = std::clamp(shp.rank, 1u, 3u);
    const std::size_t outer = shp.ext[0], inner = rank == 1 ? 1 : shp.inner();
    if (sh.begin > sh.end || sh.end > outer)
      throw error("share [" + std::to_string(sh.begin) + ", " + std::to_string(sh.end) + ") is outside the unit " +
                  shp.str());
    if (shp.count() == 0 || sh.size() == 0) return {};

    coherence::memory_space& space = d_->space(s_.memory);
    const bool copies = !space.shares_host();
    std::vector<std::optional<coh::access>> acc(s_.args.size());
    cl_kernel k = take();
    struct give_back {
      compiled_kernel* self;
      cl_kernel k;
      ~give_back() { self->give(k); }
    } gb{this, k};

    // Drivers may abort rather than fail on too much local memory (PoCL does).
    std::size_t local_bytes = 0;
    for (auto& x : s_.args) {
      auto l = local_for(rank);
      if (x.kind == arg::kind::local) local_bytes += x.bytes;
      if (x.kind == arg::kind::local_per_item) local_bytes += x.bytes * l[0] * l[1] * l[2];
    }
    if (local_bytes > d_->info.local_mem)
      throw error("opencl: " + where_ + " needs " + std::to_string(local_bytes) + " bytes of local memory per work-group, the device has " +
                  std::to_string(d_->info.local_mem));

    const bool overlap = copies && s_.chunks > 1 && sh.size() > 1;
    // Copy mode: the transfers a run enqueues on the kernel's queue itself
    // (non-blocking, one wait for all), per chunk when it overlaps them.
    struct queued_transfer {
      buffer* b;
      cl_mem m;
      std::size_t row;  // bytes per outermost index
      bool upload;      // else download
      coh::range r;     // the bytes moved in all (recorded with coh::copied)
    };
    std::vector<queued_transfer> queued;
    // Unified memory: the buffers the kernel writes, made visible to the
    // host right behind it (see below).
    struct to_sync {
      cl_mem m;
      coh::range r;
    };
    std::vector<to_sync> syncs;
    struct forget {
      ~forget() { detail::cl_space::forget_presynced(); }
    } forget_presynced_at_end;

    unsigned in_slot = 0, out_slot = 0;
    for (std::size_t i = 0; i < s_.args.size(); ++i) {
      const arg::spec& x = s_.args[i];
      cl_int e = CL_SUCCESS;
      auto set_uint = [&](std::size_t v) {
        cl_uint u = cl_uint(v);
        e = clSetKernelArg(k, cl_uint(i), sizeof u, &u);
      };
      switch (x.kind) {
        case arg::kind::input:
        case arg::kind::output:
        case arg::kind::inout: {
          const bool is_out = x.kind == arg::kind::output;
          const layer& l = is_out ? out : in;
          unsigned slot = is_out ? out_slot++ : in_slot++;
          if (slot >= l.size())
            throw error("argument " + std::to_string(i) + " of " + where_ + " wants " + (is_out ? "output" : "input") +
                        " buffer " + std::to_string(slot) + ", the unit's layer has " + std::to_string(l.size()));
          buffer& b = *l[slot];
          const std::size_t es = b.type().size;
          if (es != x.type->size || b.count() < shp.count())
            throw error("argument " + std::to_string(i) + " of " + where_ + ": buffer holds " +
                        std::to_string(b.count()) + " elements of " + std::to_string(es) + " bytes, the kernel wants " +
                        std::to_string(shp.count()) + " of " + std::to_string(x.type->size));
          const std::size_t row = inner * es;
          coh::range share{sh.begin * row, sh.end * row};
          coh::range rd{}, wr{};
          bool upload_here = false;
          if (!is_out) {
            rd = x.whole ? coh::range{0, outer * row}
                         : coh::range{(sh.begin > x.halo ? sh.begin - x.halo : 0) * row,
                                      std::min(outer, sh.end + x.halo) * row};
            // Host code may have changed a buffer the host holds, without
            // telling anyone: the host copy wins over device copies then.
            if (copies && covers(coh::valid_ranges(b, 0), rd)) {
              coh::host_write(b, rd);
              upload_here = !overlap || (!x.whole && !x.halo);
            }
          }
          if (x.kind != arg::kind::input) wr = share;
          const bool sync_here = !copies && !wr.empty();
          // Uploads and downloads are enqueued below, around the kernel on its
          // queue (a blocking write, the kernel, a wait and a blocking read
          // would be three round trips); the access then only allocates and
          // pins the device copy.
          acc[i].emplace(b, space, upload_here ? coh::range{} : rd, wr);
          if (upload_here) queued.push_back({&b, static_cast<cl_mem>(acc[i]->handle()), row, true, rd});
          if (copies && x.kind != arg::kind::input && !s_.keep_on_device)
            queued.push_back({&b, static_cast<cl_mem>(acc[i]->handle()), row, false, wr});
          cl_mem m = static_cast<cl_mem>(acc[i]->handle());
          if (sync_here) syncs.push_back({m, wr});
          e = clSetKernelArg(k, cl_uint(i), sizeof m, &m);
          break;
        }
        case arg::kind::scalar: e = clSetKernelArg(k, cl_uint(i), x.value.size(), x.value.data()); break;
        case arg::kind::count: set_uint(shp.count()); break;
        case arg::kind::cols: set_uint(shp.ext[rank - 1]); break;
        case arg::kind::rows: set_uint(rank >= 2 ? shp.ext[rank - 2] : 1); break;
        case arg::kind::planes: set_uint(rank == 3 ? shp.ext[0] : 1); break;
        case arg::kind::seq: {
          cl_ulong s = a.seq;
          e = clSetKernelArg(k, cl_uint(i), sizeof s, &s);
          break;
        }
        case arg::kind::local: e = clSetKernelArg(k, cl_uint(i), x.bytes, nullptr); break;
        case arg::kind::local_per_item: {
          auto l = local_for(rank);
          e = clSetKernelArg(k, cl_uint(i), x.bytes * l[0] * l[1] * l[2], nullptr);
          break;
        }
      }
      check(e, ("clSetKernelArg(" + std::to_string(i) + ")").c_str(), where_);
    }

    auto l = local_for(rank);
    auto enqueue = [&](cl_command_queue q, std::size_t b, std::size_t e, cl_uint nwait, const cl_event* wait,
                       cl_event* ev) {
      std::size_t gws[3] = {1, 1, 1}, off[3] = {0, 0, 0};
      for (unsigned d = 0; d < rank; ++d) gws[d] = shp.ext[rank - 1 - d];
      gws[rank - 1] = e - b;
      off[rank - 1] = b;
      if (use_local_)
        for (unsigned d = 0; d < rank; ++d) gws[d] = (gws[d] + l[d] - 1) / l[d] * l[d];
      return clEnqueueNDRangeKernel(q, k, rank, off, gws, use_local_ ? l.data() : nullptr, nwait, wait, ev);
    };
    std::vector<cl_event> kernels, others;
    auto wait_all = [&] {
      // Everything enqueued must finish before buffers are unpinned or a
      // failure is reported: commands still reference them. A share's
      // thread sleeps first; clWaitForEvents then only collects the status. A CPU
      // device's driver (PoCL) waits asleep by itself: no callbacks, whose
      // thread would be one more wake-up on the way back.
      if (who == runner::share && d_->info.kind != device_kind::cpu) {
        sleep_until_complete(kernels);
        sleep_until_complete(others);
      }
      cl_int e = CL_SUCCESS;
      if (!kernels.empty()) e = clWaitForEvents(cl_uint(kernels.size()), kernels.data());
      if (!others.empty()) {
        cl_int e2 = clWaitForEvents(cl_uint(others.size()), others.data());
        if (e == CL_SUCCESS) e = e2;
      }
      return e;
    };
    auto release_all = [&] {
      for (cl_event ev : kernels) clReleaseEvent(ev);
      for (cl_event ev : others) clReleaseEvent(ev);
      kernels.clear();
      others.clear();
    };
    cl_int fail = CL_SUCCESS;
    const char* failed = nullptr;
    bool presync = false;
    // Enqueues cb's transfer of bytes [from, to) on q behind `wait`, without
    // blocking; its event joins `others` (null, and `failed` set, when it
    // cannot be queued).
    const auto queue_transfer = [&](cl_command_queue q, const queued_transfer& cb, std::size_t from, std::size_t to,
                                    cl_uint nwait, const cl_event* wait) -> cl_event {
      cl_event ev = nullptr;
      char* host = static_cast<char*>(cb.b->data()) + from;
      fail = cb.upload ? clEnqueueWriteBuffer(q, cb.m, CL_FALSE, from, to - from, host, nwait, wait, &ev)
                       : clEnqueueReadBuffer(q, cb.m, CL_FALSE, from, to - from, host, nwait, wait, &ev);
      if (fail != CL_SUCCESS) {
        failed = cb.upload ? "clEnqueueWriteBuffer" : "clEnqueueReadBuffer";
        return nullptr;
      }
      others.push_back(ev);
      return ev;
    };
    if (!overlap) {
      cl_command_queue q = d_->queue();
      // In order on q: the uploads, the kernel, then (below) the downloads.
      const auto transfer = [&](bool up) {
        for (auto& cb : queued)
          if (cb.upload == up && fail == CL_SUCCESS) queue_transfer(q, cb, cb.r.begin, cb.r.end, 0, nullptr);
      };
      transfer(true);
      cl_event ev = nullptr;
      if (fail == CL_SUCCESS) {
        fail = enqueue(q, sh.begin, sh.end, 0, nullptr, &ev);
        if (fail == CL_SUCCESS) kernels.push_back(ev);
        else failed = "clEnqueueNDRangeKernel";
      }
      // Unified memory (CL_MEM_USE_HOST_PTR): the map and unmap that make
      // the kernel's writes visible to the host go on the kernel's queue
      // right behind it, so one wait covers all three; the coherence access
      // would otherwise map and unmap after the kernel ended, two more round
      // trips through the driver (a fixed ~0.1-0.2 ms per run on PoCL).
      presync = fail == CL_SUCCESS && !syncs.empty();
      for (const to_sync& t : syncs) {
        if (!presync) break;
        cl_int me = CL_SUCCESS;
        void* p = clEnqueueMapBuffer(q, t.m, CL_FALSE, CL_MAP_READ, t.r.begin, t.r.end - t.r.begin, 0, nullptr,
                                     nullptr, &me);
        cl_event uev = nullptr;
        if (me == CL_SUCCESS) me = clEnqueueUnmapMemObject(q, t.m, p, 0, nullptr, &uev);
        if (me == CL_SUCCESS) others.push_back(uev);
        else presync = false;  // the accesses map and unmap themselves, as without this
      }
      transfer(false);
      clFlush(q);  // the wait below sleeps: nothing else would submit it
    } else {
      // Chunks of whole work-groups; chunk c on queue c % 2: upload, kernel,
      // download chained by events, so chunk c+1 moves while c computes.
      const std::size_t g = granularity(rank);
      std::size_t per = (sh.size() + s_.chunks - 1) / s_.chunks;
      per = std::max<std::size_t>(g, (per + g - 1) / g * g);
      for (std::size_t b = sh.begin, c = 0; b < sh.end && fail == CL_SUCCESS; b += per, ++c) {
        const std::size_t e = std::min(sh.end, b + per);
        cl_command_queue q = d_->queues[c & 1];
        std::vector<cl_event> ups;
        for (auto& cb : queued) {
          if (!cb.upload) continue;
          cl_event ev = queue_transfer(q, cb, b * cb.row, e * cb.row, 0, nullptr);
          if (!ev) break;
          ups.push_back(ev);
        }
        if (fail != CL_SUCCESS) break;
        cl_event kev = nullptr;
        fail = enqueue(q, b, e, cl_uint(ups.size()), ups.empty() ? nullptr : ups.data(), &kev);
        if (fail != CL_SUCCESS) { failed = "clEnqueueNDRangeKernel"; break; }
        kernels.push_back(kev);
        for (auto& cb : queued)
          if (!cb.upload && !queue_transfer(q, cb, b * cb.row, e * cb.row, 1, &kev)) break;
      }
      for (cl_command_queue q : d_->queues) clFlush(q);
    }
    cl_int we = wait_all();
    double compute = 0;  // the kernels' device time, for the balancer
    if (who == runner::share)
      for (cl_event ev : kernels) {
        cl_ulong start = 0, end = 0;
        clGetEventProfilingInfo(ev, CL_PROFILING_COMMAND_START, sizeof start, &start, nullptr);
        clGetEventProfilingInfo(ev, CL_PROFILING_COMMAND_END, sizeof end, &end, nullptr);
        if (end > start) compute += double(end - start) * 1e-9;
      }
    release_all();
    if (failed) check(fail, failed, where_);
    check(we, "kernel execution", where_);
    if (presync)
      for (const to_sync& t : syncs) detail::cl_space::presynced(t.m, t.r.begin, t.r.end - t.r.begin);
    for (auto& cb : queued) {
      if (cb.upload) coh::copied(*cb.b, &space, cb.r);
      else coh::copied(*cb.b, nullptr, cb.r, &space);
    }
    for (auto& x : acc) x.reset();  // unpin; mapped spaces sync to the host here
    share_timing t;
    t.compute = compute;
    t.total = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    return t;
  }

  bool in_place() const {
    for (auto& x : s_.args)
      if (x.kind == arg::kind::inout) return true;
    return false;
  }
  sinew::detail::type_list types(bool outputs) const {
    sinew::detail::type_list t;
    bool inplace = in_place();
    for (auto& x : s_.args) {
      bool is_in = x.kind == arg::kind::input || x.kind == arg::kind::inout;
      bool is_out = x.kind == arg::kind::output || x.kind == arg::kind::inout;
      if (outputs ? (inplace ? is_in : is_out) : is_in) t.types.push_back(x.type);
    }
    return t;
  }
  const kernel_spec& spec() const { return s_; }

 private:
  std::array<std::size_t, 3> local_for(unsigned rank) const {
    if (s_.local[0]) return local_;
    switch (rank) {
      case 1: return {64, 1, 1};
      case 2: return {16, 16, 1};
      default: return {8, 8, 4};
    }
  }
  cl_kernel take() {
    {
      std::lock_guard g(m_);
      if (!free_.empty()) {
        cl_kernel k = free_.back();
        free_.pop_back();
        return k;
      }
    }
    cl_int e = CL_SUCCESS;
    cl_kernel k = clCreateKernel(program_, s_.kernel.c_str(), &e);
    check(e, "clCreateKernel", where_);
    return k;
  }
  void give(cl_kernel k) {
    std::lock_guard g(m_);
    free_.push_back(k);
  }

  kernel_spec s_;
  std::shared_ptr<device_state> d_;
  std::string where_;
  cl_program program_ = nullptr;
  // Releases our reference to program_, also when the constructor throws.
  struct program_ref {
    cl_program p = nullptr;
    ~program_ref() {
      if (p) clReleaseProgram(p);
    }
  } hold_;
  std::array<std::size_t, 3> local_{1, 1, 1};
  bool use_local_ = false;
  std::mutex m_;
  std::vector<cl_kernel> free_;
};

void validate(const kernel_spec& s) {
  if (s.kernel.empty()) throw error("opencl: kernel leaf without a kernel name (" + compiled_kernel::origin(s) + ")");
  if (s.file.empty() && s.source.empty()) throw error("opencl: kernel '" + s.kernel + "' has neither a file nor a source");
  bool inout = false, output = false;
  for (std::size_t i = 0; i < s.args.size(); ++i) {
    const arg::spec& a = s.args[i];
    inout |= a.kind == arg::kind::inout;
    output |= a.kind == arg::kind::output;
    if (is_buffer(a.kind) && !a.type)
      throw error("opencl: argument " + std::to_string(i) + " of kernel '" + s.kernel + "' is a buffer without a type");
    if (a.kind == arg::kind::scalar && a.value.empty())
      throw error("opencl: argument " + std::to_string(i) + " of kernel '" + s.kernel + "' is an empty scalar");
  }
  if (inout && output)
    throw error("opencl: kernel '" + s.kernel + "' both updates buffers in place and writes outputs; use one or the other");
}

std::vector<std::shared_ptr<compiled_kernel>> compile(const kernel_spec& s, bool first_only) {
  validate(s);
  const std::string source = s.source.empty() ? read_file(s.file) : s.source;
  std::vector<std::shared_ptr<compiled_kernel>> out;
  for (const device& d : select_devices(s.devices)) {
    out.push_back(std::make_shared<compiled_kernel>(s, d.state(), source));
    if (first_only) break;
  }
  return out;
}

class kernel_exec final : public sinew::detail::executable {
 public:
  explicit kernel_exec(std::shared_ptr<compiled_kernel> k) : k_(std::move(k)) {}
  // A leaf's thread is a worker or the caller, holding its core while it waits:
  // the driver's own wait ends soonest.
  void execute(sinew::detail::exec_args& a) override {
    k_->run({0, a.in->shape().ext[0]}, a, compiled_kernel::runner::leaf);
  }

 private:
  std::shared_ptr<compiled_kernel> k_;
};

class kernel_node final : public sinew::detail::node_impl {
 public:
  explicit kernel_node(std::shared_ptr<compiled_kernel> k) : k_(std::move(k)) {}
  std::string label() const override { return "opencl<" + k_->spec().kernel + ">"; }
  sinew::detail::type_list input_types() const override { return k_->types(false); }
  sinew::detail::type_list output_types() const override { return k_->types(true); }
  bool in_place() const override { return k_->in_place(); }
  std::shared_ptr<sinew::detail::executable> compile_inline(const std::string&) const override {
    return std::make_shared<kernel_exec>(k_);
  }

 private:
  std::shared_ptr<compiled_kernel> k_;
};

class kernel_executor final : public device_executor {
 public:
  explicit kernel_executor(std::shared_ptr<compiled_kernel> k) : k_(std::move(k)) {}
  std::string name() const override { return k_->dev().label(); }
  /// The work-group size along the outermost dimension of a 2-D unit (the
  /// common case); 1-D and 3-D units use theirs at run time.
  std::size_t granularity() const override { return k_->granularity(2); }
  sinew::detail::type_list input_types() const override { return k_->types(false); }
  sinew::detail::type_list output_types() const override { return k_->types(true); }
  bool in_place() const override { return k_->in_place(); }
  // A device thread of a multi-device map, beside the host share's workers.
  share_timing execute(const device_share& s, sinew::detail::exec_args& a) override {
    return k_->run(s, a, compiled_kernel::runner::share);
  }

 private:
  std::shared_ptr<compiled_kernel> k_;
};

}  // namespace

node kernel_leaf(kernel_spec s) {
  return node(std::make_shared<kernel_node>(compile(s, true).front()));
}

node device_pipeline(std::vector<kernel_spec> stages) {
  if (stages.empty()) throw error("opencl: device_pipeline needs at least one kernel");
  std::vector<node> nodes;
  for (std::size_t i = 0; i < stages.size(); ++i) {
    stages[i].keep_on_device = i + 1 < stages.size();
    nodes.push_back(kernel_leaf(stages[i]));
  }
  return pipeline(std::move(nodes));
}

std::vector<std::shared_ptr<device_executor>> kernel_executors(const kernel_spec& s) {
  std::vector<std::shared_ptr<device_executor>> out;
  for (auto& k : compile(s, false)) out.push_back(std::make_shared<kernel_executor>(k));
  return out;
}

}  // namespace sinew::opencl
