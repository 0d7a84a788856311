/* bench-reader.c - the reference reader of the sampling benchmark: the
 * kernel's own cost of reading the files acctd reads, the floor for acctd's
 * sampling passes.
 *
 * It walks the same cgroup trees acctd would (the hierarchies of a cgroup root,
 * optionally only the subtree PREFIX), chooses for every cgroup exactly the
 * files acctd's sampler reads for that layout (a copy of pick_files() in
 * lib/core/sampler-files.c; keep the two in step), opens each once (cached descriptors,
 * as acctd keeps them), then times K passes of pread(fd, buf, size, 0) over
 * all of them with CLOCK_PROCESS_CPUTIME_ID (CPU) and CLOCK_MONOTONIC (wall).
 * Nothing is parsed except cgroup.events, whose "populated 0" makes a fast
 * pass skip the cgroup's other fast files, as acctd's fast pass does once it
 * has read a cgroup at least once. One thread, no ledger, no parsing: what is
 * left is the system calls and the kernel's formatting of the files.
 *
 *   --set fast   (default) the fast pass: cgroup.events, memory in use,
 *                CPU time/throttling, PSI; empty cgroups: cgroup.events only
 *   --set slow   a slow pass: every fast file (empty cgroups too) plus
 *                memory.stat, memory.numa_stat, peak, limits, swap
 *   --open slow  with --set fast: also open (and hold) the slow files, as
 *                acctd's first pass (a slow one) does, so that the same files
 *                get cached descriptors when the descriptor limit runs out
 *   --breakdown  also time K passes per file role on its own (us per pread)
 *   --orc        also time one pass of open+pread+close per file (uncached)
 *   --serve      after the warm-up, do one pass per line read on stdin
 *                ("fast" or "slow") and answer each with one JSON line, so
 *                that a driver can interleave them with acctd's passes
 *
 * Files are opened cgroup by cgroup in the order of acctd's first pass
 * (cgroup.events, the slow files, memory, CPU, PSI), and cached up to acctd's
 * own budget: RLIMIT_NOFILE less a reserve of max(limit / 8, 48) (as
 * acct_sampler_new() in lib/core/sampler.c computes it). Every file not cached by
 * then is read with open+pread+close per read, as acctd degrades
 * ("uncached" counts them), and
 * "cached_floor_cpu_s_per_pass" estimates the pass with every descriptor
 * cached from the per-role cost of the cached ones. "read_errors" counts
 * failed reads (there should be none).
 *
 * Output: one JSON object on stdout (--serve: one per line). Exit 0, 1 on
 * errors, 2 on usage.
 *
 * Build: executable('bench-reader', 'bench-reader.c') (libc only). */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

enum hier { H_UNIFIED, H_MEMORY, H_CPUACCT, H_CPU, H_MAX };
static const char *const hier_name[H_MAX] = { "unified", "memory", "cpuacct", "cpu" };

/* File roles, in the order of lib/core/sampler-internal.h. */
enum role {
	F_EVENTS,
	F_MEMORY,
	F_CPU_STAT,
	F_CPU_STAT_V1,
	F_CPUACCT_PERCPU, /* acctd reads cpuacct.usage only when usage_percpu fails */
	F_CPUACCT_STAT,
	F_PSI_CPU,
	F_PSI_MEMORY,
	F_PSI_IO,
	F_MEMORY_STAT, /* slow from here */
	F_NUMA_STAT,
	F_MEMORY_PEAK,
	F_MEMORY_MAX,
	F_MEMORY_HIGH,
	F_SWAP,
	F_SWAP_MAX,
	F_MAX,
};
#define FIRST_SLOW F_MEMORY_STAT

struct layout {
	bool v2;             /* pure v2 */
	char *mount[H_MAX];  /* NULL when absent */
	bool v2_memory, v2_cpu;
};

struct cgroup {
	char *path;     /* "/" or "/a/b" */
	uint32_t hier;  /* bits of enum hier */
	int first, n;   /* its files: files[first .. first+n) */
	int events;     /* index of its cgroup.events in files, or -1 */
};

struct file {
	int fd;          /* -1: uncached (open per read) */
	char *path;      /* absolute */
	const char *name;
	int role;
	int cg;
	bool populated;  /* for cgroup.events: the last reading */
	bool slow;       /* a slow file: read on slow passes only */
};

static struct layout L;
static struct cgroup *cgs;
static size_t nr_cgs, cap_cgs;
static struct file *files;
static size_t nr_files, cap_files;
static char *buf;
static size_t buf_size = 16384; /* acctd's worker buffer */
static unsigned long long read_errors;

static void *xrealloc(void *p, size_t n)
{
	p = realloc(p, n);
	if (!p) {
		fprintf(stderr, "bench-reader: out of memory\n");
		exit(1);
	}
	return p;
}

static char *xstrdup(const char *s)
{
	char *p = strdup(s);
	if (!p) {
		fprintf(stderr, "bench-reader: out of memory\n");
		exit(1);
	}
	return p;
}

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* CPU time: the total from CLOCK_PROCESS_CPUTIME_ID (exact: getrusage() lags
 * by up to a tick on tick-based accounting), split into user and system in
 * getrusage()'s proportions. */
static void cpu_s(double *user, double *sys)
{
	struct rusage ru;
	struct timespec ts;
	getrusage(RUSAGE_SELF, &ru);
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	double u = (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6;
	double s = (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6;
	double total = (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
	*user = u + s > 0 ? total * u / (u + s) : total;
	*sys = total - *user;
}

static bool is_dir(const char *p)
{
	struct stat st;
	return stat(p, &st) == 0 && S_ISDIR(st.st_mode);
}

static bool is_file(const char *p)
{
	struct stat st;
	return stat(p, &st) == 0 && S_ISREG(st.st_mode);
}

static char *join(const char *a, const char *b)
{
	char *p;
	if (asprintf(&p, "%s/%s", a, b) < 0) {
		fprintf(stderr, "bench-reader: out of memory\n");
		exit(1);
	}
	return p;
}

static void read_v2_controllers(const char *dir)
{
	char *p = join(dir, "cgroup.controllers");
	char b[4096];
	int fd = open(p, O_RDONLY | O_CLOEXEC);
	free(p);
	if (fd < 0)
		return;
	ssize_t n = read(fd, b, sizeof(b) - 1);
	close(fd);
	if (n <= 0)
		return;
	b[n] = 0;
	char *save = NULL;
	for (char *t = strtok_r(b, " \t\n", &save); t; t = strtok_r(NULL, " \t\n", &save)) {
		if (strcmp(t, "memory") == 0)
			L.v2_memory = true;
		else if (strcmp(t, "cpu") == 0)
			L.v2_cpu = true;
	}
}

/* The layout as lib/cgroup/cgroup-layout.c infers it from a directory (which on
 * this kind of host gives the same mounts as its libcgroup detection). */
static int detect_layout(const char *root)
{
	static const char *const names[H_MAX][4] = {
		[H_MEMORY] = { "memory", NULL },
		[H_CPUACCT] = { "cpuacct", "cpu,cpuacct", "cpuacct,cpu", NULL },
		[H_CPU] = { "cpu", "cpu,cpuacct", "cpuacct,cpu", NULL },
	};
	char *p = join(root, "cgroup.controllers");
	bool v2 = is_file(p);
	free(p);
	if (v2) {
		L.v2 = true;
		L.mount[H_UNIFIED] = xstrdup(root);
		read_v2_controllers(root);
		return 0;
	}
	for (int h = H_MEMORY; h < H_MAX; h++)
		for (int i = 0; names[h][i]; i++) {
			p = join(root, names[h][i]);
			if (is_dir(p)) {
				L.mount[h] = p;
				break;
			}
			free(p);
		}
	p = join(root, "unified");
	char *c = join(p, "cgroup.controllers");
	if (is_file(c)) {
		L.mount[H_UNIFIED] = p;
		read_v2_controllers(p);
	} else
		free(p);
	free(c);
	for (int h = 0; h < H_MAX; h++)
		if (L.mount[h])
			return 0;
	return -ENOENT;
}

/* ---- the tree ---------------------------------------------------------- */

struct entry {
	char *path;
	uint32_t bits;
};
static struct entry *ents;
static size_t nr_ents, cap_ents;

static void add_entry(const char *rel, uint32_t bits)
{
	if (nr_ents == cap_ents) {
		cap_ents = cap_ents ? cap_ents * 2 : 4096;
		ents = xrealloc(ents, cap_ents * sizeof(*ents));
	}
	ents[nr_ents].path = xstrdup(rel);
	ents[nr_ents].bits = bits;
	nr_ents++;
}

static void walk(const char *mount, const char *rel, uint32_t bits)
{
	char *dir;
	if (strcmp(rel, "/") == 0)
		dir = xstrdup(mount);
	else if (asprintf(&dir, "%s%s", mount, rel) < 0)
		exit(1);
	DIR *d = opendir(dir);
	free(dir);
	if (!d)
		return; /* vanished, or the prefix is not in this tree */
	add_entry(rel, bits);
	struct dirent *de;
	while ((de = readdir(d))) {
		if (de->d_name[0] == '.' && (!de->d_name[1] || (de->d_name[1] == '.' && !de->d_name[2])))
			continue;
		if (de->d_type != DT_DIR)
			continue;
		char *child;
		if (asprintf(&child, "%s/%s", strcmp(rel, "/") == 0 ? "" : rel, de->d_name) < 0)
			exit(1);
		walk(mount, child, bits);
		free(child);
	}
	closedir(d);
}

static int cmp_entry(const void *a, const void *b)
{
	return strcmp(((const struct entry *)a)->path, ((const struct entry *)b)->path);
}

static void build_cgroups(const char *prefix)
{
	/* co-mounted hierarchies (cpu,cpuacct) are one tree with several bits */
	struct { dev_t dev; ino_t ino; uint32_t bits; const char *mount; } trees[H_MAX];
	int nt = 0;
	for (int h = 0; h < H_MAX; h++) {
		struct stat st;
		if (!L.mount[h] || stat(L.mount[h], &st) < 0)
			continue;
		int t;
		for (t = 0; t < nt; t++)
			if (trees[t].dev == st.st_dev && trees[t].ino == st.st_ino)
				break;
		if (t == nt) {
			trees[t].dev = st.st_dev;
			trees[t].ino = st.st_ino;
			trees[t].bits = 0;
			trees[t].mount = L.mount[h];
			nt++;
		}
		trees[t].bits |= 1u << h;
	}
	for (int t = 0; t < nt; t++)
		walk(trees[t].mount, prefix ? prefix : "/", trees[t].bits);
	qsort(ents, nr_ents, sizeof(*ents), cmp_entry);
	for (size_t i = 0; i < nr_ents; i++) {
		if (nr_cgs && strcmp(cgs[nr_cgs - 1].path, ents[i].path) == 0) {
			cgs[nr_cgs - 1].hier |= ents[i].bits;
			free(ents[i].path);
			continue;
		}
		if (nr_cgs == cap_cgs) {
			cap_cgs = cap_cgs ? cap_cgs * 2 : 4096;
			cgs = xrealloc(cgs, cap_cgs * sizeof(*cgs));
		}
		cgs[nr_cgs++] = (struct cgroup){ .path = ents[i].path, .hier = ents[i].bits, .events = -1 };
	}
	free(ents);
}

/* ---- which files: pick_files() of lib/core/sampler-files.c ---------------- */

struct spec {
	const char *name;
	int tree;
};

static void pick_files(const struct cgroup *cg, struct spec spec[F_MAX])
{
	uint32_t h = cg->hier;
	bool root = strcmp(cg->path, "/") == 0;
	bool uni = h & (1u << H_UNIFIED);
	bool mem1 = h & (1u << H_MEMORY);
	bool acct1 = h & (1u << H_CPUACCT);
	bool cpu1 = h & (1u << H_CPU);

	for (int f = 0; f < F_MAX; f++)
		spec[f] = (struct spec){ NULL, 0 };
#define SET(role, n, t) (spec[role] = (struct spec){ (n), (t) })
	if (uni) {
		if (!root)
			SET(F_EVENTS, "cgroup.events", H_UNIFIED);
		SET(F_PSI_CPU, "cpu.pressure", H_UNIFIED);
		SET(F_PSI_MEMORY, "memory.pressure", H_UNIFIED);
		SET(F_PSI_IO, "io.pressure", H_UNIFIED);
		if (!acct1)
			SET(F_CPU_STAT, "cpu.stat", H_UNIFIED);
		if (L.v2_memory) {
			if (!root) {
				SET(F_MEMORY, "memory.current", H_UNIFIED);
				SET(F_MEMORY_PEAK, "memory.peak", H_UNIFIED);
				SET(F_MEMORY_MAX, "memory.max", H_UNIFIED);
				SET(F_MEMORY_HIGH, "memory.high", H_UNIFIED);
				SET(F_SWAP, "memory.swap.current", H_UNIFIED);
				SET(F_SWAP_MAX, "memory.swap.max", H_UNIFIED);
			}
			SET(F_MEMORY_STAT, "memory.stat", H_UNIFIED);
			SET(F_NUMA_STAT, "memory.numa_stat", H_UNIFIED);
		}
	}
	if (mem1 && !spec[F_MEMORY_STAT].name) {
		SET(F_MEMORY, "memory.usage_in_bytes", H_MEMORY);
		SET(F_MEMORY_STAT, "memory.stat", H_MEMORY);
		SET(F_NUMA_STAT, "memory.numa_stat", H_MEMORY);
		SET(F_MEMORY_PEAK, "memory.max_usage_in_bytes", H_MEMORY);
		if (!root)
			SET(F_MEMORY_MAX, "memory.limit_in_bytes", H_MEMORY);
		SET(F_SWAP, "memory.memsw.usage_in_bytes", H_MEMORY);
	}
	if (acct1) {
		SET(F_CPUACCT_PERCPU, "cpuacct.usage_percpu", H_CPUACCT);
		SET(F_CPUACCT_STAT, "cpuacct.stat", H_CPUACCT);
	}
	if (cpu1 && !(uni && L.v2_cpu))
		SET(F_CPU_STAT_V1, "cpu.stat", H_CPU);
#undef SET
}

static bool degraded;
static unsigned long long uncached, absent, cached;
static unsigned long long fd_budget; /* descriptors the cache may hold, as acctd's */

/* The order in which acctd's first pass (FAST|SLOW) opens a cgroup's files:
 * sample_events(), sample_slow(), sample_memory(), sample_cpu(), sample_psi(). */
static const int open_order[] = {
	F_EVENTS,     F_MEMORY_STAT, F_NUMA_STAT,      F_MEMORY_PEAK,  F_MEMORY_MAX, F_MEMORY_HIGH,
	F_SWAP,       F_SWAP_MAX,    F_MEMORY,         F_CPU_STAT,     F_CPU_STAT_V1, F_CPUACCT_PERCPU,
	F_CPUACCT_STAT, F_PSI_CPU,   F_PSI_MEMORY,     F_PSI_IO,
};

static void open_files(bool open_slow)
{
	for (size_t c = 0; c < nr_cgs; c++) {
		struct cgroup *cg = &cgs[c];
		struct spec spec[F_MAX];
		pick_files(cg, spec);
		cg->first = (int)nr_files;
		for (size_t o = 0; o < sizeof(open_order) / sizeof(open_order[0]); o++) {
			int f = open_order[o];
			if (!spec[f].name || (!open_slow && f >= FIRST_SLOW))
				continue;
			char *p;
			if (asprintf(&p, "%s%s/%s", L.mount[spec[f].tree], strcmp(cg->path, "/") == 0 ? "" : cg->path,
				     spec[f].name) < 0)
				exit(1);
			int fd = -1;
			if (!degraded && cached >= fd_budget)
				degraded = true;
			if (!degraded) {
				fd = open(p, O_RDONLY | O_CLOEXEC | O_NOCTTY);
				if (fd < 0 && errno == ENOENT) {
					absent++; /* acctd remembers it as absent and never reads it */
					free(p);
					continue;
				}
				if (fd < 0 && (errno == EMFILE || errno == ENFILE))
					degraded = true;
				else if (fd < 0) {
					fprintf(stderr, "bench-reader: %s: %m\n", p);
					free(p);
					continue;
				}
			} else if (access(p, F_OK) < 0) {
				absent++;
				free(p);
				continue;
			}
			if (fd < 0)
				uncached++;
			else
				cached++;
			if (nr_files == cap_files) {
				cap_files = cap_files ? cap_files * 2 : 16384;
				files = xrealloc(files, cap_files * sizeof(*files));
			}
			if (f == F_EVENTS)
				cg->events = (int)nr_files;
			files[nr_files++] = (struct file){ .fd = fd, .path = p, .name = spec[f].name, .role = f,
							   .cg = (int)c, .populated = true, .slow = f >= FIRST_SLOW };
		}
		cg->n = (int)nr_files - cg->first;
	}
}

/* One read of a file as acctd does it: pread at 0 into the worker buffer. */
static ssize_t read_one(struct file *f)
{
	int fd = f->fd;
	if (fd < 0) {
		fd = open(f->path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
		if (fd < 0) {
			read_errors++;
			return -1;
		}
	}
	ssize_t n = pread(fd, buf, buf_size - 1, 0);
	if (f->fd < 0)
		close(fd);
	if (n < 0) {
		read_errors++;
		return -1;
	}
	buf[n] = 0;
	return n;
}

static unsigned long long role_reads[F_MAX]; /* reads per role in the timed passes */

/* One pass. fast: the fast files only, and cgroup.events first with
 * populated 0 skipping the cgroup's other files. Returns the files read. */
static unsigned long long pass(bool fast, bool count)
{
	unsigned long long nr = 0;
	for (size_t c = 0; c < nr_cgs; c++) {
		struct cgroup *cg = &cgs[c];
		bool populated = true;
		if (cg->events >= 0) {
			struct file *ev = &files[cg->events];
			if (read_one(ev) > 0) {
				const char *s = strstr(buf, "populated ");
				ev->populated = !s || s[10] != '0';
			}
			nr++;
			if (count)
				role_reads[F_EVENTS]++;
			populated = ev->populated;
		}
		if (fast && !populated)
			continue;
		for (int i = cg->first; i < cg->first + cg->n; i++) {
			if (i == cg->events || (fast && files[i].slow))
				continue;
			read_one(&files[i]);
			nr++;
			if (count)
				role_reads[files[i].role]++;
		}
	}
	return nr;
}

static void json_str(const char *s)
{
	putchar('"');
	for (; *s; s++) {
		if (*s == '"' || *s == '\\')
			putchar('\\');
		putchar(*s);
	}
	putchar('"');
}

static void usage(void)
{
	fprintf(stderr, "Usage: bench-reader [--root DIR] [--prefix /PATH] [--passes K] [--set fast|slow]\n"
			"                    [--breakdown] [--orc]\n"
			"  --root DIR     cgroup root (default /sys/fs/cgroup), layout inferred from it\n"
			"  --prefix PATH  only this subtree (relative path, e.g. /acctd-bench), itself included\n"
			"  --passes K     timed passes (default 20), after one untimed warm-up pass\n"
			"  --set SET      fast (default) or slow, see the head of bench-reader.c\n"
			"  --open slow    with --set fast: hold the slow files open too, as acctd does\n"
			"  --breakdown    also time each file name on its own\n"
			"  --orc          also time open+pread+close per file, one pass\n"
			"  --serve        after the warm-up, one pass per line on stdin (fast|slow), JSON out\n");
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "root", required_argument, NULL, 'r' },     { "prefix", required_argument, NULL, 'p' },
		{ "passes", required_argument, NULL, 'k' },   { "set", required_argument, NULL, 's' },
		{ "breakdown", no_argument, NULL, 'b' },      { "orc", no_argument, NULL, 'o' },
		{ "serve", no_argument, NULL, 'S' },
		{ "open", required_argument, NULL, 'O' },
		{ "help", no_argument, NULL, 'h' },           {}
	};
	const char *root = "/sys/fs/cgroup", *prefix = NULL;
	long passes = 20;
	bool slow = false, open_slow = false, breakdown = false, orc = false, serve = false;
	int c;

	while ((c = getopt_long(argc, argv, "h", opts, NULL)) >= 0) {
		switch (c) {
		case 'r':
			root = optarg;
			break;
		case 'p':
			prefix = optarg;
			break;
		case 'k':
			passes = strtol(optarg, NULL, 10);
			break;
		case 's':
			if (strcmp(optarg, "slow") == 0)
				slow = true;
			else if (strcmp(optarg, "fast") != 0) {
				usage();
				return 2;
			}
			break;
		case 'O':
			if (strcmp(optarg, "slow") == 0)
				open_slow = true;
			else if (strcmp(optarg, "fast") != 0) {
				usage();
				return 2;
			}
			break;
		case 'S':
			serve = true;
			break;
		case 'b':
			breakdown = true;
			break;
		case 'o':
			orc = true;
			break;
		case 'h':
			usage();
			return 0;
		default:
			usage();
			return 2;
		}
	}
	if (optind < argc || passes < 1 || (prefix && (prefix[0] != '/' || strcmp(prefix, "/") == 0))) {
		usage();
		return 2;
	}

	struct rlimit rl;
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		(void)setrlimit(RLIMIT_NOFILE, &rl);
	}
	getrlimit(RLIMIT_NOFILE, &rl);
	{
		unsigned long long lim = rl.rlim_cur == RLIM_INFINITY ? 1024 : (unsigned long long)rl.rlim_cur;
		unsigned long long reserve = lim / 8 > 48 ? lim / 8 : 48;
		fd_budget = lim > reserve ? lim - reserve : 0;
	}

	if (detect_layout(root) < 0) {
		fprintf(stderr, "bench-reader: no cgroup hierarchy under %s\n", root);
		return 1;
	}
	buf = malloc(buf_size);
	if (!buf)
		return 1;
	double t0 = now_s(), u0, s0, u1, s1;
	build_cgroups(prefix);
	double walk_s = now_s() - t0;
	if (nr_cgs == 0) {
		fprintf(stderr, "bench-reader: no cgroups under %s%s\n", root, prefix ? prefix : "");
		return 1;
	}
	cpu_s(&u0, &s0);
	t0 = now_s();
	open_files(slow || open_slow);
	double open_wall = now_s() - t0;
	cpu_s(&u1, &s1);
	double open_cpu = (u1 - u0) + (s1 - s0);

	/* Warm-up: the first read of a kernfs file allocates its seq_file buffer;
	 * it also reads every cgroup.events, like acctd's first (full) pass. */
	pass(false, false);

	if (serve) {
		/* One pass per request line ("fast" or "slow"), one JSON line back;
		 * the driver interleaves these with acctd's passes so that both
		 * run under the same conditions. */
		char line[64];
		printf("{\"ready\":true,\"cgroups\":%zu,\"files\":%zu,\"uncached\":%llu}\n", nr_cgs, nr_files,
		       uncached);
		fflush(stdout);
		while (fgets(line, sizeof(line), stdin)) {
			bool want_fast = strncmp(line, "fast", 4) == 0;
			if (!want_fast && strncmp(line, "slow", 4) != 0)
				continue;
			if (!want_fast && !(slow || open_slow)) {
				printf("{\"error\":\"start with --open slow for slow passes\"}\n");
				fflush(stdout);
				continue;
			}
			cpu_s(&u0, &s0);
			t0 = now_s();
			unsigned long long n = pass(want_fast, false);
			double w = now_s() - t0;
			cpu_s(&u1, &s1);
			printf("{\"set\":\"%s\",\"files\":%llu,\"cpu_s\":%.6f,\"wall_s\":%.6f}\n",
			       want_fast ? "fast" : "slow", n, (u1 - u0) + (s1 - s0), w);
			fflush(stdout);
		}
		return 0;
	}

	cpu_s(&u0, &s0);
	t0 = now_s();
	unsigned long long nr = 0;
	for (long k = 0; k < passes; k++)
		nr += pass(!slow, true);
	double wall = now_s() - t0;
	cpu_s(&u1, &s1);
	double user = (u1 - u0) / (double)passes, sys = (s1 - s0) / (double)passes;
	double files_per_pass = (double)nr / (double)passes;

	printf("{\"root\":");
	json_str(root);
	printf(",\"prefix\":");
	if (prefix)
		json_str(prefix);
	else
		printf("null");
	printf(",\"mode\":\"%s\",\"v2_memory\":%s,\"v2_cpu\":%s", L.v2 ? "v2" : "hybrid", L.v2_memory ? "true" : "false",
	       L.v2_cpu ? "true" : "false");
	printf(",\"set\":\"%s\",\"cgroups\":%zu,\"files\":%zu,\"absent\":%llu,\"uncached\":%llu,\"nofile_limit\":%llu",
	       slow ? "slow" : "fast", nr_cgs, nr_files, absent, uncached, (unsigned long long)rl.rlim_cur);
	printf(",\"walk_s\":%.6f,\"open_wall_s\":%.6f,\"open_cpu_s\":%.6f", walk_s, open_wall, open_cpu);
	printf(",\"passes\":%ld,\"files_per_pass\":%.1f,\"cpu_s_per_pass\":%.6f,\"user_s_per_pass\":%.6f"
	       ",\"sys_s_per_pass\":%.6f,\"wall_s_per_pass\":%.6f,\"us_per_file\":%.3f",
	       passes, files_per_pass, user + sys, user, sys, wall / (double)passes,
	       files_per_pass > 0 ? (user + sys) * 1e6 / files_per_pass : 0.0);

	/* Each role on its own, cached descriptors only: K passes over the
	 * cached files of that role. The cached floor of a pass is the reads per
	 * role times these costs. Roles without a cached file fall back to
	 * their open+pread+close cost. */
	double floor_s = 0;
	bool floor_exact = true;
	if (breakdown)
		printf(",\"breakdown\":{");
	int nd = 0;
	for (int role = 0; role < F_MAX; role++) {
		if (!role_reads[role])
			continue;
		unsigned long long n = 0, nc = 0, nu = 0;
		size_t first = nr_files;
		for (size_t j = 0; j < nr_files; j++)
			if (files[j].role == role) {
				if (first == nr_files)
					first = j;
				if (files[j].fd >= 0)
					nc++;
				else
					nu++;
			}
		bool use_cached = nc > 0;
		cpu_s(&u0, &s0);
		for (long k = 0; k < passes; k++)
			for (size_t j = first; j < nr_files; j++)
				if (files[j].role == role && (files[j].fd >= 0) == use_cached) {
					read_one(&files[j]);
					n++;
				}
		cpu_s(&u1, &s1);
		double us = n ? ((u1 - u0) + (s1 - s0)) * 1e6 / (double)n : 0.0;
		if (!use_cached)
			floor_exact = false;
		floor_s += (double)role_reads[role] / (double)passes * us / 1e6;
		if (breakdown) {
			int tree = -1;
			for (int h = 0; h < H_MAX; h++)
				if (L.mount[h] && strncmp(files[first].path, L.mount[h], strlen(L.mount[h])) == 0 &&
				    (tree < 0 || strlen(L.mount[h]) > strlen(L.mount[tree])))
					tree = h;
			printf("%s\"%s/%s\":{\"files\":%llu,\"cached\":%llu,\"reads_per_pass\":%.1f,\"us_per_read\":%.3f"
			       ",\"timed\":\"%s\",\"bytes\":%zd}",
			       nd++ ? "," : "", tree >= 0 ? hier_name[tree] : "?", files[first].name, nc + nu, nc,
			       (double)role_reads[role] / (double)passes, us, use_cached ? "cached" : "open+pread+close",
			       read_one(&files[first]));
		}
	}
	if (breakdown)
		printf("}");
	printf(",\"cached_floor_cpu_s_per_pass\":%.6f,\"cached_floor_exact\":%s", floor_s,
	       floor_exact ? "true" : "false");
	if (orc) {
		/* open+pread+close of every file, no cached descriptor */
		cpu_s(&u0, &s0);
		t0 = now_s();
		unsigned long long n = 0;
		for (size_t i = 0; i < nr_files; i++) {
			if (!slow && files[i].slow)
				continue;
			int fd = open(files[i].path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
			if (fd < 0)
				continue;
			if (pread(fd, buf, buf_size - 1, 0) >= 0)
				n++;
			close(fd);
		}
		double w = now_s() - t0;
		cpu_s(&u1, &s1);
		printf(",\"orc_files\":%llu,\"orc_us_per_file\":%.3f,\"orc_wall_us_per_file\":%.3f", n,
		       n ? ((u1 - u0) + (s1 - s0)) * 1e6 / (double)n : 0.0, n ? w * 1e6 / (double)n : 0.0);
	}
	printf(",\"read_errors\":%llu}\n", read_errors);
	return 0;
}
