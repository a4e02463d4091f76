#pragma once
// The table behind the "type" field of a graph file's source and sink: one
// entry per type, in registration order (the order error messages list them
// in), looked up by name.
#include <deque>
#include <string>
#include <string_view>
#include <vector>

#include <sinew/engine/error.hpp>

#include "json_cursor.hpp"

namespace sinew::detail {

/// `Entry` has `name`, `fields` (allowed besides "type") and `required`.
template <class Entry>
class type_registry {
 public:
  /// `what` names the section in messages ("source", "sink").
  explicit type_registry(std::string what) : what_(std::move(what)) {}

  /// Adds a type; a name registered twice is the registrant's bug. Call it
  /// before any file is read (the tables are filled on first use).
  void add(Entry e) {
    if (find(e.name)) throw error("graph files: a " + what_ + " type named '" + e.name + "' is already registered");
    entries_.push_back(std::move(e));  // a deque: entries keep their address
  }

  const Entry* find(std::string_view name) const {
    for (const Entry& e : entries_)
      if (e.name == name) return &e;
    return nullptr;
  }

  std::vector<std::string> names() const {
    std::vector<std::string> v;
    for (const Entry& e : entries_) v.push_back(e.name);
    return v;
  }

  /// The entry `c`'s "type" names, once `c` is known to be an object holding
  /// only that type's fields (and all of its required ones).
  const Entry& at(const json_cursor& c) const {
    if (!c.value().is_object())
      c.fail("expected a " + what_ + " object with a \"type\", got " + json_kind(c.value()));
    const Entry& e = *find(c.required("type").as_choice(names()));
    std::vector<std::string> allowed{"type"};
    allowed.insert(allowed.end(), e.fields.begin(), e.fields.end());
    c.expect_object(allowed, e.required);
    return e;
  }

  const std::deque<Entry>& entries() const noexcept { return entries_; }

 private:
  std::string what_;
  std::deque<Entry> entries_;
};

/// The registry of `Entry`s that `fill` registers, filled on first use.
template <class Entry, void (*fill)(type_registry<Entry>&)>
const type_registry<Entry>& filled_registry(const char* what) {
  static const type_registry<Entry> r = [what] {
    type_registry<Entry> t(what);
    fill(t);
    return t;
  }();
  return r;
}

}  // namespace sinew::detail
