/* charges-store.c - the charges' state file in the daemon: load at the start,
 * timed, synchronous and final writes (charges-store.h). The format is
 * lib/format/charges-state.h; the atomic, durable replacement
 * lib/basic/write-file.h. */
#include "charges-store.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "basic/log.h"
#include "basic/path.h"
#include "basic/time-util.h"
#include "basic/util.h"
#include "basic/write-file.h"
#include "config/config.h"
#include "core/charges.h"
#include "core/ledger.h"
#include "format/charges-state.h"
#include "format/ledger-json.h"
#include "manager.h"

/* A state file larger than this is not read (nor believed): 1,000 cgroups x
 * 2 resources take about 60 KiB. */
#define STATE_MAX_BYTES (256u << 20)

struct charges_store {
	char *path; /* NULL: no state directory, charges are not durable */
	bool idle;  /* no resource declared: the file is neither read nor written */
	struct event *ev_timer;
	char *last; /* the bytes of the last write that completed (or of the load) */
	size_t last_len;
	uint64_t writes, write_failures;
	int last_error;                  /* of the last write, 0 when it succeeded */
	uint64_t last_write_realtime_us; /* 0: none yet */
	uint64_t last_write_duration_us, max_write_duration_us;
	uint64_t last_snapshot_us; /* the snapshot and its serialisation, of the last sync */
	uint64_t loaded_cgroups; /* cgroups with charges loaded at the start (any resource) */
	char *set_aside;         /* where a damaged file went (NULL: none) */
	char reason[256];        /* why it was set aside */
	char dropped[256];       /* resources of the file dropped at the load ("" none) */
	struct charges_state slots; /* the loaded file's slots, until taken up */
	bool loaded;                /* a file was loaded */
};

static void charges_store_freep(struct charges_store **s)
{
	charges_store_free(*s);
}

/* ---- snapshot and write --------------------------------------------------- */

struct paths {
	char **v;
	size_t n, cap;
	int error;
};

static void collect(const char *path, const struct acct_charge_reading *r, void *userdata)
{
	struct paths *p = userdata;

	(void)r;
	if (p->error)
		return;
	if (p->n == p->cap) {
		size_t cap = MAX(p->cap * 2, (size_t)64);
		char **v = reallocarray(p->v, cap, sizeof(*v));
		if (!v) {
			p->error = -ENOMEM;
			return;
		}
		p->v = v;
		p->cap = cap;
	}
	if (!(p->v[p->n] = strdup(path)))
		p->error = -ENOMEM;
	else
		p->n++;
}

static void paths_clear(struct paths *p)
{
	for (size_t i = 0; i < p->n; i++)
		free(p->v[i]);
	free(p->v);
	*p = (struct paths){ 0 };
}

/* Every resource's charged cgroups with their own values, read precisely.
 * Charges of release_on_exit resources are connections' (api-charges.c): a
 * restart closes every connection, which releases them, so they are not
 * kept (docs/charges.md). Returns 0 or -ENOMEM. */
static int snapshot(struct manager *m, struct charges_state *ret)
{
	struct acct_charges *ch = m->charges;
	struct charges_state s = { 0 };
	int r = 0;

	for (size_t i = 0; r == 0 && i < acct_charges_nr_resources(ch); i++) {
		const struct acct_charges_resource *res = acct_charges_resource(ch, i);
		struct paths p = { 0 };
		size_t idx;

		r = charges_state_add_resource(&s, res->name, acct_resource_unit_to_string(res->unit), &idx);
		if (r < 0 || res->release_on_exit)
			continue;
		/* The paths first, the precise reads after: the callback runs
		 * under the engine's shared lock, which a read takes again. */
		(void)acct_charges_foreach(ch, i, collect, &p);
		r = p.error;
		for (size_t j = 0; r == 0 && j < p.n; j++) {
			struct acct_charge_reading rd;
			if (acct_charges_read_precise(ch, i, p.v[j], &rd) == 0 && rd.self.value != 0)
				r = charges_state_add_entry(&s, idx, p.v[j], rd.self.value);
		}
		paths_clear(&p);
	}
	/* The slots in systemd's descriptor store, with what of them the
	 * values above hold (read with them, no fold between). */
	for (size_t f = 0; r == 0 && f < m->nr_frontends; f++)
		if (m->frontends[f].charges_slots)
			r = m->frontends[f].charges_slots(m, &s, m->frontends[f].userdata);
	if (r < 0) {
		charges_state_clear(&s);
		return r == -EINVAL ? -ENOMEM : r;
	}
	*ret = s;
	return 0;
}

int charges_store_sync(struct charges_store *s, struct manager *m)
{
	struct charges_state st = { 0 };
	_cleanup_free_ char *buf = NULL;
	size_t len = 0;
	int r;

	if (!s || !s->path)
		return -EOPNOTSUPP;
	if (s->idle)
		return 0;
	uint64_t t0 = acct_now_us();
	r = snapshot(m, &st);
	if (r == 0)
		r = charges_state_serialise(&st, &buf, &len);
	charges_state_clear(&st);
	s->last_snapshot_us = acct_now_us() - t0;
	if (r < 0)
		return log_warning_errno(r, "Failed to snapshot the charges: %m");
	/* What the last completed write put there is durable already. */
	if (s->last && s->last_len == len && memcmp(s->last, buf, len) == 0)
		return 0;
	t0 = acct_now_us();
	r = write_file_durable_at(AT_FDCWD, s->path, buf, len, 0600);
	uint64_t took = acct_now_us() - t0;
	s->last_error = r;
	if (r < 0) {
		s->write_failures++;
		return log_warning_errno(r, "Failed to write the charges' state file %s: %m", s->path);
	}
	s->writes++;
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	s->last_write_realtime_us = (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
	s->last_write_duration_us = took;
	s->max_write_duration_us = MAX(s->max_write_duration_us, took);
	free(s->last);
	s->last = TAKE_PTR(buf);
	s->last_len = len;
	log_debug("Wrote the charges' state file %s (%zu bytes, %" PRIu64 " us)", s->path, len, took);
	return 0;
}

static void on_timer(evutil_socket_t fd, short what, void *userdata)
{
	struct manager *m = userdata;
	struct charges_store *s = m->charges_store;

	(void)fd;
	(void)what;
	(void)charges_store_sync(s, m); /* logged; the next tick tries again */
	/* Re-armed each time, so that a reload's interval applies at once. */
	struct timeval tv = timeval_from_usec(m->config->charge_sync_interval_us);
	event_add(s->ev_timer, &tv);
}

/* ---- load ------------------------------------------------------------------ */

/* The file's bytes into *ret (*ret_len), or -ENOENT, -EFBIG or the read's
 * negative errno. */
static int read_state(const char *path, char **ret, size_t *ret_len)
{
	_cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NOCTTY);
	struct stat st;

	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) < 0)
		return -errno;
	if (!S_ISREG(st.st_mode))
		return -EBADFD;
	if ((uint64_t)st.st_size > STATE_MAX_BYTES)
		return -EFBIG;
	_cleanup_free_ char *buf = malloc((size_t)st.st_size + 1);
	if (!buf)
		return -ENOMEM;
	size_t got = 0;
	while (got < (size_t)st.st_size) {
		ssize_t n = read(fd, buf + got, (size_t)st.st_size - got);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			break; /* shorter than it was: parsed as it is */
		got += (size_t)n;
	}
	buf[got] = '\0';
	*ret = TAKE_PTR(buf);
	*ret_len = got;
	return 0;
}

/* Move the damaged file aside (PATH.corrupt-YYYYmmddTHHMMSSZ) and report it. */
static void set_aside(struct charges_store *s, const char *why)
{
	char stamp[32];
	time_t now = time(NULL);
	struct tm tm;

	strftime(stamp, sizeof(stamp), "%Y%m%dT%H%M%SZ", gmtime_r(&now, &tm));
	snprintf(s->reason, sizeof(s->reason), "%s", why);
	free(s->set_aside);
	if (asprintf(&s->set_aside, "%s.corrupt-%s", s->path, stamp) < 0) {
		s->set_aside = NULL;
		log_error("The charges' state file %s is damaged (%s): starting with no charges", s->path, why);
		return;
	}
	if (rename(s->path, s->set_aside) < 0) {
		int e = -errno;
		free(s->set_aside);
		s->set_aside = NULL;
		log_error_errno(e, "The charges' state file %s is damaged (%s) and could not be set aside as %s "
					"(%m): starting with no charges; it will be replaced",
				s->path, why, s->set_aside);
		return;
	}
	log_error("The charges' state file %s is damaged (%s): set aside as %s, starting with no charges", s->path, why,
		  s->set_aside);
}

static bool tracked(struct manager *m, const char *path)
{
	rcu_read_lock();
	struct acct_cgroup *cg = acct_ledger_find(m->ledger, path);
	bool alive = cg && !acct_cgroup_is_dead(cg);
	rcu_read_unlock();
	return alive;
}

static void note_dropped(struct charges_store *s, const char *name, const char *why)
{
	size_t n = strlen(s->dropped);
	snprintf(s->dropped + n, sizeof(s->dropped) - n, "%s%s (%s)", n ? ", " : "", name, why);
}

/* Charge what st holds into the empty engine. All or nothing: on a failure
 * what was charged is taken back, and -ERANGE or -ENOMEM returned. */
static int apply_state(struct charges_store *s, struct manager *m, const struct charges_state *st)
{
	struct acct_charges *ch = m->charges;
	int r = 0;
	size_t i, j = 0;

	s->dropped[0] = '\0';
	for (i = 0; i < st->nr_resources; i++) {
		const struct charges_state_resource *fr = &st->resources[i];
		int idx = acct_charges_resource_index(ch, fr->name);
		if (idx < 0) {
			if (fr->nr_entries)
				note_dropped(s, fr->name, "no longer declared");
			continue;
		}
		const struct acct_charges_resource *res = acct_charges_resource(ch, (size_t)idx);
		if (strcmp(fr->unit, acct_resource_unit_to_string(res->unit)) != 0) {
			if (fr->nr_entries)
				note_dropped(s, fr->name, "its unit changed");
			continue;
		}
		if (res->release_on_exit) {
			if (fr->nr_entries)
				note_dropped(s, fr->name, "now released when a client exits");
			continue;
		}
		for (j = 0; j < fr->nr_entries; j++) {
			r = acct_charges_add(ch, (size_t)idx, fr->entries[j].path, fr->entries[j].value);
			if (r < 0)
				goto undo;
		}
	}
	return 0;
undo:
	/* Back to zero: take back entries [0, j) of resource i and all of the
	 * resources before it that were charged. */
	for (size_t k = i + 1; k-- > 0;) {
		const struct charges_state_resource *fr = &st->resources[k];
		int idx = acct_charges_resource_index(ch, fr->name);
		if (idx < 0)
			continue;
		const struct acct_charges_resource *res = acct_charges_resource(ch, (size_t)idx);
		if (strcmp(fr->unit, acct_resource_unit_to_string(res->unit)) != 0 || res->release_on_exit)
			continue;
		for (size_t e = k == i ? j : fr->nr_entries; e-- > 0;)
			(void)acct_charges_add(ch, (size_t)idx, fr->entries[e].path, -fr->entries[e].value);
	}
	return r;
}

/* Does every resource's charge at and below `path` sit in its own value
 * (nothing charged below it)? */
static bool only_self(struct acct_charges *ch, const char *path)
{
	for (size_t i = 0; i < acct_charges_nr_resources(ch); i++) {
		struct acct_charge_reading rd;
		if (acct_charges_read_precise(ch, i, path, &rd) == 0 && rd.self.value != rd.subtree.value)
			return false;
	}
	return true;
}

/* Charges of cgroups no longer tracked go by their resource's removal rule,
 * as for a removal seen while running (manager-records.c). A gone cgroup's
 * parent that is gone too (a subtree removed while acctd was stopped) is
 * removed in turn, so that reparented charges reach the nearest tracked
 * ancestor; not while something is charged below it (a tracked cgroup under
 * an untracked one, as [cgroups] include can make). */
static void apply_removals(struct manager *m, const struct charges_state *st)
{
	size_t removed = 0;

	for (size_t i = 0; i < st->nr_resources; i++)
		for (size_t j = 0; j < st->resources[i].nr_entries; j++) {
			char q[CGROUP_PATH_MAX + 1];
			snprintf(q, sizeof(q), "%s", st->resources[i].entries[j].path);
			if (strcmp(q, "/") == 0 || tracked(m, q))
				continue;
			if (acct_charges_remove(m->charges, q) > 0)
				removed++;
			for (char *slash; (slash = strrchr(q, '/')) && slash != q;) {
				*slash = '\0';
				if (tracked(m, q) || !only_self(m->charges, q))
					break;
				if (acct_charges_remove(m->charges, q) > 0)
					removed++;
			}
		}
	if (removed > 0)
		log_info("Charges of %zu cgroups that are gone since the last run went by their resources' removal rule",
			 removed);
}


static int compare_str_ptr(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* The cgroups a state file holds charges of, whatever resources: each once.
 * O(n log n) in its entries; 0 when out of memory (the figure only). */
static uint64_t distinct_cgroups(const struct charges_state *st)
{
	size_t n = 0, k = 0;
	for (size_t i = 0; i < st->nr_resources; i++)
		n += st->resources[i].nr_entries;
	_cleanup_free_ const char **paths = n ? malloc(n * sizeof(*paths)) : NULL;
	if (!paths)
		return 0;
	for (size_t i = 0; i < st->nr_resources; i++)
		for (size_t e = 0; e < st->resources[i].nr_entries; e++)
			paths[k++] = st->resources[i].entries[e].path;
	qsort(paths, n, sizeof(*paths), compare_str_ptr);
	uint64_t distinct = 0;
	for (size_t i = 0; i < n; i++)
		distinct += i == 0 || strcmp(paths[i - 1], paths[i]) != 0;
	return distinct;
}

static void load(struct charges_store *s, struct manager *m)
{
	_cleanup_free_ char *buf = NULL;
	struct charges_state st = { 0 };
	char why[200];
	size_t len = 0;
	int r;

	r = read_state(s->path, &buf, &len);
	if (r == -ENOENT) {
		log_info("No charges' state file at %s: starting with no charges", s->path);
		return;
	}
	if (r == -EFBIG || r == -EBADFD) {
		set_aside(s, r == -EFBIG ? "larger than any this acctd writes" : "not a regular file");
		return;
	}
	if (r < 0) {
		/* Unreadable (permissions, I/O): left where it is, but the first
		 * write replaces it, so say so loudly. */
		log_error_errno(r, "Failed to read the charges' state file %s, starting with no charges: %m", s->path);
		snprintf(s->reason, sizeof(s->reason), "unreadable: %s", strerror(-r));
		return;
	}
	r = charges_state_parse(buf, len, &st, why, sizeof(why));
	if (r == -ENOMEM) {
		log_oom();
		return;
	}
	if (r < 0) {
		set_aside(s, why);
		return;
	}
	r = apply_state(s, m, &st);
	if (r < 0) {
		set_aside(s, r == -ERANGE ? "its charges add up beyond -2^62..2^62" : "out of memory loading it");
		charges_state_clear(&st);
		return;
	}
	s->loaded_cgroups = distinct_cgroups(&st);
	if (s->dropped[0])
		log_warning("The charges' state file %s holds charges of resources dropped now: %s", s->path, s->dropped);
	apply_removals(m, &st);
	log_info("Loaded the charges of %" PRIu64 " cgroups from %s", s->loaded_cgroups, s->path);
	/* Its slots, for the API to take up (charges_store_loaded_slots()). */
	s->slots.slots = TAKE_PTR(st.slots);
	s->slots.nr_slots = st.nr_slots;
	s->slots.cap_slots = st.cap_slots;
	st.nr_slots = st.cap_slots = 0;
	s->loaded = true;
	/* What the file holds counts as written: an unchanged start does not
	 * rewrite it (a changed one differs and is written at the first tick). */
	s->last = TAKE_PTR(buf);
	s->last_len = len;
	charges_state_clear(&st);
}

int charges_store_start(struct manager *m, struct charges_store **ret)
{
	_cleanup_(charges_store_freep) struct charges_store *s = calloc(1, sizeof(*s));
	int r;

	if (!s)
		return -ENOMEM;
	/* [api] charge_state_path; unset or empty: the state directory's
	 * (-ENOENT: there is none). */
	const char *path = m->config->charge_state_path;
	if (path && *path)
		r = (s->path = strdup(path)) ? 0 : -ENOMEM;
	else
		r = acct_config_default_state_path("charges.state", &s->path);
	if (r == -ENOMEM)
		return r;
	if (r < 0) {
		log_warning("No state directory (STATE_DIRECTORY, HOME): charges will not survive a restart");
		*ret = TAKE_PTR(s);
		return 0;
	}
	/* No resource declared: nothing can be charged, and a file of an
	 * earlier configuration stays as it is for a start that declares its
	 * resources again. */
	if (acct_charges_nr_resources(m->charges) == 0) {
		s->idle = true;
		*ret = TAKE_PTR(s);
		return 0;
	}
	/* The state directory itself, as for the history (one level: its
	 * parent is the system's or the user's). */
	_cleanup_free_ char *dir = strndup(s->path, (size_t)(strrchr(s->path, '/') - s->path));
	if (!dir)
		return -ENOMEM;
	if (mkdir(dir, 0700) < 0 && errno != EEXIST)
		log_warning_errno(-errno, "Failed to create the state directory %s, ignoring: %m", dir);
	(void)write_file_remove_stale_at(AT_FDCWD, s->path);
	load(s, m);
	s->ev_timer = event_new(m->base, -1, 0, on_timer, m);
	if (!s->ev_timer)
		return -ENOMEM;
	struct timeval tv = timeval_from_usec(m->config->charge_sync_interval_us);
	event_add(s->ev_timer, &tv);
	*ret = TAKE_PTR(s);
	return 0;
}

void charges_store_stop(struct charges_store *s, struct manager *m)
{
	if (!s)
		return;
	if (s->ev_timer)
		event_del(s->ev_timer);
	if (s->path && !s->idle && charges_store_sync(s, m) == 0)
		log_info("Saved the charges to %s", s->path);
}

const struct charges_state *charges_store_loaded_slots(const struct charges_store *s)
{
	return s && s->loaded ? &s->slots : NULL;
}

void charges_store_forget_slots(struct charges_store *s)
{
	if (s)
		charges_state_clear(&s->slots);
}

struct charges_store *charges_store_free(struct charges_store *s)
{
	if (!s)
		return NULL;
	charges_state_clear(&s->slots);
	if (s->ev_timer)
		event_free(s->ev_timer);
	free(s->path);
	free(s->last);
	free(s->set_aside);
	free(s);
	return NULL;
}

struct json_object *charges_store_status_json(const struct charges_store *s)
{
	if (!s)
		return NULL;
	struct json_object *o = json_object_new_object();
	if (!o)
		return NULL;
	json_object_object_add(o, "durable", json_object_new_boolean(s->path != NULL));
	json_object_object_add(o, "path", s->path ? acct_json_text(s->path) : NULL);
	json_object_object_add(o, "loaded_cgroups", json_object_new_int64((int64_t)s->loaded_cgroups));
	json_object_object_add(o, "set_aside", s->set_aside ? acct_json_text(s->set_aside) : NULL);
	json_object_object_add(o, "load_error", s->reason[0] ? acct_json_text(s->reason) : NULL);
	json_object_object_add(o, "dropped", s->dropped[0] ? acct_json_text(s->dropped) : NULL);
	json_object_object_add(o, "writes", json_object_new_int64((int64_t)s->writes));
	json_object_object_add(o, "write_failures", json_object_new_int64((int64_t)s->write_failures));
	json_object_object_add(o, "last_error", s->last_error ? json_object_new_string(strerror(-s->last_error)) : NULL);
	json_object_object_add(o, "last_write_us",
			       s->last_write_realtime_us ? json_object_new_int64((int64_t)s->last_write_realtime_us) : NULL);
	json_object_object_add(o, "last_write_duration_us", json_object_new_int64((int64_t)s->last_write_duration_us));
	json_object_object_add(o, "max_write_duration_us", json_object_new_int64((int64_t)s->max_write_duration_us));
	json_object_object_add(o, "last_snapshot_us", json_object_new_int64((int64_t)s->last_snapshot_us));
	return o;
}
