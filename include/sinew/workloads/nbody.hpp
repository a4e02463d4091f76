#pragma once
/// \file workloads/nbody.hpp
/// **NBody** ([Marques14, §5.1.1]; after the AMD APP SDK OpenCL "NBody"
/// sample, kernel `nbody_sim`): one time step of a direct O(N²) gravity
/// simulation with Plummer softening eps². Every body reads every other
/// body's position, so the leaf is per chunk: it gets a range of bodies and
/// views of all positions and velocities, and writes the new positions and
/// velocities of its range. Steps are iterated with `for_loop`.
///
/// \code
/// auto st = sinew::workloads::make_bodies(1024, 5);
/// std::vector<sinew::workloads::body> pos;
/// std::vector<sinew::workloads::vel> vel;
/// sinew::graph g(sinew::workloads::nbody_simulation(10));
/// g.run(sinew::from_arrays(st.positions, st.velocities), sinew::into_arrays(pos, vel)).get();
/// auto ref = sinew::workloads::nbody_reference(st, 10);   // ref.positions == pos (bit-identical)
/// \endcode
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

#include <sinew/skeletons/leaf.hpp>
#include <sinew/skeletons/loop.hpp>
#include <sinew/skeletons/map.hpp>
#include <sinew/workloads/random.hpp>
#include <sinew/workloads/unspecialised.hpp>

namespace sinew::workloads {

/// Position and mass of a body (the sample's float4 `pos`, w = mass).
///
/// \code
/// sinew::workloads::body sun{0.0f, 0.0f, 0.0f, 1000.0f};
/// \endcode
struct body {
  float x = 0, y = 0, z = 0, m = 0;
  friend bool operator==(const body&, const body&) = default;
};
/// Velocity of a body (float4; w is carried along unchanged).
///
/// \code
/// sinew::workloads::vel still{0.0f, 0.0f, 0.0f, 0.0f};
/// \endcode
struct vel {
  float x = 0, y = 0, z = 0, w = 0;
  friend bool operator==(const vel&, const vel&) = default;
};
static_assert(sizeof(body) == 16 && sizeof(vel) == 16, "body and vel are float4-like");

/// New position and velocity of body `i` after one step of length `dt`
/// (the sample's `nbody_sim` for one work-item; the force sum runs over
/// j = 0..n-1 in order, so every caller gets bit-identical results).
///
/// One machine code for the leaf, the reference and the peers
/// (unspecialised.hpp): they agree bit for bit.
///
/// \code
/// sinew::workloads::body np; sinew::workloads::vel nv;
/// sinew::workloads::nbody_advance(i, pos.data(), vel.data(), pos.size(), 500.0f, 0.005f, &np, &nv);
/// \endcode
SINEW_UNSPECIALISED inline void nbody_advance(std::size_t i, const body* pos, const vel* v, std::size_t n, float eps2, float dt,
                          body* new_pos, vel* new_vel) {
  const body me = pos[i];
  float ax = 0.0f, ay = 0.0f, az = 0.0f;
  for (std::size_t j = 0; j < n; ++j) {
    const body p = pos[j];
    const float rx = p.x - me.x, ry = p.y - me.y, rz = p.z - me.z;
    const float dist2 = rx * rx + ry * ry + rz * rz;
    const float inv = 1.0f / std::sqrt(dist2 + eps2);
    const float inv3 = inv * inv * inv;
    const float s = p.m * inv3;
    ax += s * rx;
    ay += s * ry;
    az += s * rz;
  }
  const vel old = v[i];
  const float h = 0.5f * dt * dt;
  *new_pos = body{me.x + old.x * dt + ax * h, me.y + old.y * dt + ay * h, me.z + old.z * dt + az * h, me.m};
  *new_vel = vel{old.x + ax * dt, old.y + ay * dt, old.z + az * dt, old.w};
}

/// Per-chunk leaf: one time step for bodies [c.begin, c.end). Reads all
/// positions and velocities (layer 0), writes new ones (layer 1).
/// Defaults are the AMD sample's (eps² = 500, dt = 0.005).
///
/// \code
/// auto step = sinew::map<sinew::workloads::nbody_step>({/*eps2*/ 500.0f, /*dt*/ 0.005f});
/// auto sim = sinew::for_loop(step, 10);
/// \endcode
struct nbody_step {
  float eps2 = 500.0f;  ///< softening squared
  float dt = 0.005f;    ///< time step
  void operator()(sinew::chunk c, sinew::in<body> pos, sinew::in<vel> v, sinew::out<body> new_pos,
                  sinew::out<vel> new_vel) const {
    const std::size_t n = pos.size();
    for (std::size_t i = c.begin; i < c.end; ++i)
      nbody_advance(i, pos.data(), v.data(), n, eps2, dt, new_pos.data() + i, new_vel.data() + i);
  }
};

/// `for_loop(map<nbody_step>(step), steps)`.
///
/// \code
/// sinew::graph g(sinew::workloads::nbody_simulation(3));
/// \endcode
inline sinew::node nbody_simulation(std::size_t steps, nbody_step step = {}) {
  return sinew::for_loop(sinew::map<nbody_step>(step), steps);
}

/// Positions and velocities of a system (parallel arrays, one entry per body).
///
/// \code
/// sinew::workloads::nbody_state st = sinew::workloads::make_bodies(257, 9);
/// auto src = sinew::from_arrays(st.positions, st.velocities);
/// \endcode
struct nbody_state {
  std::vector<body> positions;
  std::vector<vel> velocities;
};

/// `n` bodies, deterministic from `seed`, as in the AMD sample: coordinates
/// in [3, 50), masses in [1, 1000); plus small initial velocities in [-1, 1)
/// (the sample starts at rest).
///
/// \code
/// auto st = sinew::workloads::make_bodies(257, 9);
/// \endcode
inline nbody_state make_bodies(std::size_t n, std::uint64_t seed) {
  nbody_state st{std::vector<body>(n), std::vector<vel>(n)};
  for (std::size_t i = 0; i < n; ++i) {
    std::uint64_t h[4];
    for (std::uint64_t k = 0; k < 4; ++k) h[k] = hash64(seed, 4 * std::uint64_t(i) + k);
    st.positions[i] = body{3.0f + 47.0f * unit_float(h[0]), 3.0f + 47.0f * unit_float(h[1]),
                     3.0f + 47.0f * unit_float(h[2]), 1.0f + 999.0f * unit_float(h[3])};
    st.velocities[i] = vel{2.0f * unit_float(h[0] << 24) - 1.0f, 2.0f * unit_float(h[1] << 24) - 1.0f,
                    2.0f * unit_float(h[2] << 24) - 1.0f, 0.0f};
  }
  return st;
}

/// Sequential reference: `steps` steps, body by body in index order.
///
/// \code
/// auto after = sinew::workloads::nbody_reference(sinew::workloads::make_bodies(257, 9), 3);
/// \endcode
inline nbody_state nbody_reference(const nbody_state& start, std::size_t steps, nbody_step step = {}) {
  nbody_state cur = start, next = start;
  const std::size_t n = cur.positions.size();
  for (std::size_t s = 0; s < steps; ++s) {
    for (std::size_t i = 0; i < n; ++i)
      nbody_advance(i, cur.positions.data(), cur.velocities.data(), n, step.eps2, step.dt, &next.positions[i],
                    &next.velocities[i]);
    std::swap(cur, next);
  }
  return cur;
}

}  // namespace sinew::workloads
