// Per-work-group histograms of `bins` bins (hist is groups x bins): local
// bins updated with local atomics, then copied out. Values are taken modulo
// bins. The same algorithm as sinew::group_examples::Histogram; local
// buffer of `bins` uints.
__kernel void histogram(__global const uint* x, __global uint* hist, const uint n, const uint per_item,
                        const uint bins, __local uint* h) {
  const uint L = get_local_size(0), lid = get_local_id(0), grp = get_group_id(0);
  const uint block = grp * L * per_item;
  for (uint b = lid; b < bins; b += L) h[b] = 0;
  barrier(CLK_LOCAL_MEM_FENCE);
  for (uint k = 0; k < per_item; ++k) {
    uint e = block + k * L + lid;
    if (e < n) atomic_inc(&h[x[e] % bins]);
  }
  barrier(CLK_LOCAL_MEM_FENCE);
  for (uint b = lid; b < bins; b += L) hist[grp * bins + b] = h[b];
}
