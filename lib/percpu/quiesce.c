/* quiesce.c - thread records for writer windows, and acct_quiesce().
 *
 * The argument (the one userspace RCU's membarrier flavour makes): a lowerer
 * stores a new limit, then runs membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED),
 * which executes a full barrier on every CPU that runs a thread of this process
 * (a thread that is not running passed one when it was switched out). For each
 * window, either its entry store (seq odd) precedes that barrier, and the walk
 * below sees it open and waits for seq to change, or the entry follows the
 * barrier, and everything the window reads afterwards (the limit) is at least
 * as new as the lowerer's store. Without membarrier the window's own fence and
 * the lowerer's fence make the same pair (a store then a load on both sides:
 * Dekker's pattern).
 *
 * Records live on one list that only grows (a push is a compare-and-swap on its
 * head) and are never freed: when a thread exits its record is marked free and
 * a later thread takes it over, with seq continuing from where it was. So the
 * walk needs no lock, and a record whose seq changed has closed the window the
 * walk saw, whichever thread owns it now. */
#include "quiesce.h"

#include <linux/membarrier.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>

_Thread_local struct acct_window *acct_window_self;
bool acct_window_fence = true;

static struct acct_window *records;
static pthread_key_t exit_key;
static bool key_ok;
static pthread_once_t key_once = PTHREAD_ONCE_INIT;
static pthread_once_t init_once = PTHREAD_ONCE_INIT;
static bool use_membarrier;

static int membarrier(int cmd, unsigned flags)
{
	return (int)syscall(__NR_membarrier, cmd, flags, 0);
}

/* pthread key destructor: the thread is exiting, outside any window. */
static void thread_exit(void *arg)
{
	struct acct_window *w = arg;
	__atomic_store_n(&w->in_use, false, __ATOMIC_RELEASE);
}

/* After fork() only the forking thread exists in the child; the others'
 * records are copies that nobody will ever close. */
static void atfork_child(void)
{
	for (struct acct_window *w = records; w; w = w->next) {
		if (w == acct_window_self)
			continue;
		if (w->seq & 1)
			w->seq++;
		w->depth = 0;
		w->in_use = false;
	}
}

static void make_key(void)
{
	key_ok = pthread_key_create(&exit_key, thread_exit) == 0;
	(void)pthread_atfork(NULL, NULL, atfork_child);
}

bool acct_window_attach(void)
{
	struct acct_window *w;

	(void)pthread_once(&key_once, make_key);
	if (!key_ok)
		return false; /* a record we could not give back would leak per thread */

	/* A record left by an exited thread, else a new one. */
	for (w = __atomic_load_n(&records, __ATOMIC_ACQUIRE); w; w = w->next) {
		bool free_ = false;
		if (!__atomic_load_n(&w->in_use, __ATOMIC_RELAXED) &&
		    __atomic_compare_exchange_n(&w->in_use, &free_, true, false, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED))
			break;
	}
	if (!w) {
		w = aligned_alloc(_Alignof(struct acct_window), sizeof(*w));
		if (!w)
			return false;
		*w = (struct acct_window){ .in_use = true };
		w->next = __atomic_load_n(&records, __ATOMIC_RELAXED);
		while (!__atomic_compare_exchange_n(&records, &w->next, w, true, __ATOMIC_RELEASE, __ATOMIC_RELAXED))
			;
	}
	if (pthread_setspecific(exit_key, w) != 0) {
		__atomic_store_n(&w->in_use, false, __ATOMIC_RELEASE);
		return false;
	}
	w->depth = 0;
	acct_window_self = w;
	return true;
}

static void detect(void)
{
	int cmds = membarrier(MEMBARRIER_CMD_QUERY, 0);
	if (cmds >= 0 && (cmds & MEMBARRIER_CMD_PRIVATE_EXPEDITED) &&
	    membarrier(MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED, 0) == 0) {
		use_membarrier = true;
		__atomic_store_n(&acct_window_fence, false, __ATOMIC_RELAXED);
	}
}

bool acct_quiesce_init(void)
{
	(void)pthread_once(&init_once, detect);
	return use_membarrier;
}

void acct_quiesce(void)
{
	(void)pthread_once(&init_once, detect);
	/* Registered, the call cannot fail (it fails only unregistered or with
	 * bad arguments); the fence keeps our side of the pair regardless. */
	if (use_membarrier)
		(void)membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0);
	__atomic_thread_fence(__ATOMIC_SEQ_CST);

	for (struct acct_window *w = __atomic_load_n(&records, __ATOMIC_ACQUIRE); w; w = w->next) {
		uint64_t seq = __atomic_load_n(&w->seq, __ATOMIC_ACQUIRE);
		if (!(seq & 1))
			continue;
		/* Open: wait until it closes. Any change of seq means it did. */
		for (unsigned spins = 0; __atomic_load_n(&w->seq, __ATOMIC_ACQUIRE) == seq; spins++)
			if (spins >= 64)
				sched_yield(); /* its thread was preempted inside the window */
	}
}
