/* sampler.c - worker threads that read cgroupfs files into the ledger.
 *
 * The file is long because each controller file the sampler reads (memory,
 * cpu/cpuacct, PSI, tasks, v1 and v2 variants) needs its own small reader
 * with its error classification; they share the workers' descriptor cache
 * and pass bookkeeping. The BPF collector's part is in sampler-bpf.c; what
 * the two share, in sampler-internal.h.
 *
 * Threads and load. Each thread is in exactly one cgroup of every hierarchy,
 * and the hierarchies place it independently (on a hybrid host a process can
 * sit in the unified root and in /process_api/x of the v1 memory tree). A
 * cgroup's threads are therefore taken from one hierarchy only, the first of
 * threads_order[] that the cgroup is in: unified (v2 and hybrid hosts), else
 * v1 memory, cpuacct, cpu, blkio (legacy hosts; cgroups that exist only in v1 trees on
 * hybrid ones). Its hierarchical count adds only descendants that take their
 * threads from the same hierarchy: a descendant counted from another
 * hierarchy holds threads that are already counted, wherever that other
 * hierarchy placed them. So no cgroup counts a thread twice and the root,
 * whose hierarchy holds every thread, counts each exactly once.
 *
 * The sampler's own threads are counted as threads but never as active:
 * a worker is running because it is sampling (it reads /proc/<tid>/stat), and
 * the thread that started the pass (acctd's main thread) may still be running
 * to start it, just as the kernel's sampler runs in the timer interrupt and
 * not as a task. acctd's other threads count as any other. */
#include "sampler-internal.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "cgfs-parse.h"
#include "load.h"
#include "util.h"


const char *acct_sample_error_to_string(enum acct_sample_error e)
{
	static const char *const names[_ACCT_ERR_MAX] = {
		[ACCT_ERR_VANISHED] = "vanished",
		[ACCT_ERR_GARBAGE] = "garbage",
		[ACCT_ERR_UNREADABLE] = "unreadable",
		[ACCT_ERR_INVARIANT] = "invariant",
	};
	return e < _ACCT_ERR_MAX ? names[e] : "unknown";
}

/* ---- per-cgroup state ---------------------------------------------------- */

/* Where a cgroup's threads (tasks, load) are listed: the first hierarchy of
 * this table that the cgroup is in, and only there (see the top of the file:
 * counting a thread in two hierarchies counts it twice). The unified tree
 * comes first because it holds every process on v2 and hybrid hosts. */
static const struct file_spec threads_order[] = {
	{ "cgroup.threads", ACCT_HIER_UNIFIED },
	{ "tasks", ACCT_HIER_MEMORY },
	{ "tasks", ACCT_HIER_CPUACCT },
	{ "tasks", ACCT_HIER_CPU },
	{ "tasks", ACCT_HIER_BLKIO },
};

/* The cumulative quantities each role's file gives. A cgroup's hierarchies
 * can change while it lives: on a hybrid host systemd creates a cgroup in the
 * unified tree first and in cpu,cpuacct a moment later, so one pass reads its
 * CPU from the v2 cpu.stat and the next from cpuacct (usage from usage_percpu,
 * user and system from cpuacct.stat in 10 ms ticks). The two are different
 * counters: the new reading may be below the old one without either going
 * backwards. When a role's file changes, its quantities' next readings start
 * their series anew (not checked against the old source, no rate across the
 * switch) instead of accusing the kernel. */
#define QBIT(q) (UINT64_C(1) << (q))
#define Q_CPU_TIMES (QBIT(ACCT_Q_CPU_USAGE) | QBIT(ACCT_Q_CPU_USER) | QBIT(ACCT_Q_CPU_SYSTEM))
#define Q_CPU_THROTTLING \
	(QBIT(ACCT_Q_CPU_PERIODS) | QBIT(ACCT_Q_CPU_THROTTLED_PERIODS) | QBIT(ACCT_Q_CPU_THROTTLED))
#define Q_IO                                                                                                  \
	(QBIT(ACCT_Q_IO_READ_BYTES) | QBIT(ACCT_Q_IO_WRITE_BYTES) | QBIT(ACCT_Q_IO_READ_IOS) |                  \
	 QBIT(ACCT_Q_IO_WRITE_IOS) | QBIT(ACCT_Q_IO_DISCARD_BYTES) | QBIT(ACCT_Q_IO_DISCARD_IOS))
#define Q_MEMORY_EVENTS                                                                                        \
	(QBIT(ACCT_Q_MEMORY_EVENTS_LOW) | QBIT(ACCT_Q_MEMORY_EVENTS_HIGH) | QBIT(ACCT_Q_MEMORY_EVENTS_MAX) |     \
	 QBIT(ACCT_Q_MEMORY_EVENTS_OOM) | QBIT(ACCT_Q_MEMORY_EVENTS_OOM_KILL) |                                  \
	 QBIT(ACCT_Q_MEMORY_EVENTS_OOM_GROUP_KILL))
_Static_assert(_ACCT_Q_MAX <= 64, "a quantity mask is one uint64_t");

static const uint64_t role_cumulative[_F_MAX] = {
	[F_CPU_STAT] = Q_CPU_TIMES | Q_CPU_THROTTLING,
	[F_CPU_STAT_V1] = Q_CPU_THROTTLING,
	[F_CPUACCT_USAGE] = QBIT(ACCT_Q_CPU_USAGE),
	[F_CPUACCT_PERCPU] = QBIT(ACCT_Q_CPU_USAGE),
	[F_CPUACCT_STAT] = QBIT(ACCT_Q_CPU_USER) | QBIT(ACCT_Q_CPU_SYSTEM),
	[F_PSI_CPU] = QBIT(ACCT_Q_PSI_CPU_SOME) | QBIT(ACCT_Q_PSI_CPU_FULL),
	[F_PSI_MEMORY] = QBIT(ACCT_Q_PSI_MEMORY_SOME) | QBIT(ACCT_Q_PSI_MEMORY_FULL),
	[F_PSI_IO] = QBIT(ACCT_Q_PSI_IO_SOME) | QBIT(ACCT_Q_PSI_IO_FULL),
	[F_IO_STAT] = Q_IO,
	[F_BLKIO_BYTES] = Q_IO,
	[F_BLKIO_IOS] = Q_IO,
	[F_MEMORY_EVENTS] = Q_MEMORY_EVENTS,
	[F_MEMORY_FAILCNT] = QBIT(ACCT_Q_MEMORY_EVENTS_MAX),
	[F_MEMORY_OOM_CONTROL] = QBIT(ACCT_Q_MEMORY_EVENTS_OOM_KILL),
};

/* After a new pick_files() for a cgroup read before: mark the quantities of
 * every role whose file changed (name or tree, appeared or gone) to restart,
 * and drop the rate baselines that belong to the old files. */
static void note_source_changes(struct cg_state *st, const struct file_spec *old)
{
	uint64_t restart = 0;

	for (int f = 0; f < _F_MAX; f++)
		if (old[f].name != st->spec[f].name || old[f].tree != st->spec[f].tree)
			restart |= role_cumulative[f];
	if (restart & Q_CPU_TIMES) {
		st->last_cpu_at = 0;
		free(st->percpu_last);
		st->percpu_last = NULL;
		st->percpu_n = 0;
	}
	if (restart & Q_IO) {
		st->io_last_at = 0;
		st->io_last_known = 0;
	}
	st->restart |= restart;
}

/* Choose, for each role, the file name and tree that this layout and this
 * cgroup's hierarchies provide. */
static void pick_files(const struct acct_cgroup_layout *L, const struct acct_cgroup *cg, struct cg_state *st)
{
	uint32_t h = __atomic_load_n(&cg->hierarchies, __ATOMIC_ACQUIRE);
	bool root = strcmp(cg->path, "/") == 0;
	bool uni = h & (1u << ACCT_HIER_UNIFIED);
	bool mem1 = h & (1u << ACCT_HIER_MEMORY);
	bool acct1 = h & (1u << ACCT_HIER_CPUACCT);
	bool cpu1 = h & (1u << ACCT_HIER_CPU);
	bool blkio1 = h & (1u << ACCT_HIER_BLKIO);

	for (int f = 0; f < _F_MAX; f++)
		st->spec[f] = (struct file_spec){ NULL, 0 };
#define SET(role, n, t) (st->spec[role] = (struct file_spec){ (n), (t) })
	if (uni) {
		if (!root)
			SET(F_EVENTS, "cgroup.events", ACCT_HIER_UNIFIED);
		SET(F_PSI_CPU, "cpu.pressure", ACCT_HIER_UNIFIED);
		SET(F_PSI_MEMORY, "memory.pressure", ACCT_HIER_UNIFIED);
		SET(F_PSI_IO, "io.pressure", ACCT_HIER_UNIFIED);
		if (!acct1)
			SET(F_CPU_STAT, "cpu.stat", ACCT_HIER_UNIFIED);
		/* io.stat exists where the v2 tree has the io controller; a
		 * cgroup in a v1 blkio hierarchy reads that instead. */
		if (!blkio1)
			SET(F_IO_STAT, "io.stat", ACCT_HIER_UNIFIED);
		if (L->v2_memory) {
			/* The kernel's root has no memory.current (absent: not an
			 * error); a --cgroup-root tree's root may (acct_sampler_root_memory()). */
			SET(F_MEMORY, "memory.current", ACCT_HIER_UNIFIED);
			if (!root) {
				SET(F_MEMORY_EVENTS, "memory.events", ACCT_HIER_UNIFIED);
				SET(F_MEMORY_PEAK, "memory.peak", ACCT_HIER_UNIFIED);
				SET(F_MEMORY_MAX, "memory.max", ACCT_HIER_UNIFIED);
				SET(F_MEMORY_HIGH, "memory.high", ACCT_HIER_UNIFIED);
				SET(F_SWAP, "memory.swap.current", ACCT_HIER_UNIFIED);
				SET(F_SWAP_MAX, "memory.swap.max", ACCT_HIER_UNIFIED);
			}
			SET(F_MEMORY_STAT, "memory.stat", ACCT_HIER_UNIFIED);
			SET(F_NUMA_STAT, "memory.numa_stat", ACCT_HIER_UNIFIED);
		}
	}
	st->memory_v1 = false;
	if (mem1 && !st->spec[F_MEMORY_STAT].name) {
		st->memory_v1 = true;
		SET(F_MEMORY, "memory.usage_in_bytes", ACCT_HIER_MEMORY);
		SET(F_MEMORY_STAT, "memory.stat", ACCT_HIER_MEMORY);
		SET(F_NUMA_STAT, "memory.numa_stat", ACCT_HIER_MEMORY);
		SET(F_MEMORY_PEAK, "memory.max_usage_in_bytes", ACCT_HIER_MEMORY);
		if (!root)
			SET(F_MEMORY_MAX, "memory.limit_in_bytes", ACCT_HIER_MEMORY);
		SET(F_SWAP, "memory.memsw.usage_in_bytes", ACCT_HIER_MEMORY);
		SET(F_MEMORY_FAILCNT, "memory.failcnt", ACCT_HIER_MEMORY);
		SET(F_MEMORY_OOM_CONTROL, "memory.oom_control", ACCT_HIER_MEMORY);
	}
	if (acct1) {
		SET(F_CPUACCT_USAGE, "cpuacct.usage", ACCT_HIER_CPUACCT);
		SET(F_CPUACCT_PERCPU, "cpuacct.usage_percpu", ACCT_HIER_CPUACCT);
		SET(F_CPUACCT_STAT, "cpuacct.stat", ACCT_HIER_CPUACCT);
	}
	if (cpu1 && !(uni && L->v2_cpu))
		SET(F_CPU_STAT_V1, "cpu.stat", ACCT_HIER_CPU);
	if (blkio1) {
		SET(F_BLKIO_BYTES, "blkio.throttle.io_service_bytes_recursive", ACCT_HIER_BLKIO);
		SET(F_BLKIO_IOS, "blkio.throttle.io_serviced_recursive", ACCT_HIER_BLKIO);
	}
	for (size_t i = 0; i < ELEMENTSOF(threads_order); i++)
		if (h & (1u << threads_order[i].tree)) {
			SET(F_THREADS, threads_order[i].name, threads_order[i].tree);
			break;
		}
#undef SET
	st->hierarchies = h;
}

static void close_fds(struct acct_sampler *s, struct cg_state *st)
{
	for (int f = 0; f < _F_MAX; f++) {
		if (st->fd[f] >= 0) {
			close(st->fd[f]);
			__atomic_fetch_sub(&s->cached_fds, 1, __ATOMIC_RELAXED);
		}
		st->fd[f] = st->spec[f].name ? FD_UNSET : FD_NONE;
	}
}

static struct cg_state *state_of(struct acct_sampler *s, struct acct_cgroup *cg)
{
	struct cg_state *st = cg->sampler_state;

	if (!st) {
		st = calloc(1, sizeof(*st));
		if (!st)
			return NULL;
		for (int f = 0; f < _F_MAX; f++)
			st->fd[f] = FD_NONE;
		cg->sampler_state = st;
	}
	if (st->hierarchies != __atomic_load_n(&cg->hierarchies, __ATOMIC_ACQUIRE) || !st->spec[F_THREADS].name) {
		struct file_spec old[_F_MAX];
		memcpy(old, st->spec, sizeof(old));
		close_fds(s, st);
		pick_files(s->opts.layout, cg, st);
		close_fds(s, st); /* sets FD_UNSET/FD_NONE for the new specs */
		if (st->picked)
			note_source_changes(st, old);
		st->picked = true;
	}
	return st;
}

void acct_sampler_release(struct acct_cgroup *cg, void *userdata)
{
	struct acct_sampler *s = userdata;
	struct cg_state *st = cg->sampler_state;

	if (!st)
		return;
	if (s)
		close_fds(s, st);
	else
		for (int f = 0; f < _F_MAX; f++)
			if (st->fd[f] >= 0)
				close(st->fd[f]);
	free(st->percpu_last);
	free(st);
	cg->sampler_state = NULL;
}

/* ---- reading files ------------------------------------------------------ */

/* The reason of a failed read_role(): an open(2) or pread(2) error, or
 * read_role()'s own EBADMSG (a NUL byte in a text file). Content that does not
 * parse never comes here: each reader counts its parser's failure as garbage
 * itself (ERANGE included: a number past 64 bits). */
static enum acct_sample_error classify(int err)
{
	switch (err) {
	case ENOENT:
	case ENODEV:
	case ESTALE:
		return ACCT_ERR_VANISHED;
	case EBADMSG:
		return ACCT_ERR_GARBAGE;
	default:
		return ACCT_ERR_UNREADABLE;
	}
}

static int open_file(struct acct_sampler *s, struct acct_cgroup *cg, const struct file_spec *spec)
{
	const char *mount = s->opts.layout->mount[spec->tree];
	char path[4096];

	if (!mount)
		return -ENOENT;
	int n = snprintf(path, sizeof(path), "%s%s/%s", mount, strcmp(cg->path, "/") == 0 ? "" : cg->path,
			 spec->name);
	if (n < 0 || (size_t)n >= sizeof(path))
		return -ENAMETOOLONG;
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	return fd < 0 ? -errno : fd;
}

/* Read role f of cg into w->buf (NUL-terminated). Returns the length, -ENOENT
 * when the file does not exist for this cgroup (not an error: an absent file
 * is remembered as FD_ABSENT), or another negative errno. Not called for a
 * role that is FD_NONE or FD_ABSENT (sampler_get()). */
static ssize_t read_role(struct worker *w, struct acct_cgroup *cg, struct cg_state *st, enum file_role f)
{
	struct acct_sampler *s = w->s;
	int fd = st->fd[f];
	_cleanup_close_ int transient_fd = -EBADF; /* opened for this read only */

	if (fd == FD_UNSET) {
		fd = open_file(s, cg, &st->spec[f]);
		if (fd == -ENOENT) {
			/* Absent for a live cgroup: this kernel or layout lacks it. */
			st->fd[f] = FD_ABSENT;
			return -ENOENT;
		}
		if (fd == -EMFILE || fd == -ENFILE) {
			__atomic_store_n(&s->degraded, true, __ATOMIC_RELAXED);
			return -EMFILE;
		}
		if (fd < 0)
			return fd;
		if (__atomic_load_n(&s->cached_fds, __ATOMIC_RELAXED) >= s->max_cached) {
			/* Keep the rest of the descriptors for transient opens, the
			 * notify socket and API connections. */
			__atomic_store_n(&s->degraded, true, __ATOMIC_RELAXED);
			transient_fd = fd;
			w->part.open_per_read++;
		} else {
			st->fd[f] = fd;
			__atomic_fetch_add(&s->cached_fds, 1, __ATOMIC_RELAXED);
		}
	}

	size_t len = 0;
	for (;;) {
		ssize_t k = pread(fd, w->buf + len, w->buf_size - 1 - len, (off_t)len);
		if (k < 0)
			return -errno;
		len += (size_t)k;
		if (k == 0 || len < w->buf_size - 1)
			break;
		/* A file larger than the buffer (cgroup.threads of a big service). */
		char *nb = realloc(w->buf, w->buf_size * 2);
		if (!nb)
			return -ENOMEM;
		w->buf = nb;
		w->buf_size *= 2;
	}
	w->buf[len] = 0;
	w->part.files_read++;
	/* cgroupfs files are text; a NUL byte would cut the parse short silently */
	if (memchr(w->buf, 0, len))
		return -EBADMSG;
	return (ssize_t)len;
}

int acct_sampler_read_memory(struct acct_sampler *s, struct acct_cgroup *cg, int64_t *ret_bytes)
{
	struct cg_state *st = state_of(s, cg);
	_cleanup_close_ int fd = -EBADF;
	char buf[64];
	uint64_t v;

	if (!st)
		return -ENOMEM;
	if (st->fd[F_MEMORY] == FD_NONE || st->fd[F_MEMORY] == FD_ABSENT)
		return -ENODATA;
	/* Opened afresh, not the cached descriptor: a cgroup removed since the
	 * pass must read as gone (ENOENT), whatever an old descriptor gives. */
	fd = open_file(s, cg, &st->spec[F_MEMORY]);
	if (fd < 0)
		return fd;
	ssize_t k = pread(fd, buf, sizeof(buf) - 1, 0);
	if (k < 0)
		return -errno;
	buf[k] = 0;
	if (cgfs_parse_u64(buf, &v) < 0 || v > INT64_MAX)
		return -EBADMSG;
	*ret_bytes = (int64_t)v;
	return 0;
}

void sampler_fail(struct sample_ctx *x, enum acct_sample_error e)
{
	x->w->part.errors[e]++;
	x->failed = true;
}

/* Read a role; on success returns true with the content in w->buf. A missing
 * file is not a failure; other errors are counted. */
bool sampler_get(struct sample_ctx *x, enum file_role f)
{
	/* A role this layout does not have, or a file this cgroup was found
	 * without, is not read: no failed read to count, even for a cgroup
	 * that is gone (the error counters count failed reads). */
	if (x->st->fd[f] == FD_NONE || x->st->fd[f] == FD_ABSENT)
		return false;
	ssize_t r = read_role(x->w, x->cg, x->st, f);
	if (r >= 0)
		return true;
	if (r != -ENOENT || acct_cgroup_is_dead(x->cg))
		sampler_fail(x, classify((int)-r));
	return false;
}

/* A cumulative reading that is not compared with the last one (a counter
 * userspace can reset, or the first reading from a new source). */
void sampler_set_unchecked(struct sample_ctx *x, enum acct_quantity q, int64_t v)
{
	x->st->restart &= ~QBIT(q);
	acct_cgroup_set(x->cg, q, v);
}

void sampler_set_checked(struct sample_ctx *x, enum acct_quantity q, int64_t v)
{
	/* The first reading from a new source file (note_source_changes())
	 * replaces the old source's value: nothing to compare it with. */
	if (x->st->restart & QBIT(q)) {
		sampler_set_unchecked(x, q, v);
		return;
	}
	/* Cumulative time went backwards for a live cgroup (same inode, same
	 * file): the ledger keeps the old value; count the violation and say
	 * which it was. */
	if (acct_cgroup_set_checked(x->cg, q, v) == -ERANGE) {
		struct acct_reading old = { 0 };
		(void)acct_cgroup_get(x->cg, q, true, &old);
		snprintf(x->w->part.last_backwards, sizeof(x->w->part.last_backwards), "%s %s %" PRId64 " -> %" PRId64,
			 x->cg->path, acct_quantity_info(q)->name, old.value, v);
		sampler_fail(x, ACCT_ERR_INVARIANT);
	}
}

int64_t sampler_limit_value(uint64_t v)
{
	/* "max" (v2) and v1's PAGE_COUNTER_MAX-derived huge values mean none. */
	return v >= (uint64_t)INT64_MAX / 2 ? -1 : (int64_t)v;
}

/* Memory in use, with the drift histogram and the motion estimate: the mean
 * of |change| per second, weighted towards the recent passes (MOTION_WEIGHT
 * for the newest), so that a value of age A may be taken to have moved by
 * about motion * A since. */
#define MOTION_WEIGHT 0.25
static void set_memory_moved(struct acct_cgroup *cg, struct cg_state *st, int64_t v, uint64_t now,
			     struct histogram *drift)
{
	struct acct_reading old;
	if (acct_cgroup_get(cg, ACCT_Q_MEMORY, true, &old)) {
		uint64_t moved = abs_u64(v - old.value);
		if (drift)
			histogram_add(drift, moved);
		if (st->memory_at && now > st->memory_at) {
			double rate = (double)moved * 1e6 / (double)(now - st->memory_at);
			bool known = __atomic_load_n(&cg->memory_motion_known, __ATOMIC_RELAXED);
			double prev = known ? acct_cgroup_get_double(&cg->memory_motion_bits) : rate;
			acct_cgroup_set_double(&cg->memory_motion_bits, prev + MOTION_WEIGHT * (rate - prev));
			__atomic_store_n(&cg->memory_motion_known, true, __ATOMIC_RELEASE);
		}
	}
	st->memory_at = now;
	acct_cgroup_set(cg, ACCT_Q_MEMORY, v);
}

void sampler_set_memory(struct sample_ctx *x, int64_t v)
{
	set_memory_moved(x->cg, x->st, v, x->w->s->now_us, &x->w->part.drift_memory);
}

static bool sample_events(struct sample_ctx *x)
{
	bool populated = true, frozen;
	/* Populated in a record of every hierarchy the cgroup is in: no task can
	 * be missed, and cgroup.events need not be read. An empty one is read
	 * from cgroup.events (where it has one) all the same: the final-read
	 * rule needs populated read after populated_changes (sample_one()). */
	if (x->bpf_populated == 1) {
		x->events_known = x->st->spec[F_EVENTS].name != NULL;
		__atomic_store_n(&x->cg->populated, true, __ATOMIC_RELAXED);
		if (x->events_known)
			__atomic_store_n(&x->cg->events_known, true, __ATOMIC_RELAXED);
		return true;
	}
	if (x->bpf_populated == 0 && !x->st->spec[F_EVENTS].name) {
		/* A v1-only cgroup: empty in every hierarchy, but without
		 * cgroup.events its final values stay unproven (events_known). */
		__atomic_store_n(&x->cg->populated, false, __ATOMIC_RELAXED);
		return false;
	}
	if (sampler_get(x, F_EVENTS)) {
		if (cgfs_parse_events(x->w->buf, &populated, &frozen) < 0) {
			sampler_fail(x, ACCT_ERR_GARBAGE);
			populated = true;
		} else
			x->events_known = true;
	}
	__atomic_store_n(&x->cg->populated, populated, __ATOMIC_RELAXED);
	if (x->events_known)
		__atomic_store_n(&x->cg->events_known, true, __ATOMIC_RELAXED);
	return populated;
}

/* Memory in use; with working_set (slow passes, right after memory.stat) also
 * the working set, from this memory reading and this pass's inactive_file:
 * inputs of one moment, so the working set has the slow group's age. A fast
 * pass leaves it alone: memory now minus an inactive_file up to a slow
 * interval old was off by whatever page cache came or went meanwhile. */
static void sample_memory(struct sample_ctx *x, bool working_set)
{
	uint64_t v;
	if (x->mem_rec) {
		sampler_bpf_memory(x);
		return;
	}
	if (!sampler_get(x, F_MEMORY))
		return;
	if (cgfs_parse_u64(x->w->buf, &v) < 0 || v > INT64_MAX) {
		sampler_fail(x, ACCT_ERR_GARBAGE);
		return;
	}
	x->st->own_memory = (int64_t)v;
	x->st->own_memory_valid = true;
	/* The root's memory is defined from this reading and its children's
	 * after the pass (acct_sampler_root_memory()). */
	const struct acct_memcg_batching *b = &x->w->s->opts.batching;
	if (strcmp(x->cg->path, "/") != 0) {
		sampler_set_memory(x, (int64_t)v);
		/* Pre-charged stock, whose size here is unknown: every slot. */
		acct_cgroup_set_kernel_bound(x->cg, ACCT_Q_MEMORY, acct_memcg_memory_bound(b, INT_MAX));
	}
	/* The working set: this reading and the inactive_file read just before
	 * it (both the cgroup's own files, also at the root). */
	if (working_set && x->have_inactive) {
		acct_cgroup_set(x->cg, ACCT_Q_WORKING_SET, (int64_t)v > x->inactive ? (int64_t)v - x->inactive : 0);
		acct_cgroup_set_kernel_bound(x->cg, ACCT_Q_WORKING_SET,
					     acct_memcg_memory_bound(b, INT_MAX) + acct_memcg_file_stat_bound(b));
	}
}

static void note_cpu(struct sample_ctx *x, uint64_t usage_usec, uint64_t now_us)
{
	struct cg_state *st = x->st;
	struct acct_reading old;

	/* no drift across a change of source file: two different counters */
	if (!(st->restart & QBIT(ACCT_Q_CPU_USAGE)) && acct_cgroup_get(x->cg, ACCT_Q_CPU_USAGE, true, &old) &&
	    (int64_t)usage_usec >= old.value)
		histogram_add(&x->w->part.drift_cpu, usage_usec - (uint64_t)old.value);
	if (st->last_cpu_at && now_us > st->last_cpu_at && usage_usec >= st->last_cpu_usec) {
		uint64_t dt = now_us - st->last_cpu_at;
		double rate = (double)(usage_usec - st->last_cpu_usec) / (double)dt;
		acct_cgroup_set_double(&x->cg->cpu_rate_bits, rate);
		acct_rate_avg_update(&st->rate_avg, rate, dt);
		for (int i = 0; i < 3; i++)
			acct_cgroup_set_double(&x->cg->cpu_rate_avg_bits[i], st->rate_avg.avg[i]);
		__atomic_store_n(&x->cg->cpu_rate_known, true, __ATOMIC_RELEASE);
	}
	st->last_cpu_usec = usage_usec;
	st->last_cpu_at = now_us;
}

/* v1 cpuacct.usage_percpu: each CPU's share lands in the matching CPU's shard of
 * the usage counter (acct_counter_add_cpu()), so the per-CPU structure the
 * kernel gives is kept; the total is the sum of the per-CPU nanoseconds / 1000,
 * as cpuacct.usage gives it. Returns true when it set the usage. */
static bool sample_percpu(struct sample_ctx *x, uint64_t now_us)
{
	struct cg_state *st = x->st;
	uint64_t ns[1024], total = 0;
	size_t n;

	if (cgfs_parse_percpu(x->w->buf, ns, ELEMENTSOF(ns), &n) < 0 || n == 0) {
		sampler_fail(x, ACCT_ERR_GARBAGE);
		return false;
	}
	if (st->percpu_n != n) {
		uint64_t *p = calloc(n, sizeof(*p));
		if (!p)
			return false;
		free(st->percpu_last);
		st->percpu_last = p;
		st->percpu_n = n;
		/* first reading (or CPUs hot-added): start from the current total */
		for (size_t i = 0; i < n; i++) {
			total += ns[i];
			p[i] = ns[i] / 1000;
		}
		note_cpu(x, total / 1000, now_us);
		sampler_set_unchecked(x, ACCT_Q_CPU_USAGE, (int64_t)(total / 1000));
		return true;
	}
	for (size_t i = 0; i < n; i++) {
		if (ns[i] / 1000 < st->percpu_last[i]) {
			snprintf(x->w->part.last_backwards, sizeof(x->w->part.last_backwards),
				 "%s cpu.usage (CPU %zu) %" PRIu64 " -> %" PRIu64, x->cg->path, i, st->percpu_last[i],
				 ns[i] / 1000);
			sampler_fail(x, ACCT_ERR_INVARIANT);
			return true; /* keep the old value */
		}
		total += ns[i];
	}
	total /= 1000; /* usec, exactly cpuacct.usage / 1000 */
	note_cpu(x, total, now_us);
	unsigned shards = acct_domain_topology(x->cg->q[ACCT_Q_CPU_USAGE]->domain)->nr_shards;
	for (size_t i = 0; i < n; i++) {
		uint64_t us = ns[i] / 1000;
		if (us != st->percpu_last[i])
			(void)acct_counter_add_cpu(x->cg->q[ACCT_Q_CPU_USAGE], (unsigned)(i % shards),
						   (int64_t)(us - st->percpu_last[i]));
		st->percpu_last[i] = us;
	}
	/* Per-CPU microseconds are rounded down one by one; the remainder (less
	 * than one usec per CPU) goes in as one add so the total is exact. */
	sampler_set_unchecked(x, ACCT_Q_CPU_USAGE, (int64_t)total);
	return true;
}

/* A cgroup without tasks uses no CPU: its rate is 0 from the last reading on,
 * without a read. */
static void note_idle(struct sample_ctx *x, uint64_t now_us)
{
	struct cg_state *st = x->st;

	if (!st->last_cpu_at || now_us <= st->last_cpu_at)
		return;
	uint64_t dt = now_us - st->last_cpu_at;
	acct_cgroup_set_double(&x->cg->cpu_rate_bits, 0.0);
	acct_rate_avg_update(&st->rate_avg, 0.0, dt);
	for (int i = 0; i < 3; i++)
		acct_cgroup_set_double(&x->cg->cpu_rate_avg_bits[i], st->rate_avg.avg[i]);
	st->last_cpu_at = now_us;
}

static void sample_cpu(struct sample_ctx *x, uint64_t now_us)
{
	struct cgfs_cpu_stat cs;

	if (x->st->spec[F_CPU_STAT].name && sampler_get(x, F_CPU_STAT)) {
		if (cgfs_parse_cpu_stat(x->w->buf, &cs) < 0)
			sampler_fail(x, ACCT_ERR_GARBAGE);
		else {
			if (cs.has_usage) {
				note_cpu(x, cs.usage_usec, now_us);
				sampler_set_checked(x, ACCT_Q_CPU_USAGE, (int64_t)cs.usage_usec);
				sampler_set_checked(x, ACCT_Q_CPU_USER, (int64_t)cs.user_usec);
				sampler_set_checked(x, ACCT_Q_CPU_SYSTEM, (int64_t)cs.system_usec);
			}
			if (cs.has_throttling) {
				sampler_set_checked(x, ACCT_Q_CPU_PERIODS, (int64_t)cs.nr_periods);
				sampler_set_checked(x, ACCT_Q_CPU_THROTTLED_PERIODS, (int64_t)cs.nr_throttled);
				sampler_set_checked(x, ACCT_Q_CPU_THROTTLED, (int64_t)cs.throttled_usec);
			}
		}
	}
	if (x->st->spec[F_CPU_STAT_V1].name && sampler_get(x, F_CPU_STAT_V1)) {
		if (cgfs_parse_cpu_stat(x->w->buf, &cs) < 0)
			sampler_fail(x, ACCT_ERR_GARBAGE);
		else if (cs.has_throttling) {
			sampler_set_checked(x, ACCT_Q_CPU_PERIODS, (int64_t)cs.nr_periods);
			sampler_set_checked(x, ACCT_Q_CPU_THROTTLED_PERIODS, (int64_t)cs.nr_throttled);
			sampler_set_checked(x, ACCT_Q_CPU_THROTTLED, (int64_t)cs.throttled_usec);
		}
	}
	bool have_usage = false;
	if (x->st->spec[F_CPUACCT_PERCPU].name && sampler_get(x, F_CPUACCT_PERCPU))
		have_usage = sample_percpu(x, now_us);
	if (!have_usage && x->st->spec[F_CPUACCT_USAGE].name && sampler_get(x, F_CPUACCT_USAGE)) {
		uint64_t ns;
		if (cgfs_parse_u64(x->w->buf, &ns) < 0)
			sampler_fail(x, ACCT_ERR_GARBAGE);
		else {
			note_cpu(x, ns / 1000, now_us);
			sampler_set_checked(x, ACCT_Q_CPU_USAGE, (int64_t)(ns / 1000));
		}
	}
	if (x->st->spec[F_CPUACCT_STAT].name && sampler_get(x, F_CPUACCT_STAT)) {
		uint64_t user, sys;
		if (cgfs_parse_cpuacct_stat(x->w->buf, (unsigned)x->w->s->opts.user_hz, &user, &sys) < 0)
			sampler_fail(x, ACCT_ERR_GARBAGE);
		else {
			sampler_set_checked(x, ACCT_Q_CPU_USER, (int64_t)user);
			sampler_set_checked(x, ACCT_Q_CPU_SYSTEM, (int64_t)sys);
		}
	}
}

static void sample_psi(struct sample_ctx *x)
{
	static const enum file_role roles[_ACCT_PSI_MAX] = { F_PSI_CPU, F_PSI_MEMORY, F_PSI_IO };
	static const enum acct_quantity totals[_ACCT_PSI_MAX][2] = {
		{ ACCT_Q_PSI_CPU_SOME, ACCT_Q_PSI_CPU_FULL },
		{ ACCT_Q_PSI_MEMORY_SOME, ACCT_Q_PSI_MEMORY_FULL },
		{ ACCT_Q_PSI_IO_SOME, ACCT_Q_PSI_IO_FULL },
	};

	for (int r = 0; r < _ACCT_PSI_MAX; r++) {
		struct cgfs_psi psi;
		if (!sampler_get(x, roles[r]))
			continue;
		if (cgfs_parse_pressure(x->w->buf, &psi) < 0) {
			sampler_fail(x, ACCT_ERR_GARBAGE);
			continue;
		}
		const struct cgfs_psi_line *lines[2] = { &psi.some, &psi.full };
		for (int k = 0; k < 2; k++) {
			if (!lines[k]->present)
				continue;
			const double avgs[3] = { lines[k]->avg10, lines[k]->avg60, lines[k]->avg300 };
			for (int a = 0; a < 3; a++)
				__atomic_store_n(&x->cg->psi_avg[r][k][a], (uint32_t)(avgs[a] * 100.0 + 0.5),
						 __ATOMIC_RELAXED);
			sampler_set_checked(x, totals[r][k], (int64_t)lines[k]->total_us);
		}
		__atomic_store_n(&x->cg->psi_known[r], true, __ATOMIC_RELEASE);
	}
}

/* ---- block I/O and memory events (issue 11, items 15 and 16) ------------------ */

/* The kernel's name of a block device (DEVNAME of its uevent, "sda" for 8:0);
 * "" when sysfs does not have it. */
static void io_device_name(unsigned major, unsigned minor, char *name, size_t size)
{
	char path[64], buf[512];

	name[0] = 0;
	snprintf(path, sizeof(path), "/sys/dev/block/%u:%u/uevent", major, minor);
	_cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return;
	ssize_t n = read(fd, buf, sizeof(buf) - 1);
	if (n <= 0)
		return;
	buf[n] = 0;
	for (char *line = buf; line && *line; line = strchr(line, '\n') ? strchr(line, '\n') + 1 : NULL)
		if (strncmp(line, "DEVNAME=", 8) == 0) {
			size_t len = strcspn(line + 8, "\n");
			snprintf(name, size, "%.*s", (int)MIN(len, size - 1), line + 8);
			return;
		}
}

/* Totals and rates from the devices of one reading. The rates are those of
 * the CPU (note_cpu()): the change since the previous reading over the time
 * between the two passes' start. A total that went down (v1
 * blkio.reset_stats, a device that left io.stat) restarts the rate. */
static void note_io(struct sample_ctx *x, const struct cgfs_io_device *devs, size_t n, bool checked, uint64_t now_us)
{
	static const enum cgfs_io_field fields[_ACCT_IO_STAT_MAX] = {
		[ACCT_IO_READ_BYTES] = CGFS_IO_RBYTES, [ACCT_IO_WRITE_BYTES] = CGFS_IO_WBYTES,
		[ACCT_IO_READ_IOS] = CGFS_IO_RIOS,     [ACCT_IO_WRITE_IOS] = CGFS_IO_WIOS,
		[ACCT_IO_DISCARD_BYTES] = CGFS_IO_DBYTES, [ACCT_IO_DISCARD_IOS] = CGFS_IO_DIOS,
	};
	struct cg_state *st = x->st;
	struct acct_ledger *l = x->w->s->ledger;
	uint64_t total[_ACCT_IO_STAT_MAX] = { 0 };
	uint32_t known = 0;

	for (size_t i = 0; i < n; i++) {
		int64_t v[_ACCT_IO_STAT_MAX];
		for (int k = 0; k < _ACCT_IO_STAT_MAX; k++) {
			enum cgfs_io_field f = fields[k];
			if (!(devs[i].present & (1u << f))) {
				v[k] = -1;
				continue;
			}
			v[k] = (int64_t)MIN(devs[i].v[f], (uint64_t)INT64_MAX);
			total[k] = __builtin_add_overflow(total[k], devs[i].v[f], &total[k]) ? UINT64_MAX : total[k];
			known |= 1u << k;
		}
		int d = acct_ledger_io_device_find(l, devs[i].major, devs[i].minor);
		if (d < 0) {
			char name[ACCT_IO_NAME_MAX];
			io_device_name(devs[i].major, devs[i].minor, name, sizeof(name));
			d = acct_ledger_io_device_add(l, devs[i].major, devs[i].minor, name);
		}
		/* Past the tables' room the device still counts in the totals. */
		if (d >= 0)
			(void)acct_cgroup_set_io_device(x->cg, (unsigned)d, v);
	}
	/* No device listed: the kernel says nothing was done yet (v1 "Total 0",
	 * an empty io.stat), so every total is 0. */
	if (n == 0)
		known = (1u << _ACCT_IO_STAT_MAX) - 1;

	bool rates = st->io_last_at && now_us > st->io_last_at;
	for (int k = 0; k < _ACCT_IO_STAT_MAX; k++) {
		if (!(known & (1u << k)))
			continue;
		int64_t v = (int64_t)MIN(total[k], (uint64_t)INT64_MAX);
		enum acct_quantity q = acct_io_stat_quantity((enum acct_io_stat)k);
		if (checked)
			sampler_set_checked(x, q, v);
		else
			sampler_set_unchecked(x, q, v);
		if (rates && (st->io_last_known & (1u << k))) {
			double per_s = total[k] >= st->io_last[k] ? (double)(total[k] - st->io_last[k]) * 1e6 /
									   (double)(now_us - st->io_last_at)
								 : 0;
			acct_cgroup_set_double(&x->cg->io_rate_bits[k], per_s);
		}
		st->io_last[k] = total[k];
	}
	if (rates && st->io_last_known)
		__atomic_store_n(&x->cg->io_rate_known, true, __ATOMIC_RELEASE);
	st->io_last_known = known;
	st->io_last_at = now_us;
}

static void sample_io(struct sample_ctx *x, uint64_t now_us)
{
	struct cgfs_io_device devs[CGFS_IO_MAX_DEVICES];
	size_t n = 0;

	if (x->st->spec[F_IO_STAT].name) {
		if (!sampler_get(x, F_IO_STAT))
			return;
		if (cgfs_parse_io_stat(x->w->buf, devs, ELEMENTSOF(devs), &n) < 0) {
			sampler_fail(x, ACCT_ERR_GARBAGE);
			return;
		}
		note_io(x, devs, n, true, now_us);
		return;
	}
	if (!x->st->spec[F_BLKIO_BYTES].name || !sampler_get(x, F_BLKIO_BYTES))
		return;
	/* v1 counters can be zeroed (blkio.reset_stats): not checked. */
	if (cgfs_parse_blkio_rwstat(x->w->buf, false, devs, ELEMENTSOF(devs), &n, NULL) < 0 || !sampler_get(x, F_BLKIO_IOS) ||
	    cgfs_parse_blkio_rwstat(x->w->buf, true, devs, ELEMENTSOF(devs), &n, NULL) < 0) {
		if (!x->failed)
			sampler_fail(x, ACCT_ERR_GARBAGE);
		return;
	}
	note_io(x, devs, n, false, now_us);
}

static void sample_memory_events(struct sample_ctx *x)
{
	static const enum acct_quantity events[_CGFS_MEMEV_MAX] = {
		[CGFS_MEMEV_LOW] = ACCT_Q_MEMORY_EVENTS_LOW,
		[CGFS_MEMEV_HIGH] = ACCT_Q_MEMORY_EVENTS_HIGH,
		[CGFS_MEMEV_MAX] = ACCT_Q_MEMORY_EVENTS_MAX,
		[CGFS_MEMEV_OOM] = ACCT_Q_MEMORY_EVENTS_OOM,
		[CGFS_MEMEV_OOM_KILL] = ACCT_Q_MEMORY_EVENTS_OOM_KILL,
		[CGFS_MEMEV_OOM_GROUP_KILL] = ACCT_Q_MEMORY_EVENTS_OOM_GROUP_KILL,
	};
	uint64_t v;

	if (x->mem_rec) {
		sampler_bpf_memory_events(x);
		return;
	}
	if (sampler_get(x, F_MEMORY_EVENTS)) {
		struct cgfs_memory_events ev;
		if (cgfs_parse_memory_events(x->w->buf, &ev) < 0)
			sampler_fail(x, ACCT_ERR_GARBAGE);
		else
			for (int i = 0; i < _CGFS_MEMEV_MAX; i++)
				if (ev.present & (1u << i))
					sampler_set_checked(x, events[i], (int64_t)MIN(ev.v[i], (uint64_t)INT64_MAX));
	}
	/* v1 failcnt counts the charges that hit the limit, as v2's "max" does
	 * (runc and cAdvisor map them onto each other); writing 0 resets it,
	 * so it is not checked for going backwards. */
	if (sampler_get(x, F_MEMORY_FAILCNT)) {
		if (cgfs_parse_u64(x->w->buf, &v) < 0)
			sampler_fail(x, ACCT_ERR_GARBAGE);
		else
			sampler_set_unchecked(x, ACCT_Q_MEMORY_EVENTS_MAX, (int64_t)MIN(v, (uint64_t)INT64_MAX));
	}
	if (sampler_get(x, F_MEMORY_OOM_CONTROL)) {
		bool under, has_kill;
		if (cgfs_parse_oom_control(x->w->buf, &under, &v, &has_kill) < 0)
			sampler_fail(x, ACCT_ERR_GARBAGE);
		else {
			acct_cgroup_set(x->cg, ACCT_Q_MEMORY_UNDER_OOM, under);
			if (has_kill)
				sampler_set_checked(x, ACCT_Q_MEMORY_EVENTS_OOM_KILL, (int64_t)MIN(v, (uint64_t)INT64_MAX));
		}
	}
}

int sampler_memstat_kv(const char *key, size_t key_len, uint64_t value, void *userdata)
{
	struct sample_ctx *x = userdata;
	const char *inactive = x->st->memory_v1 ? "total_inactive_file" : "inactive_file";

	if (key_len == strlen(inactive) && memcmp(key, inactive, key_len) == 0) {
		x->inactive = value > INT64_MAX ? INT64_MAX : (int64_t)value;
		x->have_inactive = true;
	}
	(void)acct_cgroup_set_memstat(x->w->s->ledger, x->cg, key, key_len,
				      value > INT64_MAX ? INT64_MAX : (int64_t)value);
	return 0;
}

struct numa_v2_ctx {
	uint64_t sum[CGFS_MAX_NODES];
	size_t nodes;
};

static int numa_v2_line(const char *key, size_t key_len, uint64_t total, const uint64_t *per_node,
			size_t nr_nodes, void *userdata)
{
	struct numa_v2_ctx *n = userdata;
	(void)total;
	if ((key_len == 4 && memcmp(key, "anon", 4) == 0) || (key_len == 4 && memcmp(key, "file", 4) == 0) ||
	    (key_len == 12 && memcmp(key, "kernel_stack", 12) == 0) ||
	    (key_len == 10 && memcmp(key, "pagetables", 10) == 0) ||
	    (key_len == 16 && memcmp(key, "slab_reclaimable", 16) == 0) ||
	    (key_len == 18 && memcmp(key, "slab_unreclaimable", 18) == 0)) {
		for (size_t i = 0; i < nr_nodes && i < CGFS_MAX_NODES; i++)
			n->sum[i] += per_node[i];
		n->nodes = MAX(n->nodes, MIN(nr_nodes, (size_t)CGFS_MAX_NODES));
	}
	return 0;
}

/* Per-node memory from memory.numa_stat, which flushes the memcg's stats
 * when they are over the kernel's threshold (as memory.stat does). Returns
 * whether it was read and parsed. */
bool sampler_numa_from_file(struct sample_ctx *x)
{
	if (!sampler_get(x, F_NUMA_STAT))
		return false;
	int r;
	if (x->st->memory_v1) {
		/* Hierarchical, as memory.usage_in_bytes is (cgfs_numa_v1_nodes()). */
		uint64_t pages[CGFS_MAX_NODES];
		size_t nodes;
		r = cgfs_numa_v1_nodes(x->w->buf, pages, ELEMENTSOF(pages), &nodes, NULL);
		for (size_t i = 0; r >= 0 && i < nodes; i++)
			(void)acct_cgroup_set_node(x->cg, (unsigned)i,
						   (int64_t)(pages[i] * (uint64_t)x->w->s->opts.page_size));
	} else {
		struct numa_v2_ctx n = { .nodes = 0 };
		r = cgfs_parse_numa_stat(x->w->buf, numa_v2_line, &n);
		for (size_t i = 0; r >= 0 && i < n.nodes; i++)
			(void)acct_cgroup_set_node(x->cg, (unsigned)i, (int64_t)n.sum[i]);
	}
	if (r < 0) {
		sampler_fail(x, ACCT_ERR_GARBAGE);
		return false;
	}
	return true;
}

/* The slow files, and memory in use right after memory.stat (see
 * sample_memory()). */
static void sample_slow(struct sample_ctx *x)
{
	uint64_t v;

	if (sampler_get(x, F_MEMORY_STAT)) {
		if (cgfs_parse_flat_keyed(x->w->buf, sampler_memstat_kv, x) < 0) {
			sampler_fail(x, ACCT_ERR_GARBAGE);
			x->have_inactive = false;
		} else { /* reading memory.stat flushed what was over the threshold */
			x->memstat_from_file = true;
			__atomic_store_n(&x->cg->memstat_bound,
					 acct_memcg_file_stat_bound(&x->w->s->opts.batching), __ATOMIC_RELAXED);
		}
	}
	sample_memory(x, true);
	if (x->mem_rec) /* NUMA, peak, limits and swap came with the record */
		return;
	(void)sampler_numa_from_file(x);
	static const struct {
		enum file_role role;
		enum acct_quantity q;
	} singles[] = {
		{ F_MEMORY_PEAK, ACCT_Q_MEMORY_PEAK }, { F_MEMORY_MAX, ACCT_Q_MEMORY_MAX },
		{ F_MEMORY_HIGH, ACCT_Q_MEMORY_HIGH }, { F_SWAP, ACCT_Q_SWAP },
		{ F_SWAP_MAX, ACCT_Q_SWAP_MAX },
	};
	for (size_t i = 0; i < ELEMENTSOF(singles); i++) {
		if (!sampler_get(x, singles[i].role))
			continue;
		if (cgfs_parse_u64(x->w->buf, &v) < 0) {
			sampler_fail(x, ACCT_ERR_GARBAGE);
			continue;
		}
		int64_t val = acct_quantity_info(singles[i].q)->limit ? sampler_limit_value(v) : (int64_t)MIN(v, (uint64_t)INT64_MAX);
		if (singles[i].q == ACCT_Q_SWAP && x->st->memory_v1) {
			/* v1 memsw counts memory + swap: swap is set once this pass has
			 * read the memory (see sample_one()). */
			x->st->memsw = val;
			x->st->memsw_valid = true;
			continue;
		}
		acct_cgroup_set(x->cg, singles[i].q, val);
	}
}

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

static void sample_load(struct sample_ctx *x)
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

/* Per-CPU usage (v1 usage_percpu) feeds the counter through the matching
 * CPU's shard, so per-CPU structure is kept where the kernel gives it. The
 * total stays equal to cpuacct.usage (both are the same sum). */
/* When an empty cgroup's values are final. A task leaves its cgroups
 * (cgroup_exit(): populated drops) before its last context switch, and that
 * switch charges the CPU time it ran since the scheduler last accounted it (up
 * to a tick, more if it is preempted on its way out). So an empty cgroup's CPU
 * time can still grow for a while; its read is final only when the CPU time has
 * stood still for SETTLE_US (two ticks at HZ=100) since an earlier empty read.
 * Memory is released before cgroup_exit() (exit_mm()) and needs no wait. */
#define SETTLE_US 20000

static bool empty_read_settled(struct sample_ctx *x)
{
	struct acct_reading rd;
	if (!acct_cgroup_get(x->cg, ACCT_Q_CPU_USAGE, true, &rd))
		return true; /* no CPU accounting for this cgroup */
	uint64_t now = acct_now_us();
	if (!x->st->settling || (uint64_t)rd.value != x->st->settle_cpu) {
		x->st->settling = true;
		x->st->settle_cpu = (uint64_t)rd.value;
		x->st->settle_at = now;
		return false;
	}
	return now - x->st->settle_at >= SETTLE_US;
}

/* Queue an emptied cgroup for the re-read at the end of this worker's share
 * of the pass; without memory for the queue, the next pass reads it. */
static void queue_settle(struct worker *w, struct acct_cgroup *cg)
{
	if (w->settle_round)
		return;
	if (w->nr_settle == w->settle_cap) {
		size_t cap = w->settle_cap ? 2 * w->settle_cap : 16;
		struct acct_cgroup **p = realloc(w->settle, cap * sizeof(*p));
		if (!p)
			return;
		w->settle = p;
		w->settle_cap = cap;
	}
	w->settle[w->nr_settle++] = cg;
}

static void sample_one(struct worker *w, struct acct_cgroup *cg, unsigned flags, uint64_t now_us)
{
	struct cg_state *st = state_of(w->s, cg);
	struct sample_ctx x = { .w = w, .cg = cg, .st = st, .bpf_populated = -1,
				.files_allowed = !(flags & ACCT_PASS_KERNEL) };

	if (!st) {
		w->part.errors[ACCT_ERR_UNREADABLE]++;
		w->part.cgroups_failed++;
		return;
	}
	bool slow = flags & ACCT_PASS_SLOW;
	bool fast = flags & (ACCT_PASS_FAST | ACCT_PASS_SLOW);

	if (flags & ACCT_PASS_KERNEL) {
		/* Page counters from the lean record only (memory, peak, limits,
		 * swap); the group's age stays the last file pass's, those
		 * quantities carry their own. Stats, events and NUMA wait for the
		 * next file pass. */
		sampler_bpf_lookup(&x);
		if (x.mem_rec)
			sampler_bpf_memory(&x);
		return;
	}

	if (fast) {
		if (w->s->opts.collector)
			sampler_bpf_lookup(&x);
		/* Before cgroup.events: a change announced after this load makes
		 * this read not the final one (acct_cgroup_final()). */
		uint64_t changes = __atomic_load_n(&cg->populated_changes, __ATOMIC_ACQUIRE);
		bool populated = sample_events(&x);
		if (!populated && st->read_empty && !slow) {
			/* Read since its last task left: nothing of the fast group
			 * can have grown, and no task can run in it. */
			w->part.skipped_empty++;
			note_idle(&x, now_us);
		} else {
			if (slow)
				sample_slow(&x); /* memory.stat, then memory */
			else
				sample_memory(&x, false);
			if (slow && st->memsw_valid) {
				if (st->own_memory_valid) /* memsw is this cgroup's own memory + swap */
					acct_cgroup_set(cg, ACCT_Q_SWAP,
							st->memsw > st->own_memory ? st->memsw - st->own_memory : 0);
				st->memsw_valid = false;
			}
			sample_cpu(&x, now_us);
			sample_psi(&x);
			sample_io(&x, now_us);
			sample_memory_events(&x);
			/* An empty cgroup is read once after it empties (this pass, when
			 * it was populated at the last one), then skipped until it
			 * is populated again; a failed read is retried. */
			st->read_empty = !populated && !x.failed;
			/* Final only once a task was seen (read populated, or a change
			 * announced): kernfs loses some changes of a new cgroup's
			 * cgroup.events, so "empty at the first read" does not prove
			 * that no task came and went before its removal. */
			if (x.events_known && populated) {
				st->seen_populated = true;
				st->settling = false;
				__atomic_store_n(&cg->final_read, 0, __ATOMIC_RELEASE);
			} else if (x.events_known && !x.failed && (st->seen_populated || changes > 0)) {
				if (empty_read_settled(&x)) {
					st->settling = false;
					__atomic_store_n(&cg->final_read, changes + 1, __ATOMIC_RELEASE);
				} else {
					st->read_empty = false; /* read again, at the latest next pass */
					queue_settle(w, cg);
				}
			}
			/* else (cgroup.events unreadable: being removed, or a failed
			 * read): an earlier final read stands */
			if (!x.failed)
				__atomic_store_n(&cg->sampled_us[ACCT_GROUP_FAST], now_us, __ATOMIC_RELEASE);
			if (slow && !x.failed)
				__atomic_store_n(&cg->sampled_us[ACCT_GROUP_SLOW], now_us, __ATOMIC_RELEASE);
		}
	}
	if (flags & ACCT_PASS_LOAD)
		sample_load(&x);
	if (x.failed) {
		w->part.cgroups_failed++;
		__atomic_fetch_add(&cg->sample_errors, 1, __ATOMIC_RELAXED);
	}
}

/* ---- workers ---------------------------------------------------------- */

static double thread_cpu_seconds(void)
{
	struct rusage ru;
	if (getrusage(RUSAGE_THREAD, &ru) < 0)
		return 0;
	return (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 + (double)ru.ru_stime.tv_sec +
	       (double)ru.ru_stime.tv_usec / 1e6;
}

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	struct acct_sampler *s = w->s;
	uint64_t seen = 0;

	pthread_mutex_lock(&s->lock);
	w->tid = gettid();
	s->started++;
	pthread_cond_broadcast(&s->cond);
	pthread_mutex_unlock(&s->lock);
	for (;;) {
		pthread_mutex_lock(&s->lock);
		while (!s->stop && s->generation == seen)
			pthread_cond_wait(&s->cond, &s->lock);
		if (s->stop) {
			pthread_mutex_unlock(&s->lock);
			return NULL;
		}
		seen = s->generation;
		unsigned flags = s->flags;
		uint64_t now = s->now_us;
		pthread_mutex_unlock(&s->lock);

		double cpu0 = thread_cpu_seconds();
		memset(&w->part, 0, sizeof(w->part));
		if (s->opts.collector && (flags & (ACCT_PASS_FAST | ACCT_PASS_SLOW | ACCT_PASS_KERNEL))) {
			/* Worker 0 walks; the others wait for the snapshots. */
			if (w->index == 0)
				sampler_bpf_walk(s);
			pthread_mutex_lock(&s->lock);
			if (w->index == 0) {
				s->snap_generation = seen;
				pthread_cond_broadcast(&s->cond);
			} else
				while (s->snap_generation != seen && !s->stop)
					pthread_cond_wait(&s->cond, &s->lock);
			/* Stopping before the snapshots are whole: worker 0 may be
			 * writing them still, so this pass reads nothing more. */
			bool abandon = s->snap_generation != seen;
			pthread_mutex_unlock(&s->lock);
			if (abandon)
				return NULL;
		}
		for (;;) {
			size_t i = __atomic_fetch_add(&s->next, 1, __ATOMIC_RELAXED);
			if (i >= s->nr_work)
				break;
			sample_one(w, s->work[i], flags, now);
		}
		if (w->nr_settle) {
			/* Cgroups this share found emptied: read them once more when
			 * their CPU time can have settled (empty_read_settled()). One
			 * wait per pass, on this worker only. */
			struct timespec ts = { 0, SETTLE_US * 1000L };
			while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
				;
			w->settle_round = true;
			for (size_t i = 0; i < w->nr_settle; i++)
				sample_one(w, w->settle[i], ACCT_PASS_FAST, now);
			w->settle_round = false;
			w->nr_settle = 0;
		}
		w->cpu_seconds = thread_cpu_seconds() - cpu0;

		pthread_mutex_lock(&s->lock);
		bool last = --s->running == 0;
		pthread_mutex_unlock(&s->lock);
		if (last) {
			uint64_t one = 1;
			(void)!write(s->done_fd, &one, sizeof(one));
		}
	}
}

DEFINE_TRIVIAL_CLEANUP_FUNC(struct acct_sampler *, acct_sampler_free);

int acct_sampler_new(const struct acct_sampler_options *opts, struct acct_ledger *ledger,
		     struct acct_sampler **ret)
{
	_cleanup_(acct_sampler_freep) struct acct_sampler *s = NULL;

	if (!opts->layout || opts->workers == 0 || opts->workers > 256)
		return -EINVAL;
	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	s->opts = *opts;
	if (s->opts.page_size <= 0)
		s->opts.page_size = sysconf(_SC_PAGESIZE);
	if (s->opts.user_hz <= 0)
		s->opts.user_hz = sysconf(_SC_CLK_TCK);
	s->ledger = ledger;
	if (s->opts.batching.nr_cpus == 0)
		acct_bpf_memcg_batching_detect(&s->opts.batching, opts->nr_cpus, NULL);
	if (s->opts.page_size > 0)
		s->opts.batching.page_size = s->opts.page_size;
	if (!opts->kernel_bounds) /* a copy of a tree: no kernel batched its values */
		s->opts.batching.nr_cpus = 0;
	sampler_bpf_init(s, opts);
	s->max_cached = opts->max_cached_fds;
	if (s->max_cached == 0) {
		struct rlimit rl;
		uint64_t lim = getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY ? rl.rlim_cur : 1024;
		uint64_t reserve = MAX(lim / 8, (uint64_t)48);
		s->max_cached = lim > reserve ? lim - reserve : 0;
	}
	pthread_mutex_init(&s->lock, NULL);
	pthread_cond_init(&s->cond, NULL);
	s->done_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	s->workers = calloc(opts->workers, sizeof(*s->workers));
	if (s->done_fd < 0 || !s->workers)
		return -ENOMEM;
	for (unsigned i = 0; i < opts->workers; i++) {
		struct worker *w = &s->workers[i];
		w->s = s;
		w->index = i;
		w->buf_size = 16384;
		w->buf = malloc(w->buf_size);
		if (!w->buf)
			return -ENOMEM;
		int r = pthread_create(&w->thread, NULL, worker_main, w);
		if (r != 0)
			return -r;
		s->nr_workers++;
	}
	/* Every tid known before the first pass, so that no worker is ever
	 * counted as active (count_thread()); the lock orders the stores before
	 * the workers' reads. */
	pthread_mutex_lock(&s->lock);
	while (s->started < s->nr_workers)
		pthread_cond_wait(&s->cond, &s->lock);
	pthread_mutex_unlock(&s->lock);
	*ret = TAKE_PTR(s);
	return 0;
}

struct acct_sampler *acct_sampler_free(struct acct_sampler *s)
{
	if (!s)
		return NULL;
	pthread_mutex_lock(&s->lock);
	s->stop = true;
	pthread_cond_broadcast(&s->cond);
	pthread_mutex_unlock(&s->lock);
	for (unsigned i = 0; i < s->nr_workers; i++)
		pthread_join(s->workers[i].thread, NULL);
	/* Buffers of workers that never started too (acct_sampler_new() failed). */
	for (unsigned i = 0; s->workers && i < s->opts.workers; i++) {
		free(s->workers[i].buf);
		free(s->workers[i].settle);
	}
	free(s->workers);
	free(s->work);
	for (int i = 0; i < _ACCT_HIER_MAX; i++)
		acct_bpf_snapshot_clear(&s->snap[i]);
	if (s->done_fd >= 0)
		close(s->done_fd);
	pthread_cond_destroy(&s->cond);
	pthread_mutex_destroy(&s->lock);
	free(s);
	return NULL;
}

int acct_sampler_start(struct acct_sampler *s, struct acct_cgroup *const *cgs, size_t n, unsigned flags,
		       uint64_t now_us)
{
	pthread_mutex_lock(&s->lock);
	if (s->busy) {
		pthread_mutex_unlock(&s->lock);
		return -EBUSY;
	}
	struct acct_cgroup **copy = n ? malloc(n * sizeof(*copy)) : NULL;
	if (n && !copy) {
		pthread_mutex_unlock(&s->lock);
		return -ENOMEM;
	}
	if (n)
		memcpy(copy, cgs, n * sizeof(*copy));
	free(s->work);
	s->work = copy;
	s->nr_work = n;
	s->next = 0;
	s->flags = flags;
	s->now_us = now_us;
	s->started_us = acct_now_us();
	s->busy = true;
	s->starter_tid = gettid();
	struct acct_ledger_budgets budgets;
	acct_ledger_get_budgets(s->ledger, &budgets);
	s->budget_bytes = (uint64_t)MAX(budgets.bytes, (int64_t)0);
	s->running = s->nr_workers;
	s->generation++;
	pthread_cond_broadcast(&s->cond);
	pthread_mutex_unlock(&s->lock);
	return 0;
}

int acct_sampler_fd(const struct acct_sampler *s)
{
	return s->done_fd;
}

bool acct_sampler_busy(const struct acct_sampler *s)
{
	return __atomic_load_n(&s->busy, __ATOMIC_ACQUIRE);
}

int acct_sampler_collect(struct acct_sampler *s, struct acct_pass_report *report)
{
	uint64_t v;

	pthread_mutex_lock(&s->lock);
	if (!s->busy || s->running > 0) {
		pthread_mutex_unlock(&s->lock);
		return -EAGAIN;
	}
	(void)!read(s->done_fd, &v, sizeof(v));
	*report = (struct acct_pass_report){
		.flags = s->flags,
		.started_us = s->started_us,
		.wall_us = acct_now_us() - s->started_us,
		.cgroups = s->nr_work,
	};
	for (unsigned i = 0; i < s->nr_workers; i++) {
		const struct acct_pass_report *p = &s->workers[i].part;
		report->cpu_seconds += s->workers[i].cpu_seconds;
		report->skipped_empty += p->skipped_empty;
		report->files_read += p->files_read;
		report->open_per_read += p->open_per_read;
		report->cgroups_failed += p->cgroups_failed;
		for (int e = 0; e < _ACCT_ERR_MAX; e++)
			report->errors[e] += p->errors[e];
		histogram_merge(&report->drift_memory, &p->drift_memory);
		histogram_merge(&report->drift_cpu, &p->drift_cpu);
		if (p->last_backwards[0])
			memcpy(report->last_backwards, p->last_backwards, sizeof(report->last_backwards));
		report->bpf_cgroups += p->bpf_cgroups;
		report->bpf_stat_reads += p->bpf_stat_reads;
		report->bpf_unbounded += p->bpf_unbounded;
	}
	if (s->opts.collector && (s->flags & (ACCT_PASS_FAST | ACCT_PASS_SLOW | ACCT_PASS_KERNEL))) {
		const struct acct_pass_report *b = &s->bpf_report;
		report->bpf_records = b->bpf_records;
		report->bpf_walk_us = b->bpf_walk_us;
		report->bpf_checks = b->bpf_checks;
		report->bpf_mismatches = b->bpf_mismatches;
		report->bpf_fallbacks = b->bpf_fallbacks;
		report->errors[ACCT_ERR_UNREADABLE] += b->errors[ACCT_ERR_UNREADABLE];
		memcpy(report->last_mismatch, b->last_mismatch, sizeof(report->last_mismatch));
	}
	s->busy = false;
	pthread_mutex_unlock(&s->lock);
	return 0;
}

int acct_sampler_run(struct acct_sampler *s, struct acct_cgroup *const *cgs, size_t n, unsigned flags,
		     uint64_t now_us, struct acct_pass_report *report)
{
	int r = acct_sampler_start(s, cgs, n, flags, now_us);
	if (r < 0)
		return r;
	for (;;) {
		r = acct_sampler_collect(s, report);
		if (r != -EAGAIN)
			return r;
		/* wait for the eventfd without consuming it */
		fd_set set;
		FD_ZERO(&set);
		FD_SET(s->done_fd, &set);
		(void)select(s->done_fd + 1, &set, NULL, NULL, NULL);
	}
}

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
		for (int k = 0; k < 3; k++)
			__atomic_store_n(&v[i]->loadavg[k], st->load.avenrun[k], __ATOMIC_RELAXED);
		acct_cgroup_set(v[i], ACCT_Q_TASKS, st->tree_threads);
		__atomic_store_n(&v[i]->sampled_us[ACCT_GROUP_LOAD], now_us, __ATOMIC_RELEASE);
	}
}

/* The root's memory, defined once for every layout: the larger of the root's
 * own reading and the sum of its top-level children's memory.
 *   v2: the kernel's root has no memory.current, so the sum of the top level
 *       (what the root's page counter holds: every page charged to a cgroup).
 *   v1 (hybrid, legacy): the root's memory.usage_in_bytes is computed from its
 *       file and anon page counts and leaves out the kernel memory (slab,
 *       stacks, page tables) that its children's page counters charge, so it
 *       can be below their sum; the larger of the two.
 *   A --cgroup-root tree whose root is a cgroup with its own counter: that
 *       reading, which the kernel's hierarchy keeps at or above the sum.
 * So a root is never smaller than the sum of its children. Not
 * MemTotal - MemAvailable of /proc/meminfo (systemd-cgtop's root figure): the
 * page cache that MemAvailable counts as available is charged to the
 * children, so that figure can fall below their sum. */
void acct_sampler_root_memory(struct acct_sampler *s, struct acct_cgroup *const *cgs, size_t n)
{
	if (n == 0 || strcmp(cgs[0]->path, "/") != 0)
		return;
	const struct cg_state *st = cgs[0]->sampler_state;
	int64_t own = st && st->own_memory_valid ? st->own_memory : -1, top = -1;
	uint64_t top_sampled = UINT64_MAX; /* the oldest part of the sum */
	for (size_t i = 1; i < n; i++) {
		struct acct_reading rd;
		if (cgs[i]->depth != 1)
			continue;
		uint64_t t = acct_cgroup_quantity_sampled(cgs[i], ACCT_Q_MEMORY); /* before the value */
		if (acct_cgroup_get(cgs[i], ACCT_Q_MEMORY, false, &rd)) {
			top = MAX(top, (int64_t)0) + rd.value;
			top_sampled = MIN(top_sampled, t);
		}
	}
	if (MAX(own, top) >= 0) { /* else nothing holds memory accounting: absent */
		struct cg_state *root = cgs[0]->sampler_state;
		if (root) /* its motion as any other's (the drift is the passes') */
			set_memory_moved(cgs[0], root, MAX(own, top), s->now_us, NULL);
		else
			acct_cgroup_set(cgs[0], ACCT_Q_MEMORY, MAX(own, top));
		/* The sum is as old as its oldest part: after a walk alone that
		 * refreshed the top level, younger than the root's last file pass
		 * (own, read there, keeps that pass's age). */
		if (top >= own && top_sampled != UINT64_MAX && top_sampled)
			acct_cgroup_set_sampled(cgs[0], ACCT_Q_MEMORY, top_sampled);
		/* The children's counters together hold at most every stock slot
		 * of every CPU; v1's own root reading is made of flushed stats. */
		const struct acct_memcg_batching *b = &s->opts.batching;
		acct_cgroup_set_kernel_bound(cgs[0], ACCT_Q_MEMORY,
					     MAX(acct_memcg_memory_bound(b, INT_MAX), acct_memcg_file_stat_bound(b)));
	}
}

void acct_sampler_fd_stats(const struct acct_sampler *s, uint64_t *ret_cached, bool *ret_degraded)
{
	if (ret_cached)
		*ret_cached = __atomic_load_n(&s->cached_fds, __ATOMIC_RELAXED);
	if (ret_degraded)
		*ret_degraded = __atomic_load_n(&s->degraded, __ATOMIC_RELAXED);
}

long acct_raise_nofile(void)
{
	struct rlimit rl;
	if (getrlimit(RLIMIT_NOFILE, &rl) < 0)
		return -errno;
	if (rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		if (setrlimit(RLIMIT_NOFILE, &rl) < 0)
			return -errno;
	}
	return (long)rl.rlim_cur;
}
