/* test-ledger-json.c - unit tests of ledger-json.c's documents with cgroup
 * names a hostile user can make: whatever bytes a name holds, a record, a
 * List entry and the strings that quote a path are JSON that a strict varlink
 * peer accepts (valid UTF-8), with the name as its served text
 * (name-escape.h). The other properties of the writers are checked by
 * test-varlink.c (json-c prints back their text) and the integration tests. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "ledger-json.h"
#include "name-escape.h"
#include "util.h"
#include "varlink.h"

/* name, and the "path" a client reads */
static const struct {
	const char *raw, *served;
} names[] = {
	{ "/bad-\xff\xfe.scope", "/bad-\\xff\\xfe.scope" },
	{ "/cut-\xe2\x9c", "/cut-\\xe2\\x9c" },
	{ "/overlong-\xc0\xaf", "/overlong-\\xc0\\xaf" },
	{ "/surrogate-\xed\xa0\x80", "/surrogate-\\xed\\xa0\\x80" },
	{ "/ok-\xc3\xa9-\xf0\x9f\x90\xa7", "/ok-\xc3\xa9-\xf0\x9f\x90\xa7" },
	{ "/evil\x1b]0;x\x07\t", "/evil\x1b]0;x\x07\t" }, /* JSON escapes controls itself */
	{ "/machine-qemu\\x2d1.scope", "/machine-qemu\\x2d1.scope" },
	{ "/\\\xff", "/\\\\xff" },
};

/* text parses as a varlink message (strict: valid UTF-8) whose `path` is want */
static void expect_valid(const char *text, size_t len, const char *want)
{
	struct json_object *o = NULL, *p = NULL;

	assert_int_equal(varlink_message_parse(text, len, 64, &o), 0);
	assert_true(json_object_object_get_ex(o, "path", &p));
	assert_string_equal(json_object_get_string(p), want);
	json_object_put(o);
}

static void test_writers(void **state)
{
	struct acct_domain *d = NULL;
	struct acct_ledger *l = NULL;
	struct acct_ledger_budgets budgets = { 4096, 1000, 1 };

	(void)state;
	assert_int_equal(acct_domain_new(NULL, &d), 0);
	assert_int_equal(acct_ledger_new(d, &budgets, &l), 0);
	unsigned nodes = acct_domain_topology(d)->nr_nodes;
	for (size_t i = 0; i < ELEMENTSOF(names); i++) {
		struct acct_cgroup *cg = NULL;
		struct acct_cgroup_id id = { .path = names[i].raw, .depth = 1, .hierarchies = 1 };
		struct acct_json_buf b = { 0 };

		assert_int_equal(acct_ledger_add(l, &id, 1000, &cg), 0);
		assert_int_equal(acct_cgroup_write_json(&b, l, cg, 2000, false, nodes), 0);
		expect_valid(b.data, b.len, names[i].served);
		acct_json_buf_free(&b);
		assert_int_equal(acct_cgroup_list_entry_write(&b, cg, 2000), 0);
		expect_valid(b.data, b.len, names[i].served);
		acct_json_buf_free(&b);

		/* the json-c forms (--dump, the state file, Watch) print the same */
		struct json_object *o = acct_cgroup_to_json(l, cg, 2000, false, nodes);
		assert_non_null(o);
		const char *t = json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE);
		expect_valid(t, strlen(t), names[i].served);
		json_object_put(o);
	}
	acct_ledger_free(l);
	acct_domain_free(d);
}

/* Strings that quote a path (a reconciliation's last violation, a BPF
 * mismatch, NoSuchCgroup's echo), cut by snprintf() anywhere. */
static void test_json_text(void **state)
{
	(void)state;
	for (size_t i = 0; i < ELEMENTSOF(names); i++) {
		struct json_object *msg = json_object_new_object();
		assert_non_null(msg);
		json_object_object_add(msg, "path", acct_json_text(names[i].raw));
		const char *t = json_object_to_json_string_ext(msg, JSON_C_TO_STRING_PLAIN);
		expect_valid(t, strlen(t), names[i].served);
		json_object_put(msg);
	}

	struct acct_reconcile_report rep = { 0 };
	/* "... /a/é" cut after the first byte of the é, then a name with ff */
	strcpy(rep.last_violation, "child_exceeds_parent /a/\xc3 > /b\xff");
	struct json_object *o = acct_reconcile_to_json(&rep), *v = NULL;
	const char *t = json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN);
	struct json_object *parsed = NULL;
	assert_int_equal(varlink_message_parse(t, strlen(t), 64, &parsed), 0);
	assert_true(json_object_object_get_ex(parsed, "last_violation", &v));
	assert_string_equal(json_object_get_string(v), "child_exceeds_parent /a/\\xc3 > /b\\xff");
	json_object_put(parsed);
	json_object_put(o);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_writers),
		cmocka_unit_test(test_json_text),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
