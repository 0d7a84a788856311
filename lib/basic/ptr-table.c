/* ptr-table.c - a hash table of pointers (ptr-table.h). */
#include "ptr-table.h"

#include <errno.h>
#include <stdlib.h>

void *ptr_table_find(const struct ptr_table *t, uint64_t hash, ptr_table_eq_fn eq, const void *key)
{
	if (!t->slots)
		return NULL;
	for (size_t i = hash & t->mask;; i = (i + 1) & t->mask) {
		const struct ptr_table_slot *s = &t->slots[i];
		if (!s->p)
			return NULL;
		if (s->hash == hash && eq(s->p, key))
			return s->p;
	}
}

static void place(struct ptr_table_slot *slots, size_t mask, uint64_t hash, void *p)
{
	size_t i = hash & mask;
	while (slots[i].p)
		i = (i + 1) & mask;
	slots[i] = (struct ptr_table_slot){ .hash = hash, .p = p };
}

int ptr_table_insert(struct ptr_table *t, uint64_t hash, void *p)
{
	size_t cap = t->slots ? t->mask + 1 : 0;
	if ((t->n + 1) * 2 > cap) {
		size_t ncap = cap ? cap * 2 : 64;
		struct ptr_table_slot *ns = calloc(ncap, sizeof(*ns));
		if (!ns)
			return -ENOMEM;
		for (size_t i = 0; i < cap; i++)
			if (t->slots[i].p)
				place(ns, ncap - 1, t->slots[i].hash, t->slots[i].p);
		free(t->slots);
		t->slots = ns;
		t->mask = ncap - 1;
	}
	place(t->slots, t->mask, hash, p);
	t->n++;
	return 0;
}

void ptr_table_remove(struct ptr_table *t, uint64_t hash, const void *p)
{
	if (!t->slots)
		return;
	size_t i = hash & t->mask;
	for (;; i = (i + 1) & t->mask) {
		if (!t->slots[i].p)
			return;
		if (t->slots[i].p == p)
			break;
	}
	/* Shift later members of the probe run back into the hole unless their
	 * home slot lies cyclically in (hole, j]: there a probe from home still
	 * reaches them without crossing the hole. */
	for (size_t j = (i + 1) & t->mask; t->slots[j].p; j = (j + 1) & t->mask) {
		size_t k = t->slots[j].hash & t->mask;
		bool stays = i <= j ? (k > i && k <= j) : (k > i || k <= j);
		if (stays)
			continue;
		t->slots[i] = t->slots[j];
		i = j;
	}
	t->slots[i].p = NULL;
	t->n--;
}

void ptr_table_clear(struct ptr_table *t, void (*free_entry)(void *p))
{
	if (free_entry && t->slots)
		for (size_t i = 0; i <= t->mask; i++)
			if (t->slots[i].p)
				free_entry(t->slots[i].p);
	free(t->slots);
	*t = (struct ptr_table){ 0 };
}
