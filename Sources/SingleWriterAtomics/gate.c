// The priority gate (sw_gate.h) on each platform.

#include "SingleWriterAtomics.h"

#if defined(__APPLE__) && !defined(SINGLEWRITER_SCHED)
#include <os/lock.h>

_Static_assert(sizeof(sw_gate) == sizeof(os_unfair_lock), "sw_gate is an os_unfair_lock");

bool sw_gate_trylock(sw_gate *gate) {
  SW_CHAOS();
  return os_unfair_lock_trylock((os_unfair_lock *)gate);
}

void sw_gate_lock(sw_gate *gate) {
  SW_CHAOS();
  os_unfair_lock_lock((os_unfair_lock *)gate);
}

void sw_gate_unlock(sw_gate *gate) {
  SW_CHAOS();
  os_unfair_lock_unlock((os_unfair_lock *)gate);
}

const char *sw_gate_primitive(void) { return "os_unfair_lock"; }

#elif defined(SINGLEWRITER_SCHED)

// Under the deterministic scheduler: the sw_mutex, with the check that os_unfair_lock
// makes on Apple (it aborts the process), that only the thread that took the gate
// releases it. A registered thread that breaks it fails its schedule instead.
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

_Static_assert(sizeof(sw_gate) == sizeof(sw_mutex), "sw_gate is an sw_mutex");

/// The gates held now, and by whom. Few are held at once: one per container at most.
enum { SW_GATE_OWNERS = 64 };
static struct {
  const sw_gate *gate;
  uintptr_t thread;
} sw_gate_owners[SW_GATE_OWNERS];
static pthread_mutex_t sw_gate_owners_lock = PTHREAD_MUTEX_INITIALIZER;

static void sw_gate_taken(const sw_gate *gate) {
  pthread_mutex_lock(&sw_gate_owners_lock);
  for (int k = 0; k < SW_GATE_OWNERS; k++) {
    if (sw_gate_owners[k].gate != NULL) continue;
    sw_gate_owners[k].gate = gate;
    sw_gate_owners[k].thread = sw_current_thread();
    break;
  }
  pthread_mutex_unlock(&sw_gate_owners_lock);
}

/// Forgets the gate's owner; false if it was another thread.
static bool sw_gate_released(const sw_gate *gate) {
  bool own = true;
  pthread_mutex_lock(&sw_gate_owners_lock);
  for (int k = 0; k < SW_GATE_OWNERS; k++) {
    if (sw_gate_owners[k].gate != gate) continue;
    own = sw_gate_owners[k].thread == sw_current_thread();
    sw_gate_owners[k].gate = NULL;
    break;
  }
  pthread_mutex_unlock(&sw_gate_owners_lock);
  return own;
}

bool sw_gate_trylock(sw_gate *gate) {
  if (!sw_mutex_trylock((sw_mutex *)gate)) return false;
  sw_gate_taken(gate);
  return true;
}

void sw_gate_lock(sw_gate *gate) {
  sw_mutex_lock((sw_mutex *)gate);
  sw_gate_taken(gate);
}

void sw_gate_unlock(sw_gate *gate) {
  if (!sw_gate_released(gate)) {
    static const char message[] =
        "the priority gate was released by a thread that did not take it (os_unfair_lock "
        "aborts the process on Apple)";
    if (sw_sched_registered()) sw_sched_report(message);
    fprintf(stderr, "SingleWriter: %s\n", message);
    abort();
  }
  sw_mutex_unlock((sw_mutex *)gate);
}

const char *sw_gate_primitive(void) { return "sw_mutex"; }

#else

_Static_assert(sizeof(sw_gate) == sizeof(sw_mutex), "sw_gate is an sw_mutex");

bool sw_gate_trylock(sw_gate *gate) { return sw_mutex_trylock((sw_mutex *)gate); }

void sw_gate_lock(sw_gate *gate) { sw_mutex_lock((sw_mutex *)gate); }

void sw_gate_unlock(sw_gate *gate) { sw_mutex_unlock((sw_mutex *)gate); }

const char *sw_gate_primitive(void) { return "sw_mutex"; }

#endif
