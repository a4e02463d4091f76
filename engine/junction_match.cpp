// Zip and join at run time: the parts of one sequence number or one key,
// matched across a junction's inputs. See docs/runtime.md, "Dags".
#include <array>
#include <exception>
#include <stdexcept>
#include <string>

#include "junction.hpp"
#include "run_state.hpp"
#include "stage.hpp"

namespace sinew::detail {

work_unit* junction_rt::add_part(std::size_t i, work_unit* u) {
  auto it = pending.find(u->seq());
  if (it == pending.end()) {
    if (spare_matches.empty()) {
      it = pending.emplace(u->seq(), match{}).first;
    } else {
      auto nh = std::move(spare_matches.back());
      spare_matches.pop_back();
      nh.key() = u->seq();
      nh.mapped() = match{};
      it = pending.insert(std::move(nh)).position;
    }
  }
  match& m = it->second;
  if (m.parts[i]) {
    st.run->fail(spec.path, std::make_exception_ptr(std::runtime_error(
                                "input " + std::to_string(i) + " ('" + branch(i) + "') delivered unit " +
                                std::to_string(u->seq()) + " twice (zip matches units by sequence number)")));
    st.run->release_unit(u);
    return nullptr;
  }
  m.parts[i] = u;
  ++m.n;
  for (std::size_t j = 0; j < ins.size(); ++j)
    if (ended[j] && !m.parts[j]) {
      st.run->fail(spec.path, std::make_exception_ptr(std::runtime_error(
                                  "unit " + std::to_string(u->seq()) + " from input " + std::to_string(i) + " ('" +
                                  branch(i) + "') has no match: input " + std::to_string(j) + " ('" + branch(j) +
                                  "') has ended")));
      break;
    }
  if (m.n < ins.size()) {
    if (++pending_in[i] >= window) set_readable(i, false);
    return nullptr;
  }
  // Every part is here: one unit whose layer 0 holds every input's buffers,
  // in the declared order of the inputs.
  const std::array<work_unit*, layer::max_buffers> parts = m.parts;
  spare_matches.push_back(pending.extract(it));
  for (std::size_t j = 0; j < ins.size(); ++j)
    if (j != i && pending_in[j]-- >= window && !ended[j]) set_readable(j, true);
  return combine(parts.data());
}

work_unit* junction_rt::combine(work_unit* const* parts) {
  work_unit* out = parts[0];
  for (std::size_t j = 1; j < ins.size(); ++j) {
    try {
      // A part of another shape keeps it: its buffers are added with their
      // own shapes, the unit has input 0's (layer::shape_of). They are moved:
      // the part is released below, so no reference count changes.
      layer& p = parts[j]->in();
      layer& o = out->in();
      if (o.size() + p.size() > layer::max_buffers)
        throw std::runtime_error("input " + std::to_string(j) + " ('" + branch(j) + "') brings " +
                                 std::to_string(p.size()) + " buffer(s) to the " + std::to_string(o.size()) +
                                 " of the inputs before it: a unit's layer holds at most " +
                                 std::to_string(layer::max_buffers));
      for (unsigned b = 0; b < p.size(); ++b) o.add(std::move(p[b]), p.shape_of(b));
      if (parts[j]->note()) out->note().join(std::move(parts[j]->note()));  // written when the joined unit is
    } catch (...) {
      st.run->fail(spec.path, std::current_exception());
    }
    st.run->release_unit(parts[j]);
  }
  if (st.run->dropping()) {
    st.run->release_unit(out);
    return nullptr;
  }
  return out;
}

namespace {
// A join's waiting units of one key, per input: none left.
template <class PerInput>
bool none_waiting(const PerInput& per) {
  return std::all_of(per.begin(), per.end(), [](const auto& q) { return q.empty(); });
}
}  // namespace

work_unit* junction_rt::join_part(std::size_t i, work_unit* u) {
  std::uint64_t key;
  try {
    key = (spec.keys.size() == 1 ? spec.keys[0] : spec.keys[i])(*u);
  } catch (...) {
    st.run->fail(spec.path, std::current_exception());
    st.run->release_unit(u);
    return nullptr;
  }
  const std::size_t n = ins.size();
  if (auto it = joining_by_key.find(key); it != joining_by_key.end()) {
    auto& per = it->second;
    bool all = true;
    for (std::size_t j = 0; j < n && all; ++j) all = j == i || !per[j].empty();
    if (all) {  // the oldest waiting unit of this key of every other input
      std::vector<work_unit*> parts(n, u);
      for (std::size_t j = 0; j < n; ++j) {
        if (j == i) continue;
        const waiting_list::iterator w = per[j].front();
        per[j].pop_front();
        parts[j] = w->u;
        joining[j].erase(w);
      }
      if (none_waiting(per)) joining_by_key.erase(it);
      return combine(parts.data());
    }
  }
  // It waits, at `place` among the waiting units of its key of input i
  // (after the window's oldest unit has gone, when the window is full). An
  // input j that has ended can match only the units of this key waiting
  // there, one each, oldest first.
  const bool full = joining[i].size() >= spec.join_opts.window;
  std::size_t place = 1;
  if (auto it = joining_by_key.find(key); it != joining_by_key.end()) place += it->second[i].size();
  if (full && joining[i].front().key == key) --place;
  for (std::size_t j = 0; j < n; ++j) {
    if (j == i || !ended[j]) continue;
    auto it = joining_by_key.find(key);
    if (it == joining_by_key.end() || it->second[j].size() < place) {
      unmatched(i, u, key, "input " + std::to_string(j) + " ('" + branch(j) + "') has ended");
      return nullptr;
    }
  }
  if (full) {  // the window's oldest unit goes
    const waiting_unit w = joining[i].front();
    auto it = joining_by_key.find(w.key);
    assert(it != joining_by_key.end() && it->second[i].front() == joining[i].begin());
    it->second[i].pop_front();
    if (none_waiting(it->second)) joining_by_key.erase(it);
    joining[i].pop_front();
    unmatched(i, w.u, w.key,
              std::to_string(spec.join_opts.window) + " unit(s) of its input came after it unmatched (the join's window)");
  }
  auto& per = joining_by_key[key];
  per.resize(n);
  joining[i].push_back({key, u});
  per[i].push_back(std::prev(joining[i].end()));
  return nullptr;
}

void junction_rt::join_input_ended(std::size_t i) {
  for (auto it = joining_by_key.begin(); it != joining_by_key.end();) {
    auto& per = it->second;
    const std::size_t can = per[i].size();  // units of this key input i can still match
    for (std::size_t a = 0; a < per.size(); ++a)
      while (a != i && per[a].size() > can) {  // the newest first: matching takes the oldest
        const waiting_list::iterator w = per[a].back();
        per[a].pop_back();
        work_unit* u = w->u;
        joining[a].erase(w);
        unmatched(a, u, it->first, "input " + std::to_string(i) + " ('" + branch(i) + "') has ended");
      }
    it = none_waiting(per) ? joining_by_key.erase(it) : std::next(it);
  }
}

void junction_rt::unmatched(std::size_t i, work_unit* u, std::uint64_t key, const std::string& why) {
  if (spec.join_opts.unmatched == join_unmatched::fail) {
    st.run->fail(spec.path, std::make_exception_ptr(std::runtime_error(
                                "unit " + std::to_string(u->seq()) + " from input " + std::to_string(i) + " ('" +
                                branch(i) + "') with key " + std::to_string(key) + " has no match: " + why)));
  } else {
    // The graph has done with it: an at-least-once source acknowledges it.
    u->note().written();
    add_stage_counter("unmatched", 1);
  }
  st.run->release_unit(u);
}

void junction_rt::release_pending() {
  for (auto& [seq, m] : pending)
    for (work_unit* p : m.parts)
      if (p) st.run->release_unit(p);
  pending.clear();
  for (waiting_list& l : joining) {
    for (const waiting_unit& w : l) st.run->release_unit(w.u);
    l.clear();
  }
  joining_by_key.clear();
  for (std::size_t i = 0; i < pending_in.size(); ++i) {
    pending_in[i] = 0;
    if (!ended[i]) set_readable(i, true);
  }
}

}  // namespace sinew::detail
