// C11 atomics on the word sizes the library needs, plus the chaos hook.
//
// Why C: Apple's `Synchronization` module would raise the deployment target to iOS 18 /
// macOS 15 for one flag, and swift-atomics would be a package dependency. <stdatomic.h>
// exists everywhere Swift runs, and these `static inline` functions inline into Swift
// callers, so a compare-and-exchange here is the instruction `Atomic` would emit.
// ThreadSanitizer instruments them like any other C11 atomic.

#ifndef SW_ATOMICS_H
#define SW_ATOMICS_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

// Chaos mode (-DSINGLEWRITER_CHAOS): every synchronizing operation below may yield the
// thread or spin a few random iterations before and after it, to shake out
// interleavings that two cores rarely produce. Without the define `SW_CHAOS()` is
// nothing, so the fast paths compile exactly as they would without it.
//
// Scheduler mode (-DSINGLEWRITER_SCHED, see sw_sched.h) makes the same places scheduling
// points, and `SW_SCHED_POINT()` marks the few that chaos mode leaves alone (plain
// seqlock stores, the reference-count read).
#if defined(SINGLEWRITER_SCHED)
#include "sw_sched.h"
#define SW_CHAOS() sw_sched_point()
#define SW_SCHED_POINT() sw_sched_point()
#elif defined(SINGLEWRITER_CHAOS)
/// Sometimes yields or spins; per-thread xorshift seeded from SINGLEWRITER_CHAOS_SEED.
void sw_chaos_point(void);
#define SW_CHAOS() sw_chaos_point()
#define SW_SCHED_POINT() ((void)0)
#else
#define SW_CHAOS() ((void)0)
#define SW_SCHED_POINT() ((void)0)
#endif

/// A 32-bit atomic word. 32 bits because that is what a futex or WaitOnAddress waits on.
typedef struct {
  _Atomic(uint32_t) value;
} sw_atomic_u32;

static inline uint32_t sw_load_relaxed(sw_atomic_u32 *a) {
  SW_CHAOS();
  uint32_t v = atomic_load_explicit(&a->value, memory_order_relaxed);
  SW_CHAOS();
  return v;
}

static inline uint32_t sw_load_acquire(sw_atomic_u32 *a) {
  SW_CHAOS();
  uint32_t v = atomic_load_explicit(&a->value, memory_order_acquire);
  SW_CHAOS();
  return v;
}

/// Sequentially consistent: the second half of a store-then-load handshake between two
/// words (a proxy access and a reader, WriterLock+ProxyAccess.swift), after a
/// sequentially consistent read-modify-write of the other word. A plain load on x86-64.
static inline uint32_t sw_load_seq_cst(sw_atomic_u32 *a) {
  SW_CHAOS();
  uint32_t v = atomic_load_explicit(&a->value, memory_order_seq_cst);
  SW_CHAOS();
  return v;
}

/// For a hint that orders nothing: a stale value costs its reader a retry.
static inline void sw_store_relaxed(sw_atomic_u32 *a, uint32_t v) {
  SW_CHAOS();
  atomic_store_explicit(&a->value, v, memory_order_relaxed);
  SW_CHAOS();
}

static inline void sw_store_release(sw_atomic_u32 *a, uint32_t v) {
  SW_CHAOS();
  atomic_store_explicit(&a->value, v, memory_order_release);
  SW_CHAOS();
}

/// Strong CAS, sequentially consistent (the same instructions as acquire-release on
/// x86-64 and arm64, and what `sw_load_seq_cst`'s handshake needs); on failure
/// `*expected` is reloaded.
static inline bool sw_cas(sw_atomic_u32 *a, uint32_t *expected, uint32_t desired) {
  SW_CHAOS();
  bool done = atomic_compare_exchange_strong_explicit(
      &a->value, expected, desired, memory_order_seq_cst, memory_order_relaxed);
  SW_CHAOS();
  return done;
}

/// `sw_cas` returning the value it found (`expected` on success): the caller passes no
/// address, so a Swift caller keeps no local in memory, and needs no stack protector.
static inline uint32_t sw_cas_value(sw_atomic_u32 *a, uint32_t expected, uint32_t desired) {
  SW_CHAOS();
  atomic_compare_exchange_strong_explicit(
      &a->value, &expected, desired, memory_order_seq_cst, memory_order_relaxed);
  SW_CHAOS();
  return expected;
}

static inline uint32_t sw_fetch_add(sw_atomic_u32 *a, uint32_t v) {
  SW_CHAOS();
  uint32_t old = atomic_fetch_add_explicit(&a->value, v, memory_order_seq_cst);
  SW_CHAOS();
  return old;
}

static inline uint32_t sw_fetch_sub(sw_atomic_u32 *a, uint32_t v) {
  SW_CHAOS();
  uint32_t old = atomic_fetch_sub_explicit(&a->value, v, memory_order_seq_cst);
  SW_CHAOS();
  return old;
}

static inline uint32_t sw_fetch_or(sw_atomic_u32 *a, uint32_t v) {
  SW_CHAOS();
  uint32_t old = atomic_fetch_or_explicit(&a->value, v, memory_order_seq_cst);
  SW_CHAOS();
  return old;
}

static inline uint32_t sw_fetch_and(sw_atomic_u32 *a, uint32_t v) {
  SW_CHAOS();
  uint32_t old = atomic_fetch_and_explicit(&a->value, v, memory_order_seq_cst);
  SW_CHAOS();
  return old;
}

static inline uint32_t sw_exchange(sw_atomic_u32 *a, uint32_t v) {
  SW_CHAOS();
  uint32_t old = atomic_exchange_explicit(&a->value, v, memory_order_acq_rel);
  SW_CHAOS();
  return old;
}

/// A 64-bit atomic word, for a count that must not wrap in a program's lifetime (a
/// change hub's version). Nothing waits on it.
typedef struct {
  _Atomic(uint64_t) value;
} sw_atomic_u64;

static inline uint64_t sw_u64_load_relaxed(sw_atomic_u64 *a) {
  SW_CHAOS();
  uint64_t v = atomic_load_explicit(&a->value, memory_order_relaxed);
  SW_CHAOS();
  return v;
}

static inline uint64_t sw_u64_load_acquire(sw_atomic_u64 *a) {
  SW_CHAOS();
  uint64_t v = atomic_load_explicit(&a->value, memory_order_acquire);
  SW_CHAOS();
  return v;
}

/// Sequentially consistent: a checkout's end reads the hub's flags after its own
/// read-modify-write of the state word, and must not miss a consumer that set one
/// before looking at that word.
static inline uint64_t sw_u64_load_seq_cst(sw_atomic_u64 *a) {
  SW_CHAOS();
  uint64_t v = atomic_load_explicit(&a->value, memory_order_seq_cst);
  SW_CHAOS();
  return v;
}

static inline void sw_u64_store_release(sw_atomic_u64 *a, uint64_t v) {
  SW_CHAOS();
  atomic_store_explicit(&a->value, v, memory_order_release);
  SW_CHAOS();
}

/// `sw_cas_value` on 64 bits.
static inline uint64_t sw_u64_cas_value(sw_atomic_u64 *a, uint64_t expected, uint64_t desired) {
  SW_CHAOS();
  atomic_compare_exchange_strong_explicit(
      &a->value, &expected, desired, memory_order_seq_cst, memory_order_relaxed);
  SW_CHAOS();
  return expected;
}

static inline uint64_t sw_u64_fetch_add(sw_atomic_u64 *a, uint64_t v) {
  SW_CHAOS();
  uint64_t old = atomic_fetch_add_explicit(&a->value, v, memory_order_seq_cst);
  SW_CHAOS();
  return old;
}

static inline uint64_t sw_u64_fetch_or(sw_atomic_u64 *a, uint64_t v) {
  SW_CHAOS();
  uint64_t old = atomic_fetch_or_explicit(&a->value, v, memory_order_acq_rel);
  SW_CHAOS();
  return old;
}

static inline uint64_t sw_u64_fetch_and(sw_atomic_u64 *a, uint64_t v) {
  SW_CHAOS();
  uint64_t old = atomic_fetch_and_explicit(&a->value, v, memory_order_acq_rel);
  SW_CHAOS();
  return old;
}

/// A pointer-sized atomic, for recording which thread owns something.
typedef struct {
  _Atomic(uintptr_t) value;
} sw_atomic_uptr;

static inline uintptr_t sw_uptr_load(sw_atomic_uptr *a) {
  SW_CHAOS();
  uintptr_t v = atomic_load_explicit(&a->value, memory_order_relaxed);
  SW_CHAOS();
  return v;
}

static inline void sw_uptr_store(sw_atomic_uptr *a, uintptr_t v) {
  SW_CHAOS();
  atomic_store_explicit(&a->value, v, memory_order_relaxed);
  SW_CHAOS();
}

/// Replaces `expected` with `desired` if the value is still `expected`; relaxed, as the
/// other accessors of these records are. Whether it did.
static inline bool sw_uptr_replace(sw_atomic_uptr *a, uintptr_t expected, uintptr_t desired) {
  SW_CHAOS();
  bool done = atomic_compare_exchange_strong_explicit(
      &a->value, &expected, desired, memory_order_relaxed, memory_order_relaxed);
  SW_CHAOS();
  return done;
}

/// A pause hint for spin loops (`pause` on x86, `yield` on Arm): lets the sibling
/// hyperthread run and saves power while the loop waits for another core.
static inline void sw_yield_cpu(void) {
#if defined(SINGLEWRITER_SCHED)
  if (sw_sched_yield()) return;  // a registered thread passes the baton instead
#endif
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__) || defined(__arm__)
  __asm__ __volatile__("yield");
#endif
}

#endif
