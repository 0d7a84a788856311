/* bench-counter.c - benchmark of the counter engine (lib/percpu/counter.h) against
 * honest baselines, all measured in one harness. The file is long because each
 * baseline (shared atomic, mutex, percpu_counter, LongAdder, plain) is written
 * out here in full, so that all of them run in the same harness.
 *
 * Updates (the table to compare): at each thread count (default 1, 2, 4, 8)
 * thread i is pinned to the i-th CPU this process may run on (modulo their
 * number), all threads start together at a barrier, add +1 per operation for a
 * fixed time (a stop flag is checked every 1024 operations; the inner loop is
 * unrolled by 8) and count their operations. Reported: ns per operation per
 * thread (each thread's elapsed time / its operations, averaged over threads)
 * and the total rate in Mops/s (all operations / the longest thread time).
 * A cell is three runs of a third of its time each; the median run (by rate)
 * is reported, since shared and virtual machines are noisy.
 * With more threads than CPUs, threads share CPUs and the per-thread figure
 * includes the time a thread waits for its CPU.
 *
 * The delta is always +1: residues then grow monotonically, so a sharded
 * counter folds every `batch` updates per shard, its worst case (+1/-1 would
 * never fold). The engine counters use a budget of 2^30, so batches are large
 * and folds rare: what is measured is the update path itself.
 *
 * Variants, each followed by an exactness check of the final sum (the engine's
 * precise read, or the baseline's exact sum, must equal the operations done):
 *   engine rseq      sharded counter (acct_counter_upgrade), ACCT_MODE_RSEQ:
 *                    the inline rseq path, no atomic instruction
 *   engine fallback  sharded counter, ACCT_MODE_FALLBACK: sched_getcpu() + CAS
 *   engine compact   a counter that never upgrades (upgrade_ops and
 *                    upgrade_contention = UINT32_MAX): one CAS-updated word
 *   shared atomic    one _Atomic int64_t, atomic_fetch_add (lock xadd)
 *   mutex            a pthread mutex around an int64_t
 *   percpu_counter   the kernel's lib/percpu_counter.c algorithm: per-CPU
 *                    64-bit deltas in cache-line slots indexed by
 *                    sched_getcpu(), folded into one global under a lock when
 *                    |delta| >= batch, batch = max(32, 2 * online CPUs); read =
 *                    the global. The kernel adds to its slot with preemption
 *                    off; user space cannot stop a migration between
 *                    sched_getcpu() and the add, so the slot add is an atomic
 *                    add here (lock xadd), and the fold an atomic exchange.
 *   LongAdder        java.util.concurrent.atomic.LongAdder: CAS on a base
 *                    until the first failed CAS, then CAS on one of an array
 *                    of cache-line padded cells picked by a thread-local probe,
 *                    rehashed (xorshift) on every failed CAS. Java grows the
 *                    cells to >= CPUs on collisions; here the array has a fixed
 *                    size, the power of two >= 2 * CPUs. Sum = base + cells.
 *   plain            per-thread plain increments of a local variable, with an
 *                    empty asm barrier per increment so that the compiler must
 *                    perform each add; stored to a padded per-thread slot at the
 *                    end. The physical reference: no sharing at all. (Recent
 *                    x86 cores may execute such add-immediate chains at rename,
 *                    several per cycle.)
 *   plain, memory    the same count kept in the thread's padded slot: a load,
 *                    add and store per update, each load depending on the
 *                    previous store: the floor for any counter kept in memory.
 *
 * Single-threaded costs: approximate and precise reads (real topology and a
 * simulated 64 CPUs in 4 nodes), compare answered from the bound and inside
 * the band, compact create+destroy (in a loop and in batches of 100000),
 * upgrade, and bytes per compact and per sharded counter.
 *
 * Error against the bound: writers add signed deltas in [-100, 100] to a
 * counter of budget 4096 while the main thread reads it. Each writer publishes
 * the running sum of |delta| it started (before each add) and the sum and the
 * sum of |delta| it completed (after each add). Per read: truth = sum of the
 * completed sums taken before the read, slack = sum over writers of (started
 * |delta| after the read - completed |delta| before it); a violation is
 * |value - truth| > bound + slack.
 *
 * Usage: bench-counter [--quick] [--json] [--threads LIST] [--seconds S]
 *                      [--mode auto|rseq|fallback]
 * Exit status: 0, 1 when a sum is wrong, a bound is violated or a setup fails,
 * 2 for bad usage, 77 when --mode rseq is asked for and rseq is unusable. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include "counter.h"
#include "rseq.h"
#include "topology.h"
#include "util.h"

#define MAX_THREADS 256
#define MAX_THREAD_COUNTS 16
#define MAX_CPUS 1024
#define BLOCK_OPS 1024u
#define CELL_REPS 3
#define ENGINE_BUDGET ((int64_t)1 << 30)
#define READ_BUDGET ((int64_t)1 << 20)
#define ERROR_BUDGET 4096
#define ERROR_MAX_DELTA 100
#define MAX_ERR_WRITERS 8
#define BATCH_PAIRS 100000u
#define UPGRADE_COUNTERS 10000u
#define SIM_CPUS 64
#define SIM_NODES 4

/* ---- options, machine, results ------------------------------------------ */

struct options {
	bool quick, json;
	double seconds; /* per update cell and per error run */
	unsigned threads[MAX_THREAD_COUNTS];
	unsigned nr_threads;
	enum acct_update_mode mode;
};

struct machine {
	char cpu_model[256];
	char kernel[256];
	unsigned nr_online;
	unsigned nr_cpus; /* CPUs this process may run on */
	int cpus[MAX_CPUS];
	bool rseq_usable;
	double pair_slowdown; /* ALU loop on CPUs 0+1 together vs alone */
	double others_load;   /* share of all CPU time used by other processes during the run */
	enum acct_update_mode mode; /* the engine mode of the single-threaded tests */
};

struct cell {
	const char *variant;
	unsigned threads;
	bool skipped, exact;
	double ns_per_op, cpu_ns_per_op, mops;
	uint64_t ops;
	int64_t total;
	char note[64];
};

struct micro {
	const char *name;
	char topo[48];
	double ns;
	char note[64];
};

struct mem_row {
	char topo[48];
	unsigned shards, nodes;
	size_t compact_bytes, sharded_bytes;
};

struct err_row {
	const char *mode;
	char topo[48];
	unsigned writers;
	uint64_t reads, violations, bound, folds, direct;
	int64_t max_error, max_excess; /* max_excess: max(0, error - slack) */
	bool exact;
};

static struct options opt = { .threads = { 1, 2, 4, 8 }, .nr_threads = 4, .mode = ACCT_MODE_AUTO };
static struct machine mach;
static struct cell cells[128];
static unsigned nr_cells;
static struct micro micros[64];
static unsigned nr_micros;
static struct mem_row mems[4];
static unsigned nr_mems;
static struct err_row errs[16];
static unsigned nr_errs;
static bool failed;
static int64_t engine_batch;   /* batch of the sharded engine counters */
static unsigned engine_shards; /* their shards */
static volatile int64_t sink;

static void copy_str(char *dst, size_t size, const char *src)
{
	size_t n = strlen(src);
	if (n >= size)
		n = size - 1;
	memcpy(dst, src, n);
	dst[n] = 0;
}

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static uint64_t thread_cpu_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void sleep_seconds(double s)
{
	struct timespec ts = { .tv_sec = (time_t)s, .tv_nsec = (long)((s - (double)(time_t)s) * 1e9) };
	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

static uint64_t xorshift64(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

static void progress(const char *what, unsigned threads)
{
	if (!isatty(STDERR_FILENO))
		return;
	if (threads)
		fprintf(stderr, "\r\033[K%s, %u threads ...", what, threads);
	else
		fprintf(stderr, "\r\033[K%s ...", what);
}

static void progress_done(void)
{
	if (isatty(STDERR_FILENO))
		fprintf(stderr, "\r\033[K");
}

/* ---- machine description and pinning -------------------------------------- */

static void detect_cpu_model(void)
{
	char line[512];
	FILE *f = fopen("/proc/cpuinfo", "re");

	copy_str(mach.cpu_model, sizeof(mach.cpu_model), "unknown CPU");
	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		if (strncmp(line, "model name", 10) != 0)
			continue;
		char *p = strchr(line, ':');
		if (!p)
			continue;
		p += strspn(p + 1, " \t") + 1;
		p[strcspn(p, "\n")] = 0;
		copy_str(mach.cpu_model, sizeof(mach.cpu_model), p);
		break;
	}
	fclose(f);
}

/* Busy and total jiffies of all CPUs from /proc/stat; false if unreadable. */
static bool cpu_jiffies(uint64_t *busy, uint64_t *total)
{
	unsigned long long v[8] = { 0 };
	FILE *f = fopen("/proc/stat", "re");
	int n;

	if (!f)
		return false;
	n = fscanf(f, "cpu %llu %llu %llu %llu %llu %llu %llu %llu", &v[0], &v[1], &v[2], &v[3], &v[4], &v[5], &v[6],
		   &v[7]);
	fclose(f);
	if (n < 5)
		return false;
	*total = 0;
	for (int i = 0; i < 8; i++)
		*total += v[i];
	*busy = *total - v[3] - v[4]; /* minus idle and iowait */
	return true;
}

struct load_mark {
	bool ok;
	uint64_t busy, total; /* jiffies, all CPUs */
	double self_s;        /* CPU time of this process */
};

static void load_mark(struct load_mark *m)
{
	struct rusage ru;

	m->ok = cpu_jiffies(&m->busy, &m->total) && getrusage(RUSAGE_SELF, &ru) == 0;
	if (m->ok)
		m->self_s = (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
			    (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) * 1e-6;
}

/* Share of all CPU time between two marks used by other processes: numbers
 * taken on a busy machine (a shared build host) are noisy; the header says so. */
static double others_load(const struct load_mark *a, const struct load_mark *b)
{
	double hz = (double)sysconf(_SC_CLK_TCK);

	if (!a->ok || !b->ok || b->total <= a->total || hz <= 0)
		return NAN;
	double total = (double)(b->total - a->total) / hz, busy = (double)(b->busy - a->busy) / hz;
	return MAX(0.0, (busy - (b->self_s - a->self_s)) / total);
}

static void detect_machine(void)
{
	struct utsname u;
	cpu_set_t set;

	detect_cpu_model();
	copy_str(mach.kernel, sizeof(mach.kernel), uname(&u) == 0 ? u.release : "unknown");
	long online = sysconf(_SC_NPROCESSORS_ONLN);
	mach.nr_online = online > 0 ? (unsigned)online : 1;
	if (sched_getaffinity(0, sizeof(set), &set) == 0)
		for (int c = 0; c < CPU_SETSIZE && mach.nr_cpus < MAX_CPUS; c++)
			if (CPU_ISSET(c, &set))
				mach.cpus[mach.nr_cpus++] = c;
	if (mach.nr_cpus == 0)
		mach.cpus[mach.nr_cpus++] = 0;
	mach.rseq_usable = acct_rseq_usable();
	mach.mode = opt.mode != ACCT_MODE_AUTO ? opt.mode
		    : mach.rseq_usable	   ? ACCT_MODE_RSEQ
					   : ACCT_MODE_FALLBACK;
}

/* Pin the calling thread to the i-th usable CPU (modulo their number). */
static void pin_thread(unsigned i)
{
	cpu_set_t set;
	CPU_ZERO(&set);
	CPU_SET(mach.cpus[i % mach.nr_cpus], &set);
	(void)pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
}

static unsigned possible_cpus(void)
{
	long n = sysconf(_SC_NPROCESSORS_CONF);
	unsigned m = (unsigned)mach.cpus[mach.nr_cpus - 1] + 1;
	return MAX(n > 0 ? (unsigned)n : 1u, m);
}

/* ---- baseline: the kernel's percpu_counter ---------------------------------- */

struct pcpu_slot {
	_Alignas(ACCT_CACHELINE) _Atomic int64_t count;
};

/* Laid out as the kernel's struct percpu_counter: lock, global, slot pointer. */
struct percpu_counter {
	pthread_mutex_t lock;
	_Atomic int64_t count; /* written under the lock */
	int64_t batch;
	unsigned nr_slots;
	struct pcpu_slot *slots;
};

static int percpu_init(struct percpu_counter *p)
{
	p->nr_slots = possible_cpus();
	p->batch = MAX(32, 2 * (int64_t)mach.nr_online); /* percpu_counter_batch */
	p->slots = aligned_alloc(ACCT_CACHELINE, p->nr_slots * sizeof(*p->slots));
	if (!p->slots)
		return -ENOMEM;
	memset(p->slots, 0, p->nr_slots * sizeof(*p->slots));
	pthread_mutex_init(&p->lock, NULL);
	return 0;
}

static void percpu_done(struct percpu_counter *p)
{
	free(p->slots);
	pthread_mutex_destroy(&p->lock);
}

static __attribute__((noinline)) void percpu_fold(struct percpu_counter *p, struct pcpu_slot *s)
{
	pthread_mutex_lock(&p->lock);
	int64_t v = atomic_exchange_explicit(&s->count, 0, memory_order_relaxed);
	atomic_store_explicit(&p->count, atomic_load_explicit(&p->count, memory_order_relaxed) + v,
			      memory_order_relaxed);
	pthread_mutex_unlock(&p->lock);
}

/* percpu_counter_add_batch() */
static inline void percpu_add(struct percpu_counter *p, int64_t amount)
{
	struct pcpu_slot *s = &p->slots[(unsigned)sched_getcpu() % p->nr_slots];
	int64_t v = atomic_fetch_add_explicit(&s->count, amount, memory_order_relaxed) + amount;
	if (unlikely(v >= p->batch || v <= -p->batch))
		percpu_fold(p, s);
}

/* percpu_counter_read(): the global only. */
static int64_t percpu_read(struct percpu_counter *p)
{
	return atomic_load_explicit(&p->count, memory_order_relaxed);
}

/* percpu_counter_sum(): global + every slot, under the lock. */
static int64_t percpu_sum(struct percpu_counter *p)
{
	pthread_mutex_lock(&p->lock);
	int64_t sum = atomic_load_explicit(&p->count, memory_order_relaxed);
	for (unsigned i = 0; i < p->nr_slots; i++)
		sum += atomic_load_explicit(&p->slots[i].count, memory_order_relaxed);
	pthread_mutex_unlock(&p->lock);
	return sum;
}

/* ---- baseline: LongAdder ------------------------------------------------------ */

struct adder_cell {
	_Alignas(ACCT_CACHELINE) _Atomic int64_t value;
};

struct long_adder {
	_Alignas(ACCT_CACHELINE) _Atomic int64_t base;
	_Alignas(ACCT_CACHELINE) atomic_bool use_cells; /* Java: cells != null */
	unsigned mask;
	struct adder_cell *cells;
};

static _Thread_local uint64_t adder_probe; /* 0: not yet seeded */
static _Atomic uint64_t adder_seeder;

static int adder_init(struct long_adder *a)
{
	unsigned n = 1;
	while (n < 2 * mach.nr_cpus)
		n *= 2;
	a->mask = n - 1;
	a->cells = aligned_alloc(ACCT_CACHELINE, n * sizeof(*a->cells));
	if (!a->cells)
		return -ENOMEM;
	memset(a->cells, 0, n * sizeof(*a->cells));
	return 0;
}

static uint64_t adder_seed(void)
{
	uint64_t s = atomic_fetch_add(&adder_seeder, 0x9e3779b97f4a7c15ull) + 0x9e3779b97f4a7c15ull;
	s ^= s >> 31;
	return s ? s : 1;
}

/* longAccumulate(): CAS on the probed cell, rehash on failure. */
static __attribute__((noinline)) void adder_add_cells(struct long_adder *a, int64_t x)
{
	uint64_t h = adder_probe ? adder_probe : adder_seed();
	for (;;) {
		struct adder_cell *c = &a->cells[h & a->mask];
		int64_t v = atomic_load_explicit(&c->value, memory_order_relaxed);
		if (atomic_compare_exchange_weak_explicit(&c->value, &v, v + x, memory_order_relaxed,
							  memory_order_relaxed))
			break;
		xorshift64(&h); /* advanceProbe() */
	}
	adder_probe = h;
}

static inline void adder_add_cell_fast(struct long_adder *a, int64_t x)
{
	uint64_t h = adder_probe;
	if (likely(h)) {
		struct adder_cell *c = &a->cells[h & a->mask];
		int64_t v = atomic_load_explicit(&c->value, memory_order_relaxed);
		if (likely(atomic_compare_exchange_weak_explicit(&c->value, &v, v + x, memory_order_relaxed,
								 memory_order_relaxed)))
			return;
		xorshift64(&adder_probe); /* uncontended = false: rehash, retry */
	}
	adder_add_cells(a, x);
}

/* LongAdder.add() */
static inline void adder_add(struct long_adder *a, int64_t x)
{
	if (likely(!atomic_load_explicit(&a->use_cells, memory_order_relaxed))) {
		int64_t v = atomic_load_explicit(&a->base, memory_order_relaxed);
		if (likely(atomic_compare_exchange_weak_explicit(&a->base, &v, v + x, memory_order_relaxed,
								 memory_order_relaxed)))
			return;
		atomic_store_explicit(&a->use_cells, true, memory_order_relaxed);
	}
	adder_add_cell_fast(a, x);
}

/* LongAdder.sum() */
static int64_t adder_sum(struct long_adder *a)
{
	int64_t sum = atomic_load_explicit(&a->base, memory_order_relaxed);
	for (unsigned i = 0; i <= a->mask; i++)
		sum += atomic_load_explicit(&a->cells[i].value, memory_order_relaxed);
	return sum;
}

/* ---- the update harness ----------------------------------------------------------- */

struct bench;

struct thread_slot {
	_Alignas(ACCT_CACHELINE) struct bench *b;
	pthread_t thread;
	unsigned nr;
	uint64_t ops, ns, cpu_ns; /* cpu_ns: the thread's CPU time */
	int64_t plain; /* the plain baseline's per-thread count */
};

enum engine_kind { NOT_ENGINE, ENGINE_RSEQ, ENGINE_FALLBACK, ENGINE_COMPACT };

struct variant {
	const char *name; /* table row */
	const char *key;  /* JSON */
	enum engine_kind engine;
	uint64_t (*loop)(struct bench *b, struct thread_slot *s);
	int64_t (*total)(struct bench *b);
};

struct bench {
	const struct variant *v;
	unsigned nr_threads;
	pthread_barrier_t barrier;
	struct acct_domain *domain;
	struct acct_counter *counter;
	_Alignas(ACCT_CACHELINE) atomic_bool stop;
	_Alignas(ACCT_CACHELINE) _Atomic int64_t shared;
	_Alignas(ACCT_CACHELINE) pthread_mutex_t mutex;
	int64_t locked;
	_Alignas(ACCT_CACHELINE) struct percpu_counter pcpu;
	struct long_adder adder;
	struct thread_slot slots[MAX_THREADS];
};

#define UNROLL8(op)                                  \
	do {                                         \
		op;                                  \
		op;                                  \
		op;                                  \
		op;                                  \
		op;                                  \
		op;                                  \
		op;                                  \
		op;                                  \
	} while (0)

/* Run `op` in blocks of BLOCK_OPS until the stop flag is set; evaluates to the
 * number of operations done. */
#define TIMED_LOOP(b, op)                                                           \
	({                                                                          \
		uint64_t ops_ = 0;                                                  \
		while (!atomic_load_explicit(&(b)->stop, memory_order_relaxed)) {   \
			for (unsigned i_ = 0; i_ < BLOCK_OPS; i_ += 8)              \
				UNROLL8(op);                                        \
			ops_ += BLOCK_OPS;                                          \
		}                                                                   \
		ops_;                                                               \
	})

static inline void mutex_inc(struct bench *b)
{
	pthread_mutex_lock(&b->mutex);
	b->locked++;
	pthread_mutex_unlock(&b->mutex);
}

/* One add the compiler must perform: the empty asm may have changed x. */
#define PLAIN_INC(x)                          \
	do {                                  \
		(x)++;                        \
		__asm__ volatile("" : "+r"(x)); \
	} while (0)

static uint64_t loop_engine(struct bench *b, struct thread_slot *s)
{
	struct acct_counter *c = b->counter;
	return TIMED_LOOP(b, acct_counter_add(c, 1));
}

static uint64_t loop_atomic(struct bench *b, struct thread_slot *s)
{
	return TIMED_LOOP(b, atomic_fetch_add_explicit(&b->shared, 1, memory_order_relaxed));
}

static uint64_t loop_mutex(struct bench *b, struct thread_slot *s)
{
	return TIMED_LOOP(b, mutex_inc(b));
}

static uint64_t loop_percpu(struct bench *b, struct thread_slot *s)
{
	return TIMED_LOOP(b, percpu_add(&b->pcpu, 1));
}

static uint64_t loop_adder(struct bench *b, struct thread_slot *s)
{
	return TIMED_LOOP(b, adder_add(&b->adder, 1));
}

static uint64_t loop_plain(struct bench *b, struct thread_slot *s)
{
	int64_t x = 0;
	uint64_t ops = TIMED_LOOP(b, PLAIN_INC(x));
	s->plain = x;
	return ops;
}

/* The same plain count kept in memory: a load, an add and a store per update,
 * each depending on the previous store (the floor for any counter in memory). */
static uint64_t loop_plain_memory(struct bench *b, struct thread_slot *s)
{
	volatile int64_t *p = &s->plain;
	return TIMED_LOOP(b, (*p)++);
}

/* Counter-free work for the CPU pair check: two multiply-add chains. */
#define ALU_STEP(x, y)                                        \
	do {                                                  \
		(x) = (x) * 3 + 1;                            \
		(y) = (y) * 5 + 1;                            \
		__asm__ volatile("" : "+r"(x), "+r"(y));      \
	} while (0)

static uint64_t loop_alu(struct bench *b, struct thread_slot *s)
{
	uint64_t x = 1, y = 2;
	uint64_t ops = TIMED_LOOP(b, ALU_STEP(x, y));
	s->plain = (int64_t)ops; /* x and y are kept by the asm barrier */
	return ops;
}

static int64_t total_engine(struct bench *b)
{
	return acct_counter_read_precise(b->counter);
}

static int64_t total_atomic(struct bench *b)
{
	return atomic_load(&b->shared);
}

static int64_t total_mutex(struct bench *b)
{
	return b->locked;
}

static int64_t total_percpu(struct bench *b)
{
	return percpu_sum(&b->pcpu);
}

static int64_t total_adder(struct bench *b)
{
	return adder_sum(&b->adder);
}

static int64_t total_plain(struct bench *b)
{
	int64_t sum = 0;
	for (unsigned i = 0; i < b->nr_threads; i++)
		sum += b->slots[i].plain;
	return sum;
}

static const struct variant variants[] = {
	{ "acct engine, rseq", "engine-rseq", ENGINE_RSEQ, loop_engine, total_engine },
	{ "acct engine, fallback (CAS)", "engine-fallback", ENGINE_FALLBACK, loop_engine, total_engine },
	{ "acct engine, compact", "engine-compact", ENGINE_COMPACT, loop_engine, total_engine },
	{ "shared atomic (fetch_add)", "atomic", NOT_ENGINE, loop_atomic, total_atomic },
	{ "mutex", "mutex", NOT_ENGINE, loop_mutex, total_mutex },
	{ "percpu_counter (kernel)", "percpu_counter", NOT_ENGINE, loop_percpu, total_percpu },
	{ "LongAdder (striped)", "long_adder", NOT_ENGINE, loop_adder, total_adder },
	{ "per-thread plain (reference)", "plain", NOT_ENGINE, loop_plain, total_plain },
	{ "per-thread plain, in memory", "plain-memory", NOT_ENGINE, loop_plain_memory, total_plain },
};

static const struct variant *find_variant(const char *key)
{
	for (unsigned i = 0; i < ELEMENTSOF(variants); i++)
		if (strcmp(variants[i].key, key) == 0)
			return &variants[i];
	abort();
}

/* Not a counter: checks whether two CPUs run independently. */
static const struct variant alu_variant = { "ALU-only loop", "alu", NOT_ENGINE, loop_alu, total_plain };

static bool engine_mode_selected(enum acct_update_mode m)
{
	return opt.mode == ACCT_MODE_AUTO || opt.mode == m;
}

/* A domain and a counter for the engine variants. Returns -EOPNOTSUPP for a
 * mode that is not measured here. */
static int engine_setup(struct bench *b, enum engine_kind kind)
{
	struct acct_domain_options o = { .mode = mach.mode };
	int r;

	if (kind == ENGINE_RSEQ)
		o.mode = ACCT_MODE_RSEQ;
	else if (kind == ENGINE_FALLBACK)
		o.mode = ACCT_MODE_FALLBACK;
	else
		o.upgrade_ops = o.upgrade_contention = UINT32_MAX;
	if (kind != ENGINE_COMPACT && (!engine_mode_selected(o.mode) || (kind == ENGINE_RSEQ && !mach.rseq_usable)))
		return -EOPNOTSUPP;
	r = acct_domain_new(&o, &b->domain);
	if (r < 0)
		return r;
	r = acct_counter_new(b->domain, ENGINE_BUDGET, &b->counter);
	if (r < 0)
		return r;
	return kind == ENGINE_COMPACT ? 0 : acct_counter_upgrade(b->counter);
}

static void bench_free(struct bench *b)
{
	acct_counter_free(b->counter);
	acct_domain_free(b->domain);
	percpu_done(&b->pcpu);
	free(b->adder.cells);
	pthread_mutex_destroy(&b->mutex);
	free(b);
}

static int bench_new(const struct variant *v, unsigned nr_threads, struct bench **ret)
{
	size_t size = (sizeof(struct bench) + ACCT_CACHELINE - 1) / ACCT_CACHELINE * ACCT_CACHELINE;
	struct bench *b = aligned_alloc(ACCT_CACHELINE, size);
	int r;

	if (!b)
		return -ENOMEM;
	memset(b, 0, size);
	b->v = v;
	b->nr_threads = nr_threads;
	pthread_mutex_init(&b->mutex, NULL);
	r = percpu_init(&b->pcpu);
	if (r >= 0)
		r = adder_init(&b->adder);
	if (r >= 0 && v->engine != NOT_ENGINE)
		r = engine_setup(b, v->engine);
	if (r < 0) {
		bench_free(b);
		return r;
	}
	*ret = b;
	return 0;
}

static void *worker_main(void *arg)
{
	struct thread_slot *s = arg;
	struct bench *b = s->b;

	pin_thread(s->nr);
	pthread_barrier_wait(&b->barrier);
	uint64_t c0 = thread_cpu_ns(), t0 = now_ns();
	s->ops = b->v->loop(b, s);
	s->ns = now_ns() - t0;
	s->cpu_ns = thread_cpu_ns() - c0;
	return NULL;
}

/* Start the threads together, let them run for `seconds`, stop and join them. */
static void bench_run_threads(struct bench *b, double seconds)
{
	pthread_barrier_init(&b->barrier, NULL, b->nr_threads + 1);
	for (unsigned i = 0; i < b->nr_threads; i++) {
		struct thread_slot *s = &b->slots[i];
		s->b = b;
		s->nr = i;
		if (pthread_create(&s->thread, NULL, worker_main, s) != 0) {
			fprintf(stderr, "bench-counter: cannot create thread %u\n", i);
			abort(); /* the barrier would never open */
		}
	}
	pthread_barrier_wait(&b->barrier);
	sleep_seconds(seconds);
	atomic_store(&b->stop, true);
	for (unsigned i = 0; i < b->nr_threads; i++)
		pthread_join(b->slots[i].thread, NULL);
	pthread_barrier_destroy(&b->barrier);
}

static void describe_engine(struct bench *b, struct cell *c)
{
	struct acct_counter_stats st;
	struct acct_domain_stats ds;

	acct_counter_stats(b->counter, &st);
	acct_domain_stats(b->domain, &ds);
	if (st.state != ACCT_STATE_COMPACT) {
		engine_batch = st.batch;
		engine_shards = ds.nr_shards;
	}
	if (st.state == ACCT_STATE_COMPACT)
		snprintf(c->note, sizeof(c->note), "compact, never upgraded");
	else
		snprintf(c->note, sizeof(c->note), "%s, %" PRIu64 " folds",
			 st.state == ACCT_STATE_SHARDED_RSEQ ? "rseq inline path" : "sharded, CAS path", st.folds);
	if (b->v->engine == ENGINE_COMPACT && st.state != ACCT_STATE_COMPACT)
		snprintf(c->note, sizeof(c->note), "UPGRADED (should stay compact)");
	if (b->v->engine == ENGINE_RSEQ && st.state != ACCT_STATE_SHARDED_RSEQ)
		snprintf(c->note, sizeof(c->note), "NOT on the rseq inline path");
}

static void describe_baseline(struct bench *b, struct cell *c)
{
	if (b->v->loop == loop_percpu)
		snprintf(c->note, sizeof(c->note), "batch %" PRId64 ", %u slots", b->pcpu.batch, b->pcpu.nr_slots);
	else if (b->v->loop == loop_adder)
		snprintf(c->note, sizeof(c->note), "%u cells%s", b->adder.mask + 1,
			 atomic_load(&b->adder.use_cells) ? "" : ", stayed on base");
}

static void summarize_cell(struct bench *b, struct cell *c)
{
	double per_thread = 0, per_thread_cpu = 0;
	uint64_t longest = 0;

	for (unsigned i = 0; i < b->nr_threads; i++) {
		struct thread_slot *s = &b->slots[i];
		c->ops += s->ops;
		per_thread += s->ops ? (double)s->ns / (double)s->ops : NAN;
		per_thread_cpu += s->ops ? (double)s->cpu_ns / (double)s->ops : NAN;
		longest = MAX(longest, s->ns);
	}
	c->ns_per_op = per_thread / b->nr_threads;
	c->cpu_ns_per_op = per_thread_cpu / b->nr_threads;
	c->mops = longest ? (double)c->ops * 1e3 / (double)longest : 0;
	c->total = b->v->total(b);
	c->exact = c->total == (int64_t)c->ops;
	if (b->v->engine != NOT_ENGINE)
		describe_engine(b, c);
	else
		describe_baseline(b, c);
	if (!c->exact) {
		fprintf(stderr, "MISMATCH: %s, %u threads: total %" PRId64 ", operations %" PRIu64 "\n", c->variant,
			c->threads, c->total, c->ops);
		failed = true;
	}
}

/* One run of `seconds`; returns false when the variant could not be set up. */
static bool run_once(const struct variant *v, unsigned nr_threads, double seconds, struct cell *c)
{
	struct bench *b;

	*c = (struct cell){
		.variant = v->name, .threads = nr_threads, .ns_per_op = NAN, .cpu_ns_per_op = NAN, .mops = NAN
	};
	int r = bench_new(v, nr_threads, &b);
	if (r == -EOPNOTSUPP) {
		c->skipped = true;
		bool no_rseq = v->engine == ENGINE_RSEQ && !mach.rseq_usable;
		snprintf(c->note, sizeof(c->note), "%s", no_rseq ? "rseq not usable here" : "not measured (--mode)");
		return false;
	}
	if (r < 0) {
		fprintf(stderr, "%s: setup failed: %s\n", v->name, strerror(-r));
		c->skipped = true;
		snprintf(c->note, sizeof(c->note), "setup failed");
		failed = true;
		return false;
	}
	bench_run_threads(b, seconds);
	summarize_cell(b, c);
	bench_free(b);
	return true;
}

static int cmp_mops(const void *a, const void *b)
{
	const struct cell *x = a, *y = b;
	return (x->mops > y->mops) - (x->mops < y->mops);
}

/* A cell: CELL_REPS runs of seconds / CELL_REPS each (every one checked for
 * exactness); the run with the median rate is reported, a wrong one instead
 * if there is one. Shared machines are noisy; the median resists that. */
static void run_cell(const struct variant *v, unsigned nr_threads)
{
	struct cell reps[CELL_REPS];

	progress(v->name, nr_threads);
	for (unsigned i = 0; i < CELL_REPS; i++) {
		if (!run_once(v, nr_threads, opt.seconds / CELL_REPS, &reps[i])) {
			cells[nr_cells++] = reps[i];
			return;
		}
		if (!reps[i].exact) {
			cells[nr_cells++] = reps[i];
			return;
		}
	}
	qsort(reps, CELL_REPS, sizeof(reps[0]), cmp_mops);
	cells[nr_cells++] = reps[CELL_REPS / 2];
}

/* How much slower counter-free ALU work runs on the first two CPUs together
 * than on one alone: about 1 for independent idle cores, up to 2 for SMT
 * siblings (which hypervisors may present as separate cores) or when other
 * processes keep one of the CPUs busy. */
static void check_cpu_pair(void)
{
	struct cell one, two;
	double seconds = MAX(0.1, opt.seconds / 4);

	mach.pair_slowdown = NAN;
	if (mach.nr_cpus < 2)
		return;
	progress("CPU pair check", 2);
	if (run_once(&alu_variant, 1, seconds, &one) && run_once(&alu_variant, 2, seconds, &two))
		mach.pair_slowdown = two.ns_per_op / one.ns_per_op;
}

static void run_updates(void)
{
	check_cpu_pair();
	for (unsigned v = 0; v < ELEMENTSOF(variants); v++)
		for (unsigned t = 0; t < opt.nr_threads; t++)
			run_cell(&variants[v], opt.threads[t]);
}

/* ---- single-threaded costs ---------------------------------------------------------- */

typedef void (*micro_fn)(void *ctx, uint64_t iters);

static uint64_t micro_target_ns(void)
{
	return (uint64_t)(opt.seconds * 0.1 * 1e9);
}

/* ns per iteration of fn: grow the iteration count until one call takes a third
 * of the target time, then take the best of three calls. */
static double ns_per_iter(micro_fn fn, void *ctx)
{
	uint64_t iters = 16, dt = 0, best = UINT64_MAX;

	for (;; iters *= 2) {
		uint64_t t0 = now_ns();
		fn(ctx, iters);
		dt = now_ns() - t0;
		if (dt >= micro_target_ns() / 3 || iters >= ((uint64_t)1 << 40))
			break;
	}
	for (int i = 0; i < 3; i++) {
		uint64_t t0 = now_ns();
		fn(ctx, iters);
		best = MIN(best, now_ns() - t0);
	}
	return (double)best / (double)iters;
}

static struct micro *add_micro(const char *name, const char *topo, double ns)
{
	struct micro *m = &micros[nr_micros++];
	*m = (struct micro){ .name = name, .ns = ns };
	copy_str(m->topo, sizeof(m->topo), topo);
	return m;
}

struct read_ctx {
	struct acct_counter *c;
	int64_t threshold;
	struct percpu_counter *pcpu;
	struct long_adder *adder;
	_Atomic int64_t *shared;
};

static void micro_read(void *p, uint64_t n)
{
	struct read_ctx *x = p;
	struct acct_reading rd;
	int64_t acc = 0;
	for (uint64_t i = 0; i < n; i++) {
		acct_counter_read(x->c, &rd);
		acc += rd.value;
	}
	sink = acc;
}

static void micro_read_precise(void *p, uint64_t n)
{
	struct read_ctx *x = p;
	int64_t acc = 0;
	for (uint64_t i = 0; i < n; i++)
		acc += acct_counter_read_precise(x->c);
	sink = acc;
}

static void micro_compare(void *p, uint64_t n)
{
	struct read_ctx *x = p;
	int64_t acc = 0;
	for (uint64_t i = 0; i < n; i++)
		acc += acct_counter_compare(x->c, x->threshold, NULL);
	sink = acc;
}

static void micro_atomic_load(void *p, uint64_t n)
{
	struct read_ctx *x = p;
	int64_t acc = 0;
	for (uint64_t i = 0; i < n; i++)
		acc += atomic_load_explicit(x->shared, memory_order_relaxed);
	sink = acc;
}

static void micro_percpu_read(void *p, uint64_t n)
{
	struct read_ctx *x = p;
	int64_t acc = 0;
	for (uint64_t i = 0; i < n; i++) {
		acc += percpu_read(x->pcpu);
		__asm__ volatile("" ::: "memory");
	}
	sink = acc;
}

static void micro_percpu_sum(void *p, uint64_t n)
{
	struct read_ctx *x = p;
	int64_t acc = 0;
	for (uint64_t i = 0; i < n; i++)
		acc += percpu_sum(x->pcpu);
	sink = acc;
}

static void micro_adder_sum(void *p, uint64_t n)
{
	struct read_ctx *x = p;
	int64_t acc = 0;
	for (uint64_t i = 0; i < n; i++) {
		acc += adder_sum(x->adder);
		__asm__ volatile("" ::: "memory");
	}
	sink = acc;
}

static const char *mode_name(enum acct_update_mode m)
{
	return acct_update_mode_to_string(m);
}

/* "real 2 CPUs, 1 node", "simulated 64 CPUs, 4 nodes" */
static void domain_label(const struct acct_domain *d, char *buf, size_t size)
{
	const struct acct_topology *t = acct_domain_topology(d);
	snprintf(buf, size, "%s %u CPUs, %u node%s", t->simulated ? "simulated" : "real", t->nr_shards, t->nr_nodes,
		 t->nr_nodes == 1 ? "" : "s");
}

/* A domain in the single-threaded mode on topology `t` (NULL: real) with a
 * sharded counter of budget READ_BUDGET carrying some residue. */
static int read_setup(const struct acct_topology *t, struct acct_domain **ret_d, struct acct_counter **ret_c)
{
	struct acct_domain_options o = { .topology = t, .mode = mach.mode };
	int r = acct_domain_new(&o, ret_d);
	if (r < 0)
		return r;
	r = acct_counter_new(*ret_d, READ_BUDGET, ret_c);
	if (r >= 0)
		r = acct_counter_upgrade(*ret_c);
	if (r < 0) {
		*ret_d = acct_domain_free(*ret_d);
		return r;
	}
	for (int i = 0; i < 1000; i++)
		acct_counter_add(*ret_c, 7);
	return 0;
}

static void note_compare(struct micro *m, struct read_ctx *x, bool want_precise)
{
	bool precise;
	(void)acct_counter_compare(x->c, x->threshold, &precise);
	snprintf(m->note, sizeof(m->note), "%s%s", precise ? "precise read" : "answered from the bound",
		 precise == want_precise ? "" : " (UNEXPECTED)");
}

static void micro_reads_on(const struct acct_topology *t)
{
	struct acct_domain *d;
	struct read_ctx x = { 0 };
	struct acct_reading rd;
	char label[48];
	int r = read_setup(t, &d, &x.c);

	if (r < 0) {
		fprintf(stderr, "read setup failed: %s\n", strerror(-r));
		failed = true;
		return;
	}
	domain_label(d, label, sizeof(label));
	progress("reads", 0);
	acct_counter_read(x.c, &rd);
	struct micro *m = add_micro("approximate read (acct_counter_read)", label, ns_per_iter(micro_read, &x));
	snprintf(m->note, sizeof(m->note), "bound %" PRIu64, rd.bound);
	add_micro("precise read (acct_counter_read_precise)", label, ns_per_iter(micro_read_precise, &x));
	x.threshold = rd.value + 2 * (int64_t)rd.bound + 1000000;
	m = add_micro("compare, threshold outside the band", label, ns_per_iter(micro_compare, &x));
	note_compare(m, &x, false);
	x.threshold = rd.value + 1;
	m = add_micro("compare, threshold inside the band", label, ns_per_iter(micro_compare, &x));
	note_compare(m, &x, true);
	acct_counter_free(x.c);
	acct_domain_free(d);
}

static void micro_baseline_reads(void)
{
	struct bench *b;
	char label[48];

	if (bench_new(find_variant("atomic"), 1, &b) < 0) {
		failed = true;
		return;
	}
	struct read_ctx x = { .pcpu = &b->pcpu, .adder = &b->adder, .shared = &b->shared };
	snprintf(label, sizeof(label), "real %u CPUs", mach.nr_cpus);
	add_micro("baseline: shared atomic load", label, ns_per_iter(micro_atomic_load, &x));
	add_micro("baseline: percpu_counter_read (global)", label, ns_per_iter(micro_percpu_read, &x));
	struct micro *m = add_micro("baseline: percpu_counter_sum", label, ns_per_iter(micro_percpu_sum, &x));
	snprintf(m->note, sizeof(m->note), "%u slots, under the lock", b->pcpu.nr_slots);
	m = add_micro("baseline: LongAdder sum", label, ns_per_iter(micro_adder_sum, &x));
	snprintf(m->note, sizeof(m->note), "%u cells", b->adder.mask + 1);
	bench_free(b);
}

struct create_ctx {
	struct acct_domain *d;
	bool error;
};

static void micro_create_destroy(void *p, uint64_t n)
{
	struct create_ctx *x = p;
	for (uint64_t i = 0; i < n; i++) {
		struct acct_counter *c;
		if (acct_counter_new(x->d, 0, &c) < 0) {
			x->error = true;
			return;
		}
		acct_counter_free(c);
	}
}

/* Create n compact counters, then destroy them; ns per pair, or NAN. */
static double create_destroy_batch(struct acct_domain *d, struct acct_counter **v, unsigned n)
{
	uint64_t t0 = now_ns();
	for (unsigned i = 0; i < n; i++)
		if (acct_counter_new(d, 0, &v[i]) < 0)
			return NAN;
	for (unsigned i = 0; i < n; i++)
		acct_counter_free(v[i]);
	return (double)(now_ns() - t0) / n;
}

static void micro_create(void)
{
	struct acct_domain_options o = { .mode = mach.mode };
	struct create_ctx x = { 0 };
	struct acct_counter **v = calloc(BATCH_PAIRS, sizeof(*v));
	unsigned rounds = opt.quick ? 3 : 10;
	double warm = 0;
	char label[48];

	snprintf(label, sizeof(label), "real %u CPUs", mach.nr_cpus);
	if (!v || acct_domain_new(&o, &x.d) < 0) {
		free(v);
		failed = true;
		return;
	}
	progress("create+destroy", 0);
	add_micro("compact create+destroy, batch of 100000 (cold)", label, create_destroy_batch(x.d, v, BATCH_PAIRS));
	for (unsigned i = 0; i < rounds; i++)
		warm += create_destroy_batch(x.d, v, BATCH_PAIRS);
	struct micro *m = add_micro("compact create+destroy, batch of 100000", label, warm / rounds);
	snprintf(m->note, sizeof(m->note), "mean of %u rounds, slab warm", rounds);
	add_micro("compact create+destroy, one at a time", label, ns_per_iter(micro_create_destroy, &x));
	if (x.error)
		failed = true;
	acct_domain_free(x.d);
	free(v);
}

/* Upgrade n fresh compact counters of domain d; ns per upgrade, or NAN. */
static double upgrade_all(struct acct_domain *d, struct acct_counter **v, unsigned n)
{
	uint64_t t0, dt;
	double ns = NAN;

	for (unsigned i = 0; i < n; i++)
		if (acct_counter_new(d, READ_BUDGET, &v[i]) < 0) {
			for (unsigned j = 0; j < i; j++)
				acct_counter_free(v[j]);
			return NAN;
		}
	t0 = now_ns();
	unsigned done = 0;
	while (done < n && acct_counter_upgrade(v[done]) >= 0)
		done++;
	dt = now_ns() - t0;
	if (done == n)
		ns = (double)dt / n;
	for (unsigned i = 0; i < n; i++)
		acct_counter_free(v[i]);
	return ns;
}

static void micro_upgrade_on(const struct acct_topology *t)
{
	struct acct_domain_options o = { .topology = t, .mode = mach.mode };
	struct acct_counter **v = calloc(UPGRADE_COUNTERS, sizeof(*v));
	struct acct_domain *d;
	char label[48];

	if (!v || acct_domain_new(&o, &d) < 0) {
		free(v);
		failed = true;
		return;
	}
	domain_label(d, label, sizeof(label));
	progress("upgrades", 0);
	struct micro *m = add_micro("upgrade (pool grows)", label, upgrade_all(d, v, UPGRADE_COUNTERS));
	snprintf(m->note, sizeof(m->note), "%u counters, fresh domain", UPGRADE_COUNTERS);
	m = add_micro("upgrade (pool slots reused)", label, upgrade_all(d, v, UPGRADE_COUNTERS));
	snprintf(m->note, sizeof(m->note), "%u counters", UPGRADE_COUNTERS);
	if (isnan(micros[nr_micros - 1].ns) || isnan(micros[nr_micros - 2].ns))
		failed = true;
	acct_domain_free(d);
	free(v);
}

static void measure_memory_on(const struct acct_topology *t)
{
	struct acct_domain_options o = { .topology = t, .mode = mach.mode };
	struct acct_domain_stats st;
	struct acct_domain *d;
	struct acct_counter *c;

	if (acct_domain_new(&o, &d) < 0 || acct_counter_new(d, READ_BUDGET, &c) < 0 || acct_counter_upgrade(c) < 0) {
		failed = true;
		return;
	}
	acct_domain_stats(d, &st);
	struct mem_row *m = &mems[nr_mems++];
	*m = (struct mem_row){ .shards = st.nr_shards, .nodes = st.nr_nodes, .compact_bytes = st.compact_bytes,
			       .sharded_bytes = st.sharded_bytes };
	snprintf(m->topo, sizeof(m->topo), "%s", t ? "simulated" : "real");
	acct_domain_free(d);
}

static void run_single_threaded(void)
{
	struct acct_topology *sim = NULL;
	int r = acct_topology_simulate(SIM_CPUS, SIM_NODES, &sim);

	if (r < 0) {
		fprintf(stderr, "acct_topology_simulate: %s\n", strerror(-r));
		failed = true;
		return;
	}
	micro_reads_on(NULL);
	micro_reads_on(sim);
	micro_baseline_reads();
	micro_create();
	micro_upgrade_on(NULL);
	micro_upgrade_on(sim);
	measure_memory_on(NULL);
	measure_memory_on(sim);
	acct_topology_free(sim);
}

/* ---- error against the bound ------------------------------------------------------------ */

struct err_test;

struct err_writer {
	_Alignas(ACCT_CACHELINE) _Atomic int64_t started_abs;
	_Atomic int64_t done_abs;
	_Atomic int64_t done_sum;
	struct err_test *t;
	pthread_t thread;
	unsigned nr;
	uint64_t ops;
};

struct err_test {
	struct acct_counter *c;
	unsigned nr_writers;
	pthread_barrier_t barrier;
	_Alignas(ACCT_CACHELINE) atomic_bool stop;
	struct err_writer w[MAX_ERR_WRITERS];
};

static void *err_writer_main(void *arg)
{
	struct err_writer *w = arg;
	struct err_test *t = w->t;
	uint64_t rng = 0x9e3779b97f4a7c15ull * (w->nr + 1);
	int64_t sum = 0, started = 0, done = 0;

	pin_thread(w->nr);
	pthread_barrier_wait(&t->barrier);
	while (!atomic_load_explicit(&t->stop, memory_order_relaxed)) {
		for (unsigned i = 0; i < 64; i++) {
			int64_t d = (int64_t)(xorshift64(&rng) % (2 * ERROR_MAX_DELTA + 1)) - ERROR_MAX_DELTA;
			int64_t a = (int64_t)abs_u64(d);
			started += a;
			atomic_store_explicit(&w->started_abs, started, memory_order_seq_cst);
			acct_counter_add(t->c, d);
			sum += d;
			done += a;
			atomic_store_explicit(&w->done_sum, sum, memory_order_release);
			atomic_store_explicit(&w->done_abs, done, memory_order_release);
		}
		w->ops += 64;
	}
	return NULL;
}

/* One approximate read checked against the bracket of the writers' sums. */
static void err_check_read(struct err_test *t, struct err_row *row)
{
	int64_t done_abs[MAX_ERR_WRITERS], truth = 0, slack = 0;
	struct acct_reading rd;

	/* done_abs first: the sum read next is at least as recent. */
	for (unsigned i = 0; i < t->nr_writers; i++) {
		done_abs[i] = atomic_load_explicit(&t->w[i].done_abs, memory_order_acquire);
		truth += atomic_load_explicit(&t->w[i].done_sum, memory_order_acquire);
	}
	acct_counter_read(t->c, &rd);
	atomic_thread_fence(memory_order_seq_cst);
	for (unsigned i = 0; i < t->nr_writers; i++)
		slack += atomic_load_explicit(&t->w[i].started_abs, memory_order_acquire) - done_abs[i];

	int64_t err = (int64_t)abs_u64(rd.value - truth);
	row->reads++;
	row->bound = MAX(row->bound, rd.bound);
	row->max_error = MAX(row->max_error, err);
	row->max_excess = MAX(row->max_excess, err - slack);
	if ((uint64_t)err > rd.bound + (uint64_t)slack) {
		if (row->violations++ < 5)
			fprintf(stderr,
				"VIOLATION: value %" PRId64 " bound %" PRIu64 " truth %" PRId64 " +/- %" PRId64 "\n",
				rd.value, rd.bound, truth, slack);
	}
}

static void err_finish(struct err_test *t, struct err_row *row)
{
	struct acct_counter_stats st;
	int64_t truth = 0;

	for (unsigned i = 0; i < t->nr_writers; i++)
		truth += atomic_load(&t->w[i].done_sum);
	int64_t precise = acct_counter_read_precise(t->c);
	row->exact = precise == truth;
	if (!row->exact)
		fprintf(stderr, "MISMATCH: error test %s %s: precise %" PRId64 ", sum of deltas %" PRId64 "\n",
			row->mode, row->topo, precise, truth);
	acct_counter_stats(t->c, &st);
	row->folds = st.folds;
	row->direct = st.direct;
	if (!row->exact || row->violations)
		failed = true;
}

static void err_run(struct err_test *t, struct err_row *row)
{
	unsigned started = 0;

	pthread_barrier_init(&t->barrier, NULL, t->nr_writers + 1);
	for (; started < t->nr_writers; started++) {
		struct err_writer *w = &t->w[started];
		w->t = t;
		w->nr = started;
		if (pthread_create(&w->thread, NULL, err_writer_main, w) != 0) {
			fprintf(stderr, "bench-counter: cannot create writer %u\n", started);
			abort(); /* the barrier would never open */
		}
	}
	pthread_barrier_wait(&t->barrier);
	uint64_t end = now_ns() + (uint64_t)(opt.seconds * 1e9);
	do {
		for (int i = 0; i < 64; i++)
			err_check_read(t, row);
	} while (now_ns() < end);
	atomic_store(&t->stop, true);
	for (unsigned i = 0; i < started; i++)
		pthread_join(t->w[i].thread, NULL);
	pthread_barrier_destroy(&t->barrier);
	err_finish(t, row);
}

static void run_error_test(enum acct_update_mode mode, const struct acct_topology *topo, unsigned writers)
{
	struct acct_domain_options o = { .topology = topo, .mode = mode };
	struct err_row *row = &errs[nr_errs++];
	struct acct_domain *d;
	struct err_test *t = aligned_alloc(ACCT_CACHELINE, sizeof(*t));
	int r;

	*row = (struct err_row){ .mode = mode_name(mode), .writers = writers };
	if (!t) {
		failed = true;
		return;
	}
	memset(t, 0, sizeof(*t));
	t->nr_writers = writers;
	r = acct_domain_new(&o, &d);
	if (r >= 0) {
		domain_label(d, row->topo, sizeof(row->topo));
		r = acct_counter_new(d, ERROR_BUDGET, &t->c);
		if (r >= 0)
			r = acct_counter_upgrade(t->c);
		if (r >= 0) {
			progress("error against the bound", writers);
			err_run(t, row);
		}
		acct_domain_free(d);
	}
	if (r < 0) {
		fprintf(stderr, "error test %s: setup failed: %s\n", row->mode, strerror(-r));
		failed = true;
	}
	free(t);
}

static void run_error_tests(void)
{
	static const enum acct_update_mode modes[] = { ACCT_MODE_RSEQ, ACCT_MODE_FALLBACK };
	struct acct_topology *sim = NULL;

	if (acct_topology_simulate(SIM_CPUS, SIM_NODES, &sim) < 0) {
		failed = true;
		return;
	}
	for (unsigned m = 0; m < ELEMENTSOF(modes); m++) {
		if (!engine_mode_selected(modes[m]) || (modes[m] == ACCT_MODE_RSEQ && !mach.rseq_usable))
			continue;
		run_error_test(modes[m], NULL, 2);
		run_error_test(modes[m], NULL, 4);
		run_error_test(modes[m], sim, 4);
	}
	acct_topology_free(sim);
}

/* ---- targets ------------------------------------------------------------------------------ */

struct target {
	const char *what, *goal;
	double value; /* NAN: not measured */
	double limit;
	int decimals;
};

static const struct cell *find_cell(const char *variant, unsigned threads)
{
	for (unsigned i = 0; i < nr_cells; i++)
		if (strcmp(cells[i].variant, variant) == 0 && cells[i].threads == threads && !cells[i].skipped)
			return &cells[i];
	return NULL;
}

static const struct micro *find_micro(const char *name)
{
	for (unsigned i = 0; i < nr_micros; i++)
		if (strcmp(micros[i].name, name) == 0)
			return &micros[i];
	return NULL;
}

static unsigned collect_targets(struct target *t)
{
	bool rseq = mach.mode == ACCT_MODE_RSEQ;
	const struct cell *c = find_cell(find_variant(rseq ? "engine-rseq" : "engine-fallback")->name, 2);
	const struct micro *rd = find_micro("approximate read (acct_counter_read)");
	const struct micro *cd = find_micro("compact create+destroy, one at a time");
	uint64_t violations = 0;
	unsigned n = 0;

	for (unsigned i = 0; i < nr_errs; i++)
		violations += errs[i].violations;
	t[n++] = (struct target){ rseq ? "update, 2 threads, engine rseq" : "update, 2 threads, engine fallback",
				  "<= 1.5 ns/op per thread", c ? c->ns_per_op : NAN, 1.5, 2 };
	t[n++] = (struct target){ "same, in thread CPU time", "<= 1.5 ns/op per thread", c ? c->cpu_ns_per_op : NAN,
				  1.5, 2 };
	t[n++] = (struct target){ "approximate read, real topology", "<= 10 ns", rd ? rd->ns : NAN, 10, 2 };
	t[n++] = (struct target){ "compact create+destroy", "<= 100 ns", cd ? cd->ns : NAN, 100, 2 };
	t[n++] = (struct target){ "bytes per compact counter", "<= 64",
				  nr_mems ? (double)mems[0].compact_bytes : NAN, 64, 0 };
	t[n++] = (struct target){ "bound violations", "0", nr_errs ? (double)violations : NAN, 0, 0 };
	return n;
}

static const char *target_verdict(const struct target *t)
{
	if (isnan(t->value))
		return "not measured";
	return t->value <= t->limit ? "met" : "MISSED";
}

/* ---- Markdown output ----------------------------------------------------------------------- */

static void print_header(void)
{
	printf("# bench-counter\n\n");
	printf("Machine: %s, %u CPUs online (%u usable), kernel %s, engine mode %s (rseq %s), compiler %s.\n",
	       mach.cpu_model, mach.nr_online, mach.nr_cpus, mach.kernel, mode_name(mach.mode),
	       mach.rseq_usable ? "usable" : "not usable", __VERSION__);
	printf("%.2f s per update cell (median of %u runs); delta +1 per update; thread i pinned to CPU i mod %u.\n",
	       opt.seconds, CELL_REPS, mach.nr_cpus);
	if (!isnan(mach.pair_slowdown))
		printf("CPU pair check: counter-free ALU work runs %.2fx slower on 2 threads (CPUs %d and %d)\n"
		       "than on 1 (1.0: independent, idle cores; up to 2: the CPUs share a core, e.g. SMT siblings\n"
		       "under a hypervisor, or other processes keep one of them busy).\n",
		       mach.pair_slowdown, mach.cpus[0], mach.cpus[1]);
	if (!isnan(mach.others_load))
		printf("Other processes used %.0f%% of all CPU time during the run%s.\n", mach.others_load * 100,
		       mach.others_load > 0.05 ? " (a busy machine: expect noisy numbers)" : "");
	printf("\n");
}

static void print_updates(void)
{
	printf("## Updates\n\n");
	printf("| %-28s | %7s | %16s | %9s | %12s | %-9s | %-34s |\n", "variant", "threads", "ns/op per thread",
	       "CPU ns/op", "total Mops/s", "final sum", "notes");
	printf("|%s|%s:|%s:|%s:|%s:|%s|%s|\n", "------------------------------", "--------", "-----------------",
	       "----------", "-------------", "-----------", "------------------------------------");
	for (unsigned i = 0; i < nr_cells; i++) {
		const struct cell *c = &cells[i];
		if (c->skipped) {
			printf("| %-28s | %7u | %16s | %9s | %12s | %-9s | %-34s |\n", c->variant, c->threads, "-", "-",
			       "-", "-", c->note);
			continue;
		}
		printf("| %-28s | %7u | %16.2f | %9.2f | %12.1f | %-9s | %-34s |\n", c->variant, c->threads,
		       c->ns_per_op, c->cpu_ns_per_op, c->mops, c->exact ? "EXACT" : "MISMATCH", c->note);
	}
	printf("\nns/op per thread: each thread's elapsed time / its updates, averaged; CPU ns/op: the same with the\n"
	       "thread's CPU time (excludes time waiting for a CPU); Mops/s: all updates / the longest elapsed time.\n"
	       "With more threads than CPUs, threads share CPUs: ns/op per thread includes waiting for a CPU.\n"
	       "Engine counters: budget 2^30 (batch %" PRId64 " on %u shards), explicitly upgraded, except compact.\n"
	       "percpu_counter: the kernel algorithm with an atomic add on the slot (user space cannot disable\n"
	       "preemption) and the fold under a mutex. LongAdder: fixed cell array (power of two >= 2 x CPUs).\n"
	       "Plain: a register increment per update (an asm barrier keeps each add); in memory: load, add,\n"
	       "store.\n\n",
	       engine_batch, engine_shards);
}

static void print_micros(void)
{
	printf("## Single-threaded costs\n\n");
	printf("Each: the best of three timed loops of about %.2f s. Batches and upgrades: one pass each.\n\n",
	       (double)micro_target_ns() / 3e9);
	printf("| %-46s | %-26s | %9s | %-34s |\n", "operation", "topology", "ns/op", "notes");
	printf("|%s|%s|%s:|%s|\n", "------------------------------------------------",
	       "----------------------------", "----------", "------------------------------------");
	for (unsigned i = 0; i < nr_micros; i++) {
		const struct micro *m = &micros[i];
		printf("| %-46s | %-26s | %9.2f | %-34s |\n", m->name, m->topo, m->ns, m->note);
	}
	printf("\n");
}

static void print_memory(void)
{
	printf("## Memory\n\n");
	printf("| %-10s | %6s | %5s | %13s | %13s |\n", "topology", "shards", "nodes", "compact bytes",
	       "sharded bytes");
	printf("|%s|%s:|%s:|%s:|%s:|\n", "------------", "-------", "------", "--------------", "--------------");
	for (unsigned i = 0; i < nr_mems; i++)
		printf("| %-10s | %6u | %5u | %13zu | %13zu |\n", mems[i].topo, mems[i].shards, mems[i].nodes,
		       mems[i].compact_bytes, mems[i].sharded_bytes);
	printf("\nSharded bytes include the counter's shard word on every CPU, its node lines and bookkeeping.\n\n");
}

static void print_errors(void)
{
	printf("## Error against the bound\n\n");
	printf("Budget %d, deltas uniform in [-%d, %d], writers pinned, the main thread reading. Raw error =\n"
	       "|read - sum completed before the read|; slack = |delta| of the updates in flight during the read\n"
	       "(large when a thread is preempted); a violation is raw error > bound + slack. max err-slack is the\n"
	       "largest error attributable to the engine (0 if slack covered every error): it must stay <= bound.\n\n",
	       ERROR_BUDGET, ERROR_MAX_DELTA, ERROR_MAX_DELTA);
	printf("| %-8s | %-26s | %7s | %10s | %5s | %13s | %13s | %10s | %8s | %8s | %-9s |\n", "mode", "topology",
	       "writers", "reads", "bound", "max raw error", "max err-slack", "violations", "folds", "direct",
	       "final sum");
	printf("|----------|----------------------------|--------:|-----------:|------:|--------------:|"
	       "--------------:|-----------:|---------:|---------:|-----------|\n");
	for (unsigned i = 0; i < nr_errs; i++) {
		const struct err_row *e = &errs[i];
		printf("| %-8s | %-26s | %7u | %10" PRIu64 " | %5" PRIu64 " | %13" PRId64 " | %13" PRId64
		       " | %10" PRIu64 " | %8" PRIu64 " | %8" PRIu64 " | %-9s |\n",
		       e->mode, e->topo, e->writers, e->reads, e->bound, e->max_error, e->max_excess, e->violations,
		       e->folds, e->direct, e->exact ? "EXACT" : "MISMATCH");
	}
	printf("\n");
}

static void print_targets(void)
{
	struct target t[8];
	unsigned n = collect_targets(t);

	printf("## Targets (stated for 2-CPU machines; this one has %u usable)\n\n", mach.nr_cpus);
	printf("| %-34s | %-24s | %10s | %-12s |\n", "target", "goal", "measured", "result");
	printf("|%s|%s|%s:|%s|\n", "------------------------------------", "--------------------------",
	       "-----------", "--------------");
	for (unsigned i = 0; i < n; i++)
		printf("| %-34s | %-24s | %10.*f | %-12s |\n", t[i].what, t[i].goal, t[i].decimals, t[i].value,
		       target_verdict(&t[i]));
}

/* ---- JSON output ---------------------------------------------------------------------------- */

static void json_str(const char *s)
{
	putchar('"');
	for (; *s; s++) {
		unsigned char ch = (unsigned char)*s;
		if (ch == '"' || ch == '\\')
			printf("\\%c", ch);
		else if (ch < 0x20)
			printf("\\u%04x", ch);
		else
			putchar(ch);
	}
	putchar('"');
}

static void json_num(double v)
{
	if (isnan(v) || isinf(v))
		printf("null");
	else
		printf("%.3f", v);
}

static void json_machine(void)
{
	printf("  \"machine\": {\"cpu\": ");
	json_str(mach.cpu_model);
	printf(", \"cpus_online\": %u, \"cpus_usable\": %u, \"kernel\": ", mach.nr_online, mach.nr_cpus);
	json_str(mach.kernel);
	printf(", \"mode\": \"%s\", \"rseq_usable\": %s, \"compiler\": ", mode_name(mach.mode),
	       mach.rseq_usable ? "true" : "false");
	json_str(__VERSION__);
	printf(", \"cpu_pair_slowdown\": ");
	json_num(mach.pair_slowdown);
	printf(", \"others_cpu_share\": ");
	json_num(mach.others_load);
	printf("},\n  \"config\": {\"seconds\": ");
	json_num(opt.seconds);
	printf(", \"runs_per_cell\": %u, \"quick\": %s, \"delta\": 1, \"threads\": [", CELL_REPS,
	       opt.quick ? "true" : "false");
	for (unsigned i = 0; i < opt.nr_threads; i++)
		printf("%s%u", i ? ", " : "", opt.threads[i]);
	printf("]},\n");
}

static const char *variant_key(const char *name)
{
	for (unsigned i = 0; i < ELEMENTSOF(variants); i++)
		if (strcmp(variants[i].name, name) == 0)
			return variants[i].key;
	return name;
}

static void json_updates(void)
{
	printf("  \"updates\": [\n");
	for (unsigned i = 0; i < nr_cells; i++) {
		const struct cell *c = &cells[i];
		printf("    {\"variant\": \"%s\", \"name\": ", variant_key(c->variant));
		json_str(c->variant);
		printf(", \"threads\": %u, \"measured\": %s, \"ns_per_op_per_thread\": ", c->threads,
		       c->skipped ? "false" : "true");
		json_num(c->ns_per_op);
		printf(", \"cpu_ns_per_op_per_thread\": ");
		json_num(c->cpu_ns_per_op);
		printf(", \"mops_total\": ");
		json_num(c->mops);
		printf(", \"ops\": %" PRIu64 ", \"exact\": %s, \"note\": ", c->ops,
		       c->skipped || c->exact ? "true" : "false");
		json_str(c->note);
		printf("}%s\n", i + 1 < nr_cells ? "," : "");
	}
	printf("  ],\n");
}

static void json_micros(void)
{
	printf("  \"single_threaded\": [\n");
	for (unsigned i = 0; i < nr_micros; i++) {
		printf("    {\"operation\": ");
		json_str(micros[i].name);
		printf(", \"topology\": ");
		json_str(micros[i].topo);
		printf(", \"ns_per_op\": ");
		json_num(micros[i].ns);
		printf(", \"note\": ");
		json_str(micros[i].note);
		printf("}%s\n", i + 1 < nr_micros ? "," : "");
	}
	printf("  ],\n  \"memory\": [\n");
	for (unsigned i = 0; i < nr_mems; i++)
		printf("    {\"topology\": \"%s\", \"shards\": %u, \"nodes\": %u, \"compact_bytes\": %zu, "
		       "\"sharded_bytes\": %zu}%s\n",
		       mems[i].topo, mems[i].shards, mems[i].nodes, mems[i].compact_bytes, mems[i].sharded_bytes,
		       i + 1 < nr_mems ? "," : "");
	printf("  ],\n");
}

static void json_errors(void)
{
	printf("  \"error\": [\n");
	for (unsigned i = 0; i < nr_errs; i++) {
		const struct err_row *e = &errs[i];
		printf("    {\"mode\": \"%s\", \"topology\": ", e->mode);
		json_str(e->topo);
		printf(", \"writers\": %u, \"budget\": %d, \"reads\": %" PRIu64 ", \"bound\": %" PRIu64
		       ", \"max_error\": %" PRId64 ", \"max_error_minus_slack\": %" PRId64 ", \"violations\": %" PRIu64
		       ", \"folds\": %" PRIu64 ", \"direct\": %" PRIu64 ", \"exact\": %s}%s\n",
		       e->writers, ERROR_BUDGET, e->reads, e->bound, e->max_error, e->max_excess, e->violations,
		       e->folds, e->direct, e->exact ? "true" : "false", i + 1 < nr_errs ? "," : "");
	}
	printf("  ],\n");
}

static void json_targets(void)
{
	struct target t[8];
	unsigned n = collect_targets(t);

	printf("  \"targets\": [\n");
	for (unsigned i = 0; i < n; i++) {
		printf("    {\"target\": ");
		json_str(t[i].what);
		printf(", \"goal\": ");
		json_str(t[i].goal);
		printf(", \"measured\": ");
		json_num(t[i].value);
		printf(", \"result\": \"%s\"}%s\n", target_verdict(&t[i]), i + 1 < n ? "," : "");
	}
	printf("  ],\n  \"ok\": %s\n", failed ? "false" : "true");
}

static void print_json(void)
{
	printf("{\n");
	json_machine();
	json_updates();
	json_micros();
	json_errors();
	json_targets();
	printf("}\n");
}

static void print_markdown(void)
{
	print_header();
	print_updates();
	print_micros();
	print_memory();
	print_errors();
	print_targets();
}

/* ---- command line --------------------------------------------------------------------------- */

static void usage(FILE *f)
{
	fprintf(f,
		"Usage: bench-counter [OPTIONS]\n"
		"Benchmark the counter engine against baselines (shared atomic, mutex,\n"
		"percpu_counter, LongAdder, per-thread plain increments).\n\n"
		"  --quick            about 0.2 s per cell (default 1 s)\n"
		"  --json             print one JSON document instead of Markdown tables\n"
		"  --threads LIST     thread counts, comma-separated (default 1,2,4,8)\n"
		"  --seconds S        seconds per update cell and per error run\n"
		"  --mode MODE        engine modes to measure: auto (rseq where usable and\n"
		"                     fallback), rseq or fallback\n"
		"  --help             show this help\n");
}

static int parse_threads(const char *s)
{
	opt.nr_threads = 0;
	while (*s) {
		char *end;
		unsigned long n = strtoul(s, &end, 10);
		if (end == s || n == 0 || n > MAX_THREADS || opt.nr_threads == MAX_THREAD_COUNTS)
			return -EINVAL;
		opt.threads[opt.nr_threads++] = (unsigned)n;
		s = end;
		if (*s == ',')
			s++;
		else if (*s)
			return -EINVAL;
	}
	return opt.nr_threads ? 0 : -EINVAL;
}

static int parse_mode(const char *s)
{
	if (strcmp(s, "auto") == 0)
		opt.mode = ACCT_MODE_AUTO;
	else if (strcmp(s, "rseq") == 0)
		opt.mode = ACCT_MODE_RSEQ;
	else if (strcmp(s, "fallback") == 0)
		opt.mode = ACCT_MODE_FALLBACK;
	else
		return -EINVAL;
	return 0;
}

/* Returns 0 to run, 1 to exit 0 (--help), -EINVAL for bad usage. */
static int parse_args(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "quick", no_argument, NULL, 'q' },	    { "json", no_argument, NULL, 'j' },
		{ "threads", required_argument, NULL, 't' }, { "seconds", required_argument, NULL, 's' },
		{ "mode", required_argument, NULL, 'm' },    { "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	double seconds = 0;
	int c;

	while ((c = getopt_long(argc, argv, "qjt:s:m:h", longopts, NULL)) != -1) {
		switch (c) {
		case 'q':
			opt.quick = true;
			break;
		case 'j':
			opt.json = true;
			break;
		case 't':
			if (parse_threads(optarg) < 0)
				return -EINVAL;
			break;
		case 's': {
			char *end;
			seconds = strtod(optarg, &end);
			if (*end || !(seconds > 0 && seconds <= 3600))
				return -EINVAL;
			break;
		}
		case 'm':
			if (parse_mode(optarg) < 0)
				return -EINVAL;
			break;
		case 'h':
			return 1;
		default:
			return -EINVAL;
		}
	}
	if (optind < argc)
		return -EINVAL;
	opt.seconds = seconds > 0 ? seconds : opt.quick ? 0.2 : 1.0;
	return 0;
}

int main(int argc, char **argv)
{
	int r = parse_args(argc, argv);

	if (r == 1) {
		usage(stdout);
		return 0;
	}
	if (r < 0) {
		usage(stderr);
		return 2;
	}
	detect_machine();
	if (opt.mode == ACCT_MODE_RSEQ && !mach.rseq_usable) {
		fprintf(stderr, "bench-counter: rseq is not usable here (--mode rseq)\n");
		return 77;
	}
	struct load_mark start, end;
	load_mark(&start);
	run_updates();
	run_single_threaded();
	run_error_tests();
	load_mark(&end);
	mach.others_load = others_load(&start, &end);
	progress_done();
	if (opt.json)
		print_json();
	else
		print_markdown();
	return failed ? 1 : 0;
}
