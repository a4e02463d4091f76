#pragma once
/// \file coherence.hpp
/// Coherence of a buffer's copies in several memory spaces (the host and each
/// device), after HPL's Array coherence [Vinas17, §3, Appendix B]: every
/// buffer records, per space and per byte range, where a valid copy is;
/// reading in a space that lacks one transfers it there lazily; writing in a
/// space invalidates the range everywhere else. Spaces that share host memory
/// (PoCL's CPU device, `CL_DEVICE_HOST_UNIFIED_MEMORY`) alias the host copy:
/// they never copy, they only synchronise (map/unmap [Lee15]).
///
/// Invariants (checked by tests/test_coherence.cpp):
///  * every byte of a buffer is valid in at least one space;
///  * after `write(s, r)` the bytes of `r` are valid in `s` only;
///  * a read in `s` of `r` leaves `r` valid in `s` and loses no other copy;
///  * eviction under a space's memory budget never drops the only valid copy
///    of a byte: such copies are written back to the host first;
///  * memory kept for reuse (set_reuse_limit) holds no valid byte: a copy
///    given it starts empty, and kept plus resident bytes stay within the
///    budget when a copy is made.
///
/// Records live in the buffer's `buffer_hook`, so they go away when the
/// buffer returns to the pool: the device memory is released then, or kept
/// for the next copy of the same size where the space has a reuse limit.
///
/// \code
/// sinew::buffer_ref b = sinew::buffer_pool::global().acquire<float>(n);
/// sinew::coherence::access a(*b, dev_space, sinew::coherence::whole(*b), {});   // upload if needed
/// void* mem = a.handle();                                 // device copy (e.g. a cl_mem)
/// // ... run a kernel writing the buffer on the device ...
/// sinew::coherence::write(*b, dev_space, sinew::coherence::whole(*b));   // host copy now stale
/// sinew::coherence::host_read(*b, sinew::coherence::whole(*b));        // downloads it back
/// \endcode
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include <sinew/engine/buffer.hpp>

namespace sinew::coherence {

/// Byte range [begin, end) of a buffer.
struct range {
  std::size_t begin = 0, end = 0;
  bool empty() const noexcept { return end <= begin; }
  friend bool operator==(const range&, const range&) = default;
};
inline range whole(const buffer& b) { return {0, b.bytes()}; }

/// A sub-range view of a buffer in elements, with halo elements read (never
/// written) on each side, clipped to the buffer (stencils read their
/// neighbours' rows; HPL's subarrays [Vinas17, §3.3]).
///
/// \code
/// sinew::coherence::subview v{rows_begin * cols, rows_count * cols, cols, cols};  // one halo row each side
/// auto r = v.read_range(*b);    // bytes the stencil reads
/// auto w = v.write_range(*b);   // bytes it writes
/// \endcode
struct subview {
  std::size_t offset = 0, count = 0, halo_before = 0, halo_after = 0;
  range write_range(const buffer& b) const;
  range read_range(const buffer& b) const;
};

/// One memory space other than the host. Handles are opaque (a `cl_mem` for
/// OpenCL devices). Implementations need not be thread-safe per handle: the
/// coherence layer serialises the calls for one buffer.
class memory_space {
 public:
  memory_space();
  virtual ~memory_space();
  memory_space(const memory_space&) = delete;
  memory_space& operator=(const memory_space&) = delete;

  virtual std::string name() const = 0;
  /// True when the space reads and writes the host memory itself (mapped).
  virtual bool shares_host() const { return false; }
  /// Memory for a copy of a buffer of `bytes` bytes whose host memory is `host`.
  virtual void* allocate(void* host, std::size_t bytes) = 0;
  virtual void release(void* handle) noexcept = 0;
  /// Host -> space and space -> host transfers of `n` bytes at `offset`.
  virtual void upload(void* handle, std::size_t offset, const void* src, std::size_t n) = 0;
  virtual void download(void* handle, std::size_t offset, void* dst, std::size_t n) = 0;
  /// For spaces sharing host memory: make the space's writes to the range
  /// visible to the host (map + unmap). Default: nothing.
  virtual void sync_to_host(void* handle, std::size_t offset, std::size_t n) { (void)handle, (void)offset, (void)n; }

  /// Bytes of copies this space may hold; 0 = unlimited. Beyond it the least
  /// recently used copies not in use are evicted (written back first when
  /// they hold the only valid copy).
  void set_budget(std::size_t bytes) noexcept { budget_ = bytes; }
  std::size_t budget() const noexcept { return budget_; }
  /// Device memory of released copies (their buffers went back to the pool)
  /// kept for later copies of the same size, up to `bytes` in all; 0 (the
  /// default) releases it at once. A stream of units of one shape then
  /// allocates a device copy per buffer in flight, not per unit, as a
  /// hand-written program reuses its device buffers. Kept memory counts
  /// against the budget and goes first when a copy needs room. Only for
  /// spaces that do not share host memory (their allocate() must not
  /// depend on the host pointer). Set it, like the budget, before the space
  /// is in use; a lower limit applies from the next release on.
  ///
  /// \code
  /// space.set_reuse_limit(std::size_t(1) << 30);  // keep up to 1 GiB for the next units
  /// // ... run the stream ...
  /// space.trim();                                 // give the kept memory back now
  /// \endcode
  void set_reuse_limit(std::size_t bytes) noexcept { reuse_limit_ = bytes; }
  std::size_t reuse_limit() const noexcept { return reuse_limit_; }
  /// Releases every kept allocation (set_reuse_limit).
  void trim() noexcept;
  /// Index of this space in coherence records (host = 0).
  unsigned id() const noexcept { return id_; }

  struct counters {
    std::uint64_t uploads = 0, downloads = 0, upload_bytes = 0, download_bytes = 0, allocations = 0,
                  evictions = 0, write_backs = 0;
    std::uint64_t reuses = 0;  ///< copies given kept memory (set_reuse_limit) instead of an allocation
    std::size_t resident_bytes = 0;
    std::size_t kept_bytes = 0;  ///< memory of released copies kept for reuse
  };
  counters stats() const;

 protected:
  /// Gives every copy still held here back to the host (written back where
  /// it is the only one) and forgets it, and releases kept memory. Derived
  /// spaces that die before the buffers they hold must call it from their
  /// destructor.
  void retire();

 private:
  friend struct space_access;
  unsigned id_;
  std::size_t budget_ = 0;
  std::size_t reuse_limit_ = 0;
};

/// Holds a buffer's copy in `space` valid for reading `read` and reserved for
/// writing `write` (which is marked valid in `space` only) while alive: the
/// copy cannot be evicted meanwhile. Use it around a kernel.
class access {
 public:
  access(buffer& b, memory_space& space, range read, range write);
  ~access();
  access(const access&) = delete;
  access& operator=(const access&) = delete;
  void* handle() const noexcept { return handle_; }

 private:
  buffer* b_;
  memory_space* space_;
  void* handle_;
  range write_;
};

/// Makes `r` valid in `space` (transferring what is missing); returns the handle.
/// The handle stays valid until the buffer is released or evicted; prefer `access`.
void* read(buffer& b, memory_space& space, range r);
/// Marks `r` written in `space`: valid there only.
void write(buffer& b, memory_space& space, range r);
/// Host side: make `r` valid on the host before reading it there.
void host_read(buffer& b, range r);
/// Host side: `r` was (or is about to be) written on the host.
void host_write(buffer& b, range r);

/// Records that the caller copied `r` into `to` (null: the host) from a
/// valid copy in `from` (null: the host) itself, e.g. with chunked,
/// event-chained transfers [Takizawa15]: `r` is valid in `to` now. The
/// copy in `to` must exist (an `access` to it). Counted as the device space's
/// upload or download.
void copied(buffer& b, memory_space* to, range r, memory_space* from = nullptr);

/// Ranges of `b` valid in the space with id `space_id` (0 = host), sorted and
/// merged. A buffer without a record is valid on the host only.
std::vector<range> valid_ranges(const buffer& b, unsigned space_id);
/// True when `b` has device copies that the host lacks (a host reader must
/// call `host_read` first).
bool host_stale(const buffer& b);
/// Evicts `b`'s copy in `space` now (written back when it is the only one);
/// returns false when the copy is in use by an `access`.
bool evict(buffer& b, memory_space& space);

}  // namespace sinew::coherence
