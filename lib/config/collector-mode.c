/* collector-mode.c - the names of [sampling] collector's modes
 * (collector-mode.h). */
#include "collector-mode.h"

#include <errno.h>
#include <string.h>

static const char *const mode_names[_ACCT_COLLECTOR_MAX] = {
	[ACCT_COLLECTOR_AUTO] = "auto",
	[ACCT_COLLECTOR_BPF] = "bpf",
	[ACCT_COLLECTOR_FILES] = "files",
};

const char *acct_collector_mode_to_string(enum acct_collector_mode m)
{
	return (unsigned)m < _ACCT_COLLECTOR_MAX ? mode_names[m] : NULL;
}

int acct_collector_mode_from_string(const char *s)
{
	for (int m = 0; m < _ACCT_COLLECTOR_MAX; m++)
		if (s && strcmp(s, mode_names[m]) == 0)
			return m;
	return -EINVAL;
}
