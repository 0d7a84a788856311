/* cgroup-discovery.h - which cgroups exist, kept current by full scans and
 * inotify.
 *
 * The set of cgroups, by path relative to the hierarchy roots of a layout
 * (cgroup-layout.h). A path may exist in several hierarchies (hybrid: unified,
 * memory, cpu); a cgroup is the union. Each directory is identified by its
 * inode so that a cgroup removed and recreated under the same path is
 * reported as removed and then added. Creation and removal are followed with
 * inotify on every tracked directory; an inotify queue overflow triggers a
 * full rescan, and the caller runs a slow periodic rescan as a safety net.
 * Include/exclude globs and a maximum depth apply. Not thread-safe: one owner
 * (the event loop thread) drives it.
 *
 * Cost: the tracked set is a hash table keyed by path, so a rescan costs one
 * readdir per directory plus O(1) per cgroup, and an inotify event costs a walk
 * of the affected subtree only. One inotify watch per tracked directory per
 * hierarchy (fs.inotify.max_user_watches; when it runs out, discovery goes on
 * without those watches and relies on the periodic rescan, see stats).
 *
 * What cgroupfs (kernfs) delivers, observed on 6.x kernels: mkdir gives
 * IN_CREATE|IN_ISDIR on the parent's watch, rmdir IN_DELETE|IN_ISDIR on the
 * parent's watch and nothing on the removed directory's own watch (no
 * IN_DELETE_SELF, no IN_IGNORED), v1 rename IN_MOVED_FROM/IN_MOVED_TO on the
 * parent; v2 refuses rename. Every event is handled by re-reading the affected
 * path, so stale or reordered events are harmless.
 *
 * In the unified (v2) tree the watches also take IN_MODIFY: the kernel
 * announces a change of cgroup.events (populated, frozen) as IN_MODIFY named
 * "cgroup.events" on the cgroup's directory watch, reported as
 * ACCT_CGROUP_EVENTS, without another watch. kernfs sends it only when the
 * file's inode exists, so the file is looked up when the watch is added. The
 * kernel sends at most one per file every 20 ms (later ones are delayed) and
 * drops a delayed one when the cgroup is removed. Directories without a watch
 * (at max_depth, or when watches ran out) report none. */
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "cgroup-census.h"
#include "cgroup-layout.h"

/* Which cgroups to track. Globs match the whole relative path with fnmatch(3)
 * (no FNM_PATHNAME, so '*' spans '/'). A cgroup is tracked when its depth
 * (number of path components; "/" is 0) is <= max_depth, it matches an include
 * glob (none given = all) and neither it nor an ancestor matches an exclude
 * glob. Excluded subtrees are not walked. Directories that match no include
 * glob are still walked and watched (their descendants may match) but not
 * reported. Directories at max_depth are tracked but get no watch. */
struct acct_discovery_filter {
	char *const *include; /* NULL-terminated or NULL */
	char *const *exclude; /* NULL-terminated or NULL */
	unsigned max_depth;
};

enum acct_discovery_event {
	ACCT_CGROUP_ADDED,
	ACCT_CGROUP_REMOVED,
	ACCT_CGROUP_CHANGED, /* same path, now in other hierarchies */
	ACCT_CGROUP_EVENTS,  /* its cgroup.events changed (populated, frozen); unified tree only */
};

/* Called once per change. `id` is valid during the call only; the callback
 * must not call back into the discovery. */
typedef void (*acct_discovery_fn)(enum acct_discovery_event ev, const struct acct_cgroup_id *id, void *userdata);

struct acct_discovery;

/* Create a discovery over `layout` (which must outlive it) with `filter`
 * (copied; NULL: every cgroup at any depth). Hierarchies mounted at the same
 * directory (cpu and cpuacct co-mounted, same st_dev/st_ino) are walked once.
 * Sets up inotify; nothing is scanned yet. Returns 0 and the new discovery
 * in *ret, owned by the caller (acct_discovery_free()); or -EINVAL (no
 * hierarchy in the layout), -ENOTDIR (a mount point is not a directory),
 * -ENOMEM, the error of stat() on a mount point, or the inotify error, with
 * *ret untouched. */
int acct_discovery_new(const struct acct_hierarchies *layout, const struct acct_discovery_filter *filter,
		       struct acct_discovery **ret);

/* Free the tracked set, close the inotify descriptor (and with it every
 * watch). Reports nothing. Accepts NULL; returns NULL. */
struct acct_discovery *acct_discovery_free(struct acct_discovery *d);

/* Replace the filter (on reload; copied, NULL: every cgroup at any depth);
 * the next scan applies it. Returns 0, or -ENOMEM with the old filter kept. */
int acct_discovery_set_filter(struct acct_discovery *d, const struct acct_discovery_filter *filter);

/* Call fn for each include glob (include = true) and each exclude glob that
 * has matched no cgroup path since the filter was set: after the scan that
 * follows acct_discovery_new() or acct_discovery_set_filter(), the globs that
 * select nothing (a typo, a glob written for another layout). An include
 * glob counts as matching when any directory walked matches it, an exclude
 * glob when any directory or ancestor checked does. Only the first 64 globs of
 * each list are followed. */
typedef void (*acct_discovery_glob_fn)(bool include, const char *glob, void *userdata);
void acct_discovery_unmatched(const struct acct_discovery *d, acct_discovery_glob_fn fn, void *userdata);

/* The inotify descriptor (non-blocking, close-on-exec) to poll for
 * readability; owned by the discovery, valid until acct_discovery_free(). */
int acct_discovery_fd(const struct acct_discovery *d);

/* Walk every hierarchy, report what was added, removed or changed since the
 * last scan, and (re)arm inotify watches. The first call reports everything
 * as added, parents before children. Returns the number of events or a
 * negative errno (a directory vanishing mid-walk is not an error). */
int acct_discovery_scan(struct acct_discovery *d, acct_discovery_fn fn, void *userdata);

/* Read pending inotify events without blocking and report the changes; on
 * IN_Q_OVERFLOW does a full scan. Returns the number of events or a negative
 * errno. */
int acct_discovery_process(struct acct_discovery *d, acct_discovery_fn fn, void *userdata);

/* Handle a buffer of inotify events as read from acct_discovery_fd(), for a
 * caller that reads the descriptor itself (and for tests). Same results as
 * acct_discovery_process(). */
int acct_discovery_handle_events(struct acct_discovery *d, const void *buf, size_t len, acct_discovery_fn fn,
				 void *userdata);

/* ---- the census: a rescan that reads no directory ----------------------
 *
 * The periodic rescan looks for what inotify did not report. Where another
 * observer lists the same hierarchy (the BPF cgroup iterator), comparing
 * its census with discovery's (cgroup-census.h) shows whether there is
 * anything to find: equal, the scan is not needed; different, it is. */

/* The hierarchies to take a census of: for each walked tree (co-mounted
 * hierarchies are one tree), the first of its hierarchies in `served` (a
 * mask of 1 << enum acct_hierarchy). Returns that mask, or 0 when a census
 * cannot stand for a scan: a tree has no hierarchy in `served`, or
 * discovery's set cannot stand for the hierarchies' (exclude globs, a
 * directory unwatched: acct_discovery_census()'s -ENODATA; include globs
 * that prune leave a scope, which stands). O(trees). */
uint32_t acct_discovery_census_plan(const struct acct_discovery *d, uint32_t served);

/* The census of the directories discovery knows in hierarchy h as of its
 * last scan and the inotify events since (the root is level 0; levels up to
 * the filter's max_depth), into *ret. Returns 0; -ENOENT when h is not a
 * walked hierarchy; -ENODATA when discovery's set cannot stand for the
 * hierarchy's: exclude globs are set (excluded subtrees are not walked),
 * some directory has no watch (a v1 rename below it changes no id, so only
 * a scan finds it), or include globs prune (then the census is of a scope:
 * acct_discovery_census_scope()). O(directories known). */
int acct_discovery_census(const struct acct_discovery *d, enum acct_hierarchy h, struct acct_cgroup_census *ret);

/* Where include globs prune (each has a literal prefix beyond "/"),
 * discovery follows whole subtrees below the few directories on the way to
 * the prefixes, and reads those directories only in part: the census of
 * hierarchy h is then that of a scope (cgroup-census.h), the subtrees' tops
 * and every directory known in them, into *ret (the caller frees it; a top
 * at max_depth counts as a leaf). *ret NULL where the globs do not prune:
 * acct_discovery_census() stands for the whole hierarchy. Returns 0,
 * -ENOENT, -ENODATA (as acct_discovery_census()) or -ENOMEM. The kernel's
 * count of a top's descendants goes below max_depth, so a subtree deeper
 * than that makes the censuses differ: a scan, as without a census.
 * O(directories known). */
int acct_discovery_census_scope(const struct acct_discovery *d, enum acct_hierarchy h,
				struct acct_cgroup_scope **ret);

/* Where include globs prune (each has a literal prefix beyond "/"): the
 * directories of hierarchy h whose subtrees hold every directory that
 * discovery reports there as of its last scan and the inotify events since,
 * for a walk of those subtrees instead of the whole hierarchy (the BPF
 * collector's acct_bpf_collector_set_roots()). They are the whole subtrees'
 * tops (a top at max_depth included) and the directories a literal include
 * glob names; where one directory has more than `max` of them below it, that
 * directory instead. Into *ret, a new NULL-terminated vector of paths below
 * the hierarchy's mount ("/system.slice"), sorted, which the caller frees, maybe
 * empty (nothing reported there); *ret NULL where the globs do not prune,
 * the root is reported itself, or more than `max` would be needed below the
 * root: the whole hierarchy. A directory discovery does not know yet (made
 * since, unheard) can be outside them. Returns 0, -ENOENT (h is not a
 * walked hierarchy) or -ENOMEM. O(directories above the tops + max x depth). */
int acct_discovery_walk_roots(const struct acct_discovery *d, enum acct_hierarchy h, size_t max, char ***ret);

/* The other half of a scope's census: each directory above the subtrees
 * (where the globs prune) read one level now, in every tree it is in.
 * Returns 0 where each holds exactly the children discovery knows there
 * that the globs may hold, with the same inodes; 1 where one differs (or a
 * directory is gone): inotify missed something, scan; or a negative errno.
 * 0 at once where the globs do not prune. O(directories above x their
 * entries): a few getdents64 calls on a host limited to a few subtrees. */
int acct_discovery_census_above(const struct acct_discovery *d);

/* Counters for Status/metrics, filled into *ret; cannot fail. */
struct acct_discovery_stats {
	uint64_t tracked, watches, scans, overflows, events;
	uint64_t directories;    /* directories walked and kept (tracked or not, per path) */
	uint64_t unwatched;      /* directories that should have a watch but have none now */
	uint64_t watch_failures; /* inotify_add_watch failures (ENOSPC: max_user_watches) */
};
void acct_discovery_stats(const struct acct_discovery *d, struct acct_discovery_stats *ret);
