// multi_device_map: one unit split over several devices by a balancer
// [Vinas17, §3.3], one thread per non-host device [Xu15].
#include <sinew/opencl/host_executor.hpp>
#include <sinew/opencl/multi_device_map.hpp>
#include <sinew/opencl/simulated_device.hpp>

#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <deque>
#include <functional>
#include <latch>
#include <mutex>
#include <thread>
#include <unordered_map>

namespace sinew {

namespace detail {

namespace {

/// The thread (and queue of jobs) driving one device executor. Shared by
/// every multi-device map using the executor, so one executor object is
/// only ever called from one thread at a time, in submission order.
class device_thread {
 public:
  using clock = std::chrono::steady_clock;
  device_thread() : th_([this] { loop(); }) {}
  ~device_thread() {
    {
      std::lock_guard<std::mutex> l(m_);
      stop_ = true;
    }
    cv_.notify_one();
    th_.join();
  }
  void post(std::function<void()> job) {
    {
      std::lock_guard<std::mutex> l(m_);
      jobs_.push_back(std::move(job));
    }
    cv_.notify_one();
  }

  static std::shared_ptr<device_thread> for_executor(const device_executor* e) {
    static std::mutex m;
    static std::unordered_map<const device_executor*, std::weak_ptr<device_thread>> reg;
    std::lock_guard<std::mutex> l(m);
    for (auto it = reg.begin(); it != reg.end();) it = it->second.expired() ? reg.erase(it) : std::next(it);
    auto& w = reg[e];
    auto t = w.lock();
    if (!t) w = t = std::make_shared<device_thread>();
    return t;
  }

  /// When the job before the running one ended (call from a job only).
  clock::time_point previous_end() const noexcept { return last_end_; }

 private:
  void loop() {
    std::unique_lock<std::mutex> l(m_);
    for (;;) {
      cv_.wait(l, [&] { return stop_ || !jobs_.empty(); });
      if (jobs_.empty()) return;  // stop_ and nothing left
      auto job = std::move(jobs_.front());
      jobs_.pop_front();
      l.unlock();
      job();  // jobs catch their own exceptions
      last_end_ = clock::now();
      l.lock();
    }
  }

  std::mutex m_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> jobs_;
  bool stop_ = false;
  clock::time_point last_end_{};  // the device thread's own
  std::thread th_;
};

std::string device_list(const std::vector<std::shared_ptr<device_executor>>& d) {
  std::string s;
  for (std::size_t i = 0; i < d.size(); ++i) s += (i ? "|" : "") + d[i]->name();
  return s;
}

}  // namespace

/// Statistics shared by a node and everything compiled from it.
struct md_stats_state {
  std::mutex m;
  multi_device_stats s;
  std::size_t history = 64;
};

class multi_device_exec final : public executable {
 public:
  multi_device_exec(std::vector<std::shared_ptr<device_executor>> devs, balance_policy p, multi_device_options o,
                    std::shared_ptr<md_stats_state> st, std::string path)
      : devs_(std::move(devs)), p_(std::move(p)), o_(o), st_(std::move(st)), path_(std::move(path)),
        names_(device_list(devs_)) {
    for (auto& d : devs_) {
      gran_.push_back(d->granularity() ? d->granularity() : 1);
      auto* h = dynamic_cast<host_executor_base*>(d.get());
      bool on_caller = h && !h->own_scheduler();
      threads_.push_back(on_caller ? nullptr : device_thread::for_executor(d.get()));
      modeled_.push_back(dynamic_cast<simulated_device*>(d.get()) != nullptr);
    }
    in_place_ = devs_[0]->in_place();
  }

  void execute(exec_args& a) override {
    const layer& in = *a.in;
    require_uniform(in, "a multi-device map (it splits every buffer by rows)");
    if (!in_place_ && !(a.out->shape() == in.shape()))
      throw error("output shape " + a.out->shape().str() + " differs from input shape " + in.shape().str());
    const std::size_t rows = in.shape().ext[0], size = in.count();
    if (rows == 0 || size == 0) return;

    std::unique_lock<std::mutex> lk(m_);
    per_size& ps = state_for(size);
    // One tuning execution at a time: its timings must not include another
    // unit of this node. Units arriving meanwhile (a farm, a deep queue) run
    // with the current proposal and are not reported. Nobody waits on the
    // lock while a unit runs: a worker waiting in parallel_for may pick up
    // another activation of this very stage.
    const bool tuning = !ps.tuner.tuned();
    const bool passenger = tuning && ps.busy;
    if (tuning && !passenger) ps.busy = true;
    std::vector<double> w = ps.tuner.weights();
    const unsigned retunes_at_start = ps.tuner.retunes();
    lk.unlock();

    std::vector<device_share> shares = split_shares(rows, w, gran_);
    std::vector<share_timing> t;
    double unit_seconds = 0;
    try {
      t = run_shares(shares, a, unit_seconds);
    } catch (...) {
      if (tuning && !passenger) {
        lk.lock();
        ps.busy = false;
      }
      throw;
    }

    lk.lock();
    if (tuning && !passenger) ps.busy = false;
    bool counted = false;
    // A unit that started tuned reports only if it ran with the tuned
    // weights of now: tuned, and no re-tuning began meanwhile (a tuned
    // tuner's weights change only by re-tuning; the re-tuning may have
    // ended already while this unit ran).
    if (tuning ? !passenger : ps.tuner.tuned() && ps.tuner.retunes() == retunes_at_start) {
      const bool was_tuned = ps.tuner.tuned();
      ps.tuner.report(shares, t, unit_seconds);
      if (ps.tuner.tuned() && (!was_tuned || ps.tuner.retunes() != ps.retunes)) cache_store(size, ps.tuner.weights());
      if (!ps.tuner.tuned() && was_tuned && o_.use_cache) cache().erase(key(size));
      counted = tuning || ps.tuner.retunes() != ps.retunes;
      ps.retunes = ps.tuner.retunes();
    }
    record(a.seq, size, ps, std::move(shares), std::move(t), counted);
  }

 private:
  struct per_size {
    explicit per_size(const balance_policy& p, std::size_t n) : tuner(p, n) {}
    balance_tuner tuner;
    unsigned retunes = 0;
    bool busy = false;  // a tuning execution is running
  };

  balance_cache& cache() const { return o_.cache ? *o_.cache : balance_cache::global(); }
  balance_key key(std::size_t size) const { return {path_, size, names_}; }
  void cache_store(std::size_t size, const std::vector<double>& w) {
    if (o_.use_cache && p_.kind != balance_kind::fixed) cache().store(key(size), w);
  }

  per_size& state_for(std::size_t size) {
    auto it = sizes_.find(size);
    if (it != sizes_.end()) return *it->second;
    auto ps = std::make_unique<per_size>(p_, devs_.size());
    ps->tuner.set_granularity(gran_);
    if (o_.use_cache && p_.kind != balance_kind::fixed && !ps->tuner.tuned()) {
      if (auto w = cache().find(key(size))) {
        ps->tuner.set_tuned(std::move(*w));
        std::lock_guard<std::mutex> l(st_->m);
        ++st_->s.cache_hits;
      }
    }
    return *sizes_.emplace(size, std::move(ps)).first->second;
  }

  /// Runs every non-empty share; `unit_seconds` receives the time from
  /// dispatching the shares to joining the last one when every device that
  /// ran is real (0 when a simulated device ran: its times are modeled).
  std::vector<share_timing> run_shares(const std::vector<device_share>& shares, exec_args& a, double& unit_seconds) {
    using clock = device_thread::clock;
    const std::size_t n = devs_.size();
    std::vector<share_timing> t(n);
    std::vector<std::exception_ptr> err(n);
    std::vector<double> wake(n, 0.0);
    std::vector<clock::time_point> ended(n);
    std::ptrdiff_t posted = 0;
    for (std::size_t i = 0; i < n; ++i) posted += (threads_[i] && shares[i].size());
    std::latch done(posted);
    exec_args off = a;
    off.sched = nullptr;  // device threads are outside the scheduler
    auto run = [&](std::size_t i, exec_args& args) {
      try {
        t[i] = devs_[i]->execute(shares[i], args);
      } catch (...) {
        err[i] = std::current_exception();
      }
    };
    const clock::time_point post_time = clock::now();
    for (std::size_t i = 0; i < n; ++i)
      if (threads_[i] && shares[i].size())
        threads_[i]->post([&, i, th = threads_[i].get()] {
          // Waking this thread (not waiting behind other jobs) is part of
          // what the unit waits for on this device.
          const clock::time_point start = clock::now();
          wake[i] = std::chrono::duration<double>(start - std::max(post_time, th->previous_end())).count();
          exec_args mine = off;
          run(i, mine);
          ended[i] = clock::now();
          done.count_down();
        });
    // Host shares on this worker meanwhile (their chunks go to the other workers).
    for (std::size_t i = 0; i < n; ++i)
      if (!threads_[i] && shares[i].size()) run(i, a);
    const clock::time_point host_end = clock::now();
    done.wait();
    {
      bool modeled = false;
      for (std::size_t i = 0; i < n; ++i) modeled = modeled || (modeled_[i] && shares[i].size());
      unit_seconds = modeled ? 0.0 : std::chrono::duration<double>(clock::now() - post_time).count();
    }
    if (o_.dispatch_in_timings && posted) {
      // A real device's share time (what the balancer sees) includes waking
      // its thread and, for the device the worker waited for last, waking
      // the worker: fixed costs of using the device that its own clock
      // misses (simulated devices return modeled times, left as they are).
      const clock::time_point joined = clock::now();
      std::size_t last = n;
      for (std::size_t i = 0; i < n; ++i)
        if (threads_[i] && shares[i].size() && (last == n || ended[i] > ended[last])) last = i;
      for (std::size_t i = 0; i < n; ++i) {
        if (!threads_[i] || !shares[i].size() || modeled_[i]) continue;
        double extra = std::max(0.0, wake[i]);
        if (i == last && ended[i] > host_end) extra += std::chrono::duration<double>(joined - ended[i]).count();
        t[i].total += extra;
      }
    }
    for (std::size_t i = 0; i < n; ++i)
      if (err[i]) {
        std::string what = "unknown exception";
        try {
          std::rethrow_exception(err[i]);
        } catch (const std::exception& e) {
          what = e.what();
        } catch (...) {
        }
        throw error("device " + std::to_string(i) + " '" + devs_[i]->name() + "' (rows [" +
                    std::to_string(shares[i].begin) + ", " + std::to_string(shares[i].end) + ")): " + what);
      }
    return t;
  }

  void record(std::uint64_t seq, std::size_t size, per_size& ps, std::vector<device_share> shares, std::vector<share_timing> t,
              bool tuning) {
    std::lock_guard<std::mutex> l(st_->m);
    auto& s = st_->s;
    ++s.units;
    s.tuning_executions += tuning;
    s.retunes = 0;
    for (auto& [sz, p] : sizes_) s.retunes += p->tuner.retunes();
    s.weights = ps.tuner.weights();
    s.tuned = ps.tuner.tuned();
    if (p_.kind == balance_kind::iterative) s.fits = ps.tuner.fits();
    for (std::size_t i = 0; i < shares.size(); ++i) {
      s.rows[i] += shares[i].size();
      s.seconds[i] += t[i].total;
    }
    if (st_->history) {
      if (s.recent.size() == st_->history) s.recent.erase(s.recent.begin());
      s.recent.push_back({seq, size, std::move(shares), std::move(t), tuning});
    }
  }

  std::vector<std::shared_ptr<device_executor>> devs_;
  balance_policy p_;
  multi_device_options o_;
  std::shared_ptr<md_stats_state> st_;
  std::string path_, names_;
  std::vector<std::size_t> gran_;
  std::vector<std::shared_ptr<device_thread>> threads_;  // null: run on the calling worker
  std::vector<bool> modeled_;                           // simulated: times are modeled, not measured
  bool in_place_ = false;
  std::mutex m_;
  std::unordered_map<std::size_t, std::unique_ptr<per_size>> sizes_;
};

class multi_device_node final : public node_impl {
 public:
  multi_device_node(std::vector<std::shared_ptr<device_executor>> d, balance_policy p, multi_device_options o)
      : devs_(std::move(d)), p_(std::move(p)), o_(o), st_(std::make_shared<md_stats_state>()) {
    st_->history = o_.history;
    st_->s.policy = p_.name();
    for (auto& e : devs_) st_->s.devices.push_back(e->name());
    st_->s.rows.assign(devs_.size(), 0);
    st_->s.seconds.assign(devs_.size(), 0.0);
  }
  std::string label() const override { return "multi_device_map"; }
  type_list input_types() const override { return devs_[0]->input_types(); }
  type_list output_types() const override { return devs_[0]->output_types(); }
  bool in_place() const override { return devs_[0]->in_place(); }
  std::shared_ptr<executable> compile_inline(const std::string& path) const override {
    return std::make_shared<multi_device_exec>(devs_, p_, o_, st_, path);
  }
  multi_device_stats stats() const {
    std::lock_guard<std::mutex> l(st_->m);
    return st_->s;
  }

 private:
  std::vector<std::shared_ptr<device_executor>> devs_;
  balance_policy p_;
  multi_device_options o_;
  std::shared_ptr<md_stats_state> st_;
};

}  // namespace detail

std::string multi_device_stats::str() const {
  std::uint64_t total = 0;
  for (auto r : rows) total += r;
  std::string s = "device shares:";
  char b[64];
  for (std::size_t i = 0; i < devices.size(); ++i) {
    std::snprintf(b, sizeof b, "%.1f%%", total ? 100.0 * double(rows[i]) / double(total) : 0.0);
    s += (i ? ", " : " ") + devices[i] + " " + b;
  }
  s += " (" + policy + ", " + (tuned ? "tuned" : "tuning") + ", " + std::to_string(tuning_executions) +
       " tuning execution(s) of " + std::to_string(units) + " unit(s)";
  if (retunes) s += ", " + std::to_string(retunes) + " re-tuning(s)";
  if (cache_hits) s += ", " + std::to_string(cache_hits) + " from cache";
  return s + ")";
}

node multi_device_map(std::vector<std::shared_ptr<device_executor>> devices, balance_policy policy,
                      multi_device_options o) {
  const std::string where = "multi_device_map";
  if (devices.empty()) throw graph_error(where, "needs at least one device executor");
  for (std::size_t i = 0; i < devices.size(); ++i)
    if (!devices[i]) throw graph_error(where, "device " + std::to_string(i) + " is null");
  const auto& d0 = *devices[0];
  for (std::size_t i = 1; i < devices.size(); ++i) {
    const auto& d = *devices[i];
    auto who = [&](std::size_t k, const device_executor& e) { return "device " + std::to_string(k) + " '" + e.name() + "'"; };
    if (!d.input_types().matches(d0.input_types()))
      throw graph_error(where, who(i, d) + " reads " + d.input_types().str() + " but " + who(0, d0) + " reads " +
                                   d0.input_types().str() + "; every device must run the same leaf");
    if (!d.output_types().matches(d0.output_types()))
      throw graph_error(where, who(i, d) + " writes " + d.output_types().str() + " but " + who(0, d0) +
                                   " writes " + d0.output_types().str() + "; every device must run the same leaf");
    if (d.in_place() != d0.in_place())
      throw graph_error(where, who(i, d) + (d.in_place() ? " is" : " is not") + " in place but " + who(0, d0) +
                                   (d0.in_place() ? " is" : " is not"));
  }
  try {
    balance_tuner check(policy, devices.size());
  } catch (const error& e) {
    throw graph_error(where, e.what());
  }
  return node(std::make_shared<detail::multi_device_node>(std::move(devices), std::move(policy), o));
}

bool is_multi_device_map(const node& n) {
  return dynamic_cast<const detail::multi_device_node*>(n.impl().get()) != nullptr;
}

multi_device_stats device_stats(const node& n) {
  auto* m = dynamic_cast<const detail::multi_device_node*>(n.impl().get());
  if (!m) throw error("device_stats: node '" + n.label() + "' is not a multi_device_map");
  return m->stats();
}

}  // namespace sinew
