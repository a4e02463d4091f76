// Delivery notes (engine/delivery.hpp, docs/runtime.md "Delivery notes"):
// a source's note completes once, as delivered only after every sink the
// unit reached wrote it, through farms, broadcasts and zips; a unit the run
// dropped completes its note as lost.
#include <catch2/catch.hpp>

#include <sys/stat.h>

#include <atomic>
#include <mutex>
#include <vector>

#include "test_io_common.hpp"

using namespace sinew;
using namespace sinew_io_test;

namespace {

// Records how each unit's note completed: 0 not yet, 1 delivered, 2 lost,
// and, for delivered ones, the size of `file` at that moment.
struct note_log {
  explicit note_log(std::size_t n, std::string file = "") : state(n), file_size(n), path(std::move(file)) {}
  std::vector<std::atomic<int>> state;
  std::vector<std::atomic<long>> file_size;
  std::atomic<int> completions{0};
  std::string path;

  struct note final : delivery_note {
    note_log* log;
    std::size_t k;
    note(note_log* l, std::size_t i) : log(l), k(i) {}
    void complete(bool delivered) noexcept override {
      if (delivered && !log->path.empty()) {
        struct stat st {};
        log->file_size[k] = ::stat(log->path.c_str(), &st) == 0 ? long(st.st_size) : -1;
      }
      log->state[k] = delivered ? 1 : 2;
      log->completions++;
      delete this;
    }
  };
  // n units of `len` floats (value k), each with a note.
  source make(std::size_t len) {
    return generate([this, len](unit_builder& u) {
      if (u.seq() >= state.size()) return false;
      u.set_shape(shape::d1(len));
      auto v = u.add<float>();
      for (std::size_t i = 0; i < len; ++i) v[i] = float(u.seq());
      u.set_note(note_ref(new note(this, u.seq())));
      return true;
    });
  }
  int count(int s) const {
    int c = 0;
    for (const auto& x : state) c += x.load() == s;
    return c;
  }
};

struct fail_at_7 {
  void operator()(chunk c, inout<float> x) const {
    if (x[c.begin] == 7.0f) throw std::runtime_error("unit 7 is bad");
  }
};

}  // namespace

TEST_CASE("delivery notes complete once a file sink has written the unit's bytes, through an unordered farm", "[delivery][tsan]") {
  temp_dir d;
  const std::string out = d.file("out.bin");
  const std::size_t n = 300, len = 16;
  note_log log(n, out);
  graph g(farm(map<bump<float>>(), 3, farm_order::unordered));
  g.run(log.make(len), io::write_file(out)).get();
  CHECK(log.completions == int(n));
  CHECK(log.count(1) == int(n));
  std::size_t early = 0;
  for (std::size_t k = 0; k < n; ++k)  // written in sequence order: unit k's bytes end at (k + 1) * 64
    early += log.file_size[k] < long((k + 1) * len * 4);
  CHECK(early == 0);
}

TEST_CASE("delivery notes wait for every sink of a broadcast and join the parts of a zip", "[delivery][dag][tsan]") {
  const std::size_t n = 200;
  note_log a(n), b(n);
  dag dg;
  auto x = dg.source("a");
  auto y = dg.source("b");
  dg.sink("both", dg.zip("pair", {x, y}));
  dg.sink("copy", x);  // a broadcast of a: the note needs "copy" and "both"
  graph g(dg);
  std::atomic<int> copy_seen{0};
  std::atomic<bool> copy_gate{false};
  auto f = g.run({{"a", a.make(4)}, {"b", b.make(4)}},
                 {{"both", discard()}, {"copy", for_each([&](const work_unit&) {
                                          while (!copy_gate.load()) std::this_thread::yield();
                                          copy_seen++;
                                        })}});
  // "copy" holds a's first unit: none of a's notes may complete before it.
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  CHECK(a.completions == 0);
  copy_gate = true;
  f.get();
  CHECK(a.count(1) == int(n));
  CHECK(b.count(1) == int(n));
  CHECK(copy_seen == int(n));
}

TEST_CASE("delivery notes of units a failed or cancelled run dropped complete as lost", "[delivery][tsan]") {
  const std::size_t n = 50;
  note_log log(n);
  std::vector<int> consumed(n, 0);  // the sink stage is serial
  graph g(map<fail_at_7>());
  CHECK_THROWS(g.run(log.make(8), for_each([&](const work_unit& u) { consumed[u.seq()] = 1; })).get());
  CHECK(log.completions == int(n) - log.count(0));  // every note made completed once
  CHECK(log.state[7] == 2);
  for (std::size_t k = 0; k < n; ++k) {
    INFO(k);
    if (log.state[k] != 0) CHECK(log.state[k] == (consumed[k] ? 1 : 2));  // delivered exactly when the sink had it
  }

  note_log slow(1000);
  std::atomic<int> seen{0};
  graph h(map<bump<float>>());
  auto f = h.run(slow.make(8), for_each([&](const work_unit&) {
                   seen++;
                   std::this_thread::sleep_for(std::chrono::milliseconds(1));
                 }));
  REQUIRE(eventually([&] { return seen.load() >= 5; }));
  f.cancel();
  CHECK_THROWS_AS(f.get(), sinew::cancelled);
  CHECK(slow.count(1) >= 5);
  CHECK(slow.count(2) >= 1);
  CHECK(slow.completions == int(1000) - slow.count(0));
}
