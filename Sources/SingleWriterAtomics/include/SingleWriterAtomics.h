// The few atomic operations the library needs, in portable C11.
//
// Why a C target: Apple's `Synchronization` module would raise the deployment
// target to iOS 18 / macOS 15 for one flag, and swift-atomics would be a package
// dependency. <stdatomic.h> exists on every platform Swift runs on, costs one
// header, and the `static inline` functions below inline into Swift callers, so
// a compare-and-exchange here is the same instruction `Atomic` would emit.
// ThreadSanitizer instruments them like any other C11 atomic.

#ifndef SINGLE_WRITER_ATOMICS_H
#define SINGLE_WRITER_ATOMICS_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

/// A 32-bit atomic word. 32 bits because that is what a Linux futex waits on.
typedef struct {
  _Atomic(uint32_t) value;
} sw_atomic_u32;

static inline uint32_t sw_load_relaxed(sw_atomic_u32 *a) {
  return atomic_load_explicit(&a->value, memory_order_relaxed);
}

static inline uint32_t sw_load_acquire(sw_atomic_u32 *a) {
  return atomic_load_explicit(&a->value, memory_order_acquire);
}

static inline void sw_store_release(sw_atomic_u32 *a, uint32_t v) {
  atomic_store_explicit(&a->value, v, memory_order_release);
}

/// Strong CAS with acquire-release ordering; on failure `*expected` is reloaded.
static inline bool sw_cas(sw_atomic_u32 *a, uint32_t *expected, uint32_t desired) {
  return atomic_compare_exchange_strong_explicit(
      &a->value, expected, desired, memory_order_acq_rel, memory_order_relaxed);
}

static inline uint32_t sw_fetch_add(sw_atomic_u32 *a, uint32_t v) {
  return atomic_fetch_add_explicit(&a->value, v, memory_order_acq_rel);
}

static inline uint32_t sw_fetch_sub(sw_atomic_u32 *a, uint32_t v) {
  return atomic_fetch_sub_explicit(&a->value, v, memory_order_acq_rel);
}

static inline uint32_t sw_fetch_or(sw_atomic_u32 *a, uint32_t v) {
  return atomic_fetch_or_explicit(&a->value, v, memory_order_acq_rel);
}

static inline uint32_t sw_fetch_and(sw_atomic_u32 *a, uint32_t v) {
  return atomic_fetch_and_explicit(&a->value, v, memory_order_acq_rel);
}

static inline uint32_t sw_exchange(sw_atomic_u32 *a, uint32_t v) {
  return atomic_exchange_explicit(&a->value, v, memory_order_acq_rel);
}

/// A pointer-sized atomic, for recording which thread owns something.
typedef struct {
  _Atomic(uintptr_t) value;
} sw_atomic_uptr;

static inline uintptr_t sw_uptr_load(sw_atomic_uptr *a) {
  return atomic_load_explicit(&a->value, memory_order_relaxed);
}

static inline void sw_uptr_store(sw_atomic_uptr *a, uintptr_t v) {
  atomic_store_explicit(&a->value, v, memory_order_relaxed);
}

/// Spins briefly, then sleeps while `*a == expected`. May return spuriously:
/// callers re-check their condition in a loop. A futex on Linux, WaitOnAddress
/// on Windows; elsewhere a yield-and-sleep backoff.
void sw_wait(sw_atomic_u32 *a, uint32_t expected);

/// Like `sw_wait`, but gives up after about `nanoseconds`. Returns false on time-out.
bool sw_wait_for(sw_atomic_u32 *a, uint32_t expected, int64_t nanoseconds);

/// Wakes every thread in `sw_wait` on `a`.
void sw_wake_all(sw_atomic_u32 *a);

/// Wakes one thread in `sw_wait` on `a`.
void sw_wake_one(sw_atomic_u32 *a);

/// Writes `message` and a newline to standard error.
void sw_print_error(const char *message);

/// The calling thread's id from the C library; see `sw_current_thread`.
uintptr_t sw_current_thread_slow(void);

/// A non-zero id for the calling thread, unique among live threads, with the low bit
/// clear. The thread pointer (the TLS base) where the compiler exposes it: one
/// instruction instead of a call to `pthread_self`, which matters on paths that cost
/// a few nanoseconds in all.
static inline uintptr_t sw_current_thread(void) {
#if defined(__has_builtin) && !defined(_WIN32)
#if __has_builtin(__builtin_thread_pointer)
  return (uintptr_t)__builtin_thread_pointer();
#else
  return sw_current_thread_slow();
#endif
#else
  return sw_current_thread_slow();
#endif
}

/// A small mutex: 0 free, 1 held, 2 held with sleepers. The uncontended lock
/// and unlock are one atomic instruction each and inline into Swift.
typedef struct {
  sw_atomic_u32 state;
} sw_mutex;

void sw_mutex_lock_slow(sw_mutex *m);

static inline bool sw_mutex_trylock(sw_mutex *m) {
  uint32_t expected = 0;
  return sw_cas(&m->state, &expected, 1);
}

static inline void sw_mutex_lock(sw_mutex *m) {
  if (!sw_mutex_trylock(m)) sw_mutex_lock_slow(m);
}

static inline void sw_mutex_unlock(sw_mutex *m) {
  if (sw_exchange(&m->state, 0) == 2) sw_wake_one(&m->state);
}

/// The synchronization state of one ThreadSafeSingleWriter, in one allocation.
typedef struct {
  /// Writer, queued, writing and waiters bits, plus the reader count.
  sw_atomic_u32 state;
  /// Guards the queue of pending writes.
  sw_mutex queue_lock;
  /// The thread holding the checkout, or 0; only for catching self-deadlock.
  sw_atomic_uptr checkout_thread;
  /// The thread inside a write access, or 0; only for catching self-deadlock.
  sw_atomic_uptr writing_thread;
} sw_writer_sync;

static inline sw_atomic_u32 *sw_writer_state(sw_writer_sync *s) { return &s->state; }
static inline sw_mutex *sw_writer_queue_lock(sw_writer_sync *s) { return &s->queue_lock; }
static inline sw_atomic_uptr *sw_writer_checkout_thread(sw_writer_sync *s) {
  return &s->checkout_thread;
}
static inline sw_atomic_uptr *sw_writer_writing_thread(sw_writer_sync *s) {
  return &s->writing_thread;
}

#endif
