// Counts of the rows of the hand-off's transition tables that threads reached: the
// coverage the deterministic scheduler reports (see TransitionRow.swift). Debug builds of
// the Swift library call these at each row's transition; release builds compile the
// calls away. None of them is a scheduling point, and none changes what a thread does.

#ifndef SW_ROWS_H
#define SW_ROWS_H

#include <stdbool.h>
#include <stdint.h>

/// The most rows there can be.
enum { SW_ROWS_MAX = 256 };

/// Which threads count rows: none; the scheduler's registered threads (the default in a
/// SINGLEWRITER_SCHED build, none otherwise); or every thread.
enum { SW_ROWS_OFF = 0, SW_ROWS_REGISTERED = 1, SW_ROWS_ALL = 2 };

void sw_rows_set_counting(int32_t mode);
int32_t sw_rows_counting(void);

/// Counts `row` as reached: for transitions taken where they are decided (under a lock).
void sw_rows_reach(uint32_t row);

/// Proposes `row` for this thread's transition under way: for pure transitions that a
/// compare-and-exchange may retry or refuse. Replaces any earlier proposal.
void sw_rows_propose(uint32_t row);

/// This thread's compare-and-exchange succeeded: counts the row last proposed, once.
void sw_rows_take(void);

/// How many times `row` was reached since the last reset.
uint64_t sw_rows_count(uint32_t row);

void sw_rows_reset(void);

#endif
