/* fresh.h - one cgroup's memory and CPU time, read from the kernel now.
 *
 * The ledger serves what the last pass read, with its age. A caller that
 * needs the value as it is now (Get and Compare with precise, acctctl show
 * --fresh) reads the cgroup here instead: on the calling thread, by path from
 * the layout (mount of the hierarchy + the cgroup's path + the file), with no
 * sampler or ledger state touched, so it is safe while a pass runs.
 *
 * What is read, from the same sources a pass uses for this cgroup's
 * hierarchies (sampler-files.c, pick_files()):
 * - memory: through the BPF collector where it serves the memcg hierarchy
 *   (the unified one with v2 memory, else v1 "memory"), an iterator
 *   restricted to the one cgroup; else, and where the collector only reads
 *   pinned iterators, memory.current (v2) or memory.usage_in_bytes (v1). The
 *   bound is the kernel's: the charge stocks (acct_memcg_memory_bound()), by
 *   the record's descendants, or every slot counted when read from the file.
 * - CPU time: v2 cpu.stat (usage_usec, user_usec, system_usec) or v1
 *   cpuacct.usage (ns) and cpuacct.stat (USER_HZ ticks, so user and system
 *   are exact to a tick only: their bound is one tick). Exact otherwise.
 * The root is not read: its memory is defined from its children
 * (acct_sampler_root_memory()), which one read cannot give; the result says
 * so in `not_read`. */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "basic/quantity.h"
#include "bpf/bpf-collector.h"
#include "cgroup/cgroup-layout.h"

/* The quantities a fresh read gives, in this order. */
#define ACCT_FRESH_MAX 4
extern const enum acct_quantity acct_fresh_quantities[ACCT_FRESH_MAX];

struct acct_fresh_options {
	const struct acct_hierarchies *layout;
	/* The collector, or NULL to read files only (collector = files, or the
	 * sampler moved memory back to files). */
	const struct acct_bpf_collector *collector;
	/* For bounds and record pages; NULL: the collector's, else detected
	 * once per process. */
	const struct acct_memcg_batching *batching;
	long user_hz; /* 0: sysconf(_SC_CLK_TCK) */
};

struct acct_fresh_reading {
	uint64_t read_us;  /* monotonic time after the last read */
	uint64_t have;     /* bit (1 << q) per quantity read */
	int64_t value[_ACCT_Q_MAX];
	uint64_t bound[_ACCT_Q_MAX]; /* the kernel's uncertainty of the value as read */
	const char *memory_source; /* "bpf" or the file read; NULL when memory was not read */
	const char *not_read;      /* why nothing was read (the root); NULL otherwise. Static. */
};

/* Read the cgroup at `path` ("/..."), which is in the hierarchies
 * `hierarchies` (bits of enum acct_hierarchy, as the ledger records them).
 * `inodes` (NULL: none) are its directories' inodes per hierarchy, as the
 * ledger records them (0: not known): a directory at the path that is no
 * longer that inode is another cgroup made since under the same path, whose
 * values are not this one's, and reads as this one gone. A quantity whose
 * file the cgroup lacks is left out of `have`. Returns 0, -ENOENT when the
 * cgroup is gone (a file of a hierarchy it is in has vanished, or the path
 * is another cgroup's), -EBADMSG when a file does not parse, -EINVAL, or
 * another negative errno of a read. */
int acct_fresh_read(const struct acct_fresh_options *opts, const char *path, uint32_t hierarchies,
		    const uint64_t *inodes, struct acct_fresh_reading *ret);
