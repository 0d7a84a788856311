/* fuzz-cgfs-parse.c - libFuzzer target: every cgfs parser on every input.
 *
 * The input becomes a NUL-terminated buffer of exactly its size (an embedded
 * NUL simply ends it early, as it would for a C string read from a file), so
 * AddressSanitizer reports any read past the end. Beyond "no crash" the
 * target checks what the parsers promise: only 0, -EBADMSG, -ERANGE or
 * -ENOENT come back; outputs are untouched on failure; a value parsed
 * successfully agrees with a reference parse; callbacks see sane arguments.
 *
 * Built by meson with -Dfuzz=true (clang): CC=clang meson setup build-fuzz -Dfuzz=true
 * && ninja -C build-fuzz tests/fuzz-cgfs-parse. Run:
 *   mkdir -p corpus
 *   for f in $(find tests/data/kernel -type f); do cp "$f" corpus/$(echo "$f" | tr / _); done
 *   build-fuzz/tests/fuzz-cgfs-parse -max_total_time=120 corpus */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cgfs-parse.h"
#include "util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define POISON UINT64_C(0x5a5a5a5a5a5a5a5a)

static void check(bool ok, const char *what)
{
	if (!ok) {
		fprintf(stderr, "invariant broken: %s\n", what);
		abort();
	}
}

static void check_rc(int r, const char *what)
{
	check(r == 0 || r == -EBADMSG || r == -ERANGE || r == -ENOENT, what);
}

static bool only_digits(const char *s, size_t n)
{
	if (n == 0)
		return false;
	for (size_t i = 0; i < n; i++)
		if (s[i] < '0' || s[i] > '9')
			return false;
	return true;
}

static int kv_fn(const char *key, size_t key_len, uint64_t value, void *userdata)
{
	size_t *calls = userdata;

	check(key_len >= 1 && key_len <= CGFS_KEY_MAX, "flat keyed key length");
	for (size_t i = 0; i < key_len; i++)
		check(key[i] > ' ' && key[i] < 0x7f, "flat keyed key bytes");
	check(key[key_len] == ' ', "flat keyed key is followed by one space");
	(*calls)++;
	return 0;
}

static int numa_fn(const char *key, size_t key_len, uint64_t total, const uint64_t *per_node, size_t nr_nodes,
		   void *userdata)
{
	size_t *calls = userdata;

	check(key_len >= 1 && key_len <= CGFS_KEY_MAX, "numa key length");
	check(nr_nodes >= 1 && nr_nodes <= CGFS_MAX_NODES, "numa node count");
	uint64_t sum = 0;
	for (size_t i = 0; i < nr_nodes; i++) /* ASan: all nr_nodes slots exist */
		sum += per_node[i];
	/* v2 lines ("key N0=..."): the total is the sum, which the parser
	 * refuses to let overflow. v1 lines ("key=total N0=...") give it. */
	if (key[key_len] == ' ')
		check(sum == total, "numa v2 total is the sum");
	else
		check(key[key_len] == '=', "numa v1 key ends at '='");
	(*calls)++;
	return 0;
}

static int pid_fn(int pid, void *userdata)
{
	check(pid > 0, "pid > 0");
	return 0;
}

static void fuzz_u64(const char *buf, size_t len)
{
	uint64_t v = POISON;
	int r = cgfs_parse_u64(buf, &v);

	check_rc(r, "u64 rc");
	check(r != -ENOENT, "u64 never ENOENT");
	if (r < 0) {
		check(v == POISON, "u64 untouched on failure");
		return;
	}
	size_t n = len && buf[len - 1] == '\n' ? len - 1 : len;
	if (n == 3 && memcmp(buf, "max", 3) == 0) {
		check(v == UINT64_MAX, "max");
		return;
	}
	check(only_digits(buf, n), "u64 accepted only digits");
	errno = 0;
	unsigned long long ref = strtoull(buf, NULL, 10);
	check(errno == 0 && ref == v, "u64 agrees with strtoull");
}

static void fuzz_flat(const char *buf)
{
	size_t calls = 0, lines = 0;
	uint64_t v = POISON;
	int r = cgfs_parse_flat_keyed(buf, kv_fn, &calls);

	check_rc(r, "flat keyed rc");
	if (r < 0)
		check(calls == 0, "no callback on a malformed file");
	else {
		for (const char *p = buf; *p; p++)
			lines += *p == '\n';
		if (*buf && buf[strlen(buf) - 1] != '\n')
			lines++;
		check(calls == lines, "one callback per line");
	}
	r = cgfs_flat_keyed_get(buf, "anon", &v);
	check_rc(r, "flat get rc");
	if (r < 0)
		check(v == POISON, "flat get untouched on failure");
}

static void fuzz_pressure(const char *buf)
{
	struct cgfs_psi psi;
	int r;

	memset(&psi, 0x5a, sizeof(psi));
	r = cgfs_parse_pressure(buf, &psi);
	check_rc(r, "pressure rc");
	if (r < 0) {
		check(psi.some.total_us == POISON, "pressure untouched on failure");
		return;
	}
	check(psi.some.present, "some present");
	check(psi.some.avg10 >= 0 && psi.some.avg60 >= 0 && psi.some.avg300 >= 0, "avgs >= 0");
	if (!psi.full.present)
		check(psi.full.total_us == 0 && psi.full.avg10 == 0, "absent full is zero");
}

static void fuzz_cpu(const char *buf)
{
	struct cgfs_cpu_stat st;
	uint64_t user = POISON, system = POISON;
	int r;

	memset(&st, 0x5a, sizeof(st));
	r = cgfs_parse_cpu_stat(buf, &st);
	check_rc(r, "cpu.stat rc");
	if (r < 0)
		check(st.usage_usec == POISON, "cpu.stat untouched on failure");
	else
		check(st.has_usage || st.has_throttling, "cpu.stat has something");

	r = cgfs_parse_cpuacct_stat(buf, 100, &user, &system);
	check_rc(r, "cpuacct.stat rc");
	if (r < 0)
		check(user == POISON && system == POISON, "cpuacct.stat untouched on failure");
	r = cgfs_parse_cpuacct_stat(buf, 3, &user, &system);
	check_rc(r, "cpuacct.stat rc at 3 Hz");
}

static void fuzz_percpu(const char *buf)
{
	uint64_t values[8], big[CGFS_MAX_NODES * 4];
	size_t n = 12345;
	int r;

	for (size_t i = 0; i < ELEMENTSOF(values); i++)
		values[i] = POISON;
	r = cgfs_parse_percpu(buf, values, ELEMENTSOF(values), &n);
	check_rc(r, "percpu rc");
	if (r < 0) {
		/* untouched, but for too many values: then how many there are */
		check(n == 12345 || (r == -ERANGE && n > ELEMENTSOF(values)), "percpu count on failure");
		for (size_t i = 0; i < ELEMENTSOF(values); i++)
			check(values[i] == POISON, "percpu values untouched on failure");
		if (r == -ERANGE) {
			/* Either an overflowing number or too many: room may fix the latter. */
			r = cgfs_parse_percpu(buf, big, ELEMENTSOF(big), &n);
			check_rc(r, "percpu rc (big)");
		}
		return;
	}
	check(n >= 1 && n <= ELEMENTSOF(values), "percpu count");
	for (size_t i = n; i < ELEMENTSOF(values); i++)
		check(values[i] == POISON, "percpu writes only n values");
}

static void fuzz_misc(const char *buf)
{
	size_t calls = 0;
	uint64_t v = POISON;
	bool populated = true, frozen = true;
	char state = '?';
	int r;

	r = cgfs_parse_numa_stat(buf, numa_fn, &calls);
	check_rc(r, "numa rc");
	if (r < 0)
		check(calls == 0, "no numa callback on a malformed file");

	uint64_t nodes[4] = { POISON, POISON, POISON, POISON };
	size_t nr = 99;
	r = cgfs_numa_v1_nodes(buf, nodes, ELEMENTSOF(nodes), &nr, NULL);
	check_rc(r, "numa v1 nodes rc");
	if (r < 0)
		check(nr == 99 && nodes[0] == POISON && nodes[3] == POISON, "numa v1 nodes untouched on failure");
	else
		check(nr >= 1 && nr <= ELEMENTSOF(nodes), "numa v1 node count");

	r = cgfs_meminfo_get(buf, "MemTotal", &v);
	check_rc(r, "meminfo rc");
	if (r < 0)
		check(v == POISON, "meminfo untouched on failure");

	r = cgfs_parse_events(buf, &populated, &frozen);
	check_rc(r, "events rc");
	if (r < 0)
		check(populated && frozen, "events untouched on failure");

	r = cgfs_parse_pids(buf, pid_fn, NULL);
	check_rc(r, "pids rc");

	r = cgfs_parse_proc_stat_state(buf, &state);
	check_rc(r, "proc stat rc");
	if (r < 0)
		check(state == '?', "state untouched on failure");
	else
		check(strchr("RSDTtXxZPIKW", state) && state, "state letter");
}

/* io.stat, blkio rwstat, memory.events, oom_control: outputs untouched on
 * failure, devices distinct, fields the file named marked present. */
static void fuzz_io(const char *buf)
{
	struct cgfs_io_device d[4], copy[4];
	struct cgfs_memory_events ev;
	uint64_t total = POISON, kills = POISON;
	bool under = true, has = true;
	size_t n = 12345;
	int r;

	memset(d, 0x5a, sizeof(d));
	memcpy(copy, d, sizeof(d));
	r = cgfs_parse_io_stat(buf, d, ELEMENTSOF(d), &n);
	check_rc(r, "io.stat rc");
	if (r < 0)
		check(n == 12345 && memcmp(d, copy, sizeof(d)) == 0, "io.stat untouched on failure");
	else {
		check(n <= ELEMENTSOF(d), "io.stat count");
		for (size_t i = 0; i < n; i++) {
			for (size_t j = 0; j < i; j++)
				check(d[i].major != d[j].major || d[i].minor != d[j].minor, "io.stat devices distinct");
		}
	}

	n = 0;
	memset(d, 0x5a, sizeof(d));
	memcpy(copy, d, sizeof(d));
	r = cgfs_parse_blkio_rwstat(buf, false, d, ELEMENTSOF(d), &n, &total);
	check_rc(r, "blkio rc");
	if (r < 0) {
		check(n == 0 && total == POISON && memcmp(d, copy, sizeof(d)) == 0, "blkio untouched on failure");
		return;
	}
	size_t first = n;
	/* the same text as operations merges into the same devices */
	r = cgfs_parse_blkio_rwstat(buf, true, d, ELEMENTSOF(d), &n, NULL);
	check(r == 0 && n == first, "blkio merge keeps the devices");
	for (size_t i = 0; i < n; i++) {
		check(d[i].v[CGFS_IO_RBYTES] == d[i].v[CGFS_IO_RIOS] || !(d[i].present & (1u << CGFS_IO_RBYTES)),
		      "blkio bytes and ios of one text agree");
	}

	memset(&ev, 0x5a, sizeof(ev));
	r = cgfs_parse_memory_events(buf, &ev);
	check_rc(r, "memory.events rc");
	if (r < 0)
		check(ev.v[0] == POISON, "memory.events untouched on failure");
	r = cgfs_parse_oom_control(buf, &under, &kills, &has);
	check_rc(r, "oom_control rc");
	if (r < 0)
		check(under && has && kills == POISON, "oom_control untouched on failure");
	else
		check(has || kills == 0, "oom_kill 0 when absent");
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *buf = malloc(size + 1);
	size_t len;

	if (!buf)
		return 0;
	memcpy(buf, data, size);
	buf[size] = '\0';
	len = strlen(buf);

	fuzz_u64(buf, len);
	fuzz_flat(buf);
	fuzz_pressure(buf);
	fuzz_cpu(buf);
	fuzz_percpu(buf);
	fuzz_misc(buf);
	fuzz_io(buf);

	free(buf);
	return 0;
}
