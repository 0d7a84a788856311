/* arena.h - many small strings freed together (table cells, paths): one
 * allocation per 64 KiB instead of one per string; a table of 10,000 rows has
 * 100,000 cells. Every allocation exits on out of memory. */
#pragma once

#include <stddef.h>

struct arena_block;

/* Zero-initialised is empty: struct arena a = { 0 }. */
struct arena {
	struct arena_block *head;
};

/* n bytes (not zeroed) that live until arena_done(). */
char *arena_alloc(struct arena *a, size_t n);
/* A copy of s in the arena. */
char *arena_strdup(struct arena *a, const char *s);
/* A formatted string in the arena. */
char *arena_printf(struct arena *a, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Free every string; the arena is empty again and may be reused. */
void arena_done(struct arena *a);
