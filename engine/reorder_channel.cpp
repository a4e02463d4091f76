// The reorder channel's slow paths: tickets outside the window and draining
// in any order, both only once the run drops units.
#include "reorder_channel.hpp"

namespace sinew::detail {

reorder_channel::reorder_channel(std::size_t cap_max, int depth)
    : depth_(depth), mask_(ring_size_for(2 * cap_max) - 1), cells_(new cell[mask_ + 1]) {
  // Twice the capacity: slack, so that a producer finds its ticket's cell
  // free (see the class comment).
  restart();
}

void reorder_channel::restart() noexcept {
  for (std::size_t i = 0; i <= mask_; ++i) cells_[i].seq.store(i, std::memory_order_relaxed);
  next_.store(0, std::memory_order_relaxed);
  overflow_.clear();  // empty already: the run held no unit when it ended
  overflow_n_.store(0, std::memory_order_relaxed);
}

void reorder_channel::push_overflow(std::uint64_t t, work_unit* u) {
  std::lock_guard<std::mutex> lk(om_);
  overflow_.emplace(t, u);
  overflow_n_.fetch_add(1, std::memory_order_seq_cst);
}

bool reorder_channel::overflow_has_next() const noexcept {
  if (overflow_n_.load(std::memory_order_seq_cst) == 0) return false;
  std::lock_guard<std::mutex> lk(om_);
  return !overflow_.empty() && overflow_.begin()->first == next_.load(std::memory_order_seq_cst);
}

bool reorder_channel::pop_overflow(work_unit*& u, std::uint64_t& ticket, bool any_order, bool eos) {
  if (overflow_n_.load(std::memory_order_seq_cst) == 0) return false;
  std::lock_guard<std::mutex> lk(om_);
  if (overflow_.empty()) return false;
  auto it = overflow_.begin();
  std::uint64_t n = next_.load(std::memory_order_seq_cst);
  if (it->first != n && !any_order) return false;
  if (!eos)  // end of stream has the last ticket: skip only it
    while (it != overflow_.end() && it->second->end_of_stream()) ++it;
  if (it == overflow_.end()) return false;
  // In order: `next` moves only with the cell of ticket n, which is not in
  // the ring (it is here), so no one else takes n meanwhile.
  if (it->first == n && !next_.compare_exchange_strong(n, n + 1, std::memory_order_seq_cst)) return false;
  u = it->second;
  ticket = it->first;
  overflow_.erase(it);
  overflow_n_.fetch_sub(1, std::memory_order_seq_cst);
  return true;
}

bool reorder_channel::any_cell_full() const noexcept {
  for (std::uint64_t i = 0; i <= mask_; ++i)
    if (((cells_[i].seq.load(std::memory_order_seq_cst) - 1) & mask_) == i) return true;
  return overflow_n_.load(std::memory_order_seq_cst) > 0;
}

bool reorder_channel::pop_any_cell(work_unit*& u, std::uint64_t& ticket, bool eos) {
  // A cell is full when seq - 1 is its index modulo the size; taking it
  // frees it for the ticket one lap later.
  for (std::uint64_t i = 0; i <= mask_; ++i) {
    cell& c = cells_[i];
    std::uint64_t s = c.seq.load(std::memory_order_acquire);
    if (((s - 1) & mask_) != i) continue;
    work_unit* x = c.u.load(std::memory_order_relaxed);
    if (!eos && x->end_of_stream()) continue;  // published with the seq just read (acquire)
    if (c.seq.compare_exchange_strong(s, s - 1 + mask_ + 1, std::memory_order_seq_cst)) {
      u = x;
      ticket = s - 1;
      return true;
    }
  }
  return false;
}

}  // namespace sinew::detail
