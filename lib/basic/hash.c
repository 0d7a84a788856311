/* hash.c - FNV-1a and a 64-bit finalizer (see hash.h). */
#include "hash.h"

uint64_t hash_fnv1a_string(const char *s)
{
	uint64_t h = FNV1A_64_OFFSET;

	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * FNV1A_64_PRIME;
	return h;
}

uint64_t hash_fnv1a_bytes(uint64_t h, const void *data, size_t len)
{
	const unsigned char *p = data;

	for (size_t i = 0; i < len; i++)
		h = (h ^ p[i]) * FNV1A_64_PRIME;
	return h;
}

uint64_t hash_fnv1a_u64(uint64_t h, uint64_t v)
{
	for (int i = 0; i < 8; i++) {
		h ^= (v >> (8 * i)) & 0xff;
		h *= FNV1A_64_PRIME;
	}
	return h;
}

uint64_t hash_mix64(uint64_t x)
{
	x ^= x >> 33;
	x *= UINT64_C(0xff51afd7ed558ccd);
	x ^= x >> 33;
	x *= UINT64_C(0xc4ceb9fe1a85ec53);
	x ^= x >> 33;
	return x;
}
