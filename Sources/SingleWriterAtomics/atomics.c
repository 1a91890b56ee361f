#include "SingleWriterAtomics.h"

#include <stdio.h>

#if defined(__linux__)
#include <errno.h>
#include <linux/futex.h>
#include <pthread.h>
#include <sys/syscall.h>
#include <unistd.h>
#elif defined(_WIN32)
#include <windows.h>
#else
#include <pthread.h>
#include <sched.h>
#include <time.h>
#endif

static inline void sw_cpu_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__) || defined(__arm__)
  __asm__ __volatile__("yield");
#endif
}

void sw_wait(sw_atomic_u32 *a, uint32_t expected) {
  // Most waits here are for a few-instruction critical section: spin first.
  for (int i = 0; i < 100; i++) {
    if (sw_load_relaxed(a) != expected) return;
    sw_cpu_relax();
  }
#if defined(__linux__)
  syscall(SYS_futex, &a->value, FUTEX_WAIT_PRIVATE, expected, NULL, NULL, 0);
#elif defined(_WIN32)
  WaitOnAddress((volatile VOID *)&a->value, &expected, sizeof(expected), INFINITE);
#else
  // No portable address-wait on Darwin before macOS 14.4; a short sleep keeps
  // a waiter from burning a core while the holder finishes.
  if (sw_load_relaxed(a) == expected) {
    sched_yield();
    if (sw_load_relaxed(a) == expected) {
      struct timespec ts = {0, 20000};
      nanosleep(&ts, NULL);
    }
  }
#endif
}

bool sw_wait_for(sw_atomic_u32 *a, uint32_t expected, int64_t nanoseconds) {
#if defined(__linux__)
  struct timespec timeout = {nanoseconds / 1000000000, nanoseconds % 1000000000};
  long result =
      syscall(SYS_futex, &a->value, FUTEX_WAIT_PRIVATE, expected, &timeout, NULL, 0);
  return !(result == -1 && errno == ETIMEDOUT);
#elif defined(_WIN32)
  return WaitOnAddress((volatile VOID *)&a->value, &expected, sizeof(expected),
                       (DWORD)(nanoseconds / 1000000)) != 0;
#else
  // The fallback sleeps only microseconds at a time; callers loop and keep time.
  (void)nanoseconds;
  sw_wait(a, expected);
  return true;
#endif
}

void sw_wake_all(sw_atomic_u32 *a) {
#if defined(__linux__)
  syscall(SYS_futex, &a->value, FUTEX_WAKE_PRIVATE, INT32_MAX, NULL, NULL, 0);
#elif defined(_WIN32)
  WakeByAddressAll((PVOID)&a->value);
#else
  (void)a;
#endif
}

void sw_wake_one(sw_atomic_u32 *a) {
#if defined(__linux__)
  syscall(SYS_futex, &a->value, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
#elif defined(_WIN32)
  WakeByAddressSingle((PVOID)&a->value);
#else
  (void)a;
#endif
}

void sw_print_error(const char *message) {
  fputs(message, stderr);
  fputc('\n', stderr);
  fflush(stderr);
}

uintptr_t sw_current_thread_slow(void) {
#if defined(_WIN32)
  return (uintptr_t)GetCurrentThreadId();
#else
  return (uintptr_t)pthread_self();
#endif
}

void sw_mutex_lock_slow(sw_mutex *m) {
  // Classic three-state futex mutex: mark "held with sleepers" before sleeping,
  // so the unlocker knows to wake someone.
  uint32_t seen = sw_exchange(&m->state, 2);
  while (seen != 0) {
    sw_wait(&m->state, 2);
    seen = sw_exchange(&m->state, 2);
  }
}
