// The "scheduler" section of graph files (scheduler_section.hpp).
#include "scheduler_section.hpp"

#include <sinew/schedulers/topology.hpp>

#include "json_cursor.hpp"

namespace sinew::detail {

scheduler_section scheduler_at(const json_cursor& c) {
  scheduler_section s;
  if (c.value().is_string()) {
    s.policy = c.as_choice(scheduler_names());
    return s;
  }
  c.expect_object({"policy", "threads", "pin", "topology", "size_threshold", "spread_tolerance", "vicinities"}, {"policy"});
  s.policy = c.at("policy").as_choice(scheduler_names());
  scheduler_options& o = s.options;
  o.threads = unsigned(c.get_uint("threads", 0, 0, 4096));
  o.pin = c.get_bool("pin", true);
  if (c.has("topology")) {
    try {
      o.topology = topology::parse(c.at("topology").as_string());
    } catch (const json_error&) {
      throw;
    } catch (const error& e) {
      c.at("topology").fail(e.what());
    }
    if (o.threads) c.at("threads").fail("give either 'threads' or 'topology', not both");
  }
  // Thresholds and vicinities of work-dealing [Muddukrishna15, Algorithm 1, §4.2].
  bool deal_field = c.has("size_threshold") || c.has("spread_tolerance") || c.has("vicinities");
  if (deal_field && s.policy != "deal") c.fail("size_threshold, spread_tolerance and vicinities are options of the 'deal' policy");
  if (c.has("size_threshold")) o.deal.size_threshold = c.at("size_threshold").as_uint();
  o.deal.spread_tolerance = c.get_number("spread_tolerance", 0, 0, 1);
  if (c.has("vicinities")) {
    json_cursor v = c.at("vicinities");
    v.expect_array();
    for (std::size_t i = 0; i < v.value().size(); ++i) {
      json_cursor g = v.at(i);
      g.expect_array();
      std::vector<int> grp;
      for (std::size_t j = 0; j < g.value().size(); ++j) grp.push_back(int(g.at(j).as_uint(0, 4095)));
      o.deal.vicinities.push_back(grp);
    }
  }
  o.deal.pin = o.pin;
  return s;
}

std::unique_ptr<scheduler> scheduler_section::make(unsigned threads) const {
  scheduler_options o = options;
  if (threads) {  // a thread count given at run time overrides the file's topology
    o.threads = threads;
    o.topology.reset();
  }
  return make_scheduler(policy, o);
}

}  // namespace sinew::detail
