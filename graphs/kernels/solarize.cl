// Solarize ([Marques14, §5.1.1]): per colour channel c < t ? c : 255 - c;
// alpha is kept. Pixels are rgba8 (uchar4). 2-D range: x = column, y = row.
// Args: input uchar4 image, output uchar4 image, uchar t, cols, rows.
__kernel void solarize(__global const uchar4* in, __global uchar4* out, const uchar t, const uint cols,
                       const uint rows) {
  const size_t x = get_global_id(0), y = get_global_id(1);
  if (x >= cols || y >= rows) return;
  const size_t i = y * cols + x;
  const uchar4 p = in[i];
  uchar4 o;
  o.x = p.x < t ? p.x : (uchar)(255 - p.x);
  o.y = p.y < t ? p.y : (uchar)(255 - p.y);
  o.z = p.z < t ? p.z : (uchar)(255 - p.z);
  o.w = p.w;
  out[i] = o;
}
