/* test-counter-stress.c - many threads, migrating between CPUs, hammer two
 * counters with mixed signed deltas while readers check every approximate read
 * against its bound and a tuner changes budgets and batches underneath.
 *
 * Truth bracket: before each op a writer publishes the running sum of |delta|
 * it has started; after it, the running sum and sum of |delta| it completed.
 * A reader takes (completed |delta|, completed sum) of every writer before its
 * read and the started |delta| after it; then the true value at any moment of
 * the read lies within  sum(completed) +/- slack, slack = sum(started_after -
 * completed_abs_before). Every read must satisfy
 *     |approximate - sum(completed)| <= bound + slack
 * and every precise read |precise - sum(completed)| <= slack. At the end the
 * precise value must equal the sum of all deltas exactly.
 *
 * Contention: --hogs N adds N threads that only spin, so that writers share
 * busy CPUs and are preempted at arbitrary instructions (inside folds, between
 * reading a limit and writing a shard) while the tuner lowers budgets every
 * --tune-us microseconds. This is how the bound broke before the fold/budget
 * protocol was fixed (docs/counters.md gives the measured rates); the
 * interleavings themselves are forced in test-counter-interleave.c.
 *
 * Built with the engine's scheduling points (test-counter-stress-points, see
 * counter.h), the test also stalls threads at those points at random (yields
 * and short sleeps, odds per point in stall_odds[]). That reaches the windows a
 * preemption must hit to break a protocol thousands of times per second instead
 * of a few times per run.
 *
 * Usage: test-counter-stress [--mode rseq|fallback] [--topology real|CxN]
 *                            [--seconds S] [--threads N] [--hogs N|cpus] [--tune-us U]
 * Exit 0 pass, 1 fail, 77 skip (rseq requested but not usable). */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "counter.h"
#include "util.h"

#define MAX_WRITERS 64

#ifdef ACCT_COUNTER_TEST_POINTS
static const bool acct_counter_test_points = true;
#else
static const bool acct_counter_test_points = false;
#endif
#define BUDGET_PER_SHARD 600

struct writer {
	_Alignas(64) _Atomic int64_t started_abs;
	_Atomic int64_t done_abs;
	_Atomic int64_t done; /* counter A */
	int64_t done_b;       /* counter B, read after join */
	unsigned id;
	uint64_t ops, migrations;
};

static struct acct_domain *domain;
static struct acct_counter *counter_a, *counter_b;
static struct writer writers[MAX_WRITERS];
static unsigned nr_writers;
static atomic_bool stop;
static _Atomic uint64_t violations, reads, precise_reads, compares;
static _Atomic int64_t worst_excess = INT64_MIN;
static int nr_cpus;
static unsigned tune_us = 2000;

static uint64_t xorshift(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

static void migrate(uint64_t *rng)
{
	cpu_set_t set;
	CPU_ZERO(&set);
	CPU_SET((int)(xorshift(rng) % (uint64_t)nr_cpus), &set);
	(void)sched_setaffinity(0, sizeof(set), &set);
}

static int64_t pick_delta(uint64_t *rng)
{
	uint64_t x = xorshift(rng);
	if (x % 997 == 0) /* occasionally larger than any batch: goes direct */
		return (int64_t)(x % 200001) - 100000;
	/* slightly positive drift so that residues keep crossing the batch */
	return (int64_t)(x % 601) - 290;
}

#ifdef ACCT_COUNTER_TEST_POINTS
/* How often a thread stalls at each point: a yield at one pass in `yield`, a
 * 50 us sleep at one in `sleep`. Rare where the point is on every update (the
 * writers would hardly run, and their stalled deltas would widen the truth
 * bracket until it hid any error), often where a stall opens a window that a
 * lowering must respect: a held fold, a lowering between its steps. */
static const struct {
	unsigned yield, sleep;
} stall_odds[] = {
	[ACCT_TP_CAS_LIMIT_READ] = { 64, 1024 },
	[ACCT_TP_FOLD_HELD] = { 2, 8 },
	[ACCT_TP_PRECISE_WAIT] = { 2, 16 },
	[ACCT_TP_LOWERING] = { 2, 8 },
};
static _Thread_local uint64_t point_rng;

static void stall_at_random(enum acct_counter_test_point point)
{
	if (point_rng == 0)
		point_rng = 0x2545f4914f6cdd1dull ^ (uint64_t)(uintptr_t)&point_rng;
	if ((size_t)point >= ELEMENTSOF(stall_odds) || stall_odds[point].yield == 0)
		return;
	uint64_t x = xorshift(&point_rng);
	if (x % stall_odds[point].sleep == 0)
		usleep(50);
	else if (x % stall_odds[point].yield == 0)
		sched_yield();
}
#endif

static void *writer_main(void *arg)
{
	struct writer *w = arg;
	uint64_t rng = 0x9e3779b97f4a7c15ull * (w->id + 1);

	while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
		for (int i = 0; i < 256; i++) {
			int64_t d = pick_delta(&rng);
			int64_t a = (int64_t)abs_u64(d);
			atomic_store_explicit(&w->started_abs, w->started_abs + a, memory_order_seq_cst);
			acct_counter_add(counter_a, d);
			atomic_store_explicit(&w->done, w->done + d, memory_order_seq_cst);
			atomic_store_explicit(&w->done_abs, w->done_abs + a, memory_order_seq_cst);
			acct_counter_add(counter_b, -d);
			w->done_b -= d;
			w->ops++;
		}
		if (xorshift(&rng) % 8 == 0) {
			migrate(&rng);
			w->migrations++;
		}
	}
	return NULL;
}

static void note_excess(int64_t excess)
{
	int64_t cur = atomic_load(&worst_excess);
	while (excess > cur && !atomic_compare_exchange_weak(&worst_excess, &cur, excess))
		;
}

static void *reader_main(void *arg)
{
	uint64_t rng = (uintptr_t)arg * 7919 + 1;
	int64_t done_abs[MAX_WRITERS];

	while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
		int64_t sum = 0, slack = 0;
		for (unsigned i = 0; i < nr_writers; i++) {
			done_abs[i] = atomic_load(&writers[i].done_abs);
			sum += atomic_load(&writers[i].done);
		}
		struct acct_reading rd;
		int64_t precise = 0;
		bool do_precise = xorshift(&rng) % 16 == 0;
		acct_counter_read(counter_a, &rd);
		if (do_precise)
			precise = acct_counter_read_precise(counter_a);
		for (unsigned i = 0; i < nr_writers; i++)
			slack += atomic_load(&writers[i].started_abs) - done_abs[i];

		int64_t err = (int64_t)abs_u64(rd.value - sum);
		note_excess(err - slack - (int64_t)rd.bound);
		if ((uint64_t)err > rd.bound + (uint64_t)slack) {
			atomic_fetch_add(&violations, 1);
			fprintf(stderr, "VIOLATION: approx %" PRId64 " bound %" PRIu64 " truth %" PRId64 " +/- %" PRId64 "\n",
				rd.value, rd.bound, sum, slack);
		}
		if (do_precise && abs_u64(precise - sum) > (uint64_t)slack) {
			atomic_fetch_add(&violations, 1);
			fprintf(stderr, "VIOLATION: precise %" PRId64 " truth %" PRId64 " +/- %" PRId64 "\n", precise, sum,
				slack);
		}
		atomic_fetch_add(&reads, 1);
		precise_reads += do_precise;

		/* compare() must answer correctly for thresholds outside the bracket,
		 * whether it used the bound or a precise read. Both ends are
		 * recomputed around a fresh bracket. */
		if (xorshift(&rng) % 8 == 0) {
			int64_t s2 = 0, sl2 = 0;
			for (unsigned i = 0; i < nr_writers; i++) {
				done_abs[i] = atomic_load(&writers[i].done_abs);
				s2 += atomic_load(&writers[i].done);
			}
			int64_t band = (int64_t)(xorshift(&rng) % 4096); /* inside or outside the bound */
			bool hi = xorshift(&rng) & 1, used_precise;
			/* slack is only known after the call: use a generous margin
			 * instead, then verify the margin covered the movement. */
			int64_t margin = 1 << 22;
			int64_t threshold = hi ? s2 + margin + band : s2 - margin - band;
			int cmp = acct_counter_compare(counter_a, threshold, &used_precise);
			for (unsigned i = 0; i < nr_writers; i++)
				sl2 += atomic_load(&writers[i].started_abs) - done_abs[i];
			if (sl2 < margin && rd.bound < (uint64_t)margin && ((hi && cmp >= 0) || (!hi && cmp <= 0))) {
				atomic_fetch_add(&violations, 1);
				fprintf(stderr, "VIOLATION: compare(%" PRId64 ") = %d, truth %" PRId64 " +/- %" PRId64 "\n",
					threshold, cmp, s2, sl2);
			}
			atomic_fetch_add(&compares, 1);
		}
	}
	return NULL;
}

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Changes budgets and runs the auto-tuner while everything else runs. */
static void *tuner_main(void *arg)
{
	unsigned shards = acct_domain_topology(domain)->nr_shards;
	unsigned round = 0;

	(void)arg;
	while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
		/* Per shard: two lowerings per cycle, one of them to exact (bound 0),
		 * where any residue a lowering overlooks shows as an error. */
		static const int64_t per_shard[] = { 5000, 0, BUDGET_PER_SHARD, 50 };
		int64_t budget = (int64_t)shards * per_shard[round % ELEMENTSOF(per_shard)];
		if (acct_counter_set_budget(counter_a, budget) < 0)
			abort();
		acct_domain_set_auto_tune(domain, round % 4 < 2);
		acct_domain_tune(domain, now_ns());
		round++;
		usleep(tune_us);
	}
	return NULL;
}

/* Burns a CPU until the end; competes with the writers for every CPU. */
static void *hog_main(void *arg)
{
	(void)arg;
	while (!atomic_load_explicit(&stop, memory_order_relaxed))
		__asm__ volatile("" ::: "memory");
	return NULL;
}

static int parse_args(int argc, char **argv, enum acct_update_mode *mode, const char **topo, double *seconds,
		      unsigned *threads, unsigned *hogs)
{
	static const struct option opts[] = {
		{ "mode", required_argument, NULL, 'm' },
		{ "topology", required_argument, NULL, 't' },
		{ "seconds", required_argument, NULL, 's' },
		{ "threads", required_argument, NULL, 'n' },
		{ "hogs", required_argument, NULL, 'h' },
		{ "tune-us", required_argument, NULL, 'u' },
		{}
	};
	int c;

	while ((c = getopt_long(argc, argv, "", opts, NULL)) >= 0)
		switch (c) {
		case 'm':
			if (strcmp(optarg, "rseq") == 0)
				*mode = ACCT_MODE_RSEQ;
			else if (strcmp(optarg, "fallback") == 0)
				*mode = ACCT_MODE_FALLBACK;
			else
				return -EINVAL;
			break;
		case 't':
			*topo = optarg;
			break;
		case 's':
			*seconds = atof(optarg);
			break;
		case 'n':
			*threads = (unsigned)atoi(optarg);
			break;
		case 'h': /* a number, or "cpus": one per online CPU */
			*hogs = strcmp(optarg, "cpus") == 0 ? (unsigned)sysconf(_SC_NPROCESSORS_ONLN)
							    : (unsigned)atoi(optarg);
			break;
		case 'u':
			tune_us = (unsigned)atoi(optarg);
			break;
		default:
			return -EINVAL;
		}
	return 0;
}

int main(int argc, char **argv)
{
	enum acct_update_mode mode = ACCT_MODE_RSEQ;
	const char *topo_spec = "real";
	double seconds = 3;
	unsigned threads = 0, hogs = 0;
	struct acct_topology *topo = NULL;
	pthread_t wt[MAX_WRITERS], rt[2], tt, ht[MAX_WRITERS];
	int r;

	if (parse_args(argc, argv, &mode, &topo_spec, &seconds, &threads, &hogs) < 0 || hogs > MAX_WRITERS) {
		fprintf(stderr,
			"usage: %s [--mode rseq|fallback] [--topology real|CxN] [--seconds S] [--threads N]"
			" [--hogs N|cpus (<= %d)] [--tune-us U]\n",
			argv[0], MAX_WRITERS);
		return 2;
	}
	if (mode == ACCT_MODE_RSEQ && !acct_rseq_usable()) {
		printf("SKIP: restartable sequences are not usable here (glibc, kernel or architecture)\n");
		return 77;
	}
	nr_cpus = (int)sysconf(_SC_NPROCESSORS_ONLN);
	nr_writers = threads ? threads : (unsigned)MAX(8, 4 * nr_cpus);
	if (nr_writers > MAX_WRITERS)
		nr_writers = MAX_WRITERS;
	r = acct_topology_from_spec(topo_spec, &topo);
	if (r < 0) {
		fprintf(stderr, "bad topology '%s': %s\n", topo_spec, strerror(-r));
		return 2;
	}
#ifdef ACCT_COUNTER_TEST_POINTS
	acct_counter_test_hook = stall_at_random;
#endif
	struct acct_domain_options o = { .topology = topo, .mode = mode, .auto_tune = true };
	r = acct_domain_new(&o, &domain);
	if (r < 0) {
		fprintf(stderr, "acct_domain_new: %s\n", strerror(-r));
		return 1;
	}
	if (acct_counter_new(domain, (int64_t)topo->nr_shards * BUDGET_PER_SHARD, &counter_a) < 0 ||
	    acct_counter_upgrade(counter_a) < 0 ||
	    acct_counter_new(domain, (int64_t)topo->nr_shards * BUDGET_PER_SHARD, &counter_b) < 0)
		return 1;

	for (unsigned i = 0; i < nr_writers; i++) {
		writers[i].id = i;
		pthread_create(&wt[i], NULL, writer_main, &writers[i]);
	}
	for (unsigned i = 0; i < hogs; i++)
		pthread_create(&ht[i], NULL, hog_main, NULL);
	for (uintptr_t i = 0; i < 2; i++)
		pthread_create(&rt[i], NULL, reader_main, (void *)i);
	pthread_create(&tt, NULL, tuner_main, NULL);
	usleep((useconds_t)(seconds * 1e6));
	atomic_store(&stop, true);
	for (unsigned i = 0; i < nr_writers; i++)
		pthread_join(wt[i], NULL);
	for (unsigned i = 0; i < 2; i++)
		pthread_join(rt[i], NULL);
	pthread_join(tt, NULL);
	for (unsigned i = 0; i < hogs; i++)
		pthread_join(ht[i], NULL);

	int64_t total_a = 0, total_b = 0;
	uint64_t ops = 0, migrations = 0;
	for (unsigned i = 0; i < nr_writers; i++) {
		total_a += writers[i].done;
		total_b += writers[i].done_b;
		ops += writers[i].ops;
		migrations += writers[i].migrations;
	}
	int64_t pa = acct_counter_read_precise(counter_a), pb = acct_counter_read_precise(counter_b);
	struct acct_reading ra;
	acct_counter_read(counter_a, &ra);
	struct acct_counter_stats sa, sb;
	acct_counter_stats(counter_a, &sa);
	acct_counter_stats(counter_b, &sb);

	printf("mode=%s topology=%s (%u shards, %u nodes) writers=%u hogs=%u stalls=%s ops=%" PRIu64
	       " migrations=%" PRIu64 "\n",
	       acct_update_mode_to_string(mode), topo_spec, topo->nr_shards, topo->nr_nodes, nr_writers, hogs,
	       acct_counter_test_points ? "random" : "none", ops, migrations);
	printf("reads=%" PRIu64 " precise=%" PRIu64 " compares=%" PRIu64 " violations=%" PRIu64
	       " worst(err-bound-slack)=%" PRId64 "\n",
	       atomic_load(&reads), atomic_load(&precise_reads), atomic_load(&compares), atomic_load(&violations),
	       atomic_load(&worst_excess));
	printf("A: precise=%" PRId64 " expected=%" PRId64 " approx=%" PRId64 "+/-%" PRIu64 " folds=%" PRIu64
	       " direct=%" PRIu64 " grows=%" PRIu64 " shrinks=%" PRIu64 "\n",
	       pa, total_a, ra.value, ra.bound, sa.folds, sa.direct, sa.tune_grows, sa.tune_shrinks);
	printf("B: precise=%" PRId64 " expected=%" PRId64 " upgraded=%d\n", pb, total_b, sb.upgraded);

	bool ok = pa == total_a && pb == total_b && atomic_load(&violations) == 0 &&
		  abs_u64(ra.value - total_a) <= ra.bound && sb.upgraded && atomic_load(&reads) > 0;
	acct_counter_free(counter_a);
	acct_counter_free(counter_b);
	acct_domain_free(domain);
	acct_topology_free(topo);
	printf("%s\n", ok ? "PASS" : "FAIL");
	return ok ? 0 : 1;
}
