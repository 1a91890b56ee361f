// A deterministic scheduler for tests (-DSINGLEWRITER_SCHED), in the spirit of Rust's
// loom and of CHESS and PCT: threads registered with it run one at a time, and every
// atomic operation, wait, wake, yield and clock read in this layer is a point where it
// chooses who runs next. A search runs the same scenario over many such schedules.
//
// In that mode:
// - `sw_wait` blocks until a wake on the same word (after a value check, as a futex
//   does), and may be chosen to return spuriously, as the contract allows;
// - time is virtual: `sw_monotonic_ns` advances by a fixed tick per scheduling point,
//   and a timed wait fires once its deadline passes or no thread can run; the search may
//   also jump the clock to the earliest deadline a blocked thread waits for, as if every
//   running thread had been preempted that long, so that two deadlines can coincide (a
//   wait that gives up racing the thread that was about to end it);
// - `sw_yield_cpu` and `sw_yield_thread` hand the baton to another thread, so a spin
//   loop cannot starve the thread it waits for;
// - a thread that this layer starts for a registered thread must be registered through
//   `sw_sched_spawn` (the layer starts none today);
// - a schedule in which no thread can run and none waits with a deadline is a deadlock,
//   and one longer than the step bound a livelock: both are reported as failures;
// - the priority gate checks what os_unfair_lock enforces on Apple, that only the thread
//   that took it releases it (see gate.c);
// - a crash (an assertion, a trap) on a registered thread first prints the schedule that
//   was running, so that it can be run again.
// Threads that are not registered (the test runner's, Swift's concurrency pool) bypass
// all of it, so other tests run as usual in this build mode.
//
// Threads run one at a time, so the search explores sequentially consistent executions
// only: reorderings that relaxed atomics allow are for ThreadSanitizer and chaos mode.
// Swift's reference counting is not a scheduling point.
//
// Without the define, `sw_sched_available` returns false and the rest are stubs, so the
// test target builds the same in every mode.

#ifndef SW_SCHED_H
#define SW_SCHED_H

#include <stdbool.h>
#include <stdint.h>

/// Whether the C layer was compiled with SINGLEWRITER_SCHED.
bool sw_sched_available(void);

/// The search strategies.
enum {
  /// PCT (Burckhardt et al.): random thread priorities, `bound - 1` random points where
  /// the running thread drops to a low priority. Each schedule has a seed of its own,
  /// printed on failure as SINGLEWRITER_SCHED_SEED=seed/length/pending, which runs that
  /// one schedule again.
  SW_SCHED_PCT = 1,
  /// Every schedule with at most `bound` preemptions (a spurious wake-up counts as one),
  /// depth first: the choices of the last schedule are replayed up to the deepest one
  /// with an untried alternative, which is taken instead.
  SW_SCHED_EXHAUSTIVE = 2,
};

typedef struct sw_sched_explorer sw_sched_explorer;

/// The body of a schedule's thread `index`.
typedef void (*sw_sched_body)(void *context, int32_t index);

/// A search; NULL without SINGLEWRITER_SCHED.
sw_sched_explorer *sw_sched_explorer_new(int32_t strategy, int32_t bound, uint64_t seed);

/// Frees a search whose last schedule did not fail (a failed one's threads never end).
void sw_sched_explorer_free(sw_sched_explorer *explorer);

/// How far virtual time moves per scheduling point; how many points a schedule may take
/// before it counts as a livelock; how many waits per schedule may return spuriously;
/// and how many seconds of real time with no scheduling point count as a hang (a thread
/// blocked outside this layer).
void sw_sched_explorer_configure(sw_sched_explorer *explorer, uint64_t tick_ns,
                                 uint64_t step_bound, int32_t spurious_wakes,
                                 int32_t watchdog_seconds);

/// At most `jumps` times per schedule (0 unless set), the search may move the clock
/// straight to the earliest deadline that a blocked thread waits for, at any scheduling
/// point while one does: the exhaustive search as an alternative at each such point,
/// outside its preemption bound; PCT at random points among them, in about half its
/// schedules. A wait that a jump ends has timed out, as the contract allows.
void sw_sched_explorer_set_jumps(sw_sched_explorer *explorer, int32_t jumps);

/// Unfair yields: `sw_yield_cpu` and `sw_yield_thread` become plain scheduling points, so
/// that a spinning thread may keep running, as a high-priority thread spinning on one
/// core would while the thread it waits for is preempted. A spin without bound then
/// shows as a livelock.
void sw_sched_explorer_set_unfair_yields(sw_sched_explorer *explorer, bool unfair);

/// Runs `count` threads, `body(context, 0..<count)`, under the next schedule, and returns
/// when all have ended (true) or the schedule deadlocked or livelocked (false; see
/// `sw_sched_failure`). The threads of a failed schedule stay blocked forever, so
/// `context` must then be leaked.
bool sw_sched_run_one(sw_sched_explorer *explorer, int32_t count, sw_sched_body body,
                      void *context);

/// Moves to the next schedule; false when the search is over (exhaustive: every
/// schedule within the bound was run; PCT with SINGLEWRITER_SCHED_SEED: the one ran).
bool sw_sched_next(sw_sched_explorer *explorer);

/// What went wrong in the last schedule, or "".
const char *sw_sched_failure(const sw_sched_explorer *explorer);

/// A line that names the last schedule and how to run it again.
const char *sw_sched_describe(const sw_sched_explorer *explorer);

/// Timed waits of the last schedule that ended by timing out.
uint32_t sw_sched_timeouts(const sw_sched_explorer *explorer);

/// Jumps of the clock to a deadline in the last schedule.
int32_t sw_sched_jumps(const sw_sched_explorer *explorer);

/// Keeps the calling registered thread running through its scheduling points while
/// `hold` (a wait that blocks still lets the others run), until called with false: for a
/// section that a lock the scheduler cannot see makes atomic, such as a task's
/// cancellation, whose handlers Swift's runtime runs holding the task's status lock. No-op
/// on other threads.
void sw_sched_hold(bool hold);

/// Names a word for failure reports ("thread 1 waits on state ..."). The name is copied;
/// the newest name given to an address wins.
void sw_sched_name_word(const void *word, const char *name);

/// Threads of the last schedule, helpers that the library spawned included.
int32_t sw_sched_threads(const sw_sched_explorer *explorer);

/// Scheduling points in the last schedule.
uint64_t sw_sched_steps(const sw_sched_explorer *explorer);

/// Schedules run so far.
uint64_t sw_sched_schedules(const sw_sched_explorer *explorer);

#if defined(SINGLEWRITER_SCHED)
// The hooks, called from this layer only. Each returns at once, or false, on a thread
// that is not registered.
void sw_sched_point(void);
bool sw_sched_yield(void);
bool sw_sched_registered(void);
/// A blocking wait: false if it timed out; `nanoseconds < 0` has no deadline.
bool sw_sched_wait(void *word, uint32_t expected, int64_t nanoseconds);
void sw_sched_wake(void *word, bool all);
uint64_t sw_sched_now(void);
bool sw_sched_spawn(void (*body)(void *), void *context);
/// Fails the schedule with `what` (a protocol check of this layer's own); the calling
/// thread never returns, as the threads of a failed schedule never do.
void sw_sched_report(const char *what);
#endif

#endif
