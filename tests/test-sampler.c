/* test-sampler.c - the sampler (lib/core/sampler.c) as a module.
 *
 * The file is long because the sampler's cases share one fixture (a
 * temporary tree per layout, a ledger, the failure injection of its head)
 * and the real-cgroup cases share another; split, each file would repeat
 * them.
 *
 * On temporary cgroup-like trees (tests/test-tree.c), which any user can
 * make: which file each value comes from per layout (v2, v1 and hybrid, the
 * root), how a failed value is classified and counted (vanished, garbage,
 * unreadable, invariant) without failing the cgroup's other values, the
 * restart of a series when its source file changes, the descriptor cache's
 * limit, empty cgroups, the root's memory and the load's thread counts, v1
 * blkio and the block devices' names, and when pressure and the CPU and I/O
 * rates are (not) read or measured.
 *
 * Against this host's real cgroups, what a temporary tree cannot do: a
 * cgroup removed under a cached descriptor (the kernel's ENODEV), and the
 * workers with the BPF collector's snapshots. A pass with the collector is
 * two-phase: worker 0 walks the kernel's hierarchies into the sampler's
 * snapshots while the other workers wait, then all of them read records
 * from those snapshots. Stopping the sampler (acct_sampler_free()) in the
 * first phase must not release a waiting worker into snapshots that worker 0
 * is still writing: under TSan that was a data race (CI, stop 20), outside it
 * a worker could read a record from a half-replaced snapshot. The test frees
 * the sampler at once after starting pass after pass, on a memory hierarchy
 * made large enough that the walk is still running when the stop comes; it
 * is registered in the suite that the TSan phase of `make check` runs (suite
 * "threads").
 *
 * The real-cgroup tests need root and a v1 memory hierarchy, the BPF ones
 * also a kernel that loads the collector's program; where one is missing they
 * are skipped saying which (the temporary-tree tests run). Their cgroups live
 * under <memory>/sampler-tests-<pid> and are removed on every exit path; those
 * of a run that was killed are removed by the next. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "bpf-collector.h"
#include "cgroup-layout.h"
#include "counter.h"
#include "ledger.h"
#include "load.h"
#include "memcg-bounds.h"
#include "parse.h"
#include "sampler.h"
#include "test-tree.h"
#include "util.h"

/* ---- failures on demand ------------------------------------------------------------
 *
 * What neither a temporary tree nor the kernel can be made to do on demand
 * (an allocation failing, open(2) failing with ENFILE, a read failing with
 * ESTALE or EIO, minutes passing) is injected: the test is linked with
 * --wrap for calloc, malloc, free, open64, pread64 and acct_now_us
 * (tests/meson.build), and these wrappers pass every call through unless a
 * test armed them; open64 also answers for sysfs's block devices from a
 * directory of the test's (inject.sys_block), and can answer descriptor 0,
 * what a daemon started with stdin closed gets (inject.fd0_suffix). */

void *__real_calloc(size_t n, size_t size);
void *__real_malloc(size_t size);
void __real_free(void *p);
int __real_open64(const char *path, int flags, ...);
ssize_t __real_pread64(int fd, void *buf, size_t count, off_t offset);
void *__wrap_calloc(size_t n, size_t size);
void *__wrap_malloc(size_t size);
void __wrap_free(void *p);
int __wrap_open64(const char *path, int flags, ...);
ssize_t __wrap_pread64(int fd, void *buf, size_t count, off_t offset);
uint64_t __real_acct_now_us(void);
uint64_t __wrap_acct_now_us(void);

static struct {
	unsigned calloc_fail_in;  /* the calloc_fail_in-th calloc from now fails; 0: none */
	size_t malloc_fail_size;  /* a malloc of this size fails (once); 0: none */
	unsigned malloc_fail_skip; /* ... after this many of that size went through */
	bool counting;            /* count live allocations (calloc, malloc - free) */
	long live;
	const char *open_suffix;  /* open64 of a path ending so fails with open_errno (once) */
	int open_errno;
	const char *read_suffix;  /* pread64 of a file whose path ends so fails with read_errno (once) */
	int read_errno;
	uint64_t clock_ahead_us;  /* added to the monotonic clock of the sampler and the test */
	uint64_t clock_stopped_us; /* when not 0: the monotonic clock stands here (plus clock_ahead_us) */
	const char *advance_suffix; /* pread64 of a file whose path ends so moves the stopped clock on by
				     * advance_us first (once) */
	uint64_t advance_us;
	const char *sys_block;    /* open64 of /sys/dev/block/REST opens sys_block/REST instead */
	const char *fd0_suffix;   /* open64 of a path ending so answers descriptor 0 (once; the test
				   * has set stdin aside) */
} inject;

uint64_t __wrap_acct_now_us(void)
{
	uint64_t stopped = __atomic_load_n(&inject.clock_stopped_us, __ATOMIC_ACQUIRE);
	return (stopped ? stopped : __real_acct_now_us()) + __atomic_load_n(&inject.clock_ahead_us, __ATOMIC_RELAXED);
}

void *__wrap_calloc(size_t n, size_t size)
{
	unsigned k = __atomic_load_n(&inject.calloc_fail_in, __ATOMIC_RELAXED);
	if (k && __atomic_sub_fetch(&inject.calloc_fail_in, 1, __ATOMIC_RELAXED) == 0)
		return NULL;
	void *p = __real_calloc(n, size);
	if (p && __atomic_load_n(&inject.counting, __ATOMIC_RELAXED))
		__atomic_add_fetch(&inject.live, 1, __ATOMIC_RELAXED);
	return p;
}

void *__wrap_malloc(size_t size)
{
	size_t fail = __atomic_load_n(&inject.malloc_fail_size, __ATOMIC_RELAXED);
	if (fail && size == fail && __atomic_load_n(&inject.malloc_fail_skip, __ATOMIC_RELAXED) > 0)
		__atomic_sub_fetch(&inject.malloc_fail_skip, 1, __ATOMIC_RELAXED);
	else if (fail && size == fail && __atomic_compare_exchange_n(&inject.malloc_fail_size, &fail, 0, false,
								 __ATOMIC_RELAXED, __ATOMIC_RELAXED))
		return NULL;
	void *p = __real_malloc(size);
	if (p && __atomic_load_n(&inject.counting, __ATOMIC_RELAXED))
		__atomic_add_fetch(&inject.live, 1, __ATOMIC_RELAXED);
	return p;
}

void __wrap_free(void *p)
{
	if (p && __atomic_load_n(&inject.counting, __ATOMIC_RELAXED))
		__atomic_sub_fetch(&inject.live, 1, __ATOMIC_RELAXED);
	__real_free(p);
}

static bool ends_with(const char *s, const char *suffix)
{
	size_t a = strlen(s), b = strlen(suffix);
	return a >= b && strcmp(s + a - b, suffix) == 0;
}

int __wrap_open64(const char *path, int flags, ...)
{
	mode_t mode = 0;
	if (flags & O_CREAT) {
		va_list ap;
		va_start(ap, flags);
		mode = va_arg(ap, mode_t);
		va_end(ap);
	}
	const char *suffix = __atomic_load_n(&inject.open_suffix, __ATOMIC_ACQUIRE);
	if (suffix && ends_with(path, suffix) &&
	    __atomic_compare_exchange_n(&inject.open_suffix, &suffix, NULL, false, __ATOMIC_ACQ_REL, __ATOMIC_RELAXED)) {
		errno = inject.open_errno;
		return -1;
	}
	const char *fd0 = __atomic_load_n(&inject.fd0_suffix, __ATOMIC_ACQUIRE);
	if (fd0 && ends_with(path, fd0) &&
	    __atomic_compare_exchange_n(&inject.fd0_suffix, &fd0, NULL, false, __ATOMIC_ACQ_REL, __ATOMIC_RELAXED)) {
		int fd = __real_open64(path, flags, mode);
		if (fd <= 0)
			return fd;
		int zero = dup3(fd, 0, flags & O_CLOEXEC);
		close(fd);
		return zero;
	}
	const char *sys_block = __atomic_load_n(&inject.sys_block, __ATOMIC_ACQUIRE);
	if (sys_block && strncmp(path, "/sys/dev/block/", 15) == 0) {
		char moved[PATH_MAX];
		snprintf(moved, sizeof(moved), "%s/%s", sys_block, path + 15);
		return __real_open64(moved, flags, mode);
	}
	return __real_open64(path, flags, mode);
}

/* Whether descriptor fd is open on a path that ends with suffix. */
static bool fd_ends_with(int fd, const char *suffix)
{
	char link[64], path[PATH_MAX];
	snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
	ssize_t n = readlink(link, path, sizeof(path) - 1);
	if (n <= 0)
		return false;
	path[n] = 0;
	return ends_with(path, suffix);
}

ssize_t __wrap_pread64(int fd, void *buf, size_t count, off_t offset)
{
	const char *advance = __atomic_load_n(&inject.advance_suffix, __ATOMIC_ACQUIRE);
	if (advance && fd_ends_with(fd, advance) &&
	    __atomic_compare_exchange_n(&inject.advance_suffix, &advance, NULL, false, __ATOMIC_ACQ_REL, __ATOMIC_RELAXED))
		__atomic_add_fetch(&inject.clock_stopped_us, inject.advance_us, __ATOMIC_ACQ_REL);
	const char *suffix = __atomic_load_n(&inject.read_suffix, __ATOMIC_ACQUIRE);
	if (suffix) {
		char link[64], path[PATH_MAX];
		snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
		ssize_t n = readlink(link, path, sizeof(path) - 1);
		if (n > 0) {
			path[n] = 0;
			if (ends_with(path, suffix) && __atomic_compare_exchange_n(&inject.read_suffix, &suffix, NULL, false,
										    __ATOMIC_ACQ_REL, __ATOMIC_RELAXED)) {
				errno = inject.read_errno;
				return -1;
			}
		}
	}
	return __real_pread64(fd, buf, count, offset);
}

/* ---- temporary trees -------------------------------------------------------- */

#define H(h) (1u << (h))
#define UNI H(ACCT_HIER_UNIFIED)
#define V1_ALL (H(ACCT_HIER_MEMORY) | H(ACCT_HIER_CPUACCT) | H(ACCT_HIER_CPU))

struct tree {
	char *base;
	struct acct_hierarchies L;
	struct acct_domain *domain;
	struct acct_ledger *ledger;
	struct acct_sampler *s;
	struct acct_sampler_options o;
	struct acct_pass_report rep;
	int saved_stdin; /* > 0: stdin set aside by the test, put back by the teardown */
};

static int tree_setup(void **state)
{
	struct tree *t = calloc(1, sizeof(*t));
	assert_non_null(t);
	memset(&inject, 0, sizeof(inject));
	t->base = make_tmpdir("test-sampler");
	make_hybrid(t->base);
	t->L.mode = ACCT_CGROUP_HYBRID;
	t->L.root = t->base;
	t->L.mount[ACCT_HIER_UNIFIED] = xjoin(t->base, "unified");
	t->L.mount[ACCT_HIER_MEMORY] = xjoin(t->base, "memory");
	t->L.mount[ACCT_HIER_CPUACCT] = xjoin(t->base, "cpu,cpuacct");
	t->L.mount[ACCT_HIER_CPU] = xjoin(t->base, "cpu");
	t->L.v2_memory = true;
	struct acct_ledger_budgets b = { 0 };
	assert_int_equal(acct_domain_new(NULL, &t->domain), 0);
	assert_int_equal(acct_ledger_new(t->domain, &b, &t->ledger), 0);
	/* One worker: a pass's share of work is in list order. Two CPUs' worth
	 * of usage_percpu below. */
	t->o = (struct acct_sampler_options){
		.layout = &t->L, .workers = 1, .user_hz = 100, .page_size = 4096, .nr_nodes = 1,
		/* given, not detected from the kernel's BTF: a tree's values carry none */
		.batching = { .nr_cpus = 4, .charge_batch = 64, .stock_slots = 1, .page_size = 4096 },
	};
	*state = t;
	return 0;
}

/* The sampler, after the test has set the layout and the options. */
static struct acct_sampler *tree_sampler(struct tree *t)
{
	if (!t->s)
		assert_int_equal(acct_sampler_new(&t->o, t->ledger, &t->s), 0);
	return t->s;
}

/* acct_sampler_run() at now_us with the clock stopped there meanwhile: every
 * read of the pass then happens at its start (sampler.c's read_moment() is
 * now_us), so that the rates' intervals are exactly those the test gives
 * (and a file given to inject.advance_suffix moves the reads after it on). */
static int run_at(struct tree *t, struct acct_cgroup **cgs, size_t n, unsigned flags, uint64_t now_us)
{
	__atomic_store_n(&inject.clock_stopped_us, now_us, __ATOMIC_RELEASE);
	int r = acct_sampler_run(tree_sampler(t), cgs, n, flags, now_us, &t->rep);
	__atomic_store_n(&inject.clock_stopped_us, 0, __ATOMIC_RELEASE);
	return r;
}

static int tree_teardown(void **state)
{
	struct tree *t = *state;
	struct acct_cgroup **all = NULL;
	int n = acct_ledger_snapshot(t->ledger, true, &all);
	for (int i = 0; i < n; i++)
		acct_sampler_release(all[i], t->s);
	free(all);
	acct_sampler_free(t->s);
	if (t->saved_stdin > 0) {
		(void)dup2(t->saved_stdin, 0);
		close(t->saved_stdin);
	}
	acct_ledger_free(t->ledger);
	acct_domain_free(t->domain);
	rm_rf(t->base);
	free(t->base);
	for (int h = 0; h < _ACCT_HIER_MAX; h++)
		free(t->L.mount[h]);
	free(t);
	return 0;
}

static struct acct_cgroup *tree_add(struct tree *t, const char *path, uint32_t hierarchies)
{
	struct acct_cgroup *cg = NULL;
	unsigned depth = 0;
	for (const char *p = path; *p && strcmp(path, "/") != 0; p++)
		depth += *p == '/';
	struct acct_cgroup_id id = { .path = path, .depth = depth, .hierarchies = hierarchies };
	assert_int_equal(acct_ledger_add(t->ledger, &id, 1, &cg), 0);
	return cg;
}

/* One pass over every live cgroup, in path order; its report in t->rep. */
static void tree_pass(struct tree *t, unsigned flags)
{
	struct acct_cgroup **cgs = NULL;
	int n = acct_ledger_snapshot(t->ledger, false, &cgs);
	assert_true(n >= 0);
	assert_int_equal(acct_sampler_run(tree_sampler(t), cgs, (size_t)n, flags, acct_now_us(), &t->rep), 0);
	acct_sampler_root_memory(t->s, cgs, (size_t)n);
	free(cgs);
}

static int64_t value(struct acct_cgroup *cg, enum acct_quantity q)
{
	struct acct_reading rd;
	if (!acct_cgroup_get(cg, q, true, &rd))
		return INT64_MIN; /* never read */
	return rd.value;
}

static void assert_no_errors(const struct acct_pass_report *r)
{
	for (int e = 0; e < _ACCT_ERR_MAX; e++)
		assert_int_equal(r->errors[e], 0);
	assert_int_equal(r->cgroups_failed, 0);
}

static const char cpu_stat_v2[] = "usage_usec 5000\nuser_usec 3000\nsystem_usec 2000\n"
				   "nr_periods 7\nnr_throttled 2\nthrottled_usec 900\n";

/* v2 (the memory controller in the unified tree): every value from the
 * unified files, none from the v1 memory tree the cgroup is also in. */
static void test_files_v2(void **state)
{
	struct tree *t = *state;
	struct acct_cgroup *a = tree_add(t, "/a", UNI | H(ACCT_HIER_MEMORY));
	xmkdir(t->base, "unified/a");
	xwrite(t->base, "unified/a/cgroup.events", "populated 1\nfrozen 0\n");
	xwrite(t->base, "unified/a/memory.current", "10000\n");
	xwrite(t->base, "unified/a/memory.stat", "anon 6000\ninactive_file 3000\n");
	xwrite(t->base, "unified/a/memory.peak", "20000\n");
	xwrite(t->base, "unified/a/memory.max", "max\n");
	xwrite(t->base, "unified/a/memory.high", "40960\n");
	xwrite(t->base, "unified/a/memory.swap.current", "512\n");
	xwrite(t->base, "unified/a/memory.events", "low 0\nhigh 4\nmax 5\noom 1\noom_kill 1\n");
	xwrite(t->base, "unified/a/cpu.stat", cpu_stat_v2);
	xwrite(t->base, "unified/a/cpu.pressure", "some avg10=1.50 avg60=2.00 avg300=3.00 total=100\n"
						  "full avg10=0.25 avg60=0.00 avg300=0.00 total=50\n");
	xwrite(t->base, "unified/a/io.stat", "8:0 rbytes=100 wbytes=200 rios=1 wios=2\n");
	xwrite(t->base, "unified/a/memory.numa_stat",
	       "anon N0=100\nfile N0=10\nkernel_stack N0=1\npagetables N0=3\nslab_reclaimable N0=5\n"
	       "slab_unreclaimable N0=7\nshmem N0=1000\n");
	xmkdir(t->base, "memory/a");
	xwrite(t->base, "memory/a/memory.usage_in_bytes", "99999\n");
	xwrite(t->base, "memory/a/memory.memsw.usage_in_bytes", "99999\n");

	tree_pass(t, ACCT_PASS_FAST | ACCT_PASS_SLOW);
	assert_no_errors(&t->rep);
	/* pressure: both lines, averages in hundredths of a percent */
	assert_int_equal(value(a, ACCT_Q_PSI_CPU_SOME), 100);
	assert_int_equal(value(a, ACCT_Q_PSI_CPU_FULL), 50);
	assert_int_equal(a->psi_avg[ACCT_PSI_CPU][ACCT_PSI_SOME][0], 150);
	assert_int_equal(a->psi_avg[ACCT_PSI_CPU][ACCT_PSI_SOME][2], 300);
	assert_int_equal(a->psi_avg[ACCT_PSI_CPU][ACCT_PSI_FULL][0], 25);
	assert_true(a->psi_known[ACCT_PSI_CPU]);
	assert_false(a->psi_known[ACCT_PSI_IO]);
	/* I/O: totals of what the device lists; what it does not list is -1
	 * for the device and no total */
	assert_int_equal(value(a, ACCT_Q_IO_READ_BYTES), 100);
	assert_int_equal(value(a, ACCT_Q_IO_WRITE_IOS), 2);
	assert_int_equal(value(a, ACCT_Q_IO_DISCARD_BYTES), INT64_MIN);
	assert_non_null(a->io);
	assert_int_equal(a->io->n, 1);
	assert_int_equal(a->io->dev[0].v[ACCT_IO_READ_BYTES], 100);
	assert_int_equal(a->io->dev[0].v[ACCT_IO_DISCARD_BYTES], -1);
	assert_int_equal(a->io->dev[0].v[ACCT_IO_DISCARD_IOS], -1);
	/* NUMA: a node's memory is anon, file, kernel stacks, page tables and
	 * slab (not shmem, which file holds) */
	struct acct_reading rd;
	assert_int_equal(acct_counter_read_node(a->numa, 0, &rd), 0);
	assert_int_equal(rd.value, 126);
	assert_int_equal(value(a, ACCT_Q_MEMORY), 10000);
	assert_int_equal(value(a, ACCT_Q_WORKING_SET), 7000);
	assert_int_equal(value(a, ACCT_Q_MEMORY_PEAK), 20000);
	assert_int_equal(value(a, ACCT_Q_MEMORY_MAX), -1);
	assert_int_equal(value(a, ACCT_Q_MEMORY_HIGH), 40960);
	assert_int_equal(value(a, ACCT_Q_SWAP), 512);
	assert_int_equal(value(a, ACCT_Q_MEMORY_EVENTS_HIGH), 4);
	assert_int_equal(value(a, ACCT_Q_MEMORY_EVENTS_MAX), 5);
	assert_int_equal(value(a, ACCT_Q_CPU_USAGE), 5000);
	assert_int_equal(value(a, ACCT_Q_CPU_USER), 3000);
	assert_int_equal(value(a, ACCT_Q_CPU_SYSTEM), 2000);
	assert_int_equal(value(a, ACCT_Q_CPU_PERIODS), 7);
	assert_int_equal(value(a, ACCT_Q_CPU_THROTTLED), 900);
	assert_true(a->events_known);
}

/* Hybrid without the memory controller in the unified tree: memory from the
 * v1 memory tree (swap = memsw - memory), CPU from cpuacct (usage_percpu,
 * cpuacct.stat in ticks), throttling from the v1 cpu.stat; the unified
 * files the cgroup also has are not read for these. */
static void test_files_v1(void **state)
{
	struct tree *t = *state;
	t->L.v2_memory = false;
	struct acct_cgroup *a = tree_add(t, "/a", UNI | V1_ALL);
	xmkdir(t->base, "unified/a");
	xwrite(t->base, "unified/a/cgroup.events", "populated 1\nfrozen 0\n");
	xwrite(t->base, "unified/a/memory.current", "10000\n");
	xwrite(t->base, "unified/a/cpu.stat", cpu_stat_v2);
	xmkdir(t->base, "memory/a");
	xwrite(t->base, "memory/a/memory.usage_in_bytes", "30000\n");
	xwrite(t->base, "memory/a/memory.memsw.usage_in_bytes", "30700\n");
	xwrite(t->base, "memory/a/memory.stat", "cache 1\ntotal_inactive_file 5000\ninactive_file 7\n");
	xwrite(t->base, "memory/a/memory.max_usage_in_bytes", "50000\n");
	xwrite(t->base, "memory/a/memory.limit_in_bytes", "9223372036854771712\n");
	xwrite(t->base, "memory/a/memory.failcnt", "3\n");
	xmkdir(t->base, "cpu,cpuacct/a");
	xwrite(t->base, "cpu,cpuacct/a/cpuacct.usage_percpu", "1000000 2000999\n");
	xwrite(t->base, "cpu,cpuacct/a/cpuacct.usage", "88888888000\n");
	xwrite(t->base, "cpu,cpuacct/a/cpuacct.stat", "user 10\nsystem 20\n");
	xwrite(t->base, "cpu,cpuacct/a/cpu.stat", "nr_periods 11\nnr_throttled 1\nthrottled_time 4000999\n");

	tree_pass(t, ACCT_PASS_FAST | ACCT_PASS_SLOW);
	assert_no_errors(&t->rep);
	assert_int_equal(value(a, ACCT_Q_MEMORY), 30000);
	assert_int_equal(value(a, ACCT_Q_SWAP), 700);
	assert_int_equal(value(a, ACCT_Q_WORKING_SET), 25000);
	assert_int_equal(value(a, ACCT_Q_MEMORY_PEAK), 50000);
	assert_int_equal(value(a, ACCT_Q_MEMORY_MAX), -1);
	assert_int_equal(value(a, ACCT_Q_MEMORY_EVENTS_MAX), 3);
	assert_int_equal(value(a, ACCT_Q_CPU_USAGE), 3000);
	assert_int_equal(value(a, ACCT_Q_CPU_USER), 100000);
	assert_int_equal(value(a, ACCT_Q_CPU_SYSTEM), 200000);
	assert_int_equal(value(a, ACCT_Q_CPU_PERIODS), 11);
	assert_int_equal(value(a, ACCT_Q_CPU_THROTTLED), 4000);

	/* Without usage_percpu, cpuacct.usage (ns). */
	xrm_rf(t->base, "cpu,cpuacct/a/cpuacct.usage_percpu");
	struct acct_cgroup *b = tree_add(t, "/b", UNI | V1_ALL);
	xmkdir(t->base, "unified/b");
	xmkdir(t->base, "cpu,cpuacct/b");
	xwrite(t->base, "cpu,cpuacct/b/cpuacct.usage", "7000999\n");
	tree_pass(t, ACCT_PASS_FAST);
	assert_no_errors(&t->rep);
	assert_int_equal(value(b, ACCT_Q_CPU_USAGE), 7000);
	assert_int_equal(value(b, ACCT_Q_MEMORY), INT64_MIN);

	/* In the unified tree only (on this host): CPU from its cpu.stat, no memory. */
	struct acct_cgroup *c = tree_add(t, "/c", UNI);
	xmkdir(t->base, "unified/c");
	xwrite(t->base, "unified/c/memory.current", "10000\n");
	xwrite(t->base, "unified/c/cpu.stat", cpu_stat_v2);
	tree_pass(t, ACCT_PASS_FAST);
	assert_no_errors(&t->rep);
	assert_int_equal(value(c, ACCT_Q_CPU_USAGE), 5000);
	assert_int_equal(value(c, ACCT_Q_MEMORY), INT64_MIN);
}

/* The working set is memory less inactive_file, that key alone: memory.stat
 * in the kernel's order has keys of its length after it (pgscan_kswapd and
 * pgscan_direct, 13 letters, pages scanned), which are not it. */
static void test_memstat_inactive_file(void **state)
{
	struct tree *t = *state;
	struct acct_cgroup *a = tree_add(t, "/a", UNI);
	xmkdir(t->base, "unified/a");
	xwrite(t->base, "unified/a/memory.current", "10000\n");
	xwrite(t->base, "unified/a/memory.stat",
	       "anon 6000\nfile 3000\ninactive_anon 6000\nactive_anon 0\ninactive_file 3000\nactive_file 0\n"
	       "pgscan_kswapd 77\npgscan_direct 5\n");
	tree_pass(t, ACCT_PASS_FAST | ACCT_PASS_SLOW);
	assert_no_errors(&t->rep);
	assert_int_equal(value(a, ACCT_Q_WORKING_SET), 7000);
}

/* NUMA from a v2 memory.numa_stat: a node's memory is anon, file, kernel
 * stacks, page tables and slab, each key matched whole. Keys of the same
 * length as one of them are not counted: file_dirty and swapcached (pages
 * that file and anon already hold), workingset_refault (5.8's event count,
 * not pages), and a key that shares all but the last letter of "file" (no
 * kernel has one yet; kernels add keys). A file that does not parse is
 * garbage and changes no node. */
static void test_numa_v2(void **state)
{
	struct tree *t = *state;
	struct acct_cgroup *a = tree_add(t, "/a", UNI);
	struct acct_reading rd;
	xmkdir(t->base, "unified/a");
	xwrite(t->base, "unified/a/memory.current", "10000\n");
	xwrite(t->base, "unified/a/memory.numa_stat",
	       "anon N0=100\nfile N0=10\nfila N0=20000\nkernel_stack N0=1\npagetables N0=3\nshmem N0=1000\n"
	       "file_dirty N0=2000\nswapcached N0=4000\nslab_reclaimable N0=5\nslab_unreclaimable N0=7\n"
	       "workingset_refault N0=8000\n");
	tree_pass(t, ACCT_PASS_FAST | ACCT_PASS_SLOW);
	assert_no_errors(&t->rep);
	assert_int_equal(acct_counter_read_node(a->numa, 0, &rd), 0);
	assert_int_equal(rd.value, 126);

	xwrite(t->base, "unified/a/memory.numa_stat", "anon N0=100\nfile 10\n"); /* no node */
	xwrite(t->base, "unified/a/memory.current", "20000\n"); /* the slow group due again */
	tree_pass(t, ACCT_PASS_FAST | ACCT_PASS_SLOW);
	assert_int_equal(t->rep.errors[ACCT_ERR_GARBAGE], 1);
	assert_int_equal(t->rep.cgroups_failed, 1);
	assert_int_equal(acct_counter_read_node(a->numa, 0, &rd), 0);
	assert_int_equal(rd.value, 126);
	assert_int_equal(value(a, ACCT_Q_MEMORY), 20000);
}

/* NUMA from a v1 memory.numa_stat: pages times the page size, from the
 * hierarchical_total line (as memory.usage_in_bytes counts the descendants),
 * not the cgroup's own total; a file with neither line is garbage. */
static void test_numa_v1(void **state)
{
	struct tree *t = *state;
	t->L.v2_memory = false;
	struct acct_cgroup *a = tree_add(t, "/a", UNI | H(ACCT_HIER_MEMORY));
	struct acct_reading rd;
	xmkdir(t->base, "unified/a");
	xmkdir(t->base, "memory/a");
	xwrite(t->base, "memory/a/memory.usage_in_bytes", "204800\n");
	xwrite(t->base, "memory/a/memory.numa_stat",
	       "total=3 N0=3\nfile=1 N0=1\nanon=2 N0=2\nunevictable=0 N0=0\n"
	       "hierarchical_total=50 N0=50\nhierarchical_file=20 N0=20\nhierarchical_anon=30 N0=30\n"
	       "hierarchical_unevictable=0 N0=0\n");
	tree_pass(t, ACCT_PASS_FAST | ACCT_PASS_SLOW);
	assert_no_errors(&t->rep);
	assert_int_equal(acct_counter_read_node(a->numa, 0, &rd), 0);
	assert_int_equal(rd.value, 50 * 4096);

	xwrite(t->base, "memory/a/memory.numa_stat", "file=1 N0=1\nanon=2 N0=2\n");
	xwrite(t->base, "memory/a/memory.usage_in_bytes", "409600\n"); /* the slow group due again */
	tree_pass(t, ACCT_PASS_FAST | ACCT_PASS_SLOW);
	assert_int_equal(t->rep.errors[ACCT_ERR_GARBAGE], 1);
	assert_int_equal(acct_counter_read_node(a->numa, 0, &rd), 0);
	assert_int_equal(rd.value, 50 * 4096);
	assert_int_equal(value(a, ACCT_Q_MEMORY), 409600);
}

/* The root has no cgroup.events and, in the kernel, no memory.current: its
 * memory is the larger of its own reading (a copied tree's root may have
 * one) and the sum of the top level (acct_sampler_root_memory()). */
static void test_files_root(void **state)
{
	struct tree *t = *state;
	struct acct_cgroup *root = tree_add(t, "/", UNI);
	struct acct_cgroup *a = tree_add(t, "/a", UNI);
	struct acct_cgroup *b = tree_add(t, "/a/b", UNI);
	struct acct_cgroup *c = tree_add(t, "/c", UNI);
	xmkdir(t->base, "unified/a");
	xmkdir(t->base, "unified/a/b");
	xmkdir(t->base, "unified/c");
	xwrite(t->base, "unified/cpu.stat", cpu_stat_v2);

	tree_pass(t, ACCT_PASS_FAST);
	assert_no_errors(&t->rep);
	assert_int_equal(value(root, ACCT_Q_MEMORY), INT64_MIN); /* nothing has memory */
	assert_int_equal(value(root, ACCT_Q_CPU_USAGE), 5000);
	assert_false(root->events_known);

	xwrite(t->base, "unified/a/memory.current", "7000\n");
	xwrite(t->base, "unified/a/b/memory.current", "6000\n");
	xwrite(t->base, "unified/c/memory.current", "5000\n");
	/* absent files are remembered for a cgroup (this kernel lacks them) */
	tree_pass(t, ACCT_PASS_FAST);
	assert_int_equal(value(a, ACCT_Q_MEMORY), INT64_MIN);
	/* new ones come with new records */
	acct_sampler_release(a, t->s);
	acct_sampler_release(b, t->s);
	acct_sampler_release(c, t->s);
	tree_pass(t, ACCT_PASS_FAST);
	assert_no_errors(&t->rep);
	assert_int_equal(value(root, ACCT_Q_MEMORY), 12000); /* the top level: /a and /c */

	xwrite(t->base, "unified/memory.current", "12001\n");
	acct_sampler_release(root, t->s);
	tree_pass(t, ACCT_PASS_FAST);
	assert_int_equal(value(root, ACCT_Q_MEMORY), 12001);
	xwrite(t->base, "unified/memory.current", "11999\n");
	tree_pass(t, ACCT_PASS_FAST);
	assert_int_equal(value(root, ACCT_Q_MEMORY), 12000);
	assert_int_equal(value(a, ACCT_Q_MEMORY), 7000);
}

/* v2 memory.events: each of the six counts the kernel may list (5.16 added
 * oom_group_kill) goes to its own quantity. */
static void test_memory_events_v2(void **state)
{
	struct tree *t = *state;
	struct acct_cgroup *a = tree_add(t, "/a", UNI);
	xmkdir(t->base, "unified/a");
	xwrite(t->base, "unified/a/memory.current", "4096\n");
	xwrite(t->base, "unified/a/memory.events", "low 1\nhigh 2\nmax 3\noom 4\noom_kill 5\noom_group_kill 6\n");
	tree_pass(t, ACCT_PASS_FAST);
	assert_no_errors(&t->rep);
	assert_int_equal(value(a, ACCT_Q_MEMORY_EVENTS_LOW), 1);
	assert_int_equal(value(a, ACCT_Q_MEMORY_EVENTS_HIGH), 2);
	assert_int_equal(value(a, ACCT_Q_MEMORY_EVENTS_MAX), 3);
	assert_int_equal(value(a, ACCT_Q_MEMORY_EVENTS_OOM), 4);
	assert_int_equal(value(a, ACCT_Q_MEMORY_EVENTS_OOM_KILL), 5);
	assert_int_equal(value(a, ACCT_Q_MEMORY_EVENTS_OOM_GROUP_KILL), 6);
}

/* The working set is memory less this slow pass's inactive_file: a
 * memory.stat without that key gives none (not memory in use whole), one
 * with it does, with the kernel's uncertainty of both readings as its bound
 * (the memory counter's stock and memory.stat's unflushed updates). */
static void test_working_set_needs_inactive(void **state)
{
	struct tree *t = *state;
	t->o.kernel_bounds = true; /* as of a kernel's files, not a copy's */
	struct acct_cgroup *a = tree_add(t, "/a", UNI);
	xmkdir(t->base, "unified/a");
	xwrite(t->base, "unified/a/memory.current", "10000\n");
	xwrite(t->base, "unified/a/memory.stat", "anon 6000\nfile 3000\n");
	tree_pass(t, ACCT_PASS_FAST | ACCT_PASS_SLOW);
	assert_no_errors(&t->rep);
	assert_int_equal(t->rep.parts[ACCT_PART_MEMORY_STAT][ACCT_OUTCOME_READ], 1);
	assert_int_equal(value(a, ACCT_Q_MEMORY), 10000);
	assert_int_equal(value(a, ACCT_Q_WORKING_SET), INT64_MIN);

	xwrite(t->base, "unified/a/memory.current", "12000\n"); /* the slow group due again */
	xwrite(t->base, "unified/a/memory.stat", "anon 6000\nfile 3000\ninactive_file 3000\n");
	tree_pass(t, ACCT_PASS_FAST | ACCT_PASS_SLOW);
	assert_no_errors(&t->rep);
	assert_int_equal(t->rep.parts[ACCT_PART_MEMORY_STAT][ACCT_OUTCOME_READ], 1);
	assert_int_equal(value(a, ACCT_Q_WORKING_SET), 9000);
	uint64_t file_bound = acct_memcg_file_stat_bound(&t->o.batching);
	assert_true(file_bound > 0);
	assert_int_equal(acct_cgroup_kernel_bound(a, ACCT_Q_WORKING_SET),
			 acct_memcg_memory_bound(&t->o.batching, INT_MAX) + file_bound);
}

/* The root's memory (acct_sampler_root_memory(), beside test_files_root):
 * a top level that holds 0 bytes makes a root of 0, known; the root's bound
 * is the kernel's (every stock slot, or memory.stat's unflushed updates,
 * whichever is larger), its children's their own. Where its own reading
 * is the larger, the root's memory is as old as that reading, however
 * fresh the top level's is (here read again 5 s later without the root). */
static void test_root_memory_edges(void **state)
{
	struct tree *t = *state;
	t->o.kernel_bounds = true;
	struct acct_cgroup *root = tree_add(t, "/", UNI);
	struct acct_cgroup *a = tree_add(t, "/a", UNI);
	struct acct_cgroup *all[] = { root, a }, *only_a[] = { a };
	xmkdir(t->base, "unified/a");
	xwrite(t->base, "unified/a/memory.current", "0\n");
	tree_pass(t, ACCT_PASS_FAST);
	assert_no_errors(&t->rep);
	assert_int_equal(value(root, ACCT_Q_MEMORY), 0);
	const struct acct_memcg_batching *b = &t->o.batching;
	uint64_t mem_bound = acct_memcg_memory_bound(b, INT_MAX), file_bound = acct_memcg_file_stat_bound(b);
	assert_int_equal(acct_cgroup_kernel_bound(root, ACCT_Q_MEMORY), MAX(mem_bound, file_bound));
	assert_int_equal(acct_cgroup_kernel_bound(a, ACCT_Q_MEMORY), mem_bound);

	/* the root's own reading above the top level's */
	xwrite(t->base, "unified/memory.current", "5000\n");
	xwrite(t->base, "unified/a/memory.current", "4096\n");
	acct_sampler_release(root, t->s); /* its memory file is looked for again */
	uint64_t now = acct_now_us();
	assert_int_equal(acct_sampler_run(t->s, all, 2, ACCT_PASS_FAST, now, &t->rep), 0);
	acct_sampler_root_memory(t->s, all, 2);
	assert_no_errors(&t->rep);
	assert_int_equal(value(root, ACCT_Q_MEMORY), 5000);
	assert_int_equal(acct_cgroup_quantity_sampled(root, ACCT_Q_MEMORY), now);
	assert_int_equal(acct_sampler_run(t->s, only_a, 1, ACCT_PASS_FAST, now + 5 * USEC_PER_SEC, &t->rep), 0);
	acct_sampler_root_memory(t->s, all, 2);
	assert_int_equal(acct_cgroup_quantity_sampled(a, ACCT_Q_MEMORY), now + 5 * USEC_PER_SEC);
	assert_int_equal(value(root, ACCT_Q_MEMORY), 5000);
	assert_int_equal(acct_cgroup_quantity_sampled(root, ACCT_Q_MEMORY), now);
}

/* A cgroup's name may begin with any byte but '/' and NUL (cgroupfs takes
 * control characters): the files of /\x01a, whose path sorts right after
 * the root's, are its own, not the root's. */
static void test_name_control_byte(void **state)
{
	struct tree *t = *state;
	struct acct_cgroup *a = tree_add(t, "/\x01" "a", UNI);
	xmkdir(t->base, "unified/\x01" "a");
	xwrite(t->base, "unified/memory.current", "999\n");
	xwrite(t->base, "unified/\x01" "a/memory.current", "100\n");
	tree_pass(t, ACCT_PASS_FAST);
	assert_no_errors(&t->rep);
	assert_int_equal(value(a, ACCT_Q_MEMORY), 100);
}

/* Each failed value is counted by its reason and fails only itself: garbage
 * (text that does not parse, a number beyond the 64 bits a parser takes
 * (ERANGE inside the parser), beyond INT64_MAX, a NUL byte), unreadable (a
 * directory where a file was); the cgroup's other values are read, and other
 * cgroups are not failed. */
static void test_errors(void **state)
{
	struct tree *t = *state;
	struct acct_cgroup *a = tree_add(t, "/a", UNI);
	struct acct_cgroup *ok = tree_add(t, "/ok", UNI);
	xmkdir(t->base, "unified/a");
	xmkdir(t->base, "unified/ok");
	xwrite(t->base, "unified/ok/memory.current", "100\n");
	xwrite(t->base, "unified/a/cpu.stat", cpu_stat_v2);
	xwrite(t->base, "unified/a/memory.current", "12 34\n");
	xwrite(t->base, "unified/a/memory.high", "99999999999999999999999\n"); /* > UINT64_MAX */
	xwrite(t->base, "unified/a/memory.peak", "9223372036854775808\n");    /* > INT64_MAX: fine for a peak */
	xmkdir(t->base, "unified/a/memory.max");                               /* EISDIR */
	xwrite(t->base, "unified/a/memory.swap.current", "512\n");
	_cleanup_free_ char *nul = xjoin(t->base, "unified/a/memory.swap.max");
	int fd = open(nul, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, "12\0\n", 4), 4);
	close(fd);

	tree_pass(t, ACCT_PASS_FAST | ACCT_PASS_SLOW);
	assert_int_equal(t->rep.errors[ACCT_ERR_GARBAGE], 3); /* memory.current, .high, .swap.max */
	assert_int_equal(t->rep.errors[ACCT_ERR_UNREADABLE], 1);
	assert_int_equal(t->rep.errors[ACCT_ERR_VANISHED], 0);
	assert_int_equal(t->rep.errors[ACCT_ERR_INVARIANT], 0);
	assert_int_equal(t->rep.cgroups_failed, 1);
	assert_int_equal(a->sample_errors, 1);
	assert_int_equal(ok->sample_errors, 0);
	assert_int_equal(value(a, ACCT_Q_MEMORY), INT64_MIN);
	assert_int_equal(value(a, ACCT_Q_MEMORY_HIGH), INT64_MIN);
	assert_int_equal(value(a, ACCT_Q_MEMORY_MAX), INT64_MIN);
	assert_int_equal(value(a, ACCT_Q_SWAP_MAX), INT64_MIN);
	assert_int_equal(value(a, ACCT_Q_MEMORY_PEAK), INT64_MAX);
	assert_int_equal(value(a, ACCT_Q_SWAP), 512);
	assert_int_equal(value(a, ACCT_Q_CPU_USAGE), 5000);
	assert_int_equal(value(ok, ACCT_Q_MEMORY), 100);
	/* a failed cgroup's groups keep their age: not read */
	assert_int_equal(acct_cgroup_age(a, ACCT_GROUP_FAST, acct_now_us()), UINT64_MAX);
	assert_true(acct_cgroup_age(ok, ACCT_GROUP_FAST, acct_now_us()) < UINT64_MAX);

	/* memory in use beyond INT64_MAX ("max" reads as UINT64_MAX) */
	xwrite(t->base, "unified/a/memory.current", "max\n");
	tree_pass(t, ACCT_PASS_FAST);
	assert_int_equal(t->rep.errors[ACCT_ERR_GARBAGE], 1);
	xwrite(t->base, "unified/a/memory.current", "9223372036854775807\n");
	tree_pass(t, ACCT_PASS_FAST);
	assert_no_errors(&t->rep);
	assert_int_equal(value(a, ACCT_Q_MEMORY), INT64_MAX);
}

/* A live cgroup that lacks a file is no error (this kernel lacks it); a
 * removed one whose files are gone has vanished: one count per value. */
static void test_vanished(void **state)
{
	struct tree *t = *state;
	t->o.max_cached_fds = 1; /* most reads open the file afresh */
	struct acct_cgroup *a = tree_add(t, "/a", UNI);
	xmkdir(t->base, "unified/a");
	xwrite(t->base, "unified/a/memory.current", "100\n");
	xwrite(t->base, "unified/a/cpu.stat", cpu_stat_v2);
	/* the first read of a role opens its file for that read alone
	 * (sampler-files.c, "Descriptors that pay"); the second keeps it */
	tree_pass(t, ACCT_PASS_FAST);
	assert_no_errors(&t->rep);
	assert_int_equal(t->rep.open_per_read, 0);
	tree_pass(t, ACCT_PASS_FAST);
	assert_no_errors(&t->rep);
	assert_int_equal(t->rep.open_per_read, 1);
	uint64_t cached;
	bool degraded;
	acct_sampler_fd_stats(t->s, &cached, &degraded);
	assert_int_equal(cached, 1);
	assert_true(degraded);

	xrm_rf(t->base, "unified/a");
	acct_ledger_kill(t->ledger, a, acct_now_us());
	struct acct_cgroup *cgs[] = { a };
	assert_int_equal(acct_sampler_run(t->s, cgs, 1, ACCT_PASS_FAST, acct_now_us(), &t->rep), 0);
	/* cpu.stat, opened per read, is gone; memory.current's cached
	 * descriptor still reads the removed file on a tmpfs (the kernel's
	 * cgroupfs: test_enodev). The files it never had (cgroup.events,
	 * pressure, io.stat, memory.events) and the v1 roles are not reads:
	 * not counted. */
	assert_int_equal(t->rep.errors[ACCT_ERR_VANISHED], 1);
	assert_int_equal(t->rep.errors[ACCT_ERR_GARBAGE] + t->rep.errors[ACCT_ERR_UNREADABLE], 0);
	assert_int_equal(t->rep.cgroups_failed, 1);
	assert_int_equal(value(a, ACCT_Q_CPU_USAGE), 5000); /* its last value stays */
}

/* A path removed and made again (another cgroup, another inode) before
 * discovery says so: a file opened by path then is the stranger's and must
 * not be read as this record's (sampler_open_file()). Without the check the
 * record served the stranger's memory (999) and counted its CPU time going
 * backwards as an invariant violation (seen on a real host: kernel-truth's
 * daemon beside a test that makes its cgroup again under the same name). */
static void test_recreated_path(void **state)
{
	struct tree *t = *state;
	xmkdir(t->base, "unified/a");
	xwrite(t->base, "unified/a/memory.current", "100\n");
	xwrite(t->base, "unified/a/cpu.stat", cpu_stat_v2);
	struct acct_cgroup_id id = { .path = "/a", .depth = 1, .hierarchies = UNI };
	id.inode[ACCT_HIER_UNIFIED] = xinode(t->base, "unified/a");
	struct acct_cgroup *a = NULL;
	assert_int_equal(acct_ledger_add(t->ledger, &id, 1, &a), 0);
	tree_pass(t, ACCT_PASS_FAST); /* each role opened for this read alone */
	assert_no_errors(&t->rep);
	assert_int_equal(value(a, ACCT_Q_MEMORY), 100);
	assert_int_equal(value(a, ACCT_Q_CPU_USAGE), 5000);

	xremake(t->base, "unified/a");
	xwrite(t->base, "unified/a/memory.current", "999\n");
	xwrite(t->base, "unified/a/cpu.stat", "usage_usec 7\nuser_usec 4\nsystem_usec 3\n");
	tree_pass(t, ACCT_PASS_FAST); /* the same roles, opened by path again */
	assert_int_equal(value(a, ACCT_Q_MEMORY), 100);
	assert_int_equal(value(a, ACCT_Q_CPU_USAGE), 5000);
	assert_int_equal(t->rep.errors[ACCT_ERR_INVARIANT], 0);
	assert_int_equal(t->rep.errors[ACCT_ERR_VANISHED], 2);
	assert_int_equal(acct_sampler_read_memory(t->s, a, &(int64_t){ 0 }), -ENOENT); /* fresh reads too */
	xrm_rf(t->base, "unified/a.old");
}

/* A cumulative value that goes backwards in the same file is an invariant
 * violation (the ledger keeps the old value, the report says which); the
 * same after its cgroup moved to another hierarchy's file is a new series. */
static void test_invariant_and_source_change(void **state)
{
	struct tree *t = *state;
	t->L.v2_memory = false;
	struct acct_cgroup *a = tree_add(t, "/a", UNI);
	xmkdir(t->base, "unified/a");
	xwrite(t->base, "unified/a/cpu.stat", cpu_stat_v2);
	tree_pass(t, ACCT_PASS_FAST);
	assert_no_errors(&t->rep);
	assert_string_equal(t->rep.last_backwards, "");

	xwrite(t->base, "unified/a/cpu.stat", "usage_usec 4999\nuser_usec 3000\nsystem_usec 2000\n");
	tree_pass(t, ACCT_PASS_FAST);
	assert_int_equal(t->rep.errors[ACCT_ERR_INVARIANT], 1);
	assert_int_equal(t->rep.cgroups_failed, 1);
	assert_string_equal(t->rep.last_backwards, "/a cpu.usage 5000 -> 4999");
	assert_int_equal(value(a, ACCT_Q_CPU_USAGE), 5000);

	/* now in cpuacct too (systemd adds it a moment later): usage from
	 * usage_percpu, far below the unified counter, without a violation */
	xmkdir(t->base, "cpu,cpuacct/a");
	xwrite(t->base, "cpu,cpuacct/a/cpuacct.usage_percpu", "1000000 2000000\n");
	xwrite(t->base, "cpu,cpuacct/a/cpuacct.stat", "user 0\nsystem 0\n");
	struct acct_cgroup_id id = { .path = "/a", .depth = 1, .hierarchies = UNI | V1_ALL };
	acct_ledger_update_id(t->ledger, a, &id);
	tree_pass(t, ACCT_PASS_FAST);
	assert_no_errors(&t->rep);
	assert_int_equal(value(a, ACCT_Q_CPU_USAGE), 3000);
	assert_int_equal(value(a, ACCT_Q_CPU_USER), 0);

	/* one CPU's usage going backwards in usage_percpu */
	xwrite(t->base, "cpu,cpuacct/a/cpuacct.usage_percpu", "1500000 1999000\n");
	tree_pass(t, ACCT_PASS_FAST);
	assert_int_equal(t->rep.errors[ACCT_ERR_INVARIANT], 1);
	assert_string_equal(t->rep.last_backwards, "/a cpu.usage (CPU 1) 2000 -> 1999");
	assert_int_equal(value(a, ACCT_Q_CPU_USAGE), 3000);
	xwrite(t->base, "cpu,cpuacct/a/cpuacct.usage_percpu", "1500000 2000500\n");
	tree_pass(t, ACCT_PASS_FAST);
	assert_no_errors(&t->rep);
	assert_int_equal(value(a, ACCT_Q_CPU_USAGE), 3500);
}

/* The cgroup of the tree-by-tree removals: /a in the unified tree and every
 * v1 one (memory v1), populated, its CPU time from cpuacct (31 ms; the
 * unified cpu.stat, which the task joined last, says 1 ms), after one pass
 * that read it. */
static struct acct_cgroup *tree_by_tree_cg(struct tree *t)
{
	t->L.v2_memory = false;
	struct acct_cgroup *a = tree_add(t, "/a", UNI | V1_ALL);
	xmkdir(t->base, "unified/a");
	xwrite(t->base, "unified/a/cgroup.events", "populated 1\nfrozen 0\n");
	xwrite(t->base, "unified/a/cpu.stat", "usage_usec 1000\nuser_usec 600\nsystem_usec 400\n");
	xmkdir(t->base, "cpu,cpuacct/a");
	xwrite(t->base, "cpu,cpuacct/a/cpuacct.usage_percpu", "20000000 11000000\n");
	xwrite(t->base, "cpu,cpuacct/a/cpuacct.stat", "user 1\nsystem 2\n");
	tree_pass(t, ACCT_PASS_FAST);
	assert_int_equal(value(a, ACCT_Q_CPU_USAGE), 31000);
	return a;
}

/* A cgroup removed one tree after another (kernel-truth's churn: rmdir in
 * memory, cpu, cpuacct, then unified): with the cpuacct directory gone and
 * the unified one still there, its CPU time is not taken from the unified
 * cpu.stat, another cgroup's counter with another total, and its final read
 * stands. Tasks in it again pick its files anew. */
static void test_removed_tree_by_tree_keeps_sources(void **state)
{
	struct tree *t = *state;
	struct acct_cgroup *a = tree_by_tree_cg(t);

	/* emptied: read until its CPU time has stood still (SETTLE_US) */
	xwrite(t->base, "unified/a/cgroup.events", "populated 0\nfrozen 0\n");
	acct_cgroup_announce_populated_change(a);
	uint64_t deadline = acct_now_us() + 10 * USEC_PER_SEC;
	while (acct_cgroup_final(a) != ACCT_FINAL_READ) {
		assert_true(acct_now_us() < deadline);
		tree_pass(t, ACCT_PASS_FAST);
	}
	assert_int_equal(value(a, ACCT_Q_CPU_USAGE), 31000);

	/* cpuacct's directory goes (memory's and cpu's had no files here) */
	xrm_rf(t->base, "cpu,cpuacct/a");
	struct acct_cgroup_id id = { .path = "/a", .depth = 1, .hierarchies = UNI };
	acct_ledger_update_id(t->ledger, a, &id);
	tree_pass(t, ACCT_PASS_FAST | ACCT_PASS_SLOW);
	tree_pass(t, ACCT_PASS_FAST | ACCT_PASS_SLOW);
	assert_int_equal(value(a, ACCT_Q_CPU_USAGE), 31000);
	assert_int_equal(acct_cgroup_final(a), ACCT_FINAL_READ);
	assert_int_equal(t->rep.cgroups_failed, 0);
	/* and, read since it emptied, it is skipped by the fast passes: its
	 * CPU time can no longer be read, so no re-read would settle it */
	tree_pass(t, ACCT_PASS_FAST);
	assert_int_equal(t->rep.skipped_empty, 1);
	assert_int_equal(acct_cgroup_final(a), ACCT_FINAL_READ);

	/* a task in it again: its files are those of the unified tree now */
	xwrite(t->base, "unified/a/cgroup.events", "populated 1\nfrozen 0\n");
	acct_cgroup_announce_populated_change(a);
	tree_pass(t, ACCT_PASS_FAST | ACCT_PASS_SLOW);
	tree_pass(t, ACCT_PASS_FAST | ACCT_PASS_SLOW);
	assert_int_equal(value(a, ACCT_Q_CPU_USAGE), 1000);
	assert_int_not_equal(acct_cgroup_final(a), ACCT_FINAL_READ);
}

/* The same removal before its final read: emptied, its cpuacct directory
 * gone before a read settled its CPU time, then out of the v1 trees. No
 * read can settle that time any more (sampler.c, cpu_source_left()), so it
 * is not final, however many passes find it empty, and its CPU time stays
 * as last read. Planted, "no CPU source left" took it for a cgroup without
 * CPU accounting (its cpuacct files no longer read, no other CPU file) and
 * marked it final. */
static void test_left_cpu_tree_not_final(void **state)
{
	struct tree *t = *state;
	struct acct_cgroup *a = tree_by_tree_cg(t);

	xwrite(t->base, "unified/a/cgroup.events", "populated 0\nfrozen 0\n");
	acct_cgroup_announce_populated_change(a);
	xrm_rf(t->base, "cpu,cpuacct/a");
	tree_pass(t, ACCT_PASS_FAST);
	assert_int_not_equal(acct_cgroup_final(a), ACCT_FINAL_READ);

	struct acct_cgroup_id id = { .path = "/a", .depth = 1, .hierarchies = UNI };
	acct_ledger_update_id(t->ledger, a, &id);
	tree_pass(t, ACCT_PASS_FAST);
	tree_pass(t, ACCT_PASS_FAST | ACCT_PASS_SLOW);
	assert_int_equal(t->rep.cgroups_failed, 0);
	assert_int_not_equal(acct_cgroup_final(a), ACCT_FINAL_READ);
	assert_int_equal(value(a, ACCT_Q_CPU_USAGE), 31000);
}

/* An empty cgroup (cgroup.events: populated 0) is read once, then not at the
 * fast interval until it is populated again; a slow pass reads it. */
static void test_empty_skipped(void **state)
{
	struct tree *t = *state;
	struct acct_cgroup *a = tree_add(t, "/a", UNI);
	xmkdir(t->base, "unified/a");
	xwrite(t->base, "unified/a/cgroup.events", "populated 0\nfrozen 0\n");
	xwrite(t->base, "unified/a/memory.current", "100\n");
	tree_pass(t, ACCT_PASS_FAST);
	assert_int_equal(t->rep.skipped_empty, 0);
	assert_int_equal(value(a, ACCT_Q_MEMORY), 100);
	xwrite(t->base, "unified/a/memory.current", "200\n");
	tree_pass(t, ACCT_PASS_FAST);
	assert_int_equal(t->rep.skipped_empty, 1);
	assert_int_equal(value(a, ACCT_Q_MEMORY), 100);
	tree_pass(t, ACCT_PASS_FAST | ACCT_PASS_SLOW);
	assert_int_equal(t->rep.skipped_empty, 0);
	assert_int_equal(value(a, ACCT_Q_MEMORY), 200);
	xwrite(t->base, "unified/a/cgroup.events", "populated 1\nfrozen 0\n");
	xwrite(t->base, "unified/a/memory.current", "300\n");
	tree_pass(t, ACCT_PASS_FAST);
	assert_int_equal(t->rep.skipped_empty, 0);
	assert_int_equal(value(a, ACCT_Q_MEMORY), 300);
	assert_no_errors(&t->rep);
}

/* A cgroup of the pruning test: populated, CPU time usage (all user), no
 * I/O, pressure totals with averages avg10 (percent). */
static void prune_cg(struct tree *t, const char *rel, unsigned usage, unsigned psi_total, const char *avg10)
{
	char path[256], text[256];
	snprintf(path, sizeof(path), "unified/%s", rel);
	xmkdir(t->base, path);
	snprintf(path, sizeof(path), "unified/%s/cgroup.events", rel);
	xwrite(t->base, path, "populated 1\nfrozen 0\n");
	snprintf(path, sizeof(path), "unified/%s/memory.current", rel);
	xwrite(t->base, path, "4096\n");
	snprintf(path, sizeof(path), "unified/%s/io.stat", rel);
	xwrite(t->base, path, "");
	snprintf(path, sizeof(path), "unified/%s/cpu.stat", rel);
	snprintf(text, sizeof(text), "usage_usec %u\nuser_usec %u\nsystem_usec 0\n", usage, usage);
	xwrite(t->base, path, text);
	static const char *const res[] = { "cpu", "memory", "io" };
	for (size_t i = 0; i < ELEMENTSOF(res); i++) {
		snprintf(path, sizeof(path), "unified/%s/%s.pressure", rel, res[i]);
		snprintf(text, sizeof(text),
			 "some avg10=%s avg60=0.00 avg300=0.00 total=%u\nfull avg10=0.00 avg60=0.00 avg300=0.00 total=0\n",
			 avg10, psi_total);
		xwrite(t->base, path, text);
	}
}

/* The pruning tests' parent and child: /p (in parent_hier, 1000 us of CPU)
 * and /p/c (in child_hier, 400 us), their unified files as prune_cg()
 * writes them. Returns /p/c; *ret_p /p where wanted. */
static struct acct_cgroup *pruning_pair(struct tree *t, uint32_t parent_hier, uint32_t child_hier,
					struct acct_cgroup **ret_p)
{
	struct acct_cgroup *p = tree_add(t, "/p", parent_hier);
	struct acct_cgroup *c = tree_add(t, "/p/c", child_hier);
	prune_cg(t, "p", 1000, 10, "0.00");
	prune_cg(t, "p/c", 400, 4, "0.00");
	if (ret_p)
		*ret_p = p;
	return c;
}

static uint64_t parts(const struct tree *t, enum acct_pass_part p, enum acct_part_outcome o)
{
	return t->rep.parts[p][o];
}

/* Pruning (sampler-prune.c): a child's CPU, I/O and PSI are not read while
 * its parent's totals stand still since before the child's last read; they
 * are read when the parent's moved, and when the child's last read began
 * before the parent's current value was first seen. A fake tree's files are
 * written by hand, so a child's can move under a still parent (what the
 * kernel never does): that shows the child was not read. */
static void test_pruning(void **state)
{
	struct tree *t = *state;
	struct acct_cgroup *p;
	struct acct_cgroup *c = pruning_pair(t, UNI, UNI, &p);
	struct acct_cgroup *only_p[] = { p };

	/* The first reads: nothing to compare with. */
	tree_pass(t, ACCT_PASS_FAST);
	assert_no_errors(&t->rep);
	assert_int_equal(parts(t, ACCT_PART_CPU, ACCT_OUTCOME_READ), 2);
	assert_int_equal(parts(t, ACCT_PART_CPU, ACCT_OUTCOME_PRUNED), 0);
	assert_int_equal(value(c, ACCT_Q_CPU_USAGE), 400);

	/* p stood still: c's CPU and I/O are pruned, its memory and pressure
	 * read (pressure is never pruned: sampler-internal.h, prune_family). */
	tree_pass(t, ACCT_PASS_FAST);
	assert_no_errors(&t->rep);
	for (enum acct_pass_part k = ACCT_PART_CPU; k <= ACCT_PART_IO; k++) {
		assert_int_equal(parts(t, k, ACCT_OUTCOME_READ), 1);
		assert_int_equal(parts(t, k, ACCT_OUTCOME_PRUNED), 1);
	}
	assert_int_equal(parts(t, ACCT_PART_PSI, ACCT_OUTCOME_READ), 2);
	assert_int_equal(parts(t, ACCT_PART_PSI, ACCT_OUTCOME_PRUNED), 0);
	assert_int_equal(parts(t, ACCT_PART_MEMORY, ACCT_OUTCOME_READ), 2);
	/* its CPU rate is measured: 0 since the first read */
	struct acct_cgroup_values rv;
	acct_cgroup_read(c, ACCT_READ_CPU_RATE, acct_now_us(), &rv);
	assert_true(rv.cpu_rate_known);
	assert_true(rv.cpu_rate == 0.0);

	/* c's file moved, p's did not: c is not read (its CPU rate is 0). */
	prune_cg(t, "p/c", 500, 4, "0.00");
	tree_pass(t, ACCT_PASS_FAST);
	assert_int_equal(value(c, ACCT_Q_CPU_USAGE), 400);

	/* p moved: c is read. */
	prune_cg(t, "p", 1200, 10, "0.00");
	tree_pass(t, ACCT_PASS_FAST);
	assert_int_equal(parts(t, ACCT_PART_CPU, ACCT_OUTCOME_READ), 2);
	assert_int_equal(value(c, ACCT_Q_CPU_USAGE), 500);

	/* p moves and is read alone; then p stands still, but c's last read
	 * began before p's value was first seen: c is read. */
	prune_cg(t, "p", 1300, 10, "0.00");
	prune_cg(t, "p/c", 600, 4, "0.00");
	assert_int_equal(acct_sampler_run(t->s, only_p, 1, ACCT_PASS_FAST, acct_now_us(), &t->rep), 0);
	tree_pass(t, ACCT_PASS_FAST);
	assert_int_equal(parts(t, ACCT_PART_CPU, ACCT_OUTCOME_PRUNED), 0);
	assert_int_equal(value(c, ACCT_Q_CPU_USAGE), 600);
	/* and then it is pruned again */
	tree_pass(t, ACCT_PASS_FAST);
	assert_int_equal(parts(t, ACCT_PART_CPU, ACCT_OUTCOME_PRUNED), 1);

	/* A child's pressure moves while its CPU time stands still (a task in
	 * an I/O wait): no trace of it in this pass (no load pass counted an
	 * active thread), so the old value stands, its age growing; the
	 * pressure tests below say when it is read. */
	prune_cg(t, "p/c", 600, 9, "1.20");
	tree_pass(t, ACCT_PASS_FAST);
	assert_int_equal(parts(t, ACCT_PART_CPU, ACCT_OUTCOME_PRUNED), 1);
	assert_int_equal(parts(t, ACCT_PART_PSI, ACCT_OUTCOME_SKIPPED), 2);
	assert_int_equal(value(c, ACCT_Q_PSI_CPU_SOME), 4);
	assert_true(acct_cgroup_age(c, ACCT_GROUP_PSI, acct_now_us()) > acct_cgroup_age(c, ACCT_GROUP_FAST, acct_now_us()));

	/* A pass of queued cgroups (EVENT) reads what it is given. */
	struct acct_cgroup *both[] = { p, c };
	assert_int_equal(acct_sampler_run(t->s, both, 2, ACCT_PASS_FAST | ACCT_PASS_EVENT, acct_now_us(), &t->rep), 0);
	assert_int_equal(parts(t, ACCT_PART_CPU, ACCT_OUTCOME_READ), 2);
	assert_int_equal(parts(t, ACCT_PART_PSI, ACCT_OUTCOME_READ), 2);
	assert_int_equal(value(c, ACCT_Q_PSI_CPU_SOME), 9);
	assert_no_errors(&t->rep);
}

/* What an ancestor proves, and when (sampler-prune.c, docs/counters.md,
 * "Pruning"): a grandchild under a parent that was itself pruned is pruned
 * (any ancestor that stood still proves the subtree); a pass that does not
 * read the ancestor (a pass of queued cgroups, EVENT, given the child alone)
 * proves nothing with it, whatever that ancestor's outcome in an earlier
 * pass: the child is read. Planted, "an outcome of an earlier pass counts"
 * and "an unread ancestor prunes" serve the grandchild's old CPU time; "a
 * pruned parent proves nothing" reads it at every pass. */
static void test_pruning_ancestors(void **state)
{
	struct tree *t = *state;
	struct acct_cgroup *c = pruning_pair(t, UNI, UNI, NULL);
	struct acct_cgroup *g = tree_add(t, "/p/c/g", UNI);
	prune_cg(t, "p/c/g", 100, 1, "0.00");

	tree_pass(t, ACCT_PASS_FAST);
	assert_no_errors(&t->rep);
	assert_int_equal(parts(t, ACCT_PART_CPU, ACCT_OUTCOME_READ), 3);
	/* p stood still: c is pruned by p, and g by c */
	tree_pass(t, ACCT_PASS_FAST);
	assert_no_errors(&t->rep);
	assert_int_equal(parts(t, ACCT_PART_CPU, ACCT_OUTCOME_READ), 1);
	assert_int_equal(parts(t, ACCT_PART_CPU, ACCT_OUTCOME_PRUNED), 2);
	assert_int_equal(parts(t, ACCT_PART_IO, ACCT_OUTCOME_PRUNED), 2);

	/* g ran, and so did its ancestors; a pass of queued cgroups reads g
	 * alone: p and c, unread in it, prove nothing */
	prune_cg(t, "p", 1300, 10, "0.00");
	prune_cg(t, "p/c", 700, 4, "0.00");
	prune_cg(t, "p/c/g", 400, 1, "0.00");
	struct acct_cgroup *only_g[] = { g };
	assert_int_equal(acct_sampler_run(t->s, only_g, 1, ACCT_PASS_FAST | ACCT_PASS_EVENT, acct_now_us(), &t->rep),
			 0);
	assert_no_errors(&t->rep);
	assert_int_equal(parts(t, ACCT_PART_CPU, ACCT_OUTCOME_READ), 1);
	assert_int_equal(parts(t, ACCT_PART_CPU, ACCT_OUTCOME_PRUNED), 0);
	assert_int_equal(value(g, ACCT_Q_CPU_USAGE), 400);
	/* c alone too, after its parent's last full pass said "unchanged" */
	struct acct_cgroup *only_c[] = { c };
	assert_int_equal(acct_sampler_run(t->s, only_c, 1, ACCT_PASS_FAST, acct_now_us(), &t->rep), 0);
	assert_int_equal(parts(t, ACCT_PART_CPU, ACCT_OUTCOME_PRUNED), 0);
	assert_int_equal(value(c, ACCT_Q_CPU_USAGE), 700);
}

/* The safety net (sampler-prune.c, PRUNE_REFRESH_US): a family is read in
 * full at least every 300 s, spread over another minute by the record's
 * serial, whatever its ancestors say. The clock is moved ahead, not waited
 * for. */
static void test_pruning_refresh(void **state)
{
	struct tree *t = *state;
	struct acct_cgroup *c = pruning_pair(t, UNI, UNI, NULL);
	/* a spread of 2 s or more: a refresh a second or two early or late
	 * is seen (serials count from 1 in a new ledger) */
	if (c->serial % 60 < 2)
		fail_msg("/p/c has serial %" PRIu64 ": the test needs one whose spread is 2 s or more", c->serial);
	uint64_t refresh_s = 300 + c->serial % 60;

	tree_pass(t, ACCT_PASS_FAST); /* c's last whole read */
	tree_pass(t, ACCT_PASS_FAST);
	assert_no_errors(&t->rep);
	assert_int_equal(parts(t, ACCT_PART_CPU, ACCT_OUTCOME_PRUNED), 1);
	/* two seconds before its refresh is due: pruned */
	__atomic_store_n(&inject.clock_ahead_us, (refresh_s - 2) * USEC_PER_SEC, __ATOMIC_RELAXED);
	tree_pass(t, ACCT_PASS_FAST);
	assert_no_errors(&t->rep);
	assert_int_equal(parts(t, ACCT_PART_CPU, ACCT_OUTCOME_PRUNED), 1);
	assert_int_equal(parts(t, ACCT_PART_IO, ACCT_OUTCOME_PRUNED), 1);
	/* a second after: read in full, CPU and I/O */
	__atomic_store_n(&inject.clock_ahead_us, (refresh_s + 1) * USEC_PER_SEC, __ATOMIC_RELAXED);
	tree_pass(t, ACCT_PASS_FAST);
	assert_no_errors(&t->rep);
	assert_int_equal(parts(t, ACCT_PART_CPU, ACCT_OUTCOME_PRUNED), 0);
	assert_int_equal(parts(t, ACCT_PART_IO, ACCT_OUTCOME_PRUNED), 0);
	/* and pruned again from there */
	tree_pass(t, ACCT_PASS_FAST);
	assert_int_equal(parts(t, ACCT_PART_CPU, ACCT_OUTCOME_PRUNED), 1);
}

/* Witnesses of different hierarchies prove nothing of each other: /p's CPU
 * comes from cpuacct, /p/c's from the unified cpu.stat (c is in no cpuacct
 * cgroup of its own). c's moves while p's stands still: c is read. */
static void test_pruning_other_tree(void **state)
{
	struct tree *t = *state;
	struct acct_cgroup *c = pruning_pair(t, UNI | H(ACCT_HIER_CPUACCT), UNI, NULL);
	xmkdir(t->base, "cpu,cpuacct/p");
	xwrite(t->base, "cpu,cpuacct/p/cpuacct.usage_percpu", "1000000 0\n");
	xwrite(t->base, "cpu,cpuacct/p/cpuacct.stat", "user 0\nsystem 0\n");
	tree_pass(t, ACCT_PASS_FAST);
	tree_pass(t, ACCT_PASS_FAST);
	assert_no_errors(&t->rep);
	assert_int_equal(parts(t, ACCT_PART_CPU, ACCT_OUTCOME_PRUNED), 0);
	assert_int_equal(parts(t, ACCT_PART_IO, ACCT_OUTCOME_PRUNED), 1); /* io.stat: both unified */
	prune_cg(t, "p/c", 900, 4, "0.00");
	tree_pass(t, ACCT_PASS_FAST);
	assert_no_errors(&t->rep);
	assert_int_equal(value(c, ACCT_Q_CPU_USAGE), 900);
}

/* A failed read proves nothing, in the pass after it either: in the pass
 * where p moved, c's usage is read (its witness) but its cpuacct.stat is
 * garbage; in the next, p stands still and c's files are whole again, with
 * a new usage: c is read (the failure dropped its witness), not pruned by
 * p. v1's cpuacct, where a family has two files: one can fail after the
 * other gave the witness. */
static void cpuacct_cg(struct tree *t, const char *rel, unsigned usage_us, const char *stat)
{
	char path[128], text[64];
	snprintf(path, sizeof(path), "cpu,cpuacct/%s", rel);
	xmkdir(t->base, path);
	snprintf(path, sizeof(path), "cpu,cpuacct/%s/cpuacct.usage_percpu", rel);
	snprintf(text, sizeof(text), "%u 0\n", usage_us * 1000);
	xwrite(t->base, path, text);
	snprintf(path, sizeof(path), "cpu,cpuacct/%s/cpuacct.stat", rel);
	xwrite(t->base, path, stat);
}

static void test_pruning_after_failed_read(void **state)
{
	struct tree *t = *state;
	struct acct_cgroup *c = pruning_pair(t, UNI | H(ACCT_HIER_CPUACCT), UNI | H(ACCT_HIER_CPUACCT), NULL);
	cpuacct_cg(t, "p", 1000, "user 0\nsystem 0\n");
	cpuacct_cg(t, "p/c", 400, "user 0\nsystem 0\n");
	tree_pass(t, ACCT_PASS_FAST);
	tree_pass(t, ACCT_PASS_FAST);
	assert_no_errors(&t->rep);
	assert_int_equal(parts(t, ACCT_PART_CPU, ACCT_OUTCOME_PRUNED), 1);
	cpuacct_cg(t, "p", 1500, "user 0\nsystem 0\n");
	cpuacct_cg(t, "p/c", 450, "user x\nsystem 0\n");
	tree_pass(t, ACCT_PASS_FAST);
	assert_int_equal(t->rep.errors[ACCT_ERR_GARBAGE], 1);
	cpuacct_cg(t, "p/c", 900, "user 0\nsystem 0\n");
	tree_pass(t, ACCT_PASS_FAST);
	assert_no_errors(&t->rep);
	assert_int_equal(parts(t, ACCT_PART_CPU, ACCT_OUTCOME_PRUNED), 0);
	assert_int_equal(value(c, ACCT_Q_CPU_USAGE), 900);
}

/* Without memory for the ancestors' list a pass prunes nothing, and says
 * nothing wrong: every cgroup is read in full; the next pass prunes again.
 * (A pass over the same list as the last one keeps that one's list: the
 * failing pass has a cgroup more, /p/e, read for the first time.) */
static void test_pruning_without_memory(void **state)
{
	struct tree *t = *state;
	static const char *const rels[] = { "p", "p/a", "p/b", "p/c", "p/d", "p/e" };
	for (size_t i = 0; i < ELEMENTSOF(rels) - 1; i++) {
		char path[16];
		snprintf(path, sizeof(path), "/%s", rels[i]);
		tree_add(t, path, UNI);
		prune_cg(t, rels[i], 1000, 10, "0.00");
	}
	tree_pass(t, ACCT_PASS_FAST);
	tree_pass(t, ACCT_PASS_FAST);
	assert_int_equal(parts(t, ACCT_PART_CPU, ACCT_OUTCOME_PRUNED), 4);
	tree_pass(t, ACCT_PASS_FAST); /* the same list: the same ancestors */
	assert_int_equal(parts(t, ACCT_PART_CPU, ACCT_OUTCOME_PRUNED), 4);
	tree_add(t, "/p/e", UNI);
	prune_cg(t, "p/e", 1000, 10, "0.00");
	/* The list is one pointer per cgroup of the pass, allocated right after
	 * the pass's copy of the work and the copy kept of a new list, which have
	 * the same size. */
	struct acct_cgroup **cgs = NULL;
	int n = acct_ledger_snapshot(t->ledger, false, &cgs);
	assert_int_equal(n, (int)ELEMENTSOF(rels));
	__atomic_store_n(&inject.malloc_fail_skip, 2, __ATOMIC_RELAXED);
	__atomic_store_n(&inject.malloc_fail_size, ELEMENTSOF(rels) * sizeof(void *), __ATOMIC_RELAXED);
	assert_int_equal(acct_sampler_run(t->s, cgs, (size_t)n, ACCT_PASS_FAST, acct_now_us(), &t->rep), 0);
	free(cgs);
	assert_int_equal(__atomic_load_n(&inject.malloc_fail_size, __ATOMIC_RELAXED), 0); /* it was asked for */
	assert_no_errors(&t->rep);
	assert_int_equal(parts(t, ACCT_PART_CPU, ACCT_OUTCOME_READ), 6);
	assert_int_equal(parts(t, ACCT_PART_CPU, ACCT_OUTCOME_PRUNED), 0);
	tree_pass(t, ACCT_PASS_FAST);
	assert_int_equal(parts(t, ACCT_PART_CPU, ACCT_OUTCOME_PRUNED), 5);
}

/* A path longer than a file path can be (the kernel allows cgroups nested
 * past PATH_MAX; none of their files opens) has no tracked ancestor for
 * pruning, and the search for one does not overrun its buffer: the pass
 * reads what it can, and its neighbours are pruned as before. */
static void test_pruning_long_path(void **state)
{
	struct tree *t = *state;
	pruning_pair(t, UNI, UNI, NULL);
	char long_path[4200];
	memcpy(long_path, "/p/", 3);
	memset(long_path + 3, 'x', sizeof(long_path) - 4);
	long_path[sizeof(long_path) - 1] = '\0';
	tree_add(t, long_path, UNI);
	tree_pass(t, ACCT_PASS_FAST);
	tree_pass(t, ACCT_PASS_FAST);
	assert_int_equal(parts(t, ACCT_PART_CPU, ACCT_OUTCOME_PRUNED), 1);
}

/* The search for a tracked ancestor looks at this path's own prefixes, not
 * at what an earlier search left in its buffer: /x, a top-level cgroup
 * searched right after /p/c/dddd (path order), has no tracked ancestor and
 * is never pruned under the still /p. Planted, a copy of the path without
 * its terminating NUL ("memcpy(len - 1)") read /x as "/p/c" left over from
 * the search before, found /p, and served /x's old CPU time. */
static void test_pruning_own_path(void **state)
{
	struct tree *t = *state;
	pruning_pair(t, UNI, UNI, NULL);
	tree_add(t, "/p/c/dddd", UNI);
	prune_cg(t, "p/c/dddd", 100, 1, "0.00");
	struct acct_cgroup *x = tree_add(t, "/x", UNI);
	prune_cg(t, "x", 100, 1, "0.00");
	tree_pass(t, ACCT_PASS_FAST);
	tree_pass(t, ACCT_PASS_FAST);
	assert_no_errors(&t->rep);
	assert_int_equal(parts(t, ACCT_PART_CPU, ACCT_OUTCOME_PRUNED), 2); /* /p/c and /p/c/dddd */
	prune_cg(t, "x", 200, 1, "0.00");
	tree_pass(t, ACCT_PASS_FAST);
	assert_no_errors(&t->rep);
	assert_int_equal(value(x, ACCT_Q_CPU_USAGE), 200);
}

/* Empty cgroups that stay empty are not read while nothing says they
 * changed (sampler-prune.c, sampler_empty_quiet(); sampler.c,
 * sample_quiet()), but only where the collector's record gives their memory
 * (test-sampler-bpf.c, test_empty_quiet): without one, memory can move
 * without a task (its page cache reclaimed) and nothing would say so. With
 * files alone the empty /q is read as any empty cgroup: its fast group is
 * skipped without renewing memory's age, and a slow pass reads its memory.
 * (Quiet passes here served a memory value they never read with a fresh
 * age: found in session 29.) */
static void test_quiet_needs_memory_record(void **state)
{
	struct tree *t = *state;
	struct acct_cgroup *q = tree_add(t, "/q", UNI);
	xmkdir(t->base, "unified/q");
	xwrite(t->base, "unified/q/cgroup.events", "populated 0\nfrozen 0\n");
	xwrite(t->base, "unified/q/memory.current", "4096\n");
	xwrite(t->base, "unified/q/memory.stat", "anon 0\nfile 4096\ninactive_file 4096\nfile_dirty 0\nfile_writeback 0\n");
	xwrite(t->base, "unified/q/cpu.stat", "usage_usec 0\nuser_usec 0\nsystem_usec 0\n");
	acct_sampler_events_watched(tree_sampler(t), true, 100);
	tree_pass(t, ACCT_PASS_SLOW);
	assert_no_errors(&t->rep);
	tree_pass(t, ACCT_PASS_FAST);
	assert_int_equal(t->rep.empty_unread, 0);
	/* its page cache reclaimed while it is empty */
	xwrite(t->base, "unified/q/memory.current", "0\n");
	uint64_t reclaimed = acct_now_us();
	tree_pass(t, ACCT_PASS_FAST);
	assert_no_errors(&t->rep);
	assert_int_equal(t->rep.empty_unread, 0);
	if (value(q, ACCT_Q_MEMORY) != 0)
		assert_true(acct_cgroup_quantity_sampled(q, ACCT_Q_MEMORY) < reclaimed);
	tree_pass(t, ACCT_PASS_SLOW);
	assert_no_errors(&t->rep);
	assert_int_equal(value(q, ACCT_Q_MEMORY), 0);
}

/* The slow group (memory.stat, NUMA, peak, limits) of a cgroup whose memory
 * stands still: read at the first slow pass, skipped at the next ones, and
 * read again once its refresh interval has passed (the clock moved ahead):
 * a minute plus its spread (under 30 s) after a read whose files changed,
 * twice the last interval after one that found them the same, back to a
 * minute once they differ (sample-memory.c, sampler_slow_aged()). */
static void slow_pass_at(struct tree *t, uint64_t ahead_s, uint64_t read)
{
	__atomic_store_n(&inject.clock_ahead_us, ahead_s * USEC_PER_SEC, __ATOMIC_RELAXED);
	tree_pass(t, ACCT_PASS_SLOW);
	assert_no_errors(&t->rep);
	assert_int_equal(parts(t, ACCT_PART_MEMORY_STAT, ACCT_OUTCOME_READ), read);
	assert_int_equal(parts(t, ACCT_PART_MEMORY_STAT, ACCT_OUTCOME_SKIPPED), !read);
}

static void test_slow_refresh(void **state)
{
	struct tree *t = *state;
	tree_add(t, "/m", UNI);
	prune_cg(t, "m", 1000, 10, "0.00");
	xwrite(t->base, "unified/m/memory.stat", "anon 4096\nfile 0\ninactive_file 0\n");
	slow_pass_at(t, 0, 1);
	slow_pass_at(t, 0, 0);
	slow_pass_at(t, 91, 1);   /* a minute and the spread: the same files */
	slow_pass_at(t, 182, 0);  /* 91 s: not two minutes */
	slow_pass_at(t, 241, 1);  /* 150 s: two minutes and the spread; the same again */
	slow_pass_at(t, 440, 0);  /* 199 s: not four minutes */
	xwrite(t->base, "unified/m/memory.stat", "anon 4096\nfile 0\ninactive_file 0\nactive_file 0\n");
	slow_pass_at(t, 512, 1);  /* 271 s: four minutes and the spread; changed */
	slow_pass_at(t, 603, 1);  /* 91 s: a minute again */
}

/* A slow group that reads a limit from its file (memory.max: the files
 * collector) is read every minute and its spread, files the same or not:
 * a limit written leaves no trace in any other file. */
static void test_slow_refresh_limits(void **state)
{
	struct tree *t = *state;
	tree_add(t, "/m", UNI);
	prune_cg(t, "m", 1000, 10, "0.00");
	xwrite(t->base, "unified/m/memory.stat", "anon 4096\nfile 0\ninactive_file 0\n");
	xwrite(t->base, "unified/m/memory.max", "max\n");
	slow_pass_at(t, 0, 1);
	slow_pass_at(t, 91, 1);
	slow_pass_at(t, 182, 1);
	slow_pass_at(t, 273, 1);
}

/* Memory in use and its motion (sampler_set_memory_moved()): the pass's
 * drift is |new - old| bytes per cgroup; the motion estimate (bytes per
 * second, read through the ledger) takes its first rate as it is, then
 * weights the newest by 1/4. A slow pass that reads memory before and after
 * memory.stat (memory moved since the slow group's read: slow_due()) counts
 * its drift once and folds no second rate: the second reading is of the
 * same moment, no time over which memory could have moved. Pass times are
 * given, so the rates are exact. */
static void test_memory_motion(void **state)
{
	struct tree *t = *state;
	struct acct_cgroup *m = tree_add(t, "/m", UNI);
	struct acct_cgroup *cgs[] = { m };
	struct acct_cgroup_values rv;
	uint64_t now = acct_now_us();
	xmkdir(t->base, "unified/m");
	xwrite(t->base, "unified/m/cgroup.events", "populated 1\nfrozen 0\n");
	xwrite(t->base, "unified/m/memory.current", "10000\n");
	xwrite(t->base, "unified/m/memory.stat", "anon 10000\nfile 0\ninactive_file 0\n");
	assert_int_equal(acct_sampler_run(tree_sampler(t), cgs, 1, ACCT_PASS_FAST | ACCT_PASS_SLOW, now, &t->rep), 0);
	assert_no_errors(&t->rep);
	assert_int_equal(t->rep.drift_memory.count, 0); /* nothing it moved from */
	acct_cgroup_read(m, ACCT_READ_MOTION, now, &rv);
	assert_false(rv.memory_motion_known);

	/* 4000 bytes in 2 s: 2000 a second, taken as it is */
	now += 2 * USEC_PER_SEC;
	xwrite(t->base, "unified/m/memory.current", "14000\n");
	assert_int_equal(acct_sampler_run(t->s, cgs, 1, ACCT_PASS_FAST, now, &t->rep), 0);
	assert_no_errors(&t->rep);
	assert_int_equal(t->rep.drift_memory.count, 1);
	assert_int_equal(t->rep.drift_memory.sum, 4000);
	assert_int_equal(t->rep.drift_memory.max, 4000);
	acct_cgroup_read(m, ACCT_READ_MOTION, now, &rv);
	assert_true(rv.memory_motion_known);
	assert_true(fabs(rv.memory_motion - 2000.0) <= 1e-9);

	/* down 6000 in 1 s: 2000 + (6000 - 2000) / 4 */
	now += USEC_PER_SEC;
	xwrite(t->base, "unified/m/memory.current", "8000\n");
	assert_int_equal(acct_sampler_run(t->s, cgs, 1, ACCT_PASS_FAST, now, &t->rep), 0);
	assert_no_errors(&t->rep);
	assert_int_equal(t->rep.drift_memory.sum, 6000);
	acct_cgroup_read(m, ACCT_READ_MOTION, now, &rv);
	assert_true(fabs(rv.memory_motion - 3000.0) <= 1e-9);

	/* a slow pass 2 s later, memory up 4000 (2000 a second) and 2000 off
	 * the slow group's reading: memory, memory.stat, memory again; one
	 * drift, one rate: 3000 + (2000 - 3000) / 4 */
	now += 2 * USEC_PER_SEC;
	xwrite(t->base, "unified/m/memory.current", "12000\n");
	assert_int_equal(acct_sampler_run(t->s, cgs, 1, ACCT_PASS_SLOW, now, &t->rep), 0);
	assert_no_errors(&t->rep);
	assert_int_equal(parts(t, ACCT_PART_MEMORY_STAT, ACCT_OUTCOME_READ), 1);
	assert_int_equal(t->rep.drift_memory.count, 1);
	assert_int_equal(t->rep.drift_memory.sum, 4000);
	acct_cgroup_read(m, ACCT_READ_MOTION, now, &rv);
	assert_true(fabs(rv.memory_motion - 2750.0) <= 1e-9);
	assert_int_equal(value(m, ACCT_Q_MEMORY), 12000);
}

/* A cgroup whose memory in use is not known (the v2 root: memory.stat but
 * no memory.current) cannot tell whether its memory moved: its slow group
 * is read at every slow pass, not once a minute. */
static void test_slow_without_memory_in_use(void **state)
{
	struct tree *t = *state;
	tree_add(t, "/", UNI);
	xwrite(t->base, "unified/memory.stat", "anon 4096\nfile 0\ninactive_file 0\n");
	xwrite(t->base, "unified/cpu.stat", "usage_usec 10\nuser_usec 10\nsystem_usec 0\n");
	for (int i = 0; i < 3; i++) {
		tree_pass(t, ACCT_PASS_SLOW);
		assert_no_errors(&t->rep);
		assert_int_equal(parts(t, ACCT_PART_MEMORY_STAT, ACCT_OUTCOME_READ), 1);
	}
}

/* A cgroup without memory accounting (no memory controller, no v1 memory
 * hierarchy) counts no memory read; its CPU read is counted as such. */
static void test_parts_without_memory(void **state)
{
	struct tree *t = *state;
	t->L.v2_memory = false;
	tree_add(t, "/n", UNI);
	xmkdir(t->base, "unified/n");
	xwrite(t->base, "unified/n/cgroup.events", "populated 1\nfrozen 0\n");
	xwrite(t->base, "unified/n/cpu.stat", "usage_usec 10\nuser_usec 10\nsystem_usec 0\n");
	tree_pass(t, ACCT_PASS_FAST);
	assert_no_errors(&t->rep);
	assert_int_equal(parts(t, ACCT_PART_CPU, ACCT_OUTCOME_READ), 1);
	assert_int_equal(parts(t, ACCT_PART_MEMORY, ACCT_OUTCOME_READ), 0);
}

/* Lazy decay of the CPU rate's averages (sample-cpu.c, ledger.h's
 * acct_cgroup_set_cpu_rate()): a pruned pass does not decay them, the ledger
 * serves them decayed over the idle time, and the next reading that moved
 * decays the sampler's copy first. What is served after every pass must be
 * what decaying at each pass gave (an eager reference, updated once per pass
 * as the sampler used to), within rounding. Pass times are given, so the
 * intervals are exact. */
static void test_cpu_rate_lazy(void **state)
{
	struct tree *t = *state;
	struct acct_cgroup *p = tree_add(t, "/p", UNI);
	struct acct_cgroup *c = tree_add(t, "/p/c", UNI);
	static const struct {
		uint64_t dt;   /* usec since the last pass */
		unsigned used; /* usec of CPU c used in it (p too); 0: idle, c is pruned */
	} steps[] = {
		{ 1000000, 500000 }, { 1000000, 1000000 },                 /* rates 0.5, 1.0 */
		{ 2000000, 0 },      { 3000000, 0 },       { 5000000, 0 }, /* idle, 10 s */
		{ 1000000, 250000 }, { 1000000, 250000 },                  /* 0.25 twice */
		{ 7000000, 0 },      { 1000000, 0 },       { 60000000, 0 },
		{ 4000000, 2000000 },
	};
	struct acct_rate_avg want = {};
	struct acct_cgroup *cgs[] = { p, c };
	uint64_t now = acct_now_us();
	unsigned pu = 1000, cu = 0;

	prune_cg(t, "p", pu, 10, "0.00");
	prune_cg(t, "p/c", cu, 4, "0.00");
	assert_int_equal(run_at(t, cgs, 2, ACCT_PASS_FAST, now), 0);
	for (size_t i = 0; i < ELEMENTSOF(steps); i++) {
		now += steps[i].dt;
		if (steps[i].used) {
			pu += steps[i].used;
			cu += steps[i].used;
			prune_cg(t, "p", pu, 10, "0.00");
			prune_cg(t, "p/c", cu, 4, "0.00");
			/* and I/O: one byte read per usec used */
			char text[128];
			snprintf(text, sizeof(text), "8:0 rbytes=%u wbytes=0 rios=1 wios=0 dbytes=0 dios=0\n", pu);
			xwrite(t->base, "unified/p/io.stat", text);
			snprintf(text, sizeof(text), "8:0 rbytes=%u wbytes=0 rios=1 wios=0 dbytes=0 dios=0\n", cu);
			xwrite(t->base, "unified/p/c/io.stat", text);
		}
		double rate = (double)steps[i].used / (double)steps[i].dt;
		acct_rate_avg_update(&want, rate, steps[i].dt);
		assert_int_equal(run_at(t, cgs, 2, ACCT_PASS_FAST, now), 0);
		assert_no_errors(&t->rep);
		/* idle steps (after the first two) go the lazy way: pruned */
		assert_int_equal(parts(t, ACCT_PART_CPU, ACCT_OUTCOME_PRUNED), i >= 2 && !steps[i].used);
		struct acct_cgroup_values rv;
		/* a reader's clock is not a pass's: read later than the pass */
		acct_cgroup_read(c, ACCT_READ_CPU_RATE | ACCT_READ_IO_RATE, now + 123456789, &rv);
		assert_true(rv.cpu_rate_known);
		assert_true(fabs(rv.cpu_rate - rate) <= 1e-15);
		/* the I/O rate, stored once at 0 while idle (sample_io_idle()) */
		if (i > 0) {
			assert_true(rv.io_rate_known);
			assert_true(fabs(rv.io_rate[ACCT_IO_READ_BYTES] - rate * 1e6) <= 1e-6);
		}
		for (int a = 0; a < 3; a++) {
			if (fabs(rv.cpu_rate_avg[a] - want.avg[a]) > 1e-12 * want.avg[a])
				fail_msg("step %zu, average %d: served %.17g, decayed at each pass %.17g", i, a,
					 rv.cpu_rate_avg[a], want.avg[a]);
		}
	}

	/* A change of source (systemd adds cpuacct, the usage comes from
	 * usage_percpu): its first reading changes no average, as before; the
	 * idle time before it was decayed, the time between the two sources
	 * is not; then the new source's readings go on from it. */
	static const struct {
		uint64_t dt;
		int kind; /* 0 idle (pruned), 1 CPU used, 2 the new source's first reading */
		unsigned used;
	} steps2[] = {
		{ 3000000, 0, 0 }, { 2000000, 2, 0 }, { 2000000, 0, 0 }, { 1000000, 1, 500000 },
		{ 5000000, 0, 0 }, { 1000000, 1, 100000 },
	};
	for (size_t i = 0; i < ELEMENTSOF(steps2); i++) {
		now += steps2[i].dt;
		if (steps2[i].kind == 2) {
			static const char *const rels[] = { "p", "p/c" };
			struct acct_cgroup *both[] = { p, c };
			for (int k = 0; k < 2; k++) {
				char path[128];
				snprintf(path, sizeof(path), "cpu,cpuacct/%s", rels[k]);
				xmkdir(t->base, path);
				snprintf(path, sizeof(path), "cpu,cpuacct/%s/cpuacct.stat", rels[k]);
				xwrite(t->base, path, "user 0\nsystem 0\n");
				/* v1's throttling counts, as the kernel has them
				 * (test_source_change_without_throttling() leaves
				 * them out) */
				snprintf(path, sizeof(path), "cpu,cpuacct/%s/cpu.stat", rels[k]);
				xwrite(t->base, path, "nr_periods 0\nnr_throttled 0\nthrottled_time 0\n");
				struct acct_cgroup_id id = { .path = k ? "/p/c" : "/p", .depth = (unsigned)k + 1,
							     .hierarchies = UNI | H(ACCT_HIER_CPUACCT) | H(ACCT_HIER_CPU) };
				acct_ledger_update_id(t->ledger, both[k], &id);
			}
			pu = 10000000;
			cu = 0;
		}
		if (steps2[i].kind != 0) {
			char text[64];
			pu += steps2[i].used;
			cu += steps2[i].used;
			snprintf(text, sizeof(text), "%u 0\n", pu * 1000);
			xwrite(t->base, "cpu,cpuacct/p/cpuacct.usage_percpu", text);
			snprintf(text, sizeof(text), "%u 0\n", cu * 1000);
			xwrite(t->base, "cpu,cpuacct/p/c/cpuacct.usage_percpu", text);
		}
		if (steps2[i].kind != 2)
			acct_rate_avg_update(&want, (double)steps2[i].used / (double)steps2[i].dt, steps2[i].dt);
		assert_int_equal(run_at(t, cgs, 2, ACCT_PASS_FAST, now), 0);
		assert_no_errors(&t->rep);
		if (parts(t, ACCT_PART_CPU, ACCT_OUTCOME_PRUNED) != (steps2[i].kind == 0))
			fail_msg("after the change of source, step %zu: %" PRIu64 " pruned", i,
				 parts(t, ACCT_PART_CPU, ACCT_OUTCOME_PRUNED));
		struct acct_cgroup_values rv;
		acct_cgroup_read(c, ACCT_READ_CPU_RATE, now + 987654321, &rv);
		for (int a = 0; a < 3; a++) {
			if (fabs(rv.cpu_rate_avg[a] - want.avg[a]) > 1e-12 * want.avg[a])
				fail_msg("after the change of source, step %zu, average %d: served %.17g, decayed at each "
					 "pass %.17g", i, a, rv.cpu_rate_avg[a], want.avg[a]);
		}
	}
}

/* The CPU time's drift (the report's drift_cpu: usec the ledger had not seen
 * yet) and rate across a change of source: the first reading of a cgroup and
 * the first from a new file (cpuacct's usage_percpu after the unified
 * cpu.stat, 30 ms above it) count no drift and measure no rate, two different
 * counters; the readings after each do. Pass times are given, so the rates
 * are exact. */
static void test_cpu_drift_and_source(void **state)
{
	struct tree *t = *state;
	struct acct_cgroup *a = tree_add(t, "/a", UNI);
	struct acct_cgroup *cgs[] = { a };
	struct acct_cgroup_values rv;
	uint64_t now = acct_now_us();
	xmkdir(t->base, "unified/a");
	xwrite(t->base, "unified/a/cpu.stat", "usage_usec 1000\nuser_usec 1000\nsystem_usec 0\n");
	assert_int_equal(run_at(t, cgs, 1, ACCT_PASS_FAST, now), 0);
	assert_no_errors(&t->rep);
	assert_int_equal(t->rep.drift_cpu.count, 0);
	acct_cgroup_read(a, ACCT_READ_CPU_RATE, now, &rv);
	assert_false(rv.cpu_rate_known);

	now += USEC_PER_SEC;
	xwrite(t->base, "unified/a/cpu.stat", "usage_usec 501000\nuser_usec 501000\nsystem_usec 0\n");
	assert_int_equal(run_at(t, cgs, 1, ACCT_PASS_FAST, now), 0);
	assert_no_errors(&t->rep);
	assert_int_equal(t->rep.drift_cpu.count, 1);
	assert_int_equal(t->rep.drift_cpu.sum, 500000);
	acct_cgroup_read(a, ACCT_READ_CPU_RATE, now, &rv);
	assert_true(rv.cpu_rate_known);
	assert_true(fabs(rv.cpu_rate - 0.5) <= 1e-12);

	xmkdir(t->base, "cpu,cpuacct/a");
	xwrite(t->base, "cpu,cpuacct/a/cpuacct.usage_percpu", "531000000 0\n");
	xwrite(t->base, "cpu,cpuacct/a/cpuacct.stat", "user 0\nsystem 0\n");
	struct acct_cgroup_id id = { .path = "/a", .depth = 1, .hierarchies = UNI | H(ACCT_HIER_CPUACCT) };
	acct_ledger_update_id(t->ledger, a, &id);
	now += USEC_PER_SEC;
	assert_int_equal(run_at(t, cgs, 1, ACCT_PASS_FAST, now), 0);
	assert_no_errors(&t->rep);
	assert_int_equal(value(a, ACCT_Q_CPU_USAGE), 531000);
	assert_int_equal(t->rep.drift_cpu.count, 0);

	/* 250 ms in a second from the new file */
	now += USEC_PER_SEC;
	xwrite(t->base, "cpu,cpuacct/a/cpuacct.usage_percpu", "531000000 250000000\n");
	assert_int_equal(run_at(t, cgs, 1, ACCT_PASS_FAST, now), 0);
	assert_no_errors(&t->rep);
	assert_int_equal(value(a, ACCT_Q_CPU_USAGE), 781000);
	assert_int_equal(t->rep.drift_cpu.count, 1);
	assert_int_equal(t->rep.drift_cpu.sum, 250000);
	acct_cgroup_read(a, ACCT_READ_CPU_RATE, now, &rv);
	assert_true(fabs(rv.cpu_rate - 0.25) <= 1e-12);
}

/* Readings of one moment measure no CPU rate: a pass of the same now_us as
 * the one before (the parent /p and its child /p/c read, then /p/c pruned)
 * leaves the rate as the last interval measured it, neither divided by no
 * time nor made 0. A reading a second later that finds the CPU time
 * standing measures 0, read (/p) or pruned (/p/c). */
static void test_cpu_rate_same_moment(void **state)
{
	struct tree *t = *state;
	struct acct_cgroup *p;
	struct acct_cgroup *c = pruning_pair(t, UNI, UNI, &p);
	struct acct_cgroup *cgs[] = { p, c };
	struct acct_cgroup_values rv;
	uint64_t now = acct_now_us();
	assert_int_equal(run_at(t, cgs, 2, ACCT_PASS_FAST, now), 0);

	now += USEC_PER_SEC;
	prune_cg(t, "p", 501000, 10, "0.00");
	prune_cg(t, "p/c", 500400, 4, "0.00");
	assert_int_equal(run_at(t, cgs, 2, ACCT_PASS_FAST, now), 0);
	assert_no_errors(&t->rep);
	acct_cgroup_read(c, ACCT_READ_CPU_RATE, now, &rv);
	assert_true(rv.cpu_rate_known);
	assert_true(fabs(rv.cpu_rate - 0.5) <= 1e-12);

	/* the same moment: both read (p moved), then c pruned */
	prune_cg(t, "p", 601000, 10, "0.00");
	prune_cg(t, "p/c", 600400, 4, "0.00");
	assert_int_equal(run_at(t, cgs, 2, ACCT_PASS_FAST, now), 0);
	assert_no_errors(&t->rep);
	assert_int_equal(parts(t, ACCT_PART_CPU, ACCT_OUTCOME_READ), 2);
	assert_int_equal(value(c, ACCT_Q_CPU_USAGE), 600400);
	acct_cgroup_read(c, ACCT_READ_CPU_RATE, now, &rv);
	assert_true(fabs(rv.cpu_rate - 0.5) <= 1e-12);
	assert_int_equal(run_at(t, cgs, 2, ACCT_PASS_FAST, now), 0);
	assert_no_errors(&t->rep);
	assert_int_equal(parts(t, ACCT_PART_CPU, ACCT_OUTCOME_PRUNED), 1);
	acct_cgroup_read(c, ACCT_READ_CPU_RATE, now, &rv);
	assert_true(fabs(rv.cpu_rate - 0.5) <= 1e-12);

	/* a second later, nothing moved */
	now += USEC_PER_SEC;
	assert_int_equal(run_at(t, cgs, 2, ACCT_PASS_FAST, now), 0);
	assert_no_errors(&t->rep);
	assert_int_equal(parts(t, ACCT_PART_CPU, ACCT_OUTCOME_PRUNED), 1);
	acct_cgroup_read(p, ACCT_READ_CPU_RATE, now, &rv);
	assert_true(rv.cpu_rate_known);
	assert_true(rv.cpu_rate == 0.0);
	acct_cgroup_read(c, ACCT_READ_CPU_RATE, now, &rv);
	assert_true(rv.cpu_rate == 0.0);
}

/* The CPU and I/O rates divide by the time between a cgroup's two reads,
 * not between two passes' starts: a pass reads its cgroups one after the
 * other (after the walk, on a worker that may wake late), so a cgroup read
 * later into its pass than the time before measured too short an interval
 * (the root at 2.26 cores on a 2-CPU host). Here the first pass reads /b
 * 400 ms after its start (the clock moves on while /a's cpu.stat is read),
 * the second at its start, a second later: /b's 300 ms of CPU and 600 bytes
 * read were used between reads 0.6 s apart, rates 0.5 and 1000/s (0.3 and
 * 600/s over the passes' second). */
static void test_rate_between_reads(void **state)
{
	struct tree *t = *state;
	struct acct_cgroup *a = tree_add(t, "/a", UNI);
	struct acct_cgroup *b = tree_add(t, "/b", UNI);
	struct acct_cgroup *cgs[] = { a, b };
	struct acct_cgroup_values rv;
	uint64_t now = acct_now_us();

	prune_cg(t, "a", 1000, 1, "0.00");
	prune_cg(t, "b", 1000, 1, "0.00");
	xwrite(t->base, "unified/b/io.stat", "8:0 rbytes=1000 wbytes=0 rios=1 wios=0 dbytes=0 dios=0\n");
	inject.advance_us = 400000;
	__atomic_store_n(&inject.advance_suffix, "/a/cpu.stat", __ATOMIC_RELEASE);
	assert_int_equal(run_at(t, cgs, 2, ACCT_PASS_FAST, now), 0);
	assert_no_errors(&t->rep);
	assert_null(inject.advance_suffix); /* /a was read first, then /b */

	now += USEC_PER_SEC;
	prune_cg(t, "b", 301000, 1, "0.00");
	xwrite(t->base, "unified/b/io.stat", "8:0 rbytes=1600 wbytes=0 rios=2 wios=0 dbytes=0 dios=0\n");
	assert_int_equal(run_at(t, cgs, 2, ACCT_PASS_FAST, now), 0);
	assert_no_errors(&t->rep);
	assert_int_equal(value(b, ACCT_Q_CPU_USAGE), 301000);
	acct_cgroup_read(b, ACCT_READ_CPU_RATE | ACCT_READ_IO_RATE, now, &rv);
	assert_true(rv.cpu_rate_known);
	if (fabs(rv.cpu_rate - 0.5) > 1e-12)
		fail_msg("CPU rate %.17g, not 0.3 s over 0.6 s between the reads", rv.cpu_rate);
	assert_true(rv.io_rate_known);
	if (fabs(rv.io_rate[ACCT_IO_READ_BYTES] - 1000.0) > 1e-9)
		fail_msg("read rate %.17g, not 600 bytes over 0.6 s between the reads", rv.io_rate[ACCT_IO_READ_BYTES]);
	/* /a, read at both passes' starts: 0 over the second */
	acct_cgroup_read(a, ACCT_READ_CPU_RATE, now, &rv);
	assert_true(rv.cpu_rate_known);
	assert_true(rv.cpu_rate == 0.0);
}

/* v1 usage_percpu: a value for each CPU the kernel may have (1,024 here) is
 * read whole; a file that does not parse is garbage, and the usage comes
 * from cpuacct.usage; more CPUs (hot-added) start the per-CPU values anew,
 * and without memory for them the usage comes from cpuacct.usage for that
 * pass, without an error. */
static void test_percpu_cpus(void **state)
{
	struct tree *t = *state;
	t->L.v2_memory = false;
	struct acct_cgroup *a = tree_add(t, "/a", UNI | H(ACCT_HIER_CPUACCT));
	xmkdir(t->base, "unified/a");
	xmkdir(t->base, "cpu,cpuacct/a");
	xwrite(t->base, "cpu,cpuacct/a/cpuacct.usage", "2000000000\n");
	char *text = NULL;
	size_t size = 0;
	FILE *m = open_memstream(&text, &size);
	assert_non_null(m);
	for (int i = 0; i < 1024; i++)
		fprintf(m, "1000000 ");
	fprintf(m, "\n");
	assert_int_equal(fclose(m), 0);
	xwrite(t->base, "cpu,cpuacct/a/cpuacct.usage_percpu", text);
	__real_free(text); /* open_memstream's, not counted */
	tree_pass(t, ACCT_PASS_FAST);
	assert_no_errors(&t->rep);
	assert_int_equal(value(a, ACCT_Q_CPU_USAGE), 1024000);

	xwrite(t->base, "cpu,cpuacct/a/cpuacct.usage_percpu", "1000000 x\n");
	tree_pass(t, ACCT_PASS_FAST);
	assert_int_equal(t->rep.errors[ACCT_ERR_GARBAGE], 1);
	assert_int_equal(t->rep.errors[ACCT_ERR_INVARIANT], 0);
	assert_int_equal(value(a, ACCT_Q_CPU_USAGE), 2000000);
	/* a value too large (-ERANGE, as too many values are): garbage too */
	xwrite(t->base, "cpu,cpuacct/a/cpuacct.usage_percpu", "1000000 18446744073709551616\n");
	tree_pass(t, ACCT_PASS_FAST);
	assert_int_equal(t->rep.errors[ACCT_ERR_GARBAGE], 1);
	assert_int_equal(t->rep.errors[ACCT_ERR_INVARIANT], 0);
	assert_int_equal(value(a, ACCT_Q_CPU_USAGE), 2000000);
	/* one CPU */
	xwrite(t->base, "cpu,cpuacct/a/cpuacct.usage_percpu", "2100000000\n");
	tree_pass(t, ACCT_PASS_FAST);
	assert_no_errors(&t->rep);
	assert_int_equal(value(a, ACCT_Q_CPU_USAGE), 2100000);
	xwrite(t->base, "cpu,cpuacct/a/cpuacct.usage_percpu", "2200000000\n");
	tree_pass(t, ACCT_PASS_FAST);
	assert_no_errors(&t->rep);
	assert_int_equal(value(a, ACCT_Q_CPU_USAGE), 2200000);

	xwrite(t->base, "cpu,cpuacct/a/cpuacct.usage_percpu", "1000000000 1000000000 1000000000\n");
	xwrite(t->base, "cpu,cpuacct/a/cpuacct.usage", "2500000000\n");
	__atomic_store_n(&inject.calloc_fail_in, 1, __ATOMIC_RELAXED);
	tree_pass(t, ACCT_PASS_FAST);
	assert_int_equal(__atomic_load_n(&inject.calloc_fail_in, __ATOMIC_RELAXED), 0);
	assert_no_errors(&t->rep);
	assert_int_equal(value(a, ACCT_Q_CPU_USAGE), 2500000);
	tree_pass(t, ACCT_PASS_FAST);
	assert_no_errors(&t->rep);
	assert_int_equal(value(a, ACCT_Q_CPU_USAGE), 3000000);

	/* More possible CPUs than the parser's 1024 slots on the stack: as
	 * many as the file lists (hosts with 1,500 CPUs exist). */
	m = open_memstream(&text, &size);
	assert_non_null(m);
	for (int i = 0; i < 1500; i++)
		fprintf(m, "3000000 ");
	fprintf(m, "\n");
	assert_int_equal(fclose(m), 0);
	xwrite(t->base, "cpu,cpuacct/a/cpuacct.usage_percpu", text);
	__real_free(text);
	/* without memory for them: cpuacct.usage this pass, no error */
	xwrite(t->base, "cpu,cpuacct/a/cpuacct.usage", "4000000000\n");
	__atomic_store_n(&inject.malloc_fail_size, 1500 * sizeof(uint64_t), __ATOMIC_RELAXED);
	tree_pass(t, ACCT_PASS_FAST);
	assert_int_equal(__atomic_load_n(&inject.malloc_fail_size, __ATOMIC_RELAXED), 0);
	assert_no_errors(&t->rep);
	assert_int_equal(value(a, ACCT_Q_CPU_USAGE), 4000000);
	xwrite(t->base, "cpu,cpuacct/a/cpuacct.usage", "9999000000\n"); /* not read */
	tree_pass(t, ACCT_PASS_FAST);
	assert_no_errors(&t->rep);
	assert_int_equal(value(a, ACCT_Q_CPU_USAGE), 4500000);
}

/* CPU bandwidth is never pruned: the kernel counts one more period after a
 * throttled cgroup's last run (the period timer finds it active once more),
 * so its nr_periods moves while no CPU time does, here or in its parent
 * (kernel-truth saw 961 served against the kernel's 962). */
static void test_bandwidth_not_pruned(void **state)
{
	struct tree *t = *state;
	struct acct_cgroup *c = pruning_pair(t, UNI, UNI, NULL);
	xwrite(t->base, "unified/p/c/cpu.stat",
	       "usage_usec 400\nuser_usec 400\nsystem_usec 0\nnr_periods 961\nnr_throttled 3\nthrottled_usec 900\n");
	tree_pass(t, ACCT_PASS_FAST);
	tree_pass(t, ACCT_PASS_FAST);
	assert_no_errors(&t->rep);
	assert_int_equal(value(c, ACCT_Q_CPU_PERIODS), 961);
	assert_int_equal(parts(t, ACCT_PART_CPU, ACCT_OUTCOME_PRUNED), 0);
	/* the period after its last run: p's usage and c's stand still */
	xwrite(t->base, "unified/p/c/cpu.stat",
	       "usage_usec 400\nuser_usec 400\nsystem_usec 0\nnr_periods 962\nnr_throttled 3\nthrottled_usec 900\n");
	tree_pass(t, ACCT_PASS_FAST);
	assert_no_errors(&t->rep);
	assert_int_equal(value(c, ACCT_Q_CPU_PERIODS), 962);
	assert_int_equal(parts(t, ACCT_PART_CPU, ACCT_OUTCOME_PRUNED), 0);
}

/* A change of CPU source that leaves a quantity without a file: /p and /p/c
 * move from the unified cpu.stat (usage and throttling) to a cpuacct
 * hierarchy without cpu (usage and user/system only), as systemd attaching
 * cpuacct alone does on a hybrid host. Their CPU is read in full once from
 * the new files and pruned again from the next idle pass on; the throttling
 * counts, which no file gives now, keep their restart bits (a file that
 * gives them later starts a new series) but do not stop pruning
 * (sampler_prune_source_changed()). */
static void test_source_change_without_throttling(void **state)
{
	struct tree *t = *state;
	struct acct_cgroup *p;
	struct acct_cgroup *c = pruning_pair(t, UNI, UNI, &p);
	xwrite(t->base, "unified/p/cpu.stat",
	       "usage_usec 1000\nuser_usec 1000\nsystem_usec 0\nnr_periods 0\nnr_throttled 0\nthrottled_usec 0\n");
	xwrite(t->base, "unified/p/c/cpu.stat",
	       "usage_usec 400\nuser_usec 400\nsystem_usec 0\nnr_periods 0\nnr_throttled 0\nthrottled_usec 0\n");
	tree_pass(t, ACCT_PASS_FAST);
	tree_pass(t, ACCT_PASS_FAST);
	assert_no_errors(&t->rep);
	assert_int_equal(parts(t, ACCT_PART_CPU, ACCT_OUTCOME_PRUNED), 1);

	static const char *const rels[] = { "p", "p/c" };
	struct acct_cgroup *both[] = { p, c };
	for (int k = 0; k < 2; k++) {
		char path[128];
		snprintf(path, sizeof(path), "cpu,cpuacct/%s", rels[k]);
		xmkdir(t->base, path);
		snprintf(path, sizeof(path), "cpu,cpuacct/%s/cpuacct.usage_percpu", rels[k]);
		xwrite(t->base, path, k ? "400000 0\n" : "1000000 0\n");
		snprintf(path, sizeof(path), "cpu,cpuacct/%s/cpuacct.stat", rels[k]);
		xwrite(t->base, path, "user 0\nsystem 0\n");
		struct acct_cgroup_id id = { .path = k ? "/p/c" : "/p", .depth = (unsigned)k + 1,
					     .hierarchies = UNI | H(ACCT_HIER_CPUACCT) };
		acct_ledger_update_id(t->ledger, both[k], &id);
	}
	/* the first pass reads both from the new files */
	tree_pass(t, ACCT_PASS_FAST);
	assert_no_errors(&t->rep);
	assert_int_equal(parts(t, ACCT_PART_CPU, ACCT_OUTCOME_PRUNED), 0);
	assert_int_equal(value(c, ACCT_Q_CPU_USAGE), 400);
	/* then c is pruned while p stands still, as before the change */
	for (int i = 0; i < 3; i++) {
		tree_pass(t, ACCT_PASS_FAST);
		assert_no_errors(&t->rep);
		if (parts(t, ACCT_PART_CPU, ACCT_OUTCOME_PRUNED) != 1)
			fail_msg("idle pass %d after the change of source: %" PRIu64 " pruned, want 1", i,
				 parts(t, ACCT_PART_CPU, ACCT_OUTCOME_PRUNED));
	}
	/* and read again when p moves */
	xwrite(t->base, "cpu,cpuacct/p/cpuacct.usage_percpu", "1001000 0\n");
	xwrite(t->base, "cpu,cpuacct/p/c/cpuacct.usage_percpu", "401000 0\n");
	tree_pass(t, ACCT_PASS_FAST);
	assert_no_errors(&t->rep);
	assert_int_equal(parts(t, ACCT_PART_CPU, ACCT_OUTCOME_PRUNED), 0);
	assert_int_equal(value(c, ACCT_Q_CPU_USAGE), 401);
}

static uint64_t cached_fds(const struct tree *t)
{
	uint64_t n;
	acct_sampler_fd_stats(t->s, &n, NULL);
	return n;
}

/* Descriptors that pay (sampler-files.c): a role's file is kept open only
 * from its second read in a row on, and closed by the first pass that does
 * not read it. p and its child c: the first pass opens every file for that
 * read alone; the second keeps p's (read again) and c's memory, pressure
 * and events, but not c's CPU and I/O, pruned by p; once both cgroups'
 * pressure is quiet it is no longer read and its descriptors close; when p
 * moves, c's CPU is read again, for that read alone, and kept from the
 * next read in a row on. */
static void test_descriptors_that_pay(void **state)
{
	struct tree *t = *state;
	struct acct_cgroup *c = pruning_pair(t, UNI, UNI, NULL);

	tree_pass(t, ACCT_PASS_FAST);
	assert_no_errors(&t->rep);
	assert_int_equal(cached_fds(t), 0);
	uint64_t files = t->rep.files_read;
	assert_true(files > 0);

	tree_pass(t, ACCT_PASS_FAST);
	assert_no_errors(&t->rep);
	assert_int_equal(parts(t, ACCT_PART_CPU, ACCT_OUTCOME_PRUNED), 1);
	/* every file read this pass was read in the first too, and is kept */
	assert_int_equal(cached_fds(t), t->rep.files_read);
	uint64_t second = cached_fds(t);

	/* Until the pressure is quiet (two equal reads), then it is not read
	 * and its descriptors close: fewer than the second pass held. */
	for (int i = 0; i < 4; i++)
		tree_pass(t, ACCT_PASS_FAST);
	assert_no_errors(&t->rep);
	assert_int_equal(parts(t, ACCT_PART_PSI, ACCT_OUTCOME_SKIPPED), 2);
	assert_int_equal(cached_fds(t), t->rep.files_read);
	assert_true(cached_fds(t) < second);
	uint64_t quiet = cached_fds(t);
	tree_pass(t, ACCT_PASS_FAST);
	assert_int_equal(cached_fds(t), quiet);

	/* p moves: c's CPU and I/O are read, opened for that read alone; at the
	 * next read in a row (p moves again) they are kept; when p stands
	 * still they close again. */
	prune_cg(t, "p", 1100, 10, "0.00");
	prune_cg(t, "p/c", 500, 4, "0.00");
	tree_pass(t, ACCT_PASS_FAST);
	assert_int_equal(value(c, ACCT_Q_CPU_USAGE), 500);
	assert_int_equal(parts(t, ACCT_PART_CPU, ACCT_OUTCOME_READ), 2);
	assert_true(t->rep.files_read > cached_fds(t));
	prune_cg(t, "p", 1200, 10, "0.00");
	tree_pass(t, ACCT_PASS_FAST);
	assert_int_equal(parts(t, ACCT_PART_CPU, ACCT_OUTCOME_READ), 2);
	assert_int_equal(cached_fds(t), t->rep.files_read);
	for (int i = 0; i < 4; i++)
		tree_pass(t, ACCT_PASS_FAST);
	assert_int_equal(parts(t, ACCT_PART_CPU, ACCT_OUTCOME_PRUNED), 1);
	assert_int_equal(cached_fds(t), t->rep.files_read);
	assert_no_errors(&t->rep);
}

/* Descriptor 0 (a daemon started with its standard input closed opens it
 * first) is a descriptor like any other: kept for a role read pass after
 * pass, and closed when its cgroup is released, with a sampler (counted out
 * of the cache) or without one, and when an empty cgroup leaves the
 * hierarchy of its file (sampler_state_of(), "leaving while empty"). */
static bool fd0_open(void)
{
	return fcntl(0, F_GETFD) >= 0;
}

/* A kept descriptor whose read fails is not kept: the next read opens the
 * path again, so that a failure (a stale handle, a path that was something
 * else when it was opened: here a directory, EISDIR) does not repeat pass
 * after pass once the file is right. */
static void test_failed_descriptor_reopened(void **state)
{
	struct tree *t = *state;
	struct acct_cgroup *a = tree_add(t, "/a", UNI);
	xmkdir(t->base, "unified/a");
	xmkdir(t->base, "unified/a/memory.current");
	tree_pass(t, ACCT_PASS_FAST);
	assert_int_equal(t->rep.cgroups_failed, 1);
	tree_pass(t, ACCT_PASS_FAST); /* read twice in a row: kept, and failing */
	assert_int_equal(t->rep.cgroups_failed, 1);
	assert_int_equal(cached_fds(t), 0);
	xrm_rf(t->base, "unified/a/memory.current");
	xwrite(t->base, "unified/a/memory.current", "100\n");
	tree_pass(t, ACCT_PASS_FAST);
	assert_no_errors(&t->rep);
	assert_int_equal(value(a, ACCT_Q_MEMORY), 100);
}

static void test_descriptor_zero(void **state)
{
	struct tree *t = *state;
	int saved = t->saved_stdin = dup(0);
	assert_true(saved > 0);
	struct acct_cgroup *a = tree_add(t, "/a", UNI);
	xmkdir(t->base, "unified/a");
	xwrite(t->base, "unified/a/memory.current", "100\n");
	tree_pass(t, ACCT_PASS_FAST);
	__atomic_store_n(&inject.fd0_suffix, "/unified/a/memory.current", __ATOMIC_RELEASE);
	tree_pass(t, ACCT_PASS_FAST); /* read twice in a row: kept */
	assert_null(inject.fd0_suffix);
	assert_no_errors(&t->rep);
	assert_true(fd0_open());
	assert_int_equal(cached_fds(t), 1);
	acct_sampler_release(a, t->s);
	assert_false(fd0_open());
	assert_int_equal(cached_fds(t), 0);
	assert_int_equal(dup2(saved, 0), 0); /* stdin again: no other file gets 0 */

	/* released without a sampler (the sampler gone before the ledger),
	 * cgroup.events on 0 this time (F_EVENTS, role 0) */
	xwrite(t->base, "unified/a/cgroup.events", "populated 1\nfrozen 0\n");
	tree_pass(t, ACCT_PASS_FAST);
	__atomic_store_n(&inject.fd0_suffix, "/unified/a/cgroup.events", __ATOMIC_RELEASE);
	tree_pass(t, ACCT_PASS_FAST);
	assert_null(inject.fd0_suffix);
	assert_no_errors(&t->rep);
	assert_true(fd0_open());
	acct_sampler_release(a, NULL);
	assert_false(fd0_open());
	assert_int_equal(dup2(saved, 0), 0);

	/* /b, emptied, leaves its cpuacct tree (as test_removed_tree_by_tree_keeps_sources) */
	t->L.v2_memory = false;
	acct_ledger_kill(t->ledger, a, acct_now_us());
	struct acct_cgroup *b = tree_add(t, "/b", UNI | H(ACCT_HIER_CPUACCT));
	xmkdir(t->base, "unified/b");
	xwrite(t->base, "unified/b/cgroup.events", "populated 1\nfrozen 0\n");
	cpuacct_cg(t, "b", 1000, "user 0\nsystem 0\n");
	tree_pass(t, ACCT_PASS_FAST);
	__atomic_store_n(&inject.fd0_suffix, "/cpu,cpuacct/b/cpuacct.usage_percpu", __ATOMIC_RELEASE);
	tree_pass(t, ACCT_PASS_FAST);
	assert_null(inject.fd0_suffix);
	xwrite(t->base, "unified/b/cgroup.events", "populated 0\nfrozen 0\n");
	acct_cgroup_announce_populated_change(b);
	uint64_t deadline = acct_now_us() + 10 * USEC_PER_SEC;
	while (acct_cgroup_final(b) != ACCT_FINAL_READ) {
		assert_true(acct_now_us() < deadline);
		tree_pass(t, ACCT_PASS_FAST);
	}
	assert_true(fd0_open());
	uint64_t cached = cached_fds(t);
	xrm_rf(t->base, "cpu,cpuacct/b");
	struct acct_cgroup_id id = { .path = "/b", .depth = 1, .hierarchies = UNI };
	acct_ledger_update_id(t->ledger, b, &id);
	tree_pass(t, ACCT_PASS_FAST);
	assert_false(fd0_open());
	assert_true(cached_fds(t) < cached);
	assert_int_equal(t->rep.cgroups_failed, 0);
}

/* A cgroup whose files' paths do not fit a path (4,096 bytes: the kernel
 * nests cgroups deeper than that; none of their files opens): /l's
 * directory alone is too long, /m's directory fits but no file name does
 * after it. Each read fails as unreadable (ENAMETOOLONG), every pass, not
 * as a file this kernel lacks; acct_sampler_read_memory() says so too. Their
 * names are of 99 bytes, as a kernel takes them (NAME_MAX 255): a path cut
 * short would only name no file. */
static void nested_path(char *p, size_t len, char c)
{
	for (size_t i = 0; i < len; i++)
		p[i] = i % 100 == 0 ? '/' : c;
	p[len] = 0;
}

static void test_path_too_long(void **state)
{
	struct tree *t = *state;
	char l[4200], m[4096];
	size_t mount = strlen(t->L.mount[ACCT_HIER_UNIFIED]);
	nested_path(l, sizeof(l) - 1, 'l');
	/* mount + m: 4,090 bytes; "/io.stat", the shortest name, makes 4,098 */
	assert_true(mount < 4000);
	nested_path(m, 4090 - mount, 'm');
	struct acct_cgroup *lc = tree_add(t, l, UNI);
	struct acct_cgroup *mc = tree_add(t, m, UNI);
	for (int i = 0; i < 2; i++) {
		tree_pass(t, ACCT_PASS_FAST);
		assert_true(t->rep.errors[ACCT_ERR_UNREADABLE] > 0);
		assert_int_equal(t->rep.errors[ACCT_ERR_VANISHED] + t->rep.errors[ACCT_ERR_GARBAGE], 0);
		assert_int_equal(t->rep.cgroups_failed, 2);
	}
	assert_int_equal(acct_sampler_read_memory(t->s, lc, &(int64_t){ 0 }), -ENAMETOOLONG);
	assert_int_equal(acct_sampler_read_memory(t->s, mc, &(int64_t){ 0 }), -ENAMETOOLONG);
}

/* acct_raise_nofile(): the soft limit of descriptors raised to the hard
 * one, which it returns (from one below it here, then from the hard limit
 * itself). */
static void test_raise_nofile(void **state)
{
	(void)state;
	struct rlimit old, rl;
	assert_int_equal(getrlimit(RLIMIT_NOFILE, &old), 0);
	rl = (struct rlimit){ .rlim_cur = old.rlim_max - 1, .rlim_max = old.rlim_max };
	assert_int_equal(setrlimit(RLIMIT_NOFILE, &rl), 0);
	for (int i = 0; i < 2; i++) {
		long r = acct_raise_nofile();
		assert_true(r > 0);
		assert_int_equal(getrlimit(RLIMIT_NOFILE, &rl), 0);
		assert_true(rl.rlim_cur == old.rlim_max && rl.rlim_max == old.rlim_max);
		assert_true((rlim_t)r == rl.rlim_cur);
	}
	assert_int_equal(setrlimit(RLIMIT_NOFILE, &old), 0);
}

/* Pressure (psi_due() in sampler.c) is read where something may have
 * stalled: at the first reads and until two reads agree with every average
 * at 0; where the CPU time moved since the last pressure read; where the last
 * load pass counted an active thread below; once it is a minute old. Between
 * these its value and age stand. */
static void test_psi_due(void **state)
{
	struct tree *t = *state;
	struct acct_cgroup *a = tree_add(t, "/a", UNI);
	prune_cg(t, "a", 100, 7, "0.50");

	/* read while not quiet: the first read has nothing to compare with */
	tree_pass(t, ACCT_PASS_FAST);
	tree_pass(t, ACCT_PASS_FAST);
	assert_int_equal(parts(t, ACCT_PART_PSI, ACCT_OUTCOME_READ), 1);
	/* quiet (two reads agree), but an average is decaying (0.50): read
	 * again once it is 10 s old, not before */
	tree_pass(t, ACCT_PASS_FAST);
	assert_int_equal(parts(t, ACCT_PART_PSI, ACCT_OUTCOME_SKIPPED), 1);
	prune_cg(t, "a", 100, 7, "0.00");
	assert_int_equal(acct_sampler_run(t->s, &a, 1, ACCT_PASS_FAST, acct_now_us() + 11 * USEC_PER_SEC, &t->rep), 0);
	assert_int_equal(parts(t, ACCT_PART_PSI, ACCT_OUTCOME_READ), 1);
	/* quiet, every average 0, its CPU time stands: not read, though
	 * the file changed (what the kernel does not do without a trace) */
	prune_cg(t, "a", 100, 8, "0.00");
	tree_pass(t, ACCT_PASS_FAST);
	assert_no_errors(&t->rep);
	assert_int_equal(parts(t, ACCT_PART_PSI, ACCT_OUTCOME_SKIPPED), 1);
	assert_int_equal(value(a, ACCT_Q_PSI_CPU_SOME), 7);

	/* its CPU time moved: read */
	prune_cg(t, "a", 150, 8, "0.00");
	tree_pass(t, ACCT_PASS_FAST);
	assert_int_equal(parts(t, ACCT_PART_PSI, ACCT_OUTCOME_READ), 1);
	assert_int_equal(value(a, ACCT_Q_PSI_CPU_SOME), 8);
	tree_pass(t, ACCT_PASS_FAST); /* quiet again */
	tree_pass(t, ACCT_PASS_FAST);
	assert_int_equal(parts(t, ACCT_PART_PSI, ACCT_OUTCOME_SKIPPED), 1);

	/* a minute later it is read in any case */
	prune_cg(t, "a", 150, 9, "0.00");
	tree_pass(t, ACCT_PASS_FAST);
	assert_int_equal(parts(t, ACCT_PART_PSI, ACCT_OUTCOME_SKIPPED), 1);
	assert_int_equal(acct_sampler_run(t->s, &a, 1, ACCT_PASS_FAST, acct_now_us() + 100 * USEC_PER_SEC, &t->rep), 0);
	assert_int_equal(parts(t, ACCT_PART_PSI, ACCT_OUTCOME_READ), 1);
	assert_int_equal(value(a, ACCT_Q_PSI_CPU_SOME), 9);
}

/* Averages of 0 do not decay (psi_due()): a quiet cgroup whose every
 * average read 0.00 is not read again when PSI_DECAY_US (10 s) have passed,
 * as one with an average above 0 is (test_psi_due); the clock is moved
 * ahead, not waited for. */
static void test_psi_zero_averages(void **state)
{
	struct tree *t = *state;
	tree_add(t, "/a", UNI);
	prune_cg(t, "a", 100, 7, "0.00");
	tree_pass(t, ACCT_PASS_FAST);
	tree_pass(t, ACCT_PASS_FAST); /* the same totals: quiet */
	assert_no_errors(&t->rep);
	assert_int_equal(parts(t, ACCT_PART_PSI, ACCT_OUTCOME_READ), 1);
	__atomic_store_n(&inject.clock_ahead_us, 11 * USEC_PER_SEC, __ATOMIC_RELAXED);
	tree_pass(t, ACCT_PASS_FAST);
	assert_no_errors(&t->rep);
	assert_int_equal(parts(t, ACCT_PART_PSI, ACCT_OUTCOME_READ), 0);
	assert_int_equal(parts(t, ACCT_PART_PSI, ACCT_OUTCOME_SKIPPED), 1);
}

/* A pressure file that does not parse fails the cgroup's pressure read
 * whole (sample_psi()): the other files' values are set, but the group's
 * age is not renewed, and the next pass reads it again, even where what
 * the other files gave stands still (every total 0 here). */
static void test_psi_failed_read(void **state)
{
	struct tree *t = *state;
	struct acct_cgroup *a = tree_add(t, "/a", UNI);
	prune_cg(t, "a", 100, 0, "0.00");
	tree_pass(t, ACCT_PASS_FAST);
	tree_pass(t, ACCT_PASS_FAST); /* quiet */
	assert_no_errors(&t->rep);
	/* 5 s later its CPU time moved (pressure due), cpu.pressure is garbage */
	__atomic_store_n(&inject.clock_ahead_us, 5 * USEC_PER_SEC, __ATOMIC_RELAXED);
	prune_cg(t, "a", 150, 0, "0.00");
	xwrite(t->base, "unified/a/cpu.pressure", "some avg10=x\n");
	tree_pass(t, ACCT_PASS_FAST);
	assert_int_equal(t->rep.errors[ACCT_ERR_GARBAGE], 1);
	assert_int_equal(parts(t, ACCT_PART_PSI, ACCT_OUTCOME_READ), 1);
	assert_true(a->psi_known[ACCT_PSI_MEMORY]);
	assert_true(acct_cgroup_age(a, ACCT_GROUP_PSI, acct_now_us()) >= 5 * USEC_PER_SEC);
	/* the CPU time stands still now: read again all the same */
	tree_pass(t, ACCT_PASS_FAST);
	assert_int_equal(parts(t, ACCT_PART_CPU, ACCT_OUTCOME_READ), 1);
	assert_int_equal(parts(t, ACCT_PART_PSI, ACCT_OUTCOME_READ), 1);
}

/* v1 blkio (a cgroup in a blkio hierarchy reads it, not io.stat): bytes
 * from io_service_bytes_recursive, operations from io_serviced_recursive,
 * merged per device. Its counters can be zeroed (blkio.reset_stats): a
 * total that goes down is a new value, no violation. Either file failing
 * fails the I/O read (counted once) and leaves the totals as they were. */
static void blkio_files(struct tree *t, unsigned rbytes, unsigned wbytes, unsigned rios, unsigned wios)
{
	char text[256];
	snprintf(text, sizeof(text),
		 "8:16 Read %u\n8:16 Write %u\n8:16 Sync 0\n8:16 Async %u\n8:16 Discard 0\n8:16 Total %u\nTotal %u\n",
		 rbytes, wbytes, rbytes + wbytes, rbytes + wbytes, rbytes + wbytes);
	xwrite(t->base, "blkio/a/blkio.throttle.io_service_bytes_recursive", text);
	snprintf(text, sizeof(text),
		 "8:16 Read %u\n8:16 Write %u\n8:16 Sync 0\n8:16 Async %u\n8:16 Total %u\nTotal %u\n", rios, wios,
		 rios + wios, rios + wios, rios + wios);
	xwrite(t->base, "blkio/a/blkio.throttle.io_serviced_recursive", text);
}

static void test_blkio_v1(void **state)
{
	struct tree *t = *state;
	xmkdir(t->base, "blkio");
	t->L.mount[ACCT_HIER_BLKIO] = xjoin(t->base, "blkio");
	struct acct_cgroup *a = tree_add(t, "/a", UNI | H(ACCT_HIER_BLKIO));
	xmkdir(t->base, "unified/a");
	xwrite(t->base, "unified/a/cgroup.events", "populated 1\nfrozen 0\n");
	xwrite(t->base, "unified/a/cpu.stat", cpu_stat_v2);
	xwrite(t->base, "unified/a/io.stat", "8:16 rbytes=1 wbytes=1 rios=1 wios=1\n"); /* not read */
	xmkdir(t->base, "blkio/a");
	blkio_files(t, 4096, 8192, 1, 2);
	tree_pass(t, ACCT_PASS_FAST);
	assert_no_errors(&t->rep);
	assert_int_equal(value(a, ACCT_Q_IO_READ_BYTES), 4096);
	assert_int_equal(value(a, ACCT_Q_IO_WRITE_BYTES), 8192);
	assert_int_equal(value(a, ACCT_Q_IO_READ_IOS), 1);
	assert_int_equal(value(a, ACCT_Q_IO_WRITE_IOS), 2);
	assert_int_equal(value(a, ACCT_Q_IO_DISCARD_BYTES), 0);
	assert_int_equal(value(a, ACCT_Q_IO_DISCARD_IOS), INT64_MIN); /* no Discard line */
	assert_non_null(a->io);
	assert_int_equal(a->io->n, 1);
	int d = acct_ledger_io_device_find(t->ledger, 8, 16);
	assert_true(d >= 0);
	assert_int_equal(a->io->dev[d].v[ACCT_IO_WRITE_IOS], 2);
	assert_int_equal(a->io->dev[d].v[ACCT_IO_DISCARD_IOS], -1);

	/* reset_stats */
	blkio_files(t, 100, 200, 0, 1);
	tree_pass(t, ACCT_PASS_FAST);
	assert_no_errors(&t->rep);
	assert_int_equal(value(a, ACCT_Q_IO_READ_BYTES), 100);
	assert_int_equal(value(a, ACCT_Q_IO_WRITE_IOS), 1);

	/* the bytes garbage */
	xwrite(t->base, "blkio/a/blkio.throttle.io_service_bytes_recursive", "8:16 Read x\nTotal 0\n");
	tree_pass(t, ACCT_PASS_FAST);
	assert_int_equal(t->rep.errors[ACCT_ERR_GARBAGE], 1);
	assert_int_equal(t->rep.errors[ACCT_ERR_UNREADABLE], 0);
	assert_int_equal(t->rep.cgroups_failed, 1);
	assert_int_equal(value(a, ACCT_Q_IO_READ_BYTES), 100);
	assert_int_equal(value(a, ACCT_Q_IO_WRITE_IOS), 1);
	/* the operations unreadable (a directory): counted as such alone */
	blkio_files(t, 300, 400, 3, 4);
	xrm_rf(t->base, "blkio/a/blkio.throttle.io_serviced_recursive");
	xmkdir(t->base, "blkio/a/blkio.throttle.io_serviced_recursive");
	tree_pass(t, ACCT_PASS_FAST);
	assert_int_equal(t->rep.errors[ACCT_ERR_UNREADABLE], 1);
	assert_int_equal(t->rep.errors[ACCT_ERR_GARBAGE], 0);
	assert_int_equal(t->rep.cgroups_failed, 1);
	assert_int_equal(value(a, ACCT_Q_IO_READ_BYTES), 100);
	/* the operations garbage */
	xrm_rf(t->base, "blkio/a/blkio.throttle.io_serviced_recursive");
	xwrite(t->base, "blkio/a/blkio.throttle.io_serviced_recursive", "8:16 Read 3\n");
	tree_pass(t, ACCT_PASS_FAST);
	assert_int_equal(t->rep.errors[ACCT_ERR_GARBAGE], 1);
	assert_int_equal(t->rep.cgroups_failed, 1);
	assert_int_equal(value(a, ACCT_Q_IO_READ_BYTES), 100);
	/* whole again */
	blkio_files(t, 300, 400, 3, 4);
	tree_pass(t, ACCT_PASS_FAST);
	assert_no_errors(&t->rep);
	assert_int_equal(value(a, ACCT_Q_IO_READ_BYTES), 300);
	assert_int_equal(value(a, ACCT_Q_IO_WRITE_IOS), 4);
}

/* An I/O rate needs two readings at different times: two passes of the same
 * moment (now_us) give none, and the next later one does. */
static void test_io_rate_same_moment(void **state)
{
	struct tree *t = *state;
	struct acct_cgroup *a = tree_add(t, "/a", UNI);
	struct acct_cgroup *cgs[] = { a };
	struct acct_cgroup_values rv;
	uint64_t now = acct_now_us();
	prune_cg(t, "a", 100, 1, "0.00");
	xwrite(t->base, "unified/a/io.stat", "8:0 rbytes=1000 wbytes=0 rios=1 wios=0\n");
	assert_int_equal(run_at(t, cgs, 1, ACCT_PASS_FAST, now), 0);
	xwrite(t->base, "unified/a/io.stat", "8:0 rbytes=3000 wbytes=0 rios=2 wios=0\n");
	assert_int_equal(run_at(t, cgs, 1, ACCT_PASS_FAST, now), 0);
	assert_no_errors(&t->rep);
	assert_int_equal(value(a, ACCT_Q_IO_READ_BYTES), 3000);
	acct_cgroup_read(a, ACCT_READ_IO_RATE, now, &rv);
	assert_false(rv.io_rate_known);
	xwrite(t->base, "unified/a/io.stat", "8:0 rbytes=5000 wbytes=0 rios=3 wios=0\n");
	assert_int_equal(run_at(t, cgs, 1, ACCT_PASS_FAST, now + USEC_PER_SEC), 0);
	acct_cgroup_read(a, ACCT_READ_IO_RATE, now + USEC_PER_SEC, &rv);
	assert_true(rv.io_rate_known);
	assert_true(fabs(rv.io_rate[ACCT_IO_READ_BYTES] - 2000.0) <= 1e-9);
}

/* A block device's name (the ledger's, the first time a pass lists it) is
 * DEVNAME of /sys/dev/block/MAJ:MIN/uevent, here a directory of the tree
 * that the open64 wrapper answers for sysfs: found on any line, cut to
 * ACCT_IO_NAME_MAX - 1 bytes; "" where the file or the key is missing. Of
 * the file, the first 511 bytes are read (a 512-byte buffer), so a DEVNAME
 * that runs past them is cut there. */
static void test_io_device_names(void **state)
{
	struct tree *t = *state;
	xmkdir(t->base, "sys-dev-block");
	_cleanup_free_ char *sys = xjoin(t->base, "sys-dev-block");
	__atomic_store_n(&inject.sys_block, sys, __ATOMIC_RELEASE);
	xmkdir(t->base, "sys-dev-block/259:1");
	xwrite(t->base, "sys-dev-block/259:1/uevent", "MAJOR=259\nMINOR=1\nDEVNAME=nvme0n1p1\nDEVTYPE=partition\nPARTN=1\n");
	xmkdir(t->base, "sys-dev-block/259:2");
	xwrite(t->base, "sys-dev-block/259:2/uevent", "MAJOR=259\nMINOR=2\nDEVTYPE=disk\n");
	xmkdir(t->base, "sys-dev-block/259:3");
	xwrite(t->base, "sys-dev-block/259:3/uevent", "MAJOR=259\nMINOR=3\nDEVNAME=abcdefghijklmnopqrstuvwxyz0123456789\n");
	/* DEVNAME= at byte 492: its value from byte 500, the buffer's last at 510 */
	char big[600];
	int n = snprintf(big, sizeof(big), "FILLER=%0484d\nDEVNAME=abcdefghijklmnopqrstu\n", 0);
	assert_int_equal(n, 492 + 30);
	xmkdir(t->base, "sys-dev-block/259:4");
	xwrite(t->base, "sys-dev-block/259:4/uevent", big);
	xmkdir(t->base, "sys-dev-block/259:6"); /* no uevent; 259:5 not even a directory */
	struct acct_cgroup *a = tree_add(t, "/a", UNI);
	xmkdir(t->base, "unified/a");
	xwrite(t->base, "unified/a/io.stat",
	       "259:1 rbytes=1\n259:2 rbytes=2\n259:3 rbytes=3\n259:4 rbytes=4\n259:5 rbytes=5\n259:6 rbytes=6\n");
	tree_pass(t, ACCT_PASS_FAST);
	assert_no_errors(&t->rep);
	assert_int_equal(value(a, ACCT_Q_IO_READ_BYTES), 21);
	static const char *const want[] = { "nvme0n1p1", "", "abcdefghijklmnopqrstuvwxyz01234", "abcdefghijk", "", "" };
	for (unsigned minor = 1; minor <= ELEMENTSOF(want); minor++) {
		int d = acct_ledger_io_device_find(t->ledger, 259, minor);
		assert_true(d >= 0);
		const struct acct_io_device *dev = acct_ledger_io_device(t->ledger, (unsigned)d);
		assert_non_null(dev);
		if (strcmp(dev->name, want[minor - 1]) != 0)
			fail_msg("259:%u named \"%s\", want \"%s\"", minor, dev->name, want[minor - 1]);
	}
	__atomic_store_n(&inject.sys_block, NULL, __ATOMIC_RELEASE);
}

/* A slow pass reads the slow group of a cgroup whose memory moved by the
 * bytes budget since the group was last read (here 0: any change), and of
 * any cgroup once the group is a minute old; not of one whose memory stood
 * still (its memory.stat keys keep their value and age). */
static void test_slow_due(void **state)
{
	struct tree *t = *state;
	struct acct_cgroup *a = tree_add(t, "/a", UNI);
	struct acct_cgroup *b = tree_add(t, "/b", UNI);
	prune_cg(t, "a", 100, 1, "0.00");
	prune_cg(t, "b", 100, 1, "0.00");
	xwrite(t->base, "unified/a/memory.stat", "anon 100\nfile 200\n");
	xwrite(t->base, "unified/b/memory.stat", "anon 100\nfile 200\n");

	tree_pass(t, ACCT_PASS_FAST | ACCT_PASS_SLOW);
	assert_no_errors(&t->rep);
	assert_int_equal(parts(t, ACCT_PART_MEMORY_STAT, ACCT_OUTCOME_READ), 2);
	uint64_t age_a = acct_cgroup_age(a, ACCT_GROUP_SLOW, acct_now_us());

	xwrite(t->base, "unified/a/memory.stat", "anon 300\nfile 200\n");
	xwrite(t->base, "unified/b/memory.stat", "anon 300\nfile 200\n");
	xwrite(t->base, "unified/b/memory.current", "8192\n");
	tree_pass(t, ACCT_PASS_FAST | ACCT_PASS_SLOW);
	assert_no_errors(&t->rep);
	assert_int_equal(parts(t, ACCT_PART_MEMORY_STAT, ACCT_OUTCOME_READ), 1);
	assert_int_equal(parts(t, ACCT_PART_MEMORY_STAT, ACCT_OUTCOME_SKIPPED), 1);
	assert_int_equal(value(b, ACCT_Q_MEMORY), 8192);
	assert_true(acct_cgroup_age(a, ACCT_GROUP_SLOW, acct_now_us()) >= age_a); /* a's is older */
	assert_true(acct_cgroup_age(b, ACCT_GROUP_SLOW, acct_now_us()) < acct_cgroup_age(a, ACCT_GROUP_SLOW, acct_now_us()));
}

/* A thread that sleeps in read(2) on p[0] until a byte comes. */
static void *sleeper(void *arg)
{
	int *p = arg; /* p[0]: read end of a pipe; p[2]: the tid, out */
	__atomic_store_n(&p[2], (int)gettid(), __ATOMIC_RELEASE);
	char c;
	(void)!read(p[0], &c, 1);
	return NULL;
}

/* Until thread `tid` of this process sleeps (S in /proc). */
static void wait_sleeping(int tid)
{
	for (;;) {
		char path[64], buf[512];
		snprintf(path, sizeof(path), "/proc/self/task/%d/stat", tid);
		FILE *st = fopen(path, "re");
		assert_non_null(st);
		size_t n = fread(buf, 1, sizeof(buf) - 1, st);
		fclose(st);
		buf[n] = 0;
		const char *close = strrchr(buf, ')');
		if (close && close[2] == 'S')
			return;
		usleep(1000);
	}
}

/* A thread of this process that sleeps on a pipe until stopped: `tid`
 * once sleeper_start() returns (it sleeps by then). */
struct sleeping {
	int p[3]; /* the pipe, and the tid (sleeper()'s argument) */
	pthread_t th;
	int tid;
};

static void sleeper_start(struct sleeping *z)
{
	*z = (struct sleeping){ .p = { -1, -1, 0 } };
	assert_int_equal(pipe(z->p), 0);
	assert_int_equal(pthread_create(&z->th, NULL, sleeper, z->p), 0);
	while (!__atomic_load_n(&z->p[2], __ATOMIC_ACQUIRE))
		usleep(1000);
	z->tid = z->p[2];
	wait_sleeping(z->tid);
}

static void sleeper_stop(struct sleeping *z)
{
	assert_int_equal(write(z->p[1], "x", 1), 1);
	assert_int_equal(pthread_join(z->th, NULL), 0);
	close(z->p[0]);
	close(z->p[1]);
}

/* Threads are counted in the first hierarchy of unified, memory, cpuacct,
 * cpu, blkio that a cgroup is in, and a parent's count adds only the
 * children counted in the same hierarchy. The thread that started the pass
 * is counted, never as active. */
static void test_load(void **state)
{
	struct tree *t = *state;
	char self[32], two[64];
	struct sleeping z;
	sleeper_start(&z);
	snprintf(self, sizeof(self), "%d\n", (int)gettid());
	/* this thread first: counted, never active; the sleeper after it */
	snprintf(two, sizeof(two), "%d\n%d\n", (int)gettid(), z.tid);
	struct acct_cgroup *a = tree_add(t, "/a", UNI | H(ACCT_HIER_MEMORY));
	struct acct_cgroup *b = tree_add(t, "/a/b", UNI);
	struct acct_cgroup *v1 = tree_add(t, "/a/v1", H(ACCT_HIER_MEMORY));
	xmkdir(t->base, "unified/a");
	xmkdir(t->base, "unified/a/b");
	xmkdir(t->base, "memory/a");
	xmkdir(t->base, "memory/a/v1");
	xwrite(t->base, "unified/a/cgroup.threads", two);
	xwrite(t->base, "memory/a/tasks", "1\n2\n3\n"); /* not a's list: unified comes first */
	xwrite(t->base, "unified/a/b/cgroup.threads", self);
	xwrite(t->base, "memory/a/v1/tasks", self);
	struct acct_cgroup *none = tree_add(t, "/a/none", UNI); /* no threads file */
	xmkdir(t->base, "unified/a/none");

	tree_pass(t, ACCT_PASS_LOAD);
	assert_no_errors(&t->rep);
	struct acct_cgroup **cgs = NULL;
	int n = acct_ledger_snapshot(t->ledger, false, &cgs);
	acct_sampler_aggregate_load(t->s, cgs, (size_t)n, acct_now_us());
	free(cgs);
	assert_int_equal(value(b, ACCT_Q_TASKS), 1);
	assert_int_equal(value(v1, ACCT_Q_TASKS), 1);
	assert_int_equal(value(none, ACCT_Q_TASKS), INT64_MIN); /* not read: absent, not 0 */
	assert_int_equal(value(a, ACCT_Q_TASKS), 3); /* its two and b's; not v1's */
	assert_int_equal(a->loadavg[0], 0);          /* neither is active */
	sleeper_stop(&z);
}


/* A quiet cgroup (no active thread, averages at 0) keeps its values through
 * load passes without being written, and its age moves with each; a
 * change of its thread count is served at the next. Both its own count and
 * its parent's sum (found through the passes' cached ancestor). Fails with
 * the thread count left out of what makes a cgroup quiet, or with the age
 * not moved. */
static void test_load_quiet(void **state)
{
	struct tree *t = *state;
	struct sleeping z;
	sleeper_start(&z);
	struct acct_cgroup *q = tree_add(t, "/q", UNI);
	struct acct_cgroup *c = tree_add(t, "/q/c", UNI);
	xmkdir(t->base, "unified/q");
	xmkdir(t->base, "unified/q/c");
	char one[32], two[64];
	snprintf(one, sizeof(one), "%d\n", z.tid);
	snprintf(two, sizeof(two), "%d\n%d\n", z.tid, (int)gettid()); /* this thread: counted, never active */
	xwrite(t->base, "unified/q/cgroup.threads", one);
	xwrite(t->base, "unified/q/c/cgroup.threads", one);

	uint64_t at[3];
	for (int i = 0; i < 3; i++) {
		if (i == 2)
			xwrite(t->base, "unified/q/c/cgroup.threads", two);
		tree_pass(t, ACCT_PASS_LOAD);
		assert_no_errors(&t->rep);
		struct acct_cgroup **cgs = NULL;
		int n = acct_ledger_snapshot(t->ledger, false, &cgs);
		at[i] = acct_now_us() + (uint64_t)i * 5000000; /* a load period apart */
		acct_sampler_aggregate_load(t->s, cgs, (size_t)n, at[i]);
		free(cgs);
		assert_int_equal(acct_cgroup_get_group_sampled(q, ACCT_GROUP_LOAD), at[i]);
		assert_int_equal(acct_cgroup_get_group_sampled(c, ACCT_GROUP_LOAD), at[i]);
		assert_int_equal(q->loadavg[0], 0);
		assert_int_equal(c->loadavg[0], 0);
		assert_int_equal(value(c, ACCT_Q_TASKS), i < 2 ? 1 : 2);
		assert_int_equal(value(q, ACCT_Q_TASKS), i < 2 ? 2 : 3); /* its own and c's */
	}
	sleeper_stop(&z);
}

/* Fills a thread's stack with ") R " and exits: glibc keeps the stack for
 * the next thread it creates (its stack cache), so a worker made next finds
 * this text wherever its own calls have not written. */
static void *dirty_stack(void *arg)
{
	char area[256 * 1024];
	(void)arg;
	for (size_t i = 0; i + 4 <= sizeof(area); i += 4)
		memcpy(area + i, ") R ", 4);
	__asm__ volatile("" : : "r"(area) : "memory");
	return NULL;
}

/* A sleeping thread is not active whatever the reader's buffer held before
 * (a /proc/TID/stat line not cut at its end would run on into ") R "). */
static void test_load_stale_buffer(void **state)
{
	struct tree *t = *state;
	pthread_t dirty;
	struct sleeping z;
	sleeper_start(&z);
	struct acct_cgroup *a = tree_add(t, "/a", UNI);
	xmkdir(t->base, "unified/a");
	char text[32];
	snprintf(text, sizeof(text), "%d\n", z.tid);
	xwrite(t->base, "unified/a/cgroup.threads", text);
	assert_int_equal(pthread_create(&dirty, NULL, dirty_stack, NULL), 0);
	assert_int_equal(pthread_join(dirty, NULL), 0);
	tree_sampler(t); /* its worker on that stack */
	for (int i = 0; i < 3; i++) {
		tree_pass(t, ACCT_PASS_LOAD);
		assert_no_errors(&t->rep);
	}
	acct_sampler_aggregate_load(t->s, &a, 1, acct_now_us());
	assert_int_equal(value(a, ACCT_Q_TASKS), 1);
	assert_int_equal(a->loadavg[0], 0);
	sleeper_stop(&z);
}

/* A read that fails: ESTALE (a file of a tree on NFS that went away) has
 * vanished, EIO is unreadable; open(2) out of descriptors, for the process
 * (EMFILE, from a real RLIMIT_NOFILE) or the system (ENFILE), is unreadable
 * and puts the sampler in open-per-read (degraded). */
static void test_read_errors(void **state)
{
	struct tree *t = *state;
	struct acct_cgroup *a = tree_add(t, "/a", UNI);
	xmkdir(t->base, "unified/a");
	xwrite(t->base, "unified/a/memory.current", "100\n");
	xwrite(t->base, "unified/a/cpu.stat", cpu_stat_v2);

	inject.read_errno = ESTALE;
	__atomic_store_n(&inject.read_suffix, "/unified/a/memory.current", __ATOMIC_RELEASE);
	tree_pass(t, ACCT_PASS_FAST);
	assert_null(inject.read_suffix); /* it did fail */
	assert_int_equal(t->rep.errors[ACCT_ERR_VANISHED], 1);
	assert_int_equal(t->rep.errors[ACCT_ERR_UNREADABLE] + t->rep.errors[ACCT_ERR_GARBAGE], 0);
	assert_int_equal(value(a, ACCT_Q_MEMORY), INT64_MIN);
	assert_int_equal(value(a, ACCT_Q_CPU_USAGE), 5000);

	inject.read_errno = EIO;
	__atomic_store_n(&inject.read_suffix, "/unified/a/memory.current", __ATOMIC_RELEASE);
	tree_pass(t, ACCT_PASS_FAST);
	assert_null(inject.read_suffix);
	assert_int_equal(t->rep.errors[ACCT_ERR_UNREADABLE], 1);
	assert_int_equal(t->rep.errors[ACCT_ERR_VANISHED] + t->rep.errors[ACCT_ERR_GARBAGE], 0);
	tree_pass(t, ACCT_PASS_FAST);
	assert_no_errors(&t->rep);
	assert_int_equal(value(a, ACCT_Q_MEMORY), 100);

	bool degraded = true;
	acct_sampler_fd_stats(t->s, NULL, &degraded);
	assert_false(degraded);
	/* a new cgroup's files cannot be opened: the system is out of files */
	struct acct_cgroup *b = tree_add(t, "/b", UNI);
	xmkdir(t->base, "unified/b");
	xwrite(t->base, "unified/b/memory.current", "200\n");
	inject.open_errno = ENFILE;
	__atomic_store_n(&inject.open_suffix, "/unified/b/memory.current", __ATOMIC_RELEASE);
	tree_pass(t, ACCT_PASS_FAST);
	assert_null(inject.open_suffix);
	assert_int_equal(t->rep.errors[ACCT_ERR_UNREADABLE], 1);
	acct_sampler_fd_stats(t->s, NULL, &degraded);
	assert_true(degraded);
	tree_pass(t, ACCT_PASS_FAST); /* not remembered as absent */
	assert_no_errors(&t->rep);
	assert_int_equal(value(b, ACCT_Q_MEMORY), 200);
}

static void test_emfile(void **state)
{
	struct tree *t = *state;
	struct acct_cgroup *a = tree_add(t, "/a", UNI);
	xmkdir(t->base, "unified/a");
	xwrite(t->base, "unified/a/memory.current", "100\n");
	tree_sampler(t);
	struct rlimit old, low;
	assert_int_equal(getrlimit(RLIMIT_NOFILE, &old), 0);
	/* no descriptor left: the lowest free one is the limit */
	int probe = dup(0);
	assert_true(probe >= 0);
	close(probe);
	low = (struct rlimit){ .rlim_cur = (rlim_t)probe, .rlim_max = old.rlim_max };
	assert_int_equal(setrlimit(RLIMIT_NOFILE, &low), 0);
	struct acct_cgroup *cgs[] = { a };
	int r = acct_sampler_run(t->s, cgs, 1, ACCT_PASS_FAST, acct_now_us(), &t->rep);
	assert_int_equal(setrlimit(RLIMIT_NOFILE, &old), 0);
	assert_int_equal(r, 0);
	/* every role of a v2 cgroup's fast pass (8): the kernel takes the
	 * descriptor before it looks the path up, so absent files fail too */
	assert_int_equal(t->rep.errors[ACCT_ERR_UNREADABLE], 8);
	assert_int_equal(t->rep.errors[ACCT_ERR_VANISHED] + t->rep.errors[ACCT_ERR_GARBAGE], 0);
	bool degraded = false;
	acct_sampler_fd_stats(t->s, NULL, &degraded);
	assert_true(degraded);
	tree_pass(t, ACCT_PASS_FAST);
	assert_no_errors(&t->rep);
	assert_int_equal(value(a, ACCT_Q_MEMORY), 100);
}

/* acct_sampler_read_memory(): the file a pass reads, opened afresh; -ENODATA
 * where the cgroup has no memory file, -ENOENT once it is gone, -EBADMSG for
 * what does not parse (or exceeds INT64_MAX). */
#define SETTLE_TEST_US 25000 /* above the sampler's SETTLE_US (20 ms) */

static void test_read_memory(void **state)
{
	struct tree *t = *state;
	int64_t v = -1;
	t->L.v2_memory = false;
	struct acct_cgroup *uni = tree_add(t, "/uni", UNI);
	struct acct_cgroup *a = tree_add(t, "/a", UNI | H(ACCT_HIER_MEMORY));
	xmkdir(t->base, "unified/uni");
	xwrite(t->base, "unified/uni/memory.current", "5\n");
	xmkdir(t->base, "memory/a");
	xwrite(t->base, "memory/a/memory.usage_in_bytes", "4096\n");
	tree_sampler(t);
	assert_int_equal(acct_sampler_read_memory(t->s, a, &v), 0);
	assert_int_equal(v, 4096);
	assert_int_equal(acct_sampler_read_memory(t->s, uni, &v), -ENODATA);
	xwrite(t->base, "memory/a/memory.usage_in_bytes", "4096 4096\n");
	assert_int_equal(acct_sampler_read_memory(t->s, a, &v), -EBADMSG);
	xwrite(t->base, "memory/a/memory.usage_in_bytes", "9223372036854775808\n");
	assert_int_equal(acct_sampler_read_memory(t->s, a, &v), -EBADMSG);
	xrm_rf(t->base, "memory/a");
	assert_int_equal(acct_sampler_read_memory(t->s, a, &v), -ENOENT);
	assert_int_equal(v, 4096);
	/* a pass that finds the directory gone leaves it gone, not fileless */
	tree_pass(t, ACCT_PASS_FAST);
	assert_int_equal(acct_sampler_read_memory(t->s, a, &v), -ENOENT);
	/* a file found missing from its directory by a pass is no memory file */
	xmkdir(t->base, "memory/a");
	tree_pass(t, ACCT_PASS_FAST);
	assert_int_equal(acct_sampler_read_memory(t->s, a, &v), -ENODATA);
}

/* A cgroup removed from its CPU tree before acctd read its CPU time
 * (real_sampling's churn beside two CPU hogs: v1 rmdir one hierarchy after
 * another): its cpuacct files are missing with their directory, which is the
 * cgroup leaving that tree, not files this layout lacks. An empty read
 * without its CPU time is not final; with the directory back (the same
 * cgroup as far as the fixture goes), the read is. */
static void test_cpu_tree_gone_not_final(void **state)
{
	struct tree *t = *state;
	t->L.v2_memory = false;
	struct acct_cgroup *a = tree_add(t, "/a", UNI | V1_ALL);
	xmkdir(t->base, "unified/a");
	xwrite(t->base, "unified/a/cgroup.events", "populated 1\nfrozen 0\n");
	xmkdir(t->base, "memory/a");
	xwrite(t->base, "memory/a/memory.usage_in_bytes", "4096\n");
	tree_pass(t, ACCT_PASS_FAST);
	assert_int_equal(value(a, ACCT_Q_CPU_USAGE), INT64_MIN);

	xwrite(t->base, "unified/a/cgroup.events", "populated 0\nfrozen 0\n");
	acct_cgroup_announce_populated_change(a);
	for (int i = 0; i < 4; i++) {
		tree_pass(t, ACCT_PASS_FAST | ACCT_PASS_SLOW);
		usleep(SETTLE_TEST_US);
	}
	assert_int_not_equal(acct_cgroup_final(a), ACCT_FINAL_READ);
	assert_int_equal(value(a, ACCT_Q_CPU_USAGE), INT64_MIN);

	xmkdir(t->base, "cpu,cpuacct/a");
	xwrite(t->base, "cpu,cpuacct/a/cpuacct.usage_percpu", "1000000 2000000\n");
	uint64_t deadline = acct_now_us() + 10 * USEC_PER_SEC;
	while (acct_cgroup_final(a) != ACCT_FINAL_READ) {
		assert_true(acct_now_us() < deadline);
		tree_pass(t, ACCT_PASS_FAST);
	}
	assert_int_equal(value(a, ACCT_Q_CPU_USAGE), 3000);
}

/* The one reader of the memory file, which the pass, acct_sampler_read_memory(),
 * the collector's cross-checks and fresh readings share: one number of at most
 * INT64_MAX, -EBADMSG for anything else (more bytes than a number has too),
 * nothing written on failure. */
static void test_memory_reader(void **state)
{
	struct tree *t = *state;
	int64_t v = -1;
	char path[PATH_MAX];

	assert_int_equal(acct_memory_parse("4096\n", &v), 0);
	assert_int_equal(v, 4096);
	assert_int_equal(acct_memory_parse("9223372036854775807\n", &v), 0);
	assert_int_equal(v, INT64_MAX);
	v = -1;
	assert_int_equal(acct_memory_parse("9223372036854775808\n", &v), -EBADMSG);
	assert_int_equal(acct_memory_parse("max\n", &v), -EBADMSG);
	assert_int_equal(acct_memory_parse("4096 4096\n", &v), -EBADMSG);
	assert_int_equal(acct_memory_parse("", &v), -EBADMSG);
	assert_int_equal(v, -1);

	xmkdir(t->base, "unified/m");
	xwrite(t->base, "unified/m/memory.current", "123\n");
	snprintf(path, sizeof(path), "%s/unified/m/memory.current", t->base);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	assert_true(fd >= 0);
	assert_int_equal(acct_memory_read_fd(fd, &v), 0);
	assert_int_equal(v, 123);
	/* read anew from offset 0 each time, as a cached descriptor is */
	xwrite(t->base, "unified/m/memory.current", "456\n");
	assert_int_equal(acct_memory_read_fd(fd, &v), 0);
	assert_int_equal(v, 456);
	xwrite(t->base, "unified/m/memory.current",
	       "1111111111111111111111111111111111111111111111111111111111111111111\n");
	assert_int_equal(acct_memory_read_fd(fd, &v), -EBADMSG);
	assert_int_equal(v, 456);
	close(fd);
}

/* A cgroup removed between the open and the read of its memory file: the
 * kernel's cgroupfs answers the read with ENODEV (test_enodev, as root),
 * which the memory reader gives as -ENOENT, gone, as an open that finds no
 * file does: fresh reads (acct_sampler_read_memory()) and the collector's
 * cross-checks take the cgroup for removed, not for a failed read. */
static void test_memory_reader_enodev(void **state)
{
	struct tree *t = *state;
	int64_t v = -1;
	char path[PATH_MAX];

	struct acct_cgroup *a = tree_add(t, "/a", UNI);
	xmkdir(t->base, "unified/a");
	xwrite(t->base, "unified/a/memory.current", "123\n");
	snprintf(path, sizeof(path), "%s/unified/a/memory.current", t->base);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	assert_true(fd >= 0);
	inject.read_errno = ENODEV;
	__atomic_store_n(&inject.read_suffix, "/unified/a/memory.current", __ATOMIC_RELEASE);
	assert_int_equal(acct_memory_read_fd(fd, &v), -ENOENT);
	assert_null(inject.read_suffix); /* it did fail */
	assert_int_equal(v, -1);
	close(fd);

	tree_pass(t, ACCT_PASS_FAST);
	assert_no_errors(&t->rep);
	__atomic_store_n(&inject.read_suffix, "/unified/a/memory.current", __ATOMIC_RELEASE);
	assert_int_equal(acct_sampler_read_memory(t->s, a, &v), -ENOENT);
	assert_null(inject.read_suffix);
	assert_int_equal(acct_sampler_read_memory(t->s, a, &v), 0);
	assert_int_equal(v, 123);
}

/* A file larger than the read buffer (16 KiB: cgroup.threads of a big
 * service) is read whole; the workers' CPU time is reported. */
static void test_large_file(void **state)
{
	struct tree *t = *state;
	struct acct_cgroup *a = tree_add(t, "/a", UNI);
	xmkdir(t->base, "unified/a");
	char *big = NULL;
	size_t size = 0;
	FILE *m = open_memstream(&big, &size);
	assert_non_null(m);
	for (int i = 0; i < 3000; i++)
		fprintf(m, "%d\n", 4000000 + i); /* no such threads: counted, not active */
	assert_int_equal(fclose(m), 0);
	assert_true(size > 20000);
	xwrite(t->base, "unified/a/cgroup.threads", big);
	__real_free(big); /* open_memstream's, not counted */
	tree_pass(t, ACCT_PASS_LOAD);
	assert_no_errors(&t->rep);
	struct acct_cgroup **cgs = NULL;
	int n = acct_ledger_snapshot(t->ledger, false, &cgs);
	acct_sampler_aggregate_load(t->s, cgs, (size_t)n, acct_now_us());
	free(cgs);
	assert_int_equal(value(a, ACCT_Q_TASKS), 3000);
	assert_true(t->rep.cpu_seconds > 0);
}

/* A cgroup whose last task left is final once read empty after it was seen
 * populated (and its CPU time stood still: cgroup.events alone here, no CPU
 * file); one without cgroup.events (v1 only) never is. */
static void test_final_read(void **state)
{
	struct tree *t = *state;
	struct acct_cgroup *a = tree_add(t, "/a", UNI);
	struct acct_cgroup *v1 = tree_add(t, "/v1", H(ACCT_HIER_MEMORY));
	xmkdir(t->base, "unified/a");
	xmkdir(t->base, "memory/v1");
	xwrite(t->base, "memory/v1/memory.usage_in_bytes", "0\n");
	xwrite(t->base, "unified/a/cgroup.events", "populated 1\nfrozen 0\n");
	tree_pass(t, ACCT_PASS_FAST);
	assert_int_equal(a->final_read, 0);
	xwrite(t->base, "unified/a/cgroup.events", "populated 0\nfrozen 0\n");
	tree_pass(t, ACCT_PASS_FAST);
	assert_no_errors(&t->rep);
	assert_int_equal(a->final_read, 1);
	acct_ledger_kill(t->ledger, a, acct_now_us());
	acct_ledger_kill(t->ledger, v1, acct_now_us());
	assert_int_equal(acct_cgroup_final(a), ACCT_FINAL_READ);
	assert_int_equal(acct_cgroup_final(v1), ACCT_FINAL_NO_EVENTS);
}

/* The sampler's own API: collect without a pass, a second start while one
 * runs, free(NULL). */
static void test_api(void **state)
{
	struct tree *t = *state;
	struct acct_cgroup *a = tree_add(t, "/a", UNI);
	xmkdir(t->base, "unified/a");
	struct acct_sampler *s = tree_sampler(t);
	assert_int_equal(acct_sampler_collect(s, &t->rep), -EAGAIN);
	assert_false(acct_sampler_busy(s));
	assert_int_equal(acct_sampler_start(s, &a, 1, ACCT_PASS_FAST, acct_now_us()), 0);
	assert_true(acct_sampler_busy(s));
	assert_int_equal(acct_sampler_start(s, &a, 1, ACCT_PASS_FAST, acct_now_us()), -EBUSY);
	struct acct_pass_report rep;
	int r;
	while ((r = acct_sampler_collect(s, &rep)) == -EAGAIN) {
		fd_set set;
		FD_ZERO(&set);
		FD_SET(acct_sampler_fd(s), &set);
		(void)select(acct_sampler_fd(s) + 1, &set, NULL, NULL, NULL);
	}
	assert_int_equal(r, 0);
	assert_int_equal(rep.cgroups, 1);
	assert_false(acct_sampler_busy(s));
	assert_null(acct_sampler_free(NULL));
}

/* The clock ticks that v1's cpuacct.stat counts in are the options'
 * user_hz, where one is given: at 1 tick a second, "user 5" is 5 s. */
static void test_user_hz(void **state)
{
	struct tree *t = *state;
	t->o.user_hz = 1;
	struct acct_cgroup *c = tree_add(t, "/c", UNI | H(ACCT_HIER_CPUACCT));
	xmkdir(t->base, "unified/c");
	xwrite(t->base, "unified/c/cgroup.events", "populated 1\nfrozen 0\n");
	cpuacct_cg(t, "c", 7000000, "user 5\nsystem 2\n");
	tree_pass(t, ACCT_PASS_FAST);
	assert_no_errors(&t->rep);
	assert_int_equal(value(c, ACCT_Q_CPU_USER), 5 * 1000000);
	assert_int_equal(value(c, ACCT_Q_CPU_SYSTEM), 2 * 1000000);
}

/* Options no sampler can run with: -EINVAL, nothing made. */
static void test_new_refuses_options(void **state)
{
	struct tree *t = *state;
	struct acct_sampler *s = NULL;
	struct acct_sampler_options o = t->o;

	o.workers = 0;
	assert_int_equal(acct_sampler_new(&o, t->ledger, &s), -EINVAL);
	o.workers = 257;
	assert_int_equal(acct_sampler_new(&o, t->ledger, &s), -EINVAL);
	o = t->o;
	o.layout = NULL;
	assert_int_equal(acct_sampler_new(&o, t->ledger, &s), -EINVAL);
	assert_null(s);
	o = t->o;
	o.workers = 256;
	assert_int_equal(acct_sampler_new(&o, t->ledger, &s), 0);
	acct_sampler_free(s);
}

/* Without memory: a sampler is not made (-ENOMEM, nothing left allocated),
 * a cgroup whose state cannot be allocated is unreadable for the pass (the
 * others are read), the load's sums are skipped; and a sampler frees all it
 * allocated. */
static void test_allocation_failures(void **state)
{
	struct tree *t = *state;
	struct acct_cgroup *a = tree_add(t, "/a", UNI);
	struct acct_cgroup *b = tree_add(t, "/b", UNI);
	xmkdir(t->base, "unified/a");
	xmkdir(t->base, "unified/b");
	xwrite(t->base, "unified/a/memory.current", "100\n");
	xwrite(t->base, "unified/b/memory.current", "200\n");
	xwrite(t->base, "unified/a/cgroup.threads", "");
	t->o.workers = 2;

	/* the sampler (1st calloc), its workers (2nd), a worker's buffer */
	struct acct_sampler *s = NULL;
	for (unsigned k = 1; k <= 3; k++) {
		inject.counting = true;
		inject.live = 0;
		if (k <= 2)
			inject.calloc_fail_in = k;
		else
			inject.malloc_fail_size = 16384;
		assert_int_equal(acct_sampler_new(&t->o, t->ledger, &s), -ENOMEM);
		inject.counting = false;
		assert_int_equal(inject.calloc_fail_in, 0);
		assert_int_equal(inject.malloc_fail_size, 0);
		assert_int_equal(inject.live, 0);
	}
	inject.counting = true;
	inject.live = 0;
	assert_int_equal(acct_sampler_new(&t->o, t->ledger, &s), 0);
	assert_true(inject.live > 0);
	acct_sampler_free(s);
	inject.counting = false;
	assert_int_equal(inject.live, 0);

	t->o.workers = 1;
	struct acct_cgroup *cgs[] = { a, b };
	tree_sampler(t);
	inject.calloc_fail_in = 1; /* a's state */
	assert_int_equal(acct_sampler_run(t->s, cgs, 2, ACCT_PASS_FAST, acct_now_us(), &t->rep), 0);
	assert_int_equal(inject.calloc_fail_in, 0);
	assert_int_equal(t->rep.errors[ACCT_ERR_UNREADABLE], 1);
	assert_int_equal(t->rep.cgroups_failed, 1);
	assert_int_equal(value(a, ACCT_Q_MEMORY), INT64_MIN);
	assert_int_equal(value(b, ACCT_Q_MEMORY), 200);
	assert_int_equal(acct_sampler_read_memory(t->s, a, &(int64_t){ 0 }), 0);
	inject.calloc_fail_in = 1; /* a's state, for acct_sampler_read_memory() */
	acct_sampler_release(a, t->s);
	assert_int_equal(acct_sampler_read_memory(t->s, a, &(int64_t){ 0 }), -ENOMEM);

	assert_int_equal(acct_sampler_run(t->s, cgs, 2, ACCT_PASS_LOAD, acct_now_us(), &t->rep), 0);
	assert_no_errors(&t->rep);
	inject.calloc_fail_in = 1; /* the sums' arrays */
	acct_sampler_aggregate_load(t->s, cgs, 2, acct_now_us());
	assert_int_equal(inject.calloc_fail_in, 0);
	assert_int_equal(value(a, ACCT_Q_TASKS), INT64_MIN);
	inject.calloc_fail_in = 2;
	acct_sampler_aggregate_load(t->s, cgs, 2, acct_now_us());
	assert_int_equal(inject.calloc_fail_in, 0);
	assert_int_equal(value(a, ACCT_Q_TASKS), INT64_MIN);
	inject.calloc_fail_in = 3; /* the order's counts by depth */
	acct_sampler_aggregate_load(t->s, cgs, 2, acct_now_us());
	assert_int_equal(inject.calloc_fail_in, 0);
	assert_int_equal(value(a, ACCT_Q_TASKS), INT64_MIN);
	acct_sampler_aggregate_load(t->s, cgs, 2, acct_now_us());
	assert_int_equal(value(a, ACCT_Q_TASKS), 0);
}

/* Enough cgroups that a walk takes a while; few enough to make quickly. */
#define NR_CHILDREN 400
#define ROUNDS 40

static struct acct_hierarchies *layout;
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
	snprintf(p, sizeof(p), "%s/gone", base);
	(void)rmdir(p);
	snprintf(p, sizeof(p), "%s/held", base);
	(void)rmdir(p);
	(void)rmdir(base);
}

/* A cgroup removed while the sampler holds its files open: the kernel's
 * cgroupfs answers a read of such a descriptor with ENODEV, which is
 * "vanished" (one count per value: memory.usage_in_bytes, memory.failcnt,
 * memory.oom_control in a fast pass) whether or not the ledger has marked the
 * cgroup dead yet. */
static void test_enodev(void **state)
{
	(void)state;
	char dir[PATH_MAX + 32], rel[PATH_MAX];
	snprintf(dir, sizeof(dir), "%s/gone", base);
	snprintf(rel, sizeof(rel), "/%s/gone", strrchr(base, '/') + 1);
	assert_int_equal(mkdir(dir, 0755), 0);

	struct acct_domain *domain = NULL;
	struct acct_ledger *ledger = NULL;
	struct acct_sampler *s = NULL;
	struct acct_cgroup *cg = NULL;
	struct acct_pass_report rep;
	struct acct_ledger_budgets b = { 0 };
	assert_int_equal(acct_domain_new(NULL, &domain), 0);
	assert_int_equal(acct_ledger_new(domain, &b, &ledger), 0);
	struct acct_cgroup_id id = { .path = rel, .depth = 2, .hierarchies = 1u << ACCT_HIER_MEMORY };
	assert_int_equal(acct_ledger_add(ledger, &id, acct_now_us(), &cg), 0);
	struct acct_sampler_options o = { .layout = layout, .workers = 1, .nr_nodes = 1, .kernel_bounds = true };
	assert_int_equal(acct_sampler_new(&o, ledger, &s), 0);

	/* twice: a descriptor is kept from a role's second read in a row on
	 * (sampler-files.c, "Descriptors that pay") */
	for (int i = 0; i < 2; i++) {
		assert_int_equal(acct_sampler_run(s, &cg, 1, ACCT_PASS_FAST, acct_now_us(), &rep), 0);
		for (int e = 0; e < _ACCT_ERR_MAX; e++)
			assert_int_equal(rep.errors[e], 0);
		assert_int_equal(rep.open_per_read, 0);
	}
	struct acct_reading rd;
	assert_true(acct_cgroup_get(cg, ACCT_Q_MEMORY, true, &rd));

	assert_int_equal(rmdir(dir), 0);
	assert_int_equal(acct_sampler_run(s, &cg, 1, ACCT_PASS_FAST, acct_now_us(), &rep), 0);
	assert_int_equal(rep.errors[ACCT_ERR_VANISHED], 3);
	assert_int_equal(rep.errors[ACCT_ERR_GARBAGE], 0);
	assert_int_equal(rep.errors[ACCT_ERR_UNREADABLE], 0);
	assert_int_equal(rep.cgroups_failed, 1);
	assert_false(acct_cgroup_is_dead(cg));

	acct_sampler_release(cg, s);
	acct_sampler_free(s);
	acct_ledger_free(ledger);
	acct_domain_free(domain);
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

/* Unchanged records (sampler-bpf.c): a populated cgroup whose memory stands
 * still is served from its records pass after pass with its values untouched
 * and its age renewed, counted as unchanged once its motion has decayed to
 * 0; when its memory grows, the next pass sets the new value (the kernel's,
 * within the record's bound) and is not counted as unchanged. */
static void test_unchanged_records(void **state)
{
	(void)state;
	char dir[PATH_MAX + 32], rel[PATH_MAX], procs[PATH_MAX + 64], cur[PATH_MAX + 64];
	snprintf(dir, sizeof(dir), "%s/held", base);
	snprintf(rel, sizeof(rel), "/%s/held", strrchr(base, '/') + 1);
	snprintf(procs, sizeof(procs), "%s/cgroup.procs", dir);
	snprintf(cur, sizeof(cur), "%s/memory.usage_in_bytes", dir);
	assert_int_equal(mkdir(dir, 0755), 0);

	/* A child that sleeps in the cgroup and, told to, touches 16 MiB more. */
	int go[2], done[2];
	assert_int_equal(pipe(go), 0);
	assert_int_equal(pipe(done), 0);
	pid_t child = fork();
	assert_true(child >= 0);
	if (child == 0) {
		char c;
		close(go[1]); /* the test's end: EOF here if it fails */
		close(done[0]);
		if (read(go[0], &c, 1) != 1)
			_exit(1);
		size_t n = 16u << 20;
		volatile char *m = malloc(n); /* volatile: the stores are the point */
		if (!m)
			_exit(1);
		for (size_t i = 0; i < n; i += 4096)
			m[i] = 1;
		if (write(done[1], "d", 1) != 1)
			_exit(1);
		(void)!read(go[0], &c, 1);
		_exit(m[0] == 1 ? 0 : 1);
	}
	FILE *f = fopen(procs, "w");
	assert_non_null(f);
	fprintf(f, "%d\n", (int)child);
	assert_int_equal(fclose(f), 0);

	struct acct_domain *domain = NULL;
	struct acct_ledger *ledger = NULL;
	struct acct_sampler *s = NULL;
	struct acct_cgroup *cg = NULL;
	struct acct_pass_report rep;
	struct acct_ledger_budgets b = { 0 };
	struct stat st;
	assert_int_equal(stat(dir, &st), 0);
	assert_int_equal(acct_domain_new(NULL, &domain), 0);
	assert_int_equal(acct_ledger_new(domain, &b, &ledger), 0);
	struct acct_cgroup_id id = { .path = rel, .depth = 2, .hierarchies = 1u << ACCT_HIER_MEMORY };
	id.inode[ACCT_HIER_MEMORY] = st.st_ino;
	assert_int_equal(acct_ledger_add(ledger, &id, acct_now_us(), &cg), 0);
	struct acct_sampler_options o = {
		.layout = layout, .workers = 1, .collector = coll, .nr_nodes = 1, .kernel_bounds = true,
	};
	assert_int_equal(acct_sampler_new(&o, ledger, &s), 0);

	/* Still: unchanged from the third pass on (the second makes the
	 * motion known, 0), at the latest after a few more (memory the move
	 * itself charged may settle first). */
	uint64_t unchanged = 0, sampled = 0;
	for (int pass = 0; pass < 50 && unchanged < 3; pass++) {
		uint64_t now = acct_now_us();
		assert_int_equal(acct_sampler_run(s, &cg, 1, ACCT_PASS_FAST, now, &rep), 0);
		assert_int_equal(rep.bpf_cgroups, 1);
		assert_int_equal(rep.cgroups_failed, 0);
		unchanged = rep.bpf_unchanged ? unchanged + 1 : 0;
		sampled = acct_cgroup_quantity_sampled(cg, ACCT_Q_MEMORY);
		assert_int_equal(sampled, now); /* the age is this pass's, unchanged or not */
		usleep(20000);
	}
	assert_int_equal(unchanged, 3);
	struct acct_reading before;
	assert_true(acct_cgroup_get(cg, ACCT_Q_MEMORY, true, &before));

	/* Moved: the new value, not counted unchanged. */
	char c;
	assert_int_equal(write(go[1], "g", 1), 1);
	assert_int_equal(read(done[0], &c, 1), 1);
	assert_int_equal(acct_sampler_run(s, &cg, 1, ACCT_PASS_FAST, acct_now_us(), &rep), 0);
	assert_int_equal(rep.bpf_cgroups, 1);
	assert_int_equal(rep.bpf_unchanged, 0);
	struct acct_reading after;
	assert_true(acct_cgroup_get(cg, ACCT_Q_MEMORY, true, &after));
	int64_t file = 0;
	f = fopen(cur, "r");
	assert_non_null(f);
	assert_int_equal(fscanf(f, "%" SCNd64, &file), 1);
	fclose(f);
	assert_true(after.value >= before.value + (12 << 20));
	assert_true(after.value <= file + (int64_t)after.bound && file <= after.value + (int64_t)after.bound);

	assert_int_equal(write(go[1], "q", 1), 1);
	int status;
	assert_int_equal(waitpid(child, &status, 0), child);
	assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	close(go[0]);
	close(go[1]);
	close(done[0]);
	close(done[1]);
	acct_sampler_release(cg, s);
	acct_sampler_free(s);
	acct_ledger_free(ledger);
	acct_domain_free(domain);
	assert_int_equal(rmdir(dir), 0);
}

/* Why the real-cgroup tests cannot run here, or NULL. */
static const char *missing_cgroups(void)
{
	if (geteuid() != 0)
		return "not root: cannot make cgroups";
	if (acct_hierarchies_detect(NULL, &layout) < 0 || !layout->mount[ACCT_HIER_MEMORY])
		return "no v1 memory hierarchy here";
	mem_root = layout->mount[ACCT_HIER_MEMORY];
	return NULL;
}

/* Why the BPF collector's tests cannot run here, or NULL. */
static const char *missing_bpf(void)
{
	static char why[512];
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

/* Remove what runs of this test that were killed (SIGKILL at a time limit, a
 * crash: no atexit) left behind: sampler-tests-PID of a PID that no longer
 * runs. A cgroup still in use is not removed (rmdir fails). */
static void remove_stale(void)
{
	DIR *d = opendir(mem_root);
	struct dirent *de;
	while (d && (de = readdir(d))) {
		int pid;
		char end;
		if (sscanf(de->d_name, "sampler-tests-%d%c", &pid, &end) != 1 || pid <= 0 ||
		    kill(pid, 0) == 0 || errno != ESRCH)
			continue;
		char p[PATH_MAX + 300];
		for (int i = 0; i < NR_CHILDREN; i++) {
			snprintf(p, sizeof(p), "%s/%s/c%d", mem_root, de->d_name, i);
			(void)rmdir(p);
		}
		static const char *const others[] = { "gone", "held" }; /* test_enodev's, test_unchanged_records' */
		for (size_t i = 0; i < ELEMENTSOF(others); i++) {
			snprintf(p, sizeof(p), "%s/%s/%s", mem_root, de->d_name, others[i]);
			(void)rmdir(p);
		}
		snprintf(p, sizeof(p), "%s/%s", mem_root, de->d_name);
		(void)rmdir(p);
	}
	if (d)
		closedir(d);
}

static int run_real(void)
{
	const char *why = missing_cgroups();
	if (why) {
		printf("skipping the real-cgroup tests: %s\n", why);
		return 0;
	}
	remove_stale();
	owner = getpid();
	snprintf(base, sizeof(base), "%s/sampler-tests-%d", mem_root, (int)owner);
	atexit(cleanup);
	if (mkdir(base, 0755) < 0) {
		printf("cannot make %s: %s\n", base, strerror(errno));
		return 1;
	}
	const struct CMUnitTest cgroup_tests[] = {
		cmocka_unit_test(test_enodev),
	};
	int failed = cmocka_run_group_tests_name("sampler-cgroups", cgroup_tests, NULL, NULL);

	why = missing_bpf();
	if (why) {
		printf("skipping the BPF collector's tests: %s\n", why);
		return failed;
	}
	char p[PATH_MAX + 32];
	for (int i = 0; i < NR_CHILDREN; i++) {
		snprintf(p, sizeof(p), "%s/c%d", base, i);
		if (mkdir(p, 0755) < 0) {
			printf("cannot make %s: %s\n", p, strerror(errno));
			return failed + 1;
		}
	}
	const struct CMUnitTest bpf_tests[] = {
		cmocka_unit_test_setup_teardown(test_stop_during_walk, setup, teardown),
		cmocka_unit_test_setup_teardown(test_passes_complete, setup, teardown),
		cmocka_unit_test(test_unchanged_records),
	};
	return failed + cmocka_run_group_tests_name("sampler-bpf", bpf_tests, NULL, NULL);
}

/* A cross-check proves a mismatch only where the files stood still across
 * it (sampler.h, acct_bracket_judge()): a value outside a moving bracket may
 * be a true reading of a dip between the two file readings. */
static void test_bracket_judge(void **state)
{
	(void)state;
	/* within, either order, ends included */
	assert_int_equal(acct_bracket_judge(5, 1, 9), ACCT_BRACKET_AGREE);
	assert_int_equal(acct_bracket_judge(5, 9, 1), ACCT_BRACKET_AGREE);
	assert_int_equal(acct_bracket_judge(1, 1, 9), ACCT_BRACKET_AGREE);
	assert_int_equal(acct_bracket_judge(9, 1, 9), ACCT_BRACKET_AGREE);
	assert_int_equal(acct_bracket_judge(7, 7, 7), ACCT_BRACKET_AGREE);
	/* standing still: anything else is wrong */
	assert_int_equal(acct_bracket_judge(6, 7, 7), ACCT_BRACKET_MISMATCH);
	assert_int_equal(acct_bracket_judge(8, 7, 7), ACCT_BRACKET_MISMATCH);
	assert_int_equal(acct_bracket_judge(0, 4096, 4096), ACCT_BRACKET_MISMATCH);
	/* moving: outside proves nothing, above or below */
	assert_int_equal(acct_bracket_judge(212992, 475136, 524288), ACCT_BRACKET_INCONCLUSIVE);
	assert_int_equal(acct_bracket_judge(10, 1, 9), ACCT_BRACKET_INCONCLUSIVE);
	assert_int_equal(acct_bracket_judge(0, 9, 1), ACCT_BRACKET_INCONCLUSIVE);
}

int main(void)
{
	const struct CMUnitTest tree_tests[] = {
		cmocka_unit_test_setup_teardown(test_files_v2, tree_setup, tree_teardown),
		cmocka_unit_test_setup_teardown(test_files_v1, tree_setup, tree_teardown),
		cmocka_unit_test_setup_teardown(test_memstat_inactive_file, tree_setup, tree_teardown),
		cmocka_unit_test_setup_teardown(test_numa_v2, tree_setup, tree_teardown),
		cmocka_unit_test_setup_teardown(test_numa_v1, tree_setup, tree_teardown),
		cmocka_unit_test_setup_teardown(test_files_root, tree_setup, tree_teardown),
		cmocka_unit_test_setup_teardown(test_memory_events_v2, tree_setup, tree_teardown),
		cmocka_unit_test_setup_teardown(test_working_set_needs_inactive, tree_setup, tree_teardown),
		cmocka_unit_test_setup_teardown(test_root_memory_edges, tree_setup, tree_teardown),
		cmocka_unit_test_setup_teardown(test_name_control_byte, tree_setup, tree_teardown),
		cmocka_unit_test_setup_teardown(test_errors, tree_setup, tree_teardown),
		cmocka_unit_test_setup_teardown(test_vanished, tree_setup, tree_teardown),
		cmocka_unit_test_setup_teardown(test_recreated_path, tree_setup, tree_teardown),
		cmocka_unit_test_setup_teardown(test_invariant_and_source_change, tree_setup, tree_teardown),
		cmocka_unit_test_setup_teardown(test_removed_tree_by_tree_keeps_sources, tree_setup, tree_teardown),
		cmocka_unit_test_setup_teardown(test_left_cpu_tree_not_final, tree_setup, tree_teardown),
		cmocka_unit_test_setup_teardown(test_empty_skipped, tree_setup, tree_teardown),
		cmocka_unit_test_setup_teardown(test_pruning, tree_setup, tree_teardown),
		cmocka_unit_test_setup_teardown(test_cpu_rate_lazy, tree_setup, tree_teardown),
		cmocka_unit_test_setup_teardown(test_cpu_drift_and_source, tree_setup, tree_teardown),
		cmocka_unit_test_setup_teardown(test_cpu_rate_same_moment, tree_setup, tree_teardown),
		cmocka_unit_test_setup_teardown(test_rate_between_reads, tree_setup, tree_teardown),
		cmocka_unit_test_setup_teardown(test_percpu_cpus, tree_setup, tree_teardown),
		cmocka_unit_test_setup_teardown(test_descriptors_that_pay, tree_setup, tree_teardown),
		cmocka_unit_test_setup_teardown(test_failed_descriptor_reopened, tree_setup, tree_teardown),
		cmocka_unit_test_setup_teardown(test_descriptor_zero, tree_setup, tree_teardown),
		cmocka_unit_test_setup_teardown(test_path_too_long, tree_setup, tree_teardown),
		cmocka_unit_test_setup_teardown(test_pruning_ancestors, tree_setup, tree_teardown),
		cmocka_unit_test_setup_teardown(test_pruning_refresh, tree_setup, tree_teardown),
		cmocka_unit_test_setup_teardown(test_pruning_other_tree, tree_setup, tree_teardown),
		cmocka_unit_test_setup_teardown(test_pruning_after_failed_read, tree_setup, tree_teardown),
		cmocka_unit_test_setup_teardown(test_pruning_without_memory, tree_setup, tree_teardown),
		cmocka_unit_test_setup_teardown(test_pruning_long_path, tree_setup, tree_teardown),
		cmocka_unit_test_setup_teardown(test_pruning_own_path, tree_setup, tree_teardown),
		cmocka_unit_test_setup_teardown(test_quiet_needs_memory_record, tree_setup, tree_teardown),
		cmocka_unit_test_setup_teardown(test_slow_refresh, tree_setup, tree_teardown),
		cmocka_unit_test_setup_teardown(test_slow_refresh_limits, tree_setup, tree_teardown),
		cmocka_unit_test_setup_teardown(test_memory_motion, tree_setup, tree_teardown),
		cmocka_unit_test_setup_teardown(test_parts_without_memory, tree_setup, tree_teardown),
		cmocka_unit_test_setup_teardown(test_slow_without_memory_in_use, tree_setup, tree_teardown),
		cmocka_unit_test_setup_teardown(test_bandwidth_not_pruned, tree_setup, tree_teardown),
		cmocka_unit_test_setup_teardown(test_source_change_without_throttling, tree_setup, tree_teardown),
		cmocka_unit_test_setup_teardown(test_slow_due, tree_setup, tree_teardown),
		cmocka_unit_test_setup_teardown(test_psi_due, tree_setup, tree_teardown),
		cmocka_unit_test_setup_teardown(test_psi_zero_averages, tree_setup, tree_teardown),
		cmocka_unit_test_setup_teardown(test_psi_failed_read, tree_setup, tree_teardown),
		cmocka_unit_test_setup_teardown(test_blkio_v1, tree_setup, tree_teardown),
		cmocka_unit_test_setup_teardown(test_io_rate_same_moment, tree_setup, tree_teardown),
		cmocka_unit_test_setup_teardown(test_io_device_names, tree_setup, tree_teardown),
		cmocka_unit_test_setup_teardown(test_load, tree_setup, tree_teardown),
		cmocka_unit_test_setup_teardown(test_load_quiet, tree_setup, tree_teardown),
		cmocka_unit_test_setup_teardown(test_load_stale_buffer, tree_setup, tree_teardown),
		cmocka_unit_test_setup_teardown(test_read_errors, tree_setup, tree_teardown),
		cmocka_unit_test_setup_teardown(test_emfile, tree_setup, tree_teardown),
		cmocka_unit_test_setup_teardown(test_read_memory, tree_setup, tree_teardown),
		cmocka_unit_test_setup_teardown(test_cpu_tree_gone_not_final, tree_setup, tree_teardown),
		cmocka_unit_test_setup_teardown(test_memory_reader, tree_setup, tree_teardown),
		cmocka_unit_test_setup_teardown(test_memory_reader_enodev, tree_setup, tree_teardown),
		cmocka_unit_test_setup_teardown(test_large_file, tree_setup, tree_teardown),
		cmocka_unit_test_setup_teardown(test_final_read, tree_setup, tree_teardown),
		cmocka_unit_test_setup_teardown(test_api, tree_setup, tree_teardown),
		cmocka_unit_test_setup_teardown(test_user_hz, tree_setup, tree_teardown),
		cmocka_unit_test_setup_teardown(test_new_refuses_options, tree_setup, tree_teardown),
		cmocka_unit_test_setup_teardown(test_allocation_failures, tree_setup, tree_teardown),
		cmocka_unit_test(test_bracket_judge),
		cmocka_unit_test(test_raise_nofile),
	};
	int failed = cmocka_run_group_tests_name("sampler-trees", tree_tests, NULL, NULL);
	failed += run_real();
	cleanup();
	acct_bpf_collector_free(coll);
	acct_hierarchies_free(layout);
	return failed;
}
