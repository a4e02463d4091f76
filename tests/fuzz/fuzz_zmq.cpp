// Fuzz target: records from ZeroMQ messages (io/zmq.hpp, docs/io.md
// "Messages"). Byte 0 picks the format (binary, binary multipart, text) and
// what a malformed message does (fail, skip); the rest is a list of
// messages, each a frame count (1-4) and frames of a length byte and its
// bytes, sent by a real PUSH peer. Every message must end as records or as
// sinew::error, nothing else.
#include "fuzz_common.hpp"

#ifdef SINEW_HAVE_ZMQ
#include <sinew/io/zmq.hpp>

#include <zmq.hpp>

#include <memory>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  sinew::io::zmq_source_options o;
  o.endpoint = "tcp://127.0.0.1:*";
  o.bind = true;
  o.bound = std::make_shared<std::string>();
  const auto layout = sinew::io::record_layout::of<std::uint8_t, float>(sinew::shape::d1(2));  // 10-byte records
  const unsigned kind = data[0] % 3;
  o.format = kind == 2 ? sinew::io::message_format::text() : sinew::io::message_format::binary(layout, kind == 1);
  o.format.malformed = data[0] & 4 ? sinew::io::on_malformed::skip : sinew::io::on_malformed::fail;
  o.batch.latency = std::chrono::microseconds(100);
  o.idle_timeout = std::chrono::milliseconds(20);  // the end of the input
  sinew::source src = sinew::io::zmq_source(o);
  {
    zmq::context_t ctx;
    zmq::socket_t push(ctx, zmq::socket_type::push);
    push.set(zmq::sockopt::linger, 1000);
    push.connect(*o.bound);
    std::size_t i = 1;
    while (i < size) {
      const unsigned frames = data[i++] % 4 + 1;
      std::vector<zmq::message_t> parts;
      for (unsigned f = 0; f < frames; ++f) {
        const std::size_t len = i < size ? data[i++] : 0;
        const std::size_t n = std::min(len, size - i);
        parts.emplace_back(data + i, n);
        i += n;
      }
      for (std::size_t f = 0; f < parts.size(); ++f)
        push.send(parts[f], f + 1 < parts.size() ? zmq::send_flags::sndmore : zmq::send_flags::none);
    }
  }  // sent: the context waits for the peer to take every message
  sinew_fuzz::drain(src);
  return 0;
}

#else

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t*, std::size_t) { return 0; }  // built without ZeroMQ

#endif
