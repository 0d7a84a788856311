/* metrics-request.h - what the /metrics endpoint answers to one HTTP request,
 * decided from the request alone: no I/O, no server state, no libevent
 * request object. The path and method checks, the query parameters
 * (format=, family=, and the selection cgroup= and max_depth=), the content negotiation (Accept, Accept-Encoding) and
 * Connection: close for HTTP/1.0. metrics-http.c fills struct
 * metrics_request from evhttp's parse of the request, applies the plan, and
 * adds what depends on the server's state (the scrape limits: 503). Split out
 * so that it can be unit-tested and fuzzed (tests/test-metrics-request.c,
 * tests/fuzz/fuzz-metrics-request.c). */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "format/metrics-render.h"

enum metrics_method {
	METRICS_METHOD_GET,
	METRICS_METHOD_HEAD,
	METRICS_METHOD_OTHER,
};

struct metrics_request {
	enum metrics_method method;
	int major, minor;            /* the HTTP version */
	const char *path;            /* as evhttp_uri_get_path() has it; NULL: none */
	const char *query;           /* as evhttp_uri_get_query() has it; NULL: none */
	const char *accept;          /* the Accept header's value; NULL: absent */
	const char *accept_encoding; /* the Accept-Encoding header's value; NULL: absent */
};

/* The longest text of a 400's body: what was refused (cut to
 * METRICS_REFUSED_WORD_MAX bytes of the request, escaped) and the accepted
 * forms. */
#define METRICS_REFUSED_WORD_MAX 64
#define METRICS_BODY_MAX (4 * METRICS_REFUSED_WORD_MAX + 576)
/* At most this many cgroup= globs in one request (all values together). */
#define METRICS_CGROUP_GLOBS_MAX 64

struct metrics_plan {
	/* 200: serve the page (GET) or its headers (HEAD), as below. Otherwise
	 * answer `code` with `reason` (static) and the text/plain `body`. */
	int code;
	const char *reason;
	char body[METRICS_BODY_MAX];
	bool close; /* HTTP/1.0 or older: add Connection: close (no chunked encoding) */
	bool allow; /* 405: add Allow: GET, HEAD */
	/* What the page is, for 200: */
	enum acct_metrics_format format; /* format= in the query, else the Accept header's choice */
	uint32_t families;               /* family= in the query (replacing the default), else the default */
	bool gzip;                       /* Accept-Encoding allows gzip */
	/* The request's selection of cgroups (docs/metrics.md, "Selection"):
	 * the cgroup= globs, normalised as the include key's
	 * (cgroup-glob.h), owned by the plan (metrics_plan_done()); NULL:
	 * none. max_depth=; -1: none. */
	char **cgroups;
	int max_depth;
};

/* Whether the plan selects cgroups itself (cgroup= or max_depth=): its page
 * shows what it asked for, and no [metrics] max_series cut applies. */
static inline bool metrics_plan_selects(const struct metrics_plan *p)
{
	return p->cgroups || p->max_depth >= 0;
}

/* Decide the answer to rq; `default_families` is the configured set. In
 * order: a path other than "/metrics" (exactly; NULL included) is 404, a
 * method other than GET and HEAD 405, a query that does not parse or has a
 * format= other than text, prometheus or openmetrics, a family= word that
 * acct_metrics_families_apply() refuses, a cgroup= glob that
 * cgroup_glob_normalize() refuses (or more than METRICS_CGROUP_GLOBS_MAX of
 * them), or a max_depth= that is not a decimal 0..255, 400, whose body names
 * what was refused (the request's own word, cut and escaped for a terminal
 * as name_escape() does, and for a glob why) and shows the accepted forms;
 * running out of memory is 500; everything else is 200. Parameters other
 * than these are ignored; of several format= or max_depth=, the last
 * counts; several family= add up, and so do several cgroup= (each a
 * blank-separated list, as the include key). Always fills *ret; release it
 * with metrics_plan_done(). */
void metrics_request_plan(const struct metrics_request *rq, uint32_t default_families, struct metrics_plan *ret);

/* Free what the plan owns (its globs); the plan stays valid, selecting
 * nothing. */
void metrics_plan_done(struct metrics_plan *p);

/* Content negotiation. Which format an Accept header asks for: OpenMetrics
 * when it accepts application/openmetrics-text (version 1.0.0 or none) with a
 * q at least that of text/plain (or a wildcard); text otherwise (also for a
 * missing or unparsable header). */
enum acct_metrics_format metrics_negotiate_format(const char *accept);
/* Whether an Accept-Encoding header allows gzip (gzip or * with q > 0). */
bool metrics_accepts_gzip(const char *accept_encoding);
