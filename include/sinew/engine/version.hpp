#pragma once
/// \file version.hpp
/// Library version.
///
/// \code
/// std::printf("%s\n", sinew::version_string());   // "0.1.0"
/// \endcode
namespace sinew {
/// The library version as "MAJOR.MINOR.PATCH".
const char* version_string() noexcept;
/// The commit this library was built from: git's short hash, "-dirty" when
/// tracked files differed from it, "unknown" when built outside a checkout.
///
/// \code
/// std::printf("sinew %s (%s)\n", sinew::version_string(), sinew::build_commit());   // "sinew 0.1.0 (66cec48)"
/// \endcode
const char* build_commit() noexcept;
}  // namespace sinew
