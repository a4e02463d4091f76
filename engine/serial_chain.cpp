// Serial chains: which stages form one, and whether it runs on one worker.
#include "serial_chain.hpp"

#include <algorithm>
#include <cstdint>
#include <utility>

#include "channel.hpp"
#include "stage.hpp"
#include "wake_rule.hpp"

namespace sinew::detail {

namespace {
constexpr std::uint32_t warm_up_looks = 8;  // per member
bool chainable(const stage_rt* s) { return s && s->max_active == 1 && !s->junction && !(s->spec && s->spec->async); }
/// The stage `s` feeds, when both may be in one chain.
stage_rt* next_in_chain(const stage_rt* s) {
  stage_rt* c = s->out ? s->out->consumer : nullptr;
  return chainable(c) && c->in == s->out ? c : nullptr;
}
}  // namespace

serial_chain::serial_chain(std::vector<stage_rt*> m)
    : members(std::move(m)), floor_(new std::atomic<std::uint32_t>[members.size()]) {
  restart();
}

void serial_chain::restart() noexcept {
  for (std::size_t i = 0; i < members.size(); ++i) floor_[i].store(UINT32_MAX, std::memory_order_relaxed);
  looks_.store(0, std::memory_order_relaxed);
  together_.store(true, std::memory_order_relaxed);
}

bool serial_chain::together() noexcept {
  // Called by the members' activations on any worker: relaxed, a stale or
  // lost update only moves one producer's activation to another worker.
  std::uint64_t sum = 0, slowest = 0;
  for (std::size_t i = 0; i < members.size(); ++i) {
    const std::uint32_t c = members[i]->last_cost_ns.load(std::memory_order_relaxed);
    if (c == UINT32_MAX) continue;  // not measured yet: counts as free
    const std::uint32_t f = floor_[i].load(std::memory_order_relaxed);
    const std::uint32_t g = f == UINT32_MAX ? c : std::uint32_t(std::min<std::uint64_t>(c, std::uint64_t(f) + f / 8 + 1));
    if (g != f) floor_[i].store(g, std::memory_order_relaxed);
    sum += g;
    slowest = std::max<std::uint64_t>(slowest, g);
  }
  const std::uint32_t look = looks_.load(std::memory_order_relaxed);
  if (look < warm_up_looks * members.size()) {
    looks_.store(look + 1, std::memory_order_relaxed);
    return true;
  }
  const bool was = together_.load(std::memory_order_relaxed);
  const bool now = chain_runs_together(sum, slowest, was);
  if (now != was) together_.store(now, std::memory_order_relaxed);
  return now;
}

std::vector<std::unique_ptr<serial_chain>> serial_chain::find(const std::vector<stage_rt*>& stages) {
  std::vector<std::unique_ptr<serial_chain>> chains;
  for (stage_rt* head : stages) {
    // A head: chainable, and its producer (if a stage) does not continue into it.
    if (!chainable(head) || !next_in_chain(head)) continue;
    const stage_rt* p = head->in ? head->in->producer : nullptr;
    if (chainable(p) && next_in_chain(p) == head) continue;
    std::vector<stage_rt*> m;
    for (stage_rt* s = head; s; s = next_in_chain(s)) m.push_back(s);
    chains.push_back(std::unique_ptr<serial_chain>(new serial_chain(std::move(m))));
    for (stage_rt* s : chains.back()->members) s->chain = chains.back().get();
  }
  return chains;
}

}  // namespace sinew::detail
