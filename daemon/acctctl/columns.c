/* columns.c - the columns of list and top (see columns.h). */
#include "columns.h"

#include <errno.h>
#include <string.h>
#include <strings.h>

#include "ctl-util.h"
#include "human.h"
#include "options.h"

/* Per column: its field name for -o, header, table flags, the CgroupSummary
 * member (and, for the PSI, the member of psi_some_avg10) behind it, and its
 * line in --output=help. AGE stands for the memory reading's age (the CPU
 * rate's where a cgroup has no memory figure), so both are behind it. */
static const struct column_info {
	const char *name, *header;
	unsigned flags;
	const char *member, *member2, *sub;
	const char *help;
} infos[_COLUMN_MAX] = {
	[COLUMN_CGROUP] = { "cgroup", "CGROUP", COL_ELLIPSIZE, "path", NULL, NULL,
			    "the path (--tree: the name below its parent); alias \"path\"" },
	[COLUMN_STATE] = { "state", "STATE", 0, "state", NULL, NULL, "live, or dead (a tombstone, with --all)" },
	[COLUMN_MEMORY] = { "memory", "MEMORY", COL_RIGHT, "memory", NULL, NULL, "memory in use, bytes" },
	[COLUMN_BOUND] = { "bound", "", COL_RIGHT | COL_TIGHT, "memory", NULL, NULL,
			   "the memory reading's error bound (+-N), right after MEMORY" },
	[COLUMN_CPU] = { "cpu", "CPU", COL_RIGHT, "cpu_rate", NULL, NULL, "CPU rate in cores (1.00: one CPU busy)" },
	[COLUMN_LOAD] = { "load", "LOAD", COL_RIGHT, "load1", "load1_warming", NULL,
			  "load average over 1 minute (~: warming up, reads low)" },
	[COLUMN_PSI_CPU] = { "psi-cpu", "PSI-CPU", COL_RIGHT, "psi_some_avg10", NULL, "cpu",
			     "CPU pressure, \"some\" avg10, %" },
	[COLUMN_PSI_MEM] = { "psi-mem", "PSI-MEM", COL_RIGHT, "psi_some_avg10", NULL, "memory",
			     "memory pressure, \"some\" avg10, %" },
	[COLUMN_PSI_IO] = { "psi-io", "PSI-IO", COL_RIGHT, "psi_some_avg10", NULL, "io",
			    "I/O pressure, \"some\" avg10, %" },
	[COLUMN_TASKS] = { "tasks", "TASKS", COL_RIGHT, "tasks", NULL, NULL,
			   "threads in the cgroup and below it (systemd-cgtop's Tasks)" },
	[COLUMN_READ_RATE] = { "read/s", "READ/s", COL_RIGHT, "io_read_bytes_rate", NULL, NULL,
			       "bytes read per second (systemd-cgtop's Input/s)" },
	[COLUMN_WRITE_RATE] = { "write/s", "WRITE/s", COL_RIGHT, "io_write_bytes_rate", NULL, NULL,
				"bytes written per second (systemd-cgtop's Output/s)" },
	[COLUMN_READ] = { "read", "READ", COL_RIGHT, "io_read_bytes", NULL, NULL,
			  "bytes read in total (block I/O, as READ/s)" },
	[COLUMN_WRITE] = { "write", "WRITE", COL_RIGHT, "io_write_bytes", NULL, NULL,
			   "bytes written in total (block I/O, as WRITE/s)" },
	[COLUMN_AGE] = { "age", "AGE", COL_RIGHT, "memory", "cpu_rate", NULL,
			 "age of the memory reading (of the CPU rate without one)" },
	[COLUMN_CHARGE] = { "charge", "CHARGE", COL_RIGHT, "charges", NULL, NULL,
			    "list --charge=NAME: what programs charged of NAME to the cgroup and below" },
	[COLUMN_CHARGE_BOUND] = { "charge-bound", "", COL_RIGHT | COL_TIGHT, "charges", NULL, NULL,
				  "that value's error bound (+-N), right after it" },
};

/* The default, in its order; STATE is left out unless asked for. */
static const enum column defaults[] = {
	COLUMN_CGROUP,	COLUMN_STATE,  COLUMN_MEMORY, COLUMN_BOUND,	 COLUMN_CPU,	     COLUMN_LOAD, COLUMN_PSI_CPU,
	COLUMN_PSI_MEM, COLUMN_PSI_IO, COLUMN_TASKS,  COLUMN_READ_RATE, COLUMN_WRITE_RATE, COLUMN_AGE,
};

static void columns_add(struct columns *c, enum column col)
{
	c->v[c->n] = col;
	c->headers[c->n] = infos[col].header;
	c->flags[c->n] = infos[col].flags;
	c->n++;
}

int columns_append(struct columns *c, enum column which)
{
	if (c->n == COLUMNS_MAX)
		return -E2BIG;
	columns_add(c, which);
	return 0;
}

void columns_set_header(struct columns *c, enum column which, const char *header)
{
	for (size_t i = 0; i < c->n; i++)
		if (c->v[i] == which)
			c->headers[i] = header;
}

static int column_from_name(const char *s, size_t len)
{
	if (len == 4 && strncasecmp(s, "path", 4) == 0)
		return COLUMN_CGROUP;
	for (size_t i = 0; i < _COLUMN_MAX; i++)
		if (strlen(infos[i].name) == len && strncasecmp(s, infos[i].name, len) == 0)
			return (int)i;
	return -ENOENT;
}

int columns_parse(const char *s, struct columns *ret, const char **ret_bad)
{
	struct columns c = { .given = true };

	for (const char *p = s;;) {
		size_t len = strcspn(p, ",");
		int col = column_from_name(p, len);

		if (col < 0) {
			*ret_bad = p;
			return -EINVAL;
		}
		if (c.n == COLUMNS_MAX)
			return -E2BIG;
		columns_add(&c, (enum column)col);
		if (!p[len])
			break;
		p += len + 1;
	}
	*ret = c;
	return 0;
}

const char *columns_names(void)
{
	static char names[256];

	if (!names[0])
		for (size_t i = 0; i < _COLUMN_MAX; i++) {
			size_t n = strlen(names);
			snprintf(names + n, sizeof(names) - n, "%s%s", i ? ", " : "", infos[i].name);
		}
	return names;
}

void columns_help(FILE *f)
{
	fputs("Fields of -o/--output=FIELD[,FIELD...] (in any case), with their headers:\n", f);
	for (size_t i = 0; i < _COLUMN_MAX; i++) {
		/* a name wider than its column has a line of its own, as a long
		 * option has in the help, and the rest stays in line below it */
		if (strlen(infos[i].name) > 9)
			fprintf(f, "  %s\n%12s", infos[i].name, "");
		else
			fprintf(f, "  %-9s ", infos[i].name);
		fprintf(f, "%-8s %s\n", infos[i].header[0] ? infos[i].header : "(none)", infos[i].help);
	}
}

void columns_default(struct columns *c, bool state)
{
	*c = (struct columns){ 0 };
	for (size_t i = 0; i < ELEMENTSOF(defaults); i++)
		if (defaults[i] != COLUMN_STATE || state)
			columns_add(c, defaults[i]);
}

void columns_table_init(const struct columns *c, struct table *t)
{
	table_init(t, c->n, c->headers, c->flags);
}

static char *psi_cell(struct table *t, const struct row *r, int i)
{
	return r->has_psi[i] ? cell_fmt(t, "%.2f%%", r->psi[i]) : cell_str(t, "-");
}

static char *bytes_cell(struct table *t, bool set, int64_t v)
{
	return cell_str(t, set ? fmt_bytes(v).s : "-");
}

/* v of the charged resource: in the columns' unit for it, an integer when not known. */
static struct fbuf charge_text(const struct columns *c, int64_t v)
{
	return c->charge_unit >= 0 ? fmt_unit((enum acct_unit)c->charge_unit, v) : fmt_int(v);
}

static char *column_cell(const struct columns *c, struct table *t, const struct row *r, enum column col, char *name)
{
	int64_t age;

	switch (col) {
	case COLUMN_CGROUP:
		return name;
	case COLUMN_STATE:
		return cell_str(t, r->dead ? "dead" : "live");
	case COLUMN_MEMORY:
		return bytes_cell(t, r->mem.set, r->mem.value);
	case COLUMN_BOUND:
		return r->mem.set && r->mem.bound > 0 ? cell_fmt(t, "%s%s", glyph(G_PLUSMINUS), fmt_bytes(r->mem.bound).s)
						      : cell_str(t, "");
	case COLUMN_CPU:
		return cell_str(t, r->has_cpu ? fmt_2f(r->cpu).s : "-");
	case COLUMN_LOAD:
		/* "~": still warming up (list's footer and acctctl(1) say so);
		 * not without the legend, whose fields are for scripts (--json
		 * has load1_warming) */
		return r->has_load ? cell_fmt(t, "%s%s", fmt_2f(r->load).s, r->load_warming && arg_legend ? "~" : "")
				   : cell_str(t, "-");
	case COLUMN_PSI_CPU:
		return psi_cell(t, r, 0);
	case COLUMN_PSI_MEM:
		return psi_cell(t, r, 1);
	case COLUMN_PSI_IO:
		return psi_cell(t, r, 2);
	case COLUMN_TASKS:
		return cell_str(t, r->tasks.set ? fmt_int(r->tasks.value).s : "-");
	case COLUMN_READ_RATE:
		return bytes_cell(t, r->has_io, (int64_t)(r->io_read + 0.5));
	case COLUMN_WRITE_RATE:
		return bytes_cell(t, r->has_io, (int64_t)(r->io_write + 0.5));
	case COLUMN_READ:
		return bytes_cell(t, r->io_read_total.set, r->io_read_total.value);
	case COLUMN_WRITE:
		return bytes_cell(t, r->io_write_total.set, r->io_write_total.value);
	case COLUMN_AGE:
		age = r->mem.set ? r->mem.age_us : r->cpu_age;
		return cell_str(t, age >= 0 ? fmt_age(age).s : "-");
	case COLUMN_CHARGE:
		/* List leaves charges out where nothing was charged at or
		 * below the cgroup: a declared resource's 0, not a value
		 * never read */
		return cell_str(t, charge_text(c, r->charge.set ? r->charge.value : 0).s);
	case COLUMN_CHARGE_BOUND:
		return r->charge.set && r->charge.bound > 0
			       ? cell_fmt(t, "%s%s", glyph(G_PLUSMINUS), charge_text(c, r->charge.bound).s)
			       : cell_str(t, "");
	default:
		return cell_str(t, "?");
	}
}

void columns_table_add(const struct columns *c, struct table *t, const struct row *r, char *name)
{
	char *cells[COLUMNS_MAX];

	for (size_t i = 0; i < c->n; i++)
		cells[i] = column_cell(c, t, r, c->v[i], name);
	table_add(t, cells);
}

/* Copy member `key` of `from` into `to` (JSON null when absent), once. */
static void copy_member(struct json_object *to, struct json_object *from, const char *key)
{
	struct json_object *v = NULL;

	if (json_object_object_get_ex(to, key, NULL))
		return;
	(void)json_object_object_get_ex(from, key, &v);
	if (json_object_object_add(to, key, json_object_get(v)) < 0)
		oom_exit();
}

bool columns_has(const struct columns *c, enum column which)
{
	for (size_t i = 0; i < c->n; i++)
		if (c->v[i] == which)
			return true;
	return false;
}

struct json_object *columns_json(const struct columns *c, struct json_object *o)
{
	struct json_object *n, *psi = NULL;

	if (!c->given)
		return json_object_get(o);
	n = xjson(json_object_new_object());
	for (size_t i = 0; i < c->n; i++) {
		const struct column_info *info = &infos[c->v[i]];
		struct json_object *all = NULL, *v = NULL;

		if (!info->sub) {
			copy_member(n, o, info->member);
			if (info->member2)
				copy_member(n, o, info->member2);
			continue;
		}
		/* psi_some_avg10 with the selected resources only; null as acctd's is */
		(void)json_object_object_get_ex(o, info->member, &all);
		if (!all || !json_object_is_type(all, json_type_object)) {
			copy_member(n, o, info->member);
			continue;
		}
		if (!psi) {
			psi = xjson(json_object_new_object());
			json_add(n, info->member, psi);
		}
		(void)json_object_object_get_ex(all, info->sub, &v);
		if (json_object_object_add(psi, info->sub, json_object_get(v)) < 0)
			oom_exit();
	}
	return n;
}
