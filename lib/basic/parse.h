/* parse.h - the value syntax shared by the configuration, the API and acctctl:
 * sizes, durations and booleans, each a strict parser of a whole string.
 *
 * The syntax is systemd's, as unit files write MemoryMax= and RuntimeMaxSec=,
 * so that an operator writes the same thing in both places:
 * - Sizes: a number, a fraction allowed ("1.5G"), then B, K, M, G, T, P, E
 *   (powers of 1024) or their IEC names KiB, MiB, GiB, TiB, PiB, EiB; a bare
 *   number is bytes and takes no fraction; blanks may stand before the unit.
 *   Case matters: "MB", "mb", "m" and "Gb" are refused as ambiguous (decimal
 *   megabytes? bits?), and acct_size_refusal() names the unit to write.
 *   A fraction rounds down to a whole byte.
 * - Durations: one number with a unit, or several summed ("1h 30min",
 *   "1h30min"), fractions allowed ("1.5s"); a bare number alone is seconds.
 *   Units us/usec, ms/msec, s/sec/second(s), m/min/minute(s), h/hr/hour(s),
 *   d/day(s), w/week(s), M/month(s) (30.44 days), y/year(s) (365.25 days).
 * - Booleans: yes/no/true/false/on/off/1/0 in any case.
 * Every parser returns 0, -EINVAL (malformed) or -ERANGE (a well-formed value
 * out of range, or negative); *ret is written only on success. Pure: no I/O,
 * no allocation. */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#define USEC_PER_MSEC UINT64_C(1000)
#define USEC_PER_SEC UINT64_C(1000000)
#define USEC_PER_MIN (60 * USEC_PER_SEC)
#define USEC_PER_HOUR (60 * USEC_PER_MIN)

#define SIZE_K (UINT64_C(1) << 10)
#define SIZE_M (UINT64_C(1) << 20)
#define SIZE_G (UINT64_C(1) << 30)
#define SIZE_T (UINT64_C(1) << 40)
#define SIZE_P (UINT64_C(1) << 50)
#define SIZE_E (UINT64_C(1) << 60)

/* The accepted forms, for messages that refuse a value. */
#define ACCT_SIZE_SYNTAX "a number with B, K, M, G, T, P or E (powers of 1024; KiB ... EiB also), as 512K, 1.5G"
#define ACCT_DURATION_SYNTAX "a number with us, ms, s, min, h, d or w, as 250ms, 1.5s, 1h 30min; a bare number is seconds"

int acct_parse_size(const char *s, uint64_t *ret);
/* Why acct_parse_size() refuses s, for a message "invalid size 'S' (WHY)": an
 * ambiguous unit ("MB", "m", "Gb", "kib") names the one to write, a fraction
 * of a byte says so, anything else lists the accepted forms. A static string;
 * never NULL. */
const char *acct_size_refusal(const char *s);
int acct_parse_duration_us(const char *s, uint64_t *ret);
int acct_parse_bool(const char *s, bool *ret);
/* A plain decimal integer, no unit. */
int acct_parse_uint64(const char *s, uint64_t *ret);
