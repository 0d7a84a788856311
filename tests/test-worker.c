/* test-worker.c - unit tests of a module's threads (lib/basic/worker.h): a
 * thread starts named and with signals blocked, wake-ups made while it is
 * busy coalesce into one more round, a stop while it is busy waits for the
 * round and for what was queued before it, a stop with a deadline returns
 * at the deadline and leaves a thread that does not stop running, several
 * threads each get their index, and a thread that cannot be made is
 * reported as a negative errno with the ones already started joined
 * (pthread_create() wrapped: ld --wrap, tests/meson.build). Runs under
 * TSan too (suite "threads"). */
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "worker.h"

/* pthread_create() fails (with fail_errno) at call number fail_at
 * (1-based; 0: never), counted from the last arming. */
static unsigned create_calls, fail_at;
static int fail_errno;

int __real_pthread_create(pthread_t *t, const pthread_attr_t *attr, void *(*fn)(void *), void *arg);
int __wrap_pthread_create(pthread_t *t, const pthread_attr_t *attr, void *(*fn)(void *), void *arg);
int __wrap_pthread_create(pthread_t *t, const pthread_attr_t *attr, void *(*fn)(void *), void *arg)
{
	if (fail_at && ++create_calls == fail_at)
		return fail_errno;
	return __real_pthread_create(t, attr, fn, arg);
}

static uint64_t now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static void sleep_ms(unsigned ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };
	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

/* A module the way the daemon writes one: jobs counted under the worker's
 * lock, a round takes them all; the round may be held at a gate. */
struct module {
	struct worker *w;
	unsigned queued;       /* under lock */
	unsigned rounds, done; /* under lock */
	bool busy;             /* under lock: a round is held at the gate */
	atomic_bool gate_open;
	bool drop_at_stop;     /* test worker_stopping() before the work */
	bool ignore_stop;      /* the round waits for the gate only */
	atomic_uint entered, left;
	unsigned index_seen;   /* bit per thread index, under lock */
	char name[16];
	bool signals_blocked;
};

static void module_main(struct worker *w, unsigned index, void *userdata)
{
	struct module *m = userdata;
	sigset_t mask;

	atomic_fetch_add(&m->entered, 1);
	(void)pthread_sigmask(SIG_SETMASK, NULL, &mask);
	worker_lock(w);
	m->index_seen |= 1u << index;
	(void)pthread_getname_np(pthread_self(), m->name, sizeof(m->name));
	m->signals_blocked = sigismember(&mask, SIGTERM) == 1 && sigismember(&mask, SIGINT) == 1;
	for (;;) {
		while (!m->queued && !worker_stopping(w))
			worker_wait(w);
		if (m->drop_at_stop && worker_stopping(w))
			break;
		if (!m->queued)
			break;
		unsigned n = m->queued;
		m->queued = 0;
		m->rounds++;
		m->busy = true;
		worker_unlock(w);
		while (!atomic_load(&m->gate_open) && (m->ignore_stop || !worker_stopping(w)))
			sleep_ms(1);
		worker_lock(w);
		m->busy = false;
		m->done += n;
	}
	worker_unlock(w);
	atomic_fetch_add(&m->left, 1);
}

static void submit(struct module *m, unsigned n)
{
	worker_lock(m->w);
	m->queued += n;
	worker_wake_one_locked(m->w);
	worker_unlock(m->w);
}

static void wait_busy(struct module *m)
{
	for (;;) {
		worker_lock(m->w);
		bool busy = m->busy;
		worker_unlock(m->w);
		if (busy)
			return;
		sleep_ms(1);
	}
}

static void start(struct module *m, const char *name, unsigned nr)
{
	assert_int_equal(worker_new(name, nr, module_main, m, &m->w), 0);
	assert_int_equal(worker_start(m->w), 0);
}

/* Started named, signals blocked, runs a job, stops and is joined. */
static void test_start_stop(void **state)
{
	struct module m = { .gate_open = true };

	(void)state;
	start(&m, "acctd-test-worker-long-name", 1);
	submit(&m, 1);
	assert_int_equal(worker_stop(m.w, WORKER_WAIT_FOREVER), 0);
	assert_int_equal(atomic_load(&m.left), 1);
	assert_int_equal(m.done, 1);
	assert_string_equal(m.name, "acctd-test-work"); /* the 15 bytes Linux keeps */
	assert_true(m.signals_blocked);
	assert_true(worker_stopping(m.w));
	assert_int_equal(worker_stop(m.w, 0), 0); /* again: nothing to wait for */
	assert_int_equal(worker_start(m.w), -EBUSY);
	m.w = worker_free(m.w);
	assert_null(worker_free(NULL));
}

/* Ten wake-ups while the thread is busy: one more round, with all ten jobs. */
static void test_wake_coalescing(void **state)
{
	struct module m = {};

	(void)state;
	start(&m, "coalesce", 1);
	submit(&m, 1);
	wait_busy(&m);
	for (int i = 0; i < 10; i++)
		submit(&m, 1);
	worker_wake(m.w); /* a wake-up with nothing queued changes nothing */
	atomic_store(&m.gate_open, true);
	for (;;) {
		worker_lock(m.w);
		unsigned done = m.done;
		worker_unlock(m.w);
		if (done == 11)
			break;
		sleep_ms(1);
	}
	m.w = worker_free(m.w);
	assert_int_equal(m.rounds, 2);
	assert_int_equal(m.done, 11);
}

static void *open_gate_later(void *arg)
{
	struct module *m = arg;
	sleep_ms(100);
	atomic_store(&m->gate_open, true);
	return NULL;
}

/* A stop while busy waits for the round, then for the jobs queued before
 * the stop (a loop that finishes its queue), or drops them (one that tests
 * the stop first). */
static void test_stop_while_busy(void **state)
{
	for (int drop = 0; drop <= 1; drop++) {
		struct module m = { .ignore_stop = true, .drop_at_stop = drop };
		pthread_t t;

		(void)state;
		start(&m, "busy", 1);
		submit(&m, 1);
		wait_busy(&m);
		submit(&m, 3);
		assert_int_equal(__real_pthread_create(&t, NULL, open_gate_later, &m), 0);
		uint64_t t0 = now_ms();
		assert_int_equal(worker_stop(m.w, WORKER_WAIT_FOREVER), 0);
		assert_true(now_ms() - t0 >= 90);
		assert_int_equal(pthread_join(t, NULL), 0);
		assert_int_equal(atomic_load(&m.left), 1);
		assert_int_equal(m.done, drop ? 1 : 4);
		m.w = worker_free(m.w);
	}
}

/* A thread that does not stop: the stop returns at its deadline, the thread
 * runs on with the worker kept, which stays reachable here (no leak). */
static struct module stuck = { .ignore_stop = true };

static void test_stop_deadline(void **state)
{
	(void)state;
	start(&stuck, "stuck", 1);
	submit(&stuck, 1);
	wait_busy(&stuck);
	uint64_t t0 = now_ms();
	assert_int_equal(worker_stop(stuck.w, 100 * 1000), -ETIMEDOUT);
	uint64_t took = now_ms() - t0;
	assert_true(took >= 95 && took < 2000);
	assert_int_equal(atomic_load(&stuck.left), 0);
	assert_int_equal(worker_stop(stuck.w, WORKER_WAIT_FOREVER), -ETIMEDOUT); /* at once */
	assert_null(worker_free(stuck.w)); /* kept: its thread reads it */
	atomic_store(&stuck.gate_open, true);
	while (atomic_load(&stuck.left) == 0)
		sleep_ms(1);

	/* A deadline met: the threads that stop in time are joined. */
	struct module m = { .gate_open = true };
	start(&m, "prompt", 2);
	submit(&m, 1);
	assert_int_equal(worker_stop(m.w, 2 * 1000 * 1000), 0);
	assert_int_equal(atomic_load(&m.left), 2);
	m.w = worker_free(m.w);
}

/* Several threads: each its index, all woken, all joined. */
static void test_threads(void **state)
{
	struct module m = { .gate_open = true };

	(void)state;
	start(&m, "multi", 3);
	for (int i = 0; i < 30; i++)
		submit(&m, 1);
	while (atomic_load(&m.entered) < 3)
		sleep_ms(1);
	m.w = worker_free(m.w);
	assert_int_equal(atomic_load(&m.left), 3);
	assert_int_equal(m.index_seen, 7u);
	assert_int_equal(m.done, 30);
}

/* No thread: a negative errno; the ones started before it are joined. */
static void test_start_failure(void **state)
{
	struct module m = { .gate_open = true };
	struct worker *w = NULL;

	(void)state;
	assert_int_equal(worker_new("x", 0, module_main, &m, &w), -EINVAL);
	assert_int_equal(worker_new("x", WORKER_THREADS_MAX + 1, module_main, &m, &w), -EINVAL);
	assert_null(w);

	create_calls = 0, fail_at = 1, fail_errno = EAGAIN;
	assert_int_equal(worker_new("fail", 1, module_main, &m, &m.w), 0);
	assert_int_equal(worker_start(m.w), -EAGAIN);
	assert_true(worker_stopping(m.w));
	assert_int_equal(atomic_load(&m.entered), 0);
	m.w = worker_free(m.w);

	create_calls = 0, fail_at = 3, fail_errno = EPERM;
	assert_int_equal(worker_new("fail", 4, module_main, &m, &m.w), 0);
	assert_int_equal(worker_start(m.w), -EPERM);
	fail_at = 0;
	assert_int_equal(atomic_load(&m.entered), 2);
	assert_int_equal(atomic_load(&m.left), 2);
	m.w = worker_free(m.w);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_start_stop),
		cmocka_unit_test(test_wake_coalescing),
		cmocka_unit_test(test_stop_while_busy),
		cmocka_unit_test(test_stop_deadline),
		cmocka_unit_test(test_threads),
		cmocka_unit_test(test_start_failure),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
