/* bench-history.c - the history store's costs (issue 14, "Benchmark"):
 *
 *   bench-history [--cgroups N] [--active F] [--hours H] [--dir DIR]
 *                 [--series-days D] [--series-cgroups N] [--keep]
 *
 * 1. Recording: N cgroups (default 1,000; run again with 10,000), a fraction
 *    F of them (default 0.1, a fixed set) changing CPU and memory at every
 *    recording, recorded every 10 s of simulated time for H hours (default
 *    24) at the default retention (raw 3 h, minutes 7 days, hours 365 days),
 *    history_store_maintain() after every recording as acctd's recorder
 *    does, then one hour more for the queries. Reported: the CPU time
 *    (CLOCK_PROCESS_CPUTIME_ID) of one recording and of one upkeep, mean and
 *    99th percentile, and the file's size (database + WAL) after the H
 *    hours: the disk of a day.
 * 2. Query: usage of every cgroup over 24 h (whatever of it was simulated)
 *    in that store, wall time, median of 5: a window on whole hours (hour
 *    rollups but for the ends' counter values) and one ending 20 min 34 s
 *    into an hour (its ends' partial hours from minute rollups).
 * 3. Series: a second store of --series-cgroups (default 100, 10% active)
 *    recorded for --series-days (default 7) at the same interval, then the
 *    series of one active cgroup over the 7 days in 120 steps, median of 5.
 *
 * Time is simulated, so a day takes the CPU it costs and nothing more. The
 * store lives in DIR (default a new directory under /var/tmp: a disk, as
 * /var/lib/acctd is), removed at the end unless --keep. With --dir and
 * --keep, a second run over the same DIR skips the recording of a store
 * that exists and measures only the queries. */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "history-store.h"
#include "util.h"

#define SEC UINT64_C(1000000)
#define T0 (UINT64_C(1764576000) * SEC)
#define IV (10 * SEC)
#define BOOT "0123456789abcdef0123456789abcdef"

/* acctd.conf's defaults (lib/config/config.c) */
static const struct history_limits default_limits = {
	.retention_us = { 3 * 3600 * SEC, 7 * 86400 * SEC, 365 * 86400 * SEC },
	.max_bytes = UINT64_C(1) << 30,
};

static double cpu_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static double wall_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static double percentile(double *v, size_t n, double p)
{
	qsort(v, n, sizeof(*v), cmp_double);
	return v[(size_t)((double)(n - 1) * p)];
}

static double mean(const double *v, size_t n)
{
	double s = 0;
	for (size_t i = 0; i < n; i++)
		s += v[i];
	return s / (double)n;
}

struct sim {
	struct history_store *s;
	struct history_sample *smp;
	char (*paths)[96];
	size_t n, active;
	uint64_t recordings;
	double *rec_cpu, *maint_cpu, *stats_cpu, *size_cpu;
};

static void die(const char *what, int r, char *err)
{
	fprintf(stderr, "%s: %s (%s)\n", what, strerror(-r), err ? err : "");
	exit(1);
}

static void sim_init(struct sim *m, const char *db, size_t n, double active, uint64_t recordings)
{
	*m = (struct sim){ .n = n, .active = (size_t)((double)n * active), .recordings = recordings };
	struct history_open_info info;
	char *err = NULL;
	int r = history_store_open(db, BOOT, T0, IV, &default_limits, &m->s, &info, &err);
	if (r < 0)
		die("open", r, err);
	free(info.set_aside);
	m->smp = calloc(n, sizeof(*m->smp));
	m->paths = calloc(n, sizeof(*m->paths));
	m->rec_cpu = calloc(recordings, sizeof(double));
	m->maint_cpu = calloc(recordings, sizeof(double));
	m->stats_cpu = calloc(recordings, sizeof(double));
	m->size_cpu = calloc(recordings, sizeof(double));
	if (!m->smp || !m->paths || !m->rec_cpu || !m->maint_cpu || !m->stats_cpu || !m->size_cpu)
		exit(1);
	for (size_t i = 0; i < n; i++) {
		/* Shaped like a host's tree: slices with services below. */
		snprintf(m->paths[i], sizeof(m->paths[i]), "/system.slice/unit-%zu.service/sub-%zu", i / 10, i);
		m->smp[i] = (struct history_sample){
			.key = { .path = m->paths[i], .inode = 1000 + i },
			.v = { .cpu_usec = (int64_t)i * 1000, .memory_bytes = 16 << 20, .memory_peak_bytes = 32 << 20,
			       .io_read_bytes = 0, .io_write_bytes = 0, .tasks = 4 },
		};
	}
}

/* Recordings [from, to) of m->recordings. */
static void sim_run(struct sim *m, uint64_t from, uint64_t to)
{
	for (uint64_t k = from; k < to; k++) {
		uint64_t now = T0 + k * IV;
		/* The active ones (every 10th: spread over the tree) change. */
		for (size_t i = 0; i < m->active; i++) {
			struct history_values *v = &m->smp[i * (m->n / m->active)].v;
			v->cpu_usec += 1000 + (int64_t)(k % 7) * 100;
			v->memory_bytes = (16 << 20) + (int64_t)((k * 7 + i) % 64) * 4096;
			v->io_write_bytes += 4096;
		}
		char *err = NULL;
		double c0 = cpu_now();
		int r = history_store_record(m->s, now, m->smp, m->n, &err);
		if (r < 0)
			die("record", r, err);
		double c1 = cpu_now();
		r = history_store_maintain(m->s, now, &err);
		if (r < 0)
			die("maintain", r, err);
		double c2 = cpu_now();
		/* After each recording acctd's recorder takes the file's size
		 * (for Status); the counts of history_store_stats() beside it,
		 * for what taking them would cost instead. */
		(void)history_store_file_bytes(m->s);
		double c3 = cpu_now();
		struct history_stats st;
		(void)history_store_stats(m->s, &st);
		m->rec_cpu[k] = c1 - c0;
		m->maint_cpu[k] = c2 - c1;
		m->size_cpu[k] = c3 - c2;
		m->stats_cpu[k] = cpu_now() - c3;
	}
}

int main(int argc, char **argv)
{
	size_t n = 1000, series_n = 100;
	double active = 0.1, hours = 24, series_days = 7;
	const char *dir = NULL;
	bool keep = false;
	static const struct option opts[] = {
		{ "cgroups", required_argument, NULL, 'n' },	 { "active", required_argument, NULL, 'a' },
		{ "hours", required_argument, NULL, 'H' },	 { "dir", required_argument, NULL, 'd' },
		{ "series-days", required_argument, NULL, 'D' }, { "series-cgroups", required_argument, NULL, 'S' },
		{ "keep", no_argument, NULL, 'k' },		 {},
	};
	for (int c; (c = getopt_long(argc, argv, "", opts, NULL)) != -1;)
		switch (c) {
		case 'n': n = strtoul(optarg, NULL, 10); break;
		case 'a': active = strtod(optarg, NULL); break;
		case 'H': hours = strtod(optarg, NULL); break;
		case 'd': dir = optarg; break;
		case 'D': series_days = strtod(optarg, NULL); break;
		case 'S': series_n = strtoul(optarg, NULL, 10); break;
		case 'k': keep = true; break;
		default: return 2;
		}
	char tmpl[] = "/var/tmp/bench-history-XXXXXX";
	if (!dir && !(dir = mkdtemp(tmpl))) {
		perror("mkdtemp");
		return 1;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	char db[4096], db2[4096];
	snprintf(db, sizeof(db), "%s/history.db", dir);
	snprintf(db2, sizeof(db2), "%s/series.db", dir);

	/* 1. recording */
	struct sim m;
	/* The day, then one hour more: the queries' windows of 24 h then end
	 * anywhere in the last hour and begin after the first recording (a
	 * window reaching before it would make every idle life busy). */
	uint64_t day = (uint64_t)(hours * 360), recordings = day + 360;
	bool reuse = access(db, F_OK) == 0, reuse2 = access(db2, F_OK) == 0;
	if (reuse)
		goto query;
	sim_init(&m, db, n, active, recordings);
	double w0 = wall_now();
	sim_run(&m, 0, day);
	double wall = wall_now() - w0;
	struct history_stats st;
	history_store_stats(m.s, &st);
	sim_run(&m, day, recordings);
	printf("cgroups %zu (%zu active), %" PRIu64 " recordings (%.1f h at 10 s) in %.1f s wall\n", n, m.active,
	       day, hours, wall);
	printf("  record:   mean %.3f ms CPU, p99 %.3f ms, max %.3f ms\n", mean(m.rec_cpu, recordings) * 1e3,
	       percentile(m.rec_cpu, recordings, 0.99) * 1e3, percentile(m.rec_cpu, recordings, 1.0) * 1e3);
	printf("  maintain: mean %.3f ms CPU, p99 %.3f ms, max %.3f ms\n", mean(m.maint_cpu, recordings) * 1e3,
	       percentile(m.maint_cpu, recordings, 0.99) * 1e3, percentile(m.maint_cpu, recordings, 1.0) * 1e3);
	printf("  size:     mean %.3f ms CPU, p99 %.3f ms (history_store_file_bytes, as the recorder takes it)\n",
	       mean(m.size_cpu, recordings) * 1e3, percentile(m.size_cpu, recordings, 0.99) * 1e3);
	printf("  stats:    mean %.3f ms CPU, p99 %.3f ms (history_store_stats: counts rows)\n",
	       mean(m.stats_cpu, recordings) * 1e3, percentile(m.stats_cpu, recordings, 0.99) * 1e3);
	printf("  per 10 s interval: %.3f%% of one CPU (record + maintain + size)\n",
	       (mean(m.rec_cpu, recordings) + mean(m.maint_cpu, recordings) + mean(m.size_cpu, recordings)) / 10.0 *
		       100);
	printf("  file after %.1f h: %.1f MB (points raw %" PRIu64 ", minute %" PRIu64 ", hour %" PRIu64 ", lives %" PRIu64
	       ")\n",
	       hours, (double)st.file_bytes / 1e6, st.points[0], st.points[1], st.points[2], st.lives);
	history_store_close(m.s, T0 + recordings * IV);

query:;
	/* 2. usage of everything over 24 h, from a reader as the API does */
	struct history_store *r = NULL;
	char *err = NULL;
	int rr = history_store_open_readonly(db, &r, &err);
	if (rr < 0)
		die("open read-only", rr, err);
	uint64_t end = T0 + recordings * IV;
	double lat[5];
	int count = 0;
	/* A window on whole hours, and one as "--since -24h" gives at 20 min
	 * 34 s past an hour (its ends' partial hours read from minutes). */
	static const struct {
		const char *name;
		uint64_t before_end;
	} windows[] = { { "on whole hours", 0 }, { "ending 20min 34s into an hour", 3600 - 1234 } };
	for (size_t w = 0; w < ELEMENTSOF(windows); w++) {
		uint64_t until = end - windows[w].before_end * SEC;
		for (int i = 0; i < 5; i++) {
			struct history_usage_query q = { .since_us = until - 24 * 3600 * SEC, .until_us = until,
							 .prefix = "/", .depth = -1, .include_removed = true };
			struct history_usage *u = NULL;
			double t = wall_now();
			count = history_store_usage(r, &q, &u, &err);
			lat[i] = wall_now() - t;
			if (count < 0)
				die("usage", count, err);
			history_usage_array_free(u, (size_t)count);
		}
		printf("  usage of %d cgroups over 24 h %s: median %.1f ms, min %.1f ms\n", count, windows[w].name,
		       percentile(lat, 5, 0.5) * 1e3, percentile(lat, 5, 0) * 1e3);
	}
	history_store_close(r, 0);

	/* 3. series of one cgroup over days */
	struct sim m2;
	uint64_t rec2 = (uint64_t)(series_days * 86400 / 10);
	if (reuse2)
		goto series;
	sim_init(&m2, db2, series_n, 0.1, rec2);
	w0 = wall_now();
	sim_run(&m2, 0, rec2);
	history_store_stats(m2.s, &st);
	printf("series store: %zu cgroups, %.1f days in %.1f s wall, file %.1f MB, record mean %.3f ms, maintain mean "
	       "%.3f ms\n",
	       series_n, series_days, wall_now() - w0, (double)st.file_bytes / 1e6, mean(m2.rec_cpu, rec2) * 1e3,
	       mean(m2.maint_cpu, rec2) * 1e3);
	history_store_close(m2.s, T0 + rec2 * IV);
series:
	rr = history_store_open_readonly(db2, &r, &err);
	if (rr < 0)
		die("open read-only", rr, err);
	end = T0 + rec2 * IV;
	int steps = 0;
	char first_path[96];
	snprintf(first_path, sizeof(first_path), "/system.slice/unit-%zu.service/sub-%zu", (size_t)0, (size_t)0);
	for (int i = 0; i < 5; i++) {
		struct history_step *s = NULL;
		double t = wall_now();
		steps = history_store_series(r, first_path, T0, end, (end - T0) / 120, &s, &err);
		lat[i] = wall_now() - t;
		if (steps < 0)
			die("series", steps, err);
		free(s);
	}
	printf("  series of one cgroup over %.1f days (%d steps): median %.2f ms, min %.2f ms\n", series_days, steps,
	       percentile(lat, 5, 0.5) * 1e3, percentile(lat, 5, 0) * 1e3);
	history_store_close(r, 0);

	if (keep)
		return 0;
	/* The files and what SQLite keeps beside them (a read-only connection
	 * that closes last leaves the WAL and its index). */
	const char *const dbs[] = { db, db2 }, *const suffixes[] = { "", "-wal", "-shm" };
	for (size_t i = 0; i < 2; i++)
		for (size_t j = 0; j < 3; j++) {
			char p[4200];
			snprintf(p, sizeof(p), "%s%s", dbs[i], suffixes[j]);
			unlink(p);
		}
	if (dir == tmpl)
		rmdir(dir);
	return 0;
}
