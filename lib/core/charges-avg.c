/* charges-avg.c - averages of charged values (charges-avg.h). */
#include "charges-avg.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "basic/util.h"

struct avg_entry {
	char *path;
	double avg[_ACCT_AVG_MAX];
	uint64_t periods;
	bool whole_life;
};

/* Per resource: its entries, sorted by path. */
struct avg_table {
	struct avg_entry *e;
	size_t n;
};

struct acct_charges_avg {
	struct acct_charges *ch;
	bool *enabled; /* per resource */
	struct avg_table *tables;
	size_t nr_resources;
	uint64_t last_us; /* the last step's period boundary; 0: not started */
	uint64_t steps;
};

static void table_clear(struct avg_table *t)
{
	for (size_t i = 0; i < t->n; i++)
		free(t->e[i].path);
	free(t->e);
	*t = (struct avg_table){ 0 };
}

int acct_charges_avg_new(struct acct_charges *ch, const bool *averages, struct acct_charges_avg **ret)
{
	size_t n = acct_charges_nr_resources(ch);
	struct acct_charges_avg *s = calloc(1, sizeof(*s));

	if (!s)
		return -ENOMEM;
	s->ch = ch;
	s->nr_resources = n;
	s->enabled = calloc(n ?: 1, sizeof(*s->enabled));
	s->tables = calloc(n ?: 1, sizeof(*s->tables));
	if (!s->enabled || !s->tables) {
		acct_charges_avg_free(s);
		return -ENOMEM;
	}
	for (size_t i = 0; i < n; i++)
		s->enabled[i] = averages && averages[i];
	*ret = s;
	return 0;
}

struct acct_charges_avg *acct_charges_avg_free(struct acct_charges_avg *s)
{
	if (!s)
		return NULL;
	for (size_t i = 0; s->tables && i < s->nr_resources; i++)
		table_clear(&s->tables[i]);
	free(s->tables);
	free(s->enabled);
	free(s);
	return NULL;
}

bool acct_charges_avg_enabled(const struct acct_charges_avg *s, size_t res)
{
	return s && res < s->nr_resources && s->enabled[res];
}

static int compare_entry(const void *a, const void *b)
{
	return strcmp(((const struct avg_entry *)a)->path, ((const struct avg_entry *)b)->path);
}

static const struct avg_entry *find(const struct avg_table *t, const char *path)
{
	struct avg_entry key = { .path = (char *)path };
	return t->n ? bsearch(&key, t->e, t->n, sizeof(*t->e), compare_entry) : NULL;
}

/* The engine's entries of one resource with their subtree values now; the
 * engine's lock is held while it grows, so a failure is remembered. */
struct gather {
	struct avg_entry *e;
	double *v;
	size_t n, cap;
	bool failed;
};

static void gather_one(const char *path, const struct acct_charge_reading *r, void *userdata)
{
	struct gather *g = userdata;

	if (g->failed)
		return;
	if (g->n == g->cap) {
		size_t cap = MAX(g->cap * 2, 16);
		struct avg_entry *e = reallocarray(g->e, cap, sizeof(*e));
		if (e)
			g->e = e;
		double *v = e ? reallocarray(g->v, cap, sizeof(*v)) : NULL;
		if (!v) {
			g->failed = true;
			return;
		}
		g->v = v;
		g->cap = cap;
	}
	char *p = strdup(path);
	if (!p) {
		g->failed = true;
		return;
	}
	g->e[g->n] = (struct avg_entry){ .path = p };
	g->v[g->n++] = (double)r->subtree.value;
}

/* One resource's step of `periods` periods: a new table from the engine's
 * entries, each carried on from the old one by path. At the start (`start`)
 * the entries there are were charged before averaging began: at 0, not
 * whole life, no period yet. */
static int step_or_start(struct acct_charges_avg *s, size_t res, unsigned periods, const double *decay_n, bool start)
{
	struct gather g = { 0 };

	(void)acct_charges_foreach(s->ch, res, gather_one, &g);
	if (g.failed) {
		for (size_t i = 0; i < g.n; i++)
			free(g.e[i].path);
		free(g.e);
		free(g.v);
		return -ENOMEM;
	}
	/* sort entries and their values together: values ride in avg[0] meanwhile */
	for (size_t i = 0; i < g.n; i++)
		g.e[i].avg[0] = g.v[i];
	free(g.v);
	if (g.n)
		qsort(g.e, g.n, sizeof(*g.e), compare_entry);
	struct avg_table *t = &s->tables[res];
	for (size_t i = 0; i < g.n; i++) {
		struct avg_entry *e = &g.e[i];
		double v = e->avg[0];
		const struct avg_entry *old = find(t, e->path);
		if (start) {
			memset(e->avg, 0, sizeof(e->avg));
			e->periods = 0;
			e->whole_life = false;
		} else if (old) {
			for (int k = 0; k < _ACCT_AVG_MAX; k++)
				e->avg[k] = old->avg[k] * decay_n[k] + v * (1 - decay_n[k]);
			e->periods = old->periods + periods;
			e->whole_life = old->whole_life;
		} else {
			/* New since the last step: from 0, one period (it appeared
			 * within the last), its whole life. */
			for (int k = 0; k < _ACCT_AVG_MAX; k++) {
				double e1 = exp(-(double)ACCT_LOAD_FREQ_USEC / (double)acct_load_window_us[k]);
				e->avg[k] = v * (1 - e1);
			}
			e->periods = 1;
			e->whole_life = true;
		}
	}
	table_clear(t);
	t->e = g.e;
	t->n = g.n;
	return 0;
}

int acct_charges_avg_step(struct acct_charges_avg *s, uint64_t now_us)
{
	bool any = false;

	for (size_t i = 0; i < s->nr_resources; i++)
		any |= s->enabled[i];
	if (!any)
		return 0;
	if (s->last_us == 0) {
		/* The clock starts: what is charged now was there before. */
		int r = 0;
		for (size_t i = 0; i < s->nr_resources && r == 0; i++)
			if (s->enabled[i])
				r = step_or_start(s, i, 0, NULL, true);
		if (r < 0)
			return r;
		s->last_us = now_us;
		return 0;
	}
	if (now_us < s->last_us + ACCT_LOAD_FREQ_USEC)
		return 0;
	uint64_t n64 = (now_us - s->last_us) / ACCT_LOAD_FREQ_USEC;
	unsigned periods = n64 > 1000000 ? 1000000 : (unsigned)n64;
	double decay_n[_ACCT_AVG_MAX];
	for (int k = 0; k < _ACCT_AVG_MAX; k++)
		decay_n[k] = exp(-(double)periods * (double)ACCT_LOAD_FREQ_USEC / (double)acct_load_window_us[k]);
	int failed = 0;
	for (size_t i = 0; i < s->nr_resources; i++)
		if (s->enabled[i] && step_or_start(s, i, periods, decay_n, false) < 0)
			failed = -ENOMEM; /* that resource keeps its averages, stepped next time */
	s->last_us += n64 * ACCT_LOAD_FREQ_USEC;
	s->steps++;
	return failed ?: (int)periods;
}

int acct_charges_avg_read(const struct acct_charges_avg *s, size_t res, const char *path, uint64_t now_us,
			  struct acct_charges_avg_reading *ret)
{
	if (!acct_charges_avg_enabled(s, res))
		return -ENOENT;
	const struct avg_entry *e = find(&s->tables[res], path);
	if (!e)
		return -ENOENT;
	const struct acct_charges_resource *r = acct_charges_resource(s->ch, res);
	*ret = (struct acct_charges_avg_reading){
		.bound = r ? (uint64_t)r->budget : 0,
		.covered_us = e->periods * ACCT_LOAD_FREQ_USEC,
		.age_us = now_us > s->last_us ? now_us - s->last_us : 0,
		.whole_life = e->whole_life,
	};
	memcpy(ret->avg, e->avg, sizeof(ret->avg));
	return 0;
}
