/* metrics-render.c - the ledger as a Prometheus text (0.0.4) or OpenMetrics
 * (1.0) page, rendered in steps. See metrics-render.h for the contract.
 *
 * Speed matters here (10,000 cgroups make a page of tens of megabytes), so
 * lines are assembled with memcpy and hand-written number formatting into one
 * growing buffer, the cgroup label is escaped only for paths that need it,
 * and filters are applied once per snapshot, not once per line.
 *
 * The file is long because the families[] table (name, type, unit, help and
 * the function that writes each family's lines, ~50 families) lives beside
 * the writers it drives, in one place that docs/metrics.md is checked
 * against. */
#include "metrics-render.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "format-double.h"
#include "name-escape.h"
#include "strv.h"
#include "util.h"

/* ---- family sets and options ------------------------------------------------ */

/* The breakdown of memory in use (v2: anon + file + kernel + sock, and the
 * parts of them people watch; v1: cache + rss and theirs), not all ~30 keys:
 * at 10,000 cgroups every key is 10,000 series. */
char *const acct_metrics_default_memory_stat_types[] = {
	"anon", "file", "kernel", "sock", "shmem", "slab", "file_mapped", "file_dirty", "file_writeback", /* v2 */
	"cache", "rss", "rss_huge", "mapped_file", "dirty", "writeback", "swap",                          /* v1 */
	NULL,
};

void acct_metrics_options_default(struct acct_metrics_options *o)
{
	*o = (struct acct_metrics_options){
		.format = ACCT_METRICS_TEXT,
		.max_depth = 32,
		.memory_stat_types = acct_metrics_default_memory_stat_types,
		.families = ACCT_METRICS_FAMILIES_DEFAULT,
	};
}

/* ---- memory.stat keys ---------------------------------------------------------- */

enum acct_memstat_class acct_memstat_classify(const char *key)
{
	/* Event counters: page-level events, THP events, workingset refaults and
	 * activations, NUMA balancing, (z)swap-ins and -outs. Everything else in
	 * memory.stat (v1 and v2) is a size in bytes, except the two v1 limits and
	 * workingset_nodes (a count of radix-tree nodes). */
	static const char *const skip[] = { "hierarchical_memory_limit", "hierarchical_memsw_limit",
					    "workingset_nodes" };
	static const char *const event_prefixes[] = { "pg", "thp_", "workingset_", "numa_", "zswpin",
						      "zswpout", "zswpwb", "pswpin", "pswpout", "swpin_",
						      "swpout_" };

	for (size_t i = 0; i < ELEMENTSOF(skip); i++)
		if (strcmp(key, skip[i]) == 0)
			return ACCT_MEMSTAT_SKIP;
	for (size_t i = 0; i < ELEMENTSOF(event_prefixes); i++)
		if (strncmp(key, event_prefixes[i], strlen(event_prefixes[i])) == 0)
			return ACCT_MEMSTAT_EVENTS;
	return ACCT_MEMSTAT_BYTES;
}

/* ---- content negotiation ------------------------------------------------------- */

static const char *skip_ws(const char *s, const char *end)
{
	while (s < end && (*s == ' ' || *s == '\t'))
		s++;
	return s;
}

static bool token_eq(const char *s, size_t n, const char *lit)
{
	return n == strlen(lit) && strncasecmp(s, lit, n) == 0;
}

/* One element of a comma-separated header: the value before ';' (trimmed)
 * and its q and version parameters. */
struct hdr_elem {
	const char *v;
	size_t vlen;
	double q;
	const char *version;
	size_t version_len;
};

static const char *next_elem(const char *s, struct hdr_elem *e)
{
	const char *end = s + strcspn(s, ",");
	const char *p = skip_ws(s, end);
	const char *semi = memchr(p, ';', (size_t)(end - p));
	const char *vend = semi ? semi : end;

	while (vend > p && (vend[-1] == ' ' || vend[-1] == '\t'))
		vend--;
	*e = (struct hdr_elem){ .v = p, .vlen = (size_t)(vend - p), .q = 1.0 };
	for (const char *q = semi; q && q < end;) {
		const char *pend = memchr(q + 1, ';', (size_t)(end - q - 1));
		if (!pend)
			pend = end;
		const char *k = skip_ws(q + 1, pend);
		const char *eq = memchr(k, '=', (size_t)(pend - k));
		if (eq) {
			size_t klen = (size_t)(eq - k);
			while (klen && (k[klen - 1] == ' ' || k[klen - 1] == '\t'))
				klen--;
			const char *val = skip_ws(eq + 1, pend);
			const char *vend2 = pend;
			while (vend2 > val && (vend2[-1] == ' ' || vend2[-1] == '\t'))
				vend2--;
			if (vend2 - val >= 2 && val[0] == '"' && vend2[-1] == '"')
				val++, vend2--;
			if (token_eq(k, klen, "q")) {
				char buf[16];
				size_t n = MIN((size_t)(vend2 - val), sizeof(buf) - 1);
				memcpy(buf, val, n);
				buf[n] = '\0';
				char *ep;
				double qv = strtod(buf, &ep);
				e->q = ep == buf || !(qv >= 0) ? 0 : qv > 1 ? 1 : qv;
			} else if (token_eq(k, klen, "version")) {
				e->version = val;
				e->version_len = (size_t)(vend2 - val);
			}
		}
		q = pend < end ? pend : NULL;
	}
	return *end ? end + 1 : end;
}

enum acct_metrics_format acct_metrics_negotiate_format(const char *accept)
{
	double q_om = 0, q_text = 0;

	if (!accept)
		return ACCT_METRICS_TEXT;
	for (const char *s = accept; *s;) {
		struct hdr_elem e;
		s = next_elem(s, &e);
		if (token_eq(e.v, e.vlen, "application/openmetrics-text")) {
			if (!e.version || token_eq(e.version, e.version_len, "1.0.0") ||
			    token_eq(e.version, e.version_len, "0.0.1"))
				q_om = MAX(q_om, e.q);
		} else if (token_eq(e.v, e.vlen, "text/plain")) {
			if (!e.version || token_eq(e.version, e.version_len, "0.0.4"))
				q_text = MAX(q_text, e.q);
		} else if (token_eq(e.v, e.vlen, "text/*") || token_eq(e.v, e.vlen, "*/*"))
			q_text = MAX(q_text, e.q);
	}
	return q_om > 0 && q_om >= q_text ? ACCT_METRICS_OPENMETRICS : ACCT_METRICS_TEXT;
}

bool acct_metrics_accepts_gzip(const char *accept_encoding)
{
	double q_gzip = -1, q_any = -1;

	if (!accept_encoding)
		return false;
	for (const char *s = accept_encoding; *s;) {
		struct hdr_elem e;
		s = next_elem(s, &e);
		if (token_eq(e.v, e.vlen, "gzip") || token_eq(e.v, e.vlen, "x-gzip"))
			q_gzip = MAX(q_gzip, e.q);
		else if (token_eq(e.v, e.vlen, "*"))
			q_any = MAX(q_any, e.q);
	}
	return q_gzip >= 0 ? q_gzip > 0 : q_any > 0;
}

/* ---- output buffer and number formatting ---------------------------------------- */

struct wbuf {
	char *buf;
	size_t len, cap;
	int err;
};

static bool wb_grow(struct wbuf *w, size_t need)
{
	size_t cap = MAX(w->cap * 2, w->len + need + 4096);
	char *b = realloc(w->buf, cap);
	if (!b) {
		w->err = -ENOMEM;
		return false;
	}
	w->buf = b;
	w->cap = cap;
	return true;
}

/* Room for n more bytes: a pointer to write them at, or NULL (w->err set). */
static inline char *wb_reserve(struct wbuf *w, size_t n)
{
	if (unlikely(w->err))
		return NULL;
	if (unlikely(w->cap - w->len < n) && !wb_grow(w, n))
		return NULL;
	return w->buf + w->len;
}

static inline void wb_commit(struct wbuf *w, const char *end)
{
	w->len = (size_t)(end - w->buf);
}

static inline char *put_mem(char *o, const void *s, size_t n)
{
	memcpy(o, s, n);
	return o + n;
}

static inline char *put_str(char *o, const char *s)
{
	return put_mem(o, s, strlen(s));
}

static const char digit_pairs[201] = "00010203040506070809101112131415161718192021222324252627282930313233343536373839"
				     "40414243444546474849505152535455565758596061626364656667686970717273747576777879"
				     "8081828384858687888990919293949596979899";

static char *put_u64(char *o, uint64_t v)
{
	char tmp[24];
	char *t = tmp + sizeof(tmp);

	while (v >= 100) {
		unsigned d = (unsigned)(v % 100) * 2;
		v /= 100;
		*--t = digit_pairs[d + 1];
		*--t = digit_pairs[d];
	}
	if (v >= 10) {
		*--t = digit_pairs[v * 2 + 1];
		*--t = digit_pairs[v * 2];
	} else
		*--t = (char)('0' + v);
	return put_mem(o, t, (size_t)(tmp + sizeof(tmp) - t));
}

static char *put_i64(char *o, int64_t v)
{
	if (v < 0) {
		*o++ = '-';
		return put_u64(o, abs_u64(v));
	}
	return put_u64(o, (uint64_t)v);
}

static const uint64_t pow10_u64[] = { 1, 10, 100, 1000, 10000, 100000, 1000000, 10000000, 100000000,
				      1000000000, 10000000000ull, 100000000000ull };

/* frac / 10^decimals as ".ddd" with trailing zeros dropped (nothing for 0). */
static char *put_fraction(char *o, uint64_t frac, unsigned decimals)
{
	if (frac == 0)
		return o;
	while (frac % 10 == 0) {
		frac /= 10;
		decimals--;
	}
	*o++ = '.';
	char *start = o;
	o += decimals;
	for (char *d = o; d > start; frac /= 10)
		*--d = (char)('0' + frac % 10);
	return o;
}

/* v / 10^decimals, exactly (microseconds as seconds, hundredths of a
 * percent as a ratio). */
static char *put_fixed(char *o, int64_t v, unsigned decimals)
{
	uint64_t a = abs_u64(v), p = pow10_u64[decimals];
	if (v < 0)
		*o++ = '-';
	o = put_u64(o, a / p);
	return put_fraction(o, a % p, decimals);
}

/* The kernel's fixed-point load average (11 fractional bits), exactly:
 * 1/2048 = 0.00048828125, so 11 decimals always suffice. */
static char *put_load(char *o, unsigned long v)
{
	o = put_u64(o, v >> 11);
	return put_fraction(o, (uint64_t)(v & 2047) * 48828125u, 11);
}

/* A double as Go's strconv 'g' with the shortest representation writes it:
 * the fewest digits that read back to the same double (format-double.h), so
 * 0.1 is "0.1", never "0.10000000000000001". `om_le` appends ".0" to integral values, OpenMetrics' canonical form
 * for the le label. At most 32 bytes. */
static char *put_double(char *o, double v, bool om_le)
{
	if (isnan(v))
		return put_str(o, "NaN");
	if (isinf(v))
		return put_str(o, v > 0 ? "+Inf" : "-Inf");
	if (v == floor(v) && fabs(v) < 1e15) {
		o = put_i64(o, (int64_t)v);
		return om_le ? put_str(o, ".0") : o;
	}
	char buf[FORMAT_DOUBLE_MAX];
	int n = format_double_shortest(v, buf);
	o = put_mem(o, buf, (size_t)n);
	if (om_le && !memchr(buf, '.', (size_t)n) && !memchr(buf, 'e', (size_t)n))
		o = put_str(o, ".0");
	return o;
}

/* ---- label values -------------------------------------------------------------- */

/* A label value needs the slow path when it has a byte to escape, a control
 * or a byte that is not ASCII (to be checked as UTF-8 and for controls). */
static bool label_plain(const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];
		if (c == '\\' || c == '"' || c < 0x20 || c >= 0x7f)
			return false;
	}
	return true;
}

#define LABEL_MAX_EXPANSION 5 /* one byte -> "\\xNN" */

/* Escape per the text format and OpenMetrics (\\ \" \n) the served text of
 * the name in text mode (name-escape.h), the rule of acctd's log and
 * acctctl's tables: bytes that are not UTF-8 (a Prometheus label value must
 * be UTF-8), C0, DEL, C1 and bidi controls (promtool and Prometheus take
 * them, but a terminal running curl obeys them) become the four characters
 * \xNN, whose backslash the label escapes in turn. Room for
 * LABEL_MAX_EXPANSION * n bytes is needed. */
static char *put_label_value(char *o, const char *s, size_t n)
{
	for (size_t i = 0; i < n;) {
		size_t k = name_escape_span(s + i, n - i, NAME_ESCAPE_TEXT);
		for (size_t j = i; j < i + k; j++) {
			if (s[j] == '\\' || s[j] == '"')
				*o++ = '\\';
			*o++ = s[j]; /* no '\n': text mode escaped it */
		}
		i += k;
		if (i >= n)
			break;
		/* a control (all its bytes) or a byte that is not UTF-8: each
		 * byte alone is one that text mode writes as \xNN */
		size_t l = MAX(utf8_char_len(s + i, n - i), (size_t)1);
		for (size_t j = 0; j < l; j++, i++) {
			*o++ = '\\'; /* the label's escape of the served text's backslash */
			o += name_escape_to(o, s + i, 1, NAME_ESCAPE_TEXT);
		}
	}
	return o;
}

/* ---- the page ------------------------------------------------------------------ */

/* What a page shows of one cgroup, copied from the ledger when the page
 * starts (see gather()). */
struct row {
	uint32_t path;       /* offset of the path in the page's arena */
	uint32_t len;        /* strlen(path) */
	bool plain;          /* the path needs no escaping */
	bool dead;           /* a tombstone: only the removed families (ROWS_REMOVED) show it */
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
 * acctd's values are) and these on v2. */
enum cadvisor_memstat { CADVISOR_RSS, CADVISOR_CACHE, CADVISOR_MAPPED_FILE, _CADVISOR_MEMSTAT_MAX };
static const char *const cadvisor_memstat_keys[_CADVISOR_MEMSTAT_MAX][2] = {
	[CADVISOR_RSS] = { "total_rss", "anon" },
	[CADVISOR_CACHE] = { "total_cache", "file" },
	[CADVISOR_MAPPED_FILE] = { "total_mapped_file", "file_mapped" },
};

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

	struct wbuf w;
	uint64_t bytes;
	uint16_t name_len[160]; /* strlen of each family's name */
};

enum ftype { T_GAUGE, T_COUNTER, T_HISTOGRAM, T_INFO };

struct fam;
typedef void (*cg_fn)(struct acct_metrics_page *p, const struct fam *f, const struct row *r);
typedef void (*global_fn)(struct acct_metrics_page *p, const struct fam *f);

/* Which rows a per-cgroup family shows. Live families carry live cgroups
 * only, as cAdvisor's do, so that sum() over them counts what exists; the
 * final values of removed cgroups have families of their own. */
enum { ROWS_LIVE, ROWS_REMOVED };

struct fam {
	const char *name; /* the OpenMetrics family name: no _total, no _info */
	uint8_t type;
	uint8_t rows;     /* per-cgroup families: ROWS_LIVE or ROWS_REMOVED */
	int8_t group;     /* enum acct_metrics_family, -1: always */
	const char *unit; /* OpenMetrics UNIT (the name's suffix), or NULL */
	const char *help;
	cg_fn cg;
	global_fn global;
	int arg;
};

static const char *sample_suffix(const struct fam *f)
{
	return f->type == T_COUNTER ? "_total" : f->type == T_INFO ? "_info" : "";
}

static void header(struct acct_metrics_page *p, const struct fam *f)
{
	static const char *const types[] = { "gauge", "counter", "histogram", "info" };
	size_t nl = strlen(f->name), hl = strlen(f->help), ul = f->unit ? strlen(f->unit) : 0;
	char *o = wb_reserve(&p->w, 3 * nl + hl + ul + 80);

	if (!o)
		return;
	p->header_done = true;
	if (p->om) {
		o = put_mem(put_str(o, "# TYPE "), f->name, nl);
		*o++ = ' ';
		o = put_str(o, types[f->type]);
		*o++ = '\n';
		if (f->unit) {
			o = put_mem(put_str(o, "# UNIT "), f->name, nl);
			*o++ = ' ';
			o = put_mem(o, f->unit, ul);
			*o++ = '\n';
		}
		o = put_mem(put_str(o, "# HELP "), f->name, nl);
	} else {
		const char *sfx = sample_suffix(f);
		o = put_str(put_mem(put_str(o, "# HELP "), f->name, nl), sfx);
	}
	*o++ = ' ';
	o = put_mem(o, f->help, hl); /* no \ or newline in our help texts */
	*o++ = '\n';
	if (!p->om) {
		o = put_str(put_mem(put_str(o, "# TYPE "), f->name, nl), sample_suffix(f));
		*o++ = ' ';
		o = put_str(o, f->type == T_INFO ? "gauge" : types[f->type]);
		*o++ = '\n';
	}
	wb_commit(&p->w, o);
}

struct lbl {
	const char *name, *value;
};

/* Begin a sample: name, suffix, labels (cgroup first when `r`), then "} " or
 * " ". Returns where the value goes, with room for 64 more bytes; NULL on
 * error. */
static char *line(struct acct_metrics_page *p, const struct fam *f, const char *suffix, const struct row *r,
		  const struct lbl *l, size_t nl)
{
	size_t name_len = p->name_len[p->fi];
	size_t need = name_len + 16 + 64 + (r ? LABEL_MAX_EXPANSION * (size_t)r->len + 12 : 0);
	for (size_t i = 0; i < nl; i++)
		need += strlen(l[i].name) + 4 + LABEL_MAX_EXPANSION * strlen(l[i].value);

	if (!p->header_done)
		header(p, f);
	char *o = wb_reserve(&p->w, need);
	if (!o)
		return NULL;
	o = put_str(put_mem(o, f->name, name_len), suffix);
	if (!r && nl == 0) {
		*o++ = ' ';
		return o;
	}
	*o++ = '{';
	if (r) {
		const char *path = p->arena + r->path;
		/* cAdvisor's families name the cgroup path id, as dashboards query it */
		o = f->group == ACCT_MF_CADVISOR ? put_mem(o, "id=\"", 4) : put_mem(o, "cgroup=\"", 8);
		o = r->plain ? put_mem(o, path, r->len) : put_label_value(o, path, r->len);
		*o++ = '"';
	}
	for (size_t i = 0; i < nl; i++) {
		if (r || i > 0)
			*o++ = ',';
		o = put_str(o, l[i].name);
		*o++ = '=';
		*o++ = '"';
		const char *v = l[i].value;
		size_t vl = strlen(v);
		o = label_plain(v, vl) ? put_mem(o, v, vl) : put_label_value(o, v, vl);
		*o++ = '"';
	}
	*o++ = '}';
	*o++ = ' ';
	return o;
}

static void end_line(struct acct_metrics_page *p, char *o)
{
	*o++ = '\n';
	wb_commit(&p->w, o);
}

static void sample_u64(struct acct_metrics_page *p, const struct fam *f, const char *suffix, const struct row *r,
		       const struct lbl *l, size_t nl, uint64_t v)
{
	char *o = line(p, f, suffix, r, l, nl);
	if (o)
		end_line(p, put_u64(o, v));
}

static void sample_i64(struct acct_metrics_page *p, const struct fam *f, const struct row *r, const struct lbl *l,
		       size_t nl, int64_t v)
{
	char *o = line(p, f, sample_suffix(f), r, l, nl);
	if (o)
		end_line(p, put_i64(o, v));
}

static void sample_fixed(struct acct_metrics_page *p, const struct fam *f, const struct row *r, const struct lbl *l,
			 size_t nl, int64_t v, unsigned decimals)
{
	char *o = line(p, f, sample_suffix(f), r, l, nl);
	if (o)
		end_line(p, put_fixed(o, v, decimals));
}

static void sample_double(struct acct_metrics_page *p, const struct fam *f, const char *suffix, const struct row *r,
			  const struct lbl *l, size_t nl, double v)
{
	char *o = line(p, f, suffix, r, l, nl);
	if (o)
		end_line(p, put_double(o, v, false));
}

/* One of acctd's own counters; OpenMetrics: with _created (acctd's start). */
static void self_counter(struct acct_metrics_page *p, const struct fam *f, const struct lbl *l, size_t nl, uint64_t v)
{
	sample_u64(p, f, "_total", NULL, l, nl, v);
	if (p->om && p->self->start_time > 0)
		sample_double(p, f, "_created", NULL, l, nl, p->self->start_time);
}

static void self_counter_double(struct acct_metrics_page *p, const struct fam *f, const struct lbl *l, size_t nl,
				double v)
{
	sample_double(p, f, "_total", NULL, l, nl, v);
	if (p->om && p->self->start_time > 0)
		sample_double(p, f, "_created", NULL, l, nl, p->self->start_time);
}

/* ---- per-cgroup families -------------------------------------------------------- */

static unsigned unit_decimals(enum acct_quantity q)
{
	return acct_quantity_info(q)->unit == ACCT_UNIT_USEC ? 6 : 0; /* usec -> seconds */
}

static bool known(const struct row *r, enum acct_quantity q)
{
	return r->known & (1ull << q);
}

/* A quantity as it is (bytes, counts; microseconds as seconds). Limits:
 * "no limit" (-1) is left out. */
static void cg_quantity(struct acct_metrics_page *p, const struct fam *f, const struct row *r)
{
	enum acct_quantity q = (enum acct_quantity)f->arg;

	if (!known(r, q) || (acct_quantity_info(q)->limit && r->q[q] < 0))
		return;
	sample_fixed(p, f, r, NULL, 0, r->q[q], unit_decimals(q));
}

static void cg_memory_limits(struct acct_metrics_page *p, const struct fam *f, const struct row *r)
{
	static const struct {
		enum acct_quantity q;
		const char *name;
	} limits[] = { { ACCT_Q_MEMORY_MAX, "max" }, { ACCT_Q_MEMORY_HIGH, "high" } };

	for (size_t i = 0; i < ELEMENTSOF(limits); i++) {
		if (!known(r, limits[i].q) || r->q[limits[i].q] < 0)
			continue;
		struct lbl l = { "limit", limits[i].name };
		sample_i64(p, f, r, &l, 1, r->q[limits[i].q]);
	}
}

static void cg_memstat(struct acct_metrics_page *p, const struct fam *f, const struct row *r)
{
	const char *label = f->arg == ACCT_MEMSTAT_BYTES ? "type" : "event";

	if (r->memstat_at == UINT32_MAX)
		return;
	for (unsigned i = 0; i < p->nr_slots; i++) {
		int64_t v = p->mvals[r->memstat_at + i];
		if (p->slots[i].cls != f->arg || v < 0)
			continue;
		struct lbl l = { label, p->slots[i].name };
		sample_i64(p, f, r, &l, 1, v);
	}
}

static void cg_numa(struct acct_metrics_page *p, const struct fam *f, const struct row *r)
{
	for (unsigned n = 0; n < r->nr_numa; n++) {
		char node[12];
		snprintf(node, sizeof(node), "%u", n);
		struct lbl l = { "node", node };
		sample_i64(p, f, r, &l, 1, p->numa[r->numa_at + n]);
	}
}

static const char *const psi_resources[_ACCT_PSI_MAX] = { "cpu", "memory", "io" };
static const char *const psi_kinds[_ACCT_PSI_KIND_MAX] = { "some", "full" };

static enum acct_quantity psi_total(int r, int k)
{
	return (enum acct_quantity)(ACCT_Q_PSI_CPU_SOME + 2 * r + k);
}

static void cg_psi_totals(struct acct_metrics_page *p, const struct fam *f, const struct row *r)
{
	for (int res = 0; res < _ACCT_PSI_MAX; res++)
		for (int k = 0; k < _ACCT_PSI_KIND_MAX; k++) {
			enum acct_quantity q = psi_total(res, k);
			if (!known(r, q))
				continue;
			struct lbl l[2] = { { "resource", psi_resources[res] }, { "kind", psi_kinds[k] } };
			sample_fixed(p, f, r, l, 2, r->q[q], 6);
		}
}

static void cg_psi_averages(struct acct_metrics_page *p, const struct fam *f, const struct row *r)
{
	static const char *const windows[3] = { "10s", "60s", "300s" };

	for (int res = 0; res < _ACCT_PSI_MAX; res++) {
		if (!(r->psi_known & (1u << res)))
			continue;
		for (int k = 0; k < _ACCT_PSI_KIND_MAX; k++) {
			if (!known(r, psi_total(res, k)))
				continue;
			for (int a = 0; a < 3; a++) {
				struct lbl l[3] = { { "resource", psi_resources[res] }, { "kind", psi_kinds[k] },
						    { "window", windows[a] } };
				/* hundredths of a percent -> ratio */
				sample_fixed(p, f, r, l, 3, r->psi_avg[res][k][a], 4);
			}
		}
	}
}

static const char *const minute_windows[3] = { "1m", "5m", "15m" };

static void cg_load(struct acct_metrics_page *p, const struct fam *f, const struct row *r)
{
	if (r->age[ACCT_GROUP_LOAD] == UINT64_MAX)
		return;
	for (int i = 0; i < 3; i++) {
		struct lbl l = { "window", minute_windows[i] };
		char *o = line(p, f, "", r, &l, 1);
		if (o)
			end_line(p, put_load(o, r->loadavg[i]));
	}
}

static void cg_cpu_rate(struct acct_metrics_page *p, const struct fam *f, const struct row *r)
{
	if (!r->cpu_rate_known)
		return;
	if (f->arg < 0) {
		sample_double(p, f, "", r, NULL, 0, r->cpu_rate);
		return;
	}
	for (int i = 0; i < 3; i++) {
		struct lbl l = { "window", minute_windows[i] };
		sample_double(p, f, "", r, &l, 1, r->cpu_rate_avg[i]);
	}
}

static void cg_ages(struct acct_metrics_page *p, const struct fam *f, const struct row *r)
{
	static const char *const groups[_ACCT_GROUP_MAX] = { "fast", "slow", "load" };

	for (int g = 0; g < _ACCT_GROUP_MAX; g++) {
		if (r->age[g] == UINT64_MAX)
			continue;
		struct lbl l = { "group", groups[g] };
		sample_fixed(p, f, r, &l, 1, (int64_t)MIN(r->age[g], (uint64_t)INT64_MAX), 6);
	}
}

/* Error bounds of the quantities of one unit (f->arg), where not zero. */
static void cg_bounds(struct acct_metrics_page *p, const struct fam *f, const struct row *r)
{
	if (!r->bounded)
		return;
	for (int q = 0; q < _ACCT_Q_MAX; q++) {
		const struct acct_quantity_info *qi = acct_quantity_info((enum acct_quantity)q);
		if ((int)qi->unit != f->arg || !(r->bounded & (1ull << q)))
			continue;
		struct lbl l = { "quantity", qi->name };
		uint64_t b = p->bounds[r->bounds_at + (unsigned)q];
		sample_fixed(p, f, r, &l, 1, (int64_t)MIN(b, (uint64_t)INT64_MAX), unit_decimals((enum acct_quantity)q));
	}
}

static void cg_sample_errors(struct acct_metrics_page *p, const struct fam *f, const struct row *r)
{
	if (r->sample_errors)
		sample_u64(p, f, "_total", r, NULL, 0, r->sample_errors);
}

static void cg_removed_age(struct acct_metrics_page *p, const struct fam *f, const struct row *r)
{
	sample_fixed(p, f, r, NULL, 0, (int64_t)(p->now_us > r->died_us ? p->now_us - r->died_us : 0), 6);
}

/* ---- block I/O and memory events (issue 11, items 15 and 16) ----------------------- */

static const char *const io_operations[_ACCT_IO_STAT_MAX] = { "read", "write", "read", "write", "discard", "discard" };

/* f->arg: 0 bytes, 1 operations. */
static bool io_stat_is(enum acct_io_stat k, int ops)
{
	bool is_ops = k == ACCT_IO_READ_IOS || k == ACCT_IO_WRITE_IOS || k == ACCT_IO_DISCARD_IOS;
	return is_ops == (ops != 0);
}

static void cg_io_totals(struct acct_metrics_page *p, const struct fam *f, const struct row *r)
{
	for (int k = 0; k < _ACCT_IO_STAT_MAX; k++) {
		enum acct_quantity q = acct_io_stat_quantity((enum acct_io_stat)k);
		if (!io_stat_is((enum acct_io_stat)k, f->arg) || !known(r, q))
			continue;
		struct lbl l = { "operation", io_operations[k] };
		sample_i64(p, f, r, &l, 1, r->q[q]);
	}
}

static void cg_io_devices(struct acct_metrics_page *p, const struct fam *f, const struct row *r)
{
	for (uint32_t i = 0; i < r->nr_io; i++) {
		const struct io_slot *s = &p->io[r->io_at + i];
		char dev[32];
		snprintf(dev, sizeof(dev), "%u:%u", s->device->major, s->device->minor);
		for (int k = 0; k < _ACCT_IO_STAT_MAX; k++) {
			if (!io_stat_is((enum acct_io_stat)k, f->arg) || s->v[k] < 0)
				continue;
			struct lbl l[3] = { { "device", dev }, { "operation", io_operations[k] },
					    { "device_name", s->device->name } };
			sample_i64(p, f, r, l, s->device->name[0] ? 3 : 2, s->v[k]);
		}
	}
}

static void cg_io_rate(struct acct_metrics_page *p, const struct fam *f, const struct row *r)
{
	if (!r->io_rate_known)
		return;
	for (int k = 0; k < _ACCT_IO_STAT_MAX; k++) {
		if (!io_stat_is((enum acct_io_stat)k, f->arg) || !known(r, acct_io_stat_quantity((enum acct_io_stat)k)))
			continue;
		struct lbl l = { "operation", io_operations[k] };
		sample_double(p, f, "", r, &l, 1, r->io_rate[k]);
	}
}

static void cg_memory_events(struct acct_metrics_page *p, const struct fam *f, const struct row *r)
{
	static const struct {
		enum acct_quantity q;
		const char *event;
	} events[] = {
		{ ACCT_Q_MEMORY_EVENTS_LOW, "low" },		 { ACCT_Q_MEMORY_EVENTS_HIGH, "high" },
		{ ACCT_Q_MEMORY_EVENTS_MAX, "max" },		 { ACCT_Q_MEMORY_EVENTS_OOM, "oom" },
		{ ACCT_Q_MEMORY_EVENTS_OOM_KILL, "oom_kill" }, { ACCT_Q_MEMORY_EVENTS_OOM_GROUP_KILL, "oom_group_kill" },
	};

	for (size_t i = 0; i < ELEMENTSOF(events); i++) {
		if (!known(r, events[i].q))
			continue;
		struct lbl l = { "event", events[i].event };
		sample_i64(p, f, r, &l, 1, r->q[events[i].q]);
	}
}

/* ---- cAdvisor's names (issue 15: dashboards that already exist) ------------------------ */

/* The quantities are acctd's, under the names, types, units and labels of
 * cAdvisor's metrics/prometheus.go, so that dashboards and alert rules
 * written for cAdvisor work unchanged; a value acctd does not have on a
 * layout is absent, never 0. */

static void cg_cadvisor_cpu(struct acct_metrics_page *p, const struct fam *f, const struct row *r)
{
	/* cAdvisor without per-CPU usage (its default) writes one series, cpu="total" */
	struct lbl l = { "cpu", "total" };
	if (known(r, ACCT_Q_CPU_USAGE))
		sample_fixed(p, f, r, &l, 1, r->q[ACCT_Q_CPU_USAGE], 6);
}

/* cAdvisor shows the CFS families only for a cgroup with a CPU quota; acctd
 * does not read the quota, but periods elapse only under one: a cgroup
 * whose bandwidth control never ran (nr_periods 0) has none. */
static void cg_cadvisor_cfs(struct acct_metrics_page *p, const struct fam *f, const struct row *r)
{
	if (known(r, ACCT_Q_CPU_PERIODS) && r->q[ACCT_Q_CPU_PERIODS] > 0)
		cg_quantity(p, f, r);
}

/* container_spec_*: cAdvisor writes 0 for no limit. */
static void cg_cadvisor_limit(struct acct_metrics_page *p, const struct fam *f, const struct row *r)
{
	enum acct_quantity q = (enum acct_quantity)f->arg;
	if (known(r, q))
		sample_i64(p, f, r, NULL, 0, MAX(r->q[q], 0));
}

static void cg_cadvisor_memstat(struct acct_metrics_page *p, const struct fam *f, const struct row *r)
{
	if (r->cadvisor_memstat[f->arg] >= 0)
		sample_i64(p, f, r, NULL, 0, r->cadvisor_memstat[f->arg]);
}

/* container_fs_*: per device, device="/dev/NAME" as cAdvisor names it (the
 * kernel's name from sysfs); a device without one is /dev/block/MAJ:MIN,
 * udev's link to it, so that two such devices stay two series. */
static void cg_cadvisor_fs(struct acct_metrics_page *p, const struct fam *f, const struct row *r)
{
	for (uint32_t i = 0; i < r->nr_io; i++) {
		const struct io_slot *s = &p->io[r->io_at + i];
		if (s->v[f->arg] < 0)
			continue;
		char dev[ACCT_IO_NAME_MAX + 32];
		if (s->device->name[0])
			snprintf(dev, sizeof(dev), "/dev/%s", s->device->name);
		else
			snprintf(dev, sizeof(dev), "/dev/block/%u:%u", s->device->major, s->device->minor);
		struct lbl l = { "device", dev };
		sample_i64(p, f, r, &l, 1, s->v[f->arg]);
	}
}

/* ---- acctd's own families --------------------------------------------------------- */

static void g_build_info(struct acct_metrics_page *p, const struct fam *f)
{
	struct lbl l = { "version", p->self->version ? p->self->version : "unknown" };
	sample_u64(p, f, "_info", NULL, &l, 1, 1);
}

static void g_collector_info(struct acct_metrics_page *p, const struct fam *f)
{
	for (int h = 0; h < _ACCT_HIER_MAX; h++) {
		if (!p->self->collectors[h].collector)
			continue;
		struct lbl l[3] = {
			{ "hierarchy", acct_hierarchy_to_string(h) },
			{ "collector", p->self->collectors[h].collector },
			{ "reason", p->self->collectors[h].reason ? p->self->collectors[h].reason : "" },
		};
		sample_u64(p, f, "_info", NULL, l, 3, 1);
	}
}

static void g_collector_counts(struct acct_metrics_page *p, const struct fam *f)
{
	const uint64_t v[] = { p->self->bpf_checks, p->self->bpf_mismatches, p->self->kernel_passes };
	self_counter(p, f, NULL, 0, v[f->arg]);
}

static void g_ready(struct acct_metrics_page *p, const struct fam *f)
{
	sample_u64(p, f, "", NULL, NULL, 0, p->self->ready);
}

static void g_cgroups(struct acct_metrics_page *p, const struct fam *f)
{
	struct lbl live = { "state", "live" }, dead = { "state", "dead" };
	sample_u64(p, f, "", NULL, &live, 1, p->self->cgroups_live);
	sample_u64(p, f, "", NULL, &dead, 1, p->self->cgroups_dead);
}

static void g_exported(struct acct_metrics_page *p, const struct fam *f)
{
	sample_u64(p, f, "", NULL, NULL, 0, p->n);
}

static void g_pass_hist(struct acct_metrics_page *p, const struct fam *f)
{
	static const char *const kinds[2] = { "fast", "slow" };
	const struct acct_metrics_self *s = p->self;

	if (!s->bucket_bounds || s->nr_buckets == 0)
		return;
	for (int k = 0; k < 2; k++) {
		for (unsigned i = 0; i < s->nr_buckets && i < ACCT_METRICS_MAX_BUCKETS; i++) {
			char le[40];
			char *end = put_double(le, s->bucket_bounds[i], p->om);
			*end = '\0';
			struct lbl l[2] = { { "kind", kinds[k] }, { "le", le } };
			sample_u64(p, f, "_bucket", NULL, l, 2, s->pass[k].bucket[i]);
		}
		struct lbl l = { "kind", kinds[k] };
		sample_double(p, f, "_sum", NULL, &l, 1, s->pass[k].sum_seconds);
		sample_u64(p, f, "_count", NULL, &l, 1, s->pass[k].count);
		if (p->om && s->start_time > 0)
			sample_double(p, f, "_created", NULL, &l, 1, s->start_time);
	}
}

static void g_sample_errors(struct acct_metrics_page *p, const struct fam *f)
{
	for (int i = 0; i < _ACCT_ERR_MAX; i++) {
		struct lbl l = { "reason", acct_sample_error_to_string((enum acct_sample_error)i) };
		self_counter(p, f, &l, 1, p->self->sample_errors[i]);
	}
}

static void g_failed_cgroups(struct acct_metrics_page *p, const struct fam *f)
{
	self_counter(p, f, NULL, 0, p->self->cgroups_failed_total);
}

/* A counter of acct_metrics_self at offset f->arg. */
static void g_self_total(struct acct_metrics_page *p, const struct fam *f)
{
	self_counter(p, f, NULL, 0, *(const uint64_t *)((const char *)p->self + f->arg));
}

static void g_descriptors(struct acct_metrics_page *p, const struct fam *f)
{
	if (p->self->have_sampler)
		sample_u64(p, f, "", NULL, NULL, 0, f->arg ? p->self->descriptors_degraded : p->self->cached_descriptors);
}

static void g_reconcile_passes(struct acct_metrics_page *p, const struct fam *f)
{
	if (p->self->reconcile)
		self_counter(p, f, NULL, 0, p->self->reconcile->passes);
}

static void g_checked_parents(struct acct_metrics_page *p, const struct fam *f)
{
	if (p->self->reconcile)
		sample_u64(p, f, "", NULL, NULL, 0, p->self->reconcile->checked_parents);
}

static void g_drift(struct acct_metrics_page *p, const struct fam *f)
{
	static const struct {
		const char *name;
		double pct;
	} stats[] = { { "p50", 50 }, { "p90", 90 }, { "p99", 99 } };
	const struct acct_reconcile_report *r = p->self->reconcile;

	if (!r)
		return;
	const struct histogram *h = f->arg ? &r->drift_cpu : &r->drift_memory;
	unsigned dec = f->arg ? 6 : 0;
	if (h->count == 0)
		return;
	for (size_t i = 0; i < ELEMENTSOF(stats); i++) {
		struct lbl l = { "stat", stats[i].name };
		sample_fixed(p, f, NULL, &l, 1, (int64_t)MIN(histogram_percentile(h, stats[i].pct), (uint64_t)INT64_MAX),
			     dec);
	}
	struct lbl l = { "stat", "max" };
	sample_fixed(p, f, NULL, &l, 1, (int64_t)MIN(h->max, (uint64_t)INT64_MAX), dec);
}

static void g_drift_cgroups(struct acct_metrics_page *p, const struct fam *f)
{
	const struct acct_reconcile_report *r = p->self->reconcile;
	if (!r)
		return;
	struct lbl m = { "quantity", "memory" }, c = { "quantity", "cpu" };
	sample_u64(p, f, "", NULL, &m, 1, r->drift_memory.count);
	sample_u64(p, f, "", NULL, &c, 1, r->drift_cpu.count);
}

static void g_violations(struct acct_metrics_page *p, const struct fam *f)
{
	const struct acct_reconcile_report *r = p->self->reconcile;
	if (!r)
		return;
	for (int i = 0; i < _ACCT_INV_MAX; i++) {
		struct lbl l = { "invariant", acct_invariant_to_string((enum acct_invariant)i) };
		if (f->type == T_COUNTER)
			self_counter(p, f, &l, 1, r->violations_total[i]);
		else
			sample_u64(p, f, "", NULL, &l, 1, r->violations[i]);
	}
}

static void g_meminfo(struct acct_metrics_page *p, const struct fam *f)
{
	const struct acct_reconcile_report *r = p->self->reconcile;
	if (!r)
		return;
	int64_t v = f->arg == 0 ? r->root_memory : f->arg == 1 ? r->meminfo_used : r->meminfo_total;
	if (v >= 0 && (f->arg != 2 || r->meminfo_used >= 0))
		sample_i64(p, f, NULL, NULL, 0, v);
}

static void g_reloads(struct acct_metrics_page *p, const struct fam *f)
{
	const struct acct_metrics_self *s = p->self;
	switch (f->arg) {
	case 0:
		self_counter(p, f, NULL, 0, s->reloads);
		break;
	case 1:
		self_counter(p, f, NULL, 0, s->reload_failures);
		break;
	case 2:
		sample_u64(p, f, "", NULL, NULL, 0, s->last_reload_ok);
		break;
	case 3:
		if (s->last_reload_time > 0)
			sample_double(p, f, "", NULL, NULL, 0, s->last_reload_time);
		break;
	}
}

static void g_history(struct acct_metrics_page *p, const struct fam *f)
{
	const struct acct_metrics_self *s = p->self;
	if (!s->have_history)
		return;
	switch (f->arg) {
	case 0:
		sample_u64(p, f, "", NULL, NULL, 0, s->history_enabled);
		break;
	case 1:
		sample_u64(p, f, "", NULL, NULL, 0, s->history_up);
		break;
	case 2:
		sample_u64(p, f, "", NULL, NULL, 0, s->history_bytes);
		break;
	case 3:
		self_counter(p, f, NULL, 0, s->history_errors_total);
		break;
	case 4:
		self_counter(p, f, NULL, 0, s->history_recordings_total);
		break;
	case 5:
		self_counter(p, f, NULL, 0, s->history_records_total);
		break;
	case 6:
		if (s->history_last_recording_time > 0)
			sample_double(p, f, "", NULL, NULL, 0, s->history_last_recording_time);
		break;
	case 7:
		sample_u64(p, f, "", NULL, NULL, 0, s->history_heap_bytes);
		break;
	case 8:
		if (s->history_last_recording_age >= 0)
			sample_double(p, f, "", NULL, NULL, 0, s->history_last_recording_age);
		break;
	case 9:
		sample_double(p, f, "", NULL, NULL, 0, s->history_interval);
		break;
	case 10:
		sample_u64(p, f, "", NULL, NULL, 0, s->history_stalled);
		break;
	}
}

static void g_api(struct acct_metrics_page *p, const struct fam *f)
{
	const struct acct_metrics_self *s = p->self;
	if (!s->have_api)
		return;
	switch (f->arg) {
	case 0:
		for (size_t i = 0; i < s->nr_api_requests; i++) {
			struct lbl l[2] = { { "method", s->api_requests[i].a }, { "result", s->api_requests[i].b } };
			self_counter(p, f, l, 2, s->api_requests[i].value);
		}
		break;
	case 1:
		sample_u64(p, f, "", NULL, NULL, 0, s->api_connections);
		break;
	case 2:
		self_counter(p, f, NULL, 0, s->api_connections_total);
		break;
	case 3:
		self_counter(p, f, NULL, 0, s->api_refused_total);
		break;
	case 4:
		for (size_t i = 0; i < s->nr_api_budget_refusals; i++) {
			struct lbl l = { "resource", s->api_budget_refusals[i].a };
			self_counter(p, f, &l, 1, s->api_budget_refusals[i].value);
		}
		break;
	}
}

static void g_http(struct acct_metrics_page *p, const struct fam *f)
{
	const struct acct_metrics_self *s = p->self;
	if (!s->have_http)
		return;
	switch (f->arg) {
	case 0:
		for (size_t i = 0; i < s->nr_http_responses; i++) {
			struct lbl l = { "code", s->http_responses[i].a };
			self_counter(p, f, &l, 1, s->http_responses[i].value);
		}
		break;
	case 1:
		sample_u64(p, f, "", NULL, NULL, 0, s->http_connections);
		break;
	case 2:
		self_counter(p, f, NULL, 0, s->http_connections_total);
		break;
	case 3: {
		struct lbl ev = { "reason", "evicted" }, re = { "reason", "refused" }, to = { "reason", "timeout" };
		self_counter(p, f, &ev, 1, s->http_evicted_total);
		self_counter(p, f, &re, 1, s->http_refused_total);
		self_counter(p, f, &to, 1, s->http_timeouts_total);
		break;
	}
	}
}

static const char *const kind_names[_KIND_MAX] = { "bytes", "cpu", "tasks" };

static void g_engine(struct acct_metrics_page *p, const struct fam *f)
{
	const struct acct_metrics_self *s = p->self;
	if (!s->have_domain)
		return;
	const struct acct_domain_stats *d = &s->domain;
	switch (f->arg) {
	case 0: {
		struct lbl c = { "state", "compact" }, sh = { "state", "sharded" };
		sample_u64(p, f, "", NULL, &c, 1, d->counters - MIN(d->sharded, d->counters));
		sample_u64(p, f, "", NULL, &sh, 1, d->sharded);
		break;
	}
	case 1:
		self_counter(p, f, NULL, 0, d->upgrades);
		break;
	case 2:
		self_counter(p, f, NULL, 0, d->tune_passes);
		break;
	case 3:
		sample_u64(p, f, "", NULL, NULL, 0, d->auto_tune);
		break;
	case 4:
		sample_u64(p, f, "", NULL, NULL, 0, d->pool_bytes);
		break;
	case 5:
		sample_u64(p, f, "", NULL, NULL, 0, d->nr_shards);
		break;
	case 6:
		sample_u64(p, f, "", NULL, NULL, 0, d->nr_nodes);
		break;
	case 7:
		sample_i64(p, f, NULL, NULL, 0, s->budgets.bytes);
		break;
	case 8:
		sample_fixed(p, f, NULL, NULL, 0, s->budgets.cpu_us, 6);
		break;
	case 9:
		sample_i64(p, f, NULL, NULL, 0, s->budgets.tasks);
		break;
	}
}

static void g_engine_kinds(struct acct_metrics_page *p, const struct fam *f)
{
	const struct acct_metrics_self *s = p->self;
	int64_t budgets[_KIND_MAX] = { s->budgets.bytes, s->budgets.cpu_us, s->budgets.tasks };

	if (!s->have_domain)
		return;
	for (int k = 0; k < _KIND_MAX; k++) {
		const struct kind_stats *ks = &p->kinds[k];
		struct lbl l[2] = { { "kind", kind_names[k] }, { "direction", "grow" } };
		switch (f->arg) {
		case 0:
			sample_i64(p, f, NULL, l, 1, acct_batch_for_budget(budgets[k], s->domain.nr_shards));
			break;
		case 1:
			sample_i64(p, f, NULL, l, 1, ks->batch_max);
			break;
		case 2:
			sample_u64(p, f, "", NULL, l, 1, ks->counters);
			break;
		case 3:
			sample_u64(p, f, "", NULL, l, 1, ks->sharded);
			break;
		case 4:
			sample_u64(p, f, "", NULL, l, 1, ks->folds);
			break;
		case 5:
			sample_u64(p, f, "", NULL, l, 2, ks->grows);
			l[1].value = "shrink";
			sample_u64(p, f, "", NULL, l, 2, ks->shrinks);
			break;
		}
	}
}

static void g_process(struct acct_metrics_page *p, const struct fam *f)
{
	const struct acct_metrics_self *s = p->self;
	if (!s->have_process)
		return;
	switch (f->arg) {
	case 0:
		self_counter_double(p, f, NULL, 0, s->process_cpu_seconds);
		break;
	case 1:
		sample_u64(p, f, "", NULL, NULL, 0, s->process_rss_bytes);
		break;
	case 2:
		sample_u64(p, f, "", NULL, NULL, 0, s->process_virtual_bytes);
		break;
	case 3:
		if (s->start_time > 0)
			sample_double(p, f, "", NULL, NULL, 0, s->start_time);
		break;
	case 4:
		sample_u64(p, f, "", NULL, NULL, 0, s->process_max_fds);
		break;
	}
}

/* ---- the families, in page order ----------------------------------------------------- */

#define G(name, type, group, unit, help, fn, arg) { name, type, ROWS_LIVE, group, unit, help, NULL, fn, arg }
#define C(name, type, group, unit, help, fn, arg) { name, type, ROWS_LIVE, group, unit, help, fn, NULL, arg }
#define R(name, type, unit, help, fn, arg) { name, type, ROWS_REMOVED, ACCT_MF_REMOVED, unit, help, fn, NULL, arg }
#define K(name, type, unit, help, fn, arg) { name, type, ROWS_LIVE, ACCT_MF_CADVISOR, unit, help, fn, NULL, arg }

static const struct fam families[] = {
	G("acctd_build", T_INFO, -1, NULL, "acctd's version (value 1).", g_build_info, 0),
	G("acctd_ready", T_GAUGE, -1, NULL, "1 once the first complete sampling pass is in the ledger.", g_ready, 0),
	G("acctd_collector", T_INFO, -1, NULL,
	  "The collector reading each cgroup hierarchy (bpf: the kernel's accounting through a BPF iterator; "
	  "files: cgroupfs files) and why (value 1).",
	  g_collector_info, 0),
	G("acctd_collector_checks", T_COUNTER, -1, NULL,
	  "Cross-checks of the BPF collector's values against files read around its walk.", g_collector_counts, 0),
	G("acctd_collector_mismatches", T_COUNTER, -1, NULL,
	  "Cross-checks whose BPF value lay outside the files' readings around the walk.", g_collector_counts, 1),
	G("acctd_collector_walks", T_COUNTER, -1, NULL,
	  "Passes of the BPF collector's memory values alone (sampling.bpf_interval).", g_collector_counts, 2),
	G("acctd_cgroups", T_GAUGE, -1, NULL, "cgroups in the ledger: live, and tombstones kept for their retention.",
	  g_cgroups, 0),
	G("acctd_metrics_cgroups", T_GAUGE, -1, NULL,
	  "cgroups on this page, after metrics.max_depth and the include and exclude globs (one per path).",
	  g_exported, 0),
	G("acctd_sampling_pass_duration_seconds", T_HISTOGRAM, -1, "seconds",
	  "Wall-clock duration of sampling passes: kind fast reads the fast files only, slow the slow files too.",
	  g_pass_hist, 0),
	G("acctd_sampling_errors", T_COUNTER, -1, NULL, "Failed reads of cgroup files, by reason.", g_sample_errors, 0),
	G("acctd_sampling_failed_cgroups", T_COUNTER, -1, NULL,
	  "cgroups with at least one failed value in a pass, summed over passes.", g_failed_cgroups, 0),
	/* Issue 27: a log that cannot hold acctd up, rate limits, the tombstones' budget. */
	G("acctd_log_lines_dropped", T_COUNTER, -1, NULL,
	  "Log lines dropped because the reader of the log (stderr, the journal) was too slow.", g_self_total,
	  offsetof(struct acct_metrics_self, log_lines_dropped)),
	G("acctd_log_lines_suppressed", T_COUNTER, -1, NULL,
	  "Log lines suppressed by the per-cause rate limits ([log] rate_limit_burst).", g_self_total,
	  offsetof(struct acct_metrics_self, log_lines_suppressed)),
	G("acctd_tombstones_folded", T_COUNTER, -1, NULL,
	  "Tombstones forgotten before tombstone_retention ended, beyond [cgroups] max_tombstones.", g_self_total,
	  offsetof(struct acct_metrics_self, tombstones_folded)),
	G("acctd_sampling_cached_descriptors", T_GAUGE, -1, NULL, "cgroup file descriptors kept open between passes.",
	  g_descriptors, 0),
	G("acctd_sampling_descriptors_degraded", T_GAUGE, -1, NULL,
	  "1 when the descriptor limit was reached and files are opened per read.", g_descriptors, 1),
	G("acctd_reconcile_passes", T_COUNTER, -1, NULL, "Reconciliations of the ledger against the kernel.",
	  g_reconcile_passes, 0),
	G("acctd_reconcile_checked_parents", T_GAUGE, -1, NULL,
	  "Parents whose children's memory was checked in the last reconciliation.", g_checked_parents, 0),
	G("acctd_reconcile_drift_bytes", T_GAUGE, -1, "bytes",
	  "Memory drift per cgroup in the last pass: |kernel reading - ledger value| (p50/p90/p99 within "
	  "1/64 of the exact percentiles).",
	  g_drift, 0),
	G("acctd_reconcile_drift_seconds", T_GAUGE, -1, "seconds",
	  "CPU time per cgroup that the ledger had not seen yet at the last pass (p50/p90/p99 within 1/64 of "
	  "the exact percentiles).",
	  g_drift, 1),
	G("acctd_reconcile_drift_cgroups", T_GAUGE, -1, NULL, "cgroups whose drift was measured in the last pass.",
	  g_drift_cgroups, 0),
	G("acctd_invariant_violations", T_COUNTER, -1, NULL, "Invariant violations found by reconciliation.",
	  g_violations, 0),
	G("acctd_invariant_violations_last_pass", T_GAUGE, -1, NULL,
	  "Invariant violations found by the last reconciliation.", g_violations, 0),
	G("acctd_reconcile_root_memory_bytes", T_GAUGE, -1, "bytes",
	  "The root's memory at the last reconciliation (its reading or the sum of the top level, the larger).",
	  g_meminfo, 0),
	G("acctd_reconcile_meminfo_used_bytes", T_GAUGE, -1, "bytes",
	  "MemTotal - MemFree of /proc/meminfo at the last reconciliation.", g_meminfo, 1),
	G("acctd_reconcile_meminfo_total_bytes", T_GAUGE, -1, "bytes",
	  "MemTotal of /proc/meminfo at the last reconciliation.", g_meminfo, 2),
	G("acctd_config_reloads", T_COUNTER, -1, NULL, "Configuration reloads attempted.", g_reloads, 0),
	G("acctd_config_reload_failures", T_COUNTER, -1, NULL,
	  "Configuration reloads that failed (the previous configuration stayed).", g_reloads, 1),
	G("acctd_config_last_reload_successful", T_GAUGE, -1, NULL,
	  "0 when the last reload failed, else 1 (also when there was none).", g_reloads, 2),
	G("acctd_config_last_reload_timestamp_seconds", T_GAUGE, -1, "seconds",
	  "Wall-clock time of the last reload attempt.", g_reloads, 3),
	/* Issue 14: the history (docs/history.md, "In the daemon"). */
	G("acctd_history_enabled", T_GAUGE, -1, NULL, "1 when history.enabled is on.", g_history, 0),
	G("acctd_history_up", T_GAUGE, -1, NULL,
	  "1 while the history is recorded, 0 while its store fails (full disk, read-only), its recorder is stalled or "
	  "history is off.",
	  g_history, 1),
	G("acctd_history_bytes", T_GAUGE, -1, "bytes", "Size of the history database with its write-ahead log.",
	  g_history, 2),
	G("acctd_history_heap_bytes", T_GAUGE, -1, "bytes",
	  "What SQLite holds on acctd's heap: the history's page caches (at most 16 MiB each for recording and "
	  "queries) and statements.",
	  g_history, 7),
	G("acctd_history_errors", T_COUNTER, -1, NULL, "Failed opens and recordings of the history store.", g_history,
	  3),
	G("acctd_history_recordings", T_COUNTER, -1, NULL, "Recordings written to the history store.", g_history, 4),
	G("acctd_history_records", T_COUNTER, -1, NULL,
	  "Accounting records of removed cgroups (the journal's and the store's).", g_history, 5),
	G("acctd_history_last_recording_timestamp_seconds", T_GAUGE, -1, "seconds",
	  "Wall-clock time of the last recording written.", g_history, 6),
	/* Issue 27: recording health, judged when the page is made. */
	G("acctd_history_last_recording_age_seconds", T_GAUGE, -1, "seconds",
	  "How long ago the last recording was written (absent before the first).", g_history, 8),
	G("acctd_history_interval_seconds", T_GAUGE, -1, "seconds", "The history's recording interval.", g_history, 9),
	G("acctd_history_stalled", T_GAUGE, -1, NULL,
	  "1 while no recording has ended for more than three intervals (a blocked recorder, acctd stopped): "
	  "that time is a gap in the history.",
	  g_history, 10),
	G("acctd_api_requests", T_COUNTER, -1, NULL, "varlink API calls by method and result (ok or the error name).",
	  g_api, 0),
	G("acctd_api_connections", T_GAUGE, -1, NULL, "Open varlink API connections.", g_api, 1),
	G("acctd_api_connections_accepted", T_COUNTER, -1, NULL, "varlink API connections accepted.", g_api, 2),
	G("acctd_api_connections_refused", T_COUNTER, -1, NULL, "varlink API connections refused for their limits.",
	  g_api, 3),
	G("acctd_api_budget_refusals", T_COUNTER, -1, NULL,
	  "varlink API charges refused by a resource budget (docs/api.md), by resource.", g_api, 4),
	G("acctd_metrics_responses", T_COUNTER, -1, NULL, "HTTP responses of the metrics endpoint, by status code.",
	  g_http, 0),
	G("acctd_metrics_connections", T_GAUGE, -1, NULL, "Open connections to the metrics endpoint.", g_http, 1),
	G("acctd_metrics_connections_accepted", T_COUNTER, -1, NULL, "Connections to the metrics endpoint accepted.",
	  g_http, 2),
	G("acctd_metrics_connections_dropped", T_COUNTER, -1, NULL,
	  "Connections to the metrics endpoint closed by acctd: evicted for a new one past the limit, refused, or "
	  "timed out.",
	  g_http, 3),
	G("acctd_engine_counters", T_GAUGE, ACCT_MF_ENGINE, NULL,
	  "Counters of the counter engine: compact (one word) or sharded (per CPU).", g_engine, 0),
	G("acctd_engine_upgrades", T_COUNTER, ACCT_MF_ENGINE, NULL, "Counters upgraded from compact to sharded.",
	  g_engine, 1),
	G("acctd_engine_tune_passes", T_COUNTER, ACCT_MF_ENGINE, NULL, "Passes of the batch tuner.", g_engine, 2),
	G("acctd_engine_auto_tune", T_GAUGE, ACCT_MF_ENGINE, NULL, "1 when the batch tuner is on.", g_engine, 3),
	G("acctd_engine_pool_bytes", T_GAUGE, ACCT_MF_ENGINE, "bytes", "Memory mapped for shards and node sums.",
	  g_engine, 4),
	G("acctd_engine_shards", T_GAUGE, ACCT_MF_ENGINE, NULL, "Shards per sharded counter (possible CPUs).", g_engine,
	  5),
	G("acctd_engine_numa_nodes", T_GAUGE, ACCT_MF_ENGINE, NULL, "NUMA nodes of the counter engine's topology.",
	  g_engine, 6),
	G("acctd_engine_error_budget_bytes", T_GAUGE, ACCT_MF_ENGINE, "bytes",
	  "Error budget of each byte counter (the largest bound a read may report).", g_engine, 7),
	G("acctd_engine_error_budget_seconds", T_GAUGE, ACCT_MF_ENGINE, "seconds",
	  "Error budget of each CPU-time counter.", g_engine, 8),
	G("acctd_engine_error_budget_tasks", T_GAUGE, ACCT_MF_ENGINE, NULL,
	  "Error budget of each count (tasks, periods).", g_engine, 9),
	G("acctd_engine_batch_limit", T_GAUGE, ACCT_MF_ENGINE, NULL,
	  "Largest batch the budget allows, by kind of counter (in the counter's unit: bytes, microseconds, count).",
	  g_engine_kinds, 0),
	G("acctd_engine_batch_max", T_GAUGE, ACCT_MF_ENGINE_KINDS, NULL,
	  "Largest batch in effect among the ledger's counters of a kind (the tuner moves it below the limit).",
	  g_engine_kinds, 1),
	G("acctd_engine_ledger_counters", T_GAUGE, ACCT_MF_ENGINE_KINDS, NULL, "The ledger's counters, by kind.",
	  g_engine_kinds, 2),
	G("acctd_engine_sharded_counters", T_GAUGE, ACCT_MF_ENGINE_KINDS, NULL, "The ledger's sharded counters, by kind.",
	  g_engine_kinds, 3),
	G("acctd_engine_folds", T_GAUGE, ACCT_MF_ENGINE_KINDS, NULL,
	  "Residues folded into node sums by the counters now in the ledger, by kind (falls when cgroups go).",
	  g_engine_kinds, 4),
	G("acctd_engine_tune_adjustments", T_GAUGE, ACCT_MF_ENGINE_KINDS, NULL,
	  "Batch doublings (grow) and halvings (shrink) by the tuner of the counters now in the ledger.",
	  g_engine_kinds, 5),
	G("process_cpu_seconds", T_COUNTER, ACCT_MF_PROCESS, "seconds", "User and system CPU time of acctd.", g_process,
	  0),
	G("process_resident_memory_bytes", T_GAUGE, ACCT_MF_PROCESS, "bytes", "Resident memory of acctd.", g_process, 1),
	G("process_virtual_memory_bytes", T_GAUGE, ACCT_MF_PROCESS, "bytes", "Virtual memory of acctd.", g_process, 2),
	G("process_start_time_seconds", T_GAUGE, ACCT_MF_PROCESS, "seconds",
	  "Start time of acctd since the Unix epoch.", g_process, 3),
	G("process_max_fds", T_GAUGE, ACCT_MF_PROCESS, NULL, "Limit on open file descriptors of acctd.", g_process, 4),

	/* Removed cgroups (tombstones), kept until [cgroups] tombstone_retention ends. */
	R("acctd_removed_cgroup_age_seconds", T_GAUGE, "seconds",
	  "Seconds since the cgroup was removed; its removed_ series go when tombstone_retention ends.", cg_removed_age,
	  0),
	R("acctd_removed_cgroup_cpu_usage_seconds", T_COUNTER, "seconds",
	  "CPU time the removed cgroup used, hierarchical: its last reading.", cg_quantity, ACCT_Q_CPU_USAGE),
	R("acctd_removed_cgroup_memory_peak_bytes", T_GAUGE, "bytes",
	  "Highest memory in use the kernel saw in the removed cgroup: its last reading.", cg_quantity,
	  ACCT_Q_MEMORY_PEAK),

	/* Per live cgroup. */
	C("acctd_memory_bytes", T_GAUGE, ACCT_MF_MEMORY, "bytes",
	  "Memory in use, hierarchical: memory.current (v2), memory.usage_in_bytes (v1).", cg_quantity, ACCT_Q_MEMORY),
	C("acctd_memory_working_set_bytes", T_GAUGE, ACCT_MF_MEMORY, "bytes",
	  "Memory in use minus inactive page cache (cAdvisor's working set).", cg_quantity, ACCT_Q_WORKING_SET),
	C("acctd_memory_peak_bytes", T_GAUGE, ACCT_MF_MEMORY, "bytes",
	  "Highest memory in use seen by the kernel: memory.peak (v2), memory.max_usage_in_bytes (v1).", cg_quantity,
	  ACCT_Q_MEMORY_PEAK),
	C("acctd_memory_limit_bytes", T_GAUGE, ACCT_MF_MEMORY, "bytes",
	  "Memory limits: max (memory.max, memory.limit_in_bytes) and high (v2); absent when unlimited.",
	  cg_memory_limits, 0),
	C("acctd_memory_swap_bytes", T_GAUGE, ACCT_MF_MEMORY, "bytes", "Swap in use.", cg_quantity, ACCT_Q_SWAP),
	C("acctd_memory_swap_limit_bytes", T_GAUGE, ACCT_MF_MEMORY, "bytes", "Swap limit; absent when unlimited.",
	  cg_quantity, ACCT_Q_SWAP_MAX),
	C("acctd_memory_stat_bytes", T_GAUGE, ACCT_MF_MEMORY_STAT, "bytes",
	  "memory.stat sizes by type, hierarchical (v1: the total_ keys, named without the prefix).", cg_memstat,
	  ACCT_MEMSTAT_BYTES),
	C("acctd_memory_stat_events", T_COUNTER, ACCT_MF_MEMORY_EVENTS, NULL,
	  "memory.stat event counters (page faults, reclaim scans, refaults, ...).", cg_memstat, ACCT_MEMSTAT_EVENTS),
	C("acctd_memory_numa_bytes", T_GAUGE, ACCT_MF_NUMA, "bytes", "Memory per NUMA node (memory.numa_stat).", cg_numa,
	  0),
	C("acctd_cpu_usage_seconds", T_COUNTER, ACCT_MF_CPU, "seconds", "CPU time used, hierarchical.", cg_quantity,
	  ACCT_Q_CPU_USAGE),
	C("acctd_cpu_user_seconds", T_COUNTER, ACCT_MF_CPU, "seconds", "CPU time used in user mode.", cg_quantity,
	  ACCT_Q_CPU_USER),
	C("acctd_cpu_system_seconds", T_COUNTER, ACCT_MF_CPU, "seconds", "CPU time used in kernel mode.", cg_quantity,
	  ACCT_Q_CPU_SYSTEM),
	C("acctd_cpu_periods", T_COUNTER, ACCT_MF_CPU, NULL, "CFS bandwidth periods elapsed.", cg_quantity,
	  ACCT_Q_CPU_PERIODS),
	C("acctd_cpu_throttled_periods", T_COUNTER, ACCT_MF_CPU, NULL, "CFS bandwidth periods in which it was throttled.",
	  cg_quantity, ACCT_Q_CPU_THROTTLED_PERIODS),
	C("acctd_cpu_throttled_seconds", T_COUNTER, ACCT_MF_CPU, "seconds", "Time throttled by CFS bandwidth control.",
	  cg_quantity, ACCT_Q_CPU_THROTTLED),
	C("acctd_memory_events", T_COUNTER, ACCT_MF_MEMORY, NULL,
	  "Memory events, hierarchical: memory.events (v2); v1: memory.failcnt as max, memory.oom_control's oom_kill.",
	  cg_memory_events, 0),
	C("acctd_memory_under_oom", T_GAUGE, ACCT_MF_MEMORY, NULL,
	  "1 while the cgroup is under OOM with the OOM killer disabled (v1 memory.oom_control under_oom).", cg_quantity,
	  ACCT_Q_MEMORY_UNDER_OOM),
	C("acctd_io_bytes", T_COUNTER, ACCT_MF_IO, "bytes",
	  "Block I/O bytes by operation, hierarchical, summed over the devices: io.stat (v2), "
	  "blkio.throttle.io_service_bytes_recursive (v1).",
	  cg_io_totals, 0),
	C("acctd_io_operations", T_COUNTER, ACCT_MF_IO, NULL,
	  "Block I/O operations by operation, summed over the devices: io.stat (v2), "
	  "blkio.throttle.io_serviced_recursive (v1).",
	  cg_io_totals, 1),
	C("acctd_io_device_bytes", T_COUNTER, ACCT_MF_IO_DEVICES, "bytes",
	  "Block I/O bytes per device (device=MAJ:MIN, device_name from sysfs) and operation.", cg_io_devices, 0),
	C("acctd_io_device_operations", T_COUNTER, ACCT_MF_IO_DEVICES, NULL,
	  "Block I/O operations per device and operation.", cg_io_devices, 1),
	C("acctd_io_rate_bytes_per_second", T_GAUGE, ACCT_MF_IO_RATE, "bytes_per_second",
	  "Block I/O bytes per second over the last fast interval, by operation (systemd-cgtop's Input/s, Output/s).",
	  cg_io_rate, 0),
	C("acctd_io_rate_operations_per_second", T_GAUGE, ACCT_MF_IO_RATE, NULL,
	  "Block I/O operations per second over the last fast interval, by operation.", cg_io_rate, 1),
	C("acctd_pressure_stalled_seconds", T_COUNTER, ACCT_MF_PRESSURE, "seconds",
	  "PSI: time some (or all, kind full) of the cgroup's tasks were stalled on a resource.", cg_psi_totals, 0),
	C("acctd_pressure_stalled_ratio", T_GAUGE, ACCT_MF_PRESSURE_AVG, "ratio",
	  "PSI averages over 10, 60 and 300 s as a ratio (the kernel's percentage / 100).", cg_psi_averages, 0),
	C("acctd_load_average", T_GAUGE, ACCT_MF_LOAD, NULL,
	  "Load average (runnable and uninterruptible threads) of the cgroup and its descendants over 1, 5 and 15 min.",
	  cg_load, 0),
	C("acctd_tasks", T_GAUGE, ACCT_MF_LOAD, NULL, "Threads in the cgroup and its descendants.", cg_quantity,
	  ACCT_Q_TASKS),
	C("acctd_cpu_rate_cores", T_GAUGE, ACCT_MF_CPU_RATE, "cores",
	  "CPU time used per wall-clock time over the last fast interval.", cg_cpu_rate, -1),
	C("acctd_cpu_rate_average_cores", T_GAUGE, ACCT_MF_CPU_RATE, "cores",
	  "Exponential 1, 5 and 15 min averages of the CPU rate.", cg_cpu_rate, 0),
	C("acctd_value_age_seconds", T_GAUGE, ACCT_MF_ACCURACY, "seconds",
	  "Time since the values of a group were read: fast (memory, CPU, PSI), slow (memory.stat, NUMA, peak, "
	  "limits, swap), load (load average, tasks).",
	  cg_ages, 0),
	C("acctd_value_bound_bytes", T_GAUGE, ACCT_MF_ACCURACY, "bytes",
	  "Error bound of a byte value (|value - exact| <= bound); absent when 0.", cg_bounds, ACCT_UNIT_BYTES),
	C("acctd_value_bound_seconds", T_GAUGE, ACCT_MF_ACCURACY, "seconds",
	  "Error bound of a time value; absent when 0.", cg_bounds, ACCT_UNIT_USEC),
	C("acctd_value_bound", T_GAUGE, ACCT_MF_ACCURACY, NULL, "Error bound of a count (tasks, periods); absent when 0.",
	  cg_bounds, ACCT_UNIT_COUNT),
	C("acctd_cgroup_sample_errors", T_COUNTER, ACCT_MF_ACCURACY, NULL,
	  "Failed reads of the cgroup's files; absent while there were none.", cg_sample_errors, 0),

	/* cAdvisor's names for the values above (group cadvisor, label id): see
	 * docs/metrics.md, "cAdvisor's families". */
	K("container_cpu_usage_seconds", T_COUNTER, "seconds", "Cumulative CPU time consumed (cpu=total), hierarchical.",
	  cg_cadvisor_cpu, 0),
	K("container_cpu_user_seconds", T_COUNTER, "seconds", "Cumulative user CPU time consumed.", cg_quantity,
	  ACCT_Q_CPU_USER),
	K("container_cpu_system_seconds", T_COUNTER, "seconds", "Cumulative system CPU time consumed.", cg_quantity,
	  ACCT_Q_CPU_SYSTEM),
	K("container_cpu_cfs_periods", T_COUNTER, NULL, "Number of elapsed CFS enforcement periods.", cg_cadvisor_cfs,
	  ACCT_Q_CPU_PERIODS),
	K("container_cpu_cfs_throttled_periods", T_COUNTER, NULL, "Number of throttled CFS periods.", cg_cadvisor_cfs,
	  ACCT_Q_CPU_THROTTLED_PERIODS),
	K("container_cpu_cfs_throttled_seconds", T_COUNTER, "seconds", "Total time the cgroup was throttled.",
	  cg_cadvisor_cfs, ACCT_Q_CPU_THROTTLED),
	K("container_memory_usage_bytes", T_GAUGE, "bytes",
	  "Current memory usage, including all memory regardless of when it was accessed.", cg_quantity, ACCT_Q_MEMORY),
	K("container_memory_working_set_bytes", T_GAUGE, "bytes", "Current working set: usage minus inactive_file.",
	  cg_quantity, ACCT_Q_WORKING_SET),
	K("container_memory_max_usage_bytes", T_GAUGE, "bytes", "Maximum memory usage recorded.", cg_quantity,
	  ACCT_Q_MEMORY_PEAK),
	K("container_memory_rss", T_GAUGE, NULL, "Size of RSS in bytes (memory.stat total_rss, v2 anon).",
	  cg_cadvisor_memstat, CADVISOR_RSS),
	K("container_memory_cache", T_GAUGE, NULL, "Page cache in bytes (memory.stat total_cache, v2 file).",
	  cg_cadvisor_memstat, CADVISOR_CACHE),
	K("container_memory_mapped_file", T_GAUGE, NULL,
	  "Size of memory mapped files in bytes (memory.stat total_mapped_file, v2 file_mapped).", cg_cadvisor_memstat,
	  CADVISOR_MAPPED_FILE),
	K("container_memory_swap", T_GAUGE, NULL, "Swap usage in bytes.", cg_quantity, ACCT_Q_SWAP),
	/* a counter in cAdvisor, but without _total, which OpenMetrics requires of
	 * a counter's samples: a gauge keeps the name dashboards query */
	K("container_memory_failcnt", T_GAUGE, NULL,
	  "Number of times memory usage hit its limit (v1 memory.failcnt, v2 memory.events max).", cg_quantity,
	  ACCT_Q_MEMORY_EVENTS_MAX),
	K("container_oom_events", T_COUNTER, NULL, "Count of processes killed by the OOM killer in the cgroup.",
	  cg_quantity, ACCT_Q_MEMORY_EVENTS_OOM_KILL),
	K("container_spec_memory_limit_bytes", T_GAUGE, "bytes", "Memory limit; 0 when unlimited.", cg_cadvisor_limit,
	  ACCT_Q_MEMORY_MAX),
	K("container_spec_memory_swap_limit_bytes", T_GAUGE, "bytes", "Swap limit; 0 when unlimited.",
	  cg_cadvisor_limit, ACCT_Q_SWAP_MAX),
	K("container_fs_reads_bytes", T_COUNTER, "bytes", "Cumulative count of bytes read, per device.", cg_cadvisor_fs,
	  ACCT_IO_READ_BYTES),
	K("container_fs_writes_bytes", T_COUNTER, "bytes", "Cumulative count of bytes written, per device.",
	  cg_cadvisor_fs, ACCT_IO_WRITE_BYTES),
	K("container_fs_reads", T_COUNTER, NULL, "Cumulative count of reads completed, per device.", cg_cadvisor_fs,
	  ACCT_IO_READ_IOS),
	K("container_fs_writes", T_COUNTER, NULL, "Cumulative count of writes completed, per device.", cg_cadvisor_fs,
	  ACCT_IO_WRITE_IOS),
	K("container_threads", T_GAUGE, NULL, "Number of threads in the cgroup and its descendants.", cg_quantity,
	  ACCT_Q_TASKS),
};

/* ---- taking the page's copy of the ledger ----------------------------------------- */

/* As discovery filters: the include globs on the path, the exclude globs on
 * the path and every ancestor. */
static bool wanted(const struct acct_metrics_options *o, const struct acct_cgroup *cg)
{
	if (cg->depth > o->max_depth)
		return false;
	if (o->include && !strv_fnmatch_any(o->include, cg->path))
		return false;
	if (!o->exclude || !o->exclude[0])
		return true;
	if (strv_fnmatch_any(o->exclude, cg->path) || strv_fnmatch_any(o->exclude, "/"))
		return false;
	size_t n = strlen(cg->path);
	char stack[512];
	char *buf = n < sizeof(stack) ? stack : malloc(n + 1);
	if (!buf)
		return true; /* no memory: err on exporting */
	memcpy(buf, cg->path, n + 1);
	bool hit = false;
	for (char *s = buf + 1; *s && !hit; s++)
		if (*s == '/') {
			*s = '\0';
			hit = strv_fnmatch_any(o->exclude, buf);
			*s = '/';
		}
	if (buf != stack)
		free(buf);
	return !hit;
}

/* Room for `more` elements of `size` bytes past *n in the array *v of
 * capacity *cap. */
static int grow(void **v, size_t *cap, size_t n, size_t more, size_t size)
{
	if (n + more <= *cap)
		return 0;
	size_t c = MAX(*cap * 2, n + more + 64);
	void *nv = reallocarray(*v, c, size);
	if (!nv)
		return -ENOMEM;
	*v = nv;
	*cap = c;
	return 0;
}

/* The memory.stat types on this page and the keys they come from. */
static void make_slots(struct acct_metrics_page *p, struct acct_ledger *l)
{
	bool bytes = p->opts.families & (1u << ACCT_MF_MEMORY_STAT);
	bool events = p->opts.families & (1u << ACCT_MF_MEMORY_EVENTS);
	unsigned nk = acct_ledger_memstat_count(l);

	p->nr_slots = 0;
	if (!bytes && !events)
		return;
	for (unsigned i = 0; i < nk; i++) {
		const char *k = acct_ledger_memstat_key(l, i);
		bool total = strncmp(k, "total_", 6) == 0;
		const char *name = total ? k + 6 : k;
		enum acct_memstat_class cls = acct_memstat_classify(name);
		if (cls == ACCT_MEMSTAT_SKIP || (cls == ACCT_MEMSTAT_BYTES && !bytes) ||
		    (cls == ACCT_MEMSTAT_EVENTS && !events))
			continue;
		if (cls == ACCT_MEMSTAT_BYTES && p->opts.memory_stat_types && !strv_fnmatch_any(p->opts.memory_stat_types, name))
			continue;
		unsigned s = 0;
		while (s < p->nr_slots && strcmp(p->slots[s].name, name) != 0)
			s++;
		if (s == p->nr_slots)
			p->slots[p->nr_slots++] = (struct slot){ .name = name, .cls = (uint8_t)cls, .total = -1, .local = -1 };
		if (total)
			p->slots[s].total = (int16_t)i;
		else
			p->slots[s].local = (int16_t)i;
	}
}

static void prefetch_record(const struct acct_cgroup *cg)
{
	for (size_t off = 0; off < sizeof(*cg); off += 64)
		__builtin_prefetch((const char *)cg + off);
}

/* A row's I/O rates and per-device values (the latter in cv only when their
 * families are on: gather()). */
static int gather_io(struct acct_metrics_page *p, struct acct_ledger *l, const struct acct_cgroup_values *cv,
		     struct row *row, size_t *n, size_t *cap)
{
	row->io_rate_known = cv->io_rate_known;
	for (int k = 0; row->io_rate_known && k < _ACCT_IO_STAT_MAX; k++)
		row->io_rate[k] = cv->io_rate[k];
	if (!cv->has_io || !(p->opts.families & ((1u << ACCT_MF_IO_DEVICES) | (1u << ACCT_MF_CADVISOR))))
		return 0;
	unsigned nd = cv->nr_io;
	int r = grow((void **)&p->io, cap, *n, nd, sizeof(*p->io));
	if (r < 0)
		return r;
	row->io_at = (uint32_t)*n;
	for (unsigned i = 0; i < nd; i++) {
		struct io_slot *s = &p->io[*n];
		s->device = acct_ledger_io_device(l, cv->io[i].device);
		if (!s->device)
			continue;
		memcpy(s->v, cv->io[i].v, sizeof(s->v));
		(*n)++;
		row->nr_io++;
	}
	return 0;
}

/* Copy what the page shows of every cgroup it shows, in one pass over the
 * ledger: records are visited once each, their counters (allocated side by
 * side) read together and fetched ahead, instead of once per family in page
 * order, a cache miss per value. The page then holds no pointer into the
 * ledger. */
/* Whether cg's label value is another cgroup's on this page. Two names can
 * serve one text (name-escape.h: the four characters \xff, and the byte ff,
 * which is not UTF-8; or \x1b and ESC), but a series must be unique; the
 * text names the literal one, as in the API's lookups, so the other is left
 * out. Only names that are not UTF-8 or hold controls pay for the lookup. Caller holds rcu_read_lock(). */
static bool label_taken(const struct acct_metrics_page *p, struct acct_ledger *l, const struct acct_cgroup *cg,
			size_t len)
{
	if (name_escape_span(cg->path, len, NAME_ESCAPE_TEXT) == len)
		return false;
	_cleanup_free_ char *text = name_escape(cg->path, NAME_ESCAPE_TEXT);
	const struct acct_cgroup *twin = text ? acct_ledger_find(l, text) : NULL;
	return twin && wanted(&p->opts, twin);
}

static int gather(struct acct_metrics_page *p, struct acct_ledger *l)
{
	_cleanup_free_ struct acct_cgroup **v = NULL;
	size_t arena_len = 0, arena_cap = 0, nb = 0, cap_b = 0, nm = 0, cap_m = 0, nn = 0, cap_n = 0, ni = 0, cap_io = 0;
	int n = acct_ledger_snapshot(l, true, &v);
	int r = 0;

	if (n < 0)
		return n;
	make_slots(p, l);
	/* the per-device values only where a family shows them */
	unsigned what = ACCT_READ_STATE | ACCT_READ_CPU_RATE | ACCT_READ_IO_RATE | ACCT_READ_LOAD | ACCT_READ_PSI |
			ACCT_READ_MEMORY | (p->opts.families & ((1u << ACCT_MF_IO_DEVICES) | (1u << ACCT_MF_CADVISOR)) ? ACCT_READ_IO : 0);
	p->rows = calloc(MAX((size_t)n, 1), sizeof(*p->rows));
	if (!p->rows)
		return -ENOMEM;
	for (int i = 0; i < n && r == 0; i++) {
		if (i + 8 < n)
			prefetch_record(v[i + 8]);
		if (i + 4 < n)
			acct_cgroup_prefetch_values(v[i + 4]);
		const struct acct_cgroup *cg = v[i];
		/* One record per path: the live one, sorted first, else the newest tombstone. */
		if ((i > 0 && strcmp(cg->path, v[i - 1]->path) == 0) || !wanted(&p->opts, cg))
			continue;

		size_t len = strlen(cg->path);
		if (unlikely(label_taken(p, l, cg, len)))
			continue;
		struct row *row = &p->rows[p->n];
		if ((r = grow((void **)&p->arena, &arena_cap, arena_len, len + 1, 1)) < 0)
			break;
		memcpy(p->arena + arena_len, cg->path, len + 1);
		/* before the quantities: the ages first (ledger.h, acct_cgroup_age()) */
		struct acct_cgroup_values cv;
		acct_cgroup_read(cg, what, p->now_us, &cv);
		*row = (struct row){ .path = (uint32_t)arena_len, .len = (uint32_t)len, .plain = label_plain(cg->path, len),
				     .dead = cv.dead, .memstat_at = UINT32_MAX };
		if (row->dead)
			row->died_us = cv.died_us;
		arena_len += len + 1;

		for (int g = 0; g < _ACCT_GROUP_MAX; g++)
			row->age[g] = cv.age[g];
		uint64_t b[_ACCT_Q_MAX];
		for (int q = 0; q < _ACCT_Q_MAX; q++) {
			struct acct_reading rd;
			b[q] = 0;
			if (!acct_cgroup_get(cg, (enum acct_quantity)q, false, &rd))
				continue;
			row->known |= 1ull << q;
			row->q[q] = rd.value;
			b[q] = rd.bound;
			if (rd.bound)
				row->bounded |= 1ull << q;
		}
		if (row->bounded) {
			if ((r = grow((void **)&p->bounds, &cap_b, nb, _ACCT_Q_MAX, sizeof(*p->bounds))) < 0)
				break;
			row->bounds_at = (uint32_t)nb;
			memcpy(p->bounds + nb, b, sizeof(b));
			nb += _ACCT_Q_MAX;
		}
		for (int res = 0; res < _ACCT_PSI_MAX; res++) {
			if (!cv.psi_known[res])
				continue;
			row->psi_known |= 1u << res;
			memcpy(row->psi_avg[res], cv.psi_avg[res], sizeof(row->psi_avg[res]));
		}
		for (int a = 0; a < 3; a++) {
			row->loadavg[a] = cv.loadavg[a];
			row->cpu_rate_avg[a] = cv.cpu_rate_avg[a];
		}
		row->cpu_rate = cv.cpu_rate;
		row->cpu_rate_known = cv.cpu_rate_known;
		row->sample_errors = cv.sample_errors;
		if ((r = gather_io(p, l, &cv, row, &ni, &cap_io)) < 0)
			break;

		const int64_t *ms = cv.memstat;
		for (int k = 0; k < _CADVISOR_MEMSTAT_MAX; k++) {
			const int *ki = p->cadvisor_keys[k];
			int64_t val = acct_memstat_value(ms, ki[0]);
			if (val < 0)
				val = acct_memstat_value(ms, ki[1]);
			row->cadvisor_memstat[k] = val;
		}
		if (ms && p->nr_slots) {
			if ((r = grow((void **)&p->mvals, &cap_m, nm, p->nr_slots, sizeof(*p->mvals))) < 0)
				break;
			row->memstat_at = (uint32_t)nm;
			for (unsigned s = 0; s < p->nr_slots; s++) {
				const struct slot *sl = &p->slots[s];
				int64_t val = acct_memstat_value(ms, sl->total);
				if (val < 0 && sl->local >= 0)
					val = acct_memstat_value(ms, sl->local);
				p->mvals[nm + s] = val;
			}
			nm += p->nr_slots;
		}
		if ((p->opts.families & (1u << ACCT_MF_NUMA)) && cv.numa_known) {
			row->numa_at = (uint32_t)nn;
			for (unsigned node = 0;; node++) {
				struct acct_reading rd;
				if (acct_counter_read_node(cg->numa, node, &rd) < 0)
					break; /* past the topology's last node */
				if ((r = grow((void **)&p->numa, &cap_n, nn, 1, sizeof(*p->numa))) < 0)
					break;
				p->numa[nn++] = rd.value;
				row->nr_numa++;
			}
		}
		p->n++;
	}
	return r;
}

static int kind_of_unit(enum acct_unit u)
{
	return u == ACCT_UNIT_BYTES ? KIND_BYTES : u == ACCT_UNIT_USEC ? KIND_CPU : KIND_TASKS;
}

static int engine_stats_one(struct acct_cgroup *cg, void *userdata)
{
	struct kind_stats *ks = userdata;
	for (int q = 0; q < _ACCT_Q_MAX; q++) {
		struct acct_counter_stats st;
		struct kind_stats *k = &ks[kind_of_unit(acct_quantity_info((enum acct_quantity)q)->unit)];
		acct_counter_stats(cg->q[q], &st);
		k->counters++;
		k->sharded += st.state != ACCT_STATE_COMPACT;
		k->folds += st.folds;
		k->grows += st.tune_grows;
		k->shrinks += st.tune_shrinks;
		k->batch_max = MAX(k->batch_max, st.batch);
	}
	return 0;
}

DEFINE_TRIVIAL_CLEANUP_FUNC(struct acct_metrics_page *, acct_metrics_page_free);

int acct_metrics_page_new(struct acct_ledger *l, const struct acct_metrics_options *opts,
			  const struct acct_metrics_self *self, uint64_t now_us, struct acct_metrics_page **ret)
{
	static const struct acct_metrics_self no_self = { 0 };
	_cleanup_(acct_metrics_page_freep) struct acct_metrics_page *p = NULL;
	int r;

	if (opts->format != ACCT_METRICS_TEXT && opts->format != ACCT_METRICS_OPENMETRICS)
		return -EINVAL;
	if (self && self->nr_buckets > ACCT_METRICS_MAX_BUCKETS)
		return -EINVAL;
	p = calloc(1, sizeof(*p));
	if (!p)
		return -ENOMEM;
	p->opts = *opts;
	p->self = self ? self : &no_self;
	p->now_us = now_us;
	p->om = opts->format == ACCT_METRICS_OPENMETRICS;
	_Static_assert(ELEMENTSOF(families) <= ELEMENTSOF(p->name_len), "name_len too small");
	for (size_t i = 0; i < ELEMENTSOF(families); i++)
		p->name_len[i] = (uint16_t)strlen(families[i].name);
	for (int k = 0; k < _CADVISOR_MEMSTAT_MAX; k++)
		for (int v = 0; v < 2; v++)
			p->cadvisor_keys[k][v] = opts->families & (1u << ACCT_MF_CADVISOR)
							 ? acct_ledger_memstat_find(l, cadvisor_memstat_keys[k][v])
							 : -ENOENT;
	r = gather(p, l);
	if (r < 0)
		return r;
	if ((opts->families & (1u << ACCT_MF_ENGINE_KINDS)) && p->self->have_domain) {
		for (int k = 0; k < _KIND_MAX; k++)
			p->kinds[k].batch_max = 1;
		(void)acct_ledger_foreach(l, engine_stats_one, p->kinds);
	}
	*ret = TAKE_PTR(p);
	return 0;
}

struct acct_metrics_page *acct_metrics_page_free(struct acct_metrics_page *p)
{
	if (!p)
		return NULL;
	free(p->rows);
	free(p->arena);
	free(p->bounds);
	free(p->mvals);
	free(p->numa);
	free(p->io);
	free(p->w.buf);
	free(p);
	return NULL;
}

uint64_t acct_metrics_page_bytes(const struct acct_metrics_page *p)
{
	return p->bytes;
}

/* ---- rendering ---------------------------------------------------------------------- */

static bool family_on(const struct acct_metrics_page *p, const struct fam *f)
{
	return f->group < 0 || (p->opts.families & (1u << f->group));
}

static int flush(struct acct_metrics_page *p, acct_metrics_write_fn write, void *userdata)
{
	if (p->w.err)
		return p->w.err;
	if (p->w.len == 0)
		return 0;
	int r = write(p->w.buf, p->w.len, userdata);
	p->bytes += p->w.len;
	p->w.len = 0;
	return r < 0 ? r : 0;
}

int acct_metrics_page_render(struct acct_metrics_page *p, size_t chunk, acct_metrics_write_fn write, void *userdata)
{
	int r;

	if (p->done)
		return 0;
	while (p->fi < ELEMENTSOF(families)) {
		const struct fam *f = &families[p->fi];
		if (!family_on(p, f)) {
			p->fi++;
			continue;
		}
		if (f->global)
			f->global(p, f);
		else {
			/* At least one cgroup per step, whatever the chunk size. */
			size_t first = p->pos;
			for (; p->pos < p->n && (p->pos == first || p->w.len < chunk) && !p->w.err; p->pos++)
				if (p->rows[p->pos].dead == (f->rows == ROWS_REMOVED))
					f->cg(p, f, &p->rows[p->pos]);
		}
		if (p->w.err)
			return p->w.err;
		if (f->global || p->pos >= p->n) {
			p->fi++;
			p->pos = 0;
			p->header_done = false;
		}
		if (p->w.len >= chunk) {
			if ((r = flush(p, write, userdata)) < 0)
				return r;
			return 1;
		}
	}
	if (p->om) {
		char *o = wb_reserve(&p->w, 8);
		if (o)
			wb_commit(&p->w, put_str(o, "# EOF\n"));
	}
	if ((r = flush(p, write, userdata)) < 0)
		return r;
	p->done = true;
	return 0;
}

int acct_metrics_render(struct acct_ledger *l, const struct acct_metrics_options *opts,
			const struct acct_metrics_self *self, uint64_t now_us, acct_metrics_write_fn write, void *userdata)
{
	_cleanup_(acct_metrics_page_freep) struct acct_metrics_page *p = NULL;
	int r = acct_metrics_page_new(l, opts, self, now_us, &p);

	if (r < 0)
		return r;
	do
		r = acct_metrics_page_render(p, 1 << 20, write, userdata);
	while (r > 0);
	return r;
}
