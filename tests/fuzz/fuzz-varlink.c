/* fuzz-varlink.c - libFuzzer target: the varlink codec (lib/varlink/varlink.h),
 * a byte stream cut into messages and every message read as a call and as a
 * reply.
 *
 * Input: byte 0 chooses how the stream is fed (chunk sizes, and feed() or
 * space()/commit(); bit 6: shape limits set, as a server's reader has them,
 * too high to be reached), byte 1 the message limit (small, so that the oversize
 * paths run); the rest is the stream. Beyond "no crash" the target checks
 * what the module promises:
 *   - framing does not depend on how the bytes arrive: fed in chunks, the
 *     reader hands out the outcomes of cutting the whole stream at its NULs
 *     and parsing each piece alone with varlink_message_parse() (the
 *     reference), up to the first piece over the limit, then -EMSGSIZE for
 *     good (or 0 when the unterminated rest is within the limit);
 *   - a call or reply that parses serializes to a message that parses again
 *     to the same method, flags, error and continuation; a call rebuilt with
 *     varlink_call_new() from its parts parses back to the same parts;
 *   - the typed parameter accessors agree with the value's JSON type;
 *   - the JSON shape scanner (json-shape.h), which the reader runs over every
 *     byte: each piece scanned whole and in chunks ends with the same verdict
 *     and counts; a piece it finds bad does not parse, and a piece that
 *     parses it finds good (so its refusals never change the protocol); with
 *     limits it consumes no byte after a refusal, and its estimate up to the
 *     refusal is within the bound plus one item's cost.
 *
 * Built by meson with -Dfuzz=true (clang); make check-fuzz and make fuzz run
 * it (tests/fuzz/run-fuzz.sh), from a copy of tests/fuzz/corpus/varlink. */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json-shape.h"
#include "util.h"
#include "varlink.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(bool ok, const char *what)
{
	if (!ok) {
		fprintf(stderr, "invariant broken: %s\n", what);
		abort();
	}
}

static const char *serialize(struct json_object *o, size_t *len)
{
	const char *s = NULL;
	check(varlink_message_serialize(o, &s, len) == 0 && s && strlen(s) <= *len, "serialize");
	return s;
}

/* Parse what we serialized: our own output must pass our own checks. */
static struct json_object *reparse(struct json_object *o)
{
	size_t len = 0;
	const char *s = serialize(o, &len);
	struct json_object *back = NULL;
	check(varlink_message_parse(s, len, 0, &back) == 0, "serialized message parses again");
	return back;
}

static void check_params(struct json_object *params)
{
	static const char *const known[] = { "cgroup", "interval_ms", NULL };

	json_object_object_foreach(params, key, val) {
		const char *s = NULL;
		size_t len = 0;
		int64_t i = 0;
		bool b = false;
		struct json_object *a = NULL;
		enum json_type t = json_object_get_type(val);
		int r = varlink_param_string_len(params, key, &s, &len);
		check(t == json_type_null ? r == 0 : (r == 1) == (t == json_type_string), "string accessor and type");
		if (r == 1)
			check(len == (size_t)json_object_get_string_len(val) && strlen(s) <= len, "string length");
		r = varlink_param_bool(params, key, &b);
		check(t == json_type_null ? r == 0 : (r == 1) == (t == json_type_boolean), "bool accessor and type");
		r = varlink_param_array(params, key, &a);
		check(t == json_type_null ? r == 0 : (r == 1) == (t == json_type_array), "array accessor and type");
		r = varlink_param_int64(params, key, &i);
		if (r == 1)
			check(t == json_type_int || t == json_type_double, "int64 from a number");
		else if (t == json_type_int && json_object_get_int64(val) != INT64_MAX)
			check(false, "an int64 in range is accepted");
	}
	const char *unknown = varlink_param_unknown(params, known);
	if (unknown)
		check(strcmp(unknown, "cgroup") != 0 && strcmp(unknown, "interval_ms") != 0, "unknown is unknown");
}

static void check_call(struct json_object *msg)
{
	struct varlink_call call = { 0 }, again = { 0 };
	const char *field = NULL;
	int r = varlink_call_parse(msg, &call, &field);

	check(r == 0 || r == -EBADMSG, "call rc");
	if (r < 0) {
		check(field != NULL, "a refused call names a field");
		return;
	}
	check(call.parameters && json_object_is_type(call.parameters, json_type_object), "call parameters");
	check(call.interface_len > 0 && call.method[call.interface_len] == '.' &&
		      call.member == call.method + call.interface_len + 1,
	      "call names");
	check(varlink_interface_name_is_valid(call.method, call.interface_len), "call interface is valid");
	check_params(call.parameters);

	struct json_object *back = reparse(msg);
	check(varlink_call_parse(back, &again, NULL) == 0, "serialized call parses again");
	check(strcmp(again.method, call.method) == 0 && again.flags == call.flags, "call round trip");
	varlink_call_clear(&again);
	json_object_put(back);

	/* Rebuilt from its parts. */
	struct json_object *built = varlink_call_new(call.method, json_object_get(call.parameters), call.flags);
	check(built != NULL, "varlink_call_new");
	back = reparse(built);
	check(varlink_call_parse(back, &again, NULL) == 0, "built call parses");
	check(strcmp(again.method, call.method) == 0 && again.flags == call.flags, "built call round trip");
	check(json_object_object_length(again.parameters) == json_object_object_length(call.parameters),
	      "built call parameters");
	varlink_call_clear(&again);
	json_object_put(back);
	json_object_put(built);
	varlink_call_clear(&call);
}

static void check_reply(struct json_object *msg)
{
	struct varlink_reply rep = { 0 }, again = { 0 };
	int r = varlink_reply_parse(msg, &rep);

	check(r == 0 || r == -EBADMSG, "reply rc");
	if (r < 0)
		return;
	check(rep.parameters && json_object_is_type(rep.parameters, json_type_object), "reply parameters");
	check(!(rep.error && rep.continues), "an error does not continue");
	if (rep.error) {
		size_t ilen = 0;
		check(varlink_qualified_name_is_valid(rep.error, &ilen), "reply error name");
		struct json_object *e = varlink_error_new(rep.error, json_object_get(rep.parameters));
		check(e != NULL, "varlink_error_new");
		struct json_object *back = reparse(e);
		check(varlink_reply_parse(back, &again) == 0 && again.error && strcmp(again.error, rep.error) == 0,
		      "error round trip");
		varlink_reply_clear(&again);
		json_object_put(back);
		json_object_put(e);
	}
	struct json_object *back = reparse(msg);
	check(varlink_reply_parse(back, &again) == 0, "serialized reply parses again");
	check(again.continues == rep.continues && (again.error == NULL) == (rep.error == NULL), "reply round trip");
	varlink_reply_clear(&again);
	json_object_put(back);
	varlink_reply_clear(&rep);
}

/* Whether the text has something json-c lets through and the reader refuses
 * (RFC 8259 does): a control character in a string or a single quote
 * outside one (varlink.c's json_text_is_valid() caught those before the
 * scanner came), a number that starts with 0 and a digit ("00", "-01"), a
 * number whose dot has no digit on either side ("1.", "1.e5", "-.5"), NaN,
 * Infinity and -Infinity. */
static bool json_c_leniency(const char *s, size_t n)
{
	bool in_string = false;
	for (size_t i = 0; i < n; i++) {
		char c = s[i], prev = i > 0 ? s[i - 1] : ' ';
		if (in_string) {
			if ((unsigned char)c < 0x20)
				return true;
			if (c == '\\')
				i++;
			else if (c == '"')
				in_string = false;
		} else if (c == '"')
			in_string = true;
		else if (c == '\'' || c == 'N' || c == 'I')
			return true;
		else if (c == '0' && i + 1 < n && s[i + 1] >= '0' && s[i + 1] <= '9' &&
			 !((prev >= '0' && prev <= '9') || prev == '.' || prev == 'e' || prev == 'E' || prev == '+'))
			return true;
		else if (c == '.' && !(prev >= '0' && prev <= '9' && i + 1 < n && s[i + 1] >= '0' && s[i + 1] <= '9'))
			return true;
	}
	return false;
}

/* One piece (no NUL in it) through the scanner, against json-c. */
static void check_shape(const char *s, size_t n, unsigned mode)
{
	struct json_shape whole, parts, limited;

	json_shape_init(&whole, NULL);
	check(json_shape_feed(&whole, s, n) == n, "the scanner consumes a piece without limits");
	enum json_shape_verdict v = json_shape_finish(&whole);
	json_shape_init(&parts, NULL);
	for (size_t pos = 0, step = 0; pos < n; step++) {
		size_t chunk = MIN(n - pos, (size_t)1 + ((mode * 5 + step * 11) & 31));
		check(json_shape_feed(&parts, s + pos, chunk) == chunk, "the scanner consumes every chunk");
		pos += chunk;
	}
	check(json_shape_finish(&parts) == v, "the same verdict in chunks");
	check(parts.cost == whole.cost && parts.values == whole.values && parts.members == whole.members &&
		      parts.containers == whole.containers && parts.longest == whole.longest,
	      "the same counts in chunks");
	/* Against json-c alone (strict): what the scanner refuses, json-c
	 * refuses too, but for its leniencies (json_c_leniency()). */
	struct json_tokener *tok = json_tokener_new_ex(VARLINK_MAX_DEPTH_DEFAULT);
	check(tok != NULL, "tokener");
	json_tokener_set_flags(tok, JSON_TOKENER_STRICT);
	struct json_object *o = n <= INT32_MAX ? json_tokener_parse_ex(tok, s, (int)n) : NULL;
	bool json_c = o && json_tokener_get_parse_end(tok) == n;
	json_object_put(o);
	json_tokener_free(tok);
	if (json_c && v != JSON_SHAPE_OK)
		check(json_c_leniency(s, n), "what json-c parses, the scanner accepts (but json-c's leniencies)");

	/* Small limits, from the mode: refused where they are passed. */
	const struct json_shape_limits l = { .max_items = 1 + (mode & 7), .ratio = 1 + (mode >> 3 & 15),
					     .slack = (mode >> 7) * 1024 };
	json_shape_init(&limited, &l);
	size_t used = json_shape_feed(&limited, s, n);
	if (limited.verdict == JSON_SHAPE_TOO_MANY || limited.verdict == JSON_SHAPE_TOO_COSTLY) {
		check(json_shape_feed(&limited, s + used, n - used) == 0, "nothing consumed after a refusal");
		check(json_shape_estimate(&limited) <=
			      l.ratio * limited.bytes + l.slack + JSON_SHAPE_COST_OBJECT + JSON_SHAPE_COST_SLOT +
				      JSON_SHAPE_COST_MEMBER + 2 * JSON_SHAPE_COST_NUMBER + 3 * limited.bytes,
		      "refused as soon as the bound is passed");
	} else
		check(used == n && json_shape_finish(&limited) == v, "within the limits, the same verdict");
}

/* The reference: the outcome of each NUL-terminated piece, parsed alone. */
#define MAX_OUTCOMES 4096
static size_t reference(const char *s, size_t n, size_t max, int *out)
{
	size_t k = 0, start = 0;
	for (size_t i = 0; i < n; i++) {
		if (s[i])
			continue;
		if (i - start > max) {
			out[k++] = -EMSGSIZE;
			return k;
		}
		check_shape(s + start, i - start, (unsigned)k);
		struct json_object *o = NULL;
		int r = varlink_message_parse(s + start, i - start, 0, &o);
		check(r == 0 || r == -EBADMSG, "parse rc");
		out[k++] = r == 0 ? 1 : -EBADMSG;
		json_object_put(o);
		start = i + 1;
	}
	out[k++] = n - start > max ? -EMSGSIZE : 0;
	return k;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static int want[MAX_OUTCOMES];
	if (size < 2 || size > 256 * 1024)
		return 0;
	unsigned mode = data[0];
	size_t max = 16 + (size_t)data[1] * 64; /* 16 .. 16336 bytes */
	const char *s = (const char *)data + 2;
	size_t n = size - 2, nuls = 0;
	for (size_t i = 0; i < n; i++)
		nuls += s[i] == 0;
	if (nuls >= MAX_OUTCOMES)
		return 0;
	size_t nwant = reference(s, n, max, want);

	struct varlink_reader *r = NULL;
	check(varlink_reader_new(max, 0, &r) == 0, "reader");
	/* Half the time the reader counts as a server's does (limits that
	 * nothing here reaches, so the outcomes are the reference's). */
	if (mode & 0x40)
		varlink_reader_set_limits(r, UINT32_MAX, 1u << 30, 0);
	size_t pos = 0, k = 0;
	bool refused = false;
	unsigned step = 0;
	for (;;) {
		/* Feed a chunk (1 to 64 bytes, or the rest, as the mode says). */
		if (pos < n && !refused) {
			size_t chunk = mode & 0x80 ? n - pos : 1 + ((mode * 7 + step * 13) & 63);
			chunk = MIN(chunk, n - pos);
			int rc;
			if ((mode + step) & 1)
				rc = varlink_reader_feed(r, s + pos, chunk);
			else {
				size_t room = 0;
				void *p = varlink_reader_space(r, chunk, &room);
				check(p && room >= chunk, "space");
				memcpy(p, s + pos, chunk);
				rc = varlink_reader_commit(r, chunk);
			}
			check(rc == 0 || rc == -EMSGSIZE, "feed rc");
			refused = rc == -EMSGSIZE;
			pos += chunk;
			step++;
		}
		/* Take every complete message. */
		for (;;) {
			struct json_object *msg = NULL;
			int rc = varlink_reader_next(r, &msg);
			check(rc == 1 || rc == 0 || rc == -EBADMSG || rc == -EMSGSIZE, "next rc");
			if (rc == 0 && pos < n && !refused)
				break; /* feed more */
			check(k < nwant, "more outcomes than the reference");
			if (rc == 0 || rc == -EMSGSIZE) {
				/* The end: all the reference's pieces were seen. */
				check(k == nwant - 1 && rc == want[k], "the stream ends as the reference does");
				if (rc == -EMSGSIZE) {
					check(varlink_reader_next(r, &msg) == -EMSGSIZE, "a broken reader stays broken");
					check(varlink_reader_feed(r, "x", 1) == -EMSGSIZE, "a broken reader takes nothing");
				}
				varlink_reader_free(r);
				return 0;
			}
			check(rc == want[k], "the same outcome as parsing the piece alone");
			k++;
			if (rc == 1) {
				check(json_object_is_type(msg, json_type_object), "a message is an object");
				check_call(msg);
				check_reply(msg);
				json_object_put(msg);
			}
		}
	}
}
