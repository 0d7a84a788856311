/* metrics-request.c - the /metrics endpoint's answer to a request, decided
 * from the request alone (see metrics-request.h), with the Accept and
 * Accept-Encoding negotiation it rests on. */
#include "metrics-request.h"

#include <errno.h>
#include <sys/queue.h> /* before keyvalq_struct.h */
#include <event2/http.h>
#include <event2/keyvalq_struct.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "basic/name-escape.h"
#include "basic/parse.h"
#include "basic/strv.h"
#include "basic/util.h"
#include "config/cgroup-glob.h"
#include "config/metrics-families.h"

#define ACCEPTED_FORMS                                                                                    \
	"accepted: format=text|prometheus|openmetrics, family=NAME[,NAME...], cgroup=GLOB[ GLOB...], "     \
	"max_depth=0..255\n"

/* Refuse with `code` and the text/plain `body`. */
static void refuse(struct metrics_plan *ret, int code, const char *reason, const char *body)
{
	ret->code = code;
	ret->reason = reason;
	snprintf(ret->body, sizeof(ret->body), "%s", body);
}

/* A 400 naming what was refused: `what`, then the request's `word` (cut to
 * METRICS_REFUSED_WORD_MAX bytes and escaped: it is the client's, and may
 * hold anything a terminal obeys) and `why` (static text; NULL: none), then
 * the accepted forms. */
static void refuse_query(struct metrics_plan *ret, const char *what, const char *word, const char *why)
{
	char escaped[4 * METRICS_REFUSED_WORD_MAX + 1];
	size_t n = strlen(word);
	size_t cut = utf8_boundary(word, n, METRICS_REFUSED_WORD_MAX);
	size_t len = name_escape_to(escaped, word, cut, NAME_ESCAPE_TEXT);
	escaped[len] = '\0';
	ret->code = 400;
	ret->reason = "Bad Request";
	snprintf(ret->body, sizeof(ret->body), "Bad query: %s '%s'%s%s%s%s; " ACCEPTED_FORMS, what, escaped,
		 cut < n ? "..." : "", why ? " (" : "", why ?: "", why ? ")" : "");
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

/* The blank-separated globs of one cgroup= value, normalised, onto
 * ret->cgroups. Returns 0, -EINVAL with *ret_bad (the glob, in v) and
 * *ret_why, -E2BIG with *ret_bad (past METRICS_CGROUP_GLOBS_MAX), or
 * -ENOMEM. */
static int apply_cgroup_param(char *v, struct metrics_plan *ret, size_t *n, const char **ret_bad,
			      const char **ret_why)
{
	size_t before = *n;

	for (char *save = NULL, *w = strtok_r(v, " \t", &save); w; w = strtok_r(NULL, " \t", &save)) {
		char *norm = NULL;
		if (*n >= METRICS_CGROUP_GLOBS_MAX) {
			*ret_bad = w;
			return -E2BIG;
		}
		int r = cgroup_glob_normalize(w, &norm, ret_why);
		if (r == -EINVAL)
			*ret_bad = w;
		if (r < 0)
			return r;
		r = strv_push(&ret->cgroups, n, norm);
		if (r < 0) {
			free(norm);
			return r;
		}
	}
	/* cgroup= with no glob in it: a mistake, not "everything" */
	if (*n == before) {
		*ret_bad = v;
		*ret_why = "no glob";
		return -EINVAL;
	}
	return 0;
}

/* A max_depth= value: a decimal 0..255, as the configuration key. */
static int parse_depth(const char *v)
{
	uint64_t d = 0;
	if (v[0] < '0' || v[0] > '9' || acct_parse_uint64(v, &d) < 0 || d > 255)
		return -EINVAL;
	return (int)d;
}

/* format=, family=, cgroup= and max_depth= of the query into ret. Returns
 * false for a bad query, which ret then refuses (refuse_query(), or 500 for
 * want of memory). */
static bool apply_query(const char *query, struct metrics_plan *ret)
{
	struct evkeyvalq params;
	bool family_seen = false, bad = false;
	size_t nr_globs = 0;

	TAILQ_INIT(&params);
	/* evhttp's own parser (it decodes %XX and '+'); it fails also for want
	 * of memory, which is then a 400 too. */
	if (evhttp_parse_query_str(query, &params) < 0) {
		refuse_query(ret, "cannot parse the query", query, NULL);
		bad = true;
	}
	for (struct evkeyval *kv = TAILQ_FIRST(&params); kv && !bad; kv = TAILQ_NEXT(kv, next)) {
		if (strcmp(kv->key, "format") == 0) {
			if (strcmp(kv->value, "text") == 0 || strcmp(kv->value, "prometheus") == 0)
				ret->format = ACCT_METRICS_TEXT;
			else if (strcmp(kv->value, "openmetrics") == 0)
				ret->format = ACCT_METRICS_OPENMETRICS;
			else {
				refuse_query(ret, "unknown format", kv->value, NULL);
				bad = true;
			}
		} else if (strcmp(kv->key, "family") == 0) {
			if (!family_seen)
				ret->families = 0;
			family_seen = true;
			const char *refused = "";
			int r = apply_family_param(kv->value, &ret->families, &refused);
			if (r < 0) {
				/* the groups a word may name: a Prometheus family's
				 * name is not one (the new-user trial tried one) */
				char names[256], why[300];
				snprintf(why, sizeof(why), "family= takes these groups: %s",
					 acct_metrics_family_names(names, sizeof(names)));
				refuse_query(ret, r == -E2BIG ? "too many family words, from" : "unknown family",
					     refused, r == -E2BIG ? NULL : why);
				bad = true;
			}
		} else if (strcmp(kv->key, "cgroup") == 0) {
			const char *refused = "", *why = NULL;
			int r = apply_cgroup_param(kv->value, ret, &nr_globs, &refused, &why);
			if (r == -ENOMEM)
				refuse(ret, 500, "Internal Server Error", "Out of memory.\n");
			else if (r == -E2BIG)
				refuse_query(ret, "too many cgroup globs (at most 64), from", refused, NULL);
			else if (r < 0)
				refuse_query(ret, "bad cgroup glob", refused, why);
			bad = r < 0;
		} else if (strcmp(kv->key, "max_depth") == 0) {
			ret->max_depth = parse_depth(kv->value);
			if (ret->max_depth < 0) {
				refuse_query(ret, "bad max_depth", kv->value, "expected 0..255");
				bad = true;
			}
		}
	}
	if (bad)
		metrics_plan_done(ret);
	evhttp_clear_headers(&params);
	return !bad;
}

/* ---- content negotiation ------------------------------------------------------- */

static const char *skip_ws(const char *s, const char *end)
{
	while (s < end && (*s == ' ' || *s == '\t'))
		s++;
	return s;
}

static bool token_eq(const char *s, size_t n, const char *lit)
{
	return n == strlen(lit) && strncasecmp(s, lit, n) == 0;
}

/* One element of a comma-separated header: the value before ';' (trimmed)
 * and its q and version parameters. */
struct hdr_elem {
	const char *v;
	size_t vlen;
	double q;
	const char *version;
	size_t version_len;
};

static const char *next_elem(const char *s, struct hdr_elem *e)
{
	const char *end = s + strcspn(s, ",");
	const char *p = skip_ws(s, end);
	const char *semi = memchr(p, ';', (size_t)(end - p));
	const char *vend = semi ? semi : end;

	while (vend > p && (vend[-1] == ' ' || vend[-1] == '\t'))
		vend--;
	*e = (struct hdr_elem){ .v = p, .vlen = (size_t)(vend - p), .q = 1.0 };
	for (const char *q = semi; q && q < end;) {
		const char *pend = memchr(q + 1, ';', (size_t)(end - q - 1));
		if (!pend)
			pend = end;
		const char *k = skip_ws(q + 1, pend);
		const char *eq = memchr(k, '=', (size_t)(pend - k));
		if (eq) {
			size_t klen = (size_t)(eq - k);
			while (klen && (k[klen - 1] == ' ' || k[klen - 1] == '\t'))
				klen--;
			const char *val = skip_ws(eq + 1, pend);
			const char *vend2 = pend;
			while (vend2 > val && (vend2[-1] == ' ' || vend2[-1] == '\t'))
				vend2--;
			if (vend2 - val >= 2 && val[0] == '"' && vend2[-1] == '"')
				val++, vend2--;
			if (token_eq(k, klen, "q")) {
				char buf[16];
				size_t n = MIN((size_t)(vend2 - val), sizeof(buf) - 1);
				memcpy(buf, val, n);
				buf[n] = '\0';
				char *ep;
				double qv = strtod(buf, &ep);
				e->q = ep == buf || !(qv >= 0) ? 0 : qv > 1 ? 1 : qv;
			} else if (token_eq(k, klen, "version")) {
				e->version = val;
				e->version_len = (size_t)(vend2 - val);
			}
		}
		q = pend < end ? pend : NULL;
	}
	return *end ? end + 1 : end;
}

enum acct_metrics_format metrics_negotiate_format(const char *accept)
{
	double q_om = 0, q_text = 0;

	if (!accept)
		return ACCT_METRICS_TEXT;
	for (const char *s = accept; *s;) {
		struct hdr_elem e;
		s = next_elem(s, &e);
		if (token_eq(e.v, e.vlen, "application/openmetrics-text")) {
			if (!e.version || token_eq(e.version, e.version_len, "1.0.0") ||
			    token_eq(e.version, e.version_len, "0.0.1"))
				q_om = MAX(q_om, e.q);
		} else if (token_eq(e.v, e.vlen, "text/plain")) {
			if (!e.version || token_eq(e.version, e.version_len, "0.0.4"))
				q_text = MAX(q_text, e.q);
		} else if (token_eq(e.v, e.vlen, "text/*") || token_eq(e.v, e.vlen, "*/*"))
			q_text = MAX(q_text, e.q);
	}
	return q_om > 0 && q_om >= q_text ? ACCT_METRICS_OPENMETRICS : ACCT_METRICS_TEXT;
}

bool metrics_accepts_gzip(const char *accept_encoding)
{
	double q_gzip = -1, q_any = -1;

	if (!accept_encoding)
		return false;
	for (const char *s = accept_encoding; *s;) {
		struct hdr_elem e;
		s = next_elem(s, &e);
		if (token_eq(e.v, e.vlen, "gzip") || token_eq(e.v, e.vlen, "x-gzip"))
			q_gzip = MAX(q_gzip, e.q);
		else if (token_eq(e.v, e.vlen, "*"))
			q_any = MAX(q_any, e.q);
	}
	return q_gzip >= 0 ? q_gzip > 0 : q_any > 0;
}

/* ---- the plan ------------------------------------------------------------------ */

void metrics_request_plan(const struct metrics_request *rq, uint32_t default_families, struct metrics_plan *ret)
{
	*ret = (struct metrics_plan){
		.code = 200,
		.close = rq->major < 1 || (rq->major == 1 && rq->minor == 0),
		.format = ACCT_METRICS_TEXT,
		.families = default_families,
		.max_depth = -1,
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
	ret->format = metrics_negotiate_format(rq->accept);
	if (rq->query && !apply_query(rq->query, ret))
		return;
	ret->gzip = metrics_accepts_gzip(rq->accept_encoding);
}

void metrics_plan_done(struct metrics_plan *p)
{
	p->cgroups = strv_free(p->cgroups);
	p->max_depth = -1;
}
