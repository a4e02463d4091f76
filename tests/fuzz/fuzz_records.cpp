// Fuzz target: the binary record reader (files and descriptors). The first
// two bytes choose the layout (element types and record size), the rest is
// the stream. A truncated or odd-sized stream must end in sinew::error.
#include <sinew/io/type_names.hpp>
#include <sinew/io/records.hpp>

#include "fuzz_common.hpp"

#include <sinew/engine/elem_type.hpp>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 2) return 0;
  static const char* types[] = {"u8", "f32", "i32", "rgba8", "f64", "u16", "body", "coeff"};
  sinew::io::record_layout l;
  unsigned nbuf = 1 + (data[0] >> 6);  // 1..4 buffers
  for (unsigned b = 0; b < nbuf; ++b) l.buffers.push_back(sinew::elem_type_by_name(types[(data[0] >> (b % 3)) & 7]));
  l.shape = sinew::shape::d1(1 + (data[1] & 31));
  int fd = sinew_fuzz::memory_file(data + 2, size - 2);
  if (fd < 0) return 0;
  sinew_fuzz::drain(sinew::io::read_fd(fd, l));
  ::close(fd);
  return 0;
}
