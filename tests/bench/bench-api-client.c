/* bench-api-client.c - load generator for acctd's varlink API.
 *
 * N client threads, each on its own connection, each with one call in flight
 * at a time (closed loop: send, wait for the whole reply, send the next), so
 * that latency is the round trip a client sees and throughput what N such
 * clients get. Calls are Get of cgroups taken round-robin from a file of paths
 * (one per line), or one List of everything (--list, repeated).
 *
 *   bench-api-client --socket PATH --paths FILE --clients N --seconds S
 *   bench-api-client --socket PATH --list --repeat R
 *
 * Prints one JSON object: calls, errors, seconds, calls_per_second, and the
 * latency percentiles in microseconds. No dependency beyond libc and
 * pthreads: the bench script may build it with plain cc. */
#include <errno.h>
#include <getopt.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

struct worker {
	pthread_t thread;
	int id;
	uint64_t *lat_ns; /* one per call */
	size_t nr, alloc;
	uint64_t errors;
	uint64_t bytes;
};

static const char *socket_path;
static char **paths;
static size_t nr_paths;
static double seconds = 5;
static volatile int stop;
static pthread_barrier_t start_barrier;

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static int connect_socket(void)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -1;
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", socket_path);
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		close(fd);
		return -1;
	}
	return fd;
}

static int send_all(int fd, const char *buf, size_t len)
{
	while (len > 0) {
		ssize_t n = send(fd, buf, len, MSG_NOSIGNAL);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -1;
		buf += n;
		len -= (size_t)n;
	}
	return 0;
}

/* Read one NUL-terminated message into *buf; returns its length or -1.
 * Keeps what follows it (there is nothing: one call in flight). */
static ssize_t recv_message(int fd, char **buf, size_t *alloc, uint64_t *bytes)
{
	size_t len = 0;
	for (;;) {
		if (*alloc - len < 65536) {
			*alloc = *alloc * 2 + 65536;
			*buf = realloc(*buf, *alloc);
			if (!*buf)
				return -1;
		}
		ssize_t n = recv(fd, *buf + len, *alloc - len, 0);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -1;
		*bytes += (uint64_t)n;
		len += (size_t)n;
		if ((*buf)[len - 1] == 0)
			return (ssize_t)len - 1;
	}
}

static void record(struct worker *w, uint64_t ns)
{
	if (w->nr == w->alloc) {
		w->alloc = w->alloc * 2 + 4096;
		w->lat_ns = realloc(w->lat_ns, w->alloc * sizeof(*w->lat_ns));
		if (!w->lat_ns)
			abort();
	}
	w->lat_ns[w->nr++] = ns;
}

static void *get_worker(void *arg)
{
	struct worker *w = arg;
	char req[8192];
	char *buf = NULL;
	size_t alloc = 0;
	int fd = connect_socket();
	size_t i = (size_t)w->id * 7919;

	pthread_barrier_wait(&start_barrier);
	if (fd < 0) {
		w->errors++;
		return NULL;
	}
	while (!stop) {
		const char *p = paths[i++ % nr_paths];
		int n = snprintf(req, sizeof(req), "{\"method\":\"io.acctd.Accounting.Get\",\"parameters\":{\"cgroup\":\"%s\"}}", p);
		if (n < 0 || (size_t)n >= sizeof(req))
			continue;
		uint64_t t0 = now_ns();
		if (send_all(fd, req, (size_t)n + 1) < 0)
			break;
		ssize_t k = recv_message(fd, &buf, &alloc, &w->bytes);
		if (k < 0)
			break;
		record(w, now_ns() - t0);
		if (k < 10 || strncmp(buf, "{\"parameters\"", 13) != 0)
			w->errors++;
	}
	close(fd);
	free(buf);
	return NULL;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

static double pct(const uint64_t *v, size_t n, double p)
{
	if (n == 0)
		return 0;
	size_t i = (size_t)(p / 100.0 * (double)(n - 1) + 0.5);
	return (double)v[i] / 1000.0;
}

static void report(const char *what, int clients, uint64_t *lat, size_t n, uint64_t errors, double secs, uint64_t bytes)
{
	qsort(lat, n, sizeof(*lat), cmp_u64);
	printf("{\"what\":\"%s\",\"clients\":%d,\"calls\":%zu,\"errors\":%llu,\"seconds\":%.3f,\"calls_per_second\":%.0f,"
	       "\"bytes\":%llu,\"p50_us\":%.1f,\"p90_us\":%.1f,\"p99_us\":%.1f,\"p999_us\":%.1f,\"max_us\":%.1f}\n",
	       what, clients, n, (unsigned long long)errors, secs, (double)n / secs, (unsigned long long)bytes,
	       pct(lat, n, 50), pct(lat, n, 90), pct(lat, n, 99), pct(lat, n, 99.9), n ? (double)lat[n - 1] / 1000.0 : 0);
}

static int run_list(int repeat)
{
	static const char req[] = "{\"method\":\"io.acctd.Accounting.List\",\"parameters\":{\"include_dead\":false}}";
	char *buf = NULL;
	size_t alloc = 0;
	uint64_t bytes = 0, errors = 0;
	uint64_t *lat = calloc((size_t)repeat, sizeof(*lat));
	int fd = connect_socket();

	if (fd < 0 || !lat) {
		perror("connect");
		return 1;
	}
	uint64_t start = now_ns();
	for (int i = 0; i < repeat; i++) {
		uint64_t t0 = now_ns();
		if (send_all(fd, req, sizeof(req)) < 0 || recv_message(fd, &buf, &alloc, &bytes) < 0) {
			perror("List");
			return 1;
		}
		lat[i] = now_ns() - t0;
		if (strncmp(buf, "{\"parameters\"", 13) != 0)
			errors++;
	}
	report("list", 1, lat, (size_t)repeat, errors, (double)(now_ns() - start) / 1e9, bytes);
	close(fd);
	free(buf);
	free(lat);
	return 0;
}

/* The path as a JSON string body: systemd names hold backslashes. */
static char *json_escape(const char *s)
{
	char *out = malloc(strlen(s) * 6 + 1), *o = out;
	if (!out)
		abort();
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;
		if (c == '"' || c == '\\') {
			*o++ = '\\';
			*o++ = (char)c;
		} else if (c < 0x20)
			o += sprintf(o, "\\u%04x", c);
		else
			*o++ = (char)c;
	}
	*o = 0;
	return out;
}

static int load_paths(const char *file)
{
	FILE *f = fopen(file, "re");
	char line[8192];
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		line[strcspn(line, "\n")] = 0;
		if (!line[0])
			continue;
		paths = realloc(paths, (nr_paths + 1) * sizeof(*paths));
		paths[nr_paths++] = json_escape(line);
	}
	fclose(f);
	return nr_paths ? 0 : -1;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "socket", required_argument, NULL, 's' }, { "paths", required_argument, NULL, 'p' },
		{ "clients", required_argument, NULL, 'c' }, { "seconds", required_argument, NULL, 't' },
		{ "list", no_argument, NULL, 'l' },          { "repeat", required_argument, NULL, 'r' },
		{ NULL, 0, NULL, 0 },
	};
	const char *paths_file = NULL;
	int clients = 1, repeat = 20, c;
	bool list = false;

	while ((c = getopt_long(argc, argv, "s:p:c:t:lr:", opts, NULL)) >= 0)
		switch (c) {
		case 's': socket_path = optarg; break;
		case 'p': paths_file = optarg; break;
		case 'c': clients = atoi(optarg); break;
		case 't': seconds = atof(optarg); break;
		case 'l': list = true; break;
		case 'r': repeat = atoi(optarg); break;
		default: return 2;
		}
	if (!socket_path || (!list && !paths_file) || clients < 1 || repeat < 1) {
		fprintf(stderr, "usage: %s --socket PATH (--paths FILE [--clients N] [--seconds S] | --list [--repeat R])\n",
			argv[0]);
		return 2;
	}
	if (list)
		return run_list(repeat);
	if (load_paths(paths_file) < 0) {
		fprintf(stderr, "no paths in %s\n", paths_file);
		return 1;
	}

	struct worker *w = calloc((size_t)clients, sizeof(*w));
	pthread_barrier_init(&start_barrier, NULL, (unsigned)clients + 1);
	for (int i = 0; i < clients; i++) {
		w[i].id = i;
		pthread_create(&w[i].thread, NULL, get_worker, &w[i]);
	}
	pthread_barrier_wait(&start_barrier);
	uint64_t start = now_ns();
	struct timespec ts = { .tv_sec = (time_t)seconds, .tv_nsec = (long)((seconds - (double)(time_t)seconds) * 1e9) };
	nanosleep(&ts, NULL);
	stop = 1;
	size_t total = 0;
	uint64_t errors = 0, bytes = 0;
	for (int i = 0; i < clients; i++) {
		pthread_join(w[i].thread, NULL);
		total += w[i].nr;
		errors += w[i].errors;
		bytes += w[i].bytes;
	}
	double secs = (double)(now_ns() - start) / 1e9;
	uint64_t *all = malloc((total + 1) * sizeof(*all));
	size_t k = 0;
	for (int i = 0; i < clients; i++) {
		memcpy(all + k, w[i].lat_ns, w[i].nr * sizeof(*all));
		k += w[i].nr;
		free(w[i].lat_ns);
	}
	report("get", clients, all, total, errors, secs, bytes);
	free(all);
	free(w);
	return 0;
}
