/* json-shape.c - the incremental JSON shape scanner and json-c cost estimate
 * (json-shape.h has the contract and the measured costs). A byte-driven state
 * machine over RFC 8259's grammar: no recursion, no allocation; the open
 * containers are a bit stack in the struct. */
#include "json-shape.h"

#include <string.h>

enum {
	ST_VALUE,        /* a value (after ':', after ',' in an array, at the start) */
	ST_ARRAY_FIRST,  /* after '[': a value or ']' */
	ST_OBJECT_FIRST, /* after '{': a key or '}' */
	ST_KEY,          /* after ',' in an object: a key */
	ST_COLON,        /* after a key */
	ST_AFTER,        /* after a value inside a container: ',' or its closing bracket */
	ST_STRING,       /* inside a string (a key when in_key) */
	ST_ESCAPE,       /* after a backslash */
	ST_HEX,          /* in a \u escape: `sub` counts its hex digits still to come */
	ST_NUM_MINUS,    /* "-" */
	ST_NUM_ZERO,     /* "0", "-0" */
	ST_NUM_INT,      /* "1", "-12" */
	ST_NUM_DOT,      /* "1." */
	ST_NUM_FRAC,     /* "1.5" */
	ST_NUM_EXP,      /* "1e" */
	ST_NUM_EXP_SIGN, /* "1e-" */
	ST_NUM_EXP_DIGITS, /* "1e5" */
	ST_LITERAL,      /* true, false, null: sub letters read */
	ST_END,          /* the value is complete: white space only */
	ST_SKIP,         /* BAD or TOO_DEEP: skip to the NUL */
	ST_STOP,         /* TOO_MANY or TOO_COSTLY: consume nothing more */
};

void json_shape_init(struct json_shape *s, const struct json_shape_limits *limits)
{
	/* Only the header: the stacks are written as containers open. */
	memset(s, 0, offsetof(struct json_shape, items));
	if (limits)
		s->limits = *limits;
	if (s->limits.max_depth == 0 || s->limits.max_depth > JSON_SHAPE_MAX_DEPTH)
		s->limits.max_depth = JSON_SHAPE_MAX_DEPTH;
	s->state = ST_VALUE;
}

static bool is_space(char c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

static bool is_digit(char c)
{
	return c >= '0' && c <= '9';
}

static bool is_hex(char c)
{
	return is_digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

uint64_t json_shape_estimate(const struct json_shape *s)
{
	uint64_t longest = s->longest > s->token ? s->longest : s->token;
	return s->cost + 2 * longest;
}

static void fail(struct json_shape *s, enum json_shape_verdict v)
{
	s->verdict = v;
	s->state = v == JSON_SHAPE_BAD || v == JSON_SHAPE_TOO_DEEP ? ST_SKIP : ST_STOP;
}

/* The estimate against ratio x bytes + slack, checked whenever it grows by
 * more than a byte's worth. */
static void check_cost(struct json_shape *s)
{
	uint64_t allowed;

	if (s->limits.ratio == 0)
		return;
	if (__builtin_mul_overflow(s->bytes, (uint64_t)s->limits.ratio, &allowed) ||
	    __builtin_add_overflow(allowed, s->limits.slack, &allowed))
		return;
	if (json_shape_estimate(s) > allowed)
		fail(s, JSON_SHAPE_TOO_COSTLY);
}

static bool is_object(const struct json_shape *s)
{
	uint32_t d = s->depth - 1;
	return s->object[d / 8] & (1u << (d % 8));
}

/* One more entry in the innermost container. */
static bool count_item(struct json_shape *s)
{
	if (s->depth == 0)
		return true;
	if (++s->items[s->depth - 1] > s->limits.max_items && s->limits.max_items) {
		fail(s, JSON_SHAPE_TOO_MANY);
		return false;
	}
	return true;
}

static void push(struct json_shape *s, bool object)
{
	if (s->depth >= s->limits.max_depth) {
		fail(s, JSON_SHAPE_TOO_DEEP);
		return;
	}
	uint32_t d = s->depth++;
	s->items[d] = 0;
	if (object)
		s->object[d / 8] |= (uint8_t)(1u << (d % 8));
	else
		s->object[d / 8] &= (uint8_t) ~(1u << (d % 8));
	s->containers++;
	s->state = object ? ST_OBJECT_FIRST : ST_ARRAY_FIRST;
}

static void value_done(struct json_shape *s)
{
	s->state = s->depth > 0 ? ST_AFTER : ST_END;
}

static void token_done(struct json_shape *s)
{
	if (s->token > s->longest)
		s->longest = s->token;
	s->token = 0;
	check_cost(s);
}

static void pop(struct json_shape *s, bool object)
{
	if (is_object(s) != object) {
		fail(s, JSON_SHAPE_BAD);
		return;
	}
	s->depth--;
	value_done(s);
}

static void begin_value(struct json_shape *s, char c)
{
	/* An array's element; an object's member was counted at its key. */
	if (s->depth > 0 && !is_object(s) && !count_item(s))
		return;
	s->values++;
	s->cost += JSON_SHAPE_COST_SLOT;
	s->token = 0;
	switch (c) {
	case '{':
		s->cost += JSON_SHAPE_COST_OBJECT;
		push(s, true);
		break;
	case '[':
		s->cost += JSON_SHAPE_COST_ARRAY;
		push(s, false);
		break;
	case '"':
		s->cost += JSON_SHAPE_COST_STRING;
		s->in_key = false;
		s->state = ST_STRING;
		break;
	case '-':
	case '0' ... '9':
		s->cost += JSON_SHAPE_COST_NUMBER + 1;
		s->token = 1;
		s->state = c == '-' ? ST_NUM_MINUS : c == '0' ? ST_NUM_ZERO : ST_NUM_INT;
		break;
	case 't':
	case 'f':
	case 'n':
		if (c != 'n')
			s->cost += JSON_SHAPE_COST_LITERAL;
		s->literal = c;
		s->sub = 1;
		s->state = ST_LITERAL;
		break;
	default:
		fail(s, JSON_SHAPE_BAD);
		return;
	}
	if (s->verdict == JSON_SHAPE_OK)
		check_cost(s);
}

static void begin_key(struct json_shape *s)
{
	if (!count_item(s))
		return;
	s->members++;
	s->cost += JSON_SHAPE_COST_MEMBER;
	s->token = 0;
	s->in_key = true;
	s->state = ST_STRING;
	check_cost(s);
}

/* A byte after a number: the number ends, and the byte is read again in the
 * state after a value. */
static bool number_ends(struct json_shape *s)
{
	token_done(s);
	if (s->verdict != JSON_SHAPE_OK)
		return false;
	value_done(s);
	return true;
}

static void literal_byte(struct json_shape *s, char c)
{
	const char *word = s->literal == 't' ? "true" : s->literal == 'f' ? "false" : "null";

	if (c != word[s->sub]) {
		fail(s, JSON_SHAPE_BAD);
		return;
	}
	if (word[++s->sub] == '\0')
		value_done(s);
}

/* One byte (not NUL) in any state but ST_STRING's fast path, ST_SKIP and ST_STOP. */
static void step(struct json_shape *s, char c)
{
again:
	switch (s->state) {
	case ST_VALUE:
		if (!is_space(c))
			begin_value(s, c);
		return;
	case ST_ARRAY_FIRST:
		if (c == ']')
			pop(s, false);
		else if (!is_space(c))
			begin_value(s, c);
		return;
	case ST_OBJECT_FIRST:
		if (c == '}')
			pop(s, true);
		else if (c == '"')
			begin_key(s);
		else if (!is_space(c))
			fail(s, JSON_SHAPE_BAD);
		return;
	case ST_KEY:
		if (c == '"')
			begin_key(s);
		else if (!is_space(c))
			fail(s, JSON_SHAPE_BAD);
		return;
	case ST_COLON:
		if (c == ':')
			s->state = ST_VALUE;
		else if (!is_space(c))
			fail(s, JSON_SHAPE_BAD);
		return;
	case ST_AFTER:
		if (c == ',')
			s->state = is_object(s) ? ST_KEY : ST_VALUE;
		else if (c == ']' || c == '}')
			pop(s, c == '}');
		else if (!is_space(c))
			fail(s, JSON_SHAPE_BAD);
		return;
	case ST_STRING: /* only '"', '\\' and control characters come here */
		if (c == '"') {
			token_done(s);
			if (s->verdict == JSON_SHAPE_OK) {
				if (s->in_key)
					s->state = ST_COLON;
				else
					value_done(s);
			}
		} else if (c == '\\') {
			s->token++;
			s->cost++;
			s->state = ST_ESCAPE;
		} else
			fail(s, JSON_SHAPE_BAD);
		return;
	case ST_ESCAPE:
		s->token++;
		s->cost++;
		if (c == 'u') {
			s->sub = 4;
			s->state = ST_HEX;
		} else if (strchr("\"\\/bfnrt", c))
			s->state = ST_STRING;
		else
			fail(s, JSON_SHAPE_BAD);
		return;
	case ST_HEX:
		s->token++;
		s->cost++;
		if (!is_hex(c))
			fail(s, JSON_SHAPE_BAD);
		else if (--s->sub == 0)
			s->state = ST_STRING;
		return;
	case ST_NUM_MINUS:
	case ST_NUM_DOT:
	case ST_NUM_EXP_SIGN:
		/* A digit must follow. */
		if (!is_digit(c)) {
			fail(s, JSON_SHAPE_BAD);
			return;
		}
		s->state = s->state == ST_NUM_MINUS ? (c == '0' ? ST_NUM_ZERO : ST_NUM_INT)
			   : s->state == ST_NUM_DOT ? ST_NUM_FRAC
						      : ST_NUM_EXP_DIGITS;
		break;
	case ST_NUM_EXP:
		if (c == '+' || c == '-')
			s->state = ST_NUM_EXP_SIGN;
		else if (is_digit(c))
			s->state = ST_NUM_EXP_DIGITS;
		else {
			fail(s, JSON_SHAPE_BAD);
			return;
		}
		break;
	case ST_NUM_ZERO:
	case ST_NUM_INT:
	case ST_NUM_FRAC:
		if (is_digit(c) && s->state != ST_NUM_ZERO)
			break;
		if (c == '.' && s->state != ST_NUM_FRAC) {
			s->state = ST_NUM_DOT;
			break;
		}
		if (c == 'e' || c == 'E') {
			s->state = ST_NUM_EXP;
			break;
		}
		if (number_ends(s))
			goto again;
		return;
	case ST_NUM_EXP_DIGITS:
		if (is_digit(c))
			break;
		if (number_ends(s))
			goto again;
		return;
	case ST_LITERAL:
		literal_byte(s, c);
		return;
	case ST_END:
		if (!is_space(c))
			fail(s, JSON_SHAPE_BAD);
		return;
	}
	/* A byte of a number. */
	s->token++;
	s->cost++;
}

size_t json_shape_feed(struct json_shape *s, const char *data, size_t size)
{
	size_t i = 0;

	while (i < size) {
		if (s->state == ST_STOP)
			return i;
		if (s->state == ST_SKIP) {
			const char *nul = memchr(data + i, 0, size - i);
			size_t n = nul ? (size_t)(nul - data) : size;
			s->bytes += n - i;
			return n;
		}
		if (s->state == ST_STRING) {
			/* The common case, a run of plain string bytes, at memchr-like speed. */
			size_t j = i;
			while (j < size && (unsigned char)data[j] >= 0x20 && data[j] != '"' && data[j] != '\\')
				j++;
			s->token += j - i;
			s->cost += j - i;
			s->bytes += j - i;
			i = j;
			if (i == size)
				return i;
		}
		char c = data[i];
		if (c == '\0')
			return i;
		s->bytes++;
		i++;
		step(s, c);
	}
	return i;
}

enum json_shape_verdict json_shape_finish(struct json_shape *s)
{
	if (s->verdict != JSON_SHAPE_OK)
		return s->verdict;
	switch (s->state) {
	case ST_END:
		return JSON_SHAPE_OK;
	case ST_NUM_ZERO:
	case ST_NUM_INT:
	case ST_NUM_FRAC:
	case ST_NUM_EXP_DIGITS:
		if (s->depth == 0) { /* a bare number at the top */
			token_done(s);
			if (s->verdict == JSON_SHAPE_OK)
				s->state = ST_END;
			return s->verdict;
		}
		break;
	}
	fail(s, JSON_SHAPE_BAD);
	return s->verdict;
}

const char *json_shape_verdict_name(enum json_shape_verdict v)
{
	static const char *const names[] = {
		[JSON_SHAPE_OK] = "valid so far",
		[JSON_SHAPE_BAD] = "not JSON",
		[JSON_SHAPE_TOO_DEEP] = "nested too deep",
		[JSON_SHAPE_TOO_MANY] = "too many entries in one array or object",
		[JSON_SHAPE_TOO_COSTLY] = "too costly to parse for its size",
	};
	return (unsigned)v < sizeof(names) / sizeof(names[0]) ? names[v] : "?";
}
