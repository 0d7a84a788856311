/* suggest.h - "did you mean ...?": the known name nearest to a misspelt one.
 *
 * Nearness is the optimal string alignment distance: the fewest insertions,
 * deletions, substitutions and swaps of two adjacent characters that turn one
 * name into the other ("fast_intervall" is 1 from "fast_interval", "[cgroup]"
 * 1 from "[cgroups]", "sampels" 1 from "samples"). Pure: no I/O, no
 * allocation; O(len(a) * len(b)) time per pair. */
#pragma once

#include <stddef.h>

/* Names longer than this are never near anything (the distance table lives
 * on the stack). */
#define SUGGEST_MAX_NAME 64

/* The distance between a and b, or (size_t)-1 when either is longer than
 * SUGGEST_MAX_NAME. */
size_t suggest_distance(const char *a, const char *b);

/* The entry of `candidates` (NULL-terminated) nearest to `word` if it is near
 * enough to be a likely slip: at most 1 edit for words of up to 4 characters,
 * 2 up to 8, 3 beyond, and fewer edits than the word has characters. The first
 * of equally near ones wins. NULL when none is near enough, or for an exact
 * match (nothing to suggest). The result points into `candidates`. */
const char *suggest_nearest(const char *word, const char *const *candidates);
