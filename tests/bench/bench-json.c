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

#include "cgroup-discovery.h"
#include "counter.h"
#include "ledger-json.h"
#include "ledger.h"
#include "sampler.h"
#include "util.h"

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void on_discovery(enum acct_discovery_event ev, const struct acct_cgroup_id *id, void *userdata)
{
	struct acct_cgroup *cg;

	if (ev == ACCT_CGROUP_ADDED)
		(void)acct_ledger_add(userdata, id, now_ns() / 1000, &cg);
}

static int compare_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
	struct acct_cgroup_layout *layout = NULL;
	struct acct_domain *domain = NULL;
	struct acct_ledger *ledger = NULL;
	struct acct_discovery *disc = NULL;
	struct acct_sampler *sampler = NULL;
	struct acct_cgroup **cgs = NULL;
	struct acct_pass_report rep;
	int r, n = 0, rounds = argc > 2 ? atoi(argv[2]) : 10;

	if (argc < 2 || rounds < 1) {
		fprintf(stderr, "usage: bench-json ROOT [ROUNDS]\n");
		return 2;
	}
	struct acct_domain_options dopts = { .mode = ACCT_MODE_AUTO };
	struct acct_ledger_budgets b = { 1 << 20, 1000, 16 };
	struct acct_discovery_filter f = { .max_depth = 255 };
	r = acct_cgroup_layout_detect(argv[1], &layout);
	if (r >= 0)
		r = acct_domain_new(&dopts, &domain);
	if (r >= 0)
		r = acct_ledger_new(domain, &b, &ledger);
	if (r >= 0)
		r = acct_discovery_new(layout, &f, &disc);
	if (r >= 0)
		r = acct_discovery_scan(disc, on_discovery, ledger);
	if (r >= 0) {
		struct acct_sampler_options sopts = { .layout = layout, .workers = 4 };
		r = acct_sampler_new(&sopts, ledger, &sampler);
	}
	if (r >= 0)
		r = n = acct_ledger_snapshot(ledger, false, &cgs);
	if (r >= 0)
		r = acct_sampler_run(sampler, cgs, (size_t)n, ACCT_PASS_FAST | ACCT_PASS_SLOW | ACCT_PASS_LOAD, now_ns() / 1000, &rep);
	if (r < 0) {
		fprintf(stderr, "bench-json: setting up %s failed: %s\n", argv[1], strerror(-r));
		return 1;
	}

	if (r >= 0)
		acct_sampler_aggregate_load(sampler, cgs, (size_t)n, now_ns() / 1000);
	unsigned nodes = acct_domain_topology(domain)->nr_nodes;
	static const char *const names[4] = { "record json-c", "record text", "list json-c", "list text" };
	uint64_t *t = calloc((size_t)rounds * 4, sizeof(*t));
	size_t bytes[4] = { 0 };
	if (!t)
		return 1;
	for (int i = 0; i < rounds; i++)
		for (int k = 0; k < 4; k++) {
			struct acct_json_buf buf = { 0 };
			uint64_t now = now_ns() / 1000, t0 = now_ns();
			bytes[k] = 0;
			for (int c = 0; c < n; c++) {
				if (k == 0 || k == 2) {
					struct json_object *o = k == 0 ? acct_cgroup_to_json(ledger, cgs[c], now, false, nodes)
								       : acct_cgroup_list_entry_json(cgs[c], now);
					bytes[k] += strlen(json_object_to_json_string_ext(
						o, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE));
					json_object_put(o);
				} else {
					buf.len = 0;
					if (k == 1)
						(void)acct_cgroup_write_json(&buf, ledger, cgs[c], now, false, nodes);
					else
						(void)acct_cgroup_list_entry_write(&buf, cgs[c], now);
					bytes[k] += buf.len;
				}
			}
			t[k * rounds + i] = now_ns() - t0;
			acct_json_buf_free(&buf);
		}
	for (int k = 0; k < 4; k++) {
		qsort(t + k * rounds, (size_t)rounds, sizeof(*t), compare_u64);
		printf("cgroups %d  %-14s median %8.3f ms  (%zu bytes, %d rounds)\n", n, names[k],
		       t[k * rounds + rounds / 2] / 1e6, bytes[k], rounds);
	}
	free(t);

	sampler = acct_sampler_free(sampler);
	for (int i = 0; i < n; i++)
		acct_sampler_release(cgs[i], NULL);
	free(cgs);
	acct_discovery_free(disc);
	acct_ledger_free(ledger);
	acct_domain_free(domain);
	acct_cgroup_layout_free(layout);
	return 0;
}
