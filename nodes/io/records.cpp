// Binary record sources and sinks: files, descriptors, standard I/O.
#include <sinew/io/records.hpp>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>

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
  record_source(detail::unique_fd owned, int fd, std::string who, record_layout l)
      : owned_(std::move(owned)), who_(std::move(who)), l_(std::move(l)), r_(fd, who_, &wake_) {
    l_.check(who_);
    struct stat st {};
    regular_ = ::fstat(fd, &st) == 0 && S_ISREG(st.st_mode);
    if (regular_) {
      off_t at = ::lseek(fd, 0, SEEK_CUR);
      std::uint64_t left = std::uint64_t(st.st_size) - std::uint64_t(at > 0 ? at : 0);
      hint_ = left / l_.bytes();
    }
  }
  bool produce(unit_builder& b) override {
    const std::uint64_t at = r_.offset();
    detail::record_read rr = detail::read_record(r_, l_, b);
    if (rr.st == detail::fd_reader::status::ok) return true;
    if (rr.st == detail::fd_reader::status::interrupted) return false;  // stopped
    if (rr.got == 0) {
      // A file cut short at a record boundary while it is read would look
      // like a clean end: compare with the records it held when opened.
      if (regular_ && hint_ && b.seq() < *hint_)
        throw error(who_ + ": the file shrank while it was read: it held " + std::to_string(*hint_) +
                    " records when opened, the stream ends after " + std::to_string(b.seq()) +
                    " at byte offset " + std::to_string(at));
      return false;  // clean end
    }
    throw error(who_ + ": the stream ends inside record " + std::to_string(b.seq()) + " at byte offset " +
                std::to_string(at) + " (" + std::to_string(rr.got) + " of " + std::to_string(l_.bytes()) +
                " bytes; layout " + l_.str() + ")");
  }
  std::optional<std::uint64_t> size_hint() const override { return hint_; }
  std::string label() const override { return "source(" + who_ + ")"; }
  // Pipes, sockets and terminals may wait for data: a thread of their own.
  // A regular file is read in a task like any stage: its reads do not wait
  // for a producer, and a task hands units over without thread wake-ups
  // (which cost milliseconds per unit on a loaded machine).
  bool blocking() const override { return !regular_; }

 private:
  detail::unique_fd owned_;
  std::string who_;
  record_layout l_;
  detail::fd_reader r_;
  std::optional<std::uint64_t> hint_;
  bool regular_ = false;
};

// Writes records, in sequence order, to a descriptor opened in prepare()
// (files) or borrowed (descriptors).
class record_sink final : public sinew::detail::sink_impl {
 public:
  record_sink(std::string path, int fd, std::string who) : path_(std::move(path)), fd_(fd), who_(std::move(who)) {}
  void prepare(const sinew::detail::type_list&, std::optional<std::uint64_t>) override {
    order_.reset();
    int fd = fd_;
    if (!path_.empty()) {
      owned_.reset(::open(path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644));
      if (!owned_) throw error(who_ + ": cannot open for writing: " + detail::errno_text(errno));
      fd = owned_.get();
    }
    w_.emplace(fd, who_);
  }
  void consume(work_unit& u) override {
    order_.deliver(u, [&](std::uint64_t, const layer& l) { detail::write_layer(*w_, l); });
  }
  void finish() override {
    order_.finish([&](std::uint64_t, const layer& l) { detail::write_layer(*w_, l); });
    w_->flush();
    if (owned_ && ::close(owned_.release()) != 0)  // NFS and friends report late errors here
      throw error(who_ + ": close failed: " + detail::errno_text(errno));
  }
  std::string label() const override { return "sink(" + who_ + ")"; }

 private:
  std::string path_;
  int fd_;
  std::string who_;
  detail::unique_fd owned_;
  std::optional<detail::fd_writer> w_;
  detail::in_order order_;
};

}  // namespace

sinew::source read_file(std::string path, record_layout layout) {
  std::string who = "read_file '" + path + "'";
  detail::unique_fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd) throw error(who + ": cannot open: " + detail::errno_text(errno));
  struct stat st {};
  if (::fstat(fd.get(), &st) == 0 && S_ISDIR(st.st_mode)) throw error(who + ": is a directory");
  int raw = fd.get();
  return sinew::source(std::make_shared<record_source>(std::move(fd), raw, std::move(who), std::move(layout)));
}

sinew::source read_fd(int fd, record_layout layout) {
  return sinew::source(
      std::make_shared<record_source>(detail::unique_fd(), fd, "read_fd(" + fd_name(fd) + ")", std::move(layout)));
}

sinew::source read_stdin(record_layout layout) { return read_fd(0, std::move(layout)); }

sinew::sink write_file(std::string path) {
  std::string who = "write_file '" + path + "'";
  return sinew::sink(std::make_shared<record_sink>(std::move(path), -1, std::move(who)));
}

sinew::sink write_fd(int fd) {
  return sinew::sink(std::make_shared<record_sink>(std::string(), fd, "write_fd(" + fd_name(fd) + ")"));
}

}  // namespace sinew::io
