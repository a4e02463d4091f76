#include "stage_scheduler.hpp"

#include <span>
#include <string_view>

#include <sinew/detail/clock.hpp>
#include <sinew/engine/trace.hpp>

#include "run_state.hpp"
#include "stage.hpp"
#include "stage_context.hpp"

namespace sinew::detail {

namespace {
// Whether any buffer of `l` was placed (then its placement is worth a hint).
bool placed(const layer* l) noexcept {
  if (!l) return false;
  for (unsigned i = 0; i < l->size(); ++i)
    if ((*l)[i] && (*l)[i]->placed_nodes()) return true;
  return false;
}
}  // namespace

void stage_scheduler::parallel_for(std::size_t n, std::size_t grain,
                                   function_ref<void(std::size_t, std::size_t)> body) {
  parallel_for_at({}, n, grain, body);
}

void stage_scheduler::parallel_for_at(const locality_hint& given, std::size_t n, std::size_t grain,
                                      function_ref<void(std::size_t, std::size_t)> body) {
  locality_hint hint = given;
  if (const layer* in = tl_in; given.numa_node < 0 && given.reads.empty() && given.bytes_on_node.empty() && placed(in))
    hint.reads = std::span<const buffer_ref>(&(*in)[0], in->size());
  stage_rt* st = &st_;
  trace* tr = st->run->tr;
  if (!tr) {
    real_.parallel_for_at(hint, n, grain, [&](std::size_t b, std::size_t e) {
      stage_scope in_stage(st);
      body(b, e);
      st->chunks.fetch_add(1, std::memory_order_relaxed);
    });
    return;
  }
  const std::uint64_t seq = tl_seq;  // the unit the caller is processing
  real_.parallel_for_at(hint, n, grain, [&](std::size_t b, std::size_t e) {
    stage_scope in_stage(st);
    trace::scope ts(tr);
    const std::uint64_t t0 = now_ns();
    body(b, e);
    tr->complete("chunk", st->spec ? std::string_view(st->spec->path) : std::string_view("chunk"), t0, now_ns() - t0,
                 {{"seq", seq}, {"begin", b}, {"end", e}});
    st->chunks.fetch_add(1, std::memory_order_relaxed);
  });
}

}  // namespace sinew::detail
