// `sinew run --verify` on a dag file: every unit a sink receives is compared
// with what the file's nodes make of the same source units, run one at a
// time: the sources are replayed and each sequence number is followed
// through the reference trees, merges, zips and splits by key, in the order
// the nodes depend on each other. A sink's unit is matched by origin and
// sequence number (a unit that reaches a sink twice, by a broadcast and a
// merge, matches either of its references).
#include <sinew/json/graph_file.hpp>

#include <algorithm>
#include <atomic>
#include <map>
#include <mutex>

#include "graph_file_state.hpp"
#include "json_cursor.hpp"
#include "layer_compare.hpp"

namespace sinew {
namespace {

using ref_vertex = detail::graph_file_state::ref_vertex;

class dag_reference {
 public:
  dag_reference(const graph_file& f, const detail::graph_file_state& s, std::shared_ptr<verify_report> r)
      : s_(s), report_(std::move(r)), tol_(s.tolerance) {
    if (!f.replayable())
      throw error(f.origin() + ": --verify needs sources that can be read twice (" +
                  detail::comma_list(graph_file::replayable_source_types()) + ")");
    for (const ref_vertex& v : s.ref_dag) {
      if (v.k == ref_vertex::split_by_policy)
        throw error(f.origin() + ": --verify: split '" + v.name +
                    "' sends units where queues have room, which a sequential reference cannot follow (split by "
                    "\"key\" to verify)");
      if (v.k == ref_vertex::join)
        throw error(f.origin() + ": --verify: join '" + v.name +
                    "' pairs units in the order its inputs deliver them and numbers them afresh, which a sequential "
                    "reference cannot follow");
    }
    for (const auto& src : s.sources) {
      replays_.push_back(src.plan.make(true));
      replays_.back().impl().batch_for(s.whole_unit_at);  // batches as the run's sources make them
    }
    ended_.assign(replays_.size(), false);
    for (const ref_vertex& v : s.ref_dag)
      execs_.push_back(v.k == ref_vertex::tree ? v.ref.impl()->compile_inline("reference/" + v.name) : nullptr);
    expected_.resize(s.sinks.size());
    open_ = s.sinks.size();
    *report_ = verify_report{};
  }

  void check(std::size_t sink, const work_unit& u) {
    std::lock_guard lk(m_);
    while (next_ <= u.seq() && evaluate(next_)) ++next_;
    auto& exp = expected_[sink];
    auto it = exp.find({u.origin(), u.seq()});
    ++report_->units;
    if (it == exp.end()) {
      fail(sink, u.origin(), u.seq(), "the reference sends no such unit to this sink");
      return;
    }
    std::string first;
    for (std::size_t i = 0; i < it->second.size(); ++i) {
      std::string d = detail::compare_layers(u.in(), it->second[i], tol_);
      if (d.empty()) {
        it->second.erase(it->second.begin() + std::ptrdiff_t(i));
        if (it->second.empty()) exp.erase(it);
        return;
      }
      if (first.empty()) first = d;
    }
    fail(sink, u.origin(), u.seq(), first);
    it->second.erase(it->second.begin());
    if (it->second.empty()) exp.erase(it);
  }

  /// A sink has its end of stream; after the last, what no sink got is reported.
  void finished() {
    std::lock_guard lk(m_);
    if (--open_ > 0) return;
    for (std::size_t k = 0; k < expected_.size(); ++k)
      for (auto& [key, layers] : expected_[k])
        for (std::size_t i = 0; i < layers.size(); ++i) fail(k, key.first, key.second, "never arrived");
  }

 private:
  struct item {
    std::uint32_t origin;
    layer l;
    record_index r;  // a record batch's (zips and splits by key never see one)
  };
  using outputs = std::vector<std::vector<item>>;

  void fail(std::size_t sink, std::uint32_t origin, std::uint64_t seq, const std::string& what) {
    if (report_->mismatches++ == 0)
      report_->first = "sink '" + s_.sinks[sink].name + "', unit " + std::to_string(seq) + " of source '" +
                       s_.sources[origin].name + "': " + what;
  }

  /// Follows sequence number `seq` of every source through the dag; false
  /// once every source has ended.
  bool evaluate(std::uint64_t seq) {
    if (std::find(ended_.begin(), ended_.end(), false) == ended_.end()) return false;
    std::vector<outputs> out(s_.ref_dag.size());
    auto input = [&](const ref_vertex& v, std::size_t j) -> const std::vector<item>& {
      return out[v.ins[j].first][v.ins[j].second];
    };
    for (std::size_t vi = 0; vi < s_.ref_dag.size(); ++vi) {
      const ref_vertex& v = s_.ref_dag[vi];
      outputs& o = out[vi];
      o.resize(v.ways);
      switch (v.k) {
        case ref_vertex::source: {
          layer in;
          unit_builder b(in, seq, &stop_);
          if (!ended_[v.endpoint] && replays_[v.endpoint].impl().next(b))
            o[0].push_back({std::uint32_t(v.endpoint), std::move(in), b.records()});
          else
            ended_[v.endpoint] = true;
          break;
        }
        case ref_vertex::tree:
          for (const item& x : input(v, 0)) {
            layer l = run_tree(vi, x.l, x.r, seq);
            record_index r = x.r.fits(l.count()) ? x.r : record_index();
            o[0].push_back({x.origin, std::move(l), std::move(r)});
          }
          break;
        case ref_vertex::merge:
          for (std::size_t j = 0; j < v.ins.size(); ++j)
            for (const item& x : input(v, j)) o[0].push_back(x);
          break;
        case ref_vertex::zip: {
          bool all = true;
          for (std::size_t j = 0; j < v.ins.size(); ++j) all &= input(v, j).size() == 1;
          if (!all) break;  // the run fails on an unmatched unit itself
          item z{input(v, 0)[0].origin, layer(input(v, 0)[0].l.shape()), {}};
          for (std::size_t j = 0; j < v.ins.size(); ++j)
            for (unsigned b = 0; b < input(v, j)[0].l.size(); ++b)
              z.l.add(input(v, j)[0].l[b], input(v, j)[0].l.shape_of(b));
          o[0].push_back(std::move(z));
          break;
        }
        case ref_vertex::split_by_key:
          for (const item& x : input(v, 0)) {
            work_unit u;
            u.push_layer(x.l);
            o[std::size_t(v.key(u) % v.ways)].push_back(x);
          }
          break;
        case ref_vertex::sink:
          for (const item& x : input(v, 0)) expected_[v.endpoint][{x.origin, seq}].push_back(x.l);
          break;
        case ref_vertex::split_by_policy:
        case ref_vertex::join: break;  // refused by the constructor
      }
    }
    return true;
  }

  layer run_tree(std::size_t vi, const layer& from, const record_index& r, std::uint64_t seq) {
    const detail::node_impl& ref = *s_.ref_dag[vi].ref.impl();
    // Inputs are shared by every reader of an output: an in-place tree works on a copy.
    layer in = ref.in_place() ? detail::copy_layer(from) : from;
    layer out;
    layer* outp = &in;
    if (!ref.in_place()) {
      out = detail::make_layer(ref.output_shape(in.shape()), ref.output_types());
      outp = &out;
    }
    detail::exec_args a{&in, outp, 1, seq, nullptr, &r};
    execs_[vi]->execute(a);
    return *outp;
  }

  const detail::graph_file_state& s_;
  std::shared_ptr<verify_report> report_;
  double tol_;
  std::vector<source> replays_;
  std::vector<bool> ended_;
  std::vector<std::shared_ptr<detail::executable>> execs_;
  std::atomic<bool> stop_{false};
  std::mutex m_;
  std::uint64_t next_ = 0;  // sequence numbers evaluated: [0, next_)
  std::vector<std::map<std::pair<std::uint32_t, std::uint64_t>, std::vector<layer>>> expected_;  // per sink
  std::size_t open_ = 0;
};

class dag_verifying_sink final : public detail::sink_impl {
 public:
  dag_verifying_sink(std::shared_ptr<dag_reference> ref, std::size_t index, sink inner)
      : ref_(std::move(ref)), index_(index), inner_(std::move(inner)) {}
  void prepare(const detail::type_list& outputs, std::optional<std::uint64_t> units) override {
    inner_.impl().prepare(outputs, units);
  }
  void consume(work_unit& u) override {
    ref_->check(index_, u);
    inner_.impl().consume(u);
  }
  void finish() override {
    ref_->finished();
    inner_.impl().finish();
  }
  std::string label() const override { return "verify(" + inner_.impl().label() + ")"; }
  void interrupt() override { inner_.impl().interrupt(); }
  bool writes_records() const override { return inner_.impl().writes_records(); }
  void idle() override { inner_.impl().idle(); }

 private:
  std::shared_ptr<dag_reference> ref_;
  std::size_t index_;
  sink inner_;
};

}  // namespace

graph::named_sinks verifying_sinks(const graph_file& f, graph::named_sinks inner, std::shared_ptr<verify_report> report) {
  if (!f.is_dag()) {
    for (auto& [name, k] : inner) k = verifying_sink(f, std::move(k), report);
    return inner;
  }
  const auto& s = detail::state_of(f);
  auto ref = std::make_shared<dag_reference>(f, s, std::move(report));
  for (auto& [name, k] : inner) {
    std::size_t i = 0;
    while (i < s.sinks.size() && s.sinks[i].name != name) ++i;
    if (i == s.sinks.size()) throw error(f.origin() + ": verifying_sinks: no sink named '" + name + "'");
    k = sink(std::make_shared<dag_verifying_sink>(ref, i, std::move(k)));
  }
  return inner;
}

}  // namespace sinew
