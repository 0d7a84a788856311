/* test-bpf-collector.c - the BPF collector (lib/bpf) against this host's real
 * v1 memory cgroups and their files: the same cgroup set, page counters equal
 * to the files, the stat index map and per-node values within their bounds,
 * walks under churn of 1,000 cgroups, read_one, the fallback reasons (the
 * bounds' arithmetic is test-memcg-bounds.c's).
 *
 * The file is long because each of those needs real cgroups set up around it
 * (workloads held still, trees made and removed, pins on a private bpffs,
 * privileges dropped in a child) and checked against the kernel's own files;
 * split, the set-up shared by all of them would have to be repeated.
 *
 * It needs root, a v1 memory hierarchy and a kernel that loads the program,
 * and exits 77 saying which is missing. Every cgroup made lives under
 * <memory>/bpf-tests-<pid> and is removed on every exit path (cleanup(),
 * also from atexit). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <grp.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <bpf/btf.h>
#include <cmocka.h>
#include <numa.h>

#include "bpf-collector.h"
#include "cgroup-layout.h"
#include "util.h"

/* ---- real cgroups: bookkeeping and cleanup -------------------------------- */

#define MAX_MADE 4096
#define MAX_KIDS 8

static struct acct_hierarchies *layout;
static struct acct_bpf_collector *coll;
static struct acct_bpf_collector *coll_unified; /* the unified hierarchy's (pressure), NULL: none */
static const char *unified_missing = "no unified hierarchy";
static const char *mem_root; /* the v1 memory hierarchy */
static char base[PATH_MAX];  /* <mem_root>/bpf-tests-<pid> */
static char *made[MAX_MADE]; /* directories made, in order; NULL once removed */
static size_t n_made;
static pid_t kids[MAX_KIDS];
static size_t n_kids;
static pid_t owner; /* the process that cleans up (not forked children) */
static char bpffs[64];   /* a private bpffs mount for the pins, "" when none */
static long page_size;

static void cleanup_bpffs(void)
{
	if (bpffs[0]) {
		(void)umount2(bpffs, MNT_DETACH); /* the pins go with the mount */
		(void)rmdir(bpffs);
		bpffs[0] = 0;
	}
}

static void cleanup(void)
{
	if (getpid() != owner)
		return;
	for (size_t i = 0; i < n_kids; i++) {
		kill(kids[i], SIGKILL);
		(void)waitpid(kids[i], NULL, 0);
	}
	n_kids = 0;
	for (size_t i = n_made; i-- > 0;) {
		if (made[i] && rmdir(made[i]) < 0 && errno != ENOENT)
			fprintf(stderr, "cannot remove %s: %m\n", made[i]);
		free(made[i]);
		made[i] = NULL;
	}
	n_made = 0;
	cleanup_bpffs();
}

static char *path_of(const char *rel)
{
	char *p;
	assert_true(asprintf(&p, "%s%s%s", base, *rel ? "/" : "", rel) >= 0);
	return p;
}

/* Make base/rel; returns its inode. */
static uint64_t cg_make(const char *rel)
{
	assert_true(n_made < MAX_MADE);
	char *p = path_of(rel);
	if (mkdir(p, 0755) < 0) {
		int e = errno;
		free(p);
		fail_msg("mkdir %s/%s: %s", base, rel, strerror(e));
	}
	made[n_made++] = p;
	struct stat st;
	assert_int_equal(stat(p, &st), 0);
	return st.st_ino;
}

static void cg_remove(const char *rel)
{
	_cleanup_free_ char *p = path_of(rel);
	assert_int_equal(rmdir(p), 0);
	for (size_t i = 0; i < n_made; i++)
		if (made[i] && strcmp(made[i], p) == 0) {
			free(made[i]);
			made[i] = NULL;
		}
}

static uint64_t ino_of(const char *rel)
{
	_cleanup_free_ char *p = path_of(rel);
	struct stat st;
	assert_int_equal(stat(p, &st), 0);
	return st.st_ino;
}

/* A file of base/rel as a number; false where it is absent. */
static bool read_u64(const char *rel, const char *file, uint64_t *ret)
{
	_cleanup_free_ char *d = path_of(rel);
	char p[PATH_MAX + 64], buf[64];
	snprintf(p, sizeof(p), "%s/%s", d, file);
	_cleanup_close_ int fd = open(p, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	ssize_t n = read(fd, buf, sizeof(buf) - 1);
	assert_true(n > 0);
	buf[n] = 0;
	char *end;
	errno = 0;
	*ret = strtoull(buf, &end, 10);
	assert_true(errno == 0 && end != buf);
	return true;
}

static void write_file(const char *rel, const char *file, const char *value)
{
	_cleanup_free_ char *d = path_of(rel);
	char p[PATH_MAX + 64];
	snprintf(p, sizeof(p), "%s/%s", d, file);
	_cleanup_close_ int fd = open(p, O_WRONLY | O_CLOEXEC);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, value, strlen(value)), (ssize_t)strlen(value));
}

/* Whole text of base/rel/file (caller frees), NULL where absent. */
static char *read_text(const char *rel, const char *file)
{
	_cleanup_free_ char *d = path_of(rel);
	char p[PATH_MAX + 64];
	snprintf(p, sizeof(p), "%s/%s", d, file);
	_cleanup_close_ int fd = open(p, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return NULL;
	size_t size = 1 << 16, len = 0;
	char *b = malloc(size);
	assert_non_null(b);
	for (ssize_t n; (n = read(fd, b + len, size - len - 1)) > 0;)
		len += (size_t)n;
	b[len] = 0;
	return b;
}

/* "key value" lines: the value of key (a whole word), false where absent. */
static bool text_value(const char *text, const char *key, uint64_t *ret)
{
	size_t kl = strlen(key);
	for (const char *l = text; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL)
		if (strncmp(l, key, kl) == 0 && (l[kl] == ' ' || l[kl] == '=')) {
			*ret = strtoull(l + kl + 1, NULL, 10);
			return true;
		}
	return false;
}

/* A process in base/rel that maps anon_mib of touched anonymous memory,
 * writes file_mib of page cache (synced a MiB at a time, so that reclaim under
 * a low limit finds clean pages), then pauses until cleanup() kills it. */
static void spawn(const char *rel, unsigned anon_mib, unsigned file_mib)
{
	int go[2], ready[2];
	assert_int_equal(pipe(go), 0);
	assert_int_equal(pipe(ready), 0);
	assert_true(n_kids < MAX_KIDS);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		char c;
		close(go[1]);
		close(ready[0]);
		if (read(go[0], &c, 1) != 1)
			_exit(1);
		size_t n = (size_t)anon_mib << 20;
		volatile char *m = n ? malloc(n) : NULL;
		for (size_t i = 0; i < n; i += 512)
			m[i] = (char)i;
		if (file_mib) {
			char tmp[] = "/var/tmp/bpf-tests-XXXXXX";
			int fd = mkstemp(tmp);
			if (fd < 0)
				_exit(1);
			unlink(tmp);
			static char chunk[1 << 20];
			memset(chunk, 'x', sizeof(chunk));
			for (unsigned i = 0; i < file_mib; i++)
				if (write(fd, chunk, sizeof(chunk)) != (ssize_t)sizeof(chunk) || fdatasync(fd) < 0)
					_exit(1);
			/* fd stays open: the pages stay charged here */
		}
		if (write(ready[1], "r", 1) != 1)
			_exit(1);
		for (;;)
			pause();
	}
	kids[n_kids++] = pid;
	close(go[0]);
	close(ready[1]);
	char pidtext[32];
	snprintf(pidtext, sizeof(pidtext), "%d", (int)pid);
	write_file(rel, "cgroup.procs", pidtext);
	char c;
	assert_int_equal(write(go[1], "g", 1), 1);
	assert_int_equal(read(ready[0], &c, 1), 1);
	close(go[1]);
	close(ready[0]);
}

/* ---- the tree the tests share ------------------------------------------------ */

/* base
 *   a          (no task of its own)
 *     a1       task: 8 MiB anon, 2 MiB file
 *     a2       empty
 *   b          task: 4 MiB anon; limit 64 MiB
 *   lim        task: 24 MiB of file through an 8 MiB limit (failcnt > 0)
 *   empty                                                             */
static const struct node {
	const char *rel;
	int depth; /* below base */
	int descendants;
	bool populated;
} tree[] = {
	{ "", 0, 6, true }, { "a", 1, 2, true },    { "a/a1", 2, 0, true }, { "a/a2", 2, 0, false },
	{ "b", 1, 0, true }, { "lim", 1, 0, true }, { "empty", 1, 0, false },
};

static int base_level; /* the level of base below the hierarchy root */

static int real_setup(void **state)
{
	(void)state;
	for (size_t i = 0; i < ELEMENTSOF(tree); i++)
		cg_make(tree[i].rel);
	/* v1 memsw limits must stay >= the memory limit: set memory first */
	write_file("b", "memory.limit_in_bytes", "67108864");
	write_file("lim", "memory.limit_in_bytes", "8388608");
	spawn("a/a1", 8, 2);
	spawn("b", 4, 0);
	spawn("lim", 0, 24);
	return 0;
}

static int real_teardown(void **state)
{
	(void)state;
	cleanup();
	return 0;
}

/* ---- 1. the same cgroup set ---------------------------------------------------- */

struct inos {
	uint64_t *v;
	size_t n, cap;
};
static struct inos walked;

static int collect_dir(const char *p, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)p;
	(void)ftw;
	if (flag != FTW_D)
		return 0;
	if (walked.n == walked.cap) {
		walked.cap = MAX(walked.cap * 2, (size_t)256);
		walked.v = realloc(walked.v, walked.cap * sizeof(uint64_t));
		assert_non_null(walked.v);
	}
	walked.v[walked.n++] = st->st_ino;
	return 0;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

/* The directory inodes of the memory hierarchy, sorted (caller frees). */
static struct inos dir_inodes(void)
{
	walked = (struct inos){ 0 };
	assert_int_equal(nftw(mem_root, collect_dir, 32, FTW_PHYS), 0);
	qsort(walked.v, walked.n, sizeof(uint64_t), cmp_u64);
	return walked;
}

static bool has(const struct inos *s, uint64_t v)
{
	return bsearch(&v, s->v, s->n, sizeof(uint64_t), cmp_u64) != NULL;
}

/* Each record whole, ids strictly increasing (so none twice). */
static void check_records(const struct acct_bpf_snapshot *s)
{
	for (size_t i = 0; i < s->n; i++) {
		assert_int_equal(s->rec[i]->magic, ACCT_BPF_RECORD_MAGIC);
		assert_true(s->rec[i]->size >= sizeof(struct acct_bpf_record) && s->rec[i]->size % 8 == 0);
		if (i > 0 && s->rec[i - 1]->id >= s->rec[i]->id)
			fail_msg("records out of order or twice: id %llu after %llu", s->rec[i]->id, s->rec[i - 1]->id);
	}
}

static void test_same_set(void **state)
{
	(void)state;
	struct acct_bpf_snapshot snap = { 0 };
	bool whole_ok = false;
	/* Others may make or remove cgroups meanwhile: the whole hierarchy must
	 * agree in one of a few tries, our subtree in every one. */
	for (int attempt = 0; attempt < 5 && !whole_ok; attempt++) {
		struct inos d1 = dir_inodes();
		int r = acct_bpf_collector_read(coll, ACCT_HIER_MEMORY, &snap);
		struct inos d2 = dir_inodes();
		assert_true(r >= 0);
		assert_int_equal((size_t)r, snap.n);
		check_records(&snap);
		whole_ok = true;
		for (size_t i = 0; i < d1.n; i++)
			if (has(&d2, d1.v[i]) && !acct_bpf_snapshot_find(&snap, d1.v[i])) {
				print_message("directory inode %" PRIu64 " has no record\n", d1.v[i]);
				whole_ok = false;
			}
		for (size_t i = 0; i < snap.n; i++)
			if (!has(&d1, snap.rec[i]->id) && !has(&d2, snap.rec[i]->id)) {
				print_message("record id %llu has no directory\n", snap.rec[i]->id);
				whole_ok = false;
			}
		print_message("walk %d: %zu records, %zu directories\n", attempt, snap.n, d2.n);
		free(d1.v);
		free(d2.v);
		for (size_t i = 0; i < ELEMENTSOF(tree); i++) {
			const struct acct_bpf_record *rec = acct_bpf_snapshot_find(&snap, ino_of(tree[i].rel));
			if (!rec)
				fail_msg("no record for %s/%s", base, tree[i].rel);
			assert_int_equal(rec->level, base_level + tree[i].depth);
			assert_int_equal(rec->nr_descendants, tree[i].descendants);
			assert_true(rec->flags & ACCT_BPF_F_MEMCG);
		}
	}
	assert_true(whole_ok);
	/* the hierarchy's root is in the walk too */
	struct stat st;
	assert_int_equal(stat(mem_root, &st), 0);
	const struct acct_bpf_record *root = acct_bpf_snapshot_find(&snap, st.st_ino);
	assert_non_null(root);
	assert_int_equal(root->level, 0);
	acct_bpf_snapshot_clear(&snap);
}

/* Walks of the subtrees below given roots (acct_bpf_collector_set_roots()):
 * their cgroups and no other, the roots' own records included; none for an
 * empty set; the whole hierarchy again for none given, and where a root
 * cannot be attached (gone), until roots are set again. */
static bool walk_holds_exactly(const struct acct_bpf_snapshot *snap, const char *const *rels)
{
	size_t n = 0;
	for (; rels[n]; n++)
		if (!acct_bpf_snapshot_find(snap, ino_of(rels[n]))) {
			print_message("no record for %s/%s\n", base, rels[n]);
			return false;
		}
	if (snap->n != n)
		print_message("%zu records, not %zu\n", snap->n, n);
	return snap->n == n;
}

static void test_roots(void **state)
{
	(void)state;
	struct acct_bpf_snapshot snap = { 0 };
	const char *rel = base + strlen(mem_root); /* base below the mount: "/bpf-tests-PID" */
	char a[PATH_MAX], b[PATH_MAX], gone[PATH_MAX];
	snprintf(a, sizeof(a), "%s/a", rel);
	snprintf(b, sizeof(b), "%s/b", rel);
	snprintf(gone, sizeof(gone), "%s/no-such-cgroup", rel);

	assert_int_equal(acct_bpf_collector_roots(coll, ACCT_HIER_MEMORY), -1);
	char *one[] = { a, NULL };
	assert_int_equal(acct_bpf_collector_set_roots(coll, ACCT_HIER_MEMORY, one), 0);
	assert_int_equal(acct_bpf_collector_read(coll, ACCT_HIER_MEMORY, &snap), 3);
	assert_true(walk_holds_exactly(&snap, (const char *const[]){ "a", "a/a1", "a/a2", NULL }));
	assert_int_equal(acct_bpf_collector_roots(coll, ACCT_HIER_MEMORY), 1);
	const struct acct_bpf_record *r = acct_bpf_snapshot_find(&snap, ino_of("a"));
	assert_int_equal(r->level, base_level + 1);
	assert_int_equal(r->nr_descendants, 2);
	/* two, in any order; the lean walk too */
	char *two[] = { b, a, NULL };
	assert_int_equal(acct_bpf_collector_set_roots(coll, ACCT_HIER_MEMORY, two), 0);
	assert_int_equal(acct_bpf_collector_read_lean(coll, ACCT_HIER_MEMORY, &snap), 4);
	assert_true(walk_holds_exactly(&snap, (const char *const[]){ "a", "a/a1", "a/a2", "b", NULL }));
	assert_int_equal(acct_bpf_collector_roots(coll, ACCT_HIER_MEMORY), 2);
	/* none */
	char *none[] = { NULL };
	assert_int_equal(acct_bpf_collector_set_roots(coll, ACCT_HIER_MEMORY, none), 0);
	assert_int_equal(acct_bpf_collector_read(coll, ACCT_HIER_MEMORY, &snap), 0);
	assert_int_equal(acct_bpf_collector_roots(coll, ACCT_HIER_MEMORY), 0);
	/* a root that is gone: the whole hierarchy (its root among the records) */
	char *missing[] = { a, gone, NULL };
	assert_int_equal(acct_bpf_collector_set_roots(coll, ACCT_HIER_MEMORY, missing), 0);
	assert_true(acct_bpf_collector_read(coll, ACCT_HIER_MEMORY, &snap) > (int)ELEMENTSOF(tree));
	assert_int_equal(acct_bpf_collector_roots(coll, ACCT_HIER_MEMORY), -1);
	struct stat st;
	assert_int_equal(stat(mem_root, &st), 0);
	assert_non_null(acct_bpf_snapshot_find(&snap, st.st_ino));
	/* the same set again changes nothing (still whole); a new one is made */
	assert_int_equal(acct_bpf_collector_set_roots(coll, ACCT_HIER_MEMORY, missing), 0);
	assert_true(acct_bpf_collector_read(coll, ACCT_HIER_MEMORY, &snap) > (int)ELEMENTSOF(tree));
	assert_int_equal(acct_bpf_collector_set_roots(coll, ACCT_HIER_MEMORY, one), 0);
	assert_int_equal(acct_bpf_collector_read(coll, ACCT_HIER_MEMORY, &snap), 3);
	/* NULL: the whole hierarchy again */
	assert_int_equal(acct_bpf_collector_set_roots(coll, ACCT_HIER_MEMORY, NULL), 0);
	assert_true(acct_bpf_collector_read(coll, ACCT_HIER_MEMORY, &snap) > (int)ELEMENTSOF(tree));
	assert_int_equal(acct_bpf_collector_roots(coll, ACCT_HIER_MEMORY), -1);
	assert_int_equal(acct_bpf_collector_set_roots(coll, _ACCT_HIER_MAX, NULL), -EINVAL);
	acct_bpf_snapshot_clear(&snap);
}

/* ---- 2. page counters equal to the files ---------------------------------------- */

struct files {
	uint64_t usage, memsw, peak, limit, memsw_limit, failcnt;
	bool has_memsw;
};

static void read_files(const char *rel, struct files *f)
{
	*f = (struct files){ 0 };
	assert_true(read_u64(rel, "memory.usage_in_bytes", &f->usage));
	assert_true(read_u64(rel, "memory.max_usage_in_bytes", &f->peak));
	assert_true(read_u64(rel, "memory.limit_in_bytes", &f->limit));
	assert_true(read_u64(rel, "memory.failcnt", &f->failcnt));
	f->has_memsw = read_u64(rel, "memory.memsw.usage_in_bytes", &f->memsw);
	if (f->has_memsw)
		assert_true(read_u64(rel, "memory.memsw.limit_in_bytes", &f->memsw_limit));
}

/* Whether base/rel or a cgroup below it has a task, from the files. */
static bool populated(const char *rel)
{
	size_t l = strlen(rel);
	for (size_t i = 0; i < ELEMENTSOF(tree); i++) {
		const char *t = tree[i].rel;
		bool below = strcmp(t, rel) == 0 || l == 0 || (strncmp(t, rel, l) == 0 && t[l] == '/');
		if (!below)
			continue;
		_cleanup_free_ char *procs = read_text(t, "cgroup.procs");
		if (procs && *procs)
			return true;
	}
	return false;
}

static void test_values(void **state)
{
	(void)state;
	struct acct_bpf_snapshot snap = { 0 };
	uint64_t lim_failcnt = 0;
	assert_true(acct_bpf_collector_any(coll)); /* it serves the memory hierarchy */
	for (size_t i = 0; i < ELEMENTSOF(tree); i++) {
		const char *rel = tree[i].rel;
		uint64_t id = ino_of(rel);
		bool compared = false;
		for (int attempt = 0; attempt < 20 && !compared; attempt++) {
			struct files f1, f2;
			read_files(rel, &f1);
			assert_true(acct_bpf_collector_read(coll, ACCT_HIER_MEMORY, &snap) >= 0);
			read_files(rel, &f2);
			if (memcmp(&f1, &f2, sizeof(f1)) != 0)
				continue; /* moved meanwhile: again */
			const struct acct_bpf_record *rec = acct_bpf_snapshot_find(&snap, id);
			assert_non_null(rec);
			uint64_t ps = (uint64_t)page_size;
			if (rec->usage * ps != f1.usage || rec->watermark * ps != f1.peak || rec->max * ps != f1.limit ||
			    rec->failcnt != f1.failcnt || (f1.has_memsw && (rec->swap_usage * ps != f1.memsw ||
									    rec->swap_max * ps != f1.memsw_limit)))
				fail_msg("%s/%s: record usage %llu peak %llu max %llu failcnt %llu memsw %llu/%llu (x%" PRIu64
					 ") against files %" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRIu64 "/%" PRIu64,
					 base, rel, rec->usage, rec->watermark, rec->max, rec->failcnt, rec->swap_usage,
					 rec->swap_max, ps, f1.usage, f1.peak, f1.limit, f1.failcnt, f1.memsw, f1.memsw_limit);
			assert_int_equal(!!(rec->flags & ACCT_BPF_F_POPULATED), populated(rel));
			assert_int_equal(!!(rec->flags & ACCT_BPF_F_POPULATED), tree[i].populated);
			if (strcmp(rel, "lim") == 0)
				lim_failcnt = f1.failcnt;
			if (strcmp(rel, "empty") == 0)
				assert_true(f1.limit == UINT64_C(9223372036854771712));
			if (strcmp(rel, "b") == 0)
				assert_true(f1.limit == 64 << 20);
			compared = true;
		}
		if (!compared)
			fail_msg("%s/%s: its files never held still across a walk", base, rel);
	}
	/* The comparisons above covered a non-zero failcnt. */
	assert_true(lim_failcnt > 0);
	acct_bpf_snapshot_clear(&snap);
}

/* ---- 3. the stat index map and per-node values ----------------------------------- */

static const char *const numa_keys[] = { "total_inactive_anon", "total_active_anon", "total_inactive_file",
					 "total_active_file", "total_unevictable", NULL };

static const struct acct_bpf_stat_map *stat_map(void)
{
	static struct acct_bpf_stat_map map;
	static bool done;
	if (!done) {
		int r = acct_bpf_collector_map_stats(coll, ACCT_HIER_MEMORY, numa_keys, &map);
		assert_true(r > 0);
		assert_int_equal((unsigned)r, map.n);
		done = true;
	}
	return &map;
}

static const typeof(((struct acct_bpf_stat_map *)0)->e[0]) *mapped(const struct acct_bpf_stat_map *m, const char *key)
{
	for (unsigned i = 0; i < m->n; i++)
		if (strcmp(m->e[i].key, key) == 0)
			return &m->e[i];
	return NULL;
}

static void test_stat_map(void **state)
{
	(void)state;
	const struct acct_bpf_stat_map *m = stat_map();
	print_message("%u keys mapped from %u cgroups:", m->n, m->cgroups_used);
	for (unsigned i = 0; i < m->n; i++)
		print_message(" %s=%u*%u", m->e[i].key, m->e[i].index, m->e[i].unit);
	print_message("\n");
	assert_true(mapped(m, "total_rss") || mapped(m, "total_anon"));
	assert_true(mapped(m, "total_cache") || mapped(m, "total_file"));
	assert_non_null(mapped(m, "total_inactive_file"));
	assert_non_null(mapped(m, "total_active_file"));
	assert_non_null(mapped(m, "total_inactive_anon") || mapped(m, "total_active_anon") ? m : NULL);
	/* no index serves two keys */
	for (unsigned i = 0; i < m->n; i++)
		for (unsigned j = i + 1; j < m->n; j++)
			assert_false(m->e[i].index == m->e[j].index);
	/* v1: the hierarchical keys only (the local ones come from per-cgroup
	 * counters, not the record's state[]) */
	for (unsigned i = 0; i < m->n; i++)
		assert_int_equal(strncmp(m->e[i].key, "total_", 6), 0);

	/* a1's known workload: each mapped key within the stat bound of the file */
	const struct acct_memcg_batching *b = acct_bpf_collector_batching(coll);
	struct acct_bpf_snapshot snap = { 0 };
	_cleanup_free_ char *text = read_text("a/a1", "memory.stat");
	assert_non_null(text);
	assert_true(acct_bpf_collector_read(coll, ACCT_HIER_MEMORY, &snap) >= 0);
	const struct acct_bpf_record *rec = acct_bpf_snapshot_find(&snap, ino_of("a/a1"));
	assert_non_null(rec);
	assert_true(rec->flags & ACCT_BPF_F_STATS);
	uint64_t bound = acct_memcg_stat_bound(b, rec->stats_updates);
	/* a1 is still and its memory.stat was just read (a flush past the threshold) */
	if (bound == ACCT_MEMCG_NO_BOUND)
		fail_msg("a1: stats_updates %llu past the flush threshold right after a flush", rec->stats_updates);
	for (unsigned i = 0; i < m->n; i++) {
		uint64_t file = 0;
		assert_true(text_value(text, m->e[i].key, &file));
		int64_t v = acct_bpf_record_state(rec)[m->e[i].index] * (int64_t)m->e[i].unit;
		uint64_t diff = v > (int64_t)file ? (uint64_t)v - file : file - (uint64_t)v;
		if (diff > bound)
			fail_msg("a1 %s: %" PRId64 " against the file's %" PRIu64 ", bound %" PRIu64, m->e[i].key, v, file,
				 bound);
	}
	const char *anon_key = mapped(m, "total_rss") ? "total_rss" : "total_anon";
	const typeof(m->e[0]) *ae = mapped(m, anon_key);
	assert_non_null(ae);
	int64_t anon = ae ? acct_bpf_record_state(rec)[ae->index] * (int64_t)ae->unit : 0;
	assert_true(anon + (int64_t)bound >= 8 << 20);
	acct_bpf_snapshot_clear(&snap);
}

/* numa_stat's v1 lines and the NUMA keys (acct_bpf_numa_keys(false)) that make
 * up each: a line is compared where all of its keys are mapped. The stat map
 * can leave a key out (zero in every sampled cgroup, or equal to another
 * item in all of them); the sampler then takes no NUMA from records at all,
 * and the test compares the lines it can. */
static const struct {
	const char *line;
	const char *keys[3];
} numa_lines[] = {
	{ "hierarchical_file=", { "total_inactive_file", "total_active_file" } },
	{ "hierarchical_anon=", { "total_inactive_anon", "total_active_anon" } },
	{ "hierarchical_unevictable=", { "total_unevictable" } },
};

/* Node 0's pages on a numa_stat line. */
static uint64_t numa_line_n0(const char *text, const char *line)
{
	const char *p = strstr(text, line);
	assert_non_null(p);
	p = strstr(p, " N0=");
	assert_non_null(p);
	return strtoull(p + 4, NULL, 10);
}

static void test_nodes(void **state)
{
	(void)state;
	const struct acct_bpf_stat_map *m = stat_map();
	uint32_t units[ACCT_BPF_NODE_ITEMS];
	unsigned items = acct_bpf_collector_node_items(coll, ACCT_HIER_MEMORY, units);
	/* the per-node items are the mapped NUMA keys, in their order */
	int item_of[8];
	unsigned nr_mapped = 0;
	for (unsigned k = 0; numa_keys[k]; k++) {
		assert_true(k < ELEMENTSOF(item_of));
		item_of[k] = mapped(m, numa_keys[k]) ? (int)nr_mapped++ : -1;
	}
	assert_int_equal(items, nr_mapped);
	const struct acct_memcg_batching *b = acct_bpf_collector_batching(coll);
	struct acct_bpf_snapshot snap = { 0 };
	unsigned lines_compared = 0;
	for (size_t i = 0; i < ELEMENTSOF(tree); i++) {
		const char *rel = tree[i].rel;
		bool compared = false;
		int changed = 0, unbounded = 0;
		for (int attempt = 0; attempt < 20 && !compared; attempt++) {
			_cleanup_free_ char *t1 = read_text(rel, "memory.numa_stat");
			int r = acct_bpf_collector_read(coll, ACCT_HIER_MEMORY, &snap);
			if (r < 0)
				fail_msg("walk: %s", strerror(-r));
			_cleanup_free_ char *t2 = read_text(rel, "memory.numa_stat");
			assert_non_null(t1);
			assert_non_null(t2);
			if (strcmp(t1, t2) != 0) {
				changed++;
				continue;
			}
			const struct acct_bpf_record *rec = acct_bpf_snapshot_find(&snap, ino_of(rel));
			if (!rec)
				fail_msg("%s/%s: no record", base, rel);
			uint64_t bound = acct_memcg_stat_bound(b, rec->stats_updates);
			if (bound == ACCT_MEMCG_NO_BOUND) { /* the next numa_stat read flushes */
				unbounded++;
				continue;
			}
			/* Node 0's value of each mapped key: the record's per-node
			 * items, or on one node (no per-node values read) the
			 * memcg's own, as the sampler takes them. */
			if (!(rec->flags & ACCT_BPF_F_NODES))
				assert_int_equal(numa_num_configured_nodes(), 1);
			for (size_t l = 0; l < ELEMENTSOF(numa_lines); l++) {
				int64_t sum = 0;
				bool all = true;
				for (const char *const *key = numa_lines[l].keys; *key && all; key++) {
					unsigned k = 0;
					while (numa_keys[k] && strcmp(numa_keys[k], *key) != 0)
						k++;
					assert_non_null(numa_keys[k]);
					const typeof(m->e[0]) *e = mapped(m, *key);
					if (!e) {
						all = false;
						break;
					}
					if (rec->flags & ACCT_BPF_F_NODES)
						sum += acct_bpf_record_node(rec, 0)[item_of[k]] * (int64_t)units[item_of[k]];
					else
						sum += acct_bpf_record_state(rec)[e->index] * (int64_t)e->unit;
				}
				if (!all)
					continue;
				uint64_t want = numa_line_n0(t1, numa_lines[l].line) * (uint64_t)page_size;
				uint64_t diff = sum > (int64_t)want ? (uint64_t)sum - want : want - (uint64_t)sum;
				if (diff > bound)
					fail_msg("%s/%s node 0 %s %" PRId64 " against numa_stat's %" PRIu64 ", bound %" PRIu64
						 " (stats_updates %llu, flags %#x)\n%s",
						 base, rel, numa_lines[l].line, sum, want, bound, rec->stats_updates,
						 rec->flags, t1);
				lines_compared++;
			}
			compared = true;
		}
		if (!compared)
			fail_msg("%s/%s: no comparison in 20 tries: numa_stat changed across the walk %d times, "
				 "the record was past the flush threshold %d times", base, rel, changed, unbounded);
	}
	print_message("%u numa_stat lines compared (%u NUMA keys mapped)\n", lines_compared, nr_mapped);
	/* the file keys at least: the tree has page cache */
	assert_true(lines_compared >= ELEMENTSOF(tree));
	acct_bpf_snapshot_clear(&snap);
}

/* ---- 4. churn ------------------------------------------------------------------- */

#define CHURN 1000
#define CHURN_WINDOW 16

struct churn {
	uint64_t ino[CHURN];
	char err[PATH_MAX + 128];
	volatile bool done;
};

static uint64_t now_us(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

/* The second 1,000: made and removed in a sliding window (no cmocka in a
 * thread: errors are reported through c->err). */
static void *churn_thread(void *userdata)
{
	struct churn *c = userdata;
	char p[PATH_MAX + 32];
	for (int i = 0; i < CHURN + CHURN_WINDOW && !c->err[0]; i++) {
		if (i < CHURN) {
			snprintf(p, sizeof(p), "%s/churn/d%d", base, i);
			struct stat st;
			if (mkdir(p, 0755) < 0 || stat(p, &st) < 0)
				snprintf(c->err, sizeof(c->err), "mkdir %s: %s", p, strerror(errno));
			else
				c->ino[i] = st.st_ino;
		}
		if (i >= CHURN_WINDOW) {
			snprintf(p, sizeof(p), "%s/churn/d%d", base, i - CHURN_WINDOW);
			if (rmdir(p) < 0)
				snprintf(c->err, sizeof(c->err), "rmdir %s: %s", p, strerror(errno));
		}
	}
	c->done = true;
	return NULL;
}

static void test_churn(void **state)
{
	(void)state;
	struct acct_bpf_snapshot snap = { 0 };
	static uint64_t first[CHURN];
	char rel[64];

	cg_make("churn");
	for (int i = 0; i < CHURN; i++) {
		snprintf(rel, sizeof(rel), "churn/c%d", i);
		first[i] = cg_make(rel);
	}
	/* (the first walk finds how many sessions it takes) */
	int r = acct_bpf_collector_read(coll, ACCT_HIER_MEMORY, &snap);
	uint64_t t0 = now_us();
	for (int i = 0; i < 5; i++)
		r = acct_bpf_collector_read(coll, ACCT_HIER_MEMORY, &snap);
	uint64_t t1 = now_us();
	if (r < CHURN)
		fail_msg("a walk returned %d records with %d cgroups made", r, CHURN);
	check_records(&snap);
	for (int i = 0; i < CHURN; i++)
		assert_non_null(acct_bpf_snapshot_find(&snap, first[i]));
	print_message("walk of %d records: %.2f ms (mean of 5)\n", r, (double)(t1 - t0) / 5000.0);

	/* Remove the first 1,000 while walking... */
	int walks = 0;
	for (int i = 0; i < CHURN; i++) {
		snprintf(rel, sizeof(rel), "churn/c%d", i);
		cg_remove(rel);
		if (i % 50 == 0) {
			assert_true(acct_bpf_collector_read(coll, ACCT_HIER_MEMORY, &snap) >= 0);
			check_records(&snap);
			walks++;
		}
	}
	/* ... then make and remove 1,000 more from a thread, walking meanwhile. */
	struct churn *c = calloc(1, sizeof(*c));
	assert_non_null(c);
	pthread_t th;
	assert_int_equal(pthread_create(&th, NULL, churn_thread, c), 0);
	while (!c->done) {
		r = acct_bpf_collector_read(coll, ACCT_HIER_MEMORY, &snap);
		if (r < 0) {
			c->done = true; /* (the thread stops at its next step anyway) */
			pthread_join(th, NULL);
			fail_msg("walk %d under churn: %s", walks, strerror(-r));
		}
		check_records(&snap);
		walks++;
	}
	assert_int_equal(pthread_join(th, NULL), 0);
	if (c->err[0]) {
		char e[sizeof(c->err)];
		snprintf(e, sizeof(e), "%s", c->err);
		free(c);
		fail_msg("churn: %s", e);
	}
	print_message("%d walks under churn\n", walks);

	r = acct_bpf_collector_read(coll, ACCT_HIER_MEMORY, &snap);
	assert_true(r >= 0);
	check_records(&snap);
	for (int i = 0; i < CHURN; i++) {
		assert_null(acct_bpf_snapshot_find(&snap, first[i]));
		assert_null(acct_bpf_snapshot_find(&snap, c->ino[i]));
	}
	free(c);
	cg_remove("churn");
	acct_bpf_snapshot_clear(&snap);
}

/* ---- 5. read_one ---------------------------------------------------------------- */

static void test_read_one(void **state)
{
	(void)state;
	for (size_t i = 0; i < ELEMENTSOF(tree); i++) {
		_cleanup_free_ char *dir = path_of(tree[i].rel);
		bool compared = false;
		for (int attempt = 0; attempt < 20 && !compared; attempt++) {
			uint64_t u1, u2;
			struct acct_bpf_record rec;
			assert_true(read_u64(tree[i].rel, "memory.usage_in_bytes", &u1));
			assert_int_equal(acct_bpf_collector_read_one(coll, ACCT_HIER_MEMORY, dir, &rec), 0);
			assert_true(read_u64(tree[i].rel, "memory.usage_in_bytes", &u2));
			assert_true(rec.id == ino_of(tree[i].rel));
			assert_int_equal(rec.magic, ACCT_BPF_RECORD_MAGIC);
			assert_int_equal(rec.level, base_level + tree[i].depth);
			if (u1 != u2)
				continue;
			assert_true(rec.usage * (uint64_t)page_size == u1);
			compared = true;
		}
		assert_true(compared);
	}
	_cleanup_free_ char *gone = path_of("gone");
	cg_make("gone");
	cg_remove("gone");
	struct acct_bpf_record rec;
	assert_int_equal(acct_bpf_collector_read_one(coll, ACCT_HIER_MEMORY, gone, &rec), -ENOENT);
	/* read_one leaves whole walks as they were */
	struct acct_bpf_snapshot snap = { 0 };
	assert_true(acct_bpf_collector_read(coll, ACCT_HIER_MEMORY, &snap) >= (int)ELEMENTSOF(tree));
	for (size_t i = 0; i < ELEMENTSOF(tree); i++)
		assert_non_null(acct_bpf_snapshot_find(&snap, ino_of(tree[i].rel)));
	acct_bpf_snapshot_clear(&snap);
}

/* ---- 5b. the two programs --------------------------------------------------------- */

/* Whether the running kernel's BTF has the kfunc bpf_rdonly_cast() (6.2). */
static bool kernel_has_rdonly_cast(void)
{
	struct btf *btf = btf__load_vmlinux_btf();
	if (!btf)
		return false;
	bool has = btf__find_by_name_kind(btf, "bpf_rdonly_cast", BTF_KIND_FUNC) > 0;
	btf__free(btf);
	return has;
}

/* Whether this run's collectors were told to use the older kernels' program. */
static bool probe_read_forced(void)
{
	const char *e = getenv("ACCTD_TEST_BPF_PROBE_READ");
	return e && *e == '1';
}

/* The collector loads the program this kernel can run: direct loads through
 * bpf_rdonly_cast() where the kernel has it, probe reads where it does not or
 * the test says so; and says which. */
static void test_program_choice(void **state)
{
	(void)state;
	bool has = kernel_has_rdonly_cast(), probe = probe_read_forced() || !has;
	const char *note = acct_bpf_collector_program_note(coll);
	print_message("kernel has bpf_rdonly_cast(): %s; program: %s\n", has ? "yes" : "no", *note ? note : "direct loads");
	assert_int_equal(!!*note, probe);
	const char *reason = acct_bpf_collector_reason(coll, ACCT_HIER_MEMORY);
	if (probe && !strstr(reason, "probe reads"))
		fail_msg("the reason \"%s\" does not say that the program copies by probe reads", reason);
}

/* The fields of a record that both programs read alike, and that hold still
 * in an idle cgroup. */
static bool same_fields(const struct acct_bpf_record *a, const struct acct_bpf_record *b)
{
	const unsigned mask = ACCT_BPF_F_MEMCG | ACCT_BPF_F_HIGH | ACCT_BPF_F_EVENTS | ACCT_BPF_F_STATS |
			      ACCT_BPF_F_UNDER_OOM | ACCT_BPF_F_POPULATED;
	return a->usage == b->usage && a->watermark == b->watermark && a->max == b->max &&
	       (a->flags & mask) == (b->flags & mask) && (!(a->flags & ACCT_BPF_F_HIGH) || a->high == b->high) &&
	       a->failcnt == b->failcnt && a->swap_usage == b->swap_usage && a->swap_max == b->swap_max &&
	       memcmp(a->events, b->events, sizeof(a->events)) == 0 && a->nr_state == b->nr_state &&
	       memcmp(a + 1, b + 1, a->nr_state * sizeof(long long)) == 0 && a->level == b->level &&
	       a->nr_descendants == b->nr_descendants;
}

static struct acct_bpf_collector *build(const char *btf_path, bool attach, const char *pin_dir);

/* A collector of the memory hierarchy with the program for kernels before
 * 6.2 (probe) or the other, whatever the run was told. */
static struct acct_bpf_collector *collector_with(bool probe)
{
	bool forced = probe_read_forced();
	if (probe)
		assert_int_equal(setenv("ACCTD_TEST_BPF_PROBE_READ", "1", 1), 0);
	else
		unsetenv("ACCTD_TEST_BPF_PROBE_READ");
	struct acct_bpf_collector *c = build(NULL, true, NULL);
	if (forced)
		assert_int_equal(setenv("ACCTD_TEST_BPF_PROBE_READ", "1", 1), 0);
	else
		unsetenv("ACCTD_TEST_BPF_PROBE_READ");
	if (!acct_bpf_collector_serves(c, ACCT_HIER_MEMORY))
		fail_msg("the %s program does not serve: %s", probe ? "probe-read" : "direct",
			 acct_bpf_collector_reason(c, ACCT_HIER_MEMORY));
	assert_int_equal(!!*acct_bpf_collector_program_note(c), probe);
	return c;
}

/* Both programs write the same records: each cgroup of the test's tree
 * (every stat item: neither collector has a selection), walked by one, the
 * other, and the first again; where the first's two walks agree, the
 * other's agrees with them. */
static void test_programs_agree(void **state)
{
	(void)state;
	if (!kernel_has_rdonly_cast()) {
		print_message("this kernel has only the probe-read program: nothing to compare it with\n");
		return;
	}
	struct acct_bpf_collector *direct = collector_with(false), *probe = collector_with(true);
	struct acct_bpf_snapshot s1 = { 0 }, s2 = { 0 }, s3 = { 0 };
	bool done[ELEMENTSOF(tree)] = { false };
	size_t compared = 0;
	for (int attempt = 0; attempt < 20 && compared < ELEMENTSOF(tree); attempt++) {
		assert_true(acct_bpf_collector_read(direct, ACCT_HIER_MEMORY, &s1) >= 0);
		assert_true(acct_bpf_collector_read(probe, ACCT_HIER_MEMORY, &s2) >= 0);
		assert_true(acct_bpf_collector_read(direct, ACCT_HIER_MEMORY, &s3) >= 0);
		for (size_t i = 0; i < ELEMENTSOF(tree); i++) {
			uint64_t id = ino_of(tree[i].rel);
			const struct acct_bpf_record *a = acct_bpf_snapshot_find(&s1, id);
			const struct acct_bpf_record *b = acct_bpf_snapshot_find(&s2, id);
			const struct acct_bpf_record *c = acct_bpf_snapshot_find(&s3, id);
			assert_true(a && b && c);
			if (done[i] || !same_fields(a, c))
				continue; /* moved meanwhile: again */
			if (!same_fields(a, b))
				fail_msg("%s/%s: the programs disagree: usage %llu/%llu peak %llu/%llu max %llu/%llu "
					 "failcnt %llu/%llu swap %llu/%llu swap max %llu/%llu high %llu/%llu flags %#x/%#x "
					 "events[low..max] %llu,%llu,%llu/%llu,%llu,%llu stats %u/%u",
					 base, tree[i].rel, a->usage, b->usage, a->watermark, b->watermark, a->max, b->max,
					 a->failcnt, b->failcnt, a->swap_usage, b->swap_usage, a->swap_max, b->swap_max,
					 a->high, b->high, a->flags, b->flags, a->events[ACCT_BPF_EV_LOW],
					 a->events[ACCT_BPF_EV_HIGH], a->events[ACCT_BPF_EV_MAX], b->events[ACCT_BPF_EV_LOW],
					 b->events[ACCT_BPF_EV_HIGH], b->events[ACCT_BPF_EV_MAX], a->nr_state, b->nr_state);
			assert_true((a->flags & ACCT_BPF_F_MEMCG) && (a->flags & ACCT_BPF_F_STATS) && a->nr_state > 10);
			done[i] = true;
			compared++;
		}
	}
	print_message("%zu of %zu cgroups compared\n", compared, ELEMENTSOF(tree));
	assert_int_equal(compared, ELEMENTSOF(tree));
	/* lim's failures are events too: a non-zero value was among those compared */
	const struct acct_bpf_record *lim = acct_bpf_snapshot_find(&s2, ino_of("lim"));
	assert_true(lim->events[ACCT_BPF_EV_MAX] > 0 && lim->failcnt > 0);
	acct_bpf_snapshot_clear(&s1);
	acct_bpf_snapshot_clear(&s2);
	acct_bpf_snapshot_clear(&s3);
	acct_bpf_collector_free(direct);
	acct_bpf_collector_free(probe);
}

/* ---- 6. fallback reasons -------------------------------------------------------- */

static struct acct_bpf_collector *build(const char *btf_path, bool attach, const char *pin_dir)
{
	struct acct_bpf_collector_options o = {
		.layout = layout,
		.hierarchies = 1u << ACCT_HIER_MEMORY,
		.attach = attach,
		.btf_path = btf_path,
		.pin_dir = pin_dir,
	};
	struct acct_bpf_collector *c = NULL;
	assert_int_equal(acct_bpf_collector_new(&o, &c), 0);
	assert_non_null(c);
	return c;
}

/* Not served, a reason containing `want`, reads refused. */
static void check_refused(struct acct_bpf_collector *c, const char *want)
{
	struct acct_bpf_snapshot snap = { 0 };
	const char *reason = acct_bpf_collector_reason(c, ACCT_HIER_MEMORY);
	print_message("reason: %s\n", reason);
	assert_false(acct_bpf_collector_serves(c, ACCT_HIER_MEMORY));
	assert_false(acct_bpf_collector_any(c));
	if (!strstr(reason, want))
		fail_msg("reason \"%s\" does not say \"%s\"", reason, want);
	assert_int_equal(acct_bpf_collector_read(c, ACCT_HIER_MEMORY, &snap), -ENODEV);
	struct acct_bpf_record rec;
	assert_int_equal(acct_bpf_collector_read_one(c, ACCT_HIER_MEMORY, base, &rec), -ENODEV);
	acct_bpf_collector_free(c);
}

static void test_fallback_btf(void **state)
{
	(void)state;
	check_refused(build("/nonexistent/bpf-tests-vmlinux", true, NULL), "/nonexistent/bpf-tests-vmlinux");
}

static void test_fallback_verifier(void **state)
{
	(void)state;
	assert_int_equal(setenv("ACCTD_TEST_BPF_REJECT", "1", 1), 0);
	struct acct_bpf_collector *c = build(NULL, true, NULL);
	unsetenv("ACCTD_TEST_BPF_REJECT");
	check_refused(c, "verifier rejected");
}

static void test_fallback_no_attach(void **state)
{
	(void)state;
	check_refused(build(NULL, false, NULL), "attaching is not allowed");
	char dir[] = "/tmp/bpf-tests-pins-XXXXXX";
	assert_non_null(mkdtemp(dir));
	check_refused(build(NULL, false, dir), dir);
	assert_int_equal(rmdir(dir), 0);
}

static void test_fallback_unprivileged(void **state)
{
	(void)state;
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		/* no cmocka here: exit codes say what failed */
		if (setgroups(0, NULL) < 0 || setgid(65534) < 0 || setuid(65534) < 0)
			_exit(10);
		struct acct_bpf_collector_options o = {
			.layout = layout, .hierarchies = 1u << ACCT_HIER_MEMORY, .attach = true };
		struct acct_bpf_collector *c = NULL;
		if (acct_bpf_collector_new(&o, &c) < 0)
			_exit(11);
		const char *reason = acct_bpf_collector_reason(c, ACCT_HIER_MEMORY);
		fprintf(stderr, "unprivileged reason: %s\n", reason);
		struct acct_bpf_snapshot snap = { 0 };
		int code = acct_bpf_collector_serves(c, ACCT_HIER_MEMORY) ? 12
			   : !strstr(reason, "not permitted")              ? 13
			   : acct_bpf_collector_read(c, ACCT_HIER_MEMORY, &snap) != -ENODEV ? 14
											      : 0;
		acct_bpf_collector_free(c);
		_exit(code);
	}
	int status;
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
}

/* ---- pinned iterators ------------------------------------------------------------ */

/* Read through pins as an unprivileged daemon would: exit 0 when the walk
 * has every cgroup of `want` (ids, n of them), else a code saying what
 * failed. */
static int read_pinned_unprivileged(const char *pins, const uint64_t *want, size_t n)
{
	if (setgroups(0, NULL) < 0 || setgid(65534) < 0 || setuid(65534) < 0)
		return 20;
	struct acct_bpf_collector_options o = {
		.layout = layout, .hierarchies = 1u << ACCT_HIER_MEMORY, .pin_dir = pins };
	struct acct_bpf_collector *c = NULL;
	if (acct_bpf_collector_new(&o, &c) < 0)
		return 21;
	int code = 0;
	struct acct_bpf_snapshot snap = { 0 };
	fprintf(stderr, "unprivileged, pinned: %s\n", acct_bpf_collector_reason(c, ACCT_HIER_MEMORY));
	int r = acct_bpf_collector_read(c, ACCT_HIER_MEMORY, &snap);
	if (!acct_bpf_collector_serves(c, ACCT_HIER_MEMORY))
		code = 22;
	else if (r == -E2BIG)
		code = 25; /* more cgroups than one session holds: see the caller */
	else if (r < 0) {
		fprintf(stderr, "unprivileged read: %s\n", strerror(-r));
		code = 23;
	}
	for (size_t i = 0; i < n && !code; i++)
		if (!acct_bpf_snapshot_find(&snap, want[i]))
			code = 24;
	acct_bpf_snapshot_clear(&snap);
	acct_bpf_collector_free(c);
	return code;
}

static void test_pinned(void **state)
{
	(void)state;
	snprintf(bpffs, sizeof(bpffs), "/tmp/bpf-tests-bpffs-XXXXXX");
	if (!mkdtemp(bpffs)) {
		bpffs[0] = 0;
		fail_msg("mkdtemp: %s", strerror(errno));
	}
	if (mount("bpf", bpffs, "bpf", 0, "mode=0755") < 0) {
		int e = errno;
		(void)rmdir(bpffs);
		bpffs[0] = 0;
		print_message("cannot mount a bpffs (%s): skipping\n", strerror(e));
		skip();
	}
	char pins[128];
	snprintf(pins, sizeof(pins), "%s/acctd", bpffs);
	assert_int_equal(acct_bpf_collector_pin(coll, pins), 1);

	struct acct_bpf_collector *c = build(NULL, false, pins);
	assert_true(acct_bpf_collector_serves(c, ACCT_HIER_MEMORY));
	assert_non_null(strstr(acct_bpf_collector_reason(c, ACCT_HIER_MEMORY), "pinned at"));
	struct acct_bpf_record rec;
	_cleanup_free_ char *a1 = path_of("a/a1");
	assert_int_equal(acct_bpf_collector_read_one(c, ACCT_HIER_MEMORY, a1, &rec), -EPERM);

	/* A pinned iterator cannot be split into sessions: the walk is whole
	 * (the same set as the attached one) or it fails with -E2BIG, never a
	 * part of the hierarchy. */
	struct acct_bpf_snapshot pinned = { 0 }, attached = { 0 };
	for (int round = 0; round < 2; round++) {
		if (round == 1) {
			/* make sure the hierarchy outgrows one session (32 KiB: at
			 * most ~140 records of 232 bytes) */
			cg_make("many");
			for (int i = 0; i < 250; i++) {
				char rel[32];
				snprintf(rel, sizeof(rel), "many/m%d", i);
				cg_make(rel);
			}
		}
		int rp = acct_bpf_collector_read(c, ACCT_HIER_MEMORY, &pinned);
		int ra = acct_bpf_collector_read(coll, ACCT_HIER_MEMORY, &attached);
		assert_true(ra > 0);
		print_message("round %d: pinned walk %d, attached %d records\n", round, rp, ra);
		if (rp == -E2BIG)
			continue;
		if (round == 1)
			fail_msg("a pinned walk of %d records (attached: %d) should not fit one session", rp, ra);
		assert_true(rp > 0);
		check_records(&pinned);
		for (size_t i = 0; i < ELEMENTSOF(tree); i++)
			assert_non_null(acct_bpf_snapshot_find(&pinned, ino_of(tree[i].rel)));
		/* the same set up to what others made or removed between the two */
		size_t common = 0;
		for (size_t i = 0; i < pinned.n; i++)
			common += acct_bpf_snapshot_find(&attached, pinned.rec[i]->id) != NULL;
		assert_true(common + 4 >= MAX(pinned.n, attached.n));
	}
	for (int i = 0; i < 250; i++) {
		char rel[32];
		snprintf(rel, sizeof(rel), "many/m%d", i);
		cg_remove(rel);
	}
	cg_remove("many");
	acct_bpf_snapshot_clear(&pinned);
	acct_bpf_snapshot_clear(&attached);
	acct_bpf_collector_free(c);

	/* An unprivileged reader opens the pins (0644 in a 0755 directory). */
	uint64_t want[ELEMENTSOF(tree)];
	for (size_t i = 0; i < ELEMENTSOF(tree); i++)
		want[i] = ino_of(tree[i].rel);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0)
		_exit(read_pinned_unprivileged(pins, want, ELEMENTSOF(want)));
	int status;
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	if (WEXITSTATUS(status) == 25) {
		/* others' cgroups made the hierarchy too large for a pinned walk */
		int ra = acct_bpf_collector_read(coll, ACCT_HIER_MEMORY, &attached);
		print_message("unprivileged pinned walk: -E2BIG with %d cgroups\n", ra);
		assert_true(ra > 16);
		acct_bpf_snapshot_clear(&attached);
	} else
		assert_int_equal(WEXITSTATUS(status), 0);
	cleanup_bpffs();
}

/* ---- the pressure witness ------------------------------------------------------- */

/* The sum of every "total=" of dir's three pressure files (microseconds), as
 * the sampler sums them (sample-io-psi.c). */
static uint64_t pressure_file_sum(const char *dir)
{
	static const char *const files[] = { "cpu.pressure", "memory.pressure", "io.pressure" };
	uint64_t sum = 0;
	for (size_t i = 0; i < ELEMENTSOF(files); i++) {
		char p[PATH_MAX + 64], buf[512];
		snprintf(p, sizeof(p), "%s/%s", dir, files[i]);
		_cleanup_close_ int fd = open(p, O_RDONLY | O_CLOEXEC);
		assert_true(fd >= 0);
		ssize_t n = read(fd, buf, sizeof(buf) - 1);
		assert_true(n > 0);
		buf[n] = 0;
		for (const char *t = buf; (t = strstr(t, "total=")); t += 6)
			sum += strtoull(t + 6, NULL, 10);
	}
	return sum;
}

/* The same sum from dir's record: each kernel total (ns) as the file shows it. */
static uint64_t pressure_record_sum(const char *dir)
{
	struct acct_bpf_record rec;
	assert_int_equal(acct_bpf_collector_read_one(coll_unified, ACCT_HIER_UNIFIED, dir, &rec), 0);
	assert_true(rec.flags & ACCT_BPF_F_PSI);
	assert_true(rec.nr_psi >= 5 && rec.nr_psi <= ACCT_BPF_PSI_MAX);
	uint64_t sum = 0;
	for (unsigned i = 0; i < rec.nr_psi; i++)
		sum += rec.psi_total[i] / 1000;
	return sum;
}

/* What sampler.c's psi_due() rests on, against the kernel: a record's
 * pressure totals are those the files show as of their last read (equal
 * right after one, the cgroup idle), and a stall moves them without any
 * read of the files (the kernel's averaging work folds it in within its 2 s
 * period; 30 s allowed here for a loaded machine). A task left running in
 * the cgroup would keep moving them; none is. */
static void test_pressure_witness(void **state)
{
	(void)state;
	if (!coll_unified) {
		print_message("no collector of the unified hierarchy here: %s\n", unified_missing);
		skip();
	}
	char dir[PATH_MAX];
	snprintf(dir, sizeof(dir), "%s/bpf-tests-%d-psi", layout->mount[ACCT_HIER_UNIFIED], (int)getpid());
	assert_true(n_made < MAX_MADE);
	assert_int_equal(mkdir(dir, 0755), 0);
	made[n_made++] = strdup(dir);

	/* Idle (no task): the record equals the file read just before it. */
	uint64_t file = pressure_file_sum(dir);
	assert_true(pressure_record_sum(dir) == file);

	/* A stall: more busy tasks than CPUs, for a moment, then gone. */
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);
	pid_t busy[9];
	int nbusy = (int)MIN(cpus + 1, (long)ELEMENTSOF(busy));
	char procs[PATH_MAX + 64];
	snprintf(procs, sizeof(procs), "%s/cgroup.procs", dir);
	for (int i = 0; i < nbusy; i++) {
		busy[i] = fork();
		assert_true(busy[i] >= 0);
		if (busy[i] == 0) {
			int fd = open(procs, O_WRONLY | O_CLOEXEC);
			if (fd < 0 || write(fd, "0", 1) != 1)
				_exit(1);
			close(fd);
			struct timespec t0, t;
			clock_gettime(CLOCK_MONOTONIC, &t0);
			do
				clock_gettime(CLOCK_MONOTONIC, &t);
			while ((t.tv_sec - t0.tv_sec) * 1000 + (t.tv_nsec - t0.tv_nsec) / 1000000 < 500);
			_exit(0);
		}
	}
	for (int i = 0; i < nbusy; i++) {
		int status;
		assert_int_equal(waitpid(busy[i], &status, 0), busy[i]);
		assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	}
	/* Moved, with no read of the files. */
	uint64_t moved = file;
	for (int i = 0; i < 300 && moved == file; i++) {
		moved = pressure_record_sum(dir);
		if (moved == file)
			usleep(100 * 1000);
	}
	print_message("pressure totals: %" PRIu64 " us before the stall, %" PRIu64 " us in the record after\n", file,
		      moved);
	assert_true(moved > file);
	/* The files then show at least that, and the record them again. */
	uint64_t after = pressure_file_sum(dir);
	assert_true(after >= moved);
	assert_true(pressure_record_sum(dir) == after);
}

/* ---- main ------------------------------------------------------------------------ */

/* Why the real tests cannot run here, or NULL. */
static const char *real_missing(void)
{
	static char why[512];
	if (geteuid() != 0)
		return "not root: cannot make cgroups or load BPF";
	if (acct_hierarchies_detect(NULL, &layout) < 0 || !layout->mount[ACCT_HIER_MEMORY])
		return "no v1 memory hierarchy here";
	mem_root = layout->mount[ACCT_HIER_MEMORY];
	unsigned nodes = 0;
	_cleanup_(closedirp) DIR *d = opendir("/sys/devices/system/node");
	for (struct dirent *de; d && (de = readdir(d));)
		nodes += strncmp(de->d_name, "node", 4) == 0 && de->d_name[4] >= '0' && de->d_name[4] <= '9';
	struct acct_bpf_collector_options o = {
		.layout = layout,
		.hierarchies = 1u << ACCT_HIER_MEMORY,
		.attach = true,
		.nr_nodes = MAX(nodes, 1u),
	};
	if (acct_bpf_collector_new(&o, &coll) < 0)
		return "cannot build a collector";
	if (!acct_bpf_collector_serves(coll, ACCT_HIER_MEMORY)) {
		snprintf(why, sizeof(why), "BPF cannot serve the memory hierarchy: %s",
			 acct_bpf_collector_reason(coll, ACCT_HIER_MEMORY));
		return why;
	}
	/* The pressure witness's test needs the unified hierarchy's collector
	 * and its pressure files; without them it alone skips. */
	static char uwhy[512];
	char p[PATH_MAX];
	if (layout->mount[ACCT_HIER_UNIFIED]) {
		snprintf(p, sizeof(p), "%s/cpu.pressure", layout->mount[ACCT_HIER_UNIFIED]);
		o.hierarchies = 1u << ACCT_HIER_UNIFIED;
		if (access(p, R_OK) < 0)
			unified_missing = "no pressure files (psi off)";
		else if (acct_bpf_collector_new(&o, &coll_unified) < 0)
			unified_missing = "cannot build a collector for it";
		else if (!acct_bpf_collector_serves(coll_unified, ACCT_HIER_UNIFIED)) {
			snprintf(uwhy, sizeof(uwhy), "%s", acct_bpf_collector_reason(coll_unified, ACCT_HIER_UNIFIED));
			unified_missing = uwhy;
			coll_unified = acct_bpf_collector_free(coll_unified);
		}
	}
	return NULL;
}

int main(void)
{
	const char *missing = real_missing();
	if (missing) {
		printf("skipping the real-cgroup tests: %s\n", missing);
		acct_bpf_collector_free(coll);
		acct_bpf_collector_free(coll_unified);
		acct_hierarchies_free(layout);
		return 77;
	}
	page_size = sysconf(_SC_PAGESIZE);
	owner = getpid();
	snprintf(base, sizeof(base), "%s/bpf-tests-%d", mem_root, (int)getpid());
	base_level = 1;
	atexit(cleanup);

	const struct CMUnitTest real[] = {
		cmocka_unit_test(test_same_set),
		cmocka_unit_test(test_roots),
		cmocka_unit_test(test_values),
		cmocka_unit_test(test_stat_map),
		cmocka_unit_test(test_nodes),
		cmocka_unit_test(test_read_one),
		cmocka_unit_test(test_churn),
		cmocka_unit_test(test_pinned),
		cmocka_unit_test(test_program_choice),
		cmocka_unit_test(test_programs_agree),
		cmocka_unit_test(test_fallback_btf),
		cmocka_unit_test(test_fallback_verifier),
		cmocka_unit_test(test_fallback_no_attach),
		cmocka_unit_test(test_fallback_unprivileged),
		cmocka_unit_test(test_pressure_witness),
	};
	int failed = cmocka_run_group_tests_name("real", real, real_setup, real_teardown);
	cleanup();
	acct_bpf_collector_free(coll);
	acct_bpf_collector_free(coll_unified);
	acct_hierarchies_free(layout);
	return failed;
}
