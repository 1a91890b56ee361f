// The deterministic scheduler's search (-DSINGLEWRITER_SCHED; see sw_sched.h and
// sched_internal.h): the explorer that runs one schedule after another, and its two
// strategies, PCT and the bounded exhaustive search, which decide who runs next.

#include "sched_internal.h"

bool sw_sched_available(void) {
#if defined(SINGLEWRITER_SCHED)
  return true;
#else
  return false;
#endif
}

#if defined(SINGLEWRITER_SCHED)

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

uint64_t sw_sched_mix(uint64_t x) {  // splitmix64's finalizer
  x += 0x9E3779B97F4A7C15u;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9u;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBu;
  return x ^ (x >> 31);
}

uint64_t sw_sched_random(sw_sched_run *r) {
  r->random = sw_sched_mix(r->random);
  return r->random;
}

// MARK: - Choosing

/// The exhaustive search's choice among `count` options: replayed from the prefix, else
/// the default. Only choices that have an alternative within the bound are recorded.
int sw_sched_decide(sw_sched_run *r, int count, bool costs) {
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

int sw_sched_choose(sw_sched_run *r, sw_sched_thread *me, int reason) {
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

/// A jump is a choice at each scheduling point where some blocked thread waits with a
/// deadline ahead, up to the bound per schedule. The exhaustive search takes it as an
/// alternative that costs no preemption (the bound is its own); PCT takes it at random
/// points among those, spread over twice the most any schedule had, so that about half its
/// schedules jump and half run on the plain clock.
bool sw_sched_choose_jump(sw_sched_run *r) {
  sw_sched_explorer *e = r->explorer;
  if (e->jump_bound <= 0 || !sw_sched_deadline_pending(r)) return false;
  r->pending_points++;
  if (r->jumps >= e->jump_bound) return false;
  if (e->strategy == SW_SCHED_EXHAUSTIVE) return sw_sched_decide(r, 2, false) == 1;
  for (int j = 0; j < r->jump_count; j++) {
    if (r->jump_points[j] == r->pending_points) return true;
  }
  return false;
}

void sw_sched_plan(sw_sched_run *r) {
  sw_sched_explorer *e = r->explorer;
  if (e->strategy != SW_SCHED_PCT) return;
  // Change points spread over the longest schedule seen so far.
  if (!e->replaying_one || e->length == 0) e->length = e->longest > 16 ? e->longest : 1000;
  uint64_t length = e->length;
  r->change_count = e->bound > 1 ? (e->bound - 1 < 8 ? e->bound - 1 : 8) : 0;
  for (int c = 0; c < r->change_count; c++) {
    r->change_points[c] = 1 + sw_sched_random(r) % length;
  }
  if (!e->replaying_one || e->pending_length == 0) {
    e->pending_length = 2 * (e->longest_pending > 0 ? e->longest_pending : 500);
  }
  r->jump_count = e->jump_bound < SW_SCHED_MAX_JUMPS ? e->jump_bound : SW_SCHED_MAX_JUMPS;
  for (int j = 0; j < r->jump_count; j++) {
    r->jump_points[j] = 1 + sw_sched_random(r) % e->pending_length;
  }
}

// MARK: - The explorer

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
    if (end && *end == '/') e->length = strtoull(end + 1, &end, 0);
    if (end && *end == '/') e->pending_length = strtoull(end + 1, NULL, 0);
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

void sw_sched_explorer_set_jumps(sw_sched_explorer *e, int32_t jumps) { e->jump_bound = jumps; }

void sw_sched_explorer_free(sw_sched_explorer *e) {
  if (e == NULL) return;
  free(e->trace);
  free(e->prefix);
  free(e);
}

void sw_sched_name_schedule(sw_sched_explorer *e, uint64_t number, char *buffer,
                            size_t capacity) {
  if (e->strategy == SW_SCHED_PCT) {
    snprintf(buffer, capacity,
             "PCT schedule %" PRIu64 " of depth %d; run it alone with SINGLEWRITER_SCHED_SEED=%"
             PRIu64 "/%" PRIu64 "/%" PRIu64, number, (int)e->bound, e->schedule_seed,
             e->length, e->pending_length);
  } else {
    snprintf(buffer, capacity,
             "exhaustive schedule %" PRIu64 " (at most %d preemptions, %zu choices replayed)",
             number, (int)e->bound, e->prefix_length);
  }
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
int32_t sw_sched_jumps(const sw_sched_explorer *e) { return e->jumps; }
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
int32_t sw_sched_jumps(const sw_sched_explorer *explorer) {
  (void)explorer;
  return 0;
}
void sw_sched_explorer_set_jumps(sw_sched_explorer *explorer, int32_t jumps) {
  (void)explorer, (void)jumps;
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
void sw_sched_hold(bool hold) { (void)hold; }
void sw_sched_explorer_set_unfair_yields(sw_sched_explorer *explorer, bool unfair) {
  (void)explorer, (void)unfair;
}
uint64_t sw_sched_schedules(const sw_sched_explorer *explorer) {
  (void)explorer;
  return 0;
}

#endif
