/* bpf-collector.c - load, attach or open the cgroup iterator and read its
 * records (bpf-collector.h).
 *
 * One program (cgroup-iter.bpf.c, as a skeleton) serves every hierarchy: each
 * gets its own iterator link, attached to the hierarchy's root directory with
 * pre-order walking, and where the owner says which subtrees hold every
 * cgroup it needs (acct_bpf_collector_set_roots()), a link per subtree
 * instead. A walk is a read() loop over a new iterator instance
 * (bpf_iter_create() on an attached link, open() on a pinned one).
 *
 * It is long (a little over 1,000 lines) because loading (two programs, CO-RE
 * checks, reasons an operator can act on), attaching, the walks in sessions
 * and their records, the one-cgroup read and the census belong to one
 * object whose state (links, the program's bss, the session lock) they
 * share. */
#include "bpf-collector.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>

#include "basic/log.h"
#include "basic/read-file.h"
#include "basic/strv.h"
#include "basic/util.h"
#include "bpf-bounds.h"
#include "cgroup-iter.skel.h"
#include "cgroup/cgfs-parse.h"

#define REASON_MAX 200

struct hier {
	bool mounted;
	bool served;
	struct bpf_link *link;   /* attached by us */
	char *pin;               /* or read from this pinned file */
	char reason[REASON_MAX];
	unsigned node_items;     /* per-node items the program copies */
	unsigned part_n;         /* sessions a walk takes (see walk()) */
	bool overflowed;         /* atomic: the last walk of a pinned iterator did not fit one
				  * session (written by the walking thread, read by any) */
	char overflow_reason[REASON_MAX]; /* composed once, when the pin is opened */
	uint32_t node_units[ACCT_BPF_NODE_ITEMS];
	/* The walk's roots (acct_bpf_collector_set_roots()): what the owner
	 * wants, under roots_lock; the links made for it, by the walking
	 * thread (apply_roots()). */
	char **roots_want;            /* paths below the mount; NULL with roots_whole */
	bool roots_whole;             /* the whole hierarchy (the default) */
	uint64_t roots_gen, roots_applied;
	struct bpf_link **root_links; /* NULL: h->link walks the whole hierarchy */
	size_t n_root_links;
	int roots_walked;             /* atomic: n_root_links, -1 for the whole hierarchy (any thread) */
};

struct acct_bpf_collector {
	struct acct_bpf_collector_options opts;
	struct acct_cgroup_iter *skel;
	struct bpf_program *prog; /* the skeleton's program that load() chose */
	bool has_rdonly_cast;     /* the kernel's BTF has the kfunc bpf_rdonly_cast() (Linux 6.2) */
	struct acct_memcg_batching batching;
	struct hier h[_ACCT_HIER_MAX];
	char percpu[REASON_MAX];
	char *buf;
	size_t buf_size;
	const char *out;   /* the program's output map, mapped (NULL: sessions write to read()) */
	/* Held over each read session of the attached program: its partition
	 * and output (bss: set_partition(), to_map) are global to every link
	 * of it, so that a one-cgroup read on another thread
	 * (acct_bpf_collector_read_one()) and a walk's session never see each
	 * other's. */
	pthread_mutex_t session_lock;
	pthread_mutex_t roots_lock; /* each hier's roots_want, roots_whole, roots_gen */
};

/* The session lock of a collector given as const (read_one): the lock is not
 * part of what const promises, as a mutable member would not be. */
static pthread_mutex_t *session_lock(const struct acct_bpf_collector *c)
{
	return (pthread_mutex_t *)&c->session_lock;
}

/* libbpf's first warning on this thread since it was cleared (before each
 * open, load and attach): where a load fails before the verifier runs (an
 * extern the kernel lacks, a relocation that does not apply), it is the only
 * account of why, and goes into the reason. The first, since libbpf follows
 * it with summaries ("failed to load BPF skeleton ..."). */
static _Thread_local char libbpf_warning[160];

/* libbpf's own messages: warnings go to the debug log (the reason recorded
 * per hierarchy is what an operator sees) and the first is kept, the rest is
 * dropped. */
__attribute__((format(printf, 2, 0))) static int libbpf_log(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	if (level == LIBBPF_DEBUG)
		return 0;
	char line[512];
	vsnprintf(line, sizeof(line), fmt, ap);
	line[strcspn(line, "\n")] = 0;
	if (level == LIBBPF_WARN && !*libbpf_warning) {
		const char *what = strncmp(line, "libbpf: ", 8) == 0 ? line + 8 : line;
		size_t n = strnlen(what, sizeof(libbpf_warning) - 1);
		memcpy(libbpf_warning, what, n);
		libbpf_warning[n] = 0;
	}
	log_debug("libbpf: %s", line);
	return 0;
}

/* What this kernel offers of its per-CPU data: per-CPU BTF type tags (which
 * let bpf_per_cpu_ptr() follow fields such as memcg->vmstats_percpu) and
 * per-CPU symbols (memcg_stock, resolvable with CONFIG_KALLSYMS_ALL). The
 * program reads neither yet; the bounds cover per-CPU batching either way. */
static void describe_percpu(char *buf, size_t size, const struct btf *btf)
{
	bool tags = false, symbols = false;
	for (unsigned id = 1; btf && id < btf__type_cnt(btf) && !tags; id++) {
		const struct btf_type *t = btf__type_by_id(btf, id);
		tags = btf_kind(t) == BTF_KIND_TYPE_TAG && strcmp(btf__name_by_offset(btf, t->name_off), "percpu") == 0;
	}
	/* 5 MB of text: read in large blocks (small reads made it 0.2 s). The
	 * buffer is declared first so that it outlives the stream. */
	_cleanup_free_ char *block = malloc(1 << 18);
	_cleanup_fclose_ FILE *f = fopen("/proc/kallsyms", "re");
	if (f && block)
		setvbuf(f, block, _IOFBF, 1 << 18);
	char line[256];
	while (f && !symbols && fgets(line, sizeof(line), f)) {
		const char *name = strrchr(line, ' ');
		symbols = name && strcmp(name + 1, "memcg_stock\n") == 0 && strncmp(line, "0000000000000000", 16) != 0;
	}
	if (!tags && !symbols)
		snprintf(buf, size, "not read: this kernel has no per-CPU BTF type tags and no per-CPU symbols "
			 "(memcg_stock); bounds cover per-CPU batching from its structure");
	else
		snprintf(buf, size, "exposed by this kernel (%s%s%s) but not read by this acctd; bounds cover "
			 "per-CPU batching from its structure", tags ? "per-CPU BTF type tags" : "",
			 tags && symbols ? ", " : "", symbols ? "per-CPU symbols" : "");
}

/* The reason a load or attach failed, in an operator's words; but for a
 * missing privilege, libbpf's warning where it gave one for this failure. */
static void explain(char *reason, int err, const char *what)
{
	if (*libbpf_warning && err != EPERM) {
		snprintf(reason, REASON_MAX, "%s: libbpf: %s (%s)", what, libbpf_warning, strerror(err));
		return;
	}
	switch (err) {
	case EPERM: /* bpf() itself refused (unprivileged_bpf_disabled, no CAP_BPF) */
		snprintf(reason, REASON_MAX,
			 "%s: not permitted (needs CAP_BPF and CAP_PERFMON, or a pinned iterator from acctd --bpf-pin)",
			 what);
		break;
	case EACCES: /* the verifier's answer to an unsafe program */
	case EINVAL:
	case E2BIG:
		snprintf(reason, REASON_MAX, "%s: the kernel's verifier rejected the program (%s)", what,
			 strerror(err));
		break;
	case ENOENT:
	case ESRCH:
	case ENOTSUP:
		snprintf(reason, REASON_MAX, "%s: this kernel lacks what the program needs (%s)", what, strerror(err));
		break;
	default:
		snprintf(reason, REASON_MAX, "%s: %s", what, strerror(err));
	}
}

/* A verifier rejection, with the log line that says why: the last one
 * before its statistics ("processed N insns ..."). */
static void explain_verifier(char *reason, int err, char *log)
{
	const char *why = "";
	for (char *line = strtok(log, "\n"); line; line = strtok(NULL, "\n"))
		if (*line && strncmp(line, "processed ", 10) != 0 && strncmp(line, "verification time", 17) != 0)
			why = line;
	snprintf(reason, REASON_MAX, "loading the BPF program: the kernel's verifier rejected the program (%s): %s",
		 strerror(err), why);
}

static int load(struct acct_bpf_collector *c, char *reason)
{
	const char *btf = c->opts.btf_path ? c->opts.btf_path : "/sys/kernel/btf/vmlinux";
	if (access(btf, R_OK) < 0) {
		snprintf(reason, REASON_MAX, "no kernel BTF at %s (the kernel needs CONFIG_DEBUG_INFO_BTF)", btf);
		return -ENOENT;
	}
	LIBBPF_OPTS(bpf_object_open_opts, oo, .btf_custom_path = c->opts.btf_path);
	*libbpf_warning = 0;
	c->skel = acct_cgroup_iter__open_opts(&oo);
	if (!c->skel) {
		explain(reason, errno, "opening the BPF program");
		return -errno;
	}
	const char *reject = secure_getenv("ACCTD_TEST_BPF_REJECT");
	c->skel->rodata->test_reject = reject && *reject == '1';
	/* The program this kernel can run (cgroup-iter.bpf.c, "Two programs");
	 * ACCTD_TEST_BPF_PROBE_READ=1 makes a newer kernel run the older
	 * kernels' one, so that the tests check it here too. */
	const char *probe = secure_getenv("ACCTD_TEST_BPF_PROBE_READ");
	bool cast = c->has_rdonly_cast && !(probe && *probe == '1');
	c->prog = cast ? c->skel->progs.acct_cgroup_iter : c->skel->progs.acct_cgroup_iter_probe;
	(void)bpf_program__set_autoload(cast ? c->skel->progs.acct_cgroup_iter_probe : c->skel->progs.acct_cgroup_iter,
					false);
	/* The verifier's log tells its rejections (EACCES for a bad access,
	 * EINVAL, ...) from a missing privilege (EPERM or EACCES before the
	 * verifier runs, with an empty log): libbpf retries a failed load with
	 * logging into this buffer. */
	const size_t log_size = 64 * 1024;
	_cleanup_free_ char *log = calloc(1, log_size);
	if (!log) {
		if (c->out)
		munmap((void *)c->out, ACCT_BPF_OUT_SIZE);
	acct_cgroup_iter__destroy(c->skel);
		c->skel = NULL;
		return -ENOMEM;
	}
	(void)bpf_program__set_log_buf(c->prog, log, log_size);
	int r = acct_cgroup_iter__load(c->skel);
	if (r < 0) {
		if (*log)
			explain_verifier(reason, -r, log);
		else
			explain(reason, -r, "loading the BPF program");
		acct_cgroup_iter__destroy(c->skel);
		c->skel = NULL;
		return r;
	}
	(void)bpf_program__set_log_buf(c->prog, NULL, 0);
	*libbpf_warning = 0;
	c->skel->bss->nr_nodes = c->opts.nr_nodes ? c->opts.nr_nodes : 1;
	/* Records into the output map: one session per walk (see the program). */
	void *p = mmap(NULL, ACCT_BPF_OUT_SIZE, PROT_READ, MAP_SHARED, bpf_map__fd(c->skel->maps.out), 0);
	if (p != MAP_FAILED)
		c->out = p;
	else
		log_debug_errno(errno, "Cannot map the BPF output map, walks go through read(): %m");
	return 0;
}

static int attach(const struct acct_bpf_collector *c, const struct hier *h, const char *dir, enum bpf_cgroup_iter_order order,
		  struct bpf_link **ret)
{
	_cleanup_close_ int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	union bpf_iter_link_info info = { .cgroup = { .cgroup_fd = (uint32_t)fd, .order = order } };
	LIBBPF_OPTS(bpf_iter_attach_opts, ao, .link_info = &info, .link_info_len = sizeof(info));
	*libbpf_warning = 0;
	struct bpf_link *link = bpf_program__attach_iter(c->prog, &ao);
	if (!link)
		return -errno;
	(void)h;
	*ret = link;
	return 0;
}

static void drop_root_links(struct hier *h)
{
	for (size_t i = 0; i < h->n_root_links; i++)
		bpf_link__destroy(h->root_links[i]);
	free(h->root_links);
	h->root_links = NULL;
	h->n_root_links = 0;
}

DEFINE_TRIVIAL_CLEANUP_FUNC(struct acct_bpf_collector *, acct_bpf_collector_free);

int acct_bpf_collector_new(const struct acct_bpf_collector_options *opts, struct acct_bpf_collector **ret)
{
	_cleanup_(acct_bpf_collector_freep) struct acct_bpf_collector *c = NULL;
	char load_reason[REASON_MAX] = "";
	int load_r = 1; /* not tried */

	if (!opts || !opts->layout || !ret)
		return -EINVAL;
	c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	pthread_mutex_init(&c->session_lock, NULL);
	pthread_mutex_init(&c->roots_lock, NULL);
	for (int i = 0; i < _ACCT_HIER_MAX; i++) {
		c->h[i].roots_whole = true;
		c->h[i].roots_walked = -1;
	}
	c->opts = *opts;
	c->opts.pin_dir = NULL; /* not kept: the strings are the caller's */
	c->opts.btf_path = opts->btf_path ? strdup(opts->btf_path) : NULL;
	if (opts->btf_path && !c->opts.btf_path)
		return -ENOMEM;
	libbpf_set_print(libbpf_log);
	struct btf *btf = acct_bpf_btf_load(opts->btf_path);
	acct_bpf_memcg_batching_from_btf(&c->batching, opts->nr_cpus, btf);
	describe_percpu(c->percpu, sizeof(c->percpu), btf);
	c->has_rdonly_cast = btf && btf__find_by_name_kind(btf, "bpf_rdonly_cast", BTF_KIND_FUNC) > 0;
	btf__free(btf);

	for (int i = 0; i < _ACCT_HIER_MAX; i++) {
		struct hier *h = &c->h[i];
		const char *mount = opts->layout->mount[i];
		const char *name = acct_hierarchy_to_string(i);
		if (!mount || !(opts->hierarchies & (1u << i)))
			continue;
		h->mounted = true;
		if (opts->pin_dir && *opts->pin_dir && !opts->pin_note) {
			_cleanup_free_ char *pin = NULL;
			if (asprintf(&pin, "%s/%s", opts->pin_dir, name) < 0)
				return -ENOMEM;
			_cleanup_close_ int fd = open(pin, O_RDONLY | O_CLOEXEC);
			if (fd >= 0) {
				snprintf(h->reason, sizeof(h->reason), "pinned at %s", pin);
				snprintf(h->overflow_reason, sizeof(h->overflow_reason),
					 "pinned at %s, but the hierarchy has more cgroups than one read() of it "
					 "holds (8 pages): files until it has fewer (docs/systemd.md, \"BPF\")",
					 pin);
				h->pin = TAKE_PTR(pin);
				h->served = true;
				continue;
			}
			if (errno != ENOENT && !opts->attach) {
				snprintf(h->reason, sizeof(h->reason), "cannot open %s: %s", pin, strerror(errno));
				continue;
			}
		}
		if (opts->pin_note && !opts->attach) {
			snprintf(h->reason, sizeof(h->reason), "acctd --bpf-pin pinned nothing: %s", opts->pin_note);
			continue;
		}
		if (!opts->attach) {
			snprintf(h->reason, sizeof(h->reason), "no pinned iterator%s%s and attaching is not allowed",
				 opts->pin_dir && *opts->pin_dir ? " in " : "", opts->pin_dir ? opts->pin_dir : "");
			continue;
		}
		if (load_r == 1)
			load_r = load(c, load_reason);
		/* Where the pin step could not, the daemon (without its
		 * privileges) rarely can: its reason is the one that tells. */
		if (load_r < 0) {
			if (opts->pin_note)
				snprintf(h->reason, sizeof(h->reason), "acctd --bpf-pin pinned nothing: %s", opts->pin_note);
			else
				snprintf(h->reason, sizeof(h->reason), "%s", load_reason);
			continue;
		}
		int r = attach(c, h, mount, BPF_CGROUP_ITER_DESCENDANTS_PRE, &h->link);
		if (r < 0) {
			if (opts->pin_note)
				snprintf(h->reason, sizeof(h->reason), "acctd --bpf-pin pinned nothing: %s", opts->pin_note);
			else
				explain(h->reason, -r, "attaching the iterator");
			continue;
		}
		snprintf(h->reason, sizeof(h->reason), "attached: acctd loaded the program itself%s",
			 acct_bpf_collector_program_note(c));
		snprintf(h->overflow_reason, sizeof(h->overflow_reason),
			 "attached, but the hierarchy is too large to walk in the sessions allowed: files");
		h->served = true;
	}
	*ret = TAKE_PTR(c);
	return 0;
}

struct acct_bpf_collector *acct_bpf_collector_free(struct acct_bpf_collector *c)
{
	if (!c)
		return NULL;
	for (int i = 0; i < _ACCT_HIER_MAX; i++) {
		struct hier *h = &c->h[i];
		drop_root_links(h);
		strv_free(h->roots_want);
		bpf_link__destroy(h->link);
		free(h->pin);
	}
	acct_cgroup_iter__destroy(c->skel);
	free((char *)c->opts.btf_path);
	free(c->buf);
	pthread_mutex_destroy(&c->session_lock);
	pthread_mutex_destroy(&c->roots_lock);
	free(c);
	return NULL;
}

bool acct_bpf_collector_serves(const struct acct_bpf_collector *c, enum acct_hierarchy h)
{
	return c && (unsigned)h < _ACCT_HIER_MAX && c->h[h].served;
}

bool acct_bpf_collector_any(const struct acct_bpf_collector *c)
{
	for (int i = 0; c && i < _ACCT_HIER_MAX; i++)
		if (c->h[i].served)
			return true;
	return false;
}

const char *acct_bpf_collector_reason(const struct acct_bpf_collector *c, enum acct_hierarchy h)
{
	if (!c || (unsigned)h >= _ACCT_HIER_MAX)
		return "";
	return __atomic_load_n(&c->h[h].overflowed, __ATOMIC_ACQUIRE) ? c->h[h].overflow_reason : c->h[h].reason;
}

bool acct_bpf_collector_reads(const struct acct_bpf_collector *c, enum acct_hierarchy h)
{
	return acct_bpf_collector_serves(c, h) && !__atomic_load_n(&c->h[h].overflowed, __ATOMIC_ACQUIRE);
}

const char *acct_bpf_collector_program_note(const struct acct_bpf_collector *c)
{
	if (!c || !c->skel || !c->prog || c->prog == c->skel->progs.acct_cgroup_iter)
		return "";
	return " (the program for kernels before 6.2, without bpf_rdonly_cast(): memcg fields by probe reads)";
}

const char *acct_bpf_collector_percpu(const struct acct_bpf_collector *c)
{
	return c->percpu;
}

const struct acct_memcg_batching *acct_bpf_collector_batching(const struct acct_bpf_collector *c)
{
	return &c->batching;
}

/* Whether the record at p (len bytes left) is whole and consistent. */
static bool record_ok(const char *p, size_t len)
{
	const struct acct_bpf_record *r = (const struct acct_bpf_record *)p;
	if (len < sizeof(*r) || r->magic != ACCT_BPF_RECORD_MAGIC || r->size % 8 || r->size > len)
		return false;
	size_t tail = (size_t)r->nr_state + (size_t)r->nr_nodes * r->nr_node_items;
	return r->size == sizeof(*r) + tail * sizeof(long long) && tail <= ACCT_BPF_TAIL_MAX &&
	       r->nr_psi <= ACCT_BPF_PSI_MAX;
}

static int read_snapshot(struct acct_bpf_collector *c, enum acct_hierarchy hi, struct acct_bpf_snapshot *snap,
			 unsigned lean);

int acct_bpf_collector_read(struct acct_bpf_collector *c, enum acct_hierarchy hi, struct acct_bpf_snapshot *snap)
{
	return read_snapshot(c, hi, snap, 0);
}

int acct_bpf_collector_read_lean(struct acct_bpf_collector *c, enum acct_hierarchy hi,
				 struct acct_bpf_snapshot *snap)
{
	return read_snapshot(c, hi, snap, ACCT_BPF_LEAN_COUNTERS);
}

int acct_bpf_collector_read_no_stats(struct acct_bpf_collector *c, enum acct_hierarchy hi,
				     struct acct_bpf_snapshot *snap)
{
	return read_snapshot(c, hi, snap, ACCT_BPF_LEAN_STATS);
}

/* Read one iterator session from fd into c->buf at offset `at`; returns the
 * bytes read or -errno. A cgroup iterator's session ends with the kernel's
 * seq buffer (8 pages): a walk that does not fit makes the next read() fail
 * with EOPNOTSUPP (kernel/bpf/cgroup_iter.c: no reads across sessions), so
 * a read error is never taken as the end of the walk. */
static ssize_t read_walk(struct acct_bpf_collector *c, int fd, size_t at)
{
	size_t len = at;
	for (;;) {
		if (c->buf_size - len < 64 * 1024) {
			size_t size = MAX(c->buf_size * 2, (size_t)256 * 1024);
			char *b = realloc(c->buf, size);
			if (!b)
				return -ENOMEM;
			c->buf = b;
			c->buf_size = size;
		}
		ssize_t r = read(fd, c->buf + len, c->buf_size - len);
		if (r < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (r == 0)
			return (ssize_t)(len - at);
		len += (size_t)r;
	}
}

static int open_walk(const struct hier *h, struct bpf_link *link)
{
	int fd = link ? bpf_iter_create(bpf_link__fd(link)) : open(h->pin, O_RDONLY | O_CLOEXEC);
	return fd < 0 ? -errno : fd;
}

int acct_bpf_collector_set_roots(struct acct_bpf_collector *c, enum acct_hierarchy hi, char *const *roots)
{
	_cleanup_strv_free_ char **copy = NULL;
	if ((unsigned)hi >= _ACCT_HIER_MAX)
		return -EINVAL;
	if (roots) {
		if (roots[0] ? strv_copy(roots, &copy) < 0 : !(copy = strv_new_empty()))
			return -ENOMEM;
	}
	struct hier *h = &c->h[hi];
	pthread_mutex_lock(&c->roots_lock);
	bool same = h->roots_whole ? !roots : roots && strv_equal(h->roots_want, copy);
	if (!same) {
		strv_free(h->roots_want);
		h->roots_want = TAKE_PTR(copy);
		h->roots_whole = !roots;
		h->roots_gen++;
	}
	pthread_mutex_unlock(&c->roots_lock);
	return 0;
}

int acct_bpf_collector_roots(const struct acct_bpf_collector *c, enum acct_hierarchy hi)
{
	if ((unsigned)hi >= _ACCT_HIER_MAX)
		return -EINVAL;
	return __atomic_load_n(&c->h[hi].roots_walked, __ATOMIC_RELAXED);
}

/* The walking thread: make h's links for the roots the owner set last (an
 * attached iterator per root directory; a pinned one walks the whole
 * hierarchy, it cannot be attached elsewhere). A root that cannot be
 * attached (removed meanwhile) makes the walk the whole hierarchy's until
 * the owner sets roots again: never fewer cgroups than asked for. */
static void apply_roots(struct acct_bpf_collector *c, struct hier *h, const char *mount)
{
	pthread_mutex_lock(&c->roots_lock);
	uint64_t gen = h->roots_gen;
	bool whole = h->roots_whole;
	_cleanup_strv_free_ char **want = NULL;
	int r = gen == h->roots_applied || whole ? 0 : strv_copy(h->roots_want, &want);
	pthread_mutex_unlock(&c->roots_lock);
	if (gen == h->roots_applied || r < 0)
		return; /* (without memory: the links as they are, tried again next walk) */
	drop_root_links(h);
	__atomic_store_n(&h->roots_walked, -1, __ATOMIC_RELAXED);
	h->roots_applied = gen;
	if (whole || !h->link)
		return;
	size_t n = strv_length(want);
	_cleanup_free_ struct bpf_link **links = calloc(n + 1, sizeof(*links));
	if (!links)
		return;
	for (size_t i = 0; i < n; i++) {
		_cleanup_free_ char *dir = NULL;
		r = asprintf(&dir, "%s%s", mount, want[i]) < 0 ? -ENOMEM : attach(c, h, dir, BPF_CGROUP_ITER_DESCENDANTS_PRE, &links[i]);
		if (r < 0) {
			log_debug("BPF walk of %s: cannot walk below %s alone (%s), the whole hierarchy until the roots change",
				  mount, want[i], strerror(-r));
			for (size_t k = 0; k < i; k++)
				bpf_link__destroy(links[k]);
			return;
		}
	}
	h->root_links = TAKE_PTR(links);
	h->n_root_links = n;
	__atomic_store_n(&h->roots_walked, (int)MIN(n, (size_t)INT_MAX), __ATOMIC_RELAXED);
}

/* Tell the program which class of ids the next session writes (bss). */
static void set_partition(const struct acct_bpf_collector *c, unsigned n, unsigned k)
{
	if (c->skel) {
		c->skel->bss->part_n = n;
		c->skel->bss->part_k = k;
	}
}

/* One walk of h into c->buf, in as many sessions as it takes: h->part_n
 * classes of ids, doubled whenever a session overflows (a pinned iterator
 * cannot be partitioned: -E2BIG then). Returns the bytes read or -errno. */
/* lean: the program's `lean` for this walk, set under the session lock
 * like every other setting of the program, and 0 again outside it (a
 * single read on another thread, acct_bpf_collector_read_one(), takes its
 * turn between sessions and sets its own). */
static ssize_t walk(struct acct_bpf_collector *c, struct hier *h, const char *mount, unsigned lean)
{
	const unsigned part_max = 1u << 16;
	if (!h->link)
		h->part_n = 1;
	h->part_n = MAX(h->part_n, 1u);
	apply_roots(c, h, mount);
	/* The links walked: one per root, or the hierarchy's (a pinned
	 * iterator's: NULL, opened by path). */
	struct bpf_link *const *links = h->root_links ? h->root_links : &h->link;
	size_t n_links = h->root_links ? h->n_root_links : 1;
	for (;;) {
		size_t len = 0;
		ssize_t r = 0;
		bool to_map = h->link && c->out;
		for (unsigned k = 0; k < h->part_n && r >= 0; k++)
			for (size_t j = 0; j < n_links && r >= 0; j++) {
				pthread_mutex_lock(&c->session_lock);
				set_partition(c, h->part_n, k);
				if (c->skel) {
					c->skel->bss->lean = lean;
					c->skel->bss->psi_skip = h != &c->h[ACCT_HIER_UNIFIED];
				}
				if (to_map) {
					c->skel->bss->to_map = 1;
					c->skel->bss->out_len = 0;
					c->skel->bss->out_full = 0;
				}
				int fd = open_walk(h, links[j]);
				r = fd < 0 ? fd : read_walk(c, fd, len);
				if (fd >= 0)
					close(fd);
				if (r >= 0)
					len += (size_t)r;
				if (r >= 0 && to_map) {
					size_t n = MIN((size_t)c->skel->bss->out_len, (size_t)ACCT_BPF_OUT_SIZE);
					if (c->skel->bss->out_full)
						r = -EOPNOTSUPP; /* more sessions, as for a full seq buffer */
					else if (c->buf_size - len < n) {
						char *b = realloc(c->buf, len + n + 64 * 1024);
						if (!b)
							r = -ENOMEM;
						else {
							c->buf = b;
							c->buf_size = len + n + 64 * 1024;
						}
					}
					if (r >= 0) {
						memcpy(c->buf + len, c->out, n);
						len += n;
					}
					c->skel->bss->to_map = 0;
				}
				set_partition(c, 0, 0);
				if (c->skel) {
					c->skel->bss->lean = 0;
					c->skel->bss->psi_skip = 0;
				}
				pthread_mutex_unlock(&c->session_lock);
			}
		if (r != -EOPNOTSUPP) {
			if (r < 0)
				return r;
			/* Fewer sessions next time where the hierarchy shrank:
			 * aim at sessions a quarter full. */
			size_t per_session = to_map ? ACCT_BPF_OUT_SIZE : (size_t)8 * (size_t)c->batching.page_size;
			size_t want = (size_t)len * 4 / per_session + 1;
			if (h->part_n > 4 * want)
				h->part_n = (unsigned)want;
			__atomic_store_n(&h->overflowed, false, __ATOMIC_RELEASE);
			return (ssize_t)len;
		}
		if (!h->link || h->part_n >= part_max) {
			/* Pinned: the reader cannot split the walk (no bpf()). Each
			 * walk tries again (a full session stops early: cheap), so
			 * the hierarchy comes back once it is small enough. */
			__atomic_store_n(&h->overflowed, true, __ATOMIC_RELEASE);
			return -E2BIG;
		}
		h->part_n *= 2;
	}
}

static int read_snapshot(struct acct_bpf_collector *c, enum acct_hierarchy hi, struct acct_bpf_snapshot *snap,
			 unsigned lean)
{
	if (!acct_bpf_collector_serves(c, hi))
		return -ENODEV;
	struct hier *h = &c->h[hi];
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	uint64_t t0 = (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
	ssize_t len = walk(c, h, c->opts.layout->mount[hi], lean);
	if (len < 0)
		return (int)len;
	/* The walk's bytes become the snapshot's (buffers swapped, not copied). */
	char *data = snap->data;
	size_t data_size = snap->data_size;
	snap->data = c->buf;
	snap->data_size = c->buf_size;
	c->buf = data;
	c->buf_size = data_size;
	snap->n = 0;
	snap->read_us = t0;
	for (size_t off = 0; off < (size_t)len;) {
		if (!record_ok(snap->data + off, (size_t)len - off)) {
			snap->n = 0;
			return -EBADMSG;
		}
		if (snap->n == snap->cap) {
			size_t cap = MAX(snap->cap * 2, (size_t)256);
			const struct acct_bpf_record **r = reallocarray(snap->rec, cap, sizeof(*r));
			if (!r) {
				snap->n = 0;
				return -ENOMEM;
			}
			snap->rec = r;
			snap->cap = cap;
		}
		const struct acct_bpf_record *r = (const struct acct_bpf_record *)(snap->data + off);
		snap->rec[snap->n++] = r;
		off += r->size;
	}
	(void)acct_bpf_snapshot_sort(snap);
	return (int)MIN(snap->n, (size_t)INT32_MAX);
}

static int read_one_as(const struct acct_bpf_collector *c, enum acct_hierarchy hi, const char *dir, unsigned lean,
		       struct acct_bpf_record *ret)
{
	if (!acct_bpf_collector_serves(c, hi))
		return -ENODEV;
	if (!c->skel)
		return -EPERM;
	/* Not into c->buf, which a walk on the sampler's thread may be
	 * filling: one record at most, and room to tell that there were more. */
	union {
		struct acct_bpf_record head;
		char b[2 * (sizeof(struct acct_bpf_record) + ACCT_BPF_TAIL_MAX * sizeof(long long))];
	} one;
	struct bpf_link *link = NULL;
	size_t len = 0;
	int r;

	pthread_mutex_lock(session_lock(c));
	set_partition(c, 0, 0);
	c->skel->bss->lean = lean; /* 0 outside a session (walk()) */
	c->skel->bss->psi_skip = hi != ACCT_HIER_UNIFIED;
	r = attach(c, &c->h[hi], dir, BPF_CGROUP_ITER_SELF_ONLY, &link);
	if (r == 0) {
		int fd = bpf_iter_create(bpf_link__fd(link));
		r = fd < 0 ? -errno : 0;
		while (r == 0 && len < sizeof(one.b)) {
			ssize_t n = read(fd, one.b + len, sizeof(one.b) - len);
			if (n < 0 && errno == EINTR)
				continue;
			if (n < 0)
				r = -errno;
			else if (n == 0)
				break;
			else
				len += (size_t)n;
		}
		if (fd >= 0)
			close(fd);
		bpf_link__destroy(link);
	}
	c->skel->bss->lean = 0;
	c->skel->bss->psi_skip = 0;
	pthread_mutex_unlock(session_lock(c));
	if (r < 0)
		return r == -ENOTDIR ? -ENOENT : r;
	if (len == 0)
		return -ENOENT;
	if (!record_ok(one.b, len) || one.head.size != len)
		return -EBADMSG;
	*ret = one.head;
	return 0;
}

int acct_bpf_collector_read_one(const struct acct_bpf_collector *c, enum acct_hierarchy hi, const char *dir,
				struct acct_bpf_record *ret)
{
	return read_one_as(c, hi, dir, 0, ret);
}

int acct_bpf_collector_read_one_lean(const struct acct_bpf_collector *c, enum acct_hierarchy hi, const char *dir,
				     struct acct_bpf_record *ret)
{
	return read_one_as(c, hi, dir, ACCT_BPF_LEAN_COUNTERS, ret);
}

int acct_bpf_collector_pin(struct acct_bpf_collector *c, const char *dir)
{
	int n = 0;
	if (mkdir(dir, 0755) < 0 && errno != EEXIST)
		return -errno;
	if (chmod(dir, 0755) < 0)
		return -errno;
	for (int i = 0; i < _ACCT_HIER_MAX; i++) {
		struct hier *h = &c->h[i];
		if (!h->link)
			continue;
		_cleanup_free_ char *path = NULL;
		if (asprintf(&path, "%s/%s", dir, acct_hierarchy_to_string(i)) < 0)
			return -ENOMEM;
		if (unlink(path) < 0 && errno != ENOENT)
			return -errno;
		int r = bpf_link__pin(h->link, path);
		if (r < 0)
			return r;
		if (chmod(path, 0644) < 0)
			return -errno;
		n++;
	}
	return n;
}

/* ---- the stat index map ---------------------------------------------------- */

#define MAP_SAMPLE 64

struct sample {
	uint64_t id;
	size_t path;          /* its index in the round's paths */
	char *before, *after; /* memory.stat contents */
};

/* How many directories pick_sample() may open: enough to get past a level
 * of thousands of empty cgroups (a test's tree, a host's idle slices) to the
 * cgroups below or beside it that hold memory. A few milliseconds per
 * thousand, once at start. */
#define MAP_VISIT 4096

static int count_held(const char *key, size_t key_len, uint64_t value, void *userdata)
{
	/* the limits are not memory held, and are never 0 */
	if (value && !(key_len > 13 && memcmp(key, "hierarchical_", 13) == 0))
		++*(unsigned *)userdata;
	return 0;
}

/* Whether a memory.stat text shows any memory or event: an empty cgroup's
 * values are all zero, which fit every index and tell none apart. */
static bool holds_memory(const char *text)
{
	unsigned held = 0;
	return cgfs_parse_flat_keyed(text, count_held, &held) >= 0 && held > 0;
}

/* Up to MAP_SAMPLE cgroups of the hierarchy that hold memory, breadth first
 * (the root and the upper levels hold the largest, least ambiguous values),
 * among the first MAP_VISIT directories: their paths into paths[] (the
 * caller frees them). Returns how many. */
static size_t pick_sample(const char *mount, char **paths)
{
	_cleanup_free_ char **queue = calloc(MAP_VISIT, sizeof(char *));
	size_t nq = 0, head = 0, n = 0;
	if (!queue)
		return 0;
	queue[nq++] = strdup(mount);
	while (head < nq && n < MAP_SAMPLE) {
		char *dir = queue[head++];
		if (!dir)
			continue;
		_cleanup_close_ int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (fd < 0)
			continue;
		_cleanup_free_ char *text = read_file_at(fd, "memory.stat");
		if (text && holds_memory(text) && (paths[n] = strdup(dir)))
			n++;
		DIR *d = fdopendir(fd);
		if (d) {
			fd = -1;
			struct dirent *de;
			while ((de = readdir(d)) && nq < MAP_VISIT)
				if (de->d_type == DT_DIR && de->d_name[0] != '.') {
					char *p;
					if (asprintf(&p, "%s/%s", dir, de->d_name) >= 0)
						queue[nq++] = p;
				}
			closedir(d);
		}
	}
	for (size_t i = 0; i < nq; i++)
		free(queue[i]);
	return n;
}

/* A key's value in a memory.stat text: true when it is there. */
static bool lookup(const char *text, const char *key, uint64_t *ret)
{
	return cgfs_flat_keyed_get(text, key, ret) == 0;
}

struct key_list {
	char keys[ACCT_BPF_STATE_MAX * 2][48];
	unsigned n;
	bool v1;
};

static int collect_key(const char *key, size_t key_len, uint64_t value, void *userdata)
{
	struct key_list *l = userdata;
	(void)value;
	/* v1's local keys come from per-cgroup local counters, not state[]. */
	if (l->v1 && (key_len < 6 || memcmp(key, "total_", 6) != 0))
		return 0;
	if (key_len < sizeof(l->keys[0]) && l->n < ELEMENTSOF(l->keys)) {
		memcpy(l->keys[l->n], key, key_len);
		l->keys[l->n++][key_len] = 0;
	}
	return 0;
}

/* Walks a map may take: a key whose value moved during the walk in some
 * sampled cgroup (a task writing through its limit makes its page cache rise
 * and fall) fits no index in that round; it is tried again in the next. */
#define MAP_ROUNDS 3

/* One round's samples, each read before and after a walk of every item. */
struct map_round {
	struct sample s[MAP_SAMPLE];
	size_t n;
	struct acct_bpf_snapshot snap;
};

static void map_round_clear(struct map_round *m)
{
	for (size_t i = 0; i < m->n; i++) {
		free(m->s[i].before);
		free(m->s[i].after);
		m->s[i] = (struct sample){ 0 };
	}
	m->n = 0;
	acct_bpf_snapshot_clear(&m->snap);
}

/* A round over the n sampled cgroups at paths: each one's memory.stat, a
 * walk, and each one's memory.stat again, so that the walk lies between two
 * reads no further apart than the sample's files and the walk take. A
 * cgroup gone meanwhile drops out. */
static int map_round_take(struct acct_bpf_collector *c, enum acct_hierarchy hi, char *const *paths, size_t n,
			  struct map_round *m)
{
	m->n = 0;
	for (size_t i = 0; i < n; i++) {
		_cleanup_close_ int fd = open(paths[i], O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		struct stat st;
		char *text;
		if (fd >= 0 && fstat(fd, &st) == 0 && (text = read_file_at(fd, "memory.stat")))
			m->s[m->n++] = (struct sample){ .id = st.st_ino, .path = i, .before = text };
	}
	int r = acct_bpf_collector_read(c, hi, &m->snap);
	if (r < 0)
		return r;
	/* The same directory again (a path made anew meanwhile is another
	 * cgroup: no after, and the sample says nothing). */
	for (size_t k = 0; k < m->n; k++) {
		_cleanup_close_ int fd = open(paths[m->s[k].path], O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		struct stat st;
		if (fd >= 0 && fstat(fd, &st) == 0 && st.st_ino == m->s[k].id)
			m->s[k].after = read_file_at(fd, "memory.stat");
	}
	return 0;
}

/* The one stat index and unit that key's values in every sampled cgroup of
 * round m fit (the record's value between the file's before and after, and
 * some value not zero); false where none or several do. */
static bool map_key(const struct map_round *m, const char *key, const uint32_t *units, size_t nr_units,
		    uint16_t *ret_index, uint32_t *ret_unit)
{
	int found = -1;
	uint32_t found_unit = 0;
	for (unsigned idx = 0; idx < ACCT_BPF_STATE_MAX; idx++)
		for (size_t u = 0; u < nr_units; u++) {
			unsigned used = 0, nonzero = 0;
			bool ok = true;
			for (size_t i = 0; i < m->n && ok; i++) {
				const struct acct_bpf_record *rec = acct_bpf_snapshot_find(&m->snap, m->s[i].id);
				uint64_t a, b;
				if (!rec || !(rec->flags & ACCT_BPF_F_STATS) || idx >= rec->nr_state || !m->s[i].after ||
				    !lookup(m->s[i].before, key, &a) || !lookup(m->s[i].after, key, &b))
					continue;
				int64_t v = acct_bpf_record_state(rec)[idx];
				uint64_t lo = MIN(a, b), hi = MAX(a, b);
				ok = v >= 0 && (uint64_t)v * units[u] >= lo && (uint64_t)v * units[u] <= hi;
				used++;
				nonzero += hi > 0;
			}
			if (!ok || used == 0 || nonzero == 0)
				continue;
			if (found >= 0)
				return false; /* ambiguous */
			found = (int)idx;
			found_unit = units[u];
		}
	if (found < 0)
		return false;
	*ret_index = (uint16_t)found;
	*ret_unit = found_unit;
	return true;
}

int acct_bpf_collector_map_stats(struct acct_bpf_collector *c, enum acct_hierarchy hi,
				 const char *const *numa_keys, struct acct_bpf_stat_map *ret)
{
	_cleanup_free_ struct map_round *m = NULL;
	_cleanup_free_ struct key_list *keys = NULL;
	char *paths[MAP_SAMPLE];
	struct {
		bool mapped;
		uint16_t index;
		uint32_t unit;
	} found[ELEMENTSOF(keys->keys)] = { 0 };
	int r = 0;

	if (!acct_bpf_collector_serves(c, hi))
		return -ENODEV;
	memset(ret, 0, sizeof(*ret));
	m = calloc(1, sizeof(*m));
	keys = calloc(1, sizeof(*keys));
	if (!m || !keys)
		return -ENOMEM;
	keys->v1 = hi != ACCT_HIER_UNIFIED;
	/* Every item these few times (an attached program: a pinned one writes
	 * what the pinning step selected, and the map is then one of its slots). */
	if (c->skel)
		c->skel->bss->stat_n = 0;
	const uint32_t units[] = { (uint32_t)c->batching.page_size, 1, 1024 };
	size_t nr_paths = pick_sample(c->opts.layout->mount[hi], paths);
	unsigned left = 0;
	for (int round = 0; round < MAP_ROUNDS && (round == 0 || left > 0); round++) {
		r = map_round_take(c, hi, paths, nr_paths, m);
		if (r < 0) {
			map_round_clear(m);
			break;
		}
		if (round == 0) {
			if (m->n > 0)
				(void)cgfs_parse_flat_keyed(m->s[0].before, collect_key, keys);
			left = keys->n;
		}
		for (unsigned k = 0; k < keys->n; k++)
			if (!found[k].mapped &&
			    map_key(m, keys->keys[k], units, ELEMENTSOF(units), &found[k].index, &found[k].unit)) {
				found[k].mapped = true;
				left--;
			}
		ret->cgroups_used = MAX(ret->cgroups_used, (unsigned)m->n);
		map_round_clear(m);
	}
	for (size_t i = 0; i < nr_paths; i++)
		free(paths[i]);
	if (r < 0)
		return r;
	for (unsigned k = 0; k < keys->n && ret->n < ACCT_BPF_STAT_SEL; k++) {
		if (!found[k].mapped)
			continue;
		snprintf(ret->e[ret->n].key, sizeof(ret->e[0].key), "%s", keys->keys[k]);
		ret->e[ret->n].index = found[k].index;
		ret->e[ret->n].unit = found[k].unit;
		ret->n++;
	}

	/* The per-node items: those of numa_keys that are mapped. */
	struct hier *h = &c->h[hi];
	h->node_items = 0;
	for (size_t q = 0; numa_keys && numa_keys[q] && h->node_items < ACCT_BPF_NODE_ITEMS; q++)
		for (unsigned e = 0; e < ret->n; e++)
			if (strcmp(ret->e[e].key, numa_keys[q]) == 0) {
				if (c->skel)
					c->skel->bss->node_idx[h->node_items] = ret->e[e].index;
				h->node_units[h->node_items++] = ret->e[e].unit;
			}
	if (c->skel) {
		c->skel->bss->node_n = h->node_items;
		/* From now on the program writes the mapped items only, in the
		 * map's order: entry j's value is in slot j. */
		for (unsigned e = 0; e < ret->n; e++) {
			c->skel->bss->stat_idx[e] = ret->e[e].index;
			ret->e[e].index = (uint16_t)e;
		}
		c->skel->bss->stat_n = ret->n;
	}
	return (int)ret->n;
}

const char *const *acct_bpf_numa_keys(bool v2)
{
	static const char *const v1_keys[] = {
		"total_inactive_anon", "total_active_anon", "total_inactive_file",
		"total_active_file", "total_unevictable", NULL,
	};
	static const char *const v2_keys[] = {
		"anon", "file", "kernel_stack", "pagetables", "slab_reclaimable", "slab_unreclaimable", NULL,
	};
	return v2 ? v2_keys : v1_keys;
}

unsigned acct_bpf_collector_node_items(const struct acct_bpf_collector *c, enum acct_hierarchy h,
				       uint32_t units[ACCT_BPF_NODE_ITEMS])
{
	if (!acct_bpf_collector_serves(c, h))
		return 0;
	memcpy(units, c->h[h].node_units, sizeof(c->h[h].node_units));
	return c->h[h].node_items;
}
