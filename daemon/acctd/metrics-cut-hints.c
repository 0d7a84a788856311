/* metrics-cut-hints.c - the max_series cut's memory between scrapes
 * (metrics-cut-hints.h). */
#include "metrics-cut-hints.h"

#include <limits.h>
#include <stddef.h>

#include "basic/util.h"

int metrics_cut_hint_get(const struct metrics_cut_hints *h, uint32_t families)
{
	for (size_t i = 0; i < ELEMENTSOF(h->slot); i++)
		if (h->slot[i].used && h->slot[i].families == families)
			return h->slot[i].depth;
	return INT_MAX;
}

void metrics_cut_hint_set(struct metrics_cut_hints *h, uint32_t families, int depth)
{
	size_t pick = 0;
	for (size_t i = 0; i < ELEMENTSOF(h->slot); i++) {
		if (h->slot[i].used && h->slot[i].families == families) {
			pick = i;
			break;
		}
		if (h->slot[i].used < h->slot[pick].used)
			pick = i;
	}
	h->slot[pick].families = families;
	h->slot[pick].depth = depth;
	h->slot[pick].used = ++h->clock;
}
