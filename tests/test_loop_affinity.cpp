// Loop affinity: a repeated loop's owner keeps where its blocks ran, and the
// policies give them the same workers again (`steal` and `deal`: segment i
// to worker i with an affinity; `tbb`: every loop, one range per worker
// slot). These check the record's ownership, the loops' results, that every
// policy repeats the segment-to-worker assignment, and that a map passes one
// record for all its units.
#include <catch2/catch.hpp>

#include <algorithm>
#include <atomic>
#include <barrier>
#include <chrono>
#include <map>
#include <memory>
#include <stdexcept>
#include <thread>
#include <vector>

#include <sinew/detail/item_cost.hpp>
#include <sinew/schedulers/deal_scheduler.hpp>
#include <sinew/schedulers/steal_scheduler.hpp>
#include <sinew/schedulers/tbb_scheduler.hpp>
#include <sinew/sinew.hpp>

#include "test_common.hpp"

using namespace sinew;
using sinew_test::twice;

namespace {

struct counted_record : loop_affinity::record {
  explicit counted_record(int& made) { ++made; }
};

// Forwards to a real scheduler and keeps the affinity of every loop.
class affinity_spy final : public scheduler {
 public:
  explicit affinity_spy(scheduler& real) : real_(real) {}
  const char* name() const noexcept override { return real_.name(); }
  unsigned concurrency() const noexcept override { return real_.concurrency(); }
  void submit(task_function fn, const locality_hint& hint) override { real_.submit(std::move(fn), hint); }
  void parallel_for(std::size_t n, std::size_t grain,
                    detail::function_ref<void(std::size_t, std::size_t)> body) override {
    parallel_for_at({}, n, grain, body);
  }
  void parallel_for_at(const locality_hint& hint, std::size_t n, std::size_t grain,
                       detail::function_ref<void(std::size_t, std::size_t)> body) override {
    {
      std::lock_guard<std::mutex> lk(m_);
      seen.push_back(hint.affinity);
    }
    real_.parallel_for_at(hint, n, grain, body);
  }
  void help_until(detail::help_latch& l) override { real_.help_until(l); }
  scheduler_stats stats() const override { return real_.stats(); }
  void reset_stats() override { real_.reset_stats(); }
  std::vector<loop_affinity*> seen;

 private:
  scheduler& real_;
  std::mutex m_;
};

// Adds one to every element of [b, e) of `v`.
auto add_one(std::vector<int>& v) {
  return [&v](std::size_t b, std::size_t e) {
    for (std::size_t i = b; i < e; ++i) ++v[i];
  };
}

bool all_equal(const std::vector<int>& v, int x) {
  return std::all_of(v.begin(), v.end(), [x](int y) { return y == x; });
}

}  // namespace

TEST_CASE("loop_affinity: one loop at a time holds the record, made once per scheduler", "[scheduler][tsan]") {
  loop_affinity a;
  int made = 0;
  auto make = [&] { return std::make_unique<counted_record>(made); };
  const int s1 = 0, s2 = 0;  // two owners
  counted_record* first = nullptr;
  {
    loop_affinity::hold<counted_record> h(a, &s1, make);
    REQUIRE(h.get() != nullptr);
    first = h.get();
    loop_affinity::hold<counted_record> busy(a, &s1, make);  // a second loop meanwhile
    CHECK(busy.get() == nullptr);
  }
  {
    loop_affinity::hold<counted_record> again(a, &s1, make);  // released: the same record
    CHECK(again.get() == first);
  }
  CHECK(made == 1);
  {
    loop_affinity::hold<counted_record> other(a, &s2, make);  // another scheduler: a fresh record
    CHECK(other.get() != nullptr);
  }
  CHECK(made == 2);
  loop_affinity copy(a);  // a copy starts without one
  {
    loop_affinity::hold<counted_record> c(copy, &s2, make);
    CHECK(c.get() != nullptr);
  }
  CHECK(made == 3);

  // Threads racing for it: never two holders at once.
  std::atomic<int> inside{0}, most{0}, held{0};
  std::vector<std::thread> ts;
  for (int t = 0; t < 4; ++t)
    ts.emplace_back([&] {
      for (int i = 0; i < 2000; ++i) {
        loop_affinity::hold<counted_record> h(a, &s1, make);
        if (!h.get()) continue;
        const int k = inside.fetch_add(1) + 1;
        int m = most.load();
        while (k > m && !most.compare_exchange_weak(m, k)) {
        }
        held.fetch_add(1);
        inside.fetch_sub(1);
      }
    });
  for (auto& t : ts) t.join();
  CHECK(most.load() == 1);
  CHECK(held.load() > 0);
}

TEST_CASE("tbb_scheduler: loops cover their range once, shared, nested, from outside or throwing", "[scheduler]") {
  tbb_scheduler s(4);
  // The same loop again and again, then other sizes and grains; a grain of
  // 1 over many items (chunks are cut coarser than a claim per item).
  std::vector<int> v(200000, 0);
  int rounds = 0;
  for (std::size_t grain : {1000, 1000, 1000, 64, 5000, 1}) {
    s.parallel_for(v.size(), grain, add_one(v));
    ++rounds;
  }
  CHECK(all_equal(v, rounds));
  std::vector<int> w(777, 0);
  s.parallel_for(w.size(), 10, add_one(w));
  CHECK(all_equal(w, 1));
  std::vector<int> one(5, 0);  // fewer items than workers, and a single chunk
  s.parallel_for(one.size(), 1, add_one(one));
  s.parallel_for(one.size(), 100, add_one(one));
  CHECK(all_equal(one, 2));

  // Two threads from outside at once, and loops nested in a loop's chunks.
  std::vector<int> x(100000, 0), y(100000, 0);
  std::thread other([&] {
    for (int i = 0; i < 50; ++i) s.parallel_for(y.size(), 500, add_one(y));
  });
  for (int i = 0; i < 50; ++i) s.parallel_for(x.size(), 500, add_one(x));
  other.join();
  CHECK(all_equal(x, 50));
  CHECK(all_equal(y, 50));
  std::vector<int> z(64 * 1000, 0);
  s.parallel_for(64, 1, [&](std::size_t b, std::size_t e) {
    for (std::size_t k = b; k < e; ++k)
      s.parallel_for(1000, 10, [&, k](std::size_t i, std::size_t j) {
        for (; i < j; ++i) ++z[k * 1000 + i];
      });
  });
  CHECK(all_equal(z, 1));

  // An exception reaches the caller; the next loop runs whole.
  CHECK_THROWS_WITH(s.parallel_for(1000, 10,
                                   [](std::size_t b, std::size_t) {
                                     if (b == 500) throw std::runtime_error("block 500");
                                   }),
                    "block 500");
  std::vector<int> after(1000, 0);
  s.parallel_for(after.size(), 10, add_one(after));
  CHECK(all_equal(after, 1));
}

// Runs `rounds` loops with one affinity and one segment per worker, each
// called from a task (a worker) after the others have gone to sleep; every
// segment waits for all of them, so each runs on a worker of its own.
// Returns, per segment, the most rounds one thread ran it in.
static std::vector<int> segment_owners(scheduler& s, unsigned workers, int rounds) {
  const std::size_t grain = 1000, n = workers * grain;  // one chunk a worker: no halving
  loop_affinity aff;
  std::vector<std::map<std::thread::id, int>> ran(workers);
  std::vector<int> sum(n, 0);
  for (int r = 0; r < rounds; ++r) {
    std::barrier all(workers);
    std::atomic<bool> done{false};
    s.submit([&] {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));  // the other workers park
      s.parallel_for_at({.affinity = &aff}, n, grain, [&](std::size_t b, std::size_t e) {
        ++ran[b / grain][std::this_thread::get_id()];
        for (std::size_t i = b; i < e; ++i) ++sum[i];
        all.arrive_and_wait();
      });
      done.store(true);
    });
    while (!done.load()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  CHECK(all_equal(sum, rounds));
  std::vector<int> most;
  for (auto& m : ran) {
    int k = 0;
    for (auto& [id, c] : m) k = std::max(k, c);
    most.push_back(k);
  }
  return most;
}

TEST_CASE("steal, deal and tbb give a loop with an affinity the same segment-to-worker assignment again",
          "[scheduler][tsan]") {
  constexpr unsigned W = 4;
  constexpr int R = 6;
  auto repeated = [](const std::vector<int>& most) {  // every segment on one thread in most rounds
    return std::all_of(most.begin(), most.end(), [](int k) { return k >= R - 2; });
  };
  SECTION("steal") {
    steal_scheduler s(W, false);
    CHECK(repeated(segment_owners(s, W, R)));
  }
  SECTION("deal") {
    deal_scheduler s(topology::synthetic(1, W));
    CHECK(repeated(segment_owners(s, W, R)));
  }
  SECTION("tbb") {  // without a record: each worker slot owns a range of every loop
    tbb_scheduler s(W);
    CHECK(repeated(segment_owners(s, W, R)));
  }
}

// A chain of `depth` nested task groups, one task each, whose innermost
// task meets the other chains' at `meet` and then runs a loop with an
// affinity of one 50 ms segment per worker; `foreign` counts segments run
// by another thread than the loop's caller.
static void deep_loop(scheduler& s, int depth, std::atomic<unsigned>& meet, unsigned workers,
                      std::atomic<int>& foreign) {
  task_group g(s);
  if (depth > 0) {
    g.run([&, depth] { deep_loop(s, depth - 1, meet, workers, foreign); });
  } else {
    meet.fetch_add(1);
    while (meet.load() < workers) std::this_thread::yield();
    const auto caller = std::this_thread::get_id();
    loop_affinity aff;
    s.parallel_for_at({.affinity = &aff}, workers * 1000, 1000, [&](std::size_t, std::size_t) {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
      if (std::this_thread::get_id() != caller) foreign.fetch_add(1);
    });
  }
  g.wait();
}

TEST_CASE("steal: a worker past the helping depth keeps its loop's segments, affinity or not", "[scheduler][nested]") {
  // Every worker is 80 task groups deep (past max_help_depth, where a steal
  // waiter runs only tasks of its own deque) when it starts its loop: a
  // segment given to another worker's shard would wait there until that
  // worker's own chain had unwound. Each caller runs all of its segments
  // itself, one after the other, before any other worker is free to take
  // one. (A deal waiter that deep still takes from its own shard, where the
  // affinity puts its segments.)
  constexpr unsigned W = 2;
  steal_scheduler s(W, false);
  std::atomic<unsigned> meet{0};
  std::atomic<int> foreign{0};
  sinew_test::within(std::chrono::seconds(60), "steal deep loops", [&] {
    task_group top(s);
    for (unsigned k = 0; k < W; ++k) top.run([&] { deep_loop(s, 80, meet, W, foreign); });
    top.wait();
  });
  CHECK(foreign.load() == 0);
}

TEST_CASE("a map passes one loop_affinity for a run's later units, none for its first, and computes them right", "[runtime]") {
  // Between runs the caller has usually touched the data (filled the input,
  // read the output): the first unit of a run goes without the affinity.
  tbb_scheduler real(2);
  affinity_spy spy(real);
  std::vector<std::vector<int>> items(3, std::vector<int>(1 << 18));
  for (std::size_t k = 0; k < items.size(); ++k)
    for (std::size_t i = 0; i < items[k].size(); ++i) items[k][i] = int((i + k) % 1000);
  graph g(map<twice>({}, {.inline_below = 1024}), {.scheduler = &spy});  // every unit splits
  for (int run = 0; run < 2; ++run) {
    std::vector<std::vector<int>> out;
    g.run(from(items), into(out)).get();
    REQUIRE(out.size() == items.size());
    bool ok = true;
    for (std::size_t k = 0; k < items.size(); ++k)
      for (std::size_t i = 0; i < items[k].size(); ++i) ok &= out[k][i] == 2 * items[k][i];
    CHECK(ok);
  }
  std::vector<int> x(items[0]), y;
  g.run(from_arrays(x), into_arrays(y)).get();  // a run of one unit
  REQUIRE(y.size() == x.size());
  CHECK(y[12345] == 2 * x[12345]);
  REQUIRE(spy.seen.size() == 7);
  CHECK(spy.seen[0] == nullptr);
  CHECK(spy.seen[1] != nullptr);
  CHECK(spy.seen[3] == nullptr);
  CHECK(spy.seen[6] == nullptr);
  for (std::size_t i : {2, 4, 5}) CHECK(spy.seen[i] == spy.seen[1]);
}

TEST_CASE("item_cost::steady keeps the task size unless it is off by more than twice", "[scheduler][tsan]") {
  detail::item_cost c;
  CHECK(c.steady(1000) == 1000);
  CHECK(c.steady(1900) == 1000);
  CHECK(c.steady(600) == 1000);
  CHECK(c.steady(2002) == 2002);
  CHECK(c.steady(1001) == 2002);
  CHECK(c.steady(999) == 999);
}
