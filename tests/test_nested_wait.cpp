// Waiting inside a task: task_group::wait on a worker runs other tasks
// meanwhile (every policy), so recursive parallelism cannot deadlock with
// every worker waiting for subtasks that no one runs.
#include <catch2/catch.hpp>

#include <sinew/sinew.hpp>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <future>
#include <memory>
#include <string>
#include <thread>

#include "test_common.hpp"

using sinew_test::inc;
using sinew_test::within;

namespace {

/// `outer` tasks, each running `inner` subtasks in its own task_group and
/// waiting for them: the usual shape of divide and conquer.
std::size_t nested_groups(sinew::scheduler& s, int outer, int inner) {
  std::atomic<std::size_t> ran{0};
  sinew::task_group g(s);
  for (int i = 0; i < outer; ++i)
    g.run([&] {
      sinew::task_group sub(s);
      for (int j = 0; j < inner; ++j) sub.run([&] { ran.fetch_add(1, std::memory_order_relaxed); });
      sub.wait();
    });
  g.wait();
  return ran.load();
}

/// A binary tree of task groups `fan_depth` levels deep whose leaves each
/// start a chain of `chain` more nested groups (one task each): every level
/// waits for the one below. Returns the number of leaf tasks run.
std::size_t recurse(sinew::scheduler& s, int fan_depth, int chain, std::atomic<std::size_t>& leaves) {
  sinew::task_group g(s);
  if (fan_depth > 0) {
    for (int k = 0; k < 2; ++k) g.run([&, fan_depth, chain] { recurse(s, fan_depth - 1, chain, leaves); });
  } else if (chain > 0) {
    g.run([&, chain] { recurse(s, 0, chain - 1, leaves); });
  } else {
    leaves.fetch_add(1, std::memory_order_relaxed);
  }
  g.wait();
  return leaves.load();
}

}  // namespace

TEST_CASE("nested task groups finish on every policy with 1, 2 and all workers", "[scheduler][nested][tsan]") {
  for (const char* policy : {"tbb", "steal", "deal"})
    for (unsigned threads : {1u, 2u, 0u}) {
      INFO(policy << " with " << threads << " workers (0: all)");
      auto s = sinew::make_scheduler(policy, {.threads = threads, .pin = false});
      std::size_t ran = 0;
      within(std::chrono::seconds(120), std::string(policy) + " nested groups", [&] { ran = nested_groups(*s, 64, 64); });
      CHECK(ran == 64u * 64u);
    }
}

TEST_CASE("task groups nest 20 levels deep on every policy", "[scheduler][nested][tsan]") {
  for (const char* policy : {"tbb", "steal", "deal"}) {
    INFO(policy);
    auto s = sinew::make_scheduler(policy, {.threads = 2, .pin = false});
    std::atomic<std::size_t> leaves{0};
    within(std::chrono::seconds(120), std::string(policy) + " recursion", [&] { recurse(*s, 10, 10, leaves); });
    CHECK(leaves.load() == 1024u);  // 2^10 leaves of the fan, each at the end of a 10-deep chain
  }
}

TEST_CASE("nested task groups on deal's synthetic NUMA nodes finish", "[scheduler][nested][deal][tsan]") {
  sinew::deal_scheduler s(sinew::topology::parse("2x2"));
  std::size_t ran = 0;
  within(std::chrono::seconds(120), "deal 2x2 nested groups", [&] { ran = nested_groups(s, 32, 32); });
  CHECK(ran == 32u * 32u);
}

TEST_CASE("an exception of a nested task reaches the waiting task, and the outer group", "[scheduler][nested]") {
  for (const char* policy : {"tbb", "steal", "deal"}) {
    INFO(policy);
    auto s = sinew::make_scheduler(policy, {.threads = 2, .pin = false});
    std::atomic<int> caught{0};
    sinew::task_group g(*s);
    for (int i = 0; i < 8; ++i)
      g.run([&, i] {
        sinew::task_group sub(*s);
        for (int j = 0; j < 8; ++j)
          sub.run([i, j] {
            if (j == 3) throw std::runtime_error("nested " + std::to_string(i));
          });
        try {
          sub.wait();
        } catch (const std::runtime_error&) {
          caught.fetch_add(1);
          if (i == 5) throw;
        }
      });
    CHECK_THROWS_WITH(g.wait(), "nested 5");
    CHECK(caught.load() == 8);
  }
}

TEST_CASE("graph runs and nested task groups share one scheduler", "[scheduler][nested][tsan]") {
  for (const char* policy : {"tbb", "steal", "deal"}) {
    INFO(policy);
    auto s = sinew::make_scheduler(policy, {.threads = 2, .pin = false});
    auto in = sinew_test::make_items(200, 16);
    std::vector<std::vector<int>> out;
    within(std::chrono::seconds(120), std::string(policy) + " graph and groups", [&] {
      sinew::graph g(sinew::pipeline(sinew::map<inc>(), sinew::farm(sinew::map<inc>(), 2)), {.scheduler = s.get()});
      auto run = g.run(in, out);
      CHECK(nested_groups(*s, 32, 32) == 32u * 32u);  // while the graph runs
      run.get();
    });
    REQUIRE(out.size() == in.size());
    for (std::size_t k = 0; k < out.size(); ++k)
      for (std::size_t j = 0; j < out[k].size(); ++j) REQUIRE(out[k][j] == in[k][j] + 2);
  }
}

TEST_CASE("graph runs awaited inside tasks of every worker finish on every policy", "[scheduler][nested][tsan]") {
  for (const char* policy : {"tbb", "steal", "deal"})
    for (unsigned threads : {1u, 2u}) {
      INFO(policy << " with " << threads << " workers");
      auto s = sinew::make_scheduler(policy, {.threads = threads, .pin = false});
      const auto in = sinew_test::make_items(50, 8);
      std::atomic<int> right{0};
      within(std::chrono::seconds(120), std::string(policy) + " graphs in tasks", [&] {
        sinew::task_group g(*s);
        for (int k = 0; k < 8; ++k)  // more tasks than workers: each worker waits for a run inside a task
          g.run([&] {
            auto items = in;
            std::vector<std::vector<int>> out;
            sinew::graph gr(sinew::pipeline(sinew::map<inc>(), sinew::farm(sinew::map<inc>(), 2)),
                            {.scheduler = s.get()});
            gr.run(items, out).get();
            bool ok = out.size() == in.size();
            for (std::size_t i = 0; ok && i < out.size(); ++i) ok = out[i].size() == in[i].size() && out[i][0] == in[i][0] + 2;
            if (ok) right.fetch_add(1);
          });
        g.wait();
      });
      CHECK(right.load() == 8);
    }
}
