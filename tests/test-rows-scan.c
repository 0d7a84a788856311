/* test-rows-scan.c - unit tests of acctctl's List reply reader
 * (daemon/acctctl/rows-scan.h): the figures of every CgroupSummary member,
 * what counts as absent (null, a wrong type, out of range), members it does
 * not know, rows across replies, and the replies it must refuse (errors,
 * malformed text). Built from the sources with arena.c. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "rows-scan.h"

/* arena.c's allocation failure exit (ctl-util.c, which needs all of acctctl) */
void oom_exit(void)
{
	abort();
}

static int scan(const char *text, struct rows *rs, bool *continues)
{
	return rows_scan_reply(text, strlen(text), rs, continues);
}

static void free_rows(struct rows *rs)
{
	free(rs->v);
	arena_done(&rs->strings);
	*rs = (struct rows){ 0 };
}

static void test_figures(void **state)
{
	struct rows rs = { 0 };
	bool more = false;
	const char *text =
		"{\"parameters\":{\"cgroups\":["
		"{\"path\":\"/\",\"state\":\"live\",\"memory\":{\"value\":51699560448,\"age_us\":615961,\"motion_per_s\":0.0},"
		"\"cpu_rate\":{\"value\":1.25,\"age_us\":7},\"load1\":0.5,"
		"\"psi_some_avg10\":{\"cpu\":9.91,\"memory\":0.41,\"io\":2.17},"
		"\"io_read_bytes_rate\":4096.0,\"io_write_bytes_rate\":0.0,\"tasks\":{\"value\":12,\"age_us\":3},"
		"\"io_read_bytes\":{\"value\":1048576,\"age_us\":4},\"io_write_bytes\":{\"value\":0,\"age_us\":5}},"
		"{\"path\":\"/a\\u00e9\\\\x01\",\"state\":\"dead\",\"memory\":{\"value\":1,\"bound\":4096},"
		"\"psi_some_avg10\":2.5,\"load1\":null,\"io_read_bytes_rate\":1.0,\"future\":{\"x\":[1,{\"y\":null}]}}"
		"]},\"continues\":true}";

	assert_int_equal(scan(text, &rs, &more), 0);
	assert_true(more);
	assert_int_equal(rs.n, 2);

	const struct row *r = &rs.v[0];
	assert_string_equal(r->path, "/");
	assert_false(r->dead);
	assert_true(r->mem.set);
	assert_int_equal(r->mem.value, INT64_C(51699560448));
	assert_int_equal(r->mem.age_us, 615961);
	assert_int_equal(r->mem.bound, 0);
	assert_true(r->has_cpu);
	assert_true(r->cpu == 1.25);
	assert_int_equal(r->cpu_age, 7);
	assert_true(r->has_load && r->load == 0.5);
	assert_true(r->has_psi[0] && r->has_psi[1] && r->has_psi[2]);
	assert_true(r->psi[0] == 9.91 && r->psi[1] == 0.41 && r->psi[2] == 2.17);
	assert_true(r->has_io && r->io_read == 4096 && r->io_write == 0);
	assert_true(r->tasks.set);
	assert_int_equal(r->tasks.value, 12);
	assert_int_equal(r->tasks.age_us, 3);
	assert_true(r->io_read_total.set && r->io_read_total.value == 1048576 && r->io_read_total.age_us == 4);
	assert_true(r->io_write_total.set && r->io_write_total.value == 0 && r->io_write_total.age_us == 5);
	assert_int_equal(r->parent, SIZE_MAX);

	r = &rs.v[1];
	assert_string_equal(r->path, "/a\xc3\xa9\\x01"); /* unescaped: the API's text of the name */
	assert_true(r->dead);
	assert_true(r->mem.set);
	assert_int_equal(r->mem.bound, 4096);
	assert_int_equal(r->mem.age_us, -1);
	assert_false(r->has_cpu);
	assert_int_equal(r->cpu_age, -1);
	assert_false(r->has_load);			 /* null */
	assert_true(r->has_psi[0] && r->psi[0] == 2.5); /* a single figure: the CPU's */
	assert_false(r->has_psi[1] || r->has_psi[2]);
	assert_false(r->has_io); /* only one of the two rates */
	assert_false(r->tasks.set || r->io_read_total.set || r->io_write_total.set);
	free_rows(&rs);
}

/* null, a wrong type or a number out of range: the figure is absent, the
 * row stays; a summary without a path is left out. */
static void test_absent(void **state)
{
	struct rows rs = { 0 };
	bool more = true;
	const char *text = "{\"parameters\":{\"cgroups\":["
			   "{\"path\":\"/x\",\"memory\":{\"value\":1.5},\"cpu_rate\":\"fast\",\"load1\":\"1\","
			   "\"psi_some_avg10\":{\"cpu\":null,\"memory\":true,\"io\":1e999},\"state\":7},"
			   "{\"state\":\"live\",\"memory\":{\"value\":5}},"
			   "{\"path\":null},"
			   "{\"path\":\"/y\",\"memory\":null,\"cpu_rate\":{\"value\":1e400,\"age_us\":3},"
			   "\"io_read_bytes_rate\":1,\"io_write_bytes_rate\":2},"
			   "{\"path\":\"/z\",\"memory\":{\"value\":99999999999999999999}}"
			   "]}}";

	assert_int_equal(scan(text, &rs, &more), 0);
	assert_false(more); /* no "continues": the last reply */
	assert_int_equal(rs.n, 3);
	assert_string_equal(rs.v[0].path, "/x");
	assert_false(rs.v[0].mem.set);
	assert_false(rs.v[0].has_cpu || rs.v[0].has_load || rs.v[0].dead);
	assert_false(rs.v[0].has_psi[0] || rs.v[0].has_psi[1] || rs.v[0].has_psi[2]);
	assert_string_equal(rs.v[1].path, "/y");
	assert_false(rs.v[1].mem.set);
	assert_false(rs.v[1].has_cpu);
	assert_int_equal(rs.v[1].cpu_age, -1);
	assert_true(rs.v[1].has_io && rs.v[1].io_read == 1 && rs.v[1].io_write == 2);
	assert_string_equal(rs.v[2].path, "/z");
	assert_false(rs.v[2].mem.set);
	free_rows(&rs);
}

/* Replies append: the rows of a stream end up in one array. */
static void test_many_replies(void **state)
{
	struct rows rs = { 0 };
	bool more;
	char *text = NULL;
	size_t size = 0;

	for (int reply = 0; reply < 3; reply++) {
		FILE *f = open_memstream(&text, &size);
		assert_non_null(f);
		fputs("{\"continues\":", f);
		fputs(reply < 2 ? "true" : "false", f);
		fputs(",\"parameters\":{\"cgroups\":[", f);
		for (int i = 0; i < 500; i++)
			fprintf(f, "%s{\"path\":\"/c-%d-%d\",\"memory\":{\"value\":%d}}", i ? "," : "", reply, i, i);
		fputs("]}}", f);
		fclose(f);
		assert_int_equal(rows_scan_reply(text, size, &rs, &more), 0);
		assert_int_equal(more, reply < 2);
		free(text);
	}
	assert_int_equal(rs.n, 1500);
	assert_string_equal(rs.v[1499].path, "/c-2-499");
	assert_int_equal(rs.v[1499].mem.value, 499);
	assert_string_equal(rs.v[500].path, "/c-1-0");
	free_rows(&rs);
}

static void test_refused(void **state)
{
	static const struct {
		const char *text;
		int r;
	} cases[] = {
		{ "{\"error\":\"io.acctd.Accounting.NoSuchCgroup\",\"parameters\":{\"cgroup\":\"/x\"}}", -EPROTO },
		{ "{\"parameters\":{\"cgroup\":\"/x\"},\"error\":\"org.varlink.service.PermissionDenied\"}", -EPROTO },
		{ "{\"parameters\":{}}", -EBADMSG },
		{ "{}", -EBADMSG },
		{ "{\"parameters\":{\"cgroups\":{}}}", -EBADMSG },
		{ "{\"parameters\":{\"cgroups\":[]}} x", -EBADMSG },
		{ "{\"parameters\":{\"cgroups\":[]},\"continues\":1}", -EBADMSG },
		{ "{\"parameters\":{\"cgroups\":[{\"path\":\"/\xc0\xaf\"}]}}", -EBADMSG },
		{ "{\"parameters\":{\"cgroups\":[{\"path\":\"/a\",}]}}", -EBADMSG },
		{ "{\"parameters\":{\"cgroups\":[{\"path\":\"/a\"}", -EBADMSG },
		{ "[]", -EBADMSG },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(*cases); i++) {
		struct rows rs = { 0 };
		bool more = false;
		int r = scan(cases[i].text, &rs, &more);
		if (r != cases[i].r)
			fail_msg("%s: %d, expected %d", cases[i].text, r, cases[i].r);
		free_rows(&rs);
	}
	/* the empty list is a list */
	struct rows rs = { 0 };
	bool more = true;
	assert_int_equal(scan("{\"parameters\":{\"cgroups\":[]}}", &rs, &more), 0);
	assert_int_equal(rs.n, 0);
	assert_false(more);
	free_rows(&rs);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_figures),
		cmocka_unit_test(test_absent),
		cmocka_unit_test(test_many_replies),
		cmocka_unit_test(test_refused),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
