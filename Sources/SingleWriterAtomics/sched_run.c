// The deterministic scheduler's runs (-DSINGLEWRITER_SCHED; see sw_sched.h and
// sched_internal.h): the threads of one schedule, the baton they pass, and what a failed
// schedule reports.

#include "sched_internal.h"

#if defined(SINGLEWRITER_SCHED)

#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

_Thread_local sw_sched_thread *sw_sched_self;

// MARK: - Failures

/// Names for words, newest last; shared by every search in the process. Searches of
/// several suites run at once and name their words anew for every schedule: with 64
/// slots, one suite's names pushed out another's while its failing schedule ran (a report
/// said "a word" where the self-test expected the word's name). 4,096 outlast any
/// schedule.
enum { SW_SCHED_NAMES = 4096 };
static struct {
  const void *word;
  char name[24];
} sw_sched_names[SW_SCHED_NAMES];
static unsigned sw_sched_name_count;
static pthread_mutex_t sw_sched_names_lock = PTHREAD_MUTEX_INITIALIZER;

void sw_sched_name_word(const void *word, const char *name) {
  pthread_mutex_lock(&sw_sched_names_lock);
  unsigned slot = sw_sched_name_count++ % SW_SCHED_NAMES;
  sw_sched_names[slot].word = word;
  snprintf(sw_sched_names[slot].name, sizeof sw_sched_names[slot].name, "%s", name);
  pthread_mutex_unlock(&sw_sched_names_lock);
}

/// Writes the word's name, or "a word", into `buffer`.
static void sw_sched_word_name(const void *word, char *buffer, size_t capacity) {
  snprintf(buffer, capacity, "a word");
  pthread_mutex_lock(&sw_sched_names_lock);
  unsigned count = sw_sched_name_count < SW_SCHED_NAMES ? sw_sched_name_count : SW_SCHED_NAMES;
  for (unsigned k = 0; k < count; k++) {
    unsigned slot = (sw_sched_name_count - 1 - k) % SW_SCHED_NAMES;
    if (sw_sched_names[slot].word == word) {
      snprintf(buffer, capacity, "%s", sw_sched_names[slot].name);
      break;
    }
  }
  pthread_mutex_unlock(&sw_sched_names_lock);
}

void sw_sched_fail(sw_sched_run *r, const char *what) {
  if (r->failed) return;
  r->failed = true;
  sw_sched_explorer *e = r->explorer;
  int n = snprintf(e->failure, sizeof e->failure, "%s after %" PRIu64 " steps:", what, r->steps);
  for (int i = 0; i < r->count && n > 0 && (size_t)n < sizeof e->failure; i++) {
    sw_sched_thread *t = &r->threads[i];
    size_t left = sizeof e->failure - (size_t)n;
    if (t->status == SW_BLOCKED) {
      char name[24];
      sw_sched_word_name(t->word, name, sizeof name);
      n += snprintf(e->failure + n, left,
                    " thread %d waits on %s (%p) for a change from %" PRIu32
                    " (it holds %" PRIu32 ")%s;",
                    i, name, (void *)t->word, t->expected,
                    atomic_load_explicit(&t->word->value, memory_order_relaxed),
                    t->timed ? ", with a deadline" : "");
    } else if (t->status == SW_RUNNABLE) {
      n += snprintf(e->failure + n, left, " thread %d %s;", i,
                    i == r->current ? "was running" : "was runnable");
    } else {
      n += snprintf(e->failure + n, left, " thread %d had ended;", i);
    }
  }
  pthread_cond_signal(&r->done);
}

/// Fails the schedule from one of its threads, which then stays blocked for good.
void sw_sched_report(const char *what) {
  sw_sched_thread *me = sw_sched_self;
  sw_sched_run *r = me->run;
  pthread_mutex_lock(&r->lock);
  sw_sched_fail(r, what);
  while (true) pthread_cond_wait(&me->turn, &r->lock);
}

// A crash on a registered thread (an assertion, a trap) ends the process, and with it
// the search: say first which schedule was running, so that it can be run again.
static const int sw_sched_crash_signals[] = {SIGILL, SIGTRAP, SIGABRT, SIGSEGV, SIGBUS};
enum { SW_SCHED_CRASH_SIGNALS = sizeof sw_sched_crash_signals / sizeof(int) };
static struct sigaction sw_sched_crash_previous[SW_SCHED_CRASH_SIGNALS];

static void sw_sched_crashed(int signal) {
  sw_sched_thread *me = sw_sched_self;
  for (int k = 0; k < SW_SCHED_CRASH_SIGNALS; k++) {
    // The handler before this one runs next: the fault happens again as this returns.
    if (sw_sched_crash_signals[k] == signal) sigaction(signal, &sw_sched_crash_previous[k], NULL);
  }
  if (me == NULL) return;
  static const char intro[] = "\ndeterministic scheduler: a scheduled thread crashed in ";
  const char *running = me->run->explorer->running;
  (void)!write(2, intro, sizeof intro - 1);
  (void)!write(2, running, strlen(running));
  (void)!write(2, "\n", 1);
}

static void sw_sched_install_crash_handlers(void) {
  struct sigaction action;
  memset(&action, 0, sizeof action);
  action.sa_handler = sw_sched_crashed;
  sigemptyset(&action.sa_mask);
  for (int k = 0; k < SW_SCHED_CRASH_SIGNALS; k++) {
    sigaction(sw_sched_crash_signals[k], &action, &sw_sched_crash_previous[k]);
  }
}

static void sw_sched_catch_crashes(void) {
  static pthread_once_t once = PTHREAD_ONCE_INIT;
  pthread_once(&once, sw_sched_install_crash_handlers);
}

// MARK: - The baton

void sw_sched_switch(sw_sched_run *r, sw_sched_thread *me, int reason) {
  if (r->failed) goto wait;
  r->steps++;
  r->now += r->explorer->tick;
  if (r->steps > r->explorer->step_bound) {
    sw_sched_fail(r, "livelock (the step bound was reached)");
    goto wait;
  }
  sw_sched_expire(r);
  if (me && me->held && me->status == SW_RUNNABLE && reason != SW_EXIT) return;
  if (sw_sched_choose_jump(r)) sw_sched_jump(r);
  int next = sw_sched_choose(r, me, reason);
  if (next < 0 && sw_sched_advance(r)) next = sw_sched_choose(r, me, reason);
  if (next < 0) {
    bool blocked = false;
    for (int i = 0; i < r->count; i++) blocked |= r->threads[i].status == SW_BLOCKED;
    if (blocked) {
      sw_sched_fail(r, "deadlock (no thread can run and none waits with a deadline)");
    } else {
      r->finished = true;
      pthread_cond_signal(&r->done);
    }
    goto wait;
  }
  r->current = next;
  if (next != me->index) pthread_cond_signal(&r->threads[next].turn);
wait:
  if (reason == SW_EXIT) return;
  // A failed schedule's threads stay here for good.
  while (r->failed || r->current != me->index) pthread_cond_wait(&me->turn, &r->lock);
}

// MARK: - Threads

static void *sw_sched_thread_main(void *argument) {
  sw_sched_thread *me = argument;
  sw_sched_run *r = me->run;
  sw_sched_self = me;
  pthread_mutex_lock(&r->lock);
  while (r->failed || r->current != me->index) pthread_cond_wait(&me->turn, &r->lock);
  pthread_mutex_unlock(&r->lock);
  if (me->spawned) {
    me->spawned(me->spawned_context);
  } else {
    r->body(r->context, me->index);
  }
  pthread_mutex_lock(&r->lock);
  me->status = SW_FINISHED;
  sw_sched_switch(r, me, SW_EXIT);
  pthread_mutex_unlock(&r->lock);
  sw_sched_self = NULL;
  return NULL;
}

/// Adds a runnable thread; the caller holds the lock, or is the only thread.
static sw_sched_thread *sw_sched_add(sw_sched_run *r) {
  if (r->count == SW_SCHED_MAX_THREADS) return NULL;
  sw_sched_thread *t = &r->threads[r->count];
  t->run = r;
  t->index = r->count++;
  t->status = SW_RUNNABLE;
  pthread_cond_init(&t->turn, NULL);
  // PCT: initial priorities lie above the change points' (1 up to the depth).
  t->priority = (int64_t)r->explorer->bound + 1 + (int64_t)(sw_sched_random(r) % 1000);
  return t;
}

bool sw_sched_spawn(void (*body)(void *), void *context) {
  sw_sched_thread *me = sw_sched_self;
  sw_sched_run *r = me->run;
  pthread_mutex_lock(&r->lock);
  sw_sched_thread *t = sw_sched_add(r);
  if (t != NULL) {
    t->spawned = body;
    t->spawned_context = context;
    t->started = pthread_create(&t->handle, NULL, sw_sched_thread_main, t) == 0;
    if (!t->started) t->status = SW_FINISHED;
  }
  sw_sched_switch(r, me, SW_POINT);
  pthread_mutex_unlock(&r->lock);
  return t != NULL && t->started;
}

// MARK: - A schedule

bool sw_sched_run_one(sw_sched_explorer *e, int32_t count, sw_sched_body body, void *context) {
  sw_sched_run *r = calloc(1, sizeof *r);
  if (r == NULL || count < 1 || count > SW_SCHED_MAX_THREADS) abort();
  r->explorer = e;
  r->body = body;
  r->context = context;
  r->random = e->schedule_seed;
  r->now = 1000000000u;  // far from zero, as a real clock would be
  r->current = -1;
  pthread_mutex_init(&r->lock, NULL);
  pthread_cond_init(&r->done, NULL);
  e->trace_length = 0;
  e->failure[0] = 0;
  sw_sched_plan(r);
  sw_sched_name_schedule(e, e->schedules + 1, e->running, sizeof e->running);
  sw_sched_catch_crashes();
  pthread_mutex_lock(&r->lock);
  for (int i = 0; i < count; i++) sw_sched_add(r);
  for (int i = 0; i < count; i++) {
    sw_sched_thread *t = &r->threads[i];
    t->started = pthread_create(&t->handle, NULL, sw_sched_thread_main, t) == 0;
    if (!t->started) abort();
  }
  int first = sw_sched_choose(r, NULL, SW_START);
  r->current = first;
  pthread_cond_signal(&r->threads[first].turn);
  // A thread that blocks outside this layer (a lock or wait that bypasses sw_wait) holds
  // the baton forever: a watchdog on the real clock reports it instead of hanging.
  uint64_t seen = r->steps;
  int idle_seconds = 0;
  while (!r->finished && !r->failed) {
    struct timespec deadline;
    clock_gettime(CLOCK_REALTIME, &deadline);
    deadline.tv_sec += 1;
    if (pthread_cond_timedwait(&r->done, &r->lock, &deadline) == 0) continue;
    if (r->steps != seen) {
      seen = r->steps;
      idle_seconds = 0;
    } else if (++idle_seconds >= e->watchdog) {
      sw_sched_fail(r, "hang (a thread blocked outside the scheduler, in a lock or wait that "
                       "bypasses sw_wait, and no scheduling point came for the watchdog's time)");
    }
  }
  bool failed = r->failed;
  int threads = r->count;
  pthread_mutex_unlock(&r->lock);

  e->schedules++;
  e->steps = r->steps;
  e->timeouts = r->timeouts;
  e->jumps = r->jumps;
  e->threads = threads;
  if (r->steps > e->longest) e->longest = r->steps;
  if (r->pending_points > e->longest_pending) e->longest_pending = r->pending_points;
  sw_sched_name_schedule(e, e->schedules, e->description, sizeof e->description);
  if (failed) {
    // Its threads wait forever; the run and everything they use stay allocated.
    for (int i = 0; i < threads; i++) {
      if (r->threads[i].started) pthread_detach(r->threads[i].handle);
    }
    return false;
  }
  for (int i = 0; i < threads; i++) {
    if (r->threads[i].started) pthread_join(r->threads[i].handle, NULL);
  }
  for (int i = 0; i < threads; i++) pthread_cond_destroy(&r->threads[i].turn);
  pthread_cond_destroy(&r->done);
  pthread_mutex_destroy(&r->lock);
  free(r);
  return true;
}

#endif
