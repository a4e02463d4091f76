#pragma once
// The wire format of the MPI transport (docs/distributed.md, "Protocol"),
// shared by rank 0's dealer (mpi_dealer.hpp) and the serving ranks
// (mpi_server.hpp). A unit travels as a fixed-size header on tag_ctl /
// tag_res and one data message of raw buffer bytes, described by an
// hindexed datatype over the buffers themselves (no copy, no per-element
// serialisation), on a tag derived from the unit's id.
#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <ctime>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include <sinew/io/type_names.hpp>
#include <sinew/engine/buffer_pool.hpp>
#include <sinew/engine/node.hpp>

namespace sinew::mpi::detail {

enum : int { tag_ctl = 1, tag_res = 2, tag_stats = 3, tag_data0 = 16 };
enum : std::uint32_t { op_unit = 1, op_rows = 2, op_end = 3, op_result = 4, op_error = 5 };

/// Numbers a serving rank reports at the end of a run (tag_stats), in this order.
enum stat : std::size_t { st_units, st_row_ranges, st_busy, st_bytes_in, st_bytes_out, st_cpu, st_count };

/// Shape and element sizes of one layer.
struct layer_desc {
  std::uint32_t rank = 1, nbuf = 0;
  std::uint64_t ext[3] = {0, 1, 1};
  std::uint32_t esize[layer::max_buffers] = {};
};

/// The fixed part of every message (plain bytes: all ranks run the same build).
struct header {
  std::uint32_t op = 0, in_place = 0;
  std::uint64_t id = 0, seq = 0, grain = 1, rb = 0, re = 0;
  layer_desc in, out;
  std::uint64_t busy_ns = 0;
  std::uint32_t ok = 0;
  char path[512] = {};
  char what[1024] = {};
};

/// Copies `s` into a fixed char field, cut to fit and NUL-terminated.
inline void copy_str(char* dst, std::size_t cap, const std::string& s) {
  std::size_t n = std::min(cap - 1, s.size());
  std::memcpy(dst, s.data(), n);
  dst[n] = 0;
}

inline layer_desc describe(const layer& l) {
  sinew::detail::require_uniform(l, "a distributed node (it ships every buffer by rows)");
  layer_desc d;
  d.rank = l.shape().rank;
  for (int i = 0; i < 3; ++i) d.ext[i] = l.shape().ext[std::size_t(i)];
  d.nbuf = l.size();
  for (unsigned i = 0; i < l.size(); ++i) d.esize[i] = std::uint32_t(l[i]->type().size);
  return d;
}

inline shape shape_of(const layer_desc& d) {
  shape s;
  s.rank = d.rank;
  for (int i = 0; i < 3; ++i) s.ext[std::size_t(i)] = d.ext[i];
  return s;
}

/// An element type of `size` bytes: the declared one when it fits, else a
/// registered type of that size (leaves' views check sizes only).
inline const elem_type& type_for(const sinew::detail::type_list& t, unsigned i, std::size_t size) {
  if (!t.any && i < t.types.size() && t.types[i] && t.types[i]->size == size) return *t.types[i];
  for (std::string_view n : elem_type_names())
    if (const elem_type* e = elem_type_by_name(n); e && e->size == size) return *e;
  throw error("no element type of " + std::to_string(size) + " bytes to receive a buffer into");
}

/// Allocates the buffers `d` describes.
inline layer make_layer(const layer_desc& d, const sinew::detail::type_list& types) {
  layer l(shape_of(d));
  for (unsigned i = 0; i < d.nbuf; ++i) l.add(buffer_pool::global().acquire(l.count(), type_for(types, i, d.esize[i])));
  return l;
}

/// Bytes of rows [rb, re) of every buffer of a layer (all rows: 0, SIZE_MAX),
/// as absolute addresses for one hindexed datatype.
struct blocks {
  std::vector<int> len;
  std::vector<MPI_Aint> disp;
  std::uint64_t bytes = 0;
  void add_layer(const layer& l, std::size_t rb, std::size_t re) {
    const std::size_t rows = l.shape().ext[0], inner = l.shape().inner();
    re = std::min(re, rows);
    rb = std::min(rb, re);
    for (unsigned i = 0; i < l.size(); ++i) {
      const std::size_t es = l[i]->type().size;
      const std::size_t n = (re - rb) * inner * es;
      if (n == 0) continue;
      if (n > std::size_t(INT32_MAX)) throw error("a buffer slice over 2 GiB cannot travel in one MPI message");
      MPI_Aint a;
      MPI_Get_address(static_cast<char*>(l[i]->data()) + rb * inner * es, &a);
      len.push_back(int(n));
      disp.push_back(a);
      bytes += n;
    }
  }
};

/// Posts a send or receive of `b` (MPI_BOTTOM + absolute displacements).
inline MPI_Request post(const blocks& b, int peer, int tag, bool send) {
  MPI_Request r;
  if (b.len.empty()) {
    if (send) MPI_Isend(nullptr, 0, MPI_BYTE, peer, tag, MPI_COMM_WORLD, &r);
    else MPI_Irecv(nullptr, 0, MPI_BYTE, peer, tag, MPI_COMM_WORLD, &r);
    return r;
  }
  MPI_Datatype t;
  MPI_Type_create_hindexed(int(b.len.size()), b.len.data(), b.disp.data(), MPI_BYTE, &t);
  MPI_Type_commit(&t);
  if (send) MPI_Isend(MPI_BOTTOM, 1, t, peer, tag, MPI_COMM_WORLD, &r);
  else MPI_Irecv(MPI_BOTTOM, 1, t, peer, tag, MPI_COMM_WORLD, &r);
  MPI_Type_free(&t);  // freed once the operation completes
  return r;
}

/// The tag of unit `id`'s data message: unique among the units in flight,
/// which are far fewer than MPI_TAG_UB.
inline int data_tag(std::uint64_t id, int tag_ub) { return tag_data0 + int(id % std::uint64_t(tag_ub - tag_data0)); }

inline bool test(MPI_Request& r) {
  int f = 0;
  MPI_Test(&r, &f, MPI_STATUS_IGNORE);
  return f != 0;
}

inline std::uint64_t now_ns() {
  return std::uint64_t(std::chrono::duration_cast<std::chrono::nanoseconds>(
                           std::chrono::steady_clock::now().time_since_epoch())
                           .count());
}

/// CPU time of the whole process (every thread).
inline std::uint64_t process_cpu_ns() {
  timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return std::uint64_t(ts.tv_sec) * 1000000000ull + std::uint64_t(ts.tv_nsec);
}

/// Sleeps a little when a polling loop found nothing to do (ranks share cores).
struct backoff {
  unsigned us = 0;
  void idle() {
    us = us ? std::min(us * 2, 200u) : 5;
    std::this_thread::sleep_for(std::chrono::microseconds(us));
  }
  void busy() { us = 0; }
};

}  // namespace sinew::mpi::detail
