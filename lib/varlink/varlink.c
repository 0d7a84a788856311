/* varlink.c - varlink framing and message codec (see varlink.h). */
#include "varlink.h"

#include <errno.h>
#include <math.h>
#include <string.h>

#include "basic/util.h"
#include "json-shape.h"

/* ---- framing --------------------------------------------------------------- */

/* Not a verdict: a message a reader without limits handed out unscanned. */
#define _JSON_SHAPE_UNSCANNED (-1)
/* r->taken: over the limits but let through by the exemption, unparsed. */
#define _JSON_SHAPE_EXEMPT (-2)

/* A message this large is parsed with a tokener made for it and freed after. */
#define TOKENER_KEEP (64u * 1024)

struct varlink_reader {
	char *buf;
	size_t alloc;
	size_t start;   /* first byte not handed out */
	size_t end;     /* end of the data */
	size_t scanned; /* [start, scanned) was fed to shape: the message at start, up to its NUL */
	size_t tail;    /* start of the bytes after the last NUL fed */
	size_t max_message;
	int max_depth;
	bool broken;
	bool done;       /* the message at start is complete: its NUL is at scanned */
	int taken; /* the scanner's verdict on the message handed out last (enum json_shape_verdict),
		    * or _JSON_SHAPE_UNSCANNED: taken without counting */
	bool discarding; /* dropping a refused message's bytes up to its NUL */
	bool exempted;   /* the message at start passed the limits by the exemption: framing only */
	varlink_reader_exempt_t exempt;
	void *exempt_data;
	int refused;     /* a refusal not yet handed out (-E2BIG, -EFBIG), or 0 */
	struct json_shape_limits limits;
	struct json_shape shape; /* of the message at start */
	struct json_tokener *tok;
};

DEFINE_TRIVIAL_CLEANUP_FUNC(struct varlink_reader *, varlink_reader_free);

static void json_putp(struct json_object **o)
{
	json_object_put(*o); /* accepts NULL */
}

static void tokener_freep(struct json_tokener **t)
{
	if (*t)
		json_tokener_free(*t);
}

int varlink_reader_new(size_t max_message, int max_depth, struct varlink_reader **ret)
{
	_cleanup_(varlink_reader_freep) struct varlink_reader *r = calloc(1, sizeof(*r));
	if (!r)
		return -ENOMEM;
	r->max_message = max_message ? max_message : VARLINK_MAX_MESSAGE_DEFAULT;
	r->max_depth = max_depth > 0 ? max_depth : VARLINK_MAX_DEPTH_DEFAULT;
	r->limits = (struct json_shape_limits){ .max_depth = (uint32_t)MIN(r->max_depth, JSON_SHAPE_MAX_DEPTH) };
	json_shape_init(&r->shape, &r->limits);
	r->tok = json_tokener_new_ex(r->max_depth);
	if (!r->tok)
		return -ENOMEM;
	json_tokener_set_flags(r->tok, JSON_TOKENER_STRICT | JSON_TOKENER_VALIDATE_UTF8);
	*ret = TAKE_PTR(r);
	return 0;
}

struct varlink_reader *varlink_reader_free(struct varlink_reader *r)
{
	if (!r)
		return NULL;
	json_tokener_free(r->tok);
	free(r->buf);
	free(r);
	return NULL;
}

size_t varlink_reader_pending(const struct varlink_reader *r)
{
	return r->end - r->start;
}

size_t varlink_reader_allocated(const struct varlink_reader *r)
{
	return r->alloc;
}

void varlink_reader_shrink(struct varlink_reader *r)
{
	size_t n = r->end - r->start;

	if (n == 0) {
		free(r->buf);
		r->buf = NULL;
		r->alloc = r->start = r->end = r->scanned = r->tail = 0;
		return;
	}
	/* Cut only a buffer that the pending bytes fill to a quarter or less.
	 * Cutting to fit after every read made a message arriving in pieces
	 * cost O(size^2): each read grew the buffer again by copying it (glibc
	 * hid it behind mremap; TSan's realloc, which copies, showed it: 15 MB
	 * took over 10 s). With the quarter, a cut follows at least three
	 * times its size in bytes consumed, and growth doubles: O(1) per byte. */
	if (n > r->alloc / 4)
		return;
	memmove(r->buf, r->buf + r->start, n);
	r->scanned -= r->start;
	r->tail = r->tail > r->start ? r->tail - r->start : 0;
	r->end = n;
	r->start = 0;
	char *p = realloc(r->buf, n);
	if (p) {
		r->buf = p;
		r->alloc = n;
	}
}

void *varlink_reader_space(struct varlink_reader *r, size_t min_size, size_t *ret_size)
{
	if (min_size == 0)
		min_size = 1;
	/* Move the pending bytes to the front once the consumed part dominates:
	 * amortised O(1) per byte. */
	if (r->start > 0 && (r->start == r->end || r->start >= r->alloc / 2 || r->alloc - r->end < min_size)) {
		size_t n = r->end - r->start;
		memmove(r->buf, r->buf + r->start, n);
		r->scanned -= r->start;
		r->tail = r->tail > r->start ? r->tail - r->start : 0;
		r->end = n;
		r->start = 0;
	}
	if (r->alloc - r->end < min_size) {
		size_t want = MAX(r->alloc * 2, r->end + min_size);
		want = MAX(want, (size_t)4096);
		char *p = realloc(r->buf, want);
		if (!p)
			return NULL;
		r->buf = p;
		r->alloc = want;
	}
	if (ret_size)
		*ret_size = r->alloc - r->end;
	return r->buf + r->end;
}

/* Drop the bytes of a refused message up to and including its NUL, keeping
 * what follows it. */
static void reader_discard(struct varlink_reader *r)
{
	/* (No buffer at all once a shrink freed it: nothing to look at.) */
	const char *nul = r->end > r->start ? memchr(r->buf + r->start, 0, r->end - r->start) : NULL;
	if (!nul) {
		r->end = r->scanned = r->tail = r->start;
		return;
	}
	size_t after = (size_t)(nul - r->buf) + 1, n = r->end - after;
	memmove(r->buf + r->start, r->buf + after, n);
	r->end = r->start + n;
	r->scanned = r->start;
	const char *last = n ? memrchr(r->buf + r->start, 0, n) : NULL;
	r->tail = last ? (size_t)(last - r->buf) + 1 : r->start;
	r->discarding = false;
}

/* Whether the reader counts shapes as bytes come (it has limits). */
static bool reader_counts(const struct varlink_reader *r)
{
	return r->limits.max_items > 0 || r->limits.ratio > 0;
}

/* Feed the shape scanner what is buffered of the message at start, up to
 * its NUL; a message refused for its shape is dropped as its bytes come. */
static void reader_scan(struct varlink_reader *r)
{
	for (;;) {
		if (r->discarding) {
			reader_discard(r);
			if (r->discarding)
				return;
		}
		/* One message at a time: the next is scanned once this one is
		 * handed out (or its refusal is). */
		if (r->done || r->refused || r->scanned == r->end)
			return;
		if (!reader_counts(r) || r->exempted) {
			/* Framing only: a client's reader (next_text() callers
			 * read big replies with their own strict reader; next()
			 * scans the message when it is taken). */
			const char *nul = memchr(r->buf + r->scanned, 0, r->end - r->scanned);
			r->scanned = nul ? (size_t)(nul - r->buf) : r->end;
			r->done = nul != NULL;
			return;
		}
		r->scanned += json_shape_feed(&r->shape, r->buf + r->scanned, r->end - r->scanned);
		switch (r->shape.verdict) {
		case JSON_SHAPE_TOO_MANY:
		case JSON_SHAPE_TOO_COSTLY:
			if (r->exempt && r->exempt(r->buf + r->start, r->scanned - r->start, r->exempt_data)) {
				/* Read without json-c (or checked again, whole,
				 * before json-c sees it): only its end is sought. */
				r->exempted = true;
				const char *nul = memchr(r->buf + r->scanned, 0, r->end - r->scanned);
				r->scanned = nul ? (size_t)(nul - r->buf) : r->end;
				r->done = nul != NULL;
				return;
			}
			/* Refused before it is complete or built: its bytes go
			 * from here on, the stream stays in sync at its NUL. */
			r->refused = r->shape.verdict == JSON_SHAPE_TOO_MANY ? -E2BIG : -EFBIG;
			r->discarding = true;
			json_shape_init(&r->shape, &r->limits);
			continue;
		default:
			break;
		}
		if (r->scanned < r->end) { /* at the NUL */
			(void)json_shape_finish(&r->shape);
			r->done = true;
		}
		return;
	}
}

int varlink_reader_commit(struct varlink_reader *r, size_t size)
{
	size_t old_end = r->end;

	if (r->broken)
		return -EMSGSIZE;
	r->end += size;
	/* Only the unterminated tail is checked here; complete messages are
	 * checked when taken. */
	const char *last = size ? memrchr(r->buf + old_end, 0, size) : NULL;
	if (last)
		r->tail = (size_t)(last - r->buf) + 1;
	else if (r->tail < r->start)
		r->tail = r->start;
	reader_scan(r);
	if (r->end - r->tail > r->max_message) {
		r->broken = true;
		return -EMSGSIZE;
	}
	return 0;
}

int varlink_reader_feed(struct varlink_reader *r, const void *data, size_t size)
{
	if (r->broken)
		return -EMSGSIZE;
	if (size == 0)
		return 0;
	void *p = varlink_reader_space(r, size, NULL);
	if (!p)
		return -ENOMEM;
	memcpy(p, data, size);
	return varlink_reader_commit(r, size);
}

/* What json-c lets through and RFC 8259 does not: invalid UTF-8 anywhere
 * (json-c's JSON_TOKENER_VALIDATE_UTF8 accepts overlong forms such as C0 AF,
 * a disguised '/', and surrogates), control characters inside strings, and
 * single-quoted strings. One pass, about a nanosecond per byte. */
static bool json_text_is_valid(const unsigned char *p, size_t size)
{
	bool in_string = false;

	for (size_t i = 0; i < size; i++) {
		unsigned char c = p[i];
		if (c < 0x80) {
			if (in_string) {
				if (c < 0x20)
					return false;
				if (c == '\\')
					i++; /* the escaped character (ASCII in valid JSON) */
				else if (c == '"')
					in_string = false;
			} else if (c == '"')
				in_string = true;
			else if (c == '\'')
				return false;
			continue;
		}
		/* A multi-byte sequence: the lead byte says how many follow and the
		 * ranges rule out overlong forms, surrogates and > U+10FFFF. */
		unsigned char lo = 0x80, hi = 0xbf;
		size_t n;
		if (c >= 0xc2 && c <= 0xdf)
			n = 1;
		else if (c >= 0xe0 && c <= 0xef) {
			n = 2;
			if (c == 0xe0)
				lo = 0xa0;
			else if (c == 0xed)
				hi = 0x9f;
		} else if (c >= 0xf0 && c <= 0xf4) {
			n = 3;
			if (c == 0xf0)
				lo = 0x90;
			else if (c == 0xf4)
				hi = 0x8f;
		} else
			return false;
		if (size - i - 1 < n || p[i + 1] < lo || p[i + 1] > hi)
			return false;
		for (size_t k = 2; k <= n; k++)
			if (p[i + k] < 0x80 || p[i + k] > 0xbf)
				return false;
		i += n;
	}
	return true;
}

static int parse_with(struct json_tokener *tok, const char *data, size_t size, struct json_object **ret)
{
	if (size > INT32_MAX)
		return -EMSGSIZE;
	if (memchr(data, 0, size) || !json_text_is_valid((const unsigned char *)data, size))
		return -EBADMSG;
	json_tokener_reset(tok);
	_cleanup_(json_putp) struct json_object *o = json_tokener_parse_ex(tok, data, (int)size);
	if (!o) /* an error, or an incomplete document (json_tokener_continue) */
		return -EBADMSG;
	/* Nothing but white space may follow the object. */
	for (size_t i = json_tokener_get_parse_end(tok); i < size; i++)
		if (!strchr(" \t\r\n", data[i]))
			return -EBADMSG;
	if (!json_object_is_type(o, json_type_object))
		return -EBADMSG;
	*ret = TAKE_PTR(o);
	return 0;
}

int varlink_message_parse(const char *data, size_t size, int max_depth, struct json_object **ret)
{
	int depth = max_depth > 0 ? max_depth : VARLINK_MAX_DEPTH_DEFAULT;
	struct json_shape shape;

	/* The reader's scan: what it refuses (json-c's leniencies, such as
	 * numbers with leading zeros) is refused here too. */
	json_shape_init(&shape, &(struct json_shape_limits){ .max_depth = (uint32_t)MIN(depth, JSON_SHAPE_MAX_DEPTH) });
	if (json_shape_feed(&shape, data, size) != size || json_shape_finish(&shape) != JSON_SHAPE_OK)
		return size > INT32_MAX ? -EMSGSIZE : -EBADMSG;
	_cleanup_(tokener_freep) struct json_tokener *tok = json_tokener_new_ex(depth);
	if (!tok)
		return -ENOMEM;
	json_tokener_set_flags(tok, JSON_TOKENER_STRICT | JSON_TOKENER_VALIDATE_UTF8);
	return parse_with(tok, data, size, ret);
}

int varlink_reader_next_text(struct varlink_reader *r, const char **ret, size_t *ret_size)
{
	reader_scan(r);
	if (r->refused) {
		int k = r->refused;
		r->refused = 0;
		return k;
	}
	if (!r->done) {
		if (r->broken || r->end - r->start > r->max_message) {
			r->broken = true;
			return -EMSGSIZE;
		}
		return 0;
	}
	size_t size = r->scanned - r->start;
	if (size > r->max_message) {
		/* Not consumed: every later call finds it again, so that the
		 * reader stays broken and hands out nothing after it. */
		r->broken = true;
		return -EMSGSIZE;
	}
	*ret = r->buf + r->start;
	*ret_size = size;
	r->start += size + 1;
	r->scanned = r->start;
	r->done = false;
	r->taken = r->exempted ? _JSON_SHAPE_EXEMPT : reader_counts(r) ? (int)r->shape.verdict : _JSON_SHAPE_UNSCANNED;
	r->exempted = false;
	json_shape_init(&r->shape, &r->limits);
	return 1;
}

void varlink_reader_set_exempt(struct varlink_reader *r, varlink_reader_exempt_t fn, void *userdata)
{
	r->exempt = fn;
	r->exempt_data = userdata;
}

uint64_t varlink_reader_cost(struct varlink_reader *r)
{
	reader_scan(r);
	return r->refused ? 0 : json_shape_estimate(&r->shape);
}

void varlink_reader_set_limits(struct varlink_reader *r, uint64_t max_items, uint32_t ratio, uint64_t slack)
{
	bool counted = reader_counts(r);

	r->limits.max_items = max_items;
	r->limits.ratio = ratio;
	r->limits.slack = slack;
	if (counted && r->shape.bytes > 0)
		return; /* a message begun keeps the limits it started with */
	json_shape_init(&r->shape, &r->limits);
	if (!counted && reader_counts(r) && !r->refused && !r->discarding) {
		/* Framing only until now: the message at the head is
		 * scanned again from its start, counting. */
		r->scanned = r->start;
		r->done = false;
	}
}

int varlink_reader_next(struct varlink_reader *r, struct json_object **ret)
{
	const char *msg;
	size_t size;
	int k = varlink_reader_next_text(r, &msg, &size);

	if (k <= 0)
		return k;
	return varlink_reader_parse_taken(r, msg, size, ret);
}

int varlink_reader_parse_taken(struct varlink_reader *r, const char *msg, size_t size, struct json_object **ret)
{
	int k;

	/* Refused without json-c when the scanner found it is not JSON (a
	 * reader without limits scans it now, at once); an exempted message
	 * meets the limits now, whole, as it would have as it came. */
	if (r->taken == _JSON_SHAPE_UNSCANNED || r->taken == _JSON_SHAPE_EXEMPT) {
		struct json_shape shape;
		json_shape_init(&shape, &r->limits);
		size_t fed = json_shape_feed(&shape, msg, size);
		if (shape.verdict == JSON_SHAPE_TOO_MANY)
			return -E2BIG;
		if (shape.verdict == JSON_SHAPE_TOO_COSTLY)
			return -EFBIG;
		if (fed == size)
			r->taken = (int)json_shape_finish(&shape);
		else
			r->taken = JSON_SHAPE_BAD;
	}
	if (r->taken != JSON_SHAPE_OK)
		return -EBADMSG;
	k = parse_with(r->tok, msg, size, ret);
	if (size >= TOKENER_KEEP) {
		/* json-c's tokener keeps the buffer that held the longest token
		 * (printbuf_reset() keeps its memory): a new one gives it back. */
		struct json_tokener *t = json_tokener_new_ex(r->max_depth);
		if (t) {
			json_tokener_set_flags(t, JSON_TOKENER_STRICT | JSON_TOKENER_VALIDATE_UTF8);
			json_tokener_free(r->tok);
			r->tok = t;
		}
	}
	return k < 0 ? -EBADMSG : 1;
}

/* ---- names ------------------------------------------------------------------ */

static bool is_alpha(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

static bool is_digit(char c)
{
	return c >= '0' && c <= '9';
}

/* The spec's interface name: [A-Za-z](-*[A-Za-z0-9])* then one or more
 * .[A-Za-z0-9](-*[A-Za-z0-9])* */
bool varlink_interface_name_is_valid(const char *name, size_t len)
{
	size_t labels = 0;
	size_t i = 0;

	if (len == 0 || len > 255)
		return false;
	while (i < len) {
		if (!is_alpha(name[i]) && !(labels > 0 && is_digit(name[i])))
			return false;
		i++;
		while (i < len && name[i] != '.') {
			if (name[i] == '-') {
				while (i < len && name[i] == '-')
					i++;
				if (i >= len || !(is_alpha(name[i]) || is_digit(name[i])))
					return false;
			} else if (!is_alpha(name[i]) && !is_digit(name[i]))
				return false;
			i++;
		}
		labels++;
		if (i < len) { /* a dot */
			i++;
			if (i == len)
				return false;
		}
	}
	return labels >= 2;
}

/* interface "." [A-Z][A-Za-z0-9]* */
bool varlink_qualified_name_is_valid(const char *name, size_t *ret_interface_len)
{
	const char *dot = strrchr(name, '.');
	if (!dot || dot == name)
		return false;
	const char *m = dot + 1;
	if (!(*m >= 'A' && *m <= 'Z'))
		return false;
	for (const char *p = m + 1; *p; p++)
		if (!is_alpha(*p) && !is_digit(*p))
			return false;
	if (strlen(m) > 255 || !varlink_interface_name_is_valid(name, (size_t)(dot - name)))
		return false;
	if (ret_interface_len)
		*ret_interface_len = (size_t)(dot - name);
	return true;
}

/* ---- calls and replies ------------------------------------------------------- */

static int get_flag(struct json_object *msg, const char *key, bool *ret)
{
	struct json_object *v;
	*ret = false;
	if (!json_object_object_get_ex(msg, key, &v) || !v)
		return 0;
	if (!json_object_is_type(v, json_type_boolean))
		return -EBADMSG;
	*ret = json_object_get_boolean(v);
	return 0;
}

/* parameters: an object, null or absent ({}). Returns a new reference. */
static int get_parameters(struct json_object *msg, struct json_object **ret)
{
	struct json_object *v = NULL;
	if (json_object_object_get_ex(msg, "parameters", &v) && v) {
		if (!json_object_is_type(v, json_type_object))
			return -EBADMSG;
		*ret = json_object_get(v);
		return 0;
	}
	*ret = json_object_new_object();
	return *ret ? 0 : -ENOMEM;
}

int varlink_call_parse(struct json_object *msg, struct varlink_call *ret, const char **ret_field)
{
	struct json_object *v;
	const char *field = "";
	bool oneway, more, upgrade;
	size_t ilen = 0;

	if (!msg || !json_object_is_type(msg, json_type_object))
		goto bad;
	field = "method";
	if (!json_object_object_get_ex(msg, "method", &v) || !json_object_is_type(v, json_type_string))
		goto bad;
	const char *method = json_object_get_string(v);
	if ((size_t)json_object_get_string_len(v) != strlen(method) || !varlink_qualified_name_is_valid(method, &ilen))
		goto bad;
	field = "oneway";
	if (get_flag(msg, "oneway", &oneway) < 0)
		goto bad;
	field = "more";
	if (get_flag(msg, "more", &more) < 0)
		goto bad;
	field = "upgrade";
	if (get_flag(msg, "upgrade", &upgrade) < 0)
		goto bad;
	field = "parameters";
	struct json_object *params = NULL;
	int r = get_parameters(msg, &params);
	if (r == -ENOMEM)
		return r;
	if (r < 0)
		goto bad;
	*ret = (struct varlink_call){
		.msg = json_object_get(msg),
		.method = method,
		.interface_len = ilen,
		.member = method + ilen + 1,
		.parameters = params,
		.flags = (oneway ? VARLINK_CALL_ONEWAY : 0) | (more ? VARLINK_CALL_MORE : 0) |
			 (upgrade ? VARLINK_CALL_UPGRADE : 0),
	};
	return 0;
bad:
	if (ret_field)
		*ret_field = field;
	return -EBADMSG;
}

void varlink_call_clear(struct varlink_call *c)
{
	json_object_put(c->parameters);
	json_object_put(c->msg);
	*c = (struct varlink_call){ 0 };
}

int varlink_reply_parse(struct json_object *msg, struct varlink_reply *ret)
{
	struct json_object *v;
	const char *error = NULL;
	bool continues;

	if (!msg || !json_object_is_type(msg, json_type_object))
		return -EBADMSG;
	if (json_object_object_get_ex(msg, "error", &v) && v) {
		if (!json_object_is_type(v, json_type_string))
			return -EBADMSG;
		error = json_object_get_string(v);
		if ((size_t)json_object_get_string_len(v) != strlen(error) || !varlink_qualified_name_is_valid(error, NULL))
			return -EBADMSG;
	}
	if (get_flag(msg, "continues", &continues) < 0 || (error && continues))
		return -EBADMSG;
	struct json_object *params = NULL;
	int r = get_parameters(msg, &params);
	if (r < 0)
		return r;
	*ret = (struct varlink_reply){
		.msg = json_object_get(msg),
		.parameters = params,
		.error = error,
		.continues = continues,
	};
	return 0;
}

void varlink_reply_clear(struct varlink_reply *r)
{
	json_object_put(r->parameters);
	json_object_put(r->msg);
	*r = (struct varlink_reply){ 0 };
}

/* Add a new value (NULL: its allocation failed). json_object_object_add()
 * fails only on allocation, and then leaves the value's reference with the
 * caller. */
static int add(struct json_object *o, const char *key, struct json_object *v)
{
	if (!v || json_object_object_add(o, key, v) < 0) {
		json_object_put(v);
		return -ENOMEM;
	}
	return 0;
}

struct json_object *varlink_call_new(const char *method, struct json_object *parameters, unsigned flags)
{
	/* Consumed: sent, or dropped when empty or on failure. */
	_cleanup_(json_putp) struct json_object *p = parameters;
	_cleanup_(json_putp) struct json_object *o = json_object_new_object();
	if (!o || add(o, "method", json_object_new_string(method)) < 0)
		return NULL;
	if (p && json_object_object_length(p) > 0) {
		if (add(o, "parameters", TAKE_PTR(p)) < 0)
			return NULL;
	}
	if ((flags & VARLINK_CALL_ONEWAY) && add(o, "oneway", json_object_new_boolean(1)) < 0)
		return NULL;
	if ((flags & VARLINK_CALL_MORE) && add(o, "more", json_object_new_boolean(1)) < 0)
		return NULL;
	if ((flags & VARLINK_CALL_UPGRADE) && add(o, "upgrade", json_object_new_boolean(1)) < 0)
		return NULL;
	return TAKE_PTR(o);
}

struct json_object *varlink_reply_new(struct json_object *parameters, bool continues)
{
	_cleanup_(json_putp) struct json_object *o = json_object_new_object();
	_cleanup_(json_putp) struct json_object *p = parameters ?: json_object_new_object();
	if (!o || !p || add(o, "parameters", TAKE_PTR(p)) < 0)
		return NULL;
	if (continues && add(o, "continues", json_object_new_boolean(1)) < 0)
		return NULL;
	return TAKE_PTR(o);
}

struct json_object *varlink_error_new(const char *error, struct json_object *parameters)
{
	_cleanup_(json_putp) struct json_object *o = json_object_new_object();
	_cleanup_(json_putp) struct json_object *p = parameters ?: json_object_new_object();
	if (!o || !p || add(o, "error", json_object_new_string(error)) < 0 ||
	    add(o, "parameters", TAKE_PTR(p)) < 0)
		return NULL;
	return TAKE_PTR(o);
}

struct json_object *varlink_error_new_string(const char *error, const char *key, const char *value)
{
	_cleanup_(json_putp) struct json_object *p = json_object_new_object();
	if (!p || add(p, key, json_object_new_string(value ? value : "")) < 0)
		return NULL;
	return varlink_error_new(error, TAKE_PTR(p));
}

int varlink_message_serialize(struct json_object *msg, const char **ret, size_t *ret_size)
{
	size_t len = 0;
	const char *s = json_object_to_json_string_length(msg, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE,
							  &len);
	if (!s)
		return -ENOMEM;
	*ret = s;
	*ret_size = len;
	return 0;
}

/* ---- parameters ------------------------------------------------------------------ */

static struct json_object *param(struct json_object *params, const char *name)
{
	struct json_object *v = NULL;
	if (!params || !json_object_object_get_ex(params, name, &v))
		return NULL;
	return v; /* NULL for a JSON null */
}

int varlink_param_string(struct json_object *params, const char *name, const char **ret)
{
	struct json_object *v = param(params, name);
	if (!v)
		return 0;
	if (!json_object_is_type(v, json_type_string))
		return -EINVAL;
	*ret = json_object_get_string(v);
	return 1;
}

int varlink_param_string_len(struct json_object *params, const char *name, const char **ret, size_t *ret_len)
{
	struct json_object *v = param(params, name);
	if (!v)
		return 0;
	if (!json_object_is_type(v, json_type_string))
		return -EINVAL;
	*ret = json_object_get_string(v);
	*ret_len = (size_t)json_object_get_string_len(v);
	return 1;
}

int varlink_param_int64(struct json_object *params, const char *name, int64_t *ret)
{
	struct json_object *v = param(params, name);
	if (!v)
		return 0;
	if (json_object_is_type(v, json_type_int)) {
		/* json-c keeps integers above INT64_MAX as uint64: out of range. */
		int64_t x = json_object_get_int64(v);
		if (x == INT64_MAX && json_object_get_uint64(v) > (uint64_t)INT64_MAX)
			return -EINVAL;
		*ret = x;
		return 1;
	}
	if (json_object_is_type(v, json_type_double)) {
		double d = json_object_get_double(v);
		if (!isfinite(d) || d != floor(d) || d < -9223372036854775808.0 || d >= 9223372036854775808.0)
			return -EINVAL;
		*ret = (int64_t)d;
		return 1;
	}
	return -EINVAL;
}

int varlink_param_bool(struct json_object *params, const char *name, bool *ret)
{
	struct json_object *v = param(params, name);
	if (!v)
		return 0;
	if (!json_object_is_type(v, json_type_boolean))
		return -EINVAL;
	*ret = json_object_get_boolean(v);
	return 1;
}

int varlink_param_array(struct json_object *params, const char *name, struct json_object **ret)
{
	struct json_object *v = param(params, name);
	if (!v)
		return 0;
	if (!json_object_is_type(v, json_type_array))
		return -EINVAL;
	*ret = v;
	return 1;
}

const char *varlink_param_unknown(struct json_object *params, const char *const *known)
{
	if (!params)
		return NULL;
	json_object_object_foreach(params, key, val) {
		(void)val;
		bool found = false;
		for (const char *const *k = known; *k; k++)
			if (strcmp(*k, key) == 0) {
				found = true;
				break;
			}
		if (!found)
			return key;
	}
	return NULL;
}
