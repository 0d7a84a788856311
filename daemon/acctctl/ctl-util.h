/* ctl-util.h - acctctl's small helpers: allocation that exits on out of
 * memory (a command-line tool has nothing better to do), reading the JSON of
 * acctd's replies, and printing JSON and labelled fields. */
#pragma once

#include <json-c/json.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "basic/util.h"

/* Print "Out of memory." and exit with status 1. */
void oom_exit(void) __attribute__((noreturn));
/* strdup() of s ("" for NULL); never NULL. */
char *xstrdup(const char *s);
/* asprintf() that returns the string; never NULL. */
char *xasprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* calloc() of at least one byte; never NULL. */
void *xcalloc(size_t n, size_t size);
/* o itself; exits when o is NULL (a json-c constructor failed). */
struct json_object *xjson(struct json_object *o);
/* Add v (must not be NULL: exits) to object o under key, taking its reference. */
void json_add(struct json_object *o, const char *key, struct json_object *v);

void json_putp(struct json_object **o);
#define _cleanup_json_ _cleanup_(json_putp)

/* Member `key` of object o; NULL when o is not an object, has no such
 * member or it is JSON null. */
struct json_object *jget(struct json_object *o, const char *key);
/* Numeric member as int64/double; false (and *ret untouched) when absent or
 * not a number. The _or variants return dflt then. */
bool jint(struct json_object *o, const char *key, int64_t *ret);
int64_t jint_or(struct json_object *o, const char *key, int64_t dflt);
bool jdouble(struct json_object *o, const char *key, double *ret);
double jdouble_or(struct json_object *o, const char *key, double dflt);
/* String member, or NULL. */
const char *jstr(struct json_object *o, const char *key);
/* Boolean member; false when absent. */
bool jbool(struct json_object *o, const char *key);
/* The strings of array member `key` joined by ", " (a new string: free() it),
 * or NULL when the member is absent, not an array or empty. Exits on ENOMEM. */
char *jstr_array_join(struct json_object *o, const char *key);

/* A Value {"value", "bound"?, "age_us"?}. */
struct value {
	bool set;
	int64_t value, bound, age_us; /* age_us -1: unknown */
};
/* The Value v; .set is false when v is NULL or has no "value". */
struct value value_of(struct json_object *v);

/* Print s as it may reach a terminal: name-escape.h's terminal mode, so that
 * a cgroup name (any bytes its maker chose: ESC ] 0 ; retitles a window,
 * ESC [ 2 J clears the screen) shows its control characters and bytes that
 * are not UTF-8 as \xHH, the text that Get accepts back. Everything acctctl
 * prints from acctd, but --json (exact JSON), goes through this or through a
 * table (table_add() does the same to every cell). */
void print_text(FILE *f, const char *s);

/* A cgroup argument as the API's text (name-escape.h): bytes that are not
 * UTF-8 as \xHH, so that a name pasted raw (from ls, or a shell's $'\xff')
 * reaches acctd, which takes only UTF-8, as the text it serves. Never NULL
 * (exits on out of memory). */
struct json_object *json_cgroup_arg(const char *arg);

/* Print o and a newline, short or pretty as --json asked. */
void print_json(FILE *f, struct json_object *o);
/* "          Label: text": the label right-aligned in 15 columns; an empty
 * label continues the previous field on a line of its own. The text is
 * printed as print_text() does. */
void print_field(const char *label, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Print the message and a newline to stderr; returns EXIT_USAGE. */
int usage_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
