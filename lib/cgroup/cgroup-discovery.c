/* cgroup-discovery.c - which cgroups exist in the hierarchies of a layout,
 * kept current by full scans and inotify (cgroup-discovery.h).
 * It is long because the set, its walk, its watches, the filters that prune
 * the walk and the census all work on the same nodes and their invariants;
 * split, each part would reach into the others' state.
 *
 * The tracked set is one node per relative path (the union over the
 * hierarchies), in a hash table keyed by path and linked as a tree
 * (parent/children) so that a subtree can be visited in pre-order (additions,
 * parents first) and post-order (removals, children first).
 *
 * Every change goes through one operation, resync(): re-read a path and its
 * subtree in some of the hierarchies, compare with what is known and report
 * the difference. A full scan is a resync of "/" in every hierarchy; an
 * inotify event for (hierarchy, directory, name) is a resync of that one path
 * in that one hierarchy. Because an event only says where to look, stale,
 * duplicate or reordered events (after an overflow, or the IN_DELETE of a
 * directory recreated since) cannot corrupt the set. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/stat.h>

#include "basic/hash.h"
#include "basic/path.h"
#include "basic/ptr-table.h"
#include "basic/strv.h"
#include "basic/util.h"
#include "cgroup-discovery.h"

static void safe_close(int *fd)
{
	if (*fd >= 0)
		(void)close(*fd);
	*fd = -EBADF;
}

/* ---- hash keys (ptr-table.h) ------------------------------------------------ */

static uint64_t hash_path(const char *s)
{
	return hash_mix64(hash_fnv1a_string(s));
}

/* ---- discovery state ----------------------------------------------------- */

#define MAX_TREES _ACCT_HIER_MAX

/* IN_DELETE_SELF: filesystems other than kernfs (fake trees) announce the
 * removal on the directory itself; kernfs only on the parent. IN_MOVED_*:
 * v1 hierarchies allow rename(2). */
#define WATCH_MASK (IN_CREATE | IN_DELETE | IN_DELETE_SELF | IN_MOVED_FROM | IN_MOVED_TO | IN_ONLYDIR)

struct node;

struct watch {
	int wd;       /* -1: none */
	bool failed;  /* wanted but inotify_add_watch failed: counted in unwatched */
	uint8_t tree;
	uint64_t ino; /* the directory this watch is on */
	struct node *node;
};

struct node {
	uint64_t hash;
	struct node *parent, *first_child, *last_child, *prev, *next;
	unsigned depth;
	uint8_t present;      /* bit per tree: known to exist there */
	uint8_t scan_present; /* during a resync: found there now */
	bool included;        /* matches the include globs */
	bool reported;        /* ADDED was reported, REMOVED not yet */
	bool bounce;          /* during a resync: report REMOVED then ADDED */
	bool want;            /* during a resync: should be reported */
	uint32_t hier;        /* hierarchy bits of `present` */
	uint64_t ino[MAX_TREES], scan_ino[MAX_TREES];
	struct watch w[MAX_TREES];
	char path[];
};

/* One walked hierarchy; co-mounted ones share a tree. */
struct tree {
	char *mount;
	uint32_t bits; /* 1 << enum acct_hierarchy for each hierarchy it is */
};

struct filter {
	char **include, **exclude;
	unsigned max_depth;
	uint64_t include_hit, exclude_hit; /* bit i: glob i matched since set (acct_discovery_unmatched()) */
};

struct acct_discovery {
	int ifd;
	bool proc_fd; /* watch through /proc/self/fd/N (no path-length limit) */
	unsigned n_trees;
	struct tree trees[MAX_TREES];
	struct filter filter;
	struct ptr_table paths;   /* struct node * by path */
	struct ptr_table watches; /* struct watch * by wd */
	struct node *root;
	uint8_t resync_mask; /* trees being re-read by the resync in progress */

	/* reporting, for the duration of one public call */
	acct_discovery_fn fn;
	void *userdata;
	int n_events;

	uint64_t tracked, scans, overflows, events, unwatched, watch_failures;
};

static bool node_eq(const void *p, const void *key)
{
	return strcmp(((const struct node *)p)->path, key) == 0;
}

static bool watch_eq(const void *p, const void *key)
{
	return ((const struct watch *)p)->wd == *(const int *)key;
}

static uint64_t hash_wd(int wd)
{
	return hash_mix64((uint64_t)(unsigned)wd);
}

static struct node *node_find(const struct acct_discovery *d, const char *path)
{
	return ptr_table_find(&d->paths, hash_path(path), node_eq, path);
}

static struct watch *watch_find(const struct acct_discovery *d, int wd)
{
	return ptr_table_find(&d->watches, hash_wd(wd), watch_eq, &wd);
}

static bool filter_included(struct filter *f, const char *path)
{
	return !f->include || strv_fnmatch_mark(f->include, path, &f->include_hit);
}

/* The part of an include glob before its first wildcard: every path the
 * glob matches starts with it. A backslash ends it too (an escaped character
 * is literal, but stopping short only makes the prefix shorter: safe). */
static size_t glob_literal_len(const char *glob)
{
	return strcspn(glob, "*?[\\");
}

/* Whether `path` (len bytes) or a directory below it can match an include
 * glob: whether some glob's literal prefix and path + "/" agree where both
 * have characters (a pure literal glob, no wildcard: path is it or one of its
 * ancestors). Where none can, the directory need not be read or watched: its
 * own path matches no glob and no path below it can either. "/" always
 * holds. O(globs x prefix length). */
static bool filter_may_hold(const struct filter *f, const char *path, size_t len)
{
	if (!f->include || (len == 1 && path[0] == '/'))
		return true;
	for (char **g = f->include; *g; g++) {
		size_t l = glob_literal_len(*g);
		if (strncmp(path, *g, MIN(len, l)) != 0)
			continue;
		if (l > len ? (*g)[len] == '/' : (*g)[l] != '\0' || l == len)
			return true;
	}
	return false;
}

/* Whether every directory below `path` (len bytes), and path itself, may
 * hold a match: some glob with a wildcard has its literal prefix at the
 * start of path (filter_may_hold() is then true of path and of every path
 * that starts with it). Where the globs prune, discovery follows such whole
 * subtrees below a few directories it reads in part. O(globs x prefix). */
static bool filter_whole(const struct filter *f, const char *path, size_t len)
{
	if (!f->include)
		return true;
	for (char **g = f->include; *g; g++) {
		size_t l = glob_literal_len(*g);
		if ((*g)[l] != '\0' && l <= len && strncmp(path, *g, l) == 0)
			return true;
	}
	return false;
}

static bool node_whole(const struct filter *f, const struct node *n)
{
	return filter_whole(f, n->path, strlen(n->path));
}

/* Whether filter_may_hold() leaves any directory out: every include glob
 * has a literal prefix beyond "/" (one with a wildcard first or right after
 * the "/" can match below any directory). */
static bool filter_prunes(const struct filter *f)
{
	if (!f->include || !f->include[0])
		return false;
	for (char **g = f->include; *g; g++)
		if (glob_literal_len(*g) < 2)
			return false;
	return true;
}

/* May `path` be walked at all: depth, an include glob that can match it or
 * below it, and no exclude glob on it or an ancestor. */
static int filter_allows(struct filter *f, const char *path, bool *ret)
{
	if (path_depth(path) > f->max_depth || !filter_may_hold(f, path, strlen(path))) {
		*ret = false;
		return 0;
	}
	*ret = true;
	if (!f->exclude)
		return 0;
	if (strv_fnmatch_mark(f->exclude, "/", &f->exclude_hit)) {
		*ret = false;
		return 0;
	}
	_cleanup_free_ char *prefix = strdup(path);
	if (!prefix)
		return -ENOMEM;
	for (char *s = prefix + 1; *s; s++) {
		if (*s != '/')
			continue;
		*s = '\0';
		bool hit = strv_fnmatch_mark(f->exclude, prefix, &f->exclude_hit);
		*s = '/';
		if (hit) {
			*ret = false;
			return 0;
		}
	}
	if (strcmp(path, "/") != 0 && strv_fnmatch_mark(f->exclude, path, &f->exclude_hit))
		*ret = false;
	return 0;
}

static void watch_unmap(struct acct_discovery *d, struct watch *w)
{
	if (w->wd >= 0) {
		ptr_table_remove(&d->watches, hash_wd(w->wd), w);
		w->wd = -1;
	}
	if (w->failed) {
		w->failed = false;
		d->unwatched--;
	}
}

static void watch_drop(struct acct_discovery *d, struct watch *w)
{
	if (w->wd >= 0)
		/* may already be gone (EINVAL): the IN_IGNORED that follows is not mapped any more */
		(void)inotify_rm_watch(d->ifd, w->wd);
	watch_unmap(d, w);
}

/* Make sure directory `fd` (inode `ino`) of node n in tree t is watched. */
static int watch_ensure(struct acct_discovery *d, struct node *n, unsigned t, int fd, uint64_t ino)
{
	struct watch *w = &n->w[t];
	char buf[sizeof("/proc/self/fd/") + 12];
	_cleanup_free_ char *abs = NULL;
	const char *p;
	int wd;

	if (w->wd >= 0 && w->ino == ino)
		return 0;
	watch_drop(d, w);
	if (d->proc_fd) {
		/* the magic link resolves to exactly this directory, whatever its path length */
		(void)snprintf(buf, sizeof(buf), "/proc/self/fd/%d", fd);
		p = buf;
	} else {
		abs = strcmp(n->path, "/") == 0 ? strdup(d->trees[t].mount) : path_join(d->trees[t].mount, n->path + 1);
		if (!abs)
			return -ENOMEM;
		p = abs;
	}
	/* cgroup.events changes come as IN_MODIFY on the directory's watch (v2
	 * only: in v1 trees it would bring only writes to control files). */
	uint32_t mask = WATCH_MASK | ((d->trees[t].bits & (1u << ACCT_HIER_UNIFIED)) ? IN_MODIFY : 0);
	wd = inotify_add_watch(d->ifd, p, mask);
	if (wd >= 0 && watch_find(d, wd)) {
		/* Same inode already watched for another path (a bind mount inside
		 * the tree): the kernel shares one watch. Leave this one unwatched. */
		wd = -1;
		errno = EEXIST;
	}
	if (wd < 0) {
		if (errno == ENOENT)
			return 0; /* gone already: its parent's IN_DELETE follows */
		/* ENOSPC (fs.inotify.max_user_watches), ENOMEM, EACCES, ENAMETOOLONG:
		 * keep tracking the directory without a watch. Changes below it are
		 * then seen by the next full scan, which the caller runs
		 * periodically and which retries the watch. */
		w->failed = true;
		d->unwatched++;
		d->watch_failures++;
		return 0;
	}
	if (mask & IN_MODIFY) {
		/* kernfs announces a change only when the file's inode exists (the
		 * first lookup makes it): else those before the sampler opens it are lost. */
		struct stat est;
		(void)fstatat(fd, "cgroup.events", &est, 0);
	}
	w->wd = wd;
	w->ino = ino;
	w->tree = (uint8_t)t;
	w->node = n;
	int r = ptr_table_insert(&d->watches, hash_wd(wd), w);
	if (r < 0) {
		(void)inotify_rm_watch(d->ifd, wd);
		w->wd = -1;
		return r;
	}
	return 0;
}

/* Find or create the node for `path` (a child of `parent`, NULL for "/"). */
static struct node *node_get(struct acct_discovery *d, struct node *parent, const char *path, size_t len)
{
	uint64_t hash = hash_path(path);
	struct node *n = ptr_table_find(&d->paths, hash, node_eq, path);

	if (n)
		return n;
	n = calloc(1, sizeof(*n) + len + 1);
	if (!n)
		return NULL;
	memcpy(n->path, path, len + 1);
	n->hash = hash;
	n->depth = parent ? parent->depth + 1 : 0;
	n->included = filter_included(&d->filter, path);
	for (unsigned t = 0; t < MAX_TREES; t++)
		n->w[t].wd = -1;
	if (ptr_table_insert(&d->paths, hash, n) < 0) {
		free(n);
		return NULL;
	}
	n->parent = parent;
	if (parent) {
		n->prev = parent->last_child;
		if (parent->last_child)
			parent->last_child->next = n;
		else
			parent->first_child = n;
		parent->last_child = n;
	} else {
		d->root = n;
	}
	return n;
}

/* Unlink and free a node without children. */
static void node_free(struct acct_discovery *d, struct node *n)
{
	for (unsigned t = 0; t < MAX_TREES; t++)
		watch_drop(d, &n->w[t]);
	ptr_table_remove(&d->paths, n->hash, n);
	if (n->parent) {
		if (n->prev)
			n->prev->next = n->next;
		else
			n->parent->first_child = n->next;
		if (n->next)
			n->next->prev = n->prev;
		else
			n->parent->last_child = n->prev;
	}
	if (d->root == n)
		d->root = NULL;
	free(n);
}

typedef void (*visit_fn)(struct acct_discovery *d, struct node *n, struct node *top);

/* Depth-first over the subtree of `top`: pre() before a node's children,
 * post() after them. post() may free the node it is given. No recursion. */
static void traverse(struct acct_discovery *d, struct node *top, visit_fn pre, visit_fn post)
{
	struct node *n = top;

	for (;;) {
		if (pre)
			pre(d, n, top);
		if (n->first_child) {
			n = n->first_child;
			continue;
		}
		for (;;) {
			bool is_top = n == top;
			struct node *next = is_top ? NULL : n->next;
			struct node *up = is_top ? NULL : n->parent;
			if (post)
				post(d, n, top);
			if (is_top)
				return;
			if (next) {
				n = next;
				break;
			}
			n = up;
		}
	}
}

static uint32_t hier_of(const struct acct_discovery *d, uint8_t present)
{
	uint32_t h = 0;
	for (unsigned t = 0; t < d->n_trees; t++)
		if (present & (1u << t))
			h |= d->trees[t].bits;
	return h;
}

static void emit(struct acct_discovery *d, enum acct_discovery_event ev, const struct node *n)
{
	struct acct_cgroup_id id = {
		.path = n->path,
		.depth = n->depth,
		.hierarchies = n->hier,
	};

	for (unsigned t = 0; t < d->n_trees; t++)
		if (n->present & (1u << t))
			for (unsigned h = 0; h < _ACCT_HIER_MAX; h++)
				if (d->trees[t].bits & (1u << h))
					id.inode[h] = n->ino[t];
	d->n_events++;
	d->events++;
	if (d->fn)
		d->fn(ev, &id, d->userdata);
}

/* Start a resync: what is known, minus the trees being re-read. */
static void pre_init(struct acct_discovery *d, struct node *n, struct node *top)
{
	n->scan_present = n->present & (uint8_t)~d->resync_mask;
	memcpy(n->scan_ino, n->ino, sizeof(n->ino));
}

static void pre_revert(struct acct_discovery *d, struct node *n, struct node *top)
{
	n->scan_present = n->present;
	memcpy(n->scan_ino, n->ino, sizeof(n->ino));
}

/* Pass 1, pre-order: what to report. A directory recreated in any tree (new
 * inode) is reported as removed and added again, and so is everything below
 * it, so that nobody sees a child outlive its parent. */
static void pre_plan(struct acct_discovery *d, struct node *n, struct node *top)
{
	bool recreated = false;
	for (unsigned t = 0; t < d->n_trees; t++)
		if ((n->present & n->scan_present & (1u << t)) && n->ino[t] != n->scan_ino[t])
			recreated = true;
	n->bounce = recreated || (n != top && n->parent->bounce);
	n->want = n->scan_present && n->included;
}

/* Pass 1, post-order: removals, children first. */
static void post_remove(struct acct_discovery *d, struct node *n, struct node *top)
{
	if (n->reported && (!n->want || n->bounce)) {
		emit(d, ACCT_CGROUP_REMOVED, n);
		n->reported = false;
		d->tracked--;
	}
}

/* Pass 2, pre-order: take the new state, report additions (parents first)
 * and changes of hierarchies. */
static void pre_apply(struct acct_discovery *d, struct node *n, struct node *top)
{
	for (unsigned t = 0; t < d->n_trees; t++) {
		if (n->scan_present & (1u << t)) {
			n->ino[t] = n->scan_ino[t];
		} else {
			n->ino[t] = 0;
			watch_drop(d, &n->w[t]);
		}
	}
	n->present = n->scan_present;
	uint32_t old = n->hier;
	n->hier = hier_of(d, n->present);
	if (n->want && !n->reported) {
		emit(d, ACCT_CGROUP_ADDED, n);
		n->reported = true;
		d->tracked++;
	} else if (n->reported && n->hier != old) {
		emit(d, ACCT_CGROUP_CHANGED, n);
	}
}

/* Pass 2, post-order: forget directories that exist nowhere. */
static void post_free(struct acct_discovery *d, struct node *n, struct node *top)
{
	if (!n->present && !n->first_child)
		node_free(d, n);
}

static void diff(struct acct_discovery *d, struct node *top)
{
	traverse(d, top, pre_plan, post_remove);
	traverse(d, top, pre_apply, post_free);
}

/* A growable path buffer for the walk. */
struct pathbuf {
	char *p;
	size_t len, cap;
};

static int pathbuf_push(struct pathbuf *b, const char *name)
{
	size_t ln = strlen(name);
	bool slash = !(b->len == 1 && b->p[0] == '/');
	size_t need = b->len + slash + ln + 1;

	if (need > b->cap) {
		size_t ncap = MAX(need, b->cap * 2);
		char *np = realloc(b->p, ncap);
		if (!np)
			return -ENOMEM;
		b->p = np;
		b->cap = ncap;
	}
	if (slash)
		b->p[b->len++] = '/';
	memcpy(b->p + b->len, name, ln + 1);
	b->len += ln;
	return 0;
}

static int pathbuf_set(struct pathbuf *b, const char *path)
{
	size_t len = strlen(path);
	char *p = realloc(b->p, MAX(len + 1, (size_t)256));

	if (!p)
		return -ENOMEM;
	memcpy(p, path, len + 1);
	b->p = p;
	b->len = len;
	b->cap = MAX(len + 1, (size_t)256);
	return 0;
}

static void pathbuf_pop(struct pathbuf *b, size_t len)
{
	b->len = len;
	b->p[len] = '\0';
}

/* errors that mean "not there (any more)" rather than failure */
static bool is_absent_error(int e)
{
	return e == ENOENT || e == ENOTDIR || e == ELOOP || e == EACCES || e == EPERM || e == ESTALE;
}

/* Node n exists in tree t as directory fd (stat st): mark it, watch it, and
 * walk its subdirectories that the filter allows, staying on device dev and
 * not following symlinks. b holds n's path. */
static int walk(struct acct_discovery *d, unsigned t, struct node *n, int fd, const struct stat *st, dev_t dev,
		struct pathbuf *b)
{
	int r;

	n->scan_present |= (uint8_t)(1u << t);
	n->scan_ino[t] = st->st_ino;
	if (n->depth >= d->filter.max_depth) {
		/* its children are not tracked: nothing to watch for */
		watch_drop(d, &n->w[t]);
		return 0;
	}
	r = watch_ensure(d, n, t, fd, st->st_ino);
	if (r < 0)
		return r;

	/* fdopendir() owns its descriptor; fd stays the caller's */
	int dfd = fcntl(fd, F_DUPFD_CLOEXEC, 3);
	if (dfd < 0)
		return -errno;
	_cleanup_closedir_ DIR *dir = fdopendir(dfd);
	if (!dir) {
		r = -errno;
		(void)close(dfd);
		return r;
	}
	for (;;) {
		errno = 0;
		struct dirent *de = readdir(dir);
		if (!de)
			/* a directory removed under us reads as empty or ENOENT */
			return errno && !is_absent_error(errno) ? -errno : 0;
		if (de->d_type != DT_DIR && de->d_type != DT_UNKNOWN)
			continue;
		if (de->d_name[0] == '.' &&
		    (de->d_name[1] == '\0' || (de->d_name[1] == '.' && de->d_name[2] == '\0')))
			continue;

		size_t len = b->len;
		r = pathbuf_push(b, de->d_name);
		if (r < 0)
			return r;
		if (!filter_may_hold(&d->filter, b->p, b->len) ||
		    strv_fnmatch_mark(d->filter.exclude, b->p, &d->filter.exclude_hit)) {
			pathbuf_pop(b, len);
			continue;
		}
		int cfd = openat(dirfd(dir), de->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (cfd < 0) {
			pathbuf_pop(b, len);
			if (is_absent_error(errno))
				continue;
			return -errno;
		}
		struct stat cst;
		if (fstat(cfd, &cst) < 0 || cst.st_dev != dev) {
			(void)close(cfd);
			pathbuf_pop(b, len);
			continue;
		}
		struct node *c = node_get(d, n, b->p, b->len);
		r = c ? walk(d, t, c, cfd, &cst, dev, b) : -ENOMEM;
		(void)close(cfd);
		pathbuf_pop(b, len);
		if (r < 0)
			return r;
	}
}

/* Open `path` in tree t, one component at a time without following
 * symlinks below the mount point. Returns the fd or a negative errno; the
 * mount's device in *ret_dev. */
static int open_in_tree(const struct tree *tr, const char *path, dev_t *ret_dev)
{
	_cleanup_close_ int fd = open(tr->mount, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	struct stat st;

	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) < 0)
		return -errno;
	*ret_dev = st.st_dev;
	_cleanup_free_ char *copy = strdup(path);
	if (!copy)
		return -ENOMEM;
	char *s = copy, *tok;
	while ((tok = strsep(&s, "/"))) {
		if (!*tok)
			continue;
		int cfd = openat(fd, tok, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (cfd < 0)
			return -errno;
		safe_close(&fd);
		fd = cfd;
	}
	return TAKE_FD(fd);
}

/* Re-read `path` (child of `parent`; NULL for "/") and its subtree in the
 * trees of `tmask`, report the differences and update watches. */
static int resync(struct acct_discovery *d, uint8_t tmask, struct node *parent, const char *path)
{
	struct node *n = node_find(d, path);
	struct pathbuf b = { 0 };
	bool allowed;
	int r;

	if (n) {
		d->resync_mask = tmask;
		traverse(d, n, pre_init, NULL);
	}
	r = filter_allows(&d->filter, path, &allowed);
	if (r >= 0)
		r = pathbuf_set(&b, path);
	if (r < 0)
		allowed = false;
	for (unsigned t = 0; allowed && t < d->n_trees; t++) {
		if (!(tmask & (1u << t)))
			continue;
		dev_t dev = 0;
		_cleanup_close_ int fd = open_in_tree(&d->trees[t], path, &dev);
		if (fd < 0) {
			if (is_absent_error(-fd))
				continue;
			r = fd;
			break;
		}
		struct stat st;
		if (fstat(fd, &st) < 0 || st.st_dev != dev)
			continue;
		if (!n) {
			n = node_get(d, parent, path, strlen(path));
			if (!n) {
				r = -ENOMEM;
				break;
			}
		}
		/* walk() leaves b as it found it */
		r = walk(d, t, n, fd, &st, dev, &b);
		if (r < 0)
			break;
	}
	free(b.p);
	if (!n)
		return r;
	if (r < 0)
		/* keep what was known; only forget nodes created by the failed walk */
		traverse(d, n, pre_revert, NULL);
	diff(d, n);
	return r;
}

static int full_scan(struct acct_discovery *d)
{
	d->scans++;
	return resync(d, (uint8_t)((1u << d->n_trees) - 1), NULL, "/");
}

/* ---- public API ---------------------------------------------------------- */

static int filter_set(struct filter *f, const struct acct_discovery_filter *in)
{
	struct filter nf = { .max_depth = in ? in->max_depth : UINT_MAX };
	int r;

	if (in) {
		r = strv_copy(in->include, &nf.include);
		if (r < 0)
			return r;
		r = strv_copy(in->exclude, &nf.exclude);
		if (r < 0) {
			strv_free(nf.include);
			return r;
		}
	}
	strv_free(f->include);
	strv_free(f->exclude);
	*f = nf;
	return 0;
}

struct acct_discovery *acct_discovery_free(struct acct_discovery *d)
{
	if (!d)
		return NULL;
	if (d->paths.slots)
		for (size_t i = 0; i <= d->paths.mask; i++)
			free(d->paths.slots[i].p);
	ptr_table_clear(&d->paths, NULL);
	ptr_table_clear(&d->watches, NULL);
	for (unsigned t = 0; t < d->n_trees; t++)
		free(d->trees[t].mount);
	strv_free(d->filter.include);
	strv_free(d->filter.exclude);
	if (d->ifd >= 0)
		(void)close(d->ifd);
	free(d);
	return NULL;
}
DEFINE_TRIVIAL_CLEANUP_FUNC(struct acct_discovery *, acct_discovery_free)

int acct_discovery_new(const struct acct_hierarchies *layout, const struct acct_discovery_filter *filter,
		       struct acct_discovery **ret)
{
	static const enum acct_hierarchy order[] = { ACCT_HIER_UNIFIED, ACCT_HIER_MEMORY, ACCT_HIER_CPUACCT,
						     ACCT_HIER_CPU, ACCT_HIER_BLKIO };
	struct {
		dev_t dev;
		ino_t ino;
	} id[MAX_TREES];
	int r;

	if (!layout || !ret)
		return -EINVAL;
	_cleanup_(acct_discovery_freep) struct acct_discovery *d = calloc(1, sizeof(*d));
	if (!d)
		return -ENOMEM;
	d->ifd = -EBADF;
	r = filter_set(&d->filter, filter);
	if (r < 0)
		return r;

	for (unsigned i = 0; i < ELEMENTSOF(order); i++) {
		enum acct_hierarchy h = order[i];
		struct stat st;
		unsigned t;

		if (!layout->mount[h])
			continue;
		if (stat(layout->mount[h], &st) < 0)
			return -errno;
		if (!S_ISDIR(st.st_mode))
			return -ENOTDIR;
		for (t = 0; t < d->n_trees; t++)
			if (id[t].dev == st.st_dev && id[t].ino == st.st_ino)
				break;
		if (t == d->n_trees) {
			d->trees[t].mount = strdup(layout->mount[h]);
			if (!d->trees[t].mount)
				return -ENOMEM;
			id[t].dev = st.st_dev;
			id[t].ino = st.st_ino;
			d->n_trees++;
		}
		d->trees[t].bits |= 1u << h;
	}
	if (d->n_trees == 0)
		return -EINVAL;

	d->ifd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
	if (d->ifd < 0)
		return -errno;
	d->proc_fd = access("/proc/self/fd", X_OK) == 0;
	*ret = TAKE_PTR(d);
	return 0;
}

int acct_discovery_set_filter(struct acct_discovery *d, const struct acct_discovery_filter *filter)
{
	int r = filter_set(&d->filter, filter);
	if (r < 0)
		return r;
	for (size_t i = 0; d->paths.slots && i <= d->paths.mask; i++) {
		struct node *n = d->paths.slots[i].p;
		if (n)
			n->included = filter_included(&d->filter, n->path);
	}
	return 0;
}

void acct_discovery_unmatched(const struct acct_discovery *d, acct_discovery_glob_fn fn, void *userdata)
{
	for (size_t i = 0; d->filter.include && d->filter.include[i] && i < 64; i++)
		if (!(d->filter.include_hit & (UINT64_C(1) << i)))
			fn(true, d->filter.include[i], userdata);
	for (size_t i = 0; d->filter.exclude && d->filter.exclude[i] && i < 64; i++)
		if (!(d->filter.exclude_hit & (UINT64_C(1) << i)))
			fn(false, d->filter.exclude[i], userdata);
}

int acct_discovery_fd(const struct acct_discovery *d)
{
	return d->ifd;
}

static void begin(struct acct_discovery *d, acct_discovery_fn fn, void *userdata)
{
	d->fn = fn;
	d->userdata = userdata;
	d->n_events = 0;
}

static int end(struct acct_discovery *d, int r)
{
	d->fn = NULL;
	d->userdata = NULL;
	return r < 0 ? r : d->n_events;
}

int acct_discovery_scan(struct acct_discovery *d, acct_discovery_fn fn, void *userdata)
{
	begin(d, fn, userdata);
	return end(d, full_scan(d));
}

static int handle_event(struct acct_discovery *d, const struct inotify_event *e, const char *name)
{
	struct watch *w = watch_find(d, e->wd);
	if (!w)
		return 0; /* a watch already dropped: stale */

	struct node *n = w->node;
	unsigned t = w->tree;
	_cleanup_free_ char *path = NULL;

	if (e->mask & (IN_IGNORED | IN_DELETE_SELF)) {
		if (e->mask & IN_IGNORED)
			/* the kernel dropped it (removed, unmounted) */
			watch_unmap(d, w);
		path = strdup(n->path);
		if (!path)
			return -ENOMEM;
		return resync(d, (uint8_t)(1u << t), n->parent, path);
	}
	if ((e->mask & IN_MODIFY) && !(e->mask & IN_ISDIR)) {
		if (strcmp(name, "cgroup.events") == 0 && n->reported)
			emit(d, ACCT_CGROUP_EVENTS, n);
		return 0;
	}
	if (!(e->mask & (IN_CREATE | IN_DELETE | IN_MOVED_FROM | IN_MOVED_TO)) || !(e->mask & IN_ISDIR) || !name[0])
		return 0;
	path = path_join(n->path, name);
	if (!path)
		return -ENOMEM;
	return resync(d, (uint8_t)(1u << t), n, path);
}

/* Handle one buffer of events; on an overflow only note it (the caller
 * rescans once everything queued has been drained). */
static int handle_buffer(struct acct_discovery *d, const char *buf, size_t len, bool *rescan)
{
	size_t off = 0;

	while (len - off >= sizeof(struct inotify_event)) {
		struct inotify_event e;
		memcpy(&e, buf + off, sizeof(e));
		size_t sz = sizeof(e) + e.len;
		if (sz > len - off)
			return -EINVAL;
		char name[NAME_MAX + 1] = "";
		if (e.len > 0)
			(void)snprintf(name, sizeof(name), "%.*s", (int)MIN(e.len, (uint32_t)NAME_MAX),
				       buf + off + sizeof(e));
		off += sz;
		if (e.mask & IN_Q_OVERFLOW) {
			d->overflows++;
			*rescan = true;
			continue;
		}
		if (*rescan)
			continue;
		int r = handle_event(d, &e, name);
		if (r < 0)
			return r;
	}
	return 0;
}

int acct_discovery_handle_events(struct acct_discovery *d, const void *buf, size_t len, acct_discovery_fn fn,
				 void *userdata)
{
	bool rescan = false;
	int r;

	begin(d, fn, userdata);
	r = handle_buffer(d, buf, len, &rescan);
	if (r >= 0 && rescan)
		r = full_scan(d);
	return end(d, r);
}

int acct_discovery_process(struct acct_discovery *d, acct_discovery_fn fn, void *userdata)
{
	char buf[16 * 1024] __attribute__((aligned(__alignof__(struct inotify_event))));
	bool rescan = false;
	int r = 0;

	begin(d, fn, userdata);
	for (;;) {
		ssize_t n = read(d->ifd, buf, sizeof(buf));
		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno != EAGAIN)
				r = -errno;
			break;
		}
		if (n == 0)
			break;
		r = handle_buffer(d, buf, (size_t)n, &rescan);
		if (r < 0)
			break;
	}
	if (r >= 0 && rescan)
		r = full_scan(d);
	return end(d, r);
}

static int tree_of(const struct acct_discovery *d, enum acct_hierarchy h)
{
	for (unsigned t = 0; t < d->n_trees; t++)
		if (d->trees[t].bits & (1u << h))
			return (int)t;
	return -ENOENT;
}

/* Whether discovery's set of directories can stand for the hierarchies'
 * (acct_discovery_census()'s and acct_discovery_census_scope()'s -ENODATA):
 * not where exclude globs leave subtrees unread, nor where a directory is
 * unwatched. Include globs that prune leave whole subtrees, which a scope
 * stands for. */
static bool census_stands(const struct acct_discovery *d)
{
	return !(d->filter.exclude && d->filter.exclude[0]) && !d->unwatched;
}

uint32_t acct_discovery_census_plan(const struct acct_discovery *d, uint32_t served)
{
	uint32_t plan = 0;
	if (!census_stands(d))
		return 0;
	for (unsigned t = 0; t < d->n_trees; t++) {
		uint32_t mine = d->trees[t].bits & served;
		if (!mine)
			return 0;
		plan |= mine & -mine; /* its lowest bit */
	}
	return plan;
}

int acct_discovery_census(const struct acct_discovery *d, enum acct_hierarchy h, struct acct_cgroup_census *ret)
{
	int t = tree_of(d, h);
	if (t < 0)
		return t;
	if (!census_stands(d) || filter_prunes(&d->filter))
		return -ENODATA;
	*ret = (struct acct_cgroup_census){ 0 };
	for (size_t i = 0; i < ptr_table_capacity(&d->paths); i++) {
		const struct node *n = ptr_table_at(&d->paths, i);
		if (n && (n->present & (1u << t)))
			acct_cgroup_census_add(ret, n->ino[t]);
	}
	return 0;
}

/* The next node of top's subtree in pre-order after n, or NULL. */
static const struct node *subtree_next(const struct node *n, const struct node *top)
{
	if (n->first_child)
		return n->first_child;
	for (; n != top; n = n->parent)
		if (n->next)
			return n->next;
	return NULL;
}

/* Count (s NULL) or fill in *s the whole subtrees below partial directory n
 * in tree t: each whole child present there is a top (a leaf at the depth
 * limit), every node of its subtree present there an id; partial children
 * are visited the same way. Recursion as deep as the globs' literal
 * prefixes. */
static void scope_below(const struct acct_discovery *d, const struct node *n, unsigned t, struct acct_cgroup_scope *s,
			size_t *n_tops, size_t *n_ids)
{
	for (const struct node *c = n->first_child; c; c = c->next) {
		if (!(c->present & (1u << t)))
			continue;
		if (!node_whole(&d->filter, c)) {
			scope_below(d, c, t, s, n_tops, n_ids);
			continue;
		}
		if (c->depth >= d->filter.max_depth) {
			if (s)
				s->n_leaves++;
		} else if (s)
			s->tops[s->n_tops++] = c->ino[t];
		else
			(*n_tops)++;
		for (const struct node *x = c; x; x = subtree_next(x, c))
			if (x->present & (1u << t)) {
				if (s)
					s->ids[s->n_ids++] = x->ino[t];
				else
					(*n_ids)++;
			}
	}
}

int acct_discovery_census_scope(const struct acct_discovery *d, enum acct_hierarchy h,
				struct acct_cgroup_scope **ret)
{
	int t = tree_of(d, h);
	if (t < 0)
		return t;
	if (!census_stands(d))
		return -ENODATA;
	*ret = NULL;
	if (!filter_prunes(&d->filter) || !d->root)
		return 0;
	size_t n_tops = 0, n_ids = 0;
	scope_below(d, d->root, (unsigned)t, NULL, &n_tops, &n_ids);
	struct acct_cgroup_scope *s = acct_cgroup_scope_new(n_tops, n_ids);
	if (!s)
		return -ENOMEM;
	scope_below(d, d->root, (unsigned)t, s, NULL, NULL);
	*ret = s;
	return 0;
}

/* Append to *v (n_v entries, room for cap) the directories below partial
 * directory p whose subtrees in tree t hold every directory discovery
 * reports there: each whole child (a top, or a leaf at the depth limit),
 * each partial child the include globs name itself (a literal glob), and
 * for every other partial child those below it, or the child itself where
 * that takes more than `max`. Returns false where the children of p take
 * more than `max` (*n_v then as it was). */
static bool roots_below(const struct acct_discovery *d, const struct node *p, unsigned t, size_t max,
			const struct node **v, size_t *n_v, size_t cap)
{
	size_t start = *n_v;
	for (const struct node *c = p->first_child; c; c = c->next) {
		if (!(c->present & (1u << t)))
			continue;
		size_t before = *n_v;
		if (node_whole(&d->filter, c) || c->included || !roots_below(d, c, t, max, v, n_v, cap)) {
			*n_v = before;
			if (*n_v == cap) { /* (cannot happen: cap covers every level) */
				*n_v = start;
				return false;
			}
			v[(*n_v)++] = c;
		}
		if (*n_v - start > max) {
			*n_v = start;
			return false;
		}
	}
	return true;
}

static int compare_paths(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

int acct_discovery_walk_roots(const struct acct_discovery *d, enum acct_hierarchy h, size_t max, char ***ret)
{
	int t = tree_of(d, h);
	if (t < 0)
		return t;
	*ret = NULL;
	if (!filter_prunes(&d->filter) || !d->root || d->root->included || max == 0)
		return 0;
	/* Each level below holds at most max + 1 while it is walked (then
	 * gives way to its directory where more). */
	size_t cap = (max + 1) * (size_t)(d->filter.max_depth + 2), n = 0;
	_cleanup_free_ const struct node **v = calloc(cap, sizeof(*v));
	if (!v)
		return -ENOMEM;
	if (!roots_below(d, d->root, (unsigned)t, max, v, &n, cap))
		return 0; /* more than max below the root: the whole hierarchy */
	_cleanup_strv_free_ char **paths = strv_new_empty();
	if (!paths)
		return -ENOMEM;
	for (size_t i = 0, k = 0; i < n; i++)
		if (strv_push_dup(&paths, &k, v[i]->path) < 0)
			return -ENOMEM;
	qsort(paths, n, sizeof(*paths), compare_paths); /* one order for one set */
	*ret = TAKE_PTR(paths);
	return 0;
}

/* Partial directory n as read now in tree t, one level: 0 where the
 * children the globs may hold are those known there, with the same
 * inodes; 1 where not; or a negative errno. An entry on another device (a
 * mount inside the tree) is skipped, as walk() skips it. */
static int read_above(const struct acct_discovery *d, unsigned t, const struct node *n, struct pathbuf *b)
{
	dev_t dev = 0;
	_cleanup_close_ int fd = open_in_tree(&d->trees[t], n->path, &dev);
	if (fd < 0)
		return is_absent_error(-fd) ? 1 : fd;
	_cleanup_closedir_ DIR *dir = fdopendir(fd);
	if (!dir)
		return -errno;
	(void)TAKE_FD(fd); /* the DIR owns it now */
	int r = pathbuf_set(b, n->path);
	if (r < 0)
		return r;
	size_t len = b->len, seen = 0, known = 0;
	for (;;) {
		errno = 0;
		struct dirent *de = readdir(dir);
		if (!de) {
			if (errno)
				return is_absent_error(errno) ? 1 : -errno;
			break;
		}
		if ((de->d_type != DT_DIR && de->d_type != DT_UNKNOWN) ||
		    (de->d_name[0] == '.' &&
		     (de->d_name[1] == '\0' || (de->d_name[1] == '.' && de->d_name[2] == '\0'))))
			continue;
		r = pathbuf_push(b, de->d_name);
		if (r < 0)
			return r;
		bool may_hold = filter_may_hold(&d->filter, b->p, b->len);
		const struct node *c = may_hold ? node_find(d, b->p) : NULL;
		pathbuf_pop(b, len);
		if (!may_hold)
			continue;
		if (!c || !(c->present & (1u << t)) || c->ino[t] != de->d_ino) {
			/* a mount point or something other than a directory: not walked either */
			struct stat st;
			if (fstatat(dirfd(dir), de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
				return is_absent_error(errno) ? 1 : -errno;
			if (!S_ISDIR(st.st_mode) || st.st_dev != dev)
				continue;
			return 1;
		}
		seen++;
	}
	for (const struct node *c = n->first_child; c; c = c->next)
		known += !!(c->present & (1u << t));
	return seen == known ? 0 : 1;
}

/* read_above() for partial directory n in every tree it is in, and the
 * same for its partial children. */
static int above_below(const struct acct_discovery *d, const struct node *n, struct pathbuf *b)
{
	if (n->depth >= d->filter.max_depth)
		return 0; /* its children are not followed */
	for (unsigned t = 0; t < d->n_trees; t++) {
		if (!(n->present & (1u << t)))
			continue;
		int r = read_above(d, t, n, b);
		if (r != 0)
			return r;
	}
	for (const struct node *c = n->first_child; c; c = c->next)
		if (!node_whole(&d->filter, c)) {
			int r = above_below(d, c, b);
			if (r != 0)
				return r;
		}
	return 0;
}

int acct_discovery_census_above(const struct acct_discovery *d)
{
	if (!filter_prunes(&d->filter) || !d->root)
		return 0;
	struct pathbuf b = { 0 };
	int r = above_below(d, d->root, &b);
	free(b.p);
	return r;
}

void acct_discovery_stats(const struct acct_discovery *d, struct acct_discovery_stats *ret)
{
	*ret = (struct acct_discovery_stats){
		.tracked = d->tracked,
		.watches = d->watches.n,
		.scans = d->scans,
		.overflows = d->overflows,
		.events = d->events,
		.directories = d->paths.n,
		.unwatched = d->unwatched,
		.watch_failures = d->watch_failures,
	};
}
