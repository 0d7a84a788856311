/* text-buf.c - the growable text buffer's slow path and the writers' tables
 * (text-buf.h). */
#include "text-buf.h"

#include <stdlib.h>

const char text_digit_pairs[201] = "00010203040506070809101112131415161718192021222324252627282930313233343536373839"
				   "40414243444546474849505152535455565758596061626364656667686970717273747576777879"
				   "8081828384858687888990919293949596979899";

const uint64_t text_pow10[12] = { 1, 10, 100, 1000, 10000, 100000, 1000000, 10000000, 100000000,
				  1000000000, 10000000000ull, 100000000000ull };

bool text_buf_grow(struct text_buf *b, size_t n)
{
	if (b->failed)
		return false;
	if (b->alloc - b->len > n)
		return true;
	/* Doubling keeps appends amortized O(1); 4 KiB is a first step that
	 * holds a whole record or several lines of a page. */
	if (n > SIZE_MAX / 4 - b->len)
		goto fail;
	size_t want = MAX(b->alloc * 2, b->len + n + 1);
	want = MAX(want, (size_t)4096);
	char *p = realloc(b->data, want);
	if (!p)
		goto fail;
	b->data = p;
	b->alloc = want;
	return true;
fail:
	b->failed = true;
	return false;
}

void text_buf_free(struct text_buf *b)
{
	free(b->data);
	*b = (struct text_buf){ 0 };
}
