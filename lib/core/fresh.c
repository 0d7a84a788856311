/* fresh.c - one cgroup's memory and CPU time, read now (fresh.h). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "basic/read-file.h"
#include "basic/util.h"
#include "bpf/bpf-bounds.h"
#include "cgroup/cgfs-parse.h"
#include "cgroup/memcg-bounds.h"
#include "fresh.h"
#include "ledger.h"
#include "sampler.h"

const enum acct_quantity acct_fresh_quantities[ACCT_FRESH_MAX] = {
	ACCT_Q_MEMORY,
	ACCT_Q_CPU_USAGE,
	ACCT_Q_CPU_USER,
	ACCT_Q_CPU_SYSTEM,
};

#define FILE_MAX 4096 /* cpu.stat is the longest file read here, well below */

static const char root_reason[] =
	"the root's memory is defined from its children's (acctd(8)), which one read cannot give; "
	"served from the last pass";

static struct acct_memcg_batching detected;
static pthread_once_t detect_once = PTHREAD_ONCE_INIT;
static void detect(void)
{
	acct_bpf_memcg_batching_detect(&detected, 0, NULL);
	if (detected.page_size <= 0)
		detected.page_size = sysconf(_SC_PAGESIZE);
}

/* The cgroup's directory in hierarchy h. */
static int cg_dir(const struct acct_hierarchies *L, enum acct_hierarchy h, const char *path, char *buf,
		  size_t size)
{
	if (!L->mount[h])
		return -ENOENT;
	int n = snprintf(buf, size, "%s%s", L->mount[h], strcmp(path, "/") == 0 ? "" : path);
	return n < 0 || (size_t)n >= size ? -ENAMETOOLONG : 0;
}

/* Open `name` of the cgroup's directory `dir`. Returns the descriptor,
 * -ENODATA when the file is absent but the directory is there (the cgroup has
 * no such file), -ENOENT when the directory is gone, or another negative
 * errno. */
static int open_cg_file(const char *dir, const char *name)
{
	char path[PATH_MAX];
	int n = snprintf(path, sizeof(path), "%s/%s", dir, name);
	if (n < 0 || (size_t)n >= sizeof(path))
		return -ENAMETOOLONG;
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	if (fd < 0) {
		int r = -errno;
		struct stat st;
		if ((r == -ENOENT || r == -ENODEV) && stat(dir, &st) == 0)
			return -ENODATA;
		return r == -ENODEV ? -ENOENT : r;
	}
	return fd;
}

/* Read `name` of the cgroup's directory `dir` into buf, NUL-terminated.
 * Returns 0, -ENODATA or -ENOENT as open_cg_file(), -EFBIG when the file does
 * not fit, or another negative errno. */
static int read_cg_file(const char *dir, const char *name, char *buf, size_t size)
{
	_cleanup_close_ int fd = open_cg_file(dir, name);
	if (fd < 0)
		return fd;
	ssize_t r = read_fd_whole(fd, buf, size);
	if (r == -ENODEV) /* the cgroup went away between open and read */
		return -ENOENT;
	return r < 0 ? (int)r : 0;
}

/* Whether the directory at `dir` is now the cgroup of inode `ino` (0: the
 * caller does not say; taken as yes). Called after a read of its files, it
 * proves that they were that cgroup's and not those of another made since
 * under the same path (sampler-files.c, sampler_open_file(), says why):
 * 0, or -ENOENT (that cgroup is gone). */
static int still_the_cgroup(const char *dir, uint64_t ino)
{
	struct stat st;
	if (!ino)
		return 0;
	return stat(dir, &st) == 0 && (uint64_t)st.st_ino == ino ? 0 : -ENOENT;
}

static void put(struct acct_fresh_reading *ret, enum acct_quantity q, uint64_t v, uint64_t bound)
{
	ret->value[q] = (int64_t)MIN(v, (uint64_t)INT64_MAX);
	ret->bound[q] = bound;
	ret->have |= UINT64_C(1) << q;
}

/* Descendants of the cgroup at dir, counted up to `limit` (the bound needs no
 * more: a CPU's stock caches at most stock_slots memcgs); `limit` when they
 * cannot be counted. */
static int count_descendants(const char *dir, int limit)
{
	int n = 0;
	_cleanup_closedir_ DIR *d = opendir(dir);
	if (!d)
		return limit;
	for (struct dirent *de; n < limit && (de = readdir(d));) {
		if (de->d_type != DT_DIR || de->d_name[0] == '.')
			continue;
		char sub[PATH_MAX];
		if (snprintf(sub, sizeof(sub), "%s/%s", dir, de->d_name) >= (int)sizeof(sub))
			return limit;
		n += 1 + count_descendants(sub, limit - n - 1);
	}
	return MIN(n, limit);
}

static int read_memory(const struct acct_fresh_options *o, const struct acct_memcg_batching *b, const char *path,
		       uint32_t hierarchies, const uint64_t *inodes, struct acct_fresh_reading *ret)
{
	const struct acct_hierarchies *L = o->layout;
	enum acct_hierarchy h;
	const char *file;
	char dir[PATH_MAX];
	int r;

	/* As pick_files(): the unified tree's memory where v2 has the
	 * controller, else the v1 memory hierarchy. */
	if (L->v2_memory && (hierarchies & (1u << ACCT_HIER_UNIFIED))) {
		h = ACCT_HIER_UNIFIED;
		file = "memory.current";
	} else if (hierarchies & (1u << ACCT_HIER_MEMORY)) {
		h = ACCT_HIER_MEMORY;
		file = "memory.usage_in_bytes";
	} else
		return 0;
	r = cg_dir(L, h, path, dir, sizeof(dir));
	if (r < 0)
		return r;
	uint64_t ino = inodes ? inodes[h] : 0;

	if (o->collector && acct_bpf_collector_serves(o->collector, h)) {
		struct acct_bpf_record rec;
		r = acct_bpf_collector_read_one(o->collector, h, dir, &rec);
		if (r == -ENOENT || (r == 0 && ino && rec.id != ino))
			return -ENOENT;
		/* -EPERM (pinned iterators only), or a record without memcg
		 * values: the file gives the same counter. */
		if (r == 0 && (rec.flags & ACCT_BPF_F_MEMCG)) {
			put(ret, ACCT_Q_MEMORY, rec.usage * (uint64_t)b->page_size,
			    acct_memcg_memory_bound(b, rec.nr_descendants));
			ret->memory_source = "bpf";
			return 0;
		}
	}
	_cleanup_close_ int fd = open_cg_file(dir, file);
	if (fd == -ENODATA)
		return 0;
	if (fd < 0)
		return fd;
	int64_t v;
	r = acct_memory_read_fd(fd, &v);
	if (r >= 0)
		r = still_the_cgroup(dir, ino);
	if (r < 0)
		return r;
	/* The stock slots the file's counter may hold: as many as the subtree
	 * has memcgs, up to every slot (the sampler's file path, which reads
	 * thousands, assumes every slot instead of listing directories). */
	put(ret, ACCT_Q_MEMORY, (uint64_t)v, acct_memcg_memory_bound(b, count_descendants(dir, (int)b->stock_slots)));
	ret->memory_source = file;
	return 0;
}

static int read_cpu(const struct acct_fresh_options *o, const char *path, uint32_t hierarchies,
		    const uint64_t *inodes, struct acct_fresh_reading *ret)
{
	const struct acct_hierarchies *L = o->layout;
	char dir[PATH_MAX], buf[FILE_MAX];
	int r;

	if (hierarchies & (1u << ACCT_HIER_CPUACCT)) {
		/* As pick_files(): a cgroup in v1 cpuacct reads it, not the
		 * unified cpu.stat. */
		r = cg_dir(L, ACCT_HIER_CPUACCT, path, dir, sizeof(dir));
		if (r < 0)
			return r;
		uint64_t ns, user, sys;
		r = read_cg_file(dir, "cpuacct.usage", buf, sizeof(buf));
		if (r < 0 && r != -ENODATA)
			return r;
		if (r == 0) {
			if (cgfs_parse_u64(buf, &ns) < 0)
				return -EBADMSG;
			put(ret, ACCT_Q_CPU_USAGE, ns / 1000, 0);
		}
		r = read_cg_file(dir, "cpuacct.stat", buf, sizeof(buf));
		if (r < 0 && r != -ENODATA)
			return r;
		if (r == 0) {
			long hz = o->user_hz > 0 ? o->user_hz : sysconf(_SC_CLK_TCK);
			if (hz <= 0)
				return -EINVAL;
			if (cgfs_parse_cpuacct_stat(buf, (unsigned)hz, &user, &sys) < 0)
				return -EBADMSG;
			/* ticks, rounded down by the kernel: one tick short at most */
			uint64_t tick = (uint64_t)(1000000 / hz);
			put(ret, ACCT_Q_CPU_USER, user, tick);
			put(ret, ACCT_Q_CPU_SYSTEM, sys, tick);
		}
		return still_the_cgroup(dir, inodes ? inodes[ACCT_HIER_CPUACCT] : 0);
	}
	if (!(hierarchies & (1u << ACCT_HIER_UNIFIED)))
		return 0;
	r = cg_dir(L, ACCT_HIER_UNIFIED, path, dir, sizeof(dir));
	if (r < 0)
		return r;
	r = read_cg_file(dir, "cpu.stat", buf, sizeof(buf));
	if (r == -ENODATA)
		return 0;
	if (r >= 0)
		r = still_the_cgroup(dir, inodes ? inodes[ACCT_HIER_UNIFIED] : 0);
	if (r < 0)
		return r;
	struct cgfs_cpu_stat cs;
	if (cgfs_parse_cpu_stat(buf, &cs) < 0)
		return -EBADMSG;
	if (cs.has_usage) {
		put(ret, ACCT_Q_CPU_USAGE, cs.usage_usec, 0);
		put(ret, ACCT_Q_CPU_USER, cs.user_usec, 0);
		put(ret, ACCT_Q_CPU_SYSTEM, cs.system_usec, 0);
	}
	return 0;
}

int acct_fresh_read(const struct acct_fresh_options *opts, const char *path, uint32_t hierarchies,
		    const uint64_t *inodes, struct acct_fresh_reading *ret)
{
	if (!opts || !opts->layout || !path || path[0] != '/' || !ret)
		return -EINVAL;
	*ret = (struct acct_fresh_reading){ 0 };
	if (strcmp(path, "/") == 0) {
		ret->not_read = root_reason;
		ret->read_us = acct_now_us();
		return 0;
	}
	const struct acct_memcg_batching *b = opts->batching;
	if (!b && opts->collector)
		b = acct_bpf_collector_batching(opts->collector);
	if (!b) {
		pthread_once(&detect_once, detect);
		b = &detected;
	}
	int r = read_memory(opts, b, path, hierarchies, inodes, ret);
	if (r >= 0)
		r = read_cpu(opts, path, hierarchies, inodes, ret);
	if (r < 0) {
		ret->have = 0;
		return r;
	}
	ret->read_us = acct_now_us();
	return 0;
}
