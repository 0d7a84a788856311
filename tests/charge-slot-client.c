/* charge-slot-client.c - a client of acctd's charge slots for
 * tests/integration/test_charge_slots.py: a real program linked against
 * libacct-client that opens slots (OpenChargeSlot, the memfd received by
 * SCM_RIGHTS) and charges through them, driven line by line on stdin so that
 * the test can move it into a cgroup first and play a hostile client.
 *
 * Usage: charge-slot-client ADDRESS. It waits for one line (the test sends it
 * once the process is in its cgroup), connects, then runs one command per
 * line and answers each with one line:
 *
 *   open RESOURCE [CGROUP]        -> "slot N" (its index here) or "error ERRNO NAME"
 *   add N DELTA COUNT [THREADS]   -> "added": COUNT charges of DELTA per thread
 *   garbage N                     -> "garbage": an impossible word in the slot's first shard
 *   disconnect                    -> "disconnected": the connection closed, the slots kept
 *   connect                       -> "connected": a new connection (the old one closed), the slots kept
 *   close                         -> exits, closing the connection (the client's exit)
 *
 * Exits 0 at "close" or at the end of its input, 1 on a usage error. */
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "acct-client.h"
#include "percpu/charge-slot.h"

#define SLOTS_MAX 256

static struct acct_charge_slot *slots[SLOTS_MAX];
static unsigned nr_slots;

struct adder {
	struct acct_charge_slot *slot;
	int64_t delta;
	long count;
};

static void *add_thread(void *p)
{
	struct adder *a = p;
	for (long i = 0; i < a->count; i++)
		acct_charge_slot_add(a->slot, a->delta);
	return NULL;
}

int main(int argc, char **argv)
{
	struct acct_client *c = NULL;
	char line[4096];
	int r;

	if (argc != 2) {
		fprintf(stderr, "usage: %s ADDRESS\n", argv[0]);
		return 1;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (!fgets(line, sizeof(line), stdin))
		return 0;
	r = acct_client_connect(argv[1], &c);
	if (r < 0) {
		printf("error %d connect\n", -r);
		return 1;
	}
	printf("connected\n");
	while (fgets(line, sizeof(line), stdin)) {
		char res[128], cg[4096] = "";
		unsigned n, threads = 1;
		long long delta, count;

		line[strcspn(line, "\n")] = '\0';
		if (sscanf(line, "open %127s %4095s", res, cg) >= 1) {
			struct acct_charge_slot *s = NULL;
			if (nr_slots == SLOTS_MAX) {
				printf("error %d full\n", ENOSPC);
				continue;
			}
			r = acct_client_open_slot(c, res, cg[0] ? cg : NULL, &s);
			if (r < 0)
				printf("error %d %s\n", -r, strerror(-r));
			else {
				slots[nr_slots] = s;
				printf("slot %u\n", nr_slots++);
			}
		} else if (sscanf(line, "add %u %lld %lld %u", &n, &delta, &count, &threads) >= 3 && n < nr_slots &&
			   threads >= 1 && threads <= 16) {
			pthread_t t[16];
			struct adder a = { slots[n], delta, count };
			for (unsigned i = 0; i < threads; i++)
				if (pthread_create(&t[i], NULL, add_thread, &a) != 0)
					return 1;
			for (unsigned i = 0; i < threads; i++)
				pthread_join(t[i], NULL);
			printf("added\n");
		} else if (sscanf(line, "garbage %u", &n) == 1 && n < nr_slots) {
			/* A hostile client: the library's slot is the writer of
			 * charge-slot.h; 3 is odd and not the fold flag (1), a
			 * word no honest writer stores. */
			struct acct_slot_writer *w = (struct acct_slot_writer *)slots[n];
			__atomic_store_n((int64_t *)w->shard0, 3, __ATOMIC_RELAXED);
			printf("garbage\n");
		} else if (strcmp(line, "disconnect") == 0) {
			c = acct_client_free(c);
			printf("disconnected\n");
		} else if (strcmp(line, "connect") == 0) {
			/* As a client whose acctd restarted: a new connection, the
			 * slots kept. */
			c = acct_client_free(c);
			r = acct_client_connect(argv[1], &c);
			if (r < 0)
				printf("error %d connect\n", -r);
			else
				printf("connected\n");
		} else if (strcmp(line, "close") == 0)
			break;
		else
			printf("error %d usage\n", EINVAL);
	}
	for (unsigned i = 0; i < nr_slots; i++)
		acct_charge_slot_close(slots[i]);
	acct_client_free(c);
	return 0;
}
