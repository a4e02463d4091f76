// Schedulers by name (include/sinew/schedulers/scheduler_registry.hpp).
#include <sinew/schedulers/scheduler_registry.hpp>

#include <cstdlib>
#include <map>
#include <mutex>

#include <sinew/engine/error.hpp>

namespace sinew {
namespace {

struct registry {
  std::mutex m;
  std::map<std::string, scheduler_factory, std::less<>> factories;
};

// A function-local static: registrations run during static initialisation,
// in any order relative to this file's own statics.
registry& the_registry() {
  static registry r;
  return r;
}

}  // namespace

scheduler_registration::scheduler_registration(std::string name, scheduler_factory factory) {
  auto& r = the_registry();
  std::lock_guard<std::mutex> lk(r.m);
  if (!r.factories.emplace(name, std::move(factory)).second)
    throw error("scheduler policy '" + name + "' is registered twice");
}

std::vector<std::string> scheduler_names() {
  auto& r = the_registry();
  std::lock_guard<std::mutex> lk(r.m);
  std::vector<std::string> names;
  for (const auto& [n, f] : r.factories) names.push_back(n);
  return names;
}

std::unique_ptr<scheduler> make_scheduler(std::string_view name, const scheduler_options& o) {
  scheduler_factory f;
  {
    auto& r = the_registry();
    std::lock_guard<std::mutex> lk(r.m);
    if (auto it = r.factories.find(name); it != r.factories.end()) f = it->second;
  }
  if (!f) {
    std::string known;
    for (const auto& n : scheduler_names()) known += (known.empty() ? "" : ", ") + n;
    throw error("unknown scheduler policy '" + std::string(name) + "' (known: " + known + ")");
  }
  return f(o);
}

scheduler& default_scheduler() {
  // SINEW_SCHEDULER picks the policy (tbb when unset or empty), SINEW_THREADS
  // the number of workers. An unknown policy throws (and the next call tries
  // again). Immortal: tasks may still run during exit.
  static scheduler* s = [] {
    scheduler_options o;
    if (const char* e = std::getenv("SINEW_THREADS")) o.threads = unsigned(std::strtoul(e, nullptr, 10));
    std::string policy = "tbb";
    if (const char* e = std::getenv("SINEW_SCHEDULER"); e && *e) policy = e;
    try {
      return make_scheduler(policy, o).release();
    } catch (const error& e) {
      throw error(std::string("SINEW_SCHEDULER: ") + e.what());
    }
  }();
  return *s;
}

std::optional<topology> scheduler_options::numa_topology() const {
  if (topology) return topology;
  if (threads == 0 && topology::current().nodes() > 1) return topology::current();
  return std::nullopt;
}

}  // namespace sinew
