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

#else

_Static_assert(sizeof(sw_gate) == sizeof(sw_mutex), "sw_gate is an sw_mutex");

bool sw_gate_trylock(sw_gate *gate) { return sw_mutex_trylock((sw_mutex *)gate); }

void sw_gate_lock(sw_gate *gate) { sw_mutex_lock((sw_mutex *)gate); }

void sw_gate_unlock(sw_gate *gate) { sw_mutex_unlock((sw_mutex *)gate); }

const char *sw_gate_primitive(void) { return "sw_mutex"; }

#endif
