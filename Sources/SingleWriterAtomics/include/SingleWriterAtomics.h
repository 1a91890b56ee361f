// The library's platform layer: every platform branch lives here and in the .c files
// next to it, where Scripts/cross-compile-c.sh can build and check it for Apple,
// Windows and musl targets. The Swift sources have none.
//
//   sw_atomics.h      C11 atomics, inlined into Swift; the chaos-mode hook
//   sw_thread.h       thread identity, yielding, a monotonic clock
//   sw_wait.h         blocking on a word (futex, WaitOnAddress, os_sync, parking lot), a mutex
//   sw_gate.h         the priority gate of closure writes (os_unfair_lock on Apple)
//   sw_rwlock.h       a writer-preferring reader-writer lock
//   sw_diagnostics.h  thread names, call stacks and symbols for race reports
//   sw_file.h         replacing a file atomically and durably (SingleWriterPersistence)
//   sw_sched.h        a deterministic scheduler for tests
//   sw_rows.h         which rows of the hand-off's transition tables were reached
//
// Compile-time switches, passed as `-Xcc -D...`:
//   SINGLEWRITER_PORTABLE_WAIT  use the parking lot even where the OS can wait on an address
//   SINGLEWRITER_CHAOS          perturb every atomic and wait; see sw_atomics.h
//   SINGLEWRITER_SCHED          run registered threads one at a time; see sw_sched.h

#ifndef SINGLE_WRITER_ATOMICS_H
#define SINGLE_WRITER_ATOMICS_H

#include "sw_atomics.h"
#include "sw_diagnostics.h"
#include "sw_file.h"
#include "sw_gate.h"
#include "sw_rows.h"
#include "sw_rwlock.h"
#include "sw_sched.h"
#include "sw_thread.h"
#include "sw_wait.h"
#include "SingleWriterRefCount.h"
#include "sw_writer.h"

#endif
