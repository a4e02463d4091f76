#pragma once
// Internal: the `submit_backup` of the `tbb`, `steal` and `deal` policies for
// threads outside the scheduler. A backup only checks work its submitter
// will most likely do itself (a graph run's start, which run_future::get()
// runs on the caller), so it runs after a grace period on a thread of its
// own instead of waking a worker at once: a worker woken for nothing spins
// or parks beside the caller, on a core the caller's work (a CPU OpenCL
// device's threads) may need.
//
//   backup_timer timer;                 // a member of the policy's state
//   timer.start();                      // last in the policy's constructor
//   timer.submit_backup(sched, on_worker, check);     // the policy's submit_backup
//   timer.stop();                       // first thing in the destructor
#include <chrono>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>
#include <vector>

#include <sinew/schedulers/scheduler.hpp>
#include <sinew/schedulers/task_function.hpp>

namespace sinew::detail::workers {

class backup_timer {
 public:
  using clock = std::chrono::steady_clock;
  /// How long a check waits: a caller of get() takes its run's start within
  /// microseconds.
  static constexpr clock::duration grace = std::chrono::microseconds(100);
  /// While checks came within `linger`, the thread wakes every `tick`
  /// instead of sleeping until add() wakes it: add() then makes no system
  /// call (a futex wake, an interrupt to another core: microseconds under a
  /// hypervisor, on the caller's path). A run nobody waits for therefore
  /// starts within about `tick` + `grace`.
  static constexpr clock::duration tick = std::chrono::milliseconds(1);
  static constexpr clock::duration linger = std::chrono::milliseconds(50);

  backup_timer() = default;
  backup_timer(const backup_timer&) = delete;
  backup_timer& operator=(const backup_timer&) = delete;
  ~backup_timer() { stop(); }

  /// Starts the timer's thread: last in the owner's constructor, so that
  /// the thread sees the owner whole (ThreadSanitizer included, which does
  /// not see oneTBB's hand-offs between the owner's maker and its workers).
  void start();
  /// `s.submit_backup(fn)` of the policy `s` owning this timer: from one of
  /// its workers (`on_worker`) a plain submit, which that worker's own wait
  /// takes; from any other thread add().
  void submit_backup(scheduler& s, bool on_worker, task_function fn);
  /// Runs the checks still waiting, now, on the calling thread, and joins
  /// the timer's thread: the owner's destructor calls it while the owner
  /// can still take what the checks submit. submit_backup() must not race
  /// with it.
  void stop();

 private:
  /// Runs `fn` on the timer's thread once `grace` has passed; `fn` must not
  /// throw.
  void add(task_function fn);
  struct entry {
    clock::time_point due;
    task_function fn;
  };
  void loop();
  void run_batch(std::unique_lock<std::mutex>& lk);  // runs and empties batch_, unlocked meanwhile

  std::mutex m_;
  std::condition_variable cv_;
  std::deque<entry> q_;  // in order of `due` (a constant delay after add)
  std::vector<task_function> batch_;  // the checks due, run by one thread at a time
  bool idle_ = false;  // the thread waits without a deadline: add() notifies
  clock::time_point last_add_{};  // when add() was last called
  bool stopping_ = false;
  std::thread th_;
};

}  // namespace sinew::detail::workers
