#pragma once
// Allocation of the steal and deal schedulers' task objects: oneTBB's
// scalable allocator, and a per-thread cache of freed tasks.
#include <cstddef>
#include <new>

#include <sinew/detail/scalable_new.hpp>

namespace sinew::detail::workers {

// Base of the task objects: outside threads allocate the tasks they submit
// and workers free them.
using detail::scalable_new;

// A per-thread cache of task objects, so that the steady state allocates
// nothing per task. A task is freed by the thread that ran it, which may not
// be the one that allocated it; caches are bounded, the excess is deleted.
// Task needs `Task* next_free` and `void recycle()` (clears per-use state).
//
//   thread_local task_cache<task> cache;
//   task* t = cache.get();   // ... run it ...   cache.put(t);
template <class Task>
struct task_cache {
  static constexpr unsigned cap = 4096;
  Task* head = nullptr;
  unsigned n = 0;
  ~task_cache() {
    while (head) {
      Task* t = head;
      head = t->next_free;
      delete t;
    }
  }
  Task* get() {
    if (!head) return new Task;
    Task* t = head;
    head = t->next_free;
    --n;
    return t;
  }
  void put(Task* t) noexcept {
    if (n >= cap) {
      delete t;
      return;
    }
    t->recycle();
    t->next_free = head;
    head = t;
    ++n;
  }
};

}  // namespace sinew::detail::workers
