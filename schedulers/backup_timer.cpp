// The grace-period thread of submit_backup (workers/backup_timer.hpp).
#include "workers/backup_timer.hpp"

#include <string>
#include <utility>

#include <sinew/engine/error.hpp>

namespace sinew::detail::workers {

void backup_timer::start() { th_ = std::thread([this] { loop(); }); }

void backup_timer::submit_backup(scheduler& s, bool on_worker, task_function fn) {
  if (!fn) throw error(std::string(s.name()) + "_scheduler::submit_backup: empty function");
  if (on_worker) return s.submit(std::move(fn));
  add(std::move(fn));
}

void backup_timer::add(task_function fn) {
  std::unique_lock<std::mutex> lk(m_);
  last_add_ = clock::now();
  q_.push_back({last_add_ + grace, std::move(fn)});
  // A thread asleep until a deadline wakes in time for this check (by its
  // tick at the latest); one asleep without a deadline needs waking.
  if (idle_) {
    idle_ = false;
    lk.unlock();
    cv_.notify_one();
  }
}

void backup_timer::loop() {
  std::unique_lock<std::mutex> lk(m_);
  // After a round of checks the thread sleeps at least `grace`, so runs
  // started back to back wake it about once per `grace`, not once per run.
  clock::time_point rest_until = clock::now();
  while (!stopping_) {
    const clock::time_point now = clock::now();
    if (!q_.empty() && q_.front().due <= now && rest_until <= now) {
      while (!q_.empty() && q_.front().due <= now) {
        batch_.push_back(std::move(q_.front().fn));
        q_.pop_front();
      }
      run_batch(lk);
      rest_until = now + grace;
    } else if (!q_.empty()) {
      cv_.wait_until(lk, std::max(q_.front().due, rest_until));
    } else if (now < last_add_ + linger) {
      cv_.wait_until(lk, std::min(now + tick, last_add_ + linger));
    } else {
      idle_ = true;
      cv_.wait(lk, [&] { return !idle_ || stopping_; });
    }
  }
}

void backup_timer::stop() {
  std::unique_lock<std::mutex> lk(m_);
  if (!th_.joinable()) return;
  stopping_ = true;
  lk.unlock();
  cv_.notify_one();
  th_.join();  // after any check it was running
  lk.lock();
  for (entry& e : q_) batch_.push_back(std::move(e.fn));
  q_.clear();
  run_batch(lk);
}

void backup_timer::run_batch(std::unique_lock<std::mutex>& lk) {
  // Unlocked once for the whole batch: add() would otherwise wait for the
  // lock, and wake this thread, once per check.
  lk.unlock();
  for (task_function& fn : batch_) {
    fn();
    fn.reset();  // its captures go before stop() can return
  }
  batch_.clear();
  lk.lock();
}

}  // namespace sinew::detail::workers
