/* hash.h - non-cryptographic hashes for in-memory tables and fingerprints:
 * 64-bit FNV-1a over strings and over 64-bit values, and a finalizer that
 * spreads FNV's weak low bits before a value is used as a bucket index.
 *
 * Values are stable (the same input gives the same hash in every process and
 * build), which the fingerprints rely on; they are not secure against chosen
 * input. Pure: no I/O, no allocation. */
#pragma once

#include <stddef.h>
#include <stdint.h>

#define FNV1A_64_OFFSET UINT64_C(0xcbf29ce484222325) /* 14695981039346656037 */
#define FNV1A_64_PRIME UINT64_C(0x100000001b3)       /* 1099511628211 */

/* FNV-1a of the bytes of the NUL-terminated `s`, from FNV1A_64_OFFSET. */
uint64_t hash_fnv1a_string(const char *s);

/* Continue the FNV-1a hash `h` with the `len` bytes at `data` (a
 * fingerprint of a file's content). Start from FNV1A_64_OFFSET. */
uint64_t hash_fnv1a_bytes(uint64_t h, const void *data, size_t len);

/* Continue the FNV-1a hash `h` with the 8 bytes of `v`, least significant
 * first (so the result does not depend on the host's byte order). Start from
 * FNV1A_64_OFFSET. */
uint64_t hash_fnv1a_u64(uint64_t h, uint64_t v);

/* The MurmurHash3 64-bit finalizer: a bijection that lets every input bit
 * affect every output bit. */
uint64_t hash_mix64(uint64_t x);
