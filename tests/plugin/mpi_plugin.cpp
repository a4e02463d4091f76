// Kernels for the MPI tests (tests/cli/mpi.sh), loaded through a graph
// file's "plugins" field.
#include <sinew/json/kernel_registry.hpp>

#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <string>

namespace {
/// The MPI rank of this process as mpirun tells it (0 outside mpirun).
int env_rank() {
  const char* r = std::getenv("OMPI_COMM_WORLD_RANK");
  return r ? std::atoi(r) : 0;
}

/// Copies u8 data; throws on the rank `rank` (a leaf that fails on one
/// process only: the run must fail naming that rank and the node).
struct throw_on_rank {
  int rank = 1;
  void operator()(sinew::chunk c, sinew::in<std::uint8_t> x, sinew::out<std::uint8_t> y) const {
    if (env_rank() == rank) throw std::runtime_error("thrown on rank " + std::to_string(rank));
    for (std::size_t i = c.begin; i < c.end; ++i) y[i] = x[i];
  }
};

/// x = x * 3 + k in place (u8): an in-place node, whose layer 0 travels to
/// the other rank and back.
struct scale_in_place {
  int k = 1;
  void operator()(std::uint8_t& x) const { x = std::uint8_t(x * 3 + k); }
};
}  // namespace

extern "C" void sinew_register_kernels(sinew::kernel_registry& r) {
  r.add_map<scale_in_place>("scale_in_place", "x = 3x + k in place (u8, tests)",
                            {sinew::kernel_param::integer("k", "constant", 1, 0, 255)},
                            [](const sinew::kernel_args& a) { return scale_in_place{a.get<int>("k")}; });
  r.add_map<throw_on_rank>("throw_on_rank", "copies u8 data, throws on MPI rank 'rank' (tests)",
                           {sinew::kernel_param::integer("rank", "the rank that throws", 1, 0, 1 << 20)},
                           [](const sinew::kernel_args& a) { return throw_on_rank{a.get<int>("rank")}; });
}
