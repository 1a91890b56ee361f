// The synchronization state of one ThreadSafeSingleWriter, in one allocation: the state
// word, the hand-off's lock, and the side words that can be neither a bit of the word
// nor guarded by the lock.

#ifndef SW_WRITER_H
#define SW_WRITER_H

#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "sw_atomics.h"
#include "sw_gate.h"
#include "sw_wait.h"

// Every pointer here is non-null, so that Swift imports the accessors' results as plain
// pointers, with no check on each access.
#pragma clang assume_nonnull begin

/// One optimistic read of a value that has no references to count (a "POD" type), for a
/// seqlock: the writer makes `sequence` odd for the length of each write. The copy may
/// race with a write by design, and the unchanged even sequence proves it did not, so
/// ThreadSanitizer is told not to look at it. A reader that fails retries or takes the
/// lock instead; no reference is ever read torn, because there are none.
__attribute__((no_sanitize("thread")))
static inline bool sw_seq_try_copy(sw_atomic_u32 *sequence, void *destination,
                                   const void *source, size_t size) {
  SW_CHAOS();
  uint32_t before = atomic_load_explicit(&sequence->value, memory_order_acquire);
  if (before & 1) return false;
  memcpy(destination, source, size);
  atomic_thread_fence(memory_order_acquire);
  uint32_t after = atomic_load_explicit(&sequence->value, memory_order_relaxed);
  SW_CHAOS();
  return before == after;
}

/// The high bit of `sequence`: closure writes should take the priority gate (sw_gate.h),
/// since a thread slept for the writer lately. It lives here so that a closure write finds
/// it in the value it loads anyway to bump the sequence, at no cost while it is clear.
/// Writers carry it through their increments; a sleeper sets it with an atomic OR, which a
/// writer's plain store may undo (the sleeper sets it again when it next sleeps); a carry
/// out of the count may flip it once every 2^31 writes, which gates or frees one write.
/// Readers compare whole values, so a change to it only makes one read retry.
#define SW_SEQ_GATE_WANTED 0x80000000u

/// The writer's half: odd before a write access, even after. Only the holder of the
/// write access stores, so no read-modify-write is needed. Returns the value it found.
static inline uint32_t sw_seq_begin_write_seen(sw_atomic_u32 *sequence) {
  SW_SCHED_POINT();
  uint32_t s = atomic_load_explicit(&sequence->value, memory_order_relaxed);
  atomic_store_explicit(&sequence->value, s + 1, memory_order_relaxed);
  atomic_thread_fence(memory_order_release);
  return s;
}

static inline uint32_t sw_seq_end_write_seen(sw_atomic_u32 *sequence) {
  SW_SCHED_POINT();
  uint32_t s = atomic_load_explicit(&sequence->value, memory_order_relaxed);
  atomic_store_explicit(&sequence->value, s + 1, memory_order_release);
  return s;
}

static inline void sw_seq_begin_write(sw_atomic_u32 *sequence) {
  (void)sw_seq_begin_write_seen(sequence);
}

static inline void sw_seq_end_write(sw_atomic_u32 *sequence) {
  (void)sw_seq_end_write_seen(sequence);
}

/// The size of a cache line, or of the unit that the hardware moves between cores:
/// Apple's arm64 cores use 128 bytes, the x86-64 and other arm64 cores we target 64.
#if defined(__APPLE__) && defined(__aarch64__)
#define SW_CACHE_LINE 128
#else
#define SW_CACHE_LINE 64
#endif

/// Three groups, each on a cache line of its own (the allocation is line-aligned, and each
/// group is padded to a line by a union, which Swift imports, unlike `_Alignas`). The
/// holder's group is written on every write access; the hand-off's group by every
/// `writeNext` that finds the writer busy; the server's group by the thread running the
/// queue, per write. Sharing a line, each side's stores evicted the other's copy, and
/// under contention every queued write paid for the line's moves.
///
/// Everything else about the protocol lives in the state word or behind `hand_off_lock`;
/// each word here says why it can be neither.
typedef struct {
  union {
  struct {
  /// The state word: checkout, queue, value-lock and observation bits, and the reader
  /// count (WriterWord.swift names them).
  sw_atomic_u32 state;
  /// Odd while a write access is in progress: readers of plain values copy under it
  /// optimistically, with no read-modify-write, so it cannot be a bit of `state`. Its
  /// high bit asks closure writes to take `gate` (SW_SEQ_GATE_WANTED).
  sw_atomic_u32 sequence;
  /// Bumped, then woken, when a checkout ends while a `withWriter` is parked: parked
  /// threads sleep on it, since `state` changes on every access and would wake them.
  sw_atomic_u32 park_sequence;
  /// The generation of the current `writeNext` lend, shifted left by two; bit 0 is set
  /// while the end of a lend is being resolved, bit 1 while an access sleeps until it is.
  /// A generation needs the bits the state word does not have.
  sw_atomic_u32 lend_word;
  /// How many rounds a blocked `withWriter` spins before it parks, adapted to how often
  /// spinning has paid off; a tuning, not a state.
  sw_atomic_u32 spin_rounds;
  /// How many more closure writes take `gate` while SW_SEQ_GATE_WANTED is set: set by a
  /// thread that sleeps for the writer, counted down by each write that takes it, which
  /// clears the bit at zero; a tuning, like `spin_rounds`.
  sw_atomic_u32 gate_wanted;
  /// Held by the thread running a closure write, or serving the queue, while `gate_wanted`
  /// asks for it: a thread sleeping for the writer sleeps on it and boosts that thread.
  /// A lock of the OS's own (sw_gate.h), so it cannot be a bit of `state`.
  sw_gate gate;
  /// The word the last closure write's begin set, stored by it: its end expects that word
  /// back, and the next begin expects its `observed` bit, so that a write to an observed
  /// container needs no more compare-and-exchanges than an unobserved one. Only a guess:
  /// a stale one costs a retry, never a wrong transition.
  sw_atomic_u32 closure_word;
  /// The thread running a closure write, a served queue or an in-place `writeNext` body,
  /// tagged with the low bit, or 0: scopes that end before their thread does.
  sw_atomic_uptr checkout_thread;
  /// Who is inside a write access, or 0: the thread, or, for an access through a proxy
  /// that owns its checkout made in a task, that task (it may suspend inside the access,
  /// and resume on another thread); only for catching self-deadlock.
  sw_atomic_uptr writing_thread;
  /// Who took the checkout through a proxy that owns it (`sw_current_holder`), or 0: for
  /// the bounded backlog, the warnings and `drained()`, which must not take a caller that
  /// came later for it.
  sw_atomic_uptr checkout_holder;
  /// 1 while a write access through a proxy holds the value (WriterLock+ProxyAccess.swift
  /// gives its protocol). Apart from `state`, so that the access ends with a plain store:
  /// only the access writes it, while anyone may change `state` meanwhile. On the line of
  /// `state`, which every reader loads it with.
  sw_atomic_u32 proxy_access;
  /// How many threads sleep, or are about to, until `proxy_access` clears.
  sw_atomic_u32 proxy_access_sleepers;
  };
  char holder_line[SW_CACHE_LINE];
  };

  // The hand-off's group: what an enqueuer touches.
  union {
  struct {
  /// 1 while the state word has `queued`, written with it under `hand_off_lock`: lets a
  /// `writeNext` see that writes wait without reading the holder's line.
  sw_atomic_u32 queued_hint;
  /// Guards the hand-off (HandOff.swift): held for one append, or one batch decision.
  sw_mutex hand_off_lock;
  /// How many times a thread has slept on `gate`; for tests and diagnostics.
  sw_atomic_u32 gate_sleeps;
  /// How many writes have queued since the container was made (not `drained()`'s
  /// markers); stored under `hand_off_lock`. With `started_writes`, it gives
  /// `queuedWrites` without a lock, and the bound of a bounded backlog.
  sw_atomic_uptr arrived_writes;
  };
  char hand_off_line[SW_CACHE_LINE];
  };

  // The server's group: what the thread running queued writes stores per write, apart
  // from the enqueuers' line, so that counting costs neither side a line move.
  union {
  struct {
  /// How many queued writes a server has started; stored only by the checkout's holder.
  sw_atomic_uptr started_writes;
  /// How many entries servers have taken to run, drain markers and waiters included: the
  /// position of the one running, against what a server owes (HandOff.swift). Touched
  /// only by the checkout's holder, so a plain field, ordered like the value by the state
  /// word's acquire and release. Stored per entry: on the enqueuers' line, or among the
  /// container's own fields, which every `writeNext` reads, each store cost them a move.
  uint64_t ran;
  /// Set by a `writeNext` that waits for room in a bounded backlog; the server clears it
  /// and bumps `room` when it starts a write.
  sw_atomic_u32 room_wanted;
  /// What writes waiting for room sleep on.
  sw_atomic_u32 room;
  /// 1 once a thread that queued was chosen to take over serving, stored under
  /// `hand_off_lock`: a server past its millisecond looks here after every entry, and
  /// takes the lock to hand over only when it is set.
  sw_atomic_u32 successor_hint;
  /// 1 while the checkout's holder is an async `transaction`, whose holder
  /// (`checkout_holder`) cannot release it before its body returns: a wait for the writer
  /// by that same task inside the body could never end, and stops with a message. Read
  /// only by waits, which have found the writer busy; on this line, which they do not
  /// contend for.
  sw_atomic_u32 transaction_held;
  /// The word the last commit's write access began from, stored when it changes: the
  /// next expects it instead of loading `state` first, since a load of a word that a locked
  /// exchange has just written waits for that exchange to complete. Only a guess, like
  /// `closure_word`: a stale one costs a retry, never a wrong transition. On this line,
  /// which only the checkout's holder writes; the holder's line is full.
  sw_atomic_u32 access_word;
  /// The thread holding `gate`, or 0: which the lock itself does not tell portably. Here,
  /// not on the holder's line, which is full: stored only by a write that takes the gate.
  sw_atomic_uptr gate_thread;
  /// 1 once an access through a proxy has begun in the checkout held now, until the
  /// checkout's end takes it: an observed end publishes, and consumers meanwhile find the
  /// value half done. Stored by the access with a plain store, instead of a locked
  /// operation on `state`; on this line, which only the checkout's holder writes.
  sw_atomic_u32 proxy_wrote;
  };
  char server_line[SW_CACHE_LINE];
  };
} sw_ts_sync;

// Each group fits its line, so each group starts exactly a line after the one before;
// checked for every target by Scripts/cross-compile-c.sh.
_Static_assert(offsetof(sw_ts_sync, queued_hint) == SW_CACHE_LINE, "holder group overflows");
_Static_assert(offsetof(sw_ts_sync, started_writes) == 2 * SW_CACHE_LINE,
               "hand-off group overflows");
_Static_assert(sizeof(sw_ts_sync) == 3 * SW_CACHE_LINE, "server group overflows");

static inline sw_atomic_u32 *sw_ts_state(sw_ts_sync *s) { return &s->state; }
static inline sw_atomic_u32 *sw_ts_sequence(sw_ts_sync *s) { return &s->sequence; }
static inline sw_atomic_u32 *sw_ts_park_sequence(sw_ts_sync *s) { return &s->park_sequence; }
static inline sw_atomic_u32 *sw_ts_spin_rounds(sw_ts_sync *s) { return &s->spin_rounds; }
static inline sw_atomic_u32 *sw_ts_queued_hint(sw_ts_sync *s) { return &s->queued_hint; }
static inline sw_atomic_u32 *sw_ts_access_word(sw_ts_sync *s) { return &s->access_word; }
static inline sw_atomic_u32 *sw_ts_proxy_access(sw_ts_sync *s) { return &s->proxy_access; }
static inline sw_atomic_u32 *sw_ts_proxy_wrote(sw_ts_sync *s) { return &s->proxy_wrote; }
static inline sw_atomic_u32 *sw_ts_proxy_access_sleepers(sw_ts_sync *s) {
  return &s->proxy_access_sleepers;
}
static inline sw_mutex *sw_ts_hand_off_lock(sw_ts_sync *s) { return &s->hand_off_lock; }
static inline sw_atomic_uptr *sw_ts_checkout_thread(sw_ts_sync *s) { return &s->checkout_thread; }
static inline sw_atomic_uptr *sw_ts_writing_thread(sw_ts_sync *s) { return &s->writing_thread; }
static inline sw_atomic_uptr *sw_ts_checkout_holder(sw_ts_sync *s) { return &s->checkout_holder; }
static inline sw_atomic_u32 *sw_ts_lend_word(sw_ts_sync *s) { return &s->lend_word; }
static inline sw_atomic_u32 *sw_ts_gate_wanted(sw_ts_sync *s) { return &s->gate_wanted; }
static inline sw_atomic_u32 *sw_ts_closure_word(sw_ts_sync *s) { return &s->closure_word; }
static inline sw_gate *sw_ts_gate(sw_ts_sync *s) { return &s->gate; }
static inline sw_atomic_uptr *sw_ts_gate_thread(sw_ts_sync *s) { return &s->gate_thread; }
static inline sw_atomic_u32 *sw_ts_gate_sleeps(sw_ts_sync *s) { return &s->gate_sleeps; }
static inline sw_atomic_uptr *sw_ts_arrived_writes(sw_ts_sync *s) { return &s->arrived_writes; }
static inline sw_atomic_uptr *sw_ts_started_writes(sw_ts_sync *s) { return &s->started_writes; }
static inline uint64_t *sw_ts_ran(sw_ts_sync *s) { return &s->ran; }
static inline sw_atomic_u32 *sw_ts_room_wanted(sw_ts_sync *s) { return &s->room_wanted; }
static inline sw_atomic_u32 *sw_ts_room(sw_ts_sync *s) { return &s->room; }
static inline sw_atomic_u32 *sw_ts_successor_hint(sw_ts_sync *s) { return &s->successor_hint; }
static inline sw_atomic_u32 *sw_ts_transaction_held(sw_ts_sync *s) {
  return &s->transaction_held;
}

/// `transaction_held`, loaded with no scheduling or chaos point: it only decides whether a
/// wait stops with a message, so the deterministic scheduler explores waits as it did
/// before the word existed.
static inline bool sw_ts_transaction_is_held(sw_ts_sync *s) {
  return atomic_load_explicit(&s->transaction_held.value, memory_order_acquire) != 0;
}

#pragma clang assume_nonnull end

#endif
