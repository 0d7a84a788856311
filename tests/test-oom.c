/* test-oom.c - see test-oom.h. */
#include "test-oom.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include <cmocka.h>

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define UNDER_SANITIZER 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer) || __has_feature(memory_sanitizer)
#define UNDER_SANITIZER 1
#endif
#endif

struct oom_chunk {
	struct oom_chunk *next;
};

/* volatile: the compiler may not drop the hole's malloc() and free(). */
static void *volatile hole_chunk;

bool oom_supported(void)
{
#ifdef UNDER_SANITIZER
	return false;
#else
	return true;
#endif
}

unsigned long oom_mapped_bytes(void)
{
	unsigned long pages = 0;
	FILE *f = fopen("/proc/self/statm", "re");

	assert_non_null(f);
	assert_int_equal(fscanf(f, "%lu", &pages), 1);
	fclose(f);
	return pages * (unsigned long)sysconf(_SC_PAGESIZE);
}

/* Halving sizes take the large free chunks, then each small size class (those
 * come from caches of their own size). */
static struct oom_chunk *hoard_memory(void)
{
	struct oom_chunk *h = NULL, *x;

	for (size_t size = 1u << 20; size >= sizeof(*h); size /= 2)
		while ((x = malloc(size))) {
			x->next = h;
			h = x;
		}
	for (size_t size = 1040; size >= sizeof(*h); size -= sizeof(*h))
		while ((x = malloc(size))) {
			x->next = h;
			h = x;
		}
	return h;
}

void oom_begin(struct oom *o, unsigned long slack, bool hoard, size_t hole)
{
	struct rlimit r;

	assert_int_equal(getrlimit(RLIMIT_AS, &o->old), 0);
	r = o->old;
	r.rlim_cur = oom_mapped_bytes() + slack;
	assert_int_equal(setrlimit(RLIMIT_AS, &r), 0);
	o->hoard = NULL;
	if (!hoard)
		return;
	hole_chunk = hole ? malloc(hole) : NULL;
	o->hoard = hoard_memory();
	free(hole_chunk);
	hole_chunk = NULL;
}

void oom_end(struct oom *o)
{
	while (o->hoard) {
		struct oom_chunk *next = o->hoard->next;
		free(o->hoard);
		o->hoard = next;
	}
	assert_int_equal(setrlimit(RLIMIT_AS, &o->old), 0);
}
