// Fuzz target: the PPM reader (P6 and P3 headers, comments, maxval, short
// pixel data). A bad file must end in sinew::error naming it.
#include <sinew/io/ppm.hpp>

#include "fuzz_common.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  int fd = sinew_fuzz::memory_file(data, size);
  if (fd < 0) return 0;
  try {
    auto img = sinew::io::read_ppm("/proc/self/fd/" + std::to_string(fd));
    (void)img;
  } catch (const sinew::error&) {
  }
  ::close(fd);
  return 0;
}
