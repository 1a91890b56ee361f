// Thread identity, yielding and the clock.

#include "SingleWriterAtomics.h"

#include <stdatomic.h>
#include <stdlib.h>

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

_Thread_local uintptr_t sw_thread_serial;

/// The last serial handed out.
static _Atomic(uintptr_t) sw_thread_serials;

uintptr_t sw_assign_thread_serial(void) {
  uintptr_t serial =
      (atomic_fetch_add_explicit(&sw_thread_serials, 1, memory_order_relaxed) + 1) << 1;
  sw_thread_serial = serial;
  return serial;
}

_Thread_local void *sw_lock_order_stack_pointer;

/// The marks past `SW_READING_DEPTH`, and how many the buffer holds; the buffer is also in
/// `deep_slot`, whose destructor frees it when the thread exits.
static _Thread_local void **sw_reading_deep;
static _Thread_local uint32_t sw_reading_deep_capacity;
static _Atomic(uintptr_t) deep_slot;

void sw_reading_push_deep(void *container, uint32_t depth) {
  uint32_t index = depth - SW_READING_DEPTH;
  if (index >= sw_reading_deep_capacity) {
    uint32_t capacity = sw_reading_deep_capacity ? sw_reading_deep_capacity * 2 : 16;
    void **grown = realloc(sw_reading_deep, capacity * sizeof(void *));
    if (!grown) {
      sw_print_error("SingleWriter: out of memory for the marks of nested read { } closures");
      abort();
    }
    uintptr_t slot = atomic_load_explicit(&deep_slot, memory_order_acquire);
    if (slot == 0) {
      uintptr_t made = sw_thread_slot_create(free);
      uintptr_t expected = 0;
      // Another thread may have made one first: use that one (this one stays unused).
      if (!atomic_compare_exchange_strong(&deep_slot, &expected, made)) made = expected;
      slot = made;
    }
    sw_thread_slot_set(slot, grown);
    sw_reading_deep = grown;
    sw_reading_deep_capacity = capacity;
  }
  sw_reading_deep[index] = container;
}

bool sw_reading_contains(const void *container) {
  uint32_t depth = sw_reading.depth;
  uint32_t inline_depth = depth < SW_READING_DEPTH ? depth : SW_READING_DEPTH;
  for (uint32_t i = 0; i < inline_depth; i++) {
    if (sw_reading.containers[i] == container) return true;
  }
  for (uint32_t i = SW_READING_DEPTH; i < depth; i++) {
    if (sw_reading_deep[i - SW_READING_DEPTH] == container) return true;
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
