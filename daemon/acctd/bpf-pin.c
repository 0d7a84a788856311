/* bpf-pin.c - acctd --bpf-pin: load, attach and pin the cgroup iterator as
 * root, for an unprivileged daemon to read (bpf-pin.h). */
#include "bpf-pin.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

#include "basic/log.h"
#include "basic/path.h"
#include "basic/util.h"
#include "basic/write-file.h"
#include "bpf/bpf-collector.h"
#include "bpf/task-walk.h"
#include "cgroup/cgroup-layout.h"
#include "config/config.h"
#include "percpu/topology.h"

#define BPFFS_MOUNT "/sys/fs/bpf"
#define BPF_FS_MAGIC_VALUE 0xcafe4a11 /* BPF_FS_MAGIC of linux/magic.h */

DEFINE_TRIVIAL_CLEANUP_FUNC(struct acct_config *, acct_config_free);
DEFINE_TRIVIAL_CLEANUP_FUNC(struct acct_hierarchies *, acct_hierarchies_free);
DEFINE_TRIVIAL_CLEANUP_FUNC(struct acct_bpf_collector *, acct_bpf_collector_free);
DEFINE_TRIVIAL_CLEANUP_FUNC(struct acct_topology *, acct_topology_free);
DEFINE_TRIVIAL_CLEANUP_FUNC(struct acct_task_walk *, acct_task_walk_free);

/* The per-hierarchy result lines: on stdout for an administrator or a
 * script; under systemd into the journal with their priority, through the
 * stream on stderr (bpf_pin_run() chooses it: this process exits right after
 * it logs, and "journalctl -u acctd" would miss a native message from a
 * sender that is gone, log.h). */
static void __attribute__((format(printf, 2, 3))) say(int level, const char *format, ...)
{
	char line[LOG_MESSAGE_MAX];
	va_list ap;

	va_start(ap, format);
	vsnprintf(line, sizeof(line), format, ap);
	va_end(ap);
	if (log_get_target() != LOG_TARGET_STDERR)
		log_full(level, "%s", line);
	else {
		printf("%s\n", line);
		fflush(stdout);
	}
}

static int load_config(const struct manager_config_source *src, struct acct_config **ret)
{
	_cleanup_(acct_config_diag_clear) struct acct_config_diag diag = { 0 };
	_cleanup_(acct_config_freep) struct acct_config *c = NULL;
	int r;

	r = acct_config_load(src->main_file, src->dropin_dir, &c, &diag);
	for (unsigned i = 0; r >= 0 && i < src->nr_overrides; i++)
		r = acct_config_set(c, src->overrides[i].section, src->overrides[i].key, src->overrides[i].value,
				    src->overrides[i].origin, &diag);
	if (r < 0)
		return log_error_errno(r, "%s", diag.error ?: strerror(-r));
	*ret = TAKE_PTR(c);
	return 0;
}

/* Remove the pins an earlier run left in dir (one per hierarchy name) and
 * dir itself when that empties it. Returns the number removed, or -errno
 * with *why saying which could not be removed. */
static int remove_pins(const char *dir, char *why, size_t size)
{
	int n = 0;
	for (int i = 0; i <= _ACCT_HIER_MAX; i++) { /* each hierarchy's, then the task walk's */
		_cleanup_free_ char *path = NULL;
		if (asprintf(&path, "%s/%s", dir, i < _ACCT_HIER_MAX ? acct_hierarchy_to_string(i) : BPF_PIN_TASKS) < 0)
			return -ENOMEM;
		if (unlink(path) == 0)
			n++;
		else if (errno != ENOENT && errno != ENOTDIR) {
			int r = -errno;
			snprintf(why, size, "cannot remove the pin %s of an earlier run: %s", path, strerror(-r));
			return r;
		}
	}
	/* A read-only file system answers EROFS even where dir is missing. */
	if (rmdir(dir) < 0 && errno != ENOENT && errno != ENOTEMPTY && errno != ENOTDIR &&
	    !(errno == EROFS && access(dir, F_OK) < 0)) {
		int r = -errno;
		snprintf(why, size, "cannot remove %s: %s", dir, strerror(-r));
		return r;
	}
	return n;
}

static const char *report_path(void)
{
	const char *p = secure_getenv("ACCTD_BPF_PIN_REPORT");
	return p && *p ? p : BPF_PIN_REPORT;
}

/* Leave the daemon the reason why nothing in dir is to be used (see
 * bpf_pin_report_read()). Failing that, the daemon still reads files; it
 * only cannot say why, and may read stale pins that could not be removed. */
static void report_write(const char *dir, const char *reason)
{
	_cleanup_free_ char *text = NULL;
	int n = asprintf(&text, "%s\n%s\n", dir, reason);
	/* 0644 whatever the umask (the unit's is 0077): the daemon's user reads it. */
	mode_t mask = umask(0022);
	int r = n < 0 ? -ENOMEM : write_file_atomic_at(AT_FDCWD, report_path(), text, (size_t)n, 0644);
	umask(mask);
	if (r < 0)
		log_warning_errno(r, "Cannot leave the reason for the daemon in %s, ignoring: %m", report_path());
}

static void report_clear(void)
{
	if (unlink(report_path()) < 0 && errno != ENOENT)
		log_warning_errno(errno, "Cannot remove %s, ignoring: %m", report_path());
}

int bpf_pin_report_read(const char *dir, char **ret_reason)
{
	char buf[BPF_PIN_REPORT_MAX + 1];
	struct stat st;

	_cleanup_close_ int fd = open(report_path(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT ? 0 : -errno;
	/* Root's word only: anyone else's file there is not the pin step's. */
	if (fstat(fd, &st) < 0)
		return -errno;
	if (!S_ISREG(st.st_mode) || st.st_uid != 0)
		return -EPERM;
	ssize_t n = read(fd, buf, BPF_PIN_REPORT_MAX);
	if (n < 0)
		return -errno;
	buf[n] = 0;
	char *nl = strchr(buf, '\n');
	if (!nl)
		return -EBADMSG;
	*nl = 0;
	if (strcmp(buf, dir) != 0)
		return 0; /* another pin directory's */
	char *reason = nl + 1;
	reason[strcspn(reason, "\n")] = 0;
	char *copy = strdup(*reason ? reason : "no reason given");
	if (!copy)
		return -ENOMEM;
	*ret_reason = copy;
	return 1;
}

/* BPF is not there to be used: with collector = bpf (asked for) that fails
 * the start; with auto it does not, and the daemon is left the reason. One
 * line says which. Returns the exit status. */
static int unavailable(bool required, const char *dir, const char *reason)
{
	if (required) {
		say(LOG_ERR, "nothing pinned and collector = bpf: %s", reason);
		return 1;
	}
	say(LOG_NOTICE, "nothing pinned: the daemon reads cgroupfs files (collector = auto; BPF is unavailable: %s)",
	    reason);
	report_write(dir, reason);
	return 0;
}

static bool on_bpffs(const char *path)
{
	struct statfs sf;
	return statfs(path, &sf) == 0 && (unsigned long)sf.f_type == BPF_FS_MAGIC_VALUE;
}

/* Pins can only live on bpffs. systemd mounts it at boot; a host without
 * systemd may not have it. Mounted here with mode 0755 (the kernel's default
 * is 01777): anyone may look up the pins, only root may pin. Returns 0 when
 * bpffs is there, or a negative errno with *reason set. */
static int ensure_bpffs(char *reason, size_t size)
{
	if (on_bpffs(BPFFS_MOUNT))
		return 0;
	if (mount("bpf", BPFFS_MOUNT, "bpf", MS_NOSUID | MS_NODEV | MS_NOEXEC, "mode=0755") < 0) {
		int r = -errno;
		if (r == -ENOENT) /* systemd-nspawn's /sys, a kernel without BPF */
			snprintf(reason, size, "no bpf file system at " BPFFS_MOUNT ", and no directory there to mount one on");
		else
			snprintf(reason, size, "no bpf file system at " BPFFS_MOUNT " and mounting one failed: %s",
				 strerror(-r));
		return r;
	}
	log_info("Mounted bpffs at " BPFFS_MOUNT);
	return 0;
}

/* systemd mounts bpffs with mode 0700, which keeps the daemon's user from
 * reaching its pins below. Give the directories above the pin directory
 * that are on bpffs search permission (x, not r: nothing can be listed),
 * where they lack it. That exposes no other pin: bpf_obj_pin() creates pins
 * 0600, and a pin's own mode still decides who may open it. Returns 0 or
 * -errno with *why set. */
static int make_searchable(const char *dir, char *why, size_t size)
{
	_cleanup_free_ char *p = strdup(dir);
	if (!p)
		return -ENOMEM;
	for (char *slash = strrchr(p, '/'); slash && slash != p; slash = strrchr(p, '/')) {
		*slash = 0;
		struct stat st;
		if (!on_bpffs(p) || stat(p, &st) < 0)
			break;
		if ((st.st_mode & 0011) == 0011)
			continue;
		mode_t mode = (st.st_mode & 07777) | 0011;
		if (chmod(p, mode) < 0) {
			int r = -errno;
			snprintf(why, size, "cannot make %s searchable for the daemon's user: %s", p, strerror(-r));
			return r;
		}
		log_info("Made %s searchable for acctd's user (mode %04o, was %04o)", p, (unsigned)mode,
			 (unsigned)(st.st_mode & 07777));
	}
	return 0;
}

/* Is the pin directory, or where it would be made, on bpffs? Says what to
 * do where it is not. */
static bool pin_dir_on_bpffs(const char *dir)
{
	_cleanup_free_ char *parent = strdup(dir);
	if (!parent)
		return log_oom(), false;
	char *slash = strrchr(parent, '/');
	if (slash)
		*(slash == parent ? slash + 1 : slash) = 0;
	if (on_bpffs(access(dir, F_OK) == 0 ? dir : parent))
		return true;
	say(LOG_ERR, "bpf_pin_dir %s is not on a bpf file system: pins can only live there "
		     "(mount -t bpf bpf %s, or choose a directory below /sys/fs/bpf)", dir, parent);
	return false;
}

/* The hierarchy holding memory.stat, or -1 (no memory controller). */
static int memory_hierarchy(const struct acct_hierarchies *l)
{
	if (l->mount[ACCT_HIER_MEMORY])
		return ACCT_HIER_MEMORY;
	if (l->mount[ACCT_HIER_UNIFIED] && l->v2_memory)
		return ACCT_HIER_UNIFIED;
	return -1;
}

/* Tell the program which memory.stat items to copy per node; before pinning,
 * since the pinned links keep the program (and these settings) as they are. */
static void map_numa(struct acct_bpf_collector *c, const struct acct_hierarchies *l)
{
	struct acct_bpf_stat_map map;
	int h = memory_hierarchy(l);
	if (h < 0 || !acct_bpf_collector_serves(c, h))
		return;
	int r = acct_bpf_collector_map_stats(c, h, acct_bpf_numa_keys(h == ACCT_HIER_UNIFIED),
					     &map);
	uint32_t units[ACCT_BPF_NODE_ITEMS];
	if (r < 0)
		say(LOG_NOTICE, "%s: memory.stat keys not mapped, no per-node values: %s", acct_hierarchy_to_string(h),
		    strerror(-r));
	else
		say(LOG_INFO, "%s: %d memory.stat keys mapped (from %u cgroups), %u per-node items",
		    acct_hierarchy_to_string(h), r, map.cgroups_used, acct_bpf_collector_node_items(c, h, units));
}

/* The reason of the first hierarchy that was not pinned: why nothing was. */
static const char *first_reason(const struct acct_bpf_collector *c, const struct acct_hierarchies *l)
{
	for (int i = 0; i < _ACCT_HIER_MAX; i++)
		if (l->mount[i] && !acct_bpf_collector_serves(c, i))
			return acct_bpf_collector_reason(c, i);
	return "no cgroup hierarchy to pin";
}

/* The task walk (threads and their states, for tasks and load) beside the
 * cgroup iterators, at dir/BPF_PIN_TASKS, filling the slot of every mounted
 * hierarchy: the daemon that reads the pin cannot choose them. Not pinning
 * it fails nothing: the daemon then counts threads from files, and says why
 * (the line here says it first). */
static void pin_task_walk(const struct acct_config *config, const struct acct_hierarchies *layout, const char *dir)
{
	_cleanup_(acct_task_walk_freep) struct acct_task_walk *w = NULL;
	_cleanup_free_ char *path = NULL;
	char reason[512];
	uint32_t slots = 0;

	if (asprintf(&path, "%s/" BPF_PIN_TASKS, dir) < 0) {
		log_oom();
		return;
	}
	if (config->cgroup_root) {
		say(LOG_INFO, "threads: not pinned: cgroup_root names a tree other than the kernel's");
		return;
	}
	int r = acct_task_walk_new(layout, NULL, &w, reason, sizeof(reason));
	if (r >= 0) {
		for (int h = 0; h < _ACCT_HIER_MAX && h < ACCT_TASK_SLOTS; h++)
			if (layout->mount[h])
				slots |= 1u << h;
		r = acct_task_walk_pin(w, slots, path);
		if (r < 0)
			snprintf(reason, sizeof(reason), "cannot pin the task iterator at %s: %s", path, strerror(-r));
	}
	if (r == -ENOMEM)
		log_oom();
	else if (r < 0)
		say(LOG_NOTICE, "threads: not pinned: %s (the daemon counts threads from files)", reason);
	else
		say(LOG_INFO, "threads: pinned at %s", path);
}

int bpf_pin_run(const struct manager_config_source *src)
{
	_cleanup_(acct_config_freep) struct acct_config *config = NULL;
	_cleanup_(acct_hierarchies_freep) struct acct_hierarchies *layout = NULL;
	_cleanup_(acct_bpf_collector_freep) struct acct_bpf_collector *c = NULL;
	_cleanup_(acct_topology_freep) struct acct_topology *topo = NULL;
	char reason[512];
	int r;

	if (log_get_target() == LOG_TARGET_JOURNAL)
		log_set_target(LOG_TARGET_JOURNAL_STREAM);
	if (geteuid() != 0) {
		say(LOG_ERR, "acctd --bpf-pin needs root: it loads a BPF program and pins it (run it as root, or as "
			     "the unit's ExecStartPre=+ does)");
		return 1;
	}
	r = load_config(src, &config);
	if (r < 0 || !config)
		return 1;
	const char *dir = config->bpf_pin_dir && *config->bpf_pin_dir ? config->bpf_pin_dir : NULL;
	bool required = config->collector == ACCT_COLLECTOR_BPF;

	if (config->collector == ACCT_COLLECTOR_FILES) {
		/* The daemon reads no pins then: one that stays is no error (the
		 * report keeps a later collector = auto from reading it). */
		r = dir ? remove_pins(dir, reason, sizeof(reason)) : 0;
		if (r == -ENOMEM)
			return log_oom(), 1;
		if (r < 0) {
			say(LOG_NOTICE, "collector = files: nothing pinned; %s (the daemon does not read it)", reason);
			report_write(dir, reason);
		} else {
			say(LOG_INFO, "collector = files: nothing pinned, %d earlier pins removed", r);
			report_clear();
		}
		return 0;
	}
	if (!dir) {
		say(LOG_NOTICE, "bpf_pin_dir is empty: nothing pinned (the daemon attaches the iterator itself, if "
				"it may)");
		return required ? 1 : 0;
	}

	r = acct_hierarchies_detect(config->cgroup_root, &layout);
	if (r < 0 || !layout) {
		log_error_errno(r, "Failed to find the cgroup hierarchies%s%s: %m", config->cgroup_root ? " under " : "",
				config->cgroup_root ?: "");
		return 1;
	}
	/* A pin directory outside /sys/fs/bpf must be on a bpffs of the
	 * administrator's: that it is not is a mistake in the configuration. */
	bool below_mount = path_under(dir, BPFFS_MOUNT, strlen(BPFFS_MOUNT));
	if (!below_mount && !pin_dir_on_bpffs(dir))
		return 1;
	/* Below /sys/fs/bpf without a bpffs there, there are no earlier pins to
	 * remove, and it is mounted only once a program loads (not where bpf()
	 * is refused anyway: systemd-nspawn's defaults). Otherwise pins of an
	 * earlier run go first: a hierarchy that cannot be pinned now must not
	 * be served by a program of another build or configuration; where they
	 * cannot be removed, the report tells the daemon to leave them alone. */
	bool mount = below_mount && !on_bpffs(BPFFS_MOUNT);
	if (!mount) {
		r = remove_pins(dir, reason, sizeof(reason));
		if (r == -ENOMEM)
			return log_oom(), 1;
		if (r < 0)
			return unavailable(required, dir, reason);
	}

	uint32_t wanted = 0;
	for (int i = 0; i < _ACCT_HIER_MAX; i++)
		if (layout->mount[i])
			wanted |= 1u << i;
	(void)acct_topology_detect(&topo); /* without it, one node */
	struct acct_bpf_collector_options opts = {
		.layout = layout,
		.hierarchies = wanted,
		.pin_dir = NULL, /* attach afresh: the pins are what is being made */
		.attach = true,
		.nr_nodes = topo ? topo->nr_nodes : 1,
	};
	r = acct_bpf_collector_new(&opts, &c);
	if (r < 0) {
		log_error_errno(r, "Failed to set up the BPF collector: %m");
		return 1;
	}
	map_numa(c, layout);

	/* One line where one reason holds for every hierarchy (bpf() refused, no
	 * BTF); a line per hierarchy where they differ. */
	bool any = acct_bpf_collector_any(c), same = !any;
	for (int i = 0; same && i < _ACCT_HIER_MAX; i++)
		same = !layout->mount[i] || strcmp(acct_bpf_collector_reason(c, i), first_reason(c, layout)) == 0;
	for (int i = 0; !same && i < _ACCT_HIER_MAX; i++)
		if (layout->mount[i] && !acct_bpf_collector_serves(c, i))
			say(LOG_NOTICE, "%s: not pinned: %s", acct_hierarchy_to_string(i), acct_bpf_collector_reason(c, i));
	if (!any)
		return unavailable(required, dir, first_reason(c, layout));
	if (mount && ensure_bpffs(reason, sizeof(reason)) < 0)
		return unavailable(required, dir, reason);
	if (below_mount && !pin_dir_on_bpffs(dir))
		return 1;

	/* A bpffs that refuses (read-only, an LSM's policy) is BPF unavailable
	 * too; only running out of memory is an error of acctd's. */
	r = acct_bpf_collector_pin(c, dir);
	if (r < 0)
		snprintf(reason, sizeof(reason), "cannot pin the iterators in %s: %s", dir, strerror(-r));
	else if (r > 0)
		r = make_searchable(dir, reason, sizeof(reason));
	if (r < 0) {
		char ignored[256];
		(void)remove_pins(dir, ignored, sizeof(ignored));
		return r == -ENOMEM ? (log_oom(), 1) : unavailable(required, dir, reason);
	}
	report_clear();
	for (int i = 0; i < _ACCT_HIER_MAX; i++) {
		const char *name = acct_hierarchy_to_string(i);
		if (layout->mount[i] && acct_bpf_collector_serves(c, i))
			say(LOG_INFO, "%s: pinned at %s/%s%s", name, dir, name, acct_bpf_collector_program_note(c));
	}
	pin_task_walk(config, layout, dir);
	return 0;
}
