/* parse.h - the value syntax shared by the configuration, the API and acctctl:
 * sizes, durations and booleans, each a strict parser of a whole string.
 *
 * Sizes take K/M/G/T suffixes (powers of 1024; the letter's case and a
 * trailing B are free), durations us/ms/s/min/h (a bare number is seconds),
 * booleans yes/no/true/false/on/off/1/0 in any case. Every parser returns 0,
 * -EINVAL (malformed) or -ERANGE (a well-formed value out of range, or
 * negative); *ret is written only on success. Pure: no I/O, no allocation. */
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

int acct_parse_size(const char *s, uint64_t *ret);
int acct_parse_duration_us(const char *s, uint64_t *ret);
int acct_parse_bool(const char *s, bool *ret);
/* A plain decimal integer, no unit. */
int acct_parse_uint64(const char *s, uint64_t *ret);
