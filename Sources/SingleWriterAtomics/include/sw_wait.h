// Blocking on a 32-bit word, and a small mutex built on it.
//
// Every platform blocks; none polls. Linux: a futex. Windows: WaitOnAddress. Apple:
// os_sync_wait_on_address where the OS has it (macOS 14.4, iOS 17.4, tvOS 17.4,
// watchOS 10.4), found at run time; before that, and on any other system, a parking
// lot of mutexes and condition variables keyed by address. -DSINGLEWRITER_PORTABLE_WAIT
// forces the parking lot on Linux and Windows too, so that CI tests it.

#ifndef SW_WAIT_H
#define SW_WAIT_H

#include "sw_atomics.h"

/// Spins briefly, then sleeps while `*a == expected`, until a `sw_wake_*` on `a`. May
/// return spuriously: callers re-check their condition in a loop.
void sw_wait(sw_atomic_u32 *a, uint32_t expected);

/// Like `sw_wait`, but gives up after about `nanoseconds`. Returns false on time-out.
bool sw_wait_for(sw_atomic_u32 *a, uint32_t expected, int64_t nanoseconds);

/// Wakes every thread in `sw_wait` or `sw_wait_for` on `a`.
void sw_wake_all(sw_atomic_u32 *a);

/// Wakes one thread in `sw_wait` or `sw_wait_for` on `a`.
void sw_wake_one(sw_atomic_u32 *a);

/// The wait primitive this process uses: "futex", "WaitOnAddress",
/// "os_sync_wait_on_address" or "parking lot".
const char *sw_wait_primitive(void);

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

#endif
