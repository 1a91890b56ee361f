// The synchronization state of one ThreadSafeSingleWriter, in one allocation, and the
// pointer-sized atomics its lock-free queue of pending writes needs.

#ifndef SW_WRITER_H
#define SW_WRITER_H

#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "sw_atomics.h"
#include "sw_wait.h"

/// One optimistic read of a value that has no references to count (a "POD" type), for a
/// seqlock: the writer makes `sequence` odd for the length of each write. The copy may
/// race with a write by design, and the unchanged even sequence proves it did not, so
/// ThreadSanitizer is told not to look at it. A reader that fails retries or takes the
/// lock instead; no reference is ever read torn, because there are none.
__attribute__((no_sanitize("thread")))
static inline bool sw_seq_try_copy(sw_atomic_u32 *sequence, void *destination,
                                   const void *source, size_t size) {
  SW_CHAOS();
  uint32_t before = atomic_load_explicit(&sequence->value, memory_order_acquire);
  if (before & 1) return false;
  memcpy(destination, source, size);
  atomic_thread_fence(memory_order_acquire);
  uint32_t after = atomic_load_explicit(&sequence->value, memory_order_relaxed);
  SW_CHAOS();
  return before == after;
}

/// The writer's half: odd before a write access, even after. Only the holder of the
/// write access stores, so no read-modify-write is needed.
static inline void sw_seq_begin_write(sw_atomic_u32 *sequence) {
  SW_SCHED_POINT();
  uint32_t s = atomic_load_explicit(&sequence->value, memory_order_relaxed);
  atomic_store_explicit(&sequence->value, s + 1, memory_order_relaxed);
  atomic_thread_fence(memory_order_release);
}

static inline void sw_seq_end_write(sw_atomic_u32 *sequence) {
  SW_SCHED_POINT();
  uint32_t s = atomic_load_explicit(&sequence->value, memory_order_relaxed);
  atomic_store_explicit(&sequence->value, s + 1, memory_order_release);
}

/// Strong CAS with acquire-release ordering; on failure `*expected` is reloaded.
static inline bool sw_uptr_cas(sw_atomic_uptr *a, uintptr_t *expected, uintptr_t desired) {
  SW_CHAOS();
  bool done = atomic_compare_exchange_strong_explicit(
      &a->value, expected, desired, memory_order_acq_rel, memory_order_acquire);
  SW_CHAOS();
  return done;
}

static inline uintptr_t sw_uptr_exchange(sw_atomic_uptr *a, uintptr_t v) {
  SW_CHAOS();
  uintptr_t old = atomic_exchange_explicit(&a->value, v, memory_order_acq_rel);
  SW_CHAOS();
  return old;
}

static inline uintptr_t sw_uptr_load_acquire(sw_atomic_uptr *a) {
  SW_CHAOS();
  uintptr_t v = atomic_load_explicit(&a->value, memory_order_acquire);
  SW_CHAOS();
  return v;
}

/// Runs `body(context)` on a new detached thread; false if no thread could be made.
bool sw_spawn_detached(void (*body)(void *), void *context);

/// The size of a cache line, or of the unit that the hardware moves between cores:
/// Apple's arm64 cores use 128 bytes, the x86-64 and other arm64 cores we target 64.
#if defined(__APPLE__) && defined(__aarch64__)
#define SW_CACHE_LINE 128
#else
#define SW_CACHE_LINE 64
#endif

/// Two groups, each on a cache line of its own (the allocation is line-aligned, and each
/// group is padded to a line by a union, which Swift imports, unlike `_Alignas`). The
/// holder's group is written on every write access; the inbox's group by every
/// `writeNext` that finds the writer busy. Sharing a line, each side's stores evicted the
/// other's copy, and under contention every queued write paid for the line's moves.
typedef struct {
  union {
  struct {
  /// Checkout, queue, value-lock and observation bits, plus the reader count.
  sw_atomic_u32 state;
  /// Odd while a write access is in progress: lets readers of plain values copy
  /// optimistically, with no read-modify-write.
  sw_atomic_u32 sequence;
  /// Bumped, then woken, when a checkout ends while a `withWriter` is parked.
  sw_atomic_u32 park_sequence;
  /// The generation of the current `writeNext` lend, shifted left by one; bit 0 is set
  /// while the end of a lend is being resolved (kept, or retired).
  sw_atomic_u32 lend_word;
  /// Bumped, with release ordering, whenever a proxy leaves its lender's hands (kept or
  /// retired), and read with acquire ordering by a proxy's `deinit`: this orders the
  /// lender's writes before that `deinit` even for tools that do not see ARC's atomics.
  sw_atomic_u32 proxy_handoff;
  /// How many rounds a blocked `withWriter` spins before it parks, adapted to how often
  /// spinning has paid off; written only when it changes.
  sw_atomic_u32 spin_rounds;
  /// The thread holding the checkout, or 0; only for catching self-deadlock.
  sw_atomic_uptr checkout_thread;
  /// The thread inside a write access, or 0; only for catching self-deadlock.
  sw_atomic_uptr writing_thread;
  /// The task that took the checkout with `checkout()`, or 0; only for a warning.
  sw_atomic_uptr checkout_task;
  };
  char holder_line[SW_CACHE_LINE];
  };

  // The inbox's group: what an enqueuer touches. The holder writes here once per batch.
  union {
  struct {
  /// 1 while writes wait in the container's inbox, set and cleared under `inbox_lock`.
  sw_atomic_uptr inbox;
  /// Guards the container's inbox: held for one append, or one swap by the holder.
  sw_mutex inbox_lock;
  /// 1 once a thread other than the one running the queue has queued a write since the
  /// queue's last batch: only such writes may be handed to a helper thread.
  sw_atomic_u32 foreign_arrivals;
  /// The thread running the queue, with bit 0 set once a nested checkout end handed the
  /// checkout back to it; 0 when no thread runs it.
  sw_atomic_uptr serving_thread;
  };
  char inbox_line[SW_CACHE_LINE];
  };
} sw_ts_sync;

// Each group fits its line, so the inbox's group starts exactly one line in; checked for
// every target by Scripts/cross-compile-c.sh.
_Static_assert(offsetof(sw_ts_sync, inbox) == SW_CACHE_LINE, "holder group overflows");
_Static_assert(sizeof(sw_ts_sync) == 2 * SW_CACHE_LINE, "inbox group overflows");

static inline sw_atomic_u32 *sw_ts_state(sw_ts_sync *s) { return &s->state; }
static inline sw_atomic_u32 *sw_ts_sequence(sw_ts_sync *s) { return &s->sequence; }
static inline sw_atomic_u32 *sw_ts_park_sequence(sw_ts_sync *s) { return &s->park_sequence; }
static inline sw_atomic_u32 *sw_ts_spin_rounds(sw_ts_sync *s) { return &s->spin_rounds; }
static inline sw_atomic_uptr *sw_ts_inbox(sw_ts_sync *s) { return &s->inbox; }
static inline sw_mutex *sw_ts_inbox_lock(sw_ts_sync *s) { return &s->inbox_lock; }
static inline sw_atomic_uptr *sw_ts_checkout_thread(sw_ts_sync *s) { return &s->checkout_thread; }
static inline sw_atomic_uptr *sw_ts_writing_thread(sw_ts_sync *s) { return &s->writing_thread; }
static inline sw_atomic_uptr *sw_ts_serving_thread(sw_ts_sync *s) { return &s->serving_thread; }
static inline sw_atomic_uptr *sw_ts_checkout_task(sw_ts_sync *s) { return &s->checkout_task; }
static inline sw_atomic_u32 *sw_ts_lend_word(sw_ts_sync *s) { return &s->lend_word; }
static inline sw_atomic_u32 *sw_ts_foreign_arrivals(sw_ts_sync *s) {
  return &s->foreign_arrivals;
}
static inline sw_atomic_u32 *sw_ts_proxy_handoff(sw_ts_sync *s) { return &s->proxy_handoff; }

#endif
