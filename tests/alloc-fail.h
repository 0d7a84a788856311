/* alloc-fail.h - allocation failure on demand, for the tests of what a module
 * does when memory runs out (the one thing the kernel cannot be made to do to
 * one call). A test executable linked with ALLOC_FAIL_LINK_ARGS (tests/
 * meson.build) has every call of the wrapped functions from its own objects
 * and the static libacct go through here; calls from shared libraries
 * (glibc's own, liburcu, inih, cmocka) do not.
 *
 * Wrapped: malloc, calloc, realloc, reallocarray, aligned_alloc, strdup,
 * strndup, asprintf, vasprintf. Calls from glibc-internal paths, or ones a fortified build turns
 * into __*_chk, are not seen: a sweep then fails fewer calls, never wrong ones. */
#pragma once

#include <stdbool.h>
#include <stddef.h>

/* From now on, let `n` more allocations succeed and fail the one after them
 * (with errno ENOMEM); the ones after that succeed again. One failure at a
 * time, so that a sweep over n sees what each allocation's failure does on
 * its own (a message about it, for instance, can still be allocated). */
void alloc_fail_after(unsigned n);
void alloc_fail_off(void);
/* Whether an allocation failed since the last alloc_fail_after(). */
bool alloc_fail_hit(void);
/* The size asked for by the last malloc() (armed or not), to check that a
 * result fits the memory it was given (no ASan in the plain build). */
size_t alloc_last_malloc_size(void);
