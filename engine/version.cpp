#include <sinew/engine/version.hpp>

#include "sinew_build_commit.h"  // generated at build time (cmake/build_commit.cmake)

namespace sinew {
const char* version_string() noexcept { return "0.1.0"; }
const char* build_commit() noexcept { return SINEW_BUILD_COMMIT; }
}  // namespace sinew
