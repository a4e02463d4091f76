#pragma once
/// \file io/batching.hpp
/// How a stream source groups the records it reads (text lines, fixed-size
/// binary records, TCP frames) into units: *record batches* (records.hpp).
/// One unit per record costs the runtime's per-unit work for every line of
/// a log; a batch of thousands pays it once. A batch leaves when it holds
/// `records` records or `bytes` bytes, or `latency` after its first record
/// was read, so a slow stream still flows.
///
/// By default (`when::automatic`) a source batches when the graph gives a
/// batch the results of its records one by one: every leaf works per element
/// or per record and every sink writes records (the sinks of sinew::io do;
/// `into` and `for_each`, which see units as items, do not). Otherwise it
/// makes one unit per record, as `when::never` always does.
///
/// \code
/// sinew::io::batching b;
/// b.records = 1024;                                   // at most 1024 lines a unit
/// b.latency = std::chrono::milliseconds(1);           // and at most 1 ms late
/// g.run(sinew::io::read_lines(0, b), sinew::io::write_lines(1)).get();
/// g.run(sinew::io::read_lines(0, sinew::io::batching::off()), ...);   // one unit per line
/// \endcode
#include <chrono>
#include <cstddef>

namespace sinew::io {

struct batching {
  enum class when {
    automatic,  ///< batch when the graph allows it (see above)
    always,     ///< batch; a graph that does not allow it is an error (graph_error naming the leaf or sink)
    never,      ///< one unit per record
  };
  when mode = when::automatic;
  std::size_t records = 4096;            ///< most records a unit (>= 1)
  std::size_t bytes = std::size_t(256) << 10;  ///< most bytes a unit; a longer record is a unit of its own
  /// Most time a unit waits for more records after its first one was read,
  /// even while more keep coming (only streams that may wait for data:
  /// pipes, terminals, sockets, message sources).
  std::chrono::microseconds latency{5000};

  /// One unit per record.
  static batching off() {
    batching b;
    b.mode = when::never;
    return b;
  }
};

}  // namespace sinew::io
