/* bench-json.c - times the ledger's JSON documents (lib/format/ledger-json.h)
 * for every cgroup of a real tree after one real full sampling pass:
 *
 *     tests/fakecg.py build --root ROOT --count 10000
 *     build/tests/bench/bench-json ROOT [ROUNDS]
 *
 * Per round, all cgroups: the full record as json-c objects printed as text
 * (acct_cgroup_to_json(): --dump, --state-file, Watch) and written directly
 * (acct_cgroup_write_json(): Get), and the List entry both ways. Prints the
 * median over ROUNDS (default 10) in ms. It only reports. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ledger-json.h"
#include "ledger.h"
#include "bench-tree.h"
#include "util.h"

int main(int argc, char **argv)
{
	struct bench_tree tree;
	int r, rounds = argc > 2 ? atoi(argv[2]) : 10;

	if (argc < 2 || rounds < 1) {
		fprintf(stderr, "usage: bench-json ROOT [ROUNDS]\n");
		return 2;
	}
	r = bench_tree_open(argv[1], ACCT_PASS_FAST | ACCT_PASS_SLOW | ACCT_PASS_LOAD, &tree);
	if (r < 0) {
		fprintf(stderr, "bench-json: setting up %s failed: %s\n", argv[1], strerror(-r));
		return 1;
	}
	struct acct_sampler *sampler = tree.sampler;
	struct acct_cgroup **cgs = tree.cgs;
	int n = (int)tree.n;

	acct_sampler_aggregate_load(sampler, cgs, (size_t)n, bench_now_ns() / 1000);
	unsigned nodes = acct_domain_topology(tree.domain)->nr_nodes;
	static const char *const names[4] = { "record json-c", "record text", "list json-c", "list text" };
	uint64_t *t = calloc((size_t)rounds * 4, sizeof(*t));
	size_t bytes[4] = { 0 };
	if (!t)
		return 1;
	for (int i = 0; i < rounds; i++)
		for (int k = 0; k < 4; k++) {
			struct acct_json_buf buf = { 0 };
			uint64_t now = bench_now_ns() / 1000, t0 = bench_now_ns();
			bytes[k] = 0;
			for (int c = 0; c < n; c++) {
				if (k == 0 || k == 2) {
					struct json_object *o = k == 0 ? acct_cgroup_to_json(tree.ledger, cgs[c], now, false, nodes)
								       : acct_cgroup_list_entry_json(cgs[c], now);
					bytes[k] += strlen(json_object_to_json_string_ext(
						o, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE));
					json_object_put(o);
				} else {
					buf.len = 0;
					if (k == 1)
						(void)acct_cgroup_write_json(&buf, tree.ledger, cgs[c], now, false, nodes);
					else
						(void)acct_cgroup_list_entry_write(&buf, cgs[c], now);
					bytes[k] += buf.len;
				}
			}
			t[k * rounds + i] = bench_now_ns() - t0;
			acct_json_buf_free(&buf);
		}
	for (int k = 0; k < 4; k++) {
		qsort(t + k * rounds, (size_t)rounds, sizeof(*t), bench_compare_u64);
		printf("cgroups %d  %-14s median %8.3f ms  (%zu bytes, %d rounds)\n", n, names[k],
		       t[k * rounds + rounds / 2] / 1e6, bytes[k], rounds);
	}
	free(t);

	bench_tree_close(&tree);
	return 0;
}
