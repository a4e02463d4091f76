// Fuzz target: the text-line reader (one u8 unit per line, any bytes, any
// line length, with or without a final newline).
#include <sinew/io/lines.hpp>

#include "fuzz_common.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  int fd = sinew_fuzz::memory_file(data, size);
  if (fd < 0) return 0;
  sinew_fuzz::drain(sinew::io::read_lines(fd));
  ::close(fd);
  return 0;
}
