/* format-human.c - sizes and durations as people read them (see
 * format-human.h); shared by acctctl and acctd's own log. */
#include "format-human.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "format-double.h"
#include "util.h"

/* Bytes with binary suffixes and one decimal: 512B, 1.5K, 64.0M, 1.2G. */
char *format_bytes(char buf[static FORMAT_HUMAN_MAX], int64_t v)
{
	static const char suffix[] = "BKMGTPE";
	double d;
	unsigned i = 0;

	if (v < 0) {
		/* a negative size (unexplained memory, a charge given back past
		 * zero) reads as its magnitude does, after a '-' */
		if (v == INT64_MIN) {
			snprintf(buf, FORMAT_HUMAN_MAX, "%" PRId64 "B", v);
			return buf;
		}
		char mag[FORMAT_HUMAN_MAX];
		snprintf(buf, FORMAT_HUMAN_MAX, "-%s", format_bytes(mag, -v));
		return buf;
	}
	if (v < 1024) { /* "%" PRId64 "B", without printf's cost */
		int n = format_fixed(buf, FORMAT_HUMAN_MAX - 1, (double)v, 0);
		buf[n] = 'B';
		buf[n + 1] = '\0';
		return buf;
	}
	d = (double)v;
	while (d >= 1024 && i < 6) {
		d /= 1024;
		i++;
	}
	if (d >= 1023.95 && i < 6) { /* would print as 1024.0 */
		d /= 1024;
		i++;
	}
	int n = format_fixed(buf, FORMAT_HUMAN_MAX - 1, d, 1); /* "%.1f%c" */
	buf[n] = suffix[i];
	buf[n + 1] = '\0';
	return buf;
}

/* "12.500" -> "12.5", "10.0" -> "10" (in place, before a unit). */
static void trim_fraction(char *s)
{
	char *dot = strchr(s, '.'), *end;
	if (!dot)
		return;
	end = dot + strlen(dot);
	while (end > dot + 1 && end[-1] == '0')
		end--;
	if (end == dot + 1)
		end = dot;
	*end = '\0';
}

/* A duration: 250us, 12.5ms, 1.234s, 3min 12.5s, 2h 5min, 3d 4h. */
char *format_duration(char buf[static FORMAT_HUMAN_MAX], int64_t us)
{
	char num[32];
	uint64_t u = abs_u64(us);
	const char *sign = us < 0 ? "-" : "";

	if (u < 1000) {
		snprintf(buf, FORMAT_HUMAN_MAX, "%s%" PRIu64 "us", sign, u);
	} else if (u < 1000000) {
		snprintf(num, sizeof(num), "%.1f", (double)u / 1e3);
		trim_fraction(num);
		snprintf(buf, FORMAT_HUMAN_MAX, "%s%sms", sign, num);
	} else if (u < 60000000) {
		snprintf(num, sizeof(num), "%.3f", (double)u / 1e6);
		trim_fraction(num);
		snprintf(buf, FORMAT_HUMAN_MAX, "%s%ss", sign, num);
	} else if (u < UINT64_C(3600000000)) {
		snprintf(num, sizeof(num), "%.1f", (double)(u % 60000000) / 1e6);
		trim_fraction(num);
		snprintf(buf, FORMAT_HUMAN_MAX, "%s%" PRIu64 "min %ss", sign, u / 60000000, num);
	} else if (u < UINT64_C(86400000000)) {
		snprintf(buf, FORMAT_HUMAN_MAX, "%s%" PRIu64 "h %" PRIu64 "min", sign, u / UINT64_C(3600000000),
			 u % UINT64_C(3600000000) / 60000000);
	} else {
		snprintf(buf, FORMAT_HUMAN_MAX, "%s%" PRIu64 "d %" PRIu64 "h", sign, u / UINT64_C(86400000000),
			 u % UINT64_C(86400000000) / UINT64_C(3600000000));
	}
	return buf;
}
