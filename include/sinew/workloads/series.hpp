#pragma once
/// \file workloads/series.hpp
/// **Series** (Java Grande Forum benchmark suite, section 2, JGFSeriesBench /
/// SeriesTest; [Marques14, §5.1.1]): the first N Fourier coefficients of
/// f(x) = (x+1)^x on [0, 2]. Coefficient i >= 1 is
///   a_i = ∫ f(x) cos(pi i x) dx,  b_i = ∫ f(x) sin(pi i x) dx   over [0, 2],
/// and coefficient 0 is a_0 = ∫ f(x) dx / 2, b_0 = 0, each integral computed
/// by Java Grande's `TrapezoidIntegrate(0, 2, 1000, omega * i, select)`.
///
/// The map's unit carries no input data: its input layer has only a shape,
/// d1(N), the index space of the coefficients (see `series_source`).
///
/// \code
/// std::vector<std::vector<sinew::workloads::coeff>> out;
/// sinew::graph g(sinew::workloads::series_node());
/// g.run(sinew::workloads::series_source(10000), sinew::into(out)).get();
/// // out[0][1].a == 1.1161046676147888 (Java Grande's reference value, to 1e-12)
/// \endcode
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <vector>

#include <sinew/skeletons/leaf.hpp>
#include <sinew/skeletons/map.hpp>
#include <sinew/engine/source.hpp>
#include <sinew/workloads/unspecialised.hpp>

namespace sinew::workloads {

/// One Fourier coefficient pair (double, as in Java Grande): `a` is the
/// cosine term (TestArray[0][i]), `b` the sine term (TestArray[1][i]).
///
/// \code
/// sinew::workloads::coeff c = sinew::workloads::series_coefficient(2);
/// std::printf("a2=%.17g b2=%.17g\n", c.a, c.b);
/// \endcode
struct coeff {
  double a = 0, b = 0;
  friend bool operator==(const coeff&, const coeff&) = default;
};

/// Java Grande's `thefunction`: select 0 -> (x+1)^x, 1 -> (x+1)^x cos(omegan x),
/// 2 -> (x+1)^x sin(omegan x).
///
/// \code
/// double f = sinew::workloads::series_function(0.5, 3.14159, 1);
/// \endcode
inline double series_function(double x, double omegan, int select) {
  switch (select) {
    case 0: return std::pow(x + 1.0, x);
    case 1: return std::pow(x + 1.0, x) * std::cos(omegan * x);
    case 2: return std::pow(x + 1.0, x) * std::sin(omegan * x);
  }
  return 0.0;
}

/// Java Grande's `TrapezoidIntegrate`, statement for statement. Note that,
/// like the original, it evaluates only `nsteps - 2` interior points (the
/// `--nsteps; while (--nsteps > 0)` loop skips the last one); this is what
/// the suite's reference values were computed with.
///
/// One machine code for the leaf, the reference and the peers
/// (unspecialised.hpp): they agree bit for bit.
///
/// \code
/// double a0 = sinew::workloads::trapezoid_integrate(0.0, 2.0, 1000, 0.0, 0) / 2.0;  // 2.8729524964837996
/// \endcode
SINEW_UNSPECIALISED inline double trapezoid_integrate(double x0, double x1, int nsteps, double omegan, int select) {
  double x = x0;
  double dx = (x1 - x0) / double(nsteps);
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

/// Coefficient `i` computed as JGFSeriesBench's `Do()` does (omega = pi, the
/// fundamental frequency for period 2).
///
/// \code
/// sinew::workloads::coeff c = sinew::workloads::series_coefficient(1);  // {1.1161..., -1.8819...}
/// \endcode
inline coeff series_coefficient(std::size_t i, int steps = 1000) {
  if (i == 0) return {trapezoid_integrate(0.0, 2.0, steps, 0.0, 0) / 2.0, 0.0};
  const double omega = 3.1415926535897932;
  return {trapezoid_integrate(0.0, 2.0, steps, omega * double(i), 1),
          trapezoid_integrate(0.0, 2.0, steps, omega * double(i), 2)};
}

/// Per-element leaf: the coefficient at the element's index. It reads no
/// buffers, so its unit's input layer is a shape with no data.
///
/// \code
/// auto node = sinew::map<sinew::workloads::series>({1000});
/// // or sinew::workloads::series_node() for finer splitting (per-chunk form)
/// \endcode
struct series {
  int steps = 1000;  ///< trapezoid intervals (Java Grande: 1000)
  void operator()(sinew::index i, coeff* c) const { *c = series_coefficient(i.linear, steps); }
};

/// Per-chunk form of `series` for a range of coefficients [c.begin, c.end).
/// A per-element map hands each task at least a few thousand elements,
/// which is too coarse for Series' costly elements (about 2000 `pow` calls
/// each); a per-chunk map can give each task a single coefficient.
///
/// \code
/// sinew::map_options o;
/// o.grain = 1;
/// auto node = sinew::map<sinew::workloads::series_block>({1000}, o);
/// \endcode
struct series_block {
  int steps = 1000;  ///< trapezoid intervals (Java Grande: 1000)
  void operator()(sinew::chunk c, sinew::out<coeff> o) const {
    for (std::size_t i = c.begin; i < c.end; ++i) o[i] = series_coefficient(i, steps);
  }
};

/// `map<series_block>` split into tasks as small as one coefficient, so
/// that even N = 100 coefficients keep every worker busy.
///
/// \code
/// sinew::graph g(sinew::workloads::series_node());
/// g.run(sinew::workloads::series_source(10000), sinew::into(out)).get();
/// \endcode
inline sinew::node series_node(int steps = 1000) {
  sinew::map_options o;
  o.grain = 1;
  o.inline_below = 2;
  return sinew::map<series_block>(series_block{steps}, o);
}

/// Source of `units` units (default 1), each with an input layer of shape
/// d1(n) and no buffers: the coefficient indices 0..n-1.
///
/// \code
/// std::vector<std::vector<sinew::workloads::coeff>> out;
/// g.run(sinew::workloads::series_source(1000), sinew::into(out)).get();  // out.size() == 1
/// \endcode
inline sinew::source series_source(std::size_t n, std::uint64_t units = 1) {
  return sinew::generate([n, units](sinew::unit_builder& u) {
    if (u.seq() >= units) return false;
    u.set_shape(sinew::shape::d1(n));
    return true;
  });
}

/// Sequential reference: coefficients 0..n-1, in order.
///
/// \code
/// auto ref = sinew::workloads::series_reference(1000);
/// \endcode
inline std::vector<coeff> series_reference(std::size_t n, int steps = 1000) {
  std::vector<coeff> c(n);
  for (std::size_t i = 0; i < n; ++i) c[i] = series_coefficient(i, steps);
  return c;
}

/// Java Grande's validation values for coefficients 0..3 ({a_i, b_i}), from
/// JGFSeriesBench.JGFvalidate; a correct implementation matches them to 1e-12.
///
/// \code
/// assert(std::abs(sinew::workloads::series_coefficient(1).a - sinew::workloads::series_jgf_reference[1].a) < 1e-12);
/// \endcode
inline constexpr coeff series_jgf_reference[4] = {{2.8729524964837996, 0.0},
                                                  {1.1161046676147888, -1.8819691893398025},
                                                  {0.34429060398168704, -1.1645642623320958},
                                                  {0.15238898702519288, -0.8143461113044298}};

}  // namespace sinew::workloads
