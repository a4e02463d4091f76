// Binary record sources and sinks: files, descriptors, standard I/O.
#include <sinew/io/records.hpp>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

#include <sinew/detail/clock.hpp>
#include <sinew/engine/buffer_pool.hpp>

#include "followed_file.hpp"
#include "stream.hpp"

namespace sinew::io {

namespace {

std::string fd_name(int fd) {
  if (fd == 0) return "standard input";
  if (fd == 1) return "standard output";
  if (fd == 2) return "standard error";
  return "descriptor " + std::to_string(fd);
}

// Reads records from a descriptor it may own (files) or borrow (pipes), or
// from a followed file.
class record_source final : public detail::io_source {
 public:
  record_source(const std::string& path, follow_options f, std::string who, record_layout l, batching b)
      : io_source(b), who_(std::move(who)), l_(std::move(l)),
        follow_(std::make_unique<detail::followed_file>(path, who_, &wake_, f)), r_(*follow_, who_, &wake_) {
    l_.check(who_);
  }
  record_source(detail::unique_fd owned, int fd, std::string who, record_layout l, batching b)
      : io_source(b), owned_(std::move(owned)), who_(std::move(who)), l_(std::move(l)), r_(fd, who_, &wake_) {
    l_.check(who_);
    struct stat st {};
    regular_ = ::fstat(fd, &st) == 0 && S_ISREG(st.st_mode);
    if (regular_) {
      off_t at = ::lseek(fd, 0, SEEK_CUR);
      std::uint64_t left = std::uint64_t(st.st_size) - std::uint64_t(at > 0 ? at : 0);
      records_ = left / l_.bytes();
    }
  }
  bool produce(unit_builder& b) override {
    return fill_records(b, l_, r_, [&](char* const* dst, std::size_t room) -> std::size_t {
      const std::uint64_t at = r_.offset();
      // One buffer of small records: read straight into the batch.
      if (l_.buffers.size() == 1 && r_.empty() && l_.bytes() <= r_.capacity() && room * l_.bytes() >= r_.capacity()) {
        detail::fd_reader::status st;
        if (const std::size_t k = r_.read_records(dst[0], l_.bytes(), room, st)) return read_ += k, k;
        if (r_.empty()) {  // nothing came: the end, or stopped
          if (st == detail::fd_reader::status::eof) check_end(0, at);
          return 0;
        }
      }
      const detail::record_read rr = detail::read_record(r_, l_, dst);
      if (rr.st != detail::fd_reader::status::ok) {
        if (rr.st == detail::fd_reader::status::eof) check_end(rr.got, at);
        return 0;  // the end, or stopped
      }
      // One buffer: the records already read ahead follow in one copy.
      const std::size_t k = l_.buffers.size() == 1 ? 1 + r_.take_buffered(dst[0] + l_.bytes(), l_.bytes(), room - 1) : 1;
      read_ += k;
      return k;
    });
  }
  std::optional<std::uint64_t> size_hint() const override {
    if (!records_) return std::nullopt;
    const std::size_t per = per_unit(l_.bytes());
    return (*records_ + per - 1) / per;
  }
  std::string label() const override { return "source(" + who_ + ")"; }
  // Pipes, sockets and terminals may wait for data: a thread of their own.
  // A regular file is read in a task like any stage: its reads do not wait
  // for a producer, and a task hands units over without thread wake-ups
  // (which cost milliseconds per unit on a loaded machine).
  bool blocking() const override { return !regular_; }

 private:
  // The stream ended after `got` bytes of the record at byte `at`: a clean
  // end, or an error.
  void check_end(std::size_t got, std::uint64_t at) const {
    if (got == 0) {
      // A file cut short at a record boundary while it is read would look
      // like a clean end: compare with the records it held when opened.
      if (regular_ && records_ && read_ < *records_)
        throw error(who_ + ": the file shrank while it was read: it held " + std::to_string(*records_) +
                    " records when opened, the stream ends after " + std::to_string(read_) + " at byte offset " +
                    std::to_string(at));
      return;
    }
    throw error(who_ + ": the stream ends inside record " + std::to_string(read_) + " at byte offset " +
                std::to_string(at) + " (" + std::to_string(got) + " of " + std::to_string(l_.bytes()) +
                " bytes; layout " + l_.str() + ")");
  }

  detail::unique_fd owned_;
  std::string who_;
  record_layout l_;
  std::unique_ptr<detail::followed_file> follow_;  // before r_, which reads it
  detail::fd_reader r_;
  std::optional<std::uint64_t> records_;  // records in a regular file when opened
  std::uint64_t read_ = 0;                // records read
  bool regular_ = false;
};

// Writes records as they were read.
class record_sink final : public detail::output_sink {
 public:
  using output_sink::output_sink;

 private:
  void write_unit(std::uint64_t, const layer& l, const record_index& r) override { detail::write_records(out(), l, r); }
};

}  // namespace

sinew::source read_file(std::string path, record_layout layout, batching b) {
  std::string who = "read_file '" + path + "'";
  detail::unique_fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd) throw error(who + ": cannot open: " + detail::errno_text(errno));
  struct stat st {};
  if (::fstat(fd.get(), &st) == 0 && S_ISDIR(st.st_mode)) throw error(who + ": is a directory");
  int raw = fd.get();
  return sinew::source(std::make_shared<record_source>(std::move(fd), raw, std::move(who), std::move(layout), b));
}

sinew::source follow_file(std::string path, record_layout layout, follow_options f, batching b) {
  std::string who = "follow_file '" + path + "'";
  return sinew::source(std::make_shared<record_source>(path, f, std::move(who), std::move(layout), b));
}

sinew::source read_fd(int fd, record_layout layout, batching b) {
  return sinew::source(
      std::make_shared<record_source>(detail::unique_fd(), fd, "read_fd(" + fd_name(fd) + ")", std::move(layout), b));
}

sinew::source read_stdin(record_layout layout, batching b) { return read_fd(0, std::move(layout), b); }

sinew::sink write_file(std::string path) {
  std::string who = "write_file '" + path + "'";
  return sinew::sink(std::make_shared<record_sink>(std::move(path), -1, std::move(who)));
}

sinew::sink write_fd(int fd) {
  return sinew::sink(std::make_shared<record_sink>(std::string(), fd, "write_fd(" + fd_name(fd) + ")"));
}

}  // namespace sinew::io
