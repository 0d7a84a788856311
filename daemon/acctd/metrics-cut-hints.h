/* metrics-cut-hints.h - what the /metrics server remembers between scrapes
 * for the [metrics] max_series cut: the depth the last bounded page of each
 * set of families showed, which the next page's cut starts from
 * (acct_metrics_options.cut_hint: a level left out comes back only when it
 * fits well under the bound, so that a level at the bound does not come and
 * go between scrapes; docs/metrics.md, "Selection"). A few sets, since a
 * Prometheus job rarely asks for more than one; the least recently used is
 * replaced first. Pure: no I/O, no allocation. */
#pragma once

#include <stdint.h>

#define METRICS_CUT_HINTS 4

struct metrics_cut_hints {
	struct {
		uint32_t families;
		int depth;
		uint64_t used; /* 0: free; else when last used (clock) */
	} slot[METRICS_CUT_HINTS];
	uint64_t clock;
};

/* The depth the last bounded page of `families` showed; INT_MAX for none
 * remembered (no hint: the cut starts from the whole tree). O(1). */
int metrics_cut_hint_get(const struct metrics_cut_hints *h, uint32_t families);

/* Remember that a bounded page of `families` showed `depth`, replacing the
 * entry of `families` or else the least recently used one. O(1). */
void metrics_cut_hint_set(struct metrics_cut_hints *h, uint32_t families, int depth);
