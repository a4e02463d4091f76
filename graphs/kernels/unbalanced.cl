// The unbalanced kernel of [Vinas17, §4.2.2, Fig. 13]: each
// element of a 2-D float matrix costs 1 flop when it is zero and 1001 flops
// otherwise (an iterated multiply-add), so rows with many non-zeros take
// longer; the test matrix puts its zeros in the top rows.
// out = in == 0 ? in + 1 : f^500(in) with f(v) = v * 0.999f + 0.001f
// (two flops per step: 1 + 500 * 2 = 1001).
// Args: input float matrix, output float matrix, cols, rows.
#pragma OPENCL FP_CONTRACT OFF
__kernel void unbalanced(__global const float* in, __global float* out, const uint cols, const uint rows) {
  const size_t x = get_global_id(0), y = get_global_id(1);
  if (x >= cols || y >= rows) return;
  const size_t i = y * cols + x;
  float v = in[i];
  if (v == 0.0f) {
    out[i] = v + 1.0f;
    return;
  }
  for (int k = 0; k < 500; ++k) v = v * 0.999f + 0.001f;
  out[i] = v;
}
