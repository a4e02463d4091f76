#include "ordered_region.hpp"

#include "stage.hpp"

namespace sinew::detail {

void region_rt::wake_entry() { entry->notify(); }

}  // namespace sinew::detail
