// sw_wait / sw_wake and the mutex's slow path, on each platform's way of blocking.

#if defined(__linux__) && !defined(_GNU_SOURCE)
#define _GNU_SOURCE
#endif

#include "SingleWriterAtomics.h"

#include <errno.h>
#include <stddef.h>

// Which primitive: the parking lot is compiled wherever it may be needed.
#if defined(SINGLEWRITER_PORTABLE_WAIT)
#define SW_USE_PARKING_LOT 1
#elif defined(__linux__)
#define SW_USE_FUTEX 1
#elif defined(_WIN32)
#define SW_USE_WAIT_ON_ADDRESS 1
#elif defined(__APPLE__)
#define SW_USE_OS_SYNC 1
#define SW_USE_PARKING_LOT 1
#else
#define SW_USE_PARKING_LOT 1
#endif

#if defined(_WIN32)
#include <windows.h>
#else
#include <pthread.h>
#include <time.h>
#endif

#if defined(SW_USE_FUTEX)
#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>
#endif

// MARK: - Apple: os_sync_wait_on_address, when the OS has it

#if defined(SW_USE_OS_SYNC)
// Declared here under our own names, bound to the real symbols, so this compiles with
// any SDK header set and does not clash with <os/os_sync_wait_on_address.h>. Weak: on an
// OS older than macOS 14.4 / iOS 17.4 / tvOS 17.4 / watchOS 10.4 they are null, and the
// parking lot takes over. Linking needs an SDK that lists them (Xcode 15.3 or later;
// Swift 6 needs Xcode 16). Flags 0 are OS_SYNC_*_NONE: process-private waits.
extern int sw_os_sync_wait(void *addr, uint64_t value, size_t size, uint32_t flags)
    __asm__("_os_sync_wait_on_address") __attribute__((weak_import));
extern int sw_os_sync_wait_with_timeout(void *addr, uint64_t value, size_t size,
                                        uint32_t flags, uint32_t clockid, uint64_t timeout_ns)
    __asm__("_os_sync_wait_on_address_with_timeout") __attribute__((weak_import));
extern int sw_os_sync_wake_any(void *addr, size_t size, uint32_t flags)
    __asm__("_os_sync_wake_by_address_any") __attribute__((weak_import));
extern int sw_os_sync_wake_all(void *addr, size_t size, uint32_t flags)
    __asm__("_os_sync_wake_by_address_all") __attribute__((weak_import));

enum { SW_OS_CLOCK_MACH_ABSOLUTE_TIME = 32 };

static bool sw_has_os_sync(void) {
  return sw_os_sync_wait != NULL && sw_os_sync_wait_with_timeout != NULL &&
         sw_os_sync_wake_any != NULL && sw_os_sync_wake_all != NULL;
}
#endif

// MARK: - The parking lot
//
// A waiter puts a node for its address on a bucket's list and sleeps on the bucket's
// condition variable until a waker marks its node, or its time runs out. Wakers mark
// nodes for their address only, so wake_one wakes exactly one waiter of that address,
// as a futex does; other waiters in the bucket go back to sleep.

#if defined(SW_USE_PARKING_LOT)

#if defined(_WIN32)
typedef SRWLOCK sw_plock;
typedef CONDITION_VARIABLE sw_pcond;
#else
typedef pthread_mutex_t sw_plock;
typedef pthread_cond_t sw_pcond;
#endif

typedef struct sw_park_node {
  const void *address;
  struct sw_park_node *next;
  bool woken;
} sw_park_node;

typedef struct {
  _Alignas(64) sw_plock lock;  // a cache line or more per bucket: no false sharing
  sw_pcond cond;
  /// Nodes on `waiting`; read without the lock so that a wake with no waiter is free.
  _Atomic(uint32_t) count;
  sw_park_node *waiting;
} sw_park_bucket;

enum { SW_PARK_BUCKETS = 64 };

static sw_park_bucket sw_park_buckets[SW_PARK_BUCKETS];

#if defined(_WIN32)
// SRWLOCK_INIT and CONDITION_VARIABLE_INIT are all zero: static storage is ready.
static void sw_park_init(void) {}
static void sw_plock_lock(sw_plock *l) { AcquireSRWLockExclusive(l); }
static void sw_plock_unlock(sw_plock *l) { ReleaseSRWLockExclusive(l); }
static void sw_pcond_broadcast(sw_pcond *c) { WakeAllConditionVariable(c); }
static void sw_pcond_wait(sw_pcond *c, sw_plock *l, int64_t nanoseconds) {
  DWORD ms = INFINITE;
  if (nanoseconds >= 0) {
    int64_t rounded = (nanoseconds + 999999) / 1000000;
    ms = rounded >= (int64_t)INFINITE ? INFINITE - 1 : (DWORD)rounded;
  }
  SleepConditionVariableSRW(c, l, ms, 0);
}
#else
static pthread_once_t sw_park_once = PTHREAD_ONCE_INIT;

static void sw_park_init_buckets(void) {
  pthread_condattr_t attributes;
  pthread_condattr_init(&attributes);
#if !defined(__APPLE__)
  // Timeouts on the monotonic clock: a wall-clock step must not stretch or cut them.
  // Apple has no such attribute; it waits with a relative time instead.
  pthread_condattr_setclock(&attributes, CLOCK_MONOTONIC);
#endif
  for (int i = 0; i < SW_PARK_BUCKETS; i++) {
    pthread_mutex_init(&sw_park_buckets[i].lock, NULL);
    pthread_cond_init(&sw_park_buckets[i].cond, &attributes);
  }
  pthread_condattr_destroy(&attributes);
}

static void sw_park_init(void) { pthread_once(&sw_park_once, sw_park_init_buckets); }
static void sw_plock_lock(sw_plock *l) { pthread_mutex_lock(l); }
static void sw_plock_unlock(sw_plock *l) { pthread_mutex_unlock(l); }
static void sw_pcond_broadcast(sw_pcond *c) { pthread_cond_broadcast(c); }

/// Sleeps until signalled, or for at most `nanoseconds` if that is not negative.
static void sw_pcond_wait(sw_pcond *c, sw_plock *l, int64_t nanoseconds) {
  if (nanoseconds < 0) {
    pthread_cond_wait(c, l);
    return;
  }
#if defined(__APPLE__)
  struct timespec relative = {(time_t)(nanoseconds / 1000000000), (long)(nanoseconds % 1000000000)};
  pthread_cond_timedwait_relative_np(c, l, &relative);
#else
  uint64_t deadline = sw_monotonic_ns() + (uint64_t)nanoseconds;
  struct timespec absolute = {(time_t)(deadline / 1000000000u), (long)(deadline % 1000000000u)};
  pthread_cond_timedwait(c, l, &absolute);
#endif
}
#endif

static sw_park_bucket *sw_park_bucket_for(const void *address) {
  // Fibonacci hashing of the word's address; the low 2 bits are always 0.
  uint64_t key = (uint64_t)(uintptr_t)address >> 2;
  return &sw_park_buckets[(key * 0x9E3779B97F4A7C15u) >> 58];
}

/// Sleeps while `*a == expected` until woken; `nanoseconds < 0` waits without a
/// limit. Returns false only if the time ran out first.
static bool sw_park(sw_atomic_u32 *a, uint32_t expected, int64_t nanoseconds) {
  sw_park_init();
  sw_park_bucket *bucket = sw_park_bucket_for(a);
  sw_park_node node = {a, NULL, false};
  uint64_t deadline = nanoseconds >= 0 ? sw_monotonic_ns() + (uint64_t)nanoseconds : 0;
  bool woken = true;

  sw_plock_lock(&bucket->lock);
  // Publish the waiter, then read the word: with the fence in sw_unpark, either the
  // waker sees this count or this load sees the waker's new value.
  atomic_fetch_add_explicit(&bucket->count, 1, memory_order_seq_cst);
  if (atomic_load_explicit(&a->value, memory_order_seq_cst) == expected) {
    node.next = bucket->waiting;
    bucket->waiting = &node;
    while (!node.woken) {
      int64_t left = -1;
      if (nanoseconds >= 0) {
        uint64_t now = sw_monotonic_ns();
        if (now >= deadline) break;
        left = (int64_t)(deadline - now);
      }
      sw_pcond_wait(&bucket->cond, &bucket->lock, left);
    }
    woken = node.woken;
    if (!woken) {
      // Timed out: unlink ourselves; a waker that marked us has already unlinked us.
      for (sw_park_node **link = &bucket->waiting; *link; link = &(*link)->next) {
        if (*link == &node) {
          *link = node.next;
          break;
        }
      }
    }
  }
  atomic_fetch_sub_explicit(&bucket->count, 1, memory_order_relaxed);
  sw_plock_unlock(&bucket->lock);
  return woken;
}

static void sw_unpark(sw_atomic_u32 *a, bool all) {
  sw_park_bucket *bucket = sw_park_bucket_for(a);
  // Pairs with the seq_cst increment in sw_park: the caller changed the word before
  // calling, so a waiter not counted here will see that change and not sleep.
  atomic_thread_fence(memory_order_seq_cst);
  if (atomic_load_explicit(&bucket->count, memory_order_relaxed) == 0) return;
  sw_park_init();
  bool any = false;
  sw_plock_lock(&bucket->lock);
  for (sw_park_node **link = &bucket->waiting; *link;) {
    sw_park_node *node = *link;
    if (node->address == a) {
      *link = node->next;
      node->woken = true;
      any = true;
      if (!all) break;
    } else {
      link = &node->next;
    }
  }
  // One condition variable per bucket: wake its sleepers, the unmarked ones sleep again.
  if (any) sw_pcond_broadcast(&bucket->cond);
  sw_plock_unlock(&bucket->lock);
}
#endif

// MARK: - The public functions

#if defined(SINGLEWRITER_CHAOS)
bool sw_chaos_spurious_wake(void);
#endif

/// Sleeps on `a` with the platform primitive; `nanoseconds < 0` waits without a limit.
/// Returns false only on time-out.
static bool sw_block(sw_atomic_u32 *a, uint32_t expected, int64_t nanoseconds) {
#if defined(SINGLEWRITER_CHAOS)
  // A wait may return spuriously: make it so now and then, to test every caller's loop.
  if (sw_chaos_spurious_wake()) return true;
#endif
#if defined(SW_USE_FUTEX)
  struct timespec timeout = {(time_t)(nanoseconds / 1000000000), (long)(nanoseconds % 1000000000)};
  long result = syscall(SYS_futex, &a->value, FUTEX_WAIT_PRIVATE, expected,
                        nanoseconds >= 0 ? &timeout : NULL, NULL, 0);
  return !(result == -1 && errno == ETIMEDOUT);
#elif defined(SW_USE_WAIT_ON_ADDRESS)
  DWORD ms = INFINITE;
  if (nanoseconds >= 0) {
    int64_t rounded = (nanoseconds + 999999) / 1000000;  // never 0 for a short wait
    ms = rounded >= (int64_t)INFINITE ? INFINITE - 1 : (DWORD)rounded;
  }
  if (WaitOnAddress((volatile VOID *)&a->value, &expected, sizeof(expected), ms)) return true;
  return GetLastError() != ERROR_TIMEOUT;
#else
#if defined(SW_USE_OS_SYNC)
  if (sw_has_os_sync()) {
    int result = nanoseconds >= 0
                     ? sw_os_sync_wait_with_timeout(&a->value, expected, sizeof(uint32_t), 0,
                                                    SW_OS_CLOCK_MACH_ABSOLUTE_TIME,
                                                    (uint64_t)nanoseconds)
                     : sw_os_sync_wait(&a->value, expected, sizeof(uint32_t), 0);
    return !(result < 0 && errno == ETIMEDOUT);
  }
#endif
  return sw_park(a, expected, nanoseconds);
#endif
}

/// The one tuning this layer owns (the Swift side's are in HandOffPolicy.swift): how many
/// pauses `sw_wait` spins before it sleeps. Its callers wait for a few-instruction
/// critical section (a lend being resolved, a claimed checkout being handed over), which
/// usually ends within that, sparing a system call on each side.
enum { SW_WAIT_SPINS = 100 };

void sw_wait(sw_atomic_u32 *a, uint32_t expected) {
#if defined(SINGLEWRITER_SCHED)
  if (sw_sched_registered()) {
    sw_sched_wait(a, expected, -1);
    return;
  }
#endif
  for (int i = 0; i < SW_WAIT_SPINS; i++) {
    if (sw_load_relaxed(a) != expected) return;
    sw_yield_cpu();
  }
  SW_CHAOS();
  sw_block(a, expected, -1);
  SW_CHAOS();
}

bool sw_wait_for(sw_atomic_u32 *a, uint32_t expected, int64_t nanoseconds) {
  if (nanoseconds < 0) nanoseconds = 0;
#if defined(SINGLEWRITER_SCHED)
  if (sw_sched_registered()) return sw_sched_wait(a, expected, nanoseconds);
#endif
  SW_CHAOS();
  bool woken = sw_block(a, expected, nanoseconds);
  SW_CHAOS();
  return woken;
}

void sw_wake_all(sw_atomic_u32 *a) {
#if defined(SINGLEWRITER_SCHED)
  if (sw_sched_registered()) {
    sw_sched_wake(a, true);
    return;
  }
#endif
  SW_CHAOS();
#if defined(SW_USE_FUTEX)
  syscall(SYS_futex, &a->value, FUTEX_WAKE_PRIVATE, INT32_MAX, NULL, NULL, 0);
#elif defined(SW_USE_WAIT_ON_ADDRESS)
  WakeByAddressAll((PVOID)&a->value);
#else
#if defined(SW_USE_OS_SYNC)
  if (sw_has_os_sync()) {
    sw_os_sync_wake_all(&a->value, sizeof(uint32_t), 0);  // ENOENT: nobody waited
    SW_CHAOS();
    return;
  }
#endif
  sw_unpark(a, true);
#endif
  SW_CHAOS();
}

void sw_wake_one(sw_atomic_u32 *a) {
#if defined(SINGLEWRITER_SCHED)
  if (sw_sched_registered()) {
    sw_sched_wake(a, false);
    return;
  }
#endif
  SW_CHAOS();
#if defined(SW_USE_FUTEX)
  syscall(SYS_futex, &a->value, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
#elif defined(SW_USE_WAIT_ON_ADDRESS)
  WakeByAddressSingle((PVOID)&a->value);
#else
#if defined(SW_USE_OS_SYNC)
  if (sw_has_os_sync()) {
    sw_os_sync_wake_any(&a->value, sizeof(uint32_t), 0);
    SW_CHAOS();
    return;
  }
#endif
  sw_unpark(a, false);
#endif
  SW_CHAOS();
}

const char *sw_wait_primitive(void) {
#if defined(SW_USE_FUTEX)
  return "futex";
#elif defined(SW_USE_WAIT_ON_ADDRESS)
  return "WaitOnAddress";
#else
#if defined(SW_USE_OS_SYNC)
  if (sw_has_os_sync()) return "os_sync_wait_on_address";
#endif
  return "parking lot";
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
