#pragma once
// sinew-bench: the measured peak arithmetic of this machine for this build's
// instruction set (bench/peak_flops.cpp), the limit that compute-bound
// benchmarks are compared with.
//
//   double peak = sinew_bench::peak_gflops_float(ctx);   // measured once per process
//   ctx.note("nbody: " + sinew_bench::format_double(gflops / peak * 100, 1) + "% of peak");
#include "bench.hpp"

namespace sinew_bench {

/// GFLOP/s (float, all threads) of peak_flops if it already ran, else a
/// short measurement now (noted in `ctx`).
double peak_gflops_float(context& ctx);

}  // namespace sinew_bench
