/* test-sampler-bpf.c - the sampler's BPF path (lib/core/sampler-bpf.c)
 * without the kernel: records made by hand, served by a stand-in collector,
 * and what the ledger then holds.
 *
 * The file is long because every case shares the stand-in collector and
 * its fixture (records by hand, a temporary tree), which a split would
 * repeat; the cases read top to bottom as the sampler's BPF path does.
 *
 * The collector's calls that the sampler makes are wrapped (ld --wrap,
 * tests/meson.build): each walk copies the test's records of a hierarchy into
 * the sampler's snapshot, as acct_bpf_collector_read() lays them out (the
 * records' bytes, and an index sorted by id), and a read of one cgroup
 * answers its record, or -EPERM (a pinned iterator) when the test says so.
 * The cgroups live on a temporary tree (tests/test-tree.c) whose files the
 * sampler reads for the rest (CPU, I/O) and the cross-checks read around a
 * walk (memory.current, memory.stat). What is checked: memory and its
 * limits from the page counters (pages to bytes), the page counters' bound
 * by the record's descendants (acct_memcg_memory_bound()), memory.stat keys
 * through the collector's index map with the stat bound, the working set,
 * unchanged records renewing ages only, populated as the OR of the records
 * of every hierarchy, the events, and the cross-check: a mismatch confirmed
 * ACCT_BPF_MISMATCH_PASSES passes in a row moves memory back to files.
 *
 * The BPF task walk's read is wrapped too (lib/core/sample-load.c): a LOAD
 * pass gets the test's thread records, and what is checked is each cgroup's
 * threads and active ones from them, the root's from every thread, the
 * sampler's own threads never active, the walk's cross-check against the
 * thread lists and its fallback to files, and the load averages' periods.
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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
#include "task-walk.h"
#include "test-tree.h"
#include "util.h"

#define PAGE 4096
#define H(h) (1u << (h))
#define UNI H(ACCT_HIER_UNIFIED)
#define MEM H(ACCT_HIER_MEMORY)

/* ---- the stand-in collector ------------------------------------------------ */

#define NR_STATE 8
struct rec {
	struct acct_bpf_record r;
	long long state[NR_STATE];
};

static struct {
	uint32_t serves;                  /* hierarchies walked */
	struct rec recs[_ACCT_HIER_MAX][8];
	size_t n[_ACCT_HIER_MAX];
	bool pinned;                      /* read_one answers -EPERM */
	bool gone;                        /* read_one answers -ENOENT (and writes garbage) */
	uint32_t e2big;                   /* hierarchies whose walk answers -E2BIG */
	uint32_t eio;                     /* hierarchies whose walk fails (-EIO) */
	unsigned walks[_ACCT_HIER_MAX];
	uint64_t ino[_ACCT_HIER_MAX][27]; /* directory inodes of "/a".."/z" and "/" where add() made one */
} fake;

/* The letter that names cgroup "/x" in the stand-ins' tables: x; the root's
 * is the one after 'z'. */
static char letter(const char *path)
{
	return path[1] ? path[1] : 'z' + 1;
}

/* The id of cgroup "/x" in hierarchy h, in the ledger and in the records:
 * the inode of its directory where the test's tree has one (the sampler
 * checks that a file opened by path is the record's cgroup's), else
 * 100 + (x - 'a'). */
static uint64_t id_of(enum acct_hierarchy h, char x)
{
	return fake.ino[h][x - 'a'] ? fake.ino[h][x - 'a'] : 100 + (uint64_t)(x - 'a');
}

/* The allocation of one of a walk alone's tables fails when armed: the
 * next reallocarray() of elements of this size (its records, its table of
 * outcomes); 0: none. */
static size_t fail_table_of;

void *__real_reallocarray(void *p, size_t n, size_t size);
void *__wrap_reallocarray(void *p, size_t n, size_t size);
void *__wrap_reallocarray(void *p, size_t n, size_t size)
{
	if (fail_table_of && size == fail_table_of) {
		fail_table_of = 0;
		errno = ENOMEM;
		return NULL;
	}
	return __real_reallocarray(p, n, size);
}

/* A read held back (test_steady_later()): a pread64() of the file whose
 * path is hold_path waits until one of release_path has been made (up to
 * 30 s, so that a broken test fails instead of hanging); the release then
 * waits 50 ms more, so that the held reader most likely goes on first
 * (nothing asserted depends on it). Empty: no hold. */
static struct {
	char hold_path[256], release_path[256];
	bool released;
} held;

ssize_t __real_pread64(int fd, void *buf, size_t count, off_t offset);
ssize_t __wrap_pread64(int fd, void *buf, size_t count, off_t offset);
ssize_t __wrap_pread64(int fd, void *buf, size_t count, off_t offset)
{
	char link[64], path[256];
	snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
	ssize_t n = held.hold_path[0] ? readlink(link, path, sizeof(path) - 1) : -1;
	if (n > 0) {
		path[n] = 0;
		if (strcmp(path, held.hold_path) == 0)
			for (int i = 0; i < 30000 && !__atomic_load_n(&held.released, __ATOMIC_ACQUIRE); i++)
				usleep(1000);
		else if (strcmp(path, held.release_path) == 0) {
			__atomic_store_n(&held.released, true, __ATOMIC_RELEASE);
			usleep(50000);
		}
	}
	return __real_pread64(fd, buf, count, offset);
}

static int dummy_collector;
#define COLL ((struct acct_bpf_collector *)&dummy_collector)

bool __wrap_acct_bpf_collector_serves(const struct acct_bpf_collector *c, enum acct_hierarchy h);
bool __wrap_acct_bpf_collector_serves(const struct acct_bpf_collector *c, enum acct_hierarchy h)
{
	assert_ptr_equal(c, COLL);
	return (unsigned)h < _ACCT_HIER_MAX && (fake.serves & H(h));
}

bool __wrap_acct_bpf_collector_any(const struct acct_bpf_collector *c);
bool __wrap_acct_bpf_collector_any(const struct acct_bpf_collector *c)
{
	return c == COLL && fake.serves;
}

unsigned __wrap_acct_bpf_collector_node_items(const struct acct_bpf_collector *c, enum acct_hierarchy h,
					      uint32_t *units);
unsigned __wrap_acct_bpf_collector_node_items(const struct acct_bpf_collector *c, enum acct_hierarchy h,
					      uint32_t *units)
{
	(void)c, (void)h, (void)units;
	return 0;
}

/* The flags a lean record keeps (cgroup-iter.bpf.c, ACCT_BPF_LEAN_COUNTERS:
 * the page counters only). */
#define LEAN_FLAGS (ACCT_BPF_F_POPULATED | ACCT_BPF_F_MEMCG | ACCT_BPF_F_HIGH)

static void make_lean(struct acct_bpf_record *r)
{
	r->flags &= LEAN_FLAGS;
	r->nr_state = 0;
	r->size = sizeof(*r);
}

static int fill(enum acct_hierarchy h, struct acct_bpf_snapshot *snap, bool lean)
{
	size_t n = fake.n[h];
	fake.walks[h]++;
	if (fake.e2big & H(h))
		return -E2BIG;
	if (fake.eio & H(h))
		return -EIO;
	acct_bpf_snapshot_clear(snap);
	snap->data = calloc(n ? n : 1, sizeof(struct rec));
	snap->rec = calloc(n ? n : 1, sizeof(*snap->rec));
	assert_non_null(snap->data);
	assert_non_null(snap->rec);
	memcpy(snap->data, fake.recs[h], n * sizeof(struct rec));
	snap->data_size = n * sizeof(struct rec);
	/* the index sorted by id: the test adds records in increasing id */
	for (size_t i = 0; i < n; i++) {
		snap->rec[i] = (const struct acct_bpf_record *)(snap->data + i * sizeof(struct rec));
		if (lean)
			make_lean((struct acct_bpf_record *)(snap->data + i * sizeof(struct rec)));
		if (i)
			assert_true(snap->rec[i - 1]->id < snap->rec[i]->id);
	}
	snap->n = snap->cap = n;
	return (int)n;
}

int __wrap_acct_bpf_collector_read(struct acct_bpf_collector *c, enum acct_hierarchy h, struct acct_bpf_snapshot *snap);
int __wrap_acct_bpf_collector_read(struct acct_bpf_collector *c, enum acct_hierarchy h, struct acct_bpf_snapshot *snap)
{
	(void)c;
	return fill(h, snap, false);
}

int __wrap_acct_bpf_collector_read_lean(struct acct_bpf_collector *c, enum acct_hierarchy h,
					struct acct_bpf_snapshot *snap);
int __wrap_acct_bpf_collector_read_lean(struct acct_bpf_collector *c, enum acct_hierarchy h,
					struct acct_bpf_snapshot *snap)
{
	(void)c;
	return fill(h, snap, true);
}

int __wrap_acct_bpf_collector_read_no_stats(struct acct_bpf_collector *c, enum acct_hierarchy h,
					    struct acct_bpf_snapshot *snap);
int __wrap_acct_bpf_collector_read_no_stats(struct acct_bpf_collector *c, enum acct_hierarchy h,
					    struct acct_bpf_snapshot *snap)
{
	(void)c;
	return fill(h, snap, false); /* the stand-in's records keep their stats */
}

/* One cgroup's record by its directory: the test's cgroups are one letter,
 * "/a" is the record of id_of(h, 'a') (see add()). */
int __wrap_acct_bpf_collector_read_one_lean(const struct acct_bpf_collector *c, enum acct_hierarchy h, const char *dir,
					    struct acct_bpf_record *ret);
int __wrap_acct_bpf_collector_read_one_lean(const struct acct_bpf_collector *c, enum acct_hierarchy h, const char *dir,
					    struct acct_bpf_record *ret)
{
	(void)c;
	if (fake.pinned)
		return -EPERM;
	if (fake.gone) {
		memset(ret, 0x5a, sizeof(*ret)); /* what a caller must not use */
		return -ENOENT;
	}
	size_t len = strlen(dir);
	while (len && dir[len - 1] == '/') /* the sampler names the directory "PATH/" */
		len--;
	assert_true(len >= 2 && dir[len - 2] == '/');
	uint64_t id = id_of(h, dir[len - 1]);
	for (size_t i = 0; i < fake.n[h]; i++)
		if (fake.recs[h][i].r.id == id) {
			*ret = fake.recs[h][i].r;
			make_lean(ret);
			return 0;
		}
	return -ENOENT;
}

/* ---- the stand-in task walk ------------------------------------------------- *
 *
 * acct_task_walk_read() wrapped too: a walk answers the test's thread records
 * (task()), each cgroup id kept only in the slots the sampler asked for, as
 * the kernel's walk fills them; or the error the test set. */

static int dummy_walk;
#define WALK ((struct acct_task_walk *)&dummy_walk)
/* A record's tid that the stand-in replaces by the reader's: the sampler's
 * worker 0, which walks. */
#define WORKER_TID 1u

static struct {
	struct acct_task_record recs[16], out[16];
	size_t n;
	int error;      /* the walk fails so (negative errno); 0: it answers recs */
	unsigned reads;
	uint32_t slots; /* the last read's */
	/* A reallocation of the sums' table (24 bytes an entry, struct
	 * task_count) fails when armed. */
	bool fail_table;
} tw;

ssize_t __wrap_acct_task_walk_read(struct acct_task_walk *w, uint32_t slots, const struct acct_task_record **ret);
ssize_t __wrap_acct_task_walk_read(struct acct_task_walk *w, uint32_t slots, const struct acct_task_record **ret)
{
	assert_ptr_equal(w, WALK);
	tw.reads++;
	tw.slots = slots;
	if (tw.error)
		return tw.error;
	for (size_t i = 0; i < tw.n; i++) {
		tw.out[i] = tw.recs[i];
		if (tw.out[i].tid == WORKER_TID)
			tw.out[i].tid = (unsigned)gettid();
		for (int k = 0; k < ACCT_TASK_SLOTS; k++)
			if (!(slots & (1u << k)))
				tw.out[i].cgroup[k] = 0;
	}
	*ret = tw.out;
	return (ssize_t)tw.n;
}

void *__real_realloc(void *p, size_t size);
void *__wrap_realloc(void *p, size_t size);
void *__wrap_realloc(void *p, size_t size)
{
	if (tw.fail_table && size % 24 == 0 && size < 24 * ELEMENTSOF(tw.recs) * ACCT_TASK_SLOTS) {
		tw.fail_table = false;
		errno = ENOMEM;
		return NULL;
	}
	return __real_realloc(p, size);
}

/* A thread (tid) in cgroup `path` of hierarchy h, with the task record's
 * flags; the caller sets its cgroups in other hierarchies. */
static struct acct_task_record *task(unsigned tid, const char *path, enum acct_hierarchy h, uint32_t flags)
{
	assert_true(tw.n < ELEMENTSOF(tw.recs));
	struct acct_task_record *r = &tw.recs[tw.n++];
	*r = (struct acct_task_record){ .tid = tid, .flags = flags };
	r->cgroup[h] = id_of(h, letter(path));
	return r;
}

/* ---- the fixture ------------------------------------------------------------ */

struct tree {
	char *base;
	struct acct_hierarchies L;
	struct acct_domain *domain;
	struct acct_ledger *ledger;
	struct acct_sampler *s;
	struct acct_sampler_options o;
	struct acct_bpf_stat_map map;
	struct acct_pass_report rep;
};

/* The stat map: memory.stat's key, the record's slot, bytes per unit. */
static const struct {
	const char *key;
	uint16_t index;
	uint32_t unit;
} map_v2[] = {
	{ "inactive_file", 0, PAGE }, { "sock", 1, 1 }, { "anon", 2, PAGE }, { "file", 3, PAGE },
	{ "kernel_stack", 4, 1024 }, { "pagetables", 5, PAGE }, { "slab_reclaimable", 6, PAGE },
	{ "slab_unreclaimable", 7, PAGE },
};

static int setup(void **state)
{
	struct tree *t = calloc(1, sizeof(*t));
	assert_non_null(t);
	memset(&fake, 0, sizeof(fake));
	memset(&tw, 0, sizeof(tw));
	t->base = make_tmpdir("test-sampler-bpf");
	make_hybrid(t->base);
	t->L.mode = ACCT_CGROUP_HYBRID;
	t->L.root = t->base;
	t->L.mount[ACCT_HIER_UNIFIED] = xjoin(t->base, "unified");
	t->L.mount[ACCT_HIER_MEMORY] = xjoin(t->base, "memory");
	t->L.mount[ACCT_HIER_CPUACCT] = xjoin(t->base, "cpu,cpuacct");
	t->L.mount[ACCT_HIER_CPU] = xjoin(t->base, "cpu");
	t->L.v2_memory = true;
	/* a budget of 4 MiB: a record's stats within it are taken */
	struct acct_ledger_budgets b = { .bytes = 4 << 20 };
	assert_int_equal(acct_domain_new(NULL, &t->domain), 0);
	assert_int_equal(acct_ledger_new(t->domain, &b, &t->ledger), 0);
	for (size_t i = 0; i < ELEMENTSOF(map_v2); i++) {
		snprintf(t->map.e[i].key, sizeof(t->map.e[i].key), "%s", map_v2[i].key);
		t->map.e[i].index = map_v2[i].index;
		t->map.e[i].unit = map_v2[i].unit;
	}
	t->map.n = ELEMENTSOF(map_v2);
	fake.serves = UNI;
	t->o = (struct acct_sampler_options){
		.layout = &t->L, .workers = 1, .user_hz = 100, .page_size = PAGE, .nr_nodes = 1,
		.collector = COLL, .stat_map = &t->map, .kernel_bounds = true,
		/* 4 stock slots: the bound depends on the descendants */
		.batching = { .nr_cpus = 4, .charge_batch = 64, .stock_slots = 4, .page_size = PAGE },
	};
	*state = t;
	return 0;
}

static struct acct_sampler *sampler(struct tree *t)
{
	if (!t->s)
		assert_int_equal(acct_sampler_new(&t->o, t->ledger, &t->s), 0);
	return t->s;
}

static int teardown(void **state)
{
	struct tree *t = *state;
	struct acct_cgroup **all = NULL;
	int n = acct_ledger_snapshot(t->ledger, true, &all);
	for (int i = 0; i < n; i++)
		acct_sampler_release(all[i], t->s);
	free(all);
	acct_sampler_free(t->s);
	acct_ledger_free(t->ledger);
	acct_domain_free(t->domain);
	rm_rf(t->base);
	free(t->base);
	for (int h = 0; h < _ACCT_HIER_MAX; h++)
		free(t->L.mount[h]);
	free(t);
	return 0;
}

/* Cgroup "/x" (one letter) or the root "/" in the hierarchies given, its
 * directory in each of their trees that the test has (unified, memory; the
 * root's is the tree's), and its inode in each id_of(h, letter(path)). */
static struct acct_cgroup *add(struct tree *t, const char *path, uint32_t hierarchies)
{
	struct acct_cgroup *cg = NULL;
	bool root = strcmp(path, "/") == 0;
	struct acct_cgroup_id id = { .path = path, .depth = root ? 0 : 1, .hierarchies = hierarchies };
	for (int h = 0; h < _ACCT_HIER_MAX; h++)
		if (hierarchies & H(h)) {
			char rel[64];
			snprintf(rel, sizeof(rel), "%s%s", h == ACCT_HIER_UNIFIED ? "unified" : "memory", root ? "" : path);
			if (h == ACCT_HIER_UNIFIED || h == ACCT_HIER_MEMORY) {
				if (!root)
					xmkdir(t->base, rel);
				fake.ino[h][letter(path) - 'a'] = xinode(t->base, rel);
			}
			id.inode[h] = id_of(h, letter(path));
		}
	assert_int_equal(acct_ledger_add(t->ledger, &id, 1, &cg), 0);
	return cg;
}

/* A record of cgroup "/x" in hierarchy h; the caller fills the rest. */
static struct acct_bpf_record *record(const char *path, enum acct_hierarchy h, uint32_t flags)
{
	struct rec *r = &fake.recs[h][fake.n[h]++];
	memset(r, 0, sizeof(*r));
	r->r.magic = ACCT_BPF_RECORD_MAGIC;
	r->r.size = sizeof(*r);
	r->r.id = id_of(h, letter(path));
	r->r.level = 1;
	r->r.flags = flags;
	r->r.nr_state = NR_STATE;
	r->r.max = r->r.swap_max = r->r.high = 1ull << 51; /* PAGE_COUNTER_MAX-like: no limit */
	return &r->r;
}

static long long *state_of(struct acct_bpf_record *r)
{
	return ((struct rec *)r)->state;
}

/* A memory file of "/x" in the unified tree ("memory/..." files in the v1
 * memory tree), as the cross-check reads it. */
static void mem_file(struct tree *t, const char *path, const char *file, uint64_t v)
{
	char rel[64], text[32];
	snprintf(rel, sizeof(rel), "%s%s/%s", strncmp(file, "memory.usage", 12) == 0 ? "memory" : "unified", path, file);
	snprintf(text, sizeof(text), "%" PRIu64 "\n", v);
	xwrite(t->base, rel, text);
}

/* The record's stats as its memory.stat would show them (v2 keys). */
static void set_stats(struct tree *t, const char *path, struct acct_bpf_record *r)
{
	static const long long v[NR_STATE] = { 10, 333, 12, 5, 3, 1, 2, 1 };
	char rel[64], text[512];
	size_t off = 0;
	memcpy(state_of(r), v, sizeof(v));
	for (size_t i = 0; i < ELEMENTSOF(map_v2); i++)
		off += (size_t)snprintf(text + off, sizeof(text) - off, "%s %lld\n", map_v2[i].key,
					v[map_v2[i].index] * (long long)map_v2[i].unit);
	snprintf(rel, sizeof(rel), "unified%s/memory.stat", path);
	xwrite(t->base, rel, text);
}

/* The page counters' bound of a record with d descendants. */
static uint64_t mem_bound(struct tree *t, int d)
{
	return acct_memcg_memory_bound(&t->o.batching, d);
}

static uint64_t now;

static void pass(struct tree *t, unsigned flags)
{
	struct acct_cgroup **cgs = NULL;
	int n = acct_ledger_snapshot(t->ledger, false, &cgs);
	assert_true(n >= 0);
	now = acct_now_us();
	assert_int_equal(acct_sampler_run(sampler(t), cgs, (size_t)n, flags, now, &t->rep), 0);
	free(cgs);
	if (getenv("DEBUG_PASS"))
		printf("pass %#x: cgroups %" PRIu64 " records %" PRIu64 " checks %" PRIu64 " mismatches %" PRIu64
		       " fallbacks %" PRIu64 " unreadable %" PRIu64 " '%s'\n",
		       flags, t->rep.bpf_cgroups, t->rep.bpf_records, t->rep.bpf_checks, t->rep.bpf_mismatches,
		       t->rep.bpf_fallbacks, t->rep.errors[ACCT_ERR_UNREADABLE], t->rep.last_mismatch);
}

static int64_t value(struct acct_cgroup *cg, enum acct_quantity q)
{
	struct acct_reading rd;
	if (!acct_cgroup_get(cg, q, true, &rd))
		return INT64_MIN; /* never read */
	return rd.value;
}

static int64_t memstat(struct tree *t, struct acct_cgroup *cg, const char *key)
{
	struct acct_cgroup_values v;
	acct_cgroup_read(cg, ACCT_READ_MEMORY, now, &v);
	if (!v.memstat)
		return INT64_MIN;
	int64_t x = acct_memstat_value(v.memstat, acct_ledger_memstat_intern(t->ledger, key));
	return x < 0 ? INT64_MIN : x; /* -1: never set */
}

static uint64_t memstat_bound(struct acct_cgroup *cg)
{
	struct acct_cgroup_values v;
	acct_cgroup_read(cg, ACCT_READ_MEMORY, now, &v);
	return v.memstat_bound;
}

/* ---- the tests -------------------------------------------------------------- */

/* v2: every memory value from the record, in bytes, with the kernel's bounds;
 * the stat keys through the map (each slot to its key, times its unit). */
static void test_values_v2(void **state)
{
	struct tree *t = *state;
	struct acct_cgroup *a = add(t, "/a", UNI);
	struct acct_cgroup *b = add(t, "/b", UNI);
	struct acct_bpf_record *ra = record("/a", ACCT_HIER_UNIFIED,
					    ACCT_BPF_F_POPULATED | ACCT_BPF_F_MEMCG | ACCT_BPF_F_HIGH | ACCT_BPF_F_STATS |
						    ACCT_BPF_F_EVENTS);
	ra->usage = 30;
	ra->watermark = 50;
	ra->max = 100;
	ra->high = 80;
	ra->swap_usage = 7;
	ra->swap_max = 9;
	ra->nr_descendants = 2;
	ra->stats_updates = 3;
	ra->events[ACCT_BPF_EV_HIGH] = 4;
	ra->events[ACCT_BPF_EV_MAX] = 5;
	ra->events[ACCT_BPF_EV_OOM_KILL] = 1;
	set_stats(t, "/a", ra); /* inactive_file 10 pages, sock 333 bytes, anon 12 pages, ... */
	/* b: no memcg values, no high, not populated */
	struct acct_bpf_record *rb = record("/b", ACCT_HIER_UNIFIED, ACCT_BPF_F_MEMCG);
	rb->usage = 1;
	rb->nr_descendants = 0;
	mem_file(t, "/a", "memory.current", 30 * PAGE);
	mem_file(t, "/b", "memory.current", 1 * PAGE);

	pass(t, ACCT_PASS_FAST);
	assert_int_equal(t->rep.bpf_cgroups, 2);
	assert_int_equal(t->rep.bpf_records, 2);
	assert_int_equal(t->rep.bpf_mismatches, 0);
	assert_int_equal(t->rep.bpf_checks, 3); /* two memory files, one memory.stat */
	assert_int_equal(t->rep.bpf_stat_reads, 0);
	assert_int_equal(t->rep.bpf_unbounded, 0);
	assert_true(t->rep.bpf_walk_us < 60000000u);
	assert_int_equal(acct_sampler_bpf_parts(t->s),
			 ACCT_BPF_PART_POPULATED | ACCT_BPF_PART_MEMORY | ACCT_BPF_PART_STAT);
	assert_int_equal(t->rep.bpf_fallbacks, 0);
	assert_int_equal(value(a, ACCT_Q_MEMORY), 30 * PAGE);
	assert_int_equal(value(a, ACCT_Q_MEMORY_PEAK), 50 * PAGE);
	assert_int_equal(value(a, ACCT_Q_MEMORY_MAX), 100 * PAGE);
	assert_int_equal(value(a, ACCT_Q_MEMORY_HIGH), 80 * PAGE);
	assert_int_equal(value(a, ACCT_Q_SWAP), 7 * PAGE);
	assert_int_equal(value(a, ACCT_Q_SWAP_MAX), 9 * PAGE);
	assert_int_equal(value(a, ACCT_Q_WORKING_SET), 20 * PAGE);
	assert_int_equal(value(a, ACCT_Q_MEMORY_EVENTS_HIGH), 4);
	assert_int_equal(value(a, ACCT_Q_MEMORY_EVENTS_MAX), 5);
	assert_int_equal(value(a, ACCT_Q_MEMORY_EVENTS_OOM_KILL), 1);
	assert_int_equal(value(a, ACCT_Q_MEMORY_EVENTS_LOW), 0);
	/* the page counters' bound: 3 of the 4 stock slots (itself and two descendants) */
	uint64_t bound_a = acct_memcg_memory_bound(&t->o.batching, 2);
	assert_int_equal(bound_a, 4 * (3 * 64 + 1) * PAGE);
	assert_int_equal(acct_cgroup_kernel_bound(a, ACCT_Q_MEMORY), bound_a);
	assert_int_equal(acct_cgroup_kernel_bound(a, ACCT_Q_MEMORY_PEAK), bound_a);
	assert_int_equal(acct_cgroup_kernel_bound(a, ACCT_Q_MEMORY_MAX), 0);
	uint64_t stat_bound = acct_memcg_stat_bound(&t->o.batching, 3);
	assert_int_equal(acct_cgroup_kernel_bound(a, ACCT_Q_WORKING_SET), bound_a + stat_bound);
	assert_int_equal(memstat(t, a, "anon"), 12 * PAGE);
	assert_int_equal(memstat(t, a, "inactive_file"), 10 * PAGE);
	assert_int_equal(memstat(t, a, "sock"), 333);
	assert_int_equal(memstat_bound(a), stat_bound);
	/* NUMA on one node: the sum of the NUMA keys (anon, file, kernel stack,
	 * page tables, slab) */
	struct acct_reading rd;
	assert_int_equal(acct_counter_read_node(a->numa, 0, &rd), 0);
	assert_int_equal(rd.value, (12 + 5 + 1 + 2 + 1) * PAGE + 3 * 1024);
	/* b: one stock slot, no limits: -1; no high without its flag */
	assert_int_equal(value(b, ACCT_Q_MEMORY), PAGE);
	assert_int_equal(acct_cgroup_kernel_bound(b, ACCT_Q_MEMORY), 4 * (64 + 1) * PAGE);
	assert_int_equal(value(b, ACCT_Q_MEMORY_HIGH), INT64_MIN);
	assert_int_equal(value(b, ACCT_Q_WORKING_SET), INT64_MIN);
	/* populated from the records */
	struct acct_cgroup_values v;
	acct_cgroup_read(a, ACCT_READ_STATE, now, &v);
	assert_true(v.populated);
}

/* A slow pass with a record takes the peak, the limits and the swap from the
 * record, as a fast one does: memory.peak, memory.max, memory.high,
 * memory.swap.current and memory.swap.max, which hold other values here, are
 * not read over them (sample-memory.c, sample_slow()). Planted, the slow
 * pass read those files after the record had set its values. */
static void test_slow_pass_keeps_record(void **state)
{
	struct tree *t = *state;
	struct acct_cgroup *a = add(t, "/a", UNI);
	struct acct_bpf_record *ra = record("/a", ACCT_HIER_UNIFIED, ACCT_BPF_F_MEMCG | ACCT_BPF_F_HIGH);
	ra->usage = 30;
	ra->watermark = 50;
	ra->max = 100;
	ra->high = 80;
	ra->swap_usage = 7;
	ra->swap_max = 9;
	mem_file(t, "/a", "memory.current", 30 * PAGE);
	mem_file(t, "/a", "memory.peak", 51 * PAGE);
	mem_file(t, "/a", "memory.max", 101 * PAGE);
	mem_file(t, "/a", "memory.high", 81 * PAGE);
	mem_file(t, "/a", "memory.swap.current", 8 * PAGE);
	mem_file(t, "/a", "memory.swap.max", 10 * PAGE);
	pass(t, ACCT_PASS_FAST | ACCT_PASS_SLOW);
	assert_int_equal(t->rep.bpf_records, 1);
	assert_int_equal(t->rep.cgroups_failed, 0);
	assert_int_equal(value(a, ACCT_Q_MEMORY), 30 * PAGE);
	assert_int_equal(value(a, ACCT_Q_MEMORY_PEAK), 50 * PAGE);
	assert_int_equal(value(a, ACCT_Q_MEMORY_MAX), 100 * PAGE);
	assert_int_equal(value(a, ACCT_Q_MEMORY_HIGH), 80 * PAGE);
	assert_int_equal(value(a, ACCT_Q_SWAP), 7 * PAGE);
	assert_int_equal(value(a, ACCT_Q_SWAP_MAX), 9 * PAGE);
}

/* More nodes than one without per-node records: no NUMA value from the keys. */
static void test_numa_nodes(void **state)
{
	struct tree *t = *state;
	t->o.nr_nodes = 2;
	struct acct_cgroup *a = add(t, "/a", UNI);
	struct acct_bpf_record *ra = record("/a", ACCT_HIER_UNIFIED, ACCT_BPF_F_MEMCG | ACCT_BPF_F_STATS);
	ra->usage = 30;
	set_stats(t, "/a", ra);
	mem_file(t, "/a", "memory.current", 30 * PAGE);
	pass(t, ACCT_PASS_FAST);
	assert_int_equal(value(a, ACCT_Q_MEMORY), 30 * PAGE);
	assert_int_equal(memstat(t, a, "anon"), 12 * PAGE);
	struct acct_cgroup_values v;
	acct_cgroup_read(a, ACCT_READ_MEMORY, now, &v);
	assert_false(v.numa_known);
}

/* A record whose stat slots end before the inactive_file slot: no working set. */
static void test_short_record(void **state)
{
	struct tree *t = *state;
	struct acct_cgroup *a = add(t, "/a", UNI);
	struct acct_bpf_record *ra = record("/a", ACCT_HIER_UNIFIED, ACCT_BPF_F_MEMCG | ACCT_BPF_F_STATS);
	ra->usage = 30;
	set_stats(t, "/a", ra);
	ra->nr_state = 0;
	mem_file(t, "/a", "memory.current", 30 * PAGE);
	pass(t, ACCT_PASS_FAST);
	assert_int_equal(value(a, ACCT_Q_MEMORY), 30 * PAGE);
	assert_int_equal(value(a, ACCT_Q_WORKING_SET), INT64_MIN);
	assert_int_equal(memstat(t, a, "anon"), INT64_MIN);
}

/* Unchanged records renew the ages of what they set and set nothing; a
 * change of any page counter, of the descendants or of the events is
 * applied. */
static void test_unchanged(void **state)
{
	struct tree *t = *state;
	struct acct_cgroup *a = add(t, "/a", UNI);
	struct acct_bpf_record *ra =
		record("/a", ACCT_HIER_UNIFIED, ACCT_BPF_F_MEMCG | ACCT_BPF_F_HIGH | ACCT_BPF_F_EVENTS);
	ra->usage = 30;
	ra->watermark = 50;
	ra->swap_usage = 7;
	ra->events[ACCT_BPF_EV_HIGH] = 4;
	mem_file(t, "/a", "memory.current", 30 * PAGE);
	/* still once the memory's motion has decayed (a few passes) */
	int passes = 0;
	do {
		pass(t, ACCT_PASS_FAST);
		assert_int_equal(t->rep.bpf_cgroups, 1);
	} while (t->rep.bpf_unchanged == 0 && ++passes < 200);
	assert_int_equal(t->rep.bpf_unchanged, 1);
	pass(t, ACCT_PASS_FAST);
	assert_int_equal(t->rep.bpf_unchanged, 1);
	assert_int_equal(acct_cgroup_quantity_sampled(a, ACCT_Q_MEMORY), now);
	assert_int_equal(acct_cgroup_quantity_sampled(a, ACCT_Q_MEMORY_PEAK), now);
	assert_int_equal(acct_cgroup_quantity_sampled(a, ACCT_Q_SWAP), now);
	assert_int_equal(value(a, ACCT_Q_MEMORY), 30 * PAGE);

	ra->watermark = 60; /* the peak alone */
	pass(t, ACCT_PASS_FAST);
	assert_int_equal(t->rep.bpf_unchanged, 0);
	assert_int_equal(value(a, ACCT_Q_MEMORY_PEAK), 60 * PAGE);
	ra->swap_usage = 8; /* the swap alone */
	pass(t, ACCT_PASS_FAST);
	assert_int_equal(t->rep.bpf_unchanged, 0);
	assert_int_equal(value(a, ACCT_Q_SWAP), 8 * PAGE);
	ra->high = 90; /* memory.high alone */
	pass(t, ACCT_PASS_FAST);
	assert_int_equal(t->rep.bpf_unchanged, 0);
	assert_int_equal(value(a, ACCT_Q_MEMORY_HIGH), 90 * PAGE);
	ra->nr_descendants = 3; /* the bound alone */
	pass(t, ACCT_PASS_FAST);
	assert_int_equal(t->rep.bpf_unchanged, 0);
	assert_int_equal(acct_cgroup_kernel_bound(a, ACCT_Q_MEMORY), mem_bound(t, 3));
	ra->events[ACCT_BPF_EV_HIGH] = 6; /* the events alone */
	pass(t, ACCT_PASS_FAST);
	assert_int_equal(value(a, ACCT_Q_MEMORY_EVENTS_HIGH), 6);
}

/* An empty cgroup /q of the unified tree, its memcg record (one page)
 * and its files, memory.stat as given, the sampler told that
 * cgroup.events is watched: quiet after a slow pass that reads memory.stat
 * clean. Returns its record; *ret_cg its ledger record where wanted. */
static struct acct_bpf_record *empty_cgroup(struct tree *t, const char *memory_stat, struct acct_cgroup **ret_cg)
{
	struct acct_cgroup *q = add(t, "/q", UNI);
	struct acct_bpf_record *rq = record("/q", ACCT_HIER_UNIFIED, ACCT_BPF_F_MEMCG);
	rq->usage = 1;
	mem_file(t, "/q", "memory.current", PAGE);
	xwrite(t->base, "unified/q/cgroup.events", "populated 0\nfrozen 0\n");
	xwrite(t->base, "unified/q/cgroup.threads", "");
	xwrite(t->base, "unified/q/memory.stat", memory_stat);
	xwrite(t->base, "unified/q/cpu.stat", "usage_usec 0\nuser_usec 0\nsystem_usec 0\n");
	acct_sampler_events_watched(sampler(t), true, 100);
	if (ret_cg)
		*ret_cg = q;
	return rq;
}

#define MEMORY_STAT_CLEAN "anon 0\nfile 4096\ninactive_file 4096\nfile_dirty 0\nfile_writeback 0\n"

/* Empty cgroups that stay empty are not read while nothing says they
 * changed (sampler-prune.c, sampler_empty_quiet(); sampler.c,
 * sample_quiet(); docs/counters.md, "Empty cgroups"): what keeps /q
 * unread and what wakes it. Quiet passes take its memory from the record
 * (also when it moves without a task) and count its CPU as read or
 * pruned, never skipped; they stay quiet while its CPU time stands and a
 * load pass finds no thread in it; a watch lost and set up again between
 * two passes, or CPU time charged to it, wakes it. */
static void test_empty_quiet(void **state)
{
	struct tree *t = *state;
	struct acct_cgroup *q;
	struct acct_bpf_record *rq = empty_cgroup(t, MEMORY_STAT_CLEAN, &q);

	pass(t, ACCT_PASS_SLOW); /* read empty, memory.stat clean: quiet */
	assert_int_equal(t->rep.cgroups_failed, 0);
	assert_int_equal(t->rep.empty_unread, 0);
	for (int i = 0; i < 2; i++) {
		pass(t, ACCT_PASS_FAST);
		assert_int_equal(t->rep.cgroups_failed, 0);
		assert_int_equal(t->rep.empty_unread, 1);
		assert_int_equal(t->rep.parts[ACCT_PART_CPU][ACCT_OUTCOME_READ], 1); /* no ancestor prunes it */
		assert_int_equal(t->rep.parts[ACCT_PART_CPU][ACCT_OUTCOME_SKIPPED], 0);
	}
	/* its page cache reclaimed: memory from the record, still quiet */
	rq->usage = 0;
	mem_file(t, "/q", "memory.current", 0);
	pass(t, ACCT_PASS_FAST);
	assert_int_equal(t->rep.empty_unread, 1);
	assert_int_equal(value(q, ACCT_Q_MEMORY), 0);
	assert_int_equal(acct_cgroup_quantity_sampled(q, ACCT_Q_MEMORY), now);
	/* a load pass that finds no thread in it, and a slow pass: quiet */
	pass(t, ACCT_PASS_FAST | ACCT_PASS_LOAD);
	assert_int_equal(t->rep.cgroups_failed, 0);
	pass(t, ACCT_PASS_FAST);
	assert_int_equal(t->rep.empty_unread, 1);
	pass(t, ACCT_PASS_SLOW);
	assert_int_equal(t->rep.empty_unread, 1);
	/* CPU time charged to it without a task seen: read in that pass (it
	 * was quiet), and in full from the next one on */
	xwrite(t->base, "unified/q/cpu.stat", "usage_usec 5\nuser_usec 5\nsystem_usec 0\n");
	pass(t, ACCT_PASS_FAST);
	assert_int_equal(t->rep.empty_unread, 1);
	assert_int_equal(value(q, ACCT_Q_CPU_USAGE), 5);
	pass(t, ACCT_PASS_FAST);
	assert_int_equal(t->rep.empty_unread, 0);
}

/* Pages still to be written back keep an empty cgroup from going quiet
 * (docs/counters.md, "Empty cgroups", the write-back): their I/O can be
 * charged to it after its tasks left, so a memory.stat read since it
 * emptied with file_dirty or file_writeback above 0 leaves it read in full
 * at every pass; the first one read clean makes it quiet. Other keys above
 * 0 do not hold it: shmem and pagetables, of the lengths of v1's "dirty"
 * and of "file_dirty". Its memory moves (the record's) so that each slow
 * pass reads memory.stat again (slow_due(): by more than the budget). */
static void test_empty_quiet_dirty(void **state)
{
	struct tree *t = *state;
	struct acct_bpf_record *rq =
		empty_cgroup(t, "anon 0\nfile 4096\nfile_dirty 4096\nfile_writeback 0\ninactive_file 4096\n", NULL);
	pass(t, ACCT_PASS_SLOW);
	assert_int_equal(t->rep.cgroups_failed, 0);
	pass(t, ACCT_PASS_FAST);
	assert_int_equal(t->rep.empty_unread, 0);

	/* written back, still being written */
	xwrite(t->base, "unified/q/memory.stat", "anon 0\nfile 8192\nfile_dirty 0\nfile_writeback 4096\ninactive_file 8192\n");
	rq->usage = 2049; /* 8 MiB more, twice the budget */
	mem_file(t, "/q", "memory.current", 2049 * PAGE);
	pass(t, ACCT_PASS_SLOW);
	assert_int_equal(t->rep.parts[ACCT_PART_MEMORY_STAT][ACCT_OUTCOME_READ], 1);
	pass(t, ACCT_PASS_FAST);
	assert_int_equal(t->rep.empty_unread, 0);

	/* clean: quiet */
	xwrite(t->base, "unified/q/memory.stat",
	       "anon 0\nfile 4096\npagetables 4096\nshmem 4096\nfile_dirty 0\nfile_writeback 0\ninactive_file 4096\n");
	rq->usage = 1;
	mem_file(t, "/q", "memory.current", PAGE);
	pass(t, ACCT_PASS_SLOW);
	assert_int_equal(t->rep.parts[ACCT_PART_MEMORY_STAT][ACCT_OUTCOME_READ], 1);
	pass(t, ACCT_PASS_FAST);
	assert_int_equal(t->rep.cgroups_failed, 0);
	assert_int_equal(t->rep.empty_unread, 1);
}

/* A watch lost (the inotify queue overflowed) and set up again between two
 * passes may have missed a change: what was quiet before is read in full
 * once. */
static void test_empty_quiet_lost_watch(void **state)
{
	struct tree *t = *state;
	empty_cgroup(t, MEMORY_STAT_CLEAN, NULL);
	pass(t, ACCT_PASS_SLOW);
	pass(t, ACCT_PASS_FAST);
	assert_int_equal(t->rep.empty_unread, 1);
	acct_sampler_events_watched(t->s, false, 100);
	acct_sampler_events_watched(t->s, true, 100);
	pass(t, ACCT_PASS_FAST);
	assert_int_equal(t->rep.cgroups_failed, 0);
	assert_int_equal(t->rep.empty_unread, 0);
}

/* Stats beyond the budget: uncounted updates (the kernel stopped counting)
 * make a slow pass read memory.stat, and the working set comes from it; a
 * stat bound equal to the budget is within it. */
static void test_budget(void **state)
{
	struct tree *t = *state;
	struct acct_cgroup *a = add(t, "/a", UNI);
	struct acct_bpf_record *ra = record("/a", ACCT_HIER_UNIFIED, ACCT_BPF_F_MEMCG | ACCT_BPF_F_STATS);
	ra->usage = 30;
	ra->stats_updates = UINT64_MAX;
	set_stats(t, "/a", ra);
	/* the file says otherwise than the record: the file wins */
	xwrite(t->base, "unified/a/memory.stat", "inactive_file 8192\nanon 4096\n");
	mem_file(t, "/a", "memory.current", 30 * PAGE);
	pass(t, ACCT_PASS_FAST);
	assert_int_equal(t->rep.bpf_stat_reads, 1);
	assert_int_equal(t->rep.bpf_unbounded, 1);
	assert_int_equal(memstat(t, a, "anon"), 4096);
	assert_int_equal(value(a, ACCT_Q_WORKING_SET), 30 * PAGE - 8192);
	assert_int_equal(acct_cgroup_kernel_bound(a, ACCT_Q_WORKING_SET),
			 mem_bound(t, 0) + acct_memcg_file_stat_bound(&t->o.batching));

	/* the bound exactly the budget: the record's */
	ra->stats_updates = 5;
	struct acct_ledger_budgets b = { .bytes = (int64_t)acct_memcg_stat_bound(&t->o.batching, 5) };
	acct_ledger_set_budgets(t->ledger, &b);
	set_stats(t, "/a", ra);
	pass(t, ACCT_PASS_FAST);
	assert_int_equal(t->rep.bpf_stat_reads, 0);
	assert_int_equal(t->rep.bpf_unbounded, 0);
	assert_int_equal(memstat(t, a, "anon"), 12 * PAGE);
	assert_int_equal(value(a, ACCT_Q_WORKING_SET), 20 * PAGE);
}

/* v1: swap is memsw less memory, failcnt the "max" events, under_oom from
 * the flag; the record's stats are not taken (memory.stat and the working
 * set from the file in a slow pass); populated is the OR of the records of
 * every hierarchy the cgroup is in. */
static void test_v1(void **state)
{
	struct tree *t = *state;
	t->L.v2_memory = false;
	fake.serves = MEM | H(ACCT_HIER_CPUACCT);
	struct acct_cgroup *a = add(t, "/a", MEM | H(ACCT_HIER_CPUACCT));
	struct acct_cgroup *d = add(t, "/d", MEM | H(ACCT_HIER_CPUACCT));
	struct acct_bpf_record *ra = record("/a", ACCT_HIER_MEMORY,
					    ACCT_BPF_F_MEMCG | ACCT_BPF_F_STATS | ACCT_BPF_F_EVENTS | ACCT_BPF_F_UNDER_OOM);
	ra->usage = 30;
	ra->swap_usage = 37;
	ra->failcnt = 3;
	ra->events[ACCT_BPF_EV_OOM_KILL] = 2;
	state_of(ra)[2] = 12;
	struct acct_bpf_record *rd = record("/d", ACCT_HIER_MEMORY, ACCT_BPF_F_MEMCG);
	rd->usage = 1;
	rd->swap_usage = 1;
	record("/a", ACCT_HIER_CPUACCT, ACCT_BPF_F_POPULATED);
	record("/d", ACCT_HIER_CPUACCT, 0);
	mem_file(t, "/a", "memory.usage_in_bytes", 30 * PAGE);
	mem_file(t, "/d", "memory.usage_in_bytes", PAGE);
	xwrite(t->base, "memory/a/memory.stat", "total_inactive_file 40960\ntotal_anon 5\n");

	pass(t, ACCT_PASS_FAST | ACCT_PASS_SLOW);
	assert_int_equal(t->rep.bpf_cgroups, 2);
	assert_int_equal(value(a, ACCT_Q_MEMORY), 30 * PAGE);
	assert_int_equal(value(a, ACCT_Q_SWAP), 7 * PAGE);
	assert_int_equal(value(d, ACCT_Q_SWAP), 0);
	assert_int_equal(value(a, ACCT_Q_MEMORY_EVENTS_MAX), 3);
	assert_int_equal(value(a, ACCT_Q_MEMORY_EVENTS_OOM_KILL), 2);
	assert_int_equal(value(a, ACCT_Q_MEMORY_UNDER_OOM), 1);
	assert_int_equal(value(d, ACCT_Q_MEMORY_UNDER_OOM), 0);
	assert_int_equal(memstat(t, a, "anon"), INT64_MIN);
	assert_int_equal(value(a, ACCT_Q_WORKING_SET), 30 * PAGE - 40960);
	assert_int_equal(acct_cgroup_kernel_bound(a, ACCT_Q_WORKING_SET),
			 mem_bound(t, 0) + acct_memcg_file_stat_bound(&t->o.batching));
	assert_int_equal(fake.walks[ACCT_HIER_CPUACCT], 1);
	struct acct_cgroup_values v;
	acct_cgroup_read(a, ACCT_READ_STATE, now, &v);
	assert_true(v.populated);
	acct_cgroup_read(d, ACCT_READ_STATE, now, &v);
	assert_false(v.populated);
}

/* The cross-check: a record outside its two file readings, confirmed by the
 * cgroup's record read alone, is a mismatch; ACCT_BPF_MISMATCH_PASSES passes
 * in a row move memory back to files. The same for a memory.stat key. */
static void test_fallback(void **state)
{
	struct tree *t = *state;
	struct acct_cgroup *a = add(t, "/a", UNI);
	struct acct_bpf_record *ra = record("/a", ACCT_HIER_UNIFIED, ACCT_BPF_F_MEMCG | ACCT_BPF_F_STATS);
	ra->usage = 30;
	set_stats(t, "/a", ra);
	xwrite(t->base, "unified/a/memory.stat", "inactive_file 40960\nanon 999\n");
	mem_file(t, "/a", "memory.current", 99 * PAGE);
	for (int i = 1; i <= ACCT_BPF_MISMATCH_PASSES; i++) {
		pass(t, ACCT_PASS_FAST | ACCT_PASS_SLOW);
		assert_int_equal(t->rep.bpf_mismatches, 2);
		assert_int_equal(t->rep.bpf_fallbacks, i == ACCT_BPF_MISMATCH_PASSES ? 2 : 0);
		assert_non_null(strstr(t->rep.last_mismatch, "/a "));
	}
	assert_int_equal(acct_sampler_bpf_parts(t->s), ACCT_BPF_PART_POPULATED);
	pass(t, ACCT_PASS_FAST | ACCT_PASS_SLOW);
	assert_int_equal(t->rep.bpf_cgroups, 0);
	assert_int_equal(value(a, ACCT_Q_MEMORY), 99 * PAGE);
}

/* A mismatch the cgroup alone cannot confirm: a pinned iterator (the first
 * verdict stands) and a cgroup gone (no check). */
static void test_unconfirmed(void **state)
{
	struct tree *t = *state;
	add(t, "/a", UNI);
	struct acct_bpf_record *ra = record("/a", ACCT_HIER_UNIFIED, ACCT_BPF_F_MEMCG);
	ra->usage = 30;
	/* pinned, agreeing: the first verdict, in bytes */
	mem_file(t, "/a", "memory.current", 30 * PAGE);
	fake.pinned = true;
	pass(t, ACCT_PASS_FAST);
	assert_int_equal(t->rep.bpf_mismatches, 0);
	assert_int_equal(t->rep.bpf_checks, 1);
	mem_file(t, "/a", "memory.current", 99 * PAGE);
	pass(t, ACCT_PASS_FAST);
	assert_int_equal(t->rep.bpf_mismatches, 1);
	assert_int_equal(t->rep.bpf_checks, 1);
	fake.pinned = false;
	fake.gone = true;
	pass(t, ACCT_PASS_FAST);
	assert_int_equal(t->rep.bpf_mismatches, 0);
	assert_int_equal(t->rep.bpf_checks, 0);
	/* the streak was broken: no fallback */
	pass(t, ACCT_PASS_FAST);
	assert_int_equal(acct_sampler_bpf_parts(t->s) & ACCT_BPF_PART_MEMORY, ACCT_BPF_PART_MEMORY);
}

/* Four cgroups are checked a pass, the windows tiling the list: of seven,
 * the first pass checks a-d, the second e, f, g, a, the third b-e. (A cursor
 * that moved by 28 stayed at a for seven: e, f, g were never checked.) */
static void test_check_rotation(void **state)
{
	struct tree *t = *state;
	static const char *const names[] = { "/a", "/b", "/c", "/d", "/e", "/f", "/g" };
	for (size_t i = 0; i < ELEMENTSOF(names); i++) {
		add(t, names[i], UNI);
		struct acct_bpf_record *r = record(names[i], ACCT_HIER_UNIFIED, ACCT_BPF_F_MEMCG);
		r->usage = 30;
		mem_file(t, names[i], "memory.current", (i == 6 ? 99 : 30) * PAGE);
	}
	pass(t, ACCT_PASS_FAST);
	assert_int_equal(t->rep.bpf_checks, 4);
	assert_int_equal(t->rep.bpf_mismatches, 0);
	pass(t, ACCT_PASS_FAST);
	assert_int_equal(t->rep.bpf_checks, 4);
	assert_int_equal(t->rep.bpf_mismatches, 1);
	assert_non_null(strstr(t->rep.last_mismatch, "/g"));
	pass(t, ACCT_PASS_FAST);
	assert_int_equal(t->rep.bpf_mismatches, 0);
}

/* A walk alone over a few cgroups reads each one's record alone (a cgroup
 * without one is no error); a pinned iterator walks the hierarchy instead. */
static void test_walk_alone(void **state)
{
	struct tree *t = *state;
	struct acct_cgroup *a = add(t, "/a", UNI);
	add(t, "/b", UNI);
	struct acct_bpf_record *ra = record("/a", ACCT_HIER_UNIFIED, ACCT_BPF_F_MEMCG);
	ra->usage = 30;
	mem_file(t, "/a", "memory.current", 30 * PAGE);
	pass(t, ACCT_PASS_FAST);
	assert_int_equal(fake.walks[ACCT_HIER_UNIFIED], 1);
	ra->usage = 40;
	mem_file(t, "/a", "memory.current", 40 * PAGE);
	pass(t, ACCT_PASS_KERNEL);
	assert_int_equal(fake.walks[ACCT_HIER_UNIFIED], 1);
	assert_int_equal(t->rep.bpf_records, 1);
	assert_int_equal(t->rep.bpf_checks, 1);
	assert_int_equal(t->rep.errors[ACCT_ERR_UNREADABLE], 0);
	assert_int_equal(value(a, ACCT_Q_MEMORY), 40 * PAGE);
	fake.pinned = true;
	ra->usage = 50;
	mem_file(t, "/a", "memory.current", 50 * PAGE);
	pass(t, ACCT_PASS_KERNEL);
	assert_int_equal(fake.walks[ACCT_HIER_UNIFIED], 2);
	assert_int_equal(value(a, ACCT_Q_MEMORY), 50 * PAGE);
}

/* Which cgroups a walk alone reads (acct_sampler_kernel_due(), "Freshness
 * from the budget"): one whose memory moved, once its motion times the age of
 * its value reaches the bytes budget (4 MiB here): none right after the
 * pass that read it, and it when its expected staleness has grown past the
 * budget. When that is, for the tick (acct_sampler_kernel_next_us()): after
 * the pass and no later than the time it is found due; then. */
static void test_kernel_due(void **state)
{
	struct tree *t = *state;
	struct acct_cgroup *a = add(t, "/a", UNI);
	add(t, "/b", UNI);
	struct acct_bpf_record *ra = record("/a", ACCT_HIER_UNIFIED, ACCT_BPF_F_MEMCG);
	record("/b", ACCT_HIER_UNIFIED, ACCT_BPF_F_MEMCG)->usage = 5;
	mem_file(t, "/b", "memory.current", 5 * PAGE);
	struct acct_cgroup **due = NULL;
	uint64_t first = 0;
	/* before a full fast pass made the list of moving cgroups: none known */
	uint64_t next = 0, t0 = acct_now_us();
	assert_int_equal(acct_sampler_kernel_due(sampler(t), t0, &due, &next), -ESTALE);
	assert_null(due);
	assert_int_equal(next, t0);
	assert_int_equal(acct_sampler_kernel_next_us(t->s, t0), t0);
	/* /a moves 1 MiB a pass, its motion becomes known; /b stands */
	for (int i = 0; i < 3; i++) {
		ra->usage = 30 + 256 * (unsigned)i;
		mem_file(t, "/a", "memory.current", ra->usage * PAGE);
		pass(t, ACCT_PASS_FAST);
		if (i == 0)
			first = now;
		usleep(20000);
	}
	uint64_t span = now - first; /* 2 MiB moved in it */
	/* a millisecond after the pass: far from the budget at this pace */
	assert_int_equal(acct_sampler_kernel_due(t->s, now + 1000, &due, &next), 0);
	assert_null(due);
	assert_true(next > now + 1000 && next <= now + 4 * span + 1000000);
	assert_int_equal(acct_sampler_kernel_next_us(t->s, now + 1000), next);
	/* after twice the time it takes to move 4 MiB at that pace */
	uint64_t later = now + 4 * span + 1000000;
	assert_int_equal(acct_sampler_kernel_next_us(t->s, later), later);
	int n = acct_sampler_kernel_due(t->s, later, &due, &next);
	assert_int_equal(n, 1);
	assert_ptr_equal(due[0], a);
	assert_int_equal(next, UINT64_MAX); /* /b stands: no other comes due */
	free(due);
}

/* A walk alone reads a cgroup by its path: where another cgroup has been
 * made under that path since (discovery has not said so yet), the record
 * read is the stranger's and not this cgroup's (read_each()); without the
 * check the old record served the new cgroup's memory (70 pages). */
static void test_walk_alone_stranger(void **state)
{
	struct tree *t = *state;
	struct acct_cgroup *a = add(t, "/a", UNI);
	add(t, "/b", UNI);
	struct acct_bpf_record *ra = record("/a", ACCT_HIER_UNIFIED, ACCT_BPF_F_MEMCG);
	ra->usage = 30;
	mem_file(t, "/a", "memory.current", 30 * PAGE);
	pass(t, ACCT_PASS_FAST);
	assert_int_equal(value(a, ACCT_Q_MEMORY), 30 * PAGE);
	fake.ino[ACCT_HIER_UNIFIED][0] = xremake(t->base, "unified/a"); /* "/a" made again */
	struct acct_bpf_record *stranger = record("/a", ACCT_HIER_UNIFIED, ACCT_BPF_F_MEMCG);
	stranger->usage = 70;
	mem_file(t, "/a", "memory.current", 70 * PAGE);
	pass(t, ACCT_PASS_KERNEL);
	assert_int_equal(fake.walks[ACCT_HIER_UNIFIED], 1); /* read alone, not walked */
	assert_int_equal(value(a, ACCT_Q_MEMORY), 30 * PAGE);
	xrm_rf(t->base, "unified/a.old");
}

/* Out of memory for a walk alone's tables: the hierarchy is walked. */
static void test_walk_alone_no_memory(void **state)
{
	struct tree *t = *state;
	struct acct_cgroup *a = add(t, "/a", UNI);
	struct acct_bpf_record *ra = record("/a", ACCT_HIER_UNIFIED, ACCT_BPF_F_MEMCG);
	ra->usage = 30;
	mem_file(t, "/a", "memory.current", 30 * PAGE);
	pass(t, ACCT_PASS_FAST);
	ra->usage = 40;
	mem_file(t, "/a", "memory.current", 40 * PAGE);
	fail_table_of = sizeof(bool);
	pass(t, ACCT_PASS_KERNEL);
	assert_int_equal(fail_table_of, 0);
	assert_int_equal(fake.walks[ACCT_HIER_UNIFIED], 2);
	assert_int_equal(value(a, ACCT_Q_MEMORY), 40 * PAGE);
	/* the records' table */
	ra->usage = 50;
	mem_file(t, "/a", "memory.current", 50 * PAGE);
	fail_table_of = sizeof(struct acct_bpf_record);
	pass(t, ACCT_PASS_KERNEL);
	assert_int_equal(fail_table_of, 0);
	assert_int_equal(fake.walks[ACCT_HIER_UNIFIED], 3);
	assert_int_equal(value(a, ACCT_Q_MEMORY), 50 * PAGE);
}

/* A walk refused for too many cgroups for a pinned iterator is no error;
 * the census of a hierarchy not walked is a lean walk of it, empty or not,
 * and one refused is left out. */
static void test_census(void **state)
{
	struct tree *t = *state;
	fake.serves = UNI | MEM | H(ACCT_HIER_CPUACCT) | H(ACCT_HIER_CPU);
	add(t, "/a", UNI);
	struct acct_bpf_record *ra = record("/a", ACCT_HIER_UNIFIED, ACCT_BPF_F_MEMCG | ACCT_BPF_F_POPULATED);
	ra->usage = 30;
	record("/a", ACCT_HIER_MEMORY, 0);
	record("/b", ACCT_HIER_MEMORY, 0);
	mem_file(t, "/a", "memory.current", 30 * PAGE);
	acct_sampler_want_census(sampler(t), MEM | H(ACCT_HIER_CPUACCT) | H(ACCT_HIER_CPU), 3);
	fake.e2big = H(ACCT_HIER_CPU);
	pass(t, ACCT_PASS_FAST);
	assert_int_equal(t->rep.census_taken, MEM | H(ACCT_HIER_CPUACCT) | H(ACCT_HIER_CPU));
	assert_int_equal(t->rep.census_mask, MEM | H(ACCT_HIER_CPUACCT));
	assert_int_equal(t->rep.bpf_records, 3);
	assert_int_equal(t->rep.errors[ACCT_ERR_UNREADABLE], 0);
	/* the memcg hierarchy refused */
	fake.e2big = UNI;
	pass(t, ACCT_PASS_FAST);
	assert_int_equal(t->rep.errors[ACCT_ERR_UNREADABLE], 0);
	assert_int_equal(t->rep.bpf_cgroups, 0);
	/* and failed: one unreadable walk in the pass's report */
	fake.e2big = 0;
	fake.eio = UNI;
	pass(t, ACCT_PASS_FAST);
	assert_int_equal(t->rep.errors[ACCT_ERR_UNREADABLE], 1);
	assert_int_equal(t->rep.bpf_cgroups, 0);
}

/* A census asked with a scope (include globs that prune: docs/acctd.md,
 * "Discovery") is the scope's as the walk found it (the kernel's count of
 * each top's descendants, the known ids it has), taken once; a hierarchy
 * asked without one has the whole walk's; a scope asked and not taken yet
 * is replaced by the next one. Here /a is a top with one descendant (/c),
 * /b lies outside. */
static void test_census_scope(void **state)
{
	struct tree *t = *state;
	fake.serves = UNI | MEM;
	add(t, "/a", UNI);
	struct acct_bpf_record *ra = record("/a", ACCT_HIER_UNIFIED, ACCT_BPF_F_MEMCG | ACCT_BPF_F_POPULATED);
	ra->usage = 30;
	mem_file(t, "/a", "memory.current", 30 * PAGE);
	struct acct_bpf_record *ma = record("/a", ACCT_HIER_MEMORY, 0);
	ma->nr_descendants = 1;
	record("/b", ACCT_HIER_MEMORY, 0); /* records in increasing id */
	struct acct_bpf_record *mc = record("/c", ACCT_HIER_MEMORY, 0);
	mc->level = 2;

	struct acct_cgroup_scope *scopes[_ACCT_HIER_MAX] = { 0 };
	struct acct_cgroup_census known, whole;
	scopes[ACCT_HIER_MEMORY] = acct_cgroup_scope_new(1, 2);
	assert_non_null(scopes[ACCT_HIER_MEMORY]);
	*scopes[ACCT_HIER_MEMORY] = (struct acct_cgroup_scope){ .n_tops = 1, .n_ids = 2,
								 .tops = scopes[ACCT_HIER_MEMORY]->tops };
	scopes[ACCT_HIER_MEMORY]->tops[0] = ma->id;
	scopes[ACCT_HIER_MEMORY]->ids[0] = ma->id;
	scopes[ACCT_HIER_MEMORY]->ids[1] = mc->id;
	acct_cgroup_scope_census(scopes[ACCT_HIER_MEMORY], &known);
	/* replaced before a pass took it: the first one counts for nothing */
	struct acct_cgroup_scope *first[_ACCT_HIER_MAX] = { 0 };
	first[ACCT_HIER_MEMORY] = acct_cgroup_scope_new(0, 0);
	acct_sampler_want_census_of(sampler(t), MEM, 32, first);
	assert_null(first[ACCT_HIER_MEMORY]);
	scopes[ACCT_HIER_UNIFIED] = acct_cgroup_scope_new(0, 0); /* an empty scope: census 0 */
	assert_non_null(scopes[ACCT_HIER_UNIFIED]);
	acct_sampler_want_census_of(sampler(t), MEM | UNI, 32, scopes);
	assert_null(scopes[ACCT_HIER_MEMORY]); /* taken */
	assert_null(scopes[ACCT_HIER_UNIFIED]);
	pass(t, ACCT_PASS_FAST);
	assert_int_equal(t->rep.census_mask, MEM | UNI);
	assert_true(acct_cgroup_census_equal(&t->rep.census[ACCT_HIER_MEMORY], &known));
	assert_int_equal(t->rep.census[ACCT_HIER_UNIFIED].count, 0);
	/* without a scope: the whole walk's */
	acct_sampler_want_census(sampler(t), UNI, 32);
	pass(t, ACCT_PASS_FAST);
	whole = (struct acct_cgroup_census){ 0 };
	acct_cgroup_census_add(&whole, ra->id);
	assert_true(acct_cgroup_census_equal(&t->rep.census[ACCT_HIER_UNIFIED], &whole));

	/* /c gone, /a's count with it: a scope that still knows /c differs */
	scopes[ACCT_HIER_MEMORY] = acct_cgroup_scope_new(1, 2);
	assert_non_null(scopes[ACCT_HIER_MEMORY]);
	scopes[ACCT_HIER_MEMORY]->n_tops = 1;
	scopes[ACCT_HIER_MEMORY]->n_ids = 2;
	scopes[ACCT_HIER_MEMORY]->tops[0] = ma->id;
	scopes[ACCT_HIER_MEMORY]->ids[0] = ma->id;
	scopes[ACCT_HIER_MEMORY]->ids[1] = mc->id;
	mc->id = 999;
	ma->nr_descendants = 0;
	acct_sampler_want_census_of(sampler(t), MEM, 32, scopes);
	pass(t, ACCT_PASS_FAST);
	assert_int_equal(t->rep.census_mask, MEM);
	assert_int_equal(t->rep.census[ACCT_HIER_MEMORY].count, 1);
	assert_false(acct_cgroup_census_equal(&t->rep.census[ACCT_HIER_MEMORY], &known));
	/* taken once: the next pass takes none */
	pass(t, ACCT_PASS_FAST);
	assert_int_equal(t->rep.census_taken, 0);
}

/* On a hybrid host the unified hierarchy is walked for the pressure witness
 * every 10 s, not at every pass, where the memcg records say populated. */
static void test_psi_walk(void **state)
{
	struct tree *t = *state;
	t->L.v2_memory = false;
	fake.serves = MEM | UNI;
	add(t, "/a", MEM | UNI);
	struct acct_bpf_record *ra = record("/a", ACCT_HIER_MEMORY, ACCT_BPF_F_MEMCG | ACCT_BPF_F_POPULATED);
	ra->usage = 30;
	record("/a", ACCT_HIER_UNIFIED, ACCT_BPF_F_POPULATED | ACCT_BPF_F_PSI);
	mem_file(t, "/a", "memory.usage_in_bytes", 30 * PAGE);
	pass(t, ACCT_PASS_FAST);
	assert_int_equal(fake.walks[ACCT_HIER_MEMORY], 1);
	assert_int_equal(fake.walks[ACCT_HIER_UNIFIED], 1);
	pass(t, ACCT_PASS_FAST);
	assert_int_equal(fake.walks[ACCT_HIER_MEMORY], 2);
	assert_int_equal(fake.walks[ACCT_HIER_UNIFIED], 1);
	/* a pass of the load alone walks no cgroup hierarchy */
	pass(t, ACCT_PASS_LOAD);
	assert_int_equal(fake.walks[ACCT_HIER_MEMORY], 2);
	assert_int_equal(fake.walks[ACCT_HIER_UNIFIED], 1);
}

/* Pressure witnessed by the record (sampler.c, psi_due(), psi_witness();
 * docs/counters.md, "Pressure"): a cgroup whose pressure files were read
 * quiet twice, whose CPU time stands and whose record's totals (ns) are the
 * files' (us) is not read again: counted still, its pressure skipped. Its
 * record's totals moving make it a read. */
static void test_psi_witness_still(void **state)
{
	struct tree *t = *state;
	add(t, "/a", UNI);
	struct acct_bpf_record *ra = record("/a", ACCT_HIER_UNIFIED, ACCT_BPF_F_MEMCG | ACCT_BPF_F_POPULATED | ACCT_BPF_F_PSI);
	ra->usage = 30;
	ra->nr_psi = 1;
	ra->psi_total[0] = 30 * 1000; /* the three files' "some" totals, 10 us each */
	mem_file(t, "/a", "memory.current", 30 * PAGE);
	xwrite(t->base, "unified/a/cgroup.events", "populated 1\nfrozen 0\n");
	xwrite(t->base, "unified/a/cpu.stat", "usage_usec 100\nuser_usec 100\nsystem_usec 0\n");
	static const char *const res[] = { "cpu", "memory", "io" };
	for (size_t i = 0; i < ELEMENTSOF(res); i++) {
		char rel[64];
		snprintf(rel, sizeof(rel), "unified/a/%s.pressure", res[i]);
		xwrite(t->base, rel,
		       "some avg10=0.00 avg60=0.00 avg300=0.00 total=10\nfull avg10=0.00 avg60=0.00 avg300=0.00 total=0\n");
	}
	pass(t, ACCT_PASS_FAST); /* the first read */
	pass(t, ACCT_PASS_FAST); /* the same totals: quiet */
	assert_int_equal(t->rep.parts[ACCT_PART_PSI][ACCT_OUTCOME_READ], 1);
	pass(t, ACCT_PASS_FAST);
	assert_int_equal(t->rep.cgroups_failed, 0);
	assert_int_equal(t->rep.bpf_psi_still, 1);
	assert_int_equal(t->rep.parts[ACCT_PART_PSI][ACCT_OUTCOME_READ], 0);
	assert_int_equal(t->rep.parts[ACCT_PART_PSI][ACCT_OUTCOME_SKIPPED], 1);
	/* a stall the kernel counted: read */
	ra->psi_total[0] = 31 * 1000;
	pass(t, ACCT_PASS_FAST);
	assert_int_equal(t->rep.bpf_psi_still, 0);
	assert_int_equal(t->rep.parts[ACCT_PART_PSI][ACCT_OUTCOME_READ], 1);
}

/* A populated leaf /x below the root: its record, its files (memory,
 * cgroup.events, cpu.stat with `usage` usec). */
static struct acct_bpf_record *steady_leaf(struct tree *t, const char *path, unsigned usage)
{
	char rel[64], text[96];
	add(t, path, UNI);
	struct acct_bpf_record *r = record(path, ACCT_HIER_UNIFIED, ACCT_BPF_F_MEMCG | ACCT_BPF_F_POPULATED);
	r->usage = 30;
	mem_file(t, path, "memory.current", 30 * PAGE);
	snprintf(rel, sizeof(rel), "unified%s/cgroup.events", path);
	xwrite(t->base, rel, "populated 1\nfrozen 0\n");
	snprintf(rel, sizeof(rel), "unified%s/cpu.stat", path);
	snprintf(text, sizeof(text), "usage_usec %u\nuser_usec %u\nsystem_usec 0\n", usage, usage);
	xwrite(t->base, rel, text);
	return r;
}

/* Steady cgroups (sampler-steady.c): leaves whose record equals the one
 * applied, whose CPU time the root proves unchanged and whose pressure is
 * not due get a light visit in a fast pass, counted as a full one would
 * count them; their ages follow the ledger's epoch. A record that differs,
 * or the root's CPU time moving (its witness), makes a full visit that
 * reads what changed; slow and load passes visit every cgroup in full. */
static void test_steady(void **state)
{
	struct tree *t = *state;
	struct acct_cgroup *root = add(t, "/", UNI);
	xwrite(t->base, "unified/cpu.stat", "usage_usec 500\nuser_usec 500\nsystem_usec 0\n");
	struct acct_bpf_record *ra = steady_leaf(t, "/a", 100), *rb = steady_leaf(t, "/b", 200);
	struct acct_cgroup *a = acct_ledger_find(t->ledger, "/a"), *b = acct_ledger_find(t->ledger, "/b");

	/* steady once the memory's motion has decayed and the root prunes */
	int passes = 0;
	do
		pass(t, ACCT_PASS_FAST);
	while (t->rep.steady < 2 && ++passes < 300);
	assert_int_equal(t->rep.steady, 2);
	assert_int_equal(t->rep.cgroups_failed, 0);
	/* counted as full visits of steady leaves count them */
	assert_int_equal(t->rep.bpf_cgroups, 2);
	assert_int_equal(t->rep.bpf_unchanged, 2);
	assert_int_equal(t->rep.parts[ACCT_PART_MEMORY][ACCT_OUTCOME_READ], 3); /* and the root's files */
	assert_int_equal(t->rep.parts[ACCT_PART_CPU][ACCT_OUTCOME_PRUNED], 2);
	assert_int_equal(t->rep.parts[ACCT_PART_CPU][ACCT_OUTCOME_READ], 1); /* the root */
	assert_int_equal(t->rep.parts[ACCT_PART_PSI][ACCT_OUTCOME_SKIPPED], 3);
	/* their values as read, their ages this pass's: the epoch's */
	assert_int_equal(value(a, ACCT_Q_MEMORY), 30 * PAGE);
	assert_int_equal(value(b, ACCT_Q_CPU_USAGE), 200);
	assert_int_equal(acct_cgroup_get_group_sampled(a, ACCT_GROUP_FAST), now);
	assert_int_equal(acct_cgroup_quantity_sampled(b, ACCT_Q_MEMORY), now);
	assert_int_equal(acct_cgroup_quantity_sampled(b, ACCT_Q_MEMORY_PEAK), now);
	assert_int_equal(acct_cgroup_quantity_sampled(b, ACCT_Q_CPU_USAGE), now);
	uint64_t steady_at = now;
	pass(t, ACCT_PASS_FAST);
	assert_int_equal(t->rep.steady, 2);
	assert_true(now > steady_at);
	assert_int_equal(acct_cgroup_get_group_sampled(a, ACCT_GROUP_FAST), now);

	/* a's memory moved: a full visit reads it, b stays steady */
	ra->usage = 40;
	mem_file(t, "/a", "memory.current", 40 * PAGE);
	pass(t, ACCT_PASS_FAST);
	assert_int_equal(t->rep.steady, 1);
	assert_int_equal(value(a, ACCT_Q_MEMORY), 40 * PAGE);
	assert_int_equal(acct_cgroup_get_group_sampled(a, ACCT_GROUP_FAST), now);
	assert_int_equal(acct_cgroup_get_group_sampled(b, ACCT_GROUP_FAST), now);

	/* b ran: the root's CPU time moved with it, and b is read, not proven */
	xwrite(t->base, "unified/b/cpu.stat", "usage_usec 260\nuser_usec 260\nsystem_usec 0\n");
	xwrite(t->base, "unified/cpu.stat", "usage_usec 560\nuser_usec 560\nsystem_usec 0\n");
	pass(t, ACCT_PASS_FAST);
	assert_int_equal(value(b, ACCT_Q_CPU_USAGE), 260);
	assert_int_equal(value(root, ACCT_Q_CPU_USAGE), 560);
	assert_true(t->rep.steady <= 1); /* a, where its memory stands still again */

	/* a slow pass and a load pass visit every cgroup in full */
	passes = 0;
	do
		pass(t, ACCT_PASS_FAST);
	while (t->rep.steady < 2 && ++passes < 300);
	assert_int_equal(t->rep.steady, 2);
	/* due: the pruning refresh (300 s and a spread of up to 60) reads them in full */
	struct acct_cgroup **cgs = NULL;
	int n = acct_ledger_snapshot(t->ledger, false, &cgs);
	assert_int_equal(acct_sampler_run(sampler(t), cgs, (size_t)n, ACCT_PASS_FAST, now + UINT64_C(400000000), &t->rep), 0);
	free(cgs);
	assert_int_equal(t->rep.steady, 0);
	pass(t, ACCT_PASS_FAST | ACCT_PASS_SLOW);
	assert_int_equal(t->rep.steady, 0);
	pass(t, ACCT_PASS_FAST | ACCT_PASS_LOAD);
	assert_int_equal(t->rep.steady, 0);
	/* another list of cgroups: a new table, full visits first */
	steady_leaf(t, "/c", 0);
	pass(t, ACCT_PASS_FAST);
	assert_int_equal(t->rep.steady, 0);
	assert_int_equal(value(a, ACCT_Q_MEMORY), 40 * PAGE);
	(void)rb;
}

/* A pass at `at` (the test's clock moved ahead of the real one). */
static void pass_at(struct tree *t, unsigned flags, uint64_t at)
{
	struct acct_cgroup **cgs = NULL;
	int n = acct_ledger_snapshot(t->ledger, false, &cgs);
	assert_true(n >= 0);
	now = at;
	assert_int_equal(acct_sampler_run(sampler(t), cgs, (size_t)n, flags, at, &t->rep), 0);
	free(cgs);
	assert_int_equal(t->rep.cgroups_failed, 0);
}

/* A leaf /x of a hybrid host: its v1 memcg record, its unified record with
 * the pressure witness (each file's "some" total 10 us), its files. */
static struct acct_bpf_record *steady_hybrid_leaf(struct tree *t, const char *path)
{
	char rel[64];
	add(t, path, MEM | UNI);
	struct acct_bpf_record *m = record(path, ACCT_HIER_MEMORY, ACCT_BPF_F_MEMCG | ACCT_BPF_F_POPULATED);
	m->usage = 30;
	mem_file(t, path, "memory.usage_in_bytes", 30 * PAGE);
	snprintf(rel, sizeof(rel), "memory%s/memory.stat", path);
	xwrite(t->base, rel, "total_inactive_file 0\ntotal_anon 122880\n");
	struct acct_bpf_record *u = record(path, ACCT_HIER_UNIFIED, ACCT_BPF_F_POPULATED | ACCT_BPF_F_PSI);
	u->nr_psi = 1;
	u->psi_total[0] = 30 * 1000;
	snprintf(rel, sizeof(rel), "unified%s/cgroup.events", path);
	xwrite(t->base, rel, "populated 1\nfrozen 0\n");
	snprintf(rel, sizeof(rel), "unified%s/cpu.stat", path);
	xwrite(t->base, rel, "usage_usec 100\nuser_usec 100\nsystem_usec 0\n");
	static const char *const res[] = { "cpu", "memory", "io" };
	for (size_t i = 0; i < ELEMENTSOF(res); i++) {
		snprintf(rel, sizeof(rel), "unified%s/%s.pressure", path, res[i]);
		xwrite(t->base, rel,
		       "some avg10=0.00 avg60=0.00 avg300=0.00 total=10\nfull avg10=0.00 avg60=0.00 avg300=0.00 total=0\n");
	}
	return u;
}

/* Steady cgroups of a hybrid host (sampler-steady.c): in a pass that walks
 * the unified hierarchy for the pressure witness, light where the witness
 * stands still, a full visit (its pressure read) where it moved; in a slow
 * pass (v1 memcg records), light where the slow group is not due, a full
 * visit once it is, and after the bytes budget changed. */
static void test_steady_hybrid(void **state)
{
	struct tree *t = *state;
	t->L.v2_memory = false;
	fake.serves = MEM | UNI;
	add(t, "/", MEM | UNI);
	xwrite(t->base, "unified/cpu.stat", "usage_usec 500\nuser_usec 500\nsystem_usec 0\n");
	steady_hybrid_leaf(t, "/a");
	struct acct_bpf_record *ub = steady_hybrid_leaf(t, "/b");
	uint64_t t0 = acct_now_us();

	/* the slow group read, then steady within 10 s of the walk of the
	 * unified hierarchy that the first pass made */
	pass_at(t, ACCT_PASS_FAST | ACCT_PASS_SLOW, t0);
	int passes = 0;
	do
		pass_at(t, ACCT_PASS_FAST, t0 + (uint64_t)++passes * 1000);
	while (t->rep.steady < 2 && passes < 300);
	assert_int_equal(t->rep.steady, 2);
	size_t walks = fake.walks[ACCT_HIER_UNIFIED];

	/* the witness's walk: both still, light */
	pass_at(t, ACCT_PASS_FAST, t0 + 11 * USEC_PER_SEC);
	assert_int_equal(fake.walks[ACCT_HIER_UNIFIED], walks + 1);
	assert_int_equal(t->rep.steady, 2);
	assert_int_equal(t->rep.bpf_psi_still, 2);
	assert_int_equal(t->rep.parts[ACCT_PART_PSI][ACCT_OUTCOME_READ], 0);

	/* a slow pass where the slow group is not due: light, counted skipped */
	pass_at(t, ACCT_PASS_FAST | ACCT_PASS_SLOW, t0 + 12 * USEC_PER_SEC);
	assert_int_equal(t->rep.steady, 2);
	assert_int_equal(t->rep.parts[ACCT_PART_MEMORY_STAT][ACCT_OUTCOME_SKIPPED], 3); /* and the root's */
	assert_int_equal(t->rep.parts[ACCT_PART_MEMORY_STAT][ACCT_OUTCOME_READ], 0);

	/* b stalled: the witness moved, b's pressure is read */
	ub->psi_total[0] = 31 * 1000;
	xwrite(t->base, "unified/b/cpu.pressure",
	       "some avg10=0.00 avg60=0.00 avg300=0.00 total=11\nfull avg10=0.00 avg60=0.00 avg300=0.00 total=0\n");
	walks = fake.walks[ACCT_HIER_UNIFIED];
	pass_at(t, ACCT_PASS_FAST, t0 + 23 * USEC_PER_SEC);
	assert_int_equal(fake.walks[ACCT_HIER_UNIFIED], walks + 1);
	assert_int_equal(t->rep.steady, 1);
	assert_int_equal(t->rep.parts[ACCT_PART_PSI][ACCT_OUTCOME_READ], 1);

	/* a pass a second (the witness every 10 s at least): both steady
	 * again, their pressure seen still */
	for (uint64_t sec = 24; sec < 90; sec++)
		pass_at(t, ACCT_PASS_FAST, t0 + sec * USEC_PER_SEC);
	assert_int_equal(t->rep.steady, 2);
	/* another bytes budget (a reload): a new table, full visits */
	struct acct_ledger_budgets budgets = { .bytes = 2 << 20 };
	acct_ledger_set_budgets(t->ledger, &budgets);
	pass_at(t, ACCT_PASS_FAST, t0 + 90 * USEC_PER_SEC - 500000);
	assert_int_equal(t->rep.steady, 0);
	pass_at(t, ACCT_PASS_FAST, t0 + 90 * USEC_PER_SEC - 400000);
	assert_int_equal(t->rep.steady, 2);
	/* the slow group due by its age (a minute and its spread, under
	 * 30 s): read in full */
	pass_at(t, ACCT_PASS_FAST | ACCT_PASS_SLOW, t0 + 90 * USEC_PER_SEC);
	assert_int_equal(t->rep.parts[ACCT_PART_MEMORY_STAT][ACCT_OUTCOME_READ], 3);
	assert_int_equal(t->rep.steady, 0);
}

/* A steady leaf taken while its pruning ancestor is still being read by
 * the other worker waits for the end of that worker's share instead of a
 * full visit (sampler-steady.c, sampler_steady_defer()); every cgroup is
 * visited exactly once all the same. Two workers; the root's CPU read is
 * held until the other worker, past every other leaf (all deferred), reads
 * /h's (which changed, so its visit is full). */
static void test_steady_later(void **state)
{
	struct tree *t = *state;
	t->o.workers = 2;
	add(t, "/", UNI);
	xwrite(t->base, "unified/cpu.stat", "usage_usec 500\nuser_usec 500\nsystem_usec 0\n");
	static const char leaves[] = "abcdefg"; /* the fake holds 8 records a hierarchy */
	for (const char *l = leaves; *l; l++) {
		char path[8] = { '/', *l, 0 };
		steady_leaf(t, path, 100);
	}
	struct acct_bpf_record *rh = steady_leaf(t, "/h", 100);
	int passes = 0;
	do
		pass(t, ACCT_PASS_FAST);
	while (t->rep.steady < 8 && ++passes < 300);
	assert_int_equal(t->rep.steady, 8);

	rh->usage = 31;
	mem_file(t, "/h", "memory.current", 31 * PAGE);
	snprintf(held.hold_path, sizeof(held.hold_path), "%s/unified/cpu.stat", t->base);
	snprintf(held.release_path, sizeof(held.release_path), "%s/unified/h/cpu.stat", t->base);
	held.released = false;
	pass(t, ACCT_PASS_FAST);
	held.hold_path[0] = 0;
	assert_true(held.released);
	assert_int_equal(t->rep.cgroups_failed, 0);
	/* each counted once, light or full: none lost, none twice */
	assert_int_equal(t->rep.parts[ACCT_PART_MEMORY][ACCT_OUTCOME_READ], 8 + 1); /* and the root */
	assert_int_equal(t->rep.parts[ACCT_PART_CPU][ACCT_OUTCOME_PRUNED] + t->rep.parts[ACCT_PART_CPU][ACCT_OUTCOME_READ],
			 8 + 1);
	/* light where the root had published when they were visited again
	 * (how many depends on the scheduling: not asserted); h's visit full */
	assert_true(t->rep.steady <= 7);
}

/* Steady cgroups in a load pass (sampler-steady.c): light where this walk
 * counts their threads as their last load visit did, none active; a thread
 * that became active, or one more, makes a full visit. */
static void test_steady_load(void **state)
{
	struct tree *t = *state;
	t->o.task_walk = WALK;
	add(t, "/", UNI);
	xwrite(t->base, "unified/cpu.stat", "usage_usec 500\nuser_usec 500\nsystem_usec 0\n");
	steady_leaf(t, "/a", 100);
	steady_leaf(t, "/b", 200);
	task(1001, "/a", ACCT_HIER_UNIFIED, 0);
	task(1002, "/b", ACCT_HIER_UNIFIED, 0);
	pass(t, ACCT_PASS_FAST | ACCT_PASS_LOAD);
	int passes = 0;
	do
		pass(t, ACCT_PASS_FAST);
	while (t->rep.steady < 2 && ++passes < 300);
	assert_int_equal(t->rep.steady, 2);
	pass(t, ACCT_PASS_FAST | ACCT_PASS_LOAD);
	assert_int_equal(t->rep.steady, 2);
	assert_int_equal(t->rep.parts[ACCT_PART_LOAD][ACCT_OUTCOME_READ], 3);
	/* b's thread runnable now: b's load visit is a full one */
	tw.n = 0;
	task(1001, "/a", ACCT_HIER_UNIFIED, 0);
	task(1002, "/b", ACCT_HIER_UNIFIED, ACCT_TASK_F_ACTIVE);
	pass(t, ACCT_PASS_FAST | ACCT_PASS_LOAD);
	assert_int_equal(t->rep.steady, 1);
	/* a thread more in a: a's too */
	tw.n = 0;
	task(1001, "/a", ACCT_HIER_UNIFIED, 0);
	task(1003, "/a", ACCT_HIER_UNIFIED, 0);
	pass(t, ACCT_PASS_FAST | ACCT_PASS_LOAD);
	assert_int_equal(t->rep.steady, 0); /* and b's count had an active thread */
}

/* The cross-check's memory file opened as descriptor 0 (a daemon started
 * with its standard input closed) is read like any other. */
static void test_stdin_closed(void **state)
{
	struct tree *t = *state;
	add(t, "/a", UNI);
	struct acct_bpf_record *ra = record("/a", ACCT_HIER_UNIFIED, ACCT_BPF_F_MEMCG);
	ra->usage = 30;
	mem_file(t, "/a", "memory.current", 30 * PAGE);
	pass(t, ACCT_PASS_FAST);
	assert_int_equal(t->rep.bpf_checks, 1);
	int saved = dup(0);
	assert_true(saved > 0);
	close(0); /* the walk's first open, before the pass reads any file, gets 0 */
	pass(t, ACCT_PASS_FAST);
	assert_int_equal(dup2(saved, 0), 0);
	close(saved);
	assert_int_equal(t->rep.bpf_checks, 1);
	assert_int_equal(t->rep.bpf_mismatches, 0);
}

/* A record's stats replace the ledger's, a 0 included; over the budget a
 * memory.stat that cannot be read leaves the record's. */
static void test_stats_kept(void **state)
{
	struct tree *t = *state;
	struct acct_cgroup *a = add(t, "/a", UNI);
	struct acct_bpf_record *ra = record("/a", ACCT_HIER_UNIFIED, ACCT_BPF_F_MEMCG | ACCT_BPF_F_STATS);
	ra->usage = 30;
	set_stats(t, "/a", ra);
	mem_file(t, "/a", "memory.current", 30 * PAGE);
	pass(t, ACCT_PASS_FAST);
	assert_int_equal(memstat(t, a, "anon"), 12 * PAGE);
	state_of(ra)[2] = 0; /* anon */
	pass(t, ACCT_PASS_FAST);
	assert_int_equal(memstat(t, a, "anon"), 0);

	/* a bound of 456 pages over a budget of 1 MiB, and no memory.stat */
	state_of(ra)[2] = 20;
	ra->stats_updates = 200;
	struct acct_ledger_budgets b = { .bytes = 1 << 20 };
	acct_ledger_set_budgets(t->ledger, &b);
	assert_true(acct_memcg_stat_bound(&t->o.batching, 200) > (uint64_t)b.bytes);
	xrm_rf(t->base, "unified/a/memory.stat");
	pass(t, ACCT_PASS_FAST);
	assert_int_equal(t->rep.bpf_stat_reads, 1);
	assert_int_equal(memstat(t, a, "anon"), 20 * PAGE);
	assert_int_equal(memstat_bound(a), acct_memcg_stat_bound(&t->o.batching, 200));
}

/* ---- threads and load from the task walk (sample-load.c) -------------------- */

/* The load's sums of every live cgroup at `at` (us). */
static void aggregate(struct tree *t, uint64_t at)
{
	struct acct_cgroup **cgs = NULL;
	int n = acct_ledger_snapshot(t->ledger, false, &cgs);
	assert_true(n >= 0);
	acct_sampler_aggregate_load(t->s, cgs, (size_t)n, at);
	free(cgs);
}

/* The 1-minute load after one update from 0 with `active` threads. */
static unsigned long load1(unsigned active)
{
	struct acct_loadavg l = { { 0 } };
	acct_loadavg_update(&l, active);
	return l.avenrun[ACCT_AVG_1MIN];
}

/* A cgroup's own threads and active ones are its records' in the hierarchy
 * it lists its threads in (unified, else v1 memory: only the slots asked
 * for), each thread once; the sampler's own threads (worker 0, the thread
 * that started the pass) are never active, acctd's others are; the root
 * counts every thread of its hierarchy, in tracked cgroups or not. A
 * cgroup that has no thread left at the next walk has none. */
static void test_task_walk(void **state)
{
	struct tree *t = *state;
	t->o.task_walk = WALK;
	struct acct_cgroup *root = add(t, "/", UNI);
	struct acct_cgroup *a = add(t, "/a", UNI);
	struct acct_cgroup *b = add(t, "/b", UNI);
	struct acct_cgroup *c = add(t, "/c", MEM); /* only in the v1 memory tree */
	struct acct_cgroup *d = add(t, "/d", UNI); /* no thread */
	unsigned self = (unsigned)gettid();
	task(1001, "/a", ACCT_HIER_UNIFIED, ACCT_TASK_F_ACTIVE);
	task(1002, "/a", ACCT_HIER_UNIFIED, ACCT_TASK_F_ACTIVE);
	task(1003, "/b", ACCT_HIER_UNIFIED, 0);
	task(WORKER_TID, "/b", ACCT_HIER_UNIFIED, ACCT_TASK_F_ACTIVE | ACCT_TASK_F_SELF);
	task(self, "/b", ACCT_HIER_UNIFIED, ACCT_TASK_F_ACTIVE | ACCT_TASK_F_SELF);
	/* another thread of acctd: active like any other */
	task(1004, "/b", ACCT_HIER_UNIFIED, ACCT_TASK_F_ACTIVE | ACCT_TASK_F_SELF);
	/* in the unified root and in /c of the memory tree */
	task(1005, "/", ACCT_HIER_UNIFIED, ACCT_TASK_F_ACTIVE)->cgroup[ACCT_HIER_MEMORY] = id_of(ACCT_HIER_MEMORY, 'c');
	/* in a cgroup the ledger does not track; its cpuacct cgroup is not
	 * asked for (no cgroup of the pass lists its threads there) */
	task(1006, "/x", ACCT_HIER_UNIFIED, ACCT_TASK_F_ACTIVE)->cgroup[ACCT_HIER_CPUACCT] = 7;

	pass(t, ACCT_PASS_LOAD);
	aggregate(t, now);
	assert_int_equal(tw.reads, 1);
	assert_int_equal(tw.slots, UNI | MEM);
	assert_int_equal(t->rep.task_records, 8);
	assert_int_equal(t->rep.errors[ACCT_ERR_UNREADABLE], 0);
	assert_int_equal(value(a, ACCT_Q_TASKS), 2);
	assert_int_equal(a->loadavg[0], load1(2));
	assert_int_equal(value(b, ACCT_Q_TASKS), 4);
	assert_int_equal(b->loadavg[0], load1(1));
	assert_int_equal(value(c, ACCT_Q_TASKS), 1);
	assert_int_equal(c->loadavg[0], load1(1));
	assert_int_equal(value(d, ACCT_Q_TASKS), 0);
	assert_int_equal(d->loadavg[0], 0);
	assert_int_equal(value(root, ACCT_Q_TASKS), 8);
	assert_int_equal(root->loadavg[0], load1(5));
	assert_int_equal(root->load_since_us, now);

	/* a's two threads gone and b's 1003 moved to a, c's gone: the counts
	 * are this walk's alone */
	tw.n = 0;
	task(1003, "/a", ACCT_HIER_UNIFIED, 0);
	task(1004, "/b", ACCT_HIER_UNIFIED, 0);
	pass(t, ACCT_PASS_LOAD);
	aggregate(t, now);
	assert_int_equal(value(a, ACCT_Q_TASKS), 1);
	assert_int_equal(value(b, ACCT_Q_TASKS), 1);
	assert_int_equal(value(c, ACCT_Q_TASKS), 0);
	assert_int_equal(value(root, ACCT_Q_TASKS), 2);
}

/* Only a LOAD pass walks the tasks (the others read no threads), and one
 * over no cgroups does not; a cgroup in none of the hierarchies that list
 * threads has no task count, whatever the walk holds (here a thread in
 * the unified root, whose cgroup id is 1 on cgroupfs). */
static void test_task_walk_when(void **state)
{
	struct tree *t = *state;
	t->o.task_walk = WALK;
	assert_int_equal(acct_sampler_run(sampler(t), NULL, 0, ACCT_PASS_LOAD, acct_now_us(), &t->rep), 0);
	assert_int_equal(tw.reads, 0);
	struct acct_cgroup *a = add(t, "/a", UNI);
	struct acct_cgroup *z = add(t, "/z", 0);
	record("/a", ACCT_HIER_UNIFIED, ACCT_BPF_F_MEMCG)->usage = 30;
	mem_file(t, "/a", "memory.current", 30 * PAGE);
	task(1001, "/a", ACCT_HIER_UNIFIED, 0);
	task(1002, "/", ACCT_HIER_UNIFIED, 0)->cgroup[ACCT_HIER_UNIFIED] = 1;
	pass(t, ACCT_PASS_FAST);
	assert_int_equal(tw.reads, 0);
	assert_int_equal(value(a, ACCT_Q_MEMORY), 30 * PAGE);
	pass(t, ACCT_PASS_LOAD);
	aggregate(t, now);
	assert_int_equal(tw.reads, 1);
	assert_int_equal(value(a, ACCT_Q_TASKS), 1);
	assert_int_equal(value(z, ACCT_Q_TASKS), INT64_MIN);
}

/* A walk that fails, or whose sums find no memory, is one unreadable in the
 * pass's report, and the threads come from the files that pass: each
 * cgroup's list, the root's adding its children's. (No collector: with one,
 * the walk's errors are reported with the cgroup walks' in a pass that also
 * walks cgroups, as acctd's load passes, always fast passes too, do.) */
static void test_task_walk_fails(void **state)
{
	struct tree *t = *state;
	t->o.task_walk = WALK;
	t->o.collector = NULL;
	struct acct_cgroup *root = add(t, "/", UNI);
	struct acct_cgroup *a = add(t, "/a", UNI);
	/* no such threads: counted, not active */
	xwrite(t->base, "unified/cgroup.threads", "4000001\n");
	xwrite(t->base, "unified/a/cgroup.threads", "4000002\n4000003\n");
	task(1001, "/a", ACCT_HIER_UNIFIED, 0);

	tw.error = -EIO;
	pass(t, ACCT_PASS_LOAD);
	aggregate(t, now);
	assert_int_equal(tw.reads, 1);
	assert_int_equal(t->rep.errors[ACCT_ERR_UNREADABLE], 1);
	assert_int_equal(value(a, ACCT_Q_TASKS), 2);
	assert_int_equal(value(root, ACCT_Q_TASKS), 3);

	tw.error = 0;
	tw.fail_table = true;
	pass(t, ACCT_PASS_LOAD);
	aggregate(t, now);
	assert_false(tw.fail_table); /* it did fail */
	assert_int_equal(t->rep.errors[ACCT_ERR_UNREADABLE], 1);
	assert_int_equal(value(a, ACCT_Q_TASKS), 2);
	assert_int_equal(value(root, ACCT_Q_TASKS), 3);

	pass(t, ACCT_PASS_LOAD);
	aggregate(t, now);
	assert_int_equal(t->rep.errors[ACCT_ERR_UNREADABLE], 0);
	assert_int_equal(value(a, ACCT_Q_TASKS), 1);
	assert_int_equal(value(root, ACCT_Q_TASKS), 1);
}

/* n cgroups /a, /b, ... each with one thread in the walk and a
 * cgroup.threads file listing one, but the cgroup of index `two`, whose
 * file lists two (a mismatch for the task check). */
static void one_thread_each(struct tree *t, unsigned n, unsigned two)
{
	for (unsigned i = 0; i < n; i++) {
		char name[3] = { '/', (char)('a' + i), 0 }, rel[64];
		add(t, name, UNI);
		task(1001 + i, name, ACCT_HIER_UNIFIED, 0);
		snprintf(rel, sizeof(rel), "unified%s/cgroup.threads", name);
		xwrite(t->base, rel, i == two ? "1\n2\n" : "1\n");
	}
}

/* The cross-check: four cgroups' thread lists are read around the walk, from
 * a cursor that moves by four (of six: from the first, the fifth, the third);
 * a walk's count that differs from two equal lists is a mismatch, an empty
 * list included. A list that cannot be read or parsed is no check: the
 * next cgroups' are read instead. */
static void test_task_check(void **state)
{
	struct tree *t = *state;
	t->o.task_walk = WALK;
	one_thread_each(t, 6, 2); /* /a../f, /c's file listing two */
	pass(t, ACCT_PASS_LOAD); /* a, b, c, d */
	assert_int_equal(t->rep.task_checks, 4);
	assert_int_equal(t->rep.task_mismatches, 1);
	assert_non_null(strstr(t->rep.last_mismatch, "/c threads: task walk 1 not in [2, 2]"));
	pass(t, ACCT_PASS_LOAD); /* e, f, a, b */
	assert_int_equal(t->rep.task_checks, 4);
	assert_int_equal(t->rep.task_mismatches, 0);
	pass(t, ACCT_PASS_LOAD); /* c, d, e, f: the windows tile the list */
	assert_int_equal(t->rep.task_mismatches, 1);
	pass(t, ACCT_PASS_LOAD); /* a, b, c, d */

	xwrite(t->base, "unified/c/cgroup.threads", "1\n");
	xrm_rf(t->base, "unified/d/cgroup.threads");
	xwrite(t->base, "unified/e/cgroup.threads", "1\nx\n");
	xwrite(t->base, "unified/f/cgroup.threads", "");
	pass(t, ACCT_PASS_LOAD); /* f, a, b, c (e's file is not a list) */
	assert_int_equal(t->rep.task_checks, 4);
	assert_int_equal(t->rep.task_mismatches, 1);
	assert_non_null(strstr(t->rep.last_mismatch, "/f threads: task walk 1 not in [0, 0]"));
}

/* The task check's windows tile the list too (as test_check_rotation's):
 * of seven, the second pass checks e, f, g, a. */
static void test_task_check_tiles(void **state)
{
	struct tree *t = *state;
	t->o.task_walk = WALK;
	one_thread_each(t, 7, 6); /* /a../g, /g's file listing two */
	pass(t, ACCT_PASS_LOAD);
	assert_int_equal(t->rep.task_checks, 4);
	assert_int_equal(t->rep.task_mismatches, 0);
	pass(t, ACCT_PASS_LOAD);
	assert_int_equal(t->rep.task_checks, 4);
	assert_int_equal(t->rep.task_mismatches, 1);
	assert_non_null(strstr(t->rep.last_mismatch, "/g threads"));
}

/* ACCT_BPF_MISMATCH_PASSES LOAD passes in a row with a mismatch put the
 * threads back on files for good. */
static void test_task_fallback(void **state)
{
	struct tree *t = *state;
	t->o.task_walk = WALK;
	struct acct_cgroup *a = add(t, "/a", UNI);
	task(1001, "/a", ACCT_HIER_UNIFIED, 0);
	xwrite(t->base, "unified/a/cgroup.threads", "4000001\n4000002\n");
	for (int i = 1; i <= ACCT_BPF_MISMATCH_PASSES; i++) {
		pass(t, ACCT_PASS_LOAD);
		assert_int_equal(t->rep.task_mismatches, 1);
		assert_int_equal(t->rep.task_fallback, i == ACCT_BPF_MISMATCH_PASSES);
	}
	aggregate(t, now);
	assert_int_equal(value(a, ACCT_Q_TASKS), 2); /* that pass read files */
	pass(t, ACCT_PASS_LOAD);
	assert_int_equal(tw.reads, ACCT_BPF_MISMATCH_PASSES);
	assert_int_equal(t->rep.task_checks, 0);
}

/* The averages: their start at a cgroup's first load pass, a pass up to
 * 7.5 s after the last one period (rounded to the nearest 5 s), later
 * passes that many periods at once. */
static void test_load_periods(void **state)
{
	struct tree *t = *state;
	t->o.task_walk = WALK;
	struct acct_cgroup *a = add(t, "/a", UNI);
	task(1001, "/a", ACCT_HIER_UNIFIED, ACCT_TASK_F_ACTIVE);
	pass(t, ACCT_PASS_LOAD);
	uint64_t t0 = now;
	struct acct_loadavg l = { { 0 } };
	aggregate(t, t0);
	acct_loadavg_update(&l, 1);
	assert_int_equal(a->load_since_us, t0);
	assert_int_equal(a->loadavg[0], l.avenrun[0]);
	aggregate(t, t0 + 7499999);
	acct_loadavg_update(&l, 1);
	assert_int_equal(a->load_since_us, t0);
	assert_int_equal(a->loadavg[0], l.avenrun[0]);
	assert_int_equal(a->loadavg[2], l.avenrun[2]);
	aggregate(t, t0 + 7499999 + 7500000);
	acct_loadavg_update_missed(&l, 1, 2);
	assert_int_equal(a->loadavg[0], l.avenrun[0]);
	assert_int_equal(a->loadavg[2], l.avenrun[2]);
}

/* Without a walk, a thread of a cgroup's list is active where its
 * /proc/TID/stat says R (a thread that spins), also when that file is opened
 * as descriptor 0 (a daemon started with its standard input closed). */
static void *spinner(void *arg)
{
	int *p = arg; /* p[0]: stop; p[1]: the tid, out */
	__atomic_store_n(&p[1], (int)gettid(), __ATOMIC_RELEASE);
	while (!__atomic_load_n(&p[0], __ATOMIC_RELAXED))
		;
	return NULL;
}

static void test_load_files_stdin_closed(void **state)
{
	struct tree *t = *state;
	t->o.collector = NULL;
	int p[2] = { 0, 0 };
	pthread_t th;
	assert_int_equal(pthread_create(&th, NULL, spinner, p), 0);
	while (!__atomic_load_n(&p[1], __ATOMIC_ACQUIRE))
		usleep(1000);
	struct acct_cgroup *a = add(t, "/a", UNI);
	char text[32];
	snprintf(text, sizeof(text), "%d\n", p[1]);
	xwrite(t->base, "unified/a/cgroup.threads", text);
	pass(t, ACCT_PASS_LOAD); /* its list's descriptor kept from here */
	struct acct_loadavg l = { { 0 } };
	uint64_t t0 = now;
	aggregate(t, t0);
	acct_loadavg_update(&l, 1);
	assert_int_equal(value(a, ACCT_Q_TASKS), 1);
	assert_int_equal(a->loadavg[0], l.avenrun[0]);

	int saved = dup(0);
	assert_true(saved > 0);
	close(0); /* the pass's first open, the thread's stat, gets 0 */
	pass(t, ACCT_PASS_LOAD);
	assert_int_equal(dup2(saved, 0), 0);
	close(saved);
	aggregate(t, t0 + 5000000);
	acct_loadavg_update(&l, 1);
	assert_int_equal(a->loadavg[0], l.avenrun[0]);
	__atomic_store_n(&p[0], 1, __ATOMIC_RELAXED);
	assert_int_equal(pthread_join(th, NULL), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_values_v2, setup, teardown),
		cmocka_unit_test_setup_teardown(test_slow_pass_keeps_record, setup, teardown),
		cmocka_unit_test_setup_teardown(test_numa_nodes, setup, teardown),
		cmocka_unit_test_setup_teardown(test_short_record, setup, teardown),
		cmocka_unit_test_setup_teardown(test_unchanged, setup, teardown),
		cmocka_unit_test_setup_teardown(test_empty_quiet, setup, teardown),
		cmocka_unit_test_setup_teardown(test_empty_quiet_lost_watch, setup, teardown),
		cmocka_unit_test_setup_teardown(test_empty_quiet_dirty, setup, teardown),
		cmocka_unit_test_setup_teardown(test_budget, setup, teardown),
		cmocka_unit_test_setup_teardown(test_v1, setup, teardown),
		cmocka_unit_test_setup_teardown(test_fallback, setup, teardown),
		cmocka_unit_test_setup_teardown(test_unconfirmed, setup, teardown),
		cmocka_unit_test_setup_teardown(test_check_rotation, setup, teardown),
		cmocka_unit_test_setup_teardown(test_walk_alone, setup, teardown),
		cmocka_unit_test_setup_teardown(test_kernel_due, setup, teardown),
		cmocka_unit_test_setup_teardown(test_walk_alone_stranger, setup, teardown),
		cmocka_unit_test_setup_teardown(test_walk_alone_no_memory, setup, teardown),
		cmocka_unit_test_setup_teardown(test_census, setup, teardown),
		cmocka_unit_test_setup_teardown(test_census_scope, setup, teardown),
		cmocka_unit_test_setup_teardown(test_psi_walk, setup, teardown),
		cmocka_unit_test_setup_teardown(test_steady, setup, teardown),
		cmocka_unit_test_setup_teardown(test_steady_hybrid, setup, teardown),
		cmocka_unit_test_setup_teardown(test_steady_later, setup, teardown),
		cmocka_unit_test_setup_teardown(test_steady_load, setup, teardown),
		cmocka_unit_test_setup_teardown(test_psi_witness_still, setup, teardown),
		cmocka_unit_test_setup_teardown(test_stats_kept, setup, teardown),
		cmocka_unit_test_setup_teardown(test_stdin_closed, setup, teardown),
		cmocka_unit_test_setup_teardown(test_task_walk, setup, teardown),
		cmocka_unit_test_setup_teardown(test_task_walk_when, setup, teardown),
		cmocka_unit_test_setup_teardown(test_task_walk_fails, setup, teardown),
		cmocka_unit_test_setup_teardown(test_task_check, setup, teardown),
		cmocka_unit_test_setup_teardown(test_task_check_tiles, setup, teardown),
		cmocka_unit_test_setup_teardown(test_task_fallback, setup, teardown),
		cmocka_unit_test_setup_teardown(test_load_periods, setup, teardown),
		cmocka_unit_test_setup_teardown(test_load_files_stdin_closed, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
