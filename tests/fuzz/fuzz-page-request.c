/* fuzz-page-request.c - libFuzzer target: the page's answer to a request
 * (daemon/acctd/page-request.h) and the status of a varlink reply.
 *
 * Input: the first byte picks the method (GET, HEAD, other), the rest up to
 * the first LF is the request target as evhttp_uri_parse_with_flags() with
 * EVHTTP_URI_NONCONFORMANT cuts it (path and query, exact-size copies); the
 * bytes after the LF are a varlink reply for page_reply_code(). Beyond "no
 * crash" the target checks what the module promises:
 *   - the page's paths are exactly "/", "/ui", "/ui/..." and "/api/...";
 *     anything else is not its (PAGE_NOT_MINE);
 *   - on its paths a method other than GET and HEAD is 405 with Allow;
 *   - an asset is one of the compiled-in table's, at the path asked for;
 *   - a call is a JSON object whose method is one of the five read-only
 *     ones (Status, List, Get, Usage, History) and whose parameters are an
 *     object; a refusal is 400, 404 or 500 with a body that ends in a
 *     newline and has no other control character (the client's text is
 *     escaped); page_plan_done() releases the call (LeakSanitizer);
 *   - the same request gives the same answer;
 *   - page_reply_code() answers one of its codes with a reason.
 *
 * Built by meson with -Dfuzz=true (clang); make check-fuzz and make fuzz run
 * it (tests/fuzz/run-fuzz.sh), from a copy of tests/fuzz/corpus/page-request. */
#include <json-c/json.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/http.h>

#include "page-request.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define NOW_US 1800000000000000ull

static void check(bool ok, const char *what)
{
	if (!ok) {
		fprintf(stderr, "invariant broken: %s\n", what);
		abort();
	}
}

static char *copy(const char *s)
{
	if (!s)
		return NULL;
	char *c = strdup(s);
	check(c != NULL, "strdup");
	return c;
}

static bool is_mine(const char *path)
{
	return strcmp(path, "/") == 0 || strcmp(path, "/ui") == 0 || strncmp(path, "/ui/", 4) == 0 ||
	       strncmp(path, "/api/", 5) == 0;
}

static void check_call(const char *text)
{
	static const char *const methods[] = { "Status", "List", "Get", "Usage", "History" };
	struct json_object *o = json_tokener_parse(text), *m = NULL, *p = NULL;
	check(o && json_object_is_type(o, json_type_object), "a call is a JSON object");
	check(json_object_object_get_ex(o, "method", &m) && json_object_is_type(m, json_type_string), "a method");
	check(json_object_object_get_ex(o, "parameters", &p) && json_object_is_type(p, json_type_object),
	      "parameters");
	const char *name = json_object_get_string(m);
	bool known = false;
	for (size_t i = 0; i < sizeof(methods) / sizeof(methods[0]); i++) {
		char full[64];
		snprintf(full, sizeof(full), "io.acctd.Accounting.%s", methods[i]);
		known |= strcmp(name, full) == 0;
	}
	check(known, "only a read-only method is called");
	json_object_put(o);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1 || size > 16 * 1024)
		return 0;
	const char *p = (const char *)data + 1, *end = (const char *)data + size;
	const char *nl = memchr(p, '\n', (size_t)(end - p));
	size_t tlen = (size_t)((nl ? nl : end) - p);
	enum metrics_method method = data[0] % 3 == 0 ? METRICS_METHOD_GET
				     : data[0] % 3 == 1 ? METRICS_METHOD_HEAD : METRICS_METHOD_OTHER;

	char *target = malloc(tlen + 1);
	check(target != NULL, "malloc");
	memcpy(target, p, tlen);
	target[tlen] = '\0';
	struct evhttp_uri *uri = memchr(target, 0, tlen) ? NULL : evhttp_uri_parse_with_flags(target, EVHTTP_URI_NONCONFORMANT);
	free(target);
	if (uri) {
		char *path = copy(evhttp_uri_get_path(uri)), *query = copy(evhttp_uri_get_query(uri));
		struct page_plan a, b;
		page_request_plan(method, path, query, NOW_US, &a);
		page_request_plan(method, path, query, NOW_US, &b);
		check(a.route == b.route && a.code == b.code, "the same request, the same answer");
		check((a.route != PAGE_NOT_MINE) == (path && is_mine(path)), "the page's paths exactly");
		if (a.route != PAGE_NOT_MINE && method == METRICS_METHOD_OTHER)
			check(a.route == PAGE_REFUSE && a.code == 405 && a.allow, "read-only: 405 with Allow");
		if (a.route == PAGE_ASSET)
			check(strcmp(a.asset->path, path) == 0 && a.asset->size > 0, "the asset asked for");
		if (a.route == PAGE_CALL) {
			check(a.call && b.call && strcmp(a.call, b.call) == 0, "the same call");
			check_call(a.call);
		}
		if (a.route == PAGE_REFUSE) {
			size_t n = strlen(a.body);
			check(a.code == 400 || a.code == 404 || a.code == 405 || a.code == 500, "a refusal's code");
			check(n > 0 && a.body[n - 1] == '\n', "a body ends in a newline");
			for (size_t i = 0; i + 1 < n; i++)
				check((unsigned char)a.body[i] >= 0x20 && a.body[i] != 0x7f, "no control character");
		}
		page_plan_done(&a);
		page_plan_done(&b);
		check(a.call == NULL, "page_plan_done() releases the call");
		free(path);
		free(query);
		evhttp_uri_free(uri);
	}
	if (nl) {
		size_t rlen = (size_t)(end - nl - 1);
		char *reply = malloc(rlen ? rlen : 1);
		check(reply != NULL, "malloc");
		memcpy(reply, nl + 1, rlen);
		const char *reason = NULL;
		int code = page_reply_code(reply, rlen, &reason);
		check(reason != NULL, "a reason");
		check(code == 200 || code == 400 || code == 403 || code == 404 || code == 429 || code == 500 ||
		      code == 503, "one of the reply codes");
		free(reply);
	}
	return 0;
}
