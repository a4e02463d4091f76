#pragma once
// A position in a JSON document being validated: the value, its JSON pointer,
// and checked accessors whose errors name the pointer and say what was
// expected. Every part of the graph-file loader reads the document through it.
#include <cstdint>
#include <initializer_list>
#include <limits>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include <sinew/json/graph_file.hpp>

namespace sinew::detail {

using json = nlohmann::json;

/// Escapes one JSON-pointer reference token (RFC 6901).
std::string pointer_token(const std::string& key);
/// "an integer", "a string", ... for messages.
std::string json_kind(const json& v);
/// "a, b, c" for messages.
std::string comma_list(const std::vector<std::string>& items);

class json_cursor {
 public:
  json_cursor(const json& v, std::string pointer, const std::string* file) : v_(&v), ptr_(std::move(pointer)), file_(file) {}

  const json& value() const noexcept { return *v_; }
  const std::string& pointer() const noexcept { return ptr_; }
  const std::string& file() const noexcept { return *file_; }

  [[noreturn]] void fail(const std::string& message) const { throw json_error(*file_, ptr_.empty() ? "/" : ptr_, message); }

  json_cursor at(const std::string& key) const { return json_cursor((*v_)[key], ptr_ + "/" + pointer_token(key), file_); }
  json_cursor at(std::size_t i) const { return json_cursor((*v_)[i], ptr_ + "/" + std::to_string(i), file_); }
  bool has(const std::string& key) const { return v_->is_object() && v_->contains(key); }

  /// Requires an object whose keys are all in `allowed` (and each of
  /// `required` present).
  void expect_object(std::initializer_list<const char*> allowed, std::initializer_list<const char*> required = {}) const;
  void expect_object(const std::vector<std::string>& allowed, const std::vector<std::string>& required) const;
  void expect_array() const;
  /// A child that must exist.
  json_cursor required(const std::string& key) const;

  std::string as_string() const;
  /// One of `choices`.
  std::string as_choice(std::initializer_list<const char*> choices) const;
  std::string as_choice(const std::vector<std::string>& choices) const;
  bool as_bool() const;
  double as_number(double min = -std::numeric_limits<double>::infinity(),
                   double max = std::numeric_limits<double>::infinity()) const;
  std::uint64_t as_uint(std::uint64_t min = 0, std::uint64_t max = std::numeric_limits<std::uint64_t>::max()) const;

  /// Optional members with defaults.
  std::string get_string(const std::string& key, const std::string& def) const { return has(key) ? at(key).as_string() : def; }
  bool get_bool(const std::string& key, bool def) const { return has(key) ? at(key).as_bool() : def; }
  std::uint64_t get_uint(const std::string& key, std::uint64_t def, std::uint64_t min = 0,
                         std::uint64_t max = std::numeric_limits<std::uint64_t>::max()) const {
    return has(key) ? at(key).as_uint(min, max) : def;
  }
  double get_number(const std::string& key, double def, double min = -std::numeric_limits<double>::infinity(),
                    double max = std::numeric_limits<double>::infinity()) const {
    return has(key) ? at(key).as_number(min, max) : def;
  }

 private:
  const json* v_;
  std::string ptr_;
  const std::string* file_;
};

/// Applies one `--set` override ("pointer=value") to `doc`.
void apply_override(json& doc, const std::string& setting, const std::string& file);

/// Line and column (1-based) of byte `offset` in `text`.
void line_column(std::string_view text, std::size_t offset, std::size_t& line, std::size_t& column);

}  // namespace sinew::detail
