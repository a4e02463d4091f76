// The library's version and the commit it was built from (cmake/build_commit.cmake).
#include <catch2/catch.hpp>

#include <regex>
#include <string>

#include <sinew/engine/version.hpp>

TEST_CASE("version: the version is MAJOR.MINOR.PATCH and the build commit a short hash", "[version]") {
  CHECK(std::regex_match(std::string(sinew::version_string()), std::regex(R"(\d+\.\d+\.\d+)")));
  // A build outside a git checkout says "unknown"; inside one, the short
  // hash of HEAD, "-dirty" when tracked files differed from it.
  const std::string c = sinew::build_commit();
  INFO("build_commit() = " << c);
  CHECK((c == "unknown" || std::regex_match(c, std::regex(R"([0-9a-f]{7,40}(-dirty)?)"))));
}
