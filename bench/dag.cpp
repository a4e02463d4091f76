// dag: fan-out / fan-in graphs (sinew::dag) against the same graphs as
// oneTBB flow graphs, in the same run, Sinew under each policy.
//
//   diamond  source -> broadcast -> {x+1, 2x} -> zip -> a+b -> sink
//   fan4     source -> broadcast -> {x+1, 2x, x*x, x-1} -> zip -> a+b+c+d -> sink
//            on units of 1 float, 4 KiB and 1 MiB, inputs allocated once
//   keyed    running count per key of 10^7 records (quick 10^6), 100 records
//            of one key a unit: keyed_farm of K = threads replicas, each with
//            its own unordered_map, vs K serial function_nodes fed by key.
//
// Each graph twice: plain maps against serial function_nodes, and maps in
// unordered farms of `threads` replicas against `unlimited` function_nodes
// ("farm" in the names). Both split units of 4096 elements or more into
// blocks of about 2048 (Sinew's maps; tbb::parallel_for in the flow graph).
// The flow graph's limiter_node is as wide as Sinew's queues together
// (run_stats::capacity_total); its buffers come from a free list kept across
// runs, like Sinew's pool. Both sinks are serial and check each unit (every
// element up to 1024, else 1024 evenly spaced), that each came once, and the
// replicas' final counts. A graph's variants run in interleaved rounds
// (compare()). RATIO dag_<shape>[_farm]_<size>_<policy>: ns/unit
// at 1 float (target <= 0.5), units/s at 4 KiB and 1 MiB (>= 1.0);
// dag_keyed_count_<policy>: records/s (>= 1.0).
#include <algorithm>
#include <array>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <tuple>
#include <unordered_map>
#include <utility>
#include <vector>

#include <oneapi/tbb/blocked_range.h>
#include <oneapi/tbb/concurrent_queue.h>
#include <oneapi/tbb/flow_graph.h>
#include <oneapi/tbb/parallel_for.h>
#include <sinew/sinew.hpp>

#include "bench.hpp"

namespace {

namespace sb = sinew_bench;
namespace fl = tbb::flow;

using floats = std::vector<std::vector<float>>;
using counts = std::unordered_map<int, int>;
const char* const kPolicies[] = {"tbb", "steal", "deal"};

// Branch leaves and combining leaves: on inputs below 1000 every result is an
// integer below 2^24, so both runtimes must produce it exactly.
struct Inc { void operator()(float x, float* y) const { *y = x + 1; } };
struct Twice { void operator()(float x, float* y) const { *y = 2 * x; } };
struct Square { void operator()(float x, float* y) const { *y = x * x; } };
struct Dec { void operator()(float x, float* y) const { *y = x - 1; } };
struct Add2 { void operator()(float a, float b, float* s) const { *s = a + b; } };
struct Add4 { void operator()(float a, float b, float c, float d, float* s) const { *s = a + b + c + d; } };
float expected(std::size_t width, float x) { return width == 2 ? 3 * x + 1 : x * x + 4 * x; }

/// Running count per record (every record of a unit has the unit's key).
struct Count {
  counts* seen;
  void operator()(int key, int* count) const { *count = ++(*seen)[key]; }
};

/// body(b, e) over [0, n): inline below 4096 elements, else tbb::parallel_for
/// over blocks of about 2048, as a Sinew map splits a unit (map_options).
template <class Body>
void for_elems(std::size_t n, const Body& body) {
  if (n < 4096) return body(std::size_t(0), n);
  tbb::parallel_for(tbb::blocked_range<std::size_t>(0, n, 2048),
                    [&](const tbb::blocked_range<std::size_t>& r) { body(r.begin(), r.end()); });
}
template <class Leaf>
void apply(const float* in, float* out, std::size_t n) {
  for_elems(n, [&](std::size_t b, std::size_t e) {
    for (std::size_t j = b; j < e; ++j) Leaf{}(in[j], out + j);
  });
}
/// Branch b's leaf: a Sinew map, or a loop for the flow graph.
template <class... L>
struct leaves {
  static sinew::node node(unsigned b) { return std::array{sinew::map<L>()...}[b]; }
  static constexpr void (*loop[])(const float*, float*, std::size_t) = {apply<L>...};
};
using branch = leaves<Inc, Twice, Square, Dec>;

/// `n` in an unordered farm of `replicas` (0: `n` alone).
sinew::node farmed(sinew::node n, unsigned replicas) {
  return replicas ? sinew::farm(std::move(n), replicas, sinew::farm_order::unordered) : n;
}

/// The fan-out/fan-in dag of `width` branches, every map farmed (replicas > 0).
sinew::dag fan_dag(unsigned width, unsigned replicas) {
  sinew::dag d;
  auto in = d.source("src");
  std::vector<sinew::dag::port> outs;
  for (unsigned b = 0; b < width; ++b)
    outs.push_back(d.add("branch" + std::to_string(b), farmed(branch::node(b), replicas), in));
  auto all = d.zip("zip", outs);
  d.sink("out", d.add("combine", farmed(width == 2 ? sinew::map<Add2>() : sinew::map<Add4>(), replicas), all));
  return d;
}

/// Spare buffers of `n` elements for the flow graphs, reused across runs like
/// Sinew's pool (every buffer is back in the list when a run has ended).
template <class T>
struct buffer_pool {
  std::size_t n;
  tbb::concurrent_queue<T*> free;
  T* take() {
    T* p = nullptr;
    return free.try_pop(p) ? p : new T[n];
  }
  void give(T* p) { free.push(p); }
  ~buffer_pool() {
    for (T* p = nullptr; free.try_pop(p);) delete[] p;
  }
};

/// What a (serial) sink saw in one run: every unit once, each one right.
class tally {
 public:
  void reset(std::size_t units) { seen_.assign(units, false), error_.clear(); }
  /// `ok()` checks unit `seq`'s values; called only for a sequence number in range.
  template <class Ok>
  void add(std::uint64_t seq, const Ok& ok) {
    if (seq >= seen_.size()) return fail(seq, " is beyond the input");
    if (seen_[seq]) return fail(seq, " reached the sink twice");
    seen_[seq] = true;
    if (!ok()) fail(seq, " has a wrong result");
  }
  std::string check() const {
    if (!error_.empty()) return error_;
    if (const auto got = std::size_t(std::count(seen_.begin(), seen_.end(), true)); got != seen_.size())
      return "the sink got " + std::to_string(got) + " of " + std::to_string(seen_.size()) + " units";
    return {};
  }

 private:
  void fail(std::uint64_t seq, const char* what) {
    if (error_.empty()) error_ = "unit " + std::to_string(seq) + what;
  }
  std::vector<bool> seen_;
  std::string error_;
};

/// Every element of a unit up to 1024, else 1024 evenly spaced ones (offset by seq).
bool fan_unit_ok(const std::vector<float>& in, const float* out, std::size_t width, std::uint64_t seq) {
  const std::size_t n = in.size(), stride = std::max<std::size_t>(1, n / 1024);
  for (std::size_t j = seq % stride; j < n; j += stride)
    if (out[j] != expected(width, in[j])) return false;
  return true;
}
/// Records of unit `seq` hold the running counts first[seq], first[seq] + 1, ...
bool keyed_unit_ok(const int* out, std::size_t records, int first) {
  for (std::size_t j = 0; j < records; ++j)
    if (out[j] != first + int(j)) return false;
  return true;
}

/// input_node body handing out 0, 1, ..., n - 1.
auto indices(std::uint64_t& next, std::size_t n) {
  return [&next, n](tbb::flow_control& fc) -> std::uint64_t {
    if (next == n) fc.stop();
    return next++;
  };
}

struct msg {
  std::uint64_t seq = 0;
  float* data = nullptr;
};

/// The fan-out/fan-in graph of sizeof...(I) branches as a oneTBB flow graph,
/// its maps and combine of `concurrency` (fl::serial or fl::unlimited).
template <std::size_t... I>
void flow_fan_run(std::index_sequence<I...>, const floats& items, buffer_pool<float>& pool, tally& t,
                  std::size_t limit, std::size_t concurrency) {
  constexpr std::size_t W = sizeof...(I);
  using parts = std::tuple<decltype((void)I, msg{})...>;  // one msg per branch
  const std::size_t n = items[0].size();
  fl::graph g;
  std::uint64_t next = 0;
  fl::input_node<std::uint64_t> src(g, indices(next, items.size()));
  fl::limiter_node<std::uint64_t> lim(g, limit);
  fl::broadcast_node<std::uint64_t> fan(g);
  auto tag = [](const msg& m) -> fl::tag_value { return m.seq; };
  fl::join_node<parts, fl::tag_matching> join(g, ((void)I, tag)...);
  std::array<std::unique_ptr<fl::function_node<std::uint64_t, msg>>, W> maps;
  for (std::size_t b = 0; b < W; ++b)
    maps[b] = std::make_unique<fl::function_node<std::uint64_t, msg>>(g, concurrency, [&, b](std::uint64_t s) {
      msg m{s, pool.take()};
      branch::loop[b](items[s].data(), m.data, n);
      return m;
    });
  fl::function_node<parts, msg> combine(g, concurrency, [&](const parts& p) {
    msg m{std::get<0>(p).seq, pool.take()};
    const float* x[W] = {std::get<I>(p).data...};
    for_elems(n, [&](std::size_t b, std::size_t e) {
      for (std::size_t j = b; j < e; ++j) {
        if constexpr (W == 2) Add2{}(x[0][j], x[1][j], m.data + j);
        else Add4{}(x[0][j], x[1][j], x[2][j], x[3][j], m.data + j);
      }
    });
    (pool.give(std::get<I>(p).data), ...);
    return m;
  });
  fl::function_node<msg, fl::continue_msg> sink(g, fl::serial, [&](const msg& m) {
    t.add(m.seq, [&] { return fan_unit_ok(items[m.seq], m.data, W, m.seq); });
    pool.give(m.data);
    return fl::continue_msg();
  });
  fl::make_edge(src, lim);
  fl::make_edge(lim, fan);
  (fl::make_edge(fan, *maps[I]), ...);
  (fl::make_edge(*maps[I], fl::input_port<I>(join)), ...);
  fl::make_edge(join, combine);
  fl::make_edge(combine, sink);
  fl::make_edge(sink, lim.decrementer());
  src.activate();
  g.wait_for_all();
}

/// The keyed records: unit u holds `records` copies of its key (one of `keys`).
struct keyed_input {
  std::vector<std::vector<int>> batches;
  std::vector<int> first;      ///< reference running count of unit u's first record
  std::vector<counts> totals;  ///< reference final counts, per replica (key % replicas)

  keyed_input(std::size_t units, std::size_t records, std::size_t keys, unsigned replicas) : totals(replicas) {
    counts running;
    for (std::size_t u = 0; u < units; ++u) {
      const int key = int((u * 2654435761u >> 7) % keys);
      batches.emplace_back(records, key);
      first.push_back(running[key] + 1);
      running[key] += int(records);
    }
    for (auto [key, c] : running) totals[std::size_t(key) % replicas][key] = c;
  }
  /// Each replica holds exactly the keys routed to it, with their final counts.
  std::string check(const std::vector<counts>& state) const {
    for (std::size_t r = 0; r < state.size(); ++r)
      if (state[r] != totals[r]) return "replica " + std::to_string(r) + "'s counts differ from the reference";
    return {};
  }
};

/// The keyed count as a flow graph: a serial router (keeping each key's order)
/// try_puts each unit to the serial node of replica key % K, whose own map
/// keeps the counts.
void flow_keyed_run(const keyed_input& in, std::vector<counts>& state, buffer_pool<int>& pool, tally& t,
                    std::size_t limit) {
  const std::size_t records = in.batches[0].size(), k = state.size();
  fl::graph g;
  std::uint64_t next = 0;
  fl::input_node<std::uint64_t> src(g, indices(next, in.batches.size()));
  fl::limiter_node<std::uint64_t> lim(g, limit);
  using kmsg = std::pair<std::uint64_t, int*>;  // unit, its running counts
  using replica_node = fl::function_node<std::uint64_t, kmsg>;
  std::vector<std::unique_ptr<replica_node>> replica;
  for (std::size_t r = 0; r < k; ++r)
    replica.push_back(std::make_unique<replica_node>(g, fl::serial, [&, r](std::uint64_t s) {
      int* out = pool.take();
      const Count c{&state[r]};
      for (std::size_t j = 0; j < records; ++j) c(in.batches[s][j], out + j);
      return kmsg{s, out};
    }));
  fl::function_node<std::uint64_t, fl::continue_msg> route(g, fl::serial, [&](std::uint64_t s) {
    replica[std::size_t(in.batches[s][0]) % k]->try_put(s);
    return fl::continue_msg();
  });
  fl::function_node<kmsg, fl::continue_msg> sink(g, fl::serial, [&](const kmsg& m) {
    t.add(m.first, [&] { return keyed_unit_ok(m.second, records, in.first[m.first]); });
    pool.give(m.second);
    return fl::continue_msg();
  });
  fl::make_edge(src, lim);
  fl::make_edge(lim, route);
  for (auto& r : replica) fl::make_edge(*r, sink);
  fl::make_edge(sink, lim.decrementer());
  src.activate();
  g.wait_for_all();
}

/// One graph compared: names, metric, runs and their checks.
struct comparison {
  std::string label, ratio_key;
  bool per_unit_ns = false;  ///< metric ns/unit (lower), else `unit` = amount/s (higher)
  double amount = 0;         ///< units or records per run
  std::string unit, sinew_note, flow_note;
  std::function<void()> setup;            ///< before every run (untimed)
  std::function<std::string()> check;     ///< after every run: "" when right
  std::function<sinew::dag()> make;       ///< Sinew's dag
  std::function<void(sinew::graph&)> sinew_run;
  std::function<void(std::size_t limit)> flow_run;
};

/// Measures the flow graph and Sinew under each policy in interleaved
/// rounds (context::measure_interleaved: a drift of the host hits every
/// variant alike); one ratio per policy, the median of its rounds' ratios
/// to the flow graph. Every scheduler and graph stays alive (a graph keeps
/// its finished runs for the next), and each run starts after a pause longer
/// than any policy keeps idle workers awake (at most 2 ms), so that no
/// variant runs beside another's spinning workers.
void compare(sb::context& ctx, const comparison& c) {
  const unsigned threads = sb::thread_count();
  const std::size_t capacity = 2 * threads;
  const bool ns = c.per_unit_ns;
  const double amount = c.amount;
  const std::string unit = ns ? "ns/unit" : c.unit;
  auto variant = [&](const std::string& name, std::function<void()> run, const std::string& note) {
    return sb::variant{.name = c.label + ", " + name, .unit = unit, .better = ns ? sb::lower : sb::higher,
                       .setup =
                           [&] {
                             std::this_thread::sleep_for(std::chrono::milliseconds(5));
                             c.setup();
                           },
                       .run = std::move(run),
                       .to_metric = [=](double s) { return ns ? s / amount * 1e9 : amount / s; },
                       .check = c.check, .note = note};
  };
  auto graph_on = [&](sinew::scheduler& s) {
    return std::make_unique<sinew::graph>(c.make(), sinew::graph_options{.scheduler = &s, .capacity = capacity});
  };
  std::vector<std::unique_ptr<sinew::scheduler>> scheds;
  std::vector<std::unique_ptr<sinew::graph>> graphs;
  for (const char* policy : kPolicies) {
    scheds.push_back(sinew::make_scheduler(policy, {.threads = threads}));
    graphs.push_back(graph_on(*scheds.back()));
  }
  // The flow graph's limiter: as many units as Sinew's queues hold together
  // (read from a run of no units).
  std::size_t limit = 0;
  {
    auto f = graphs[0]->run({{"src", sinew::generate([](sinew::unit_builder&) { return false; })}},
                            {{"out", sinew::discard()}});
    f.get();
    limit = f.stats().capacity_total;
  }
  std::vector<sb::variant> vs;
  vs.push_back(variant("tbb flow graph", [&] { sb::peer_arena().execute([&] { c.flow_run(limit); }); },
                       "limiter_node(" + std::to_string(limit) + "), " + c.flow_note));
  for (std::size_t i = 0; i < graphs.size(); ++i)
    vs.push_back(variant(std::string("sinew ") + kPolicies[i], [&, i] { c.sinew_run(*graphs[i]); },
                         "capacity " + std::to_string(capacity) + " a queue, " + c.sinew_note));
  const auto s = ctx.measure_interleaved(vs);
  if (s[0]->stats.n == 0) return;
  for (std::size_t i = 0; i < graphs.size(); ++i) {
    if (s[i + 1]->stats.n == 0) continue;
    ctx.ratio(c.ratio_key + "_" + kPolicies[i], sb::paired_ratio(*s[i + 1], *s[0]), ns ? 0.5 : 1.0,
              ns ? sb::lower : sb::higher,
              "sinew " + std::string(kPolicies[i]) + " " + unit + " / flow graph " + unit + ", " + c.label +
                  " (median of paired rounds)");
  }
}

/// Runs `g` over `items` into a sink that hands each unit to `t` (`ok(u)` checks its values).
template <class Item, class Ok>
void sinew_run_into(sinew::graph& g, std::vector<Item>& items, tally& t, const Ok& ok) {
  g.run({{"src", sinew::from(items)}},
        {{"out", sinew::for_each([&](const sinew::work_unit& u) { t.add(u.seq(), [&] { return ok(u); }); })}})
      .get();
}

void run(sb::context& ctx) {
  const bool smoke = ctx.smoke(), quick = ctx.quick();
  const unsigned threads = sb::thread_count();
  struct size_case {
    const char *key, *label;
    std::size_t elems, units;
  };
  const size_case sizes[] = {{"1float", "1 float", 1, smoke ? 500u : quick ? 40'000u : 100'000u},
                             {"4k", "4 KiB", 1024, smoke ? 64u : quick ? 16'384u : 32'768u},
                             {"1m", "1 MiB", 262'144, smoke ? 4u : quick ? 128u : 512u}};
  ctx.param("threads", threads);
  ctx.param("capacity_per_queue", 2 * threads);
  for (const auto& s : sizes) ctx.param(std::string("units_") + s.key, s.units);

  for (const auto& s : sizes) {
    floats items(s.units, std::vector<float>(s.elems));
    for (std::size_t k = 0; k < s.units; ++k)
      for (std::size_t j = 0; j < s.elems; ++j) items[k][j] = float((k * 7 + j) % 1000);
    buffer_pool<float> pool{s.elems, {}};
    tally t;
    for (unsigned width : {2u, 4u})
      for (bool farm : {false, true}) {
        // Plain maps against serial function_nodes; farms against unlimited ones.
        const std::string shape = width == 2 ? "diamond" : "fan4", how = farm ? " farm" : "";
        const std::string key = "dag_" + shape + (farm ? "_farm_" : "_") + s.key;
        const unsigned replicas = farm ? threads : 0;
        compare(ctx, {.label = shape + how + " " + s.label, .ratio_key = key,
                      .per_unit_ns = s.elems == 1, .amount = double(s.units), .unit = "units/s",
                      .sinew_note = farm ? "maps in unordered farms of " + std::to_string(threads) : "plain maps",
                      .flow_note = std::string(farm ? "unlimited" : "serial") +
                                   " function_nodes, broadcast_node, join_node<tag_matching>, free-list buffers",
                      .setup = [&] { t.reset(s.units); },
                      .check = [&] { return t.check(); },
                      .make = [&] { return fan_dag(width, replicas); },
                      .sinew_run =
                          [&](sinew::graph& g) {
                            sinew_run_into(g, items, t, [&](const sinew::work_unit& u) {
                              return fan_unit_ok(items[u.seq()], u.input<float>(0).data(), width, u.seq());
                            });
                          },
                      .flow_run =
                          [&](std::size_t limit) {
                            const std::size_t conc = farm ? fl::unlimited : fl::serial;
                            if (width == 2) flow_fan_run(std::make_index_sequence<2>{}, items, pool, t, limit, conc);
                            else flow_fan_run(std::make_index_sequence<4>{}, items, pool, t, limit, conc);
                          }});
      }
  }

  // Keyed running count: K = threads replicas (2..64), 1000 keys.
  const std::size_t records = 100, units = smoke ? 100 : quick ? 10'000 : 100'000;
  const unsigned k = std::clamp(threads, 2u, 64u);
  ctx.param("keyed_records", units * records);
  ctx.param("keyed_replicas", k);
  keyed_input in(units, records, 1000, k);
  std::vector<counts> state(k);
  buffer_pool<int> pool{records, {}};
  tally t;
  compare(ctx, {.label = "keyed count", .ratio_key = "dag_keyed_count", .per_unit_ns = false,
                .amount = double(units * records), .unit = "records/s",
                .sinew_note = "keyed_farm of " + std::to_string(k) + " map<Count>",
                .flow_note = "serial router try_puts to " + std::to_string(k) + " serial function_nodes, pooled buffers",
                .setup =
                    [&] {
                      t.reset(units);
                      for (auto& m : state) m.clear();
                    },
                .check =
                    [&] {
                      std::string e = t.check();
                      return e.empty() ? in.check(state) : e;
                    },
                .make =
                    [&] {
                      sinew::dag d;
                      auto key = [](const sinew::work_unit& u) { return std::uint64_t(u.input<int>(0)[0]); };
                      d.sink("out", d.keyed_farm("count", d.source("src"), k, key,
                                                 [&](unsigned r) { return sinew::map(Count{&state[r]}); }));
                      return d;
                    },
                .sinew_run =
                    [&](sinew::graph& g) {
                      sinew_run_into(g, in.batches, t, [&](const sinew::work_unit& u) {
                        return keyed_unit_ok(u.input<int>(0).data(), records, in.first[u.seq()]);
                      });
                    },
                .flow_run = [&](std::size_t limit) { flow_keyed_run(in, state, pool, t, limit); }});
}

const sb::registrar reg("dag",
                        "sinew::dag vs oneTBB flow graph per policy: diamond and 4-way fan-out/zip (plain and farmed "
                        "maps) on units of 1 float, 4 KiB, 1 MiB (100k/32k/512 units; quick 40k/16k/128), keyed running "
                        "count of 1e7 records (quick 1e6) in a keyed_farm",
                        run);

}  // namespace
