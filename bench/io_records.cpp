// io_records: binary record files through sinew::io vs plain read()/write()
// loops over the same bytes (1 MiB units). The graph is one no-op in-place
// map, so what is measured is the source/sink path: reads straight into
// pooled buffers, writev of whole units, the runtime's per-unit cost.
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include <sinew/io.hpp>
#include <sinew/sinew.hpp>

#include "bench.hpp"

namespace {

namespace sb = sinew_bench;

struct keep {
  void operator()(sinew::chunk, sinew::inout<float>) const {}
};

void run(sb::context& ctx) {
  const std::size_t unit_floats = std::size_t(1) << 18;  // 1 MiB
  const std::size_t units = ctx.quick() ? 64 : 512;
  const std::size_t bytes = units * unit_floats * 4;
  const char* tmp = std::getenv("TMPDIR");
  std::filesystem::path dir = std::filesystem::path(tmp && *tmp ? tmp : "/tmp") / ("sinew-bench-io-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const std::string in = (dir / "in.bin").string(), out = (dir / "out.bin").string();
  ctx.param("units", units);
  ctx.param("unit_bytes", unit_floats * 4);
  ctx.param("dir", dir.string());

  auto layout = sinew::io::record_layout::of<float>(sinew::shape::d1(unit_floats));
  sinew::io::generator_options o;
  o.layout = layout;
  o.pattern = "constant";
  o.value = 3;
  o.count = units;
  // The stage runs inline (no split of the 1 MiB unit into tasks): the
  // benchmark is about the source and the sink.
  sinew::graph g(sinew::map<keep>(keep{}, {.grain = 0, .inline_below = std::size_t(-1), .min_task = 0}));
  g.run(sinew::io::generator(o), sinew::io::write_file(in)).get();  // the input, in the page cache
  auto gbs = [bytes](double s) { return double(bytes) / s / 1e9; };
  auto size_is = [&](const std::string& p) {
    return [p, bytes]() -> std::string {
      std::error_code ec;
      auto n = std::filesystem::file_size(p, ec);
      return n == bytes ? "" : p + " has " + std::to_string(n) + " bytes, expected " + std::to_string(bytes);
    };
  };

  std::uint64_t got = 0;
  const auto& r_sinew = ctx.measure({.name = "sinew read_file",
                                     .unit = "GB/s",
                                     .better = sb::higher,
                                     .setup = nullptr,
                                     .run = [&] {
                                       auto f = g.run(sinew::io::read_file(in, layout), sinew::discard());
                                       f.get();
                                       got = f.stats().units_out;
                                     },
                                     .to_metric = gbs,
                                     .check = [&]() -> std::string {
                                       return got == units ? "" : "read " + std::to_string(got) + " units";
                                     },
                                     .note = "read_file -> map (no-op) -> discard"});
  std::vector<char> buf(unit_floats * 4);
  const auto& r_plain = ctx.measure({.name = "read() loop",
                                     .unit = "GB/s",
                                     .better = sb::higher,
                                     .setup = nullptr,
                                     .run = [&] {
                                       int fd = ::open(in.c_str(), O_RDONLY);
                                       while (::read(fd, buf.data(), buf.size()) > 0) {}
                                       ::close(fd);
                                     },
                                     .to_metric = gbs,
                                     .check = nullptr,
                                     .note = "1 MiB reads into one buffer"});
  const auto& w_sinew = ctx.measure({.name = "sinew write_file",
                                     .unit = "GB/s",
                                     .better = sb::higher,
                                     .setup = nullptr,
                                     .run = [&] { g.run(sinew::io::generator(o), sinew::io::write_file(out)).get(); },
                                     .to_metric = gbs,
                                     .check = size_is(out),
                                     .note = "generator(constant) -> map (no-op) -> write_file"});
  const auto& w_plain = ctx.measure({.name = "write() loop",
                                     .unit = "GB/s",
                                     .better = sb::higher,
                                     .setup = nullptr,
                                     .run = [&] {
                                       int fd = ::open(out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
                                       float* f = reinterpret_cast<float*>(buf.data());
                                       for (std::size_t k = 0; k < units; ++k) {
                                         std::fill(f, f + unit_floats, 3.0f);  // the generator's fill
                                         if (::write(fd, buf.data(), buf.size()) < 0) break;
                                       }
                                       ::close(fd);
                                     },
                                     .to_metric = gbs,
                                     .check = size_is(out),
                                     .note = "fill + 1 MiB writes"});
  auto r = std::make_shared<sinew::io::checksum_result>();
  ctx.measure({.name = "sinew read_file -> checksum",
               .unit = "GB/s",
               .better = sb::higher,
               .setup = nullptr,
               .run = [&] { g.run(sinew::io::read_file(in, layout), sinew::io::checksum(r)).get(); },
               .to_metric = gbs,
               .check = [&]() -> std::string { return r->units == units ? "" : "checksummed " + std::to_string(r->units) + " units"; },
               .note = "informational: FNV-1a is byte-serial"});
  ctx.ratio("io_read_file", r_sinew.stats.median / r_plain.stats.median, 0.8, sb::higher,
            "sinew read_file GB/s / read() loop GB/s");
  ctx.ratio("io_write_file", w_sinew.stats.median / w_plain.stats.median, 0.8, sb::higher,
            "sinew write_file GB/s / write() loop GB/s");
  std::filesystem::remove_all(dir);
}

const sb::registrar reg("io_records", "binary record files: sinew::io read_file/write_file vs read()/write() loops", run);

}  // namespace
