#pragma once
/// \file opencl/program_cache.hpp
/// Built OpenCL programs, kept once per (source hash, build options, device,
/// driver version) in memory and as binaries on disk ([Lee15],
/// [Zhang18]: building is costly, so binaries are cached across runs). The
/// directory is `$SINEW_CACHE_DIR`, else `$XDG_CACHE_HOME/sinew`, else
/// `~/.cache/sinew`. Files are written to a temporary name and renamed, so
/// processes building at once never read a partial file; a file that does
/// not load (corrupt, other driver) is rebuilt from source and replaced.
///
/// \code
/// auto before = sinew::opencl::program_cache_stats();
/// // ... build graphs with kernel leaves ...
/// auto after = sinew::opencl::program_cache_stats();
/// std::printf("%llu built, %llu from disk\n", (unsigned long long)(after.built - before.built),
///             (unsigned long long)(after.disk_hits - before.disk_hits));
/// \endcode
#include <cstdint>
#include <string>

namespace sinew::opencl {

struct program_cache_counters {
  std::uint64_t built = 0;        ///< compiled from source
  std::uint64_t disk_hits = 0;    ///< loaded from a cached binary
  std::uint64_t memory_hits = 0;  ///< already built in this process
  std::uint64_t disk_rejects = 0; ///< cache files that failed to load (rebuilt)
};

program_cache_counters program_cache_stats();
/// The directory binaries are cached in (created on first write).
std::string program_cache_dir();
/// Forgets the programs built in this process (the disk cache stays), so
/// the next build goes to the disk cache. For tests and tools.
void clear_program_memory_cache();

}  // namespace sinew::opencl
