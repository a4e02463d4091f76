// Record batches (engine/records.hpp, io/batching.hpp): the record index,
// per-record leaves, the graphs and sinks that turn batching off, graph
// files and dags. The io sources and sinks: test_records_io.cpp.
#include <catch2/catch.hpp>

#include "test_records_common.hpp"

using namespace sinew;
using namespace sinew_io_test;
using namespace sinew_records_test;

TEST_CASE("records record_index describes fixed and varying records", "[records]") {
  SECTION("fixed records stack along the outermost dimension") {
    auto ix = record_index::fixed(4, shape::d2(2, 3));
    CHECK(ix.batch());
    CHECK(ix.size() == 4);
    CHECK(ix.records() == 4);
    CHECK(ix.begin(0) == 0);
    CHECK(ix.begin(3) == 18);
    CHECK(ix.end(3) == 24);
    CHECK(ix.elements() == 24);
    CHECK(ix.shape_of(2, shape::d2(8, 3)) == shape::d2(2, 3));
    CHECK(ix.fits(24));
    CHECK_FALSE(ix.fits(23));
    CHECK_FALSE(ix.offsets());
  }
  SECTION("varying records by offsets with an empty one in the middle") {
    auto off = buffer_pool::global().acquire<std::uint64_t>(4);
    const std::uint64_t o[4] = {0, 2, 2, 5};  // "ab", "", "cde"
    std::memcpy(off.data<std::uint64_t>(), o, sizeof o);
    auto ix = record_index::varying(off, 3);
    CHECK(ix.batch());
    CHECK(ix.records() == 3);
    CHECK(ix.begin(1) == 2);
    CHECK(ix.end(1) == 2);
    CHECK(ix.shape_of(0, shape::d1(5)) == shape::d1(2));
    CHECK(ix.shape_of(1, shape::d1(5)) == shape::d1(0));
    CHECK(ix.shape_of(2, shape::d1(5)) == shape::d1(3));
    CHECK(ix.elements() == 5);
    CHECK(ix.fits(5));
    CHECK_FALSE(ix.fits(6));
    CHECK(ix.offsets() == off);  // shared, not copied

    SECTION("a work_unit keeps it when copied and drops it when cleared") {
      auto u = std::make_unique<work_unit>();
      u->push_layer(layer(shape::d1(5), {buffer_pool::global().acquire<std::uint8_t>(5)}));
      u->set_records(ix);
      auto c = std::make_unique<work_unit>();
      *c = *u;
      CHECK(c->records().size() == 3);
      CHECK(c->records().offsets() == off);
      CHECK(c->records().fits(c->count()));
      c->clear();
      CHECK_FALSE(c->records().batch());
      CHECK(c->records().records() == 1);
      CHECK(u->records().size() == 3);
    }
  }
  SECTION("the default is one record") {
    record_index ix;
    CHECK_FALSE(ix.batch());
    CHECK(ix.size() == 0);
    CHECK(ix.records() == 1);
    CHECK_FALSE(ix.fits(0));
    CHECK_FALSE(ix.fits(1));
  }
}

TEST_CASE("records per-record leaves see one record of a batch", "[records]") {
  temp_dir d;
  const std::string in = d.file("in.txt"), out = d.file("out.txt");
  write_text(in, "abc\n\nde\n");
  record_log log;

  SECTION("in place") {
    graph g(pipeline(map<reverse_line>(), map<record_log>(log)));
    auto st = run_lines_files(g, in, out);
    CHECK(text_of(out) == "cba\n\ned\n");
    CHECK(st.units_out == 1);
    CHECK(st.records_out == 3);
    CHECK(log.sorted() == std::vector<std::pair<std::size_t, std::size_t>>{{0, 0}, {1, 3}, {2, 3}});
  }
  SECTION("out of place") {
    graph g(pipeline(map<reverse_into>(), map<record_log>(log)));
    auto st = run_lines_files(g, in, out);
    CHECK(text_of(out) == "cba\n\ned\n");
    CHECK(st.units_out == 1);
    CHECK(log.sorted() == std::vector<std::pair<std::size_t, std::size_t>>{{0, 0}, {1, 3}, {2, 3}});
  }
  SECTION("many records split over tasks") {
    std::vector<std::string> lines(5000);
    for (std::size_t i = 0; i < lines.size(); ++i) lines[i] = std::to_string(i * 7919);
    write_text(in, joined(lines));
    graph g(farm(map<reverse_line>(), 2));
    auto st = run_lines_files(g, in, out);
    for (auto& l : lines) std::reverse(l.begin(), l.end());
    CHECK(text_of(out) == joined(lines));
    CHECK(st.units_out < 5000);
    CHECK(st.records_out == 5000);
  }
  SECTION("a unit that is not a batch is record 0") {
    std::vector<std::vector<std::uint8_t>> items = {{'h', 'e', 'l', 'l', 'o'}, {'x', 'y'}}, res;
    graph g(pipeline(map<reverse_line>(), map<record_log>(log)));
    g.run(from(items), into(res)).get();
    REQUIRE(res.size() == 2);
    CHECK(res[0] == std::vector<std::uint8_t>{'o', 'l', 'l', 'e', 'h'});
    CHECK(res[1] == std::vector<std::uint8_t>{'y', 'x'});
    CHECK(log.sorted() == std::vector<std::pair<std::size_t, std::size_t>>{{0, 0}, {0, 0}});
  }
}

TEST_CASE("records whole-unit leaves and item sinks turn batching off", "[records]") {
  temp_dir d;
  const std::string in = d.file("in.txt"), out = d.file("out.txt");
  std::vector<std::string> lines(50);
  for (std::size_t i = 0; i < lines.size(); ++i) lines[i] = "item " + std::to_string(i);
  write_text(in, joined(lines));
  const auto always = batch_mode(io::batching::when::always);

  SECTION("a chunk leaf") {
    graph g(pipeline(map<upper>(), map<keep<std::uint8_t>>().named("whole")));
    auto st = run_lines_files(g, in, out);
    CHECK(st.units_out == 50);
    CHECK(st.records_out == 50);
    CHECK(text_of(out) == upper_of(joined(lines)));
    CHECK_THROWS_AS(g.run(io::read_lines_file(in, always), io::write_lines_file(out)), graph_error);
    CHECK_THROWS_WITH(g.run(io::read_lines_file(in, always), io::write_lines_file(out)),
                      Catch::Contains("whole") && Catch::Contains("told to make record batches"));
  }
  SECTION("an index leaf") {
    graph g(farm(map<with_position>().named("positions"), 2));
    auto st = run_lines_files(g, in, out);
    CHECK(st.units_out == 50);
    CHECK(text_of(out) == joined(lines));
    CHECK_THROWS_WITH(g.run(io::read_lines_file(in, always), io::write_lines_file(out)),
                      Catch::Contains("positions") && Catch::Contains("told to make record batches"));
  }
  SECTION("a for_each sink") {
    std::atomic<std::uint64_t> units{0}, batches{0};
    graph g(map<upper>());
    auto sink = for_each([&](const work_unit& u) {
      units++;
      if (u.records().batch()) batches++;
    });
    auto f = g.run(io::read_lines_file(in), sink);
    f.get();
    CHECK(units == 50);
    CHECK(batches == 0);
    CHECK(f.stats().units_out == 50);
    CHECK(f.stats().records_out == 50);
    CHECK_THROWS_WITH(g.run(io::read_lines_file(in, always), sink), Catch::Contains("sink(for_each)"));
  }
  SECTION("a discard sink allows batches") {
    graph g(map<upper>());
    auto f = g.run(io::read_lines_file(in), discard());
    f.get();
    CHECK(f.stats().units_out < 50);
    CHECK(f.stats().records_out == 50);
    g.run(io::read_lines_file(in, always), discard()).get();
  }
}

TEST_CASE("records graph files batch lines of a file source", "[records][json]") {
  temp_dir d;
  const std::string in = d.file("in.txt"), out = d.file("out.txt");
  std::vector<std::string> lines(1000);
  for (std::size_t i = 0; i < lines.size(); ++i)
    lines[i] = i % 50 == 0 ? std::string() : "rec" + std::to_string(i * 31);
  write_text(in, joined(lines));

  SECTION("xor by batches of 100 records") {
    auto r = run_verified(lines_doc(in, R"({"map": "xor"})", R"(, "batch": {"records": 100})", out));
    CHECK(r.verify.ok());
    INFO(r.verify.first);
    CHECK(r.verify.units == 10);
    CHECK(r.stats.units_out == 10);
    CHECK(r.stats.records_out == 1000);
    for (auto& l : lines) l = xor_of(l);
    CHECK(text_of(out) == joined(lines));
  }
  SECTION("the per-record kernel reverse after xor in an unordered farm matches its reference") {
    auto r = run_verified(lines_doc(
        in, R"({"pipeline": [{"map": "xor"}, {"farm": {"map": "reverse"}, "workers": 3, "ordered": false}]})",
        R"(, "batch": {"records": 7})", out));
    CHECK(r.verify.ok());
    INFO(r.verify.first);
    CHECK(r.stats.units_out == (1000 + 6) / 7);
    CHECK(r.verify.units == r.stats.units_out);
    CHECK(r.stats.records_out == 1000);
    for (auto& l : lines) {
      l = xor_of(l);
      std::reverse(l.begin(), l.end());
    }
    CHECK(text_of(out) == joined(lines));
  }
  SECTION("batch true with a whole-unit kernel is refused at /source/batch") {
    auto e =
        json_refusal(lines_doc(in, R"({"pipeline": [{"map": "xor"}, {"map": "delay"}]})", R"(, "batch": true)", out));
    CHECK(e.pointer() == "/source/batch");
    CHECK_THAT(std::string(e.what()), Catch::Contains("delay") && Catch::Contains("treats a unit as a whole"));
  }
  SECTION("a ppm_dir sink takes whole images: no batches by default and batch true refused") {
    const std::string images = d.file("images.bin"), dir = d.file("ppm");
    std::filesystem::create_directory(dir);
    std::vector<unsigned char> pixels(3 * 4 * 4 * 4);
    for (std::size_t i = 0; i < pixels.size(); ++i) pixels[i] = static_cast<unsigned char>(i * 37);
    write_bytes(images, pixels.data(), pixels.size());
    auto doc = [&](const std::string& batch) {
      return R"({"sinew": 1, "name": "images",
        "source": {"type": "file", "path": ")" + images + R"(", "buffers": ["rgba8"], "shape": [4, 4])" + batch + R"(},
        "graph": {"map": "solarize"},
        "sink": {"type": "ppm_dir", "path": ")" + dir + R"("}})";
    };
    auto r = run_verified(doc(""));
    CHECK(r.verify.ok());
    CHECK(r.stats.units_out == 3);
    CHECK(std::distance(std::filesystem::directory_iterator(dir), std::filesystem::directory_iterator()) == 3);
    auto e = json_refusal(doc(R"(, "batch": true)"));
    CHECK(e.pointer() == "/source/batch");
    CHECK_THAT(std::string(e.what()), Catch::Contains("ppm_dir sink takes units, not records"));
  }
  SECTION("batch false makes one unit a line") {
    auto r = run_verified(lines_doc(in, R"({"map": "reverse"})", R"(, "batch": false)", out));
    CHECK(r.verify.ok());
    CHECK(r.stats.units_out == 1000);
    for (auto& l : lines) std::reverse(l.begin(), l.end());
    CHECK(text_of(out) == joined(lines));
  }
}

TEST_CASE("records a dag's sources batch where the dag allows it", "[records][dag]") {
  temp_dir d;
  const std::string in = d.file("in.txt"), out = d.file("out.txt");
  std::vector<std::string> lines(3000);
  for (std::size_t i = 0; i < lines.size(); ++i) lines[i] = i % 40 == 0 ? std::string() : "line" + std::to_string(i * 7);
  write_text(in, joined(lines));
  auto up = [&] {
    std::vector<std::string> u = lines;
    for (auto& l : u) l = upper_of(l);
    return joined(u);
  };

  SECTION("a source, a tree and a sink") {
    dag g;
    g.sink("out", g.add("up", map<upper>(), g.source("in")));
    CHECK(g.whole_unit_at().empty());
    graph run_g(g);
    auto f = run_g.run({{"in", io::read_lines_file(in)}}, {{"out", io::write_lines_file(out)}});
    f.get();
    CHECK(f.stats().records_out == lines.size());
    CHECK(f.stats().units_out < lines.size());
    CHECK(text_of(out) == up());
  }
  SECTION("a zip pairs units: one unit a record") {
    dag g;
    auto src = g.source("in");
    auto z = g.zip("both", {g.add("a", map<upper>(), src), g.add("b", map<upper>(), src)});
    g.sink("out", g.add("first", map<first_buffer>(), z));
    CHECK_THAT(g.whole_unit_at(), Catch::Contains("both") && Catch::Contains("zip"));
    graph run_g(g);
    auto f = run_g.run({{"in", io::read_lines_file(in)}}, {{"out", io::write_lines_file(out)}});
    f.get();
    CHECK(f.stats().units_out == lines.size());
    CHECK(text_of(out) == up());
    io::batching always;
    always.mode = io::batching::when::always;
    CHECK_THROWS_WITH(run_g.run({{"in", io::read_lines_file(in, always)}}, {{"out", io::write_lines_file(out)}}),
                      Catch::Contains("both") && Catch::Contains("told to make record batches"));
  }
  SECTION("a graph file dag: a broadcast to two trees and two sinks, verified") {
    const std::string out2 = d.file("out2.txt");
    auto r = run_verified(R"({"sinew": 1, "name": "lines_dag",
      "sources": {"lines": {"type": "file", "path": ")" + in + R"(", "format": "lines", "batch": {"records": 64}}},
      "nodes": {"x": {"input": "lines", "graph": {"map": "xor"}},
                "r": {"input": "lines", "graph": {"farm": {"map": "reverse"}, "workers": 2, "ordered": false}}},
      "sinks": {"xored": {"input": "x", "sink": {"type": "file", "path": ")" + out + R"(", "format": "lines"}},
                "reversed": {"input": "r", "sink": {"type": "file", "path": ")" + out2 + R"(", "format": "lines"}}}})");
    CHECK(r.verify.ok());
    INFO(r.verify.first);
    CHECK(r.stats.records_in == lines.size());
    CHECK(r.stats.records_out == 2 * lines.size());
    CHECK(r.stats.units_in == (lines.size() + 63) / 64);
    std::vector<std::string> x = lines, rv = lines;
    for (auto& l : x) l = xor_of(l);
    for (auto& l : rv) std::reverse(l.begin(), l.end());
    CHECK(text_of(out) == joined(x));
    CHECK(text_of(out2) == joined(rv));
  }
}
