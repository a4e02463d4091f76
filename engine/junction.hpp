#pragma once
// Internal: a dag's fan-out and fan-in vertices at run time (docs/runtime.md,
// "Dags").
#include <array>
#include <atomic>
#include <cstdint>
#include <deque>
#include <list>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "compiled_graph.hpp"

namespace sinew::detail {

class channel;
struct stage_rt;

/// Replaces every buffer of `l` that another unit also holds (the copies a
/// broadcast made share their buffers) with a private copy, so that an
/// in-place leaf may write it.
void own_buffers(layer& l);

/// A broadcast, split, merge, zip or join of a running dag. It runs as a serial
/// stage (`st`, one activation at a time), so everything below is touched
/// by one thread at a time; other threads read only the atomics (has_work).
///
/// Fan-out takes a unit and holds it (a broadcast: a copy per output, the
/// buffers shared) until each output it goes to has room: at most one unit
/// per output is held, and nothing is taken while any is. A merge reserves
/// its output first, like a stage; a zip or join reserves only for the unit
/// a part completes and holds it while the output is full (a part that
/// completes nothing needs no room). End of stream leaves a fan-out on every
/// output (its seq: the data units that output got) and a fan-in once every
/// input has ended.
///
/// \code
/// junction_rt j(stage, spec);
/// j.wire(run.channels);
/// stage.junction = &j;            // stage_rt::run_chain then runs j.activation()
/// \endcode
struct junction_rt {
  /// Units it may still hold when the run is destroyed belong to the run's
  /// unit pool, which clears them all.
  junction_rt(stage_rt& s, const junction_spec& j);
  void wire(const std::vector<std::unique_ptr<channel>>& channels);
  /// As built, for the graph's next run (run_state::arm, after a run that
  /// ended holding no unit: nothing is held, pending or joining).
  void restart();
  /// Any thread: an activation could make progress now.
  bool has_work() const noexcept;
  /// Units it takes from each input per unit it passes on.
  std::size_t parts_per_unit() const noexcept {
    return spec.k == junction_spec::zip || spec.k == junction_spec::join ? ins.size() : 1;
  }
  stage_rt* activation();
  /// End of an activation: wake the producers, claim a consumer to run next.
  stage_rt* leave();

  stage_rt& st;
  const junction_spec& spec;
  std::vector<channel*> ins, outs;

 private:
  enum progress { took, no_input, no_room };
  progress take();
  /// Pushes held units where there is room; true when none is held.
  bool deliver();
  void push(std::size_t k, work_unit* u);
  /// held_mask's bit for output k (outputs past 63 share the last bit).
  static std::uint64_t held_bit(std::size_t k) noexcept { return std::uint64_t(1) << (k < 64 ? k : 63); }
  void hold(std::size_t k, work_unit* u);
  /// End of stream on every output (from `e`, released).
  void end_outputs(work_unit* e);
  void input_ended(std::size_t i, work_unit* e);
  std::size_t pick_output();
  work_unit* pop_any(std::size_t& i);
  /// A zip's part `u` from input `i`: the finished unit when every input
  /// has given its part of that seq, else null.
  work_unit* add_part(std::size_t i, work_unit* u);
  /// A join's unit `u` from input `i`: the joined unit when every other
  /// input has a unit of its key waiting, else null (it waits, or it can
  /// have no match).
  work_unit* join_part(std::size_t i, work_unit* u);
  /// `parts[0]` holding the buffers of every part (one per input), in input
  /// order, each with its part's shape, and their delivery notes; the other
  /// parts are released. Null when the run drops its units.
  work_unit* combine(work_unit* const* parts);
  /// A join's unit that can have no match: released and counted, or the
  /// run fails (join_options::unmatched).
  void unmatched(std::size_t i, work_unit* u, std::uint64_t key, const std::string& why);
  /// Input `i` ended: the units of other inputs that needed one more of its
  /// units can have no match.
  void join_input_ended(std::size_t i);
  void release_pending();
  /// A data unit was taken: counted, and traced as an instant event.
  void taken(const work_unit& u);
  bool drop_data(work_unit* u);
  std::string branch(std::size_t i) const;
  void set_readable(std::size_t i, bool yes);

  std::vector<work_unit*> held;  // held[k]: waits for room in outs[k]
  std::vector<std::uint64_t> sent;  // data units pushed to each output
  std::vector<bool> ended;
  std::size_t ended_n = 0;
  std::uint64_t emitted = 0;  // fan-in: data units pushed
  std::size_t next_in = 0, next_out = 0;
  struct match {
    std::array<work_unit*, layer::max_buffers> parts{};  // a zip has at most 8 inputs
    std::size_t n = 0;
  };
  std::unordered_map<std::uint64_t, match> pending;  // zip: by seq
  // Entries taken out of `pending` once matched, reused for later seqs: a
  // zipped unit allocates nothing.
  std::vector<std::unordered_map<std::uint64_t, match>::node_type> spare_matches;
  std::vector<std::size_t> pending_in;  // zip: entries with a part from input i
  std::size_t window = 0;  // zip: most entries one input may have waiting
  struct waiting_unit {
    std::uint64_t key;
    work_unit* u;
  };
  using waiting_list = std::list<waiting_unit>;
  // join: each input's waiting units in arrival order, and per key each
  // input's waiting units of that key, oldest first (FIFO matching per key).
  std::vector<waiting_list> joining;
  std::unordered_map<std::uint64_t, std::vector<std::deque<waiting_list::iterator>>> joining_by_key;
  std::uint32_t join_origin = 0;  // the origin of joined units: after every source's
  // Read by has_work from any thread.
  std::atomic<std::uint64_t> held_mask{0};   // bit k: held[k] is set
  std::atomic<bool> held_eos{false};         // what is held is end of stream
  std::atomic<std::uint64_t> readable{0};    // bit i: input i may be read
  std::atomic<bool> eos_out{false};          // end of stream went to every output
};

}  // namespace sinew::detail
