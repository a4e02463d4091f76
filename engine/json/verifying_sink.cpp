// `sinew run --verify`: every unit the graph delivers is compared with the
// sequential reference of the same file. The reference replays the source
// (a second, identical source) and runs `reference_root()` inline, one unit at
// a time, on the sink's thread; units that arrive early (unordered farms) wait
// in a map keyed by sequence number until their turn.
#include <sinew/io/type_names.hpp>
#include <sinew/json/graph_file.hpp>

#include <atomic>
#include <cmath>
#include <cstring>
#include <map>
#include <mutex>
#include <sstream>

#include <sinew/engine/buffer_pool.hpp>
#include <sinew/engine/elem_type.hpp>
#include <sinew/workloads/image.hpp>

#include "graph_file_state.hpp"
#include "json_cursor.hpp"

namespace sinew {
namespace {

layer make_layer(const shape& s, const detail::type_list& t) {
  layer l(s);
  for (const elem_type* e : t.types) l.add(buffer_pool::global().acquire(s.count(), *e));
  return l;
}

layer copy_layer(const layer& from) {
  layer l(from.shape());
  for (unsigned i = 0; i < from.size(); ++i) {
    const buffer_ref& b = from[i];
    buffer_ref c = buffer_pool::global().acquire(from.count(), b->type());
    if (b->bytes()) std::memcpy(c.data<unsigned char>(), b.data<unsigned char>(), from.count() * b->type().size);
    l.add(std::move(c));
  }
  return l;
}

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

/// "" if equal (within `tol` for floating-point buffers), else a description.
std::string compare(const layer& got, const layer& want, double tol) {
  if (!(got.shape() == want.shape())) return "shape " + got.shape().str() + ", reference " + want.shape().str();
  if (got.size() != want.size())
    return std::to_string(got.size()) + " buffers, reference " + std::to_string(want.size());
  for (unsigned b = 0; b < got.size(); ++b) {
    const elem_type& t = want[b]->type();
    const std::size_t n = got.count(), es = t.size;
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

class verifying_sink_impl final : public detail::sink_impl {
 public:
  verifying_sink_impl(const graph_file& f, const detail::graph_file_state& s, sink inner,
                      std::shared_ptr<verify_report> r)
      : inner_(std::move(inner)), report_(std::move(r)), tol_(s.tolerance) {
    if (!f.replayable())
      throw error(f.origin() + ": --verify needs a source that can be read twice (" +
                  detail::comma_list(graph_file::replayable_source_types()) + "); this file reads from " +
                  s.source_type->live_input);
    replay_ = s.source.make(true);
    ref_ = f.reference_root();
    exec_ = ref_.impl()->compile_inline("reference");
  }

  void prepare(const detail::type_list& outputs, std::optional<std::uint64_t> units) override {
    *report_ = verify_report{};
    inner_.impl().prepare(outputs, units);
  }
  bool provide(std::uint64_t seq, const shape& s, layer& out) override { return inner_.impl().provide(seq, s, out); }

  void consume(work_unit& u) override {
    {
      std::lock_guard lk(m_);
      if (u.seq() == next_) {
        check(u.in());
        drain();
      } else {
        early_.emplace(u.seq(), copy_layer(u.in()));
      }
    }
    inner_.impl().consume(u);
  }

  void finish() override {
    {
      std::lock_guard lk(m_);
      drain();
      if (!early_.empty()) fail(early_.begin()->first, "unit " + std::to_string(next_) + " never arrived");
    }
    inner_.impl().finish();
  }
  std::string label() const override { return "verify(" + inner_.impl().label() + ")"; }
  void interrupt() override { inner_.impl().interrupt(); }

 private:
  void drain() {
    for (auto it = early_.find(next_); it != early_.end(); it = early_.find(next_)) {
      check(it->second);
      early_.erase(it);
    }
  }
  void fail(std::uint64_t seq, const std::string& what) {
    if (report_->mismatches++ == 0) report_->first = "unit " + std::to_string(seq) + ": " + what;
  }
  void check(const layer& got) {
    const std::uint64_t seq = next_++;
    layer in;
    unit_builder b(in, seq, &stop_);
    if (!replay_.impl().next(b)) {
      fail(seq, "the reference source ended before this unit");
      return;
    }
    layer out;
    layer* outp = &in;
    if (!ref_.impl()->in_place()) {
      out = make_layer(ref_.impl()->output_shape(in.shape()), ref_.impl()->output_types());
      outp = &out;
    }
    detail::exec_args a{&in, outp, b.grain(), seq, nullptr};
    exec_->execute(a);
    std::string d = compare(got, *outp, tol_);
    ++report_->units;
    if (!d.empty()) fail(seq, d);
  }

  sink inner_;
  std::shared_ptr<verify_report> report_;
  double tol_;
  source replay_{nullptr};
  node ref_;
  std::shared_ptr<detail::executable> exec_;
  std::atomic<bool> stop_{false};
  std::mutex m_;
  std::uint64_t next_ = 0;
  std::map<std::uint64_t, layer> early_;
};

}  // namespace

sink verifying_sink(const graph_file& f, sink inner, std::shared_ptr<verify_report> report) {
  return sink(std::make_shared<verifying_sink_impl>(f, detail::state_of(f), std::move(inner), std::move(report)));
}

}  // namespace sinew
