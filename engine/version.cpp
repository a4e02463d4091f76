#include <sinew/version.hpp>

namespace sinew {
const char* version_string() noexcept { return "0.1.0"; }
}  // namespace sinew
