#pragma once
// Allocation of the steal and deal schedulers' task objects: oneTBB's
// scalable allocator, and a per-thread cache of freed tasks.
#include <cstddef>
#include <new>

#include <oneapi/tbb/scalable_allocator.h>

namespace sinew::detail::workers {

// Base of the task objects. Outside threads allocate the tasks they submit
// and workers free them; glibc's arenas would serialise that traffic on one
// lock. Sanitizer builds keep the default allocator: ThreadSanitizer cannot
// see the uninstrumented allocator's hand-over of reused memory, nor
// AddressSanitizer its frees.
struct scalable_new {
#if !defined(__SANITIZE_THREAD__) && !defined(__SANITIZE_ADDRESS__)
  static void* operator new(std::size_t n) {
    if (void* p = scalable_malloc(n)) return p;
    throw std::bad_alloc();
  }
  static void operator delete(void* p) noexcept { scalable_free(p); }
#endif
};

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
