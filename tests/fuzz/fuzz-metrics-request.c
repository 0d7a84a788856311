/* fuzz-metrics-request.c - libFuzzer target: a /metrics HTTP request, from its
 * bytes to what the endpoint answers (daemon/acctd/metrics-request.h), with
 * the content negotiation of lib/format/metrics-render.h.
 *
 * Input: an HTTP request as a client sends it (request line, headers, an
 * empty line). The request line is cut as evhttp cuts it (METHOD SP TARGET
 * SP HTTP/MAJOR.MINOR), the target parsed with evhttp_uri_parse_with_flags()
 * and EVHTTP_URI_NONCONFORMANT as evhttp does, the headers looked up as
 * evhttp_find_header() does (the first of that name, any case). Every string
 * handed over is an exact-size copy, so that AddressSanitizer sees a read past
 * its end. The tokenizing of the request itself is libevent's in the daemon
 * and is not what this target is about. Beyond "no crash" the target checks
 * what the module promises:
 *   - 404 exactly when the path is not "/metrics", else 405 exactly when the
 *     method is neither GET nor HEAD (with Allow), else 200 or 400 (400 only
 *     for a query); a refusal has a reason and a body ending in a newline;
 *   - Connection: close exactly for HTTP/1.0 and older;
 *   - without a query the page is the Accept header's format, the default
 *     families, gzip as Accept-Encoding allows; without format= in the query
 *     the format is still the Accept header's, without family= the families
 *     are the default; families stay within the known set;
 *   - the selection: without cgroup= no globs, without max_depth= no depth
 *     (-1); a served plan's globs are at most METRICS_CGROUP_GLOBS_MAX, each
 *     in normal form (cgroup_glob_normalize() gives it back unchanged) and
 *     free of control characters, its depth 0..255; a refused plan selects
 *     nothing; metrics_plan_done() releases the globs (LeakSanitizer);
 *   - the same request gives the same plan.
 *
 * Built by meson with -Dfuzz=true (clang); make check-fuzz and make fuzz run
 * it (tests/fuzz/run-fuzz.sh), from a copy of tests/fuzz/corpus/metrics-request. */
#include <ctype.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <event2/http.h>

#include "cgroup-glob.h"
#include "metrics-families.h"
#include "metrics-request.h"
#include "util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(bool ok, const char *what)
{
	if (!ok) {
		fprintf(stderr, "invariant broken: %s\n", what);
		abort();
	}
}

/* An exact-size NUL-terminated copy of s[0..n); NULL for NULL. */
static char *copy(const char *s, size_t n)
{
	if (!s)
		return NULL;
	char *c = malloc(n + 1);
	check(c != NULL, "malloc");
	memcpy(c, s, n);
	c[n] = '\0';
	return c;
}

/* The next line of [*p, end) without its LF (and CR), advancing *p. */
static bool next_line(const char **p, const char *end, const char **line, size_t *len)
{
	if (*p >= end)
		return false;
	const char *nl = memchr(*p, '\n', (size_t)(end - *p));
	const char *e = nl ? nl : end;
	*line = *p;
	*len = (size_t)(e - *p);
	if (*len && (*line)[*len - 1] == '\r')
		(*len)--;
	*p = nl ? nl + 1 : end;
	return true;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *p = (const char *)data, *end = p + size, *line;
	size_t len;

	if (size > 16 * 1024 || memchr(data, 0, size)) /* evhttp ends a line at a NUL; not a request */
		return 0;
	if (!next_line(&p, end, &line, &len))
		return 0;
	/* METHOD SP TARGET SP VERSION */
	const char *sp1 = memchr(line, ' ', len);
	if (!sp1)
		return 0;
	const char *target = sp1 + 1;
	const char *sp2 = memchr(target, ' ', len - (size_t)(target - line));
	if (!sp2)
		return 0;
	size_t mlen = (size_t)(sp1 - line);
	struct metrics_request rq = { .method = METRICS_METHOD_OTHER };
	if (mlen == 3 && memcmp(line, "GET", 3) == 0)
		rq.method = METRICS_METHOD_GET;
	else if (mlen == 4 && memcmp(line, "HEAD", 4) == 0)
		rq.method = METRICS_METHOD_HEAD;
	char *version = copy(sp2 + 1, len - (size_t)(sp2 + 1 - line));
	int n = sscanf(version, "HTTP/%d.%d", &rq.major, &rq.minor);
	free(version);
	if (n != 2)
		return 0; /* evhttp answers 400 itself */

	char *target_s = copy(target, (size_t)(sp2 - target));
	struct evhttp_uri *uri = evhttp_uri_parse_with_flags(target_s, EVHTTP_URI_NONCONFORMANT);
	const char *path = uri ? evhttp_uri_get_path(uri) : NULL;
	const char *query = uri ? evhttp_uri_get_query(uri) : NULL;
	char *path_c = path ? copy(path, strlen(path)) : NULL, *query_c = query ? copy(query, strlen(query)) : NULL;
	rq.path = path_c;
	rq.query = query_c;

	/* Headers: the first Accept and Accept-Encoding. */
	char *accept = NULL, *encoding = NULL;
	while (next_line(&p, end, &line, &len) && len > 0) {
		const char *colon = memchr(line, ':', len);
		if (!colon)
			continue;
		size_t nlen = (size_t)(colon - line);
		const char *v = colon + 1;
		size_t vlen = len - nlen - 1;
		while (vlen && (*v == ' ' || *v == '\t'))
			v++, vlen--;
		while (vlen && (v[vlen - 1] == ' ' || v[vlen - 1] == '\t'))
			vlen--;
		if (nlen == 6 && strncasecmp(line, "Accept", 6) == 0 && !accept)
			accept = copy(v, vlen);
		else if (nlen == 15 && strncasecmp(line, "Accept-Encoding", 15) == 0 && !encoding)
			encoding = copy(v, vlen);
	}
	rq.accept = accept;
	rq.accept_encoding = encoding;

	struct metrics_plan plan, again;
	metrics_request_plan(&rq, ACCT_METRICS_FAMILIES_DEFAULT, &plan);
	metrics_request_plan(&rq, ACCT_METRICS_FAMILIES_DEFAULT, &again);
	check(plan.code == again.code && plan.reason == again.reason && strcmp(plan.body, again.body) == 0 &&
		      plan.close == again.close && plan.allow == again.allow && plan.format == again.format &&
		      plan.families == again.families && plan.gzip == again.gzip && plan.max_depth == again.max_depth &&
		      !plan.cgroups == !again.cgroups,
	      "the same request, the same plan");
	for (size_t i = 0; plan.cgroups && (plan.cgroups[i] || again.cgroups[i]); i++)
		check(plan.cgroups[i] && again.cgroups[i] && strcmp(plan.cgroups[i], again.cgroups[i]) == 0,
		      "the same request, the same globs");
	metrics_plan_done(&again);

	enum acct_metrics_format negotiated = metrics_negotiate_format(accept);
	check(negotiated == ACCT_METRICS_TEXT || negotiated == ACCT_METRICS_OPENMETRICS, "negotiated format");
	bool gzip = metrics_accepts_gzip(encoding);

	check(plan.close == (rq.major < 1 || (rq.major == 1 && rq.minor == 0)), "Connection: close for HTTP/1.0");
	bool is_metrics = path && strcmp(path, "/metrics") == 0;
	check((plan.code == 404) == !is_metrics, "404 exactly for another path");
	if (is_metrics)
		check((plan.code == 405) == (rq.method == METRICS_METHOD_OTHER), "405 exactly for another method");
	check(plan.allow == (plan.code == 405), "Allow with 405");
	check(plan.code == 200 || plan.code == 400 || plan.code == 404 || plan.code == 405 || plan.code == 500,
	      "codes");
	check(plan.code == 200 || (!plan.cgroups && plan.max_depth == -1), "a refusal selects nothing");
	check(plan.max_depth >= -1 && plan.max_depth <= 255, "max_depth -1..255");
	if (!query || !strstr(query, "cgroup"))
		check(!plan.cgroups, "no globs without cgroup=");
	if (!query || !strstr(query, "max_depth"))
		check(plan.max_depth == -1, "no depth without max_depth=");
	size_t nr_globs = 0;
	for (char **g = plan.cgroups; g && *g; g++, nr_globs++) {
		char *again_g = NULL;
		check(cgroup_glob_normalize(*g, &again_g, NULL) == 0 && strcmp(again_g, *g) == 0,
		      "a glob in normal form");
		free(again_g);
		check((*g)[0] == '/' || (*g)[0] == '*', "a glob starts with / or *");
		for (const char *c = *g; *c; c++)
			check((unsigned char)*c >= 0x20 && *c != 0x7f, "no control character in a glob");
	}
	check(nr_globs <= METRICS_CGROUP_GLOBS_MAX, "at most METRICS_CGROUP_GLOBS_MAX globs");
	check(!plan.cgroups || nr_globs > 0, "no empty list of globs");
	if (plan.code == 400)
		check(query != NULL, "400 only for a query");
	if (plan.code != 200) {
		check(plan.reason && strlen(plan.body) > 0 && plan.body[strlen(plan.body) - 1] == '\n',
		      "a refusal has a reason and a body");
		for (size_t i = 0; plan.code == 400 && i + 1 < strlen(plan.body); i++)
			check((unsigned char)plan.body[i] >= 0x20 && plan.body[i] != 0x7f,
			      "a 400 names what it refused with no control character of the request's");
	} else {
		check((plan.families & ~ACCT_METRICS_FAMILIES_ALL) == 0, "known families only");
		check(plan.gzip == gzip, "gzip as Accept-Encoding allows");
		if (!query || !strstr(query, "format"))
			check(plan.format == negotiated, "the Accept header's format without format=");
		if (!query || !strstr(query, "family"))
			check(plan.families == ACCT_METRICS_FAMILIES_DEFAULT, "the default families without family=");
	}

	metrics_plan_done(&plan);
	check(!plan.cgroups, "metrics_plan_done() releases the globs");
	free(accept);
	free(encoding);
	free(path_c);
	free(query_c);
	if (uri)
		evhttp_uri_free(uri);
	free(target_s);
	return 0;
}
