// Fuzz target: TCP record framing (u64 little-endian length, then the
// record). A peer sends the input and closes; a bad length, a short record or
// a disconnect mid-record must end in sinew::error.
#include <sinew/io/tcp.hpp>

#include "fuzz_common.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <atomic>
#include <memory>
#include <thread>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  auto port = std::make_shared<std::atomic<int>>(0);
  auto l = sinew::io::record_layout::of<std::uint8_t, float>(sinew::shape::d1(3));  // 15-byte records
  sinew::source src = sinew::io::tcp_listen("127.0.0.1", 0, l, port);
  std::thread peer([&] {
    int s = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(std::uint16_t(port->load()));
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (::connect(s, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0) {
      std::size_t off = 0;
      while (off < size) {
        ssize_t n = ::send(s, data + off, size - off, MSG_NOSIGNAL);
        if (n <= 0) break;
        off += std::size_t(n);
      }
    }
    ::close(s);
  });
  sinew_fuzz::drain(src);
  peer.join();
  return 0;
}
