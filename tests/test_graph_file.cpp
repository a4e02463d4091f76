// Graph files (engine/json/, docs/json.md): validation errors name
// the JSON pointer, every example graph runs and matches its sequential
// reference on every scheduler, overrides, kernels from the host and from
// plugins, and --verify catching a wrong result.
#include <catch2/catch.hpp>

#include <sinew/engine/graph.hpp>
#include <sinew/json/graph_file.hpp>
#include <sinew/io.hpp>
#include <sinew/json/kernel_registry.hpp>
#include <sinew/opencl/platform.hpp>
#include <sinew/workloads.hpp>

#include "source_tree.hpp"

#include <dirent.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

namespace {

const std::string src_dir = sinew_support::source_dir();

struct run_result {
  std::uint64_t checksum = 0, units = 0;  // units: records the (first) checksum sink received
  sinew::verify_report verify;
  sinew::run_stats stats;
};

// Runs a tree or a dag file with every sink verified; `checksum` mixes the
// checksum sinks' values (a tree's is its one sink's), `units` is the first's.
run_result run_file(const sinew::graph_file& f, unsigned threads = 2) {
  auto sched = f.make_scheduler(threads);
  sinew::graph g = f.make_graph(f.options(sched.get()));
  std::vector<std::pair<std::string, std::shared_ptr<sinew::io::checksum_result>>> sums;
  auto rep = std::make_shared<sinew::verify_report>();
  auto run = g.run(f.make_sources(), sinew::verifying_sinks(f, f.make_sinks(sums), rep));
  run.get();
  run_result r{0, sums.empty() ? 0 : sums[0].second->records, *rep, run.stats()};
  for (const auto& [name, sum] : sums) r.checksum = r.checksum * 1099511628211ull ^ sum->value;
  return r;
}

std::vector<std::string> files_in(const std::string& dir, const std::string& ext) {
  std::vector<std::string> v;
  if (DIR* d = ::opendir(dir.c_str())) {
    while (dirent* e = ::readdir(d)) {
      std::string n = e->d_name;
      if (n.size() > ext.size() && n.compare(n.size() - ext.size(), ext.size(), ext) == 0) v.push_back(n);
    }
    ::closedir(d);
  }
  std::sort(v.begin(), v.end());
  return v;
}

/// Overrides that keep each example graph small enough for the test suite.
std::vector<std::string> small(const std::string& name) {
  if (name == "saxpy.json") return {"/source/shape/0=65536", "/source/count=3"};
  if (name == "series.json") return {"/source/shape/0=64", "/source/count=2"};
  if (name == "segmentation.json") return {"/source/shape=[20,30,40]", "/source/count=3"};
  if (name == "image_pipeline.json") return {"/source/shape=[64,48]", "/source/count=6"};
  if (name == "nbody.json") return {"/source/bodies=128", "/graph/iterations=3"};
  if (name == "stream_farm.json") return {"/source/shape/0=4096", "/source/count=40"};
  if (name == "opencl_saxpy.json") return {"/source/shape/0=10000", "/source/count=3"};
  if (name == "multi_device_series.json") return {"/source/shape/0=200", "/source/count=3"};
  if (name == "image_features.json") return {"/sources/frames/shape=[64,48]", "/sources/frames/count=6"};
  if (name == "two_sinks.json") return {"/sources/in/shape/0=4096", "/sources/in/count=8"};
  if (name == "keyed_count.json") return {"/sources/records/count=3000"};
  return {};
}

sinew::json_error load_error(const std::string& text) {
  try {
    sinew::graph_file::parse(text, "inline.json");
  } catch (const sinew::json_error& e) {
    return e;
  }
  FAIL("the document was accepted: " << text);
  throw;  // unreachable
}

const char* saxpy_doc = R"({"sinew": 1, "name": "t",
  "source": {"type": "generator", "buffers": ["f32", "f32"], "shape": [1000], "count": 2},
  "graph": {"map": "saxpy"}, "sink": {"type": "checksum"}})";

}  // namespace

TEST_CASE("graph files: every malformed file names its JSON pointer or line and column", "[json]") {
  std::ifstream man(src_dir + "/tests/json_bad/expected.tsv");
  REQUIRE(man);
  std::string line;
  std::size_t checked = 0;
  std::map<std::string, bool> listed;
  while (std::getline(man, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream is(line);
    std::string file, where, text;
    std::getline(is, file, '\t');
    std::getline(is, where, '\t');
    std::getline(is, text);
    listed[file] = true;
    INFO(file);
    const std::string path = src_dir + "/tests/json_bad/" + file;
    bool thrown = false;
    try {
      sinew::graph_file::load(path);
    } catch (const sinew::json_error& e) {
      thrown = true;
      INFO(e.what());
      CHECK(e.file() == path);
      if (where.find(':') != std::string::npos) {
        CHECK(std::to_string(e.line()) + ":" + std::to_string(e.column()) == where);
      } else {
        CHECK(e.pointer() == where);
      }
      CHECK(std::string(e.what()).find(text) != std::string::npos);
    }
    CHECK(thrown);
    ++checked;
  }
  CHECK(checked >= 30);
  for (const auto& f : files_in(src_dir + "/tests/json_bad", ".json")) {
    INFO("not in expected.tsv: " << f);
    CHECK(listed.count(f) == 1);
  }
}

TEST_CASE("graph files: every example in graphs/ validates and equals its sequential reference on every scheduler",
          "[json]") {
  auto files = files_in(src_dir + "/graphs", ".json");
  REQUIRE(files.size() >= 6);
  for (const auto& name : files) {
    if (name == "schema.json") continue;
#ifndef SINEW_HAVE_ZMQ
    if (name.rfind("zmq_", 0) == 0) continue;  // a source type this build does not have
#endif
#ifndef SINEW_HAVE_MQTT
    if (name.rfind("mqtt_", 0) == 0) continue;
#endif
    INFO(name);
    std::map<std::string, std::uint64_t> sums;
    for (const char* policy : {"tbb", "steal", "deal"}) {
      INFO(policy);
      auto sets = small(name);
      sets.push_back(std::string("/scheduler=\"") + policy + "\"");
      auto f = sinew::graph_file::load(src_dir + "/graphs/" + name, sets);
      if (!f.replayable()) break;  // a live source (ZeroMQ, MQTT): validated here, run by tests/cli/zmq.sh, mqtt.sh
      auto r = run_file(f);
      CHECK(r.verify.ok());
      INFO(r.verify.first);
      CHECK(r.stats.records_in == *f.unit_count());
      CHECK(r.verify.units == r.stats.units_out);
      if (!f.is_dag()) {  // a dag's sink may get a unit twice (broadcasts) or part of them (splits)
        CHECK(r.units == *f.unit_count());
        CHECK(r.stats.units_in == r.stats.units_out);
        CHECK(r.stats.records_in == r.stats.records_out);
      }
      sums[policy] = r.checksum;
    }
    CHECK(sums["tbb"] == sums["steal"]);
    CHECK(sums["tbb"] == sums["deal"]);
  }
}

TEST_CASE("graph files: --set overrides take JSON pointers or dotted paths", "[json]") {
  auto f = sinew::graph_file::parse(saxpy_doc, "inline.json", {"/source/count=5", "graph.args={\"a\": 3}", "name=renamed"});
  CHECK(*f.unit_count() == 5);
  CHECK(f.name() == "renamed");  // not JSON: taken as a string
  auto r = run_file(f);
  CHECK(r.units == 5);
  CHECK(r.verify.ok());

  auto bad = [](std::vector<std::string> sets, const std::string& ptr, const std::string& text) {
    try {
      sinew::graph_file::parse(saxpy_doc, "inline.json", sets);
      FAIL("accepted " << sets[0]);
    } catch (const sinew::json_error& e) {
      INFO(e.what());
      CHECK(e.pointer() == ptr);
      CHECK(std::string(e.what()).find(text) != std::string::npos);
    }
  };
  bad({"/source/count"}, "", "expected POINTER=VALUE");
  bad({"/nothere/x=1"}, "/nothere", "parent of the field to set does not exist");
  bad({"/source/shape/3=1"}, "/source/shape/3", "not an element of the array");
  bad({"/source/count=-1"}, "/source/count", "non-negative integer");  // validated after the override
}

TEST_CASE("graph files: a syntax error reports line and column", "[json]") {
  auto e = load_error("{\n  \"sinew\": 1,\n  \"name\": \"x\"\n  \"source\": {}\n}");
  // The position is where the parser stopped: the end of the unexpected token.
  CHECK(e.line() == 4);
  CHECK(e.column() == 10);
  CHECK(std::string(e.what()).rfind("inline.json:4:10: invalid JSON", 0) == 0);
}

TEST_CASE("graph files: kernels registered by the host program can be named", "[json]") {
  struct cube {
    float k = 1;
    void operator()(float x, float* y) const { *y = k * x * x * x; }
  };
  auto& reg = sinew::kernel_registry::global();
  if (!reg.find("test_cube"))
    reg.add_map<cube>("test_cube", "y = k x^3", {sinew::kernel_param::real("k", "factor", 1.0)},
                      [](const sinew::kernel_args& a) { return cube{a.get<float>("k")}; });
  CHECK(reg.find("test_cube")->origin == "host");
  CHECK(reg.find("saxpy")->origin == "builtin");
  auto f = sinew::graph_file::parse(R"({"sinew": 1, "name": "t",
    "source": {"type": "generator", "buffers": ["f32"], "shape": [10], "count": 1, "pattern": "constant", "value": 2},
    "graph": {"map": "test_cube", "args": {"k": 0.5}}, "sink": {"type": "checksum"}})",
                                    "inline.json");
  auto r = run_file(f, 1);
  CHECK(r.verify.ok());  // no reference: the leaf run sequentially
  std::vector<float> want(10, 4.0f);
  CHECK(r.checksum == sinew::workloads::checksum(want.data(), want.size() * sizeof(float)));
}

TEST_CASE("graph files: kernels from a plugin named in the file", "[json]") {
  const std::string doc = std::string(R"({"sinew": 1, "name": "t", "plugins": [")") + SINEW_TEST_PLUGIN + R"("],
    "source": {"type": "generator", "buffers": ["i32"], "shape": [100], "count": 2, "pattern": "ramp"},
    "graph": {"map": "plugin_add_const", "args": {"k": 7}}, "sink": {"type": "checksum"}})";
  auto f = sinew::graph_file::parse(doc, "inline.json");
  const sinew::kernel_info* k = sinew::kernel_registry::global().find("plugin_add_const");
  REQUIRE(k);
  CHECK(k->origin == std::string("plugin:") + SINEW_TEST_PLUGIN);
  auto r = run_file(f);
  CHECK(r.verify.ok());
  CHECK(r.units == 2);
  // Loading the same plugin again (a second file) is not an error.
  CHECK_NOTHROW(sinew::graph_file::parse(doc, "again.json"));

  auto e = load_error(R"({"sinew": 1, "name": "t", "plugins": ["/etc/hostname"],
    "source": {"type": "generator", "buffers": ["i32"], "shape": [4], "count": 1},
    "graph": {"map": "xor"}, "sink": {"type": "null"}})");
  CHECK(e.pointer() == "/plugins/0");
  CHECK(std::string(e.what()).find("cannot load") != std::string::npos);
}

TEST_CASE("graph files: --verify reports a leaf that disagrees with its reference", "[json]") {
  struct plus_one {
    void operator()(float x, float* y) const { *y = x + 1; }
  };
  auto& reg = sinew::kernel_registry::global();
  if (!reg.find("test_wrong_ref"))
    reg.add_map<plus_one>(
        "test_wrong_ref", "y = x + 1, with a reference that computes x + 2", {},
        [](const sinew::kernel_args&) { return plus_one{}; }, {}, 0,
        [](const sinew::layer& in, sinew::layer& out, const sinew::kernel_args&) {
          for (std::size_t i = 0; i < in.count(); ++i) out[0].data<float>()[i] = in[0].data<float>()[i] + 2;
        });
  auto f = sinew::graph_file::parse(R"({"sinew": 1, "name": "t",
    "source": {"type": "generator", "buffers": ["f32"], "shape": [50], "count": 3},
    "graph": {"map": "test_wrong_ref"}, "sink": {"type": "null"}})",
                                    "inline.json");
  auto r = run_file(f);
  CHECK(r.verify.units == 3);
  CHECK(r.verify.mismatches == 3);
  CHECK(r.verify.first.find("unit 0: buffer 0 element 0 differs") == 0);

  // Within a tolerance the same difference passes.
  auto g = sinew::graph_file::parse(R"({"sinew": 1, "name": "t", "verify": {"tolerance": 0.9},
    "source": {"type": "generator", "buffers": ["f32"], "shape": [50], "count": 3, "pattern": "constant", "value": 1000},
    "graph": {"map": "test_wrong_ref"}, "sink": {"type": "null"}})",
                                    "inline.json");
  CHECK(run_file(g).verify.ok());
}

TEST_CASE("graph files: --verify restores the order of an unordered farm", "[json]") {
  auto f = sinew::graph_file::parse(R"({"sinew": 1, "name": "t",
    "source": {"type": "generator", "buffers": ["rgba8"], "shape": [8, 8], "count": 60},
    "graph": {"farm": {"map": "solarize", "args": {"threshold": 100}}, "workers": 3, "ordered": false},
    "sink": {"type": "checksum"}})",
                                    "inline.json");
  auto r = run_file(f, 2);
  CHECK(r.verify.ok());
  CHECK(r.verify.units == 60);
}

TEST_CASE("graph files: loop until a predicate, for, and map_reduce", "[json]") {
  // 1.0 halved until the first element is below 0.01: 7 iterations (2^-7).
  auto f = sinew::graph_file::parse(R"({"sinew": 1, "name": "t",
    "source": {"type": "generator", "buffers": ["f32"], "shape": [16], "count": 1, "pattern": "constant", "value": 1},
    "graph": {"loop": {"map": "scale", "args": {"k": 0.5}}, "until": {"predicate": "first_below", "value": 0.01}},
    "sink": {"type": "checksum"}})",
                                    "inline.json");
  auto r = run_file(f);
  CHECK(r.verify.ok());
  std::vector<float> want(16, 1.0f / 128);
  CHECK(r.checksum == sinew::workloads::checksum(want.data(), want.size() * sizeof(float)));

  // Sum of squares of 64 twos = 256.
  auto g = sinew::graph_file::parse(R"({"sinew": 1, "name": "t",
    "source": {"type": "generator", "buffers": ["f32"], "shape": [64], "count": 2, "pattern": "constant", "value": 2},
    "graph": {"map_reduce": "square", "reduce": "sum"}, "sink": {"type": "checksum"}})",
                                    "inline.json");
  auto s = run_file(g);
  CHECK(s.verify.ok());
  std::vector<float> sums = {256.0f, 256.0f};
  CHECK(s.checksum == sinew::workloads::checksum(sums.data(), sums.size() * sizeof(float)));

  auto e = load_error(R"({"sinew": 1, "name": "t",
    "source": {"type": "generator", "buffers": ["u8"], "shape": [16], "count": 1},
    "graph": {"loop": {"map": "xor"}, "until": {"predicate": "first_below", "value": 1}}, "sink": {"type": "null"}})");
  CHECK(e.pointer() == "/graph/until");
  CHECK(std::string(e.what()).find("reads an f32 buffer") != std::string::npos);
}

TEST_CASE("graph files: binary file sources check the record size before running", "[json]") {
  const std::string path = "graph_file_test_input.bin";
  {
    std::ofstream out(path, std::ios::binary);
    std::vector<float> v(3 * 8);
    for (std::size_t i = 0; i < v.size(); ++i) v[i] = float(i);
    out.write(reinterpret_cast<const char*>(v.data()), std::streamsize(v.size() * sizeof(float)));
  }
  auto f = sinew::graph_file::parse(R"({"sinew": 1, "name": "t",
    "source": {"type": "file", "path": "graph_file_test_input.bin", "buffers": ["f32"], "shape": [8]},
    "graph": {"map": "scale", "args": {"k": 2}}, "sink": {"type": "checksum"}})",
                                    "inline.json");
  CHECK(*f.unit_count() == 3);
  auto r = run_file(f);
  CHECK(r.units == 3);
  CHECK(r.verify.ok());

  auto e = load_error(R"({"sinew": 1, "name": "t",
    "source": {"type": "file", "path": "graph_file_test_input.bin", "buffers": ["f32"], "shape": [5]},
    "graph": {"map": "scale"}, "sink": {"type": "null"}})");
  CHECK(e.pointer() == "/source/path");
  CHECK(std::string(e.what()).find("not a whole number of 20-byte records") != std::string::npos);
  std::remove(path.c_str());
}

TEST_CASE("kernel_registry: arguments are converted, defaulted and range checked", "[json]") {
  auto& reg = sinew::kernel_registry::global();
  const sinew::kernel_info* k = reg.find("solarize");
  REQUIRE(k);
  CHECK(reg.bind(*k, {}).get<int>("threshold") == 128);
  CHECK(reg.bind(*k, {{"threshold", std::int64_t(7)}}).get<std::uint8_t>("threshold") == 7);
  CHECK(reg.bind(*k, {{"threshold", 9.0}}).get<int>("threshold") == 9);  // an integral number
  CHECK_THROWS_WITH(reg.bind(*k, {{"threshold", 9.5}}), Catch::Contains("must be an integer"));
  CHECK_THROWS_WITH(reg.bind(*k, {{"threshold", std::int64_t(256)}}), Catch::Contains("must be in 0 .. 255"));
  CHECK_THROWS_WITH(reg.bind(*k, {{"treshold", std::int64_t(1)}}), Catch::Contains("has no argument 'treshold'"));
  CHECK(reg.closest("solarise") == "solarize");
  CHECK(reg.closest("fft") == "");
  CHECK_THROWS_WITH(reg.add_map<sinew::workloads::solarize>(
                        "solarize", "dup", {}, [](const sinew::kernel_args&) { return sinew::workloads::solarize{}; }),
                    Catch::Contains("already registered"));
  CHECK(k->inputs.types.size() == 1);
  CHECK(k->rank == 0);
  CHECK(reg.find("mirror")->rank == 2);
}

TEST_CASE("graph files: an OpenCL map split over the host and an OpenCL device equals the C++ map", "[json][opencl]") {
  if (sinew::opencl::list_devices().empty()) {
    WARN("SINEW-SKIP: no OpenCL device");  // ctest reports the case skipped
    return;
  }
  auto f = sinew::graph_file::load(src_dir + "/graphs/multi_device_series.json",
                                   {"/source/shape/0=300", "/source/count=4", "/graph/devices=[\"host\", \"cpu\"]"});
  CHECK(f.root().label() == "multi_device_map");
  auto r = run_file(f);
  CHECK(r.verify.ok());
  CHECK(r.verify.units == 4);

  // OpenCL errors name the place: a kernel that does not build, a missing file.
  auto e = load_error(R"({"sinew": 1, "name": "t",
    "source": {"type": "generator", "buffers": ["f32"], "shape": [16], "count": 1},
    "graph": {"map": {"source": "__kernel void k(__global float* x) { x[0] = undefined_thing; }", "kernel": "k",
                      "args": [{"inout": "f32"}]}},
    "sink": {"type": "null"}})");
  CHECK(e.pointer() == "/graph/map");
  CHECK(std::string(e.what()).find("undefined_thing") != std::string::npos);  // the build log
  auto m = load_error(R"({"sinew": 1, "name": "t",
    "source": {"type": "generator", "buffers": ["f32"], "shape": [16], "count": 1},
    "graph": {"map": {"file": "no_such.cl", "kernel": "k", "args": []}}, "sink": {"type": "null"}})");
  CHECK(m.pointer() == "/graph/map/file");
  auto d = load_error(R"({"sinew": 1, "name": "t",
    "source": {"type": "generator", "buffers": ["f32"], "shape": [16], "count": 1},
    "graph": {"map": {"source": "__kernel void k(__global float* x) { }", "kernel": "k", "args": [{"inout": "f32"}]},
              "devices": "accelerator"}, "sink": {"type": "null"}})");
  CHECK(d.pointer() == "/graph/devices");
}

TEST_CASE("graph files: an input file that vanishes after validation fails the run naming it", "[json]") {
  const std::string path = "graph_file_vanishing.bin";
  {
    std::ofstream out(path, std::ios::binary);
    std::vector<float> v(64, 1.0f);
    out.write(reinterpret_cast<const char*>(v.data()), std::streamsize(v.size() * sizeof(float)));
  }
  auto f = sinew::graph_file::parse(R"({"sinew": 1, "name": "t",
    "source": {"type": "file", "path": "graph_file_vanishing.bin", "buffers": ["f32"], "shape": [16]},
    "graph": {"map": "scale"}, "sink": {"type": "checksum"}})",
                                    "inline.json");
  std::remove(path.c_str());
  CHECK_THROWS_WITH(f.make_source(), Catch::Contains(path));
}
