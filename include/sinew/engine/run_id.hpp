#pragma once
/// \file run_id.hpp
/// Which run the calling thread works for: leaves whose state must start
/// afresh with every run of their graph (a running count, a session window)
/// compare it with the run they saw last and reset when it changes.
///
/// \code
/// struct Count {
///   struct state { std::array<std::uint32_t, 256> n{}; std::uint64_t run = 0; };
///   std::shared_ptr<state> s = std::make_shared<state>();
///   void operator()(sinew::chunk c, sinew::in<std::uint8_t> key, sinew::out<std::uint32_t> n) const {
///     if (const auto id = sinew::current_run_id(); id != s->run) *s = state{{}, id};  // a new run
///     for (std::size_t i = c.begin; i < c.end; ++i) n(i) = ++s->n[key(i)];
///   }
/// };
/// \endcode
#include <cstdint>

namespace sinew {

/// A number naming the run whose stage the calling thread is running: every
/// run of every graph in the process has its own, never 0. 0 outside a stage
/// (e.g. on a thread of the program's own, or in a source).
std::uint64_t current_run_id() noexcept;

}  // namespace sinew
