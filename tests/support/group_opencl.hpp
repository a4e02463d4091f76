#pragma once
/// \file group_opencl.hpp
/// Launches the OpenCL versions of the group-kernel examples
/// (graphs/kernels/{tiled_mm,tree_reduce,histogram,stencil_tile}.cl) on an
/// OpenCL CPU device (PoCL) straight through the C++ bindings, so tests and
/// benchmarks can compare them with the group leaves. Not part of the
/// library: include it only where OpenCL::OpenCL is linked.
///
/// Host arrays are wrapped with CL_MEM_USE_HOST_PTR (zero copy on a CPU
/// device); `run_*` enqueue one kernel and wait for it. OpenCL's dimension 0
/// is Sinew's last (fastest) dimension.
///
/// \code
/// std::string why;
/// auto cl = sinew_support::group_cl::open(sinew_support::kernel_dir(), why);
/// if (!cl) { std::puts(why.c_str()); return; }
/// auto mm = cl->tiled_mm(a.data(), b.data(), c.data(), n, 16);
/// mm.run();   // c = a * b on PoCL
/// \endcode
#ifndef CL_HPP_TARGET_OPENCL_VERSION
#define CL_HPP_TARGET_OPENCL_VERSION 120
#endif
#ifndef CL_HPP_MIN_REQUIRED_OPENCL_VERSION
#define CL_HPP_MIN_REQUIRED_OPENCL_VERSION 120
#endif
#ifndef CL_HPP_MINIMUM_OPENCL_VERSION  // the name this opencl.hpp reads
#define CL_HPP_MINIMUM_OPENCL_VERSION 120
#endif
#ifndef CL_HPP_ENABLE_EXCEPTIONS
#define CL_HPP_ENABLE_EXCEPTIONS
#endif
#include <CL/opencl.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include <sinew/engine/error.hpp>

#include "source_tree.hpp"

namespace sinew_support {

/// The OpenCL program of the kernel file `path`, built for `dev`; errors
/// name the file (and carry the build log).
inline cl::Program build_program(const cl::Context& ctx, const cl::Device& dev, const std::string& path) {
  std::ifstream f(path);
  if (!f) throw sinew::error(path + ": cannot open the OpenCL kernel");
  std::stringstream ss;
  ss << f.rdbuf();
  cl::Program p(ctx, ss.str());
  try {
    p.build({dev});
  } catch (const cl::Error&) {
    throw sinew::error(path + ": OpenCL build failed:\n" + p.getBuildInfo<CL_PROGRAM_BUILD_LOG>(dev));
  }
  return p;
}

class group_cl {
 public:
  /// One kernel with its arguments bound, ready to run again and again.
  class launch {
   public:
    /// `inputs` and `outputs`: every buffer argument (kernels do not retain
    /// them); outputs are mapped after each run.
    launch(cl::CommandQueue q, cl::Kernel k, cl::NDRange global, cl::NDRange local, std::vector<cl::Buffer> inputs,
           std::vector<cl::Buffer> outputs)
        : q_(std::move(q)), k_(std::move(k)), global_(global), local_(local), in_(std::move(inputs)),
          out_(std::move(outputs)) {}
    /// Runs the kernel and waits; results are in the host arrays afterwards.
    void run() {
      q_.enqueueNDRangeKernel(k_, cl::NullRange, global_, local_);
      for (auto& b : out_) {
        // Map/unmap makes the host copy current (a no-op copy on CPU devices).
        std::size_t bytes = b.getInfo<CL_MEM_SIZE>();
        void* p = q_.enqueueMapBuffer(b, CL_TRUE, CL_MAP_READ, 0, bytes);
        q_.enqueueUnmapMemObject(b, p);
      }
      q_.finish();
    }

   private:
    cl::CommandQueue q_;
    cl::Kernel k_;
    cl::NDRange global_, local_;
    std::vector<cl::Buffer> in_, out_;
  };

  /// The first OpenCL CPU device (any device if there is no CPU one), with
  /// the four programs built; nullopt and the reason when there is none.
  static std::optional<group_cl> open(const std::string& dir, std::string& why) {
    std::vector<cl::Platform> platforms;
    try {
      cl::Platform::get(&platforms);
    } catch (const cl::Error& e) {
      why = std::string("no OpenCL platform (") + e.what() + " " + std::to_string(e.err()) + ")";
      return std::nullopt;
    }
    cl::Device dev;
    bool found = false;
    for (int pass = 0; pass < 2 && !found; ++pass)
      for (auto& p : platforms) {
        std::vector<cl::Device> ds;
        try {
          p.getDevices(pass == 0 ? CL_DEVICE_TYPE_CPU : CL_DEVICE_TYPE_ALL, &ds);
        } catch (const cl::Error&) {
          continue;
        }
        if (!ds.empty()) {
          dev = ds[0];
          found = true;
          break;
        }
      }
    if (!found) {
      why = platforms.empty() ? "no OpenCL platform" : "no OpenCL device";
      return std::nullopt;
    }
    return group_cl(dev, dir);
  }

  std::string device_name() const { return dev_.getInfo<CL_DEVICE_NAME>(); }

  launch tiled_mm(const float* a, const float* b, float* c, std::size_t n, std::size_t tile) {
    cl::Kernel k(mm_, "tiled_mm");
    auto ba = wrap(a, n * n), bb = wrap(b, n * n), bc = wrap(c, n * n);
    set(k, ba, bb, bc, cl_uint(n), cl::Local(tile * tile * sizeof(float)), cl::Local(tile * tile * sizeof(float)));
    std::size_t g = round_up(n, tile);
    return launch(q_, k, cl::NDRange(g, g), cl::NDRange(tile, tile), {ba, bb}, {bc});
  }
  launch tree_reduce(const std::int32_t* x, std::int32_t* partial, std::size_t n, std::size_t local,
                     std::size_t per_item) {
    cl::Kernel k(reduce_, "tree_reduce");
    std::size_t groups = groups_of(n, local, per_item);
    auto bx = wrap(x, n), bp = wrap(partial, groups);
    set(k, bx, bp, cl_uint(n), cl_uint(per_item), cl::Local(local * sizeof(std::int32_t)));
    return launch(q_, k, cl::NDRange(groups * local), cl::NDRange(local), {bx}, {bp});
  }
  launch histogram(const std::uint32_t* x, std::uint32_t* hist, std::size_t n, std::size_t local,
                   std::size_t per_item, std::size_t bins) {
    cl::Kernel k(hist_, "histogram");
    std::size_t groups = groups_of(n, local, per_item);
    auto bx = wrap(x, n), bh = wrap(hist, groups * bins);
    set(k, bx, bh, cl_uint(n), cl_uint(per_item), cl_uint(bins), cl::Local(bins * sizeof(std::uint32_t)));
    return launch(q_, k, cl::NDRange(groups * local), cl::NDRange(local), {bx}, {bh});
  }
  launch stencil_tile(const float* src, float* dst, std::size_t rows, std::size_t cols, std::size_t ly,
                      std::size_t lx) {
    cl::Kernel k(stencil_, "stencil_tile");
    auto bs = wrap(src, rows * cols), bd = wrap(dst, rows * cols);
    set(k, bs, bd, cl_uint(rows), cl_uint(cols), cl::Local((ly + 2) * (lx + 2) * sizeof(float)));
    return launch(q_, k, cl::NDRange(round_up(cols, lx), round_up(rows, ly)), cl::NDRange(lx, ly), {bs}, {bd});
  }

  /// Work-groups of the 1-D kernels (tree_reduce, histogram).
  static std::size_t groups_of(std::size_t n, std::size_t local, std::size_t per_item) {
    std::size_t block = local * per_item;
    return (n + block - 1) / block;
  }

 private:
  group_cl(cl::Device dev, const std::string& dir) : dev_(dev), ctx_(dev), q_(ctx_, dev) {
    mm_ = build(dir, "tiled_mm.cl");
    reduce_ = build(dir, "tree_reduce.cl");
    hist_ = build(dir, "histogram.cl");
    stencil_ = build(dir, "stencil_tile.cl");
  }
  cl::Program build(const std::string& dir, const char* file) { return build_program(ctx_, dev_, dir + "/" + file); }
  template <class T>
  cl::Buffer wrap(const T* p, std::size_t n) {
    // USE_HOST_PTR needs a non-empty buffer; read-only use of inputs.
    return cl::Buffer(ctx_, CL_MEM_USE_HOST_PTR, std::max<std::size_t>(1, n) * sizeof(T), const_cast<T*>(p));
  }
  template <class... A>
  static void set(cl::Kernel& k, const A&... a) {
    cl_uint i = 0;
    (k.setArg(i++, a), ...);
  }
  static std::size_t round_up(std::size_t n, std::size_t l) { return (n + l - 1) / l * l; }

  cl::Device dev_;
  cl::Context ctx_;
  cl::CommandQueue q_;
  cl::Program mm_, reduce_, hist_, stencil_;
};

}  // namespace sinew_support
