/* removal-log.h - the names of [log] removals' modes: how removed cgroups
 * reach the log (daemon/acctd/history-recorder.h, manager-history.c). */
#pragma once

enum acct_removal_log {
	ACCT_REMOVALS_SUMMARY, /* one line per rate-limit window: how many, and where their records are */
	ACCT_REMOVALS_EACH,    /* one structured line per cgroup (MESSAGE_ID, ACCTD_*: docs/history.md) */
	_ACCT_REMOVALS_MAX,
};
/* "summary", "each"; NULL outside the enum. */
const char *acct_removal_log_to_string(enum acct_removal_log l);
/* The mode named s (any case), or -EINVAL. */
int acct_removal_log_from_string(const char *s);
