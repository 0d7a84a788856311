/* histogram.h - a log-linear histogram of unsigned 64-bit values whose
 * percentiles are within a stated relative error of the exact ones.
 *
 * HDR-style: values below 32 have a bucket each (exact); above, each power of
 * two [2^k, 2^(k+1)) is split into 32 equal sub-buckets of width 2^(k-5). A
 * percentile is answered with the middle of the bucket that holds it (kept
 * within the least and greatest value added), so it differs from the exact
 * percentile by at most half a bucket: less than 1/64 (1.6%) of the exact
 * value (HISTOGRAM_RELATIVE_ERROR), over the whole 64-bit range. A plain
 * power-of-two histogram is off by up to 100% (every value in [32 MiB,
 * 64 MiB) looks the same).
 *
 * The exact percentile it approximates is the nearest-rank one: of n values
 * sorted, p% is the ceil(p/100 * n)-th (p = 0: the least; p = 100: the
 * greatest, which is exact, as is the least).
 *
 * Fixed size (1,920 buckets, 15 KiB), no allocation; adding is O(1) and never
 * fails. Not thread-safe: one writer, or one per thread merged afterwards. */
#pragma once

#include <stdint.h>

#define HISTOGRAM_SUB_BITS 5
#define HISTOGRAM_SUB (1u << HISTOGRAM_SUB_BITS) /* sub-buckets per power of two */
#define HISTOGRAM_BUCKETS ((64 - HISTOGRAM_SUB_BITS + 1) * HISTOGRAM_SUB)
/* |percentile - exact| < exact * HISTOGRAM_RELATIVE_ERROR (and 0 below 32). */
#define HISTOGRAM_RELATIVE_ERROR (1.0 / (2 * HISTOGRAM_SUB))

struct histogram {
	uint64_t count;
	uint64_t sum; /* wraps on overflow */
	uint64_t min; /* meaningful when count > 0 */
	uint64_t max;
	uint64_t bucket[HISTOGRAM_BUCKETS];
};

/* A histogram may also start zeroed (= {}): that is the empty histogram. */
void histogram_add(struct histogram *h, uint64_t v);
/* Add every value of `from` to `into`, as if added one by one. */
void histogram_merge(struct histogram *into, const struct histogram *from);
/* The pct-th percentile (0 <= pct <= 100, in steps of 0.001; clamped), within
 * HISTOGRAM_RELATIVE_ERROR of the exact nearest-rank percentile; 0 when the
 * histogram is empty. */
uint64_t histogram_percentile(const struct histogram *h, double pct);

/* The bucket that holds v, and the least and greatest value of a bucket (for
 * tests and for exporting the buckets). */
unsigned histogram_bucket_of(uint64_t v);
uint64_t histogram_bucket_low(unsigned bucket);
uint64_t histogram_bucket_high(unsigned bucket);
