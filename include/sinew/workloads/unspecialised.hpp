#pragma once
/// \file workloads/unspecialised.hpp
/// `SINEW_UNSPECIALISED` marks a workload function that every caller must
/// run as one machine code: the leaf, the sequential reference and the
/// benchmarks' hand-written peers.
///
/// - Not inlined, so that all agree bit for bit even where the compiler
///   would contract a*b+c into an FMA differently in different inlining
///   contexts (GCC's default -ffp-contract=fast with -march=native or -mfma).
/// - Not cloned, so that a caller passing literal arguments (a peer's loop
///   with `seed = 42`, `steps = 1000`) does not get a constant-propagated
///   copy that a map, whose functor's members are data, cannot have
///   (docs/performance.md, "Leaf code").
///
/// \code
/// SINEW_UNSPECIALISED inline float twice(float x) { return 2.0f * x; }
/// \endcode
#if defined(__clang__)
#define SINEW_UNSPECIALISED [[gnu::noinline]]  // clang clones no function it does not inline
#else
#define SINEW_UNSPECIALISED [[gnu::noinline, gnu::noclone]]
#endif
