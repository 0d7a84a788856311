/* arena.c - a string arena (see arena.h). */
#include "arena.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctl-util.h"

struct arena_block {
	struct arena_block *next;
	size_t used, size;
	char data[];
};

char *arena_alloc(struct arena *a, size_t n)
{
	struct arena_block *b = a->head;
	char *p;

	if (!b || b->size - b->used < n) {
		size_t size = MAX(n, (size_t)(64 << 10) - sizeof(*b));
		b = malloc(sizeof(*b) + size);
		if (!b)
			oom_exit();
		*b = (struct arena_block){ .next = a->head, .size = size };
		a->head = b;
	}
	p = b->data + b->used;
	b->used += n;
	return p;
}

char *arena_strdup(struct arena *a, const char *s)
{
	size_t n = strlen(s) + 1;
	return memcpy(arena_alloc(a, n), s, n);
}

char *arena_printf(struct arena *a, const char *fmt, ...)
{
	char buf[256];
	va_list ap;
	int k;

	va_start(ap, fmt);
	k = vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	if (k < 0)
		oom_exit();
	if ((size_t)k < sizeof(buf))
		return memcpy(arena_alloc(a, (size_t)k + 1), buf, (size_t)k + 1);
	_cleanup_free_ char *big = NULL;
	va_start(ap, fmt);
	k = vasprintf(&big, fmt, ap);
	va_end(ap);
	if (k < 0)
		oom_exit();
	return arena_strdup(a, big);
}

void arena_done(struct arena *a)
{
	while (a->head) {
		struct arena_block *next = a->head->next;
		free(a->head);
		a->head = next;
	}
}
