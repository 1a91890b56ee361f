// The deterministic scheduler's hooks (-DSINGLEWRITER_SCHED; see sw_sched.h and
// sched_internal.h): what the C layer's atomics, waits, wakes, yields and clock reads do
// on a registered thread, and the virtual time that timed waits run on.

#include "sched_internal.h"

#if defined(SINGLEWRITER_SCHED)

// MARK: - Virtual time

void sw_sched_expire(sw_sched_run *r) {
  for (int i = 0; i < r->count; i++) {
    sw_sched_thread *t = &r->threads[i];
    if (t->status == SW_BLOCKED && t->timed && t->deadline <= r->now) {
      t->status = SW_RUNNABLE;
      t->timed_out = true;
    }
  }
}

bool sw_sched_advance(sw_sched_run *r) {
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

bool sw_sched_deadline_pending(const sw_sched_run *r) {
  for (int i = 0; i < r->count; i++) {
    const sw_sched_thread *t = &r->threads[i];
    if (t->status == SW_BLOCKED && t->timed && t->deadline > r->now) return true;
  }
  return false;
}

void sw_sched_jump(sw_sched_run *r) {
  uint64_t earliest = UINT64_MAX;
  for (int i = 0; i < r->count; i++) {
    sw_sched_thread *t = &r->threads[i];
    if (t->status == SW_BLOCKED && t->timed && t->deadline > r->now && t->deadline < earliest) {
      earliest = t->deadline;
    }
  }
  if (earliest == UINT64_MAX) return;
  r->now = earliest;
  r->jumps++;
  sw_sched_expire(r);
}

// MARK: - Hooks

bool sw_sched_registered(void) { return sw_sched_self != NULL; }

void sw_sched_hold(bool hold) {
  sw_sched_thread *me = sw_sched_self;
  if (me == NULL) return;
  pthread_mutex_lock(&me->run->lock);
  me->held = hold;
  pthread_mutex_unlock(&me->run->lock);
}

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

#endif
