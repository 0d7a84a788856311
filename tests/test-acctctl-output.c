/* test-acctctl-output.c - unit tests of what `acctctl usage` and `acctctl
 * show` print (daemon/acctctl/verb-usage.c, verb-show.c) for given answers
 * of acctd, without a daemon: the calls to acctd (connect_daemon(),
 * history_call(), call_once()) are replaced with ld's --wrap by functions
 * that record the parameters sent and answer from the test's JSON. The verbs
 * run as acctctl runs them, their stdout captured: the table's cells (human
 * units, rounding, bounds), the order (--sort, --top), JSON, JSON lines and
 * CSV, the footer (gaps past and pending, CPU*, the window), the parameters
 * of each call and the errors before any; the charged resources (usage
 * --charge's table, sort and CSV columns, show's table and averages) in the
 * units acctd's Status gives them. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "acctctl.h"
#include "charge-units.h"
#include "ctl-call.h"
#include "history-call.h"
#include "human.h"
#include "options.h"
#include "rows.h"
#include "verbs.h"

/* The calls' stand-ins: the parameters of each call, and the answers. */
static char *sent[8];
static size_t nsent;
static const char *answers[8]; /* JSON; NULL: the call fails */
static size_t nanswered;
static bool not_running; /* connect_daemon() finds no acctd */

static void calls_reset(void)
{
	for (size_t i = 0; i < nsent; i++)
		free(sent[i]);
	nsent = nanswered = 0;
	not_running = false;
	memset(answers, 0, sizeof(answers));
}

static void record(const char *method, struct json_object *params)
{
	assert_true(nsent < ELEMENTSOF(sent));
	assert_true(asprintf(&sent[nsent++], "%s %s", method,
			     json_object_to_json_string_ext(params, JSON_C_TO_STRING_PLAIN)) > 0);
}

int __wrap_connect_daemon(struct acct_client **ret);
int __wrap_connect_daemon(struct acct_client **ret)
{
	*ret = NULL;
	return not_running ? EXIT_NOT_RUNNING : EXIT_OK;
}

int __wrap_history_call(struct acct_client *c, const char *method, struct json_object *params, const char *key,
			struct json_object **ret);
int __wrap_history_call(struct acct_client *c, const char *method, struct json_object *params, const char *key,
			struct json_object **ret)
{
	const char *a;

	(void)c;
	assert_string_equal(key, "cgroups");
	record(method, params);
	a = answers[nanswered++];
	if (!a)
		return EXIT_FAIL;
	*ret = json_tokener_parse(a);
	assert_non_null(*ret);
	return EXIT_OK;
}

int __wrap_call_once(const char *method, struct json_object *params, struct acct_reply *reply);
int __wrap_call_once(const char *method, struct json_object *params, struct acct_reply *reply)
{
	const char *a;

	record(method, params);
	a = answers[nanswered++];
	if (!a)
		return EXIT_FAIL;
	reply->parameters = json_tokener_parse(a);
	assert_non_null(reply->parameters);
	return EXIT_OK;
}

/* Start sending fd to a temporary file; returns the fd's old file. */
static int capture_begin(int fd, FILE **ret_f)
{
	int saved;

	*ret_f = tmpfile();
	assert_non_null(*ret_f);
	saved = dup(fd);
	assert_true(saved >= 0);
	assert_true(dup2(fileno(*ret_f), fd) >= 0);
	return saved;
}

/* Give fd its old file back; returns what was written to it. */
static char *capture_end(int fd, int saved, FILE *f)
{
	char *text;
	long size;

	assert_true(dup2(saved, fd) >= 0);
	close(saved);
	size = ftell(f);
	assert_true(size >= 0);
	text = calloc(1, (size_t)size + 1);
	assert_non_null(text);
	rewind(f);
	assert_int_equal(fread(text, 1, (size_t)size, f), (size_t)size);
	fclose(f);
	return text;
}

/* Run verb(args) with stdout and stderr in files; returns its status, the
 * texts in *ret_text and (when not NULL) *ret_err. */
static int run2(int (*verb)(char **), char **args, char **ret_text, char **ret_err)
{
	FILE *out, *err;
	int saved_out, saved_err, r;

	fflush(stdout);
	fflush(stderr);
	saved_out = capture_begin(STDOUT_FILENO, &out);
	saved_err = capture_begin(STDERR_FILENO, &err);
	r = verb(args);
	fflush(stdout);
	fflush(stderr);
	*ret_text = capture_end(STDOUT_FILENO, saved_out, out);
	if (ret_err)
		*ret_err = capture_end(STDERR_FILENO, saved_err, err);
	else
		free(capture_end(STDERR_FILENO, saved_err, err));
	return r;
}

static int run(int (*verb)(char **), char **args, char **ret_text)
{
	return run2(verb, args, ret_text, NULL);
}

/* Whether text holds want; prints both when not. */
static void assert_has(const char *text, const char *want)
{
	if (!strstr(text, want)) {
		fprintf(stderr, "missing: \"%s\"\nin:\n%s\n", want, text);
		fail();
	}
}

static void assert_lacks(const char *text, const char *want)
{
	if (strstr(text, want)) {
		fprintf(stderr, "unexpected: \"%s\"\nin:\n%s\n", want, text);
		fail();
	}
}

/* The options as acctctl starts with them, the output a pipe's. */
static int setup(void **state)
{
	(void)state;
	calls_reset();
	utf8 = false;
	arg_legend = true;
	arg_pager = false;
	arg_json = JSON_OFF;
	arg_csv = false;
	arg_sort = -1;
	arg_top = 0;
	arg_depth = -1;
	arg_prefix = NULL;
	arg_no_removed = false;
	arg_group_level = 0;
	arg_since_us = arg_until_us = 0;
	arg_precise = false;
	arg_charge = NULL;
	/* the units are learnt once a process: each test asks acctd anew */
	charge_units_reset();
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	calls_reset();
	return 0;
}

/* ---- usage ---- */

/* 2026-12-05 10:00:00 UTC, and an hour before */
#define T_UNTIL INT64_C(1796464800000000)
#define T_SINCE (T_UNTIL - INT64_C(3600000000))

/* Two cgroups: /b used more CPU, /a more memory and I/O; /b was cut to the CPUs. */
#define USAGE_CGROUPS                                                                                        \
	"{\"path\":\"/b\",\"lives\":1,\"subtree_cgroups\":3,\"first_seen_us\":100,\"recorded_us\":2000000,"  \
	"\"cpu_usec\":{\"value\":90000000,\"bound\":2000000},\"cpu_clipped\":true,"                        \
	"\"memory_byte_seconds\":{\"value\":2048,\"bound\":4096000},\"memory_avg_bytes\":1023.6,"            \
	"\"memory_max_bytes\":2048,\"memory_peak_bytes\":4096,\"io_read_bytes\":{\"value\":5120,\"bound\":0}," \
	"\"io_write_bytes\":{\"value\":7168,\"bound\":10},\"resolution\":10000000},"                          \
	"{\"path\":\"/a\",\"lives\":2,\"subtree_cgroups\":1,\"first_seen_us\":200,\"recorded_us\":2000000,"   \
	"\"removed_us\":1796461200000000,"                                                                   \
	"\"memory_byte_seconds\":{\"value\":1,\"bound\":3},\"memory_avg_bytes\":1048576,"                    \
	"\"memory_max_bytes\":3145728,\"io_read_bytes\":{\"value\":10485760},"                                \
	"\"io_write_bytes\":{\"value\":10}}"

static void set_window(void)
{
	arg_since_us = (uint64_t)T_SINCE;
	arg_until_us = (uint64_t)T_UNTIL;
	arg_now_us = (uint64_t)T_UNTIL + 3600000000u; /* the window is in the past */
}

static void test_usage_table(void **state)
{
	char *args[] = { NULL }, *text;

	(void)state;
	set_window();
	answers[0] = "{\"since_us\":1796461200000000,\"until_us\":1796464800000000,\"gaps\":[],\"cgroups\":[" USAGE_CGROUPS
		     "]}";
	assert_int_equal(run(verb_usage, args, &text), EXIT_OK);
	assert_int_equal(nsent, 1);
	assert_string_equal(sent[0], "Usage {\"since_us\":1796461200000000,\"until_us\":1796464800000000,"
				     "\"include_removed\":true}");
	/* by path; CPU "-" where there is none, "*" where cut; MEM AVG rounded
	 * (1023.6 -> 1.0K) with the byte-seconds' bound over the 2 s recorded
	 * (4096000 / 2 s = 2.0M; 3 / 2 s = 1.5 -> 2B); I/O bounds in --json only */
	assert_has(text, "CGROUP        CPU       MEM AVG         MEM MAX  PEAK   READ  WRITE  RECORDED  REMOVED\n"
			 "/a              -          1.0M +-2B       3.0M     -  10.0M    10B        2s  09:00:00\n"
			 "/b      1min 30s* +-2s     1.0K +-2.0M     2.0K  4.0K   5.0K   7.0K        2s\n");
	assert_has(text, "\n2 cgroups, from 2026-12-05 09:00:00 to 10:00:00 (1h 0min).\n");
	/* one cgroup cut to the CPUs: the footer says so, over the window's length */
	assert_has(text, "in the window, 1h 0min x ");
	assert_has(text, "PEAK -: the kernel's peak");
	assert_has(text, "MEM AVG's +- assumes");
	assert_lacks(text, "No data");
	assert_lacks(text, "Not recorded yet");
	free(text);
}

static void test_usage_sort_and_top(void **state)
{
	char *args[] = { NULL }, *text;
	const char *answer = "{\"since_us\":1796461200000000,\"until_us\":1796464800000000,\"cgroups\":[" USAGE_CGROUPS
			     ",{\"path\":\"/c\",\"recorded_us\":1000000,\"cpu_usec\":{\"value\":5},"
			     "\"memory_avg_bytes\":5,\"io_read_bytes\":{\"value\":1}}]}";

	(void)state;
	set_window();
	/* --top alone ranks by CPU: /b, /c, then /a without CPU */
	arg_top = 2;
	answers[0] = answer;
	assert_int_equal(run(verb_usage, args, &text), EXIT_OK);
	assert_has(text, "RECORDED  REMOVED\n/b ");
	assert_has(text, "\n/c ");
	assert_lacks(text, "\n/a ");
	assert_has(text, "\nThe first 2 of 3 cgroups by CPU time, from 2026-12-05 09:00:00 to 10:00:00 (1h 0min).\n");
	/* /b (first) was cut to the CPUs */
	assert_has(text, "CPU*: its bound");
	free(text);

	/* by I/O, read and written added: /a 10M + 10 B, /b 5K + 7K, /c 1 B */
	calls_reset();
	arg_top = 1;
	arg_sort = SORT_IO;
	answers[0] = answer;
	assert_int_equal(run(verb_usage, args, &text), EXIT_OK);
	assert_has(text, "REMOVED\n/a ");
	assert_lacks(text, "\n/b ");
	assert_has(text, "\nThe first 1 of 3 cgroups by I/O read and written,");
	/* the one shown was not cut to the CPUs */
	assert_lacks(text, "CPU*");
	free(text);

	/* by written bytes: /b 7K, /a 10 B, /c none */
	calls_reset();
	arg_top = 0;
	arg_sort = SORT_WRITE;
	answers[0] = answer;
	assert_int_equal(run(verb_usage, args, &text), EXIT_OK);
	assert_has(text, "REMOVED\n/b ");
	assert_has(text, "\n/a ");
	assert_true(strstr(text, "\n/a ") < strstr(text, "\n/c "));
	assert_has(text, "\n3 cgroups, from");
	free(text);

	/* by average memory: /a 1M, /b 1K, /c 5 B */
	calls_reset();
	arg_sort = SORT_MEMORY;
	answers[0] = answer;
	assert_int_equal(run(verb_usage, args, &text), EXIT_OK);
	assert_has(text, "REMOVED\n/a ");
	assert_true(strstr(text, "\n/b ") < strstr(text, "\n/c "));
	free(text);

	/* a key without meaning over a window: an error before any call */
	calls_reset();
	arg_sort = SORT_LOAD;
	assert_int_equal(run(verb_usage, args, &text), EXIT_USAGE);
	assert_int_equal(nsent, 0);
	free(text);
}

static void test_usage_json_csv(void **state)
{
	char *args[] = { NULL }, *text;
	const char *answer =
		"{\"since_us\":1796461200000000,\"until_us\":1796464800000000,\"cgroups\":[" USAGE_CGROUPS "]}";

	(void)state;
	set_window();
	arg_json = JSON_LINES;
	answers[0] = answer;
	assert_int_equal(run(verb_usage, args, &text), EXIT_OK);
	/* one line a cgroup, by path */
	assert_true(strncmp(text, "{\"path\":\"/a\"", 12) == 0);
	assert_has(text, "}\n{\"path\":\"/b\"");
	assert_lacks(text, "since_us");
	free(text);

	calls_reset();
	arg_json = JSON_OFF;
	arg_csv = true;
	answers[0] = answer;
	assert_int_equal(run(verb_usage, args, &text), EXIT_OK);
	assert_string_equal(text, "path,lives,subtree_cgroups,first_seen_us,removed_us,recorded_us,cpu_usec,cpu_usec_bound,"
				  "memory_byte_seconds,memory_byte_seconds_bound,memory_avg_bytes,memory_max_bytes,"
				  "memory_peak_bytes,io_read_bytes,io_read_bytes_bound,io_write_bytes,io_write_bytes_bound,"
				  "resolution\n"
				  "/a,2,1,200,1796461200000000,2000000,,,1,3,1048576,3145728,,10485760,,10,,\n"
				  "/b,1,3,100,,2000000,90000000,2000000,2048,4096000,1023.6,2048,4096,5120,0,7168,10,"
				  "10000000\n");
	free(text);
}

static void test_usage_gaps(void **state)
{
	char *args[] = { NULL }, *text;

	(void)state;
	/* a window ending now: a gap in it, and the time since the last
	 * recording, which is not a gap */
	set_window();
	arg_now_us = (uint64_t)T_UNTIL;
	answers[0] = "{\"since_us\":1796461200000000,\"until_us\":1796464800000000,\"gaps\":["
		     "{\"from_us\":1796461800000000,\"to_us\":1796462400000000},"
		     "{\"from_us\":1796464790000000,\"to_us\":1796464800000000}],\"cgroups\":[]}";
	assert_int_equal(run(verb_usage, args, &text), EXIT_OK);
	assert_has(text, "No data (acctd was not recording) in 1 gap: 09:10:00 to 09:20:00 (10min 0s).\n"
			 "Not recorded yet: from 09:59:50 (acctd's last recording) to 10:00:00.\n");
	/* no cgroup: said, with the prefix */
	assert_has(text, "\n0 cgroups, from");
	assert_has(text, "No cgroup at or under / has data in this window.\n");
	assert_lacks(text, "MEM AVG's");
	free(text);

	/* --until a moment ago (2 s) still ends in the time since the last
	 * recording; a window in the future says so */
	calls_reset();
	arg_now_us = (uint64_t)T_UNTIL + 2000000;
	answers[0] = "{\"since_us\":1796461200000000,\"until_us\":1796464800000000,\"gaps\":["
		     "{\"from_us\":1796464790000000,\"to_us\":1796464800000000}],\"cgroups\":[]}";
	assert_int_equal(run(verb_usage, args, &text), EXIT_OK);
	assert_has(text, "Not recorded yet: from 09:59:50 (acctd's last recording) to 10:00:00.\n");
	assert_lacks(text, "No data");
	free(text);
	calls_reset();
	arg_now_us = (uint64_t)T_UNTIL - 2000000;
	answers[0] = "{\"since_us\":1796461200000000,\"until_us\":1796464800000000,\"gaps\":["
		     "{\"from_us\":1796464790000000,\"to_us\":1796464800000000}],\"cgroups\":[]}";
	assert_int_equal(run(verb_usage, args, &text), EXIT_OK);
	assert_has(text, "Not recorded yet: from 09:59:50 (acctd's last recording) to 10:00:00 (the future).\n");
	assert_lacks(text, "No data");
	free(text);

	/* a window ending at the last recording has no time since it; gaps
	 * that are no array are none */
	calls_reset();
	arg_now_us = (uint64_t)T_UNTIL;
	answers[0] = "{\"since_us\":1796461200000000,\"until_us\":1796464800000000,\"gaps\":["
		     "{\"from_us\":1796464800000000,\"to_us\":1796464800000000}],\"cgroups\":[]}";
	assert_int_equal(run(verb_usage, args, &text), EXIT_OK);
	assert_lacks(text, "Not recorded yet");
	assert_lacks(text, "No data");
	free(text);
	calls_reset();
	answers[0] = "{\"since_us\":1796461200000000,\"until_us\":1796464800000000,\"gaps\":7,\"cgroups\":[]}";
	assert_int_equal(run(verb_usage, args, &text), EXIT_OK);
	assert_lacks(text, "No data");
	free(text);

	/* a window of the past: every gap is one, the last too */
	calls_reset();
	arg_now_us = (uint64_t)T_UNTIL + 6000000;
	answers[0] = "{\"since_us\":1796461200000000,\"until_us\":1796464800000000,\"gaps\":["
		     "{\"from_us\":1796461800000000,\"to_us\":1796462400000000},"
		     "{\"from_us\":1796464790000000,\"to_us\":1796464800000000}],\"cgroups\":[]}";
	assert_int_equal(run(verb_usage, args, &text), EXIT_OK);
	assert_has(text, "in 2 gaps: 09:10:00 to 09:20:00 (10min 0s), 09:59:50 to 10:00:00 (10s).\n");
	assert_lacks(text, "Not recorded yet");
	free(text);
}

static void test_usage_dates(void **state)
{
	char *args[] = { NULL }, *text;

	(void)state;
	/* a window of exactly a day: times without dates; a microsecond more: with */
	arg_since_us = (uint64_t)T_UNTIL - UINT64_C(86400000000);
	arg_until_us = (uint64_t)T_UNTIL;
	arg_now_us = (uint64_t)T_UNTIL + 3600000000u;
	answers[0] = "{\"since_us\":1796378400000000,\"until_us\":1796464800000000,\"cgroups\":["
		     "{\"path\":\"/a\",\"recorded_us\":1,\"removed_us\":1796461200000000}]}";
	assert_int_equal(run(verb_usage, args, &text), EXIT_OK);
	assert_has(text, " 09:00:00\n");
	assert_has(text, "to 10:00:00 (1d 0h)");
	free(text);
	calls_reset();
	arg_since_us--;
	answers[0] = "{\"since_us\":1796378399999999,\"until_us\":1796464800000000,\"cgroups\":["
		     "{\"path\":\"/a\",\"recorded_us\":1,\"removed_us\":1796461200000000}]}";
	assert_int_equal(run(verb_usage, args, &text), EXIT_OK);
	assert_has(text, " 2026-12-05 09:00:00\n");
	assert_has(text, "to 2026-12-05 10:00:00 (");
	free(text);
}

static void test_usage_calls(void **state)
{
	char *one[] = { "/x", NULL }, *two[] = { "/x", "/y", NULL }, *none[] = { NULL }, *text;

	(void)state;
	set_window();
	/* a CGROUP alone (depth 0); removed cgroups left out when asked */
	arg_no_removed = true;
	answers[0] = "{\"since_us\":1796461200000000,\"until_us\":1796464800000000,\"cgroups\":[]}";
	assert_int_equal(run(verb_usage, one, &text), EXIT_OK);
	assert_int_equal(nsent, 1);
	assert_string_equal(sent[0], "Usage {\"since_us\":1796461200000000,\"until_us\":1796464800000000,"
				     "\"prefix\":\"\\/x\",\"depth\":0,\"include_removed\":false}");
	assert_has(text, "No cgroup at or under /x has data in this window.\n");
	free(text);

	/* two CGROUPs: two calls, one answer; --depth and --group-by-level go along */
	calls_reset();
	arg_no_removed = false;
	arg_depth = 2;
	answers[0] = "{\"since_us\":1796461200000000,\"until_us\":1796464800000000,\"cgroups\":[]}";
	answers[1] = "{\"since_us\":1796461200000000,\"until_us\":1796464800000000,\"cgroups\":[]}";
	arg_group_level = 1;
	assert_int_equal(run(verb_usage, two, &text), EXIT_OK);
	assert_int_equal(nsent, 2);
	assert_string_equal(sent[1], "Usage {\"since_us\":1796461200000000,\"until_us\":1796464800000000,"
				     "\"prefix\":\"\\/y\",\"depth\":2,\"include_removed\":true,\"group_by_level\":1}");
	assert_has(text, "None of the cgroups named has data in this window 1 level below the root.\n");
	free(text);
	calls_reset();
	answers[0] = "{\"since_us\":1796461200000000,\"until_us\":1796464800000000,\"cgroups\":["
		     "{\"path\":\"/x\",\"subtree_cgroups\":4}]}";
	answers[1] = "{\"since_us\":1796461200000000,\"until_us\":1796464800000000,\"cgroups\":["
		     "{\"path\":\"/w\",\"subtree_cgroups\":5}]}";
	assert_int_equal(run(verb_usage, two, &text), EXIT_OK);
	/* both calls' cgroups, by path; BELOW shown with --group-by-level */
	assert_has(text, "CGROUP  BELOW");
	assert_has(text, "\n/w          5 ");
	assert_has(text, "\n/x          4 ");
	assert_true(strstr(text, "\n/w ") < strstr(text, "\n/x "));
	free(text);
	arg_group_level = 0;
	arg_depth = -1;

	/* CGROUPs and --prefix: an error, no call */
	calls_reset();
	arg_prefix = "/p";
	assert_int_equal(run(verb_usage, one, &text), EXIT_USAGE);
	assert_int_equal(nsent, 0);
	free(text);
	/* --prefix alone: one call with it, the subtree (no depth) */
	answers[0] = "{\"since_us\":1796461200000000,\"until_us\":1796464800000000,\"cgroups\":[]}";
	assert_int_equal(run(verb_usage, none, &text), EXIT_OK);
	assert_int_equal(nsent, 1);
	assert_string_equal(sent[0], "Usage {\"since_us\":1796461200000000,\"until_us\":1796464800000000,"
				     "\"prefix\":\"\\/p\",\"include_removed\":true}");
	assert_has(text, "No cgroup at or under /p has data");
	free(text);
	arg_prefix = NULL;

	/* an empty window: an error, no call */
	calls_reset();
	arg_since_us = arg_until_us;
	assert_int_equal(run(verb_usage, none, &text), EXIT_USAGE);
	assert_int_equal(nsent, 0);
	free(text);

	/* no acctd: the verb fails before any call */
	calls_reset();
	not_running = true;
	assert_int_equal(run(verb_usage, two, &text), EXIT_NOT_RUNNING);
	assert_int_equal(nsent, 0);
	free(text);

	/* a failed call fails the verb, and prints nothing */
	calls_reset();
	set_window();
	assert_int_equal(run(verb_usage, two, &text), EXIT_FAIL);
	assert_int_equal(nsent, 1);
	assert_string_equal(text, "");
	free(text);
}

/* acctd's Status with the units of three charged resources (charge-units.h). */
#define CHARGE_STATUS                                                                             \
	"{\"status\":{\"resources\":[{\"name\":\"gpu\",\"unit\":\"bytes\"},{\"name\":\"slots\",\"unit\":\"count\"}," \
	"{\"name\":\"lic\",\"unit\":\"seconds\"}]}}"

/* Four cgroups and what they held: /a and /d gpu, /c slots alone, /b none.
 * /d held more gpu than /a, so that by gpu the order is not the paths'. */
#define CHARGE_CGROUPS                                                                                          \
	"{\"path\":\"/a\",\"recorded_us\":2000000,\"charges\":[{\"resource\":\"slots\","                          \
	"\"value_seconds\":{\"value\":4},\"recorded_us\":2000000,\"avg\":2,\"max\":3},{\"resource\":\"gpu\","      \
	"\"value_seconds\":{\"value\":1023.2,\"bound\":2048},\"recorded_us\":2000000,\"avg\":511.6,\"max\":1024}]}," \
	"{\"path\":\"/b\",\"recorded_us\":2000000},"                                                               \
	"{\"path\":\"/c\",\"recorded_us\":2000000,\"charges\":[{\"resource\":\"slots\","                          \
	"\"value_seconds\":{\"value\":7200,\"bound\":0},\"recorded_us\":7200000000,\"avg\":1.25,\"max\":2}]},"    \
	"{\"path\":\"/d\",\"recorded_us\":2000000,\"charges\":[{\"resource\":\"gpu\","                            \
	"\"value_seconds\":{\"value\":9663676416}}]}"

/* `acctctl usage --charge=CHARGE` with the other options as the test set
 * them, acctd answering `answer` and then CHARGE_STATUS; the units are
 * learnt anew, as by a new acctctl. Returns what it printed. */
static char *usage_charged(const char *charge, const char *answer)
{
	char *args[] = { NULL }, *text;
	calls_reset();
	charge_units_reset();
	arg_charge = charge;
	answers[0] = answer;
	answers[1] = CHARGE_STATUS;
	assert_int_equal(run(verb_usage, args, &text), EXIT_OK);
	return text;
}

static void test_usage_charges(void **state)
{
	char *text;
	const char *answer =
		"{\"since_us\":1796461200000000,\"until_us\":1796464800000000,\"cgroups\":[" CHARGE_CGROUPS "]}";

	(void)state;
	set_window();
	/* --charge=gpu (bytes): asked for alone; below the usage table the
	 * cgroups that held it (a cgroup that held none, or only another
	 * resource, has no row): HELD in bytes x seconds (under a minute
	 * recorded) with its bound, AVG rounded to the nearest byte (511.6 ->
	 * 512B), MAX, RECORDED; a ChargeUsage without avg, max or time
	 * recorded shows "-", "-", 0us */
	text = usage_charged("gpu", answer);
	assert_int_equal(nsent, 2);
	assert_string_equal(sent[0], "Usage {\"since_us\":1796461200000000,\"until_us\":1796464800000000,"
				     "\"include_removed\":true,\"charges\":[\"gpu\"]}");
	assert_string_equal(sent[1], "Status null");
	assert_has(text, "\n\nCharged gpu (bytes), held over the time recorded (value x time):\n"
			 "CGROUP     HELD            AVG   MAX  RECORDED\n"
			 "/a      1023B*s +-2.0K*s  512B  1.0K        2s\n"
			 "/d       9.0G*s              -     -       0us\n"
			 "\n4 cgroups, from");
	free(text);

	/* a count: its average with two decimals, its integral a duration
	 * (1 held for 2 h is 2h); bound 0 shown as none */
	text = usage_charged("slots", answer);
	assert_has(text, "\n\nCharged slots (count), held over the time recorded (value x time: 3 held for an hour is "
			 "3h):\n"
			 "CGROUP     HELD    AVG  MAX  RECORDED\n"
			 "/a           4s   2.00    3        2s\n"
			 "/c      2h 0min   1.25    2   2h 0min\n");
	free(text);

	/* nobody held it: said instead of a table */
	text = usage_charged("lic", answer);
	assert_has(text, "\nNo cgroup here held charged resource lic in this window.\n");
	assert_lacks(text, "HELD");
	free(text);
}

static void test_usage_charge_sort_csv(void **state)
{
	char *args[] = { NULL }, *text, *err;
	const char *answer =
		"{\"since_us\":1796461200000000,\"until_us\":1796464800000000,\"cgroups\":[" CHARGE_CGROUPS "]}";

	(void)state;
	set_window();
	/* --sort=charge: by what each held of gpu, most first (/d 9.0G*s, /a
	 * 3.0M*s), those that held none after them as 0, by path */
	arg_sort = SORT_CHARGE;
	text = usage_charged("gpu", answer);
	assert_has(text, "REMOVED\n/d ");
	assert_true(strstr(text, "\n/d ") < strstr(text, "\n/a "));
	assert_true(strstr(text, "\n/a ") < strstr(text, "\n/b "));
	assert_true(strstr(text, "\n/b ") < strstr(text, "\n/c "));
	free(text);
	/* with --top, the footer names the resource */
	arg_top = 1;
	text = usage_charged("gpu", answer);
	assert_has(text, "REMOVED\n/d ");
	assert_lacks(text, "\n/a ");
	assert_has(text, "\nThe first 1 of 4 cgroups by gpu, from ");
	free(text);
	arg_top = 0;

	/* --sort=charge without --charge: an error, no call */
	calls_reset();
	arg_charge = NULL;
	assert_int_equal(run2(verb_usage, args, &text, &err), EXIT_USAGE);
	assert_int_equal(nsent, 0);
	assert_string_equal(err, "--sort=charge: name the charged resource with --charge=NAME.\n");
	free(text);
	free(err);
	arg_sort = -1;

	/* --csv: the charge's five columns named with its unit, empty for a
	 * cgroup that held none; bytes, a count, and a unit not known */
	static const char *const want[][2] = {
		{ "gpu", ",charge_gpu_byte_seconds,charge_gpu_byte_seconds_bound,charge_gpu_avg_bytes,"
			 "charge_gpu_max_bytes,charge_gpu_recorded_us\n" },
		{ "slots", ",charge_slots_count_seconds,charge_slots_count_seconds_bound,charge_slots_avg,"
			   "charge_slots_max,charge_slots_recorded_us\n" },
		{ "nope", ",charge_nope_value_seconds,charge_nope_value_seconds_bound,charge_nope_avg,charge_nope_max,"
			  "charge_nope_recorded_us\n" },
	};
	arg_csv = true;
	for (size_t i = 0; i < ELEMENTSOF(want); i++) {
		text = usage_charged(want[i][0], answer);
		assert_true(strncmp(text, "path,", 5) == 0);
		assert_has(text, want[i][1]);
		if (i == 0)
			assert_has(text, "\n/a,,,,,2000000,,,,,,,,,,,,,1023.2,2048,511.6,1024,2000000\n"
					 "/b,,,,,2000000,,,,,,,,,,,,,,,,,\n");
		free(text);
	}
}

/* ---- show ---- */

/* A live cgroup with every part show prints. */
#define SHOW_CGROUP                                                                                             \
	"{\"cgroup\":{\"path\":\"/svc\",\"state\":\"live\",\"populated\":true,\"hierarchies\":[\"unified\"],"   \
	"\"depth\":1,\"sample_errors\":2,"                                                                      \
	"\"cpu_rate_cores\":{\"rate\":{\"value\":0.5},\"avg1\":0.25,\"avg5\":0.125,\"avg15\":1},"               \
	"\"load\":{\"avg1\":1.5,\"avg5\":0.5,\"avg15\":0.25,\"age_us\":2000000,\"warming\":[\"avg15\",\"avg5\"]," \
	"\"covered_us\":190000000},"                                                                            \
	"\"io\":{\"rate\":{\"read_bytes\":1023.6,\"write_bytes\":1023.5,\"write_ios\":0.5,\"age_us\":3000000},"  \
	"\"devices\":[{\"device\":\"8:0\",\"name\":\"sda\",\"read_bytes\":4096,\"write_bytes\":8192,"           \
	"\"read_ios\":3,\"write_ios\":4,\"discard_ios\":1}]},"                                                  \
	"\"values\":{\"memory.custom\":{\"value\":7,\"bound\":0,\"age_us\":1000000},"                           \
	"\"memory\":{\"value\":3145728,\"bound\":1,\"age_us\":1500000,\"motion_per_s\":1.0},"                   \
	"\"cpu.usage\":{\"value\":5000000,\"bound\":7000000,\"kernel_bound\":2000000,\"age_us\":0,\"fresh\":true}," \
	"\"tasks\":{\"value\":0,\"bound\":-1}},"                                                                \
	"\"pressure\":{\"cpu\":{\"some\":{\"avg10\":1.5,\"avg60\":2.5,\"avg300\":3.5,\"total_us\":{\"value\":60000000}}," \
	"\"full\":{\"avg10\":0.25,\"avg60\":0.5,\"avg300\":0.75}},\"io\":{\"some\":{\"avg10\":9}}},"               \
	"\"numa\":[{\"node\":0,\"value\":2048,\"bound\":0,\"age_us\":0},{\"node\":1,\"value\":4096,\"bound\":512,\"age_us\":1000000}]," \
	"\"memory_stat\":{\"anon\":2048,\"pgfault\":2048,\"total_pgmajfault\":4096,\"total_rss\":4096},"          \
	"\"memory_stat_age_us\":4000000}}"

static void test_show(void **state)
{
	char *args[] = { "/svc", NULL }, *text;

	(void)state;
	answers[0] = SHOW_CGROUP;
	assert_int_equal(run(verb_show, args, &text), EXIT_OK);
	assert_int_equal(nsent, 1);
	assert_string_equal(sent[0], "Get {\"cgroup\":\"\\/svc\"}");
	/* the fields; a rate without an age says none */
	assert_has(text, "/svc\n"
			 "          State: live, populated\n"
			 "    Hierarchies: unified\n"
			 "          Depth: 1\n"
			 "  Sample errors: 2\n"
			 "       CPU rate: 0.50 cores now; 0.25, 0.12, 1.00 over 1, 5, 15 min\n"
			 "           Load: 1.50, 0.50, 0.25 over 1, 5, 15 min, age 2.0s; 5 and 15 min warming up "
			 "(fed 3min 10s, from 0: low until then)\n"
			 "       I/O rate: read 1.0K/s (0.0 ops/s), written 1.0K/s (0.5 ops/s), age 3.0s\n");
	/* the values: known ones in their order, then the others; a bound of
	 * 1 is one, a negative one none */
	assert_has(text, "QUANTITY       VALUE  BOUND   AGE    EXACT\n"
			 "memory          3.0M  +-1B   1.5s  3145728\n"
			 "cpu.usage         5s  +-7s   0.0s  5000000\n"
			 "tasks              0            -        0\n"
			 "memory.custom      7         1.0s        7\n");
	/* memory moved about 1.5 B (rounded: 2B) at 1 B/s; CPU read fresh, age 0 */
	assert_has(text, "\nmemory: may have moved by about 2B since (estimate from the last passes: 1B/s x 1.5s)\n"
			 "cpu.usage: read fresh for this call (age 0.0s); its bound is the kernel's only\n");
	/* the bound larger than its value; not the negative one */
	assert_has(text, "\nBounds larger than their values:\n"
			 "  cpu.usage 5s +-7s: +-2s of it the kernel's, +-5s acctd's batching\n"
			 "The kernel's part");
	assert_lacks(text, "  tasks ");
	/* pressure: some and full, "-" where a line is missing */
	assert_has(text, "PRESSURE  SOME10  SOME60  SOME300  SOME-TOTAL  FULL10  FULL60  FULL300  FULL-TOTAL\n"
			 "cpu        1.50%   2.50%    3.50%     1min 0s   0.25%   0.50%    0.75%           -\n"
			 "io         9.00%   0.00%    0.00%           -       -       -        -           -\n");
	assert_has(text, "DEVICE  NAME  READ  WRITTEN  READS  WRITES  DISCARDED  DISCARDS\n"
			 "8:0     sda   4.0K     8.0K      3       4          -         1\n");
	/* per node: a bound of 0 is none, an age of 0 is one */
	assert_has(text, "NODE  MEMORY  BOUND    AGE\n"
			 "   0    2.0K          0.0s\n"
			 "   1    4.0K  +-512B  1.0s\n");
	/* memory.stat: counts as numbers (total_ of v1 too), the rest bytes */
	assert_has(text, "memory.stat read 4.0s ago:\n"
			 "MEMORY.STAT       VALUE  EXACT\n"
			 "anon               2.0K   2048\n"
			 "pgfault            2048   2048\n"
			 "total_pgmajfault   4096   4096\n"
			 "total_rss          4.0K   4096\n");
	assert_lacks(text, "Not read fresh");
	free(text);
}

static void test_show_dead_and_missing(void **state)
{
	char *args[] = { "/gone", NULL }, *text, *err;

	(void)state;
	/* a tombstone's last values, not final; no values at all; unknown and
	 * empty parts shown as none */
	answers[0] = "{\"cgroup\":{\"path\":\"/gone\",\"state\":\"dead\",\"dead_for_us\":5000000,\"final\":false,"
		     "\"final_reason\":\"removed between passes\",\"load\":{\"warming\":[\"avg60\"]},"
		     "\"io\":{\"devices\":[]},\"numa\":[]},\"not_fresh\":\"dead\"}";
	assert_int_equal(run(verb_show, args, &text), EXIT_OK);
	assert_has(text, "          State: dead: removed 5.0s ago; its last values, not final (removed between "
			 "passes)\n");
	assert_has(text, "       CPU rate: -\n"
			 "           Load: 0.00, 0.00, 0.00 over 1, 5, 15 min\n"
			 "       I/O rate: -\n"
			 "\nQUANTITY  VALUE  BOUND  AGE  EXACT\n\nNot read fresh: dead\n");
	assert_lacks(text, "warming");
	assert_lacks(text, "DEVICE");
	assert_lacks(text, "NODE");
	assert_lacks(text, "may have moved");
	assert_has(text, "\nNot read fresh: dead\n");
	free(text);

	/* final values; an I/O without a rate, devices that are no array;
	 * values that are no object */
	calls_reset();
	answers[0] = "{\"cgroup\":{\"path\":\"/gone\",\"state\":\"dead\",\"dead_for_us\":5000000,\"final\":true,"
		     "\"io\":{\"devices\":{\"8:0\":1}},\"values\":5,\"pressure\":{},\"memory\":{\"value\":1}}}";
	assert_int_equal(run(verb_show, args, &text), EXIT_OK);
	assert_has(text, "          State: dead: removed 5.0s ago; these are its final values\n");
	assert_has(text, "       I/O rate: -\n");
	assert_lacks(text, "PRESSURE");
	assert_lacks(text, "DEVICE");
	free(text);

	/* a reply without a cgroup: acctd's reply is wrong */
	calls_reset();
	answers[0] = "{\"other\":1}";
	assert_int_equal(run2(verb_show, args, &text, &err), EXIT_FAIL);
	assert_string_equal(text, "");
	assert_string_equal(err, "acctd sent a reply that is not a valid varlink message.\n");
	free(text);
	free(err);

	/* --json: the cgroup as it came; --precise asks for it */
	calls_reset();
	arg_json = JSON_SHORT;
	arg_precise = true;
	answers[0] = "{\"cgroup\":{\"path\":\"/gone\",\"state\":\"dead\"},\"not_fresh\":\"dead\"}";
	assert_int_equal(run(verb_show, args, &text), EXIT_OK);
	assert_string_equal(sent[0], "Get {\"cgroup\":\"\\/gone\",\"precise\":true}");
	assert_string_equal(text, "{\"path\":\"/gone\",\"state\":\"dead\"}\n");
	free(text);
}

/* What programs charged to /svc: gpu (bytes) read fresh for itself and 2 s
 * ago for its subtree, with averages; slots (count) with averages whose
 * warming is no list; odd, whose unit acctd does not give. */
#define SHOW_CHARGES                                                                                          \
	"\"charges\":{\"gpu\":{\"self\":{\"value\":1048576,\"bound\":0,\"age_us\":0},"                           \
	"\"subtree\":{\"value\":3145728,\"bound\":4096,\"age_us\":2000000},"                                       \
	"\"averages\":{\"avg1\":1536,\"avg5\":511.6,\"avg15\":0,\"warming\":[\"avg5\",\"avg15\"]}},"               \
	"\"slots\":{\"self\":{\"value\":2,\"bound\":1,\"age_us\":1000000},\"subtree\":{\"value\":5},"             \
	"\"averages\":{\"avg1\":1.5,\"avg5\":0.255,\"avg15\":2,\"warming\":\"avg15\"}},"                           \
	"\"odd\":{\"subtree\":{\"value\":7}}}"

static void test_show_charges(void **state)
{
	char *args[] = { "/svc", NULL }, *text;

	(void)state;
	answers[0] = "{\"cgroup\":{\"path\":\"/svc\",\"state\":\"live\"}," SHOW_CHARGES "}";
	answers[1] = "{\"status\":{\"resources\":[{\"name\":\"gpu\",\"unit\":\"bytes\"},"
		     "{\"name\":\"slots\",\"unit\":\"count\"},{\"name\":\"odd\",\"unit\":\"parsecs\"}]}}";
	assert_int_equal(run(verb_show, args, &text), EXIT_OK);
	assert_int_equal(nsent, 2);
	assert_string_equal(sent[1], "Status null");
	/* per resource in its unit ("?" and integers where not known); the
	 * age of the cgroup's own read, 0 too, else the subtree's; a bound of
	 * 0 or none empty; EXACT as acctd sent them */
	assert_has(text, "\nCharged by programs (SELF: to the cgroup itself; SUBTREE: to it and below; read live):\n"
			 "RESOURCE  UNIT   SELF  BOUND  SUBTREE  BOUND    AGE            EXACT\n"
			 "gpu       bytes  1.0M            3.0M  +-4.0K  0.0s  1048576/3145728\n"
			 "slots     count     2  +-1          5          1.0s              2/5\n"
			 "odd       ?         -               7             -              -/7\n");
	/* the averages: bytes rounded as the values (511.6 -> 512B), a count
	 * with two decimals; the warming ones named, none from a warming that
	 * is no list */
	assert_has(text, "\nAverages of gpu: 1.5K, 512B, 0B over 1, 5, 15 min; warming up: avg5, avg15\n"
			 "Averages of slots: 1.50, 0.26, 2.00 over 1, 5, 15 min\n");
	assert_lacks(text, "Averages of odd");
	assert_lacks(text, "Units not known");
	free(text);

	/* no charges, charges that are no object, and none in an object: no table */
	static const char *const none[] = { "", ",\"charges\":5", ",\"charges\":{}" };
	for (size_t i = 0; i < ELEMENTSOF(none); i++) {
		char a[128];

		calls_reset();
		snprintf(a, sizeof(a), "{\"cgroup\":{\"path\":\"/svc\",\"state\":\"live\"}%s}", none[i]);
		answers[0] = a;
		assert_int_equal(run(verb_show, args, &text), EXIT_OK);
		assert_int_equal(nsent, 1); /* and no Status call */
		assert_lacks(text, "RESOURCE");
		free(text);
	}
}

/* ---- charged resources' units (charge-units.h) ---- */

static void test_charge_units(void **state)
{
	(void)state;
	charge_units_reset();
	struct json_object *st = json_tokener_parse(
		"{\"resources\":[{\"name\":\"gpu\",\"unit\":\"bytes\",\"budget\":4194304},"
		"{\"name\":\"slots\",\"unit\":\"count\"},{\"name\":\"lic\",\"unit\":\"seconds\"},"
		"{\"name\":\"odd\",\"unit\":\"parsecs\"},{\"unit\":\"bytes\"}]}");
	assert_non_null(st);
	assert_int_equal(charge_units_from_status(st), 0);
	assert_int_equal(charge_unit("gpu"), ACCT_UNIT_BYTES);
	assert_int_equal(charge_unit("slots"), ACCT_UNIT_COUNT);
	assert_int_equal(charge_unit("lic"), ACCT_UNIT_USEC);
	assert_int_equal(charge_unit("odd"), -ENOENT); /* a unit of a later acctd: integers */
	assert_int_equal(charge_unit("nope"), -ENOENT);
	assert_null(charge_units_unknown());
	int unit;
	assert_string_equal(charge_units_resource(0, &unit), "gpu");
	assert_string_equal(charge_units_resource(3, &unit), "odd");
	assert_null(charge_units_resource(4, &unit)); /* the nameless entry is no resource */
	assert_string_equal(charge_unit_name(ACCT_UNIT_USEC), "seconds");
	assert_string_equal(charge_unit_name(-ENOENT), "");

	/* values as the kernel's: sizes, durations, integers (and integers when not known) */
	assert_string_equal(fmt_charge("gpu", 3145728).s, "3.0M");
	assert_string_equal(fmt_charge("lic", 1500000).s, "1.5s");
	assert_string_equal(fmt_charge("slots", 12345).s, "12345");
	assert_string_equal(fmt_charge("nope", 3145728).s, "3145728");
	json_object_put(st);

	/* a Status without the list (an older acctd): unknown, and why */
	st = json_tokener_parse("{\"version\":\"0\"}");
	assert_int_equal(charge_units_from_status(st), 0);
	assert_int_equal(charge_unit("gpu"), -ENOENT);
	assert_non_null(charge_units_unknown());
	json_object_put(st);
	charge_units_reset();
	assert_int_equal(charge_unit("lic"), -ENOENT);

	/* integrals: the time unit by the time recorded */
	double per;
	assert_string_equal(charge_time_unit(59999999, &per), "s");
	assert_string_equal(charge_time_unit(60000000, &per), "min");
	assert_true(per == 60);
	assert_string_equal(charge_time_unit(INT64_C(3600000000), &per), "h");
	utf8 = false;
	/* 3 MiB held for 2 h: 6 MiB x h */
	assert_string_equal(fmt_charge_integral(ACCT_UNIT_BYTES, 3.0 * 1048576 * 7200, INT64_C(7200000000)).s, "6.0M*h");
	/* 1 KiB held for 30 s: 30 KiB x s */
	assert_string_equal(fmt_charge_integral(ACCT_UNIT_BYTES, 1024.0 * 30, 30000000).s, "30.0K*s");
	/* 3 held for an hour is 3 hours, as CPU time (cores x time) is a time */
	assert_string_equal(fmt_charge_integral(ACCT_UNIT_COUNT, 3.0 * 3600, INT64_C(3600000000)).s,
			    fmt_duration(INT64_C(3) * 3600000000).s);
	/* 2 s held for 2 min: 4 s x min */
	assert_string_equal(fmt_charge_integral(ACCT_UNIT_USEC, 2e6 * 120, 120000000).s, "4s*min");
	assert_string_equal(fmt_charge_integral(-ENOENT, 12.5, 1000000).s, "12.5");
	utf8 = true;
	assert_string_equal(fmt_charge_integral(ACCT_UNIT_BYTES, 1024.0 * 30, 30000000).s, "30.0K·s");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_usage_table, setup, teardown),
		cmocka_unit_test_setup_teardown(test_usage_sort_and_top, setup, teardown),
		cmocka_unit_test_setup_teardown(test_usage_json_csv, setup, teardown),
		cmocka_unit_test_setup_teardown(test_usage_gaps, setup, teardown),
		cmocka_unit_test_setup_teardown(test_usage_dates, setup, teardown),
		cmocka_unit_test_setup_teardown(test_usage_calls, setup, teardown),
		cmocka_unit_test_setup_teardown(test_usage_charges, setup, teardown),
		cmocka_unit_test_setup_teardown(test_usage_charge_sort_csv, setup, teardown),
		cmocka_unit_test_setup_teardown(test_show, setup, teardown),
		cmocka_unit_test_setup_teardown(test_show_dead_and_missing, setup, teardown),
		cmocka_unit_test_setup_teardown(test_show_charges, setup, teardown),
		cmocka_unit_test_setup_teardown(test_charge_units, setup, teardown),
	};

	/* the tables' times in a zone every host has */
	setenv("TZ", "UTC", 1);
	tzset();
	return cmocka_run_group_tests(tests, NULL, NULL);
}
