/* histogram.c - log-linear histogram with bounded relative error (see
 * histogram.h). */
#include "histogram.h"

#include <math.h>

#include "util.h"

unsigned histogram_bucket_of(uint64_t v)
{
	if (v < HISTOGRAM_SUB)
		return (unsigned)v;
	unsigned k = 63 - (unsigned)__builtin_clzll(v); /* k >= SUB_BITS */
	unsigned shift = k - HISTOGRAM_SUB_BITS;
	/* v >> shift is in [SUB, 2 SUB): the top SUB_BITS + 1 bits of v */
	return (shift + 1) * HISTOGRAM_SUB + (unsigned)(v >> shift) - HISTOGRAM_SUB;
}

uint64_t histogram_bucket_low(unsigned b)
{
	if (b < HISTOGRAM_SUB)
		return b;
	unsigned shift = b / HISTOGRAM_SUB - 1;
	return (uint64_t)(HISTOGRAM_SUB + b % HISTOGRAM_SUB) << shift;
}

uint64_t histogram_bucket_high(unsigned b)
{
	if (b < HISTOGRAM_SUB)
		return b;
	unsigned shift = b / HISTOGRAM_SUB - 1;
	/* low + width - 1, which does not overflow even in the last bucket */
	return histogram_bucket_low(b) + ((UINT64_C(1) << shift) - 1);
}

void histogram_add(struct histogram *h, uint64_t v)
{
	h->bucket[histogram_bucket_of(v)]++;
	h->min = h->count == 0 ? v : MIN(h->min, v);
	h->max = h->count == 0 ? v : MAX(h->max, v);
	h->count++;
	h->sum += v;
}

void histogram_merge(struct histogram *into, const struct histogram *from)
{
	if (from->count == 0)
		return;
	into->min = into->count == 0 ? from->min : MIN(into->min, from->min);
	into->max = into->count == 0 ? from->max : MAX(into->max, from->max);
	into->count += from->count;
	into->sum += from->sum;
	for (unsigned b = 0; b < HISTOGRAM_BUCKETS; b++)
		into->bucket[b] += from->bucket[b];
}

uint64_t histogram_percentile(const struct histogram *h, double pct)
{
	if (h->count == 0)
		return 0;
	if (!(pct > 0)) /* also NaN */
		pct = 0;
	if (pct > 100)
		pct = 100;
	/* rank = ceil(pct/100 * count) in integers (pct in thousandths), so
	 * that 90% of 10 values is the 9th, not the 10th by a rounding error */
	unsigned __int128 milli = (unsigned __int128)llround(pct * 1000);
	uint64_t rank = (uint64_t)((milli * h->count + 99999) / 100000);
	if (rank <= 1)
		return h->min;
	if (rank >= h->count)
		return h->max;
	uint64_t seen = 0;
	for (unsigned b = 0; b < HISTOGRAM_BUCKETS; b++) {
		seen += h->bucket[b];
		if (seen < rank)
			continue;
		uint64_t lo = histogram_bucket_low(b), hi = histogram_bucket_high(b);
		uint64_t mid = lo + (hi - lo) / 2;
		return MIN(MAX(mid, h->min), h->max);
	}
	return h->max;
}
