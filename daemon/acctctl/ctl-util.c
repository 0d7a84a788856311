/* ctl-util.c - allocation that exits on failure, JSON access, and the
 * printing helpers shared by every verb (see ctl-util.h). */
#include "ctl-util.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "acctctl.h"
#include "basic/name-escape.h"

void oom_exit(void)
{
	fputs("Out of memory.\n", stderr);
	exit(EXIT_FAIL);
}

char *xstrdup(const char *s)
{
	char *p = strdup(s ? s : "");
	if (!p)
		oom_exit();
	return p;
}

char *xasprintf(const char *fmt, ...)
{
	va_list ap;
	char *s;
	int r;

	va_start(ap, fmt);
	r = vasprintf(&s, fmt, ap);
	va_end(ap);
	if (r < 0)
		oom_exit();
	return s;
}

void *xcalloc(size_t n, size_t size)
{
	void *p = calloc(n ? n : 1, size ? size : 1);
	if (!p)
		oom_exit();
	return p;
}

struct json_object *xjson(struct json_object *o)
{
	if (!o)
		oom_exit();
	return o;
}

void json_add(struct json_object *o, const char *key, struct json_object *v)
{
	if (json_object_object_add(o, key, xjson(v)) < 0)
		oom_exit();
}

void json_putp(struct json_object **o)
{
	if (*o)
		json_object_put(*o);
}

struct json_object *jget(struct json_object *o, const char *key)
{
	struct json_object *v = NULL;
	if (!o || !json_object_is_type(o, json_type_object) || !json_object_object_get_ex(o, key, &v))
		return NULL;
	return v; /* NULL for JSON null too */
}

bool jint(struct json_object *o, const char *key, int64_t *ret)
{
	struct json_object *v = jget(o, key);
	if (!v || !(json_object_is_type(v, json_type_int) || json_object_is_type(v, json_type_double)))
		return false;
	*ret = json_object_get_int64(v);
	return true;
}

int64_t jint_or(struct json_object *o, const char *key, int64_t dflt)
{
	int64_t v;
	return jint(o, key, &v) ? v : dflt;
}

bool jdouble(struct json_object *o, const char *key, double *ret)
{
	struct json_object *v = jget(o, key);
	if (!v || !(json_object_is_type(v, json_type_int) || json_object_is_type(v, json_type_double)))
		return false;
	*ret = json_object_get_double(v);
	return true;
}

double jdouble_or(struct json_object *o, const char *key, double dflt)
{
	double v;
	return jdouble(o, key, &v) ? v : dflt;
}

char *jstr_array_join(struct json_object *o, const char *key)
{
	struct json_object *a = jget(o, key);
	char *joined = NULL;

	if (!a || !json_object_is_type(a, json_type_array))
		return NULL;
	for (size_t i = 0; i < json_object_array_length(a); i++) {
		char *s = xasprintf("%s%s%s", joined ?: "", joined ? ", " : "",
				    json_object_get_string(json_object_array_get_idx(a, i)));
		free(joined);
		joined = s;
	}
	return joined;
}

const char *jstr(struct json_object *o, const char *key)
{
	struct json_object *v = jget(o, key);
	return v && json_object_is_type(v, json_type_string) ? json_object_get_string(v) : NULL;
}

bool jbool(struct json_object *o, const char *key)
{
	struct json_object *v = jget(o, key);
	return v && json_object_is_type(v, json_type_boolean) && json_object_get_boolean(v);
}

/* A Value {"value", "bound"?, "age_us"?}. */
struct value value_of(struct json_object *v)
{
	struct value r = { .age_us = -1 };
	if (!v || !jint(v, "value", &r.value))
		return r;
	r.set = true;
	r.bound = jint_or(v, "bound", 0);
	r.age_us = jint_or(v, "age_us", -1);
	return r;
}

void print_json(FILE *f, struct json_object *o)
{
	int flags = JSON_C_TO_STRING_NOSLASHESCAPE;

	flags |= arg_json == JSON_PRETTY ? JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_SPACED : JSON_C_TO_STRING_PLAIN;
	fputs(json_object_to_json_string_ext(o, flags), f);
	fputc('\n', f);
}

void print_text(FILE *f, const char *s)
{
	size_t n = strlen(s);

	if (name_escape_span(s, n, NAME_ESCAPE_TEXT) == n) {
		fputs(s, f);
		return;
	}
	_cleanup_free_ char *e = name_escape(s, NAME_ESCAPE_TEXT);
	if (!e)
		oom_exit();
	fputs(e, f);
}

struct json_object *json_cgroup_arg(const char *arg)
{
	_cleanup_free_ char *text = name_escape(arg, NAME_ESCAPE_UTF8);
	if (!text)
		oom_exit();
	return xjson(json_object_new_string(text));
}

void print_field(const char *label, const char *fmt, ...)
{
	_cleanup_free_ char *text = NULL;
	va_list ap;

	if (*label)
		printf("%15s: ", label);
	else
		printf("%17s", "");
	va_start(ap, fmt);
	int r = vasprintf(&text, fmt, ap);
	va_end(ap);
	if (r < 0)
		oom_exit();
	print_text(stdout, text);
	putchar('\n');
}

int usage_error(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	return EXIT_USAGE;
}

