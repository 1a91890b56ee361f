// The deterministic scheduler (-DSINGLEWRITER_SCHED); see sw_sched.h.
//
// One mutex per schedule guards everything, and a thread runs only while `current`
// names it: at each scheduling point it asks the strategy who runs next and, if that is
// another thread, signals that thread's condition variable and sleeps on its own.

#include "SingleWriterAtomics.h"

bool sw_sched_available(void) {
#if defined(SINGLEWRITER_SCHED)
  return true;
#else
  return false;
#endif
}

#if defined(SINGLEWRITER_SCHED)

#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum { SW_SCHED_MAX_THREADS = 16 };

enum { SW_RUNNABLE, SW_BLOCKED, SW_FINISHED };

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
  int32_t watchdog;
  bool unfair_yields;
  uint64_t schedules;
  bool replaying_one;
  uint64_t schedule_seed;
  uint64_t longest;
  /// The length PCT spreads this schedule's change points over: part of its replay key.
  uint64_t length;
  /// Exhaustive: the last schedule's decisions, and the choices the next one replays.
  sw_sched_decision *trace;
  size_t trace_length, trace_capacity;
  uint8_t *prefix;
  size_t prefix_length;
  /// The last schedule.
  char failure[4096];
  char description[256];
  uint32_t timeouts;
  uint64_t steps;
  int32_t threads;
};

static _Thread_local sw_sched_thread *sw_sched_self;

static uint64_t sw_sched_mix(uint64_t x) {  // splitmix64's finalizer
  x += 0x9E3779B97F4A7C15u;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9u;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBu;
  return x ^ (x >> 31);
}

static uint64_t sw_sched_random(sw_sched_run *r) {
  r->random = sw_sched_mix(r->random);
  return r->random;
}

// MARK: - Failures

/// Names for words, newest last; shared by every search in the process.
enum { SW_SCHED_NAMES = 64 };
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

static void sw_sched_fail(sw_sched_run *r, const char *what) {
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

// MARK: - Choosing

/// Threads whose deadline has passed stop waiting, timed out.
static void sw_sched_expire(sw_sched_run *r) {
  for (int i = 0; i < r->count; i++) {
    sw_sched_thread *t = &r->threads[i];
    if (t->status == SW_BLOCKED && t->timed && t->deadline <= r->now) {
      t->status = SW_RUNNABLE;
      t->timed_out = true;
    }
  }
}

/// With nothing runnable: moves the clock to the earliest deadline. False if none.
static bool sw_sched_advance(sw_sched_run *r) {
  uint64_t earliest = UINT64_MAX;
  for (int i = 0; i < r->count; i++) {
    sw_sched_thread *t = &r->threads[i];
    if (t->status == SW_BLOCKED && t->timed && t->deadline < earliest) earliest = t->deadline;
  }
  if (earliest == UINT64_MAX) return false;
  if (earliest > r->now) r->now = earliest;
  sw_sched_expire(r);
  return true;
}

/// The exhaustive search's choice among `count` options: replayed from the prefix, else
/// the default. Only choices that have an alternative within the bound are recorded.
static int sw_sched_decide(sw_sched_run *r, int count, bool costs) {
  sw_sched_explorer *e = r->explorer;
  if (count <= 1 || (costs && r->preemptions >= e->bound)) return 0;
  size_t k = r->decisions++;
  int chosen = 0;
  if (k < e->prefix_length) {
    chosen = e->prefix[k];
    if (chosen >= count) {
      sw_sched_fail(r, "the schedule did not replay (the scenario is not deterministic)");
      chosen = 0;
    }
  }
  if (k >= e->trace_capacity) {
    e->trace_capacity = e->trace_capacity ? e->trace_capacity * 2 : 1024;
    e->trace = realloc(e->trace, e->trace_capacity * sizeof *e->trace);
    if (e->trace == NULL) abort();
  }
  e->trace[k] = (sw_sched_decision){(uint8_t)count, (uint8_t)chosen, costs,
                                    (uint16_t)r->preemptions};
  e->trace_length = k + 1;
  if (costs && chosen != 0) r->preemptions++;
  return chosen;
}

/// Who runs after `me` (NULL at the start), or -1 if nobody can.
static int sw_sched_choose(sw_sched_run *r, sw_sched_thread *me, int reason) {
  int options[SW_SCHED_MAX_THREADS];
  int count = 0;
  int start = me ? me->index : -1;
  bool me_first = me && reason == SW_POINT && me->status == SW_RUNNABLE;
  if (me_first) options[count++] = me->index;
  // The others in round-robin order after `me`, so a yield passes the baton on fairly.
  for (int k = 1; k <= r->count; k++) {
    int i = (start + k + r->count) % r->count;
    if (i == start || r->threads[i].status != SW_RUNNABLE) continue;
    options[count++] = i;
  }
  if (count == 0) {
    // A yield with nobody else to run continues, as do the rest with no alternative.
    return me && me->status == SW_RUNNABLE ? me->index : -1;
  }
  if (r->explorer->strategy == SW_SCHED_EXHAUSTIVE) {
    return options[sw_sched_decide(r, count, me_first)];
  }
  // PCT: at a change point the running thread drops below every initial priority; a
  // yield drops it below everyone.
  if (me && reason == SW_YIELD) me->priority = --r->lowest;
  if (me && reason == SW_POINT) {
    for (int c = 0; c < r->change_count; c++) {
      if (r->change_points[c] == r->steps) me->priority = c + 1;
    }
  }
  int best = options[0];
  for (int k = 1; k < count; k++) {
    if (r->threads[options[k]].priority > r->threads[best].priority) best = options[k];
  }
  if (me_first && best != me->index) r->preemptions++;
  return best;
}

/// Passes the baton if the strategy says so, and returns once this thread has it again.
/// Called with the run's lock held.
static void sw_sched_switch(sw_sched_run *r, sw_sched_thread *me, int reason) {
  if (r->failed) goto wait;
  r->steps++;
  r->now += r->explorer->tick;
  if (r->steps > r->explorer->step_bound) {
    sw_sched_fail(r, "livelock (the step bound was reached)");
    goto wait;
  }
  sw_sched_expire(r);
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

// MARK: - Hooks

bool sw_sched_registered(void) { return sw_sched_self != NULL; }

void sw_sched_point(void) {
  sw_sched_thread *me = sw_sched_self;
  if (me == NULL) return;
  pthread_mutex_lock(&me->run->lock);
  sw_sched_switch(me->run, me, SW_POINT);
  pthread_mutex_unlock(&me->run->lock);
}

bool sw_sched_yield(void) {
  sw_sched_thread *me = sw_sched_self;
  if (me == NULL) return false;
  pthread_mutex_lock(&me->run->lock);
  sw_sched_switch(me->run, me, me->run->explorer->unfair_yields ? SW_POINT : SW_YIELD);
  pthread_mutex_unlock(&me->run->lock);
  return true;
}

uint64_t sw_sched_now(void) {
  sw_sched_thread *me = sw_sched_self;
  pthread_mutex_lock(&me->run->lock);
  sw_sched_switch(me->run, me, SW_POINT);
  uint64_t now = me->run->now;
  pthread_mutex_unlock(&me->run->lock);
  return now;
}

bool sw_sched_wait(void *word, uint32_t expected, int64_t nanoseconds) {
  sw_sched_thread *me = sw_sched_self;
  sw_sched_run *r = me->run;
  pthread_mutex_lock(&r->lock);
  sw_sched_switch(r, me, SW_POINT);
  sw_atomic_u32 *a = word;
  bool woken = true;
  if (atomic_load_explicit(&a->value, memory_order_relaxed) == expected) {
    // Returning at once is allowed, and callers must cope: the search may choose it, up
    // to a bound per schedule (each one a preemption for the exhaustive search).
    bool spurious = false;
    if (r->spurious < (uint32_t)r->explorer->spurious_bound) {
      if (r->explorer->strategy == SW_SCHED_EXHAUSTIVE) {
        spurious = sw_sched_decide(r, 2, true) == 1;
      } else {
        spurious = (sw_sched_random(r) & 7) == 0;
      }
    }
    if (spurious) {
      r->spurious++;
    } else {
      me->status = SW_BLOCKED;
      me->word = a;
      me->expected = expected;
      me->timed = nanoseconds >= 0;
      me->timed_out = false;
      me->deadline = me->timed ? r->now + (uint64_t)nanoseconds : 0;
      me->blocked_at = ++r->blocks;
      sw_sched_switch(r, me, SW_BLOCK);
      if (me->timed_out) {
        woken = false;
        r->timeouts++;
      }
    }
  }
  pthread_mutex_unlock(&r->lock);
  return woken;
}

void sw_sched_wake(void *word, bool all) {
  sw_sched_thread *me = sw_sched_self;
  sw_sched_run *r = me->run;
  pthread_mutex_lock(&r->lock);
  sw_sched_switch(r, me, SW_POINT);
  for (;;) {
    sw_sched_thread *first = NULL;
    for (int i = 0; i < r->count; i++) {
      sw_sched_thread *t = &r->threads[i];
      if (t->status != SW_BLOCKED || t->word != word) continue;
      if (first == NULL || t->blocked_at < first->blocked_at) first = t;
    }
    if (first == NULL) break;
    first->status = SW_RUNNABLE;
    first->timed_out = false;
    if (!all) break;
  }
  pthread_mutex_unlock(&r->lock);
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

// MARK: - The search

sw_sched_explorer *sw_sched_explorer_new(int32_t strategy, int32_t bound, uint64_t seed) {
  sw_sched_explorer *e = calloc(1, sizeof *e);
  if (e == NULL) return NULL;
  e->strategy = strategy;
  e->bound = bound;
  e->seed = seed;
  e->tick = 100;
  e->step_bound = 200000;
  e->spurious_bound = 1;
  e->watchdog = 30;
  e->schedule_seed = sw_sched_mix(seed);
  const char *replay = getenv("SINGLEWRITER_SCHED_SEED");
  if (strategy == SW_SCHED_PCT && replay && *replay) {
    char *end = NULL;
    e->schedule_seed = strtoull(replay, &end, 0);
    if (end && *end == '/') e->length = strtoull(end + 1, NULL, 0);
    e->replaying_one = true;
  }
  return e;
}

void sw_sched_explorer_configure(sw_sched_explorer *e, uint64_t tick_ns, uint64_t step_bound,
                                 int32_t spurious_wakes, int32_t watchdog_seconds) {
  e->tick = tick_ns;
  e->step_bound = step_bound;
  e->spurious_bound = spurious_wakes;
  e->watchdog = watchdog_seconds;
}

void sw_sched_explorer_set_unfair_yields(sw_sched_explorer *e, bool unfair) {
  e->unfair_yields = unfair;
}

void sw_sched_explorer_free(sw_sched_explorer *e) {
  if (e == NULL) return;
  free(e->trace);
  free(e->prefix);
  free(e);
}

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
  if (e->strategy == SW_SCHED_PCT) {
    // Change points spread over the longest schedule seen so far.
    if (!e->replaying_one || e->length == 0) e->length = e->longest > 16 ? e->longest : 1000;
    uint64_t length = e->length;
    r->change_count = e->bound > 1 ? (e->bound - 1 < 8 ? e->bound - 1 : 8) : 0;
    for (int c = 0; c < r->change_count; c++) {
      r->change_points[c] = 1 + sw_sched_random(r) % length;
    }
  }
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
  e->threads = threads;
  if (r->steps > e->longest) e->longest = r->steps;
  if (e->strategy == SW_SCHED_PCT) {
    snprintf(e->description, sizeof e->description,
             "PCT schedule %" PRIu64 " of depth %d; run it alone with SINGLEWRITER_SCHED_SEED=%"
             PRIu64 "/%" PRIu64, e->schedules, (int)e->bound, e->schedule_seed, e->length);
  } else {
    snprintf(e->description, sizeof e->description,
             "exhaustive schedule %" PRIu64 " (at most %d preemptions, %zu choices replayed)",
             e->schedules, (int)e->bound, e->prefix_length);
  }
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

bool sw_sched_next(sw_sched_explorer *e) {
  if (e->strategy == SW_SCHED_PCT) {
    if (e->replaying_one) return false;
    e->schedule_seed = sw_sched_mix(e->seed ^ sw_sched_mix(e->schedules));
    return true;
  }
  // Backtrack: the deepest choice with an alternative left within the bound.
  for (size_t k = e->trace_length; k-- > 0;) {
    sw_sched_decision d = e->trace[k];
    int next = d.chosen + 1;
    if (next >= d.count) continue;
    if (d.costs && d.preemptions_before + 1 > e->bound) continue;
    free(e->prefix);
    e->prefix = malloc(k + 1);
    if (e->prefix == NULL) abort();
    for (size_t i = 0; i < k; i++) e->prefix[i] = e->trace[i].chosen;
    e->prefix[k] = (uint8_t)next;
    e->prefix_length = k + 1;
    return true;
  }
  return false;
}

const char *sw_sched_failure(const sw_sched_explorer *e) { return e->failure; }
const char *sw_sched_describe(const sw_sched_explorer *e) { return e->description; }
uint32_t sw_sched_timeouts(const sw_sched_explorer *e) { return e->timeouts; }
uint64_t sw_sched_steps(const sw_sched_explorer *e) { return e->steps; }
int32_t sw_sched_threads(const sw_sched_explorer *e) { return e->threads; }
uint64_t sw_sched_schedules(const sw_sched_explorer *e) { return e->schedules; }

#else

// Stubs, so the tests link in every build mode; sw_sched_available says not to call them.
sw_sched_explorer *sw_sched_explorer_new(int32_t strategy, int32_t bound, uint64_t seed) {
  (void)strategy, (void)bound, (void)seed;
  return NULL;
}
void sw_sched_explorer_free(sw_sched_explorer *explorer) { (void)explorer; }
void sw_sched_explorer_configure(sw_sched_explorer *explorer, uint64_t tick_ns,
                                 uint64_t step_bound, int32_t spurious_wakes,
                                 int32_t watchdog_seconds) {
  (void)explorer, (void)tick_ns, (void)step_bound, (void)spurious_wakes, (void)watchdog_seconds;
}
bool sw_sched_run_one(sw_sched_explorer *explorer, int32_t count, sw_sched_body body,
                      void *context) {
  (void)explorer, (void)count, (void)body, (void)context;
  return false;
}
bool sw_sched_next(sw_sched_explorer *explorer) {
  (void)explorer;
  return false;
}
const char *sw_sched_failure(const sw_sched_explorer *explorer) {
  (void)explorer;
  return "the C layer was built without SINGLEWRITER_SCHED";
}
const char *sw_sched_describe(const sw_sched_explorer *explorer) {
  (void)explorer;
  return "";
}
uint32_t sw_sched_timeouts(const sw_sched_explorer *explorer) {
  (void)explorer;
  return 0;
}
uint64_t sw_sched_steps(const sw_sched_explorer *explorer) {
  (void)explorer;
  return 0;
}
int32_t sw_sched_threads(const sw_sched_explorer *explorer) {
  (void)explorer;
  return 0;
}
void sw_sched_name_word(const void *word, const char *name) { (void)word, (void)name; }
void sw_sched_explorer_set_unfair_yields(sw_sched_explorer *explorer, bool unfair) {
  (void)explorer, (void)unfair;
}
uint64_t sw_sched_schedules(const sw_sched_explorer *explorer) {
  (void)explorer;
  return 0;
}

#endif
