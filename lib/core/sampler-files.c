/* sampler-files.c - which files a cgroup's roles read, and the descriptor
 * cache that keeps them open between passes (sampler-internal.h).
 *
 * Each role (enum file_role) is one file whose name and hierarchy depend on
 * the layout and on the hierarchies the cgroup is in (pick_files()); a
 * descriptor is opened at the first read and kept, up to the process's
 * limit, so that a pass costs one pread(2) per file. */
#include "sampler-internal.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "basic/hash.h"
#include "basic/util.h"

/* ---- per-cgroup state ---------------------------------------------------- */

/* Where a cgroup's threads (tasks, load) are listed: the first hierarchy of
 * this table that the cgroup is in, and only there (see sample-load.c:
 * counting a thread in two hierarchies counts it twice). The unified tree
 * comes first because it holds every process on v2 and hybrid hosts. */
static const struct file_spec threads_order[] = {
	{ "cgroup.threads", ACCT_HIER_UNIFIED },
	{ "tasks", ACCT_HIER_MEMORY },
	{ "tasks", ACCT_HIER_CPUACCT },
	{ "tasks", ACCT_HIER_CPU },
	{ "tasks", ACCT_HIER_BLKIO },
};

const struct file_spec *sampler_threads_spec(uint32_t hierarchies)
{
	for (size_t i = 0; i < ELEMENTSOF(threads_order); i++)
		if (hierarchies & (1u << threads_order[i].tree))
			return &threads_order[i];
	return NULL;
}

/* The cumulative quantities each role's file gives. A cgroup's hierarchies
 * can change while it lives: on a hybrid host systemd creates a cgroup in the
 * unified tree first and in cpu,cpuacct a moment later, so one pass reads its
 * CPU from the v2 cpu.stat and the next from cpuacct (usage from usage_percpu,
 * user and system from cpuacct.stat in 10 ms ticks). The two are different
 * counters: the new reading may be below the old one without either going
 * backwards. When a role's file changes, its quantities' next readings start
 * their series anew (not checked against the old source, no rate across the
 * switch) instead of accusing the kernel. */
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
		/* The averages go on across the new source; the idle time they
		 * were not decayed over yet ends here (lazy decay, sample-cpu.c). */
		if (st->last_cpu_at > st->rate_avg_at)
			acct_rate_avg_update(&st->rate_avg, 0.0, st->last_cpu_at - st->rate_avg_at);
		st->rate_avg_at = st->last_cpu_at;
		st->last_cpu_at = 0;
		free(st->percpu_last);
		st->percpu_last = NULL;
		st->percpu_n = 0;
	}
	if (restart & Q_IO) {
		st->io_last_at = 0;
		st->io_last_known = 0;
		st->io_rates_zero = false;
	}
	st->restart |= restart;
	sampler_prune_source_changed(st, restart);
}

/* What the specs give, kept beside the state every pass reads (struct
 * cg_state's order): the parts with a file, whether cgroup.events and a
 * threads file are there. */
static void note_parts(struct cg_state *st)
{
	static const struct {
		enum file_role role;
		enum acct_pass_part part;
	} parts[] = {
		{ F_MEMORY, ACCT_PART_MEMORY },     { F_CPU_STAT, ACCT_PART_CPU },   { F_CPUACCT_USAGE, ACCT_PART_CPU },
		{ F_CPUACCT_PERCPU, ACCT_PART_CPU }, { F_IO_STAT, ACCT_PART_IO },     { F_BLKIO_BYTES, ACCT_PART_IO },
		{ F_PSI_CPU, ACCT_PART_PSI },        { F_PSI_MEMORY, ACCT_PART_PSI }, { F_PSI_IO, ACCT_PART_PSI },
	};
	st->parts_files = 0;
	for (size_t i = 0; i < ELEMENTSOF(parts); i++)
		if (st->spec[parts[i].role].name)
			st->parts_files |= (uint8_t)(1u << parts[i].part);
	st->has_events = st->spec[F_EVENTS].name != NULL;
	st->has_threads = st->spec[F_THREADS].name != NULL;
}

/* Choose, for each role, the file name and tree that this layout and this
 * cgroup's hierarchies provide. */
static void pick_files(const struct acct_hierarchies *L, const struct acct_cgroup *cg, struct cg_state *st)
{
	uint32_t h = acct_cgroup_get_hierarchies(cg);
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
	st->fds_open = 0;
}

/* An empty cgroup that left some of its hierarchies is being removed, one
 * tree after another (an rmdir in each, a scan between two of them): its
 * files are not picked again, or a quantity would be taken from another
 * tree's file, another cgroup's counter with another total (CPU time from the
 * unified cpu.stat once the cpuacct directory is gone: it lacks what the
 * task ran before it joined the unified cgroup), and served as the final
 * value. The files in the trees it left are no longer read; the values they
 * gave stand as last read. Tasks in it again (populated, read from a tree it
 * is still in) pick its files anew. */
static bool leaving_while_empty(const struct acct_cgroup *cg, const struct cg_state *st, uint32_t h)
{
	return st->picked && h != st->hierarchies && (h & ~st->hierarchies) == 0 &&
	       !__atomic_load_n(&cg->populated, __ATOMIC_RELAXED) && __atomic_load_n(&cg->events_known, __ATOMIC_RELAXED);
}

static void stop_reading_left(struct acct_sampler *s, struct cg_state *st, uint32_t h)
{
	for (int f = 0; f < _F_MAX; f++) {
		if (!st->spec[f].name || (h & (1u << st->spec[f].tree)) || st->fd[f] == FD_ABSENT)
			continue;
		if (st->fd[f] >= 0) {
			close(st->fd[f]);
			__atomic_fetch_sub(&s->cached_fds, 1, __ATOMIC_RELAXED);
		}
		st->fd[f] = FD_ABSENT;
		st->fds_open &= ~(1u << f);
	}
	st->left = st->hierarchies & ~h;
}

struct cg_state *sampler_state_of(struct acct_sampler *s, struct acct_cgroup *cg)
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
	uint32_t h = acct_cgroup_get_hierarchies(cg);
	if (leaving_while_empty(cg, st, h)) {
		if (st->left != (st->hierarchies & ~h))
			stop_reading_left(s, st, h);
		return st;
	}
	if (st->hierarchies != h || !st->has_threads) {
		struct file_spec old[_F_MAX];
		memcpy(old, st->spec, sizeof(old));
		close_fds(s, st);
		pick_files(s->opts.layout, cg, st);
		close_fds(s, st); /* sets FD_UNSET/FD_NONE for the new specs */
		if (st->picked)
			note_source_changes(st, old);
		st->left = 0;
		st->applied.counters = st->applied.events_valid = false; /* another tree's records */
		note_parts(st);
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
	/* A moving cgroup's pointer is in the list of moving ones: the walks
	 * alone read all until the next fast pass makes a new one. */
	if (s && st->moving_gen == s->moving_gen)
		s->moving_valid = false;
	if (s)
		close_fds(s, st);
	else
		for (int f = 0; f < _F_MAX; f++)
			if (st->fd[f] >= 0)
				close(st->fd[f]);
	free(st->percpu_last);
	free(st);
	cg->sampler_state = NULL;
	if (s)
		s->release_gen++; /* a cached ancestor (struct cg_state's parent) may be this one */
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

/* cg's directory in the tree of spec into path (size bytes), or, with name,
 * that file of it. Returns the directory's length, -ENOENT where the tree is
 * not mounted, -ENAMETOOLONG. */
static int cgroup_path(const struct acct_sampler *s, const struct acct_cgroup *cg, const struct file_spec *spec,
		       const char *name, char *path, size_t size)
{
	const char *mount = s->opts.layout->mount[spec->tree];
	if (!mount)
		return -ENOENT;
	int dir = snprintf(path, size, "%s%s", mount, strcmp(cg->path, "/") == 0 ? "" : cg->path);
	if (dir < 0 || (size_t)dir >= size)
		return -ENAMETOOLONG;
	int n = name ? snprintf(path + dir, size - (size_t)dir, "/%s", name) : 0;
	if (n < 0 || (size_t)n >= size - (size_t)dir)
		return -ENAMETOOLONG;
	return dir;
}

int sampler_open_file(struct acct_sampler *s, struct acct_cgroup *cg, const struct file_spec *spec)
{
	char path[4096];
	int dir = cgroup_path(s, cg, spec, spec->name, path, sizeof(path));
	if (dir < 0)
		return dir;
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	if (fd < 0)
		return -errno;
	/* The path may name another cgroup than this record's: one removed and
	 * made again under the same path before discovery has said so (it
	 * reports that as a removal and an addition, later). Its files are not
	 * this record's values: a gauge would be served as this cgroup's and a
	 * total would go backwards. The directory found at the path after the
	 * open is the record's own only if the file opened was: a cgroup's
	 * directory stays at its path from mkdir to rmdir (v2 refuses rename)
	 * and kernfs does not reuse inode numbers. A stranger is the record's
	 * cgroup gone (-ENODEV, counted as vanished), not a value. */
	uint64_t ino = (acct_cgroup_get_hierarchies(cg) & (1u << spec->tree)) ? acct_cgroup_get_inode(cg, spec->tree)
									       : 0;
	if (ino) {
		struct stat st;
		path[dir] = 0; /* the cgroup's directory */
		if (stat(path, &st) < 0 || (uint64_t)st.st_ino != ino) {
			close(fd);
			return -ENODEV;
		}
	}
	return fd;
}

/* Descriptors that pay. A descriptor kept open between passes saves an
 * open(2) per read, and costs the kernel memory of an open cgroupfs file:
 * its struct file, kernfs's open node and the seq_file's page-sized
 * buffer, charged to acctd's memory cgroup. That pays for a file read pass
 * after pass, not for one read once a minute (pressure of a quiet cgroup,
 * the slow group of one whose memory stands still) or no more (CPU and I/O
 * of a cgroup whose ancestor proves them unchanged). So a descriptor is
 * kept only for a role that was also read in the previous full file pass,
 * and a pass closes the descriptors of the roles it did not read
 * (sampler_close_unread()). A cgroup that is read pass after pass keeps its
 * descriptors; an idle one under a pruning ancestor holds none. */
static bool role_steady(const struct acct_sampler *s, struct cg_state *st, enum file_role f)
{
	if (st->roles_seq != s->files_seq) {
		st->roles_before = st->roles_seq + 1 == s->files_seq ? st->roles_now : 0;
		st->roles_now = 0;
		st->roles_seq = s->files_seq;
	}
	st->roles_now |= 1u << f;
	return st->roles_before & (1u << f);
}

/* Close role f's cached descriptor: the next read opens the file by path. */
static void forget_fd(struct acct_sampler *s, struct cg_state *st, enum file_role f)
{
	close(st->fd[f]);
	st->fd[f] = FD_UNSET;
	st->fds_open &= ~(1u << f);
	__atomic_fetch_sub(&s->cached_fds, 1, __ATOMIC_RELAXED);
}

void sampler_close_unread(struct acct_sampler *s, struct cg_state *st)
{
	if (!st->fds_open)
		return; /* (without touching the rest of st: most cgroups, most passes) */
	uint32_t read = st->roles_seq == s->files_seq ? st->roles_now : 0;
	uint32_t unread = st->fds_open & ~read;
	for (int f = 0; unread && f < _F_MAX; f++)
		if (unread & (1u << f)) {
			forget_fd(s, st, f);
			unread &= ~(1u << f);
		}
}

/* Whether cg's directory in the tree of spec exists (an error other than
 * ENOENT counts as existing: only a missing directory says the cgroup left
 * that tree). */
static bool cgroup_dir_exists(const struct acct_sampler *s, const struct acct_cgroup *cg, const struct file_spec *spec)
{
	char path[4096];
	if (cgroup_path(s, cg, spec, NULL, path, sizeof(path)) < 0)
		return true;
	return access(path, F_OK) == 0 || errno != ENOENT;
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

	bool steady = role_steady(s, st, f);
	if (fd == FD_UNSET) {
		fd = sampler_open_file(s, cg, &st->spec[f]);
		if (fd == -ENOENT) {
			/* Absent for a live cgroup: this kernel or layout lacks
			 * it. Not so a file missing with its directory: that is
			 * the cgroup gone from this tree (v1: removed one
			 * hierarchy after another), and remembering the file as
			 * absent would make an empty read without the values it
			 * holds look whole (empty_read_settled()). */
			if (cgroup_dir_exists(s, cg, &st->spec[f]))
				st->fd[f] = FD_ABSENT;
			return -ENOENT;
		}
		if (fd == -EMFILE || fd == -ENFILE) {
			__atomic_store_n(&s->degraded, true, __ATOMIC_RELAXED);
			return -EMFILE;
		}
		if (fd < 0)
			return fd;
		if (!steady) {
			transient_fd = fd; /* not read pass after pass (yet): see above */
		} else if (__atomic_load_n(&s->cached_fds, __ATOMIC_RELAXED) >= s->max_cached) {
			/* Keep the rest of the descriptors for transient opens, the
			 * notify socket and API connections. */
			__atomic_store_n(&s->degraded, true, __ATOMIC_RELAXED);
			transient_fd = fd;
			w->part.open_per_read++;
		} else {
			st->fd[f] = fd;
			st->fds_open |= 1u << f;
			__atomic_fetch_add(&s->cached_fds, 1, __ATOMIC_RELAXED);
		}
	}

	size_t len = 0;
	for (;;) {
		ssize_t k = pread(fd, w->buf + len, w->buf_size - 1 - len, (off_t)len);
		if (k < 0) {
			int e = errno;
			/* A cached descriptor that fails (a stale file handle, a
			 * path that was something else when opened) would fail
			 * pass after pass: the next read opens the path again. */
			if (transient_fd < 0 && st->fd[f] == fd)
				forget_fd(s, st, f);
			return -e;
		}
		len += (size_t)k;
		/* A thread list is a sequence of records that cgroupfs hands
		 * out a page at a time: short reads until the end. The other
		 * files are one record each, whole in one read. */
		if (k == 0 || (len < w->buf_size - 1 && f != F_THREADS))
			break;
		if (len < w->buf_size - 1)
			continue;
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

void sampler_fail(struct sample_ctx *x, enum acct_sample_error e)
{
	x->w->part.errors[e]++;
	x->failed = true;
	x->nr_failures++;
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
	if (r >= 0) {
		if (x->slow_hashing)
			x->slow_hash = hash_fnv1a_bytes(hash_fnv1a_u64(x->slow_hash, f), x->w->buf, (size_t)r);
		return true;
	}
	if (r != -ENOENT || acct_cgroup_is_dead(x->cg))
		sampler_fail(x, classify((int)-r));
	return false;
}

/* ---- descriptor limits -------------------------------------------------- */

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
