// Reference results of --verify: layers made and copied from the pool, and
// compared element by element (floating-point ones within a tolerance).
#include "layer_compare.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <sstream>

#include <sinew/engine/buffer_pool.hpp>
#include <sinew/engine/elem_type.hpp>
#include <sinew/io/type_names.hpp>
#include <sinew/workloads/image.hpp>

namespace sinew::detail {
namespace {

/// Size of the floating-point components of `t` (4 or 8), 0 if it has none.
std::size_t float_component(const elem_type& t) {
  static const struct {
    const char* name;
    std::size_t comp;
  } floats[] = {{"f32", 4}, {"f64", 8}, {"body", 4}, {"vel", 4}, {"coeff", 8}};
  for (auto& f : floats)
    if (const elem_type* e = elem_type_by_name(f.name); e && e->same_as(t)) return f.comp;
  return 0;
}

template <class F>
bool close(F a, F b, double tol) {
  if (a == b || (std::isnan(a) && std::isnan(b))) return true;
  double scale = std::max({1.0, std::fabs(double(a)), std::fabs(double(b))});
  return std::fabs(double(a) - double(b)) <= tol * scale;
}

/// Element `g` equals `w` component by component (`es` bytes of F's), within `tol`.
template <class F>
bool close_components(const unsigned char* g, const unsigned char* w, std::size_t es, double tol) {
  for (std::size_t k = 0; k < es / sizeof(F); ++k) {
    F x, y;
    std::memcpy(&x, g + sizeof(F) * k, sizeof(F));
    std::memcpy(&y, w + sizeof(F) * k, sizeof(F));
    if (!close(x, y, tol)) return false;
  }
  return true;
}

}  // namespace

layer make_layer(const shape& s, const type_list& t) {
  layer l(s);
  for (const elem_type* e : t.types) l.add(buffer_pool::global().acquire(s.count(), *e));
  return l;
}

layer copy_layer(const layer& from) {
  layer l(from.shape());
  for (unsigned i = 0; i < from.size(); ++i) {
    const buffer_ref& b = from[i];
    const std::size_t n = from.shape_of(i).count();
    buffer_ref c = buffer_pool::global().acquire(n, b->type());
    if (b->bytes()) std::memcpy(c.data<unsigned char>(), b.data<unsigned char>(), n * b->type().size);
    l.add(std::move(c), from.shape_of(i));
  }
  return l;
}

std::string compare_layers(const layer& got, const layer& want, double tol) {
  if (!(got.shape() == want.shape())) return "shape " + got.shape().str() + ", reference " + want.shape().str();
  if (got.size() != want.size())
    return std::to_string(got.size()) + " buffers, reference " + std::to_string(want.size());
  for (unsigned b = 0; b < got.size(); ++b) {
    if (!(got.shape_of(b) == want.shape_of(b)))
      return "buffer " + std::to_string(b) + " shape " + got.shape_of(b).str() + ", reference " +
             want.shape_of(b).str();
    const elem_type& t = want[b]->type();
    const std::size_t n = got.shape_of(b).count(), es = t.size;
    const unsigned char* g = got[b].data<unsigned char>();
    const unsigned char* w = want[b].data<unsigned char>();
    if (std::memcmp(g, w, n * es) == 0) continue;
    std::size_t comp = tol > 0 ? float_component(t) : 0;
    for (std::size_t i = 0; i < n; ++i) {
      const bool same = comp == 4   ? close_components<float>(g + i * es, w + i * es, es, tol)
                        : comp == 8 ? close_components<double>(g + i * es, w + i * es, es, tol)
                                    : std::memcmp(g + i * es, w + i * es, es) == 0;
      if (!same) {
        std::ostringstream os;
        os << "buffer " << b << " element " << i << " differs";
        if (es == 4 && comp == 4) {
          float x, y;
          std::memcpy(&x, g + i * es, 4);
          std::memcpy(&y, w + i * es, 4);
          os << " (" << x << ", reference " << y << ")";
        }
        return os.str();
      }
    }
  }
  return "";
}

}  // namespace sinew::detail
