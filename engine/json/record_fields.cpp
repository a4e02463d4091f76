// Fields shared by the source and sink types of graph files (record_fields.hpp).
#include "record_fields.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <sstream>

#include <sinew/engine/work_unit.hpp>

#include "element_types.hpp"
#include "json_cursor.hpp"

namespace sinew::detail {
namespace {

std::uint64_t physical_memory() {
  long pages = ::sysconf(_SC_PHYS_PAGES), size = ::sysconf(_SC_PAGE_SIZE);
  return pages > 0 && size > 0 ? std::uint64_t(pages) * std::uint64_t(size) : (std::uint64_t(1) << 34);
}

}  // namespace

io::record_layout layout_at(const json_cursor& c, bool allow_no_buffers) {
  io::record_layout l;
  json_cursor bufs = c.required("buffers");
  bufs.expect_array();
  if (bufs.value().size() > layer::max_buffers) bufs.fail("at most 8 buffers per unit");
  if (bufs.value().empty() && !allow_no_buffers) bufs.fail("at least one buffer is needed here");
  for (std::size_t i = 0; i < bufs.value().size(); ++i) l.buffers.push_back(&elem_type_at(bufs.at(i)));
  json_cursor sh = c.required("shape");
  sh.expect_array();
  std::size_t r = sh.value().size();
  if (r < 1 || r > 3) sh.fail("a shape has 1, 2 or 3 extents, got " + std::to_string(r));
  std::size_t e[3] = {1, 1, 1};
  double total = 1;
  for (std::size_t i = 0; i < r; ++i) {
    e[i] = std::size_t(sh.at(i).as_uint(1, std::uint64_t(1) << 40));
    total *= double(e[i]);
  }
  l.shape = r == 1 ? shape::d1(e[0]) : r == 2 ? shape::d2(e[0], e[1]) : shape::d3(e[0], e[1], e[2]);
  double bytes = 0;
  for (auto* t : l.buffers) bytes += total * double(t->size);
  const double limit = double(physical_memory()) / 4;
  if (bytes > limit || total > 9e15) {
    std::ostringstream os;
    os << "a unit of " << bytes / double(1 << 20) << " MiB is more than a quarter of this machine's memory ("
       << limit / double(1 << 20) << " MiB)";
    sh.fail(os.str());
  }
  return l;
}

std::optional<std::uint64_t> count_at(const json_cursor& c, bool required) {
  if (!c.has("count")) {
    if (required) c.fail("missing required field 'count' (a number of units, or \"unbounded\")");
    return std::nullopt;
  }
  json_cursor n = c.at("count");
  if (n.value().is_string()) {
    n.as_choice({"unbounded"});
    return std::nullopt;
  }
  return n.as_uint(0, std::uint64_t(1) << 53);
}

std::uint16_t port_at(const json_cursor& c) { return std::uint16_t(c.required("port").as_uint(1, 65535)); }

io::batching batching_at(const json_cursor& c) {
  io::batching b;
  if (!c.has("batch")) return b;
  json_cursor f = c.at("batch");
  if (f.value().is_boolean()) {
    b.mode = f.as_bool() ? io::batching::when::always : io::batching::when::never;
    return b;
  }
  if (!f.value().is_object()) f.fail("expected true, false or an object {\"records\", \"bytes\", \"latency_ms\"}");
  f.expect_object({"records", "bytes", "latency_ms"});
  b.mode = io::batching::when::always;
  // A batch reserves its limits up front: at most a million records and 64 MiB.
  b.records = std::size_t(f.get_uint("records", b.records, 1, std::uint64_t(1) << 20));
  b.bytes = std::size_t(f.get_uint("bytes", b.bytes, 1, std::uint64_t(64) << 20));
  b.latency = std::chrono::microseconds(std::int64_t(f.get_number("latency_ms", double(b.latency.count()) / 1000, 0, 3.6e6) * 1000));
  return b;
}

void check_batching(const json_cursor& source, const io::batching& b, const std::string& whole_unit_at) {
  if (b.mode == io::batching::when::always && !whole_unit_at.empty())
    source.at("batch").fail("'" + whole_unit_at + "' treats a unit as a whole: a record batch would not give the "
                            "results of its records one by one");
}

bool path_exists(const std::string& path, bool dir) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return false;
  return dir ? S_ISDIR(st.st_mode) : S_ISREG(st.st_mode);
}

bool lines_format_at(const json_cursor& c) {
  if (!c.has("format") || c.at("format").as_choice({"binary", "lines"}) != "lines") return false;
  for (const char* f : {"buffers", "shape"})
    if (c.has(f)) c.at(f).fail("text lines are 1-D u8 records: no \"" + std::string(f) + "\" with \"format\": \"lines\"");
  return true;
}

io::message_format message_format_at(const json_cursor& c, bool multipart) {
  io::message_format f;
  if (!lines_format_at(c)) f.layout = layout_at(c, false);
  if (multipart && c.has("multipart")) {
    f.multipart = c.at("multipart").as_bool();
    if (f.multipart && !f.layout) c.at("multipart").fail("multipart messages carry binary records, not text lines");
  }
  if (c.has("malformed"))
    f.malformed = c.at("malformed").as_choice({"fail", "skip"}) == "skip" ? io::on_malformed::skip : io::on_malformed::fail;
  return f;
}

std::chrono::milliseconds milliseconds_at(const json_cursor& c, const std::string& key) {
  return std::chrono::milliseconds(std::uint64_t(c.get_number(key, 0, 0, 1e9) * 1000 + 0.5));
}

}  // namespace sinew::detail
