/* test-quiesce.c - writer windows and the grace period of lib/percpu/quiesce.h: a
 * grace period waits for every window open at its start and for nothing else;
 * nested windows count once; records of exited threads are reused; a forked
 * child does not wait for its parent's threads. */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "quiesce.h"

struct holder {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	bool inside, release;
	int depth; /* windows to open */
	pthread_t thread;
};

static void *holder_main(void *arg)
{
	struct holder *h = arg;

	for (int i = 0; i < h->depth; i++)
		assert_true(acct_window_enter());
	pthread_mutex_lock(&h->lock);
	h->inside = true;
	pthread_cond_broadcast(&h->cond);
	while (!h->release)
		pthread_cond_wait(&h->cond, &h->lock);
	pthread_mutex_unlock(&h->lock);
	for (int i = 0; i < h->depth; i++)
		acct_window_exit();
	return NULL;
}

static void holder_start(struct holder *h, int depth)
{
	*h = (struct holder){ .lock = PTHREAD_MUTEX_INITIALIZER, .cond = PTHREAD_COND_INITIALIZER, .depth = depth };
	assert_int_equal(pthread_create(&h->thread, NULL, holder_main, h), 0);
	pthread_mutex_lock(&h->lock);
	while (!h->inside)
		pthread_cond_wait(&h->cond, &h->lock);
	pthread_mutex_unlock(&h->lock);
}

static void holder_release(struct holder *h)
{
	pthread_mutex_lock(&h->lock);
	h->release = true;
	pthread_cond_broadcast(&h->cond);
	pthread_mutex_unlock(&h->lock);
}

struct quiescer {
	bool done;
	pthread_t thread;
};

static void *quiescer_main(void *arg)
{
	struct quiescer *q = arg;
	acct_quiesce();
	__atomic_store_n(&q->done, true, __ATOMIC_RELEASE);
	return NULL;
}

/* A grace period that starts while a window is open ends only after it
 * closes; this is the property the counter engine's bound rests on. */
static void check_waits_for(int depth)
{
	struct holder h;
	struct quiescer q = { 0 };

	holder_start(&h, depth);
	assert_int_equal(pthread_create(&q.thread, NULL, quiescer_main, &q), 0);
	/* However long we look, the grace period cannot end while h is inside. */
	for (int i = 0; i < 50; i++) {
		assert_false(__atomic_load_n(&q.done, __ATOMIC_ACQUIRE));
		usleep(1000);
	}
	holder_release(&h);
	assert_int_equal(pthread_join(q.thread, NULL), 0);
	assert_true(q.done);
	assert_int_equal(pthread_join(h.thread, NULL), 0);
}

static void test_waits_for_open_window(void **state)
{
	(void)state;
	check_waits_for(1);
}

static void test_nested_windows_count_once(void **state)
{
	(void)state;
	/* Closing the inner window of three must not end the wait. */
	check_waits_for(3);
	assert_true(acct_window_enter());
	assert_true(acct_window_enter());
	acct_window_exit();
	assert_true(acct_window_self->seq & 1); /* still inside the outer one */
	acct_window_exit();
	assert_false(acct_window_self->seq & 1);
}

static void test_closed_windows_do_not_block(void **state)
{
	(void)state;
	assert_true(acct_window_enter());
	acct_window_exit();
	acct_quiesce(); /* nobody inside: returns */
	acct_quiesce();
}

static void *enter_once(void *arg)
{
	assert_true(acct_window_enter());
	acct_window_exit();
	*(struct acct_window **)arg = acct_window_self;
	return NULL;
}

static void test_records_are_reused(void **state)
{
	(void)state;
	struct acct_window *seen[100];
	unsigned distinct = 0;

	/* 100 threads one after another: each takes a record an exited thread
	 * left (there are at most a few from earlier tests), never a new one
	 * each time. */
	for (unsigned i = 0; i < 100; i++) {
		pthread_t t;
		struct acct_window *w = NULL;
		assert_int_equal(pthread_create(&t, NULL, enter_once, &w), 0);
		assert_int_equal(pthread_join(t, NULL), 0);
		assert_non_null(w);
		bool known = false;
		for (unsigned j = 0; j < distinct; j++)
			known |= seen[j] == w;
		if (!known)
			seen[distinct++] = w;
	}
	assert_true(distinct <= 3);
	acct_quiesce();
}

static void test_fork_child_does_not_wait(void **state)
{
	(void)state;
	struct holder h;

	holder_start(&h, 1); /* a window open in the parent at fork time */
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		acct_quiesce(); /* the holder does not exist here */
		_exit(0);
	}
	int status;
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	holder_release(&h);
	assert_int_equal(pthread_join(h.thread, NULL), 0);
}

int main(void)
{
	static const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_waits_for_open_window),
		cmocka_unit_test(test_nested_windows_count_once),
		cmocka_unit_test(test_closed_windows_do_not_block),
		cmocka_unit_test(test_records_are_reused),
		cmocka_unit_test(test_fork_child_does_not_wait),
	};
	printf("membarrier: %s\n", acct_quiesce_init() ? "expedited, windows without fences" : "unavailable, windows fence");
	return cmocka_run_group_tests(tests, NULL, NULL);
}
