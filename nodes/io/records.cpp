// Binary record sources and sinks: files, descriptors, standard I/O.
#include <sinew/io/records.hpp>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

#include <sinew/detail/clock.hpp>
#include <sinew/engine/buffer_pool.hpp>

#include "stream.hpp"

namespace sinew::io {

namespace {

std::string fd_name(int fd) {
  if (fd == 0) return "standard input";
  if (fd == 1) return "standard output";
  if (fd == 2) return "standard error";
  return "descriptor " + std::to_string(fd);
}

// Reads records from a descriptor it may own (files) or borrow (pipes).
class record_source final : public detail::io_source {
 public:
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
  void batch_for(const std::string& whole_unit_at) override {
    io_source::batch_for(whole_unit_at);
    per_unit_ = batching_on() ? std::max<std::size_t>(1, std::min(batch().records, batch().bytes / l_.bytes())) : 1;
  }
  bool produce(unit_builder& b) override {
    if (per_unit_ == 1) {
      const std::uint64_t at = r_.offset();
      const detail::record_read rr = detail::read_record(r_, l_, b);
      if (rr.st == detail::fd_reader::status::ok) return ++read_, true;
      if (rr.st == detail::fd_reader::status::interrupted) return false;  // stopped
      check_end(rr.got, at);
      return false;
    }
    return produce_batch(b);
  }
  std::optional<std::uint64_t> size_hint() const override {
    if (!records_) return std::nullopt;
    return (*records_ + per_unit_ - 1) / per_unit_;
  }
  std::string label() const override { return "source(" + who_ + ")"; }
  // Pipes, sockets and terminals may wait for data: a thread of their own.
  // A regular file is read in a task like any stage: its reads do not wait
  // for a producer, and a task hands units over without thread wake-ups
  // (which cost milliseconds per unit on a loaded machine).
  bool blocking() const override { return !regular_; }

 private:
  // Records until the batch holds `per_unit_` or no byte arrives before
  // `latency` after its first one; buffer b of the batch holds buffer b of
  // every record, records stacked along the outermost dimension.
  bool produce_batch(unit_builder& b) {
    const std::size_t n = l_.shape.count();
    std::vector<buffer_ref> bufs;
    for (const elem_type* t : l_.buffers) bufs.push_back(buffer_pool::global().acquire(n * per_unit_, *t));
    std::uint64_t deadline = 0;
    std::size_t k = 0;
    for (; k < per_unit_; ++k) {
      if (k > 0 && !r_.data_within(deadline)) break;
      const std::uint64_t at = r_.offset();
      std::size_t got = 0;
      detail::fd_reader::status st = detail::fd_reader::status::ok;
      for (std::size_t i = 0; i < bufs.size() && st == detail::fd_reader::status::ok; ++i) {
        const std::size_t sz = l_.buffers[i]->size;
        std::size_t g = 0;
        st = r_.read_exact(static_cast<char*>(bufs[i]->data()) + k * n * sz, n * sz, g);
        got += g;
      }
      if (st == detail::fd_reader::status::interrupted) break;
      if (st == detail::fd_reader::status::eof) {
        // The whole records before go out first; the error ends the stream.
        try {
          check_end(got, at);
        } catch (const std::exception& e) {
          if (k == 0) throw;
          fail_later(e.what());
        }
        break;
      }
      ++read_;
      if (k == 0) deadline = sinew::detail::now_ns() + std::uint64_t(batch().latency.count()) * 1000;
    }
    if (k == 0) return false;
    shape s = l_.shape;
    s.ext[0] *= k;
    b.set_shape(s);
    for (buffer_ref& x : bufs) {
      x->shrink(n * k);
      b.add(std::move(x));
    }
    b.set_records(record_index::fixed(k, l_.shape));
    return true;
  }
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
  detail::fd_reader r_;
  std::optional<std::uint64_t> records_;  // records in a regular file when opened
  std::uint64_t read_ = 0;                // records read
  std::size_t per_unit_ = 1;              // records a unit (1: one unit per record)
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
