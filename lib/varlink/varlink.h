/* varlink.h - the varlink wire protocol: framing and message codec, shared by
 * the daemon's server (daemon/acctd/api-*.c) and the client library (acct-client.c).
 *
 * Wire format (https://varlink.org/Method-Call): a connection carries a stream
 * of messages, each one JSON object followed by a NUL byte.
 *   call:  {"method": "iface.Method", "parameters": {...}, "oneway": true,
 *           "more": true, "upgrade": true}      (everything but method optional)
 *   reply: {"parameters": {...}, "continues": true, "error": "iface.Error"}
 * Replies come in call order. A call with "more" may be answered by several
 * replies, all but the last with "continues": true. A "oneway" call gets no
 * reply. An error reply is always the last for its call. "parameters": null and
 * a missing "parameters" both mean {}.
 *
 * This module does no I/O and keeps no connection state: it cuts a byte
 * stream into messages (struct varlink_reader), parses and validates calls and
 * replies, builds them, and serializes them. It never logs.
 *
 * Memory: every struct json_object handed out carries a reference owned by the
 * caller (json_object_put() it, or the *_clear() function of the struct that
 * holds it). Strings inside a parsed call or reply point into its message and
 * live as long as the struct. */
#pragma once

#include <json-c/json.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* ---- limits ------------------------------------------------------------- */

/* Defaults, as systemd's sd-varlink: 16 MiB per message. Nesting depth as
 * json-c counts it (the message object itself is level 1). */
#define VARLINK_MAX_MESSAGE_DEFAULT (16u * 1024 * 1024)
#define VARLINK_MAX_DEPTH_DEFAULT 64

/* ---- standard errors (org.varlink.service) ------------------------------- */

#define VARLINK_INTERFACE_SERVICE "org.varlink.service"
#define VARLINK_ERROR_INTERFACE_NOT_FOUND "org.varlink.service.InterfaceNotFound"     /* {"interface": s} */
#define VARLINK_ERROR_METHOD_NOT_FOUND "org.varlink.service.MethodNotFound"           /* {"method": s} */
#define VARLINK_ERROR_METHOD_NOT_IMPLEMENTED "org.varlink.service.MethodNotImplemented" /* {"method": s} */
#define VARLINK_ERROR_INVALID_PARAMETER "org.varlink.service.InvalidParameter"       /* {"parameter": s} */
#define VARLINK_ERROR_PERMISSION_DENIED "org.varlink.service.PermissionDenied"       /* {} */
#define VARLINK_ERROR_EXPECTED_MORE "org.varlink.service.ExpectedMore"               /* {} */

/* ---- framing: a byte stream into messages -------------------------------- */

/* Accumulates bytes and hands out complete messages. Scans each byte once,
 * as it is fed, with the JSON shape scanner (json-shape.h), which finds the
 * NUL terminator and counts what the message will cost json-c (incremental:
 * feeding a message one byte at a time costs O(size), not O(size^2)); parses
 * a message only once it is complete, and never one the scanner refused. */
struct varlink_reader;

/* A reader for messages of at most `max_message` bytes (without the NUL; 0:
 * VARLINK_MAX_MESSAGE_DEFAULT) and JSON nesting of at most `max_depth` (0:
 * VARLINK_MAX_DEPTH_DEFAULT). Returns 0 or -ENOMEM. */
int varlink_reader_new(size_t max_message, int max_depth, struct varlink_reader **ret);
/* Accepts NULL; returns NULL. */
struct varlink_reader *varlink_reader_free(struct varlink_reader *r);

/* Append `size` bytes read from the stream. Returns 0, -ENOMEM, or -EMSGSIZE
 * when the bytes pending after the last NUL already exceed the limit: then the
 * reader takes no more bytes; the complete messages before those can still
 * be taken, after which varlink_reader_next() returns -EMSGSIZE (answer with
 * an error if you like, and close the connection). Never parses. */
int varlink_reader_feed(struct varlink_reader *r, const void *data, size_t size);

/* Where to put up to `*ret_size` bytes of the next read directly (avoiding a
 * copy through a caller buffer); commit with varlink_reader_commit(). Returns a
 * pointer to at least `min_size` free bytes, or NULL on -ENOMEM. */
void *varlink_reader_space(struct varlink_reader *r, size_t min_size, size_t *ret_size);
/* `size` bytes were written into the space above. Same returns as _feed(). */
int varlink_reader_commit(struct varlink_reader *r, size_t size);

/* Take the next complete message out of the buffer:
 *   1        *ret is a JSON object (new reference);
 *   0        no complete message yet (feed more);
 *  -EMSGSIZE a message longer than the limit, or unterminated bytes beyond
 *            it (the reader is broken for good: close);
 *  -EBADMSG  the next message is not one JSON object as RFC 8259 has it: not
 *            JSON, not an object, trailing garbage, nested deeper than the
 *            limit, invalid UTF-8 anywhere (overlong forms and surrogates
 *            included, which json-c alone lets through), raw control
 *            characters in strings, single-quoted strings. The bad message
 *            has been consumed: the stream stays in sync, so the caller may
 *            answer with an error and go on, or close.
 *  -E2BIG    the next message has an array or object with more entries
 *            than max_items (varlink_reader_set_limits());
 *  -EFBIG    the next message would cost json-c more than ratio x its
 *            bytes + slack. Both are found while the message arrives (the
 *            scanner runs over each byte as it is fed), before it is
 *            complete and before json-c builds anything; its bytes are
 *            dropped as they come up to its NUL, and the stream stays in
 *            sync as for -EBADMSG (the refusal is handed out as soon as it
 *            is found, possibly before its NUL has come).
 * *ret is only written when 1 is returned. Cost: json-c's, which the scanner
 * bounds by varlink_reader_cost() before. */
int varlink_reader_next(struct varlink_reader *r, struct json_object **ret);

/* Bound what a message may cost to parse (0: no bound, the default): at most
 * `max_items` entries in one array or object, and an estimate of json-c's
 * allocations (json-shape.h) of at most `ratio` x its bytes + `slack`.
 * Applies from the next message on (or to the one at the head, when the
 * reader had no limits: it is scanned again from its start). A reader
 * without limits (a client's) only looks for NULs as bytes come, at memchr's
 * speed, and scans a message when varlink_reader_next() takes it. */
void varlink_reader_set_limits(struct varlink_reader *r, uint64_t max_items, uint32_t ratio, uint64_t slack);

/* Let a message through that the limits of varlink_reader_set_limits()
 * would refuse as it comes, when `fn`, called once with the message's bytes
 * so far (it has come at least as far as the limits reach), says that the
 * server reads it without json-c (acctd: a ChargeBatch, whose direct reader
 * allocates less than the message's bytes). Such a message is then only
 * framed (max_message still holds) and handed out whole by
 * varlink_reader_next_text(); varlink_reader_parse_taken() applies the limits
 * to it, whole, before json-c could see it, so that a message the server
 * does not read itself is refused with the same -E2BIG or -EFBIG. NULL: no
 * exemption (the default). */
typedef bool (*varlink_reader_exempt_t)(const char *msg, size_t size, void *userdata);
void varlink_reader_set_exempt(struct varlink_reader *r, varlink_reader_exempt_t fn, void *userdata);

/* Build the message that varlink_reader_next_text() handed out last (`msg`,
 * `size`, as returned), as varlink_reader_next() would have: 1 with *ret,
 * -EBADMSG, or, for an exempted message, -E2BIG and -EFBIG by the limits. */
int varlink_reader_parse_taken(struct varlink_reader *r, const char *msg, size_t size, struct json_object **ret);

/* The estimate of json-c's allocations for the message at the head of the
 * buffer, complete or not, as far as it has come (json_shape_estimate()):
 * what varlink_reader_next() will allocate to build it, about. Scans what is
 * buffered of that message first (incremental: each byte is scanned once).
 * A server charges it, with the pending bytes, to the sender's budget before
 * taking the message. */
uint64_t varlink_reader_cost(struct varlink_reader *r);

/* The same framing without parsing: 1 and the next complete message's
 * *ret_size bytes in *ret (terminated by the message's own NUL), valid until the reader is next fed, given space or shrunk;
 * 0, -EMSGSIZE, -E2BIG and -EFBIG as varlink_reader_next(). The text is not
 * checked otherwise: for callers that read it with their own strict reader. */
int varlink_reader_next_text(struct varlink_reader *r, const char **ret, size_t *ret_size);

/* Bytes buffered and not yet handed out (a partial message, or complete ones
 * not yet taken). */
size_t varlink_reader_pending(const struct varlink_reader *r);

/* Give back the buffer's memory beyond the pending bytes: free it when none
 * are pending; when they fill a quarter of it or less, move them to the front
 * and shrink the buffer to fit; otherwise leave it (so the buffer is at most
 * four times the pending bytes, plus the room of the last read). A server
 * calls it after taking calls, so that a connection that sent one big message
 * does not keep its buffer. Cost: amortised O(1) per byte read, however the
 * calls interleave with reads. Never fails (a failed shrink keeps the larger
 * buffer). */
void varlink_reader_shrink(struct varlink_reader *r);
/* Bytes allocated for the buffer now. */
size_t varlink_reader_allocated(const struct varlink_reader *r);

/* Parse one message of `size` bytes (without its NUL) with the checks of
 * varlink_reader_next() (max_depth 0: the default). Returns 0 and *ret (a new
 * reference), -EBADMSG, -EMSGSIZE (over 2 GiB) or -ENOMEM. */
int varlink_message_parse(const char *data, size_t size, int max_depth, struct json_object **ret);

/* ---- calls ------------------------------------------------------------------ */

enum {
	VARLINK_CALL_ONEWAY = 1u << 0,  /* no reply wanted */
	VARLINK_CALL_MORE = 1u << 1,    /* several replies welcome (continues) */
	VARLINK_CALL_UPGRADE = 1u << 2, /* switch to another protocol after the reply */
};

struct varlink_call {
	struct json_object *msg;        /* the whole call (owned reference) */
	const char *method;             /* "interface.Method", validated; points into msg */
	size_t interface_len;           /* method[0 .. interface_len) is the interface */
	const char *member;             /* the method's name after the last dot */
	struct json_object *parameters; /* owned reference; never NULL: {} when absent or null */
	unsigned flags;                 /* VARLINK_CALL_* */
};

/* Validate `msg` as a call and fill *ret (takes its own reference on msg).
 * Returns 0, -ENOMEM, or -EBADMSG with *ret_field (may be NULL) naming the
 * offending field: "method" (missing, not a string, not of the form
 * interface.Method), "parameters" (not an object or null), "oneway", "more",
 * "upgrade" (not a boolean), or "" when msg is not an object. Unknown fields
 * are ignored, as the spec asks. *ret is untouched on failure. */
int varlink_call_parse(struct json_object *msg, struct varlink_call *ret, const char **ret_field);
/* Release what a parsed call holds; accepts a zeroed struct. */
void varlink_call_clear(struct varlink_call *c);

/* Whether `name` is a valid interface name (reverse domain: "io.acctd.Accounting",
 * "org.varlink.service"), and a valid fully qualified method or error name
 * ("io.acctd.Accounting.Get": interface, a dot, an upper-case member). */
bool varlink_interface_name_is_valid(const char *name, size_t len);
bool varlink_qualified_name_is_valid(const char *name, size_t *ret_interface_len);

/* Build a call. Takes ownership of `parameters` (NULL: {} is sent as no
 * "parameters" at all). Returns a new object or NULL on -ENOMEM. */
struct json_object *varlink_call_new(const char *method, struct json_object *parameters, unsigned flags);

/* ---- replies ---------------------------------------------------------------- */

struct varlink_reply {
	struct json_object *msg;        /* owned reference */
	struct json_object *parameters; /* owned reference; never NULL: {} when absent or null */
	const char *error;              /* NULL, or the error name (validated) */
	bool continues;                 /* more replies follow for the same call */
};

/* Validate `msg` as a reply (takes its own reference). Returns 0, -ENOMEM, or
 * -EBADMSG when msg is not an object, "parameters" is not an object or null,
 * "continues" not a boolean, "error" not a valid qualified name, or an error
 * claims to continue. *ret is untouched on failure. */
int varlink_reply_parse(struct json_object *msg, struct varlink_reply *ret);
void varlink_reply_clear(struct varlink_reply *r);

/* Build a reply. Takes ownership of `parameters` (NULL: {}). NULL on -ENOMEM. */
struct json_object *varlink_reply_new(struct json_object *parameters, bool continues);
/* Build an error reply `error` (a qualified name) with `parameters` (taken;
 * NULL: {}). NULL on -ENOMEM. */
struct json_object *varlink_error_new(const char *error, struct json_object *parameters);
/* Convenience: an error with one string parameter {key: value}. */
struct json_object *varlink_error_new_string(const char *error, const char *key, const char *value);

/* ---- serialization -------------------------------------------------------------- */

/* The message as compact JSON, NUL-terminated: write (*ret_size + 1) bytes of
 * *ret to send it, the NUL included. The string belongs to msg and lives until
 * msg is freed or changed. Returns 0 or -ENOMEM. */
int varlink_message_serialize(struct json_object *msg, const char **ret, size_t *ret_size);

/* ---- parameters ----------------------------------------------------------------- */

/* Typed access to a call's or reply's parameters, for both sides. Each returns
 * 1 when the parameter is present (and writes *ret), 0 when it is absent or
 * null (and leaves *ret alone: preset the default), or -EINVAL when present
 * with the wrong type (an int that does not fit, a float with a fraction,
 * a non-string). Integer parameters accept JSON integers, and doubles with
 * an integral value within range (JavaScript clients send 1.0). */
int varlink_param_string(struct json_object *params, const char *name, const char **ret);
/* The same with the string's length, which is where an embedded NUL ("\u0000")
 * shows: strlen(*ret) < *ret_len. */
int varlink_param_string_len(struct json_object *params, const char *name, const char **ret, size_t *ret_len);
int varlink_param_int64(struct json_object *params, const char *name, int64_t *ret);
int varlink_param_bool(struct json_object *params, const char *name, bool *ret);
/* An array (returned borrowed). */
int varlink_param_array(struct json_object *params, const char *name, struct json_object **ret);

/* The first key of `params` not in the NULL-terminated list `known`, or NULL.
 * A server answers InvalidParameter naming it. */
const char *varlink_param_unknown(struct json_object *params, const char *const *known);
