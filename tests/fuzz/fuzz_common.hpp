#pragma once
// Helpers of the fuzz harnesses (tests/fuzz/fuzz_*.cpp). Each harness defines
// LLVMFuzzerTestOneInput: built with clang -fsanitize=fuzzer by `make fuzz`,
// or with replay_main.cpp as a plain program that runs a corpus (ctest).
#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <string>

#include <sinew/engine/error.hpp>
#include <sinew/engine/source.hpp>

namespace sinew_fuzz {

/// An anonymous in-memory file holding `data` (read from offset 0).
inline int memory_file(const std::uint8_t* data, std::size_t size) {
  int fd = ::memfd_create("sinew-fuzz", MFD_CLOEXEC);
  if (fd < 0) return -1;
  std::size_t off = 0;
  while (off < size) {
    ssize_t n = ::write(fd, data + off, size - off);
    if (n <= 0) break;
    off += std::size_t(n);
  }
  ::lseek(fd, 0, SEEK_SET);
  return fd;
}

/// Pulls every unit out of `src` the way the runtime does; a malformed input
/// must end in a sinew::error (from `next` or `after_delivery`), nothing else.
inline std::size_t drain(sinew::source src, std::size_t max_units = 1u << 16) {
  std::atomic<bool> stop{false};
  std::size_t units = 0;
  try {
    for (; units < max_units; ++units) {
      sinew::layer l;
      sinew::unit_builder b(l, units, &stop);
      if (!src.impl().next(b)) break;
    }
    src.impl().after_delivery();
  } catch (const sinew::error&) {
  }
  return units;
}

}  // namespace sinew_fuzz
