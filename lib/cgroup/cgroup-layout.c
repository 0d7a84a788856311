/* cgroup-layout.c - where the cgroup hierarchies are mounted and which layout
 * the host has (cgroup-layout.h).
 *
 * Two sources of mount points on the host: libcgroup for the v1 controllers
 * (quietened: it would print to stdout), and /proc/self/mountinfo where
 * libcgroup finds nothing, as in some containers. Candidates are kept in
 * struct mounts with a score, so that the conventional place
 * (/sys/fs/cgroup, /sys/fs/cgroup/unified) wins over bind mounts elsewhere.
 * Under a root given by the caller (tests, fake trees) the layout is inferred
 * from the directory's contents instead. */
#include <errno.h>
#include <fcntl.h>
#include <linux/magic.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statfs.h>

#include <libcgroup.h>

#include "basic/path.h"
#include "basic/util.h"
#include "cgroup-layout.h"

#define CGROUP_FS_ROOT "/sys/fs/cgroup"

static const char *const hier_name[_ACCT_HIER_MAX] = {
	[ACCT_HIER_UNIFIED] = "unified",
	[ACCT_HIER_MEMORY] = "memory",
	[ACCT_HIER_CPUACCT] = "cpuacct",
	[ACCT_HIER_CPU] = "cpu",
	[ACCT_HIER_BLKIO] = "blkio",
};

const char *acct_cgroup_mode_to_string(enum acct_cgroup_mode m)
{
	switch (m) {
	case ACCT_CGROUP_UNIFIED:
		return "unified";
	case ACCT_CGROUP_HYBRID:
		return "hybrid";
	case ACCT_CGROUP_LEGACY:
		return "legacy";
	}
	return NULL;
}

const char *acct_hierarchy_to_string(enum acct_hierarchy h)
{
	return (unsigned)h < _ACCT_HIER_MAX ? hier_name[h] : NULL;
}

/* ---- layout ---------------------------------------------------------------- */

struct acct_hierarchies *acct_hierarchies_free(struct acct_hierarchies *l)
{
	if (!l)
		return NULL;
	free(l->root);
	for (unsigned h = 0; h < _ACCT_HIER_MAX; h++)
		free(l->mount[h]);
	free(l);
	return NULL;
}
DEFINE_TRIVIAL_CLEANUP_FUNC(struct acct_hierarchies *, acct_hierarchies_free)

/* Mount points found so far; m[ACCT_HIER_UNIFIED] is the v2 tree. */
struct mounts {
	char *m[_ACCT_HIER_MAX];
	int score[_ACCT_HIER_MAX]; /* mountinfo: preference of the candidate kept */
};

static void mounts_done(struct mounts *m)
{
	for (unsigned h = 0; h < _ACCT_HIER_MAX; h++) {
		free(m->m[h]);
		m->m[h] = NULL;
		m->score[h] = 0;
	}
}

static bool mounts_any(const struct mounts *m)
{
	for (unsigned h = 0; h < _ACCT_HIER_MAX; h++)
		if (m->m[h])
			return true;
	return false;
}

/* Set v2_memory/v2_cpu from <dir>/cgroup.controllers; unreadable means none. */
static void read_v2_controllers(struct acct_hierarchies *l, const char *dir)
{
	_cleanup_close_ int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0)
		return;
	_cleanup_close_ int fd = openat(dfd, "cgroup.controllers", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return;
	char buf[4096];
	size_t len = 0;
	for (;;) {
		ssize_t n = read(fd, buf + len, sizeof(buf) - 1 - len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		len += (size_t)n;
		if (len == sizeof(buf) - 1)
			break;
	}
	buf[len] = '\0';
	char *save = NULL;
	for (char *tok = strtok_r(buf, " \t\n", &save); tok; tok = strtok_r(NULL, " \t\n", &save)) {
		if (strcmp(tok, "memory") == 0)
			l->v2_memory = true;
		else if (strcmp(tok, "cpu") == 0)
			l->v2_cpu = true;
	}
}

/* Directory of a path ("/sys/fs/cgroup/memory" -> "/sys/fs/cgroup"). */
static char *dir_of(const char *p)
{
	const char *s = strrchr(p, '/');
	if (!s || s == p)
		return strdup("/");
	return strndup(p, (size_t)(s - p));
}

/* Turn what was found on the host into a layout; consumes m. */
static int layout_from_mounts(struct mounts *m, struct acct_hierarchies **ret)
{
	bool v1 = m->m[ACCT_HIER_MEMORY] || m->m[ACCT_HIER_CPUACCT] || m->m[ACCT_HIER_CPU] || m->m[ACCT_HIER_BLKIO];
	bool v2 = m->m[ACCT_HIER_UNIFIED];

	if (!v1 && !v2)
		return -ENOENT;
	_cleanup_(acct_hierarchies_freep) struct acct_hierarchies *l = calloc(1, sizeof(*l));
	if (!l)
		return -ENOMEM;
	l->mode = !v1 ? ACCT_CGROUP_UNIFIED : v2 ? ACCT_CGROUP_HYBRID : ACCT_CGROUP_LEGACY;
	if (l->mode == ACCT_CGROUP_UNIFIED) {
		l->root = strdup(m->m[ACCT_HIER_UNIFIED]);
	} else {
		const char *first = m->m[ACCT_HIER_MEMORY] ? m->m[ACCT_HIER_MEMORY] :
				    m->m[ACCT_HIER_CPUACCT] ? m->m[ACCT_HIER_CPUACCT] :
				    m->m[ACCT_HIER_CPU]	    ? m->m[ACCT_HIER_CPU] : m->m[ACCT_HIER_BLKIO];
		l->root = dir_of(first);
	}
	if (!l->root)
		return -ENOMEM;
	for (unsigned h = 0; h < _ACCT_HIER_MAX; h++)
		l->mount[h] = TAKE_PTR(m->m[h]);
	if (l->mount[ACCT_HIER_UNIFIED])
		read_v2_controllers(l, l->mount[ACCT_HIER_UNIFIED]);
	*ret = TAKE_PTR(l);
	return 0;
}

/* Undo mountinfo's octal escapes (\040 for a space) in place. */
static void unescape_octal(char *s)
{
	char *w = s;
	for (const char *r = s; *r;) {
		if (r[0] == '\\' && r[1] >= '0' && r[1] <= '3' && r[2] >= '0' && r[2] <= '7' && r[3] >= '0' &&
		    r[3] <= '7') {
			*w++ = (char)(((r[1] - '0') << 6) | ((r[2] - '0') << 3) | (r[3] - '0'));
			r += 4;
		} else {
			*w++ = *r++;
		}
	}
	*w = '\0';
}

static int mounts_offer(struct mounts *m, unsigned h, const char *where, int score)
{
	if (m->m[h] && m->score[h] >= score)
		return 0;
	char *p = strdup(where);
	if (!p)
		return -ENOMEM;
	free(m->m[h]);
	m->m[h] = p;
	m->score[h] = score;
	return 0;
}

/* One mountinfo line: "ID PARENT MAJ:MIN ROOT MOUNTPOINT OPTS [OPTIONAL...] - FSTYPE SOURCE SUPEROPTS". */
static int mounts_parse_line(struct mounts *m, char *line)
{
	char *save = NULL, *field[5] = { 0 };
	unsigned i = 0;
	char *tok;

	for (tok = strtok_r(line, " \n", &save); tok && i < 5; tok = strtok_r(NULL, " \n", &save))
		field[i++] = tok;
	if (i < 5)
		return 0;
	/* skip the mount options and optional fields up to the separator */
	while ((tok = strtok_r(NULL, " \n", &save)) && strcmp(tok, "-") != 0)
		;
	if (!tok)
		return 0;
	char *fstype = strtok_r(NULL, " \n", &save);
	char *source = strtok_r(NULL, " \n", &save);
	char *superopts = strtok_r(NULL, " \n", &save);
	if (!fstype || !source)
		return 0;
	char *where = field[4];
	unescape_octal(where);

	if (strcmp(fstype, "cgroup2") == 0) {
		int score = strcmp(where, CGROUP_FS_ROOT) == 0 ? 3 : strcmp(where, CGROUP_FS_ROOT "/unified") == 0 ? 2 : 1;
		return mounts_offer(m, ACCT_HIER_UNIFIED, where, score);
	}
	if (strcmp(fstype, "cgroup") != 0 || !superopts)
		return 0;
	int score = strncmp(where, CGROUP_FS_ROOT "/", strlen(CGROUP_FS_ROOT "/")) == 0 ? 2 : 1;
	char *save2 = NULL;
	for (char *o = strtok_r(superopts, ",", &save2); o; o = strtok_r(NULL, ",", &save2))
		for (unsigned h = ACCT_HIER_MEMORY; h < _ACCT_HIER_MAX; h++)
			if (strcmp(o, hier_name[h]) == 0) {
				int r = mounts_offer(m, h, where, score);
				if (r < 0)
					return r;
			}
	return 0;
}

static int mounts_from_mountinfo(const char *path, struct mounts *m)
{
	_cleanup_fclose_ FILE *f = fopen(path, "re");
	_cleanup_free_ char *line = NULL;
	size_t cap = 0;

	if (!f)
		return -errno;
	while (getline(&line, &cap, f) >= 0) {
		int r = mounts_parse_line(m, line);
		if (r < 0)
			return r;
	}
	if (ferror(f))
		return -EIO;
	return 0;
}

int acct_hierarchies_from_mountinfo(const char *path, struct acct_hierarchies **ret)
{
	struct mounts m = { 0 };
	int r;

	if (!path || !ret)
		return -EINVAL;
	r = mounts_from_mountinfo(path, &m);
	if (r >= 0)
		r = layout_from_mounts(&m, ret);
	mounts_done(&m);
	return r;
}

static long fs_type(const char *path)
{
	struct statfs sf;
	return statfs(path, &sf) < 0 ? 0 : (long)sf.f_type;
}

/* v1 controllers from libcgroup; a controller it reports on a cgroup2 mount
 * (pure v2 hosts) names the v2 tree instead. Fails where libcgroup finds no
 * cgroup mount at all (some containers). */
static int mounts_from_libcgroup(struct mounts *m)
{
	static bool quiet;

	/* Library code does not log: libcgroup would print errors to stdout,
	 * where --dump writes its JSON. */
	if (!quiet) {
		cgroup_set_logger(NULL, CGROUP_LOG_ERROR, NULL);
		quiet = true;
	}
	if (cgroup_init() != 0)
		return -ENODEV;
	for (unsigned h = ACCT_HIER_MEMORY; h < _ACCT_HIER_MAX; h++) {
		char *p = NULL;
		if (cgroup_get_subsys_mount_point(hier_name[h], &p) != 0 || !p) {
			free(p);
			continue;
		}
		long t = fs_type(p);
		if (t == CGROUP2_SUPER_MAGIC && !m->m[ACCT_HIER_UNIFIED])
			m->m[ACCT_HIER_UNIFIED] = TAKE_PTR(p);
		else if (t == CGROUP_SUPER_MAGIC && !m->m[h])
			m->m[h] = TAKE_PTR(p);
		free(p);
	}
	return 0;
}

static int layout_host(struct acct_hierarchies **ret)
{
	struct mounts m = { 0 };
	bool from_mountinfo = false;
	int r;

	r = mounts_from_libcgroup(&m);
	if (r < 0 || !mounts_any(&m)) {
		mounts_done(&m);
		r = mounts_from_mountinfo("/proc/self/mountinfo", &m);
		if (r == -ENOMEM)
			goto out;
		from_mountinfo = true;
	}
	if (!m.m[ACCT_HIER_UNIFIED]) {
		const char *v2 = NULL;
		if (fs_type(CGROUP_FS_ROOT) == CGROUP2_SUPER_MAGIC)
			v2 = CGROUP_FS_ROOT;
		else if (fs_type(CGROUP_FS_ROOT "/unified") == CGROUP2_SUPER_MAGIC)
			v2 = CGROUP_FS_ROOT "/unified";
		if (v2) {
			r = mounts_offer(&m, ACCT_HIER_UNIFIED, v2, 3);
			if (r < 0)
				goto out;
		} else if (!from_mountinfo) {
			/* v2 mounted somewhere unusual: only mountinfo knows */
			struct mounts mi = { 0 };
			r = mounts_from_mountinfo("/proc/self/mountinfo", &mi);
			m.m[ACCT_HIER_UNIFIED] = TAKE_PTR(mi.m[ACCT_HIER_UNIFIED]);
			mounts_done(&mi);
			if (r == -ENOMEM)
				goto out;
		}
	}
	r = layout_from_mounts(&m, ret);
out:
	mounts_done(&m);
	return r;
}

static bool is_dir_at(int dfd, const char *name)
{
	struct stat st;
	return fstatat(dfd, name, &st, 0) == 0 && S_ISDIR(st.st_mode);
}

static bool is_file_at(int dfd, const char *name)
{
	struct stat st;
	return fstatat(dfd, name, &st, 0) == 0 && S_ISREG(st.st_mode);
}

/* The first of `names` that is a directory (symlinks followed) under dfd. */
static const char *first_dir_at(int dfd, const char *const *names)
{
	for (; *names; names++)
		if (is_dir_at(dfd, *names))
			return *names;
	return NULL;
}

static int layout_from_dir(const char *root, struct acct_hierarchies **ret)
{
	static const char *const memory[] = { "memory", NULL };
	static const char *const cpuacct[] = { "cpuacct", "cpu,cpuacct", "cpuacct,cpu", NULL };
	static const char *const cpu[] = { "cpu", "cpu,cpuacct", "cpuacct,cpu", NULL };
	static const char *const blkio[] = { "blkio", NULL };
	const char *const *names[_ACCT_HIER_MAX] = {
		[ACCT_HIER_MEMORY] = memory,
		[ACCT_HIER_CPUACCT] = cpuacct,
		[ACCT_HIER_CPU] = cpu,
		[ACCT_HIER_BLKIO] = blkio,
	};

	_cleanup_close_ int fd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOTDIR ? -ENOENT : -errno;

	_cleanup_(acct_hierarchies_freep) struct acct_hierarchies *l = calloc(1, sizeof(*l));
	if (!l)
		return -ENOMEM;
	/* keep "/" but drop trailing slashes otherwise */
	size_t len = strlen(root);
	while (len > 1 && root[len - 1] == '/')
		len--;
	l->root = strndup(root, len);
	if (!l->root)
		return -ENOMEM;

	if (is_file_at(fd, "cgroup.controllers")) {
		l->mode = ACCT_CGROUP_UNIFIED;
		l->mount[ACCT_HIER_UNIFIED] = strdup(l->root);
		if (!l->mount[ACCT_HIER_UNIFIED])
			return -ENOMEM;
		read_v2_controllers(l, l->root);
		*ret = TAKE_PTR(l);
		return 0;
	}

	bool v1 = false;
	for (unsigned h = ACCT_HIER_MEMORY; h < _ACCT_HIER_MAX; h++) {
		const char *name = first_dir_at(fd, names[h]);
		if (!name)
			continue;
		l->mount[h] = path_join(l->root, name);
		if (!l->mount[h])
			return -ENOMEM;
		v1 = true;
	}
	bool v2 = is_dir_at(fd, "unified") && is_file_at(fd, "unified/cgroup.controllers");
	if (v2) {
		l->mount[ACCT_HIER_UNIFIED] = path_join(l->root, "unified");
		if (!l->mount[ACCT_HIER_UNIFIED])
			return -ENOMEM;
		read_v2_controllers(l, l->mount[ACCT_HIER_UNIFIED]);
	}
	if (!v1 && !v2)
		return -ENOENT;
	l->mode = v2 ? ACCT_CGROUP_HYBRID : ACCT_CGROUP_LEGACY;
	*ret = TAKE_PTR(l);
	return 0;
}

int acct_hierarchies_detect(const char *root, struct acct_hierarchies **ret)
{
	if (!ret)
		return -EINVAL;
	return root ? layout_from_dir(root, ret) : layout_host(ret);
}
