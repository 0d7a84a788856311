/* worker.h - the lifecycle of a module's own threads: start them named and
 * with signals blocked, share one lock and one wake-up with them, stop and
 * join them, within a deadline where shutdown must not wait on them.
 *
 * A worker is one to WORKER_THREADS_MAX threads running the module's `main`
 * over the module's state, which the worker's lock guards. What is queued,
 * how a newer job replaces an older one, and whether queued work is done or
 * dropped at a stop are the module's: its main loop reads them under the
 * lock, the way the history recorder, the state writer and the history
 * queries each do:
 *
 *	worker_lock(w);
 *	for (;;) {
 *		while (!have_work(m) && !worker_stopping(w))
 *			worker_wait(w);
 *		if (!have_work(m))
 *			break;              (stopping, nothing left: done)
 *		take the work; worker_unlock(w); do it; worker_lock(w);
 *	}
 *	worker_unlock(w);
 *
 * A wake-up is never lost: the module changes its state and wakes under the
 * lock, and the thread tests the state under the same lock before it waits.
 * Wake-ups coalesce: ten made while the thread is busy are one more look at
 * the state. A stop is a wake-up that worker_stopping() then reports; a loop
 * written as above finishes what was queued before it (ask for the stop
 * after the last job); a loop that tests worker_stopping() first drops it.
 *
 * Thread safety: worker_lock(), worker_unlock(), worker_wake*() and
 * worker_stopping() from any thread; worker_wait() only with the lock held;
 * worker_new(), worker_start(), worker_stop() and worker_free() from one
 * thread that is not one of the worker's (the owner), never concurrently
 * with each other. */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#define WORKER_THREADS_MAX 64
/* worker_stop()'s timeout: wait as long as the threads take. */
#define WORKER_WAIT_FOREVER UINT64_MAX

struct worker;

/* A thread's work: runs until it returns (normally when worker_stopping()).
 * `index` is the thread's, 0 .. nr_threads - 1, for per-thread state. */
typedef void (*worker_main_fn)(struct worker *w, unsigned index, void *userdata);

/* A worker of `nr_threads` (1 .. WORKER_THREADS_MAX) threads that will run
 * fn(w, index, userdata), not started yet: its lock may be used, and the
 * module may keep *ret in its state before any thread reads it. userdata
 * must outlive the worker. Returns 0 and *ret, -EINVAL for a bad count,
 * -ENOMEM. */
int worker_new(const char *name, unsigned nr_threads, worker_main_fn fn, void *userdata, struct worker **ret);

/* Start the threads. Each is named `name` (truncated to the 15 bytes Linux
 * keeps: top -H, ps -L, /proc/PID/task/TID/comm; NULL: unnamed) before fn
 * runs, and starts with every signal blocked, so that signals reach the
 * thread that handles them (the event loop's). Returns 0; -EBUSY when
 * started (or stopped) before; or the negative errno of pthread_create()
 * (-EAGAIN: no thread could be made), in which case the threads already
 * started were stopped and joined (their fn saw worker_stopping() and
 * returned) and the worker is stopped: worker_free() it. Cost: one thread
 * creation (tens of microseconds) per thread. */
int worker_start(struct worker *w);

/* The lock that guards the module's state shared with the threads. Not
 * recursive. Uncontended: an atomic operation. */
void worker_lock(struct worker *w);
void worker_unlock(struct worker *w);

/* With the lock held: sleep until a wake-up or a stop, then return with the
 * lock held again. May return without either (spuriously): always test the
 * state in a loop around it. */
void worker_wait(struct worker *w);

/* Wake one waiting thread (worker_wake_one_locked(), for one job), or all of
 * them (worker_wake_all_locked(): several threads may take work, or a job
 * done may let a waiting one take another). The _locked forms are called
 * with the lock held, after the state changed; worker_wake() takes the lock
 * itself and wakes all, for a module with one thread whose state changed
 * outside the lock (atomics). Cost: a futex wake-up when a thread sleeps,
 * else nothing beyond the lock. */
void worker_wake_one_locked(struct worker *w);
void worker_wake_all_locked(struct worker *w);
void worker_wake(struct worker *w);

/* Whether worker_stop() was called: true from then on. Any thread, with or
 * without the lock (an acquire load: a long job may poll it, as the history
 * queries' SQLite progress handler does). */
bool worker_stopping(const struct worker *w);

/* Ask the threads to stop (worker_stopping() true, every thread woken) and
 * wait until each main returned, at most `timeout_us` in all
 * (WORKER_WAIT_FOREVER: no limit), then join them. Returns 0 when every
 * thread was joined; -ETIMEDOUT when one was still running at the deadline:
 * those are detached and left running, and the worker and the userdata they
 * read must then stay allocated (worker_free() keeps the worker; the module
 * keeps its own): the process is ending. Calling it again returns the same
 * without waiting. The time it takes is the longest a thread's main takes to
 * return after the stop. */
int worker_stop(struct worker *w, uint64_t timeout_us);

/* worker_stop(w, WORKER_WAIT_FOREVER) and free, unless a stop timed out
 * (then the worker stays allocated for its threads). Accepts NULL; returns
 * NULL. */
struct worker *worker_free(struct worker *w);
