// Thread identity, yielding and the clock.

#include "SingleWriterAtomics.h"

#if defined(_WIN32)
#include <windows.h>
#else
#include <pthread.h>
#include <sched.h>
#include <time.h>
#endif

uintptr_t sw_current_thread_slow(void) {
#if defined(_WIN32)
  // Shifted so that the low bit stays free for callers, as on every other platform.
  return (uintptr_t)GetCurrentThreadId() << 1;
#else
  return (uintptr_t)pthread_self();
#endif
}

_Thread_local sw_reading_marks sw_reading;

bool sw_reading_contains(const void *container) {
  uint32_t depth = sw_reading.depth < SW_READING_DEPTH ? sw_reading.depth : SW_READING_DEPTH;
  for (uint32_t i = 0; i < depth; i++) {
    if (sw_reading.containers[i] == container) return true;
  }
  return false;
}

void sw_yield_thread(void) {
#if defined(SINGLEWRITER_SCHED)
  if (sw_sched_yield()) return;
#endif
#if defined(_WIN32)
  SwitchToThread();
#else
  sched_yield();
#endif
}

uint64_t sw_monotonic_ns(void) {
#if defined(SINGLEWRITER_SCHED)
  if (sw_sched_registered()) return sw_sched_now();  // virtual time
#endif
#if defined(_WIN32)
  LARGE_INTEGER frequency, now;  // the frequency is fixed at boot and cheap to read
  QueryPerformanceFrequency(&frequency);
  QueryPerformanceCounter(&now);
  uint64_t ticks = (uint64_t)now.QuadPart, hz = (uint64_t)frequency.QuadPart;
  return ticks / hz * 1000000000u + ticks % hz * 1000000000u / hz;
#elif defined(__APPLE__)
  return clock_gettime_nsec_np(CLOCK_UPTIME_RAW);
#else
  struct timespec now;
  clock_gettime(CLOCK_MONOTONIC, &now);
  return (uint64_t)now.tv_sec * 1000000000u + (uint64_t)now.tv_nsec;
#endif
}
