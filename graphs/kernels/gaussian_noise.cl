// Gaussian noise (the image pipeline of [Marques14, §5.1.1]): adds N(0, sigma^2) noise to
// the colour channels of each pixel, alpha kept. The normals come from the
// same counter-based hash (splitmix64) and Box-Muller transform as the C++
// leaf (include/sinew/workloads/gaussian_noise.hpp), so results match it up
// to the last bit of log/sqrt/cos/sin: at most 1 level per channel.
// Args: input uchar4 image, output uchar4 image, ulong seed, float sigma, cols, rows.
#pragma OPENCL FP_CONTRACT OFF

ulong splitmix64(ulong x) {
  x += 0x9E3779B97F4A7C15UL;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9UL;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBUL;
  return x ^ (x >> 31);
}
ulong hash64(ulong seed, ulong i) { return splitmix64(splitmix64(seed) ^ i); }

uchar add_noise(uchar c, float sigma, float z) {
  float v = (float)c + sigma * z;
  v = v < 0.0f ? 0.0f : (v > 255.0f ? 255.0f : v);
  return (uchar)(v + 0.5f);
}

__kernel void gaussian_noise(__global const uchar4* in, __global uchar4* out, const ulong seed, const float sigma,
                             const uint cols, const uint rows) {
  const size_t x = get_global_id(0), y = get_global_id(1);
  if (x >= cols || y >= rows) return;
  const ulong i = (ulong)y * cols + x;
  const float two_pi = 6.28318530717958647692f;
  const ulong h1 = hash64(seed, i);
  const ulong h2 = splitmix64(h1);
  const float u1 = (float)((h1 >> 40) + 1) * 0x1p-24f, u2 = (float)((h1 >> 8) & 0xffffff) * 0x1p-24f;
  const float u3 = (float)((h2 >> 40) + 1) * 0x1p-24f, u4 = (float)((h2 >> 8) & 0xffffff) * 0x1p-24f;
  const float r1 = sqrt(-2.0f * log(u1)), r2 = sqrt(-2.0f * log(u3));
  const uchar4 p = in[i];
  uchar4 o;
  o.x = add_noise(p.x, sigma, r1 * cos(two_pi * u2));
  o.y = add_noise(p.y, sigma, r1 * sin(two_pi * u2));
  o.z = add_noise(p.z, sigma, r2 * cos(two_pi * u4));
  o.w = p.w;
  out[i] = o;
}
