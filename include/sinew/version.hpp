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
}  // namespace sinew
