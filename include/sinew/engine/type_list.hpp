#pragma once
/// \file type_list.hpp
/// The element types of a layer's buffers, as a node declares them: what
/// `graph` checks between stages, and what the buffers a graph makes hold.
///
/// \code
/// sinew::detail::type_list t{false, {&sinew::elem_type_of<float>()}};
/// sinew::layer l(sinew::shape::d1(n));
/// sinew::detail::add_pool_buffers(l, t);    // one pooled float buffer of n elements
/// sinew::detail::check_layer(l, t, "input");
/// \endcode
#include <string>
#include <vector>

#include <sinew/engine/elem_type.hpp>
#include <sinew/engine/work_unit.hpp>

namespace sinew::detail {

/// Element types of the buffers of a layer; `any` = not checked.
struct type_list {
  bool any = false;
  std::vector<const elem_type*> types;
  std::string str() const;
  bool matches(const type_list& o) const;
};

[[noreturn, gnu::cold]] void bad_layer(const layer& l, const type_list& t, const char* which);
/// Throws if `l` lacks the buffers `t` describes (element size, and as many
/// elements as the buffer's shape). Inline: sources check every unit.
inline void check_layer(const layer& l, const type_list& t, const char* which) {
  if (t.any) return;
  if (l.size() < t.types.size()) [[unlikely]]
    bad_layer(l, t, which);
  for (unsigned i = 0; i < t.types.size(); ++i)
    if (l[i]->type().size != t.types[i]->size || l[i]->count() < l.shape_of(i).count()) [[unlikely]]
      bad_layer(l, t, which);
}

[[noreturn, gnu::cold]] void not_uniform(const layer& l, const char* leaf);
/// Throws unless every buffer of `l` has the layer's shape (layer::uniform):
/// for leaves that read every buffer at the same element; `leaf` names the
/// kind ("a per-element map").
inline void require_uniform(const layer& l, const char* leaf) {
  if (!l.uniform()) [[unlikely]]
    not_uniform(l, leaf);
}

/// Adds to `l` one buffer from the global pool per type of `t`, of
/// `l.count()` elements.
void add_pool_buffers(layer& l, const type_list& t);

}  // namespace sinew::detail
