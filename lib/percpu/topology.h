/* topology.h - which CPUs and NUMA nodes the counter engine shards over.
 *
 * A topology maps every shard (a possible CPU, or a simulated one) to a NUMA
 * node. The real topology comes from the kernel (possible CPUs) and libnuma
 * (node of each CPU). A simulated topology (say 64 CPUs in 4 nodes) can be
 * injected so that multi-node behaviour is exercised on a small machine: each
 * thread is then spread over the simulated CPUs that its real CPU stands for
 * (see acct_topology_shard_of()), so several shards and nodes see traffic. */
#pragma once

#include <stdbool.h>
#include <stdint.h>

struct acct_topology {
	unsigned nr_shards;    /* CPUs the engine shards over (real or simulated) */
	unsigned nr_nodes;     /* NUMA nodes */
	unsigned nr_real_cpus; /* possible CPUs of this machine (kernel cpu ids < this) */
	bool simulated;        /* injected rather than read from the machine */
	uint16_t *shard_node;  /* node of each shard, nr_shards entries */
};

/* Read this machine's topology: possible CPUs from /sys/devices/system/cpu/possible,
 * the node of each from libnuma (node 0 when NUMA is unavailable).
 * Returns 0 or a negative errno; *ret is written only on success. */
int acct_topology_detect(struct acct_topology **ret);

/* Build a simulated topology of nr_cpus CPUs in nr_nodes nodes, CPUs split into
 * nodes in contiguous equal ranges (the remainder goes to the last nodes).
 * -EINVAL when nr_nodes is 0 or larger than nr_cpus, or nr_cpus > 65536. */
int acct_topology_simulate(unsigned nr_cpus, unsigned nr_nodes, struct acct_topology **ret);

/* Parse a topology spec: "real", or "CPUSxNODES" such as "64x4".
 * Returns 0 or -EINVAL for a malformed spec. */
int acct_topology_from_spec(const char *spec, struct acct_topology **ret);

/* Number of distinct shard slots a thread on one real CPU may use: for the real
 * topology 1; for a simulated one nr_shards / nr_real_cpus, or 0 when there are
 * fewer simulated CPUs than real ones (then no shard is owned by one real CPU). */
unsigned acct_topology_spread(const struct acct_topology *t);

/* The shard a thread on real CPU `cpu` with spread salt `salt` uses. With a
 * spread of at least 1 the result is congruent to cpu modulo nr_real_cpus, so two
 * real CPUs never share a shard (what restartable sequences need). */
unsigned acct_topology_shard_of(const struct acct_topology *t, unsigned cpu, unsigned salt);

/* Number of shards on `node`. */
unsigned acct_topology_node_shards(const struct acct_topology *t, unsigned node);

/* Copy a topology. Returns 0 or -ENOMEM. */
int acct_topology_dup(const struct acct_topology *t, struct acct_topology **ret);

/* Free a topology; accepts NULL; returns NULL. */
struct acct_topology *acct_topology_free(struct acct_topology *t);
