/* test-api-budget.c - unit tests of the API's resource budgets
 * (daemon/acctd/api-budget.h): per-uid and total limits, refusals counted
 * and named, root exempt from the byte and Watch budgets but not from
 * connections, resize and release, entries gone when nothing is charged. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "api-budget.h"

#define NOBODY 65534
#define OTHER 1000

static struct api_budget_limits limits(void)
{
	struct api_budget_limits l;
	for (int k = 0; k < _BUDGET_MAX; k++) {
		l.per_user[k] = 100;
		l.total[k] = 250;
	}
	return l;
}

static void test_per_user_limit(void **state)
{
	struct api_budget b;
	struct api_budget_limits l = limits();
	enum api_budget_scope scope = BUDGET_TOTAL;

	(void)state;
	api_budget_init(&b, &l);
	assert_int_equal(api_budget_room(&b, NOBODY, BUDGET_INPUT), 100);
	assert_int_equal(api_budget_charge(&b, NOBODY, BUDGET_INPUT, 60, NULL), 0);
	assert_int_equal(api_budget_room(&b, NOBODY, BUDGET_INPUT), 40);
	/* Over the user's own limit: refused whole, counted, named. */
	assert_int_equal(api_budget_charge(&b, NOBODY, BUDGET_INPUT, 41, &scope), -EDQUOT);
	assert_int_equal(scope, BUDGET_PER_USER);
	assert_int_equal(b.refused[BUDGET_INPUT], 1);
	assert_int_equal(api_budget_used(&b, NOBODY, BUDGET_INPUT), 60);
	assert_string_equal(api_budget_limit_name(BUDGET_INPUT, scope), "max_input_bytes_per_user");
	/* Exactly the room fits. */
	assert_int_equal(api_budget_charge(&b, NOBODY, BUDGET_INPUT, 40, NULL), 0);
	assert_int_equal(api_budget_room(&b, NOBODY, BUDGET_INPUT), 0);
	/* Another user and another kind are unaffected. */
	assert_int_equal(api_budget_room(&b, OTHER, BUDGET_INPUT), 100);
	assert_int_equal(api_budget_room(&b, NOBODY, BUDGET_OUTPUT), 100);
	assert_int_equal(api_budget_charge(&b, OTHER, BUDGET_INPUT, 100, NULL), 0);
	assert_int_equal(b.used[BUDGET_INPUT], 200);
	api_budget_done(&b);
}

static void test_total_limit(void **state)
{
	struct api_budget b;
	struct api_budget_limits l = limits();
	enum api_budget_scope scope = BUDGET_PER_USER;

	(void)state;
	api_budget_init(&b, &l);
	for (uid_t u = 1; u <= 2; u++)
		assert_int_equal(api_budget_charge(&b, u, BUDGET_OUTPUT, 100, NULL), 0);
	/* A third user has its own room but the total has 50 left. */
	assert_int_equal(api_budget_room(&b, 3, BUDGET_OUTPUT), 50);
	assert_int_equal(api_budget_charge(&b, 3, BUDGET_OUTPUT, 51, &scope), -EDQUOT);
	assert_int_equal(scope, BUDGET_TOTAL);
	assert_string_equal(api_budget_limit_name(BUDGET_OUTPUT, scope), "max_output_bytes");
	assert_int_equal(api_budget_charge(&b, 3, BUDGET_OUTPUT, 50, NULL), 0);
	/* What one user gives back, another may take. */
	api_budget_release(&b, 1, BUDGET_OUTPUT, 30);
	assert_int_equal(api_budget_room(&b, 3, BUDGET_OUTPUT), 30);
	api_budget_done(&b);
}

static void test_root_exempt_but_not_from_connections(void **state)
{
	struct api_budget b;
	struct api_budget_limits l = limits();

	(void)state;
	api_budget_init(&b, &l);
	assert_true(api_budget_exempt(0, BUDGET_INPUT));
	assert_false(api_budget_exempt(0, BUDGET_CONNECTIONS));
	assert_false(api_budget_exempt(NOBODY, BUDGET_INPUT));
	assert_int_equal(api_budget_room(&b, 0, BUDGET_WATCH_CGROUPS), UINT64_MAX);
	assert_int_equal(api_budget_charge(&b, 0, BUDGET_WATCH_CGROUPS, 1000, NULL), 0);
	assert_int_equal(api_budget_charge(&b, 0, BUDGET_WATCH_CGROUPS, UINT64_MAX, NULL), 0);
	assert_int_equal(api_budget_used(&b, 0, BUDGET_WATCH_CGROUPS), UINT64_MAX); /* saturates */
	/* Root's use counts in the total: others feel it. */
	assert_int_equal(api_budget_room(&b, NOBODY, BUDGET_WATCH_CGROUPS), 0);
	assert_int_equal(api_budget_charge(&b, NOBODY, BUDGET_WATCH_CGROUPS, 1, NULL), -EDQUOT);
	/* Connections: root is limited like anybody. */
	assert_int_equal(api_budget_charge(&b, 0, BUDGET_CONNECTIONS, 100, NULL), 0);
	assert_int_equal(api_budget_charge(&b, 0, BUDGET_CONNECTIONS, 1, NULL), -EDQUOT);
	assert_int_equal(b.refused[BUDGET_CONNECTIONS], 1);
	api_budget_done(&b);
}

static void test_resize_and_release(void **state)
{
	struct api_budget b;
	struct api_budget_limits l = limits();
	uint64_t charged = 0;

	(void)state;
	api_budget_init(&b, &l);
	assert_int_equal(api_budget_resize(&b, NOBODY, BUDGET_INPUT, &charged, 70, NULL), 0);
	assert_int_equal(charged, 70);
	/* Growing past the limit fails and leaves the charge as it was. */
	assert_int_equal(api_budget_resize(&b, NOBODY, BUDGET_INPUT, &charged, 101, NULL), -EDQUOT);
	assert_int_equal(charged, 70);
	assert_int_equal(api_budget_used(&b, NOBODY, BUDGET_INPUT), 70);
	assert_int_equal(api_budget_resize(&b, NOBODY, BUDGET_INPUT, &charged, 100, NULL), 0);
	assert_int_equal(api_budget_resize(&b, NOBODY, BUDGET_INPUT, &charged, 10, NULL), 0);
	assert_int_equal(api_budget_used(&b, NOBODY, BUDGET_INPUT), 10);
	assert_int_equal(b.used[BUDGET_INPUT], 10);
	assert_int_equal(b.nr_users, 1);
	/* Nothing charged any more: the entry goes. Releasing more than is
	 * charged, or for a uid never seen, is harmless. */
	assert_int_equal(api_budget_resize(&b, NOBODY, BUDGET_INPUT, &charged, 0, NULL), 0);
	assert_int_equal(b.nr_users, 0);
	api_budget_release(&b, NOBODY, BUDGET_INPUT, 5);
	api_budget_release(&b, 4242, BUDGET_OUTPUT, 5);
	assert_int_equal(b.used[BUDGET_INPUT], 0);
	/* An entry stays while any kind is charged. */
	assert_int_equal(api_budget_charge(&b, NOBODY, BUDGET_WATCHES, 1, NULL), 0);
	assert_int_equal(api_budget_charge(&b, NOBODY, BUDGET_OUTPUT, 1, NULL), 0);
	api_budget_release(&b, NOBODY, BUDGET_WATCHES, 1);
	assert_int_equal(b.nr_users, 1);
	assert_int_equal(api_budget_used(&b, NOBODY, BUDGET_OUTPUT), 1);
	api_budget_done(&b);
}

static void test_reload_keeps_charges(void **state)
{
	struct api_budget b;
	struct api_budget_limits l = limits();

	(void)state;
	api_budget_init(&b, &l);
	assert_int_equal(api_budget_charge(&b, NOBODY, BUDGET_WATCHES, 80, NULL), 0);
	l.per_user[BUDGET_WATCHES] = 50;
	api_budget_set_limits(&b, &l);
	assert_int_equal(api_budget_used(&b, NOBODY, BUDGET_WATCHES), 80);
	assert_int_equal(api_budget_room(&b, NOBODY, BUDGET_WATCHES), 0);
	assert_int_equal(api_budget_charge(&b, NOBODY, BUDGET_WATCHES, 1, NULL), -EDQUOT);
	api_budget_release(&b, NOBODY, BUDGET_WATCHES, 40);
	assert_int_equal(api_budget_room(&b, NOBODY, BUDGET_WATCHES), 10);
	assert_int_equal(api_budget_charge(&b, NOBODY, BUDGET_WATCHES, 0, NULL), 0); /* nothing asked, nothing refused */
	assert_int_equal(b.refused[BUDGET_WATCHES], 1);
	api_budget_done(&b);
}

static void test_names(void **state)
{
	(void)state;
	for (int k = 0; k < _BUDGET_MAX; k++) {
		assert_non_null(api_budget_kind_name(k));
		assert_non_null(strstr(api_budget_limit_name(k, BUDGET_PER_USER), "_per_user"));
		assert_null(strstr(api_budget_limit_name(k, BUDGET_TOTAL), "_per_user"));
	}
	assert_string_equal(api_budget_limit_name(BUDGET_CONNECTIONS, BUDGET_TOTAL), "max_connections");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_per_user_limit),
		cmocka_unit_test(test_total_limit),
		cmocka_unit_test(test_root_exempt_but_not_from_connections),
		cmocka_unit_test(test_resize_and_release),
		cmocka_unit_test(test_reload_keeps_charges),
		cmocka_unit_test(test_names),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
