/* sample-load.c - the sampler's part of load (lib/core/load.c computes the
 * averages): each cgroup's threads and the active ones among them, read in
 * a LOAD pass, and their sums over the tree with the load averages.
 *
 * Threads and load. Each thread is in exactly one cgroup of every hierarchy,
 * and the hierarchies place it independently (on a hybrid host a process can
 * sit in the unified root and in /process_api/x of the v1 memory tree). A
 * cgroup's threads are therefore taken from one hierarchy only, the first of
 * threads_order[] (sampler-files.c) that the cgroup is in: unified (v2 and
 * hybrid hosts), else v1 memory, cpuacct, cpu, blkio (legacy hosts; cgroups
 * that exist only in v1 trees on hybrid ones). Its hierarchical count adds
 * only descendants that take their threads from the same hierarchy: a
 * descendant counted from another hierarchy holds threads that are already
 * counted, wherever that other hierarchy placed them. So no cgroup counts a
 * thread twice and the root, whose hierarchy holds every thread, counts each
 * exactly once.
 *
 * The sampler's own threads are counted as threads but never as active:
 * a worker is running because it is sampling (it reads /proc/<tid>/stat), and
 * the thread that started the pass (acctd's main thread) may still be running
 * to start it, just as the kernel's sampler runs in the timer interrupt and
 * not as a task. acctd's other threads count as any other. */
#include "sampler-internal.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "basic/util.h"
#include "cgroup/cgfs-parse.h"
#include "load.h"

/* ---- a cgroup's own threads --------------------------------------------- */

struct thread_count {
	unsigned threads, active;
	struct worker *w;
};

/* A thread of this sampler, running now only because a pass runs: a worker,
 * or the thread that started the pass (it may not have gone to sleep yet). */
static bool is_sampler_thread(const struct acct_sampler *s, int tid)
{
	if (tid == s->starter_tid)
		return true;
	for (unsigned i = 0; i < s->nr_workers; i++)
		if (s->workers[i].tid == tid)
			return true;
	return false;
}

static int count_thread(int tid, void *userdata)
{
	struct thread_count *t = userdata;
	char path[64], buf[1024];
	char state;

	t->threads++;
	if (is_sampler_thread(t->w->s, tid))
		return 0;
	snprintf(path, sizeof(path), "/proc/%d/stat", tid);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0; /* exited meanwhile */
	ssize_t n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return 0;
	buf[n] = 0;
	if (cgfs_parse_proc_stat_state(buf, &state) == 0 && (state == 'R' || state == 'D'))
		t->active++;
	return 0;
}

void sample_load(struct sample_ctx *x)
{
	struct thread_count t = { .w = x->w };

	x->st->load_valid = false;
	if (!sampler_get(x, F_THREADS))
		return;
	if (cgfs_parse_pids(x->w->buf, count_thread, &t) < 0) {
		sampler_fail(x, ACCT_ERR_GARBAGE);
		return;
	}
	x->st->own_threads = t.threads;
	x->st->own_active = t.active;
	x->st->load_valid = true;
}

/* ---- the tree's sums and averages -------------------------------------- */

static int compare_depth_desc(const void *a, const void *b)
{
	const struct acct_cgroup *x = *(struct acct_cgroup *const *)a, *y = *(struct acct_cgroup *const *)b;
	return x->depth < y->depth ? 1 : x->depth > y->depth ? -1 : 0;
}

static const char *parent_path(const char *path, char *buf, size_t size)
{
	const char *slash = strrchr(path, '/');
	if (!slash || slash == path)
		return "/";
	size_t n = MIN((size_t)(slash - path), size - 1);
	memcpy(buf, path, n);
	buf[n] = 0;
	return buf;
}

void acct_sampler_aggregate_load(struct acct_sampler *s, struct acct_cgroup *const *cgs, size_t n,
				 uint64_t now_us)
{
	if (n == 0)
		return; /* nothing to sum (and cgs may be NULL) */
	_cleanup_free_ struct acct_cgroup **v = malloc(n * sizeof(*v));
	_cleanup_free_ size_t *parent = malloc(n * sizeof(*parent));
	_cleanup_free_ unsigned *threads = calloc(n, sizeof(*threads));
	_cleanup_free_ unsigned *active = calloc(n, sizeof(*active));
	char buf[4096];

	if (!v || !parent || !threads || !active)
		return;
	memcpy(v, cgs, n * sizeof(*v));
	/* Deeper first: every cgroup comes before its parent. */
	qsort(v, n, sizeof(*v), compare_depth_desc);
	for (size_t i = 0; i < n; i++) {
		struct cg_state *st = v[i]->sampler_state;
		if (st)
			st->agg_slot = i;
	}
	/* Each parent's slot by a hash lookup of its path and its recorded slot
	 * (checked: a record outside cgs may carry an old one): O(n) in all. A
	 * child that lists its threads in another hierarchy than its parent is
	 * no child for the sums: its threads are counted where that parent's
	 * hierarchy placed them (see the top of the file). */
	for (size_t i = 0; i < n; i++) {
		struct cg_state *st = v[i]->sampler_state;
		if (st && st->load_valid) {
			threads[i] = st->own_threads;
			active[i] = st->own_active;
		}
		parent[i] = ACCT_LOAD_NO_PARENT;
		if (strcmp(v[i]->path, "/") == 0)
			continue;
		struct acct_cgroup *p = acct_ledger_find(s->ledger, parent_path(v[i]->path, buf, sizeof(buf)));
		if (!p || !p->sampler_state)
			continue;
		const struct cg_state *pst = p->sampler_state;
		size_t j = pst->agg_slot;
		if (j > i && j < n && v[j] == p && st && st->spec[F_THREADS].name && pst->spec[F_THREADS].name &&
		    st->spec[F_THREADS].tree == pst->spec[F_THREADS].tree)
			parent[i] = j;
	}
	acct_load_sum_tree(parent, n, threads, active);
	for (size_t i = 0; i < n; i++) {
		struct cg_state *st = v[i]->sampler_state;
		if (st) {
			st->tree_threads = threads[i];
			st->tree_active = active[i];
		}
	}
	for (size_t i = 0; i < n; i++) {
		struct cg_state *st = v[i]->sampler_state;
		/* A cgroup whose own threads were not read (no threads file in
		 * its hierarchies, or the read failed) has no load and no task
		 * count: absent, not the sum of its children alone. */
		if (!st || !st->load_valid)
			continue;
		unsigned periods = 1;
		if (st->load_at && now_us > st->load_at)
			periods = (unsigned)MAX((now_us - st->load_at + 2500000) / 5000000, 1u);
		if (periods > 1)
			acct_loadavg_update_missed(&st->load, st->tree_active, periods);
		else
			acct_loadavg_update(&st->load, st->tree_active);
		st->load_at = now_us;
		acct_cgroup_set_loadavg(v[i], st->load.avenrun);
		acct_cgroup_set(v[i], ACCT_Q_TASKS, st->tree_threads);
		acct_cgroup_set_group_sampled(v[i], ACCT_GROUP_LOAD, now_us);
	}
}
