/* format-human.h - sizes and durations as people read them, the one format
 * of acctctl's tables and of acctd's own log: 512B, 1.5K, 64.0M, 1.2G and
 * 250us, 12.5ms, 1.234s, 3min 12.5s, 2h 5min, 3d 4h. No allocation. */
#pragma once

#include <stdint.h>

#define FORMAT_HUMAN_MAX 64 /* bytes of buffer, enough for any int64_t */

/* Bytes with binary suffixes (powers of 1024) and one decimal; below 1024 as
 * "NB"; negative values as their magnitude after a '-' ("-9.6M"; INT64_MIN
 * as "NB"). Writes buf and returns it. */
char *format_bytes(char buf[static FORMAT_HUMAN_MAX], int64_t v);
/* A duration of `us` microseconds, the largest two units or a decimal of one;
 * negative with a leading '-'. Writes buf and returns it. */
char *format_duration(char buf[static FORMAT_HUMAN_MAX], int64_t us);
