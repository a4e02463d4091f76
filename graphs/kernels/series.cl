// Series (Java Grande Forum JGFSeriesBench, [Marques14, §5.1.1]): Fourier
// coefficient i of f(x) = (x+1)^x on [0, 2], by Java Grande's
// TrapezoidIntegrate statement for statement (it evaluates nsteps - 2
// interior points, as the suite's reference values assume). Double
// precision; the unit carries no input, only the index space of coefficients.
// Args: output double2 (a, b), int steps, count n.
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
#pragma OPENCL FP_CONTRACT OFF

double series_function(double x, double omegan, int select) {
  switch (select) {
    case 0: return pow(x + 1.0, x);
    case 1: return pow(x + 1.0, x) * cos(omegan * x);
    case 2: return pow(x + 1.0, x) * sin(omegan * x);
  }
  return 0.0;
}

double trapezoid_integrate(double x0, double x1, int nsteps, double omegan, int select) {
  double x = x0;
  double dx = (x1 - x0) / (double)nsteps;
  double rvalue = series_function(x0, omegan, select) / 2.0;
  if (nsteps != 1) {
    --nsteps;
    while (--nsteps > 0) {
      x += dx;
      rvalue += series_function(x, omegan, select);
    }
  }
  rvalue = (rvalue + series_function(x1, omegan, select) / 2.0) * dx;
  return rvalue;
}

__kernel void series(__global double2* out, const int steps, const uint n) {
  const size_t i = get_global_id(0);
  if (i >= n) return;
  if (i == 0) {
    out[0] = (double2)(trapezoid_integrate(0.0, 2.0, steps, 0.0, 0) / 2.0, 0.0);
    return;
  }
  const double omega = 3.1415926535897932;
  out[i] = (double2)(trapezoid_integrate(0.0, 2.0, steps, omega * (double)i, 1),
                     trapezoid_integrate(0.0, 2.0, steps, omega * (double)i, 2));
}
