// 3x3 weighted stencil (1 2 1 / 2 4 2 / 1 2 1, edges clamped) over a tile
// with a one-element halo staged in local memory. The same algorithm as
// sinew::group_examples::StencilTile; local buffer of
// (local_size(1) + 2) * (local_size(0) + 2) floats.
__constant float weights[9] = {1.0f, 2.0f, 1.0f, 2.0f, 4.0f, 2.0f, 1.0f, 2.0f, 1.0f};

__kernel void stencil_tile(__global const float* src, __global float* dst, const uint rows, const uint cols,
                           __local float* tile) {
  const uint Lx = get_local_size(0), Ly = get_local_size(1), L = Lx * Ly;
  const uint lx = get_local_id(0), ly = get_local_id(1), lin = ly * Lx + lx;
  const uint W = Lx + 2, H = Ly + 2;
  const int oy = (int)(get_group_id(1) * Ly) - 1, ox = (int)(get_group_id(0) * Lx) - 1;
  for (uint t = lin; t < H * W; t += L) {
    int y = clamp(oy + (int)(t / W), 0, (int)rows - 1);
    int x = clamp(ox + (int)(t % W), 0, (int)cols - 1);
    tile[t] = src[y * cols + x];
  }
  barrier(CLK_LOCAL_MEM_FENCE);
  float acc = 0.0f;
  for (uint dy = 0; dy < 3; ++dy)
    for (uint dx = 0; dx < 3; ++dx) acc += weights[dy * 3 + dx] * tile[(ly + dy) * W + lx + dx];
  const uint gx = get_global_id(0), gy = get_global_id(1);
  if (gy < rows && gx < cols) dst[gy * cols + gx] = acc;
}
