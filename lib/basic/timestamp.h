/* timestamp.h - points in time as systemd.time(7) writes them, for acctctl's
 * --since and --until (journalctl --since is the model), turned into
 * CLOCK_REALTIME microseconds since the epoch, the unit of acctd's history API.
 *
 * Accepted, each as the whole string (no blanks around it):
 * - "now", "today", "yesterday", "tomorrow" (the last three: midnight, local
 *   time);
 * - relative to now: "-1h", "+5min", "-2d 3h", "1h ago", "90s ago" (a duration
 *   as parse.h reads it, after "-" or "+", or before " ago");
 * - absolute: "YYYY-MM-DD", "YYYY-MM-DD HH:MM", "YYYY-MM-DD HH:MM:SS[.FRAC]"
 *   (up to 6 places count, up to 9 are accepted), "T" instead of the blank,
 *   and "HH:MM[:SS[.FRAC]]" alone (today); then optionally a zone: "Z", "UTC"
 *   or an offset "+HH:MM", "-HHMM" (a blank may stand before "UTC" and an
 *   offset). Without a zone the time is local (TZ). A date is 1970-01-01 to
 *   9999-12-31, fields in range (no 2026-02-30, no 24:00);
 * - "@SECONDS[.FRAC]": seconds since the epoch.
 * A local time that does not exist or exists twice (a DST change) is what
 * mktime() makes of it. */
#pragma once

#include <stdint.h>

/* The accepted forms, for messages that refuse a value. */
#define ACCT_TIMESTAMP_SYNTAX                                                                                  \
	"now, today, yesterday, tomorrow; a relative time as -1h, +5min, -2d 3h or '1h ago'; "                    \
	"YYYY-MM-DD [HH:MM[:SS[.FRAC]]] (or with T), optionally followed by Z, UTC or +HH:MM; "                   \
	"or @SECONDS since the epoch"

/* Parse s against the current time now_us (CLOCK_REALTIME microseconds; the
 * caller reads the clock, so that this stays pure apart from the local time
 * zone, which "today" and zoneless times read through localtime_r()/mktime()).
 * Returns 0 and *ret; -EINVAL when s is malformed; -ERANGE when it is well
 * formed but out of range (before the epoch, after 9999, a field out of
 * range, or an overflow). *ret is written only on success. */
int acct_parse_timestamp(const char *s, uint64_t now_us, uint64_t *ret);
