/* ledger-json.c - ledger records, passes and reconciliation as JSON.
 *
 * A cgroup's record and its List entry are defined once, by their text
 * writers (acct_cgroup_write_json(), acct_cgroup_list_entry_write()); their
 * json-c forms are parsed from that text. */
#include "ledger-json.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "basic/format-double.h"
#include "basic/name-escape.h"
#include "basic/text-buf.h"
#include "basic/util.h"
#include "cgroup/cgroup-layout.h"
#include "core/load.h"

static const char *const psi_names[_ACCT_PSI_MAX] = { "cpu", "memory", "io" };

/* A json-c double that serializes as the shortest text that reads back
 * (json-c's own "%.17g" shows binary noise: 0.1 as 0.10000000000000001),
 * with ".0" on integral values as json-c writes them, so that they stay
 * floats for a client that types them. */
static struct json_object *json_double(double v)
{
	char buf[FORMAT_DOUBLE_MAX + 2];
	int n = format_double_shortest(v, buf);
	if (n < 0)
		return json_object_new_double(v);
	if (!strchr(buf, '.') && !strchr(buf, 'e'))
		memcpy(buf + n, ".0", 3);
	return json_object_new_double_s(v, buf);
}

struct json_object *acct_json_text(const char *s)
{
	size_t n = strlen(s);

	if (name_escape_span(s, n, NAME_ESCAPE_UTF8) == n)
		return json_object_new_string(s);
	_cleanup_free_ char *e = name_escape(s, NAME_ESCAPE_UTF8);
	return e ? json_object_new_string(e) : NULL;
}

struct json_object *acct_drift_to_json(const struct histogram *h)
{
	struct json_object *o = json_object_new_object();
	json_object_object_add(o, "count", json_object_new_int64((int64_t)h->count));
	json_object_object_add(o, "p50", json_object_new_int64((int64_t)histogram_percentile(h, 50)));
	json_object_object_add(o, "p90", json_object_new_int64((int64_t)histogram_percentile(h, 90)));
	json_object_object_add(o, "p99", json_object_new_int64((int64_t)histogram_percentile(h, 99)));
	json_object_object_add(o, "max", json_object_new_int64((int64_t)MIN(h->max, (uint64_t)INT64_MAX)));
	return o;
}

struct json_object *acct_reconcile_to_json(const struct acct_reconcile_report *rep)
{
	struct json_object *o = json_object_new_object();
	struct json_object *v = json_object_new_object(), *t = json_object_new_object();
	json_object_object_add(o, "passes", json_object_new_int64((int64_t)rep->passes));
	json_object_object_add(o, "checked_parents", json_object_new_int64((int64_t)rep->checked_parents));
	json_object_object_add(o, "unchanged_passes", json_object_new_int64((int64_t)rep->unchanged_passes));
	for (int i = 0; i < _ACCT_INV_MAX; i++) {
		json_object_object_add(v, acct_invariant_to_string(i), json_object_new_int64((int64_t)rep->violations[i]));
		json_object_object_add(t, acct_invariant_to_string(i), json_object_new_int64((int64_t)rep->violations_total[i]));
	}
	json_object_object_add(o, "violations", v);
	json_object_object_add(o, "violations_total", t);
	json_object_object_add(o, "last_violation",
			       rep->last_violation[0] ? acct_json_text(rep->last_violation) : NULL);
	json_object_object_add(o, "drift_memory_bytes", acct_drift_to_json(&rep->drift_memory));
	json_object_object_add(o, "drift_cpu_us", acct_drift_to_json(&rep->drift_cpu));
	json_object_object_add(o, "root_memory", rep->root_memory >= 0 ? json_object_new_int64(rep->root_memory) : NULL);
	json_object_object_add(o, "meminfo_used", rep->meminfo_used >= 0 ? json_object_new_int64(rep->meminfo_used) : NULL);
	return o;
}

struct json_object *acct_pass_to_json(const struct acct_pass_report *pass)
{
	struct json_object *o = json_object_new_object(), *e = json_object_new_object();
	json_object_object_add(o, "cgroups", json_object_new_int64((int64_t)pass->cgroups));
	json_object_object_add(o, "wall_us", json_object_new_int64((int64_t)pass->wall_us));
	json_object_object_add(o, "cpu_seconds", json_double(pass->cpu_seconds));
	json_object_object_add(o, "files_read", json_object_new_int64((int64_t)pass->files_read));
	json_object_object_add(o, "steady", json_object_new_int64((int64_t)pass->steady));
	json_object_object_add(o, "skipped_empty", json_object_new_int64((int64_t)pass->skipped_empty));
	json_object_object_add(o, "empty_unread", json_object_new_int64((int64_t)pass->empty_unread));
	json_object_object_add(o, "open_per_read", json_object_new_int64((int64_t)pass->open_per_read));
	json_object_object_add(o, "cgroups_failed", json_object_new_int64((int64_t)pass->cgroups_failed));
	for (int i = 0; i < _ACCT_ERR_MAX; i++)
		json_object_object_add(e, acct_sample_error_to_string(i), json_object_new_int64((int64_t)pass->errors[i]));
	json_object_object_add(o, "errors", e);
	/* What the pass did per part: read, pruned (proven unchanged), skipped. */
	struct json_object *parts = json_object_new_object();
	for (int k = 0; k < _ACCT_PART_MAX; k++) {
		struct json_object *part = json_object_new_object();
		for (int r = 0; r < _ACCT_OUTCOME_MAX; r++)
			json_object_object_add(part, acct_part_outcome_to_string(r),
					       json_object_new_int64((int64_t)pass->parts[k][r]));
		json_object_object_add(parts, acct_pass_part_to_string(k), part);
	}
	json_object_object_add(o, "parts", parts);
	if (pass->bpf_records || pass->bpf_walk_us) {
		struct json_object *b = json_object_new_object();
		json_object_object_add(b, "records", json_object_new_int64((int64_t)pass->bpf_records));
		json_object_object_add(b, "walk_us", json_object_new_int64((int64_t)pass->bpf_walk_us));
		json_object_object_add(b, "cgroups", json_object_new_int64((int64_t)pass->bpf_cgroups));
		json_object_object_add(b, "checks", json_object_new_int64((int64_t)pass->bpf_checks));
		json_object_object_add(b, "mismatches", json_object_new_int64((int64_t)pass->bpf_mismatches));
		json_object_object_add(b, "stat_reads", json_object_new_int64((int64_t)pass->bpf_stat_reads));
		json_object_object_add(b, "unbounded", json_object_new_int64((int64_t)pass->bpf_unbounded));
		json_object_object_add(b, "unchanged", json_object_new_int64((int64_t)pass->bpf_unchanged));
		json_object_object_add(b, "pressure_still", json_object_new_int64((int64_t)pass->bpf_psi_still));
		json_object_object_add(b, "last_mismatch", pass->last_mismatch[0] ? acct_json_text(pass->last_mismatch) : NULL);
		json_object_object_add(o, "bpf", b);
	}
	if (pass->task_records || pass->task_walk_us) {
		struct json_object *t = json_object_new_object();
		json_object_object_add(t, "records", json_object_new_int64((int64_t)pass->task_records));
		json_object_object_add(t, "walk_us", json_object_new_int64((int64_t)pass->task_walk_us));
		json_object_object_add(t, "checks", json_object_new_int64((int64_t)pass->task_checks));
		json_object_object_add(t, "mismatches", json_object_new_int64((int64_t)pass->task_mismatches));
		json_object_object_add(o, "tasks", t);
	}
	return o;
}

/* ---- direct writers ----------------------------------------------------------
 *
 * The record and the List entry as text, without building json-c objects: a
 * Get or a List of thousands of cgroups is served in a fraction of the time (no
 * allocation per value; tests/bench/bench-json). The text is what json-c
 * prints with JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE, so the
 * json-c forms below are parsed from it. */

void acct_json_buf_free(struct acct_json_buf *b)
{
	text_buf_free(&b->text);
}

/* The writers' append (text-buf.h): inline, no terminator (added once at the
 * end, by put_end()); text_buf_reserve() keeps a byte spare for it. */
static inline void app(struct acct_json_buf *b, const char *s, size_t n)
{
	text_buf_append(&b->text, s, n);
}

static int put_end(struct acct_json_buf *b)
{
	if (b->failed)
		return -ENOMEM;
	b->data[b->len] = 0;
	return 0;
}

void acct_json_buf_append(struct acct_json_buf *b, const char *s, size_t n)
{
	app(b, s, n);
	if (!b->failed && b->data)
		b->data[b->len] = 0;
}

#define PUT(b, lit) app((b), (lit), sizeof(lit) - 1)
#define PUT_BOOL(b, v) ((v) ? PUT((b), "true") : PUT((b), "false"))

/* The union of ledger-json.h reads one buffer under two names. */
_Static_assert(offsetof(struct acct_json_buf, data) == offsetof(struct text_buf, data) &&
		       offsetof(struct acct_json_buf, len) == offsetof(struct text_buf, len) &&
		       offsetof(struct acct_json_buf, alloc) == offsetof(struct text_buf, alloc) &&
		       offsetof(struct acct_json_buf, failed) == offsetof(struct text_buf, failed),
	       "acct_json_buf is a text_buf");

static inline void put_i64(struct acct_json_buf *b, int64_t v)
{
	char *o = text_buf_reserve(&b->text, TEXT_NUMBER_MAX);
	if (likely(o))
		text_buf_commit(&b->text, text_put_i64(o, v));
}

/* A key known to need no escaping (our own names). */
static void put_plain_key(struct acct_json_buf *b, bool *first, const char *key)
{
	if (*first)
		PUT(b, "\"");
	else
		PUT(b, ",\"");
	*first = false;
	app(b, key, strlen(key));
	PUT(b, "\":");
}

/* The shortest text that reads back to the same double (format-double.h),
 * with ".0" added when that looks like an integer, as json-c does; NaN and
 * infinities as json-c spells them. Integral values, the common case (0
 * above all), skip printf. */
static void put_double(struct acct_json_buf *b, double v)
{
	char tmp[128];
	int n;

	if (isnan(v)) {
		PUT(b, "NaN");
		return;
	}
	if (isinf(v)) {
		if (v > 0)
			PUT(b, "Infinity");
		else
			PUT(b, "-Infinity");
		return;
	}
	if (v == 0 && !signbit(v)) {
		PUT(b, "0.0");
		return;
	}
	if (v == floor(v) && fabs(v) < 1e15 && v != 0) {
		put_i64(b, (int64_t)v);
		PUT(b, ".0");
		return;
	}
	/* printf of a double costs ~300 ns; the same values (PSI averages,
	 * rates of idle cgroups) come back in every record: remember the text
	 * of the last few per thread. */
	static __thread struct {
		uint64_t bits;
		uint8_t len;
		char text[31];
	} cache[256];
	uint64_t bits;
	memcpy(&bits, &v, sizeof(bits));
	unsigned slot = (unsigned)((bits * 0x9e3779b97f4a7c15ull) >> 56);
	if (cache[slot].len && cache[slot].bits == bits) {
		app(b, cache[slot].text, cache[slot].len);
		return;
	}
	n = format_double_shortest(v, tmp);
	if (n < 0)
		return;
	if (!strchr(tmp, '.') && !strchr(tmp, 'e')) {
		memcpy(tmp + n, ".0", 3);
		n += 2;
	}
	if (n < (int)sizeof(cache[slot].text)) {
		cache[slot].bits = bits;
		cache[slot].len = (uint8_t)n;
		memcpy(cache[slot].text, tmp, (size_t)n);
	}
	app(b, tmp, (size_t)n);
}

/* A JSON string as json-c escapes it (no escaping of '/'), of the served
 * text of s (name-escape.h): a byte that is not part of valid UTF-8 (a
 * cgroup name may hold any) is written as the text \xHH, so that every
 * document stays valid JSON. */
static void put_string(struct acct_json_buf *b, const char *s)
{
	static const char hex[] = "0123456789abcdef";
	const char *start = s;

	PUT(b, "\"");
	for (;; s++) {
		unsigned char c = (unsigned char)*s;
		if (likely(c >= ' ' && c < 0x80 && c != '"' && c != '\\'))
			continue;
		if (c >= 0x80) {
			size_t l = utf8_char_len(s, SIZE_MAX); /* stops at the NUL */
			if (l) {
				s += l - 1;
				continue;
			}
			if (s > start)
				app(b, start, (size_t)(s - start));
			start = s + 1;
			char e[NAME_ESCAPE_MAX_EXPANSION * 2]; /* "\\xHH": its backslash escaped for JSON */
			size_t n = name_escape_to(e + 1, s, 1, NAME_ESCAPE_UTF8);
			e[0] = '\\';
			app(b, e, n + 1);
			continue;
		}
		if (s > start)
			app(b, start, (size_t)(s - start));
		start = s + 1;
		switch (c) {
		case 0:
			PUT(b, "\"");
			return;
		case '\b': PUT(b, "\\b"); break;
		case '\n': PUT(b, "\\n"); break;
		case '\r': PUT(b, "\\r"); break;
		case '\t': PUT(b, "\\t"); break;
		case '\f': PUT(b, "\\f"); break;
		case '"': PUT(b, "\\\""); break;
		case '\\': PUT(b, "\\\\"); break;
		default: {
			char u[6] = { '\\', 'u', '0', '0', hex[c >> 4], hex[c & 0xf] };
			app(b, u, sizeof(u));
		}
		}
	}
}

/* ",\"key\":" (or without the comma for the first key) */
static void put_key(struct acct_json_buf *b, bool *first, const char *key)
{
	if (!*first)
		PUT(b, ",");
	*first = false;
	put_string(b, key);
	PUT(b, ":");
}

static void put_value(struct acct_json_buf *b, int64_t v, uint64_t bound, uint64_t age)
{
	PUT(b, "{\"value\":");
	put_i64(b, v);
	if (bound) {
		PUT(b, ",\"bound\":");
		put_i64(b, (int64_t)MIN(bound, (uint64_t)INT64_MAX));
	}
	if (age != UINT64_MAX) {
		PUT(b, ",\"age_us\":");
		put_i64(b, (int64_t)age);
	}
}

/* q's Value; `parts`: with the kernel's part of its bound (a cgroup's full
 * document; a List row leaves it out). */
static void put_quantity(struct acct_json_buf *b, const struct acct_cgroup *cg, enum acct_quantity q, uint64_t now_us,
			 bool precise, const struct acct_fresh_reading *fresh, bool parts)
{
	struct acct_reading rd;
	double motion;
	bool is_fresh = fresh && (fresh->have & (UINT64_C(1) << q));
	uint64_t age = acct_cgroup_quantity_age(cg, q, now_us); /* before the value (ledger.h: ages) */
	if (is_fresh)
		put_value(b, fresh->value[q], fresh->bound[q], now_us > fresh->read_us ? now_us - fresh->read_us : 0);
	else if (acct_cgroup_get(cg, q, precise, &rd))
		put_value(b, rd.value, rd.bound, age);
	else {
		PUT(b, "null");
		return;
	}
	uint64_t kernel = parts && !is_fresh ? acct_cgroup_kernel_bound(cg, q) : 0;
	if (kernel > 0) {
		PUT(b, ",\"kernel_bound\":");
		put_i64(b, (int64_t)MIN(kernel, (uint64_t)INT64_MAX));
	}
	if (acct_cgroup_motion(cg, q, &motion)) {
		PUT(b, ",\"motion_per_s\":");
		put_double(b, motion);
	}
	if (is_fresh)
		PUT(b, ",\"fresh\":true");
	PUT(b, "}");
}

static void put_double_value(struct acct_json_buf *b, double v, uint64_t age)
{
	PUT(b, "{\"value\":");
	put_double(b, v);
	if (age != UINT64_MAX) {
		PUT(b, ",\"age_us\":");
		put_i64(b, (int64_t)age);
	}
	PUT(b, "}");
}

static void put_psi(struct acct_json_buf *b, const struct acct_cgroup *cg, const struct acct_cgroup_values *cv)
{
	static const enum acct_quantity totals[_ACCT_PSI_MAX][2] = {
		{ ACCT_Q_PSI_CPU_SOME, ACCT_Q_PSI_CPU_FULL },
		{ ACCT_Q_PSI_MEMORY_SOME, ACCT_Q_PSI_MEMORY_FULL },
		{ ACCT_Q_PSI_IO_SOME, ACCT_Q_PSI_IO_FULL },
	};
	uint64_t age = cv->age[ACCT_GROUP_PSI];
	bool first = true;

	PUT(b, "{");
	for (int r = 0; r < _ACCT_PSI_MAX; r++) {
		put_plain_key(b, &first, psi_names[r]);
		if (!cv->psi_known[r]) {
			PUT(b, "null");
			continue;
		}
		bool first_kind = true;
		PUT(b, "{");
		for (int k = 0; k < 2; k++) {
			struct acct_reading rd;
			if (!acct_cgroup_get(cg, totals[r][k], false, &rd))
				continue;
			put_plain_key(b, &first_kind, k == 0 ? "some" : "full");
			PUT(b, "{\"avg10\":");
			put_double(b, cv->psi_avg[r][k][0] / 100.0);
			PUT(b, ",\"avg60\":");
			put_double(b, cv->psi_avg[r][k][1] / 100.0);
			PUT(b, ",\"avg300\":");
			put_double(b, cv->psi_avg[r][k][2] / 100.0);
			PUT(b, ",\"total_us\":");
			put_value(b, rd.value, rd.bound, age);
			PUT(b, "}}");
		}
		PUT(b, "}");
	}
	PUT(b, "}");
}

/* "io": per-second rates over the last fast interval (null until two readings)
 * and the values per device; null when the cgroup has no I/O file. The totals
 * are quantities ("values": io.read_bytes, ...). */
static void put_io(struct acct_json_buf *b, struct acct_ledger *l, const struct acct_cgroup *cg,
		   const struct acct_cgroup_values *cv)
{
	struct acct_reading rd;

	if (!cv->has_io && !acct_cgroup_get(cg, ACCT_Q_IO_READ_BYTES, false, &rd) &&
	    !acct_cgroup_get(cg, ACCT_Q_IO_WRITE_BYTES, false, &rd)) {
		PUT(b, "null");
		return;
	}
	PUT(b, "{\"rate\":");
	if (cv->io_rate_known) {
		bool first = true;
		uint64_t age = cv->age[ACCT_GROUP_FAST];
		PUT(b, "{");
		for (int k = 0; k < _ACCT_IO_STAT_MAX; k++) {
			if (!acct_cgroup_get(cg, acct_io_stat_quantity((enum acct_io_stat)k), false, &rd))
				continue;
			put_plain_key(b, &first, acct_io_stat_name((enum acct_io_stat)k));
			put_double(b, cv->io_rate[k]);
		}
		if (age != UINT64_MAX) {
			put_plain_key(b, &first, "age_us");
			put_i64(b, (int64_t)age);
		}
		PUT(b, "}");
	} else
		PUT(b, "null");
	PUT(b, ",\"devices\":[");
	bool first_dev = true;
	for (unsigned i = 0; i < cv->nr_io; i++) {
		const struct acct_io_device *d = acct_ledger_io_device(l, cv->io[i].device);
		char dev[32];
		if (!d)
			continue;
		if (!first_dev)
			PUT(b, ",");
		first_dev = false;
		snprintf(dev, sizeof(dev), "%u:%u", d->major, d->minor);
		PUT(b, "{\"device\":");
		put_string(b, dev);
		PUT(b, ",\"name\":");
		if (d->name[0])
			put_string(b, d->name);
		else
			PUT(b, "null");
		for (int k = 0; k < _ACCT_IO_STAT_MAX; k++) {
			int64_t v = cv->io[i].v[k];
			if (v < 0)
				continue;
			PUT(b, ",\"");
			app(b, acct_io_stat_name((enum acct_io_stat)k), strlen(acct_io_stat_name((enum acct_io_stat)k)));
			PUT(b, "\":");
			put_i64(b, v);
		}
		PUT(b, "}");
	}
	PUT(b, "]}");
}

int acct_cgroup_write_json(struct acct_json_buf *b, struct acct_ledger *l, const struct acct_cgroup *cg, uint64_t now_us,
			   bool precise, unsigned nr_nodes)
{
	return acct_cgroup_write_json_fresh(b, l, cg, now_us, precise, nr_nodes, NULL);
}

int acct_cgroup_write_json_fresh(struct acct_json_buf *b, struct acct_ledger *l, const struct acct_cgroup *cg,
				 uint64_t now_us, bool precise, unsigned nr_nodes, const struct acct_fresh_reading *fresh)
{
	static const char *const minutes[3] = { "avg1", "avg5", "avg15" };
	struct acct_cgroup_values cv;

	acct_cgroup_read(cg, ACCT_READ_ALL, now_us, &cv);
	bool dead = cv.dead;

	PUT(b, "{\"path\":");
	put_string(b, cg->path);
	PUT(b, ",\"depth\":");
	put_i64(b, (int)cg->depth);
	if (dead) {
		PUT(b, ",\"state\":\"dead\",\"dead_for_us\":");
		put_i64(b, (int64_t)(now_us - cv.died_us));
		/* whether the values are what it finally used, or why not */
		enum acct_final fin = acct_cgroup_final(cg);
		if (fin == ACCT_FINAL_READ)
			PUT(b, ",\"final\":true");
		else {
			PUT(b, ",\"final\":false,\"final_reason\":");
			put_string(b, acct_final_to_string(fin));
		}
	} else
		PUT(b, ",\"state\":\"live\"");
	if (cv.populated)
		PUT(b, ",\"populated\":true,\"hierarchies\":[");
	else
		PUT(b, ",\"populated\":false,\"hierarchies\":[");
	uint32_t bits = cv.hierarchies;
	bool first = true;
	for (int i = 0; i < _ACCT_HIER_MAX; i++)
		if (bits & (1u << i)) {
			if (!first)
				PUT(b, ",");
			first = false;
			put_string(b, acct_hierarchy_to_string((enum acct_hierarchy)i));
		}
	PUT(b, "],\"values\":{");
	first = true;
	for (int i = 0; i < _ACCT_Q_MAX; i++) {
		if (i >= ACCT_Q_PSI_CPU_SOME && i <= ACCT_Q_PSI_IO_FULL)
			continue;
		put_plain_key(b, &first, acct_quantity_info(i)->name);
		put_quantity(b, cg, i, now_us, precise, fresh, true);
	}

	uint64_t fast_age = cv.age[ACCT_GROUP_FAST];
	if (cv.cpu_rate_known) {
		PUT(b, "},\"cpu_rate_cores\":{\"rate\":");
		put_double_value(b, cv.cpu_rate, fast_age);
		for (int i = 0; i < 3; i++) {
			PUT(b, ",\"");
			app(b, minutes[i], strlen(minutes[i]));
			PUT(b, "\":");
			put_double(b, cv.cpu_rate_avg[i]);
		}
		PUT(b, "}");
	} else
		PUT(b, "},\"cpu_rate_cores\":null"); /* no CPU time read twice: no rate */
	PUT(b, ",\"load\":");
	uint64_t load_age = cv.age[ACCT_GROUP_LOAD];
	if (load_age != UINT64_MAX) {
		PUT(b, "{");
		for (int i = 0; i < 3; i++) {
			PUT(b, "\"");
			app(b, minutes[i], strlen(minutes[i]));
			PUT(b, "\":");
			put_double(b, (double)cv.loadavg[i] / 2048.0);
			PUT(b, ",");
		}
		PUT(b, "\"age_us\":");
		put_i64(b, (int64_t)load_age);
		PUT(b, ",\"covered_us\":");
		put_i64(b, (int64_t)cv.load_covered_us);
		PUT(b, ",\"whole_life\":");
		PUT_BOOL(b, cv.load_whole_life);
		PUT(b, ",\"warming\":[");
		for (int i = 0, k = 0; i < 3; i++)
			if (!dead && acct_load_warming(cv.load_covered_us, cv.load_whole_life, i)) {
				if (k++)
					PUT(b, ",");
				PUT(b, "\"");
				app(b, minutes[i], strlen(minutes[i]));
				PUT(b, "\"");
			}
		PUT(b, "]}");
	} else
		PUT(b, "null");
	PUT(b, ",\"pressure\":");
	put_psi(b, cg, &cv);
	PUT(b, ",\"io\":");
	put_io(b, l, cg, &cv);

	uint64_t slow_age = cv.age[ACCT_GROUP_SLOW];
	const int64_t *ms = cv.memstat;
	PUT(b, ",\"memory_stat\":");
	if (ms) {
		PUT(b, "{");
		first = true;
		for (unsigned i = 0; i < acct_ledger_memstat_count(l); i++) {
			int64_t v = acct_memstat_value(ms, (int)i);
			if (v < 0)
				continue;
			put_key(b, &first, acct_ledger_memstat_key(l, i));
			put_i64(b, v);
		}
		PUT(b, "}");
	} else
		PUT(b, "null");
	/* Its age beside it, so that memory_stat holds the kernel's keys only. */
	if (ms && slow_age != UINT64_MAX) {
		PUT(b, ",\"memory_stat_age_us\":");
		put_i64(b, (int64_t)slow_age);
	} else
		PUT(b, ",\"memory_stat_age_us\":null");
	/* What the kernel had not flushed into them when they were read. */
	uint64_t msb = cv.memstat_bound;
	if (ms && msb) {
		PUT(b, ",\"memory_stat_bound\":");
		put_i64(b, (int64_t)MIN(msb, (uint64_t)INT64_MAX));
	}

	PUT(b, ",\"numa\":");
	uint64_t numa_at = cv.numa_us;
	uint64_t numa_age = numa_at ? (now_us > numa_at ? now_us - numa_at : 0) : slow_age;
	if (cv.numa_known) {
		PUT(b, "[");
		for (unsigned n = 0; n < nr_nodes; n++) {
			struct acct_reading rd;
			if (acct_counter_read_node(cg->numa, n, &rd) < 0)
				break;
			if (n > 0)
				PUT(b, ",");
			put_value(b, rd.value, rd.bound + msb, MIN(numa_age, slow_age)); /* flushed stats, as memory_stat */
			PUT(b, ",\"node\":");
			put_i64(b, (int)n);
			PUT(b, "}");
		}
		PUT(b, "]");
	} else
		PUT(b, "null");
	PUT(b, ",\"sample_errors\":");
	put_i64(b, (int64_t)cv.sample_errors);
	PUT(b, "}");
	return put_end(b);
}

int acct_cgroup_list_entry_write(struct acct_json_buf *b, const struct acct_cgroup *cg, uint64_t now_us)
{
	struct acct_cgroup_values cv;

	acct_cgroup_read(cg, ACCT_READ_LIST_ROW, now_us, &cv);
	PUT(b, "{\"path\":");
	put_string(b, cg->path);
	if (acct_cgroup_is_dead(cg))
		PUT(b, ",\"state\":\"dead\",\"memory\":");
	else
		PUT(b, ",\"state\":\"live\",\"memory\":");
	put_quantity(b, cg, ACCT_Q_MEMORY, now_us, false, NULL, false);
	PUT(b, ",\"cpu_rate\":");
	if (!cv.cpu_rate_known)
		PUT(b, "null");
	else
		put_double_value(b, cv.cpu_rate, cv.age[ACCT_GROUP_FAST]);
	PUT(b, ",\"load1\":");
	if (cv.age[ACCT_GROUP_LOAD] == UINT64_MAX)
		PUT(b, "null,\"load1_warming\":null");
	else {
		put_double(b, (double)cv.loadavg[0] / 2048.0);
		PUT(b, ",\"load1_warming\":");
		/* a removed cgroup's averages are final, not on their way */
		PUT_BOOL(b, !acct_cgroup_is_dead(cg) &&
				    acct_load_warming(cv.load_covered_us, cv.load_whole_life, ACCT_AVG_1MIN));
	}
	PUT(b, ",\"psi_some_avg10\":");
	bool any_psi = false;
	for (int r = 0; r < _ACCT_PSI_MAX; r++)
		any_psi |= cv.psi_known[r];
	if (any_psi) {
		for (int r = 0; r < _ACCT_PSI_MAX; r++) {
			if (r == 0)
				PUT(b, "{");
			else
				PUT(b, ",");
			PUT(b, "\"");
			app(b, psi_names[r], strlen(psi_names[r]));
			PUT(b, "\":");
			/* a resource whose pressure file was never read: null, not 0 */
			if (cv.psi_known[r])
				put_double(b, cv.psi_avg[r][ACCT_PSI_SOME][0] / 100.0);
			else
				PUT(b, "null");
		}
		PUT(b, "}");
	} else
		PUT(b, "null");
	/* systemd-cgtop's Input/s and Output/s */
	bool io_rate = cv.io_rate_known;
	PUT(b, ",\"io_read_bytes_rate\":");
	if (io_rate)
		put_double(b, cv.io_rate[ACCT_IO_READ_BYTES]);
	else
		PUT(b, "null");
	PUT(b, ",\"io_write_bytes_rate\":");
	if (io_rate)
		put_double(b, cv.io_rate[ACCT_IO_WRITE_BYTES]);
	else
		PUT(b, "null");
	/* systemd-cgtop's Tasks; the I/O totals, from which acctctl top computes
	 * Input/s and Output/s between two of its refreshes */
	PUT(b, ",\"tasks\":");
	put_quantity(b, cg, ACCT_Q_TASKS, now_us, false, NULL, false);
	PUT(b, ",\"io_read_bytes\":");
	put_quantity(b, cg, ACCT_Q_IO_READ_BYTES, now_us, false, NULL, false);
	PUT(b, ",\"io_write_bytes\":");
	put_quantity(b, cg, ACCT_Q_IO_WRITE_BYTES, now_us, false, NULL, false);
	PUT(b, "}");
	return put_end(b);
}

/* ---- json-c forms ------------------------------------------------------------
 *
 * Parsed from the writers' text, so that each document has one definition.
 * json-c prints what it parsed back byte for byte (numbers keep the text they
 * were parsed from; test-varlink.c checks it under every print flag acctd
 * uses), so --dump, --state-file and Watch print what Get and List do. */

struct json_object *acct_cgroup_to_json(struct acct_ledger *l, const struct acct_cgroup *cg, uint64_t now_us,
					bool precise, unsigned nr_nodes)
{
	_cleanup_(acct_json_buf_free) struct acct_json_buf b = { 0 };

	if (acct_cgroup_write_json(&b, l, cg, now_us, precise, nr_nodes) < 0)
		return NULL;
	return json_tokener_parse(b.data);
}

struct json_object *acct_cgroup_list_entry_json(const struct acct_cgroup *cg, uint64_t now_us)
{
	_cleanup_(acct_json_buf_free) struct acct_json_buf b = { 0 };

	if (acct_cgroup_list_entry_write(&b, cg, now_us) < 0)
		return NULL;
	return json_tokener_parse(b.data);
}
