// The reader-writer lock's slow paths. Invariant: a thread sleeps only on a state with
// SW_RWLOCK_SLEEPING set, and whoever clears that bit wakes every sleeper, who then
// re-checks and sets it again if it must sleep on.

#include "SingleWriterAtomics.h"

enum { SW_RWLOCK_SPINS = 100 };

int sw_rwlock_lock_shared_slow(sw_rwlock *l) {
  uintptr_t me = sw_current_thread();
  for (int spins = 0;; spins++) {
    uint32_t s = sw_load_relaxed(&l->state);
    if ((s & (SW_RWLOCK_WRITER | SW_RWLOCK_WRITER_WAITING)) == 0) {
      if (sw_cas(&l->state, &s, s + 1)) return SW_RWLOCK_OK;
      continue;
    }
    if ((s & SW_RWLOCK_WRITER) != 0 && sw_uptr_load(&l->owner) == me) return SW_RWLOCK_REENTERED;
    if (spins < SW_RWLOCK_SPINS) {
      sw_yield_cpu();
      continue;
    }
    uint32_t sleeping = s | SW_RWLOCK_SLEEPING;
    if (s != sleeping && !sw_cas(&l->state, &s, sleeping)) continue;
    sw_wait(&l->state, sleeping);
  }
}

void sw_rwlock_unlock_shared_slow(sw_rwlock *l) {
  uint32_t s = sw_load_relaxed(&l->state);
  while ((s & SW_RWLOCK_SLEEPING) != 0) {
    if (sw_cas(&l->state, &s, s & ~(uint32_t)SW_RWLOCK_SLEEPING)) {
      sw_wake_all(&l->state);
      return;
    }
  }
}

int sw_rwlock_lock_exclusive_slow(sw_rwlock *l) {
  uintptr_t me = sw_current_thread();
  if (sw_uptr_load(&l->owner) == me) return SW_RWLOCK_REENTERED;
  sw_fetch_add(&l->writers, 1);
  for (int spins = 0;; spins++) {
    uint32_t s = sw_load_relaxed(&l->state);
    if ((s & (SW_RWLOCK_WRITER | SW_RWLOCK_READERS)) == 0) {
      // Keep readers out for the writers still waiting behind this one; keep the
      // sleepers' bit, so this writer's unlock wakes them.
      bool others = sw_load_relaxed(&l->writers) > 1;
      uint32_t next = SW_RWLOCK_WRITER | (s & SW_RWLOCK_SLEEPING) |
                      (others ? SW_RWLOCK_WRITER_WAITING : 0);
      if (sw_cas(&l->state, &s, next)) break;
      continue;
    }
    // From now on no new reader gets in.
    uint32_t waiting = s | SW_RWLOCK_WRITER_WAITING;
    if (spins >= SW_RWLOCK_SPINS) waiting |= SW_RWLOCK_SLEEPING;
    if (s != waiting && !sw_cas(&l->state, &s, waiting)) continue;
    if (spins < SW_RWLOCK_SPINS) {
      sw_yield_cpu();
    } else {
      sw_wait(&l->state, waiting);
    }
  }
  sw_fetch_sub(&l->writers, 1);
  sw_uptr_store(&l->owner, me);
  return SW_RWLOCK_OK;
}

void sw_rwlock_unlock_exclusive_slow(sw_rwlock *l) {
  uint32_t s = sw_load_relaxed(&l->state);
  for (;;) {
    // Writers still waiting keep the readers out, so they cannot be starved.
    uint32_t next = sw_load_relaxed(&l->writers) > 0 ? SW_RWLOCK_WRITER_WAITING : 0;
    if (sw_cas(&l->state, &s, next)) break;
  }
  if ((s & SW_RWLOCK_SLEEPING) != 0) sw_wake_all(&l->state);
}
