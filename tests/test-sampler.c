/* test-sampler.c - the sampler (lib/core/sampler.c) as a module, against this
 * host's real cgroups: its workers and the BPF collector's snapshots.
 *
 * A pass with the collector is two-phase: worker 0 walks the kernel's
 * hierarchies into the sampler's snapshots while the other workers wait,
 * then all of them read records from those snapshots. Stopping the sampler
 * (acct_sampler_free()) in the first phase must not release a waiting
 * worker into snapshots that worker 0 is still writing: under TSan that was
 * a data race (CI, stop 20), outside it a worker could read a record from a
 * half-replaced snapshot. The test frees the sampler at once after starting
 * pass after pass, on a memory hierarchy made large enough that the walk is
 * still running when the stop comes; it is registered in the suite that the
 * TSan phase of `make check` runs (suite "threads").
 *
 * Needs root, a v1 memory hierarchy and a kernel that loads the collector's
 * program; otherwise exits 77 saying which is missing. Its cgroups live under
 * <memory>/sampler-tests-<pid> and are removed on every exit path. */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "bpf-collector.h"
#include "cgroup-layout.h"
#include "counter.h"
#include "ledger.h"
#include "sampler.h"
#include "util.h"

/* Enough cgroups that a walk takes a while; few enough to make quickly. */
#define NR_CHILDREN 400
#define ROUNDS 40

static struct acct_cgroup_layout *layout;
static struct acct_bpf_collector *coll;
static const char *mem_root;
static char base[PATH_MAX];
static pid_t owner;

static void cleanup(void)
{
	char p[PATH_MAX + 32];
	if (getpid() != owner || !base[0])
		return;
	for (int i = 0; i < NR_CHILDREN; i++) {
		snprintf(p, sizeof(p), "%s/c%d", base, i);
		(void)rmdir(p);
	}
	(void)rmdir(base);
}

struct fixture {
	struct acct_domain *domain;
	struct acct_ledger *ledger;
	struct acct_cgroup *cgs[NR_CHILDREN];
};

static int setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));
	assert_non_null(f);
	struct acct_ledger_budgets b = { 0 };
	assert_int_equal(acct_domain_new(NULL, &f->domain), 0);
	assert_int_equal(acct_ledger_new(f->domain, &b, &f->ledger), 0);
	char rel[64], p[PATH_MAX + 32];
	for (int i = 0; i < NR_CHILDREN; i++) {
		snprintf(rel, sizeof(rel), "/%s/c%d", strrchr(base, '/') + 1, i);
		snprintf(p, sizeof(p), "%s/c%d", base, i);
		struct stat st;
		assert_int_equal(stat(p, &st), 0);
		struct acct_cgroup_id id = { .path = rel, .depth = 2, .hierarchies = 1u << ACCT_HIER_MEMORY };
		id.inode[ACCT_HIER_MEMORY] = st.st_ino;
		assert_int_equal(acct_ledger_add(f->ledger, &id, acct_now_us(), &f->cgs[i]), 0);
	}
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;
	for (int i = 0; i < NR_CHILDREN; i++)
		acct_sampler_release(f->cgs[i], NULL);
	acct_ledger_free(f->ledger);
	acct_domain_free(f->domain);
	free(f);
	return 0;
}

static struct acct_sampler *new_sampler(struct fixture *f, unsigned workers)
{
	struct acct_sampler_options o = {
		.layout = layout,
		.workers = workers,
		.collector = coll,
		.nr_nodes = 1,
		.kernel_bounds = true,
	};
	struct acct_sampler *s = NULL;
	assert_int_equal(acct_sampler_new(&o, f->ledger, &s), 0);
	assert_true(acct_bpf_collector_serves(coll, ACCT_HIER_MEMORY));
	return s;
}

/* Stop right after a start, pass after pass, with more workers than CPUs
 * waiting on worker 0's walk: the sampler stops without any worker reading
 * a snapshot before it is whole, and frees everything. */
static void test_stop_during_walk(void **state)
{
	struct fixture *f = *state;
	static const unsigned flags[] = { ACCT_PASS_FAST, ACCT_PASS_FAST | ACCT_PASS_SLOW, ACCT_PASS_KERNEL };
	for (int round = 0; round < ROUNDS; round++) {
		struct acct_sampler *s = new_sampler(f, 4);
		assert_int_equal(acct_sampler_start(s, f->cgs, NR_CHILDREN, flags[round % ELEMENTSOF(flags)],
						    acct_now_us()),
				 0);
		assert_true(acct_sampler_busy(s));
		acct_sampler_free(s);
	}
}

/* The same workers finish the passes they are let finish, one after the
 * other: the first fast pass takes every cgroup's memory from a record of
 * the walk (the collector serves memory here) and reads cgroup.events; the
 * second skips them all, read since they emptied; a slow pass reads them
 * again, memory from the records. */
static void test_passes_complete(void **state)
{
	struct fixture *f = *state;
	struct acct_sampler *s = new_sampler(f, 4);
	static const struct {
		unsigned flags;
		uint64_t from_records, skipped;
	} passes[] = {
		{ ACCT_PASS_FAST, NR_CHILDREN, 0 },
		{ ACCT_PASS_FAST, 0, NR_CHILDREN },
		{ ACCT_PASS_FAST | ACCT_PASS_SLOW, NR_CHILDREN, 0 },
		{ ACCT_PASS_KERNEL, NR_CHILDREN, 0 },
	};
	for (size_t i = 0; i < ELEMENTSOF(passes); i++) {
		struct acct_pass_report rep;
		assert_int_equal(acct_sampler_run(s, f->cgs, NR_CHILDREN, passes[i].flags, acct_now_us(), &rep), 0);
		assert_int_equal(rep.cgroups, NR_CHILDREN);
		assert_true(rep.bpf_records >= NR_CHILDREN);
		assert_int_equal(rep.bpf_cgroups, passes[i].from_records);
		assert_int_equal(rep.skipped_empty, passes[i].skipped);
		assert_int_equal(rep.cgroups_failed, 0);
	}
	acct_sampler_free(s);
}

/* Why the tests cannot run here, or NULL. */
static const char *missing(void)
{
	static char why[512];
	if (geteuid() != 0)
		return "not root: cannot make cgroups or load BPF";
	if (acct_cgroup_layout_detect(NULL, &layout) < 0 || !layout->mount[ACCT_HIER_MEMORY])
		return "no v1 memory hierarchy here";
	mem_root = layout->mount[ACCT_HIER_MEMORY];
	struct acct_bpf_collector_options o = {
		.layout = layout,
		.hierarchies = 1u << ACCT_HIER_MEMORY,
		.attach = true,
		.nr_nodes = 1,
	};
	if (acct_bpf_collector_new(&o, &coll) < 0)
		return "cannot build a collector";
	if (!acct_bpf_collector_serves(coll, ACCT_HIER_MEMORY)) {
		snprintf(why, sizeof(why), "BPF cannot serve the memory hierarchy: %s",
			 acct_bpf_collector_reason(coll, ACCT_HIER_MEMORY));
		return why;
	}
	return NULL;
}

int main(void)
{
	const char *why = missing();
	if (why) {
		printf("skipping: %s\n", why);
		acct_bpf_collector_free(coll);
		acct_cgroup_layout_free(layout);
		return 77;
	}
	owner = getpid();
	snprintf(base, sizeof(base), "%s/sampler-tests-%d", mem_root, (int)owner);
	atexit(cleanup);
	if (mkdir(base, 0755) < 0) {
		printf("cannot make %s: %s\n", base, strerror(errno));
		return 1;
	}
	char p[PATH_MAX + 32];
	for (int i = 0; i < NR_CHILDREN; i++) {
		snprintf(p, sizeof(p), "%s/c%d", base, i);
		if (mkdir(p, 0755) < 0) {
			printf("cannot make %s: %s\n", p, strerror(errno));
			return 1;
		}
	}

	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_stop_during_walk, setup, teardown),
		cmocka_unit_test_setup_teardown(test_passes_complete, setup, teardown),
	};
	int failed = cmocka_run_group_tests_name("sampler", tests, NULL, NULL);
	cleanup();
	acct_bpf_collector_free(coll);
	acct_cgroup_layout_free(layout);
	return failed;
}
