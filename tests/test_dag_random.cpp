// Random dags (trees, keyed splits, keyed farms, merges, zips, joins,
// broadcasts, several sources and sinks) against a sequential model of what each sink
// must receive; some with a throwing leaf, some cancelled at a random time.
// 200 dags in the suite, 10,000 in the hidden stress tag.
#include <catch2/catch.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <map>
#include <random>
#include <stdexcept>
#include <thread>

#include <sinew/sinew.hpp>

#include "test_common.hpp"

using namespace sinew;
using namespace sinew_test;

namespace {

constexpr int modulus = 1000003;

struct inc_mod {
  void operator()(int x, int* y) const { *y = (x + 1) % modulus; }
};
struct twice_mod {
  void operator()(int x, int* y) const { *y = 2 * x % modulus; }
};
struct sum2_mod {
  void operator()(int a, int b, int* s) const { *s = (a + b) % modulus; }
};
struct throw_if {
  int trigger;
  void operator()(int x, int* y) const {
    if (x == trigger) throw std::runtime_error("trigger");
    *y = x;
  }
};

// A join numbers its units afresh in the order their matches complete: the
// model and the sinks see every unit of a join's stream with this origin
// and sequence number 0.
constexpr std::uint32_t joined_origin = UINT32_MAX;

// A unit as the model sees it.
struct unit_m {
  std::uint32_t origin;
  std::uint64_t seq;
  std::vector<std::vector<int>> bufs;
  bool operator<(const unit_m& o) const { return std::tie(origin, seq, bufs) < std::tie(o.origin, o.seq, o.bufs); }
  bool operator==(const unit_m& o) const { return origin == o.origin && seq == o.seq && bufs == o.bufs; }
};
using stream_m = std::vector<unit_m>;

struct port_m {
  dag::port p;
  stream_m units;
  unsigned bufs;  // buffers in layer 0
  unsigned readers = 0;
};

stream_m map_values(const stream_m& in, int (*f)(int)) {
  stream_m out = in;
  for (auto& u : out)
    for (int& x : u.bufs[0]) x = f(x);
  return out;
}

// Every seq of `a` exactly once in `b` and the reverse: a zip matches them all.
bool zippable(const stream_m& a, const stream_m& b) {
  if (a.size() != b.size()) return false;
  std::vector<std::uint64_t> x, y;
  for (auto& u : a) x.push_back(u.seq);
  for (auto& u : b) y.push_back(u.seq);
  std::sort(x.begin(), x.end());
  std::sort(y.begin(), y.end());
  return x == y && std::adjacent_find(x.begin(), x.end()) == x.end();
}

struct random_dag {
  dag d;
  std::vector<port_m> ports;
  std::vector<std::vector<std::vector<int>>> inputs;  // per source
  std::vector<std::string> sink_names;
  std::vector<stream_m> expected;  // per sink
  std::string thrower;             // vertex that must fail the run ("" = none)
  std::map<std::string, int> kinds;  // what the dag holds, for the batch's tally
  int next = 0;

  std::string name() { return "v" + std::to_string(next++); }
  port_m& pick(std::mt19937& rng, unsigned bufs) {
    std::vector<std::size_t> ok;
    for (std::size_t i = 0; i < ports.size(); ++i)
      if (ports[i].bufs == bufs) ok.push_back(i);
    return ports[ok[std::uniform_int_distribution<std::size_t>(0, ok.size() - 1)(rng)]];
  }
  bool has(unsigned bufs) const {
    return std::any_of(ports.begin(), ports.end(), [&](const port_m& p) { return p.bufs == bufs; });
  }

  explicit random_dag(std::mt19937& rng, bool may_throw) {
    auto roll = [&](int n) { return std::uniform_int_distribution<int>(0, n - 1)(rng); };
    const int nsrc = 1 + roll(3);
    const bool same_length = roll(2) == 0;
    const std::size_t len0 = 5 + std::size_t(roll(60));
    for (int s = 0; s < nsrc; ++s) {
      const std::size_t len = same_length ? len0 : 5 + std::size_t(roll(60));
      std::vector<std::vector<int>> items(len, std::vector<int>(4));
      stream_m m;
      for (std::size_t k = 0; k < len; ++k) {
        for (int j = 0; j < 4; ++j) items[k][std::size_t(j)] = roll(50000);
        m.push_back({std::uint32_t(s), k, {items[k]}});
      }
      inputs.push_back(std::move(items));
      ports.push_back({d.source("src" + std::to_string(s)), std::move(m), 1});
    }
    if (nsrc > 1) kinds["several sources"]++;
    const int steps = 1 + roll(10);
    for (int step = 0; step < steps; ++step) {
      const int op = roll(7);
      if (op <= 2 || !has(1)) {  // a tree
        if (has(2) && (roll(3) == 0 || !has(1))) {
          port_m& in = pick(rng, 2);
          ++in.readers;
          stream_m out = in.units;
          for (auto& u : out) {
            for (std::size_t j = 0; j < u.bufs[0].size(); ++j) u.bufs[0][j] = (u.bufs[0][j] + u.bufs[1][j]) % modulus;
            u.bufs.resize(1);
          }
          ports.push_back({d.add(name(), map<sum2_mod>(), in.p), std::move(out), 1});
          kinds["tree after a zip or join"]++;
          continue;
        }
        port_m& in = pick(rng, 1);
        ++in.readers;
        const int kind = roll(5);
        const std::string n = name();
        stream_m out;
        node t;
        if (may_throw && thrower.empty() && !in.units.empty() && roll(3) == 0) {
          const unit_m& victim = in.units[std::size_t(roll(int(in.units.size())))];
          t = farm(map(throw_if{victim.bufs[0][std::size_t(roll(4))]}), 2);
          thrower = n;
          out = in.units;
          kinds["throwing farm"]++;
        } else if (kind == 0) {
          t = map<inc_mod>();
          out = map_values(in.units, [](int x) { return (x + 1) % modulus; });
          kinds["map"]++;
        } else if (kind == 1) {
          t = farm(map<twice_mod>(), 3);
          out = map_values(in.units, [](int x) { return 2 * x % modulus; });
          kinds["farm"]++;
        } else if (kind == 2) {
          t = pipeline(map<inc_mod>(), farm(map<twice_mod>(), 2, farm_order::unordered));
          out = map_values(in.units, [](int x) { return 2 * ((x + 1) % modulus) % modulus; });
          kinds["pipeline"]++;
        } else {
          t = map<square_in_place>();  // in place: copies what a broadcast shares
          out = map_values(in.units, sq_mod);
          kinds["in-place map"]++;
        }
        ports.push_back({d.add(n, t, in.p), std::move(out), 1});
      } else if (op == 3) {  // a split by key into 2 or 3, or a keyed farm
        port_m& in = pick(rng, 1);
        ++in.readers;
        const unsigned n = 2 + unsigned(roll(2));
        auto key = [](const work_unit& u) { return std::uint64_t(u.input<int>(0)[1]); };
        if (roll(2) == 0) {
          auto parts = d.split_by_key(name(), in.p, n, key);
          std::vector<stream_m> outs(n);
          for (const unit_m& u : in.units) outs[std::size_t(u.bufs[0][1]) % n].push_back(u);
          for (unsigned k = 0; k < n; ++k) ports.push_back({parts[k], std::move(outs[k]), 1});
          kinds["split by key"]++;
        } else {
          auto out = d.keyed_farm(name(), in.p, n, key, [](unsigned) { return map<inc_mod>(); });
          ports.push_back({out, map_values(in.units, [](int x) { return (x + 1) % modulus; }), 1});
          kinds["keyed farm"]++;
        }
      } else if (op == 4 || op == 5) {  // a merge of two outputs holding as many buffers
        const unsigned b = has(2) && roll(3) == 0 ? 2 : 1;
        port_m& a = pick(rng, b);
        port_m& c = pick(rng, b);
        ++a.readers;
        ++c.readers;
        stream_m out = a.units;
        out.insert(out.end(), c.units.begin(), c.units.end());
        ports.push_back({d.merge(name(), {a.p, c.p}), std::move(out), b});
        kinds["merge"]++;
      } else {  // a zip, or a join keyed by seq, of two outputs that carry the same sequence numbers once each
        std::vector<std::pair<std::size_t, std::size_t>> ok;
        for (std::size_t i = 0; i < ports.size(); ++i)
          for (std::size_t j = 0; j < ports.size(); ++j)
            if (ports[i].bufs == 1 && ports[j].bufs == 1 && zippable(ports[i].units, ports[j].units))
              ok.push_back({i, j});
        if (ok.empty()) continue;
        auto [i, j] = ok[std::size_t(roll(int(ok.size())))];
        ++ports[i].readers;
        ++ports[j].readers;
        const bool join = roll(2) == 0;
        stream_m out;
        for (const unit_m& u : ports[i].units)
          for (const unit_m& v : ports[j].units)
            if (v.seq == u.seq)
              out.push_back({join ? joined_origin : u.origin, join ? 0 : u.seq, {u.bufs[0], v.bufs[0]}});
        const dag::port p = join ? d.join(name(), {ports[i].p, ports[j].p}, {[](const work_unit& u) { return u.seq(); }})
                                 : d.zip(name(), {ports[i].p, ports[j].p});
        ports.push_back({p, std::move(out), 2});
        kinds[join ? "join" : "zip"]++;
      }
    }
    // Every output nobody reads goes to a sink of its own, and one more
    // sink reads a random output (a broadcast to a sink).
    const std::size_t n = ports.size();
    for (std::size_t i = 0; i < n; ++i)
      if (ports[i].readers == 0 || (i + 1 == n && roll(2) == 0)) {
        sink_names.push_back("sink" + std::to_string(sink_names.size()));
        d.sink(sink_names.back(), ports[i].p);
        expected.push_back(ports[i].units);
        std::sort(expected.back().begin(), expected.back().end());
        ++ports[i].readers;
      }
    if (sink_names.size() > 1) kinds["several sinks"]++;
    for (const port_m& p : ports)
      if (p.readers > 1) kinds["broadcast"]++;
  }
};

// Runs dags seed_base + [first, graphs) and prints what they held and how
// they ended (the counts name the dags, not their vertices).
std::map<std::string, int> run_random(std::uint32_t seed_base, int graphs, int first = 0) {
  const char* const policies[] = {"tbb", "steal", "deal"};
  std::vector<std::unique_ptr<scheduler>> scheds;
  for (const char* p : policies) scheds.push_back(make_scheduler(p, {.threads = 2, .pin = false}));
  std::map<std::string, int> tally;
  const auto t0 = std::chrono::steady_clock::now();
  for (int gi = first; gi < graphs; ++gi) {
    const std::uint32_t seed = seed_base + std::uint32_t(gi);
    std::mt19937 rng(seed);
    random_dag r(rng, gi % 4 == 1);
    const std::size_t pi = std::size_t(gi) % 3;
    const bool cancel = gi % 5 == 3;
    INFO("seed " << seed << " on " << policies[pi] << (cancel ? ", cancelled" : ""));
    tally[std::string("policy ") + policies[pi]]++;
    for (const auto& [k, v] : r.kinds) tally[k] += v > 0;
    graph g(r.d, {.scheduler = scheds[pi].get(), .capacity = std::size_t(rng() % 3)});
    INFO(g.describe());
    graph::named_sources srcs;
    for (std::size_t s = 0; s < r.inputs.size(); ++s) srcs.push_back({"src" + std::to_string(s), from(r.inputs[s])});
    std::vector<stream_m> got(r.sink_names.size());
    graph::named_sinks snks;
    for (std::size_t k = 0; k < r.sink_names.size(); ++k)
      snks.push_back({r.sink_names[k], for_each([&got, k, nsrc = r.inputs.size()](const work_unit& u) {
                        unit_m m{u.origin(), u.seq(), {}};
                        if (m.origin >= nsrc) m = {joined_origin, 0, {}};
                        for (unsigned b = 0; b < u.in().size(); ++b) {
                          auto v = u.input<int>(b);
                          m.bufs.emplace_back(v.data(), v.data() + v.size());
                        }
                        got[k].push_back(std::move(m));
                      })});
    auto f = g.run(std::move(srcs), std::move(snks));
    if (cancel) {
      std::this_thread::sleep_for(std::chrono::microseconds(rng() % 2000));
      f.cancel();
    }
    const char* ended = "verified";  // or how the run ended early (the sinks' contents are partial then)
    try {
      f.get();
      CHECK(r.thrower.empty());
    } catch (const cancelled&) {
      ended = "ended cancelled";
      CHECK(cancel);
    } catch (const node_error& e) {
      INFO(e.what());
      CHECK(!r.thrower.empty());
      CHECK(e.path().rfind(r.thrower, 0) == 0);
      ended = "ended by a throwing leaf";
    }
    tally[ended]++;
    CHECK(f.stats().units_alive == 0);
    if (ended != std::string("verified")) continue;
    for (std::size_t k = 0; k < got.size(); ++k) {
      std::sort(got[k].begin(), got[k].end());
      INFO("sink " << r.sink_names[k]);
      CHECK(got[k].size() == r.expected[k].size());
      CHECK(got[k] == r.expected[k]);
    }
  }
  std::string counts;
  for (const auto& [k, v] : tally) counts += (counts.empty() ? "" : ", ") + k + " " + std::to_string(v);
  std::printf("random dags: %d from seed %u in %.1f s: %s\n", graphs - first, unsigned(seed_base + std::uint32_t(first)),
              std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), counts.c_str());
  std::fflush(stdout);
  // The mix ran what it claims: some failures and some cancellations.
  if (graphs - first >= 100) {
    CHECK(tally["ended by a throwing leaf"] > 0);
    CHECK(tally["ended cancelled"] > 0);
  }
  return tally;
}

}  // namespace

TEST_CASE("dag random dags match the sequential model on every policy", "[dag][random][tsan]") {
  run_random(1000, 200);
}

TEST_CASE("dag random dags stress of 10000 dags", "[.][dag][stress]") {
  auto t = run_random(500000, 10000);
  // The generator reaches every topology element, policy and outcome.
  for (const char* k : {"map", "farm", "pipeline", "in-place map", "throwing farm", "tree after a zip or join", "split by key",
                        "keyed farm", "merge", "zip", "join", "broadcast", "several sources", "several sinks",
                        "policy tbb", "policy steal", "policy deal", "verified", "ended cancelled",
                        "ended by a throwing leaf"}) {
    INFO(k);
    CHECK(t[k] > 0);
  }
}
