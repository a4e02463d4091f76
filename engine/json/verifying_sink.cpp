// `sinew run --verify`: every unit the graph delivers is compared with the
// sequential reference of the same file. The reference replays the source
// (a second, identical source) and runs `reference_root()` inline, one unit at
// a time, on the sink's thread; units that arrive early (unordered farms) wait
// in a map keyed by sequence number until their turn.
#include <sinew/json/graph_file.hpp>

#include <atomic>
#include <map>
#include <mutex>


#include "graph_file_state.hpp"
#include "json_cursor.hpp"
#include "layer_compare.hpp"

namespace sinew {
namespace {

class verifying_sink_impl final : public detail::sink_impl {
 public:
  verifying_sink_impl(const graph_file& f, const detail::graph_file_state& s, sink inner,
                      std::shared_ptr<verify_report> r)
      : inner_(std::move(inner)), report_(std::move(r)), tol_(s.tolerance) {
    if (!f.replayable())
      throw error(f.origin() + ": --verify needs a source that can be read twice (" +
                  detail::comma_list(graph_file::replayable_source_types()) + "); this file reads from " +
                  (s.source.live_input.empty() ? s.source_type->live_input : s.source.live_input));
    replay_ = s.source.make(true);
    ref_ = f.reference_root();
    exec_ = ref_.impl()->compile_inline("reference");
  }

  void prepare(const detail::type_list& outputs, std::optional<std::uint64_t> units) override {
    *report_ = verify_report{};
    inner_.impl().prepare(outputs, units);
    // The replayed source batches records as the graph's own does (a
    // replayable source reads a file or generates: its batches do not
    // depend on timing).
    std::string whole = ref_.impl()->whole_unit_leaf("reference");
    if (whole.empty() && !inner_.impl().writes_records()) whole = inner_.impl().label();
    replay_.impl().batch_for(whole);
  }
  bool writes_records() const override { return inner_.impl().writes_records(); }
  void idle() override { inner_.impl().idle(); }
  bool provide(std::uint64_t seq, const shape& s, layer& out) override { return inner_.impl().provide(seq, s, out); }
  bool provides() const override { return inner_.impl().provides(); }

  void consume(work_unit& u) override {
    {
      std::lock_guard lk(m_);
      if (u.seq() == next_) {
        check(u.in());
        drain();
      } else {
        early_.emplace(u.seq(), detail::copy_layer(u.in()));
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
  bool takes_notes() const override { return inner_.impl().takes_notes(); }
  std::string report() const override { return inner_.impl().report(); }

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
      out = detail::make_layer(ref_.impl()->output_shape(in.shape()), ref_.impl()->output_types());
      outp = &out;
    }
    detail::exec_args a{&in, outp, b.grain(), seq, nullptr, &b.records()};
    exec_->execute(a);
    std::string d = detail::compare_layers(got, *outp, tol_);
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
