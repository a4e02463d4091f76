// A graph file loaded from C++: registers a kernel of this program, loads a
// JSON graph that names it (from a file given on the command line, or the
// text below), runs it on the scheduler the file asks for, and checks every
// unit against the file's sequential reference (as `sinew run --verify`).
//   usage: json_graph [graph.json [--set pointer=value ...]]
#include <sinew/json.hpp>

#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

// y = k * x, a per-element leaf named "gain" in graph files (this program's own kernel).
struct Gain {
  float k;
  void operator()(float x, float* y) const { *y = k * x; }
};

constexpr const char* builtin = R"({
  "sinew": 1,
  "name": "saxpy_then_gain",
  "source": {"type": "generator", "buffers": ["f32", "f32"], "shape": [65536], "count": 12, "seed": 3},
  "graph": {"pipeline": [
    {"map": "saxpy", "args": {"a": 2.5}},
    {"farm": {"map": "gain", "args": {"k": 0.5}}, "workers": 2, "ordered": true}
  ]},
  "sink": {"type": "checksum"}
})";

int main(int argc, char** argv) try {
  sinew::kernel_registry::global().add_map<Gain>(
      "gain", "y = k * x", {sinew::kernel_param::real("k", "factor", 1.0)},
      [](const sinew::kernel_args& a) { return Gain{a.get<float>("k")}; });

  std::vector<std::string> overrides;
  for (int i = 2; i + 1 < argc; i += 2)
    if (std::strcmp(argv[i], "--set") == 0) overrides.push_back(argv[i + 1]);
  sinew::graph_file f = argc > 1 ? sinew::graph_file::load(argv[1], overrides)
                                 : sinew::graph_file::parse(builtin, "<builtin>", overrides);

  auto sched = f.make_scheduler();
  sinew::graph g(f.root(), f.options(sched.get()));
  auto sum = std::make_shared<sinew::io::checksum_result>();
  auto report = std::make_shared<sinew::verify_report>();
  auto run = g.run(f.make_source(), sinew::verifying_sink(f, f.make_sink(sum), report));
  run.get();
  if (!report->ok()) {
    std::printf("json_graph: %s: %llu of %llu units differ from the reference: %s\n", f.name().c_str(),
                (unsigned long long)report->mismatches, (unsigned long long)report->units, report->first.c_str());
    return 1;
  }
  std::printf("json_graph: OK %s units=%llu checksum=%016llx (verified against the sequential reference)\n",
              f.name().c_str(), (unsigned long long)run.stats().units_out, (unsigned long long)sum->value);
  return 0;
} catch (const std::exception& e) {
  std::fprintf(stderr, "json_graph: %s\n", e.what());
  return 2;
}
