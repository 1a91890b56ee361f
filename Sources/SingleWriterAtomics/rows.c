// Row counts (sw_rows.h).

#include "SingleWriterAtomics.h"

#include <stdatomic.h>

static _Atomic(uint64_t) sw_row_counts[SW_ROWS_MAX];
#if defined(SINGLEWRITER_SCHED)
static _Atomic(int32_t) sw_rows_mode = SW_ROWS_REGISTERED;
#else
static _Atomic(int32_t) sw_rows_mode = SW_ROWS_OFF;
#endif
/// The row this thread last proposed, plus one; 0 for none.
static _Thread_local uint32_t sw_rows_pending;

void sw_rows_set_counting(int32_t mode) {
  atomic_store_explicit(&sw_rows_mode, mode, memory_order_relaxed);
}

int32_t sw_rows_counting(void) {
  return atomic_load_explicit(&sw_rows_mode, memory_order_relaxed);
}

static bool sw_rows_counts_here(void) {
  int32_t mode = atomic_load_explicit(&sw_rows_mode, memory_order_relaxed);
#if defined(SINGLEWRITER_SCHED)
  if (mode == SW_ROWS_REGISTERED) return sw_sched_registered();
#endif
  return mode == SW_ROWS_ALL;
}

void sw_rows_reach(uint32_t row) {
  if (row >= SW_ROWS_MAX || !sw_rows_counts_here()) return;
  atomic_fetch_add_explicit(&sw_row_counts[row], 1, memory_order_relaxed);
}

void sw_rows_propose(uint32_t row) {
  if (atomic_load_explicit(&sw_rows_mode, memory_order_relaxed) == SW_ROWS_OFF) return;
  sw_rows_pending = row + 1;
}

void sw_rows_take(void) {
  uint32_t pending = sw_rows_pending;
  if (pending == 0) return;
  sw_rows_pending = 0;
  sw_rows_reach(pending - 1);
}

uint64_t sw_rows_count(uint32_t row) {
  return row < SW_ROWS_MAX ? atomic_load_explicit(&sw_row_counts[row], memory_order_relaxed) : 0;
}

void sw_rows_reset(void) {
  for (uint32_t row = 0; row < SW_ROWS_MAX; row++) {
    atomic_store_explicit(&sw_row_counts[row], 0, memory_order_relaxed);
  }
}
