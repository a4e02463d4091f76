// N-body step ([Marques14, §5.1.1]): direct O(N^2) force sum with
// softening, then a leapfrog-like position/velocity update, as the C++ leaf
// (include/sinew/workloads/nbody.hpp: nbody_advance). Positions are float4
// (x, y, z, mass), velocities float4 (w unused). Every body reads every
// position: a multi-device split marks the position input `read_whole()`.
// Args: input pos, input vel, output new_pos, output new_vel, float eps2, float dt, count n.
#pragma OPENCL FP_CONTRACT OFF

__kernel void nbody(__global const float4* pos, __global const float4* vel, __global float4* new_pos,
                    __global float4* new_vel, const float eps2, const float dt, const uint n) {
  const size_t i = get_global_id(0);
  if (i >= n) return;
  const float4 me = pos[i];
  float ax = 0.0f, ay = 0.0f, az = 0.0f;
  for (uint j = 0; j < n; ++j) {
    const float4 p = pos[j];
    const float rx = p.x - me.x, ry = p.y - me.y, rz = p.z - me.z;
    const float dist2 = rx * rx + ry * ry + rz * rz;
    const float inv = 1.0f / sqrt(dist2 + eps2);
    const float inv3 = inv * inv * inv;
    const float s = p.w * inv3;
    ax += s * rx;
    ay += s * ry;
    az += s * rz;
  }
  const float4 old = vel[i];
  const float h = 0.5f * dt * dt;
  new_pos[i] = (float4)(me.x + old.x * dt + ax * h, me.y + old.y * dt + ay * h, me.z + old.z * dt + az * h, me.w);
  new_vel[i] = (float4)(old.x + ax * dt, old.y + ay * dt, old.z + az * dt, old.w);
}
