/* test-text-buf.c - lib/basic's text buffer and number writers (text-buf.h):
 * the edges of each writer (0, INT64_MIN, UINT64_MAX, fractions with and
 * without trailing zeros, doubles that are integral, tiny, huge or not
 * numbers), and a buffer that cannot grow: failed, and refused growth from
 * then on, what was written kept. */
#include <errno.h>
#include <float.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "alloc-fail.h"
#include "text-buf.h"

/* what a pointer writer wrote, as a string */
static char out[64];
#define WROTE(call)                                       \
	({                                                \
		char *_o = out;                           \
		memset(out, 'X', sizeof(out));            \
		char *_end = call;                        \
		assert_true(_end >= _o && _end < out + sizeof(out)); \
		*_end = '\0';                             \
		(const char *)out;                        \
	})

static void test_integers(void **state)
{
	(void)state;
	assert_string_equal(WROTE(text_put_u64(_o, 0)), "0");
	assert_string_equal(WROTE(text_put_u64(_o, 9)), "9");
	assert_string_equal(WROTE(text_put_u64(_o, 10)), "10");
	assert_string_equal(WROTE(text_put_u64(_o, 99)), "99");
	assert_string_equal(WROTE(text_put_u64(_o, 100)), "100");
	assert_string_equal(WROTE(text_put_u64(_o, 1000001)), "1000001");
	assert_string_equal(WROTE(text_put_u64(_o, UINT64_MAX)), "18446744073709551615");
	assert_string_equal(WROTE(text_put_i64(_o, 0)), "0");
	assert_string_equal(WROTE(text_put_i64(_o, -1)), "-1");
	assert_string_equal(WROTE(text_put_i64(_o, INT64_MAX)), "9223372036854775807");
	assert_string_equal(WROTE(text_put_i64(_o, INT64_MIN)), "-9223372036854775808");
	for (uint64_t v = 1, i = 0; i < 20; i++, v *= 10) {
		char want[32];
		snprintf(want, sizeof(want), "%llu", (unsigned long long)(v - 1));
		assert_string_equal(WROTE(text_put_u64(_o, v - 1)), want);
		snprintf(want, sizeof(want), "%llu", (unsigned long long)v);
		assert_string_equal(WROTE(text_put_u64(_o, v)), want);
	}
}

static void test_fixed(void **state)
{
	(void)state;
	assert_string_equal(WROTE(text_put_fraction(_o, 0, 6)), "");
	assert_string_equal(WROTE(text_put_fraction(_o, 500000, 6)), ".5");
	assert_string_equal(WROTE(text_put_fraction(_o, 1, 6)), ".000001");
	assert_string_equal(WROTE(text_put_fraction(_o, 48828125, 11)), ".00048828125");
	assert_string_equal(WROTE(text_put_fixed(_o, 1500000, 6)), "1.5");
	assert_string_equal(WROTE(text_put_fixed(_o, 1000000, 6)), "1");
	assert_string_equal(WROTE(text_put_fixed(_o, 0, 6)), "0");
	assert_string_equal(WROTE(text_put_fixed(_o, -250, 6)), "-0.00025");
	assert_string_equal(WROTE(text_put_fixed(_o, 1234, 4)), "0.1234");
	assert_string_equal(WROTE(text_put_fixed(_o, 10000, 4)), "1");
	assert_string_equal(WROTE(text_put_fixed(_o, 42, 0)), "42");
	assert_string_equal(WROTE(text_put_fixed(_o, INT64_MAX, 6)), "9223372036854.775807");
	assert_string_equal(WROTE(text_put_fixed(_o, INT64_MIN, 6)), "-9223372036854.775808");
	assert_string_equal(WROTE(text_put_fixed(_o, INT64_MIN, 11)), "-92233720.36854775808");
}

static void test_doubles(void **state)
{
	(void)state;
	assert_string_equal(WROTE(text_put_double(_o, 0)), "0");
	assert_string_equal(WROTE(text_put_double(_o, -0.0)), "0");
	assert_string_equal(WROTE(text_put_double(_o, 3)), "3");
	assert_string_equal(WROTE(text_put_double(_o, -3)), "-3");
	assert_string_equal(WROTE(text_put_double(_o, 0.1)), "0.1");
	assert_string_equal(WROTE(text_put_double(_o, 0.25)), "0.25");
	assert_string_equal(WROTE(text_put_double(_o, 1700000000.5)), "1700000000.5");
	assert_string_equal(WROTE(text_put_double(_o, 1e-7)), "1e-07");
	assert_string_equal(WROTE(text_put_double(_o, 999999999999999)), "999999999999999");
	assert_string_equal(WROTE(text_put_double(_o, 1e15)), "1000000000000000"); /* fixed up to 1e16 */
	assert_string_equal(WROTE(text_put_double(_o, 1e17)), "1e+17");
	assert_string_equal(WROTE(text_put_double(_o, 1.0 / 3)), "0.3333333333333333");
	assert_string_equal(WROTE(text_put_double(_o, -DBL_MAX)), "-1.7976931348623157e+308");
	assert_string_equal(WROTE(text_put_double(_o, DBL_TRUE_MIN)), "5e-324");
	assert_string_equal(WROTE(text_put_double(_o, NAN)), "NaN");
	assert_string_equal(WROTE(text_put_double(_o, INFINITY)), "+Inf");
	assert_string_equal(WROTE(text_put_double(_o, -INFINITY)), "-Inf");
	assert_true(strlen(WROTE(text_put_double(_o, -1.2345678901234567e-300))) <= TEXT_NUMBER_MAX);
}

static void test_buffer(void **state)
{
	struct text_buf b = { 0 };

	(void)state;
	text_buf_append(&b, "abc", 3);
	char *o = text_buf_reserve(&b, TEXT_NUMBER_MAX);
	assert_non_null(o);
	if (o)
		text_buf_commit(&b, text_put_i64(o, -42));
	assert_int_equal(b.len, 6);
	assert_true(b.alloc > b.len); /* room for a terminator */
	assert_memory_equal(b.data, "abc-42", 6);
	for (int i = 0; i < 100000; i++)
		text_buf_append(&b, "0123456789", 10);
	assert_false(b.failed);
	assert_int_equal(b.len, 6 + 1000000);
	assert_true(b.alloc > b.len);
	assert_memory_equal(b.data + b.len - 10, "0123456789", 10);
	text_buf_free(&b);
	assert_null(b.data);
	assert_int_equal(b.len, 0);
	text_buf_free(&b); /* twice is fine */
}

/* Fail to grow: too much for memory, and too much for size_t. Nothing more
 * is written, what was stays, and the buffer is refused until it is freed. */
static void test_fail_to_grow(void **state)
{
	struct text_buf b = { 0 };

	(void)state;
	text_buf_append(&b, "kept", 4);
	alloc_fail_after(0);
	assert_null(text_buf_reserve(&b, 8192)); /* past the first 4 KiB: realloc() */
	assert_true(alloc_fail_hit());
	alloc_fail_off();
	assert_true(b.failed);
	assert_int_equal(b.len, 4);
	assert_memory_equal(b.data, "kept", 4);
	/* what still fits the room may land, but the buffer stays failed and
	 * grows no more */
	size_t room = b.alloc - b.len - 1;
	assert_null(text_buf_reserve(&b, room + 1));
	assert_false(text_buf_grow(&b, room + 1));
	assert_true(b.failed);
	assert_memory_equal(b.data, "kept", 4);
	text_buf_free(&b);
	assert_false(b.failed);
	assert_non_null(text_buf_reserve(&b, 1));
	text_buf_free(&b);

	text_buf_append(&b, "y", 1);
	assert_null(text_buf_reserve(&b, SIZE_MAX)); /* len + n would wrap */
	assert_true(b.failed);
	assert_int_equal(b.len, 1);
	text_buf_free(&b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_integers),
		cmocka_unit_test(test_fixed),
		cmocka_unit_test(test_doubles),
		cmocka_unit_test(test_buffer),
		cmocka_unit_test(test_fail_to_grow),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
