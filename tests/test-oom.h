/* test-oom.h - running out of memory for real in a unit test: the address
 * space limited to what is mapped now (RLIMIT_AS), and every chunk that
 * malloc still holds taken, so that the next allocation fails. Not under the
 * sanitizers, whose allocators abort instead of returning NULL. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <sys/resource.h>

struct oom {
	struct rlimit old;
	struct oom_chunk *hoard;
};

/* Whether allocations can be made to fail here (false under ASan and TSan). */
bool oom_supported(void);

/* Bytes mapped by this process (/proc/self/statm). */
unsigned long oom_mapped_bytes(void);

/* Limit the address space to what is mapped plus `slack` bytes. With `hoard`,
 * also take every chunk malloc can give, except one free piece of `hole` bytes
 * (0: none), which then serves exactly the allocations that fit in it. */
void oom_begin(struct oom *o, unsigned long slack, bool hoard, size_t hole);

/* Give the chunks back and restore the limit. */
void oom_end(struct oom *o);
