/* test-histogram.c - unit tests of the log-linear histogram
 * (lib/basic/histogram.h): the bucket layout, and every percentile checked
 * against the exact nearest-rank percentile of the same values (sorted) within
 * HISTOGRAM_RELATIVE_ERROR, on random data (uniform, log-uniform, heavy-tailed)
 * and on adversarial data (bucket edges, powers of two, one repeated value,
 * two far clusters, the extremes of uint64_t, the 33-42 MiB drifts that a
 * power-of-two histogram reported as 42 MiB at every percentile). */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "histogram.h"

static const double pcts[] = { 0, 0.1, 1, 10, 25, 33.333, 50, 66.667, 75, 90, 95, 99, 99.9, 99.99, 100 };

static uint64_t rng_state = 0x853c49e6748fea9bull;
static uint64_t rnd(void)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return rng_state;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

/* The exact nearest-rank percentile of sorted[0..n). */
static uint64_t exact(const uint64_t *sorted, size_t n, double pct)
{
	/* the smallest rank r with r >= pct/100 * n, in integers */
	uint64_t milli = (uint64_t)llround(pct * 1000);
	uint64_t r = (uint64_t)(((unsigned __int128)milli * n + 99999) / 100000);
	if (r < 1)
		r = 1;
	return sorted[r - 1];
}

/* Add v[0..n) (unsorted) and check every percentile against the exact one. */
static void check(uint64_t *v, size_t n, const char *what)
{
	static struct histogram h, half1, half2;

	memset(&h, 0, sizeof(h));
	memset(&half1, 0, sizeof(half1));
	memset(&half2, 0, sizeof(half2));
	for (size_t i = 0; i < n; i++) {
		histogram_add(&h, v[i]);
		histogram_add(i % 2 ? &half1 : &half2, v[i]);
	}
	histogram_merge(&half1, &half2);
	assert_memory_equal(&h, &half1, sizeof(h));
	assert_int_equal(h.count, n);

	qsort(v, n, sizeof(*v), cmp_u64);
	assert_true(h.min == v[0] && h.max == v[n - 1]);
	for (size_t i = 0; i < sizeof(pcts) / sizeof(pcts[0]); i++) {
		uint64_t want = exact(v, n, pcts[i]), got = histogram_percentile(&h, pcts[i]);
		double err = fabs((double)got - (double)want);
		if (err > (double)want * HISTOGRAM_RELATIVE_ERROR || (want < HISTOGRAM_SUB && got != want))
			fail_msg("%s (n=%zu): p%g = %llu, exact %llu (error %.4f%%, allowed %.4f%%)", what, n, pcts[i],
				 (unsigned long long)got, (unsigned long long)want, 100 * err / (double)want,
				 100 * HISTOGRAM_RELATIVE_ERROR);
	}
	assert_true(histogram_percentile(&h, 0) == v[0]);
	assert_true(histogram_percentile(&h, 100) == v[n - 1]);
}

static void test_buckets(void **state)
{
	(void)state;
	/* Buckets tile [0, 2^64): each starts one after the previous ends. */
	assert_true(histogram_bucket_low(0) == 0);
	for (unsigned b = 1; b < HISTOGRAM_BUCKETS; b++)
		assert_true(histogram_bucket_low(b) == histogram_bucket_high(b - 1) + 1);
	assert_true(histogram_bucket_high(HISTOGRAM_BUCKETS - 1) == UINT64_MAX);
	/* Each bucket's edges map back to it, and its width is at most 1/32 of
	 * its low edge (exact below 32). */
	for (unsigned b = 0; b < HISTOGRAM_BUCKETS; b++) {
		uint64_t lo = histogram_bucket_low(b), hi = histogram_bucket_high(b);
		assert_int_equal(histogram_bucket_of(lo), b);
		assert_int_equal(histogram_bucket_of(hi), b);
		if (b < HISTOGRAM_SUB)
			assert_true(lo == hi);
		else
			assert_true(hi - lo + 1 <= lo / HISTOGRAM_SUB);
	}
}

static void test_empty_and_one(void **state)
{
	struct histogram *h = calloc(1, sizeof(*h));

	(void)state;
	assert_non_null(h);
	assert_true(histogram_percentile(h, 50) == 0);
	histogram_add(h, 12345678);
	for (size_t i = 0; i < sizeof(pcts) / sizeof(pcts[0]); i++)
		assert_true(histogram_percentile(h, pcts[i]) == 12345678);
	/* out-of-range percentiles are clamped */
	assert_true(histogram_percentile(h, -5) == 12345678);
	assert_true(histogram_percentile(h, 500) == 12345678);
	assert_true(histogram_percentile(h, NAN) == 12345678);
	free(h);
}

/* Values that share a bucket: a percentile between the ends of the data is
 * the bucket's midpoint, which may lie outside what was observed, so it is
 * clamped to [min, max] (three equal values: every percentile is that value). */
static void test_midpoint_clamped(void **state)
{
	struct histogram *h = calloc(1, sizeof(*h));

	(void)state;
	assert_non_null(h);
	for (int i = 0; i < 3; i++)
		histogram_add(h, 12345678);
	assert_true(histogram_percentile(h, 50) == 12345678);
	histogram_add(h, 12345679);
	assert_in_range(histogram_percentile(h, 50), 12345678, 12345679);
	assert_in_range(histogram_percentile(h, 75), 12345678, 12345679);
	free(h);
}

/* The drifts of issue 11: 33 to 42 MiB. */
static void test_drift_33_42_mib(void **state)
{
	enum { N = 400 };
	static uint64_t v[N];
	static struct histogram h;

	(void)state;
	for (size_t i = 0; i < N; i++)
		v[i] = (33ull << 20) + (rnd() % (9ull << 20));
	check(v, N, "33-42 MiB");
	memset(&h, 0, sizeof(h));
	for (size_t i = 0; i < N; i++)
		histogram_add(&h, v[i]);
	/* the percentiles tell the spread apart */
	assert_true(histogram_percentile(&h, 50) < histogram_percentile(&h, 90));
	assert_true(histogram_percentile(&h, 90) < histogram_percentile(&h, 100));
}

static void test_random(void **state)
{
	enum { N = 20000 };
	static uint64_t v[N];

	(void)state;
	for (int round = 0; round < 20; round++) {
		size_t n = 1 + rnd() % N;
		for (size_t i = 0; i < n; i++)
			v[i] = rnd() % (1ull << (1 + round * 3 % 63));
		check(v, n, "uniform");
		for (size_t i = 0; i < n; i++)
			v[i] = rnd() >> (rnd() % 64); /* log-uniform over the whole range */
		check(v, n, "log-uniform");
		for (size_t i = 0; i < n; i++) {
			double u = (double)(rnd() >> 11) / 9007199254740992.0;
			v[i] = (uint64_t)(-log1p(-u) * 1e6) * (rnd() % 100 == 0 ? 1000 : 1); /* exponential, outliers */
		}
		check(v, n, "exponential");
	}
}

static void test_adversarial(void **state)
{
	enum { N = 4096 };
	static uint64_t v[N];
	size_t n;

	(void)state;
	/* every bucket edge, low and high, across the range */
	n = 0;
	for (unsigned b = 0; b < HISTOGRAM_BUCKETS && n + 2 <= N; b += 1)
		if (b % 2 == 0) {
			v[n++] = histogram_bucket_low(b);
			v[n++] = histogram_bucket_high(b);
		}
	check(v, n, "bucket edges");
	/* powers of two and their predecessors */
	n = 0;
	for (unsigned k = 0; k < 64; k++) {
		v[n++] = 1ull << k;
		v[n++] = (1ull << k) - 1;
	}
	check(v, n, "powers of two");
	/* one value repeated, at a bucket's high edge */
	for (n = 0; n < 1000; n++)
		v[n] = histogram_bucket_high(1000);
	check(v, n, "one value");
	/* two far clusters: the median falls at the edge between them */
	for (n = 0; n < 1000; n++)
		v[n] = n < 500 ? 7 + n % 3 : (1ull << 40) + n;
	check(v, n, "two clusters");
	/* the extremes */
	for (n = 0; n < 100; n++)
		v[n] = n % 2 ? UINT64_MAX - n : n;
	check(v, n, "extremes");
	/* values that sit in the top of one bucket with a single value just above */
	for (n = 0; n < 999; n++)
		v[n] = histogram_bucket_high(700);
	v[n++] = histogram_bucket_low(701);
	check(v, n, "a bucket's top");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_buckets),
		cmocka_unit_test(test_empty_and_one),
		cmocka_unit_test(test_midpoint_clamped),
		cmocka_unit_test(test_drift_33_42_mib),
		cmocka_unit_test(test_random),
		cmocka_unit_test(test_adversarial),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
