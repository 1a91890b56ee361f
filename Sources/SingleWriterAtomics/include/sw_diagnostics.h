// What the race detector prints: thread names, call stacks with symbols, and a
// thread-local slot to keep a thread's label in. Missing pieces degrade to less text,
// never to a failure.

#ifndef SW_DIAGNOSTICS_H
#define SW_DIAGNOSTICS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/// Writes `count` bytes to standard error, unbuffered.
void sw_write_stderr(const char *bytes, size_t count);

/// Writes `message` and a newline to standard error.
void sw_print_error(const char *message);

/// How many messages `sw_print_error` has written so far: a test's watchdog waits past its
/// time for a warning that a loaded machine delays, and ends a child once one is out.
uintptr_t sw_printed_error_count(void);

/// What `sw_current_thread_name` found.
enum {
  /// The thread has no name, or the platform cannot tell.
  SW_THREAD_NAME_NONE = 0,
  /// `buffer` holds the whole name.
  SW_THREAD_NAME_WHOLE = 1,
  /// `buffer` holds the start of a name that may be longer: Linux keeps only 15 bytes.
  SW_THREAD_NAME_TRUNCATED = 2,
};

/// Copies the calling thread's name, NUL-terminated, into `buffer`, and says whether
/// it is whole.
int sw_current_thread_name(char *buffer, size_t capacity);

/// Whether the calling thread is the process's main thread.
bool sw_is_main_thread(void);

/// Fills `frames` with the calling thread's return addresses, innermost first, without
/// this function's frame. Returns how many; 0 where the platform cannot walk the stack.
int sw_backtrace(void **frames, int capacity);

/// Describes `address` as "image  symbol + offset", with a Swift symbol demangled when
/// the Swift runtime's `swift_demangle` is loaded, or "image + 0xoffset", or the raw
/// address: what the dynamic linker knows. Writes a NUL-terminated line into `buffer`.
void sw_describe_address(const void *address, char *buffer, size_t capacity);

/// The task the calling thread runs, as an address that is only compared, or 0 outside a
/// task or where the Swift runtime's entry point cannot be called (Windows). The same id
/// as `withUnsafeCurrentTask`'s, for a fraction of its cost: no generic call, a cached
/// look-up of the runtime's function, which reads a thread-local.
uintptr_t sw_current_task(void);

/// `sw_current_task()` for the hot path, inlined into the caller: a direct call of the
/// runtime's entry point (which a Swift program links), without the look-up's call and
/// load. Every access through a held proxy records its task with it.
static inline uintptr_t sw_current_task_inline(void) {
#if !defined(_WIN32) && defined(__has_attribute) && __has_attribute(swiftcall)
  extern __attribute__((swiftcall)) void *swift_task_getCurrent(void);
  return (uintptr_t)swift_task_getCurrent();
#else
  return sw_current_task();
#endif
}

/// The current task as the holder of a proxy that may outlive it, or 0 outside a task:
/// the runtime's number for the task, never given to another task while the process runs,
/// with the low bit set (where the runtime has no number, the task's address, tagged,
/// which a later task may be given). A task's address is reused once the task ends. Two
/// calls: for checkouts through a proxy and the checks that ask who holds one.
uintptr_t sw_current_task_holder(void);

/// Who the caller is, as the holder of a proxy that may outlive it: the current task's
/// `sw_current_task_holder()`, or outside a task the thread's `sw_current_thread_serial()`.
/// Never 0.
uintptr_t sw_current_holder(void);

/// The identity of the serial executor the current task runs on: its actor, for an
/// actor-isolated task; 0 on the global pool, outside a task, or where the Swift runtime's
/// entry point cannot be called (Windows). For race reports, which take an actor's jobs,
/// on whatever threads they run, for one owner.
uintptr_t sw_current_executor_identity(void);

/// Whether the current task runs inline, inside the synchronous code that ran on this
/// thread before it: a task started with `Task.immediate` from a nonisolated context,
/// before its first suspension, whose executor is the runtime's mark of a synchronous
/// start. Whatever runs beneath it on this thread cannot go on until it suspends or
/// returns. `false` outside a task, for a task started inline on an actor (it runs on
/// that actor's executor, like any of its jobs), or where the runtime cannot say.
bool sw_current_task_runs_inline(void);

/// Creates a thread-local slot whose non-null value is passed to `destructor` when its
/// thread exits. Returns 0 if none is left.
uintptr_t sw_thread_slot_create(void (*destructor)(void *));

void *sw_thread_slot_get(uintptr_t slot);

void sw_thread_slot_set(uintptr_t slot, void *value);

#endif
