/* removal-log.c - the names of [log] removals' modes (removal-log.h). */
#include "removal-log.h"

#include <errno.h>
#include <stddef.h>
#include <strings.h>

static const char *const removal_log_names[_ACCT_REMOVALS_MAX] = {
	[ACCT_REMOVALS_AUTO] = "auto",
	[ACCT_REMOVALS_SUMMARY] = "summary",
	[ACCT_REMOVALS_EACH] = "each",
};

const char *acct_removal_log_to_string(enum acct_removal_log l)
{
	return (unsigned)l < _ACCT_REMOVALS_MAX ? removal_log_names[l] : NULL;
}

int acct_removal_log_from_string(const char *s)
{
	for (int i = 0; s && i < _ACCT_REMOVALS_MAX; i++)
		if (strcasecmp(s, removal_log_names[i]) == 0)
			return i;
	return -EINVAL;
}

enum acct_removal_log acct_removal_log_effective(enum acct_removal_log l, bool journal)
{
	if (l != ACCT_REMOVALS_AUTO)
		return l;
	return journal ? ACCT_REMOVALS_EACH : ACCT_REMOVALS_SUMMARY;
}
