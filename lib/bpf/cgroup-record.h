/* cgroup-record.h - the record the BPF cgroup iterator writes per cgroup.
 *
 * Shared by the BPF program (cgroup-iter.bpf.c, compiled with clang -target
 * bpf) and the collector that reads it (bpf-collector.c): plain fixed-width
 * types only, no kernel or libc headers. One record per cgroup visited, in
 * the iterator's pre-order: a fixed head and a tail whose length the head
 * gives (`size`, a multiple of 8), so that a walk's output stays small: the
 * kernel's cgroup iterator must fit a whole session in its 8-page buffer, and
 * a hierarchy is read in as many sessions as that takes (bpf-collector.c).
 * A reader refuses a stream whose magic or sizes do not add up.
 *
 * Memory values are the kernel's own, in pages as the kernel keeps them
 * (page counters) or in the units of the memcg stat item (state[]: pages for
 * most items, bytes for the *_B items, KiB for kernel stack; the collector's
 * index map says which). */
#pragma once

#define ACCT_BPF_RECORD_MAGIC 0x61637462u /* "actb" */
#define ACCT_BPF_STATE_MAX 64   /* memcg stat items copied (the kernel has ~40) */
#define ACCT_BPF_NODES_MAX 8    /* NUMA nodes with per-node values */
#define ACCT_BPF_NODE_ITEMS 6   /* stat items copied per node (the collector picks them) */
#define ACCT_BPF_PSI_MAX 6      /* pressure totals copied (the kernel's NR_PSI_STATES - 1) */

/* Which memcg events are copied, in this order (enum memcg_memory_event). */
enum acct_bpf_event {
	ACCT_BPF_EV_LOW,
	ACCT_BPF_EV_HIGH,
	ACCT_BPF_EV_MAX,
	ACCT_BPF_EV_OOM,
	ACCT_BPF_EV_OOM_KILL,
	ACCT_BPF_EV_OOM_GROUP_KILL,
	_ACCT_BPF_EV_MAX,
};

enum acct_bpf_record_flags {
	ACCT_BPF_F_POPULATED = 1u << 0, /* cgroup_is_populated(): tasks in it or below */
	ACCT_BPF_F_MEMCG = 1u << 1,     /* the memory fields below were read */
	ACCT_BPF_F_HIGH = 1u << 2,      /* this kernel keeps memory.high in the page counter */
	ACCT_BPF_F_STATS = 1u << 3,     /* state[] and stats_updates were read */
	ACCT_BPF_F_EVENTS = 1u << 4,    /* events[] were read */
	ACCT_BPF_F_NODES = 1u << 5,     /* node_state[] were read */
	ACCT_BPF_F_UNDER_OOM = 1u << 6, /* v1: the memcg is under OOM */
	ACCT_BPF_F_PSI = 1u << 7,       /* psi_total[] were read (nr_psi of them) */
};

struct acct_bpf_record {
	unsigned int magic;            /* ACCT_BPF_RECORD_MAGIC */
	unsigned int size;             /* bytes of this record: the head and its tail */
	unsigned long long id;         /* cgroup id (kernfs node id = directory inode) */
	unsigned int flags;            /* enum acct_bpf_record_flags */
	int level;                     /* depth below the hierarchy root */
	int nr_descendants;            /* live descendants */
	unsigned short nr_state;       /* tail: stat slots */
	unsigned char nr_nodes;        /* tail: nodes ... */
	unsigned char nr_node_items;   /* ... of this many items each */
	/* page counters, pages */
	unsigned long long usage;      /* memory.current / memory.usage_in_bytes */
	unsigned long long swap_usage; /* v2 swap.current, v1 memsw usage (memory + swap) */
	unsigned long long watermark;  /* memory.peak / max_usage_in_bytes */
	unsigned long long max;        /* limit; PAGE_COUNTER_MAX for none */
	unsigned long long high;       /* v2 memory.high; valid with ACCT_BPF_F_HIGH */
	unsigned long long swap_max;   /* v2 swap.max, v1 memsw limit */
	unsigned long long failcnt;    /* v1 memory.failcnt */
	unsigned long long stats_updates; /* updates not yet flushed into the stats (pages); all ones:
					   * unknown (kernels before 6.8 keep no such count) */
	unsigned long long events[_ACCT_BPF_EV_MAX];
	/* The cgroup's pressure totals as the kernel last aggregated them
	 * (psi_group's total[PSI_AVGS], ns, in the kernel's order of enum
	 * psi_states), the first nr_psi of them: the witness of pressure
	 * (docs/counters.md, "Pressure"). Read on walks of the unified
	 * hierarchy, where tasks' stalls are counted. */
	unsigned long long psi_total[ACCT_BPF_PSI_MAX];
	unsigned int nr_psi;
	unsigned int psi_pad;
	/* The tail, 8-byte values:
	 *   long long state[nr_state]: flushed memcg stats (memcg->vmstats->state[]):
	 *     every item when the program's stat selection is empty, else the
	 *     selected items in the order selected (a slot, not the kernel's index);
	 *   long long node[nr_nodes][nr_node_items]: the flushed per-node values
	 *     of the node items the collector chose, in state[]'s units. */
};

#define ACCT_BPF_STAT_SEL 32 /* stat items a selection may name */
/* What a walk leaves out of the memcg records (the program's `lean`). */
#define ACCT_BPF_LEAN_COUNTERS 1 /* all but the page counters */
#define ACCT_BPF_LEAN_STATS 2    /* the stats and per-node values */
/* The program's output map (one value of this many bytes): a walk writes its
 * records there when the collector attached the iterator itself. */
#define ACCT_BPF_OUT_SIZE (4u << 20)
/* The longest record: every stat item and every node's items. */
#define ACCT_BPF_TAIL_MAX (ACCT_BPF_STATE_MAX + ACCT_BPF_NODES_MAX * ACCT_BPF_NODE_ITEMS)

static inline const long long *acct_bpf_record_state(const struct acct_bpf_record *r)
{
	return (const long long *)(r + 1);
}

static inline const long long *acct_bpf_record_node(const struct acct_bpf_record *r, unsigned node)
{
	return acct_bpf_record_state(r) + r->nr_state + node * r->nr_node_items;
}
