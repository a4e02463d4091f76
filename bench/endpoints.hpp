#pragma once
// The endpoints benchmark's shared parts: its ZeroMQ half (endpoints.cpp)
// and its MQTT half (endpoints_mqtt.cpp) run the same leaf on the same
// payloads and compare Sinew with a hand-written loop the same way.
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "bench.hpp"

namespace sinew_bench::endpoints {

constexpr std::uint8_t key = 90;

/// The work both systems do: every byte XORed with the key, in place.
struct xor_key {
  void operator()(std::uint8_t& c) const { c = std::uint8_t(c ^ key); }
};

/// A message size and how many messages a run sends.
struct size_case {
  const char* name;
  std::size_t bytes, n;
};

/// The message every producer sends: `bytes` bytes of a fixed pattern.
std::vector<std::uint8_t> payload(std::size_t bytes);

/// "" when the `size` bytes at `got` are `sent` XORed with the key, else what differs.
std::string check_xored(const void* got, std::size_t size, const std::vector<std::uint8_t>& sent);

/// One system's side of a case: `setup` before each timed `run`; `error`
/// holds what the run's check found ("" when right).
struct side {
  std::function<void()> setup, run;
  std::string note;
  const std::string* error;
};

/// Measures `loop` and `sinew` interleaved (MB/s of `c`'s messages) under
/// the names "<label> loop" and "<label> sinew", and records the ratio
/// `ratio` = Sinew MB/s / loop MB/s over paired rounds, described by `what`.
void compare(context& ctx, const std::string& label, const size_case& c, side loop, side sinew,
             const std::string& ratio, const std::string& what);

/// The MQTT half (skipped, with a note, without a broker or libmosquitto).
void run_mqtt(context& ctx);

}  // namespace sinew_bench::endpoints
