/* removal-log.h - the names of [log] removals' modes: how removed cgroups
 * reach the log (daemon/acctd/history-recorder.h, manager-history.c). */
#pragma once

#include <stdbool.h>

enum acct_removal_log {
	ACCT_REMOVALS_AUTO,    /* each where the log goes to the journal, else summary */
	ACCT_REMOVALS_SUMMARY, /* one line per rate-limit window: how many, and where their records are */
	ACCT_REMOVALS_EACH,    /* one structured line per cgroup (MESSAGE_ID, ACCTD_*: docs/history.md) */
	_ACCT_REMOVALS_MAX,
};
/* "auto", "summary", "each"; NULL outside the enum. */
const char *acct_removal_log_to_string(enum acct_removal_log l);
/* The mode named s (any case), or -EINVAL. */
int acct_removal_log_from_string(const char *s);
/* The mode in effect: auto is each where the log goes to the journal
 * (`journal`: the service, whose journal keeps one structured accounting
 * record per cgroup, as systemd's own per unit) and summary elsewhere (a
 * terminal or a file, where a host that churns containers would scroll
 * away everything else). The others are themselves. Pure. */
enum acct_removal_log acct_removal_log_effective(enum acct_removal_log l, bool journal);
