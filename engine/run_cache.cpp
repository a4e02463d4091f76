// Deleting a kept run needs every type it owns.
#include "run_cache.hpp"

#include "channel.hpp"
#include "junction.hpp"
#include "ordered_region.hpp"
#include "run_state.hpp"
#include "stage.hpp"

namespace sinew::detail {

run_cache::~run_cache() {
  for (std::size_t i = 0; i < n_; ++i) delete kept_[i];
}

void run_cache::give(run_state* s) noexcept {
  {
    std::lock_guard<std::mutex> lk(m_);
    if (n_ < max_kept) {
      kept_[n_++] = s;
      return;
    }
  }
  delete s;
}

}  // namespace sinew::detail
