#pragma once
/// \file io/tcp.hpp
/// Record streams over TCP. Framing: each record is a `u64` little-endian
/// payload length followed by the payload, the unit's layer-0 buffers back to
/// back. A source checks that every length equals `layout.bytes()`. The
/// sender closing the connection at a record boundary ends the stream; a
/// peer that disconnects inside a record, or a wrong length, is an error
/// naming the endpoint (raised after the records before it were delivered).
///
/// Sources run on their own thread; waiting for a connection or for data is
/// interrupted by `stop()`/`cancel()`. Sinks write from the sink stage
/// (a slow reader slows the graph down through back pressure), in sequence
/// order, and close the connection on `finish()`.
///
/// One connection per run: a listening endpoint accepts one peer.
///
/// \code
/// auto l = sinew::io::record_layout::of<float>(sinew::shape::d1(1024));
/// auto port = std::make_shared<std::atomic<int>>(0);
/// auto src = sinew::io::tcp_listen("127.0.0.1", 0, l, port);   // *port = the port picked
/// auto f = g.run(src, sinew::io::discard());
/// // elsewhere: h.run(sinew::io::generator(o), sinew::io::tcp_connect_sink("127.0.0.1", *port));
/// \endcode
#include <atomic>
#include <cstdint>
#include <memory>
#include <string>

#include <sinew/io/record_layout.hpp>
#include <sinew/engine/sink.hpp>
#include <sinew/engine/source.hpp>
#include <sinew/io/batching.hpp>

namespace sinew::io {

/// Listens on host:port (bound when called: errors are thrown here, and a
/// port of 0 picks a free one, stored into `*bound_port` if given), accepts
/// one connection when the run starts and reads records from it. Host ""
/// or "*" = every interface. Frames become record batches where the graph
/// allows it (batching.hpp).
sinew::source tcp_listen(std::string host, std::uint16_t port, record_layout layout,
                         std::shared_ptr<std::atomic<int>> bound_port = nullptr, batching b = {});
/// Connects to host:port when the run starts and reads records.
sinew::source tcp_connect(std::string host, std::uint16_t port, record_layout layout, batching b = {});

/// Connects to host:port when the run starts (in `graph::run`, which throws
/// naming the endpoint if it fails) and sends every record, a frame each.
sinew::sink tcp_connect_sink(std::string host, std::uint16_t port);
/// Listens on host:port (bound when called; `*bound_port` as above), accepts
/// one peer at the first unit (or at end of stream) and sends every record.
sinew::sink tcp_listen_sink(std::string host, std::uint16_t port,
                            std::shared_ptr<std::atomic<int>> bound_port = nullptr);

}  // namespace sinew::io
