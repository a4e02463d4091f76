// C = A * B for square n x n matrices in square tiles staged through local
// memory. The same algorithm as sinew::group_examples::TiledMM
// (tests/support/group_examples.hpp); launched with a global size
// rounded up to whole work-groups, local size (T, T), and two local buffers
// of T * T floats.
__kernel void tiled_mm(__global const float* a, __global const float* b, __global float* c, const uint n,
                       __local float* ta, __local float* tb) {
  const uint T = get_local_size(0);
  const uint lx = get_local_id(0), ly = get_local_id(1);
  const uint gx = get_global_id(0), gy = get_global_id(1);
  float acc = 0.0f;
  for (uint t0 = 0; t0 < n; t0 += T) {
    ta[ly * T + lx] = (gy < n && t0 + lx < n) ? a[gy * n + t0 + lx] : 0.0f;
    tb[ly * T + lx] = (t0 + ly < n && gx < n) ? b[(t0 + ly) * n + gx] : 0.0f;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (uint k = 0; k < T; ++k) acc += ta[ly * T + k] * tb[k * T + lx];
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  if (gy < n && gx < n) c[gy * n + gx] = acc;
}
