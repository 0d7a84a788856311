/* json-shape.h - an incremental, allocation-free scanner of one JSON text
 * (RFC 8259) that counts its shape (nesting, containers, members, values)
 * and estimates what json-c will allocate to build it, so that the varlink
 * reader refuses a message whose parse would cost far more than its bytes
 * before json-c sees it, and before the message is even complete.
 *
 * Why: json-c builds a document of many small objects; some shapes cost
 * hundreds of times their text (json-c 0.16, glibc, 64-bit, measured with
 * mallinfo2 over 100,000 items, allocator headers and growth included):
 *     [{},{},...]   784 bytes per "{}"  (lh_table of 16 entries) 264x its text
 *     [[],[],...]   144 bytes per "[]"                            51x
 *     ["","",...]    80 bytes per string, plus its length          29x
 *     [0,0,...]      64 bytes per integer (doubles 96 and a copy of the text)
 *     [true,...]     64 bytes per boolean; null costs only its slot
 *     {"k":0,...}   ~137 bytes per member beyond its value, key copy included
 *     array slots     8 bytes per element, up to 16 after the array doubles
 * A 16 MB {"x":[{},{},...]} took acctd to 4 GiB and 39 s on its event loop.
 * The estimate charges every item at least these figures (JSON_SHAPE_COST_*),
 * plus twice the longest string or number (json-c's working buffer grows to
 * hold a token, doubling), so it is an upper bound of json-c's heap use
 * within a few percent for the costly shapes (tests/test-json-shape.c
 * compares it with json-c's real allocations).
 *
 * Use: json_shape_init(), then json_shape_feed() the message's bytes as they
 * arrive, in pieces of any size; it stops before a NUL (the varlink
 * terminator) and when the message is refused. json_shape_finish() at the
 * NUL says whether the text was one complete JSON value. Cost: O(1) per byte,
 * no allocation, no I/O, no logging; struct json_shape is about 1.2 KB. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Nesting the scanner can follow (its stack is in the struct). */
#define JSON_SHAPE_MAX_DEPTH 256

/* What json-c 0.16 allocates per item, in bytes (see above): each value also
 * pays JSON_SHAPE_COST_SLOT for its place in its parent. */
#define JSON_SHAPE_COST_OBJECT 784
#define JSON_SHAPE_COST_ARRAY 144
#define JSON_SHAPE_COST_MEMBER 128 /* plus the key's length */
#define JSON_SHAPE_COST_STRING 80  /* plus its length */
#define JSON_SHAPE_COST_NUMBER 96  /* plus its length */
#define JSON_SHAPE_COST_LITERAL 64 /* true, false; null costs only its slot */
#define JSON_SHAPE_COST_SLOT 16

enum json_shape_verdict {
	JSON_SHAPE_OK,         /* nothing wrong so far (complete only after json_shape_finish()) */
	JSON_SHAPE_BAD,        /* not RFC 8259 JSON (or incomplete at the end) */
	JSON_SHAPE_TOO_DEEP,   /* nested deeper than max_depth */
	JSON_SHAPE_TOO_MANY,   /* an array or object with more than max_items entries */
	JSON_SHAPE_TOO_COSTLY, /* the estimate passed ratio x bytes + slack */
};

struct json_shape_limits {
	uint32_t max_depth; /* levels, the outermost container being 1 (json-c's count); 0 or above
			     * JSON_SHAPE_MAX_DEPTH: JSON_SHAPE_MAX_DEPTH */
	uint64_t max_items; /* entries in one array or object; 0: no limit */
	uint32_t ratio;     /* the estimate may reach ratio x the bytes scanned ... */
	uint64_t slack;     /* ... plus slack; ratio 0: no limit */
};

struct json_shape {
	struct json_shape_limits limits;
	enum json_shape_verdict verdict;
	uint8_t state;       /* where in the grammar (json-shape.c) */
	uint8_t sub;         /* state detail: a literal's next letter, hex digits left */
	char literal;        /* the literal being read: 't', 'f' or 'n' */
	bool in_key;         /* the string being read is a member's key */
	uint32_t depth;
	uint64_t bytes;      /* bytes consumed */
	uint64_t cost;       /* what the items seen so far cost json-c (without the token buffer) */
	uint64_t token;      /* length of the string or number being read */
	uint64_t longest;    /* longest string or number so far */
	uint64_t containers; /* objects and arrays */
	uint64_t values;     /* values of any type, containers included */
	uint64_t members;    /* object members */
	uint32_t items[JSON_SHAPE_MAX_DEPTH]; /* entries of each open container */
	uint8_t object[JSON_SHAPE_MAX_DEPTH / 8]; /* bit set: the open container at that level is an object */
};

/* Start scanning a new text under `limits` (copied; NULL: none). */
void json_shape_init(struct json_shape *s, const struct json_shape_limits *limits);

/* Scan up to `size` bytes. Returns how many were consumed: all of them, or
 * fewer when a NUL byte comes (it is not consumed: the text ends there) or
 * when the verdict becomes TOO_MANY or TOO_COSTLY (the byte that made it is
 * consumed; later calls consume nothing). A text found BAD or TOO_DEEP is
 * skipped up to its NUL without further counting. */
size_t json_shape_feed(struct json_shape *s, const char *data, size_t size);

/* The text ended (its NUL came): returns the final verdict, BAD when the
 * text is not one complete JSON value with only white space around it. */
enum json_shape_verdict json_shape_finish(struct json_shape *s);

/* The estimate of json-c's allocations for what was scanned: the items'
 * costs plus twice the longest token (the tokener's buffer). */
uint64_t json_shape_estimate(const struct json_shape *s);

/* "bad JSON", "nested too deep", ...: for logs. */
const char *json_shape_verdict_name(enum json_shape_verdict v);
