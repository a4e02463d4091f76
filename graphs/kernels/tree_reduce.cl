// Sum of each work-group's block of local_size * per_item elements: every
// work-item adds per_item elements strided by the group size, then a tree
// in local memory with a barrier per level. One partial sum per group. The
// same algorithm as sinew::group_examples::TreeReduce; local buffer of
// local_size ints.
__kernel void tree_reduce(__global const int* x, __global int* partial, const uint n, const uint per_item,
                          __local int* s) {
  const uint L = get_local_size(0), lid = get_local_id(0);
  const uint block = get_group_id(0) * L * per_item;
  int sum = 0;
  for (uint k = 0; k < per_item; ++k) {
    uint e = block + k * L + lid;
    if (e < n) sum += x[e];
  }
  s[lid] = sum;
  barrier(CLK_LOCAL_MEM_FENCE);
  uint step = 1;
  while (step * 2 < L) step *= 2;
  for (; step > 0; step /= 2) {
    if (lid < step && lid + step < L) s[lid] += s[lid + step];
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  if (lid == 0) partial[get_group_id(0)] = s[0];
}
