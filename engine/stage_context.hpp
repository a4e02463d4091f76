#pragma once
// Internal: what the calling thread is running, for code that is handed no
// stage (add_stage_counter, a map's parallel_for through stage_scheduler).
// Read and written for every unit: initial-exec TLS, a direct access
// instead of a __tls_get_addr call (libsinew_core is linked, not dlopened).
#include <cstdint>

namespace sinew {
class layer;
}

namespace sinew::detail {

struct stage_rt;

/// The stage this thread is running (add_stage_counter adds to it).
[[gnu::tls_model("initial-exec")]] inline thread_local stage_rt* tl_stage = nullptr;
/// Traced runs only: the unit this thread is processing (chunk events name it).
[[gnu::tls_model("initial-exec")]] inline thread_local std::uint64_t tl_seq = 0;
/// The input layer of the unit this thread's stage is processing: a map's
/// parallel_for passes its buffers' placement to the scheduler.
[[gnu::tls_model("initial-exec")]] inline thread_local const layer* tl_in = nullptr;

/// Sets tl_stage for a scope (restores the outer value: stages nest when a
/// worker runs another stage's chunk while waiting).
struct stage_scope {
  stage_rt* prev;
  explicit stage_scope(stage_rt* s) noexcept : prev(tl_stage) { tl_stage = s; }
  ~stage_scope() { tl_stage = prev; }
  stage_scope(const stage_scope&) = delete;
  stage_scope& operator=(const stage_scope&) = delete;
};

/// Sets tl_in for a scope.
struct input_scope {
  const layer* prev;
  explicit input_scope(const layer* l) noexcept : prev(tl_in) { tl_in = l; }
  ~input_scope() { tl_in = prev; }
  input_scope(const input_scope&) = delete;
  input_scope& operator=(const input_scope&) = delete;
};

}  // namespace sinew::detail
