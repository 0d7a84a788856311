/* rows.c - the rows of list and top (see rows.h). */
#include "rows.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "acctctl.h"
#include "columns.h"
#include "ctl-call.h"
#include "human.h"
#include "rows-scan.h"
#include "terminal.h"

const char *const sort_names[_SORT_MAX] = { "path",  "memory", "cpu",     "load", "pressure", "io",
					    "tasks", "read/s", "write/s", "read", "write", "charge" };

void rows_done(struct rows *rs)
{
	for (size_t i = 0; i < rs->n; i++) {
		free(rs->v[i].children);
		if (rs->v[i].obj)
			json_object_put(rs->v[i].obj);
	}
	free(rs->v);
	free(rs->order);
	arena_done(&rs->strings);
	*rs = (struct rows){ .charge = rs->charge };
}

/* Append the CgroupSummary objects of `array`; with keep_json each row keeps a
 * reference to its object (for --json), else only the figures are kept. */
static void rows_parse(struct json_object *array, bool keep_json, struct rows *rs)
{
	size_t n = json_object_array_length(array);

	if (rs->n + n > rs->cap) {
		size_t cap = MAX(rs->cap * 2, rs->n + n);
		struct row *v = reallocarray(rs->v, cap, sizeof(*v));
		if (!v)
			oom_exit();
		rs->v = v;
		rs->cap = cap;
	}
	for (size_t i = 0; i < n; i++) {
		struct json_object *o = json_object_array_get_idx(array, i), *x;
		struct row *r = &rs->v[rs->n];
		const char *path = jstr(o, "path");

		if (!path)
			continue;
		*r = (struct row){ .obj = keep_json ? json_object_get(o) : NULL, .path = arena_strdup(&rs->strings, path),
				   .parent = SIZE_MAX, .cpu_age = -1 };
		r->dead = jstr(o, "state") && strcmp(jstr(o, "state"), "dead") == 0;
		r->mem = value_of(jget(o, "memory"));
		x = jget(o, "cpu_rate");
		if (x && jdouble(x, "value", &r->cpu)) {
			r->has_cpu = true;
			r->cpu_age = jint_or(x, "age_us", -1);
		}
		r->has_load = jdouble(o, "load1", &r->load);
		r->load_warming = jbool(o, "load1_warming");
		x = jget(o, "psi_some_avg10");
		if (x && json_object_is_type(x, json_type_object)) {
			r->has_psi[0] = jdouble(x, "cpu", &r->psi[0]);
			r->has_psi[1] = jdouble(x, "memory", &r->psi[1]);
			r->has_psi[2] = jdouble(x, "io", &r->psi[2]);
		} else if (x) { /* a single figure: the CPU's */
			r->has_psi[0] = true;
			r->psi[0] = json_object_get_double(x);
		}
		/* I/O rates: both or neither (the daemon gives both from one reading) */
		r->has_io = jdouble(o, "io_read_bytes_rate", &r->io_read) && jdouble(o, "io_write_bytes_rate", &r->io_write);
		r->tasks = value_of(jget(o, "tasks"));
		r->io_read_total = value_of(jget(o, "io_read_bytes"));
		r->io_write_total = value_of(jget(o, "io_write_bytes"));
		if (rs->charge)
			r->charge = value_of(jget(jget(jget(o, "charges"), rs->charge), "subtree"));
		rs->n++;
	}
}

/* The replies of List as text, read straight into rows (rows-scan.h): no
 * json-c objects for the table. */
static int list_fetch_text(struct acct_client *c, struct rows *rs)
{
	_cleanup_(acct_reply_clear) struct acct_reply reply = { 0 };
	bool continues = true;
	const char *text;
	size_t size;
	int r;

	while (continues) {
		do
			r = acct_client_receive_text(c, CALL_TIMEOUT_MS, &text, &size);
		while (r == -EINTR && !got_quit_signal);
		if (r == -EINTR)
			return EXIT_OK; /* top was asked to quit: the caller checks got_quit_signal */
		if (r < 0)
			return call_failed(r, NULL);
		r = rows_scan_reply(text, size, rs, &continues);
		if (r == -EPROTO) { /* a varlink error: its name and parameters in words */
			r = acct_reply_parse(text, size, &reply);
			return call_failed(r < 0 ? r : acct_error_to_errno(reply.error), r < 0 ? NULL : &reply);
		}
		if (r < 0)
			return call_failed(r, NULL);
	}
	return EXIT_OK;
}

int list_fetch(struct acct_client *c, const char *prefix, bool keep_json, struct rows *rs)
{
	_cleanup_(acct_reply_clear) struct acct_reply reply = { 0 };
	_cleanup_json_ struct json_object *params = xjson(json_object_new_object());
	struct json_object *a;
	int r;

	if (prefix)
		json_add(params, "prefix", json_cgroup_arg(prefix));
	if (arg_depth >= 0)
		json_add(params, "depth", json_object_new_int64(arg_depth));
	if (arg_all)
		json_add(params, "include_dead", json_object_new_boolean(1));
	r = acct_client_send(c, "List", params, ACCT_CALL_MORE);
	if (r < 0)
		return call_failed(r, NULL);
	if (!keep_json)
		return list_fetch_text(c, rs);
	do {
		do
			r = acct_client_receive(c, CALL_TIMEOUT_MS, &reply);
		while (r == -EINTR && !got_quit_signal);
		if (r == -EINTR)
			return EXIT_OK; /* top was asked to quit: the caller checks got_quit_signal */
		if (r < 0)
			return call_failed(r, NULL);
		if (reply.error)
			return call_failed(acct_error_to_errno(reply.error), &reply);
		a = jget(reply.parameters, "cgroups");
		if (!a || !json_object_is_type(a, json_type_array))
			return call_failed(-EBADMSG, NULL);
		rows_parse(a, keep_json, rs);
	} while (reply.continues);
	return EXIT_OK;
}


/* Paths in tree order: "/a" < "/a/b" < "/a-b" ('/' before every other byte). */
static int path_cmp(const char *a, const char *b)
{
	for (;; a++, b++) {
		unsigned char x = (unsigned char)*a, y = (unsigned char)*b;
		if (x == y) {
			if (!x)
				return 0;
			continue;
		}
		if (!x || x == '/')
			return y == 0 ? 1 : -1;
		if (!y || y == '/')
			return 1;
		return x < y ? -1 : 1;
	}
}

/* The key of row_cmp(); set by rows_table(). */
static enum sort_key sort_key = SORT_PATH;

static int row_path_cmp(const struct row *a, const struct row *b)
{
	int c = path_cmp(a->path, b->path);
	if (c)
		return c;
	return (int)a->dead - (int)b->dead; /* live first */
}

/* Largest first; rows without the figure last; then by path. */
static int row_cmp(const void *pa, const void *pb)
{
	const struct row *a = pa, *b = pb;
	bool ha = true, hb = true;
	double x = 0, y = 0;

	switch (sort_key) {
	case SORT_MEMORY:
		ha = a->mem.set, hb = b->mem.set;
		x = (double)a->mem.value, y = (double)b->mem.value;
		break;
	case SORT_CPU:
		ha = a->has_cpu, hb = b->has_cpu, x = a->cpu, y = b->cpu;
		break;
	case SORT_LOAD:
		ha = a->has_load, hb = b->has_load, x = a->load, y = b->load;
		break;
	case SORT_IO:
		ha = a->has_io, hb = b->has_io, x = a->io_read + a->io_write, y = b->io_read + b->io_write;
		break;
	case SORT_READ_RATE:
		ha = a->has_io, hb = b->has_io, x = a->io_read, y = b->io_read;
		break;
	case SORT_WRITE_RATE:
		ha = a->has_io, hb = b->has_io, x = a->io_write, y = b->io_write;
		break;
	case SORT_TASKS:
		ha = a->tasks.set, hb = b->tasks.set;
		x = (double)a->tasks.value, y = (double)b->tasks.value;
		break;
	case SORT_READ:
		ha = a->io_read_total.set, hb = b->io_read_total.set;
		x = (double)a->io_read_total.value, y = (double)b->io_read_total.value;
		break;
	case SORT_WRITE:
		ha = a->io_write_total.set, hb = b->io_write_total.set;
		x = (double)a->io_write_total.value, y = (double)b->io_write_total.value;
		break;
	case SORT_CHARGE:
		/* List leaves out a summary where nothing was charged: 0, as
		 * the column shows it */
		x = a->charge.set ? (double)a->charge.value : 0;
		y = b->charge.set ? (double)b->charge.value : 0;
		break;
	case SORT_PRESSURE:
		ha = a->has_psi[0] || a->has_psi[1] || a->has_psi[2];
		hb = b->has_psi[0] || b->has_psi[1] || b->has_psi[2];
		x = MAX(a->psi[0], MAX(a->psi[1], a->psi[2]));
		y = MAX(b->psi[0], MAX(b->psi[1], b->psi[2]));
		break;
	default:
		break;
	}
	if (ha != hb)
		return ha ? -1 : 1;
	if (x != y)
		return x > y ? -1 : 1;
	return row_path_cmp(a, b);
}

static int row_path_qcmp(const void *a, const void *b)
{
	return row_path_cmp(a, b);
}

static const struct row *sort_rows_base;
static int index_cmp(const void *pa, const void *pb)
{
	return row_cmp(&sort_rows_base[*(const size_t *)pa], &sort_rows_base[*(const size_t *)pb]);
}

/* The first row (live before dead) with exactly this path, or SIZE_MAX. */
static size_t rows_find(const struct rows *rs, const char *path, size_t len)
{
	size_t lo = 0, hi = rs->n;
	_cleanup_free_ char *p = strndup(path, len);

	if (!p)
		oom_exit();
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (path_cmp(rs->v[mid].path, p) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < rs->n && strcmp(rs->v[lo].path, p) == 0 ? lo : SIZE_MAX;
}

/* Link every row to its nearest listed ancestor (rows sorted by path). */
static void rows_link(struct rows *rs)
{
	for (size_t i = 0; i < rs->n; i++) {
		struct row *r = &rs->v[i];
		size_t len = strlen(r->path);

		while (len > 1) {
			const char *slash = memrchr(r->path, '/', len);
			size_t j;
			if (!slash)
				break;
			len = slash == r->path ? 1 : (size_t)(slash - r->path);
			j = rows_find(rs, r->path, len);
			if (j != SIZE_MAX && j != i) {
				r->parent = j;
				break;
			}
		}
	}
	for (size_t i = 0; i < rs->n; i++)
		if (rs->v[i].parent != SIZE_MAX)
			rs->v[rs->v[i].parent].nchildren++;
	for (size_t i = 0; i < rs->n; i++) {
		rs->v[i].children = xcalloc(rs->v[i].nchildren, sizeof(size_t));
		rs->v[i].nchildren = 0;
	}
	for (size_t i = 0; i < rs->n; i++)
		if (rs->v[i].parent != SIZE_MAX) {
			struct row *p = &rs->v[rs->v[i].parent];
			p->children[p->nchildren++] = i;
		}
	sort_rows_base = rs->v;
	for (size_t i = 0; i < rs->n; i++)
		qsort(rs->v[i].children, rs->v[i].nchildren, sizeof(size_t), index_cmp);
}

static void tree_add(const struct columns *cols, struct table *t, struct rows *rs, size_t i, const char *prefix,
		     bool root, bool last)
{
	const struct row *r = &rs->v[i];
	const struct row *p = r->parent != SIZE_MAX ? &rs->v[r->parent] : NULL;
	_cleanup_free_ char *next = NULL;
	const char *name = r->path;

	if (p) { /* the path below the parent's: usually one component */
		name = r->path + strlen(p->path);
		if (*name == '/')
			name++;
	}
	if (t)
		columns_table_add(cols, t, r,
				  root ? cell_str(t, name)
				       : cell_fmt(t, "%s%s%s", prefix, glyph(last ? G_LAST : G_BRANCH), name));
	rs->order[rs->norder++] = i;
	next = root ? xstrdup("") : xasprintf("%s%s", prefix, glyph(last ? G_SPACE : G_VERTICAL));
	for (size_t k = 0; k < r->nchildren; k++)
		tree_add(cols, t, rs, r->children[k], next, false, k + 1 == r->nchildren);
}

void rows_table(struct rows *rs, bool tree, enum sort_key sort, size_t limit, const struct columns *cols,
		struct table *t)
{
	sort_key = sort;
	if (t)
		columns_table_init(cols, t);
	free(rs->order);
	rs->order = xcalloc(rs->n, sizeof(size_t));
	rs->norder = 0;
	if (tree) {
		qsort(rs->v, rs->n, sizeof(*rs->v), row_path_qcmp);
		rows_link(rs);
		_cleanup_free_ size_t *roots = xcalloc(rs->n, sizeof(size_t));
		size_t nroots = 0;
		for (size_t i = 0; i < rs->n; i++)
			if (rs->v[i].parent == SIZE_MAX)
				roots[nroots++] = i;
		sort_rows_base = rs->v;
		qsort(roots, nroots, sizeof(size_t), index_cmp);
		for (size_t k = 0; k < nroots; k++)
			tree_add(cols, t, rs, roots[k], "", true, true);
	} else {
		qsort(rs->v, rs->n, sizeof(*rs->v), row_cmp);
		for (size_t i = 0; i < rs->n && (limit == 0 || i < limit); i++) {
			if (t)
				columns_table_add(cols, t, &rs->v[i], cell_str(t, rs->v[i].path));
			rs->order[rs->norder++] = i;
		}
	}
}
