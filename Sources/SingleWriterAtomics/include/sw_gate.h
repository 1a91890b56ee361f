// The priority gate of a closure write: a lock that the thread running a closure write
// (or serving the queue) holds while it does, so that a thread that sleeps for the writer
// sleeps on it, and the OS can lend the sleeper's priority to the thread it waits for.
//
// Apple: os_unfair_lock, whose header says it carries the waiter's priority to the owner
// (os_sync_wait_on_address, which the rest of the package sleeps on, does not).
// Everywhere else, and under the deterministic scheduler: the package's sw_mutex, which
// boosts nobody but runs the same protocol, so that CI exercises it.
//
// Out of line, in gate.c: only a closure write that found the gate wanted calls these,
// and Scripts/cross-compile-c.sh checks gate.o's calls on every Apple target.

#ifndef SW_GATE_H
#define SW_GATE_H

#include <stdbool.h>
#include <stdint.h>

/// Zero is unlocked, as for both os_unfair_lock and sw_mutex. The same size as either.
typedef struct {
  uint32_t opaque;
} sw_gate;

/// Takes the gate if it is free; never waits.
bool sw_gate_trylock(sw_gate *gate);

/// Takes the gate, sleeping (and on Apple, boosting its owner) while another thread has it.
void sw_gate_lock(sw_gate *gate);

/// Releases the gate; only the thread that took it may.
void sw_gate_unlock(sw_gate *gate);

/// "os_unfair_lock" or "sw_mutex": what the gate is in this build, for diagnostics.
const char *sw_gate_primitive(void);

#endif
