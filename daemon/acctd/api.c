/* api.c - the varlink API of acctd: io.acctd.Accounting and org.varlink.service
 * on a Unix socket, served on the manager's event loop (docs/api.md).
 *
 * Layers, top to bottom: the listening socket (socket activation or a bound
 * path) and accept(), which enforces the connection limits; one struct conn
 * per client, with a bounded input buffer (struct varlink_reader) and a
 * bounded output queue (an evbuffer); the dispatcher, which resolves a call
 * against the method table, checks access and parameters, and counts the
 * outcome; and one function per method.
 *
 * Order. Calls on one connection are answered in order. Most methods answer at
 * once; Reconcile (waits for a pass) and Watch (streams until the connection
 * closes) keep the connection busy, and the calls pipelined behind them wait
 * in the input buffer, unread beyond READ_AHEAD bytes, until they end.
 *
 * Bounds. Input: at most max_message_size bytes per message, READ_CHUNK bytes
 * read per wake-up, nothing read while the connection is busy beyond
 * READ_AHEAD. Output: calls are taken only while the queue is below
 * max_output_queue, so the queue holds at most that plus the replies of one
 * call (List and Watch split theirs into messages of a bounded size); a Watch
 * produces an update only when its queue is empty (changes coalesce into the
 * next one); a connection whose queue makes no progress for idle_timeout is
 * closed, as is one that sends nothing and waits for nothing that long.
 *
 * Confinement. Cgroup paths from clients are normalised and checked
 * (cgroup_path_normalize()) and then only ever looked up in the ledger, never
 * on the file system: no path from a client is opened, stat()ed or resolved,
 * so neither ".." nor a symlink in the tree can reach anything the sampler
 * did not itself discover under the cgroup root.
 *
 * The file is long because the four layers above are still one file; their
 * split into one file each is open work of issue 10 (docs/design.md). */
#include "api.h"
#include "admin-group.h"

#include <errno.h>
#include <event2/buffer.h>
#include <event2/event.h>
#include <fcntl.h>
#include <grp.h>
#include <inttypes.h>
#include <limits.h>
#include <pwd.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <systemd/sd-daemon.h>
#include <unistd.h>

#include "build-config.h"
#include "ledger-json.h"
#include "log.h"
#include "util.h"
#include "varlink.h"

#ifndef SO_PEERGROUPS
#define SO_PEERGROUPS 59
#endif

#define READ_CHUNK (64u * 1024)      /* bytes read per read() */
#define READS_PER_WAKEUP 4           /* fairness between connections */
#define READ_AHEAD (64u * 1024)      /* input buffered behind a call in progress */
#define ACCEPT_BURST 64
#define CALLS_PER_TURN 64            /* pipelined calls taken before others get a turn */
#define JSON_MAX_DEPTH 32            /* the interface nests 6 deep */
#define LIST_CHUNK 500               /* summaries per List reply with "more" */
#define WATCH_CHUNK 64               /* full records per Watch reply */
#define WATCH_MIN_INTERVAL_MS 10
#define WATCH_MAX_INTERVAL_MS (24 * 3600 * 1000)
#define WATCH_DEFAULT_INTERVAL_MS 1000
#define CGROUP_PATH_MAX 4096
#define CGROUP_NAME_MAX 255

#define IFACE_ACCT "io.acctd.Accounting"
#define URL "https://github.com/acctd/acctd"

/* Generated from io.acctd.Accounting.varlink (daemon/meson.build). */
extern const char acctd_interface_description[];
extern const size_t acctd_interface_description_size;

/* The standard interface, as every varlink service describes it. */
static const char service_description[] =
	"# The Varlink Service Interface is provided by every varlink service. It\n"
	"# describes the service and the interfaces it implements.\n"
	"interface org.varlink.service\n"
	"\n"
	"# Get a list of all the interfaces a service provides and information\n"
	"# about the implementation.\n"
	"method GetInfo() -> (\n"
	"  vendor: string,\n"
	"  product: string,\n"
	"  version: string,\n"
	"  url: string,\n"
	"  interfaces: []string\n"
	")\n"
	"\n"
	"# Get the description of an interface that is implemented by this service.\n"
	"method GetInterfaceDescription(interface: string) -> (description: string)\n"
	"\n"
	"# The requested interface was not found.\n"
	"error InterfaceNotFound (interface: string)\n"
	"\n"
	"# The requested method was not found\n"
	"error MethodNotFound (method: string)\n"
	"\n"
	"# The interface defines the requested method, but the service does not\n"
	"# implement it.\n"
	"error MethodNotImplemented (method: string)\n"
	"\n"
	"# One of the passed parameters is invalid.\n"
	"error InvalidParameter (parameter: string)\n"
	"\n"
	"# Client is denied access\n"
	"error PermissionDenied ()\n"
	"\n"
	"# Method is expected to be called with 'more' set to true, but wasn't\n"
	"error ExpectedMore ()\n";

/* ---- outcomes, for /metrics ------------------------------------------------ */

enum result {
	RES_OK,
	RES_INTERFACE_NOT_FOUND,
	RES_METHOD_NOT_FOUND,
	RES_INVALID_PARAMETER,
	RES_PERMISSION_DENIED,
	RES_EXPECTED_MORE,
	RES_NO_SUCH_CGROUP,
	RES_INVALID_CGROUP_PATH,
	RES_NO_SUCH_QUANTITY,
	RES_RELOAD_FAILED,
	_RES_MAX,
};

static const char *const result_names[_RES_MAX] = {
	[RES_OK] = "ok",
	[RES_INTERFACE_NOT_FOUND] = VARLINK_ERROR_INTERFACE_NOT_FOUND,
	[RES_METHOD_NOT_FOUND] = VARLINK_ERROR_METHOD_NOT_FOUND,
	[RES_INVALID_PARAMETER] = VARLINK_ERROR_INVALID_PARAMETER,
	[RES_PERMISSION_DENIED] = VARLINK_ERROR_PERMISSION_DENIED,
	[RES_EXPECTED_MORE] = VARLINK_ERROR_EXPECTED_MORE,
	[RES_NO_SUCH_CGROUP] = IFACE_ACCT ".NoSuchCgroup",
	[RES_INVALID_CGROUP_PATH] = IFACE_ACCT ".InvalidCgroupPath",
	[RES_NO_SUCH_QUANTITY] = IFACE_ACCT ".NoSuchQuantity",
	[RES_RELOAD_FAILED] = IFACE_ACCT ".ReloadFailed",
};

enum method_id {
	M_STATUS,
	M_LIST,
	M_GET,
	M_WATCH,
	M_COMPARE,
	M_TUNE,
	M_RECONCILE,
	M_RELOAD,
	M_GET_INFO,
	M_GET_INTERFACE_DESCRIPTION,
	M_UNKNOWN, /* malformed messages, unknown interfaces and methods */
	_M_MAX,
};

struct conn;

/* One call being answered. */
struct request {
	struct conn *c;
	enum method_id method;
	unsigned flags; /* VARLINK_CALL_* */
	bool counted;
};

/* A method returns 0 when it has answered (a reply or an error), 1 when it
 * goes on asynchronously (the connection stays busy until it ends), or a
 * negative errno for an internal failure (the connection is closed). */
typedef int (*method_fn)(struct request *rq, struct json_object *params);

struct method {
	const char *name;
	method_fn fn;
	bool admin;      /* root or the admin group */
	bool needs_more; /* ExpectedMore without "more" */
	const char *const *params;
};

/* ---- server and connections --------------------------------------------- */

struct uid_count {
	uid_t uid;
	unsigned count;
};

struct pass_wait {
	struct api_server *s;
	struct conn *c; /* NULL once the connection is gone (or for oneway) */
	struct request rq;
	struct pass_wait *prev, *next;
};

struct watch {
	char **paths; /* explicit cgroups, or NULL */
	size_t nr_paths;
	char *prefix; /* or NULL */
	uint64_t interval_us;
	struct event *timer;
	struct seen {
		uint64_t serial, hash;
	} *seen; /* what the last update reported, sorted by serial */
	size_t nr_seen;
	bool due;   /* an interval passed since the last check */
	bool first; /* nothing sent yet */
};

struct conn {
	struct api_server *s;
	struct conn *prev, *next;
	int fd;
	struct ucred cred;
	struct event *ev_read, *ev_write;
	struct event *ev_more; /* activated when calls wait after a turn */
	bool reading, writing; /* which events are added */
	struct varlink_reader *in;
	struct evbuffer *out;
	uint64_t last_active_us; /* bytes read, a reply sent, bytes written */
	bool eof;                /* the peer closed its side */
	bool input_drained;      /* no complete message left in `in` */
	bool closing;            /* close once the output is written */
	bool dead;               /* close now */
	bool busy;               /* a call in progress: later ones wait */
	struct watch *watch;
	struct pass_wait *wait;
};

struct api_server {
	struct manager *m;
	int listen_fd;
	bool own_socket; /* bound by us: unlink on exit */
	char *socket_path;
	dev_t socket_dev;
	ino_t socket_ino;
	struct event *ev_listen, *ev_listen_retry, *ev_sweep;
	uint64_t sweep_period_us;

	struct conn *conns;
	uint64_t nr_conns, conns_total, refused_total;
	struct uid_count *uids;
	size_t nr_uids;
	struct pass_wait *waits;

	uint64_t requests[_M_MAX][_RES_MAX];
	struct acct_json_buf text; /* replies written directly (Get, List) */
};

static uint64_t max_output(const struct api_server *s)
{
	return MAX(s->m->config->max_output_queue, (uint64_t)1);
}

static struct timeval tv_of(uint64_t usec)
{
	return (struct timeval){ .tv_sec = (time_t)(usec / 1000000u), .tv_usec = (suseconds_t)(usec % 1000000u) };
}

/* ---- replies ---------------------------------------------------------------- */

static void count(struct request *rq, enum result r)
{
	if (rq->counted)
		return;
	rq->counted = true;
	rq->c->s->requests[rq->method][r]++;
}

/* Queue one message (taken). */
static int queue_message(struct conn *c, struct json_object *msg)
{
	const char *s;
	size_t n;
	int r;

	if (!msg)
		return -ENOMEM;
	r = varlink_message_serialize(msg, &s, &n);
	if (r >= 0 && evbuffer_add(c->out, s, n + 1) < 0) /* with its NUL */
		r = -ENOMEM;
	json_object_put(msg);
	return r;
}

/* A reply with `params` (taken; NULL: {}). Nothing is sent for oneway calls. */
static int reply(struct request *rq, struct json_object *params, bool continues)
{
	count(rq, RES_OK);
	if (rq->flags & VARLINK_CALL_ONEWAY) {
		json_object_put(params);
		return 0;
	}
	return queue_message(rq->c, varlink_reply_new(params, continues));
}

static int reply_error(struct request *rq, enum result e, struct json_object *params)
{
	count(rq, e);
	if (rq->flags & VARLINK_CALL_ONEWAY) {
		json_object_put(params);
		return 0;
	}
	return queue_message(rq->c, varlink_error_new(result_names[e], params));
}

static int reply_error_string(struct request *rq, enum result e, const char *key, const char *value)
{
	struct json_object *p = json_object_new_object();
	if (!p)
		return -ENOMEM;
	json_object_object_add(p, key, json_object_new_string(value));
	return reply_error(rq, e, p);
}

/* Replies written as text by the direct writers of ledger-json.c (Get and
 * List: no json-c objects, about ten times cheaper). Start with
 * text_begin(), append the parameters' members, finish with text_reply(),
 * which closes the document, counts and queues it (or drops it for oneway). */
static struct acct_json_buf *text_begin(struct api_server *s)
{
	s->text.len = 0;
	s->text.failed = false;
	acct_json_buf_append(&s->text, "{\"parameters\":{", 15);
	return &s->text;
}

static int text_reply(struct request *rq, bool continues)
{
	struct api_server *s = rq->c->s;
	int r = 0;

	if (continues)
		acct_json_buf_append(&s->text, "},\"continues\":true}", 19);
	else
		acct_json_buf_append(&s->text, "}}", 2);
	if (s->text.failed)
		r = -ENOMEM;
	else {
		count(rq, RES_OK);
		if (!(rq->flags & VARLINK_CALL_ONEWAY) && evbuffer_add(rq->c->out, s->text.data, s->text.len + 1) < 0)
			r = -ENOMEM;
	}
	/* Do not keep the memory of one huge List for good. */
	if (s->text.alloc > (1u << 20))
		acct_json_buf_free(&s->text);
	return r;
}

static int invalid_parameter(struct request *rq, const char *name)
{
	return reply_error_string(rq, RES_INVALID_PARAMETER, "parameter", name);
}

static int no_such_cgroup(struct request *rq, const char *path)
{
	return reply_error_string(rq, RES_NO_SUCH_CGROUP, "cgroup", path);
}

/* ---- cgroup paths -------------------------------------------------------------- */

/* Normalise a cgroup path from a client into `out` (CGROUP_PATH_MAX + 1
 * bytes): absolute, single slashes, no trailing slash ("/" for the root).
 * Returns NULL, or why the path is refused. The result is only a ledger key:
 * nothing here or after it touches the file system. */
static const char *cgroup_path_normalize(const char *in, size_t len, char *out)
{
	size_t o = 0;

	if (len == 0)
		return "empty path";
	if (len > CGROUP_PATH_MAX)
		return "longer than 4096 bytes";
	if (memchr(in, 0, len))
		return "contains a NUL byte";
	for (size_t i = 0; i < len; i++)
		if ((unsigned char)in[i] < 0x20 || in[i] == 0x7f)
			return "contains a control character";
	if (in[0] != '/')
		return "not absolute (must start with /)";
	for (size_t i = 0; i < len;) {
		while (i < len && in[i] == '/')
			i++;
		size_t b = i;
		while (i < len && in[i] != '/')
			i++;
		size_t n = i - b;
		if (n == 0)
			break;
		if ((n == 1 && in[b] == '.') || (n == 2 && in[b] == '.' && in[b + 1] == '.'))
			return "contains a . or .. component";
		if (n > CGROUP_NAME_MAX)
			return "has a component longer than 255 bytes";
		out[o++] = '/';
		memcpy(out + o, in + b, n);
		o += n;
	}
	if (o == 0)
		out[o++] = '/';
	out[o] = 0;
	return NULL;
}

enum { PARAM_ABSENT, PARAM_OK, PARAM_REPLIED };

/* A cgroup path parameter, normalised into `out`. Returns PARAM_OK,
 * PARAM_ABSENT (absent or null and not required), PARAM_REPLIED (an error has
 * been sent), or -ENOMEM. */
static int param_cgroup(struct request *rq, struct json_object *v, const char *name, bool required, char *out)
{
	if (!v || json_object_is_type(v, json_type_null)) {
		if (!required)
			return PARAM_ABSENT;
		int r = invalid_parameter(rq, name);
		return r < 0 ? r : PARAM_REPLIED;
	}
	if (!json_object_is_type(v, json_type_string)) {
		int r = invalid_parameter(rq, name);
		return r < 0 ? r : PARAM_REPLIED;
	}
	const char *why = cgroup_path_normalize(json_object_get_string(v), (size_t)json_object_get_string_len(v), out);
	if (why) {
		struct json_object *p = json_object_new_object();
		if (!p)
			return -ENOMEM;
		/* The path as given, but only as much of it as is useful. */
		size_t len = (size_t)json_object_get_string_len(v);
		json_object_object_add(p, "cgroup", json_object_new_string_len(json_object_get_string(v), (int)MIN(len, (size_t)256)));
		json_object_object_add(p, "reason", json_object_new_string(why));
		int r = reply_error(rq, RES_INVALID_CGROUP_PATH, p);
		return r < 0 ? r : PARAM_REPLIED;
	}
	return PARAM_OK;
}

static struct json_object *get(struct json_object *params, const char *name)
{
	struct json_object *v = NULL;
	(void)json_object_object_get_ex(params, name, &v);
	return v;
}

/* Does `path` lie at or under `prefix` (both normalised)? */
static bool path_under(const char *path, const char *prefix, size_t plen)
{
	if (plen == 1)
		return true; /* "/" */
	return strncmp(path, prefix, plen) == 0 && (path[plen] == 0 || path[plen] == '/');
}

static unsigned path_depth(const char *path)
{
	unsigned d = 0;
	for (const char *p = path; *p; p++)
		d += *p == '/';
	return strcmp(path, "/") == 0 ? 0 : d;
}

/* ---- access ------------------------------------------------------------------- */

static bool gid_in(gid_t gid, const gid_t *list, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (list[i] == gid)
			return true;
	return false;
}

/* Root, or a member of [api] admin_group. The groups are the peer's own at
 * connect() time, from SO_PEERGROUPS (Linux 4.13): the kernel's record, with
 * no race against the client exiting and its PID being reused, which reading
 * /proc/PID/status would have. Only where the kernel lacks it do we fall back
 * to the group database (getgrouplist() of the peer's user), which may differ
 * from the process's actual groups (for example after setgroups()). */
static bool is_admin(struct conn *c)
{
	char buf[4096];
	gid_t admin;

	if (c->cred.uid == 0)
		return true;
	if (!admin_group_get(c->s->m->admin, &admin)) /* resolved at start and reload, not here */
		return false;
	if (c->cred.gid == admin)
		return true;

	gid_t groups[NGROUPS_MAX];
	socklen_t len = sizeof(groups);
	if (getsockopt(c->fd, SOL_SOCKET, SO_PEERGROUPS, groups, &len) == 0)
		return gid_in(admin, groups, len / sizeof(gid_t));
	if (errno != ENOPROTOOPT)
		return false;
	struct passwd pw, *pwp = NULL;
	if (getpwuid_r(c->cred.uid, &pw, buf, sizeof(buf), &pwp) != 0 || !pwp)
		return false;
	int n = (int)ELEMENTSOF(groups);
	if (getgrouplist(pwp->pw_name, c->cred.gid, groups, &n) < 0)
		return false;
	return gid_in(admin, groups, (size_t)n);
}

/* ---- org.varlink.service -------------------------------------------------------- */

static int m_get_info(struct request *rq, struct json_object *params)
{
	struct json_object *p = json_object_new_object(), *ifs = json_object_new_array();
	json_object_object_add(p, "vendor", json_object_new_string("acctd"));
	json_object_object_add(p, "product", json_object_new_string("acctd"));
	json_object_object_add(p, "version", json_object_new_string(ACCTD_VERSION));
	json_object_object_add(p, "url", json_object_new_string(URL));
	json_object_array_add(ifs, json_object_new_string(VARLINK_INTERFACE_SERVICE));
	json_object_array_add(ifs, json_object_new_string(IFACE_ACCT));
	json_object_object_add(p, "interfaces", ifs);
	return reply(rq, p, false);
}

static int m_get_interface_description(struct request *rq, struct json_object *params)
{
	const char *name = NULL;
	size_t len = 0;
	int r = varlink_param_string_len(params, "interface", &name, &len);
	if (r <= 0)
		return invalid_parameter(rq, "interface");
	struct json_object *p = json_object_new_object();
	if (!p)
		return -ENOMEM;
	if (len == strlen(IFACE_ACCT) && strcmp(name, IFACE_ACCT) == 0)
		json_object_object_add(p, "description", json_object_new_string_len(acctd_interface_description,
										     (int)acctd_interface_description_size));
	else if (len == strlen(VARLINK_INTERFACE_SERVICE) && strcmp(name, VARLINK_INTERFACE_SERVICE) == 0)
		json_object_object_add(p, "description", json_object_new_string(service_description));
	else {
		json_object_put(p);
		return reply_error_string(rq, RES_INTERFACE_NOT_FOUND, "interface", name);
	}
	return reply(rq, p, false);
}

/* ---- io.acctd.Accounting ----------------------------------------------------------- */

static struct json_object *budgets_json(const struct acct_ledger_budgets *b)
{
	struct json_object *o = json_object_new_object();
	json_object_object_add(o, "bytes", json_object_new_int64(b->bytes));
	json_object_object_add(o, "cpu_us", json_object_new_int64(b->cpu_us));
	json_object_object_add(o, "tasks", json_object_new_int64(b->tasks));
	return o;
}

static int m_status(struct request *rq, struct json_object *params)
{
	struct manager *m = rq->c->s->m;
	struct json_object *st = json_object_new_object();
	char line[768];
	uint64_t live = 0, dead = 0;
	struct acct_domain_stats ds;
	struct acct_ledger_budgets b;
	bool auto_tune;

	if (!st)
		return -ENOMEM;
	manager_status_line(m, line, sizeof(line));
	acct_ledger_counts(m->ledger, &live, &dead);
	acct_domain_stats(m->domain, &ds);
	manager_effective_tuning(m, &b, &auto_tune);

	json_object_object_add(st, "version", json_object_new_string(ACCTD_VERSION));
	json_object_object_add(st, "status", json_object_new_string(line));
	json_object_object_add(st, "uptime_us", json_object_new_int64((int64_t)(acct_now_us() - m->started_us)));
	json_object_object_add(st, "cgroup_mode", json_object_new_string(acct_cgroup_mode_to_string(m->layout->mode)));
	json_object_object_add(st, "cgroup_root", json_object_new_string(m->layout->root));
	json_object_object_add(st, "cgroups_live", json_object_new_int64((int64_t)live));
	json_object_object_add(st, "cgroups_dead", json_object_new_int64((int64_t)dead));
	json_object_object_add(st, "fast_interval_us", json_object_new_int64((int64_t)m->config->fast_interval_us));
	json_object_object_add(st, "slow_interval_us", json_object_new_int64((int64_t)m->config->slow_interval_us));
	json_object_object_add(st, "last_fast_pass", acct_pass_to_json(&m->last_fast));
	json_object_object_add(st, "last_slow_pass", acct_pass_to_json(&m->last_slow));
	json_object_object_add(st, "budgets", budgets_json(&b));
	struct json_object *t = json_object_new_object();
	json_object_object_add(t, "auto_tune", json_object_new_boolean(auto_tune));
	json_object_object_add(t, "tuned", json_object_new_boolean(m->tuned));
	json_object_object_add(t, "mode", json_object_new_string(acct_update_mode_to_string(ds.mode)));
	json_object_object_add(t, "counters", json_object_new_int64((int64_t)ds.counters));
	json_object_object_add(t, "sharded", json_object_new_int64((int64_t)ds.sharded));
	json_object_object_add(t, "upgrades", json_object_new_int64((int64_t)ds.upgrades));
	json_object_object_add(t, "tune_passes", json_object_new_int64((int64_t)ds.tune_passes));
	json_object_object_add(st, "tuner", t);
	json_object_object_add(st, "reconciliation", acct_reconcile_to_json(&m->reconcile));
	struct json_object *src = json_object_new_array();
	for (char **p = m->config->sources; p && *p; p++)
		json_object_array_add(src, json_object_new_string(*p));
	json_object_object_add(st, "config_sources", src);
	json_object_object_add(st, "reloads", json_object_new_int64((int64_t)m->reloads));
	json_object_object_add(st, "reload_failures", json_object_new_int64((int64_t)m->reload_failures));
	json_object_object_add(st, "reload_result",
			       m->reload_result[0] ? json_object_new_string(m->reload_result) : NULL);

	struct json_object *p = json_object_new_object();
	if (!p) {
		json_object_put(st);
		return -ENOMEM;
	}
	json_object_object_add(p, "status", st);
	return reply(rq, p, false);
}

static int m_get(struct request *rq, struct json_object *params)
{
	struct manager *m = rq->c->s->m;
	char path[CGROUP_PATH_MAX + 1];
	bool precise = false;
	int r;

	r = param_cgroup(rq, get(params, "cgroup"), "cgroup", true, path);
	if (r != PARAM_OK)
		return r < 0 ? r : 0;
	if (varlink_param_bool(params, "precise", &precise) < 0)
		return invalid_parameter(rq, "precise");

	unsigned nodes = acct_domain_topology(m->domain)->nr_nodes;
	rcu_read_lock();
	struct acct_cgroup *cg = acct_ledger_find(m->ledger, path);
	if (cg) {
		struct acct_json_buf *b = text_begin(rq->c->s);
		acct_json_buf_append(b, "\"cgroup\":", 9);
		(void)acct_cgroup_write_json(b, m->ledger, cg, acct_now_us(), precise, nodes);
	}
	rcu_read_unlock();
	if (!cg)
		return no_such_cgroup(rq, path);
	return text_reply(rq, false);
}

static int m_list(struct request *rq, struct json_object *params)
{
	struct manager *m = rq->c->s->m;
	char prefix[CGROUP_PATH_MAX + 1] = "/";
	int64_t depth = -1;
	bool include_dead = false;
	int r;

	r = param_cgroup(rq, get(params, "prefix"), "prefix", false, prefix);
	if (r == PARAM_REPLIED || r < 0)
		return r < 0 ? r : 0;
	r = varlink_param_int64(params, "depth", &depth);
	if (r < 0 || (r > 0 && depth < 0))
		return invalid_parameter(rq, "depth");
	if (varlink_param_bool(params, "includeDead", &include_dead) < 0)
		return invalid_parameter(rq, "includeDead");

	size_t plen = strlen(prefix);
	unsigned pdepth = path_depth(prefix);
	bool more = rq->flags & VARLINK_CALL_MORE;
	struct acct_cgroup **cgs = NULL;
	uint64_t now = acct_now_us();

	rcu_read_lock();
	if (!acct_ledger_find(m->ledger, prefix)) {
		rcu_read_unlock();
		return no_such_cgroup(rq, prefix);
	}
	int n = acct_ledger_snapshot(m->ledger, include_dead, &cgs);
	if (n < 0) {
		rcu_read_unlock();
		return n;
	}
	/* Keep the matches in place. */
	size_t k = 0;
	for (int i = 0; i < n; i++)
		if (path_under(cgs[i]->path, prefix, plen) &&
		    (depth < 0 || (int64_t)cgs[i]->depth - (int64_t)pdepth <= depth))
			cgs[k++] = cgs[i];
	r = 0;
	size_t i = 0;
	do {
		size_t end = more ? MIN(k, i + LIST_CHUNK) : k;
		struct acct_json_buf *b = text_begin(rq->c->s);
		acct_json_buf_append(b, "\"cgroups\":[", 11);
		for (size_t first = i; i < end; i++) {
			if (i > first)
				acct_json_buf_append(b, ",", 1);
			(void)acct_cgroup_list_entry_write(b, cgs[i], now);
		}
		acct_json_buf_append(b, "]", 1);
		r = text_reply(rq, more && i < k);
	} while (r >= 0 && i < k);
	rcu_read_unlock();
	free(cgs);
	return r;
}

static int m_compare(struct request *rq, struct json_object *params)
{
	struct manager *m = rq->c->s->m;
	char path[CGROUP_PATH_MAX + 1];
	const char *qname = NULL;
	int64_t threshold = 0;
	int r;

	r = param_cgroup(rq, get(params, "cgroup"), "cgroup", true, path);
	if (r != PARAM_OK)
		return r < 0 ? r : 0;
	if (varlink_param_string(params, "quantity", &qname) <= 0)
		return invalid_parameter(rq, "quantity");
	if (varlink_param_int64(params, "threshold", &threshold) <= 0)
		return invalid_parameter(rq, "threshold");
	int q = acct_quantity_from_name(qname);
	if (q < 0)
		return reply_error_string(rq, RES_NO_SUCH_QUANTITY, "quantity", qname);

	rcu_read_lock();
	struct acct_cgroup *cg = acct_ledger_find(m->ledger, path);
	if (!cg) {
		rcu_read_unlock();
		return no_such_cgroup(rq, path);
	}
	if (!__atomic_load_n(&cg->q_known[q], __ATOMIC_ACQUIRE)) {
		/* Never read for this cgroup (not in that controller's tree). */
		rcu_read_unlock();
		return reply_error_string(rq, RES_NO_SUCH_QUANTITY, "quantity", qname);
	}
	bool precise = false;
	int cmp = acct_counter_compare(cg->q[q], threshold, &precise);
	struct acct_reading rd;
	if (precise)
		rd = (struct acct_reading){ .value = acct_counter_read_precise(cg->q[q]), .bound = 0 };
	else
		acct_counter_read(cg->q[q], &rd);
	uint64_t age = acct_cgroup_age(cg, acct_quantity_info((enum acct_quantity)q)->group, acct_now_us());
	rcu_read_unlock();

	struct json_object *p = json_object_new_object(), *v = json_object_new_object();
	if (!p || !v) {
		json_object_put(p);
		json_object_put(v);
		return -ENOMEM;
	}
	json_object_object_add(p, "result", json_object_new_string(cmp > 0 ? "above" : cmp < 0 ? "below" : "equal"));
	json_object_object_add(v, "value", json_object_new_int64(rd.value));
	if (rd.bound)
		json_object_object_add(v, "bound", json_object_new_int64((int64_t)MIN(rd.bound, (uint64_t)INT64_MAX)));
	if (age != UINT64_MAX)
		json_object_object_add(v, "age_us", json_object_new_int64((int64_t)age));
	json_object_object_add(p, "value", v);
	json_object_object_add(p, "precise", json_object_new_boolean(precise));
	return reply(rq, p, false);
}

static int m_tune(struct request *rq, struct json_object *params)
{
	struct manager *m = rq->c->s->m;
	static const char *const names[3] = { "bytesBudget", "cpuBudgetUs", "tasksBudget" };
	struct acct_ledger_budgets b;
	bool auto_tune = false, any_budget = false;
	int r;

	manager_effective_tuning(m, &b, NULL);
	int64_t *fields[3] = { &b.bytes, &b.cpu_us, &b.tasks };
	for (int i = 0; i < 3; i++) {
		int64_t v;
		r = varlink_param_int64(params, names[i], &v);
		if (r < 0 || (r > 0 && v < 0))
			return invalid_parameter(rq, names[i]);
		if (r > 0) {
			*fields[i] = v;
			any_budget = true;
		}
	}
	r = varlink_param_bool(params, "autoTune", &auto_tune);
	if (r < 0)
		return invalid_parameter(rq, "autoTune");
	int at = r > 0 ? auto_tune : -1;
	r = manager_tune(m, any_budget ? &b : NULL, at);
	if (r < 0)
		return invalid_parameter(rq, "bytesBudget");

	manager_effective_tuning(m, &b, &auto_tune);
	struct json_object *p = json_object_new_object();
	if (!p)
		return -ENOMEM;
	json_object_object_add(p, "budgets", budgets_json(&b));
	json_object_object_add(p, "auto_tune", json_object_new_boolean(auto_tune));
	return reply(rq, p, false);
}

static int m_reload(struct request *rq, struct json_object *params)
{
	struct manager *m = rq->c->s->m;
	int r = manager_reload(m);
	if (r < 0)
		return reply_error_string(rq, RES_RELOAD_FAILED, "reason", m->reload_result);
	return reply(rq, NULL, false);
}

/* ---- Reconcile: answered after the next full pass --------------------------------- */

static void conn_kick(struct conn *c);

static void pass_wait_free(struct pass_wait *w)
{
	if (w->prev)
		w->prev->next = w->next;
	else
		w->s->waits = w->next;
	if (w->next)
		w->next->prev = w->prev;
	free(w);
}

/* Called by the manager on the event loop once the pass is done. The
 * connection may have closed meanwhile: then w->c is NULL. */
static void on_pass_done(struct manager *m, const struct acct_pass_report *rep, void *userdata)
{
	struct pass_wait *w = userdata;
	struct conn *c = w->c;

	if (c) {
		struct json_object *p = json_object_new_object();
		int r = -ENOMEM;
		if (p) {
			json_object_object_add(p, "pass", acct_pass_to_json(rep));
			json_object_object_add(p, "reconciliation", acct_reconcile_to_json(&m->reconcile));
			r = reply(&w->rq, p, false);
		}
		c->wait = NULL;
		c->busy = false;
		if (r < 0)
			c->dead = true;
		c->last_active_us = acct_now_us();
	}
	pass_wait_free(w);
	if (c)
		conn_kick(c);
}

static int m_reconcile(struct request *rq, struct json_object *params)
{
	struct api_server *s = rq->c->s;
	struct pass_wait *w = calloc(1, sizeof(*w));
	if (!w)
		return -ENOMEM;
	bool oneway = rq->flags & VARLINK_CALL_ONEWAY;
	*w = (struct pass_wait){ .s = s, .c = oneway ? NULL : rq->c, .rq = *rq, .next = s->waits };
	int r = manager_request_pass(s->m, on_pass_done, w);
	if (r < 0) {
		free(w);
		return r;
	}
	if (s->waits)
		s->waits->prev = w;
	s->waits = w;
	if (oneway) {
		count(rq, RES_OK);
		return 0;
	}
	rq->c->wait = w;
	return 1;
}

/* ---- Watch ------------------------------------------------------------------------- */

static uint64_t fnv(uint64_t h, uint64_t v)
{
	for (int i = 0; i < 8; i++) {
		h ^= (v >> (8 * i)) & 0xff;
		h *= 0x100000001b3ull;
	}
	return h;
}

/* A fingerprint of a record's values (not their ages): equal fingerprints,
 * nothing to report. */
static uint64_t record_hash(struct acct_ledger *l, const struct acct_cgroup *cg)
{
	uint64_t h = 0xcbf29ce484222325ull;
	h = fnv(h, cg->serial);
	h = fnv(h, acct_cgroup_is_dead(cg));
	h = fnv(h, __atomic_load_n(&cg->populated, __ATOMIC_RELAXED));
	h = fnv(h, __atomic_load_n(&cg->hierarchies, __ATOMIC_RELAXED));
	for (int q = 0; q < _ACCT_Q_MAX; q++) {
		struct acct_reading rd = { 0 };
		bool known = acct_cgroup_get(cg, (enum acct_quantity)q, false, &rd);
		h = fnv(h, known);
		h = fnv(h, (uint64_t)rd.value);
	}
	h = fnv(h, __atomic_load_n(&cg->cpu_rate_bits, __ATOMIC_RELAXED));
	for (int i = 0; i < 3; i++) {
		h = fnv(h, __atomic_load_n(&cg->cpu_rate_avg_bits[i], __ATOMIC_RELAXED));
		h = fnv(h, __atomic_load_n(&cg->loadavg[i], __ATOMIC_RELAXED));
	}
	for (int r = 0; r < _ACCT_PSI_MAX; r++) {
		h = fnv(h, __atomic_load_n(&cg->psi_known[r], __ATOMIC_RELAXED));
		for (int k = 0; k < _ACCT_PSI_KIND_MAX; k++)
			for (int a = 0; a < 3; a++)
				h = fnv(h, __atomic_load_n(&cg->psi_avg[r][k][a], __ATOMIC_RELAXED));
	}
	int64_t *ms = __atomic_load_n(&cg->memstat, __ATOMIC_ACQUIRE);
	if (ms)
		for (unsigned i = 0; i < acct_ledger_memstat_count(l); i++)
			h = fnv(h, (uint64_t)__atomic_load_n(&ms[i], __ATOMIC_RELAXED));
	if (__atomic_load_n(&cg->numa_known, __ATOMIC_ACQUIRE))
		for (unsigned n = 0;; n++) {
			struct acct_reading rd;
			if (acct_counter_read_node(cg->numa, n, &rd) < 0)
				break;
			h = fnv(h, (uint64_t)rd.value);
		}
	h = fnv(h, __atomic_load_n(&cg->sample_errors, __ATOMIC_RELAXED));
	return h;
}

static int seen_cmp(const void *a, const void *b)
{
	const struct seen *x = a, *y = b;
	return x->serial < y->serial ? -1 : x->serial > y->serial;
}

static struct watch *watch_free(struct watch *w)
{
	if (!w)
		return NULL;
	if (w->timer)
		event_free(w->timer);
	for (size_t i = 0; i < w->nr_paths; i++)
		free(w->paths[i]);
	free(w->paths);
	free(w->prefix);
	free(w->seen);
	free(w);
	return NULL;
}

/* The records watched now, live and dead. Caller holds rcu_read_lock(). */
static int watch_records(struct manager *m, struct watch *w, struct acct_cgroup ***ret)
{
	struct acct_cgroup **cgs = NULL;
	size_t k = 0;

	if (w->prefix) {
		int n = acct_ledger_snapshot(m->ledger, true, &cgs);
		if (n < 0)
			return n;
		size_t plen = strlen(w->prefix);
		for (int i = 0; i < n; i++)
			if (path_under(cgs[i]->path, w->prefix, plen))
				cgs[k++] = cgs[i];
	}
	if (w->nr_paths) {
		struct acct_cgroup **p = reallocarray(cgs, k + w->nr_paths + 1, sizeof(*p));
		if (!p) {
			free(cgs);
			return -ENOMEM;
		}
		cgs = p;
		for (size_t i = 0; i < w->nr_paths; i++) {
			struct acct_cgroup *cg = acct_ledger_find(m->ledger, w->paths[i]);
			bool dup = false;
			for (size_t j = 0; cg && j < k && !dup; j++)
				dup = cgs[j] == cg;
			if (cg && !dup)
				cgs[k++] = cg;
		}
	}
	*ret = cgs;
	return (int)k;
}

/* Send the records that changed since the last update (all of them the first
 * time), in replies of at most WATCH_CHUNK records. */
static int watch_update(struct conn *c)
{
	struct manager *m = c->s->m;
	struct watch *w = c->watch;
	struct acct_cgroup **cgs = NULL;
	unsigned nodes = acct_domain_topology(m->domain)->nr_nodes;
	uint64_t now = acct_now_us();
	struct request rq = { .c = c, .method = M_WATCH, .flags = VARLINK_CALL_MORE, .counted = true };
	int r = 0;

	rcu_read_lock();
	int n = watch_records(m, w, &cgs);
	if (n < 0) {
		rcu_read_unlock();
		return n;
	}
	struct seen *seen = calloc((size_t)n + 1, sizeof(*seen));
	if (!seen) {
		rcu_read_unlock();
		free(cgs);
		return -ENOMEM;
	}
	struct json_object *arr = NULL;
	size_t in_arr = 0, sent = 0;
	for (int i = 0; i < n && r >= 0; i++) {
		seen[i] = (struct seen){ cgs[i]->serial, record_hash(m->ledger, cgs[i]) };
		struct seen *old = w->seen ? bsearch(&seen[i], w->seen, w->nr_seen, sizeof(*seen), seen_cmp) : NULL;
		if (!w->first && old && old->hash == seen[i].hash)
			continue;
		if (!arr && !(arr = json_object_new_array()))
			r = -ENOMEM;
		else {
			json_object_array_add(arr, acct_cgroup_to_json(m->ledger, cgs[i], now, false, nodes));
			in_arr++;
		}
		if (r >= 0 && in_arr == WATCH_CHUNK) {
			struct json_object *p = json_object_new_object();
			if (!p)
				r = -ENOMEM;
			else {
				json_object_object_add(p, "cgroups", TAKE_PTR(arr));
				r = reply(&rq, p, true);
				sent++;
				in_arr = 0;
			}
		}
	}
	rcu_read_unlock();
	free(cgs);
	if (r >= 0 && (in_arr > 0 || (w->first && sent == 0))) {
		struct json_object *p = json_object_new_object();
		if (!p)
			r = -ENOMEM;
		else {
			json_object_object_add(p, "cgroups", arr ? TAKE_PTR(arr) : json_object_new_array());
			r = reply(&rq, p, true);
		}
	}
	json_object_put(arr);
	if (r < 0) {
		free(seen);
		return r;
	}
	qsort(seen, (size_t)n, sizeof(*seen), seen_cmp);
	free(w->seen);
	w->seen = seen;
	w->nr_seen = (size_t)n;
	w->first = false;
	w->due = false;
	return 0;
}

static void on_watch_timer(evutil_socket_t fd, short what, void *userdata)
{
	struct conn *c = userdata;
	c->watch->due = true;
	conn_kick(c);
}

static int m_watch(struct request *rq, struct json_object *params)
{
	struct conn *c = rq->c;
	struct manager *m = c->s->m;
	char path[CGROUP_PATH_MAX + 1];
	struct json_object *list = NULL;
	int64_t interval = WATCH_DEFAULT_INTERVAL_MS;
	int r;

	struct watch *w = calloc(1, sizeof(*w));
	if (!w)
		return -ENOMEM;
	w->first = true;
	r = varlink_param_array(params, "cgroups", &list);
	if (r < 0) {
		watch_free(w);
		return invalid_parameter(rq, "cgroups");
	}
	if (list) {
		size_t n = json_object_array_length(list);
		w->paths = calloc(n + 1, sizeof(char *));
		if (!w->paths) {
			watch_free(w);
			return -ENOMEM;
		}
		for (size_t i = 0; i < n; i++) {
			struct json_object *v = json_object_array_get_idx(list, i);
			if (!v) { /* null inside the array */
				watch_free(w);
				return invalid_parameter(rq, "cgroups");
			}
			r = param_cgroup(rq, v, "cgroups", true, path);
			if (r != PARAM_OK) {
				watch_free(w);
				return r < 0 ? r : 0;
			}
			if (!(w->paths[w->nr_paths++] = strdup(path))) {
				watch_free(w);
				return -ENOMEM;
			}
		}
	}
	r = param_cgroup(rq, get(params, "prefix"), "prefix", false, path);
	if (r == PARAM_REPLIED || r < 0) {
		watch_free(w);
		return r < 0 ? r : 0;
	}
	if (r == PARAM_OK && !(w->prefix = strdup(path))) {
		watch_free(w);
		return -ENOMEM;
	}
	r = varlink_param_int64(params, "interval_ms", &interval);
	if (r < 0 || interval < WATCH_MIN_INTERVAL_MS || interval > WATCH_MAX_INTERVAL_MS) {
		watch_free(w);
		return invalid_parameter(rq, "interval_ms");
	}
	if (!w->prefix && w->nr_paths == 0) {
		watch_free(w);
		return invalid_parameter(rq, "cgroups");
	}
	/* What is watched must exist when the watch starts. */
	const char *missing = NULL;
	rcu_read_lock();
	if (w->prefix && !acct_ledger_find(m->ledger, w->prefix))
		missing = w->prefix;
	for (size_t i = 0; !missing && i < w->nr_paths; i++)
		if (!acct_ledger_find(m->ledger, w->paths[i]))
			missing = w->paths[i];
	rcu_read_unlock();
	if (missing) {
		r = no_such_cgroup(rq, missing);
		watch_free(w);
		return r;
	}
	w->interval_us = (uint64_t)interval * 1000;
	w->timer = event_new(m->base, -1, EV_PERSIST, on_watch_timer, c);
	struct timeval tv = tv_of(w->interval_us);
	if (!w->timer || event_add(w->timer, &tv) < 0) {
		watch_free(w);
		return -ENOMEM;
	}
	count(rq, RES_OK);
	w->due = true; /* the first update at once */
	c->watch = w;
	return 1;
}

/* ---- the method table --------------------------------------------------------------- */

static const char *const no_params[] = { NULL };
static const char *const list_params[] = { "prefix", "depth", "includeDead", NULL };
static const char *const get_params[] = { "cgroup", "precise", NULL };
static const char *const watch_params[] = { "cgroups", "prefix", "interval_ms", NULL };
static const char *const compare_params[] = { "cgroup", "quantity", "threshold", NULL };
static const char *const tune_params[] = { "bytesBudget", "cpuBudgetUs", "tasksBudget", "autoTune", NULL };
static const char *const describe_params[] = { "interface", NULL };

static const struct method methods[_M_MAX] = {
	[M_STATUS] = { IFACE_ACCT ".Status", m_status, false, false, no_params },
	[M_LIST] = { IFACE_ACCT ".List", m_list, false, false, list_params },
	[M_GET] = { IFACE_ACCT ".Get", m_get, false, false, get_params },
	[M_WATCH] = { IFACE_ACCT ".Watch", m_watch, false, true, watch_params },
	[M_COMPARE] = { IFACE_ACCT ".Compare", m_compare, false, false, compare_params },
	[M_TUNE] = { IFACE_ACCT ".Tune", m_tune, true, false, tune_params },
	[M_RECONCILE] = { IFACE_ACCT ".Reconcile", m_reconcile, true, false, no_params },
	[M_RELOAD] = { IFACE_ACCT ".Reload", m_reload, true, false, no_params },
	[M_GET_INFO] = { VARLINK_INTERFACE_SERVICE ".GetInfo", m_get_info, false, false, no_params },
	[M_GET_INTERFACE_DESCRIPTION] = { VARLINK_INTERFACE_SERVICE ".GetInterfaceDescription",
					  m_get_interface_description, false, false, describe_params },
	[M_UNKNOWN] = { "unknown", NULL, false, false, no_params },
};

/* Answer one message. Returns 0, or a negative errno when the connection
 * must close. */
static int dispatch(struct conn *c, struct json_object *msg)
{
	struct varlink_call call = { 0 };
	struct request rq = { .c = c, .method = M_UNKNOWN };
	const char *field = NULL;
	int r;

	r = varlink_call_parse(msg, &call, &field);
	if (r == -ENOMEM)
		return r;
	if (r < 0)
		return invalid_parameter(&rq, field && *field ? field : "message");
	rq.flags = call.flags;

	bool known_iface = false;
	if ((call.interface_len == strlen(IFACE_ACCT) && strncmp(call.method, IFACE_ACCT, call.interface_len) == 0) ||
	    (call.interface_len == strlen(VARLINK_INTERFACE_SERVICE) &&
	     strncmp(call.method, VARLINK_INTERFACE_SERVICE, call.interface_len) == 0))
		known_iface = true;
	if (!known_iface) {
		char iface[256];
		snprintf(iface, sizeof(iface), "%.*s", (int)call.interface_len, call.method);
		r = reply_error_string(&rq, RES_INTERFACE_NOT_FOUND, "interface", iface);
		goto out;
	}
	const struct method *mt = NULL;
	for (int i = 0; i < M_UNKNOWN; i++)
		if (strcmp(methods[i].name, call.method) == 0) {
			mt = &methods[i];
			rq.method = (enum method_id)i;
			break;
		}
	if (!mt) {
		r = reply_error_string(&rq, RES_METHOD_NOT_FOUND, "method", call.method);
		goto out;
	}
	/* No method of ours hands the connection over to another protocol. */
	if (call.flags & VARLINK_CALL_UPGRADE) {
		r = invalid_parameter(&rq, "upgrade");
		goto out;
	}
	if (mt->needs_more && (!(call.flags & VARLINK_CALL_MORE) || (call.flags & VARLINK_CALL_ONEWAY))) {
		r = reply_error(&rq, RES_EXPECTED_MORE, NULL);
		goto out;
	}
	if (mt->admin && !is_admin(c)) {
		log_debug("Refused %s to uid %u (pid %d)", call.method, (unsigned)c->cred.uid, (int)c->cred.pid);
		r = reply_error(&rq, RES_PERMISSION_DENIED, NULL);
		goto out;
	}
	const char *unknown = varlink_param_unknown(call.parameters, mt->params);
	if (unknown) {
		r = invalid_parameter(&rq, unknown);
		goto out;
	}
	r = mt->fn(&rq, call.parameters);
	if (r == 1) {
		c->busy = true;
		r = 0;
	}
out:
	varlink_call_clear(&call);
	return r;
}

/* ---- connections ------------------------------------------------------------------------ */

static struct uid_count *uid_find(struct api_server *s, uid_t uid)
{
	for (size_t i = 0; i < s->nr_uids; i++)
		if (s->uids[i].uid == uid)
			return &s->uids[i];
	return NULL;
}

static void uid_put(struct api_server *s, uid_t uid)
{
	struct uid_count *u = uid_find(s, uid);
	if (u && --u->count == 0)
		*u = s->uids[--s->nr_uids];
}

static void conn_free(struct conn *c)
{
	struct api_server *s = c->s;

	if (c->prev)
		c->prev->next = c->next;
	else
		s->conns = c->next;
	if (c->next)
		c->next->prev = c->prev;
	s->nr_conns--;
	uid_put(s, c->cred.uid);
	if (c->wait)
		c->wait->c = NULL; /* the pass will find nobody to answer */
	c->watch = watch_free(c->watch);
	if (c->ev_read)
		event_free(c->ev_read);
	if (c->ev_write)
		event_free(c->ev_write);
	if (c->ev_more)
		event_free(c->ev_more);
	if (c->out)
		evbuffer_free(c->out);
	varlink_reader_free(c->in);
	if (c->fd >= 0)
		close(c->fd);
	free(c);
}

/* Write what the queue holds, without blocking and without SIGPIPE. */
static void conn_flush(struct conn *c)
{
	while (evbuffer_get_length(c->out) > 0) {
		struct evbuffer_iovec v[16];
		int n = evbuffer_peek(c->out, -1, NULL, v, (int)ELEMENTSOF(v));
		if (n > (int)ELEMENTSOF(v))
			n = (int)ELEMENTSOF(v);
		struct msghdr mh = { .msg_iov = (struct iovec *)v, .msg_iovlen = (size_t)n };
		ssize_t k = sendmsg(c->fd, &mh, MSG_NOSIGNAL | MSG_DONTWAIT);
		if (k < 0) {
			if (errno == EINTR)
				continue;
			if (errno != EAGAIN)
				c->dead = true; /* EPIPE, ECONNRESET: the peer is gone */
			return;
		}
		evbuffer_drain(c->out, (size_t)k);
		c->last_active_us = acct_now_us();
	}
}

/* Take calls from the input while nothing is in progress and the output has
 * room. */
static void conn_process(struct conn *c)
{
	uint64_t limit = max_output(c->s);
	unsigned calls = 0;

	while (!c->dead && !c->closing && !c->busy && evbuffer_get_length(c->out) < limit) {
		struct json_object *msg = NULL;
		if (calls++ == CALLS_PER_TURN) {
			/* Other connections first; the rest in a moment. */
			event_active(c->ev_more, 0, 0);
			return;
		}
		int r = varlink_reader_next(c->in, &msg);
		if (r == 0) {
			c->input_drained = true;
			return;
		}
		if (r == -EMSGSIZE || r == -EBADMSG) {
			/* Protocol violations: one error, then the connection closes. */
			struct request rq = { .c = c, .method = M_UNKNOWN };
			log_debug("Closing connection of uid %u (pid %d): %s", (unsigned)c->cred.uid, (int)c->cred.pid,
				  r == -EMSGSIZE ? "message too large" : "malformed message");
			if (invalid_parameter(&rq, "message") < 0)
				c->dead = true;
			c->closing = true;
			return;
		}
		if (r < 0) {
			c->dead = true;
			return;
		}
		r = dispatch(c, msg);
		json_object_put(msg);
		if (r < 0) {
			log_debug_errno(r, "Closing connection of uid %u: %m", (unsigned)c->cred.uid);
			c->dead = true;
		}
		c->last_active_us = acct_now_us();
	}
}

static void set_event(struct event *ev, bool *state, bool want)
{
	if (*state == want)
		return;
	if (want)
		event_add(ev, NULL);
	else
		event_del(ev);
	*state = want;
}

/* Everything that may follow from an event on c: take calls, send a due
 * Watch update, write, close, and choose what to wait for. May free c. */
static void conn_kick(struct conn *c)
{
	uint64_t limit = max_output(c->s);

	conn_process(c);
	if (!c->dead && c->watch && c->eof)
		c->dead = true; /* nobody left to watch for */
	/* A Watch update only when the previous one has left: changes coalesce
	 * into the next update instead of piling up in the queue. */
	if (!c->dead && c->watch && c->watch->due && evbuffer_get_length(c->out) == 0 && watch_update(c) < 0)
		c->dead = true;
	if (!c->dead)
		conn_flush(c);
	size_t out = evbuffer_get_length(c->out);
	if (c->dead || (c->closing && out == 0) || (c->eof && !c->busy && out == 0 && c->input_drained)) {
		conn_free(c);
		return;
	}
	bool want_read = !c->closing && !c->eof && out < limit &&
			 (!c->busy || varlink_reader_pending(c->in) < READ_AHEAD);
	set_event(c->ev_read, &c->reading, want_read);
	set_event(c->ev_write, &c->writing, out > 0);
}

static void on_conn_read(evutil_socket_t fd, short what, void *userdata)
{
	struct conn *c = userdata;

	for (int i = 0; i < READS_PER_WAKEUP; i++) {
		size_t room = 0;
		void *p = varlink_reader_space(c->in, READ_CHUNK, &room);
		if (!p) {
			c->dead = true;
			break;
		}
		room = MIN(room, (size_t)READ_CHUNK);
		ssize_t n = read(c->fd, p, room);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno != EAGAIN)
				c->eof = c->dead = true;
			break;
		}
		if (n == 0) {
			c->eof = true;
			break;
		}
		c->input_drained = false;
		c->last_active_us = acct_now_us();
		if (varlink_reader_commit(c->in, (size_t)n) < 0) {
			/* Beyond the message size without a NUL: what came before
			 * it is answered, then an error, then the connection
			 * closes (conn_process()). */
			c->eof = true;
			break;
		}
		if ((size_t)n < room)
			break;
		if (c->busy)
			break;
	}
	conn_kick(c);
}

static void on_conn_write(evutil_socket_t fd, short what, void *userdata)
{
	conn_kick(userdata);
}

static void on_conn_more(evutil_socket_t fd, short what, void *userdata)
{
	conn_kick(userdata);
}

static int conn_new(struct api_server *s, int fd, const struct ucred *cred)
{
	struct conn *c = calloc(1, sizeof(*c));
	struct uid_count *u = uid_find(s, cred->uid);

	if (!c)
		goto fail;
	c->s = s;
	c->fd = fd;
	c->cred = *cred;
	c->last_active_us = acct_now_us();
	c->input_drained = true;
	if (varlink_reader_new((size_t)s->m->config->max_message_size, JSON_MAX_DEPTH, &c->in) < 0)
		goto fail;
	c->out = evbuffer_new();
	c->ev_read = event_new(s->m->base, fd, EV_READ | EV_PERSIST, on_conn_read, c);
	c->ev_write = event_new(s->m->base, fd, EV_WRITE | EV_PERSIST, on_conn_write, c);
	c->ev_more = event_new(s->m->base, -1, 0, on_conn_more, c);
	if (!c->out || !c->ev_read || !c->ev_write || !c->ev_more)
		goto fail;
	if (!u) {
		struct uid_count *n = reallocarray(s->uids, s->nr_uids + 1, sizeof(*n));
		if (!n)
			goto fail;
		s->uids = n;
		u = &s->uids[s->nr_uids++];
		*u = (struct uid_count){ cred->uid, 0 };
	}
	/* From here on conn_free() undoes everything. */
	u->count++;
	c->next = s->conns;
	if (s->conns)
		s->conns->prev = c;
	s->conns = c;
	s->nr_conns++;
	s->conns_total++;
	set_event(c->ev_read, &c->reading, true);
	return 0;
fail:
	if (c) {
		if (c->ev_read)
			event_free(c->ev_read);
		if (c->ev_write)
			event_free(c->ev_write);
		if (c->ev_more)
			event_free(c->ev_more);
		if (c->out)
			evbuffer_free(c->out);
		varlink_reader_free(c->in);
		free(c);
	}
	close(fd);
	return -ENOMEM;
}

/* ---- listening --------------------------------------------------------------------------- */

static void on_listen_retry(evutil_socket_t fd, short what, void *userdata)
{
	struct api_server *s = userdata;
	event_add(s->ev_listen, NULL);
}

static void on_accept(evutil_socket_t lfd, short what, void *userdata)
{
	struct api_server *s = userdata;
	const struct acct_config *cf = s->m->config;

	for (int i = 0; i < ACCEPT_BURST; i++) {
		int fd = accept4(s->listen_fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd < 0) {
			if (errno == EINTR || errno == ECONNABORTED || errno == EPROTO)
				continue;
			if (errno == EAGAIN)
				return;
			/* Out of descriptors or memory: pause instead of spinning on
			 * a connection we cannot take. */
			log_warning_errno(-errno, "Failed to accept a connection, pausing for 100 ms: %m");
			event_del(s->ev_listen);
			struct timeval tv = tv_of(100000);
			event_add(s->ev_listen_retry, &tv);
			return;
		}
		struct ucred cred;
		socklen_t len = sizeof(cred);
		if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) < 0) {
			log_debug_errno(-errno, "Failed to read the peer's credentials, closing: %m");
			close(fd);
			continue;
		}
		struct uid_count *u = uid_find(s, cred.uid);
		if (s->nr_conns >= cf->max_connections || (u && u->count >= cf->max_connections_per_user)) {
			s->refused_total++;
			log_debug("Refused a connection of uid %u (pid %d): %s", (unsigned)cred.uid, (int)cred.pid,
				  s->nr_conns >= cf->max_connections ? "too many connections" : "too many connections of this user");
			close(fd);
			continue;
		}
		if (conn_new(s, fd, &cred) < 0) {
			log_oom();
			continue; /* conn_free() closed fd */
		}
	}
}

/* Idle connections, and connections whose output does not move, go. */
static void on_sweep(evutil_socket_t fd, short what, void *userdata)
{
	struct api_server *s = userdata;
	uint64_t idle = s->m->config->idle_timeout_us, now = acct_now_us();

	for (struct conn *c = s->conns, *next; c; c = next) {
		next = c->next;
		bool waiting_for_us = c->busy && evbuffer_get_length(c->out) == 0; /* Reconcile, a quiet Watch */
		if (waiting_for_us || now - c->last_active_us < idle)
			continue;
		log_debug("Closing connection of uid %u (pid %d): %s for %" PRIu64 " ms", (unsigned)c->cred.uid,
			  (int)c->cred.pid, evbuffer_get_length(c->out) ? "output stalled" : "idle", idle / 1000);
		conn_free(c);
	}
	/* The period follows the configured timeout (a reload may change it). */
	uint64_t period = MIN(MAX(idle / 4, (uint64_t)10000), (uint64_t)1000000);
	if (period != s->sweep_period_us) {
		s->sweep_period_us = period;
		struct timeval tv = tv_of(period);
		event_del(s->ev_sweep);
		event_add(s->ev_sweep, &tv);
	}
}

/* Is something listening on `path`? */
static bool socket_in_use(const char *path)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	bool used;

	if (fd < 0)
		return true; /* do not remove what we cannot check */
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
	used = connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0 || errno != ECONNREFUSED;
	close(fd);
	return used;
}

static int mkdir_parents(const char *path)
{
	char *p = strdup(path);
	if (!p)
		return -ENOMEM;
	for (char *s = p + 1; *s; s++) {
		if (*s != '/')
			continue;
		*s = 0;
		if (mkdir(p, 0755) < 0 && errno != EEXIST) {
			int r = -errno;
			free(p);
			return r;
		}
		*s = '/';
	}
	free(p);
	return 0;
}

static int bind_socket(struct api_server *s, const char *path)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct stat st;
	int r;

	if (strlen(path) >= sizeof(sa.sun_path))
		return log_error_errno(ENAMETOOLONG, "Socket path %s is too long", path);
	memcpy(sa.sun_path, path, strlen(path) + 1);
	r = mkdir_parents(path);
	if (r < 0)
		return log_error_errno(r, "Failed to create the directory of %s: %m", path);
	if (lstat(path, &st) == 0) {
		if (!S_ISSOCK(st.st_mode))
			return log_error_errno(EEXIST, "%s exists and is not a socket, refusing to replace it", path);
		if (socket_in_use(path))
			return log_error_errno(EADDRINUSE, "%s is in use: is another acctd running?", path);
		(void)unlink(path); /* a stale socket of a previous run */
	}
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return log_error_errno(-errno, "Failed to create a socket: %m");
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		r = -errno;
		close(fd);
		return log_error_errno(r, "Failed to bind %s: %m", path);
	}
	/* Everyone may connect; the methods that change something check the
	 * caller themselves. */
	if (chmod(path, 0666) < 0 || stat(path, &st) < 0 || listen(fd, SOMAXCONN) < 0) {
		r = -errno;
		(void)unlink(path);
		close(fd);
		return log_error_errno(r, "Failed to set up %s: %m", path);
	}
	s->listen_fd = fd;
	s->own_socket = true;
	s->socket_dev = st.st_dev;
	s->socket_ino = st.st_ino;
	return 0;
}

/* The socket systemd passed: the one named "varlink", or the only one. */
static int passed_socket(void)
{
	char **names = NULL;
	int n = sd_listen_fds_with_names(true, &names);
	int fd = -1;

	if (n <= 0)
		return n < 0 ? n : -ENOENT;
	for (int i = 0; i < n; i++)
		if (names && names[i] && strcmp(names[i], "varlink") == 0)
			fd = SD_LISTEN_FDS_START + i;
	if (fd < 0 && n == 1)
		fd = SD_LISTEN_FDS_START;
	for (int i = 0; names && i < n; i++)
		free(names[i]);
	free(names);
	if (fd < 0)
		return -ENOENT;
	if (sd_is_socket_unix(fd, SOCK_STREAM, 1, NULL, 0) <= 0)
		return log_error_errno(EINVAL, "The socket passed by systemd is not a listening Unix stream socket");
	int fl = fcntl(fd, F_GETFL);
	if (fl < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) < 0 || fcntl(fd, F_SETFD, FD_CLOEXEC) < 0)
		return log_error_errno(-errno, "Failed to set up the passed socket: %m");
	return fd;
}

int api_server_start(struct manager *m)
{
	struct api_server *s = calloc(1, sizeof(*s));
	int r;

	if (!s)
		return log_oom();
	s->m = m;
	s->listen_fd = -1;
	m->api = s;

	int fd = passed_socket();
	if (fd >= 0) {
		s->listen_fd = fd;
		log_info("Listening on the varlink socket passed by systemd");
	} else if (fd != -ENOENT)
		return fd;
	else {
		const char *path = m->config->socket_path;
		if (!path)
			return log_error_errno(EINVAL, "No socket path configured");
		if (!(s->socket_path = strdup(path)))
			return log_oom();
		r = bind_socket(s, path);
		if (r < 0)
			return r;
		log_info("Listening on %s", path);
	}
	s->ev_listen = event_new(m->base, s->listen_fd, EV_READ | EV_PERSIST, on_accept, s);
	s->ev_listen_retry = evtimer_new(m->base, on_listen_retry, s);
	s->ev_sweep = event_new(m->base, -1, EV_PERSIST, on_sweep, s);
	if (!s->ev_listen || !s->ev_listen_retry || !s->ev_sweep)
		return log_oom();
	s->sweep_period_us = 100000;
	struct timeval tv = tv_of(s->sweep_period_us);
	if (event_add(s->ev_listen, NULL) < 0 || event_add(s->ev_sweep, &tv) < 0)
		return log_oom();
	return 0;
}

struct api_server *api_server_free(struct api_server *s)
{
	if (!s)
		return NULL;
	while (s->conns)
		conn_free(s->conns);
	/* Passes still asked for: the manager will not call back (the loop has
	 * stopped), so forget them here. */
	while (s->waits)
		pass_wait_free(s->waits);
	if (s->ev_listen)
		event_free(s->ev_listen);
	if (s->ev_listen_retry)
		event_free(s->ev_listen_retry);
	if (s->ev_sweep)
		event_free(s->ev_sweep);
	if (s->listen_fd >= 0)
		close(s->listen_fd);
	if (s->own_socket && s->socket_path) {
		/* Only our own: another instance may have replaced it. */
		struct stat st;
		if (lstat(s->socket_path, &st) == 0 && st.st_dev == s->socket_dev && st.st_ino == s->socket_ino)
			(void)unlink(s->socket_path);
	}
	free(s->socket_path);
	free(s->uids);
	acct_json_buf_free(&s->text);
	free(s);
	return NULL;
}

void api_server_stats(const struct api_server *s, struct api_stats *ret)
{
	*ret = (struct api_stats){ 0 };
	if (!s)
		return;
	ret->connections = s->nr_conns;
	ret->connections_total = s->conns_total;
	ret->refused_total = s->refused_total;
}

void api_server_foreach_request_count(const struct api_server *s,
				      void (*fn)(const char *method, const char *result, uint64_t count, void *userdata),
				      void *userdata)
{
	if (!s)
		return;
	for (int i = 0; i < _M_MAX; i++)
		for (int r = 0; r < _RES_MAX; r++)
			if (s->requests[i][r])
				fn(methods[i].name, result_names[r], s->requests[i][r], userdata);
}
