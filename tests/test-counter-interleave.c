/* test-counter-interleave.c - the interleavings that break a counter's bound,
 * forced on demand instead of waited for.
 *
 * The stress test finds a broken protocol only when the scheduler happens to
 * preempt a writer at the wrong instruction while a budget is lowered. This
 * test is built with the engine's scheduling points (ACCT_COUNTER_TEST_POINTS,
 * see counter.h): a writer stops at a chosen point, inside the step that a
 * preemption would interrupt, while another thread lowers the budget and the
 * test reads the counter. Every read must satisfy the contract of counter.h,
 *
 *     |approximate - completed| <= bound + |in-flight deltas|
 *
 * whether the lowering has completed, is still waiting, or left the shrink
 * pending. Each case runs on both update paths and on the real and a simulated
 * 64-CPU, 4-node topology.
 *
 * Case fold_held: a fold has taken a shard's residue out of the shard (the
 * shard reads 0) and is stopped before adding it to the node sum; the budget
 * drops to 0. A lowering that trusts the shard's 0 reports bound 0 while the
 * residue is missing from the sums.
 *
 * Case fold_busy: a fold holds a shard (stopped before the node sum) and
 * other updates on the same CPU reach that shard: they find it taken and go
 * straight to the node sum, leaving the shard to the fold that owns it (an
 * update that took it over would be wiped when the owner releases it).
 *
 * Case compact_contention: a compact counter's compare-and-swap fails when
 * another update lands between its read of the value and its swap; the 64th
 * such failure (the domain's default, counter.h) upgrades it, the 63rd not.
 *
 * Case drain_busy: a lowering finds a shard over the new batch and, before
 * it drains it, a fold takes that shard and stops before the node sum. The
 * drain must leave the shard to its owner and wait: taking it over would
 * release it with the owner's residue in neither shard nor node sum, and the
 * lowering would complete with a bound that leaves the residue out.
 *
 * Case stale_limit (fallback): a writer has read the old, larger limit and is
 * stopped before its compare-and-swap; a precise read holds folds off (a second
 * writer's fold is stopped mid-way); the budget drops to 0. The writer then
 * stores a residue that only the old limit allows, and nothing folds it.
 *
 * Case drain_migrated (rseq, simulated topology): a drain pinned to its
 * shard's CPU is moved to another CPU before it grabs the shard (what a CPU
 * going offline does): it folds the shard of the CPU it is on, in the same
 * group of simulated CPUs, and leaves the shrink pending. */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "counter.h"
#include "util.h"

#define RESIDUE 1000 /* per-shard batch of the starting budget, minus one */
#define OBSERVE_MS 300

/* ---- stopping a thread at a point ----------------------------------------- */

/* One stoppable thread. The thread arms its own point; the hook, running on
 * that thread, reports the stop and waits for a release. */
struct stopper {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	bool stopped, released;
};

static _Thread_local struct stopper *armed_stopper;
static _Thread_local int armed_point = -1;
/* Instead of stopping: move the thread to CPU move_to at point move_at. */
static _Thread_local int move_at = -1, move_to = -1;
static _Thread_local bool moved;

static void pin(unsigned cpu);

static void hook(enum acct_counter_test_point point)
{
	struct stopper *s = armed_stopper;

	if ((int)point == move_at) {
		move_at = -1; /* once */
		pin((unsigned)move_to);
		moved = true;
		return;
	}
	if (!s || (int)point != armed_point)
		return;
	armed_point = -1; /* once */
	pthread_mutex_lock(&s->lock);
	s->stopped = true;
	pthread_cond_broadcast(&s->cond);
	while (!s->released)
		pthread_cond_wait(&s->cond, &s->lock);
	pthread_mutex_unlock(&s->lock);
}

static void stopper_init(struct stopper *s)
{
	*s = (struct stopper){ .lock = PTHREAD_MUTEX_INITIALIZER, .cond = PTHREAD_COND_INITIALIZER };
}

static void stopper_wait_stopped(struct stopper *s)
{
	pthread_mutex_lock(&s->lock);
	while (!s->stopped)
		pthread_cond_wait(&s->cond, &s->lock);
	pthread_mutex_unlock(&s->lock);
}

static void stopper_release(struct stopper *s)
{
	pthread_mutex_lock(&s->lock);
	s->released = true;
	pthread_cond_broadcast(&s->cond);
	pthread_mutex_unlock(&s->lock);
}

/* ---- threads ------------------------------------------------------------------ */

static void pin(unsigned cpu)
{
	cpu_set_t set;
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	assert_int_equal(sched_setaffinity(0, sizeof(set), &set), 0);
}

/* A writer pinned to one CPU (so that it keeps one shard) that first adds
 * `prefill` and then `delta` with `point` armed. */
struct writer {
	struct acct_counter *c;
	unsigned cpu;
	int64_t prefill, delta;
	int point;
	struct stopper stop;
	pthread_t thread;
};

static void *writer_main(void *arg)
{
	struct writer *w = arg;

	pin(w->cpu);
	if (w->prefill)
		acct_counter_add(w->c, w->prefill);
	armed_stopper = &w->stop;
	armed_point = w->point;
	acct_counter_add(w->c, w->delta);
	return NULL;
}

static void writer_start(struct writer *w)
{
	stopper_init(&w->stop);
	assert_int_equal(pthread_create(&w->thread, NULL, writer_main, w), 0);
	stopper_wait_stopped(&w->stop);
}

static void writer_finish(struct writer *w)
{
	stopper_release(&w->stop);
	assert_int_equal(pthread_join(w->thread, NULL), 0);
}

struct lowering {
	struct acct_counter *c;
	int64_t budget;
	bool done;
	pthread_t thread;
};

static void *lowering_main(void *arg)
{
	struct lowering *l = arg;
	assert_int_equal(acct_counter_set_budget(l->c, l->budget), 0);
	__atomic_store_n(&l->done, true, __ATOMIC_RELEASE);
	return NULL;
}

struct precise {
	struct acct_counter *c;
	int64_t value;
	struct stopper stop;
	pthread_t thread;
};

static void *precise_main(void *arg)
{
	struct precise *p = arg;
	armed_stopper = &p->stop;
	armed_point = ACCT_TP_PRECISE_WAIT;
	p->value = acct_counter_read_precise(p->c);
	return NULL;
}

/* ---- checks ------------------------------------------------------------------- */

static uint64_t now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* The contract, for a counter whose completed updates sum to `completed` and
 * whose updates in flight have magnitudes summing to `in_flight`. */
static void assert_bound_holds(const struct acct_counter *c, int64_t completed, int64_t in_flight, const char *when)
{
	struct acct_reading rd;
	acct_counter_read(c, &rd);
	uint64_t err = abs_u64(rd.value - completed);
	if (err > rd.bound + (uint64_t)in_flight)
		fail_msg("%s: approximate %lld +/- %llu, but completed updates sum to %lld (+/- %lld in flight): "
			 "error %llu exceeds the bound",
			 when, (long long)rd.value, (unsigned long long)rd.bound, (long long)completed,
			 (long long)in_flight, (unsigned long long)err);
}

/* Lower the budget of `c` to `budget` on another thread and read `c` until the
 * lowering returns or OBSERVE_MS pass (a lowering may wait for the stopped
 * writers: it may not complete early at the price of a wrong bound). */
static void lower_and_observe(struct lowering *l, struct acct_counter *c, int64_t budget, int64_t completed,
			      int64_t in_flight)
{
	*l = (struct lowering){ .c = c, .budget = budget };
	assert_int_equal(pthread_create(&l->thread, NULL, lowering_main, l), 0);
	uint64_t end = now_ms() + OBSERVE_MS;
	bool done;
	do {
		done = __atomic_load_n(&l->done, __ATOMIC_ACQUIRE);
		assert_bound_holds(c, completed, in_flight, done ? "after the lowering" : "during the lowering");
		usleep(1000);
	} while (!done && now_ms() < end);
}

/* ---- fixtures ----------------------------------------------------------------- */

struct fixture {
	enum acct_update_mode mode;
	const char *topology;
	struct acct_topology *topo;
	struct acct_domain *d;
	struct acct_counter *c;
	unsigned cpu_a, cpu_b; /* two distinct CPUs where there are two */
};

static struct fixture *current;

static int setup(void **state)
{
	struct fixture *f = current;
	struct acct_domain_options o = { .mode = f->mode };

	assert_int_equal(acct_topology_from_spec(f->topology, &f->topo), 0);
	o.topology = f->topo;
	assert_int_equal(acct_domain_new(&o, &f->d), 0);
	/* budget S * RESIDUE: batch RESIDUE + 1, so a shard holds up to RESIDUE */
	assert_int_equal(acct_counter_new(f->d, (int64_t)f->topo->nr_shards * RESIDUE, &f->c), 0);
	assert_int_equal(acct_counter_upgrade(f->c), 0);
	/* The first two CPUs this process may run on (a container's cpuset may
	 * exclude CPU 0); one CPU only gives the same one twice. */
	cpu_set_t allowed;
	assert_int_equal(sched_getaffinity(0, sizeof(allowed), &allowed), 0);
	int found = 0;
	for (unsigned cpu = 0; cpu < CPU_SETSIZE && found < 2; cpu++)
		if (CPU_ISSET(cpu, &allowed))
			*(found++ == 0 ? &f->cpu_a : &f->cpu_b) = cpu;
	assert_true(found > 0);
	if (found == 1)
		f->cpu_b = f->cpu_a;
	acct_counter_test_hook = hook;
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;
	acct_counter_test_hook = NULL;
	f->c = acct_counter_free(f->c);
	f->d = acct_domain_free(f->d);
	f->topo = acct_topology_free(f->topo);
	return 0;
}

/* ---- cases -------------------------------------------------------------------- */

static void test_fold_held(void **state)
{
	struct fixture *f = *state;
	struct writer w = {
		.c = f->c, .cpu = f->cpu_a, .prefill = RESIDUE, .delta = 1, .point = ACCT_TP_FOLD_HELD,
	};
	struct lowering l;

	/* The writer's shard holds RESIDUE; adding 1 overflows it, and the fold
	 * that takes the RESIDUE out of the shard stops before the node sum. */
	writer_start(&w);
	assert_bound_holds(f->c, RESIDUE, 1, "with a fold stopped");
	lower_and_observe(&l, f->c, 0, RESIDUE, 1);
	writer_finish(&w);
	assert_int_equal(pthread_join(l.thread, NULL), 0);
	assert_bound_holds(f->c, RESIDUE + 1, 0, "after the fold");
	assert_int_equal(acct_counter_read_precise(f->c), RESIDUE + 1);

	/* Once nothing is in flight the lowering completes: bound 0, exact. */
	acct_domain_tune(f->d, 1);
	struct acct_reading rd;
	acct_counter_read(f->c, &rd);
	assert_int_equal(rd.bound, 0);
	assert_int_equal(rd.value, RESIDUE + 1);
}

struct plain_add {
	struct acct_counter *c;
	unsigned cpu;
	int64_t delta;
};

static void *plain_add_main(void *arg)
{
	struct plain_add *a = arg;
	pin(a->cpu);
	acct_counter_add(a->c, a->delta);
	return NULL;
}

static void test_fold_busy(void **state)
{
	struct fixture *f = *state;
	struct writer w = {
		.c = f->c, .cpu = f->cpu_a, .prefill = RESIDUE, .delta = 1, .point = ACCT_TP_FOLD_HELD,
	};
	struct acct_counter_stats before, after;

	/* Other threads use other shards of a simulated topology (their salt). */
	if (f->topo->simulated)
		skip();
	/* The tuner's first pass only records the events so far. */
	acct_domain_set_auto_tune(f->d, true);
	acct_domain_tune(f->d, 1000000000);
	writer_start(&w);
	acct_counter_stats(f->c, &before);
	for (int64_t delta = 2; delta <= 3; delta++) {
		struct plain_add a = { .c = f->c, .cpu = f->cpu_a, .delta = delta };
		pthread_t t;
		assert_int_equal(pthread_create(&t, NULL, plain_add_main, &a), 0);
		assert_int_equal(pthread_join(t, NULL), 0);
	}
	acct_counter_stats(f->c, &after);
	assert_int_equal(after.direct, before.direct + 2);
	assert_int_equal(after.folds, before.folds);
	writer_finish(&w);
	assert_int_equal(acct_counter_read_precise(f->c), RESIDUE + 1 + 2 + 3);
	/* A second later: one fold and two direct adds are 3 events a second,
	 * a quiet counter, whose batch the tuner halves. */
	acct_domain_tune(f->d, 2000000000);
	acct_counter_stats(f->c, &after);
	assert_int_equal(after.folds, before.folds + 1);
	assert_int_equal(after.tune_shrinks, 1);
	assert_int_equal(after.tune_grows, 0);
}

static void test_compact_contention(void **state)
{
	struct fixture *f = *state;
	struct acct_counter *c = NULL;
	struct acct_counter_stats st;

	assert_int_equal(acct_counter_new(f->d, 1000, &c), 0);
	for (int i = 1; i <= 64; i++) {
		struct writer w = { .c = c, .cpu = f->cpu_a, .delta = 1, .point = ACCT_TP_COMPACT_CAS };
		writer_start(&w); /* stopped between its read and its swap */
		acct_counter_add(c, 1);
		writer_finish(&w); /* its swap fails once */
		acct_counter_stats(c, &st);
		if (i < 64 && st.state != ACCT_STATE_COMPACT)
			fail_msg("upgraded after %d failed swaps", i);
	}
	assert_int_not_equal(st.state, ACCT_STATE_COMPACT);
	assert_int_equal(acct_counter_read_precise(c), 128);
	acct_counter_free(c);
}

struct stopped_lowering {
	struct acct_counter *c;
	int64_t budget;
	bool done;
	struct stopper stop;
	pthread_t thread;
};

static void *stopped_lowering_main(void *arg)
{
	struct stopped_lowering *l = arg;
	armed_stopper = &l->stop;
	armed_point = ACCT_TP_DRAIN;
	assert_int_equal(acct_counter_set_budget(l->c, l->budget), 0);
	__atomic_store_n(&l->done, true, __ATOMIC_RELEASE);
	return NULL;
}

static void test_drain_busy(void **state)
{
	struct fixture *f = *state;
	struct plain_add prefill = { .c = f->c, .cpu = f->cpu_a, .delta = RESIDUE };
	struct writer w = { .c = f->c, .cpu = f->cpu_a, .delta = 1, .point = ACCT_TP_FOLD_HELD };
	struct stopped_lowering l = { .c = f->c, .budget = 0 };
	pthread_t t;

	if (f->topo->simulated)
		skip(); /* each thread has shards of its own there */
	assert_int_equal(pthread_create(&t, NULL, plain_add_main, &prefill), 0);
	assert_int_equal(pthread_join(t, NULL), 0);
	stopper_init(&l.stop);
	assert_int_equal(pthread_create(&l.thread, NULL, stopped_lowering_main, &l), 0);
	stopper_wait_stopped(&l.stop); /* the shard holds RESIDUE, over the new batch */
	writer_start(&w);               /* overflows the lowered limit: its fold holds the shard */
	stopper_release(&l.stop);
	uint64_t end = now_ms() + OBSERVE_MS;
	do {
		assert_bound_holds(f->c, RESIDUE, 1, "while the drain meets the held shard");
		usleep(1000);
	} while (!__atomic_load_n(&l.done, __ATOMIC_ACQUIRE) && now_ms() < end);
	/* Once more: the lowering may have returned during the last sleep. */
	assert_bound_holds(f->c, RESIDUE, 1, "with the fold still held");
	writer_finish(&w);
	assert_int_equal(pthread_join(l.thread, NULL), 0);
	assert_bound_holds(f->c, RESIDUE + 1, 0, "after the fold");
	assert_int_equal(acct_counter_read_precise(f->c), RESIDUE + 1);
}

static void test_stale_limit(void **state)
{
	struct fixture *f = *state;
	if (f->mode != ACCT_MODE_FALLBACK)
		skip(); /* rseq commits that read an old limit are fenced off */
	if (f->cpu_a == f->cpu_b && !f->topo->simulated)
		skip(); /* the two writers need two shards */

	/* W2's fold stops mid-way, so a precise read that holds folds off waits. */
	struct writer w2 = {
		.c = f->c, .cpu = f->cpu_b, .prefill = RESIDUE, .delta = 1, .point = ACCT_TP_FOLD_HELD,
	};
	writer_start(&w2);
	struct precise p = { .c = f->c };
	stopper_init(&p.stop);
	p.stop.released = true; /* report the wait, do not stop there */
	assert_int_equal(pthread_create(&p.thread, NULL, precise_main, &p), 0);
	stopper_wait_stopped(&p.stop);

	/* W reads the old limit (RESIDUE fits it) and stops before its CAS. */
	struct writer w = {
		.c = f->c, .cpu = f->cpu_a, .delta = RESIDUE, .point = ACCT_TP_CAS_LIMIT_READ,
	};
	writer_start(&w);
	struct lowering l;
	lower_and_observe(&l, f->c, 0, RESIDUE, RESIDUE + 1);

	writer_finish(&w); /* W's update completes */
	assert_bound_holds(f->c, 2 * RESIDUE, 1, "after the stale writer");
	writer_finish(&w2);
	assert_int_equal(pthread_join(p.thread, NULL), 0);
	assert_int_equal(pthread_join(l.thread, NULL), 0);
	assert_bound_holds(f->c, 2 * RESIDUE + 1, 0, "after every update");
	if (abs_u64(p.value - RESIDUE) > RESIDUE + 1 + 1)
		fail_msg("precise read %lld outside [%d, %d]", (long long)p.value, RESIDUE, 2 * RESIDUE + 1);
	assert_int_equal(acct_counter_read_precise(f->c), 2 * RESIDUE + 1);

	acct_domain_tune(f->d, 1);
	struct acct_reading rd;
	acct_counter_read(f->c, &rd);
	assert_int_equal(rd.bound, 0);
	assert_int_equal(rd.value, 2 * RESIDUE + 1);
}

/* One thread puts `small` in its shard of cpu_a and `large` in the one of
 * cpu_b: both in its group of simulated CPUs (its salt), group k. */
struct two_shards {
	struct acct_counter *c;
	unsigned cpu_a, cpu_b;
};

static void *two_shards_main(void *arg)
{
	struct two_shards *t = arg;
	pin(t->cpu_a);
	acct_counter_add(t->c, 5);
	pin(t->cpu_b);
	acct_counter_add(t->c, RESIDUE);
	return NULL;
}

struct moved_lowering {
	struct acct_counter *c;
	unsigned to;
	bool moved;
};

static void *moved_lowering_main(void *arg)
{
	struct moved_lowering *l = arg;
	move_at = ACCT_TP_DRAIN_PINNED;
	move_to = (int)l->to;
	assert_int_equal(acct_counter_set_budget(l->c, 64 * 10), 0);
	l->moved = moved;
	return NULL;
}

static void test_drain_migrated(void **state)
{
	struct fixture *f = *state;

	if (f->mode != ACCT_MODE_RSEQ || !f->topo->simulated || f->cpu_a == f->cpu_b)
		skip(); /* the drain to move is rseq's; the shard index it computes depends on the group */
	if (f->topo->nr_shards != 64 || acct_topology_spread(f->topo) < 2)
		skip(); /* needs several groups of simulated CPUs: at most 32 real CPUs */
	/* Twice, from two threads: consecutive salts, so one of them is in a group
	 * other than the first (k >= 1), where the shard index is cpu + k * CPUs. */
	for (int run = 0; run < 2; run++) {
		struct acct_counter *c = NULL;
		assert_int_equal(acct_counter_new(f->d, 64 * RESIDUE, &c), 0);
		assert_int_equal(acct_counter_upgrade(c), 0);
		struct two_shards t = { .c = c, .cpu_a = f->cpu_a, .cpu_b = f->cpu_b };
		pthread_t th;
		assert_int_equal(pthread_create(&th, NULL, two_shards_main, &t), 0);
		assert_int_equal(pthread_join(th, NULL), 0);

		/* Batch 11: cpu_b's shard (RESIDUE) is over it, cpu_a's (5) is not.
		 * The drain pins itself to cpu_b and is moved to cpu_a: it folds
		 * cpu_a's shard of the same group, and cpu_b's keeps its residue. */
		struct moved_lowering l = { .c = c, .to = f->cpu_a };
		assert_int_equal(pthread_create(&th, NULL, moved_lowering_main, &l), 0);
		assert_int_equal(pthread_join(th, NULL), 0);
		assert_true(l.moved);

		struct acct_reading rd;
		acct_counter_read(c, &rd);
		assert_int_equal(rd.value, 5); /* the node sums: cpu_a's shard folded */
		assert_bound_holds(c, RESIDUE + 5, 0, "after the moved drain");
		assert_int_equal(acct_counter_read_precise(c), RESIDUE + 5);
		acct_counter_free(c);
	}
}

int main(void)
{
	static const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_fold_held, setup, teardown),
		cmocka_unit_test_setup_teardown(test_fold_busy, setup, teardown),
		cmocka_unit_test_setup_teardown(test_compact_contention, setup, teardown),
		cmocka_unit_test_setup_teardown(test_drain_busy, setup, teardown),
		cmocka_unit_test_setup_teardown(test_stale_limit, setup, teardown),
		cmocka_unit_test_setup_teardown(test_drain_migrated, setup, teardown),
	};
	static struct fixture variants[] = {
		{ .mode = ACCT_MODE_RSEQ, .topology = "real" },
		{ .mode = ACCT_MODE_RSEQ, .topology = "64x4" },
		{ .mode = ACCT_MODE_FALLBACK, .topology = "real" },
		{ .mode = ACCT_MODE_FALLBACK, .topology = "64x4" },
	};
	int failed = 0;

	for (size_t i = 0; i < ELEMENTSOF(variants); i++) {
		struct fixture *f = &variants[i];
		char name[64];
		if (f->mode == ACCT_MODE_RSEQ && !acct_rseq_usable()) {
			printf("SKIP: rseq variants: restartable sequences are not usable here\n");
			continue;
		}
		current = f;
		snprintf(name, sizeof(name), "counter-interleave-%s-%s", acct_update_mode_to_string(f->mode),
			 f->topology);
		failed += _cmocka_run_group_tests(name, tests, ELEMENTSOF(tests), NULL, NULL);
	}
	return failed ? 1 : 0;
}
