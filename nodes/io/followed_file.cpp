// Files read like `tail -F`: growth and rotation through inotify on the
// file's directory, with a check at least once a second.
#include "followed_file.hpp"

#include <fcntl.h>
#include <poll.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

#include <sinew/detail/clock.hpp>

namespace sinew::io::detail {

namespace {
constexpr std::uint64_t recheck_ns = 1000000000u;  // without an event, look again after this long

std::string dir_of(const std::string& path) {
  const auto slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}
}  // namespace

followed_file::followed_file(std::string path, std::string who, const wake_event* wake, follow_options o)
    : path_(std::move(path)), who_(std::move(who)), wake_(wake), o_(o), last_data_ns_(sinew::detail::now_ns()) {
  const std::string dir = dir_of(path_);
  struct stat st {};
  if (::stat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode))
    throw sinew::error(who_ + ": the directory '" + dir + "' does not exist");
  if (::stat(path_.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) throw sinew::error(who_ + ": is a directory");
  notify_.reset(::inotify_init1(IN_NONBLOCK | IN_CLOEXEC));
  // Without a watch (no inotify, or out of watches) the once-a-second check still follows the file.
  if (notify_ && ::inotify_add_watch(notify_.get(), dir.c_str(),
                                     IN_MODIFY | IN_CREATE | IN_MOVED_TO | IN_MOVED_FROM | IN_DELETE | IN_ATTRIB |
                                         IN_CLOSE_WRITE) < 0)
    notify_.reset();
  reopen_if_changed();  // the file as it is now, if it exists
}

bool followed_file::reopen_if_changed() {
  struct stat st {};
  if (::stat(path_.c_str(), &st) == 0 && (!fd_ || st.st_ino != ino_ || st.st_dev != dev_)) {
    unique_fd f(::open(path_.c_str(), O_RDONLY | O_CLOEXEC));
    if (f && ::fstat(f.get(), &st) == 0) {  // the file is what was opened, not what the path named a moment ago
      if (S_ISDIR(st.st_mode)) throw sinew::error(who_ + ": is a directory");
      if (!first_) ++rotations_;
      pos_ = 0;
      if (first_ && o_.from_end) pos_ = std::uint64_t(::lseek(f.get(), 0, SEEK_END));
      first_ = false;
      fd_ = std::move(f);
      dev_ = st.st_dev;
      ino_ = st.st_ino;
      return true;
    }
    if (!f && errno != ENOENT) throw sinew::error(who_ + ": cannot open: " + errno_text(errno));
  }
  if (fd_ && ::fstat(fd_.get(), &st) == 0 && std::uint64_t(st.st_size) < pos_) {
    ::lseek(fd_.get(), 0, SEEK_SET);
    pos_ = 0;
    ++truncations_;
    return true;
  }
  return false;
}

bool followed_file::more_now() {
  struct stat st {};
  return fd_ && ::fstat(fd_.get(), &st) == 0 && std::uint64_t(st.st_size) > pos_;
}

bool followed_file::wait_until(std::uint64_t deadline_ns) {
  const std::uint64_t now = sinew::detail::now_ns();
  const std::uint64_t left = deadline_ns > now ? std::min(deadline_ns - now, recheck_ns) : 0;
  pollfd p[2] = {{wake_ ? wake_->fd() : -1, POLLIN, 0}, {notify_ ? notify_.get() : -1, POLLIN, 0}};
  const timespec ts{time_t(left / 1000000000u), long(left % 1000000000u)};
  if (::ppoll(p, 2, &ts, nullptr) < 0 && errno != EINTR) throw sinew::error(who_ + ": poll failed: " + errno_text(errno));
  if (p[0].revents || (wake_ && wake_->signalled())) return false;
  if (p[1].revents) {  // the events only say "look again": drain them
    alignas(inotify_event) char buf[4096];
    while (::read(notify_.get(), buf, sizeof buf) > 0) {}
  }
  return true;
}

long followed_file::read(void* p, std::size_t n) {
  for (;;) {
    if (wake_ && wake_->signalled()) return -1;
    if (fd_) {
      const ssize_t r = ::read(fd_.get(), p, n);
      if (r > 0) {
        pos_ += std::uint64_t(r);
        last_data_ns_ = sinew::detail::now_ns();
        return long(r);
      }
      if (r < 0 && errno != EINTR)
        throw sinew::error(who_ + ": read failed: " + errno_text(errno));
      if (r < 0) continue;
    }
    if (reopen_if_changed()) continue;  // the old file was read to its end first
    const std::uint64_t now = sinew::detail::now_ns();
    const std::uint64_t idle = std::uint64_t(o_.idle_timeout.count()) * 1000000u;
    if (idle && now - last_data_ns_ >= idle) return 0;
    if (!wait_until(idle ? last_data_ns_ + idle : now + recheck_ns)) return -1;
  }
}

bool followed_file::data_within(std::uint64_t deadline_ns) {
  for (;;) {
    if ((wake_ && wake_->signalled()) || more_now() || reopen_if_changed()) return true;
    if (sinew::detail::now_ns() >= deadline_ns) return false;
    if (!wait_until(deadline_ns)) return true;
  }
}

}  // namespace sinew::io::detail
