/* quantity.h - the quantities acctd keeps for every cgroup, as pure data:
 * their stable API names, units, sampling group and kind. The one table that
 * the ledger (lib/core/ledger.c), the API and acctctl all read, so that a
 * name's unit is never guessed. No I/O, no allocation, no dependencies. */
#pragma once

#include <stdbool.h>

enum acct_quantity {
	ACCT_Q_MEMORY,          /* bytes in use: memory.current / memory.usage_in_bytes */
	ACCT_Q_WORKING_SET,     /* memory - inactive_file (bytes), both of one slow pass */
	ACCT_Q_CPU_USAGE,       /* cumulative CPU time, usec */
	ACCT_Q_CPU_USER,
	ACCT_Q_CPU_SYSTEM,
	ACCT_Q_CPU_PERIODS,     /* CFS bandwidth periods elapsed */
	ACCT_Q_CPU_THROTTLED_PERIODS,
	ACCT_Q_CPU_THROTTLED,   /* usec throttled */
	ACCT_Q_PSI_CPU_SOME,    /* cumulative stall time, usec */
	ACCT_Q_PSI_CPU_FULL,
	ACCT_Q_PSI_MEMORY_SOME,
	ACCT_Q_PSI_MEMORY_FULL,
	ACCT_Q_PSI_IO_SOME,
	ACCT_Q_PSI_IO_FULL,
	ACCT_Q_MEMORY_PEAK,     /* memory.peak / memory.max_usage_in_bytes */
	ACCT_Q_MEMORY_MAX,      /* limit; -1 for none */
	ACCT_Q_MEMORY_HIGH,     /* v2 high limit; -1 for none */
	ACCT_Q_SWAP,            /* swap in use, bytes */
	ACCT_Q_SWAP_MAX,        /* -1 for none */
	ACCT_Q_TASKS,           /* threads in the cgroup and its descendants */
	/* Block I/O, hierarchical, summed over the devices the kernel lists (v2
	 * io.stat; v1 blkio.throttle.io_service_bytes_recursive and
	 * io_serviced_recursive); per device in struct acct_cgroup's io. */
	ACCT_Q_IO_READ_BYTES,
	ACCT_Q_IO_WRITE_BYTES,
	ACCT_Q_IO_READ_IOS,     /* operations */
	ACCT_Q_IO_WRITE_IOS,
	ACCT_Q_IO_DISCARD_BYTES,
	ACCT_Q_IO_DISCARD_IOS,
	/* Memory events, hierarchical (v2 memory.events; v1: memory.failcnt as
	 * "max", memory.oom_control's oom_kill). */
	ACCT_Q_MEMORY_EVENTS_LOW,
	ACCT_Q_MEMORY_EVENTS_HIGH,
	ACCT_Q_MEMORY_EVENTS_MAX,
	ACCT_Q_MEMORY_EVENTS_OOM,
	ACCT_Q_MEMORY_EVENTS_OOM_KILL,
	ACCT_Q_MEMORY_EVENTS_OOM_GROUP_KILL,
	ACCT_Q_MEMORY_UNDER_OOM, /* v1 memory.oom_control under_oom: 0 or 1 */
	_ACCT_Q_MAX,
};

enum acct_unit { ACCT_UNIT_BYTES, ACCT_UNIT_USEC, ACCT_UNIT_COUNT };

/* Which sampling pass reads a quantity, and so which age applies to it.
 * Pressure is read at fast passes but only where something can have stalled
 * (lib/core/sampler.c, psi_due()), so it carries an age of its own. */
enum acct_sample_group { ACCT_GROUP_FAST, ACCT_GROUP_SLOW, ACCT_GROUP_LOAD, ACCT_GROUP_PSI, _ACCT_GROUP_MAX };

struct acct_quantity_info {
	const char *name;   /* stable API name, e.g. "memory", "cpu.usage", "psi.io.full" */
	enum acct_unit unit;
	enum acct_sample_group group;
	bool cumulative;    /* only grows while the cgroup lives */
	bool limit;         /* -1 means "no limit" */
};

/* The description of quantity q; NULL if q is not a quantity. */
const struct acct_quantity_info *acct_quantity_info(enum acct_quantity q);
/* Look a quantity up by its API name: the quantity, or -ENOENT if unknown. */
int acct_quantity_from_name(const char *name);
