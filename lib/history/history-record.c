/* history-record.c - recording (history-store.h): the runs (the one an
 * open starts, a new one after a stall), change-only points with the
 * in-memory index of this run's lives, and the accounting record of a
 * removed cgroup. Each call is one transaction. Calls history-rows.c (a
 * removed life's totals) and history-sql.c. */
#include "history-record.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "basic/util.h"
#include "history-rows.h"
#include "history-sql.h"

/* Inside a transaction: a new run of this boot from now_us (its id in
 * *ret_run). Returns 0 or a negative errno with *ret_error (`what` says when). */
static int insert_run(struct history_store *s, uint64_t now_us, const char *what, int64_t *ret_run, char **ret_error)
{
	_cleanup_finalize_ sqlite3_stmt *ins = NULL;
	int r = history_prepare(s, "INSERT INTO runs (boot_id, started_us, last_us, interval_us, max_step_us) VALUES (?, ?, ?, ?, 0)",
				&ins, ret_error);
	if (r < 0)
		return r;
	sqlite3_bind_text(ins, 1, s->boot_id, -1, SQLITE_STATIC);
	sqlite3_bind_int64(ins, 2, (int64_t)now_us);
	sqlite3_bind_int64(ins, 3, (int64_t)now_us);
	sqlite3_bind_int64(ins, 4, (int64_t)s->interval_us);
	int rc = sqlite3_step(ins);
	if (rc != SQLITE_DONE)
		return history_sqlite_error(s->db, rc, what, ret_error);
	*ret_run = sqlite3_last_insert_rowid(s->db);
	return 0;
}

int history_run_start(struct history_store *s, uint64_t now_us, char **ret_error)
{
	int r = history_exec(s, "BEGIN IMMEDIATE", "starting a run", ret_error);
	if (r < 0)
		return r;
	_cleanup_finalize_ sqlite3_stmt *lives = NULL, *prev = NULL;
	r = history_exec(s, "UPDATE runs SET ended_us = last_us WHERE ended_us IS NULL", "starting a run", ret_error);
	if (r < 0)
		goto fail;
	r = history_prepare(s,
			    "UPDATE lives SET removed_us = (SELECT max(last_us) FROM runs WHERE runs.boot_id = lives.boot_id)"
			    " WHERE removed_us IS NULL AND boot_id != ?",
			    &lives, ret_error);
	if (r < 0)
		goto fail;
	sqlite3_bind_text(lives, 1, s->boot_id, -1, SQLITE_STATIC);
	int rc = sqlite3_step(lives);
	if (rc != SQLITE_DONE) {
		r = history_sqlite_error(s->db, rc, "starting a run", ret_error);
		goto fail;
	}
	r = history_prepare(s, "SELECT max(last_us) FROM runs WHERE boot_id = ?", &prev, ret_error);
	if (r < 0)
		goto fail;
	sqlite3_bind_text(prev, 1, s->boot_id, -1, SQLITE_STATIC);
	rc = sqlite3_step(prev);
	if (rc != SQLITE_ROW) {
		r = history_sqlite_error(s->db, rc, "starting a run", ret_error);
		goto fail;
	}
	s->prev_run_end_us = (uint64_t)sqlite3_column_int64(prev, 0);
	r = insert_run(s, now_us, "starting a run", &s->run, ret_error);
	if (r < 0)
		goto fail;
	r = history_exec(s, "COMMIT", "starting a run", ret_error);
	if (r < 0)
		goto fail;
	s->started_us = s->last_us = s->run_last_us = now_us;
	return 0;
fail:
	history_rollback(s);
	return r;
}

/* After a stall (HISTORY_STALL_INTERVALS): end the run at its last
 * recording and start a new one at now_us, as a restart would, but keeping
 * the index (the lives continue: nobody removed them, and the removals
 * acctd saw meanwhile come through history_store_removed()). Every life
 * gets a point at the new run's first recording, which begins its data
 * after the gap. Returns 0 when there was no stall, 1 when a new run was
 * started, or a negative errno (nothing changed). */
static int split_if_stalled(struct history_store *s, uint64_t now_us, char **ret_error)
{
	if (s->recordings == 0 || now_us <= s->run_last_us ||
	    now_us - s->run_last_us <= HISTORY_STALL_INTERVALS * s->interval_us)
		return 0;
	_cleanup_finalize_ sqlite3_stmt *end = NULL;
	int r = history_prepare(s, "UPDATE runs SET ended_us = last_us WHERE id = ?", &end, ret_error);
	if (r < 0)
		return r;
	r = history_exec(s, "BEGIN IMMEDIATE", "ending a stalled run", ret_error);
	if (r < 0)
		return r;
	sqlite3_bind_int64(end, 1, s->run);
	int64_t run = 0;
	int rc = sqlite3_step(end);
	r = rc == SQLITE_DONE ? insert_run(s, now_us, "ending a stalled run", &run, ret_error)
			      : history_sqlite_error(s->db, rc, "ending a stalled run", ret_error);
	if (r < 0) {
		history_rollback(s);
		return r;
	}
	r = history_exec(s, "COMMIT", "ending a stalled run", ret_error);
	if (r < 0) {
		history_rollback(s);
		return r;
	}
	s->run = run;
	s->run_last_us = s->last_us = MAX(s->last_us, now_us);
	for (size_t i = 0; i < ptr_table_capacity(&s->index.lives); i++) {
		struct history_life *l = ptr_table_at(&s->index.lives, i);
		if (l) {
			l->pointed = false;
			l->last_point_us = 0;
		}
	}
	return 1;
}

static bool values_equal(const struct history_values *a, const struct history_values *b)
{
	return a->cpu_usec == b->cpu_usec && a->memory_bytes == b->memory_bytes &&
	       a->memory_peak_bytes == b->memory_peak_bytes && a->io_read_bytes == b->io_read_bytes &&
	       a->io_write_bytes == b->io_write_bytes && a->tasks == b->tasks;
}

static int insert_point(struct history_store *s, sqlite3_stmt *st, int64_t life, uint64_t t_us,
			const struct history_values *v, char **ret_error)
{
	sqlite3_reset(st);
	sqlite3_bind_int64(st, 1, life);
	sqlite3_bind_int64(st, 2, (int64_t)t_us);
	sqlite3_bind_int64(st, 3, s->run);
	history_bind_value(st, 4, v->cpu_usec);
	history_bind_value(st, 5, v->memory_bytes);
	history_bind_value(st, 6, v->memory_peak_bytes);
	history_bind_value(st, 7, v->io_read_bytes);
	history_bind_value(st, 8, v->io_write_bytes);
	history_bind_value(st, 9, v->tasks);
	int rc = sqlite3_step(st);
	sqlite3_reset(st);
	return rc == SQLITE_DONE ? 0 : history_sqlite_error(s->db, rc, "recording", ret_error);
}

#define INSERT_POINT_SQL                                                                                       \
	"INSERT OR REPLACE INTO points (life, t_us, run, cpu_usec, memory_bytes, memory_peak_bytes, io_read_bytes," \
	" io_write_bytes, tasks) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)"

/* What a recording changes in the index, applied once it has committed. */
struct pending {
	struct history_life *life;
	const struct history_values *v;
};

/* Mark the lives recording `gen` named as not named: after a recording that
 * failed, or named only some, the next whole one names them anew. */
static void forget_seen(struct history_index *x, uint64_t gen)
{
	for (size_t i = 0; i < ptr_table_capacity(&x->lives); i++) {
		struct history_life *l = ptr_table_at(&x->lives, i);
		if (l && l->seen == gen)
			l->seen = 0;
	}
}

/* history_store_record(), and with !whole the lives named only: the run's
 * last recording stays, and no life goes for not being named. */
static int record_samples(struct history_store *s, uint64_t now_us, const struct history_sample *samples, size_t n,
			  bool whole, char **ret_error)
{
	if (s->readonly)
		return -EROFS;
	int r = whole ? split_if_stalled(s, now_us, ret_error) : 0;
	if (r < 0)
		return r;
	_cleanup_free_ struct pending *pending = calloc(n ? n : 1, sizeof(*pending));
	_cleanup_free_ struct history_life **created_lives = calloc(n ? n : 1, sizeof(*created_lives));
	if (!pending || !created_lives)
		return -ENOMEM;
	size_t n_pending = 0, n_created = 0;
	uint64_t gen = s->recordings + 1;
	sqlite3_stmt *ins_point, *ins_life, *upd_run;
	_cleanup_finalize_ sqlite3_stmt *end_life = NULL;
	r = history_stmt(s, HISTORY_STMT_INSERT_POINT, INSERT_POINT_SQL, &ins_point, ret_error);
	if (r >= 0)
		r = history_stmt(s, HISTORY_STMT_INSERT_LIFE,
				 "INSERT INTO lives (path, boot_id, inode, first_seen_us, from_zero, base_cpu_usec,"
				 " base_io_read_bytes, base_io_write_bytes, born_after_us) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
				 &ins_life,
				 ret_error);
	if (r >= 0)
		r = history_stmt(s, HISTORY_STMT_UPDATE_RUN,
				 "UPDATE runs SET last_us = ?1, max_step_us = max(max_step_us, ?1 - last_us) WHERE id = ?2",
				 &upd_run, ret_error);
	if (r >= 0 && whole && s->recordings == 0)
		r = history_prepare(s, "UPDATE lives SET removed_us = ? WHERE id = ?", &end_life, ret_error);
	if (r < 0)
		return r;
	r = history_exec(s, "BEGIN IMMEDIATE", "recording", ret_error);
	if (r < 0)
		return r;
	int rc;
	for (size_t i = 0; i < n; i++) {
		const struct history_sample *smp = &samples[i];
		struct history_life *l = history_index_get(&s->index, smp->key.path, smp->key.inode);
		bool created = false;
		if (!l) {
			sqlite3_reset(ins_life);
			sqlite3_bind_text(ins_life, 1, smp->key.path, -1, SQLITE_STATIC);
			sqlite3_bind_text(ins_life, 2, s->boot_id, -1, SQLITE_STATIC);
			sqlite3_bind_int64(ins_life, 3, (int64_t)smp->key.inode);
			sqlite3_bind_int64(ins_life, 4, (int64_t)now_us);
			sqlite3_bind_int(ins_life, 5, smp->created_seen);
			history_bind_value(ins_life, 6, smp->v.cpu_usec);
			history_bind_value(ins_life, 7, smp->v.io_read_bytes);
			history_bind_value(ins_life, 8, smp->v.io_write_bytes);
			/* Not in the last run of this boot, which recorded every
			 * cgroup there was at its last recording: created since. */
			if (!smp->created_seen && s->prev_run_end_us > 0 && s->prev_run_end_us <= now_us)
				sqlite3_bind_int64(ins_life, 9, (int64_t)s->prev_run_end_us);
			else
				sqlite3_bind_null(ins_life, 9);
			rc = sqlite3_step(ins_life);
			if (rc != SQLITE_DONE) {
				r = history_sqlite_error(s->db, rc, "recording", ret_error);
				goto fail;
			}
			l = calloc(1, sizeof(*l));
			if (l) {
				l->id = sqlite3_last_insert_rowid(s->db);
				l->inode = smp->key.inode;
				l->first_seen_us = now_us;
			}
			if (!l || !(l->path = strdup(smp->key.path)) || history_index_add(&s->index, l) < 0) {
				history_life_free(l);
				r = -ENOMEM;
				goto fail;
			}
			created = true;
			created_lives[n_created++] = l;
		} else if (l->seen == gen)
			continue; /* named twice: the first counts */
		l->seen = gen;
		if (created || !l->pointed || !values_equal(&l->last, &smp->v)) {
			r = insert_point(s, ins_point, l->id, now_us, &smp->v, ret_error);
			if (r < 0)
				goto fail;
			pending[n_pending++] = (struct pending){ .life = l, .v = &smp->v };
		}
	}
	/* The first recording of a run ends the lives of the last run that are
	 * gone (removed while acctd was down): at the end of the run of their
	 * last point, the last time they were known to exist. */
	if (whole && s->recordings == 0)
		for (size_t i = 0; i < ptr_table_capacity(&s->index.lives); i++) {
			struct history_life *l = ptr_table_at(&s->index.lives, i);
			if (!l || l->seen == gen)
				continue;
			sqlite3_reset(end_life);
			sqlite3_bind_int64(end_life, 1, (int64_t)s->prev_run_end_us);
			sqlite3_bind_int64(end_life, 2, l->id);
			rc = sqlite3_step(end_life);
			if (rc != SQLITE_DONE) {
				r = history_sqlite_error(s->db, rc, "recording", ret_error);
				goto fail;
			}
		}
	if (whole) {
		sqlite3_bind_int64(upd_run, 1, (int64_t)now_us);
		sqlite3_bind_int64(upd_run, 2, s->run);
		rc = sqlite3_step(upd_run);
		if (rc != SQLITE_DONE) {
			r = history_sqlite_error(s->db, rc, "recording", ret_error);
			goto fail;
		}
		sqlite3_reset(upd_run);
	}
	r = history_exec(s, "COMMIT", "recording", ret_error);
	if (r < 0)
		goto fail;

	for (size_t i = 0; i < n_pending; i++) {
		pending[i].life->last = *pending[i].v;
		pending[i].life->has_last = pending[i].life->pointed = true;
		pending[i].life->run = s->run;
		pending[i].life->last_point_us = now_us;
	}
	if (!whole) {
		/* the next whole recording names them anew */
		forget_seen(&s->index, gen);
		return 0;
	}
	if (s->recordings == 0)
		for (size_t i = 0; i < ptr_table_capacity(&s->index.lives);) {
			struct history_life *l = ptr_table_at(&s->index.lives, i);
			if (l && l->seen != gen) {
				history_index_remove(&s->index, l);
				history_life_free(l);
				continue; /* the slot may hold a shifted entry now */
			}
			i++;
		}
	s->recordings++;
	s->last_us = now_us;
	s->run_last_us = now_us;
	return 0;
fail:
	history_rollback(s);
	/* Lives created in the failed transaction do not exist. */
	for (size_t i = 0; i < n_created; i++) {
		history_index_remove(&s->index, created_lives[i]);
		history_life_free(created_lives[i]);
	}
	/* The next recording compares against the same last points. */
	forget_seen(&s->index, gen);
	return r;
}

void history_record_clear(struct history_record *r)
{
	free(r->path);
	r->path = NULL;
}

/* The field of `final` where it is known, else the life's last value. */
static int64_t known(int64_t v, int64_t last)
{
	return v != HISTORY_UNKNOWN ? v : last;
}

int history_store_removed(struct history_store *s, const struct history_key *key, const struct history_values *final,
			  int64_t final_cpu_usec_bound, uint64_t now_us, struct history_record *ret, char **ret_error)
{
	if (s->readonly)
		return -EROFS;
	/* A removal after a stall: its final point begins the new run, so
	 * that the life's values are not held over the stall up to it. */
	int r = split_if_stalled(s, now_us, ret_error);
	if (r < 0)
		return r;
	struct history_life *l = history_index_get(&s->index, key->path, key->inode);
	if (!l) {
		history_set_error(ret_error, "%s: no life of it in the history", key->path);
		return -ENOENT;
	}
	struct history_values v = *final;
	if (l->has_last) {
		v.cpu_usec = known(v.cpu_usec, l->last.cpu_usec);
		v.memory_bytes = known(v.memory_bytes, l->last.memory_bytes);
		v.memory_peak_bytes = known(v.memory_peak_bytes, l->last.memory_peak_bytes);
		v.io_read_bytes = known(v.io_read_bytes, l->last.io_read_bytes);
		v.io_write_bytes = known(v.io_write_bytes, l->last.io_write_bytes);
		v.tasks = known(v.tasks, l->last.tasks);
	}
	/* The final point holds for no time: it is where the life ends. */
	if (now_us < l->first_seen_us)
		now_us = l->first_seen_us;
	_cleanup_finalize_ sqlite3_stmt *ins = NULL, *upd = NULL;
	r = history_prepare(s, INSERT_POINT_SQL, &ins, ret_error);
	if (r >= 0)
		r = history_prepare(s,
				    "UPDATE lives SET removed_us = ?, rec_cpu_usec = ?, rec_memory_peak_bytes = ?,"
				    " rec_memory_byte_seconds = ?, rec_memory_byte_seconds_bound = ?, rec_io_read_bytes = ?,"
				    " rec_io_write_bytes = ?, rec_recorded_us = ?, final_cpu_usec_bound = ? WHERE id = ?",
				    &upd, ret_error);
	if (r < 0)
		return r;
	r = history_exec(s, "BEGIN IMMEDIATE", "recording a removal", ret_error);
	if (r < 0)
		return r;
	r = insert_point(s, ins, l->id, now_us, &v, ret_error);
	if (r < 0)
		goto fail;
	/* The run's last recording stays where it is: a removal observes
	 * this life only, and moving the run's end to it would stretch every
	 * other life's held values over time nobody recorded (history_tail_end()
	 * takes a life's values to its final point). */
	struct history_life_totals t;
	r = history_life_totals(s, l->id, l->first_seen_us, now_us + 1, now_us, &t, ret_error);
	if (r < 0)
		goto fail;
	struct history_record rec = {
		.first_seen_us = l->first_seen_us,
		.removed_us = now_us,
		.cpu_usec = v.cpu_usec,
		.cpu_usec_bound = v.cpu_usec != HISTORY_UNKNOWN ? MAX(final_cpu_usec_bound, (int64_t)0) : 0,
		.memory_peak_bytes = v.memory_peak_bytes != HISTORY_UNKNOWN ? v.memory_peak_bytes : t.memory_max,
		.memory_byte_seconds = t.memory_integral / 1e6,
		.memory_byte_seconds_bound = t.memory_bound / 1e6,
		.io_read_bytes = v.io_read_bytes,
		.io_write_bytes = v.io_write_bytes,
		.recorded_us = t.recorded_us,
	};
	sqlite3_bind_int64(upd, 1, (int64_t)now_us);
	history_bind_value(upd, 2, rec.cpu_usec);
	history_bind_value(upd, 3, rec.memory_peak_bytes);
	sqlite3_bind_double(upd, 4, rec.memory_byte_seconds);
	sqlite3_bind_double(upd, 5, rec.memory_byte_seconds_bound);
	history_bind_value(upd, 6, rec.io_read_bytes);
	history_bind_value(upd, 7, rec.io_write_bytes);
	sqlite3_bind_int64(upd, 8, (int64_t)rec.recorded_us);
	if (rec.cpu_usec_bound > 0)
		sqlite3_bind_int64(upd, 9, rec.cpu_usec_bound);
	else
		sqlite3_bind_null(upd, 9);
	sqlite3_bind_int64(upd, 10, l->id);
	int rc = sqlite3_step(upd);
	if (rc != SQLITE_DONE) {
		r = history_sqlite_error(s->db, rc, "recording a removal", ret_error);
		goto fail;
	}
	r = history_exec(s, "COMMIT", "recording a removal", ret_error);
	if (r < 0)
		goto fail;
	s->last_us = MAX(s->last_us, now_us);
	struct history_removed_life *m = reallocarray(s->removed, s->n_removed + 1, sizeof(*s->removed));
	if (m) {
		s->removed = m;
		s->removed[s->n_removed++] = (struct history_removed_life){ l->id, now_us };
	} else
		s->started_us = UINT64_MAX; /* the rollups then visit every life */
	history_index_remove(&s->index, l);
	/* history_index_remove() hashes the path: it is taken only now. */
	rec.path = TAKE_PTR(l->path);
	history_life_free(l);
	*ret = rec;
	return 0;
fail:
	history_rollback(s);
	return r;
}

int history_store_record(struct history_store *s, uint64_t now_us, const struct history_sample *samples, size_t n,
			 char **ret_error)
{
	return record_samples(s, now_us, samples, n, true, ret_error);
}

int history_store_removed_unrecorded(struct history_store *s, const struct history_sample *final,
				     int64_t final_cpu_usec_bound, uint64_t now_us, struct history_record *ret,
				     char **ret_error)
{
	int r = split_if_stalled(s, now_us, ret_error); /* its one point in the new run */
	if (r < 0)
		return r;
	if (history_index_get(&s->index, final->key.path, final->key.inode))
		return history_store_removed(s, &final->key, &final->v, final_cpu_usec_bound, now_us, ret, ret_error);
	r = record_samples(s, now_us, final, 1, false, ret_error);
	if (r < 0)
		return r;
	return history_store_removed(s, &final->key, &final->v, final_cpu_usec_bound, now_us, ret, ret_error);
}
