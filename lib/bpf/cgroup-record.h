/* cgroup-record.h - the record the BPF cgroup iterator writes per cgroup.
 *
 * Shared by the BPF program (cgroup-iter.bpf.c, compiled with clang -target
 * bpf) and the collector that reads it (bpf-collector.c): plain fixed-width
 * types only, no kernel or libc headers. One record per cgroup visited, in
 * the iterator's pre-order; `size` is sizeof(struct acct_bpf_record) as the
 * program was built, so a reader built from other sources refuses the stream
 * instead of misreading it.
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
};

struct acct_bpf_record {
	unsigned int magic;            /* ACCT_BPF_RECORD_MAGIC */
	unsigned int size;             /* sizeof(struct acct_bpf_record) */
	unsigned long long id;         /* cgroup id (kernfs node id = directory inode) */
	unsigned int flags;            /* enum acct_bpf_record_flags */
	int level;                     /* depth below the hierarchy root */
	int nr_descendants;            /* live descendants */
	unsigned int nr_state;         /* entries of state[] copied */
	/* page counters, pages */
	unsigned long long usage;      /* memory.current / memory.usage_in_bytes */
	unsigned long long swap_usage; /* v2 swap.current, v1 memsw usage (memory + swap) */
	unsigned long long watermark;  /* memory.peak / max_usage_in_bytes */
	unsigned long long max;        /* limit; PAGE_COUNTER_MAX for none */
	unsigned long long high;       /* v2 memory.high; valid with ACCT_BPF_F_HIGH */
	unsigned long long swap_max;   /* v2 swap.max, v1 memsw limit */
	unsigned long long failcnt;    /* v1 memory.failcnt */
	unsigned long long stats_updates; /* updates not yet flushed into state[] (pages) */
	unsigned long long events[_ACCT_BPF_EV_MAX];
	long long state[ACCT_BPF_STATE_MAX]; /* memcg->vmstats->state[], flushed values */
	/* per node: the flushed per-node values of the stat items the collector
	 * chose (node_idx[] of the program), in state[]'s units */
	long long node_state[ACCT_BPF_NODES_MAX][ACCT_BPF_NODE_ITEMS];
};
