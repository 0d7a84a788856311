/* sample-values.c - what the sampler's readers (sample-*.c, sampler-bpf.c)
 * share to publish a value: a quantity set checked against going backwards or
 * not, the memory file's one reader, memory in use with its motion, a limit as
 * served, memory.stat and numa_stat lines into the record. It calls nothing
 * of the readers or of the pass above it, so they all call down into it. */
#include "sampler-internal.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "basic/read-file.h"
#include "basic/util.h"
#include "cgroup/cgfs-parse.h"

/* ---- setting a quantity -------------------------------------------------- */

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

/* ---- the memory file ---------------------------------------------------- */

int acct_memory_parse(const char *text, int64_t *ret_bytes)
{
	uint64_t v;

	/* One number ("max" is UINT64_MAX here: no memory file says it). */
	if (cgfs_parse_u64(text, &v) < 0 || v > INT64_MAX)
		return -EBADMSG;
	*ret_bytes = (int64_t)v;
	return 0;
}

int acct_memory_read_fd(int fd, int64_t *ret_bytes)
{
	char buf[64]; /* one number of at most 20 digits, and its newline */
	ssize_t r = read_fd_whole(fd, buf, sizeof(buf));

	if (r == -ENODEV) /* the cgroup went away between open and read */
		return -ENOENT;
	if (r == -EFBIG) /* longer than any number */
		return -EBADMSG;
	if (r < 0)
		return (int)r;
	return acct_memory_parse(buf, ret_bytes);
}

/* ---- memory in use, limits, memory.stat and numa_stat --------------------- */

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
void sampler_set_memory_moved(struct acct_cgroup *cg, struct cg_state *st, int64_t v, uint64_t now,
			       struct histogram *drift)
{
	struct acct_reading old;
	if (acct_cgroup_get(cg, ACCT_Q_MEMORY, true, &old)) {
		uint64_t moved = abs_u64(v - old.value);
		if (drift)
			histogram_add(drift, moved);
		if (st->memory_at && now > st->memory_at) {
			double rate = (double)moved * 1e6 / (double)(now - st->memory_at);
			acct_cgroup_update_memory_motion(cg, rate, MOTION_WEIGHT);
		}
	}
	st->memory_at = now;
	acct_cgroup_set(cg, ACCT_Q_MEMORY, v);
}

void sampler_set_memory(struct sample_ctx *x, int64_t v)
{
	/* A slow pass may read memory twice (sampler.c, slow_due()): the
	 * drift is the pass's, counted once. */
	sampler_set_memory_moved(x->cg, x->st, v, x->w->s->now_us, x->memory_set ? NULL : &x->w->part.drift_memory);
	x->memory_set = true;
}

int sampler_memstat_kv(const char *key, size_t key_len, uint64_t value, void *userdata)
{
	struct sample_ctx *x = userdata;
	const char *inactive = x->st->memory_v1 ? "total_inactive_file" : "inactive_file";

	if (key_len == strlen(inactive) && memcmp(key, inactive, key_len) == 0) {
		x->inactive = value > INT64_MAX ? INT64_MAX : (int64_t)value;
		x->have_inactive = true;
	}
	/* Pages still to be written back (v2 file_dirty, file_writeback; v1
	 * dirty, writeback and their total_ sums): their I/O may be charged
	 * after the cgroup's tasks left, so it is not quiet yet (sampler.c). */
	static const char *const dirty[] = { "file_dirty", "file_writeback", "dirty", "writeback", "total_dirty",
					     "total_writeback" };
	if (value > 0)
		for (size_t i = 0; i < ELEMENTSOF(dirty); i++)
			if (key_len == strlen(dirty[i]) && memcmp(key, dirty[i], key_len) == 0)
				x->memstat_dirty = true;
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
