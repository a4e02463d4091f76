#pragma once
// sinew-bench: the STREAM triad bandwidth of this machine (bench/stream_triad.cpp),
// the hardware limit that memory-bound benchmarks are compared with.
//
//   double limit = sinew_bench::triad_gbs(ctx);   // measured once per process
//   ctx.ratio("saxpy_vs_triad", saxpy_gbs / limit, 0.85, sinew_bench::higher);
#include "bench.hpp"

namespace sinew_bench {

/// GB/s of the best parallel triad measured so far in this process (0 if
/// none ran). Written into the JSON machine description.
double triad_measured_gbs();

/// The triad limit: the value of the stream_triad benchmark if it already
/// ran, else a short measurement now (noted in `ctx`).
double triad_gbs(context& ctx);

}  // namespace sinew_bench
