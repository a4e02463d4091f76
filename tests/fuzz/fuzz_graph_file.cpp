// Fuzz target: the graph-file loader (parse, --set-free validation, tree
// building). Invalid input must end in sinew::json_error, never a crash, a
// hang or another exception.
#include <sinew/json/graph_file.hpp>

#include <cstdint>
#include <string_view>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  try {
    sinew::graph_file::parse(text, "fuzz.json");
  } catch (const sinew::json_error&) {
  }
  return 0;
}
