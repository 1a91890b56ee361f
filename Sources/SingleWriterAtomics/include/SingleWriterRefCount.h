// Reading a Swift object's inline reference-count word, to tell in one load whether a
// lent proxy is referenced by anyone but its container: no extra strong, weak or
// unowned reference. `isKnownUniquelyReferenced` sees strong references only, and the
// runtime's weak and unowned counters cost a call each, which would double the cost of
// a `writeNext`. The layout is the runtime's, so the library never trusts it blindly:
// `RefCountProbe` checks it once per process on a real object and falls back to the
// runtime's calls if it does not behave as expected.

#ifndef SINGLE_WRITER_REFCOUNT_H
#define SINGLE_WRITER_REFCOUNT_H

#include <stdatomic.h>
#include <stdint.h>

#include "sw_atomics.h"

/// The word after the object's metadata pointer. Relaxed and then an acquire fence, so a
/// release by another thread that this load observes also publishes what came before it.
static inline uintptr_t sw_refcount_bits(const void *object) {
  SW_SCHED_POINT();
  sw_atomic_uptr *word = (sw_atomic_uptr *)((char *)(uintptr_t)object + sizeof(void *));
  uintptr_t bits = atomic_load_explicit(&word->value, memory_order_relaxed);
  atomic_thread_fence(memory_order_acquire);
  return bits;
}

#endif
