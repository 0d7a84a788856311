/* suggest.c - the nearest known name to a misspelt one. See suggest.h. */
#include "suggest.h"

#include <string.h>

#include "util.h"

size_t suggest_distance(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b);
	/* d[i][j]: the distance between the first i characters of a and the
	 * first j of b */
	size_t d[SUGGEST_MAX_NAME + 1][SUGGEST_MAX_NAME + 1];

	if (la > SUGGEST_MAX_NAME || lb > SUGGEST_MAX_NAME)
		return (size_t)-1;
	for (size_t i = 0; i <= la; i++)
		d[i][0] = i;
	for (size_t j = 0; j <= lb; j++)
		d[0][j] = j;
	for (size_t i = 1; i <= la; i++)
		for (size_t j = 1; j <= lb; j++) {
			size_t cost = a[i - 1] != b[j - 1];
			size_t best = MIN(d[i - 1][j] + 1, d[i][j - 1] + 1);

			best = MIN(best, d[i - 1][j - 1] + cost);
			if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1])
				best = MIN(best, d[i - 2][j - 2] + 1);
			d[i][j] = best;
		}
	return d[la][lb];
}

const char *suggest_nearest(const char *word, const char *const *candidates)
{
	size_t len = strlen(word), limit = len <= 4 ? 1 : len <= 8 ? 2 : 3;
	const char *best = NULL;
	size_t best_distance = (size_t)-1;

	if (limit >= len)
		limit = len - (len > 0);
	for (; *candidates; candidates++) {
		size_t dist = suggest_distance(word, *candidates);

		if (dist == 0)
			return NULL;
		if (dist <= limit && dist < best_distance) {
			best = *candidates;
			best_distance = dist;
		}
	}
	return best;
}
