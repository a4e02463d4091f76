#include <sinew/engine/sink.hpp>

#include <cstring>
#include <string>

#include <sinew/engine/error.hpp>

namespace sinew::detail {

void copy_layer_into(const layer& from, unsigned buffers, void* const* dst, const char* who) {
  if (from.size() < buffers)
    throw error(std::string(who) + ": result has " + std::to_string(from.size()) + " buffer(s), container needs " +
                std::to_string(buffers));
  for (unsigned i = 0; i < buffers; ++i)
    if (dst[i] != from[i]->data()) std::memcpy(dst[i], from[i]->data(), from[i]->bytes());
}

}  // namespace sinew::detail
