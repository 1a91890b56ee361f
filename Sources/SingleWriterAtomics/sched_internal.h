// The deterministic scheduler's own declarations, shared by its three files and by
// nothing else (this header is not under include/):
//
//   sched_search.c  the search: explorers, PCT and the exhaustive strategy, who runs next
//   sched_run.c     the run: threads, the baton, failures, a schedule from start to end
//   sched_time.c    the hooks: scheduling points, waits and wakes, virtual time
//
// One mutex per schedule guards everything, and a thread runs only while `current`
// names it: at each scheduling point it asks the strategy who runs next and, if that is
// another thread, signals that thread's condition variable and sleeps on its own.

#ifndef SW_SCHED_INTERNAL_H
#define SW_SCHED_INTERNAL_H

#include "SingleWriterAtomics.h"

#if defined(SINGLEWRITER_SCHED)

#include <pthread.h>
#include <stddef.h>

enum { SW_SCHED_MAX_THREADS = 16 };

enum { SW_RUNNABLE, SW_BLOCKED, SW_FINISHED };

/// PCT's jump points per schedule, at most.
enum { SW_SCHED_MAX_JUMPS = 8 };

/// Why a thread reached the scheduler: an operation it may be preempted at, a yield that
/// should let another thread run, a wait that blocks it, or its end.
enum { SW_POINT, SW_YIELD, SW_BLOCK, SW_EXIT, SW_START };

typedef struct sw_sched_run sw_sched_run;

typedef struct {
  sw_sched_run *run;
  int index;
  int status;
  /// While blocked: the word, the value it was expected to hold, and the deadline.
  sw_atomic_u32 *word;
  uint32_t expected;
  bool timed;
  bool timed_out;
  uint64_t deadline;
  /// Blocked threads are woken in the order they blocked, as a fair futex would.
  uint64_t blocked_at;
  /// Keeps running at its scheduling points (`sw_sched_hold`).
  bool held;
  /// PCT's priority: the highest runnable runs.
  int64_t priority;
  pthread_cond_t turn;
  pthread_t handle;
  bool started;
  /// A spawned helper's body, else the schedule's.
  void (*spawned)(void *);
  void *spawned_context;
} sw_sched_thread;

/// One exhaustive-search choice among `count` options, the first being the default.
typedef struct {
  uint8_t count;
  uint8_t chosen;
  /// Taking any option but the first costs a preemption.
  bool costs;
  uint16_t preemptions_before;
} sw_sched_decision;

struct sw_sched_run {
  sw_sched_explorer *explorer;
  pthread_mutex_t lock;
  pthread_cond_t done;
  sw_sched_thread threads[SW_SCHED_MAX_THREADS];
  int count;
  int current;
  bool finished;
  bool failed;
  uint64_t now;
  uint64_t steps;
  uint64_t blocks;
  uint32_t timeouts;
  uint32_t spurious;
  int preemptions;
  size_t decisions;
  uint64_t random;
  uint64_t change_points[8];
  int change_count;
  int64_t lowest;
  /// Jumps of the clock to the next deadline taken so far; the scheduling points at which
  /// some timed wait was pending, and PCT's points among them at which it jumps.
  int jumps;
  uint64_t pending_points;
  uint64_t jump_points[SW_SCHED_MAX_JUMPS];
  int jump_count;
  sw_sched_body body;
  void *context;
};

struct sw_sched_explorer {
  int32_t strategy;
  int32_t bound;
  uint64_t seed;
  uint64_t tick;
  uint64_t step_bound;
  int32_t spurious_bound;
  int32_t jump_bound;
  int32_t watchdog;
  bool unfair_yields;
  uint64_t schedules;
  bool replaying_one;
  uint64_t schedule_seed;
  uint64_t longest;
  uint64_t longest_pending;
  /// The lengths PCT spreads this schedule's change points (in scheduling points) and jump
  /// points (in points with a deadline pending) over: part of its replay key.
  uint64_t length;
  uint64_t pending_length;
  /// Exhaustive: the last schedule's decisions, and the choices the next one replays.
  sw_sched_decision *trace;
  size_t trace_length, trace_capacity;
  uint8_t *prefix;
  size_t prefix_length;
  /// The last schedule.
  char failure[4096];
  char description[256];
  /// The schedule running now, for a crash report.
  char running[256];
  uint32_t timeouts;
  int32_t jumps;
  uint64_t steps;
  int32_t threads;
};

/// The thread running scheduled code on this OS thread, or NULL.
extern _Thread_local sw_sched_thread *sw_sched_self;

// sched_search.c
uint64_t sw_sched_mix(uint64_t x);
uint64_t sw_sched_random(sw_sched_run *r);
/// The exhaustive search's choice among `count` options (0 is the default).
int sw_sched_decide(sw_sched_run *r, int count, bool costs);
/// Who runs after `me` (NULL at the start), or -1 if nobody can.
int sw_sched_choose(sw_sched_run *r, sw_sched_thread *me, int reason);
/// Whether the clock jumps to the next deadline at this scheduling point.
bool sw_sched_choose_jump(sw_sched_run *r);
/// Sets up a schedule's strategy state (PCT's change and jump points).
void sw_sched_plan(sw_sched_run *r);
/// Names the explorer's schedule `number` (its current one) and how to run it again.
void sw_sched_name_schedule(sw_sched_explorer *e, uint64_t number, char *buffer, size_t capacity);

// sched_run.c
void sw_sched_fail(sw_sched_run *r, const char *what);
/// Passes the baton if the strategy says so, and returns once this thread has it again.
/// Called with the run's lock held.
void sw_sched_switch(sw_sched_run *r, sw_sched_thread *me, int reason);

// sched_time.c
/// Threads whose deadline has passed stop waiting, timed out.
void sw_sched_expire(sw_sched_run *r);
/// With nothing runnable: moves the clock to the earliest deadline. False if none.
bool sw_sched_advance(sw_sched_run *r);
/// Whether a blocked thread waits with a deadline still ahead.
bool sw_sched_deadline_pending(const sw_sched_run *r);
/// Moves the clock to the earliest deadline ahead, which ends the waits that reach it.
void sw_sched_jump(sw_sched_run *r);

#endif
#endif
