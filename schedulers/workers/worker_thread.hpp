#pragma once
// The start of a steal or deal worker thread: its name and its core.
#include <cstdio>

#if defined(__linux__)
#include <pthread.h>
#include <sched.h>
#endif

namespace sinew::detail::workers {

// Names the calling thread "sinew-<policy>-<index>" (what top and perf
// show) and, when `cpu` >= 0, binds it to that cpu. Failures are ignored:
// a restricted cpuset or a missing permission leaves the thread unpinned.
//
//   workers::setup_thread("steal", w.index, pin ? w.cpu : -1);
inline void setup_thread(const char* policy, unsigned index, int cpu) noexcept {
#if defined(__linux__)
  if (cpu >= 0 && cpu < CPU_SETSIZE) {
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    (void)pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
  }
  char name[16];
  std::snprintf(name, sizeof name, "sinew-%s-%u", policy, index);
  (void)pthread_setname_np(pthread_self(), name);
#else
  (void)policy, (void)index, (void)cpu;
#endif
}

}  // namespace sinew::detail::workers
