// Randomized stress: random skeleton trees (depth <= 4, every skeleton kind,
// random unit sizes, queue capacities, batch sizes, scheduler policies,
// thread counts or synthetic NUMA topologies, pinning and dealing thresholds,
// C++ leaves and OpenCL leaves on PoCL, alone or split with the host) written
// as graph files and run with the verifying sink,
// which checks every unit against the sequential interpreter of the same tree
// (graph_file::reference_root). Also random leaves that throw and runs
// cancelled at a random moment: each must end in the documented error within
// a timeout. The seed of every tree is printed on failure; rerun one with
//   sinew-tests "[random]" -c "<section>" and SINEW_RANDOM_SEED=<seed>.
//
// `make test` runs 150 trees; the full run is hidden:
//   make stress   (build/tests/sinew-tests "[.stress]": 10,000 trees; log in bench/results/<N>core/stress.log)
#include <catch2/catch.hpp>

#include <sinew/engine/graph.hpp>
#include <sinew/json/graph_file.hpp>
#include <sinew/io.hpp>
#include <sinew/json/kernel_registry.hpp>

#include <nlohmann/json.hpp>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <random>
#include <stdexcept>
#include <string>

namespace {

using json = nlohmann::json;

/// f32 -> f32, throws on an element above `limit`: a leaf that fails
/// depending on the data, somewhere in the middle of a stream.
struct throw_above {
  float limit = 0.99f;
  void operator()(float x, float* y) const {
    if (x > limit) throw std::runtime_error("element above the limit");
    *y = x;
  }
};

void register_test_kernels() {
  auto& r = sinew::kernel_registry::global();
  if (!r.find("test_throw_above"))
    r.add_map<throw_above>("test_throw_above", "y = x, throws on x > limit",
                           {sinew::kernel_param::real("limit", "largest accepted value", 0.99)},
                           [](const sinew::kernel_args& a) { return throw_above{a.get<float>("limit")}; });
}

/// Element family of a tree: what its kernels read and write.
enum class family { f32, u8, rgba8 };

// OpenCL twins of the C++ kernels `scale` and `xor` (one work-item per
// element, `n` = the elements of the device's share). Constant texts, so the
// OpenCL compiler's cache serves every tree after the first.
const char* cl_scale =
    "__kernel void rscale(__global const float* x, __global float* y, const float k, const uint n) {"
    " const size_t i = get_global_id(0); if (i < n) y[i] = k * x[i]; }";
const char* cl_xor =
    "__kernel void rxor(__global const uchar* x, __global uchar* y, const uint key, const uint n) {"
    " const size_t i = get_global_id(0); if (i < n) y[i] = x[i] ^ (uchar)key; }";

/// True if OpenCL leaves can run here (an OpenCL CPU device, PoCL in CI):
/// a one-leaf OpenCL graph loads. SINEW_RANDOM_OPENCL=0 leaves them out.
bool opencl_leaves() {
  static const bool ok = [] {
    if (const char* e = std::getenv("SINEW_RANDOM_OPENCL"); e && std::string(e) == "0") return false;
    try {
      json doc = {{"sinew", 1},
                  {"name", "probe"},
                  {"source", {{"type", "generator"}, {"buffers", {"u8"}}, {"shape", {4}}, {"count", 1}}},
                  {"graph",
                   {{"map", {{"source", cl_xor}, {"kernel", "rxor"},
                             {"args", {{{"in", "u8"}}, {{"out", "u8"}}, {{"scalar", "u32"}, {"value", 1}}, "count"}}}},
                    {"devices", "cpu"}}},
                  {"sink", {{"type", "null"}}}};
      sinew::graph_file::parse(doc.dump(), "probe.json");
      return true;
    } catch (const std::exception& e) {
      std::printf("random trees: no OpenCL leaves (%s)\n", e.what());
      return false;
    }
  }();
  return ok;
}

class tree_gen {
 public:
  explicit tree_gen(std::uint64_t seed) : rng_(seed), opencl_(opencl_leaves()) {}

  int pick(int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng_); }
  bool coin(double p = 0.5) { return std::bernoulli_distribution(p)(rng_); }

  /// A whole graph file; `two_inputs` sources give saxpy/add a start.
  json file(bool with_throw) {
    fam_ = family(pick(0, 2));
    throw_ = with_throw && fam_ == family::f32;
    json doc = {{"sinew", 1}, {"name", "random"}};
    const char* policies[] = {"tbb", "steal", "deal"};
    const char* policy = policies[pick(0, 2)];
    // SINEW_SCHEDULER pins the policy (make tsan: Debian's libtbb is not
    // instrumented, so TSan runs use steal).
    if (const char* env = std::getenv("SINEW_SCHEDULER"); env && *env) policy = env;
    json sc = {{"policy", policy}};
    if (coin(0.3)) {  // a synthetic NUMA topology (nodes x cores) instead of a thread count
      sc["topology"] = std::to_string(pick(1, 2)) + "x" + std::to_string(pick(1, 2));
    } else {
      sc["threads"] = pick(1, 3);
    }
    if (coin(0.3)) sc["pin"] = coin();
    if (std::string(policy) == "deal" && coin(0.5)) {  // placement decisions: when to deal, when data counts as spread
      sc["size_threshold"] = 1 << pick(6, 20);
      sc["spread_tolerance"] = 0.25 * pick(0, 4);
    }
    doc["scheduler"] = sc;
    if (coin(0.3)) doc["queue_capacity"] = pick(1, 6);
    if (coin(0.3)) doc["batch"] = pick(1, 8);
    int count = pick(0, 40);
    json src = {{"type", "generator"}, {"count", count}, {"seed", pick(0, 1000)}};
    bufs_ = 1;
    if (fam_ == family::f32) {
      bufs_ = coin(0.3) ? 2 : 1;
      src["buffers"] = bufs_ == 2 ? json::array({"f32", "f32"}) : json::array({"f32"});
      src["shape"] = {pick(1, 5000)};
    } else if (fam_ == family::u8) {
      src["buffers"] = {"u8"};
      src["shape"] = {pick(1, 5000)};
    } else {
      src["buffers"] = {"rgba8"};
      src["shape"] = {pick(1, 70), pick(1, 70)};
    }
    doc["source"] = src;
    doc["graph"] = node(0);
    doc["sink"] = {{"type", "checksum"}};
    return doc;
  }

 private:
  json with_common(json n) {
    if (coin(0.2)) n["capacity"] = pick(1, 5);
    return n;
  }

  /// An OpenCL map on the CPU device (PoCL), or split between the host
  /// (running the C++ reference kernel) and the device by the balancer.
  json opencl_leaf(const char* src, const char* kernel, const char* type, json scalar, json reference) {
    opencl_used_ = true;
    json devices = coin() ? json("cpu") : json::array({"host", "cpu"});
    return {{"map", {{"source", src}, {"kernel", kernel},
                     {"args", {{{"in", type}}, {{"out", type}}, std::move(scalar), "count"}}}},
            {"devices", devices},
            {"reference", std::move(reference)}};
  }

  /// A leaf keeping the current family; reduces two f32 buffers to one.
  json leaf() {
    if (fam_ == family::f32) {
      if (bufs_ == 2) {
        bufs_ = 1;
        return coin() ? json{{"map", "saxpy"}, {"args", {{"a", pick(-3, 3)}}}} : json{{"map", "add"}};
      }
      if (throw_ && coin(0.15)) {
        threw_ = true;
        return {{"map", "test_throw_above"}, {"args", {{"limit", 0.995}}}};
      }
      if (opencl_ && coin(0.1)) {
        double k = 0.5 * pick(-4, 4);  // exact in f32: the device equals the C++ kernel bit for bit
        return opencl_leaf(cl_scale, "rscale", "f32", {{"scalar", "f32"}, {"value", k}},
                           {{"kernel", "scale"}, {"args", {{"k", k}}}});
      }
      int k = pick(0, 2);
      if (k == 0) return {{"map", "scale"}, {"args", {{"k", 0.5 * pick(-4, 4)}}}};
      if (k == 1) return {{"map", "square"}};
      if (!reduced_) {
        reduced_ = true;  // a unit becomes one element; later stages keep that shape
        return {{"map_reduce", "square"}, {"reduce", coin() ? "sum" : "max"}};
      }
      return {{"map", "square"}};
    }
    if (fam_ == family::u8) {
      if (opencl_ && coin(0.1)) {
        int key = pick(0, 255);
        return opencl_leaf(cl_xor, "rxor", "u8", {{"scalar", "u32"}, {"value", key}},
                           {{"kernel", "xor"}, {"args", {{"key", key}}}});
      }
      int k = pick(0, 2);
      if (k == 0) return {{"map", "xor"}, {"args", {{"key", pick(0, 255)}}}};
      if (k == 1) return {{"map", "segmentation"}, {"args", {{"lo", pick(0, 100)}, {"hi", pick(100, 255)}}}};
      return {{"map", "delay"}, {"args", {{"micros", pick(0, 50)}}}};
    }
    int k = pick(0, 2);
    if (k == 0) return {{"map", "solarize"}, {"args", {{"threshold", pick(0, 255)}}}};
    if (k == 1) return {{"map", "gaussian_noise"}, {"args", {{"seed", pick(0, 99)}, {"sigma", pick(0, 30)}}}};
    return {{"map", "mirror"}};
  }

  json node(int depth) {
    if (bufs_ == 2 || depth >= 4 || coin(0.35)) return with_common(leaf());
    switch (pick(0, 3)) {
      case 0: {  // pipeline
        json stages = json::array();
        int n = pick(1, 4);
        for (int i = 0; i < n; ++i) stages.push_back(node(depth + 1));
        return with_common({{"pipeline", stages}});
      }
      case 1:  // farm
        return with_common({{"farm", node(depth + 1)}, {"workers", pick(1, 4)}, {"ordered", coin(0.7)}});
      case 2: {  // for: the body must write what it reads (no reduction inside)
        bool r = reduced_;
        reduced_ = true;
        json body = node(depth + 1);
        reduced_ = r;
        return with_common({{"for", body}, {"iterations", pick(1, 3)}});
      }
      default: {
        if (fam_ != family::f32) return with_common(leaf());
        // loop: halve until small (data-dependent iteration count)
        json body = {{"map", "scale"}, {"args", {{"k", 0.5}}}};
        return with_common({{"loop", body},
                            {"until", {{"predicate", "max_abs_below"}, {"value", 0.05}}},
                            {"max_iterations", pick(1, 12)}});
      }
    }
  }

  std::mt19937_64 rng_;
  bool opencl_;
  family fam_ = family::f32;
  int bufs_ = 1;
  bool reduced_ = false;
  bool throw_ = false;

 public:
  bool threw_ = false;
  bool opencl_used_ = false;
};

std::uint64_t base_seed() {
  if (const char* s = std::getenv("SINEW_RANDOM_SEED")) return std::strtoull(s, nullptr, 10);
  return std::random_device{}();
}

/// What a batch of random trees covered: node kinds, schedulers, outcomes.
struct tally {
  std::map<std::string, int> n;
  void count(const json& node) {
    if (!node.is_object()) return;
    for (const char* k : {"pipeline", "farm", "for", "loop", "map_reduce"})
      if (node.contains(k)) n[k]++;
    if (node.contains("map")) n[node["map"].is_object() ? "opencl map" : "c++ map"]++;
    if (node.contains("devices") && node["devices"].is_array()) n["host+opencl split"]++;
    for (const auto& [k, v] : node.items()) {
      if (v.is_array()) {
        for (const auto& c : v) count(c);
      } else if (v.is_object() && k != "args" && k != "until" && k != "reference") {
        count(v);
      }
    }
  }
  std::string str() const {
    std::string r;
    for (const auto& [k, v] : n) r += (r.empty() ? "" : ", ") + k + " " + std::to_string(v);
    return r;
  }
};

/// Runs one random tree; returns normally if it behaved as documented.
void run_one(std::uint64_t seed, bool faults, tally& t) {
  tree_gen gen(seed);
  json doc = gen.file(faults);
  t.count(doc["graph"]);
  t.n["policy " + doc["scheduler"]["policy"].get<std::string>()]++;
  if (doc["scheduler"].contains("topology")) t.n["synthetic topology"]++;
  const std::string text = doc.dump();
  INFO("seed " << seed << ": " << text);
  auto f = sinew::graph_file::parse(text, "random.json");
  auto sched = f.make_scheduler();
  sinew::graph g(f.root(), f.options(sched.get()));
  auto sum = std::make_shared<sinew::io::checksum_result>();
  auto rep = std::make_shared<sinew::verify_report>();
  auto run = g.run(f.make_source(), sinew::verifying_sink(f, f.make_sink(sum), rep));

  const bool cancel = faults && gen.coin(0.2);
  if (cancel) {
    std::this_thread::sleep_for(std::chrono::microseconds(gen.pick(0, 3000)));
    run.cancel();
  }
  // Never hangs: a run of at most 40 small units has a minute.
  REQUIRE(run.wait_for(std::chrono::seconds(60)));
  try {
    run.get();
  } catch (const sinew::cancelled&) {
    REQUIRE(cancel);
    t.n["ended cancelled"]++;
    return;
  } catch (const sinew::node_error& e) {
    // Only the throwing leaf may fail, and the error names the stage that
    // runs it (the leaf itself, or the loop whose body it is).
    REQUIRE(gen.threw_);
    REQUIRE(std::string(e.what()).find("element above the limit") != std::string::npos);
    REQUIRE((e.path().find("map<throw_above>") != std::string::npos || e.path().find("for(") != std::string::npos ||
             e.path().find("loop") != std::string::npos));
    t.n["ended by a throwing leaf"]++;
    return;
  }
  REQUIRE(rep->ok());
  INFO(rep->first);
  REQUIRE(rep->units == *f.unit_count());
  REQUIRE(sum->units == *f.unit_count());
  auto st = run.stats();
  REQUIRE(st.units_in == st.units_out);
  t.n["verified"]++;
}

/// Runs trees base .. base+n-1 (the base seed is printed first, so even a
/// crash can be replayed) and prints what they covered.
tally run_many(int n, bool faults) {
  register_test_kernels();
  const std::uint64_t base = base_seed();
  std::printf("random trees: %d %s from SINEW_RANDOM_SEED=%llu\n", n, faults ? "with faults" : "verified",
              (unsigned long long)base);
  std::fflush(stdout);
  tally t;
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < n; ++i) run_one(base + std::uint64_t(i), faults, t);
  std::printf("random trees: %d in %.1f s: %s\n", n,
              std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), t.str().c_str());
  return t;
}

}  // namespace

TEST_CASE("random skeleton trees equal their sequential interpretation on every scheduler", "[random][tsan]") {
  run_many(100, false);
}

TEST_CASE("random trees with throwing leaves and random cancellation end as documented", "[random]") {
  run_many(50, true);
}

TEST_CASE("10000 random skeleton trees (stress)", "[.stress][random]") {
  tally a = run_many(8000, false), b = run_many(2000, true);
  // The generator reaches every kind of node, scheduler and outcome.
  for (const char* k : {"pipeline", "farm", "for", "loop", "map_reduce", "c++ map", "synthetic topology"}) {
    INFO(k);
    CHECK(a.n[k] > 0);
  }
  const char* pinned = std::getenv("SINEW_SCHEDULER");
  if (!pinned || !*pinned) {
    CHECK(a.n["policy tbb"] > 0);
    CHECK(a.n["policy steal"] > 0);
    CHECK(a.n["policy deal"] > 0);
  }
  if (opencl_leaves()) {
    CHECK(a.n["opencl map"] > 0);
    CHECK(a.n["host+opencl split"] > 0);
  }
  CHECK(a.n["verified"] == 8000);
  CHECK(b.n["ended cancelled"] > 0);
  CHECK(b.n["ended by a throwing leaf"] > 0);
}
