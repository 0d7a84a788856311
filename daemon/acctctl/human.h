/* human.h - values as people read them: bytes with binary suffixes,
 * durations, ages, the glyphs of the output (UTF-8 or ASCII) and text widths.
 * Every fmt_* returns its text by value, so that a call can sit in an argument
 * list: printf("%s", fmt_bytes(v).s). No allocation but ellipsize_middle(). */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "basic/quantity.h"

/* Whether the locale's character set is UTF-8 (set by main); else the
 * glyphs are ASCII. */
extern bool utf8;

/* G_TIMES: the dot of a product of units (1.5G·h). */
enum glyph { G_PLUSMINUS, G_ELLIPSIS, G_BRANCH, G_LAST, G_VERTICAL, G_SPACE, G_TIMES };
/* The glyph in UTF-8 or its ASCII stand-in ("+-", "...", "|-", "*", ...). */
const char *glyph(enum glyph g);

/* Display columns of a UTF-8 string (every code point counts one). */
size_t text_width(const char *s);
/* s shortened to `width` columns with an ellipsis in the middle; a new string
 * (free() it), exits on out of memory. */
char *ellipsize_middle(const char *s, size_t width);

struct fbuf {
	char s[64]; /* FORMAT_HUMAN_MAX */
};

/* Bytes with binary suffixes and one decimal: 512B, 1.5K, 64.0M, 1.2G
 * (format_bytes() of lib/basic/format-human.h). */
struct fbuf fmt_bytes(int64_t v);
/* A duration: 250us, 12.5ms, 1.234s, 3min 12.5s, 2h 5min, 3d 4h. */
struct fbuf fmt_duration(int64_t us);
/* An age: 0.4s, 12.0s, 3min 12s, 2h 5min. */
struct fbuf fmt_age(int64_t us);
/* Cores and load averages: two decimals. */
struct fbuf fmt_2f(double v);
struct fbuf fmt_int(int64_t v);
/* v in unit u: fmt_bytes, fmt_duration or fmt_int. */
struct fbuf fmt_unit(enum acct_unit u, int64_t v);

/* v in unit u without rounding: "3221225472 bytes", "1500us", "7": for where
 * two values would print alike in fmt_unit's rounding. */
struct fbuf fmt_exact(enum acct_unit u, int64_t v);

/* The unit of the quantity with API name `name`, from the quantity table
 * (lib/basic/quantity.h); ACCT_UNIT_COUNT for a name it does not have. */
enum acct_unit quantity_unit(const char *name);
/* Whether the quantity is a limit (-1 means none); false when unknown. */
bool quantity_is_limit(const char *name);
