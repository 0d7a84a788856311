/* task-walk.c - load, attach and read the BPF task iterator (task-walk.h). */
#include "task-walk.h"

#include <dirent.h>
#include <stdbool.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "basic/read-file.h"
#include "basic/util.h"
#include "cgroup/cgfs-parse.h"
#include "task-iter.skel.h"

struct acct_task_walk {
	const struct acct_hierarchies *layout;
	struct acct_task_iter *skel;
	struct bpf_link *link;
	char *pin_path; /* a pin opened by acct_task_walk_open_pin() (no skel, no link) */
	char *source;   /* acct_task_walk_source() */
	char *buf;
	size_t size;
	bool test_drop; /* ACCTD_TEST_TASK_WALK_DROP=1 (task-walk.h) */
};

struct acct_task_walk *acct_task_walk_free(struct acct_task_walk *w)
{
	if (!w)
		return NULL;
	bpf_link__destroy(w->link);
	acct_task_iter__destroy(w->skel);
	free(w->pin_path);
	free(w->source);
	free(w->buf);
	free(w);
	return NULL;
}

DEFINE_TRIVIAL_CLEANUP_FUNC(struct acct_task_walk *, acct_task_walk_free);

/* A walk for layout, before its source (attached or pinned) is set; NULL
 * when out of memory. */
static struct acct_task_walk *walk_alloc(const struct acct_hierarchies *layout)
{
	struct acct_task_walk *w = calloc(1, sizeof(*w));
	if (!w)
		return NULL;
	w->layout = layout;
	const char *drop = secure_getenv("ACCTD_TEST_TASK_WALK_DROP");
	w->test_drop = drop && *drop == '1';
	return w;
}

int acct_task_walk_new(const struct acct_hierarchies *layout, const char *btf_path, struct acct_task_walk **ret,
		       char *reason, size_t reason_size)
{
	_cleanup_(acct_task_walk_freep) struct acct_task_walk *w = NULL;
	const char *btf = btf_path ? btf_path : "/sys/kernel/btf/vmlinux";

	*ret = NULL;
	if (access(btf, R_OK) < 0) {
		snprintf(reason, reason_size, "no kernel BTF at %s (the kernel needs CONFIG_DEBUG_INFO_BTF)", btf);
		return -ENOENT;
	}
	w = walk_alloc(layout);
	if (!w)
		return -ENOMEM;
	LIBBPF_OPTS(bpf_object_open_opts, oo, .btf_custom_path = btf_path);
	w->skel = acct_task_iter__open_opts(&oo);
	if (!w->skel) {
		int r = -errno;
		snprintf(reason, reason_size, "opening the task iterator: %s", strerror(-r));
		return r;
	}
	int r = acct_task_iter__load(w->skel);
	if (r < 0) {
		snprintf(reason, reason_size, "loading the task iterator: %s%s", strerror(-r),
			 r == -EPERM ? " (needs CAP_BPF and CAP_PERFMON)" : "");
		return r;
	}
	w->link = bpf_program__attach_iter(w->skel->progs.acct_task_iter, NULL);
	if (!w->link) {
		r = -errno;
		snprintf(reason, reason_size, "attaching the task iterator: %s", strerror(-r));
		return r;
	}
	*ret = TAKE_PTR(w);
	return 0;
}

int acct_task_walk_open_pin(const struct acct_hierarchies *layout, const char *path, struct acct_task_walk **ret,
			    char *reason, size_t reason_size)
{
	_cleanup_(acct_task_walk_freep) struct acct_task_walk *w = NULL;

	*ret = NULL;
	/* Opening the pin starts a walk; closed unread, it costs nothing more. */
	_cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		int r = -errno;
		if (r == -ENOENT)
			snprintf(reason, reason_size, "no task iterator pinned at %s", path);
		else
			snprintf(reason, reason_size, "cannot read the task iterator pinned at %s: %s", path, strerror(-r));
		return r;
	}
	w = walk_alloc(layout);
	if (!w)
		return -ENOMEM;
	w->pin_path = strdup(path);
	if (!w->pin_path)
		return -ENOMEM;
	if (asprintf(&w->source, "task iterator pinned at %s", path) < 0) {
		w->source = NULL; /* undefined after a failure */
		return -ENOMEM;
	}
	*ret = TAKE_PTR(w);
	return 0;
}

int acct_task_walk_pin(struct acct_task_walk *w, uint32_t slots, const char *path)
{
	if (!w->link)
		return -EINVAL;
	w->skel->bss->slots = slots; /* the program keeps its bss as long as the pin */
	if (unlink(path) < 0 && errno != ENOENT)
		return -errno;
	int r = bpf_link__pin(w->link, path);
	if (r < 0)
		return r;
	if (chmod(path, 0644) < 0)
		return -errno;
	return 0;
}

const char *acct_task_walk_source(const struct acct_task_walk *w)
{
	return w->source ? w->source : "task iterator, attached";
}

/* The slot of a /proc/<pid>/cgroup line's controller list: "" is the
 * unified hierarchy; -1 for a hierarchy no slot is for. */
static int slot_of(const char *ctrls, size_t len)
{
	static const struct {
		const char *name;
		int slot;
	} v1[] = { { "memory", ACCT_HIER_MEMORY }, { "cpuacct", ACCT_HIER_CPUACCT }, { "cpu", ACCT_HIER_CPU },
		   { "blkio", ACCT_HIER_BLKIO } };
	if (len == 0)
		return ACCT_HIER_UNIFIED;
	/* the first controller of the list that has a slot (cpu,cpuacct is
	 * one hierarchy: either slot's id is the same directory) */
	for (size_t i = 0; i < ELEMENTSOF(v1); i++) {
		size_t n = strlen(v1[i].name);
		for (const char *p = ctrls; p < ctrls + len;) {
			const char *comma = memchr(p, ',', (size_t)(ctrls + len - p));
			size_t k = comma ? (size_t)(comma - p) : (size_t)(ctrls + len - p);
			if (k == n && memcmp(p, v1[i].name, n) == 0)
				return v1[i].slot;
			p += k + 1;
		}
	}
	return -1;
}

/* Fill r's slots of `slots` from a /proc/<pid>/task/<tid>/cgroup text. */
static void cgroups_from_proc(const struct acct_hierarchies *L, char *text, uint32_t slots,
			      struct acct_task_record *r)
{
	for (char *line = text; line && *line;) {
		char *nl = strchr(line, '\n');
		if (nl)
			*nl = 0;
		char *c1 = strchr(line, ':'), *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
		if (c2) {
			int slot = slot_of(c1 + 1, (size_t)(c2 - c1 - 1));
			char dir[4096];
			struct stat sb;
			if (slot >= 0 && (slots & (1u << slot)) && L->mount[slot] &&
			    snprintf(dir, sizeof(dir), "%s%s", L->mount[slot], strcmp(c2 + 1, "/") == 0 ? "" : c2 + 1) <
				    (int)sizeof(dir) &&
			    stat(dir, &sb) == 0)
				r->cgroup[slot] = (uint64_t)sb.st_ino;
		}
		line = nl ? nl + 1 : NULL;
	}
}

/* Append pid 1's threads from /proc where the walk missed them (see the
 * header). Returns the records now in w->buf, or a negative errno. */
static ssize_t add_pid1(struct acct_task_walk *w, size_t n, uint32_t slots)
{
	const struct acct_task_record *r = (const struct acct_task_record *)w->buf;
	for (size_t i = 0; i < n; i++)
		if (r[i].tid == 1)
			return (ssize_t)n;
	_cleanup_(closedirp) DIR *d = opendir("/proc/1/task");
	if (!d)
		return (ssize_t)n; /* no /proc here: nothing to add */
	struct dirent *e;
	while ((e = readdir(d))) {
		char path[64], buf[1024];
		int tid = atoi(e->d_name);
		if (tid <= 0)
			continue;
		struct acct_task_record t = { .tid = (unsigned)tid };
		snprintf(path, sizeof(path), "/proc/1/task/%d/stat", tid);
		_cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			continue; /* exited meanwhile */
		ssize_t k = read(fd, buf, sizeof(buf) - 1);
		char state;
		if (k <= 0)
			continue;
		buf[k] = 0;
		if (cgfs_parse_proc_stat_state(buf, &state) == 0 && (state == 'R' || state == 'D'))
			t.flags |= ACCT_TASK_F_ACTIVE;
		if (getpid() == 1)
			t.flags |= ACCT_TASK_F_SELF;
		snprintf(path, sizeof(path), "/proc/1/task/%d/cgroup", tid);
		_cleanup_free_ char *text = read_file_at(AT_FDCWD, path);
		if (!text)
			continue;
		cgroups_from_proc(w->layout, text, slots, &t);
		if (w->size - n * sizeof(t) < sizeof(t)) {
			char *b = realloc(w->buf, w->size * 2);
			if (!b)
				return -ENOMEM;
			w->buf = b;
			w->size *= 2;
		}
		memcpy(w->buf + n * sizeof(t), &t, sizeof(t));
		n++;
	}
	return (ssize_t)n;
}

ssize_t acct_task_walk_read(struct acct_task_walk *w, uint32_t slots, const struct acct_task_record **ret_records)
{
	_cleanup_close_ int fd = -EBADF;
	if (w->pin_path)
		fd = open(w->pin_path, O_RDONLY | O_CLOEXEC);
	else {
		w->skel->bss->slots = slots;
		fd = bpf_iter_create(bpf_link__fd(w->link));
	}
	if (fd < 0)
		return -errno;
	/* A task iterator resumes across read()s (unlike a cgroup iterator):
	 * read until the end. */
	size_t len = 0;
	for (;;) {
		if (w->size - len < 64 * 1024) {
			size_t size = MAX(w->size * 2, (size_t)512 * 1024);
			char *b = realloc(w->buf, size);
			if (!b)
				return -ENOMEM;
			w->buf = b;
			w->size = size;
		}
		ssize_t r = read(fd, w->buf + len, w->size - len);
		if (r < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (r == 0)
			break;
		len += (size_t)r;
	}
	if (len % sizeof(struct acct_task_record))
		return -EBADMSG;
	size_t nr = len / sizeof(struct acct_task_record);
	if (w->test_drop) {
		/* A kernel that misses threads, for the cross-check's tests:
		 * every odd tid is dropped. */
		struct acct_task_record *r = (struct acct_task_record *)w->buf;
		size_t kept = 0;
		for (size_t i = 0; i < nr; i++)
			if (!(r[i].tid & 1))
				r[kept++] = r[i];
		nr = kept;
	}
	ssize_t n = w->layout ? add_pid1(w, nr, slots) : (ssize_t)nr;
	if (n >= 0)
		*ret_records = (const struct acct_task_record *)w->buf;
	return n;
}
