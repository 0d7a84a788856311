/* metrics-families.c - family group names and the word lists that select
 * them. See metrics-families.h. */
#include "metrics-families.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "basic/util.h"

static const char *const family_names[_ACCT_MF_MAX] = {
	[ACCT_MF_MEMORY] = "memory",
	[ACCT_MF_MEMORY_STAT] = "memory_stat",
	[ACCT_MF_MEMORY_EVENTS] = "memory_events",
	[ACCT_MF_NUMA] = "numa",
	[ACCT_MF_CPU] = "cpu",
	[ACCT_MF_PRESSURE] = "pressure",
	[ACCT_MF_PRESSURE_AVG] = "pressure_averages",
	[ACCT_MF_LOAD] = "load",
	[ACCT_MF_CPU_RATE] = "cpu_rate",
	[ACCT_MF_ACCURACY] = "accuracy",
	[ACCT_MF_ENGINE] = "engine",
	[ACCT_MF_ENGINE_KINDS] = "engine_kinds",
	[ACCT_MF_PROCESS] = "process",
	[ACCT_MF_IO] = "io",
	[ACCT_MF_IO_DEVICES] = "io_devices",
	[ACCT_MF_IO_RATE] = "io_rate",
	[ACCT_MF_REMOVED] = "removed",
	[ACCT_MF_CADVISOR] = "cadvisor",
	[ACCT_MF_IDENTITY] = "identity",
};

const char *acct_metrics_family_to_string(enum acct_metrics_family f)
{
	return f < _ACCT_MF_MAX ? family_names[f] : NULL;
}

int acct_metrics_family_from_string(const char *s)
{
	for (int i = 0; i < _ACCT_MF_MAX; i++)
		if (strcmp(family_names[i], s) == 0)
			return i;
	return -ENOENT;
}

char *acct_metrics_family_names(char *buf, size_t size)
{
	size_t len = 0;

	if (size == 0)
		return buf;
	buf[0] = '\0';
	static const char *const sets[] = { "all", "default", "none" }; /* acct_metrics_families_apply()'s */
	for (size_t i = 0; i < (size_t)_ACCT_MF_MAX + ELEMENTSOF(sets) && len < size; i++) {
		const char *w = i < _ACCT_MF_MAX ? family_names[i] : sets[i - _ACCT_MF_MAX];
		int n = snprintf(buf + len, size - len, "%s%s", i ? ", " : "", w);
		if (n < 0)
			break;
		len += (size_t)n;
	}
	return buf;
}

int acct_metrics_families_apply(uint32_t *set, char *const *words, const char **ret_bad)
{
	uint32_t v = *set;

	for (; words && *words; words++) {
		const char *w = *words;
		bool remove = w[0] == '-';
		if (w[0] == '-' || w[0] == '+')
			w++;
		uint32_t bits;
		int f;
		if (strcmp(w, "all") == 0)
			bits = ACCT_METRICS_FAMILIES_ALL;
		else if (strcmp(w, "default") == 0)
			bits = ACCT_METRICS_FAMILIES_DEFAULT;
		else if (strcmp(w, "none") == 0 && !remove && w == *words) {
			v = 0;
			continue;
		} else if ((f = acct_metrics_family_from_string(w)) >= 0)
			bits = 1u << f;
		else {
			if (ret_bad)
				*ret_bad = *words;
			return -EINVAL;
		}
		v = remove ? v & ~bits : v | bits;
	}
	*set = v;
	return 0;
}
