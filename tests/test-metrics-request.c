/* test-metrics-request.c - unit tests of the /metrics endpoint's answer to a
 * request (daemon/acctd/metrics-request.h): which requests are refused with
 * which code, and what a served page is (format from the query over the
 * Accept header, families replaced by family=, the selection cgroup= and
 * max_depth=, gzip, Connection: close). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "metrics-families.h"
#include "metrics-request.h"
#include "strv.h"
#include "util.h"

#define PROMETHEUS_ACCEPT                                                                                     \
	"application/openmetrics-text;version=1.0.0,application/openmetrics-text;version=0.0.1;q=0.75,"  \
	"text/plain;version=0.0.4;q=0.5,*/*;q=0.1"

static struct metrics_plan plan(enum metrics_method method, const char *path, const char *query, const char *accept,
				const char *encoding)
{
	struct metrics_request rq = { .method = method, .major = 1, .minor = 1, .path = path, .query = query,
				      .accept = accept, .accept_encoding = encoding };
	struct metrics_plan p;
	memset(&p, 0x5a, sizeof(p));
	metrics_request_plan(&rq, ACCT_METRICS_FAMILIES_DEFAULT, &p);
	return p;
}

/* The plan of GET /metrics?query, its globs released: what a test of the
 * refusals needs. */
static struct metrics_plan plan_query(const char *query)
{
	struct metrics_plan p = plan(METRICS_METHOD_GET, "/metrics", query, NULL, NULL);
	metrics_plan_done(&p);
	return p;
}

static void test_refused(void **state)
{
	(void)state;
	struct metrics_plan p = plan(METRICS_METHOD_GET, "/", NULL, NULL, NULL);
	assert_int_equal(p.code, 404);
	assert_string_equal(p.reason, "Not Found");
	assert_string_equal(p.body, "Not found: metrics are at /metrics\n");
	assert_false(p.allow);
	assert_int_equal(plan(METRICS_METHOD_GET, NULL, NULL, NULL, NULL).code, 404);
	assert_int_equal(plan(METRICS_METHOD_GET, "/metrics/", NULL, NULL, NULL).code, 404);
	assert_int_equal(plan(METRICS_METHOD_GET, "/Metrics", NULL, NULL, NULL).code, 404);
	/* the path is checked before the method */
	assert_int_equal(plan(METRICS_METHOD_OTHER, "/x", NULL, NULL, NULL).code, 404);

	p = plan(METRICS_METHOD_OTHER, "/metrics", NULL, NULL, NULL);
	assert_int_equal(p.code, 405);
	assert_true(p.allow);
	assert_string_equal(p.reason, "Method Not Allowed");

	static const char *const bad[] = { "format=json", "format=", "family=nosuch", "family=memory,-nosuch",
					   "format=text&family=+nosuch", "format=%zz" };
	for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
		p = plan(METRICS_METHOD_GET, "/metrics", bad[i], NULL, NULL);
		if (p.code != 400)
			fail_msg("query '%s': %d, not 400", bad[i], p.code);
		assert_string_equal(p.reason, "Bad Request");
		assert_false(p.allow);
	}

	/* A 400 names what it refused, escaped for a terminal and cut, then
	 * the accepted forms. */
	static const struct {
		const char *query, *body;
	} named[] = {
		{ "format=json", "Bad query: unknown format 'json'; accepted: " },
		/* an unknown family word: the groups that family= takes */
		{ "family=memory,-nosuch", "Bad query: unknown family '-nosuch' %s" },
		{ "format=text&family=+nosuch", "Bad query: unknown family 'nosuch' %s" }, /* '+' is a space */
		{ "format=%zz", "Bad query: unknown format '%zz'; accepted: " }, /* kept as it is */
		{ "family", "Bad query: cannot parse the query 'family'; accepted: " },
		{ "family=%1b%5d0%3bx", "Bad query: unknown family '\\x1b]0;x' %s" },
		{ "format=aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
		  "Bad query: unknown format 'aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa'...; accepted: " },
		/* the selection: the glob or value and why; no globs kept */
		{ "cgroup=", "Bad query: bad cgroup glob '' (no glob); accepted: " },
		{ "cgroup=+", "Bad query: bad cgroup glob ' ' (no glob); accepted: " },
		{ "cgroup=/a//b", "Bad query: bad cgroup glob '/a//b' (an empty path component); accepted: " },
		{ "cgroup=/a/", "Bad query: bad cgroup glob '/a/' (an empty path component); accepted: " },
		{ "cgroup=/a/../b", "Bad query: bad cgroup glob '/a/../b' (a '.' or '..' path component); accepted: " },
		{ "cgroup=./x", "Bad query: bad cgroup glob './x' (a '.' or '..' path component); accepted: " },
		{ "cgroup=/a/[bc", "Bad query: bad cgroup glob '/a/[bc' (a '[' without its ']'); accepted: " },
		{ "cgroup=/ok&cgroup=/x%1b", "Bad query: bad cgroup glob '/x\\x1b' (a control character); accepted: " },
		{ "max_depth=", "Bad query: bad max_depth '' (expected 0..255); accepted: " },
		{ "max_depth=256", "Bad query: bad max_depth '256' (expected 0..255); accepted: " },
		{ "max_depth=-1", "Bad query: bad max_depth '-1' (expected 0..255); accepted: " },
		{ "max_depth=+1", "Bad query: bad max_depth ' 1' (expected 0..255); accepted: " },
		{ "max_depth=1x", "Bad query: bad max_depth '1x' (expected 0..255); accepted: " },
		{ "max_depth=99999999999999999999", "Bad query: bad max_depth '99999999999999999999' (expected 0..255); accepted: " },
	};
	/* %s in a body: the groups family= takes, as the daemon lists them */
	static const char groups[] = "(family= takes these groups: memory, memory_stat, memory_events, numa, cpu, "
				     "pressure, pressure_averages, load, cpu_rate, accuracy, engine, engine_kinds, "
				     "process, io, io_devices, io_rate, removed, cadvisor, identity, all, default, none); accepted: ";
	for (size_t i = 0; i < ELEMENTSOF(named); i++) {
		char want[1024];
		const char *mark = strstr(named[i].body, "%s");
		snprintf(want, sizeof(want), "%.*s%s", mark ? (int)(mark - named[i].body) : (int)strlen(named[i].body),
			 named[i].body, mark ? groups : "");
		p = plan(METRICS_METHOD_GET, "/metrics", named[i].query, NULL, NULL);
		assert_int_equal(p.code, 400);
		assert_null(p.cgroups);
		assert_int_equal(p.max_depth, -1);
		if (strncmp(p.body, want, strlen(want)) != 0)
			fail_msg("query '%s': body '%s'", named[i].query, p.body);
		assert_non_null(strstr(p.body, "format=text|prometheus|openmetrics, family=NAME[,NAME...], "
					       "cgroup=GLOB[ GLOB...], max_depth=0..255\n"));
	}
}

static void test_served(void **state)
{
	(void)state;
	/* Prometheus 2.x's scrape: OpenMetrics, gzip, the default families. */
	struct metrics_plan p = plan(METRICS_METHOD_GET, "/metrics", NULL, PROMETHEUS_ACCEPT, "gzip");
	assert_int_equal(p.code, 200);
	assert_int_equal(p.format, ACCT_METRICS_OPENMETRICS);
	assert_int_equal(p.families, ACCT_METRICS_FAMILIES_DEFAULT);
	assert_true(p.gzip);
	assert_false(p.close);
	assert_false(p.allow);

	/* curl: text, no gzip */
	p = plan(METRICS_METHOD_HEAD, "/metrics", NULL, "*/*", NULL);
	assert_int_equal(p.code, 200);
	assert_int_equal(p.format, ACCT_METRICS_TEXT);
	assert_false(p.gzip);

	/* format= wins over Accept, the last one counts; other parameters are ignored */
	p = plan(METRICS_METHOD_GET, "/metrics", "format=text&x=1", PROMETHEUS_ACCEPT, NULL);
	assert_int_equal(p.code, 200);
	assert_int_equal(p.format, ACCT_METRICS_TEXT);
	p = plan(METRICS_METHOD_GET, "/metrics", "format=prometheus&format=openmetrics", NULL, NULL);
	assert_int_equal(p.format, ACCT_METRICS_OPENMETRICS);

	/* family= replaces the default; several add up; %XX and '+' decoded */
	p = plan(METRICS_METHOD_GET, "/metrics", "family=memory&family=cpu", NULL, NULL);
	assert_int_equal(p.code, 200);
	assert_int_equal(p.families, (1u << ACCT_MF_MEMORY) | (1u << ACCT_MF_CPU));
	p = plan(METRICS_METHOD_GET, "/metrics", "family=default%2C-cpu", NULL, NULL);
	assert_int_equal(p.families, ACCT_METRICS_FAMILIES_DEFAULT & ~(1u << ACCT_MF_CPU));
	p = plan(METRICS_METHOD_GET, "/metrics", "family=memory+io", NULL, NULL);
	assert_int_equal(p.families, (1u << ACCT_MF_MEMORY) | (1u << ACCT_MF_IO));
}

/* cgroup= and max_depth=: what is accepted, normalised, and refused. */
static void test_selection(void **state)
{
	(void)state;
	/* none: no selection, so the configured cut applies */
	struct metrics_plan p = plan(METRICS_METHOD_GET, "/metrics", "format=text", NULL, NULL);
	assert_int_equal(p.code, 200);
	assert_null(p.cgroups);
	assert_int_equal(p.max_depth, -1);
	assert_false(metrics_plan_selects(&p));

	/* several cgroup= add up, each a blank-separated list ('+' is a
	 * blank); relative globs get their "/", as the include key's */
	p = plan(METRICS_METHOD_GET, "/metrics", "cgroup=system.slice/*&cgroup=%2Fuser.slice+*.scope&format=text",
		 NULL, NULL);
	assert_int_equal(p.code, 200);
	assert_non_null(p.cgroups);
	assert_string_equal(p.cgroups[0], "/system.slice/*");
	assert_string_equal(p.cgroups[1], "/user.slice");
	assert_string_equal(p.cgroups[2], "*.scope");
	assert_null(p.cgroups[3]);
	assert_int_equal(p.max_depth, -1);
	assert_true(metrics_plan_selects(&p));
	metrics_plan_done(&p);
	assert_null(p.cgroups);
	assert_false(metrics_plan_selects(&p));

	/* max_depth=: 0..255, the last one counts */
	static const struct {
		const char *query;
		int depth;
	} depths[] = { { "max_depth=0", 0 }, { "max_depth=2", 2 }, { "max_depth=255", 255 },
		       { "max_depth=9&max_depth=3", 3 }, { "max_depth=007", 7 } };
	for (size_t i = 0; i < ELEMENTSOF(depths); i++) {
		p = plan(METRICS_METHOD_GET, "/metrics", depths[i].query, NULL, NULL);
		assert_int_equal(p.code, 200);
		assert_int_equal(p.max_depth, depths[i].depth);
		assert_null(p.cgroups);
		assert_true(metrics_plan_selects(&p));
	}
	p = plan(METRICS_METHOD_GET, "/metrics", "max_depth=1&cgroup=/", NULL, NULL);
	assert_int_equal(p.max_depth, 1);
	assert_string_equal(p.cgroups[0], "/");
	metrics_plan_done(&p);

	/* at most METRICS_CGROUP_GLOBS_MAX globs, in one value or several */
	char q[1024] = "cgroup=";
	for (int i = 0; i < METRICS_CGROUP_GLOBS_MAX; i++)
		strcat(q, i ? "+/a" : "/a");
	p = plan(METRICS_METHOD_GET, "/metrics", q, NULL, NULL);
	assert_int_equal(p.code, 200);
	assert_int_equal(strv_length(p.cgroups), METRICS_CGROUP_GLOBS_MAX);
	metrics_plan_done(&p);
	strcat(q, "&cgroup=/b");
	p = plan_query(q);
	assert_int_equal(p.code, 400);
	assert_string_equal(p.body, "Bad query: too many cgroup globs (at most 64), from '/b'; accepted: "
				    "format=text|prometheus|openmetrics, family=NAME[,NAME...], cgroup=GLOB[ GLOB...], "
				    "max_depth=0..255\n");
}

static void test_version(void **state)
{
	(void)state;
	static const struct {
		int major, minor;
		bool close;
	} cases[] = { { 1, 0, true }, { 0, 9, true }, { 1, 1, false }, { 2, 0, false } };
	for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
		struct metrics_request rq = { .method = METRICS_METHOD_GET, .major = cases[i].major,
					      .minor = cases[i].minor, .path = "/nope" };
		struct metrics_plan p;
		metrics_request_plan(&rq, 0, &p);
		/* also on a refusal */
		assert_int_equal(p.code, 404);
		assert_int_equal(p.close, cases[i].close);
	}
}

/* Accept and Accept-Encoding alone. */
static void test_negotiation(void **state)
{
	const char *prom = "application/openmetrics-text;version=1.0.0,application/openmetrics-text;version=0.0.1;"
			   "q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1";
	assert_int_equal(metrics_negotiate_format(prom), ACCT_METRICS_OPENMETRICS);
	assert_int_equal(metrics_negotiate_format(NULL), ACCT_METRICS_TEXT);
	assert_int_equal(metrics_negotiate_format(""), ACCT_METRICS_TEXT);
	assert_int_equal(metrics_negotiate_format("*/*"), ACCT_METRICS_TEXT);
	assert_int_equal(metrics_negotiate_format("text/plain"), ACCT_METRICS_TEXT);
	assert_int_equal(metrics_negotiate_format("application/openmetrics-text"), ACCT_METRICS_OPENMETRICS);
	assert_int_equal(metrics_negotiate_format("Application/OpenMetrics-Text; Version=\"1.0.0\""),
			 ACCT_METRICS_OPENMETRICS);
	assert_int_equal(metrics_negotiate_format("application/openmetrics-text; version=1.0.0; q=0.2, text/plain;q=0.5"),
			 ACCT_METRICS_TEXT);
	assert_int_equal(metrics_negotiate_format("application/openmetrics-text;version=2.0.0"), ACCT_METRICS_TEXT);
	assert_int_equal(metrics_negotiate_format("application/openmetrics-text;q=0"), ACCT_METRICS_TEXT);
	assert_int_equal(metrics_negotiate_format("text/plain;version=0.0.4;q=0.5,application/openmetrics-text;version=0.0.1"),
			 ACCT_METRICS_OPENMETRICS);
	assert_int_equal(metrics_negotiate_format(",,;;q=,=,"), ACCT_METRICS_TEXT);

	assert_true(metrics_accepts_gzip("gzip"));
	assert_true(metrics_accepts_gzip("deflate, gzip;q=1.0, *;q=0.5"));
	assert_true(metrics_accepts_gzip("*"));
	assert_true(metrics_accepts_gzip(" GZIP ; q=0.1"));
	assert_false(metrics_accepts_gzip(NULL));
	assert_false(metrics_accepts_gzip("identity"));
	assert_false(metrics_accepts_gzip("gzip;q=0"));
	assert_false(metrics_accepts_gzip("*;q=0.5, gzip;q=0"));
	assert_false(metrics_accepts_gzip("br, deflate"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_refused),
		cmocka_unit_test(test_served),
		cmocka_unit_test(test_selection),
		cmocka_unit_test(test_version),
		cmocka_unit_test(test_negotiation),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
