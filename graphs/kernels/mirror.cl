// Mirror (the image pipeline of [Marques14, §5.1.1]): flips each row left-right.
// 2-D range: x = column, y = row. Reads only its own row, so a multi-device
// split by rows needs no halo.
// Args: input uchar4 image, output uchar4 image, cols, rows.
__kernel void mirror(__global const uchar4* in, __global uchar4* out, const uint cols, const uint rows) {
  const size_t x = get_global_id(0), y = get_global_id(1);
  if (x >= cols || y >= rows) return;
  out[y * cols + x] = in[y * cols + (cols - 1 - x)];
}
