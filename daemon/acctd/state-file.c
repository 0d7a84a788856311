/* state-file.c - --state-file: the ledger as JSON after every pass, written
 * by the state writer's thread (state-writer.h). A front end of the manager
 * (struct manager_frontend): it reads the manager, which never calls it. */
#include "state-file.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "basic/log.h"
#include "basic/time-util.h"
#include "basic/util.h"
#include "build-config.h"
#include "format/ledger-json.h"
#include "state-writer.h"
#include "status.h"

/* Passes over queued cgroups write the state file at most this often, so
 * that a storm of changes does not rewrite the whole ledger per change. */
#define STATE_FILE_EVENT_PERIOD_US 100000u

struct state_file {
	uint64_t event_us; /* when a pass over queued cgroups last wrote it */
};

/* The state file's "daemon" object: the Status() document (status.c) and
 * the figures only the state file has. NULL on -ENOMEM. */
static struct json_object *daemon_json(const struct manager *m)
{
	struct json_object *o = NULL;
	uint64_t cached;
	bool degraded;

	if (daemon_status_json(m, &o) < 0)
		return NULL;
	json_object_object_add(o, "passes", json_object_new_int64((int64_t)m->passes));
	acct_sampler_fd_stats(m->sampler, &cached, &degraded);
	json_object_object_add(o, "cached_descriptors", json_object_new_int64((int64_t)cached));
	json_object_object_add(o, "descriptors_degraded", json_object_new_boolean(degraded));
	return o;
}

/* The text of a json-c object without its closing brace ("{...", head) or
 * without its opening one ("...}", tail), to splice an array between them.
 * NULL on -ENOMEM. */
static char *object_text(struct json_object *o, bool head)
{
	const char *t = o ? json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE)
			  : NULL;
	size_t len = t ? strlen(t) : 0;
	if (len < 2)
		return NULL;
	return head ? strndup(t, len - 1) : strdup(t + 1);
}

/* --state-file: the whole ledger, tombstones included, replaced atomically
 * after every pass, by the state writer's thread (state-writer.h). The event
 * loop makes the small parts around the records, which read its own state,
 * as json-c objects; the writer puts the records' text between them. The
 * document is that of --dump (manager-pass.c) plus "daemon", on one line. */
static void write_state_file(struct manager *m, const struct acct_pass_report *rep)
{
	struct json_object *head = json_object_new_object(), *tail = json_object_new_object();
	if (head && tail) {
		json_object_object_add(head, "version", json_object_new_string(ACCTD_VERSION));
		json_object_object_add(head, "cgroup_mode",
				       json_object_new_string(acct_cgroup_mode_to_string(m->layout->mode)));
		json_object_object_add(head, "cgroup_root", acct_json_text(m->layout->root));
		json_object_object_add(tail, "pass", acct_pass_to_json(rep));
		json_object_object_add(tail, "reconciliation", acct_reconcile_to_json(&m->reconcile));
		json_object_object_add(tail, "daemon", daemon_json(m));
	}
	char *head_text = object_text(head, true), *tail_text = object_text(tail, false);
	json_object_put(head);
	json_object_put(tail);
	struct acct_cgroup **cgs = NULL;
	int n = acct_ledger_snapshot(m->ledger, true, &cgs);
	if (!head_text || !tail_text || n < 0) {
		free(head_text);
		free(tail_text);
		free(cgs);
		log_warning("Failed to build the state file (out of memory), skipping this pass's");
		return;
	}
	state_writer_submit(m->state_writer, head_text, tail_text, cgs, (size_t)n, acct_now_us());
}


static void on_pass(struct manager *m, const struct acct_pass_report *rep, void *userdata)
{
	struct state_file *f = userdata;

	if (!(rep->flags & ACCT_PASS_EVENT)) {
		write_state_file(m, rep);
		return;
	}
	/* The whole ledger, with the last full pass's figures. */
	uint64_t now = acct_now_us();
	if (now - f->event_us >= STATE_FILE_EVENT_PERIOD_US) {
		write_state_file(m, &m->last_fast);
		f->event_us = now;
	}
}

static void on_free(struct manager *m, void *userdata)
{
	free(userdata);
}

int state_file_add(struct manager *m)
{
	if (!m->source.state_file)
		return 0;
	struct state_file *f = calloc(1, sizeof(*f));
	if (!f)
		return -ENOMEM;
	struct manager_frontend fe = { .name = "state file", .userdata = f, .on_pass = on_pass, .on_free = on_free };
	int r = manager_add_frontend(m, &fe);
	if (r < 0)
		free(f);
	return r;
}
