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

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "basic/read-file.h"
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
bool sampler_is_own_thread(const struct acct_sampler *s, int tid)
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
	if (sampler_is_own_thread(t->w->s, tid))
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

/* ---- the task walk ---------------------------------------------------- *
 *
 * Where the BPF task walk is loaded, a LOAD pass walks every thread once
 * (worker 0, before the other workers read) and sums, per (hierarchy,
 * cgroup id), the threads and the active ones; each cgroup then takes its
 * own from the sums of its threads hierarchy, as it would from its threads
 * file. Only the hierarchies some cgroup of the pass lists its threads in
 * are asked for (on v2 and hybrid hosts, the unified one).
 *
 * Cross-check: worker 0 reads the thread list of CHECKS cgroups (rotating
 * through the work) before and after the walk; the walk's count must lie
 * between the two lists' (threads come and go meanwhile). A count outside is
 * a mismatch (counted, the last one reported); ACCT_BPF_MISMATCH_PASSES
 * LOAD passes in a row with one put threads back on files for good
 * (task_walk_off: the caller logs it from the report). Active counts change
 * too fast to compare this way; they come from the same record as the
 * thread's cgroup, which the count checks. */

#define TASK_CHECKS 4

static int compare_task_count(const void *a, const void *b)
{
	const struct task_count *x = a, *y = b;
	if (x->tree != y->tree)
		return x->tree < y->tree ? -1 : 1;
	return x->id < y->id ? -1 : x->id > y->id ? 1 : 0;
}

const struct task_count *sampler_find_tasks(const struct acct_sampler *s, uint32_t tree, uint64_t id)
{
	const struct task_count key = { .id = id, .tree = tree };
	return s->nr_tasks ? bsearch(&key, s->tasks, s->nr_tasks, sizeof(key), compare_task_count) : NULL;
}

static int count_one(int tid, void *userdata)
{
	(void)tid;
	(*(unsigned *)userdata)++;
	return 0;
}

/* The number of threads cg's threads file lists now; -1 when unreadable. */
static int file_threads(const struct acct_sampler *s, const struct acct_cgroup *cg, const struct file_spec *spec)
{
	const char *mount = s->opts.layout->mount[spec->tree];
	char path[4096];
	if (!mount || snprintf(path, sizeof(path), "%s%s/%s", mount, strcmp(cg->path, "/") == 0 ? "" : cg->path,
			       spec->name) >= (int)sizeof(path))
		return -1;
	_cleanup_free_ char *text = read_file_at(AT_FDCWD, path);
	unsigned n = 0;
	if (!text || cgfs_parse_pids(text, count_one, &n) < 0)
		return -1;
	return (int)n;
}

/* Sum the walk's records into s->tasks. Returns 0 or -ENOMEM. */
static int sum_tasks(struct acct_sampler *s, const struct acct_task_record *r, size_t n, uint32_t slots)
{
	size_t want = 0;
	for (size_t i = 0; i < n; i++)
		for (int k = 0; k < ACCT_TASK_SLOTS; k++)
			want += (slots & (1u << k)) && r[i].cgroup[k] != 0;
	if (want > s->tasks_cap) {
		struct task_count *v = realloc(s->tasks, want * sizeof(*v));
		if (!v)
			return -ENOMEM;
		s->tasks = v;
		s->tasks_cap = want;
	}
	size_t m = 0;
	memset(s->task_totals, 0, sizeof(s->task_totals));
	for (size_t i = 0; i < n; i++) {
		/* The sampler's own threads are threads, never active (top of
		 * the file); the kernel's pids are this namespace's where acctd
		 * runs in the init one, which is where it can load BPF. */
		bool active = (r[i].flags & ACCT_TASK_F_ACTIVE) &&
			      !((r[i].flags & ACCT_TASK_F_SELF) && sampler_is_own_thread(s, (int)r[i].tid));
		for (int k = 0; k < ACCT_TASK_SLOTS; k++)
			if ((slots & (1u << k)) && r[i].cgroup[k] != 0) {
				s->tasks[m++] = (struct task_count){ r[i].cgroup[k], (uint32_t)k, 1, active };
				s->task_totals[k].threads++;
				s->task_totals[k].active += active;
			}
	}
	qsort(s->tasks, m, sizeof(*s->tasks), compare_task_count);
	/* merge equal keys */
	size_t out = 0;
	for (size_t i = 0; i < m; i++) {
		if (out && compare_task_count(&s->tasks[out - 1], &s->tasks[i]) == 0) {
			s->tasks[out - 1].threads += s->tasks[i].threads;
			s->tasks[out - 1].active += s->tasks[i].active;
		} else
			s->tasks[out++] = s->tasks[i];
	}
	s->nr_tasks = out;
	return 0;
}

void sampler_task_walk(struct acct_sampler *s)
{
	struct acct_pass_report *rep = &s->bpf_report;
	struct {
		const struct acct_cgroup *cg;
		const struct file_spec *spec;
		int before;
	} chk[TASK_CHECKS];
	size_t nchk = 0;
	uint32_t slots = 0;

	s->tasks_valid = false;
	if (!s->opts.task_walk || s->task_walk_off || !(s->flags & ACCT_PASS_LOAD) || s->nr_work == 0)
		return;
	for (size_t i = 0; i < s->nr_work; i++) {
		const struct file_spec *spec = sampler_threads_spec(acct_cgroup_get_hierarchies(s->work[i]));
		if (spec)
			slots |= 1u << spec->tree;
	}
	for (size_t i = 0; i < s->nr_work && nchk < TASK_CHECKS; i++) {
		const struct acct_cgroup *cg = s->work[(s->task_check_cursor + i) % s->nr_work];
		const struct file_spec *spec = sampler_threads_spec(acct_cgroup_get_hierarchies(cg));
		int before = spec ? file_threads(s, cg, spec) : -1;
		if (before >= 0)
			chk[nchk++] = (typeof(chk[0])){ cg, spec, before };
	}
	/* the next window: every cgroup within nr_work / TASK_CHECKS passes (as
	 * sampler-bpf.c's memory checks) */
	s->task_check_cursor = (s->task_check_cursor + TASK_CHECKS) % s->nr_work;

	uint64_t t0 = acct_now_us();
	const struct acct_task_record *r;
	ssize_t n = acct_task_walk_read(s->opts.task_walk, slots, &r);
	if (n < 0 || sum_tasks(s, r, (size_t)n, slots) < 0) {
		rep->errors[ACCT_ERR_UNREADABLE]++; /* files this pass */
		return;
	}
	rep->task_records = (uint64_t)n;
	rep->task_walk_us = acct_now_us() - t0;

	bool bad = false;
	for (size_t i = 0; i < nchk; i++) {
		int after = file_threads(s, chk[i].cg, chk[i].spec);
		if (after < 0)
			continue; /* removed meanwhile */
		const struct task_count *t =
			sampler_find_tasks(s, chk[i].spec->tree, acct_cgroup_get_inode(chk[i].cg, chk[i].spec->tree));
		int walked = t ? (int)t->threads : 0;
		/* Threads that come and go while the walk runs can leave it
		 * outside two different file readings truly: that proves
		 * nothing (acct_bracket_judge()); it is no check. */
		enum acct_bracket j = acct_bracket_judge((uint64_t)walked, (uint64_t)chk[i].before, (uint64_t)after);
		if (j == ACCT_BRACKET_INCONCLUSIVE)
			continue;
		rep->task_checks++;
		if (j == ACCT_BRACKET_MISMATCH) {
			bad = true;
			rep->task_mismatches++;
			snprintf(rep->last_mismatch, sizeof(rep->last_mismatch), "%s threads: task walk %d not in [%d, %d]",
				 chk[i].cg->path, walked, MIN(chk[i].before, after), MAX(chk[i].before, after));
		}
	}
	s->task_streak = bad ? s->task_streak + 1 : 0;
	if (s->task_streak >= ACCT_BPF_MISMATCH_PASSES) {
		s->task_walk_off = true;
		rep->task_fallback = true;
		return; /* this pass reads files already */
	}
	s->tasks_valid = true;
}

void sample_load(struct sample_ctx *x)
{
	struct acct_sampler *s = x->w->s;
	struct thread_count t = { .w = x->w };

	x->st->load_valid = false;
	enum acct_hierarchy tree = x->st->spec[F_THREADS].tree;
	uint64_t id = x->st->spec[F_THREADS].name ? acct_cgroup_get_inode(x->cg, tree) : 0;
	if (s->tasks_valid && id) {
		const struct task_count *c = sampler_find_tasks(s, tree, id);
		x->st->own_threads = c ? c->threads : 0;
		x->st->own_active = c ? c->active : 0;
		x->st->load_valid = true;
		return;
	}
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

/* cgs[0..n) into v, deeper first, so that every cgroup comes before its
 * parent: a counting sort by depth, O(n + depth), no comparisons (the
 * depths are small integers; the order within a depth is kept). Returns 0
 * or -ENOMEM. */
static int order_deeper_first(struct acct_cgroup *const *cgs, size_t n, struct acct_cgroup **v)
{
	unsigned deepest = 0;
	for (size_t i = 0; i < n; i++)
		deepest = MAX(deepest, cgs[i]->depth);
	/* at[k + 1]: how many in bucket k (depth deepest - k); then at[k]: where bucket k starts */
	_cleanup_free_ size_t *at = calloc((size_t)deepest + 2, sizeof(*at));
	if (!at)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++)
		at[deepest - cgs[i]->depth + 1]++;
	for (size_t k = 1; k <= deepest; k++)
		at[k] += at[k - 1];
	for (size_t i = 0; i < n; i++)
		v[at[deepest - cgs[i]->depth]++] = cgs[i];
	return 0;
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

	if (!v || !parent || !threads || !active || order_deeper_first(cgs, n, v) < 0)
		return;
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
		/* The nearest tracked ancestor the passes keep (valid while
		 * nothing was released since: sampler_prune_prepare()) is the
		 * parent where it is one level up, and where it is higher the
		 * parent is not tracked; else a hash lookup of the path. */
		struct acct_cgroup *p;
		if (st && st->parent_gen == s->release_gen)
			p = st->parent && st->parent->depth + 1 == v[i]->depth ? st->parent : NULL;
		else
			p = acct_ledger_find(s->ledger, parent_path(v[i]->path, buf, sizeof(buf)));
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
		/* The root holds every thread of its hierarchy, also those of
		 * cgroups the ledger does not track (made since the last scan,
		 * or left out by [cgroups] include and exclude), which no sum
		 * over tracked cgroups has: where the walk counted this pass,
		 * its total for the root's hierarchy is the root's. */
		if (st && st->load_valid && s->tasks_valid && st->spec[F_THREADS].name &&
		    st->spec[F_THREADS].tree < ACCT_TASK_SLOTS && strcmp(v[i]->path, "/") == 0) {
			const struct task_total *t = &s->task_totals[st->spec[F_THREADS].tree];
			st->tree_threads = t->threads;
			st->tree_active = t->active;
		}
	}
	for (size_t i = 0; i < n; i++) {
		struct cg_state *st = v[i]->sampler_state;
		/* A cgroup whose own threads were not read (no threads file in
		 * its hierarchies, or the read failed) has no load and no task
		 * count: absent, not the sum of its children alone. */
		if (!st || !st->load_valid)
			continue;
		/* Quiet (no active thread in it or below, its averages at 0,
		 * as many threads as it serves): only the age moves. At 10,000
		 * idle cgroups the counters' precise reads and writes below
		 * were most of this loop, the event loop's dearest work. */
		if (st->load_at && st->tree_active == 0 && st->tree_threads == st->tasks_served &&
		    acct_loadavg_is_zero(&st->load)) {
			st->load_at = now_us;
			acct_cgroup_set_group_sampled(v[i], ACCT_GROUP_LOAD, now_us);
			continue;
		}
		if (!st->load_at) /* its first load pass: the averages start here */
			acct_cgroup_set_load_since(v[i], now_us, v[i]->created_seen);
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
		st->tasks_served = st->tree_threads;
		acct_cgroup_set_group_sampled(v[i], ACCT_GROUP_LOAD, now_us);
	}
}
