/* topology.c - the machine's CPUs and NUMA nodes, or a simulated set of them. */
#include "topology.h"

#include <errno.h>
#include <numa.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "basic/util.h"

DEFINE_TRIVIAL_CLEANUP_FUNC(struct acct_topology *, acct_topology_free);

static int topology_alloc(unsigned nr_shards, struct acct_topology **ret)
{
	_cleanup_(acct_topology_freep) struct acct_topology *t = calloc(1, sizeof(*t));
	if (!t)
		return -ENOMEM;
	t->shard_node = calloc(nr_shards, sizeof(*t->shard_node));
	if (!t->shard_node)
		return -ENOMEM;
	t->nr_shards = nr_shards;
	*ret = TAKE_PTR(t);
	return 0;
}

/* Parse a kernel CPU list ("0-3,5,7-8") and return the highest id + 1. */
static int cpulist_count(const char *s, unsigned *ret)
{
	unsigned highest = 0;
	bool any = false;

	while (*s && *s != '\n') {
		char *end;
		unsigned long a = strtoul(s, &end, 10), b = a;
		if (end == s)
			return -EINVAL;
		s = end;
		if (*s == '-') {
			b = strtoul(s + 1, &end, 10);
			if (end == s + 1 || b < a)
				return -EINVAL;
			s = end;
		}
		if (b >= 65536)
			return -ERANGE;
		highest = MAX(highest, (unsigned)b);
		any = true;
		if (*s == ',')
			s++;
		else if (*s && *s != '\n')
			return -EINVAL;
	}
	if (!any)
		return -EINVAL;
	*ret = highest + 1;
	return 0;
}

static int possible_cpus(unsigned *ret)
{
	char buf[4096];
	FILE *f = fopen("/sys/devices/system/cpu/possible", "re");
	if (f) {
		char *line = fgets(buf, sizeof(buf), f);
		fclose(f);
		if (line && cpulist_count(line, ret) == 0)
			return 0;
	}
	long n = sysconf(_SC_NPROCESSORS_CONF);
	if (n <= 0 || n > 65536)
		return -ENODEV;
	*ret = (unsigned)n;
	return 0;
}

int acct_topology_detect(struct acct_topology **ret)
{
	_cleanup_(acct_topology_freep) struct acct_topology *t = NULL;
	unsigned nr_cpus;
	int r;

	r = possible_cpus(&nr_cpus);
	if (r < 0)
		return r;
	r = topology_alloc(nr_cpus, &t);
	if (r < 0)
		return r;
	t->nr_real_cpus = nr_cpus;
	t->nr_nodes = 1;
	if (numa_available() >= 0) {
		int max_node = numa_max_node();
		t->nr_nodes = max_node >= 0 ? (unsigned)max_node + 1 : 1;
		for (unsigned cpu = 0; cpu < nr_cpus; cpu++) {
			int node = numa_node_of_cpu((int)cpu);
			/* CPUs that are possible but not present have no node yet. */
			t->shard_node[cpu] = node >= 0 && (unsigned)node < t->nr_nodes ? (uint16_t)node : 0;
		}
	}
	*ret = TAKE_PTR(t);
	return 0;
}

int acct_topology_simulate(unsigned nr_cpus, unsigned nr_nodes, struct acct_topology **ret)
{
	_cleanup_(acct_topology_freep) struct acct_topology *t = NULL;
	unsigned real;
	int r;

	if (nr_nodes == 0 || nr_nodes > nr_cpus || nr_cpus > 65536)
		return -EINVAL;
	r = possible_cpus(&real);
	if (r < 0)
		return r;
	r = topology_alloc(nr_cpus, &t);
	if (r < 0)
		return r;
	t->nr_real_cpus = real;
	t->nr_nodes = nr_nodes;
	t->simulated = true;
	/* Node n holds CPUs [n*q + min(n, extra) ...) where the first nodes take
	 * q CPUs and the last `rem` nodes one more. */
	unsigned q = nr_cpus / nr_nodes, rem = nr_cpus % nr_nodes, cpu = 0;
	for (unsigned node = 0; node < nr_nodes; node++) {
		unsigned n = q + (node >= nr_nodes - rem ? 1 : 0);
		for (unsigned i = 0; i < n; i++)
			t->shard_node[cpu++] = (uint16_t)node;
	}
	*ret = TAKE_PTR(t);
	return 0;
}

int acct_topology_from_spec(const char *spec, struct acct_topology **ret)
{
	unsigned cpus, nodes;
	char tail;

	if (!spec || strcmp(spec, "real") == 0)
		return acct_topology_detect(ret);
	if (sscanf(spec, "%ux%u%c", &cpus, &nodes, &tail) != 2)
		return -EINVAL;
	return acct_topology_simulate(cpus, nodes, ret);
}

unsigned acct_topology_spread(const struct acct_topology *t)
{
	if (!t->simulated)
		return 1;
	return t->nr_shards / t->nr_real_cpus;
}

unsigned acct_topology_shard_of(const struct acct_topology *t, unsigned cpu, unsigned salt)
{
	unsigned spread = acct_topology_spread(t);

	if (spread == 0)
		return (cpu + salt) % t->nr_shards;
	if (cpu >= t->nr_real_cpus) /* never for kernel cpu ids; be safe anyway */
		cpu %= t->nr_real_cpus;
	return cpu + t->nr_real_cpus * (salt % spread);
}

unsigned acct_topology_node_shards(const struct acct_topology *t, unsigned node)
{
	unsigned n = 0;
	for (unsigned i = 0; i < t->nr_shards; i++)
		n += t->shard_node[i] == node;
	return n;
}

int acct_topology_dup(const struct acct_topology *t, struct acct_topology **ret)
{
	struct acct_topology *copy;
	int r = topology_alloc(t->nr_shards, &copy);
	if (r < 0)
		return r;
	uint16_t *nodes = copy->shard_node;
	*copy = *t;
	copy->shard_node = nodes;
	memcpy(nodes, t->shard_node, t->nr_shards * sizeof(*nodes));
	*ret = copy;
	return 0;
}

struct acct_topology *acct_topology_free(struct acct_topology *t)
{
	if (t) {
		free(t->shard_node);
		free(t);
	}
	return NULL;
}
