/* reconcile.c - invariant checks over the ledger after each sampling pass. */
#include "reconcile.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "basic/read-file.h"
#include "basic/util.h"
#include "cgroup/cgfs-parse.h"

#define SKEW_FIXED (1 << 20)
/* Suspects re-read per pass, at most: bounds the reads on the owner thread.
 * A kernel that is really wrong stays wrong and is caught in the next pass. */
#define CONFIRM_MAX 64

const char *acct_invariant_to_string(enum acct_invariant i)
{
	static const char *const names[_ACCT_INV_MAX] = {
		[ACCT_INV_CHILDREN_MEMORY] = "children_memory",
		[ACCT_INV_ROOT_MEMINFO] = "root_meminfo",
		[ACCT_INV_CPU_BACKWARDS] = "cpu_backwards",
	};
	return i < _ACCT_INV_MAX ? names[i] : "unknown";
}

static void violation(struct acct_reconcile_report *rep, enum acct_invariant kind, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void violation(struct acct_reconcile_report *rep, enum acct_invariant kind, const char *fmt, ...)
{
	va_list ap;
	rep->violations[kind]++;
	rep->violations_total[kind]++;
	va_start(ap, fmt);
	vsnprintf(rep->last_violation, sizeof(rep->last_violation), fmt, ap);
	va_end(ap);
}

/* MemTotal and MemFree of a meminfo file (whole: any size), as total and
 * total - free in bytes. Returns 0 or a negative errno. */
static int read_meminfo(const char *path, int64_t *ret_total, int64_t *ret_used)
{
	_cleanup_free_ char *buf = read_file_at(AT_FDCWD, path);
	uint64_t total, free_bytes;
	int r;

	if (!buf)
		return -errno;
	r = cgfs_meminfo_get(buf, "MemTotal", &total);
	if (r >= 0)
		r = cgfs_meminfo_get(buf, "MemFree", &free_bytes);
	if (r < 0)
		return r;
	*ret_total = (int64_t)total;
	*ret_used = (int64_t)(total - MIN(total, free_bytes));
	return 0;
}

/* Each cgroup's parent in the path-sorted array, in one walk (reconcile.h).
 * It was a binary search per cgroup (log2(n) string comparisons, each a
 * cache miss on another record's path: at 10,101 cgroups 14 per cgroup and
 * pass). The walk keeps a stack of the cgroups before i whose paths are
 * string prefixes of the last one's. Every path that sorts between a
 * cgroup's path P and a path that starts with P starts with P itself, so
 * P stays on the stack until a path that does not start with it comes, and
 * none of P's descendants comes after that: a cgroup's parent, where the
 * array has it, is on the stack when the cgroup is reached. The stack's
 * paths are prefixes of one another, so their lengths grow up the stack,
 * and the parent is the entry whose length is that of the cgroup's
 * dirname. "/a-x" and "/a.b" sort between "/a" and "/a/b" (their next
 * characters are below '/'), which is why a string prefix, not an ancestor,
 * keeps an entry. O(n) amortized: each cgroup is pushed and popped once. */
int acct_reconcile_parents(struct acct_cgroup *const *cgs, size_t n, ssize_t *ret)
{
	struct frame {
		size_t index, len;
	};
	_cleanup_free_ struct frame *stack = calloc(n ? n : 1, sizeof(*stack));
	size_t depth = 0;

	if (!stack)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		const char *path = cgs[i]->path;
		size_t len = strlen(path);
		while (depth > 0 && (stack[depth - 1].len > len ||
				     strncmp(cgs[stack[depth - 1].index]->path, path, stack[depth - 1].len) != 0))
			depth--;
		ret[i] = -1;
		const char *slash = strrchr(path, '/');
		/* The root and the top level: their parent would be the root, which
		 * is not checked (acct_reconcile_pass()). */
		if (slash && slash != path) {
			size_t want = (size_t)(slash - path); /* the parent's path is path[0, want) */
			for (size_t k = depth; k > 0 && stack[k - 1].len >= want; k--)
				if (stack[k - 1].len == want) {
					ret[i] = (ssize_t)stack[k - 1].index;
					break;
				}
		}
		stack[depth++] = (struct frame){ .index = i, .len = len };
	}
	return 0;
}

/* Re-read the children of cgs[p] (the j with parent[j] == p), then p, then
 * the children again, then p again, and set *ret_children to the sum over the
 * children of the lower of each one's two readings and *ret_parent to the
 * higher of p's. A child whose memory moves one way across the four reads is
 * then never above its share of the parent (rising: its first reading is
 * below the parent's first, which holds it; falling: its second is below the
 * parent's first; dipping and regrowing: its second is below the parent's
 * second); only a child that turns twice within these microseconds could
 * fool it. Returns 0 or a negative errno (nothing can be concluded); a child
 * that vanished counts 0. p is not the root (the root is not checked). */
static int reread_family(struct acct_sampler *s, struct acct_cgroup *const *cgs, size_t n, const ssize_t *parent,
			 size_t p, int64_t *ret_children, int64_t *ret_parent)
{
	size_t plen = strlen(cgs[p]->path), nkids = 0;
	_cleanup_free_ size_t *kids = calloc(n - p, sizeof(*kids));
	_cleanup_free_ int64_t *before = calloc(n - p, sizeof(*before));
	int64_t parent_first, parent_second, sum = 0;
	int r;

	if (!kids || !before)
		return -ENOMEM;
	/* p's children are among the paths after it that start with p's path:
	 * "p/..." and also names that extend p's ("/a-x", "/a.b" and theirs),
	 * which sort between p and "p/"; parent[] tells them apart. */
	for (size_t j = p + 1; j < n && strncmp(cgs[j]->path, cgs[p]->path, plen) == 0; j++)
		if (parent[j] == (ssize_t)p)
			kids[nkids++] = j;
	for (size_t k = 0; k < nkids; k++) {
		r = acct_sampler_read_memory(s, cgs[kids[k]], &before[k]);
		if (r == -ENOENT)
			before[k] = 0; /* vanished: holds nothing */
		else if (r < 0)
			return r;
	}
	r = acct_sampler_read_memory(s, cgs[p], &parent_first);
	if (r < 0)
		return r;
	for (size_t k = 0; k < nkids; k++) {
		int64_t after;
		r = acct_sampler_read_memory(s, cgs[kids[k]], &after);
		if (r == -ENOENT)
			after = 0;
		else if (r < 0)
			return r;
		sum += MIN(before[k], after);
	}
	r = acct_sampler_read_memory(s, cgs[p], &parent_second);
	if (r < 0)
		return r;
	*ret_children = sum;
	*ret_parent = MAX(parent_first, parent_second);
	return 0;
}

void acct_reconcile_pass(struct acct_ledger *l, struct acct_cgroup *const *cgs, size_t n,
			 const struct acct_pass_report *pass, const char *meminfo_path, bool hierarchical_memory,
			 struct acct_sampler *reread, struct acct_reconcile_report *rep)
{
	rep->passes++;
	memset(rep->violations, 0, sizeof(rep->violations));
	if (pass) {
		rep->drift_memory = pass->drift_memory;
		rep->drift_cpu = pass->drift_cpu;
		if (pass->errors[ACCT_ERR_INVARIANT]) {
			rep->violations[ACCT_INV_CPU_BACKWARDS] += pass->errors[ACCT_ERR_INVARIANT];
			rep->violations_total[ACCT_INV_CPU_BACKWARDS] += pass->errors[ACCT_ERR_INVARIANT];
			snprintf(rep->last_violation, sizeof(rep->last_violation),
				 "cpu_backwards: cumulative CPU time went backwards in %" PRIu64 " reading(s), the last %s",
				 pass->errors[ACCT_ERR_INVARIANT], pass->last_backwards);
		}
	}

	/* Nothing children_memory reads changed (the same cgroups, every memory
	 * value and bound as it was: acct_ledger_memory_changes()) since a
	 * whole check whose values raised no suspect: it would raise none again,
	 * and it reads nothing. At 10,000 idle cgroups the check read every
	 * cgroup's memory counter each pass, a cache miss or two each on the
	 * owner thread. A check with a suspect is made again, whatever its
	 * verdict: the re-read of the files can tell otherwise next time. */
	uint64_t changes = l ? acct_ledger_changes(l) : 0, memory = l ? acct_ledger_memory_changes(l) : 0;
	if (l && rep->checked && changes == rep->checked_changes && memory == rep->checked_memory) {
		rep->unchanged_passes++;
		acct_reconcile_root(cgs, n, meminfo_path, rep);
		return;
	}
	rep->checked = false;
	rep->checked_parents = 0;
	unsigned suspects = 0;

	/* Sum each cgroup's children's memory into its parent's slot. */
	_cleanup_free_ int64_t *child_sum = calloc(n ? n : 1, sizeof(*child_sum));
	_cleanup_free_ uint64_t *child_bound = calloc(n ? n : 1, sizeof(*child_bound));
	_cleanup_free_ uint32_t *children = calloc(n ? n : 1, sizeof(*children));
	_cleanup_free_ ssize_t *parent = calloc(n ? n : 1, sizeof(*parent));
	unsigned rereads = 0;
	if (!child_sum || !child_bound || !children || !parent)
		return;
	if (acct_reconcile_parents(cgs, n, parent) < 0)
		return;
	for (size_t i = 0; i < n; i++) {
		struct acct_reading rd;
		ssize_t p = parent[i];
		parent[i] = -1; /* only cgroups with a memory reading keep one */
		if (p < 0 || !acct_cgroup_get(cgs[i], ACCT_Q_MEMORY, false, &rd))
			continue;
		parent[i] = p;
		child_sum[p] += rd.value;
		child_bound[p] += rd.bound;
		children[p]++;
	}
	if (hierarchical_memory)
		for (size_t i = 0; i < n; i++) {
			struct acct_reading rd;
			if (children[i] == 0 || !acct_cgroup_get(cgs[i], ACCT_Q_MEMORY, false, &rd))
				continue;
			/* The root's memory is defined as at least its children's sum
			 * (acct_sampler_root_memory()): nothing to check there. */
			if (strcmp(cgs[i]->path, "/") == 0)
				continue;
			rep->checked_parents++;
			int64_t allowance = (int64_t)rd.bound + (int64_t)child_bound[i] + SKEW_FIXED + rd.value / 100;
			if (child_sum[i] <= rd.value + allowance)
				continue;
			suspects++;
			if (!reread) {
				violation(rep, ACCT_INV_CHILDREN_MEMORY,
					  "children_memory: %s holds %" PRId64 " bytes, its %u children %" PRId64,
					  cgs[i]->path, rd.value, children[i], child_sum[i]);
				continue;
			}
			/* The pass read the parent and its children up to tens of ms
			 * apart: a suspect is re-read, children around the parent. */
			int64_t kids, par;
			if (rereads >= CONFIRM_MAX || reread_family(reread, cgs, n, parent, i, &kids, &par) < 0)
				continue; /* nothing proven */
			rereads++;
			if (kids > par + SKEW_FIXED + par / 100)
				violation(rep, ACCT_INV_CHILDREN_MEMORY,
					  "children_memory: %s holds %" PRId64 " bytes, its %u children %" PRId64
					  " (re-read: children at their lower, the parent at its higher of two readings)",
					  cgs[i]->path, par, children[i], kids);
		}
	if (l && suspects == 0) {
		rep->checked = true;
		rep->checked_changes = changes;
		rep->checked_memory = memory;
	}

	acct_reconcile_root(cgs, n, meminfo_path, rep);
}

void acct_reconcile_root(struct acct_cgroup *const *cgs, size_t n, const char *meminfo_path,
			 struct acct_reconcile_report *rep)
{
	/* The root's memory as the ledger holds it (acct_sampler_root_memory()
	 * defines it), so that Status says what List and Get do. */
	rep->root_memory = -1;
	if (n > 0 && strcmp(cgs[0]->path, "/") == 0) {
		struct acct_reading rd;
		if (acct_cgroup_get(cgs[0], ACCT_Q_MEMORY, false, &rd))
			rep->root_memory = rd.value;
	}
	rep->meminfo_total = rep->meminfo_used = -1;
	if (meminfo_path && read_meminfo(meminfo_path, &rep->meminfo_total, &rep->meminfo_used) == 0 &&
	    rep->root_memory >= 0) {
		int64_t limit = rep->meminfo_used + rep->meminfo_used / 100 + SKEW_FIXED;
		if (rep->root_memory > limit)
			violation(rep, ACCT_INV_ROOT_MEMINFO,
				  "root_meminfo: cgroups hold %" PRId64 " bytes, more than the %" PRId64
				  " bytes in use by /proc/meminfo",
				  rep->root_memory, rep->meminfo_used);
	}
}
