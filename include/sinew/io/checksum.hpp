#pragma once
/// \file io/checksum.hpp
/// A sink that checksums a whole stream: FNV-1a 64 (workloads/checksum.hpp)
/// chained over every unit's layer-0 buffers, `shape.count()` elements each,
/// buffer 0 then buffer 1 ..., unit 0 then unit 1 ... (a record batch
/// record by record, as write_file writes it). The sink restores
/// sequence order itself (units arriving early through an unordered farm
/// wait for their turn), so the value depends only on the data: it is the
/// same on every run and scheduler, and equals the FNV-1a of the bytes
/// `write_file` would have written.
///
/// \code
/// auto res = std::make_shared<sinew::io::checksum_result>();
/// g.run(src, sinew::io::checksum(res)).get();
/// // Sequential reference:
/// std::uint64_t h = sinew::workloads::fnv1a_offset;
/// for (auto& l : reference_layers) h = sinew::io::checksum_of_layer(l, h);
/// assert(h == res->value);
/// \endcode
#include <cstdint>
#include <memory>

#include <sinew/engine/sink.hpp>
#include <sinew/engine/work_unit.hpp>
#include <sinew/workloads/checksum.hpp>

namespace sinew::io {

struct checksum_result {
  std::uint64_t value = workloads::fnv1a_offset;  ///< FNV-1a so far (final after get())
  std::uint64_t units = 0;                        ///< units checksummed
  std::uint64_t bytes = 0;                        ///< bytes checksummed
  std::uint64_t records = 0;                      ///< records in those units (records.hpp)
};

/// Checksums every unit into `*result` (reset when the run starts).
sinew::sink checksum(std::shared_ptr<checksum_result> result);
/// Continues FNV-1a `h` over `l`'s buffers (`l.count()` elements each).
std::uint64_t checksum_of_layer(const sinew::layer& l, std::uint64_t h = workloads::fnv1a_offset);

}  // namespace sinew::io
