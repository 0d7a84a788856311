/* metrics-request.c - the /metrics endpoint's answer to a request, decided
 * from the request alone (see metrics-request.h). */
#include "metrics-request.h"

#include <errno.h>
#include <sys/queue.h> /* before keyvalq_struct.h */
#include <event2/http.h>
#include <event2/keyvalq_struct.h>
#include <string.h>

#include "metrics-families.h"
#include "name-escape.h"
#include "util.h"

#define ACCEPTED_FORMS "accepted: format=text|prometheus|openmetrics, family=NAME[,NAME...]\n"

/* Refuse with `code` and the text/plain `body`. */
static void refuse(struct metrics_plan *ret, int code, const char *reason, const char *body)
{
	ret->code = code;
	ret->reason = reason;
	snprintf(ret->body, sizeof(ret->body), "%s", body);
}

/* A 400 naming what was refused: `what`, then the request's `word` (cut to
 * METRICS_REFUSED_WORD_MAX bytes and escaped: it is the client's, and may
 * hold anything a terminal obeys), then the accepted forms. */
static void refuse_query(struct metrics_plan *ret, const char *what, const char *word)
{
	char escaped[4 * METRICS_REFUSED_WORD_MAX + 1];
	size_t n = strlen(word);
	size_t cut = utf8_boundary(word, n, METRICS_REFUSED_WORD_MAX);
	size_t len = name_escape_to(escaped, word, cut, NAME_ESCAPE_TEXT);
	escaped[len] = '\0';
	ret->code = 400;
	ret->reason = "Bad Request";
	snprintf(ret->body, sizeof(ret->body), "Bad query: %s '%s'%s; " ACCEPTED_FORMS, what, escaped,
		 cut < n ? "..." : "");
}

/* Split "a,b c" into words (in place) and apply them to *families;
 * *ret_bad: the word refused. */
static int apply_family_param(char *v, uint32_t *families, const char **ret_bad)
{
	char *words[2 * _ACCT_MF_MAX + 8];
	size_t n = 0;
	for (char *save = NULL, *w = strtok_r(v, ", ", &save); w; w = strtok_r(NULL, ", ", &save)) {
		if (n + 1 >= ELEMENTSOF(words)) {
			*ret_bad = w;
			return -E2BIG;
		}
		words[n++] = w;
	}
	words[n] = NULL;
	return acct_metrics_families_apply(families, words, ret_bad);
}

/* format= and family= of the query into ret. Returns false for a bad query,
 * which ret then refuses (refuse_query()). */
static bool apply_query(const char *query, struct metrics_plan *ret)
{
	struct evkeyvalq params;
	bool family_seen = false, bad = false;

	TAILQ_INIT(&params);
	/* evhttp's own parser (it decodes %XX and '+'); it fails also for want
	 * of memory, which is then a 400 too. */
	if (evhttp_parse_query_str(query, &params) < 0) {
		refuse_query(ret, "cannot parse the query", query);
		bad = true;
	}
	for (struct evkeyval *kv = TAILQ_FIRST(&params); kv && !bad; kv = TAILQ_NEXT(kv, next)) {
		if (strcmp(kv->key, "format") == 0) {
			if (strcmp(kv->value, "text") == 0 || strcmp(kv->value, "prometheus") == 0)
				ret->format = ACCT_METRICS_TEXT;
			else if (strcmp(kv->value, "openmetrics") == 0)
				ret->format = ACCT_METRICS_OPENMETRICS;
			else {
				refuse_query(ret, "unknown format", kv->value);
				bad = true;
			}
		} else if (strcmp(kv->key, "family") == 0) {
			if (!family_seen)
				ret->families = 0;
			family_seen = true;
			const char *refused = "";
			int r = apply_family_param(kv->value, &ret->families, &refused);
			if (r < 0) {
				refuse_query(ret, r == -E2BIG ? "too many family words, from" : "unknown family",
					     refused);
				bad = true;
			}
		}
	}
	evhttp_clear_headers(&params);
	return !bad;
}

void metrics_request_plan(const struct metrics_request *rq, uint32_t default_families, struct metrics_plan *ret)
{
	*ret = (struct metrics_plan){
		.code = 200,
		.close = rq->major < 1 || (rq->major == 1 && rq->minor == 0),
		.format = ACCT_METRICS_TEXT,
		.families = default_families,
	};
	if (!rq->path || strcmp(rq->path, "/metrics") != 0) {
		refuse(ret, 404, "Not Found", "Not found: metrics are at /metrics\n");
		return;
	}
	if (rq->method != METRICS_METHOD_GET && rq->method != METRICS_METHOD_HEAD) {
		ret->allow = true;
		refuse(ret, 405, "Method Not Allowed", "Method not allowed: use GET or HEAD\n");
		return;
	}
	ret->format = acct_metrics_negotiate_format(rq->accept);
	if (rq->query && !apply_query(rq->query, ret))
		return;
	ret->gzip = acct_metrics_accepts_gzip(rq->accept_encoding);
}
