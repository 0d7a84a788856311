/* bench-charge-batch.c - deltas per second through ChargeBatch (issue 32's
 * target: >= 2,000,000/s), driven by bench-charge-batch.py against a real
 * acctd: CLIENTS threads, each with its own connection (libacct-client),
 * send acct_client_charge_batch() of BATCH deltas (each a charge of 1 of
 * RESOURCE to CGROUP) in a closed loop for SECONDS, and print one JSON line:
 * {"clients", "batch", "seconds", "applied", "deltas_per_s"}.
 *
 * Usage: bench-charge-batch ADDRESS RESOURCE CGROUP SECONDS BATCH CLIENTS
 * Exits 0, or 1 on a usage error or a failed call (printed). */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "acct-client.h"

static const char *address, *resource, *cgroup;
static double seconds;
static size_t batch;
static atomic_uint_fast64_t applied_total;
static atomic_int failed;

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void *client(void *arg)
{
	struct acct_client *c = NULL;
	struct acct_charge *ch = calloc(batch, sizeof(*ch));
	int r;

	(void)arg;
	if (!ch)
		return NULL;
	r = acct_client_connect(address, &c);
	if (r < 0) {
		fprintf(stderr, "connect: %s\n", strerror(-r));
		atomic_store(&failed, 1);
		free(ch);
		return NULL;
	}
	for (size_t i = 0; i < batch; i++)
		ch[i] = (struct acct_charge){ .resource = resource, .delta = 1, .cgroup = cgroup };
	double end = now() + seconds;
	while (now() < end) {
		size_t applied = 0;
		r = acct_client_charge_batch(c, ch, batch, &applied);
		atomic_fetch_add(&applied_total, applied);
		if (r < 0) {
			fprintf(stderr, "ChargeBatch: %s\n", strerror(-r));
			atomic_store(&failed, 1);
			break;
		}
	}
	acct_client_free(c);
	free(ch);
	return NULL;
}

int main(int argc, char **argv)
{
	if (argc != 7) {
		fprintf(stderr, "usage: %s ADDRESS RESOURCE CGROUP SECONDS BATCH CLIENTS\n", argv[0]);
		return 1;
	}
	address = argv[1];
	resource = argv[2];
	cgroup = argv[3];
	seconds = atof(argv[4]);
	batch = (size_t)strtoul(argv[5], NULL, 10);
	unsigned n = (unsigned)strtoul(argv[6], NULL, 10);
	if (seconds <= 0 || batch == 0 || n == 0 || n > 64) {
		fprintf(stderr, "bad arguments\n");
		return 1;
	}
	pthread_t t[64];
	double t0 = now();
	for (unsigned i = 0; i < n; i++)
		if (pthread_create(&t[i], NULL, client, NULL) != 0)
			return 1;
	for (unsigned i = 0; i < n; i++)
		pthread_join(t[i], NULL);
	double el = now() - t0;
	uint64_t a = atomic_load(&applied_total);
	printf("{\"clients\": %u, \"batch\": %zu, \"seconds\": %.3f, \"applied\": %llu, \"deltas_per_s\": %.0f}\n", n,
	       batch, el, (unsigned long long)a, (double)a / el);
	return atomic_load(&failed) ? 1 : 0;
}
