// orders_payments: a join by key. Two threads stream orders (id, amount) and
// payments (id, paid) into a dag in different orders; a join pairs each
// payment with its order, a map computes what is still owed, and orders
// nobody paid (and payments for unknown orders) are counted as unmatched.
// Every result is checked; prints "orders_payments: OK ..." on success.
//
//   orders_payments [orders] [policy]      (default 2000 orders, the default scheduler)
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <map>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include <sinew/sinew.hpp>

namespace {

/// (id, amount) and (id, paid) -> (id, amount - paid).
struct Owed {
  void operator()(sinew::chunk c, sinew::in<std::int64_t> order, sinew::in<std::int64_t> payment,
                  sinew::out<std::int64_t> owed) const {
    for (std::size_t i = c.begin; i < c.end; ++i) owed(i) = i == 0 ? order(0) : order(1) - payment(1);
  }
};

std::uint64_t id_of(const sinew::work_unit& u) { return std::uint64_t(u.input<std::int64_t>(0)[0]); }

}  // namespace

int main(int argc, char** argv) {
  const std::int64_t n = argc > 1 ? std::atoll(argv[1]) : 2000;
  std::unique_ptr<sinew::scheduler> sched;
  if (argc > 2) sched = sinew::make_scheduler(argv[2], {.threads = 2, .pin = false});

  sinew::dag d;
  auto orders = d.source("orders");
  auto payments = d.source("payments");
  // One key function for both inputs: element 0 of layer 0 is the order id.
  auto paid = d.join("paid", {orders, payments}, {id_of}, {.window = std::size_t(2 * n)});
  d.sink("owed", d.add("balance", sinew::map<Owed>(), paid));
  sinew::graph g(d, {.scheduler = sched.get()});

  sinew::stream<std::vector<std::int64_t>> order_in(64), payment_in(64);
  std::map<std::int64_t, std::int64_t> owed;  // by order id
  auto f = g.run({{"orders", order_in.source()}, {"payments", payment_in.source()}},
                 {{"owed", sinew::for_each([&](const sinew::work_unit& u) {
                     auto v = u.input<std::int64_t>(0);
                     owed[v[0]] = v[1];
                   })}});

  // Orders in id order; payments shuffled, none for every fifth order, and
  // 10 for orders that do not exist.
  std::thread o([&] {
    for (std::int64_t id = 0; id < n; ++id) order_in.push({id, 100 + id % 37});
    order_in.close();
  });
  std::thread p([&] {
    std::vector<std::int64_t> ids;
    for (std::int64_t id = 0; id < n; ++id)
      if (id % 5 != 0) ids.push_back(id);
    for (std::int64_t k = 0; k < 10; ++k) ids.push_back(n + k);
    std::shuffle(ids.begin(), ids.end(), std::mt19937(7));
    for (std::int64_t id : ids) payment_in.push({id, id % 3});
    payment_in.close();
  });
  o.join();
  p.join();
  f.get();

  std::int64_t bad = 0, paid_orders = 0;
  for (std::int64_t id = 0; id < n; ++id) {
    if (id % 5 == 0) {
      bad += owed.count(id);
      continue;
    }
    ++paid_orders;
    auto it = owed.find(id);
    if (it == owed.end() || it->second != 100 + id % 37 - id % 3) ++bad;
  }
  double unmatched = 0;
  for (const auto& st : f.stats().stages)
    for (const auto& [name, v] : st.counters)
      if (name == "unmatched") unmatched += v;
  const std::int64_t want_unmatched = (n + 4) / 5 + 10;
  if (bad || std::int64_t(owed.size()) != paid_orders || std::int64_t(unmatched) != want_unmatched) {
    std::printf("orders_payments: FAILED %lld wrong, %zu joined (want %lld), %.0f unmatched (want %lld)\n",
                static_cast<long long>(bad), owed.size(), static_cast<long long>(paid_orders), unmatched,
                static_cast<long long>(want_unmatched));
    return 1;
  }
  std::printf("orders_payments: OK orders=%lld joined=%zu unmatched=%.0f\n", static_cast<long long>(n), owed.size(),
              unmatched);
  return 0;
}
