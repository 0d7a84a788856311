/* cgroup-layout.h - where the cgroup hierarchies are mounted (struct
 * acct_hierarchies: not a cgroup, whose record is the ledger's struct
 * acct_cgroup) and how a cgroup is identified in them.
 *
 * Layout: the mode (pure v2, hybrid, legacy v1) and the mount point of each
 * hierarchy acctd reads, found with libcgroup on the host or, for tests and
 * containers, inferred from the contents of a directory given as the root.
 * cpu and cpuacct may be one joint v1 mount or two split ones; either way each
 * has its entry in mount[].
 *
 * Identity: struct acct_cgroup_id names a cgroup by its path relative to the
 * hierarchy roots and says in which hierarchies it exists, with the directory
 * inode in each. The discovery (cgroup-discovery.h) reports it and the ledger
 * stores it; it lives here so that the ledger needs the hierarchy table only,
 * not the discovery's inotify machinery.
 *
 * Detection runs once at start-up and on reload, from one thread; the results
 * are plain data that may be shared read-only afterwards. */
#pragma once

#include <stdbool.h>
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
	ACCT_HIER_BLKIO,   /* v1 blkio (I/O bytes and operations per device) */
	_ACCT_HIER_MAX,
};

struct acct_hierarchies {
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
 * "cpu,cpuacct"/"blkio" directories means hybrid ("unified" alone: hybrid without v1
 * controllers); controller directories alone mean legacy. "cpu" and "cpuacct"
 * may be symlinks to "cpu,cpuacct". v2_memory/v2_cpu come from the v2 root's
 * cgroup.controllers. Returns 0 and the layout in *ret, owned by the caller
 * (acct_hierarchies_free()); or, with *ret untouched, -EINVAL (ret NULL),
 * -ENOENT (root missing or not a directory, or no hierarchy found), -ENOMEM,
 * or another error opening `root`. */
int acct_hierarchies_detect(const char *root, struct acct_hierarchies **ret);

/* The host's layout from a mountinfo file (normally /proc/self/mountinfo):
 * the fallback of acct_hierarchies_detect(NULL) where libcgroup fails, as
 * in some containers. "cgroup2" mounts give the v2 tree (preferring
 * /sys/fs/cgroup, then /sys/fs/cgroup/unified), "cgroup" mounts whose super
 * options name memory, cpuacct or cpu the v1 trees. v2_memory and v2_cpu are
 * read from the v2 mount's cgroup.controllers (false where unreadable).
 * Returns 0 and the layout in *ret, owned by the caller; or, with *ret
 * untouched, -EINVAL (an argument NULL), -ENOENT (no cgroup mount), -ENOMEM,
 * or the error opening `path`. */
int acct_hierarchies_from_mountinfo(const char *path, struct acct_hierarchies **ret);

/* Free a layout from acct_hierarchies_detect() or
 * acct_hierarchies_from_mountinfo() with the strings it owns. Accepts NULL;
 * returns NULL. */
struct acct_hierarchies *acct_hierarchies_free(struct acct_hierarchies *l);

/* Static names ("unified", "hybrid", "legacy"; "unified", "memory", "cpuacct",
 * "cpu", "blkio"), not to be freed; NULL for a value outside the enum. */
const char *acct_cgroup_mode_to_string(enum acct_cgroup_mode m);
const char *acct_hierarchy_to_string(enum acct_hierarchy h);

/* A cgroup: the union of the directories at one relative path ("/" is the root
 * cgroup; "/system.slice/foo.service") over the hierarchies. A cgroup removed
 * and recreated under the same path has new inodes. Whoever hands one out says
 * how long `path` stays valid. */
struct acct_cgroup_id {
	const char *path;                /* relative path, "/" for the root */
	unsigned depth;
	uint32_t hierarchies;            /* bit (1 << enum acct_hierarchy) per tree it is in */
	uint64_t inode[_ACCT_HIER_MAX];  /* directory inode in each tree, 0 where absent */
};
