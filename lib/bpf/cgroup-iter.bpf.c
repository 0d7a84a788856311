/* cgroup-iter.bpf.c - a BPF cgroup iterator that writes one struct
 * acct_bpf_record per cgroup of a hierarchy (cgroup-record.h).
 *
 * Built with clang -target bpf into an object that bpftool turns into a
 * skeleton (bpf-collector.c loads it). No kernel headers: the kernel types
 * below declare only the fields read, with preserve_access_index, so libbpf
 * relocates every offset against the running kernel's BTF (CO-RE). Parts
 * whose layout moved between kernel versions are read only when the field
 * exists with the expected shape (bpf_core_field_exists/size); a record's
 * flags say which parts were read, and whatever was not keeps coming from
 * cgroupfs files.
 *
 * What is read is what the kernel keeps centrally: page counters (exact),
 * the flushed memcg stats and the count of updates not yet flushed into
 * them, the per-node flushed LRU stats, the memcg event counters. Per-CPU
 * data (pending stat deltas, charge stocks, CPU time) is not reachable from
 * an iterator on kernels without per-CPU BTF tags; bpf-collector.h says how
 * the bound covers it instead.
 *
 * How kernel memory is read. The iterator's cgroup is a trusted BTF pointer,
 * and what is reached from it by BTF (the css, the memcg, its page counters,
 * events, vmstats, the pressure group) is read by direct loads, which the
 * verifier turns into fault-safe loads without a helper call (a memcg's
 * record took up to 13 bpf_probe_read_kernel() calls, a third of the walk's
 * cost: docs/performance.md, Session 24). The css becomes its memcg through
 * bpf_rdonly_cast(), a kfunc the verifier replaces by a move. Where the
 * verifier refuses a direct load, a variable index into a kernel array (the
 * selected stat items, the per-node array), one bulk probe read remains.
 *
 * Two programs. bpf_rdonly_cast() is Linux 6.2's; Debian 12 runs 6.1, where
 * a program that calls it does not load. So the walk is built twice from one
 * body (walk_cgroup()): acct_cgroup_iter casts the css, acct_cgroup_iter_probe
 * copies the memcg's fields with a few bulk probe reads (read_memcg()'s
 * MEMCG_PROBE). The collector loads the one this kernel can run (load() in
 * bpf-collector.c): both write the same records. */
#include "cgroup-record.h"

#include "bpf-prelude.h"

/* uapi value (stable ABI), so that no kernel header is needed */
enum bpf_map_type { BPF_MAP_TYPE_ARRAY = 2, BPF_MAP_TYPE_PERCPU_ARRAY = 6 };
enum { BPF_F_MMAPABLE = 1u << 10 };

typedef struct { int counter; } __pai atomic_t;
typedef struct { long counter; } __pai atomic_long_t;

enum cgroup_subsys_id { memory_cgrp_id = 4 };
enum memcg_memory_event {
	MEMCG_LOW, MEMCG_HIGH, MEMCG_MAX, MEMCG_OOM, MEMCG_OOM_KILL, MEMCG_OOM_GROUP_KILL,
};

struct kernfs_node { u64 id; } __pai;
/* total[PSI_AVGS][...]: the first row of total[NR_PSI_AGGREGATORS][NR_PSI_STATES - 1] */
struct psi_group { u64 total[2 * ACCT_BPF_PSI_MAX]; } __pai; /* BTF flattens the two dimensions */
struct cgroup;
struct cgroup_subsys_state { struct cgroup *cgroup; } __pai;
struct cgroup {
	struct cgroup_subsys_state self;
	int level;
	int nr_descendants;
	int nr_populated_csets;
	int nr_populated_domain_children;
	int nr_populated_threaded_children;
	struct kernfs_node *kn;
	struct cgroup_subsys_state *subsys[16];
	struct psi_group *psi; /* a pointer since Linux 6.1 (embedded before: not read) */
} __pai;

struct page_counter {
	atomic_long_t usage;
	unsigned long failcnt;
	unsigned long watermark;
	unsigned long high;
	unsigned long max;
} __pai;

struct memcg_vmstats {
	long state[ACCT_BPF_STATE_MAX];
	atomic_t stats_updates;
} __pai;

struct lruvec_stats { long state[ACCT_BPF_STATE_MAX]; } __pai;
struct mem_cgroup_per_node { struct lruvec_stats *lruvec_stats; } __pai;

struct mem_cgroup {
	struct cgroup_subsys_state css;
	struct page_counter memory;
	union {
		struct page_counter swap;
		struct page_counter memsw;
	};
	struct memcg_vmstats *vmstats;
	atomic_long_t memory_events[16];
	int under_oom;
	struct mem_cgroup_per_node *nodeinfo[0];
} __pai;

/* A kfunc since Linux 6.2 (generic, any program type): obj as an untrusted
 * pointer to the kernel type btf_id, read by direct loads. Weak: on a kernel
 * without it libbpf leaves it unresolved, which is harmless as long as the
 * program that calls it is not loaded. */
extern void *bpf_rdonly_cast(const void *obj, __u32 btf_id) __ksym __weak;

/* How read_memcg() reaches the memcg's fields: by direct loads through the
 * BTF pointer bpf_rdonly_cast() made (MEMCG_CAST), or, where that kfunc is
 * missing and the memcg is a plain address, by bpf_probe_read_kernel()
 * (MEMCG_PROBE): each page counter and the event array in one copy. A
 * constant in each program, so the other way is compiled out of it. */
enum memcg_access { MEMCG_CAST, MEMCG_PROBE };

struct seq_file;
struct bpf_iter_meta { struct seq_file *seq; } __pai;
struct bpf_iter__cgroup {
	struct bpf_iter_meta *meta;
	struct cgroup *cgroup;
} __pai;

/* Set by the collector (bss, may change while loaded): the NUMA node count
 * and the stat indices copied per node (node_n 0 until the collector knows
 * them). */
__u32 nr_nodes; /* 0 reads as 1 */
/* Set before loading by tests that need a program the verifier rejects
 * (ACCTD_TEST_BPF_REJECT): the branch then reads past the context. */
const volatile __u32 test_reject = 0;
__u32 node_n = 0;
__u32 node_idx[ACCT_BPF_NODE_ITEMS];
/* The walk's partition (bss, set by the collector before each session): only
 * cgroups with id % part_n == part_k are written. A cgroup iterator's output
 * must fit one read() session (the kernel's 8-page seq buffer: the next read()
 * fails with EOPNOTSUPP), so a hierarchy larger than that is read in part_n
 * sessions, each walking the whole tree and writing one class of ids: a
 * partition by id, so that cgroups created or removed between sessions never
 * make a record appear twice. part_n 0 or 1: every cgroup. */
__u32 part_n = 0;
__u32 part_k = 0;
/* The stat items written, by the kernel's index, in this order (bss): none
 * (stat_n 0) writes every item, which the collector needs once to map
 * memory.stat's keys to the kernel's private indices. */
__u32 stat_n = 0;
__u32 stat_idx[ACCT_BPF_STAT_SEL];
/* What a walk leaves out (bss, set by the collector per walk): 0 nothing;
 * ACCT_BPF_LEAN_COUNTERS (a walk that serves memory alone) everything but the
 * page counters, half the cost of a record; ACCT_BPF_LEAN_STATS the stats and
 * nodes (a fast pass: the page counters and events), whose copy is most of
 * a record's cost. */
__u32 lean = 0;
/* Set by the collector for a walk of a v1 hierarchy (bss, per walk, as
 * lean): tasks' stalls are counted in the unified hierarchy's groups only,
 * so the pressure totals are not read there. A pinned iterator reads them. */
__u32 psi_skip = 0;

struct record_buf {
	struct acct_bpf_record head;
	long long tail[ACCT_BPF_TAIL_MAX];
};

/* Where records go. A seq_file session holds only the kernel's 8 pages, and a
 * cgroup iterator cannot resume a walk in a second session; so when to_map is
 * set (the collector attached the program and mapped `out`), records are
 * appended to the memory-mapped `out` at out_len instead, and a single
 * session walks the whole hierarchy. out_full is set when one did not fit. A
 * pinned iterator, read by a process without bpf(), writes to the session. */
__u32 to_map = 0;
__u64 out_len = 0;
__u32 out_full = 0;

struct out_buf {
	char data[ACCT_BPF_OUT_SIZE];
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, BPF_F_MMAPABLE);
	__uint(max_entries, 1);
	__type(key, u32);
	__type(value, struct out_buf);
} out SEC(".maps");

/* Kernel structures are copied in one helper call each into `tmp` and picked
 * apart there: a helper call per field made a memcg's record cost ~4.5 us. */
#define TMP_BYTES 1024

struct tmp_buf {
	char b[TMP_BYTES];
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, u32);
	__type(value, struct record_buf);
} scratch SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, u32);
	__type(value, struct tmp_buf);
} tmp SEC(".maps");

/* The u64 at byte `off` of t (0 past the copy). */
static __always_inline u64 tmp_u64(const struct tmp_buf *t, u32 off)
{
	if (off > TMP_BYTES - sizeof(u64))
		return 0;
	return *(const u64 *)(t->b + (off & (TMP_BYTES - 1) & ~7u));
}

/* One node's items (bpf_loop(): the verifier checks this once, where a loop
 * over nodes and items in line took it ~0.6 s to load). */
struct node_ctx {
	struct mem_cgroup *memcg;
	struct record_buf *b;
	u32 ns, items, done;
};

static long read_node(u32 n, void *arg)
{
	struct node_ctx *c = arg;
	struct mem_cgroup_per_node *pn = 0;
	if (bpf_probe_read_kernel(&pn, sizeof(pn),
				  (char *)c->memcg + bpf_core_field_offset(c->memcg->nodeinfo) + n * sizeof(void *)) ||
	    !pn)
		return 1;
	struct lruvec_stats *ls = BPF_CORE_READ(pn, lruvec_stats);
	if (!ls)
		return 1;
	u32 lsz = bpf_core_field_size(ls->state);
	for (u32 k = 0; k < ACCT_BPF_NODE_ITEMS; k++) {
		if (k >= c->items)
			break;
		u32 j = node_idx[k];
		u32 slot = c->ns + n * c->items + k;
		if ((u64)(j + 1) * sizeof(long) > lsz || slot >= ACCT_BPF_TAIL_MAX ||
		    bpf_probe_read_kernel(&c->b->tail[slot], sizeof(long),
					  (char *)ls + bpf_core_field_offset(ls->state) + j * sizeof(long)))
			return 1;
	}
	c->done = n + 1;
	return 0;
}

/* A field of the memcg (or of what hangs from it) as `access` reaches it. */
#define LOAD(access, p, field) ((access) == MEMCG_PROBE ? BPF_CORE_READ(p, field) : (p)->field)
/* The u64 field f of the page counter copied into t (MEMCG_PROBE). */
#define COUNTER_U64(t, f) tmp_u64(t, bpf_core_field_offset(((struct page_counter *)0)->f))

/* One page counter of the memcg into r's fields. MEMCG_PROBE: the counter in
 * one copy, picked apart in tmp. Returns 0, or -1 where it could not be
 * copied (then r keeps zeros and no flag says memcg). */
static __always_inline int read_counters(struct acct_bpf_record *r, struct mem_cgroup *memcg, enum memcg_access access)
{
	if (access == MEMCG_CAST) {
		r->usage = (u64)memcg->memory.usage.counter;
		r->watermark = memcg->memory.watermark;
		r->max = memcg->memory.max;
		r->failcnt = memcg->memory.failcnt;
		r->swap_usage = (u64)memcg->swap.usage.counter;
		r->swap_max = memcg->swap.max;
		if (bpf_core_field_exists(memcg->memory.high)) {
			r->high = memcg->memory.high;
			r->flags |= ACCT_BPF_F_HIGH;
		}
		return 0;
	}
	u32 zero = 0;
	struct tmp_buf *t = bpf_map_lookup_elem(&tmp, &zero);
	u32 sz = bpf_core_type_size(struct page_counter);
	if (!t || sz >= TMP_BYTES ||
	    bpf_probe_read_kernel(t->b, sz & (TMP_BYTES - 1), (char *)memcg + bpf_core_field_offset(memcg->memory)))
		return -1;
	r->usage = COUNTER_U64(t, usage.counter);
	r->watermark = COUNTER_U64(t, watermark);
	r->max = COUNTER_U64(t, max);
	r->failcnt = COUNTER_U64(t, failcnt);
	if (bpf_core_field_exists(memcg->memory.high)) {
		r->high = COUNTER_U64(t, high);
		r->flags |= ACCT_BPF_F_HIGH;
	}
	if (bpf_probe_read_kernel(t->b, sz & (TMP_BYTES - 1), (char *)memcg + bpf_core_field_offset(memcg->swap)))
		return -1;
	r->swap_usage = COUNTER_U64(t, usage.counter);
	r->swap_max = COUNTER_U64(t, max);
	return 0;
}

static __always_inline void read_memcg(struct record_buf *b, struct mem_cgroup *memcg, enum memcg_access access)
{
	struct acct_bpf_record *r = &b->head;
	/* Page counters (the memory and swap/memsw counters). */
	if (read_counters(r, memcg, access) < 0)
		return;
	r->flags |= ACCT_BPF_F_MEMCG;
	if (lean == ACCT_BPF_LEAN_COUNTERS)
		return;
	if (bpf_core_field_exists(memcg->under_oom) && LOAD(access, memcg, under_oom))
		r->flags |= ACCT_BPF_F_UNDER_OOM;

	if (bpf_core_field_exists(memcg->memory_events)) {
		/* Each event by its index in this kernel's enum (a constant
		 * after relocation, so a direct load) where the array has it;
		 * MEMCG_PROBE copies the array first. */
		u32 n = bpf_core_field_size(memcg->memory_events) / sizeof(long);
		u32 zero = 0;
		struct tmp_buf *t = access == MEMCG_PROBE ? bpf_map_lookup_elem(&tmp, &zero) : 0;
		if (access == MEMCG_PROBE &&
		    (!t || n > 16 ||
		     bpf_probe_read_kernel(t->b, (n * sizeof(long)) & (TMP_BYTES - 1),
					   (char *)memcg + bpf_core_field_offset(memcg->memory_events))))
			n = 0;
#define EVENT(slot, name)                                                            \
	do {                                                                         \
		u32 j = bpf_core_enum_value(enum memcg_memory_event, name);          \
		if (j < n && j < 16)                                                 \
			r->events[slot] = access == MEMCG_PROBE ? tmp_u64(t, j * sizeof(long)) \
								: (u64)memcg->memory_events[j].counter; \
	} while (0)
		EVENT(ACCT_BPF_EV_LOW, MEMCG_LOW);
		EVENT(ACCT_BPF_EV_HIGH, MEMCG_HIGH);
		EVENT(ACCT_BPF_EV_MAX, MEMCG_MAX);
		EVENT(ACCT_BPF_EV_OOM, MEMCG_OOM);
		EVENT(ACCT_BPF_EV_OOM_KILL, MEMCG_OOM_KILL);
		EVENT(ACCT_BPF_EV_OOM_GROUP_KILL, MEMCG_OOM_GROUP_KILL);
#undef EVENT
		if (n)
			r->flags |= ACCT_BPF_F_EVENTS;
	}

	if (lean == ACCT_BPF_LEAN_STATS)
		return;
	/* The flushed stats, behind a pointer since Linux 6.8 (embedded before:
	 * then the field's size is not a pointer's and they are not read). */
	u32 ns = 0;
	if (bpf_core_field_exists(memcg->vmstats) && bpf_core_field_size(memcg->vmstats) == sizeof(void *)) {
		struct memcg_vmstats *vs = LOAD(access, memcg, vmstats);
		u32 sz = bpf_core_field_size(vs->state);
		char *base = (char *)vs + bpf_core_field_offset(vs->state);
		if (sz > ACCT_BPF_STATE_MAX * sizeof(long))
			sz = ACCT_BPF_STATE_MAX * sizeof(long);
		u32 sel = stat_n;
		u32 zero = 0;
		struct tmp_buf *t = bpf_map_lookup_elem(&tmp, &zero);
		if (!vs || !t) {
			/* no stats */
		} else if (sel == 0) {
			if (bpf_probe_read_kernel(b->tail, sz, base) == 0)
				ns = sz / sizeof(long);
		} else if (bpf_probe_read_kernel(t->b, sz & (TMP_BYTES - 1), base) == 0) {
			for (u32 j = 0; j < ACCT_BPF_STAT_SEL && j < sel; j++) {
				u32 i = stat_idx[j];
				if ((u64)(i + 1) * sizeof(long) > sz)
					break;
				b->tail[j] = (long long)tmp_u64(t, i * sizeof(long));
				ns = j + 1;
			}
		}
		if (vs && (sel == 0 ? ns > 0 : ns == sel)) {
			/* The count of unflushed updates exists since Linux 6.8;
			 * before, unknown (all ones: the collector assumes the
			 * flush threshold). */
			if (bpf_core_field_exists(vs->stats_updates))
				r->stats_updates = (u64)(u32)LOAD(access, vs, stats_updates.counter);
			else
				r->stats_updates = ~0ull;
			r->flags |= ACCT_BPF_F_STATS;
		} else
			ns = 0;
	}
	r->nr_state = ns;

	/* One node: its values are the memcg's own (the collector sums them). */
	if (node_n == 0 || nr_nodes <= 1 || !bpf_core_field_exists(((struct mem_cgroup_per_node *)0)->lruvec_stats) ||
	    bpf_core_field_size(((struct mem_cgroup_per_node *)0)->lruvec_stats) != sizeof(void *))
		return;
	u32 items = node_n;
	if (items > ACCT_BPF_NODE_ITEMS)
		items = ACCT_BPF_NODE_ITEMS;
	struct node_ctx nc = { .memcg = memcg, .b = b, .ns = ns, .items = items };
	bpf_loop(nr_nodes < ACCT_BPF_NODES_MAX ? nr_nodes : ACCT_BPF_NODES_MAX, read_node, &nc, 0);
	if (nc.done == 0)
		return;
	r->nr_nodes = nc.done;
	r->nr_node_items = items;
	r->flags |= ACCT_BPF_F_NODES;
}

/* The record of ctx's cgroup (both programs' body). */
static __always_inline int walk_cgroup(struct bpf_iter__cgroup *ctx, enum memcg_access access)
{
	struct seq_file *seq = ctx->meta->seq;
	struct cgroup *cgrp = ctx->cgroup;
	u32 zero = 0;

	if (test_reject)
		return *(volatile int *)((char *)ctx + 4096);
	if (!cgrp) /* the end of the walk */
		return 0;
	u64 cg_id = cgrp->kn->id; /* a trusted pointer: direct loads, no helper calls */
	u32 pn = part_n;
	if (pn > 1 && cg_id % pn != part_k)
		return 0;
	struct record_buf *b = bpf_map_lookup_elem(&scratch, &zero);
	if (!b)
		return 0;
	struct acct_bpf_record *r = &b->head;
	for (u32 i = 0; i < sizeof(*r) / sizeof(u64); i++) /* (too large for an inlined memset) */
		((volatile u64 *)r)[i] = 0;
	r->magic = ACCT_BPF_RECORD_MAGIC;
	r->id = cg_id;
	r->level = cgrp->level;
	r->nr_descendants = cgrp->nr_descendants;
	if (cgrp->nr_populated_csets + cgrp->nr_populated_domain_children + cgrp->nr_populated_threaded_children > 0)
		r->flags |= ACCT_BPF_F_POPULATED;

	/* Pressure totals: the total[PSI_AVGS] row that psi_show() prints in
	 * microseconds, kept current by the kernel's averaging work within
	 * PSI_FREQ (2 s) of a stall (docs/counters.md, "Pressure"). */
	if (!psi_skip && bpf_core_field_exists(cgrp->psi) && bpf_core_field_size(cgrp->psi) == sizeof(void *)) {
		struct psi_group *pg = cgrp->psi;
		u32 row = bpf_core_field_size(pg->total) / 2 / sizeof(u64);
		if (row > ACCT_BPF_PSI_MAX)
			row = ACCT_BPF_PSI_MAX;
		if (pg && row) {
			for (u32 i = 0; i < ACCT_BPF_PSI_MAX; i++)
				if (i < row)
					r->psi_total[i] = pg->total[i];
			r->nr_psi = row;
			r->flags |= ACCT_BPF_F_PSI;
		}
	}

	if (bpf_core_enum_value_exists(enum cgroup_subsys_id, memory_cgrp_id)) {
		u32 id = bpf_core_enum_value(enum cgroup_subsys_id, memory_cgrp_id);
		struct cgroup_subsys_state *css = id < 16 ? cgrp->subsys[id & 15] : 0;
		/* css is the memcg's first member (offset 0 on every kernel) */
		if (css && bpf_core_field_offset(((struct mem_cgroup *)0)->css) == 0) {
			if (access == MEMCG_CAST)
				read_memcg(b, bpf_rdonly_cast(css, bpf_core_type_id_kernel(struct mem_cgroup)), MEMCG_CAST);
			else
				read_memcg(b, (struct mem_cgroup *)css, MEMCG_PROBE);
		}
	}
	u32 tail = (u32)r->nr_state + (u32)r->nr_nodes * r->nr_node_items;
	if (tail > ACCT_BPF_TAIL_MAX)
		tail = ACCT_BPF_TAIL_MAX;
	u32 size = sizeof(*r) + tail * sizeof(long long);
	r->size = size;
	if (!to_map) {
		bpf_seq_write(seq, b, size);
		return 0;
	}
	struct out_buf *o = bpf_map_lookup_elem(&out, &zero);
	u64 off = out_len;
	if (!o || off > ACCT_BPF_OUT_SIZE - sizeof(struct record_buf) || size > sizeof(struct record_buf)) {
		out_full = 1;
		return 0;
	}
	bpf_probe_read_kernel(o->data + off, size, b);
	out_len = off + size;
	return 0;
}

SEC("iter/cgroup")
int acct_cgroup_iter(struct bpf_iter__cgroup *ctx)
{
	return walk_cgroup(ctx, MEMCG_CAST);
}

SEC("iter/cgroup")
int acct_cgroup_iter_probe(struct bpf_iter__cgroup *ctx)
{
	return walk_cgroup(ctx, MEMCG_PROBE);
}

char LICENSE[] SEC("license") = "GPL";
