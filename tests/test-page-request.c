/* test-page-request.c - unit tests of the page's routing
 * (daemon/acctd/page-request.h): which paths are the page's, the
 * compiled-in assets, the read-only API calls made of query parameters
 * (their types, relative times, refusals escaped), and the HTTP status of a
 * varlink reply. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>
#include <json-c/json.h>

#include "page-request.h"

#define NOW_US 1800000000000000ull

static struct page_plan plan(enum metrics_method method, const char *path, const char *query)
{
	struct page_plan p;
	memset(&p, 0x5a, sizeof(p));
	page_request_plan(method, path, query, NOW_US, &p);
	return p;
}

/* GET path?query as a call: its method and parameters (parsed). */
static struct json_object *call(const char *path, const char *query, const char **ret_method)
{
	struct page_plan p = plan(METRICS_METHOD_GET, path, query);
	assert_int_equal(p.route, PAGE_CALL);
	assert_non_null(p.call);
	struct json_object *o = json_tokener_parse(p.call), *m = NULL, *params = NULL;
	page_plan_done(&p);
	assert_null(p.call);
	assert_non_null(o);
	assert_true(json_object_object_get_ex(o, "method", &m));
	assert_true(json_object_object_get_ex(o, "parameters", &params));
	*ret_method = json_object_get_string(m);
	return o;
}

static struct json_object *params_of(struct json_object *o)
{
	struct json_object *p = NULL;
	json_object_object_get_ex(o, "parameters", &p);
	return p;
}

static void test_not_mine(void **state)
{
	const char *paths[] = { "/metrics", "/favicon.ico", "/uix", "/apis", "", "/api", NULL };
	for (size_t i = 0; paths[i]; i++)
		assert_int_equal(plan(METRICS_METHOD_GET, paths[i], NULL).route, PAGE_NOT_MINE);
	assert_int_equal(plan(METRICS_METHOD_GET, NULL, NULL).route, PAGE_NOT_MINE);
}

static void test_assets(void **state)
{
	struct page_plan p = plan(METRICS_METHOD_GET, "/", NULL);
	assert_int_equal(p.route, PAGE_REDIRECT);
	assert_string_equal(p.location, "/ui/");
	assert_int_equal(plan(METRICS_METHOD_HEAD, "/ui", NULL).route, PAGE_REDIRECT);

	const char *files[][2] = { { "/ui/", "text/html" }, { "/ui/page.js", "text/javascript" },
				   { "/ui/page.css", "text/css" } };
	for (size_t i = 0; i < 3; i++) {
		p = plan(METRICS_METHOD_GET, files[i][0], "x=1");
		assert_int_equal(p.route, PAGE_ASSET);
		assert_string_equal(p.asset->path, files[i][0]);
		assert_true(strncmp(p.asset->content_type, files[i][1], strlen(files[i][1])) == 0);
		assert_true(p.asset->size > 0 && p.asset->data[p.asset->size] == 0);
		assert_true(p.asset->etag[0] == '"' && p.asset->etag[strlen(p.asset->etag) - 1] == '"');
	}
	p = plan(METRICS_METHOD_GET, "/ui/../metrics", NULL);
	assert_int_equal(p.route, PAGE_REFUSE);
	assert_int_equal(p.code, 404);
	/* the page's markup loads nothing from elsewhere */
	p = plan(METRICS_METHOD_GET, "/ui/", NULL);
	assert_null(strstr((const char *)p.asset->data, "http:"));
	assert_null(strstr((const char *)p.asset->data, "https:"));
	assert_null(strstr((const char *)p.asset->data, "<script>"));
	assert_null(strstr((const char *)p.asset->data, "style="));
}

static void test_read_only(void **state)
{
	const char *paths[] = { "/", "/ui/", "/ui/page.js", "/api/status", "/api/nothing", NULL };
	for (size_t i = 0; paths[i]; i++) {
		struct page_plan p = plan(METRICS_METHOD_OTHER, paths[i], NULL);
		assert_int_equal(p.route, PAGE_REFUSE);
		assert_int_equal(p.code, 405);
		assert_true(p.allow);
	}
	/* only the read-only methods have endpoints */
	const char *changes[] = { "/api/tune", "/api/reload", "/api/reconcile", "/api/watch", "/api/compare", NULL };
	for (size_t i = 0; changes[i]; i++) {
		struct page_plan p = plan(METRICS_METHOD_GET, changes[i], NULL);
		assert_int_equal(p.route, PAGE_REFUSE);
		assert_int_equal(p.code, 404);
	}
}

static void test_calls(void **state)
{
	const char *m = NULL;
	struct json_object *o = call("/api/status", NULL, &m);
	assert_string_equal(m, "io.acctd.Accounting.Status");
	assert_int_equal(json_object_object_length(params_of(o)), 0);
	json_object_put(o);

	o = call("/api/list", "prefix=%2Fa%20b&depth=2&include_dead=true", &m);
	assert_string_equal(m, "io.acctd.Accounting.List");
	struct json_object *p = params_of(o), *v = NULL;
	assert_true(json_object_object_get_ex(p, "prefix", &v));
	assert_string_equal(json_object_get_string(v), "/a b");
	assert_true(json_object_object_get_ex(p, "depth", &v) && json_object_get_int64(v) == 2);
	assert_true(json_object_object_get_ex(p, "include_dead", &v) && json_object_get_boolean(v));
	json_object_put(o);

	/* a hostile name is data: it reaches the call as a JSON string */
	o = call("/api/get", "cgroup=%2F%3Cimg%20src%3Dx%20onerror%3Dalert(1)%3E%22%5C", &m);
	assert_string_equal(m, "io.acctd.Accounting.Get");
	assert_true(json_object_object_get_ex(params_of(o), "cgroup", &v));
	assert_string_equal(json_object_get_string(v), "/<img src=x onerror=alert(1)>\"\\");
	json_object_put(o);

	/* relative times: from now; absolute ones as given; the last of repeated ones */
	o = call("/api/history", "cgroup=/x&since_us=-600000000&until_us=5&until_us=1799999999000000&step_us=1000000", &m);
	assert_string_equal(m, "io.acctd.Accounting.History");
	p = params_of(o);
	assert_true(json_object_object_get_ex(p, "since_us", &v));
	assert_int_equal(json_object_get_int64(v), (int64_t)(NOW_US - 600000000));
	assert_true(json_object_object_get_ex(p, "until_us", &v));
	assert_int_equal(json_object_get_int64(v), 1799999999000000);
	assert_true(json_object_object_get_ex(p, "step_us", &v) && json_object_get_int64(v) == 1000000);
	json_object_put(o);

	o = call("/api/usage", "since_us=-1&group_by_level=1&include_removed=0", &m);
	assert_string_equal(m, "io.acctd.Accounting.Usage");
	p = params_of(o);
	assert_true(json_object_object_get_ex(p, "since_us", &v) && json_object_get_int64(v) == (int64_t)NOW_US - 1);
	assert_true(json_object_object_get_ex(p, "include_removed", &v) && !json_object_get_boolean(v));
	json_object_put(o);
}

static void test_refused(void **state)
{
	const struct {
		const char *path, *query, *in_body;
	} bad[] = {
		{ "/api/list", "bogus=1", "unknown parameter 'bogus'" },
		{ "/api/list", "depth=two", "bad value of 'depth'='two'" },
		{ "/api/list", "depth=1x", "bad value of 'depth'" },
		{ "/api/list", "include_dead=yes", "bad value of 'include_dead'" },
		{ "/api/usage", "since_us=-1800000000000001", "bad value of 'since_us'" }, /* before the epoch */
		{ "/api/usage", "since_us=99999999999999999999", "bad value of 'since_us'" },
		{ "/api/status", "cgroup=/", "unknown parameter 'cgroup'" },
		/* the client's text comes back escaped for a terminal */
		{ "/api/list", "depth=%1b%5b2J", "bad value of 'depth'='\\x1b[2J'" },
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct page_plan p = plan(METRICS_METHOD_GET, bad[i].path, bad[i].query);
		assert_int_equal(p.route, PAGE_REFUSE);
		assert_int_equal(p.code, 400);
		if (!strstr(p.body, bad[i].in_body))
			fail_msg("%s?%s: body '%s' lacks '%s'", bad[i].path, bad[i].query, p.body, bad[i].in_body);
		page_plan_done(&p);
	}
	/* a long word is cut */
	char q[600];
	memset(q, 'a', sizeof(q) - 3);
	strcpy(q + sizeof(q) - 3, "=1");
	struct page_plan p = plan(METRICS_METHOD_GET, "/api/list", q);
	assert_int_equal(p.code, 400);
	assert_non_null(strstr(p.body, "...'"));
	assert_true(strlen(p.body) < 200);
}

static void test_reply_code(void **state)
{
	const struct {
		const char *reply;
		int code;
	} cases[] = {
		{ "{\"parameters\":{}}", 200 },
		{ "{\"parameters\":{\"cgroups\":[]},\"continues\":true}", 200 },
		{ "{\"error\":\"io.acctd.Accounting.NoSuchCgroup\",\"parameters\":{\"cgroup\":\"/x\"}}", 404 },
		{ "{\"error\":\"org.varlink.service.InvalidParameter\",\"parameters\":{}}", 400 },
		{ "{\"error\":\"io.acctd.Accounting.InvalidCgroupPath\",\"parameters\":{}}", 400 },
		{ "{\"error\":\"org.varlink.service.PermissionDenied\",\"parameters\":{}}", 403 },
		{ "{\"error\":\"io.acctd.Accounting.ResourceLimitExceeded\",\"parameters\":{}}", 429 },
		{ "{\"error\":\"io.acctd.Accounting.HistoryUnavailable\",\"parameters\":{}}", 503 },
		{ "{\"error\":\"io.acctd.Accounting.NoSuchCgroupX\",\"parameters\":{}}", 500 },
		{ "{\"error\":\"io.acctd.Accounting.NoSuchCgroup", 500 }, /* cut */
		{ "{\"parameter\":{}}", 500 },
		{ "", 500 },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const char *reason = NULL;
		int code = page_reply_code(cases[i].reply, strlen(cases[i].reply), &reason);
		if (code != cases[i].code)
			fail_msg("%s: %d, not %d", cases[i].reply, code, cases[i].code);
		assert_non_null(reason);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_not_mine),   cmocka_unit_test(test_assets),     cmocka_unit_test(test_read_only),
		cmocka_unit_test(test_calls),      cmocka_unit_test(test_refused),    cmocka_unit_test(test_reply_code),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
