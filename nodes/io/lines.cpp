// Text lines: one unit per line, or record batches of lines (bytes back to
// back, u64 offsets); sinks write each record followed by '\n'.
#include <sinew/io/lines.hpp>

#include <fcntl.h>
#include <sys/stat.h>

#include <cerrno>
#include <cstring>

#include <sinew/detail/clock.hpp>
#include <sinew/engine/buffer_pool.hpp>

#include "followed_file.hpp"
#include "stream.hpp"

namespace sinew::io {

namespace {

std::string fd_label(const char* what, int fd) { return std::string(what) + "(descriptor " + std::to_string(fd) + ")"; }

bool regular_file(int fd) {
  struct stat st {};
  return ::fstat(fd, &st) == 0 && S_ISREG(st.st_mode);
}

class lines_source final : public detail::io_source {
 public:
  lines_source(detail::unique_fd owned, int fd, std::string who, batching b)
      : io_source(b), owned_(std::move(owned)), who_(std::move(who)), r_(fd, who_, &wake_), regular_(regular_file(fd)) {}
  lines_source(const std::string& path, follow_options f, std::string who, batching b)
      : io_source(b), who_(std::move(who)), follow_(std::make_unique<detail::followed_file>(path, who_, &wake_, f)),
        r_(*follow_, who_, &wake_), regular_(false) {}
  bool produce(unit_builder& b) override { return batching_on() ? produce_batch(b) : produce_one(b); }
  std::string label() const override { return "source(" + who_ + ")"; }
  // A pipe or a terminal may wait for data: a thread of its own; a regular
  // file is read in a task (see records.cpp).
  bool blocking() const override { return !regular_; }

 private:
  bool produce_one(unit_builder& b) {
    std::string_view line;
    if (r_.peek_line(line) != detail::fd_reader::status::ok) return false;  // end, or stopped
    b.set_shape(shape::d1(line.size()));
    auto v = b.add<std::uint8_t>();
    if (!line.empty()) std::memcpy(v.data(), line.data(), line.size());
    r_.take_line();
    return true;
  }

  // Lines until the batch holds `records` lines or `bytes` bytes, or
  // `latency` has passed since its first line was read (fd_reader::
  // data_within); a line longer than `bytes` is a batch of its own.
  bool produce_batch(unit_builder& b) {
    const batching& o = batch();
    buffer_pool& pool = buffer_pool::global();
    // copy_slack past the batch's bytes: short lines are copied 16 bytes at a time.
    buffer_ref data = pool.acquire<std::uint8_t>(o.bytes + detail::copy_slack);
    buffer_ref offs = pool.acquire<std::uint64_t>(o.records + 1);
    std::uint64_t* off = offs.data<std::uint64_t>();
    std::size_t n = 0, used = 0;
    std::uint64_t deadline = 0;
    off[0] = 0;
    while (n < o.records) {
      if (n > 0) {
        n += r_.take_buffered_lines(reinterpret_cast<char*>(data.data<std::uint8_t>()), data->count() - detail::copy_slack,
                                    used, off + n + 1, o.records - n);
        if (n == o.records || !r_.data_within(deadline)) break;
      }
      std::string_view line;
      if (r_.peek_line(line) != detail::fd_reader::status::ok) break;  // end, or stopped
      if (used + line.size() + detail::copy_slack > data->count()) {
        if (n > 0) break;  // the line starts the next batch
        data = pool.acquire<std::uint8_t>(line.size() + detail::copy_slack);
      }
      std::memcpy(data.data<std::uint8_t>() + used, line.data(), line.size());
      r_.take_line();
      used += line.size();
      off[++n] = used;
      if (n == 1) deadline = sinew::detail::now_ns() + std::uint64_t(o.latency.count()) * 1000;
    }
    if (n == 0) return false;
    data->shrink(used);
    offs->shrink(n + 1);
    b.set_shape(shape::d1(used));
    b.add(std::move(data));
    b.set_records(record_index::varying(std::move(offs), n));
    return true;
  }

  detail::unique_fd owned_;
  std::string who_;
  std::unique_ptr<detail::followed_file> follow_;  // before r_, which reads it
  detail::fd_reader r_;
  bool regular_;  // read in a task: a regular file, not followed
};

// Each record (line) of buffer 0, then '\n'.
class lines_sink final : public detail::output_sink {
 public:
  using output_sink::output_sink;

 private:
  void check_types(const sinew::detail::type_list& out) override {
    if (!out.any && (out.types.empty() || out.types[0]->size != 1))
      throw graph_error(label(), "lines need 1-byte elements in buffer 0; the graph produces " + out.str());
  }
  void write_unit(std::uint64_t seq, const layer& l, const record_index& r) override {
    if (l.empty() || l[0]->type().size != 1)
      throw error(who() + ": unit " + std::to_string(seq) + " has no buffer of 1-byte elements to write as a line");
    const char* p = static_cast<const char*>(l[0]->data());
    if (!r.fits(l.count())) {
      out().write(p, l.count());
      out().write("\n", 1);
    } else if (r.offsets()) {
      out().write_lines(p, r.offsets().data<std::uint64_t>(), r.size(), l[0]->capacity());
    } else {
      for (std::size_t i = 0; i < r.size(); ++i) {  // fixed-size records as lines
        out().write(p + r.begin(i), r.end(i) - r.begin(i));
        out().write("\n", 1);
      }
    }
  }
};

}  // namespace

sinew::source read_lines(int fd, batching b) {
  return sinew::source(std::make_shared<lines_source>(detail::unique_fd(), fd, fd_label("read_lines", fd), b));
}

sinew::source read_lines_file(std::string path, batching b) {
  std::string who = "read_lines_file '" + path + "'";
  detail::unique_fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd) throw error(who + ": cannot open: " + detail::errno_text(errno));
  struct stat st {};
  if (::fstat(fd.get(), &st) == 0 && S_ISDIR(st.st_mode)) throw error(who + ": is a directory");
  const int raw = fd.get();
  return sinew::source(std::make_shared<lines_source>(std::move(fd), raw, std::move(who), b));
}

sinew::source follow_lines_file(std::string path, follow_options f, batching b) {
  std::string who = "follow_lines_file '" + path + "'";
  return sinew::source(std::make_shared<lines_source>(path, f, std::move(who), b));
}

sinew::sink write_lines(int fd) { return sinew::sink(std::make_shared<lines_sink>(std::string(), fd, fd_label("write_lines", fd))); }

sinew::sink write_lines_file(std::string path) {
  std::string who = "write_lines_file '" + path + "'";
  return sinew::sink(std::make_shared<lines_sink>(std::move(path), -1, std::move(who)));
}

}  // namespace sinew::io
