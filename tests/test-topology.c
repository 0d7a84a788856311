/* test-topology.c - the real topology, simulated ones and their shard mapping. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <unistd.h>

#include <cmocka.h>

#include "topology.h"

static void test_detect(void **state)
{
	struct acct_topology *t = NULL;

	assert_int_equal(acct_topology_detect(&t), 0);
	assert_true(t->nr_shards >= (unsigned)sysconf(_SC_NPROCESSORS_ONLN));
	assert_int_equal(t->nr_real_cpus, t->nr_shards);
	assert_true(t->nr_nodes >= 1);
	assert_false(t->simulated);
	assert_int_equal(acct_topology_spread(t), 1);
	for (unsigned i = 0; i < t->nr_shards; i++) {
		assert_true(t->shard_node[i] < t->nr_nodes);
		assert_int_equal(acct_topology_shard_of(t, i, 12345), i);
	}
	acct_topology_free(t);
}

static void test_simulate_split(void **state)
{
	struct acct_topology *t = NULL;

	assert_int_equal(acct_topology_simulate(64, 4, &t), 0);
	assert_int_equal(t->nr_shards, 64);
	assert_int_equal(t->nr_nodes, 4);
	for (unsigned n = 0; n < 4; n++)
		assert_int_equal(acct_topology_node_shards(t, n), 16);
	assert_int_equal(t->shard_node[0], 0);
	assert_int_equal(t->shard_node[15], 0);
	assert_int_equal(t->shard_node[16], 1);
	assert_int_equal(t->shard_node[63], 3);
	acct_topology_free(t);

	/* uneven: 10 CPUs in 3 nodes -> 3, 3... the remainder goes to the last nodes */
	assert_int_equal(acct_topology_simulate(10, 3, &t), 0);
	assert_int_equal(acct_topology_node_shards(t, 0), 3);
	assert_int_equal(acct_topology_node_shards(t, 1), 3);
	assert_int_equal(acct_topology_node_shards(t, 2), 4);
	acct_topology_free(t);
}

static void test_simulate_invalid(void **state)
{
	struct acct_topology *t = NULL;

	assert_int_equal(acct_topology_simulate(4, 0, &t), -EINVAL);
	assert_int_equal(acct_topology_simulate(4, 5, &t), -EINVAL);
	assert_int_equal(acct_topology_simulate(70000, 4, &t), -EINVAL);
	assert_null(t);
	assert_int_equal(acct_topology_from_spec("64x", &t), -EINVAL);
	assert_int_equal(acct_topology_from_spec("x4", &t), -EINVAL);
	assert_int_equal(acct_topology_from_spec("64x4z", &t), -EINVAL);
	assert_int_equal(acct_topology_from_spec("banana", &t), -EINVAL);
	assert_null(t);
}

/* The property restartable sequences rely on: two real CPUs never map to the
 * same shard, whatever the salts; and every shard is reachable. */
static void test_shard_of_injective(void **state)
{
	struct acct_topology *t = NULL;

	assert_int_equal(acct_topology_from_spec("64x4", &t), 0);
	unsigned real = t->nr_real_cpus, spread = acct_topology_spread(t);
	assert_int_equal(spread, 64 / real);
	uint8_t seen[64] = { 0 };
	for (unsigned cpu = 0; cpu < real; cpu++)
		for (unsigned salt = 0; salt < 4 * spread; salt++) {
			unsigned s = acct_topology_shard_of(t, cpu, salt);
			assert_true(s < 64);
			assert_int_equal(s % real, cpu);
			seen[s] = 1;
		}
	unsigned reached = 0;
	for (unsigned s = 0; s < 64; s++)
		reached += seen[s];
	assert_int_equal(reached, spread * real);
	acct_topology_free(t);

	/* fewer simulated CPUs than real ones: no ownership, spread 0 */
	if (real > 1) {
		assert_int_equal(acct_topology_simulate(1, 1, &t), 0);
		assert_int_equal(acct_topology_spread(t), 0);
		assert_int_equal(acct_topology_shard_of(t, 1, 0), 0);
		acct_topology_free(t);
	}
}

static void test_dup(void **state)
{
	struct acct_topology *t = NULL, *u = NULL;

	assert_int_equal(acct_topology_simulate(8, 2, &t), 0);
	assert_int_equal(acct_topology_dup(t, &u), 0);
	assert_ptr_not_equal(t->shard_node, u->shard_node);
	assert_memory_equal(t->shard_node, u->shard_node, 8 * sizeof(*t->shard_node));
	assert_int_equal(u->nr_nodes, 2);
	assert_true(u->simulated);
	acct_topology_free(t);
	acct_topology_free(u);
	assert_null(acct_topology_free(NULL));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_detect),
		cmocka_unit_test(test_simulate_split),
		cmocka_unit_test(test_simulate_invalid),
		cmocka_unit_test(test_shard_of_injective),
		cmocka_unit_test(test_dup),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
