// `sinew validate`, `sinew dot`, `sinew kernels`, `sinew devices`: commands
// that describe a graph file or the machine without running a stream (except
// `dot --run`, which runs the graph to annotate it).
#include "cli.hpp"

#include <sinew/engine/dot.hpp>
#include <sinew/engine/graph.hpp>
#include <sinew/json/graph_file.hpp>
#include <sinew/io/type_names.hpp>
#include <sinew/json/kernel_registry.hpp>
#include <sinew/opencl/platform.hpp>
#include <sinew/schedulers/topology.hpp>

#include <cinttypes>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

namespace sinew_cli {
namespace {

std::string types_text(const sinew::detail::type_list& t) {
  if (t.any) return "any";
  if (t.types.empty()) return "(none)";
  std::string s;
  for (auto* e : t.types) s += (s.empty() ? "" : ", ") + sinew::io::type_name(*e);
  return s;
}

// --- validate ---------------------------------------------------------------

struct file_options {
  std::string file;
  std::vector<std::string> sets;
  bool print = false;
  bool run = false;
  unsigned threads = 0;
};

int validate(const file_options& o) {
  sinew::graph_file f = sinew::graph_file::load(o.file, o.sets);
  sinew::graph g = f.make_graph({});
  if (f.is_dag()) {
    auto names = [](const std::vector<std::string>& v) {
      std::string s;
      for (const auto& n : v) s += (s.empty() ? "" : ", ") + n;
      return s;
    };
    std::printf("%s: valid: \"%s\", a dag of %zu stage(s), scheduler %s, sources %s, sinks %s\n", o.file.c_str(),
                f.name().c_str(), g.stage_count(), f.scheduler_policy().c_str(), names(f.source_names()).c_str(),
                names(f.sink_names()).c_str());
  } else {
    const auto& l = f.source_layout();
    std::printf("%s: valid: \"%s\", %zu stage(s), scheduler %s, source %s, sink %s\n", o.file.c_str(),
                f.name().c_str(), g.stage_count(), f.scheduler_policy().c_str(),
                l.buffers.empty() ? "index space" : l.str().c_str(), f.sink_type().c_str());
  }
  if (o.print) std::printf("%s\n", f.document().c_str());
  return exit_ok;
}

void add_file_options(CLI::App* cmd, file_options& o) {
  cmd->add_option("file", o.file, "graph file (docs/json.md)")->required();
  cmd->add_option("--set", o.sets, "override a field: POINTER=VALUE (as for `sinew run`)");
}

// --- dot ----------------------------------------------------------------------

int dot(const file_options& o) {
  sinew::graph_file f = sinew::graph_file::load(o.file, o.sets);
  if (!o.run) {
    sinew::graph g = f.make_graph({});
    std::printf("%s", sinew::to_dot(g).c_str());
    return exit_ok;
  }
  auto sched = f.make_scheduler(o.threads);
  sinew::graph g = f.make_graph(f.options(sched.get()));
  std::vector<std::pair<std::string, std::shared_ptr<sinew::io::checksum_result>>> sums;
  // The DOT text goes to stdout: sinks that write there drop their units instead.
  auto run = g.run(f.make_sources(), f.make_sinks(sums, true));
  run.get();
  sinew::run_stats st = run.stats();
  std::printf("%s", sinew::to_dot(g, &st).c_str());
  return exit_ok;
}

// --- kernels --------------------------------------------------------------------

int kernels(bool verbose) {
  auto& reg = sinew::kernel_registry::global();
  for (const auto& name : reg.names()) {
    const sinew::kernel_info* k = reg.find(name);
    std::printf("%-16s %s -> %s%s  [%s]\n", k->name.c_str(), types_text(k->inputs).c_str(),
                k->in_place ? "(in place)" : types_text(k->outputs).c_str(),
                k->rank ? (" " + std::to_string(k->rank) + "-D").c_str() : "", k->origin.c_str());
    if (!verbose) continue;
    std::printf("    %s\n", k->doc.c_str());
    for (const auto& p : k->params) {
      std::string def = "required";
      if (p.default_value) {
        const auto& v = *p.default_value;
        if (auto* b = std::get_if<bool>(&v)) def = *b ? "true" : "false";
        else if (auto* i = std::get_if<std::int64_t>(&v)) def = std::to_string(*i);
        else if (auto* d = std::get_if<double>(&v)) def = std::to_string(*d);
        else def = "\"" + std::get<std::string>(v) + "\"";
        def = "default " + def;
      }
      std::printf("    - %s (%s, %s): %s\n", p.name.c_str(), sinew::to_string(p.kind), def.c_str(), p.doc.c_str());
    }
    if (!k->reduce_ops.empty()) {
      std::string ops;
      for (auto& op : k->reduce_ops) ops += (ops.empty() ? "" : ", ") + op;
      std::printf("    map_reduce: %s\n", ops.c_str());
    }
  }
  return exit_ok;
}

// --- devices --------------------------------------------------------------------

int devices() {
  sinew::topology t = sinew::topology::detect();
  std::printf("host: %zu NUMA node(s), %zu cores (%zu per node), last-level cache %zu KiB\n", t.nodes(),
              t.total_cores(), t.cores_per_node(), t.llc_bytes() >> 10);
  if (t.nodes() > 1) {
    std::printf("  distances:");
    for (std::size_t i = 0; i < t.nodes(); ++i) {
      std::printf("%s", i ? " |" : " ");
      for (std::size_t j = 0; j < t.nodes(); ++j) std::printf(" %u", t.distance(i, j));
    }
    std::printf("\n");
  }
  auto devs = sinew::opencl::list_devices();
  if (devs.empty()) std::printf("OpenCL: no platform found (is an ICD such as pocl-opencl-icd installed?)\n");
  for (const auto& d : devs)
    std::printf("%-10s %-5s %s (%s, %s), %u compute units, %zu MiB global, %zu KiB local, max work-group %zu%s\n",
                d.id.c_str(), sinew::opencl::to_string(d.kind), d.name.c_str(), d.platform.c_str(),
                d.driver_version.c_str(), d.compute_units, d.global_mem >> 20, d.local_mem >> 10, d.max_work_group,
                d.host_unified_memory ? ", shares host memory" : "");
  return exit_ok;
}

}  // namespace

void add_validate(CLI::App& app, command_table& t) {
  auto o = std::make_shared<file_options>();
  CLI::App* cmd = app.add_subcommand("validate", "Check a JSON graph file without running it (exit 2 if invalid)");
  add_file_options(cmd, *o);
  cmd->add_flag("--print", o->print, "print the document after --set overrides");
  cmd->callback([o, &t] { t.action = [o] { return validate(*o); }; });
}

void add_dot(CLI::App& app, command_table& t) {
  auto o = std::make_shared<file_options>();
  CLI::App* cmd = app.add_subcommand("dot", "Print a graph as Graphviz DOT (sinew dot g.json | dot -Tpng > g.png)");
  add_file_options(cmd, *o);
  cmd->add_flag("--run", o->run, "run the graph first and annotate stages and queues with its statistics");
  cmd->add_option("--threads", o->threads, "worker threads for --run")->check(CLI::Range(1u, 4096u));
  cmd->callback([o, &t] { t.action = [o] { return dot(*o); }; });
}

void add_kernels(CLI::App& app, command_table& t) {
  auto verbose = std::make_shared<bool>(false);
  CLI::App* cmd = app.add_subcommand("kernels", "List the kernels graph files can name");
  cmd->add_flag("--verbose,-v", *verbose, "also print each kernel's description and arguments");
  cmd->callback([verbose, &t] { t.action = [verbose] { return kernels(*verbose); }; });
}

void add_devices(CLI::App& app, command_table& t) {
  CLI::App* cmd = app.add_subcommand("devices", "List the CPU topology and the OpenCL devices");
  cmd->callback([&t] { t.action = [] { return devices(); }; });
}

}  // namespace sinew_cli
