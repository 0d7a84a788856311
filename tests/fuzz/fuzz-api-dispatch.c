/* fuzz-api-dispatch.c - libFuzzer target: a whole connection's byte stream
 * through the varlink API's dispatcher (daemon/acctd/api-dispatch.h), against
 * a real manager and ledger built in-process on a small fake cgroup v2 tree.
 *
 * Once per process: a cgroup tree in a private temporary directory (v2: a
 * root with cgroup.controllers, slices and services, a name with a byte that
 * is not UTF-8 and one holding a literal "\x41"), a configuration that points
 * acctd at it (no metrics listener, no BPF, intervals of an hour so that no
 * timer fires between inputs), then manager_new() and manager_start() as
 * acctd's main() does, and the event loop run until the first pass is done:
 * the ledger holds the tree. The API's listening socket is bound in the
 * temporary directory but never used.
 *
 * Per input: byte 0 says who the client is (bit 0: root, else nobody) and how
 * the bytes arrive (bit 1: in small chunks); the rest is what the client
 * sends. A struct conn (api-server.h) without a socket takes the bytes
 * through its varlink_reader, and the messages are taken as api-server.c's
 * conn_process() takes them: each complete one dispatched, until a call goes
 * on asynchronously (Watch, Reconcile: later calls would wait) or the
 * connection would close (a malformed or oversize message gets one
 * InvalidParameter, an internal failure none). The reader has the server's
 * shape limits (api_conn_reader_limits(): no array or object longer than
 * twice max_watch_cgroups, 64 here so that small inputs pass it; no message that
 * would cost json-c more than 16 x its bytes + 1 MiB, which a few KB of
 * [{},{},...] pass): a message refused for its shape gets the server's
 * answer (api_conn_refuse_shape()) and the connection goes on. A Watch's
 * first update is sent as the server would. Beyond "no crash" the target
 * checks:
 *   - every message queued for the client is a valid varlink reply (one JSON
 *     object, valid UTF-8, as varlink_reply_parse() checks);
 *   - a call that is not oneway gets exactly one last reply (continues
 *     false), unless it goes on asynchronously; a oneway call gets none;
 *   - nobody is refused every administrative call (PermissionDenied): Reconcile,
 *     Reload, and Tune with a change (a Tune without one reads, open to all);
 *   - a call refused for its shape gets exactly one error, ResourceLimitExceeded
 *     or InvalidParameter; a call taken was estimated within the bound
 *     (varlink_reader_cost() <= PARSE_COST_RATIO x its bytes + PARSE_COST_SLACK).
 * At the end the event loop runs once without blocking, so that a pass a
 * Reconcile started finishes (its connection is gone by then, as after a
 * close).
 *
 * Built by meson with -Dfuzz=true (clang); make check-fuzz and make fuzz run
 * it (tests/fuzz/run-fuzz.sh), from a copy of tests/fuzz/corpus/api-dispatch. */
#include <errno.h>
#include <ftw.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "api.h"
#include "api-dispatch.h"
#include "api-methods.h"
#include "api-server.h"
#include "api-watch.h"
#include "log.h"
#include "manager.h"
#include "util.h"
#include "varlink.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv);

static void check(bool ok, const char *what)
{
	if (!ok) {
		fprintf(stderr, "invariant broken: %s\n", what);
		abort();
	}
}

static char dir[128];
static struct manager *manager;
static struct api_server *api; /* the manager's front end */

static int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	return remove(path);
}

/* Leave nothing behind (the regression runner's exit; see LLVMFuzzerInitialize()). */
static void cleanup(void)
{
	manager = manager_free(manager);
	(void)nftw(dir, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
}

static void write_at(const char *rel, const char *text)
{
	char path[512];
	snprintf(path, sizeof(path), "%s/%s", dir, rel);
	FILE *f = fopen(path, "w");
	check(f && fputs(text, f) >= 0 && fclose(f) == 0, "write a fixture");
}

/* One cgroup v2 directory with the files acctd reads, values as the kernel
 * writes them (tests/data/kernel/v2-6.x). */
static void make_cgroup(const char *rel, unsigned seed)
{
	static const char *const files[][2] = {
		{ "cgroup.procs", "" },
		{ "cgroup.events", "populated 1\nfrozen 0\n" },
		{ "memory.max", "max\n" },
		{ "memory.high", "max\n" },
		{ "memory.peak", "8544256\n" },
		{ "memory.swap.current", "0\n" },
		{ "memory.stat", "anon 1458176\nfile 4096\nkernel 1323008\nkernel_stack 49152\npagetables 77824\n"
				 "sock 0\nshmem 0\nfile_mapped 0\nslab 1081344\npgfault 3591\npgmajfault 0\n" },
		{ "memory.events", "low 0\nhigh 0\nmax 0\noom 0\noom_kill 0\noom_group_kill 0\n" },
		{ "cpu.pressure", "some avg10=0.00 avg60=0.00 avg300=0.00 total=1192\n"
				  "full avg10=0.00 avg60=0.00 avg300=0.00 total=1186\n" },
		{ "memory.pressure", "some avg10=0.00 avg60=0.00 avg300=0.00 total=0\n"
				     "full avg10=0.00 avg60=0.00 avg300=0.00 total=0\n" },
		{ "io.pressure", "some avg10=0.00 avg60=0.00 avg300=0.00 total=0\n"
				 "full avg10=0.00 avg60=0.00 avg300=0.00 total=0\n" },
		{ "io.stat", "8:0 rbytes=1459200 wbytes=314773504 rios=192 wios=353 dbytes=0 dios=0\n" },
		{ "pids.current", "3\n" },
	};
	char path[512], text[256];
	snprintf(path, sizeof(path), "%s/%s", dir, rel);
	check(mkdir(path, 0755) == 0 || errno == EEXIST, "mkdir a cgroup");
	for (size_t i = 0; i < ELEMENTSOF(files); i++) {
		snprintf(path, sizeof(path), "%s/%s", rel, files[i][0]);
		write_at(path, files[i][1]);
	}
	snprintf(path, sizeof(path), "%s/memory.current", rel);
	snprintf(text, sizeof(text), "%u\n", 4096 * (100 + seed));
	write_at(path, text);
	snprintf(path, sizeof(path), "%s/cpu.stat", rel);
	snprintf(text, sizeof(text),
		 "usage_usec %u\nuser_usec %u\nsystem_usec %u\nnr_periods 0\nnr_throttled 0\nthrottled_usec 0\n",
		 1000 * seed + 30, 1000 * seed + 10, 20);
	write_at(path, text);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	static const char *const cgroups[] = {
		"system.slice", "system.slice/sshd.service", "system.slice/cron.service", "user.slice",
		"user.slice/user-1000.slice", "user.slice/user-1000.slice/app-\xff\xfe.scope", "machine.slice",
		"machine.slice/machine-a\\x41.scope",
	};
	/* The manager keeps the configuration's path (a Reload reads it
	 * again): static, not on this frame's stack. */
	static char path[512];
	char text[1024];

	/* In $TMPDIR: run-fuzz.sh points it at a directory it removes, as
	 * libFuzzer ends without running atexit(). */
	const char *tmp = getenv("TMPDIR");
	int n = snprintf(dir, sizeof(dir), "%s/acctd-fuzz-dispatch.XXXXXX", tmp && *tmp ? tmp : "/tmp");
	check(n > 0 && (size_t)n < sizeof(dir), "TMPDIR is not too long");
	check(mkdtemp(dir) != NULL, "mkdtemp");
	atexit(cleanup);
	snprintf(path, sizeof(path), "%s/cg", dir);
	check(mkdir(path, 0755) == 0, "mkdir the root");
	write_at("cg/cgroup.controllers", "cpuset cpu io memory pids\n");
	make_cgroup("cg", 0);
	for (size_t i = 0; i < ELEMENTSOF(cgroups); i++) {
		snprintf(path, sizeof(path), "cg/%s", cgroups[i]);
		make_cgroup(path, (unsigned)i + 1);
	}
	snprintf(text, sizeof(text),
		 "[sampling]\nfast_interval = 1h\nslow_interval = 1h\nrescan_interval = 1h\nworkers = 1\n"
		 "load_average = no\ncollector = files\nbpf_interval = 0\n"
		 "[cgroups]\nroot = %s/cg\n[api]\nsocket = %s/io.acctd\nmax_watch_cgroups = 64\n"
		 "[metrics]\nlisten = none\n[log]\nlevel = err\n",
		 dir, dir);
	write_at("acctd.conf", text);
	snprintf(path, sizeof(path), "%s/acctd.conf", dir);

	struct manager_config_source src = { .main_file = path, .dropin_dir = "" };
	check(manager_new(&src, &manager) == 0, "manager_new");
	check(api_server_add(manager, &api) == 0, "api_server_add");
	check(manager_start(manager) == 0, "manager_start");
	struct manager_stats st;
	for (int i = 0; i < 10000; i++) {
		manager_get_stats(manager, &st);
		if (st.ready)
			break;
		event_base_loop(manager_event_base(manager), EVLOOP_ONCE);
	}
	manager_get_stats(manager, &st);
	check(st.ready, "the first pass is done");
	uint64_t live = 0;
	acct_ledger_counts(manager_ledger(manager), &live, NULL);
	check(live == ELEMENTSOF(cgroups) + 1, "the ledger holds the tree");
	log_set_max_level(LOG_CRIT); /* thousands of refused calls are expected */
	return 0;
}

/* What one call got: the replies queued for it. */
struct answer {
	unsigned replies, last; /* messages; of them without "continues" */
	char error[128];        /* the last error's name, or "" */
};

/* Check and drain what is queued for the client. */
static void take_output(struct conn *c, struct answer *a)
{
	*a = (struct answer){ 0 };
	size_t len = evbuffer_get_length(c->out);
	if (len == 0)
		return;
	char *buf = malloc(len);
	check(buf != NULL, "malloc");
	check(evbuffer_remove(c->out, buf, len) == (int)len, "evbuffer_remove");
	check(buf[len - 1] == '\0', "every message ends with its NUL");
	for (size_t start = 0; start < len;) {
		size_t n = strlen(buf + start);
		struct json_object *msg = NULL;
		struct varlink_reply rep = { 0 };
		int r = varlink_message_parse(buf + start, n, 0, &msg);
		if (r < 0)
			fprintf(stderr, "bad reply: %.*s\n", (int)MIN(n, (size_t)2000), buf + start);
		check(r == 0, "a reply is one JSON object of valid UTF-8");
		check(varlink_reply_parse(msg, &rep) == 0, "a reply is a valid varlink reply");
		a->replies++;
		if (!rep.continues)
			a->last++;
		snprintf(a->error, sizeof(a->error), "%s", rep.error ? rep.error : "");
		varlink_reply_clear(&rep);
		json_object_put(msg);
		start += n + 1;
	}
	free(buf);
}

/* Reconcile and Reload, and a Tune that changes something: one of its
 * parameters (or their deprecated names) present and not null. A Tune
 * without them only reads, which anyone may. */
static bool is_admin_call(struct json_object *msg)
{
	static const char *const changes[] = { "bytes_budget", "cpu_budget_us", "tasks_budget", "auto_tune",
					       "bytesBudget",  "cpuBudgetUs",   "tasksBudget",  "autoTune" };
	struct json_object *v, *params, *p;
	if (!json_object_object_get_ex(msg, "method", &v) || !json_object_is_type(v, json_type_string))
		return false;
	const char *m = json_object_get_string(v);
	if (strcmp(m, IFACE_ACCT ".Reconcile") == 0 || strcmp(m, IFACE_ACCT ".Reload") == 0)
		return true;
	if (strcmp(m, IFACE_ACCT ".Tune") != 0 || !json_object_object_get_ex(msg, "parameters", &params))
		return false;
	for (size_t i = 0; i < sizeof(changes) / sizeof(changes[0]); i++)
		if (json_object_object_get_ex(params, changes[i], &p) && p)
			return true;
	return false;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (!manager)
		LLVMFuzzerInitialize(NULL, NULL);
	if (size < 1 || size > 64 * 1024)
		return 0;
	bool root = data[0] & 1, chunked = data[0] & 2;
	const struct acct_config *cfg = manager_config(manager);
	struct conn *c = calloc(1, sizeof(*c));
	check(c != NULL, "calloc");
	*c = (struct conn){ .s = api, .fd = -1 };
	c->cred.pid = getpid();
	c->cred.uid = root ? 0 : 65534;
	c->cred.gid = root ? 0 : 65534;
	check(varlink_reader_new(cfg->max_message_size, 0, &c->in) == 0, "reader");
	api_conn_reader_limits(c);
	c->out = evbuffer_new();
	check(c->out != NULL, "evbuffer");

	const uint8_t *p = data + 1;
	size_t left = size - 1;
	bool done = false;
	while (!done) {
		/* Bytes in: all at once, or in chunks of 1 to 16. */
		size_t chunk = chunked ? MIN(left, (size_t)1 + (left * 7) % 16) : left;
		if (chunk > 0 && varlink_reader_feed(c->in, p, chunk) < 0)
			left = 0; /* refused: what is complete is still taken */
		else {
			p += chunk;
			left -= chunk;
		}
		/* Calls out, as conn_process() takes them. */
		for (;;) {
			struct json_object *msg = NULL;
			struct answer a;
			uint64_t cost = varlink_reader_cost(c->in);
			size_t pending = varlink_reader_pending(c->in);
			int r = varlink_reader_next(c->in, &msg);
			if (r == -E2BIG || r == -EFBIG) {
				check(api_conn_refuse_shape(c, r) == 0, "the refusal is queued");
				take_output(c, &a);
				check(a.replies == 1 && a.last == 1 &&
					      strcmp(a.error, r == -E2BIG ? IFACE_ACCT ".ResourceLimitExceeded"
									  : VARLINK_ERROR_INVALID_PARAMETER) == 0,
				      "one error for a call refused for its shape");
				continue;
			}
			if (r == 1)
				check(cost <= (uint64_t)PARSE_COST_RATIO * (pending - varlink_reader_pending(c->in)) +
						      PARSE_COST_SLACK,
				      "a call taken is within the cost bound");
			if (r == 0) {
				done = left == 0;
				break;
			}
			if (r == -EMSGSIZE || r == -EBADMSG) {
				struct request rq = { .c = c, .method = M_UNKNOWN };
				check(api_invalid_parameter(&rq, "message") == 0, "the protocol error is queued");
				take_output(c, &a);
				check(a.replies == 1 && a.last == 1 &&
					      strcmp(a.error, VARLINK_ERROR_INVALID_PARAMETER) == 0,
				      "one InvalidParameter for a protocol error");
				done = true;
				break;
			}
			check(r == 1, "next rc");
			struct varlink_call call = { 0 };
			bool valid = varlink_call_parse(msg, &call, NULL) == 0;
			bool oneway = valid && (call.flags & VARLINK_CALL_ONEWAY);
			varlink_call_clear(&call);
			bool admin = valid && is_admin_call(msg);

			r = api_dispatch(c, msg);
			json_object_put(msg);
			check(r == 0 || r == -ENOMEM, "dispatch rc");
			if (c->busy && c->watch && api_watch_due(c))
				check(api_watch_update(c) >= 0, "the first Watch update");
			take_output(c, &a);
			if (r < 0) {
				done = true;
				break;
			}
			if (c->busy) {
				/* Watch and Reconcile go on; nothing ended yet. */
				check(a.last == 0, "an asynchronous call has not ended");
				done = true;
				break;
			}
			if (oneway)
				check(a.replies == 0 || !valid, "a oneway call gets no reply");
			else
				check(a.last == 1 && a.replies >= 1, "a call gets one last reply");
			if (admin && !root && !oneway)
				check(strcmp(a.error, VARLINK_ERROR_PERMISSION_DENIED) == 0 ||
					      strcmp(a.error, VARLINK_ERROR_INVALID_PARAMETER) == 0 ||
					      strcmp(a.error, VARLINK_ERROR_EXPECTED_MORE) == 0,
				      "nobody is refused the administrative methods");
		}
	}

	/* The connection closes (api-server.c: conn_free()). */
	if (c->wait)
		c->wait->c = NULL;
	c->watch = api_watch_free(c->watch);
	evbuffer_free(c->out);
	varlink_reader_free(c->in);
	free(c);
	event_base_loop(manager_event_base(manager), EVLOOP_NONBLOCK);
	return 0;
}
