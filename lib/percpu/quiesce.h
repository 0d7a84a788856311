/* quiesce.h - writer windows, and the grace period that waits out the open ones.
 *
 * Some counter steps are not atomic with respect to a limit: a fallback update
 * reads the counter's limit and then writes its shard with a compare-and-swap;
 * a fold takes a residue out of its shard and then adds it to a node sum. The
 * scheduler may stop a thread between the two for as long as it likes. A thread
 * that lowers a limit must know that every such step that may have begun under
 * the old limit has finished before it lowers the bound it reports (counter.c,
 * invariant I4). This module gives it that knowledge, the way userspace RCU's
 * membarrier flavour does:
 *
 *   writer:   acct_window_enter(); read limit, write shard or fold; acct_window_exit();
 *   lowerer:  store the new limit; acct_quiesce();  every window open before has closed
 *
 * A window costs two plain stores to a thread-local word: no atomic
 * read-modify-write, no fence, where the kernel offers
 * MEMBARRIER_CMD_PRIVATE_EXPEDITED (Linux 4.14+); acct_quiesce() then makes every
 * running thread execute a full barrier, which orders its window entry against
 * the lowerer's store. Where membarrier is refused, entering a window issues the
 * fence itself. acct_quiesce_init() decides which, once per process.
 *
 * Rules: windows may nest (only the outermost counts); code inside a window must
 * not block or wait for a lowerer (acct_quiesce() waits for it: a window that
 * waited for the lowerer would deadlock); acct_quiesce() must not be called
 * inside a window. Each thread gets a record at its first window; records are
 * never freed, only handed to later threads when their thread exits, so
 * acct_quiesce() reads them without a lock and never makes anyone wait. */
#pragma once

#include <stdbool.h>
#include <stdint.h>

struct acct_window {
	uint64_t seq;   /* odd while its thread is inside a window; written only by that thread */
	unsigned depth; /* nesting, private to the thread */
	bool in_use;    /* owned by a live thread */
	struct acct_window *next; /* immutable once the record is published */
} __attribute__((aligned(64)));

extern _Thread_local struct acct_window *acct_window_self;
/* True unless acct_quiesce_init() registered for expedited membarriers. */
extern bool acct_window_fence;

/* Give the calling thread a record. Returns false when none can be allocated. */
bool acct_window_attach(void);

/* Open a window. Returns true, or false when the thread has no record and none
 * can be allocated (-ENOMEM); the caller must then do without a window (the
 * counter engine adds such updates straight to a node sum, which is exact).
 * Cost: a thread-local store and two predictable branches, plus a full fence
 * where membarrier is unavailable; the thread's first window allocates. */
static inline bool acct_window_enter(void)
{
	struct acct_window *w = acct_window_self;

	if (__builtin_expect(!w, 0)) {
		if (!acct_window_attach())
			return false;
		w = acct_window_self;
	}
	if (w->depth++ == 0) {
		__atomic_store_n(&w->seq, w->seq + 1, __ATOMIC_RELAXED);
		if (__atomic_load_n(&acct_window_fence, __ATOMIC_RELAXED))
			__atomic_thread_fence(__ATOMIC_SEQ_CST);
		else
			__atomic_signal_fence(__ATOMIC_SEQ_CST); /* membarrier stands for the fence */
	}
	return true;
}

/* Close the window opened by the matching, successful acct_window_enter().
 * Cost: one thread-local store. */
static inline void acct_window_exit(void)
{
	struct acct_window *w = acct_window_self;

	if (--w->depth == 0)
		/* Release: what the window did is visible to a lowerer that sees it closed. */
		__atomic_store_n(&w->seq, w->seq + 1, __ATOMIC_RELEASE);
}

/* Register for expedited membarriers so that windows need no fence. Idempotent
 * and thread-safe; call it before creating the objects whose writers use
 * windows. Returns true when windows run without a fence. */
bool acct_quiesce_init(void);

/* Wait until every window that was open at the call has closed. Windows opened
 * after the call has begun may still be open on return, but they observe every
 * store the caller made before the call. Cost: one membarrier (an IPI to each
 * CPU running a thread of this process, microseconds) and a walk of the thread
 * records; waits with sched_yield() for threads preempted inside a window. Must
 * not be called inside a window. Takes no lock. */
void acct_quiesce(void);
