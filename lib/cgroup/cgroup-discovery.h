/* cgroup-discovery.h - where the cgroup hierarchies are and which cgroups exist.
 *
 * Layout: the mode (pure v2, hybrid, legacy v1) and the mount point of each
 * hierarchy acctd reads, found with libcgroup on the host or, for tests and
 * containers, inferred from the contents of a directory given as the root.
 *
 * Discovery: the set of cgroups, by path relative to the hierarchy roots ("/"
 * is the root cgroup; "/system.slice/foo.service"). A path may exist in several
 * hierarchies (hybrid: unified, memory, cpu); a cgroup is the union. Each
 * directory is identified by its inode so that a cgroup removed and recreated
 * under the same path is reported as removed and then added. Creation and
 * removal are followed with inotify on every tracked directory; an inotify
 * queue overflow triggers a full rescan, and the caller runs a slow periodic
 * rescan as a safety net. Include/exclude globs and a maximum depth apply.
 * Not thread-safe: one owner (the event loop thread) drives it.
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
 * path, so stale or reordered events are harmless. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum acct_cgroup_mode {
	ACCT_CGROUP_UNIFIED, /* pure v2 */
	ACCT_CGROUP_HYBRID,  /* v1 controllers + v2 at <root>/unified */
	ACCT_CGROUP_LEGACY,  /* v1 only */
};

enum acct_hierarchy {
	ACCT_HIER_UNIFIED, /* the v2 tree (pure v2 root, or hybrid's unified) */
	ACCT_HIER_MEMORY,  /* v1 memory controller */
	ACCT_HIER_CPUACCT, /* v1 cpuacct (usually co-mounted as cpu,cpuacct) */
	ACCT_HIER_CPU,     /* v1 cpu (throttling); may be the same mount as cpuacct */
	_ACCT_HIER_MAX,
};

struct acct_cgroup_layout {
	enum acct_cgroup_mode mode;
	char *root;                   /* e.g. /sys/fs/cgroup */
	char *mount[_ACCT_HIER_MAX];  /* absolute directory of each hierarchy, NULL if absent */
	bool v2_memory;               /* the v2 tree has the memory controller */
	bool v2_cpu;                  /* the v2 tree has the cpu controller (throttling) */
};

/* Detect the layout. root NULL: the host's, with libcgroup for the v1
 * controllers' mount points and statfs() to tell cgroup2 mounts (at
 * /sys/fs/cgroup, then /sys/fs/cgroup/unified); where libcgroup fails or
 * finds nothing (containers), from /proc/self/mountinfo. Otherwise infer it
 * from the directory `root`: cgroup.controllers at the top means pure v2; a
 * "unified" directory with cgroup.controllers beside "memory"/"cpuacct"/
 * "cpu,cpuacct" directories means hybrid ("unified" alone: hybrid without v1
 * controllers); controller directories alone mean legacy. "cpu" and "cpuacct"
 * may be symlinks to "cpu,cpuacct". v2_memory/v2_cpu come from the v2 root's
 * cgroup.controllers. Returns 0, -ENOENT (root missing or not a directory, or
 * no hierarchy found), -ENOMEM, or another error opening `root`. */
int acct_cgroup_layout_detect(const char *root, struct acct_cgroup_layout **ret);

/* The host's layout from a mountinfo file (normally /proc/self/mountinfo):
 * the fallback of acct_cgroup_layout_detect(NULL) where libcgroup fails, as
 * in some containers. "cgroup2" mounts give the v2 tree (preferring
 * /sys/fs/cgroup, then /sys/fs/cgroup/unified), "cgroup" mounts whose super
 * options name memory, cpuacct or cpu the v1 trees. v2_memory and v2_cpu are
 * read from the v2 mount's cgroup.controllers (false where unreadable).
 * Returns 0, -ENOENT (no cgroup mount), -ENOMEM, or the error opening `path`. */
int acct_cgroup_layout_from_mountinfo(const char *path, struct acct_cgroup_layout **ret);
struct acct_cgroup_layout *acct_cgroup_layout_free(struct acct_cgroup_layout *l);
const char *acct_cgroup_mode_to_string(enum acct_cgroup_mode m);
const char *acct_hierarchy_to_string(enum acct_hierarchy h);

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

struct acct_cgroup_id {
	const char *path;                /* relative path, "/" for the root */
	unsigned depth;
	uint32_t hierarchies;            /* bit (1 << enum acct_hierarchy) per tree it is in */
	uint64_t inode[_ACCT_HIER_MAX];  /* directory inode in each tree, 0 where absent */
};

enum acct_discovery_event {
	ACCT_CGROUP_ADDED,
	ACCT_CGROUP_REMOVED,
	ACCT_CGROUP_CHANGED, /* same path, now in other hierarchies */
};

/* Called once per change. `id` is valid during the call only; the callback
 * must not call back into the discovery. */
typedef void (*acct_discovery_fn)(enum acct_discovery_event ev, const struct acct_cgroup_id *id, void *userdata);

struct acct_discovery;

/* Create a discovery over `layout` (which must outlive it) with `filter`
 * (copied; NULL: every cgroup at any depth). Hierarchies mounted at the same
 * directory (cpu and cpuacct co-mounted, same st_dev/st_ino) are walked once.
 * Sets up inotify. Returns 0, -EINVAL (no hierarchy in the layout), -ENOMEM,
 * the error of stat() on a mount point, or the inotify error. */
int acct_discovery_new(const struct acct_cgroup_layout *layout, const struct acct_discovery_filter *filter,
		       struct acct_discovery **ret);
struct acct_discovery *acct_discovery_free(struct acct_discovery *d);

/* Replace the filter (on reload); the next scan applies it. */
int acct_discovery_set_filter(struct acct_discovery *d, const struct acct_discovery_filter *filter);

/* The inotify descriptor (non-blocking, close-on-exec) to poll for readability. */
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

/* Counters for Status/metrics. */
struct acct_discovery_stats {
	uint64_t tracked, watches, scans, overflows, events;
	uint64_t directories;    /* directories walked and kept (tracked or not, per path) */
	uint64_t unwatched;      /* directories that should have a watch but have none now */
	uint64_t watch_failures; /* inotify_add_watch failures (ENOSPC: max_user_watches) */
};
void acct_discovery_stats(const struct acct_discovery *d, struct acct_discovery_stats *ret);
