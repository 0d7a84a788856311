/* metrics-render-internal.h - what the three parts of the /metrics page
 * share: the page's copy of the ledger (struct row), the family table's row
 * (struct fam) and the line writers. metrics-render.c renders the per-cgroup
 * families and drives the page, metrics-self.c holds acctd's own families,
 * metrics-cadvisor.c cAdvisor's names, metrics-lines.c writes the lines
 * for all three. Not for use outside lib/format. */
#pragma once

#include <math.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "basic/text-buf.h"
#include "metrics-render.h"

/* ---- the page ------------------------------------------------------------------ */

/* What a page shows of one cgroup, copied from the ledger when the page
 * starts (see gather()). */
struct row {
	uint32_t path;       /* offset of the path in the page's arena */
	uint32_t len;        /* strlen(path) */
	bool plain;          /* the path needs no escaping */
	bool dead;           /* a tombstone: only the removed families (ROWS_REMOVED) show it */
	uint8_t depth;       /* below the root (0), for the max_series cut */
	uint64_t died_us;    /* when dead: its removal (monotonic) */
	uint8_t psi_known;   /* bit per enum acct_psi_resource */
	bool cpu_rate_known; /* a CPU rate was computed (cpu_rate, cpu_rate_avg) */
	uint64_t known;      /* bit per quantity: read at least once */
	uint64_t bounded;    /* bit per quantity: a bound, kept in bounds[] */
	uint32_t bounds_at;  /* this row's _ACCT_Q_MAX bounds in the page's bounds[] */
	uint32_t memstat_at; /* this row's memory.stat values in mvals[]; UINT32_MAX: none */
	uint32_t numa_at;    /* this row's per-node values in numa[] */
	uint32_t nr_numa;
	int64_t q[_ACCT_Q_MAX];
	uint64_t age[_ACCT_GROUP_MAX]; /* UINT64_MAX: never read */
	uint32_t psi_avg[_ACCT_PSI_MAX][_ACCT_PSI_KIND_MAX][3];
	unsigned long loadavg[3];
	double cpu_rate, cpu_rate_avg[3];
	uint64_t sample_errors;
	bool io_rate_known;
	double io_rate[_ACCT_IO_STAT_MAX];
	uint32_t io_at;      /* this row's devices in the page's io[] */
	uint32_t nr_io;
	int64_t cadvisor_memstat[3]; /* enum cadvisor_memstat; -1: not in the cgroup's memory.stat */
};

/* One device's I/O values of a row. */
struct io_slot {
	const struct acct_io_device *device; /* interned by the ledger: lives as long as it */
	int64_t v[_ACCT_IO_STAT_MAX];        /* -1: not reported */
};

enum { KIND_BYTES, KIND_CPU, KIND_TASKS, _KIND_MAX }; /* error budget kinds */

struct kind_stats {
	uint64_t counters, sharded, folds, grows, shrinks;
	int64_t batch_max;
};

/* A memory.stat type on the page: on v1 both the cgroup's own key and the
 * hierarchical total_ one map to it (the latter preferred). */
struct slot {
	const char *name; /* interned by the ledger: lives as long as it */
	uint8_t cls;      /* enum acct_memstat_class */
	int16_t total, local; /* key indexes, -1: none */
};

/* The memory.stat values of cAdvisor's container_memory_rss, _cache and
 * _mapped_file: cAdvisor reads the total_ keys on v1 (hierarchical, as
 * acctd's values are) and these on v2 (the keys: metrics-cadvisor.c). */
enum cadvisor_memstat { CADVISOR_RSS, CADVISOR_CACHE, CADVISOR_MAPPED_FILE, _CADVISOR_MEMSTAT_MAX };
extern const char *const metrics_cadvisor_memstat_keys[_CADVISOR_MEMSTAT_MAX][2];

/* The families of the three parts, in page order (self, per cgroup,
 * cAdvisor): at most this many in all. */
#define METRICS_SELF_FAMILIES_MAX 90
#define METRICS_CGROUP_FAMILIES_MAX 45
#define METRICS_CADVISOR_FAMILIES_MAX 25
#define METRICS_FAMILIES_MAX (METRICS_SELF_FAMILIES_MAX + METRICS_CGROUP_FAMILIES_MAX + METRICS_CADVISOR_FAMILIES_MAX)

struct fam;

struct acct_metrics_page {
	struct acct_metrics_options opts;
	const struct acct_metrics_self *self;
	uint64_t now_us;
	bool om;

	struct row *rows;
	size_t n;
	char *arena;              /* the paths, NUL-terminated */
	uint64_t *bounds;         /* _ACCT_Q_MAX per row that has any */
	int64_t *mvals;           /* nr_slots per row that has memory.stat */
	int64_t *numa;
	struct io_slot *io;
	struct slot slots[ACCT_MEMSTAT_MAX];
	unsigned nr_slots;
	int cadvisor_keys[_CADVISOR_MEMSTAT_MAX][2]; /* ledger key indexes (v1, v2); <0: none */

	size_t fi;          /* current family */
	size_t pos;         /* next row in it */
	bool header_done;
	bool done;

	struct kind_stats kinds[_KIND_MAX];

	/* The max_series cut (acct_metrics_page_cut()); while `counting`,
	 * metrics_line() counts a sample in `counted` and writes nothing. */
	struct acct_metrics_cut cut;
	bool counting;
	uint64_t counted;

	struct text_buf w;
	uint64_t bytes;
	size_t nr_fams;
	const struct fam *fams[METRICS_FAMILIES_MAX]; /* the families in page order */
	uint16_t name_len[METRICS_FAMILIES_MAX];      /* strlen of each one's name */
};

/* ---- the families ---------------------------------------------------------------- */

enum ftype { T_GAUGE, T_COUNTER, T_HISTOGRAM, T_INFO };

typedef void (*cg_fn)(struct acct_metrics_page *p, const struct fam *f, const struct row *r);
typedef void (*global_fn)(struct acct_metrics_page *p, const struct fam *f);

/* Which rows a per-cgroup family shows. Live families carry live cgroups
 * only, as cAdvisor's do, so that sum() over them counts what exists; the
 * final values of removed cgroups have families of their own. What names a
 * cgroup (acctd_cgroup_info) shows both: a removed cgroup's final values are
 * joined with it too. */
enum { ROWS_LIVE, ROWS_REMOVED, ROWS_ALL };

struct lbl {
	const char *name, *value;
};

/* Where a field lives: acctd's own figures, the last reconciliation's report
 * (absent: no sample), a cgroup's row. */
enum { SRC_SELF, SRC_RECONCILE, SRC_ROW };

/* How a field is stored and written. */
enum {
	V_U64,    /* uint64_t */
	V_UINT,   /* unsigned */
	V_SIZE,   /* size_t */
	V_BOOL,   /* bool, as 0 or 1 */
	V_I64,    /* int64_t */
	V_USEC,   /* int64_t microseconds, written as seconds */
	V_DOUBLE, /* double, as Go writes it */
};

/* A field is shown only when... (none: always) */
enum {
	F_POSITIVE = 1 << 0, /* its value is > 0 (a time of 0: none yet; a count of 0: absent) */
	F_NONNEG = 1 << 1,   /* its value is >= 0 (-1: unknown) */
};

/* A value in a struct, by offset: what a family row shows, instead of a
 * function per figure. */
struct field {
	uint16_t off;  /* offsetof() the value in its source */
	uint8_t src;   /* SRC_* */
	uint8_t kind;  /* V_* */
	uint8_t flags; /* F_* */
	uint16_t when; /* offsetof() a bool in the same source that must be true; 0: none */
};

/* One sample of a family: a quantity of the row (per-cgroup families) or a
 * field, and its labels (a name NULL: fewer). */
struct series {
	enum acct_quantity q;
	struct field v;
	struct lbl l[2];
};

/* A family: its header and how its samples are made. Most rows name their
 * samples (series) and one of the generic writers: metrics_cg_quantities()
 * (quantities of a cgroup), metrics_cg_fields() (fields of a row),
 * g_fields() (acctd's own figures); the others have a function of their own,
 * which `param` tells what to show where it shows one of several. */
struct fam {
	const char *name; /* the OpenMetrics family name: no _total, no _info */
	uint8_t type;     /* enum ftype */
	uint8_t rows;     /* per-cgroup families: ROWS_LIVE or ROWS_REMOVED */
	int8_t group;     /* enum acct_metrics_family, -1: always */
	const char *unit; /* OpenMetrics UNIT (the name's suffix), or NULL */
	const char *help;
	cg_fn cg;         /* per-cgroup families: called per row */
	global_fn global; /* the others: called once */
	const struct series *series;
	uint8_t nr_series;
	int8_t param; /* a memory.stat class, a unit, an I/O stat or kind of I/O stat: named at the row */
};

/* Whether family f shows row r (live, removed or both). */
static inline bool family_shows(const struct fam *f, const struct row *r)
{
	return f->rows == ROWS_ALL || r->dead == (f->rows == ROWS_REMOVED);
}

/* The rows of a family table, by what they show. */
#define SERIES(...) .series = (const struct series[]){ __VA_ARGS__ }, \
		    .nr_series = sizeof((const struct series[]){ __VA_ARGS__ }) / sizeof(struct series)
#define FIELD(type, member, src_, kind_, ...) \
	{ .off = offsetof(type, member), .src = (src_), .kind = (kind_), __VA_ARGS__ }

/* The parts' tables (metrics-self.c, metrics-cadvisor.c). */
extern const struct fam metrics_self_families[];
extern const size_t metrics_self_families_n;
extern const struct fam metrics_cadvisor_families[];
extern const size_t metrics_cadvisor_families_n;

/* ---- writing lines (metrics-lines.c) ------------------------------------------------- */

/* A label value needs the slow path when it has a byte to escape, a control
 * or a byte that is not ASCII (to be checked as UTF-8 and for controls). */
static inline bool label_plain(const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];
		if (c == '\\' || c == '"' || c < 0x20 || c >= 0x7f)
			return false;
	}
	return true;
}

static inline const char *sample_suffix(const struct fam *f)
{
	return f->type == T_COUNTER ? "_total" : f->type == T_INFO ? "_info" : "";
}

/* Begin a sample: name, suffix, labels (cgroup first when `r`), then "} " or
 * " ". Returns where the value goes, with room for 64 more bytes; NULL on
 * error. Writes the family's header first when it is due. */
char *metrics_line(struct acct_metrics_page *p, const struct fam *f, const char *suffix, const struct row *r,
		   const struct lbl *l, size_t nl);

static inline void end_line(struct acct_metrics_page *p, char *o)
{
	*o++ = '\n';
	text_buf_commit(&p->w, o);
}

/* A double as Go writes it (text_put_double()). `om_le` appends ".0" to
 * integral values, OpenMetrics' canonical form for the le label. At most
 * 32 bytes. */
static inline char *put_double(char *o, double v, bool om_le)
{
	char *start = o;

	o = text_put_double(o, v);
	if (om_le && isfinite(v) && !memchr(start, '.', (size_t)(o - start)) && !memchr(start, 'e', (size_t)(o - start)))
		o = text_put_str(o, ".0");
	return o;
}

static inline void sample_u64(struct acct_metrics_page *p, const struct fam *f, const char *suffix,
			      const struct row *r, const struct lbl *l, size_t nl, uint64_t v)
{
	char *o = metrics_line(p, f, suffix, r, l, nl);
	if (o)
		end_line(p, text_put_u64(o, v));
}

static inline void sample_i64(struct acct_metrics_page *p, const struct fam *f, const struct row *r,
			      const struct lbl *l, size_t nl, int64_t v)
{
	char *o = metrics_line(p, f, sample_suffix(f), r, l, nl);
	if (o)
		end_line(p, text_put_i64(o, v));
}

static inline void sample_fixed(struct acct_metrics_page *p, const struct fam *f, const struct row *r,
				const struct lbl *l, size_t nl, int64_t v, unsigned decimals)
{
	char *o = metrics_line(p, f, sample_suffix(f), r, l, nl);
	if (o)
		end_line(p, text_put_fixed(o, v, decimals));
}

static inline void sample_double(struct acct_metrics_page *p, const struct fam *f, const char *suffix,
				 const struct row *r, const struct lbl *l, size_t nl, double v)
{
	char *o = metrics_line(p, f, suffix, r, l, nl);
	if (o)
		end_line(p, put_double(o, v, false));
}

/* ---- series ----------------------------------------------------------------------- */

static inline size_t series_labels(const struct series *s)
{
	return s->l[0].name ? s->l[1].name ? 2 : 1 : 0;
}

static inline unsigned unit_decimals(enum acct_quantity q)
{
	return acct_quantity_info(q)->unit == ACCT_UNIT_USEC ? 6 : 0; /* usec -> seconds */
}

static inline bool known(const struct row *r, enum acct_quantity q)
{
	return r->known & (1ull << q);
}

/* Whether the field is shown, from `base`, its source. */
static inline bool field_shown(const void *base, const struct field *x)
{
	const char *b = base;
	double v;

	if (x->when && !*(const bool *)(b + x->when))
		return false;
	if (!x->flags)
		return true;
	switch (x->kind) {
	case V_U64:
		v = *(const uint64_t *)(b + x->off) ? 1 : 0;
		break;
	case V_I64:
	case V_USEC:
		v = (double)*(const int64_t *)(b + x->off);
		break;
	case V_DOUBLE:
		v = *(const double *)(b + x->off);
		break;
	default:
		v = 1; /* unsigned and size_t are shown */
	}
	return x->flags & F_POSITIVE ? v > 0 : v >= 0;
}

/* Write the field's value from `base`; at most 32 bytes. */
static inline char *put_field(char *o, const void *base, const struct field *x)
{
	const char *b = (const char *)base + x->off;

	switch (x->kind) {
	case V_U64:
		return text_put_u64(o, *(const uint64_t *)b);
	case V_UINT:
		return text_put_u64(o, *(const unsigned *)b);
	case V_SIZE:
		return text_put_u64(o, *(const size_t *)b);
	case V_BOOL:
		return text_put_u64(o, *(const bool *)b);
	case V_I64:
		return text_put_i64(o, *(const int64_t *)b);
	case V_USEC:
		return text_put_fixed(o, *(const int64_t *)b, 6);
	default:
		return put_double(o, *(const double *)b, false);
	}
}

/* The generic per-cgroup writers: each series' quantity
 * of the row, where read (a limit's -1, "none", left out), microseconds as
 * seconds; each series' field of the row, where shown. */
void metrics_cg_quantities(struct acct_metrics_page *p, const struct fam *f, const struct row *r);
void metrics_cg_fields(struct acct_metrics_page *p, const struct fam *f, const struct row *r);
