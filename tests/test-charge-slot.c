/* test-charge-slot.c - charge slots (lib/percpu/charge-slot.h and
 * charge-slot-owner.h): header validation on mapping, exact totals, reads
 * within the bound while client threads and a forked client process charge,
 * an injected 64-CPU x 4-node topology, and hostile slots (garbage, huge
 * values, INT64_MIN, a torn header, a client scribbling while acctd reads)
 * that the reader reports as corrupt without crashing. Each suite runs on the
 * compare-and-swap slot and, where usable, the rseq one, on the real topology
 * and on 64x4. In the TSan phase (suite "threads"). */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "charge-slot-owner.h"
#include "charge-slot.h"
#include "rseq.h"
#include "util.h"

struct fixture {
	enum acct_update_mode mode;
	const char *topology;
	struct acct_topology *topo;
	struct acct_slot_owner *owner;
	struct acct_slot_writer *writer;
};

static struct fixture *current;

#define SLOT_ID UINT64_C(0x1234567890abcdef)

static int make_slot(struct fixture *f, int64_t budget)
{
	struct acct_slot_options o = { .topology = f->topo, .mode = f->mode, .budget = budget, .id = SLOT_ID };
	f->writer = acct_slot_unmap(f->writer);
	f->owner = acct_slot_owner_free(f->owner);
	int r = acct_slot_create(&o, &f->owner);
	if (r < 0)
		return r;
	return acct_slot_map(acct_slot_owner_fd(f->owner), &f->writer);
}

static int setup(void **state)
{
	struct fixture *f = current;
	assert_int_equal(acct_topology_from_spec(f->topology, &f->topo), 0);
	assert_int_equal(make_slot(f, 1 << 20), 0);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;
	f->writer = acct_slot_unmap(f->writer);
	f->owner = acct_slot_owner_free(f->owner);
	f->topo = acct_topology_free(f->topo);
	return 0;
}

static int64_t read_ok(const struct fixture *f, uint64_t *ret_bound)
{
	struct acct_reading rd;
	assert_int_equal(acct_slot_read(f->owner, &rd), 0);
	if (ret_bound)
		*ret_bound = rd.bound;
	return rd.value;
}

static struct acct_slot_header *header_of(const struct fixture *f)
{
	return acct_slot_owner_memory(f->owner);
}

static int64_t *shard_word(const struct fixture *f, unsigned s)
{
	struct acct_slot_header *h = header_of(f);
	return (int64_t *)((char *)h + h->shards_offset + (size_t)s * ACCT_SHARD_STRIDE);
}

static int64_t *node_sum(const struct fixture *f, unsigned n)
{
	struct acct_slot_header *h = header_of(f);
	return (int64_t *)((char *)h + h->nodes_offset + (size_t)n * ACCT_SLOT_NODE_STRIDE);
}

/* ---- single thread ---------------------------------------------------------- */

static void test_header(void **state)
{
	struct fixture *f = *state;
	struct acct_slot_header *h = header_of(f);

	assert_true(h->magic == ACCT_SLOT_MAGIC);
	assert_int_equal(h->version, ACCT_SLOT_VERSION);
	assert_int_equal(h->nr_shards, f->topo->nr_shards);
	assert_int_equal(h->nr_nodes, f->topo->nr_nodes);
	assert_int_equal(h->mode, f->mode == ACCT_MODE_RSEQ ? ACCT_SLOT_MODE_RSEQ : ACCT_SLOT_MODE_CAS);
	assert_true(h->batch == acct_batch_for_budget(1 << 20, f->topo->nr_shards));
	assert_true(h->total_size == acct_slot_owner_size(f->owner));
	int seals = fcntl(acct_slot_owner_fd(f->owner), F_GET_SEALS);
	assert_true(seals >= 0 && (seals & F_SEAL_SHRINK) && (seals & F_SEAL_GROW) && (seals & F_SEAL_SEAL));
	/* Sealed: neither side can change the size, so no mapping can fault. */
	assert_int_equal(ftruncate(acct_slot_owner_fd(f->owner), 4096), -1);
	assert_int_equal(errno, EPERM);
	/* Once acctd hands the descriptor on, the slot still reads (its mapping). */
	int fd = acct_slot_owner_take_fd(f->owner);
	assert_true(fd >= 0);
	assert_int_equal(acct_slot_owner_fd(f->owner), -EBADF);
	assert_int_equal(acct_slot_owner_take_fd(f->owner), -EBADF);
	acct_slot_add(f->writer, 7);
	close(fd);
	assert_true(read_ok(f, NULL) == 7);
}

static void test_exact_total(void **state)
{
	struct fixture *f = *state;
	int64_t sum = 0;
	uint64_t bound;

	assert_int_equal(read_ok(f, &bound), 0);
	assert_true(bound == (uint64_t)(header_of(f)->batch - 1) * f->topo->nr_shards);
	assert_true(bound <= 1 << 20);
	/* Small, negative, and deltas too large to batch (straight to a node). */
	const int64_t deltas[] = { 1, -1, 7, 4096, -300, 1 << 20, -(1 << 22), INT32_MAX, -INT32_MAX, 3 };
	for (int round = 0; round < 1000; round++)
		for (size_t i = 0; i < ELEMENTSOF(deltas); i++) {
			acct_slot_add(f->writer, deltas[i]);
			sum += deltas[i];
		}
	assert_true(read_ok(f, NULL) == sum);
}

static void test_budget_zero_is_exact(void **state)
{
	struct fixture *f = *state;
	uint64_t bound;

	assert_int_equal(make_slot(f, 0), 0);
	for (int i = 1; i <= 1000; i++)
		acct_slot_add(f->writer, i % 2 ? i : -i / 2);
	int64_t want = 0;
	for (int i = 1; i <= 1000; i++)
		want += i % 2 ? i : -i / 2;
	assert_true(read_ok(f, &bound) == want);
	assert_true(bound == 0);
	for (unsigned s = 0; s < f->topo->nr_shards; s++)
		assert_true(*shard_word(f, s) == 0);
}

static void test_bad_options(void **state)
{
	struct fixture *f = *state;
	struct acct_slot_owner *o = NULL;
	struct acct_slot_options opts = { .topology = f->topo, .mode = f->mode, .budget = -1 };

	assert_int_equal(acct_slot_create(&opts, &o), -EINVAL);
	assert_int_equal(acct_slot_create(NULL, &o), -EINVAL);
	opts.budget = 1;
	opts.mode = 17;
	assert_int_equal(acct_slot_create(&opts, &o), -EINVAL);
	assert_null(o);
}

/* ---- the header as the client checks it ----------------------------------------- */

static int map_again(const struct fixture *f)
{
	struct acct_slot_writer *w = NULL;
	int r = acct_slot_map(acct_slot_owner_fd(f->owner), &w);
	if (r == 0)
		assert_non_null(w);
	else
		assert_null(w);
	acct_slot_unmap(w);
	return r;
}

static void test_header_rejected(void **state)
{
	struct fixture *f = *state;
	struct acct_slot_header *h = header_of(f), saved = *h;

	assert_int_equal(map_again(f), 0);
	h->magic ^= 1;
	assert_int_equal(map_again(f), -EBADMSG);
	*h = saved;
	h->version = ACCT_SLOT_VERSION + 1;
	assert_int_equal(map_again(f), -EPROTO);
	*h = saved;
	h->header_size = 8;
	assert_int_equal(map_again(f), -EBADMSG);
	*h = saved;
	h->mode = 9;
	assert_int_equal(map_again(f), -EPROTO);
	*h = saved;
	h->total_size += 4096;
	assert_int_equal(map_again(f), -EBADMSG);
	*h = saved;
	/* Regions past the end, overlapping, or a geometry that does not fit. */
	h->nodes_offset = h->total_size - 8;
	assert_int_equal(map_again(f), -EBADMSG);
	*h = saved;
	h->shards_offset = 0;
	assert_int_equal(map_again(f), -EBADMSG);
	*h = saved;
	h->nr_shards = UINT32_MAX;
	assert_int_equal(map_again(f), -EBADMSG);
	*h = saved;
	h->nr_nodes = 0;
	assert_int_equal(map_again(f), -EBADMSG);
	*h = saved;
	h->batch = INT64_MAX;
	assert_int_equal(map_again(f), -EBADMSG);
	*h = saved;
	h->table_offset = UINT64_MAX - 4;
	assert_int_equal(map_again(f), -EBADMSG);
	*h = saved;
	/* A node table entry past the nodes. */
	uint16_t *table = (uint16_t *)((char *)h + h->table_offset);
	uint16_t t0 = table[0];
	table[0] = (uint16_t)h->nr_nodes;
	assert_int_equal(map_again(f), -EBADMSG);
	table[0] = t0;
	/* A torn header: the second half of a new one over the first half of the old. */
	struct acct_slot_header other = saved;
	other.nr_shards = saved.nr_shards * 2;
	other.total_size = saved.total_size * 2;
	memcpy((char *)h + sizeof(*h) / 2, (char *)&other + sizeof(*h) / 2, sizeof(*h) - sizeof(*h) / 2);
	assert_true(map_again(f) < 0);
	*h = saved;
	assert_int_equal(map_again(f), 0);
}

static void test_unsealed_rejected(void **state)
{
	(void)state;
	struct acct_slot_writer *w = NULL;
	int fd = memfd_create("unsealed", MFD_CLOEXEC);
	assert_true(fd >= 0);
	assert_int_equal(ftruncate(fd, 1 << 20), 0);
	assert_int_equal(acct_slot_map(fd, &w), -EPERM);
	close(fd);
	/* Sealed but empty: not even a header. */
	fd = memfd_create("empty", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	assert_true(fd >= 0);
	assert_int_equal(fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK), 0);
	assert_int_equal(acct_slot_map(fd, &w), -EBADMSG);
	close(fd);
	assert_int_equal(acct_slot_map(-1, &w), -EBADF);
	assert_null(w);
}

/* ---- adoption after a restart (acct_slot_adopt()) ------------------------------ */

/* A slot taken up from its memfd and the geometry acctd kept reads what the
 * client charged, before and after; a wrong id, a header id the client
 * rewrote, a geometry that is not the memfd's, an unsealed memfd are
 * refused; a hostile word is caught by the adopted reader as by the first. */
static void test_adopt(void **state)
{
	struct fixture *f = *state;
	struct acct_slot_owner *a = NULL;
	struct acct_slot_geometry g, other;
	struct acct_reading rd;
	int fd = acct_slot_owner_fd(f->owner);

	acct_slot_owner_geometry(f->owner, &g);
	acct_slot_add(f->writer, 1234);
	assert_int_equal(acct_slot_adopt(fd, &g, SLOT_ID, &a), 0);
	assert_int_equal(acct_slot_read(a, &rd), 0);
	assert_int_equal(rd.value, 1234);
	assert_int_equal(rd.bound, (uint64_t)(g.batch - 1) * g.nr_shards);
	acct_slot_add(f->writer, -34);
	assert_int_equal(acct_slot_read(a, &rd), 0);
	assert_int_equal(rd.value, 1200);
	assert_int_equal(rd.value, read_ok(f, NULL));
	/* a word the client cannot have written honestly */
	int64_t *w = shard_word(f, 0), saved = *w;
	*w = 2 * g.batch + 2;
	assert_int_equal(acct_slot_read(a, &rd), -EBADMSG);
	*w = saved;
	a = acct_slot_owner_free(a);

	assert_int_equal(acct_slot_adopt(fd, &g, SLOT_ID + 1, &a), -EBADMSG);
	header_of(f)->id = SLOT_ID + 1; /* the client rewrote it: its loss alone */
	assert_int_equal(acct_slot_adopt(fd, &g, SLOT_ID, &a), -EBADMSG);
	header_of(f)->id = SLOT_ID;
	other = g, other.nr_shards++;
	assert_int_equal(acct_slot_adopt(fd, &other, SLOT_ID, &a), -EBADF);
	other = g, other.nr_nodes += 64;
	assert_int_equal(acct_slot_adopt(fd, &other, SLOT_ID, &a), -EBADF);
	other = g, other.batch = 0;
	assert_int_equal(acct_slot_adopt(fd, &other, SLOT_ID, &a), -EINVAL);
	other = g, other.nr_shards = 0;
	assert_int_equal(acct_slot_adopt(fd, &other, SLOT_ID, &a), -EINVAL);
	assert_int_equal(acct_slot_adopt(-1, &g, SLOT_ID, &a), -EBADF);
	/* the right size, not sealed: a shrink would fault acctd */
	int u = memfd_create("unsealed", MFD_CLOEXEC);
	assert_true(u >= 0);
	assert_int_equal(ftruncate(u, (off_t)acct_slot_owner_size(f->owner)), 0);
	assert_int_equal(acct_slot_adopt(u, &g, SLOT_ID, &a), -EPERM);
	close(u);
	assert_null(a);
}

/* ---- hostile slots ---------------------------------------------------------------- */

static void test_hostile_words(void **state)
{
	struct fixture *f = *state;
	struct acct_reading rd = { .value = 12345 };
	int64_t lim = 2 * (header_of(f)->batch - 1);
	unsigned last = f->topo->nr_shards - 1, lastn = f->topo->nr_nodes - 1;

	/* A flagged word carries nothing but the flag. */
	*shard_word(f, last) = 3;
	assert_int_equal(acct_slot_read(f->owner, &rd), -EBADMSG);
	assert_true(rd.value == 12345); /* untouched on failure */
	*shard_word(f, last) = 1;
	assert_true(read_ok(f, NULL) == 0);
	/* Residues past the batch, and the extremes. */
	*shard_word(f, last) = lim + 2;
	assert_int_equal(acct_slot_read(f->owner, &rd), -EBADMSG);
	*shard_word(f, last) = -lim - 2;
	assert_int_equal(acct_slot_read(f->owner, &rd), -EBADMSG);
	*shard_word(f, last) = INT64_MIN;
	assert_int_equal(acct_slot_read(f->owner, &rd), -EBADMSG);
	*shard_word(f, last) = INT64_MAX;
	assert_int_equal(acct_slot_read(f->owner, &rd), -EBADMSG);
	*shard_word(f, last) = -lim;
	assert_true(read_ok(f, NULL) == -lim / 2);
	*shard_word(f, last) = 0;
	/* Node sums: INT64_MIN, a total beyond the value range, and sums that
	 * wrap individually but whose total is sane (accepted). */
	*node_sum(f, lastn) = INT64_MIN;
	assert_int_equal(acct_slot_read(f->owner, &rd), -EBADMSG);
	*node_sum(f, lastn) = ACCT_SLOT_VALUE_MAX + 1;
	assert_int_equal(acct_slot_read(f->owner, &rd), -EBADMSG);
	*node_sum(f, lastn) = -ACCT_SLOT_VALUE_MAX - 1;
	assert_int_equal(acct_slot_read(f->owner, &rd), -EBADMSG);
	*node_sum(f, lastn) = ACCT_SLOT_VALUE_MAX;
	assert_true(read_ok(f, NULL) == ACCT_SLOT_VALUE_MAX);
	/* In range alone, out of range with a residue on top. */
	*shard_word(f, last) = 2;
	assert_int_equal(acct_slot_read(f->owner, &rd), -EBADMSG);
	*shard_word(f, last) = 0;
	*node_sum(f, lastn) = 0;
	if (f->topo->nr_nodes > 2) {
		*node_sum(f, 0) = INT64_MAX;
		*node_sum(f, 1) = 1;
		assert_int_equal(acct_slot_read(f->owner, &rd), -EBADMSG); /* total 2^63 */
		/* 2^63 - 1 + 2^63 - 1 + 2: 2^64, which wraps to a sane 0. */
		*node_sum(f, 1) = INT64_MAX;
		*node_sum(f, 2) = 2;
		assert_true(read_ok(f, NULL) == 0);
		*node_sum(f, 0) = *node_sum(f, 1) = *node_sum(f, 2) = 0;
	}
	/* The header is never read back by acctd: garbage there changes nothing,
	 * and the client's mapping works from its private copy. */
	memset(header_of(f), 0xa5, sizeof(struct acct_slot_header));
	acct_slot_add(f->writer, 5);
	acct_slot_add(f->writer, 1 << 30);
	assert_true(read_ok(f, NULL) == 5 + (1 << 30));
}

static uint64_t xorshift(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

static void test_hostile_garbage(void **state)
{
	struct fixture *f = *state;
	struct acct_reading rd;
	uint64_t seed = 0x9e3779b97f4a7c15u;
	size_t size = acct_slot_owner_size(f->owner);
	int corrupt = 0, sane = 0;

	/* A second slot beside the hostile one: nothing reaches it. */
	struct acct_slot_owner *other = NULL;
	struct acct_slot_writer *other_w = NULL;
	struct acct_slot_options o = { .topology = f->topo, .mode = f->mode, .budget = 1000 };
	assert_int_equal(acct_slot_create(&o, &other), 0);
	assert_int_equal(acct_slot_map(acct_slot_owner_fd(other), &other_w), 0);
	acct_slot_add(other_w, 42);

	for (int round = 0; round < 200; round++) {
		uint64_t *words = acct_slot_owner_memory(f->owner);
		if (round % 2 == 0) {
			for (size_t i = 0; i < size / 8; i++)
				words[i] = xorshift(&seed);
		} else {
			memset(words, 0, size);
			/* Sparse garbage: a few words anywhere, some of them extremes. */
			for (int k = 0; k < 4; k++) {
				uint64_t v = xorshift(&seed);
				words[v % (size / 8)] = k == 0 ? (uint64_t)INT64_MIN : k == 1 ? (uint64_t)INT64_MAX : v;
			}
		}
		if (acct_slot_read(f->owner, &rd) < 0)
			corrupt++;
		else
			sane++, assert_true(rd.value <= ACCT_SLOT_VALUE_MAX && rd.value >= -ACCT_SLOT_VALUE_MAX);
		assert_true(acct_slot_read(other, &rd) == 0 && rd.value == 42);
	}
	assert_true(corrupt >= 100); /* every dense round at least */
	assert_true(sane + corrupt == 200);
	acct_slot_unmap(other_w);
	acct_slot_owner_free(other);
}

/* A client that scribbles while acctd reads: reads fail or stay sane, never
 * crash, and are data-race free (relaxed atomics on both sides here: a real
 * client is another process, where TSan cannot look). */
struct scribbler {
	struct fixture *f;
	int stop;
};

static void *scribble(void *userdata)
{
	struct scribbler *s = userdata;
	uint64_t seed = 88172645463325252u;
	int64_t *words = acct_slot_owner_memory(s->f->owner);
	size_t n = acct_slot_owner_size(s->f->owner) / 8;

	while (!__atomic_load_n(&s->stop, __ATOMIC_RELAXED))
		__atomic_store_n(&words[xorshift(&seed) % n], (int64_t)xorshift(&seed), __ATOMIC_RELAXED);
	return NULL;
}

static void test_hostile_concurrent(void **state)
{
	struct fixture *f = *state;
	struct scribbler s = { .f = f };
	pthread_t t;
	struct acct_reading rd;

	assert_int_equal(pthread_create(&t, NULL, scribble, &s), 0);
	for (int i = 0; i < 20000; i++)
		if (acct_slot_read(f->owner, &rd) == 0)
			assert_true(rd.value <= ACCT_SLOT_VALUE_MAX && rd.value >= -ACCT_SLOT_VALUE_MAX);
	__atomic_store_n(&s.stop, 1, __ATOMIC_RELAXED);
	pthread_join(t, NULL);
}

/* ---- concurrency ------------------------------------------------------------------- */

#define WRITERS 4

struct writer {
	struct acct_slot_writer *w;
	uint64_t seed;
	long ops;
	/* Published for the reader (bench-counter.c's error check): the sum of
	 * |delta| started, and the sum and sum of |delta| completed. */
	int64_t started_abs, done, done_abs;
} __attribute__((aligned(64)));

static int go;

static void *write_loop(void *userdata)
{
	struct writer *wr = userdata;
	int64_t started_abs = 0, done = 0, done_abs = 0;

	while (!__atomic_load_n(&go, __ATOMIC_ACQUIRE))
		;
	for (long i = 0; i < wr->ops; i++) {
		int64_t d = (int64_t)(xorshift(&wr->seed) % 201) - 100;
		started_abs += d < 0 ? -d : d;
		__atomic_store_n(&wr->started_abs, started_abs, __ATOMIC_SEQ_CST);
		acct_slot_add(wr->w, d);
		done += d;
		done_abs += d < 0 ? -d : d;
		__atomic_store_n(&wr->done, done, __ATOMIC_SEQ_CST);
		__atomic_store_n(&wr->done_abs, done_abs, __ATOMIC_SEQ_CST);
	}
	return NULL;
}

/* Writers charge signed deltas while this thread reads: every read is within
 * its bound of the truth, give or take the charges running during it. */
static void test_threads_within_bound(void **state)
{
	struct fixture *f = *state;
	struct writer wr[WRITERS];
	pthread_t t[WRITERS];
	long reads = 0;

	assert_int_equal(make_slot(f, 4096), 0);
	go = 0;
	for (int i = 0; i < WRITERS; i++) {
		wr[i] = (struct writer){ .w = f->writer, .seed = 0x1234567u + (uint64_t)i * 7919, .ops = 200000 };
		assert_int_equal(pthread_create(&t[i], NULL, write_loop, &wr[i]), 0);
	}
	__atomic_store_n(&go, 1, __ATOMIC_RELEASE);
	char failure[160] = "";
	for (bool running = true; running;) {
		int64_t before = 0, done_abs = 0, started_abs = 0;
		struct acct_reading rd;
		running = false;
		/* done_abs before done: a writer stores done, then done_abs, so the
		 * done read after covers at least the deltas done_abs does, and
		 * every delta in `before` but not in done_abs counts as slack.
		 * (The other order left out of the slack the deltas a writer
		 * completed between the two loads: thousands, where TSan
		 * preempted the reader there.) */
		for (int i = 0; i < WRITERS; i++) {
			done_abs += __atomic_load_n(&wr[i].done_abs, __ATOMIC_SEQ_CST);
			before += __atomic_load_n(&wr[i].done, __ATOMIC_SEQ_CST);
		}
		assert_int_equal(acct_slot_read(f->owner, &rd), 0);
		for (int i = 0; i < WRITERS; i++) {
			int64_t s = __atomic_load_n(&wr[i].started_abs, __ATOMIC_SEQ_CST);
			started_abs += s;
			running |= __atomic_load_n(&wr[i].done_abs, __ATOMIC_SEQ_CST) != s || reads == 0;
		}
		int64_t err = rd.value - before;
		uint64_t slack = (uint64_t)(started_abs - done_abs);
		if (abs_u64(err) > rd.bound + slack) {
			/* said after the writers end: they write into the slot the
			 * fixture unmaps */
			snprintf(failure, sizeof(failure),
				 "read %" PRId64 " truth %" PRId64 " bound %" PRIu64 " slack %" PRIu64, rd.value, before,
				 rd.bound, slack);
			break;
		}
		reads++;
		if (reads > 10000000)
			break;
	}
	int64_t want = 0;
	for (int i = 0; i < WRITERS; i++) {
		pthread_join(t[i], NULL);
		want += wr[i].done;
	}
	if (failure[0])
		fail_msg("%s", failure);
	/* Quiesced: exact. */
	assert_true(read_ok(f, NULL) == want);
	assert_true(reads > 1);
}

/* A client process: a forked child maps the descriptor itself and charges
 * beside this process's threads. */
static void test_forked_client(void **state)
{
	struct fixture *f = *state;
	struct writer wr = { .seed = 42, .ops = 100000 };
	pthread_t t;
	const long child_ops = 100000;

	assert_int_equal(make_slot(f, 4096), 0);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		struct acct_slot_writer *w = NULL;
		if (acct_slot_map(acct_slot_owner_fd(f->owner), &w) < 0)
			_exit(2);
		for (long i = 0; i < child_ops; i++)
			acct_slot_add(w, i % 3 == 0 ? -2 : 3);
		acct_slot_unmap(w);
		_exit(0);
	}
	wr.w = f->writer;
	go = 1;
	assert_int_equal(pthread_create(&t, NULL, write_loop, &wr), 0);
	for (int i = 0; i < 1000; i++) {
		struct acct_reading rd;
		assert_int_equal(acct_slot_read(f->owner, &rd), 0);
	}
	pthread_join(t, NULL);
	int status;
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	int64_t child = 0;
	for (long i = 0; i < child_ops; i++)
		child += i % 3 == 0 ? -2 : 3;
	assert_true(read_ok(f, NULL) == wr.done + child);
}

/* A slot whose geometry covers fewer CPUs than this machine may report (a
 * daemon elsewhere, a header that lies about it): the unchecked rseq section
 * must not run, or a CPU id past the slot would write outside it. The client
 * charges node sums instead: exact, and no shard is touched (S3). */
static void test_cpu_ids_outside_slot(void **state)
{
	struct fixture *f = *state;
	struct acct_topology *t = NULL;
	struct acct_slot_owner *o = NULL;
	struct acct_slot_writer *w = NULL;
	struct acct_reading rd;

	if (f->mode != ACCT_MODE_RSEQ || f->topo->nr_real_cpus < 2) {
		printf("# skipped here: needs an rseq slot on 2+ CPUs\n");
		return;
	}
	assert_int_equal(acct_topology_dup(f->topo, &t), 0);
	t->nr_real_cpus = 1; /* the slot says kernel CPU ids are below 1 */
	struct acct_slot_options opts = { .topology = t, .mode = ACCT_MODE_RSEQ, .budget = 1 << 20 };
	assert_int_equal(acct_slot_create(&opts, &o), 0);
	assert_int_equal(acct_slot_map(acct_slot_owner_fd(o), &w), 0);
	assert_false(w->inline_ok);

	struct acct_slot_header *h = acct_slot_owner_memory(o);
	int64_t sum = 0;
	for (unsigned cpu = 0; cpu < f->topo->nr_real_cpus; cpu++) {
		cpu_set_t one;
		CPU_ZERO(&one);
		CPU_SET(cpu, &one);
		if (sched_setaffinity(0, sizeof(one), &one) < 0)
			continue;
		for (int i = 0; i < 1000; i++) {
			acct_slot_add(w, 3);
			sum += 3;
		}
	}
	cpu_set_t all;
	CPU_ZERO(&all);
	for (unsigned cpu = 0; cpu < f->topo->nr_real_cpus && cpu < CPU_SETSIZE; cpu++)
		CPU_SET(cpu, &all);
	(void)sched_setaffinity(0, sizeof(all), &all);
	for (unsigned sh = 0; sh < h->nr_shards; sh++)
		assert_true(*(int64_t *)((char *)h + h->shards_offset + (size_t)sh * ACCT_SHARD_STRIDE) == 0);
	assert_int_equal(acct_slot_read(o, &rd), 0);
	assert_true(rd.value == sum);
	acct_slot_unmap(w);
	acct_slot_owner_free(o);
	acct_topology_free(t);
}

/* ---- runs ------------------------------------------------------------------------------ */

static int run_suite(struct fixture *f)
{
	char name[96];
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_header, setup, teardown),
		cmocka_unit_test_setup_teardown(test_exact_total, setup, teardown),
		cmocka_unit_test_setup_teardown(test_adopt, setup, teardown),
		cmocka_unit_test_setup_teardown(test_budget_zero_is_exact, setup, teardown),
		cmocka_unit_test_setup_teardown(test_bad_options, setup, teardown),
		cmocka_unit_test_setup_teardown(test_header_rejected, setup, teardown),
		cmocka_unit_test_setup_teardown(test_hostile_words, setup, teardown),
		cmocka_unit_test_setup_teardown(test_hostile_garbage, setup, teardown),
		cmocka_unit_test_setup_teardown(test_hostile_concurrent, setup, teardown),
		cmocka_unit_test_setup_teardown(test_threads_within_bound, setup, teardown),
		cmocka_unit_test_setup_teardown(test_forked_client, setup, teardown),
		cmocka_unit_test_setup_teardown(test_cpu_ids_outside_slot, setup, teardown),
	};
	current = f;
	snprintf(name, sizeof(name), "charge-slot %s %s", acct_update_mode_to_string(f->mode), f->topology);
	return cmocka_run_group_tests_name(name, tests, NULL, NULL);
}

int main(void)
{
	static const char *const topologies[] = { "real", "64x4" };
	const struct CMUnitTest plain[] = {
		cmocka_unit_test(test_unsealed_rejected),
	};
	int failed = cmocka_run_group_tests_name("charge-slot mapping", plain, NULL, NULL);

	for (size_t t = 0; t < ELEMENTSOF(topologies); t++) {
		struct fixture fallback = { .mode = ACCT_MODE_FALLBACK, .topology = topologies[t] };
		failed += run_suite(&fallback);
		if (acct_rseq_usable()) {
			struct fixture rseq = { .mode = ACCT_MODE_RSEQ, .topology = topologies[t] };
			failed += run_suite(&rseq);
		} else
			printf("# rseq slots not tested: restartable sequences are not usable here\n");
	}
	return failed ? 1 : 0;
}
