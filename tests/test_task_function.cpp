// sinew::task_function: small callables inline, move-only captures, empty
// handling, and what the schedulers do with it.
#include <catch2/catch.hpp>

#include <sinew/sinew.hpp>

#include <array>
#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

namespace {

const char* const policies[] = {"tbb", "steal", "deal"};

// Records where it was when called.
struct where {
  std::array<void*, 5> pad{};
  const void** at;
  void operator()() const { *at = this; }
};
struct where_big {
  std::array<void*, 6> pad{};
  const void** at;
  void operator()() const { *at = this; }
};

bool inside(const void* p, const sinew::task_function& f) {
  auto* b = reinterpret_cast<const unsigned char*>(&f);
  auto* x = static_cast<const unsigned char*>(p);
  return x >= b && x < b + sizeof f;
}

}  // namespace

TEST_CASE("task_function keeps captures of up to six pointers inside itself", "[scheduler][task_function][tsan]") {
  static_assert(sizeof(where) == sinew::task_function::inline_size);
  static_assert(sinew::task_function::stored_inline<where>);
  static_assert(!sinew::task_function::stored_inline<where_big>);
  const void* at = nullptr;
  sinew::task_function f = where{{}, &at};
  f();
  CHECK(inside(at, f));  // the callable lives in f: no allocation
  sinew::task_function g = std::move(f);
  CHECK_FALSE(f);
  g();
  CHECK(inside(at, g));  // moved along with it

  sinew::task_function h = where_big{{}, &at};
  h();
  CHECK_FALSE(inside(at, h));  // too big: on the heap
  sinew::task_function k = std::move(h);
  k();
  CHECK_FALSE(inside(at, k));
}

TEST_CASE("task_function moves non-trivial captures and destroys each exactly once", "[scheduler][task_function][tsan]") {
  auto token = std::make_shared<int>(7);
  std::string got;
  {
    sinew::task_function f = [token, s = std::string(40, 'x'), &got] { got = s + std::to_string(*token); };
    CHECK(token.use_count() == 2);
    sinew::task_function g;
    g = std::move(f);
    CHECK(token.use_count() == 2);  // moved, not copied
    g();
    CHECK(got == std::string(40, 'x') + "7");
    g.reset();
    CHECK_FALSE(g);
    CHECK(token.use_count() == 1);

    std::array<std::shared_ptr<int>, 8> many;  // heap-held
    many.fill(token);
    sinew::task_function big = [many] { (void)many; };
    CHECK(token.use_count() == 17);
    sinew::task_function big2 = std::move(big);
    CHECK(token.use_count() == 17);
    big2 = nullptr;
    CHECK(token.use_count() == 9);
  }
  CHECK(token.use_count() == 1);
}

TEST_CASE("task_function of an empty std::function or null pointer is empty, and submit refuses it", "[scheduler][task_function]") {
  std::function<void()> none;
  void (*null_fn)() = nullptr;
  CHECK_FALSE(sinew::task_function(none));
  CHECK_FALSE(sinew::task_function(null_fn));
  CHECK_FALSE(sinew::task_function(nullptr));
  CHECK(sinew::task_function(std::function<void()>([] {})));
  for (const char* policy : policies) {
    INFO(policy);
    auto s = sinew::make_scheduler(policy, {.threads = 2, .pin = false});
    CHECK_THROWS_WITH(s->submit(none), Catch::Contains("empty function"));
    sinew::task_group g(*s);
    CHECK_THROWS_WITH(g.run(sinew::task_function{}), Catch::Contains("empty function"));
    g.wait();  // nothing was queued
  }
}

TEST_CASE("schedulers run move-only tasks and release their captures when they end", "[scheduler][task_function][tsan]") {
  for (const char* policy : policies) {
    INFO(policy);
    auto s = sinew::make_scheduler(policy, {.threads = 2, .pin = false});
    std::atomic<int> sum{0};
    std::weak_ptr<int> seen;
    {
      sinew::task_group g(*s);
      for (int i = 0; i < 100; ++i) {
        auto p = std::make_unique<int>(i);
        g.run([p = std::move(p), &sum] { sum.fetch_add(*p); });
      }
      auto shared = std::make_shared<int>(1);
      seen = shared;
      g.run([q = std::move(shared), u = std::make_unique<int>(2), &sum] { sum.fetch_add(*q + *u); });
      g.wait();
    }
    CHECK(sum.load() == 4950 + 3);
    CHECK(seen.expired());  // the task's captures went with the task

    auto f = sinew::async(*s, [u = std::make_unique<std::string>("move-only")] { return *u; });
    CHECK(f.get() == "move-only");

    std::atomic<bool> ran{false};
    sinew::detail::help_latch done;
    s->submit([u = std::make_unique<int>(5), &ran, &done] {
      ran.store(*u == 5);
      done.open();
    });
    done.wait();
    CHECK(ran.load());
  }
}
