/* rows-scan.c - a List reply's text into rows (see rows-scan.h). */
#include "rows-scan.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "varlink/json-scan.h"

/* Whether the key (len bytes) is the literal k: one length check and a
 * memcmp, instead of a strcmp per candidate. */
#define KEY_IS(key, len, k) ((len) == sizeof(k) - 1 && memcmp((key), (k), sizeof(k) - 1) == 0)

/* A number member as a double; false (consumed) when it is null, not a
 * number or out of range. */
static int read_double(struct json_scan *s, double *ret, bool *ret_set)
{
	int r;

	*ret_set = false;
	if (json_scan_peek(s) != JSON_SCAN_NUMBER)
		return json_scan_skip(s);
	r = json_scan_double(s, ret);
	if (r == -ERANGE)
		return 0;
	if (r < 0)
		return r;
	*ret_set = true;
	return 0;
}

static int read_int(struct json_scan *s, int64_t *ret, bool *ret_set)
{
	int r;

	*ret_set = false;
	if (json_scan_peek(s) != JSON_SCAN_NUMBER)
		return json_scan_skip(s);
	r = json_scan_int64(s, ret);
	if (r == -ERANGE)
		return 0; /* a fraction or beyond int64: absent */
	if (r < 0)
		return r;
	*ret_set = true;
	return 0;
}

/* An object member: enter it when it is an object (1), else skip it (0). */
static int enter_object(struct json_scan *s)
{
	int r;

	if (json_scan_peek(s) != JSON_SCAN_OBJECT) {
		r = json_scan_skip(s);
		return r < 0 ? r : 0;
	}
	r = json_scan_enter(s, JSON_SCAN_OBJECT);
	return r < 0 ? r : 1;
}

/* A Value {"value", "bound"?, "age_us"?}, as value_of() reads one. */
static int read_value(struct json_scan *s, struct value *ret)
{
	int64_t bound = 0, age = -1;
	bool has_value = false, has_bound = false, has_age = false;
	const char *key;
	size_t klen;
	int r;

	*ret = (struct value){ .age_us = -1 };
	r = enter_object(s);
	if (r <= 0)
		return r;
	while ((r = json_scan_member(s, &key, &klen)) > 0) {
		if (KEY_IS(key, klen, "value"))
			r = read_int(s, &ret->value, &has_value);
		else if (KEY_IS(key, klen, "bound"))
			r = read_int(s, &bound, &has_bound);
		else if (KEY_IS(key, klen, "age_us"))
			r = read_int(s, &age, &has_age);
		else
			r = json_scan_skip(s);
		if (r < 0)
			return r;
	}
	if (r < 0)
		return r;
	if (has_value)
		*ret = (struct value){ .set = true,
				       .value = ret->value,
				       .bound = has_bound ? bound : 0,
				       .age_us = has_age ? age : -1 };
	return 0;
}

/* cpu_rate {"value", "age_us"}. */
static int read_cpu(struct json_scan *s, struct row *row)
{
	const char *key;
	size_t klen;
	bool has_age = false;
	int64_t age = -1;
	int r;

	r = enter_object(s);
	if (r <= 0)
		return r;
	while ((r = json_scan_member(s, &key, &klen)) > 0) {
		if (KEY_IS(key, klen, "value"))
			r = read_double(s, &row->cpu, &row->has_cpu);
		else if (KEY_IS(key, klen, "age_us"))
			r = read_int(s, &age, &has_age);
		else
			r = json_scan_skip(s);
		if (r < 0)
			return r;
	}
	if (r < 0)
		return r;
	if (row->has_cpu)
		row->cpu_age = has_age ? age : -1;
	return 0;
}

/* psi_some_avg10: {"cpu", "memory", "io"}, or a single figure (the CPU's). */
static int read_psi(struct json_scan *s, struct row *row)
{
	static const char *const names[3] = { "cpu", "memory", "io" };
	const char *key;
	size_t klen;
	int r;

	if (json_scan_peek(s) == JSON_SCAN_NUMBER)
		return read_double(s, &row->psi[0], &row->has_psi[0]);
	r = enter_object(s);
	if (r <= 0)
		return r;
	while ((r = json_scan_member(s, &key, &klen)) > 0) {
		size_t i = 0;
		while (i < 3 && (strlen(names[i]) != klen || memcmp(key, names[i], klen) != 0))
			i++;
		r = i < 3 ? read_double(s, &row->psi[i], &row->has_psi[i]) : json_scan_skip(s);
		if (r < 0)
			return r;
	}
	return r;
}

/* charges {NAME: Charged}: the subtree Value of resource `name` into *ret. */
static int read_charge(struct json_scan *s, const char *name, struct value *ret)
{
	const char *key;
	size_t klen;
	int r;

	r = enter_object(s);
	if (r <= 0)
		return r;
	while ((r = json_scan_member(s, &key, &klen)) > 0) {
		if (strlen(name) != klen || memcmp(key, name, klen) != 0) {
			r = json_scan_skip(s);
		} else if ((r = enter_object(s)) > 0) {
			while ((r = json_scan_member(s, &key, &klen)) > 0) {
				r = KEY_IS(key, klen, "subtree") ? read_value(s, ret) : json_scan_skip(s);
				if (r < 0)
					return r;
			}
		}
		if (r < 0)
			return r;
	}
	return r;
}

/* One CgroupSummary into *row; *ret_path: whether it had a path. */
static int read_summary(struct json_scan *s, struct rows *rs, struct row *row, bool *ret_path)
{
	bool has_read = false, has_write = false;
	const char *key;
	size_t klen;
	int r;

	*row = (struct row){ .parent = SIZE_MAX, .cpu_age = -1, .mem = { .age_us = -1 }, .charge = { .age_us = -1 } };
	*ret_path = false;
	r = enter_object(s);
	if (r <= 0)
		return r;
	while ((r = json_scan_member(s, &key, &klen)) > 0) {
		if (KEY_IS(key, klen, "path") && json_scan_peek(s) == JSON_SCAN_STRING) {
			const char *path;
			size_t len;
			r = json_scan_string(s, &path, &len);
			if (r >= 0) {
				char *p = arena_alloc(&rs->strings, len + 1);
				row->path = memcpy(p, path, len + 1);
				*ret_path = true;
			}
		} else if (KEY_IS(key, klen, "state") && json_scan_peek(s) == JSON_SCAN_STRING) {
			const char *state;
			r = json_scan_string(s, &state, NULL);
			row->dead = r >= 0 && strcmp(state, "dead") == 0;
		} else if (KEY_IS(key, klen, "memory"))
			r = read_value(s, &row->mem);
		else if (KEY_IS(key, klen, "cpu_rate"))
			r = read_cpu(s, row);
		else if (KEY_IS(key, klen, "load1"))
			r = read_double(s, &row->load, &row->has_load);
		else if (KEY_IS(key, klen, "load1_warming"))
			r = json_scan_peek(s) == JSON_SCAN_TRUE || json_scan_peek(s) == JSON_SCAN_FALSE
				    ? json_scan_bool(s, &row->load_warming)
				    : json_scan_skip(s);
		else if (KEY_IS(key, klen, "psi_some_avg10"))
			r = read_psi(s, row);
		else if (KEY_IS(key, klen, "io_read_bytes_rate"))
			r = read_double(s, &row->io_read, &has_read);
		else if (KEY_IS(key, klen, "io_write_bytes_rate"))
			r = read_double(s, &row->io_write, &has_write);
		else if (KEY_IS(key, klen, "tasks"))
			r = read_value(s, &row->tasks);
		else if (KEY_IS(key, klen, "io_read_bytes"))
			r = read_value(s, &row->io_read_total);
		else if (KEY_IS(key, klen, "io_write_bytes"))
			r = read_value(s, &row->io_write_total);
		else if (KEY_IS(key, klen, "charges") && rs->charge)
			r = read_charge(s, rs->charge, &row->charge);
		else
			r = json_scan_skip(s);
		if (r < 0)
			return r;
	}
	if (r < 0)
		return r;
	/* I/O rates: both or neither (the daemon gives both from one reading) */
	row->has_io = has_read && has_write;
	return 0;
}

/* "cgroups": every summary appended to rs. */
static int read_cgroups(struct json_scan *s, struct rows *rs)
{
	int r;

	r = json_scan_enter(s, JSON_SCAN_ARRAY);
	if (r < 0)
		return r;
	while ((r = json_scan_element(s)) > 0) {
		bool has_path;
		if (rs->n == rs->cap) {
			size_t cap = MAX(rs->cap * 2, (size_t)256);
			struct row *v = reallocarray(rs->v, cap, sizeof(*v));
			if (!v)
				return -ENOMEM;
			rs->v = v;
			rs->cap = cap;
		}
		r = read_summary(s, rs, &rs->v[rs->n], &has_path);
		if (r < 0)
			return r;
		if (has_path)
			rs->n++;
	}
	return r;
}

int rows_scan_reply(const char *text, size_t size, struct rows *rs, bool *ret_continues)
{
	bool continues = false, error = false, cgroups = false;
	struct json_scan s;
	const char *key;
	size_t klen;
	int r;

	json_scan_init(&s, text, size);
	r = json_scan_enter(&s, JSON_SCAN_OBJECT);
	while (r >= 0 && (r = json_scan_member(&s, &key, &klen)) > 0) {
		if (KEY_IS(key, klen, "parameters") && json_scan_peek(&s) == JSON_SCAN_OBJECT) {
			r = json_scan_enter(&s, JSON_SCAN_OBJECT);
			while (r >= 0 && (r = json_scan_member(&s, &key, &klen)) > 0) {
				if (KEY_IS(key, klen, "cgroups") && json_scan_peek(&s) == JSON_SCAN_ARRAY && !cgroups) {
					r = read_cgroups(&s, rs);
					cgroups = true;
				} else
					r = json_scan_skip(&s);
			}
		} else if (KEY_IS(key, klen, "continues") && json_scan_peek(&s) != JSON_SCAN_NULL)
			r = json_scan_bool(&s, &continues);
		else if (KEY_IS(key, klen, "error") && json_scan_peek(&s) != JSON_SCAN_NULL) {
			r = json_scan_string(&s, &key, NULL);
			error = true;
		} else
			r = json_scan_skip(&s);
	}
	if (r >= 0)
		r = json_scan_finish(&s);
	json_scan_done(&s);
	if (r < 0)
		return r;
	if (error)
		return -EPROTO;
	if (!cgroups)
		return -EBADMSG;
	*ret_continues = continues;
	return 0;
}
