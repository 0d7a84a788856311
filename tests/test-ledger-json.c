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
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "ledger-json.h"
#include "name-escape.h"
#include "topology.h"
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
/* The record and the List entry of cgroups with every kind of value, byte for
 * byte against tests/data/ledger-json/records.json (ACCT_LEDGER_JSON_GOLDEN_WRITE=1
 * rewrites it): the writers' text is the API's, and a restructuring of how
 * they write must not change a byte of it. */
static void test_golden(void **state)
{
	struct acct_topology *t = NULL;
	struct acct_domain *d = NULL;
	struct acct_ledger *l = NULL;
	struct acct_ledger_budgets budgets = { 1 << 20, 10000, 8 };
	struct acct_json_buf all = { 0 };
	const uint64_t now = 1000000000;
	static const double doubles[] = { 0.1, 1e-7, 123456789.125, -2.5, 1e300, -0.0, 0, 3, 1.0 / 3 };

	(void)state;
	assert_int_equal(acct_topology_simulate(4, 2, &t), 0);
	struct acct_domain_options o = { .topology = t };
	assert_int_equal(acct_domain_new(&o, &d), 0);
	acct_topology_free(t);
	assert_int_equal(acct_ledger_new(d, &budgets, &l), 0);
	int sda = acct_ledger_io_device_add(l, 8, 0, "sda"), anon = acct_ledger_io_device_add(l, 253, 7, NULL);
	assert_true(sda >= 0 && anon >= 0);
	for (size_t i = 0; i < ELEMENTSOF(doubles); i++) {
		char path[64];
		struct acct_cgroup *cg = NULL;
		snprintf(path, sizeof(path), "/c%zu\xff\"", i);
		struct acct_cgroup_id id = { .path = path, .depth = 1, .hierarchies = 3, .inode = { 42 } };
		assert_int_equal(acct_ledger_add(l, &id, now - 5000000, &cg), 0);
		if (i == 0) { /* one never read */
			assert_int_equal(acct_cgroup_list_entry_write(&all, cg, now), 0);
			assert_int_equal(acct_cgroup_write_json(&all, l, cg, now, false, 2), 0);
			continue;
		}
		for (int q = 0; q < _ACCT_Q_MAX; q++)
			if (q % (int)(i + 1) != 1)
				acct_cgroup_set(cg, (enum acct_quantity)q, (int64_t)(q * 1000003 * i) - (q == 3 ? INT64_MAX : 0));
		if (i % 2)
			assert_int_equal(acct_counter_upgrade(cg->q[ACCT_Q_MEMORY]), 0);
		acct_cgroup_set_double(&cg->cpu_rate_bits, doubles[i]);
		__atomic_store_n(&cg->cpu_rate_known, i % 3 != 0, __ATOMIC_RELEASE);
		acct_cgroup_set_double(&cg->memory_motion_bits, -doubles[i]);
		__atomic_store_n(&cg->memory_motion_known, i % 2 == 0, __ATOMIC_RELEASE);
		for (int a = 0; a < 3; a++) {
			acct_cgroup_set_double(&cg->cpu_rate_avg_bits[a], doubles[(i + (size_t)a) % ELEMENTSOF(doubles)]);
			cg->loadavg[a] = (unsigned long)(i * 1000 + (size_t)a * 2047);
		}
		/* fed for 0 s to 16 min: all, some or none of the three averages
		 * warming; every third record appeared while acctd ran */
		acct_cgroup_set_load_since(cg, now - (uint64_t)(i * i) * 15 * 1000000, i % 3 == 2);
		for (int r = 0; r < _ACCT_PSI_MAX; r++) {
			__atomic_store_n(&cg->psi_known[r], (i + (size_t)r) % 2 == 0, __ATOMIC_RELEASE);
			for (int k = 0; k < 2; k++)
				for (int a = 0; a < 3; a++)
					cg->psi_avg[r][k][a] = (uint32_t)(i * 37 + (size_t)r * 11 + (size_t)k * 5 + (size_t)a);
		}
		int64_t io[_ACCT_IO_STAT_MAX] = { 4096, 8192, 3, 5, -1, (int64_t)i };
		assert_int_equal(acct_cgroup_set_io_device(cg, (unsigned)(i % 2 ? sda : anon), io), 0);
		for (int k = 0; k < _ACCT_IO_STAT_MAX; k++)
			acct_cgroup_set_double(&cg->io_rate_bits[k], doubles[(i + (size_t)k) % ELEMENTSOF(doubles)]);
		__atomic_store_n(&cg->io_rate_known, i % 4 != 1, __ATOMIC_RELEASE);
		assert_int_equal(acct_cgroup_set_memstat(l, cg, "anon", 4, (int64_t)i * 4096), 0);
		assert_int_equal(acct_cgroup_set_memstat(l, cg, "we\"ird", 6, 7), 0);
		assert_int_equal(acct_cgroup_set_node(cg, 0, 6 << 20), 0);
		assert_int_equal(acct_cgroup_set_node(cg, 1, (int64_t)i << 20), 0);
		__atomic_store_n(&cg->memstat_bound, i % 2 ? 0 : 64 * i, __ATOMIC_RELAXED);
		__atomic_store_n(&cg->sample_errors, i, __ATOMIC_RELAXED);
		for (int g = 0; g < _ACCT_GROUP_MAX; g++)
			if ((size_t)g != i % 4)
				cg->sampled_us[g] = now - 1500000 * (uint64_t)(g + 1);
		if (i == 5)
			acct_ledger_kill(l, cg, now - 1000000);
		assert_int_equal(acct_cgroup_list_entry_write(&all, cg, now), 0);
		assert_int_equal(acct_cgroup_write_json(&all, l, cg, now, i % 2 == 0, 2), 0);
		acct_json_buf_append(&all, "\n", 1);
	}

	char path[4096];
	const char *dir = getenv("ACCT_TEST_DATA");
	assert_non_null(dir);
	snprintf(path, sizeof(path), "%s/ledger-json/records.json", dir);
	if (getenv("ACCT_LEDGER_JSON_GOLDEN_WRITE")) {
		FILE *out = fopen(path, "we");
		assert_non_null(out);
		assert_int_equal(fwrite(all.data, 1, all.len, out), all.len);
		assert_int_equal(fclose(out), 0);
	} else {
		FILE *in = fopen(path, "re");
		assert_non_null(in);
		char *want = calloc(1, 1 << 20);
		assert_non_null(want);
		size_t n = fread(want, 1, (1 << 20) - 1, in);
		fclose(in);
		assert_int_equal(n, all.len);
		assert_memory_equal(want, all.data, n);
		free(want);
	}
	acct_json_buf_free(&all);
	acct_ledger_free(l);
	acct_domain_free(d);
}

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
		cmocka_unit_test(test_golden),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
