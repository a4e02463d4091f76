// sinew::task_graph: dependencies, condition tasks, repeated and
// overlapping runs, composition, errors, cancellation, placement and DOT,
// under every policy.
#include <catch2/catch.hpp>

#include <sinew/sinew.hpp>
#include <sinew/schedulers/task_graph.hpp>

#include <atomic>
#include <chrono>
#include <memory>
#include <random>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "test_common.hpp"

using sinew_test::within;

namespace {

const char* const policies[] = {"tbb", "steal", "deal"};

std::unique_ptr<sinew::scheduler> make(const char* policy, unsigned threads) {
  return sinew::make_scheduler(policy, {.threads = threads, .pin = false});
}

// A clock of events: each task takes a tick when it starts and when it ends.
struct ticks {
  std::atomic<int> now{0};
  int tick() { return now.fetch_add(1) + 1; }
};

}  // namespace

TEST_CASE("task_graph runs a task after all of its predecessors on every policy", "[task_graph][scheduler][tsan]") {
  for (const char* policy : policies)
    for (unsigned threads : {1u, 2u, 4u}) {
      INFO(policy << " with " << threads << " workers");
      auto s = make(policy, threads);
      ticks t;
      std::atomic<int> start[4] = {}, end[4] = {};
      sinew::task_graph g("diamond");
      auto body = [&](int i) {
        return [&, i] {
          start[i] = t.tick();
          std::this_thread::yield();
          end[i] = t.tick();
        };
      };
      auto [a, b, c, d] = g.emplace(body(0), body(1), body(2), body(3));
      a.precede(b, c);
      d.succeed(b, c);
      CHECK(a.successors() == 2);
      CHECK(d.predecessors() == 2);
      within(std::chrono::seconds(60), "diamond", [&] {
        for (int rep = 0; rep < 20; ++rep) {
          g.run(*s).wait();
          REQUIRE(end[0] < start[1]);
          REQUIRE(end[0] < start[2]);
          REQUIRE(end[1] < start[3]);
          REQUIRE(end[2] < start[3]);
        }
      });
    }
}

TEST_CASE("task_graph wavefront computes the same grid every run", "[task_graph][scheduler][tsan]") {
  // cell(i, j) = cell(i-1, j) + cell(i, j-1) mod p, each cell a task that
  // needs its upper and left neighbours: any task run early reads a stale 0.
  constexpr int N = 24;
  constexpr long P = 1'000'003;
  std::vector<long> want(N * N);
  for (int i = 0; i < N; ++i)
    for (int j = 0; j < N; ++j)
      want[i * N + j] = (i == 0 || j == 0) ? 1 : (want[(i - 1) * N + j] + want[i * N + j - 1]) % P;
  for (const char* policy : policies) {
    INFO(policy);
    auto s = make(policy, 2);
    std::vector<long> cell(N * N);
    std::vector<std::atomic<int>> runs(N * N);
    sinew::task_graph g("wavefront");
    std::vector<sinew::task_handle> h(N * N);
    for (int i = 0; i < N; ++i)
      for (int j = 0; j < N; ++j) {
        h[i * N + j] = g.emplace([&, i, j] {
          runs[i * N + j].fetch_add(1, std::memory_order_relaxed);
          cell[i * N + j] = (i == 0 || j == 0) ? 1 : (cell[(i - 1) * N + j] + cell[i * N + j - 1]) % P;
        });
        if (i > 0) h[(i - 1) * N + j].precede(h[i * N + j]);
        if (j > 0) h[i * N + j - 1].precede(h[i * N + j]);
      }
    within(std::chrono::seconds(60), "wavefront", [&] {
      for (int rep = 0; rep < 5; ++rep) {
        std::fill(cell.begin(), cell.end(), 0);
        auto r = g.run_n(*s, 3);
        r.wait();
        CHECK(r.iterations() == 3);
        REQUIRE(cell == want);
      }
    });
    for (auto& n : runs) REQUIRE(n.load() == 15);
  }
}

TEST_CASE("task_graph condition tasks make loops and branches", "[task_graph][scheduler][tsan]") {
  for (const char* policy : policies) {
    INFO(policy);
    auto s = make(policy, 2);
    // init -> body -> cond -(0)-> body, -(1)-> done
    int i = 0, done_at = -1;
    sinew::task_graph loop("loop");
    auto init = loop.emplace([&] { i = 0; }).name("init");
    auto body = loop.emplace([&] { ++i; }).name("body");
    auto cond = loop.emplace([&] { return i < 10 ? 0 : 1; }).name("cond");
    auto done = loop.emplace([&] { done_at = i; }).name("done");
    init.precede(body);
    body.precede(cond);
    cond.precede(body, done);
    CHECK(cond.is_condition());
    CHECK(body.predecessors() == 2);
    loop.run_n(*s, 3).wait();
    CHECK(i == 10);
    CHECK(done_at == 10);

    // A branch: only the chosen side runs; a task after the other side is skipped.
    for (int pick : {0, 1, 7}) {
      std::atomic<int> left{0}, right{0}, after_right{0};
      sinew::task_graph br("branch");
      auto c = br.emplace([pick] { return pick; });
      auto l = br.emplace([&] { ++left; });
      auto r = br.emplace([&] { ++right; });
      auto ar = br.emplace([&] { ++after_right; });
      c.precede(l, r);
      r.precede(ar);
      br.run(*s).wait();
      CHECK(left == (pick == 0 ? 1 : 0));
      CHECK(right == (pick == 1 ? 1 : 0));
      CHECK(after_right == right.load());
    }
  }
}

TEST_CASE("task_graph run_until and overlapping runs", "[task_graph][scheduler][tsan]") {
  for (const char* policy : policies) {
    INFO(policy);
    auto s = make(policy, 2);
    std::atomic<int> a{0}, b{0};
    sinew::task_graph g("pair");
    auto [x, y] = g.emplace([&] { a.fetch_add(1); }, [&] { b.fetch_add(1); });
    x.precede(y);
    int checks = 0;
    auto r = g.run_until(*s, [&] { return ++checks > 7; });
    r.wait();
    CHECK(a == 7);
    CHECK(b == 7);
    CHECK(r.iterations() == 7);
    // Runs of one graph in flight together, each with its own counts; all
    // wait at a gate, so the graph cannot be changed meanwhile.
    std::atomic<bool> open{false};
    sinew::task_graph gated("gated");
    auto [gate, u, v] = gated.emplace([&] { while (!open.load()) std::this_thread::yield(); },
                                      [&] { a.fetch_add(1); }, [&] { b.fetch_add(1); });
    gate.precede(u);
    u.precede(v);
    std::vector<sinew::task_graph_run> runs;
    for (int k = 0; k < 16; ++k) runs.push_back(gated.run(*s));
    CHECK_THROWS_WITH(gated.emplace([] {}), Catch::Contains("while 16 run(s) are in flight"));
    CHECK_THROWS_AS(u.precede(v), sinew::error);
    open = true;
    for (auto& run : runs) run.wait();
    CHECK(a == 7 + 16);
    CHECK(b == 7 + 16);
    CHECK(gated.size() == 3);
    CHECK(g.run_n(*s, 0).iterations() == 0);
  }
}

TEST_CASE("task_graph exceptions stop the run and reach the waiter", "[task_graph][scheduler][tsan]") {
  for (const char* policy : policies) {
    INFO(policy);
    auto s = make(policy, 2);
    std::atomic<int> after{0};
    sinew::task_graph g("failing");
    auto a = g.emplace([] {});
    auto bad = g.emplace([] { throw std::runtime_error("bad task"); }).name("bad");
    auto c = g.emplace([&] { ++after; });
    a.precede(bad);
    bad.precede(c);
    auto r = g.run_n(*s, 5);
    CHECK_THROWS_WITH(r.wait(), "bad task");
    CHECK(after == 0);
    CHECK(r.iterations() == 1);  // the failed iteration ended, no other began
    CHECK(r.ready());
    // The graph is usable again.
    CHECK_THROWS_AS(g.run(*s).wait(), std::runtime_error);
  }
}

TEST_CASE("task_graph cancel skips the tasks not yet started", "[task_graph][scheduler][tsan]") {
  for (const char* policy : policies) {
    INFO(policy);
    auto s = make(policy, 2);
    std::atomic<bool> go{false};
    std::atomic<int> ran{0};
    sinew::task_graph g("chain");
    sinew::task_handle prev = g.emplace([&] {
      while (!go.load()) std::this_thread::yield();
    });
    for (int k = 0; k < 50; ++k) {
      auto t = g.emplace([&] { ++ran; });
      prev.precede(t);
      prev = t;
    }
    auto r = g.run_n(*s, 100);
    r.cancel();
    go = true;
    CHECK_THROWS_AS(r.wait(), sinew::cancelled);
    CHECK(ran == 0);
  }
}

TEST_CASE("task_graph composition runs a graph as a task", "[task_graph][scheduler][tsan]") {
  for (const char* policy : policies) {
    INFO(policy);
    auto s = make(policy, 2);
    std::atomic<int> inner{0}, outer{0};
    sinew::task_graph sub("sub");
    auto [p, q] = sub.emplace([&] { ++inner; }, [&] { ++inner; });
    p.precede(q);
    sinew::task_graph top("top");
    auto first = top.emplace([&] { ++outer; });
    auto m1 = top.compose(sub);
    auto m2 = top.compose(sub);  // the same graph twice, concurrently
    auto last = top.emplace([&] { CHECK(inner.load() % 4 == 0); ++outer; });
    first.precede(m1, m2);
    last.succeed(m1, m2);
    within(std::chrono::seconds(60), "composition", [&] { top.run_n(*s, 10).wait(); });
    CHECK(inner == 40);
    CHECK(outer == 20);
    CHECK(m1.name() == "sub");

    // An exception inside the composed graph fails the outer run.
    sinew::task_graph bad("bad");
    bad.emplace([] { throw std::logic_error("inner failure"); });
    sinew::task_graph top2("top2");
    std::atomic<int> after{0};
    auto m = top2.compose(bad);
    m.precede(top2.emplace([&] { ++after; }));
    CHECK_THROWS_WITH(top2.run(*s).wait(), "inner failure");
    CHECK(after == 0);
  }
}

TEST_CASE("task_graph runs inside tasks and runs skeleton graphs as tasks", "[task_graph][scheduler][nested][tsan]") {
  for (const char* policy : policies) {
    INFO(policy);
    auto s = make(policy, 2);
    sinew::task_graph g("leaf");
    std::atomic<int> n{0};
    auto [a, b] = g.emplace([&] { ++n; }, [&] { ++n; });
    a.precede(b);
    within(std::chrono::seconds(60), "graphs in tasks", [&] {
      sinew::task_group tg(*s);
      for (int k = 0; k < 16; ++k) tg.run([&] { g.run_n(*s, 4).wait(); });  // every worker waits, helping
      tg.wait();
    });
    CHECK(n == 16 * 4 * 2);

    // A skeleton graph (a pipeline run) as one task of a task graph.
    auto items = sinew_test::make_items(40, 8);
    std::vector<std::vector<int>> out;
    sinew::graph pipe(sinew::pipeline(sinew::map<sinew_test::inc>(), sinew::farm(sinew::map<sinew_test::inc>(), 2)),
                      {.scheduler = s.get()});
    sinew::task_graph tg("with a pipeline");
    auto prep = tg.emplace([&] { out.clear(); });
    auto run = tg.emplace([&] { pipe.run(items, out).get(); }).name("pipeline");
    auto check = tg.emplace([&] { CHECK(out.size() == items.size()); });
    prep.precede(run);
    run.precede(check);
    within(std::chrono::seconds(60), "pipeline task", [&] { tg.run_n(*s, 3).wait(); });
    REQUIRE(out.size() == items.size());
    CHECK(out[5][3] == items[5][3] + 2);
  }
}

TEST_CASE("task_graph random DAGs run every task once after its predecessors", "[task_graph][scheduler][tsan]") {
  std::mt19937 rng(7);
  for (const char* policy : policies)
    for (unsigned threads : {1u, 3u}) {
      INFO(policy << " with " << threads << " workers");
      auto s = make(policy, threads);
      const int n = 1500;
      sinew::task_graph g("random");
      std::vector<std::atomic<int>> ran(n);
      std::vector<std::vector<int>> preds(n);
      std::atomic<int> order_errors{0};
      std::vector<sinew::task_handle> h(n);
      for (int i = 0; i < n; ++i) {
        h[i] = g.emplace([&, i] {
          for (int p : preds[i])
            if (ran[p].load(std::memory_order_acquire) <= ran[i].load(std::memory_order_relaxed)) ++order_errors;
          ran[i].fetch_add(1, std::memory_order_release);
        });
        const int k = i == 0 ? 0 : int(rng() % 4);
        for (int e = 0; e < k; ++e) {
          const int p = int(rng() % unsigned(i));
          preds[i].push_back(p);
          h[p].precede(h[i]);
        }
      }
      within(std::chrono::seconds(60), "random DAG", [&] { g.run_n(*s, 4).wait(); });
      CHECK(order_errors == 0);
      for (auto& r : ran) REQUIRE(r.load() == 4);
    }
}

TEST_CASE("task_graph rejects graphs that cannot run, naming the tasks", "[task_graph]") {
  auto s = make("steal", 1);
  sinew::task_graph g("cyclic");
  auto [a, b, c] = g.emplace([] {}, [] {}, [] {});
  a.name("a");
  b.name("b");
  c.name("c");
  a.precede(b);
  b.precede(c);
  c.precede(b);
  CHECK_THROWS_WITH(g.run(*s), Catch::Contains("task_graph 'cyclic'") && Catch::Contains("cycle") &&
                                   Catch::Contains("'c' -> 'b' -> 'c'"));
  CHECK_THROWS_AS(g.validate(), sinew::graph_error);

  sinew::task_graph only_weak("no source");
  auto k = only_weak.emplace([] { return 0; });
  k.precede(k);
  CHECK_THROWS_WITH(only_weak.run(*s), Catch::Contains("no task without predecessors"));

  sinew::task_graph x("x"), y("y");
  x.compose(y);
  y.compose(x);
  CHECK_THROWS_WITH(x.validate(), Catch::Contains("composed into itself") && Catch::Contains("'y'"));
  CHECK_THROWS_AS(x.compose(x), sinew::error);

  sinew::task_graph other("other");
  auto o = other.emplace([] {});
  CHECK_THROWS_WITH(a.precede(o), Catch::Contains("different graphs"));
  CHECK_THROWS_AS(g.emplace(std::function<void()>{}), sinew::error);

  sinew::task_graph empty("empty");
  CHECK_NOTHROW(empty.run(*s).wait());
}

TEST_CASE("task_graph placement hints reach the deal policy", "[task_graph][deal][scheduler]") {
  // Dealt whatever the size of D (Algorithm 1's first threshold at 0).
  auto s = sinew::make_scheduler("deal", {.topology = sinew::topology::synthetic(2, 1), .pin = false,
                                          .deal = {.size_threshold = 0}});
  REQUIRE(s->numa_topology() != nullptr);
  std::atomic<int> on[2] = {-2, -2};
  sinew::task_graph g("placed");
  auto a = g.emplace([&] { on[0] = s->current_node(); }).on_node(1);
  auto b = g.emplace([&] { on[1] = s->current_node(); }).reads({64u << 20, 0});
  a.precede(b);
  g.run_n(*s, 3).wait();
  CHECK(on[0] == 1);
  CHECK(on[1] == 0);
  // Several sources, started from this thread: one task queues them from a
  // worker, and each still goes to its node.
  sinew::task_graph sources("sources");
  std::atomic<int> src_on[4] = {-2, -2, -2, -2};
  for (int i = 0; i < 4; ++i) sources.emplace([&, i] { src_on[i] = s->current_node(); }).on_node(i % 2);
  sources.run_n(*s, 3).wait();
  for (int i = 0; i < 4; ++i) CHECK(src_on[i] == i % 2);
  sinew::task_graph wrong("wrong");
  wrong.emplace([] {}).reads({1, 2, 3});
  CHECK_THROWS_WITH(wrong.run(*s), Catch::Contains("reads() has 3 entries"));
}

TEST_CASE("task_graph DOT shows tasks, condition edges and composed graphs", "[task_graph]") {
  sinew::task_graph sub("inner \"quoted\"");
  sub.emplace([] {}).name("s0");
  sinew::task_graph g("outer");
  auto a = g.emplace([] {}).name("A");
  auto c = g.emplace([] { return 1; }).name("choose");
  auto m = g.compose(sub);
  a.precede(c);
  c.precede(a, m);
  const std::string d = g.dot();
  CHECK(d.rfind("digraph \"outer\" {", 0) == 0);
  CHECK_THAT(d, Catch::Contains("g0_t0 [label=\"A\"]"));
  CHECK_THAT(d, Catch::Contains("g0_t1 [label=\"choose\", shape=diamond]"));
  CHECK_THAT(d, Catch::Contains("g0_t1 -> g0_t2 [style=dashed, label=\"1\"]"));
  CHECK_THAT(d, Catch::Contains("g0_t0 -> g0_t1;"));
  CHECK_THAT(d, Catch::Contains("subgraph cluster_1"));
  CHECK_THAT(d, Catch::Contains("label=\"inner \\\"quoted\\\"\""));
  CHECK_THAT(d, Catch::Contains("g1_t0 [label=\"s0\"]"));
  CHECK_THAT(d, Catch::Contains("g0_t2 -> g1_t0 [style=dotted"));
}
