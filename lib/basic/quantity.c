/* quantity.c - the table of quantities (see quantity.h). */
#include "quantity.h"

#include <errno.h>
#include <string.h>

static const struct acct_quantity_info quantities[_ACCT_Q_MAX] = {
	[ACCT_Q_MEMORY] = { "memory", ACCT_UNIT_BYTES, ACCT_GROUP_FAST, false, false },
	[ACCT_Q_WORKING_SET] = { "memory.working_set", ACCT_UNIT_BYTES, ACCT_GROUP_SLOW, false, false },
	[ACCT_Q_CPU_USAGE] = { "cpu.usage", ACCT_UNIT_USEC, ACCT_GROUP_FAST, true, false },
	[ACCT_Q_CPU_USER] = { "cpu.user", ACCT_UNIT_USEC, ACCT_GROUP_FAST, true, false },
	[ACCT_Q_CPU_SYSTEM] = { "cpu.system", ACCT_UNIT_USEC, ACCT_GROUP_FAST, true, false },
	[ACCT_Q_CPU_PERIODS] = { "cpu.periods", ACCT_UNIT_COUNT, ACCT_GROUP_FAST, true, false },
	[ACCT_Q_CPU_THROTTLED_PERIODS] = { "cpu.throttled_periods", ACCT_UNIT_COUNT, ACCT_GROUP_FAST, true, false },
	[ACCT_Q_CPU_THROTTLED] = { "cpu.throttled", ACCT_UNIT_USEC, ACCT_GROUP_FAST, true, false },
	[ACCT_Q_PSI_CPU_SOME] = { "psi.cpu.some", ACCT_UNIT_USEC, ACCT_GROUP_PSI, true, false },
	[ACCT_Q_PSI_CPU_FULL] = { "psi.cpu.full", ACCT_UNIT_USEC, ACCT_GROUP_PSI, true, false },
	[ACCT_Q_PSI_MEMORY_SOME] = { "psi.memory.some", ACCT_UNIT_USEC, ACCT_GROUP_PSI, true, false },
	[ACCT_Q_PSI_MEMORY_FULL] = { "psi.memory.full", ACCT_UNIT_USEC, ACCT_GROUP_PSI, true, false },
	[ACCT_Q_PSI_IO_SOME] = { "psi.io.some", ACCT_UNIT_USEC, ACCT_GROUP_PSI, true, false },
	[ACCT_Q_PSI_IO_FULL] = { "psi.io.full", ACCT_UNIT_USEC, ACCT_GROUP_PSI, true, false },
	[ACCT_Q_MEMORY_PEAK] = { "memory.peak", ACCT_UNIT_BYTES, ACCT_GROUP_SLOW, false, false },
	[ACCT_Q_MEMORY_MAX] = { "memory.max", ACCT_UNIT_BYTES, ACCT_GROUP_SLOW, false, true },
	[ACCT_Q_MEMORY_HIGH] = { "memory.high", ACCT_UNIT_BYTES, ACCT_GROUP_SLOW, false, true },
	[ACCT_Q_SWAP] = { "swap", ACCT_UNIT_BYTES, ACCT_GROUP_SLOW, false, false },
	[ACCT_Q_SWAP_MAX] = { "swap.max", ACCT_UNIT_BYTES, ACCT_GROUP_SLOW, false, true },
	[ACCT_Q_TASKS] = { "tasks", ACCT_UNIT_COUNT, ACCT_GROUP_LOAD, false, false },
	/* io.stat and memory.events are as cheap as cpu.stat (no walk of
	 * memory.stat's size), and rates need the fast interval: fast group. */
	[ACCT_Q_IO_READ_BYTES] = { "io.read_bytes", ACCT_UNIT_BYTES, ACCT_GROUP_FAST, true, false },
	[ACCT_Q_IO_WRITE_BYTES] = { "io.write_bytes", ACCT_UNIT_BYTES, ACCT_GROUP_FAST, true, false },
	[ACCT_Q_IO_READ_IOS] = { "io.read_ios", ACCT_UNIT_COUNT, ACCT_GROUP_FAST, true, false },
	[ACCT_Q_IO_WRITE_IOS] = { "io.write_ios", ACCT_UNIT_COUNT, ACCT_GROUP_FAST, true, false },
	[ACCT_Q_IO_DISCARD_BYTES] = { "io.discard_bytes", ACCT_UNIT_BYTES, ACCT_GROUP_FAST, true, false },
	[ACCT_Q_IO_DISCARD_IOS] = { "io.discard_ios", ACCT_UNIT_COUNT, ACCT_GROUP_FAST, true, false },
	[ACCT_Q_MEMORY_EVENTS_LOW] = { "memory.events.low", ACCT_UNIT_COUNT, ACCT_GROUP_FAST, true, false },
	[ACCT_Q_MEMORY_EVENTS_HIGH] = { "memory.events.high", ACCT_UNIT_COUNT, ACCT_GROUP_FAST, true, false },
	[ACCT_Q_MEMORY_EVENTS_MAX] = { "memory.events.max", ACCT_UNIT_COUNT, ACCT_GROUP_FAST, true, false },
	[ACCT_Q_MEMORY_EVENTS_OOM] = { "memory.events.oom", ACCT_UNIT_COUNT, ACCT_GROUP_FAST, true, false },
	[ACCT_Q_MEMORY_EVENTS_OOM_KILL] = { "memory.events.oom_kill", ACCT_UNIT_COUNT, ACCT_GROUP_FAST, true, false },
	[ACCT_Q_MEMORY_EVENTS_OOM_GROUP_KILL] = { "memory.events.oom_group_kill", ACCT_UNIT_COUNT, ACCT_GROUP_FAST, true,
						  false },
	[ACCT_Q_MEMORY_UNDER_OOM] = { "memory.under_oom", ACCT_UNIT_COUNT, ACCT_GROUP_FAST, false, false },
};

const struct acct_quantity_info *acct_quantity_info(enum acct_quantity q)
{
	return q < _ACCT_Q_MAX ? &quantities[q] : NULL;
}

int acct_quantity_from_name(const char *name)
{
	for (int q = 0; q < _ACCT_Q_MAX; q++)
		if (strcmp(quantities[q].name, name) == 0)
			return q;
	return -ENOENT;
}
