// Who is running, and when: thread identity, yielding, a monotonic clock.

#ifndef SW_THREAD_H
#define SW_THREAD_H

#include <stdbool.h>
#include <stdint.h>

// The thread-pointer builtin is used only where what it reads has been checked: on
// Linux (glibc or musl) it is %fs:0 on x86_64, the TCB's pointer to itself, and
// TPIDR_EL0 on aarch64, the thread pointer. On Apple arm64, TPIDR_EL0 holds the CPU
// number, and x86_64 Darwin does not implement the builtin; so everywhere else the id
// comes from the C library. Scripts/cross-compile-c.sh checks the Apple assembly.
#if defined(__linux__) && !defined(__ANDROID__) && (defined(__x86_64__) || defined(__aarch64__))
#define SW_THREAD_ID_FROM_THREAD_POINTER 1
#elif !defined(_WIN32)
#include <pthread.h>
#endif

/// The calling thread's id from the C library (`pthread_self()`, or on Windows
/// `GetCurrentThreadId() << 1`); see `sw_current_thread`.
uintptr_t sw_current_thread_slow(void);

/// A non-zero id for the calling thread, unique among live threads and stable for the
/// thread's life, with the low bit clear, so callers may tag it.
///
/// One instruction on Linux x86_64 and aarch64 (the thread pointer), an inlined
/// `pthread_self()` call on Apple and other POSIX systems (a `pthread_t` there is a
/// pointer to the aligned thread structure), a call on Windows.
static inline uintptr_t sw_current_thread(void) {
#if defined(SW_THREAD_ID_FROM_THREAD_POINTER)
  return (uintptr_t)__builtin_thread_pointer();
#elif !defined(_WIN32)
  return (uintptr_t)pthread_self();
#else
  return sw_current_thread_slow();
#endif
}

/// The calling thread's serial number: never 0, low bit clear, and never given to another
/// thread while the process runs, unlike `sw_current_thread()`, which a new thread may be
/// given once this one exits. For a holder that may outlive its thread (a proxy taken
/// outside any task). One thread-local load, after the first call on each thread.
static inline uintptr_t sw_current_thread_serial(void) {
  extern _Thread_local uintptr_t sw_thread_serial;  // thread.c
  extern uintptr_t sw_assign_thread_serial(void);
  uintptr_t serial = sw_thread_serial;
  return serial != 0 ? serial : sw_assign_thread_serial();
}

/// How many nested `read { }` closures a thread's marks name inline; deeper ones go to a
/// buffer of the thread's own, grown as needed and freed when the thread exits.
#define SW_READING_DEPTH 8

/// The containers whose `read { }` closures the calling thread is inside, innermost last.
typedef struct sw_reading_marks {
  uint32_t depth;
  void *containers[SW_READING_DEPTH];
} sw_reading_marks;

/// Marks the calling thread as inside a `read { }` closure of the container whose
/// synchronization block is `container`, until the matching `sw_reading_pop`. A write to
/// that container from inside the closure on the same thread would wait forever for the
/// read to end; the waiting paths ask `sw_reading_contains` to stop it with a message.
/// Every enclosing read keeps its mark, so a write to the outer container from inside a
/// nested read of another is caught too. Thread-local: concurrent readers keep their own.
static inline void sw_reading_push(void *container) {
  extern _Thread_local sw_reading_marks sw_reading;  // thread.c
  extern void sw_reading_push_deep(void *container, uint32_t depth);
  uint32_t depth = sw_reading.depth;
  if (depth < SW_READING_DEPTH) {
    sw_reading.containers[depth] = container;
  } else {
    sw_reading_push_deep(container, depth);
  }
  sw_reading.depth = depth + 1;
}

/// Ends the innermost mark from `sw_reading_push`.
static inline void sw_reading_pop(void) {
  extern _Thread_local sw_reading_marks sw_reading;
  sw_reading.depth -= 1;
}

/// How many `read { }` closures the calling thread is inside.
static inline uint32_t sw_reading_depth(void) {
  extern _Thread_local sw_reading_marks sw_reading;
  return sw_reading.depth;
}

/// Whether the calling thread is inside a `read { }` closure of `container`.
bool sw_reading_contains(const void *container);

/// The calling thread's stack of held locks for debug builds' lock-order checking
/// (RaceDetector/LockOrderCheck.swift), or NULL until `sw_set_lock_order_stack`: one
/// thread-local load, where a thread slot costs a call. Its owner frees the stack through
/// a thread slot's destructor, which also clears this.
static inline void *sw_lock_order_stack(void) {
  extern _Thread_local void *sw_lock_order_stack_pointer;  // thread.c
  return sw_lock_order_stack_pointer;
}

static inline void sw_set_lock_order_stack(void *stack) {
  extern _Thread_local void *sw_lock_order_stack_pointer;
  sw_lock_order_stack_pointer = stack;
}

/// Gives up the rest of the calling thread's time slice (`sched_yield`,
/// `SwitchToThread` on Windows).
void sw_yield_thread(void);

/// A monotonic clock in nanoseconds, for spin budgets and timeouts; its zero is
/// arbitrary. `CLOCK_MONOTONIC`, `CLOCK_UPTIME_RAW` on Apple, `QueryPerformanceCounter`
/// on Windows.
uint64_t sw_monotonic_ns(void);

#endif
