// sinew::async: one task and the future of its result, on every policy.
#include <catch2/catch.hpp>

#include <sinew/sinew.hpp>

#include <atomic>
#include <chrono>
#include <functional>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace {

const char* const policies[] = {"tbb", "steal", "deal"};

}  // namespace

TEST_CASE("async returns the task's value, or rethrows its exception, on every policy", "[scheduler][async][tsan]") {
  for (const char* policy : policies) {
    INFO(policy);
    auto s = sinew::make_scheduler(policy, {.threads = 2, .pin = false});
    auto a = sinew::async(*s, [] { return std::string("forty-two"); });
    auto b = sinew::async(*s, [] { return 6 * 7; });
    CHECK(a.valid());
    CHECK(b.get() == 42);
    CHECK(a.get() == "forty-two");
    CHECK_FALSE(a.valid());
    CHECK_THROWS_AS(a.get(), std::logic_error);  // a second get names the mistake

    auto e = sinew::async(*s, []() -> int { throw std::runtime_error("no value"); });
    CHECK_THROWS_WITH(e.get(), "no value");

    std::atomic<int> ran{0};
    auto v = sinew::async(*s, [&] { ran.fetch_add(1); });  // void
    v.get();
    CHECK(ran.load() == 1);
  }
}

TEST_CASE("async futures awaited inside tasks help instead of deadlocking", "[scheduler][async][nested][tsan]") {
  for (const char* policy : policies)
    for (unsigned threads : {1u, 2u}) {
      INFO(policy << " with " << threads << " workers");
      auto s = sinew::make_scheduler(policy, {.threads = threads, .pin = false});
      std::function<long(long)> fib = [&](long n) -> long {
        if (n < 2) return n;
        auto x = sinew::async(*s, [&fib, n] { return fib(n - 1); });
        long y = fib(n - 2);
        return y + x.get();  // on a worker: runs other tasks while x is pending
      };
      CHECK(sinew::async(*s, [&] { return fib(16); }).get() == 987);
    }
}

TEST_CASE("an async future waits for its task when dropped, and moving it keeps the task", "[scheduler][async]") {
  for (const char* policy : policies) {
    INFO(policy);
    auto s = sinew::make_scheduler(policy, {.threads = 2, .pin = false});
    std::atomic<bool> finished{false};
    {
      auto f = sinew::async(*s, [&] {
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
        finished.store(true);
      });
    }  // f is dropped here: it waits, so `finished` is still alive for the task
    CHECK(finished.load());

    auto f1 = sinew::async(*s, [] { return 1; });
    sinew::task_future<int> f2 = std::move(f1);
    CHECK_FALSE(f1.valid());
    f2.wait();
    CHECK(f2.ready());
    CHECK(f2.get() == 1);

    std::vector<sinew::task_future<int>> many;
    for (int i = 0; i < 100; ++i) many.push_back(sinew::async(*s, [i] { return i * i; }));
    long sum = 0;
    for (auto& f : many) sum += f.get();
    CHECK(sum == 328350);  // 0^2 + ... + 99^2
  }
}

TEST_CASE("async passes a locality hint to deal", "[scheduler][async][deal]") {
  sinew::deal_scheduler s(sinew::topology::parse("2x2"));
  std::vector<std::uint64_t> on_node1 = {0, 64u << 20};  // 64 MiB on node 1
  auto f = sinew::async(s, [&] { return s.current_node(); }, {.bytes_on_node = on_node1});
  CHECK(f.get() == 1);  // dealt to the node holding the data
}
