// Chaos mode (-DSINGLEWRITER_CHAOS): random yields and spins around every synchronizing
// operation, so two cores produce interleavings that plain stress tests rarely reach.

#include "SingleWriterAtomics.h"

#if defined(SINGLEWRITER_CHAOS)

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

/// The process's seed: SINGLEWRITER_CHAOS_SEED, or the clock. 0 until chosen.
static _Atomic(uint64_t) sw_chaos_seed;
/// Numbers the threads, so each draws its own stream from the one seed.
static _Atomic(uint64_t) sw_chaos_threads;
static _Thread_local uint64_t sw_chaos_state;

static uint64_t sw_chaos_mix(uint64_t x) {  // splitmix64's finalizer
  x += 0x9E3779B97F4A7C15u;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9u;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBu;
  return x ^ (x >> 31);
}

static uint64_t sw_chaos_process_seed(void) {
  uint64_t seed = atomic_load_explicit(&sw_chaos_seed, memory_order_acquire);
  if (seed != 0) return seed;
  const char *text = getenv("SINGLEWRITER_CHAOS_SEED");
  uint64_t chosen = text && *text ? strtoull(text, NULL, 0) : sw_chaos_mix(sw_monotonic_ns());
  if (chosen == 0) chosen = 1;
  uint64_t none = 0;
  if (atomic_compare_exchange_strong(&sw_chaos_seed, &none, chosen)) {
    // Once per process: the number to put in SINGLEWRITER_CHAOS_SEED to replay the run.
    fprintf(stderr, "SingleWriter chaos mode: SINGLEWRITER_CHAOS_SEED=%" PRIu64 "\n", chosen);
    fflush(stderr);
    return chosen;
  }
  return none;
}

/// The calling thread's next pseudo-random number (xorshift64).
static uint64_t sw_chaos_next(void) {
  uint64_t x = sw_chaos_state;
  if (x == 0) {
    uint64_t thread = atomic_fetch_add(&sw_chaos_threads, 1);
    x = sw_chaos_mix(sw_chaos_process_seed() ^ sw_chaos_mix(thread)) | 1;
  }
  x ^= x << 13;
  x ^= x >> 7;
  x ^= x << 17;
  sw_chaos_state = x;
  return x;
}

void sw_chaos_point(void) {
  uint64_t r = sw_chaos_next();
  switch (r & 63) {
  case 0:
  case 1:  // 1 in 32: give the core away
    sw_yield_thread();
    break;
  case 2:
  case 3:
  case 4:
  case 5:  // 1 in 16: linger for up to 255 pauses
    for (uint64_t n = (r >> 8) & 255; n > 0; n--) sw_yield_cpu();
    break;
  default:
    break;
  }
}

bool sw_chaos_spurious_wake(void) { return (sw_chaos_next() & 15) == 0; }

#else
// ISO C wants at least one declaration in a translation unit.
typedef int sw_chaos_disabled;
#endif
