/* worker.c - a module's threads started, woken, stopped and joined in one
 * way (worker.h). */
#include "worker.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "util.h"

struct worker_thread {
	struct worker *w;
	pthread_t thread;
	unsigned index;
	bool started; /* pthread_create() succeeded */
	bool left;    /* under lock: main returned */
	bool joined;
};

struct worker {
	pthread_mutex_t lock;
	pthread_cond_t wake;
	pthread_cond_t left; /* a thread's main returned (CLOCK_MONOTONIC: a deadline ignores clock steps) */
	atomic_bool stop;
	bool abandoned;      /* a stop timed out: threads still run, the worker stays */
	unsigned running;    /* under lock: threads started whose main has not returned */
	worker_main_fn fn;
	void *userdata;
	char name[16];
	unsigned nr_threads;
	struct worker_thread threads[];
};

static void *trampoline(void *arg)
{
	struct worker_thread *t = arg;
	struct worker *w = t->w;

	if (w->name[0])
		(void)pthread_setname_np(pthread_self(), w->name);
	w->fn(w, t->index, w->userdata);
	pthread_mutex_lock(&w->lock);
	t->left = true;
	w->running--;
	pthread_cond_broadcast(&w->left);
	pthread_mutex_unlock(&w->lock);
	return NULL;
}

static void worker_destroy(struct worker *w)
{
	pthread_cond_destroy(&w->wake);
	pthread_cond_destroy(&w->left);
	pthread_mutex_destroy(&w->lock);
	free(w);
}

int worker_new(const char *name, unsigned nr_threads, worker_main_fn fn, void *userdata, struct worker **ret)
{
	pthread_condattr_t attr;

	if (nr_threads == 0 || nr_threads > WORKER_THREADS_MAX || !fn)
		return -EINVAL;
	struct worker *w = calloc(1, sizeof(*w) + nr_threads * sizeof(w->threads[0]));
	if (!w)
		return -ENOMEM;
	pthread_mutex_init(&w->lock, NULL);
	pthread_cond_init(&w->wake, NULL);
	pthread_condattr_init(&attr);
	(void)pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
	pthread_cond_init(&w->left, &attr);
	pthread_condattr_destroy(&attr);
	atomic_init(&w->stop, false);
	w->fn = fn;
	w->userdata = userdata;
	w->nr_threads = nr_threads;
	if (name)
		strncpy(w->name, name, sizeof(w->name) - 1);
	for (unsigned i = 0; i < nr_threads; i++)
		w->threads[i] = (struct worker_thread){ .w = w, .index = i };
	*ret = w;
	return 0;
}

int worker_start(struct worker *w)
{
	sigset_t all, old;
	int r = 0;

	if (w->threads[0].started || worker_stopping(w))
		return -EBUSY;
	/* Signals are the event loop's (libevent's handlers), not the
	 * threads': they inherit this mask. */
	sigfillset(&all);
	(void)pthread_sigmask(SIG_SETMASK, &all, &old);
	for (unsigned i = 0; i < w->nr_threads; i++) {
		struct worker_thread *t = &w->threads[i];
		pthread_mutex_lock(&w->lock);
		w->running++;
		pthread_mutex_unlock(&w->lock);
		r = -pthread_create(&t->thread, NULL, trampoline, t);
		if (r < 0) {
			pthread_mutex_lock(&w->lock);
			w->running--;
			pthread_mutex_unlock(&w->lock);
			break;
		}
		t->started = true;
	}
	(void)pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (r < 0)
		/* The ones started see a stop before any work was handed over. */
		(void)worker_stop(w, WORKER_WAIT_FOREVER);
	return r;
}

void worker_lock(struct worker *w)
{
	pthread_mutex_lock(&w->lock);
}

void worker_unlock(struct worker *w)
{
	pthread_mutex_unlock(&w->lock);
}

void worker_wait(struct worker *w)
{
	pthread_cond_wait(&w->wake, &w->lock);
}

void worker_wake_one_locked(struct worker *w)
{
	pthread_cond_signal(&w->wake);
}

void worker_wake_all_locked(struct worker *w)
{
	pthread_cond_broadcast(&w->wake);
}

void worker_wake(struct worker *w)
{
	pthread_mutex_lock(&w->lock);
	pthread_cond_broadcast(&w->wake);
	pthread_mutex_unlock(&w->lock);
}

bool worker_stopping(const struct worker *w)
{
	return atomic_load_explicit(&w->stop, memory_order_acquire);
}

int worker_stop(struct worker *w, uint64_t timeout_us)
{
	struct timespec deadline;

	if (w->abandoned)
		return -ETIMEDOUT;
	if (timeout_us != WORKER_WAIT_FOREVER) {
		clock_gettime(CLOCK_MONOTONIC, &deadline);
		uint64_t ns = (uint64_t)deadline.tv_nsec + timeout_us % 1000000 * 1000;
		deadline.tv_sec += (time_t)(timeout_us / 1000000 + ns / 1000000000);
		deadline.tv_nsec = (long)(ns % 1000000000);
	}
	pthread_mutex_lock(&w->lock);
	/* Set under the lock: a thread that found nothing to do and is about
	 * to wait sees it before it sleeps. */
	atomic_store_explicit(&w->stop, true, memory_order_release);
	pthread_cond_broadcast(&w->wake);
	while (w->running > 0) {
		if (timeout_us == WORKER_WAIT_FOREVER)
			pthread_cond_wait(&w->left, &w->lock);
		else if (pthread_cond_timedwait(&w->left, &w->lock, &deadline) == ETIMEDOUT)
			break;
	}
	bool stuck = w->running > 0;
	/* Read under the lock: a thread still running writes its own. */
	bool left[WORKER_THREADS_MAX];
	for (unsigned i = 0; i < w->nr_threads; i++)
		left[i] = w->threads[i].left;
	pthread_mutex_unlock(&w->lock);

	for (unsigned i = 0; i < w->nr_threads; i++) {
		struct worker_thread *t = &w->threads[i];
		if (!t->started || t->joined)
			continue;
		if (left[i])
			(void)pthread_join(t->thread, NULL); /* main returned: at once */
		else
			(void)pthread_detach(t->thread);
		t->joined = true;
	}
	if (stuck) {
		w->abandoned = true;
		return -ETIMEDOUT;
	}
	return 0;
}

struct worker *worker_free(struct worker *w)
{
	if (!w)
		return NULL;
	if (worker_stop(w, WORKER_WAIT_FOREVER) < 0)
		return NULL; /* its threads still read it */
	worker_destroy(w);
	return NULL;
}
