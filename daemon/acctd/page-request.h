/* page-request.h - what acctd's page (docs/page.md) answers to one HTTP
 * request, decided from the request alone: no I/O, no server state. The
 * page is served by the /metrics endpoint's server (metrics-http.c), on the
 * same listener and within the same limits; this module routes its paths:
 *
 *   /             302 to /ui/
 *   /ui/...       the compiled-in assets (page-assets.h)
 *   /api/NAME     one read-only call of the varlink API (io.acctd.Accounting:
 *                 Status, List, Get, Usage, History), its query parameters
 *                 made into the call's parameters; the reply is the API's
 *                 own document, passed through (page-call.h)
 *
 * Read-only: GET and HEAD only (405 with Allow otherwise); no other method
 * of the API is reachable. Split out so that routing, the parameters'
 * checks and the reply's status code are unit-tested
 * (tests/test-page-request.c). */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "metrics-request.h" /* enum metrics_method */
#include "page-assets.h"

/* What every answer of the page carries: nothing may be loaded from
 * anywhere but acctd itself, no inline script or style, no framing. */
#define PAGE_CSP                                                                                               \
	"default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; "         \
	"base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

enum page_route {
	PAGE_NOT_MINE, /* not a path of the page: /metrics or a 404 of the metrics server */
	PAGE_REFUSE,   /* answer code, reason, body (text/plain) */
	PAGE_REDIRECT, /* 302 to location */
	PAGE_ASSET,    /* serve asset */
	PAGE_CALL,     /* make the varlink call `call` and pass its reply on */
};

#define PAGE_BODY_MAX 704 /* two words of 64 bytes, escaped (4 bytes each at most), and the text */

struct page_plan {
	enum page_route route;
	int code;           /* PAGE_REFUSE */
	const char *reason; /* static */
	char body[PAGE_BODY_MAX];
	bool allow;           /* 405: add Allow: GET, HEAD */
	const char *location; /* PAGE_REDIRECT, static */
	const struct page_asset *asset;
	char *call; /* PAGE_CALL: the call's JSON text (no NUL byte after it), owned: page_plan_done() */
};

/* Decide the answer to `method` on `path` with `query` (as evhttp_uri_get_path()
 * and evhttp_uri_get_query() give them; NULL: none). `now_us` is the
 * history's clock (history_now_us(): microseconds since the epoch): the
 * time parameters since_us and until_us take a negative value as relative
 * to it (-600000000: ten minutes ago). Parameters of /api/NAME (docs/page.md):
 *   list:    prefix, depth, include_dead
 *   get:     cgroup
 *   usage:   since_us, until_us, prefix, depth, include_removed, group_by_level
 *   history: cgroup, since_us, until_us, step_us
 * integers decimal, booleans true|false|1|0; an unknown parameter, a value
 * that does not parse or a relative time before the epoch is a 400 naming it
 * (escaped for a terminal: it is the client's text). The API checks the
 * rest (its error is passed on: page_reply_code()). An unknown /ui/ file or
 * /api/ name is a 404; running out of memory a 500. Always fills *ret;
 * release with page_plan_done(). */
void page_request_plan(enum metrics_method method, const char *path, const char *query, uint64_t now_us,
		       struct page_plan *ret);
void page_plan_done(struct page_plan *p);

/* The HTTP status of a varlink reply (one message, without its NUL):
 * 200 for a reply, else from its error: NoSuchCgroup 404,
 * InvalidParameter and InvalidCgroupPath 400, PermissionDenied 403,
 * ResourceLimitExceeded 429, HistoryUnavailable 503, anything else 500
 * (also a reply that is not a varlink message). *ret_reason: the status's
 * reason phrase (static). */
int page_reply_code(const char *reply, size_t len, const char **ret_reason);
