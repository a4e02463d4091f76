// Segmentation ([Marques14, §5.1.1]): each voxel of a 3-D grey volume becomes
// white (255) above `hi`, black (0) below `lo`, grey (128) otherwise.
// Args: input uchar volume, output uchar volume, uchar lo, uchar hi, cols, rows
// (3-D range: x = column, y = row, z = plane).
__kernel void segmentation(__global const uchar* in, __global uchar* out, const uchar lo, const uchar hi,
                           const uint cols, const uint rows) {
  const size_t x = get_global_id(0), y = get_global_id(1), z = get_global_id(2);
  if (x >= cols || y >= rows) return;
  const size_t i = (z * rows + y) * cols + x;
  const uchar v = in[i];
  out[i] = v > hi ? (uchar)255 : (v < lo ? (uchar)0 : (uchar)128);
}
