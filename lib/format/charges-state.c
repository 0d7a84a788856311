/* charges-state.c - the charges' state file as bytes and back
 * (charges-state.h). */
#include "charges-state.h"

#include <errno.h>
#include <inttypes.h>
#include <json-c/json.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "basic/path.h"
#include "basic/util.h"

#define MAGIC "acctd-charges "

void charges_state_clear(struct charges_state *s)
{
	for (size_t i = 0; i < s->nr_resources; i++) {
		struct charges_state_resource *r = &s->resources[i];
		for (size_t j = 0; j < r->nr_entries; j++)
			free(r->entries[j].path);
		free(r->entries);
		free(r->name);
		free(r->unit);
	}
	free(s->resources);
	for (size_t i = 0; i < s->nr_slots; i++) {
		free(s->slots[i].resource);
		free(s->slots[i].path);
	}
	free(s->slots);
	*s = (struct charges_state){ 0 };
}

int charges_state_add_resource(struct charges_state *s, const char *name, const char *unit, size_t *ret_index)
{
	if (!name || !*name || !unit || !*unit)
		return -EINVAL;
	for (size_t i = 0; i < s->nr_resources; i++)
		if (strcmp(s->resources[i].name, name) == 0)
			return -EEXIST;
	if (s->nr_resources == s->cap_resources) {
		size_t cap = MAX(s->cap_resources * 2, (size_t)4);
		struct charges_state_resource *v = reallocarray(s->resources, cap, sizeof(*v));
		if (!v)
			return -ENOMEM;
		s->resources = v;
		s->cap_resources = cap;
	}
	_cleanup_free_ char *n = strdup(name), *u = strdup(unit);
	if (!n || !u)
		return -ENOMEM;
	s->resources[s->nr_resources] = (struct charges_state_resource){ .name = TAKE_PTR(n), .unit = TAKE_PTR(u) };
	if (ret_index)
		*ret_index = s->nr_resources;
	s->nr_resources++;
	return 0;
}

int charges_state_add_entry(struct charges_state *s, size_t res, const char *path, int64_t value)
{
	if (res >= s->nr_resources || !path || path[0] != '/' || value > CHARGES_STATE_VALUE_MAX ||
	    value < -CHARGES_STATE_VALUE_MAX)
		return -EINVAL;
	struct charges_state_resource *r = &s->resources[res];
	if (r->nr_entries == r->cap_entries) {
		size_t cap = MAX(r->cap_entries * 2, (size_t)16);
		struct charges_state_entry *v = reallocarray(r->entries, cap, sizeof(*v));
		if (!v)
			return -ENOMEM;
		r->entries = v;
		r->cap_entries = cap;
	}
	char *p = strdup(path);
	if (!p)
		return -ENOMEM;
	r->entries[r->nr_entries++] = (struct charges_state_entry){ .path = p, .value = value };
	return 0;
}

int charges_state_add_slot(struct charges_state *s, const struct charges_state_slot *slot)
{
	if (slot->id <= 0 || slot->pid <= 0 || !slot->resource || !*slot->resource || !slot->path ||
	    slot->path[0] != '/' || slot->folded > CHARGES_STATE_VALUE_MAX || slot->folded < -CHARGES_STATE_VALUE_MAX ||
	    slot->nr_shards <= 0 || slot->nr_nodes <= 0 || slot->batch <= 0)
		return -EINVAL;
	if (s->nr_slots == s->cap_slots) {
		size_t cap = MAX(s->cap_slots * 2, (size_t)8);
		struct charges_state_slot *v = reallocarray(s->slots, cap, sizeof(*v));
		if (!v)
			return -ENOMEM;
		s->slots = v;
		s->cap_slots = cap;
	}
	_cleanup_free_ char *res = strdup(slot->resource), *path = strdup(slot->path);
	if (!res || !path)
		return -ENOMEM;
	struct charges_state_slot *n = &s->slots[s->nr_slots++];
	*n = *slot;
	n->resource = TAKE_PTR(res);
	n->path = TAKE_PTR(path);
	return 0;
}

/* ---- writing ---------------------------------------------------------------- */

/* json_object_array_add() and json_object_object_add() leave a value they
 * could not add to the caller: put it then. */
static int array_add(struct json_object *arr, struct json_object *v)
{
	if (!v || json_object_array_add(arr, v) < 0) {
		json_object_put(v);
		return -ENOMEM;
	}
	return 0;
}

static int object_add(struct json_object *o, const char *key, struct json_object *v)
{
	if (!v || json_object_object_add(o, key, v) < 0) {
		json_object_put(v);
		return -ENOMEM;
	}
	return 0;
}

/* {"name":...,"unit":...,"charges":[[path,value],...]} or NULL (-ENOMEM). */
static struct json_object *resource_json(const struct charges_state_resource *r)
{
	struct json_object *o = json_object_new_object(), *arr = NULL;

	if (!o || object_add(o, "name", json_object_new_string(r->name)) < 0 ||
	    object_add(o, "unit", json_object_new_string(r->unit)) < 0 ||
	    object_add(o, "charges", arr = json_object_new_array()) < 0)
		goto fail;
	for (size_t i = 0; i < r->nr_entries; i++) {
		struct json_object *e = json_object_new_array();
		if (array_add(arr, e) < 0 || array_add(e, json_object_new_string(r->entries[i].path)) < 0 ||
		    array_add(e, json_object_new_int64(r->entries[i].value)) < 0)
			goto fail;
	}
	return o;
fail:
	json_object_put(o);
	return NULL;
}

int charges_state_serialise(const struct charges_state *s, char **ret, size_t *ret_len)
{
	struct json_object *doc = json_object_new_object(), *arr = json_object_new_array();
	int r = -ENOMEM;

	if (!doc || object_add(doc, "resources", arr) < 0)
		goto out;
	for (size_t i = 0; i < s->nr_resources; i++)
		if (array_add(arr, resource_json(&s->resources[i])) < 0)
			goto out;
	if (s->nr_slots > 0) {
		struct json_object *slots = json_object_new_array();
		if (object_add(doc, "slots", slots) < 0)
			goto out;
		for (size_t i = 0; i < s->nr_slots; i++) {
			const struct charges_state_slot *sl = &s->slots[i];
			struct json_object *e = json_object_new_array();
			if (array_add(slots, e) < 0 || array_add(e, json_object_new_int64(sl->id)) < 0 ||
			    array_add(e, json_object_new_string(sl->resource)) < 0 ||
			    array_add(e, json_object_new_string(sl->path)) < 0 ||
			    array_add(e, json_object_new_int64(sl->folded)) < 0 ||
			    array_add(e, json_object_new_int64(sl->pid)) < 0 ||
			    array_add(e, json_object_new_int64(sl->nr_shards)) < 0 ||
			    array_add(e, json_object_new_int64(sl->nr_nodes)) < 0 ||
			    array_add(e, json_object_new_int64(sl->batch)) < 0)
				goto out;
		}
	}
	size_t blen = 0;
	const char *body = json_object_to_json_string_length(doc, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE,
							     &blen);
	if (!body)
		goto out;
	uint32_t crc = (uint32_t)crc32(0L, (const Bytef *)body, (uInt)blen);
	char head[64];
	int hlen = snprintf(head, sizeof(head), MAGIC "%d %zu %08" PRIx32 "\n", CHARGES_STATE_VERSION, blen, crc);
	char *buf = malloc((size_t)hlen + blen + 1);
	if (!buf)
		goto out;
	memcpy(buf, head, (size_t)hlen);
	memcpy(buf + hlen, body, blen);
	buf[(size_t)hlen + blen] = '\0';
	*ret = buf;
	*ret_len = (size_t)hlen + blen;
	r = 0;
out:
	json_object_put(doc);
	return r;
}

/* ---- reading ------------------------------------------------------------------ */

static int bad(char *reason, size_t size, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int bad(char *reason, size_t size, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	if (size > 0)
		vsnprintf(reason, size, fmt, ap);
	va_end(ap);
	return -EBADMSG;
}

/* A decimal without sign or leading zero (but "0") of at most 19 digits,
 * ending at `end` (exclusive). */
static bool parse_decimal(const char *p, const char *end, uint64_t *ret)
{
	size_t n = (size_t)(end - p);
	uint64_t v = 0;

	if (n == 0 || n > 19 || (n > 1 && p[0] == '0'))
		return false;
	for (; p < end; p++) {
		if (*p < '0' || *p > '9')
			return false;
		v = v * 10 + (uint64_t)(*p - '0');
	}
	*ret = v;
	return true;
}

/* Does o have exactly the members names[] (NULL-terminated)? */
static bool members_exactly(struct json_object *o, const char *const *names)
{
	size_t n = 0;

	if (!json_object_is_type(o, json_type_object))
		return false;
	for (; names[n]; n++)
		if (!json_object_object_get_ex(o, names[n], NULL))
			return false;
	return (size_t)json_object_object_length(o) == n;
}

static int cmp_entry(const void *a, const void *b)
{
	return strcmp(((const struct charges_state_entry *)a)->path, ((const struct charges_state_entry *)b)->path);
}

static int parse_resource(struct json_object *o, size_t index, struct charges_state *s, char *reason, size_t size)
{
	static const char *const names[] = { "name", "unit", "charges", NULL };
	struct json_object *name, *unit, *charges;
	size_t res;
	int r;

	if (!members_exactly(o, names))
		return bad(reason, size, "resource %zu: not an object of name, unit and charges", index);
	json_object_object_get_ex(o, "name", &name);
	json_object_object_get_ex(o, "unit", &unit);
	json_object_object_get_ex(o, "charges", &charges);
	if (!json_object_is_type(name, json_type_string) || !json_object_is_type(unit, json_type_string) ||
	    !json_object_is_type(charges, json_type_array))
		return bad(reason, size, "resource %zu: a member of the wrong type", index);
	const char *n = json_object_get_string(name);
	if (strlen(n) != (size_t)json_object_get_string_len(name))
		return bad(reason, size, "resource %zu: a NUL byte in its name", index);
	r = charges_state_add_resource(s, n, json_object_get_string(unit), &res);
	if (r == -EEXIST)
		return bad(reason, size, "resource %s twice", n);
	if (r == -EINVAL)
		return bad(reason, size, "resource %zu: an empty name or unit", index);
	if (r < 0)
		return r;
	size_t nr = json_object_array_length(charges);
	for (size_t i = 0; i < nr; i++) {
		struct json_object *e = json_object_array_get_idx(charges, i), *p, *v;
		char norm[CGROUP_PATH_MAX + 1];

		if (!json_object_is_type(e, json_type_array) || json_object_array_length(e) != 2 ||
		    !json_object_is_type(p = json_object_array_get_idx(e, 0), json_type_string) ||
		    !json_object_is_type(v = json_object_array_get_idx(e, 1), json_type_int))
			return bad(reason, size, "resource %s, charge %zu: not [path, integer]", n, i);
		const char *path = json_object_get_string(p);
		size_t plen = (size_t)json_object_get_string_len(p);
		const char *why = path_normalize_cgroup(path, plen, norm);
		if (why || strcmp(norm, path) != 0)
			return bad(reason, size, "resource %s, charge %zu: the path is not a normalised cgroup path%s%s", n, i,
				   why ? ": " : "", why ? why : "");
		/* json-c saturates out-of-range integers at INT64_MIN/MAX: out of
		 * the engine's range either way. */
		int64_t value = json_object_get_int64(v);
		if (value > CHARGES_STATE_VALUE_MAX || value < -CHARGES_STATE_VALUE_MAX)
			return bad(reason, size, "resource %s, charge %zu: the value is out of range", n, i);
		r = charges_state_add_entry(s, res, path, value);
		if (r < 0)
			return r;
	}
	struct charges_state_resource *rr = &s->resources[res];
	if (rr->nr_entries > 1) {
		qsort(rr->entries, rr->nr_entries, sizeof(*rr->entries), cmp_entry);
		for (size_t i = 1; i < rr->nr_entries; i++)
			if (strcmp(rr->entries[i - 1].path, rr->entries[i].path) == 0)
				return bad(reason, size, "resource %s: a cgroup twice", n);
	}
	return 0;
}

/* The 8-member array of a slot (charges-state.h), added to s. */
static int parse_slot(struct json_object *e, size_t i, struct charges_state *s, char *reason, size_t size)
{
	/* Members 0 and 3-7 integers, 1 and 2 strings. */
	static const bool is_string[8] = { [1] = true, [2] = true };
	int64_t v[8] = { 0 };
	const char *str[8] = { NULL };
	char norm[CGROUP_PATH_MAX + 1];

	if (!json_object_is_type(e, json_type_array) || json_object_array_length(e) != 8)
		return bad(reason, size, "slot %zu: not an array of 8", i);
	for (size_t k = 0; k < 8; k++) {
		struct json_object *m = json_object_array_get_idx(e, k);
		if (!json_object_is_type(m, is_string[k] ? json_type_string : json_type_int))
			return bad(reason, size, "slot %zu: member %zu of the wrong type", i, k);
		if (is_string[k]) {
			str[k] = json_object_get_string(m);
			if (strlen(str[k]) != (size_t)json_object_get_string_len(m))
				return bad(reason, size, "slot %zu: a NUL byte in member %zu", i, k);
		} else
			v[k] = json_object_get_int64(m);
	}
	const char *why = path_normalize_cgroup(str[2], strlen(str[2]), norm);
	if (why || strcmp(norm, str[2]) != 0)
		return bad(reason, size, "slot %zu: the path is not a normalised cgroup path", i);
	for (size_t k = 0; k < s->nr_slots; k++)
		if (s->slots[k].id == v[0])
			return bad(reason, size, "slot %zu: its id twice", i);
	struct charges_state_slot sl = {
		.id = v[0], .resource = (char *)str[1], .path = (char *)str[2], .folded = v[3], .pid = v[4],
		.nr_shards = v[5], .nr_nodes = v[6], .batch = v[7],
	};
	int r = charges_state_add_slot(s, &sl);
	if (r == -EINVAL)
		return bad(reason, size, "slot %zu: a value out of range", i);
	return r;
}

int charges_state_parse(const char *data, size_t len, struct charges_state *ret, char *reason, size_t size)
{
	struct charges_state s = { 0 };
	const size_t ml = strlen(MAGIC);
	int r;

	if (size > 0)
		reason[0] = '\0';
	/* The header: MAGIC VERSION SP LENGTH SP CRC32 LF. */
	const char *nl = memchr(data, '\n', MIN(len, (size_t)64));
	if (len < ml || memcmp(data, MAGIC, ml) != 0 || !nl)
		return bad(reason, size, "not a charges state file (no header line)");
	const char *p = data + ml, *sp1 = memchr(p, ' ', (size_t)(nl - p));
	const char *sp2 = sp1 ? memchr(sp1 + 1, ' ', (size_t)(nl - sp1 - 1)) : NULL;
	uint64_t version, length;
	if (!sp1 || !sp2 || !parse_decimal(p, sp1, &version) || !parse_decimal(sp1 + 1, sp2, &length) ||
	    nl - (sp2 + 1) != 8 || strspn(sp2 + 1, "0123456789abcdef") < 8)
		return bad(reason, size, "a damaged header line");
	if (version != CHARGES_STATE_VERSION)
		return bad(reason, size, "version %" PRIu64 ", this acctd reads version %d", version, CHARGES_STATE_VERSION);
	const char *body = nl + 1;
	size_t blen = len - (size_t)(body - data);
	if (length != blen)
		return bad(reason, size, "%zu bytes of content where the header says %" PRIu64 " (truncated or extended)",
			   blen, length);
	char hex[9];
	memcpy(hex, sp2 + 1, 8);
	hex[8] = '\0';
	uint32_t want = (uint32_t)strtoul(hex, NULL, 16);
	uint32_t crc = (uint32_t)crc32(0L, (const Bytef *)body, (uInt)blen);
	if (crc != want)
		return bad(reason, size, "checksum %08" PRIx32 " where the header says %08" PRIx32, crc, want);

	/* The document: the whole rest, one JSON value. */
	struct json_tokener *tok = json_tokener_new();
	if (!tok)
		return -ENOMEM;
	json_tokener_set_flags(tok, JSON_TOKENER_STRICT);
	struct json_object *doc = blen <= INT32_MAX ? json_tokener_parse_ex(tok, body, (int)blen) : NULL;
	/* json-c takes trailing white space as part of the value: the writer
	 * writes none, so a document ends at its last token. */
	bool whole = doc && json_tokener_get_error(tok) == json_tokener_success &&
		     (size_t)json_tokener_get_parse_end(tok) == blen && !strchr(" \t\r\n", body[blen - 1]);
	json_tokener_free(tok);
	if (!whole) {
		json_object_put(doc);
		return bad(reason, size, "the content is not one JSON document");
	}
	static const char *const top[] = { "resources", NULL }, *const top_slots[] = { "resources", "slots", NULL };
	struct json_object *arr = NULL, *slots = NULL;
	if (!(members_exactly(doc, top) || members_exactly(doc, top_slots)) ||
	    !json_object_object_get_ex(doc, "resources", &arr) || !json_object_is_type(arr, json_type_array) ||
	    (json_object_object_get_ex(doc, "slots", &slots) && !json_object_is_type(slots, json_type_array))) {
		json_object_put(doc);
		return bad(reason, size, "the content is not an object of resources (and slots)");
	}
	r = 0;
	for (size_t i = 0; r == 0 && i < json_object_array_length(arr); i++)
		r = parse_resource(json_object_array_get_idx(arr, i), i, &s, reason, size);
	for (size_t i = 0; r == 0 && slots && i < json_object_array_length(slots); i++)
		r = parse_slot(json_object_array_get_idx(slots, i), i, &s, reason, size);
	json_object_put(doc);
	if (r < 0) {
		charges_state_clear(&s);
		return r;
	}
	*ret = s;
	return 0;
}
