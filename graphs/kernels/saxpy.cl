// Saxpy ([Marques14, §5.1.1]): z = a*x + y over float32.
// Args: input x, input y, output z, scalar float a, count n.
// Contraction into an FMA is off so that a*x+y rounds like the C++ leaf
// (bit-exact unless the C++ build itself contracts, e.g. -march=native).
#pragma OPENCL FP_CONTRACT OFF
__kernel void saxpy(__global const float* x, __global const float* y, __global float* z, const float a,
                    const uint n) {
  const size_t i = get_global_id(0);
  if (i >= n) return;
  z[i] = a * x[i] + y[i];
}
