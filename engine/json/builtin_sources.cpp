// The source types of graph files (docs/json.md, "Sources"), one
// registration each: its fields, their checks, and the source it makes.
#include <sys/stat.h>

#include <algorithm>

#include <sinew/io.hpp>
#include <sinew/workloads/nbody.hpp>

#include "json_cursor.hpp"
#include "record_fields.hpp"
#include "source_types.hpp"

namespace sinew::detail {
namespace {

/// Units of `sh` holding no buffers: the index space of a kernel that reads
/// only element positions (Series).
source index_space(shape sh, std::optional<std::uint64_t> count) {
  return generate([sh, count](unit_builder& u) {
    if ((count && u.seq() >= *count) || u.stop_requested()) return false;
    u.set_shape(sh);
    return true;
  });
}

/// `count` random initial states of the N-body workload, state k from seed + k.
source nbody_states(std::size_t n, std::uint64_t seed, std::uint64_t count) {
  return generate([n, seed, count](unit_builder& u) {
    if (u.seq() >= count || u.stop_requested()) return false;
    auto st = workloads::make_bodies(n, seed + u.seq());
    u.set_shape(shape::d1(n));
    auto p = u.add<workloads::body>();
    auto v = u.add<workloads::vel>();
    std::copy(st.positions.begin(), st.positions.end(), p.data());
    std::copy(st.velocities.begin(), st.velocities.end(), v.data());
    return true;
  });
}

}  // namespace

source_plan message_source_plan(const io::message_format& f, std::optional<std::uint64_t> count, const io::batching& b) {
  source_plan p;
  p.layout = f.layout ? *f.layout : io::record_layout::of<std::uint8_t>(shape::d1(1));
  p.rank = f.layout ? 0 : 1;
  p.count = count;
  p.batch = b;
  return p;
}

void register_builtin_sources(source_registry& r) {
  r.add({.name = "generator",
         .fields = {"buffers", "shape", "count", "pattern", "seed", "value", "rate"},
         .required = {"buffers", "shape"},
         .live_input = "",
         .parse = [](const json_cursor& c) {
           source_plan p;
           p.layout = layout_at(c, true);
           p.count = count_at(c, true);
           io::generator_options g;
           g.layout = p.layout;
           g.count = p.count;
           g.pattern = c.has("pattern") ? c.at("pattern").as_choice({"random", "ramp", "constant"}) : "random";
           g.seed = c.get_uint("seed", 42);
           g.value = c.get_number("value", 1);
           g.rate = c.get_number("rate", 0, 0, 1e9);
           if (p.layout.buffers.empty()) {
             if (c.has("rate")) c.at("rate").fail("an index source (no buffers) has no rate");
             p.make = [sh = p.layout.shape, count = p.count](bool) { return index_space(sh, count); };
             return p;
           }
           try {  // the generator's own checks (pattern vs element type)
             io::generator(g);
           } catch (const error& e) {
             c.fail(e.what());
           }
           p.make = [g](bool replay) {
             io::generator_options o = g;
             if (replay) o.rate = 0;
             return io::generator(o);
           };
           return p;
         }});

  r.add({.name = "nbody",
         .fields = {"bodies", "seed", "count"},
         .required = {"bodies"},
         .live_input = "",
         .parse = [](const json_cursor& c) {
           source_plan p;
           std::size_t n = c.at("bodies").as_uint(1, std::uint64_t(1) << 28);
           std::uint64_t seed = c.get_uint("seed", 42);
           std::uint64_t count = count_at(c, false).value_or(1);
           p.count = count;
           p.layout = io::record_layout::of<workloads::body, workloads::vel>(shape::d1(n));
           p.make = [n, seed, count](bool) { return nbody_states(n, seed, count); };
           return p;
         }});

  r.add({.name = "file",
         .fields = {"path", "format", "buffers", "shape", "batch", "follow", "idle_timeout", "from"},
         .required = {"path"},
         .live_input = "",
         .parse = [](const json_cursor& c) {
           source_plan p;
           std::string path = c.at("path").as_string();
           p.batch = batching_at(c);
           const bool follow = c.get_bool("follow", false);
           io::follow_options f;
           if (follow) {
             p.live_input = "a followed file";
             f.idle_timeout = milliseconds_at(c, "idle_timeout");
             f.from_end = c.has("from") && c.at("from").as_choice({"start", "end"}) == "end";
           } else {
             for (const char* k : {"idle_timeout", "from"})
               if (c.has(k)) c.at(k).fail("\"" + std::string(k) + "\" applies to a followed file (\"follow\": true)");
             if (!path_exists(path, false)) c.at("path").fail("no such file: '" + path + "'");
           }
           if (lines_format_at(c)) {
             p.layout = io::record_layout::of<std::uint8_t>(shape::d1(1));
             p.rank = 1;
             p.make = [path, b = p.batch, follow, f](bool) {
               return follow ? io::follow_lines_file(path, f, b) : io::read_lines_file(path, b);
             };
             return p;
           }
           p.layout = layout_at(c, false);
           if (follow) {
             p.make = [path, l = p.layout, b = p.batch, f](bool) { return io::follow_file(path, l, f, b); };
             return p;
           }
           struct stat st {};
           ::stat(path.c_str(), &st);
           if (std::uint64_t(st.st_size) % p.layout.bytes() != 0)
             c.at("path").fail("'" + path + "' holds " + std::to_string(st.st_size) + " bytes, not a whole number of " +
                               std::to_string(p.layout.bytes()) + "-byte records");
           p.count = std::uint64_t(st.st_size) / p.layout.bytes();
           p.make = [path, l = p.layout, b = p.batch](bool) { return io::read_file(path, l, b); };
           return p;
         }});

  r.add({.name = "stdin",
         .fields = {"format", "buffers", "shape", "batch"},
         .required = {},
         .live_input = "standard input",
         .parse = [](const json_cursor& c) {
           source_plan p;
           p.batch = batching_at(c);
           if (lines_format_at(c)) {
             p.layout = io::record_layout::of<std::uint8_t>(shape::d1(1));
             p.rank = 1;
             p.make = [b = p.batch](bool) { return io::read_lines(0, b); };
             return p;
           }
           p.layout = layout_at(c, false);
           p.make = [l = p.layout, b = p.batch](bool) { return io::read_stdin(l, b); };
           return p;
         }});

  r.add({.name = "ppm_dir",
         .fields = {"path"},
         .required = {"path"},
         .live_input = "",
         .parse = [](const json_cursor& c) {
           source_plan p;
           std::string dir = c.at("path").as_string();
           if (!path_exists(dir, true)) c.at("path").fail("no such directory: '" + dir + "'");
           p.layout = io::record_layout::of<workloads::rgba8>(shape::d2(1, 1));
           p.rank = 2;
           p.make = [dir](bool) { return io::read_ppm_dir(dir); };
           return p;
         }});

  r.add({.name = "tcp",
         .fields = {"mode", "host", "port", "buffers", "shape", "batch"},
         .required = {"mode", "port", "buffers", "shape"},
         .live_input = "a TCP socket",
         .parse = [](const json_cursor& c) {
           source_plan p;
           bool listen = c.at("mode").as_choice({"listen", "connect"}) == "listen";
           std::string host = c.get_string("host", "127.0.0.1");
           std::uint16_t port = port_at(c);
           p.layout = layout_at(c, false);
           p.batch = batching_at(c);
           p.make = [listen, host, port, l = p.layout, b = p.batch](bool) {
             return listen ? io::tcp_listen(host, port, l, nullptr, b) : io::tcp_connect(host, port, l, b);
           };
           return p;
         }});
#ifdef SINEW_HAVE_ZMQ
  register_zmq_sources(r);
#endif
#ifdef SINEW_HAVE_MQTT
  register_mqtt_sources(r);
#endif
}

const source_registry& source_types() { return filled_registry<source_type_info, register_builtin_sources>("source"); }

}  // namespace sinew::detail
