// The JSON cursor of graph files and json_error: checked access whose errors
// name the JSON pointer, and the --set overrides applied before validation.
#include "json_cursor.hpp"

#include <algorithm>
#include <cmath>
#include <sstream>

namespace sinew {

namespace {
std::string compose(const std::string& file, const std::string& pointer, const std::string& message, std::size_t line,
                    std::size_t column) {
  if (line) return file + ":" + std::to_string(line) + ":" + std::to_string(column) + ": " + message;
  return file + ": " + (pointer.empty() ? std::string("/") : pointer) + ": " + message;
}
}  // namespace

json_error::json_error(std::string file, std::string pointer, std::string message, std::size_t line,
                       std::size_t column)
    : error(compose(file, pointer, message, line, column)),
      file_(std::move(file)),
      pointer_(std::move(pointer)),
      message_(std::move(message)),
      line_(line),
      column_(column) {}

namespace detail {

std::string pointer_token(const std::string& key) {
  std::string s;
  for (char c : key) {
    if (c == '~') s += "~0";
    else if (c == '/') s += "~1";
    else s += c;
  }
  return s;
}

std::string json_kind(const json& v) {
  switch (v.type()) {
    case json::value_t::null: return "null";
    case json::value_t::object: return "an object";
    case json::value_t::array: return "an array";
    case json::value_t::string: return "a string (" + v.dump() + ")";
    case json::value_t::boolean: return std::string("a boolean (") + (v.get<bool>() ? "true" : "false") + ")";
    case json::value_t::number_integer:
    case json::value_t::number_unsigned:
    case json::value_t::number_float: return "the number " + v.dump();
    default: return "an unsupported value";
  }
}

std::string comma_list(const std::vector<std::string>& items) {
  std::string s;
  for (const auto& i : items) s += (s.empty() ? "" : ", ") + i;
  return s;
}

void json_cursor::expect_object(std::initializer_list<const char*> allowed,
                                std::initializer_list<const char*> required) const {
  expect_object(std::vector<std::string>(allowed.begin(), allowed.end()),
                std::vector<std::string>(required.begin(), required.end()));
}

void json_cursor::expect_object(const std::vector<std::string>& allowed,
                                const std::vector<std::string>& required) const {
  if (!v_->is_object()) fail("expected an object, got " + json_kind(*v_));
  for (auto& [k, v] : v_->items()) {
    if (std::find(allowed.begin(), allowed.end(), k) != allowed.end()) continue;
    at(k).fail("unknown field '" + k + "' (allowed here: " + comma_list(allowed) + ")");
  }
  for (const auto& r : required)
    if (!v_->contains(r)) fail("missing required field '" + r + "'");
}

void json_cursor::expect_array() const {
  if (!v_->is_array()) fail("expected an array, got " + json_kind(*v_));
}

json_cursor json_cursor::required(const std::string& key) const {
  if (!v_->is_object()) fail("expected an object, got " + json_kind(*v_));
  if (!v_->contains(key)) fail("missing required field '" + key + "'");
  return at(key);
}

std::string json_cursor::as_string() const {
  if (!v_->is_string()) fail("expected a string, got " + json_kind(*v_));
  return v_->get<std::string>();
}

std::string json_cursor::as_choice(std::initializer_list<const char*> choices) const {
  return as_choice(std::vector<std::string>(choices.begin(), choices.end()));
}

std::string json_cursor::as_choice(const std::vector<std::string>& choices) const {
  std::string s = as_string();
  std::string list;
  for (const auto& c : choices) {
    if (s == c) return s;
    list += (list.empty() ? "" : ", ") + ("\"" + c + "\"");
  }
  fail("expected one of " + list + ", got \"" + s + "\"");
}

bool json_cursor::as_bool() const {
  if (!v_->is_boolean()) fail("expected true or false, got " + json_kind(*v_));
  return v_->get<bool>();
}

double json_cursor::as_number(double min, double max) const {
  if (!v_->is_number()) fail("expected a number, got " + json_kind(*v_));
  double d = v_->get<double>();
  if (!(d >= min && d <= max)) {
    std::ostringstream os;
    os << "expected a number in [" << min << ", " << max << "], got " << v_->dump();
    fail(os.str());
  }
  return d;
}

std::uint64_t json_cursor::as_uint(std::uint64_t min, std::uint64_t max) const {
  bool integral = v_->is_number_unsigned() || v_->is_number_integer() ||
                  (v_->is_number_float() && std::floor(v_->get<double>()) == v_->get<double>());
  if (!integral) fail("expected a non-negative integer, got " + json_kind(*v_));
  if ((v_->is_number_integer() && !v_->is_number_unsigned() && v_->get<std::int64_t>() < 0) ||
      (v_->is_number_float() && v_->get<double>() < 0))
    fail("expected a non-negative integer, got " + v_->dump());
  if (v_->is_number_float() && v_->get<double>() > 1.8e19) fail("the number " + v_->dump() + " is too large");
  std::uint64_t u = v_->is_number_float() ? std::uint64_t(v_->get<double>()) : v_->get<std::uint64_t>();
  if (u < min || u > max)
    fail("expected an integer in [" + std::to_string(min) + ", " + std::to_string(max) + "], got " + v_->dump());
  return u;
}

void line_column(std::string_view text, std::size_t offset, std::size_t& line, std::size_t& column) {
  line = 1;
  column = 1;
  for (std::size_t i = 0; i < offset && i < text.size(); ++i) {
    if (text[i] == '\n') ++line, column = 1;
    else ++column;
  }
}

namespace {

/// "source.count" or "/source/count" -> JSON pointer.
std::string to_pointer(const std::string& path) {
  if (path.empty() || path[0] == '/') return path;
  std::string p;
  std::size_t start = 0;
  while (start <= path.size()) {
    std::size_t dot = path.find('.', start);
    if (dot == std::string::npos) dot = path.size();
    p.push_back('/');
    p.append(pointer_token(path.substr(start, dot - start)));
    start = dot + 1;
  }
  return p;
}

}  // namespace

void apply_override(json& doc, const std::string& setting, const std::string& file) {
  const std::string where = "--set " + setting;
  std::size_t eq = setting.find('=');
  if (eq == std::string::npos || eq == 0)
    throw json_error(file, "", where + ": expected POINTER=VALUE, e.g. /source/count=10 or source.count=10");
  std::string ptr_text = to_pointer(setting.substr(0, eq));
  std::string text = setting.substr(eq + 1);
  json value = json::parse(text, nullptr, false);
  if (value.is_discarded()) value = text;  // not JSON: a plain string
  json::json_pointer ptr;
  try {
    ptr = json::json_pointer(ptr_text);
  } catch (const json::exception& e) {
    throw json_error(file, ptr_text, where + ": not a valid JSON pointer");
  }
  json::json_pointer parent = ptr.parent_pointer();
  if (ptr.empty()) throw json_error(file, "/", where + ": cannot replace the whole document");
  if (!doc.contains(parent))
    throw json_error(file, parent.to_string().empty() ? "/" : parent.to_string(),
                     where + ": the parent of the field to set does not exist");
  json& p = doc[parent];
  const std::string last = ptr.back();
  if (p.is_array()) {
    std::size_t idx = 0;
    bool num = !last.empty() && last.find_first_not_of("0123456789") == std::string::npos;
    if (num) idx = std::stoul(last);
    if (!num || idx >= p.size())
      throw json_error(file, ptr_text, where + ": index '" + last + "' is not an element of the array (size " +
                                           std::to_string(p.size()) + ")");
    p[idx] = value;
  } else if (p.is_object()) {
    p[last] = value;
  } else {
    throw json_error(file, parent.to_string(), where + ": cannot set a field inside " + json_kind(p));
  }
}

}  // namespace detail
}  // namespace sinew
