#pragma once
// Internal to the followed-file sources (records.cpp, lines.cpp): the
// descriptor of a file read like `tail -F` (include/sinew/io/follow.hpp).
#include <sys/types.h>

#include <cstdint>
#include <string>

#include <sinew/io/follow.hpp>

#include "stream.hpp"

namespace sinew::io::detail {

/// Reads the file at a path as it grows, across rotations and truncations.
/// Used by one thread (the source's); `wake` (stop) interrupts its waits.
class followed_file {
 public:
  /// The file's directory must exist; the file may appear later.
  followed_file(std::string path, std::string who, const wake_event* wake, follow_options o);
  /// Reads up to `n` bytes, waiting for the file to grow: > 0 bytes read,
  /// 0 once no byte arrived for the idle timeout, -1 when `wake` fired.
  long read(void* p, std::size_t n);
  /// True when a byte can be read now or arrives before `deadline_ns`
  /// (steady clock), or `wake` fired (the next read says so).
  bool data_within(std::uint64_t deadline_ns);
  /// Files opened after the first (rotations) and truncations seen.
  std::uint64_t rotations() const noexcept { return rotations_; }
  std::uint64_t truncations() const noexcept { return truncations_; }

 private:
  // At the end of the open file: opens a new file at the path (rotation, or
  // the first one) or starts again at a truncation. True if it did.
  bool reopen_if_changed();
  // Waits for an inotify event, the deadline or `wake`; false if woken.
  bool wait_until(std::uint64_t deadline_ns);
  bool more_now();  // bytes beyond pos_ in the open file

  std::string path_, who_;
  const wake_event* wake_;
  follow_options o_;
  unique_fd fd_, notify_;
  dev_t dev_ = 0;
  ino_t ino_ = 0;
  std::uint64_t pos_ = 0;        // bytes read from the open file
  std::uint64_t last_data_ns_;   // when a byte last arrived (or the start)
  bool first_ = true;            // no file opened yet
  std::uint64_t rotations_ = 0, truncations_ = 0;
};

}  // namespace sinew::io::detail
