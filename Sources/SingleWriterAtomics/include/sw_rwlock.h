// A writer-preferring reader-writer lock on the atomics and the wait primitive.
//
// Not `pthread_rwlock_t`: glibc's default prefers readers, so a steady stream of
// readers starves a writer forever; glibc's writer-preferring attribute exists nowhere
// else, and Darwin, musl and Windows' SRWLOCK document no preference. This one lets no
// new reader in while a writer waits, runs the same code on every platform, and its
// uncontended paths are one or two inlined atomics.

#ifndef SW_RWLOCK_H
#define SW_RWLOCK_H

#include "sw_thread.h"
#include "sw_wait.h"

enum {
  /// The number of readers holding the lock.
  SW_RWLOCK_READERS = 0x1FFFFFFFu,
  /// Someone sleeps in `sw_wait` on the state: whoever clears this bit wakes them all.
  SW_RWLOCK_SLEEPING = 1u << 29,
  /// A writer waits: new readers stay out.
  SW_RWLOCK_WRITER_WAITING = 1u << 30,
  /// A writer holds the lock.
  SW_RWLOCK_WRITER = 1u << 31,
};

/// What a lock call returns: done, or refused because the calling thread already holds
/// the lock exclusively and would wait for itself forever.
enum { SW_RWLOCK_OK = 0, SW_RWLOCK_REENTERED = 1 };

typedef struct {
  /// Readers count, and the bits above.
  sw_atomic_u32 state;
  /// Writers in the slow path, so the one that gets the lock keeps readers out for the rest.
  sw_atomic_u32 writers;
  /// The thread holding the lock exclusively, or 0: only for refusing re-entry.
  sw_atomic_uptr owner;
} sw_rwlock;

int sw_rwlock_lock_shared_slow(sw_rwlock *l);
int sw_rwlock_lock_exclusive_slow(sw_rwlock *l);
void sw_rwlock_unlock_shared_slow(sw_rwlock *l);
void sw_rwlock_unlock_exclusive_slow(sw_rwlock *l);

/// Takes the lock shared. Waits while a writer holds it or waits for it.
static inline int sw_rwlock_lock_shared(sw_rwlock *l) {
  uint32_t s = sw_load_relaxed(&l->state);
  if ((s & (SW_RWLOCK_WRITER | SW_RWLOCK_WRITER_WAITING)) == 0 && sw_cas(&l->state, &s, s + 1)) {
    return SW_RWLOCK_OK;
  }
  return sw_rwlock_lock_shared_slow(l);
}

static inline void sw_rwlock_unlock_shared(sw_rwlock *l) {
  uint32_t s = sw_fetch_sub(&l->state, 1);
  // The last reader out wakes the sleepers: a writer waits for exactly this.
  if ((s & SW_RWLOCK_SLEEPING) != 0 && (s & SW_RWLOCK_READERS) == 1) {
    sw_rwlock_unlock_shared_slow(l);
  }
}

/// Takes the lock exclusively. Waits for the readers and the writer inside.
static inline int sw_rwlock_lock_exclusive(sw_rwlock *l) {
  uint32_t expected = 0;
  if (sw_cas(&l->state, &expected, SW_RWLOCK_WRITER)) {
    sw_uptr_store(&l->owner, sw_current_thread());
    return SW_RWLOCK_OK;
  }
  return sw_rwlock_lock_exclusive_slow(l);
}

static inline void sw_rwlock_unlock_exclusive(sw_rwlock *l) {
  sw_uptr_store(&l->owner, 0);
  uint32_t expected = SW_RWLOCK_WRITER;
  if (!sw_cas(&l->state, &expected, 0)) sw_rwlock_unlock_exclusive_slow(l);
}

#endif
