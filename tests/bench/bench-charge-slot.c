/* bench-charge-slot.c - what a charge through a shared-memory slot costs
 * (issue 32, "Benchmark": <= 5 ns per slot charge), against the counter
 * engine's own update inside one process.
 *
 * Variants, each at 1 and 2 threads (or --threads LIST), thread i pinned to
 * the i-th CPU this process may run on; every thread adds +1 per operation
 * for a fixed time (the stop flag read every 1024 operations, the loop
 * unrolled by 8); reported: ns per operation per thread (each thread's time
 * / its operations, averaged over threads), CPU ns per operation (the
 * thread's CPU time / its operations: what a shared machine's waiting for a
 * CPU does not inflate) and the total rate. A cell is
 * three runs of a third of its time; the median run by rate is reported.
 *   engine           acct_counter_add() on a sharded counter (rseq where
 *                    usable), inside one process: the reference
 *   slot inline      acct_slot_add() (lib/percpu/charge-slot.h) on a slot
 *                    mapped from its memfd: the engine's update in shared memory
 *   slot libacct-client  acct_charge_slot_add() of the installed shared
 *                    library, the slot opened with acct_client_open_slot()
 *                    from a fake acctd on a socketpair that sends the memfd
 *                    (SCM_RIGHTS): what a program linked through pkg-config pays
 *   slot cas         acct_slot_add() on a compare-and-swap slot (the path of
 *                    machines without rseq)
 * Budgets are 2^30, so folds are rare: what is measured is the update. After
 * each run the slot's read (or the engine's precise read) must equal the
 * operations done: exit 1 otherwise.
 *
 * Usage: bench-charge-slot [--seconds S] [--threads LIST] [--json]
 * Exit: 0, 1 when a total is wrong or a setup fails, 2 for bad usage. */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <pthread.h>
#include <sched.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "acct-client.h"
#include "charge-slot-owner.h"
#include "counter.h"
#include "rseq.h"

#define MAX_THREADS 64
#define BUDGET (INT64_C(1) << 30)

enum variant { V_ENGINE, V_SLOT, V_CLIENT, V_CAS, _V_MAX };
static const char *const variant_names[] = { "engine", "slot inline", "slot libacct-client", "slot cas" };

struct target {
	struct acct_counter *counter;
	struct acct_slot_writer *writer;
	struct acct_charge_slot *slot;
};

struct worker {
	pthread_t t;
	int cpu;
	enum variant v;
	struct target *target;
	uint64_t ops;
	double ns, cpu_ns;
} __attribute__((aligned(64)));

static int stop, start_count;

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

#define UNROLL8(x) x x x x x x x x

static double thread_cpu_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void *work(void *userdata)
{
	struct worker *w = userdata;
	cpu_set_t one;
	uint64_t ops = 0;

	CPU_ZERO(&one);
	CPU_SET(w->cpu, &one);
	(void)sched_setaffinity(0, sizeof(one), &one);
	__atomic_fetch_add(&start_count, 1, __ATOMIC_SEQ_CST);
	while (__atomic_load_n(&start_count, __ATOMIC_SEQ_CST) > 0)
		; /* the main thread releases everyone at once */
	double t0 = now_s(), c0 = thread_cpu_s();
	while (!__atomic_load_n(&stop, __ATOMIC_RELAXED)) {
		switch (w->v) {
		case V_ENGINE:
			for (int i = 0; i < 128; i++) {
				UNROLL8(acct_counter_add(w->target->counter, 1);)
			}
			break;
		case V_SLOT:
		case V_CAS:
			for (int i = 0; i < 128; i++) {
				UNROLL8(acct_slot_add(w->target->writer, 1);)
			}
			break;
		default:
			for (int i = 0; i < 128; i++) {
				UNROLL8(acct_charge_slot_add(w->target->slot, 1);)
			}
			break;
		}
		ops += 1024;
	}
	w->ns = (now_s() - t0) * 1e9 / (double)ops;
	w->cpu_ns = (thread_cpu_s() - c0) * 1e9 / (double)ops;
	w->ops = ops;
	return NULL;
}

/* One run of `seconds`; returns the total rate in Mops/s, *ret_ns and
 * *ret_cpu_ns the mean per-thread ns/op (elapsed, CPU), *ret_ops the
 * operations done. */
static double run(enum variant v, struct target *target, const int *cpus, int threads, double seconds,
		  double *ret_ns, double *ret_cpu_ns, uint64_t *ret_ops)
{
	struct worker w[MAX_THREADS];
	double ns = 0, cpu_ns = 0, longest = 0;
	uint64_t ops = 0;

	stop = 0;
	start_count = -threads; /* the workers count up to 0 */
	for (int i = 0; i < threads; i++) {
		w[i] = (struct worker){ .cpu = cpus[i], .v = v, .target = target };
		if (pthread_create(&w[i].t, NULL, work, &w[i]) != 0)
			return -1;
	}
	while (__atomic_load_n(&start_count, __ATOMIC_SEQ_CST) < 0)
		;
	struct timespec d = { .tv_sec = (time_t)seconds, .tv_nsec = (long)((seconds - (double)(time_t)seconds) * 1e9) };
	nanosleep(&d, NULL);
	__atomic_store_n(&stop, 1, __ATOMIC_RELAXED);
	for (int i = 0; i < threads; i++) {
		pthread_join(w[i].t, NULL);
		ns += w[i].ns;
		cpu_ns += w[i].cpu_ns;
		ops += w[i].ops;
		longest = w[i].ns * (double)w[i].ops > longest ? w[i].ns * (double)w[i].ops : longest;
	}
	*ret_ns = ns / threads;
	*ret_cpu_ns = cpu_ns / threads;
	*ret_ops = ops;
	return (double)ops / (longest / 1e9) / 1e6;
}

/* A fake acctd for one OpenChargeSlot: reads the call, answers {"slot": 0}
 * with the memfd (SCM_RIGHTS), as acctd's writer does (reply-fds.c). */
struct fake {
	int sock, memfd;
};

static void *serve_slot(void *userdata)
{
	struct fake *f = userdata;
	char buf[4096], reply[] = "{\"parameters\":{\"slot\":0}}";
	size_t n = 0;

	while (n < sizeof(buf)) {
		ssize_t k = read(f->sock, buf + n, sizeof(buf) - n);
		if (k <= 0)
			return NULL;
		n += (size_t)k;
		if (memchr(buf, 0, n))
			break;
	}
	union {
		struct cmsghdr align;
		char b[CMSG_SPACE(sizeof(int))];
	} control = { 0 };
	struct iovec iov = { .iov_base = reply, .iov_len = sizeof(reply) };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = &control, .msg_controllen = sizeof(control.b) };
	struct cmsghdr *cm = CMSG_FIRSTHDR(&mh);
	cm->cmsg_level = SOL_SOCKET;
	cm->cmsg_type = SCM_RIGHTS;
	cm->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(cm), &f->memfd, sizeof(int));
	(void)sendmsg(f->sock, &mh, MSG_NOSIGNAL);
	return NULL;
}

static int open_client_slot(struct acct_slot_owner *owner, struct acct_charge_slot **ret)
{
	struct acct_client *c = NULL;
	int sv[2];
	pthread_t t;

	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0)
		return -errno;
	struct fake f = { .sock = sv[1], .memfd = acct_slot_owner_fd(owner) };
	int r = acct_client_new_from_fd(sv[0], &c);
	if (r < 0) {
		close(sv[1]);
		return r;
	}
	if (pthread_create(&t, NULL, serve_slot, &f) != 0) {
		acct_client_free(c);
		close(sv[1]);
		return -EAGAIN;
	}
	r = acct_client_open_slot(c, "bench", NULL, ret);
	pthread_join(t, NULL);
	acct_client_free(c);
	close(sv[1]);
	return r;
}

static int parse_threads(const char *s, int *out, int *n)
{
	*n = 0;
	for (char *end; *s && *n < 16; s = *end ? end + 1 : end) {
		long v = strtol(s, &end, 10);
		if (end == s || v < 1 || v > MAX_THREADS || (*end && *end != ','))
			return -EINVAL;
		out[(*n)++] = (int)v;
	}
	return *n > 0 ? 0 : -EINVAL;
}

int main(int argc, char **argv)
{
	double seconds = 1.5;
	int counts[16] = { 1, 2 }, nr_counts = 2, cpus[MAX_THREADS], nr_cpus = 0;
	bool json = false;
	static const struct option longopts[] = {
		{ "seconds", required_argument, NULL, 's' },
		{ "threads", required_argument, NULL, 't' },
		{ "json", no_argument, NULL, 'j' },
		{},
	};

	for (int o; (o = getopt_long(argc, argv, "", longopts, NULL)) >= 0;) {
		if (o == 's' && (seconds = atof(optarg)) > 0)
			continue;
		if (o == 't' && parse_threads(optarg, counts, &nr_counts) == 0)
			continue;
		if (o == 'j') {
			json = true;
			continue;
		}
		fprintf(stderr, "usage: bench-charge-slot [--seconds S] [--threads LIST] [--json]\n");
		return 2;
	}
	cpu_set_t mask;
	if (sched_getaffinity(0, sizeof(mask), &mask) < 0)
		return 1;
	for (int c = 0; c < CPU_SETSIZE && nr_cpus < MAX_THREADS; c++)
		if (CPU_ISSET(c, &mask))
			cpus[nr_cpus++] = c;
	for (int i = nr_cpus; i < MAX_THREADS; i++)
		cpus[i] = cpus[i % nr_cpus];

	bool rseq = acct_rseq_usable();
	struct acct_domain *d = NULL;
	struct acct_domain_options dopts = { .mode = ACCT_MODE_AUTO };
	struct acct_slot_owner *owner = NULL, *owner_cas = NULL;
	struct acct_slot_options sopts = { .mode = ACCT_MODE_AUTO, .budget = BUDGET };
	struct acct_slot_options copts = { .mode = ACCT_MODE_FALLBACK, .budget = BUDGET };
	struct target target = { 0 }, target_cas = { 0 };

	if (acct_domain_new(&dopts, &d) < 0 || acct_slot_create(&sopts, &owner) < 0 ||
	    acct_slot_create(&copts, &owner_cas) < 0 ||
	    acct_slot_map(acct_slot_owner_fd(owner), &target.writer) < 0 ||
	    acct_slot_map(acct_slot_owner_fd(owner_cas), &target_cas.writer) < 0 ||
	    open_client_slot(owner, &target.slot) < 0) {
		fprintf(stderr, "bench-charge-slot: setup failed\n");
		return 1;
	}
	if (!json)
		printf("# rseq %s; %d CPUs usable; %.2f s per cell (median of 3 runs)\n", rseq ? "usable" : "NOT usable",
		       nr_cpus, seconds);
	if (json)
		printf("[");
	bool first = true;
	int status = 0;
	for (int ci = 0; ci < nr_counts; ci++)
		for (enum variant v = 0; v < _V_MAX; v++) {
			double rates[3], nss[3], cpus_ns[3];
			uint64_t total = 0;
			struct target *t = v == V_CAS ? &target_cas : &target;
			for (int k = 0; k < 3; k++) {
				uint64_t ops = 0;
				/* A fresh counter per run: the engine's must be sharded. */
				if (v == V_ENGINE) {
					acct_counter_free(target.counter);
					if (acct_counter_new(d, BUDGET, &target.counter) < 0 ||
					    acct_counter_upgrade(target.counter) < 0)
						return 1;
					total = 0;
				}
				rates[k] = run(v, t, cpus, counts[ci], seconds / 3, &nss[k], &cpus_ns[k], &ops);
				total += ops;
				if (v == V_ENGINE && acct_counter_read_precise(target.counter) != (int64_t)total) {
					fprintf(stderr, "engine: precise read != %" PRIu64 "\n", total);
					status = 1;
				}
			}
			/* Exactness of the slots: everything added since creation. */
			static uint64_t slot_total, cas_total;
			if (v == V_SLOT || v == V_CLIENT || v == V_CAS) {
				uint64_t *sum = v == V_CAS ? &cas_total : &slot_total;
				struct acct_reading rd;
				*sum += total;
				if (acct_slot_read(v == V_CAS ? owner_cas : owner, &rd) < 0 || rd.value != (int64_t)*sum) {
					fprintf(stderr, "%s: slot read != %" PRIu64 "\n", variant_names[v], *sum);
					status = 1;
				}
			}
			int med = 0; /* the median by rate */
			for (int k = 0; k < 3; k++) {
				int below = 0;
				for (int j = 0; j < 3; j++)
					below += rates[j] < rates[k];
				if (below == 1)
					med = k;
			}
			if (json)
				printf("%s{\"variant\":\"%s\",\"threads\":%d,\"ns_per_op\":%.3f,\"cpu_ns_per_op\":%.3f,"
				       "\"mops\":%.1f}",
				       first ? "" : ",", variant_names[v], counts[ci], nss[med], cpus_ns[med], rates[med]);
			else
				printf("%-20s threads %2d  %7.2f ns/op per thread  %7.2f CPU ns/op  %9.1f Mops/s total\n",
				       variant_names[v], counts[ci], nss[med], cpus_ns[med], rates[med]);
			first = false;
		}
	if (json)
		printf("]\n");
	acct_charge_slot_close(target.slot);
	acct_slot_unmap(target.writer);
	acct_slot_unmap(target_cas.writer);
	acct_slot_owner_free(owner);
	acct_slot_owner_free(owner_cas);
	acct_counter_free(target.counter);
	acct_domain_free(d);
	return status;
}
