/* bpf-snapshot.c - a walk's index (bpf-collector.h, struct
 * acct_bpf_snapshot): the records of one walk sorted by cgroup id, the
 * order a sort found kept for the next walk, lookups by id and by a kept
 * position, and the census of a walk. Apart from bpf-collector.c, which
 * walks: nothing here touches the kernel. */
#include "bpf-collector.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "basic/util.h"

void acct_bpf_snapshot_clear(struct acct_bpf_snapshot *s)
{
	free(s->data);
	free(s->rec);
	free(s->walk_ids);
	free(s->walk_perm);
	free(s->scratch);
	*s = (struct acct_bpf_snapshot){ 0 };
}

static int compare_id(const void *a, const void *b)
{
	const struct acct_bpf_record *x = *(const struct acct_bpf_record *const *)a;
	const struct acct_bpf_record *y = *(const struct acct_bpf_record *const *)b;
	return x->id < y->id ? -1 : x->id > y->id;
}

static int compare_address(const void *a, const void *b)
{
	uintptr_t x = (uintptr_t)*(const struct acct_bpf_record *const *)a;
	uintptr_t y = (uintptr_t)*(const struct acct_bpf_record *const *)b;
	return x < y ? -1 : x > y;
}

/* Room for the kept order of n records; false without memory. */
static bool walk_order_reserve(struct acct_bpf_snapshot *s, size_t n)
{
	if (n <= s->walk_cap)
		return true;
	if (n > UINT32_MAX)
		return false;
	uint64_t *ids = reallocarray(s->walk_ids, n, sizeof(*ids));
	if (ids)
		s->walk_ids = ids;
	uint32_t *perm = reallocarray(s->walk_perm, n, sizeof(*perm));
	if (perm)
		s->walk_perm = perm;
	const struct acct_bpf_record **scratch = reallocarray(s->scratch, n, sizeof(*scratch));
	if (scratch)
		s->scratch = scratch;
	if (!ids || !perm || !scratch)
		return false;
	s->walk_cap = n;
	return true;
}

/* Sorting a walk. A walk of a hierarchy too large for one session of the
 * iterator comes in sessions of id classes (id % n, walk()), so its records
 * are not in id order, and the qsort of every pass was a tenth of the
 * user side's CPU at 10,000 cgroups (perf: compare_id, msort). But an
 * unchanged hierarchy is walked in the same order every time: the kernel
 * visits it in pre-order within each session. So the order a sort found is
 * kept, and a walk whose ids are the same, one by one in walk order, is
 * ordered by it: the sorted position k takes the walk's record walk_perm[k],
 * whose id is the kept sorted sequence's k-th, so the result is sorted
 * (whatever the ids: it is a permutation of the same sequence). A cgroup
 * made, removed, or a session split differently changes the sequence, and
 * that walk is sorted anew. */
bool acct_bpf_snapshot_sort(struct acct_bpf_snapshot *s)
{
	size_t n = s->n;
	bool sorted = true;
	/* Pre-order is mostly id order already (ids grow with creation); the
	 * sessions of a partitioned walk are not. */
	for (size_t i = 1; i < n && sorted; i++)
		sorted = s->rec[i - 1]->id < s->rec[i]->id;
	if (sorted)
		return false;
	s->sorts++;
	bool same = s->walk_n == n;
	for (size_t i = 0; i < n && same; i++)
		same = s->walk_ids[i] == s->rec[i]->id;
	if (same) {
		memcpy(s->scratch, s->rec, n * sizeof(*s->rec));
		for (size_t k = 0; k < n; k++)
			s->rec[k] = s->scratch[s->walk_perm[k]];
		s->sorts_reused++;
		return true;
	}
	s->walk_n = 0;
	bool keep = walk_order_reserve(s, n);
	if (keep) {
		for (size_t i = 0; i < n; i++)
			s->walk_ids[i] = s->rec[i]->id;
		/* The records lie in data in walk order: a record's address
		 * gives its walk index (the scratch copy, in that order). */
		memcpy(s->scratch, s->rec, n * sizeof(*s->rec));
	}
	qsort(s->rec, n, sizeof(*s->rec), compare_id);
	if (keep) {
		for (size_t k = 0; k < n; k++) {
			const struct acct_bpf_record **at =
				bsearch(&s->rec[k], s->scratch, n, sizeof(*s->scratch), compare_address);
			if (!at)
				return true; /* (cannot be: rec is a permutation of scratch) */
			s->walk_perm[k] = (uint32_t)(at - s->scratch);
		}
		s->walk_n = n;
	}
	return true;
}

/* The index of the record of `id` in the sorted snapshot, or s->n. */
static size_t find_index(const struct acct_bpf_snapshot *s, uint64_t id)
{
	size_t lo = 0, hi = s->n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (s->rec[mid]->id == id)
			return mid;
		if (s->rec[mid]->id < id)
			lo = mid + 1;
		else
			hi = mid;
	}
	return s->n;
}

const struct acct_bpf_record *acct_bpf_snapshot_find(const struct acct_bpf_snapshot *s, uint64_t id)
{
	size_t k = find_index(s, id);
	return k < s->n ? s->rec[k] : NULL;
}

const struct acct_bpf_record *acct_bpf_snapshot_find_hint(const struct acct_bpf_snapshot *s, uint64_t id,
							   uint32_t *hint)
{
	if (*hint < s->n && s->rec[*hint]->id == id)
		return s->rec[*hint];
	size_t k = find_index(s, id);
	if (k == s->n)
		return NULL;
	*hint = (uint32_t)MIN(k, (size_t)UINT32_MAX);
	return s->rec[k];
}

void acct_bpf_snapshot_census(const struct acct_bpf_snapshot *s, unsigned max_level,
			      struct acct_cgroup_census *ret)
{
	*ret = (struct acct_cgroup_census){ 0 };
	for (size_t i = 0; i < s->n; i++)
		if (s->rec[i]->level >= 0 && (unsigned)s->rec[i]->level <= max_level)
			acct_cgroup_census_add(ret, s->rec[i]->id);
}

void acct_bpf_snapshot_census_scope(const struct acct_bpf_snapshot *s, const struct acct_cgroup_scope *scope,
				    struct acct_cgroup_census *ret)
{
	*ret = (struct acct_cgroup_census){ .count = scope->n_leaves };
	for (size_t i = 0; i < scope->n_tops; i++) {
		const struct acct_bpf_record *r = acct_bpf_snapshot_find(s, scope->tops[i]);
		if (r && r->nr_descendants >= 0)
			ret->count += (uint64_t)r->nr_descendants + 1;
	}
	for (size_t i = 0; i < scope->n_ids; i++)
		if (acct_bpf_snapshot_find(s, scope->ids[i])) {
			ret->sum += scope->ids[i];
			ret->mix += acct_cgroup_census_mix(scope->ids[i]);
		}
}
