/* test-hash.c - unit tests of the hashes (lib/basic/hash.h) against the
 * published FNV-1a 64-bit test vectors, byte order of the 64-bit variant, and
 * the finalizer. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "hash.h"

static void test_fnv1a_string(void **state)
{
	(void)state;
	assert_true(hash_fnv1a_string("") == FNV1A_64_OFFSET);
	assert_true(hash_fnv1a_string("a") == UINT64_C(0xaf63dc4c8601ec8c));
	assert_true(hash_fnv1a_string("foobar") == UINT64_C(0x85944171f73967e8));
}

static void test_fnv1a_u64(void **state)
{
	uint64_t h = FNV1A_64_OFFSET;
	const char bytes[] = "\x08\x07\x06\x05\x04\x03\x02\x01";

	(void)state;
	/* The 8 bytes least significant first: the same as hashing them as a string. */
	assert_true(hash_fnv1a_u64(h, UINT64_C(0x0102030405060708)) == hash_fnv1a_string(bytes));
	assert_true(hash_fnv1a_u64(h, UINT64_C(0x0102030405060708)) == UINT64_C(0x0c6d4496e17859d5));
	assert_true(hash_fnv1a_u64(hash_fnv1a_u64(h, 1), 2) != hash_fnv1a_u64(hash_fnv1a_u64(h, 2), 1));
}

static void test_mix64(void **state)
{
	(void)state;
	assert_true(hash_mix64(0) == 0);
	assert_true(hash_mix64(1) != 1);
	assert_true(hash_mix64(1) != hash_mix64(2));
	/* Low input bits reach the high output bits. */
	assert_true((hash_mix64(1) ^ hash_mix64(3)) >> 32 != 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_fnv1a_string),
		cmocka_unit_test(test_fnv1a_u64),
		cmocka_unit_test(test_mix64),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
