/* acctctl.c - acctd's control tool: asks the daemon over its varlink API
 * (lib/client/acct-client.h) and prints tables with human units, or JSON.
 *
 * Commands: status, list, show, top, watch, compare, usage, history, tune,
 * reconcile, reload.
 * Exit status (also in --help, acctctl(1) and docs/acctctl.md): 0 success (compare: above),
 * 1 failure or an error from acctd, 2 bad command line, 3 acctd not running,
 * 4 permission denied, 5 compare: below, 6 compare: equal.
 *
 * This file is main, the option parser and the verbs[] table, which alone
 * says per verb its name, argument count, options, help and function. It is
 * the top: calls run from here down, never back. The parsed options live in
 * options.c (read by everything below), the verbs in verb-*.c, the table
 * renderer in table.c, the pager and the terminal in pager.c and terminal.c. */
#include <errno.h>
#include <limits.h>
#include <getopt.h>
#include <langinfo.h>
#include <locale.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "acctctl.h"
#include "basic/parse.h"
#include "basic/timestamp.h"
#include "build-config.h"
#include "columns.h"
#include "ctl-util.h"
#include "human.h"
#include "pager.h"
#include "rows.h"
#include "terminal.h"
#include "verbs.h"

enum {
	ARG_VERSION = 0x100,
	ARG_ADDRESS,
	ARG_JSON,
	ARG_NO_LEGEND,
	ARG_NO_PAGER,
	ARG_TREE,
	ARG_SORT,
	ARG_DEPTH,
	ARG_PRECISE,
	ARG_PREFIX,
	ARG_BYTES_BUDGET,
	ARG_CPU_BUDGET,
	ARG_TASKS_BUDGET,
	ARG_AUTO_TUNE,
	ARG_SINCE,
	ARG_UNTIL,
	ARG_STEP,
	ARG_CSV,
	ARG_PLOT,
	ARG_NO_REMOVED,
	ARG_GROUP_BY_LEVEL,
	ARG_TOP,
	ARG_COLOR,
	ARG_CGROUP,
	ARG_SYNC,
	ARG_CHARGE,
};

static const struct option options[] = {
	{ "help", no_argument, NULL, 'h' },
	{ "version", no_argument, NULL, ARG_VERSION },
	{ "address", required_argument, NULL, ARG_ADDRESS },
	{ "json", optional_argument, NULL, ARG_JSON },
	{ "no-legend", no_argument, NULL, ARG_NO_LEGEND },
	{ "no-pager", no_argument, NULL, ARG_NO_PAGER },
	{ "full", no_argument, NULL, 'l' },
	{ "tree", no_argument, NULL, ARG_TREE },
	{ "all", no_argument, NULL, 'a' },
	{ "sort", required_argument, NULL, ARG_SORT },
	{ "depth", required_argument, NULL, ARG_DEPTH },
	{ "output", required_argument, NULL, 'o' },
	{ "precise", no_argument, NULL, ARG_PRECISE },
	{ "fresh", no_argument, NULL, ARG_PRECISE }, /* its alias: what precise reads for memory and CPU */
	{ "iterations", required_argument, NULL, 'n' },
	{ "batch", no_argument, NULL, 'b' },
	{ "delay", required_argument, NULL, 'd' },
	{ "prefix", required_argument, NULL, ARG_PREFIX },
	{ "quiet", no_argument, NULL, 'q' },
	{ "bytes-budget", required_argument, NULL, ARG_BYTES_BUDGET },
	{ "cpu-budget", required_argument, NULL, ARG_CPU_BUDGET },
	{ "tasks-budget", required_argument, NULL, ARG_TASKS_BUDGET },
	{ "auto-tune", required_argument, NULL, ARG_AUTO_TUNE },
	{ "since", required_argument, NULL, ARG_SINCE },
	{ "until", required_argument, NULL, ARG_UNTIL },
	{ "step", required_argument, NULL, ARG_STEP },
	{ "csv", no_argument, NULL, ARG_CSV },
	{ "plot", required_argument, NULL, ARG_PLOT },
	{ "no-removed", no_argument, NULL, ARG_NO_REMOVED },
	{ "group-by-level", required_argument, NULL, ARG_GROUP_BY_LEVEL },
	{ "top", required_argument, NULL, ARG_TOP },
	{ "color", required_argument, NULL, ARG_COLOR },
	{ "cgroup", required_argument, NULL, ARG_CGROUP },
	{ "sync", no_argument, NULL, ARG_SYNC },
	{ "charge", required_argument, NULL, ARG_CHARGE },
	{}
};


#define VERB_ANY UINT_MAX

/* Everything acctctl knows per verb, in the order of acctctl --help. */
struct verb {
	const char *name;
	unsigned min_args, max_args; /* positional arguments; VERB_ANY: no limit */
	const char *args_error;      /* the message when their number is wrong */
	const int *options;          /* the verb's own options (getopt values), 0-terminated;
				      * an option that no verb lists applies to all */
	const char *synopsis;        /* its line in acctctl --help ... */
	const char *summary;         /* ... and what it does */
	const char *help;            /* acctctl VERB --help, before the common options */
	int (*run)(char **args);     /* NULL: help, answered while parsing */
};

static const struct verb verbs[] = {
	{
		.name = "status",
		.min_args = 0,
		.max_args = 0,
		.args_error = "'status' takes no arguments.",
		.options = NULL,
		.synopsis = "status",
		.summary = "The daemon: cgroups, passes, budgets, checks, reloads",
		.help = "acctctl status\n\n"
			"Show the daemon's state: version, uptime, cgroups live and dead, the last fast and\n"
			"slow sampling passes, error budgets and the tuner, reconciliation (invariant\n"
			"violations, drift), configuration sources and reloads.\n",
		.run = verb_status,
	},
	{
		.name = "list",
		.min_args = 0,
		.max_args = 1,
		.args_error = "'list' takes at most one PREFIX.",
		.options = (const int[]){ ARG_TREE, 'a', ARG_SORT, ARG_TOP, ARG_DEPTH, 'o', ARG_CHARGE, 0 },
		.synopsis = "list [PREFIX]",
		.summary = "Cgroups with memory, CPU, load, pressure, tasks, I/O (default)",
		.help = "acctctl list [PREFIX] [--tree] [--all] [--sort=KEY] [--top=N] [--depth=N]\n"
			"             [-o FIELD,...] [--charge=NAME]\n\n"
			"List the cgroups under PREFIX (default /): MEMORY with its bound, CPU rate in\n"
			"cores, LOAD (1 min), PSI \"some\" avg10 of CPU, memory and IO, TASKS, block I/O\n"
			"read and written per second (READ/s, WRITE/s, bytes: acctd's rates over its last\n"
			"fast interval), and the AGE of the memory reading.\n\n"
			"      --tree         Children below their parent, indented\n"
			"  -a --all           Also removed cgroups (tombstones) with their final values\n"
			"      --sort=KEY     path (default), memory, cpu, load, pressure, io, tasks,\n"
			"                     read/s, write/s, read, write or charge (--charge's\n"
			"                     resource); largest first\n"
			"      --top=N        Only the first N cgroups of the sort (by cpu unless --sort\n"
			"                     says otherwise); not with --tree\n"
			"      --depth=N      At most N levels below PREFIX (default: all)\n"
			"      --charge=NAME  A column of charged resource NAME, headed NAME: what\n"
			"                     programs charged to the cgroup and below, in its unit,\n"
			"                     with its bound (fields charge, charge-bound)\n"
			"  -o --output=FIELD[,FIELD...]\n"
			"                     Only these columns, in this order (--json: only their\n"
			"                     members); --output=help lists the fields\n",
		.run = verb_list,
	},
	{
		.name = "show",
		.min_args = 1,
		.max_args = 1,
		.args_error = "'show' needs exactly one CGROUP.",
		.options = (const int[]){ ARG_PRECISE, 0 },
		.synopsis = "show CGROUP",
		.summary = "Every value of one cgroup with its bound and age",
		.help = "acctctl show CGROUP [--precise|--fresh]\n\n"
			"Show every value of CGROUP with its bound and age: memory, working set, peak,\n"
			"limits, swap, CPU times and throttling, tasks, memory events (OOM kills, limit\n"
			"hits), block I/O totals, CPU rate, load, pressure (PSI), I/O rates and I/O per\n"
			"device, memory per NUMA node and memory.stat. A removed cgroup shows its final\n"
			"values. Under the table: how far memory and CPU time may have moved since\n"
			"they were read (an estimate: their measured rate times their age).\n\n"
			"      --precise      Read the counters precisely (no batching error of acctd's),\n"
			"                     and read memory and CPU time from the kernel now (age ~0):\n"
			"                     their bound is then the kernel's own per-CPU batching only\n"
			"      --fresh        The same as --precise\n",
		.run = verb_show,
	},
	{
		.name = "top",
		.min_args = 0,
		.max_args = 1,
		.args_error = "'top' takes at most one PREFIX.",
		.options = (const int[]){ ARG_SORT, ARG_DEPTH, 'n', 'b', 'd', 'o', 0 },
		.synopsis = "top [PREFIX]",
		.summary = "Live view of the busiest cgroups, like systemd-cgtop",
		.help = "acctctl top [PREFIX] [-n N] [-b] [-d SECONDS] [--sort=KEY] [--depth=N]\n"
			"            [-o FIELD,...]\n\n"
			"A live view of the cgroups, refreshed every interval, like systemd-cgtop, with\n"
			"list's columns; READ/s and WRITE/s are the block I/O between two refreshes\n"
			"(the first: acctd's rates over its last fast interval). On a terminal whose\n"
			"TERM is not dumb: full screen; keys m (memory), c (CPU), l (load), p (pressure),\n"
			"i (I/O), t (tasks), n (path) sort, space refreshes, ? shows the keys, q or ^C\n"
			"quits. Otherwise (or with -b) one table per iteration, separated by an empty\n"
			"line; with --json one object per iteration.\n\n"
			"  -n --iterations=N  Stop after N iterations (default: run until stopped)\n"
			"  -b --batch         Batch mode: plain tables, no screen control, no keys\n"
			"  -d --delay=SECONDS Interval (default 1; also 500ms, 2s, 1min)\n"
			"      --sort=KEY     cpu (default), memory, load, pressure, io, tasks, read/s,\n"
			"                     write/s, read, write or path\n"
			"      --depth=N      At most N levels below PREFIX (default 3, as systemd-cgtop;\n"
			"                     all: every level)\n"
			"  -o --output=FIELD[,FIELD...]\n"
			"                     Only these columns, in this order (--json: only their\n"
			"                     members); --output=help lists the fields\n",
		.run = verb_top,
	},
	{
		.name = "watch",
		.min_args = 0,
		.max_args = VERB_ANY,
		.args_error = NULL,
		.options = (const int[]){ 'd', ARG_PREFIX, 0 },
		.synopsis = "watch CGROUP...",
		.summary = "Print a cgroup's values whenever they change",
		.help = "acctctl watch CGROUP... [--prefix=PATH] [-d SECONDS]\n\n"
			"Print the values of the cgroups (or of every cgroup under --prefix) whenever one\n"
			"changes, at most every interval: a line per cgroup at start and then whenever what\n"
			"that line shows changed, or with --json one object per update. ^C stops (exit\n"
			"status 0).\n\n"
			"      --prefix=PATH  Watch every cgroup under PATH\n"
			"  -d --delay=SECONDS Shortest interval between updates (default 1; also 500ms)\n",
		.run = verb_watch,
	},
	{
		.name = "compare",
		.min_args = 3,
		.max_args = 3,
		.args_error = "'compare' needs CGROUP QUANTITY THRESHOLD.",
		.options = (const int[]){ 'q', 0 },
		.synopsis = "compare CGROUP QUANTITY THRESHOLD",
		.summary = "Is QUANTITY above, below or equal to THRESHOLD?",
		.help = "acctctl compare CGROUP QUANTITY THRESHOLD [-q]\n\n"
			"Is QUANTITY of CGROUP above, below or equal to THRESHOLD? acctd answers from the\n"
			"error bound when THRESHOLD lies outside value +-bound and reads the counter\n"
			"precisely only inside that band; the output says which.\n\n"
			"QUANTITY: memory, memory.working_set, memory.peak, memory.max, memory.high, swap,\n"
			"swap.max, cpu.usage, cpu.user, cpu.system, cpu.periods, cpu.throttled_periods,\n"
			"cpu.throttled, tasks, io.read_bytes, io.write_bytes, io.read_ios, io.write_ios,\n"
			"io.discard_bytes, io.discard_ios, memory.events.low, memory.events.high,\n"
			"memory.events.max, memory.events.oom, memory.events.oom_kill,\n"
			"memory.events.oom_group_kill, memory.under_oom, psi.cpu.some, psi.cpu.full,\n"
			"psi.memory.some, psi.memory.full, psi.io.some, psi.io.full.\n"
			"A quantity this layout never reads (memory.high on cgroup v1) is reported as\n"
			"not available for the cgroup, with the reason.\n"
			"THRESHOLD: an integer in the quantity's unit (bytes, microseconds, count), a size\n"
			"for bytes (512M, 1.5G) or a duration for times (250ms, 1.5s, 1h 30min).\n\n"
			"Exit status: 0 above, 5 below, 6 equal (1-4 as for every command).\n\n"
			"  -q --quiet         Print nothing; use the exit status\n",
		.run = verb_compare,
	},
	{
		.name = "charge",
		.min_args = 2,
		.max_args = 2,
		.args_error = "'charge' needs RESOURCE DELTA.",
		.options = (const int[]){ ARG_CGROUP, ARG_SYNC, 0 },
		.synopsis = "charge RESOURCE DELTA",
		.summary = "Charge DELTA of RESOURCE to a cgroup (programs' usage)",
		.help = "acctctl charge RESOURCE DELTA [--cgroup=CGROUP] [--sync]\n\n"
			"Charge DELTA of RESOURCE, declared in acctd.conf ([resource.NAME]), to this\n"
			"process's own cgroup or to CGROUP (its own or one below it, unless root or in\n"
			"[api] admin_group). DELTA is an integer in the resource's unit (bytes, a count,\n"
			"microseconds); give a negative one after --, options before it:\n"
			"acctctl charge gpu --cgroup=/system.slice/db.service -- -512.\n"
			"Charges to a resource with release_on_exit are released when acctctl exits.\n\n"
			"      --cgroup=PATH  Charge PATH instead of acctctl's own cgroup\n"
			"      --sync         Return only once the charge is in acctd's state file\n"
			"                     (it survives a crash of acctd)\n",
		.run = verb_charge,
	},
	{
		.name = "usage",
		.min_args = 0,
		.max_args = VERB_ANY,
		.args_error = NULL,
		.options = (const int[]){ ARG_SINCE, ARG_UNTIL, ARG_PREFIX, ARG_DEPTH, ARG_NO_REMOVED, ARG_GROUP_BY_LEVEL,
					  ARG_SORT, ARG_TOP, ARG_CSV, ARG_CHARGE, 0 },
		.synopsis = "usage [CGROUP...]",
		.summary = "What cgroups used over a window, from the history",
		.help = "acctctl usage [CGROUP...] [--since=TIME] [--until=TIME] [--prefix=PATH] [--depth=N]\n"
			"              [--no-removed] [--group-by-level=N] [--sort=KEY] [--top=N]\n"
			"              [--charge=NAME] [--json|--csv]\n\n"
			"What each cgroup used between --since and --until, from acctd's history (removed\n"
			"cgroups included, across restarts of acctd): CPU time with its bound, average\n"
			"memory (byte-seconds over the time recorded) with its bound, the largest sample\n"
			"and the kernel's peak, I/O read and written, the time with data (RECORDED), and\n"
			"when the cgroup was removed. Under the table: the window, the gaps in it (acctd\n"
			"was not recording: memory and RECORDED leave them out, while CPU and I/O, from the\n"
			"kernel's cumulative counters, include what was used then), and the time since\n"
			"acctd's last recording when the window runs to now. MEM AVG's bound holds where\n"
			"memory moved steadily between two recordings (every 10 s by default); a rise and\n"
			"fall within one can lie outside it, which MEM MAX and PEAK show. Without CGROUP:\n"
			"every cgroup under\n"
			"--prefix; with CGROUPs: just those (with --depth, their subtrees too).\n\n"
			"TIME as systemd.time(7) writes it: now, today, yesterday, -1h, -10min, '2h ago',\n"
			"2026-12-01 10:00, 2026-12-01T10:00:00Z, @1764584400.\n\n"
			"      --since=TIME   Start of the window (default: -1h)\n"
			"      --until=TIME   End of the window (default: now)\n"
			"      --prefix=PATH  Only cgroups under PATH (default /)\n"
			"      --depth=N      At most N levels below PATH, or below each CGROUP (default:\n"
			"                     all; 0 with CGROUPs)\n"
			"      --no-removed   Leave out cgroups removed by the end of the window\n"
			"      --group-by-level=N\n"
			"                     One row per cgroup N levels below the root (1: the slices,\n"
			"                     2: the services in them): its own totals, which the kernel\n"
			"                     keeps for its whole subtree, and BELOW, the cgroups under it\n"
			"                     seen in the window; cgroups above level N are left out\n"
			"      --sort=KEY     path (default), cpu, memory (MEM AVG), io (read and\n"
			"                     written), read, write or charge (--charge's resource);\n"
			"                     largest first\n"
			"      --top=N        Only the first N cgroups of the sort (by cpu unless --sort\n"
			"                     says otherwise). Which top-level cgroup used the most CPU\n"
			"                     in the last 5 minutes (without --group-by-level the root\n"
			"                     comes first: its totals hold everyone's):\n"
			"                     acctctl usage --since=-5min --group-by-level=1 --top=1\n"
			"      --charge=NAME  Also what each cgroup held of charged resource NAME (its\n"
			"                     subtree value) over the window: value x seconds with its\n"
			"                     bound, the average and the largest value, below the table\n"
			"      --csv          Comma-separated values: a header row, then one row per cgroup\n"
			"                     with raw numbers (microseconds, bytes; a bound in its own\n"
			"                     column; an absent value empty)\n",
		.run = verb_usage,
	},
	{
		.name = "history",
		.min_args = 1,
		.max_args = 1,
		.args_error = "'history' needs exactly one CGROUP.",
		.options = (const int[]){ ARG_SINCE, ARG_UNTIL, ARG_STEP, ARG_PLOT, ARG_CSV, ARG_CHARGE, 0 },
		.synopsis = "history CGROUP",
		.summary = "A cgroup's memory and CPU over time, plotted",
		.help = "acctctl history CGROUP [--since=TIME] [--until=TIME] [--step=DURATION]\n"
			"                [--plot=memory|cpu|io|tasks|charge|none] [--charge=NAME]\n"
			"                [--json|--csv]\n\n"
			"CGROUP's history between --since and --until in steps: on a terminal a plot of its\n"
			"memory (the mean of each step) with its CPU rate (cores) below; otherwise, or with\n"
			"--plot=none, a table of every step: CPU in cores, memory mean, min and max, I/O\n"
			"read and written per second, the most tasks, and how much of the step has data\n"
			"(COVERED). A step without data (acctd was not recording, or the cgroup did not\n"
			"exist) is a gap: a break in the plot, '-' in the table, never interpolated. CPU\n"
			"and I/O used during a gap are in no step (when is not known), though usage's\n"
			"totals, read from the kernel's counters, include them.\n\n"
			"TIME as systemd.time(7) writes it: now, today, yesterday, -1h, -10min, '2h ago',\n"
			"2026-12-01 10:00, 2026-12-01T10:00:00Z, @1764584400.\n\n"
			"      --since=TIME   Start of the window (default: -1h)\n"
			"      --until=TIME   End of the window (default: now)\n"
			"      --step=DURATION\n"
			"                     Length of a step, as 10s, 1min, 1h (default: the window over\n"
			"                     the plot's width, or over 120 for a table but at least\n"
			"                     acctd's recording interval); a step shorter than that\n"
			"                     interval shows the interval's average\n"
			"      --plot=WHAT    memory, cpu, io (bytes read per second), tasks: that\n"
			"                     plot alone, also when not on a terminal; none: the table;\n"
			"                     charge: --charge's plot, also when not on a terminal\n"
			"      --charge=NAME  Charged resource NAME instead (its subtree value as\n"
			"                     recorded, in its unit): a plot of its mean per step on a\n"
			"                     terminal, else a table of the steps (mean, largest value\n"
			"                     and bound, COVERED); --csv: the recorded points, raw\n"
			"      --csv          Comma-separated values: a header row, then one row per step\n"
			"                     with raw numbers (an absent value empty)\n",
		.run = verb_history,
	},
	{
		.name = "tune",
		.min_args = 0,
		.max_args = 0,
		.args_error = "'tune' takes no arguments.",
		.options = (const int[]){ ARG_BYTES_BUDGET, ARG_CPU_BUDGET, ARG_TASKS_BUDGET, ARG_AUTO_TUNE, 0 },
		.synopsis = "tune",
		.summary = "Show or change (admin) error budgets and auto-tuning",
		.help = "acctctl tune [--bytes-budget=SIZE] [--cpu-budget=DURATION] [--tasks-budget=N]\n"
			"             [--auto-tune=yes|no]\n\n"
			"Change the error budgets (the largest error of one counter read) and the\n"
			"auto-tuner at run time, until the next reload; without options, show them.\n"
			"Anyone may show them; a change needs root or the configured admin group.\n\n"
			"      --bytes-budget=SIZE      Bytes, or K, M, G, T (powers of 1024), as 64M or 1.5G\n"
			"      --cpu-budget=DURATION    us, ms, s, min, h, as 10ms or 1.5s (a bare number is seconds)\n"
			"      --tasks-budget=N         Tasks\n"
			"      --auto-tune=yes|no       Let the tuner move batches within the budgets\n",
		.run = verb_tune,
	},
	{
		.name = "reconcile",
		.min_args = 0,
		.max_args = 0,
		.args_error = "'reconcile' takes no arguments.",
		.options = NULL,
		.synopsis = "reconcile",
		.summary = "Sample every cgroup now and report (admin)",
		.help = "acctctl reconcile\n\n"
			"Sample every cgroup now (fast and slow files) and print the pass and its\n"
			"reconciliation: invariant violations and drift. Needs root or the admin group.\n",
		.run = verb_reconcile,
	},
	{
		.name = "reload",
		.min_args = 0,
		.max_args = 0,
		.args_error = "'reload' takes no arguments.",
		.options = NULL,
		.synopsis = "reload",
		.summary = "Reload acctd's configuration (admin)",
		.help = "acctctl reload\n\n"
			"Reload acctd's configuration; a refused file keeps the old configuration and its\n"
			"error is printed; what an applied file ignores (an unknown key) is printed too.\n"
			"Needs root or the admin group.\n",
		.run = verb_reload,
	},
	{
		.name = "help",
		.min_args = 0,
		.max_args = 1,
		.args_error = NULL,
		.options = NULL,
		.synopsis = "help [COMMAND]",
		.summary = "This help, or a command's (also COMMAND --help)",
		.help = "acctctl help [COMMAND]\n\nShow acctctl's help, or COMMAND's.\n",
		.run = NULL,
	},
};

static const struct verb *verb_find(const char *name)
{
	for (size_t i = 0; i < ELEMENTSOF(verbs); i++)
		if (strcmp(name, verbs[i].name) == 0)
			return &verbs[i];
	return NULL;
}

/* Whether option `opt` may be given to verb v. */
static bool verb_takes_option(const struct verb *v, int opt)
{
	bool anyone = false;

	for (size_t i = 0; i < ELEMENTSOF(verbs); i++)
		for (const int *o = verbs[i].options; o && *o; o++)
			if (*o == opt) {
				if (&verbs[i] == v)
					return true;
				anyone = true;
			}
	return !anyone;
}

static const char options_common[] =
	"\nCommon options: --address=unix:PATH, --json[=short|pretty|lines], --no-legend, --no-pager,\n"
	"-l/--full, --color=auto|always|never (see acctctl --help).\n";

static void help_main(FILE *f)
{
	fputs("acctctl [OPTIONS...] COMMAND ...\n\n"
	      "Query and control acctd, the cgroup accounting daemon. Every value comes with its\n",
	      f);
	fprintf(f,
		"error bound (shown as %sN: |value - exact| <= N; for usage's MEM AVG, where memory moved\n"
		"steadily between two recordings: see acctctl(1)) and its age.\n\n",
		glyph(G_PLUSMINUS));
	fputs("Commands:\n", f);
	for (size_t i = 0; i < ELEMENTSOF(verbs); i++) {
		if (strlen(verbs[i].synopsis) < 30)
			fprintf(f, "  %-30s%s\n", verbs[i].synopsis, verbs[i].summary);
		else
			fprintf(f, "  %s\n%32s%s\n", verbs[i].synopsis, "", verbs[i].summary);
	}
	fputs("\n"
	      "Options:\n"
	      "  -h --help                     Show help\n"
	      "     --version                  Show the version\n"
	      "     --address=unix:PATH        Talk to acctd at PATH; default $ACCTD_ADDRESS, else\n"
	      "                                " ACCT_CLIENT_SYSTEM_SOCKET " (as another user than root:\n"
	      "                                $XDG_RUNTIME_DIR/acctd/io.acctd when that exists)\n"
	      "     --json[=short|pretty|lines]\n"
	      "                                JSON: one document on one line (short, the default),\n"
	      "                                indented (pretty), or a list as one object per line (lines)\n"
	      "     --no-legend                No column headers and footers\n"
	      "     --no-pager                 Do not pipe output into a pager\n"
	      "  -l --full                     Do not shorten cgroup paths to the terminal width\n"
	      "     --color=auto|always|never  Colour in top: auto (the default) on a terminal whose\n"
	      "                                TERM is not dumb, unless $NO_COLOR is set\n\n"
	      "Units: bytes with binary suffixes B, K, M, G, T (powers of 1024, one decimal: 64.0M\n"
	      "is 64 MiB); CPU rate in cores (1.00 = one CPU busy); pressure (PSI) in %; times\n"
	      "and ages in us, ms, s, min, h.\n\n"
	      "Exit status:\n"
	      "  0  success; compare: above\n"
	      "  1  failure, or an error reported by acctd (no such cgroup, ...)\n"
	      "  2  invalid command line\n"
	      "  3  acctd is not running (nothing listens on the address)\n"
	      "  4  permission denied (the socket, or an administrative command)\n"
	      "  5  compare: below\n"
	      "  6  compare: equal\n\n"
	      "See 'acctctl COMMAND --help', 'man acctctl', and for acctd's configuration\n"
	      "(budgets, admin group) 'man acctd.conf'.\n",
	      f);
}

/* acctctl --help, or VERB --help (v not NULL). */
static void help_verb(FILE *f, const struct verb *v)
{
	if (!v) {
		help_main(f);
		return;
	}
	fputs(v->help, f);
	if (v->run == verb_list || v->run == verb_top) {
		fputc('\n', f);
		columns_help(f);
	}
	if (v->run)
		fputs(options_common, f);
}

static const char *option_name(int opt)
{
	for (size_t i = 0; options[i].name; i++)
		if (options[i].val == opt)
			return options[i].name;
	return "?";
}

/* Seconds (may have a fraction) or a duration with a unit (500ms, 2s, 1min). */
static int parse_delay(const char *s, uint64_t *ret)
{
	char *end;
	double d;

	errno = 0;
	d = strtod(s, &end);
	if (*s && !*end && errno == 0 && isfinite(d) && d > 0 && d < 1e9) {
		*ret = (uint64_t)llround(d * 1e6);
		return 0;
	}
	return acct_parse_duration_us(s, ret);
}

static int parse_sort(const char *s)
{
	static const struct {
		const char *name;
		int key;
	} keys[] = { { "path", SORT_PATH },	     { "name", SORT_PATH },	{ "cgroup", SORT_PATH },
		     { "memory", SORT_MEMORY },	     { "mem", SORT_MEMORY },	{ "cpu", SORT_CPU },
		     { "load", SORT_LOAD },	     { "pressure", SORT_PRESSURE }, { "psi", SORT_PRESSURE },
		     { "io", SORT_IO },		     { "tasks", SORT_TASKS },	{ "read/s", SORT_READ_RATE },
		     { "write/s", SORT_WRITE_RATE }, { "read", SORT_READ },	{ "write", SORT_WRITE },
		     { "charge", SORT_CHARGE } };
	for (size_t i = 0; i < ELEMENTSOF(keys); i++)
		if (strcmp(s, keys[i].name) == 0)
			return keys[i].key;
	return -1;
}

static int parse_uint(const char *s, uint64_t max, uint64_t *ret)
{
	char *end;
	unsigned long long v;

	if (!*s || *s == '-' || *s == '+')
		return -EINVAL;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (*end || errno || v > max)
		return -ERANGE;
	*ret = v;
	return 0;
}


/* Parse the options and the verb. Returns EXIT_OK with the verb and its
 * arguments, or EXIT_USAGE after saying why; exits after --help and --version. */
static int parse_argv(int argc, char **argv, const struct verb **ret_verb, char ***ret_args)
{
	const struct verb *v = NULL;
	int seen[64], nseen = 0, c;
	uint64_t u;
	bool help = false;
	char **args;
	struct timespec ts;
	uint64_t now_us;

	/* one "now" for --since and --until, so that "-1h" and "now" are an hour apart */
	clock_gettime(CLOCK_REALTIME, &ts);
	now_us = arg_now_us = (uint64_t)ts.tv_sec * 1000000 + (uint64_t)ts.tv_nsec / 1000;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":hlaqbn:d:o:", options, NULL)) >= 0) {
		if (c == '?') {
			if (optopt >= '0' && optopt <= '9')
				/* a negative number where an argument was meant (charge's DELTA) */
				return usage_error("Unknown option -%c: a negative number goes after '--', options "
						   "before it (acctctl charge gpu -- -512).", optopt);
			if (optopt)
				return usage_error("Unknown option -%c. See 'acctctl --help'.", optopt);
			return usage_error("Unknown option %s. See 'acctctl --help'.", argv[optind - 1]);
		}
		if (c == ':')
			return usage_error("Option %s needs an argument.", argv[optind - 1]);
		if (nseen < (int)ELEMENTSOF(seen))
			seen[nseen++] = c;
		switch (c) {
		case 'h':
			help = true;
			break;
		case ARG_VERSION:
			printf("acctctl %s\n", ACCTD_VERSION);
			exit(EXIT_OK);
		case ARG_ADDRESS:
			arg_address = optarg;
			break;
		case ARG_JSON:
			if (!optarg || strcmp(optarg, "short") == 0)
				arg_json = JSON_SHORT;
			else if (strcmp(optarg, "pretty") == 0)
				arg_json = JSON_PRETTY;
			else if (strcmp(optarg, "lines") == 0)
				arg_json = JSON_LINES;
			else
				return usage_error("Invalid --json mode '%s': expected short, pretty or lines.", optarg);
			break;
		case ARG_COLOR: {
			static const char *const modes[] = {
				[COLOR_AUTO] = "auto", [COLOR_ALWAYS] = "always", [COLOR_NEVER] = "never",
			};
			size_t i = 0;
			while (i < ELEMENTSOF(modes) && strcmp(optarg, modes[i]) != 0)
				i++;
			if (i == ELEMENTSOF(modes))
				return usage_error("Invalid --color mode '%s': expected auto, always or never.", optarg);
			arg_color = (enum color_mode)i;
			break;
		}
		case ARG_NO_LEGEND:
			arg_legend = false;
			break;
		case ARG_NO_PAGER:
			arg_pager = false;
			break;
		case 'l':
			arg_full = true;
			break;
		case ARG_TREE:
			arg_tree = true;
			break;
		case 'a':
			arg_all = true;
			break;
		case ARG_SORT:
			arg_sort = parse_sort(optarg);
			if (arg_sort < 0)
				return usage_error("Invalid sort key '%s': expected path, memory, cpu, load, pressure, io, "
						   "tasks, read/s, write/s, read, write or charge.",
						   optarg);
			break;
		case ARG_TOP:
			if (parse_uint(optarg, UINT32_MAX, &arg_top) < 0 || arg_top == 0)
				return usage_error("Invalid number of cgroups '%s' for --top: expected 1 or more.", optarg);
			break;
		case ARG_DEPTH:
			if (strcmp(optarg, "all") == 0)
				arg_depth = DEPTH_ALL;
			else if (parse_uint(optarg, 1024, &u) < 0)
				return usage_error("Invalid depth '%s': expected a number of levels or all.", optarg);
			else
				arg_depth = (int)u;
			break;
		case 'o': {
			const char *bad = NULL;
			int k;

			if (strcmp(optarg, "help") == 0) {
				columns_help(stdout);
				exit(EXIT_OK);
			}
			k = columns_parse(optarg, &arg_columns, &bad);
			if (k == -E2BIG)
				return usage_error("Too many fields for --output: at most %d.", COLUMNS_MAX);
			if (k < 0)
				return usage_error("Unknown field '%.*s' for --output. Valid fields: %s.",
						   (int)strcspn(bad, ","), bad, columns_names());
			break;
		}
		case ARG_PRECISE:
			arg_precise = true;
			break;
		case 'n':
			if (parse_uint(optarg, UINT32_MAX, &u) < 0 || u == 0)
				return usage_error("Invalid number of iterations '%s'.", optarg);
			arg_iterations = u;
			break;
		case 'b':
			arg_batch = true;
			break;
		case 'd':
			if (parse_delay(optarg, &arg_delay_us) < 0 || arg_delay_us < 10000 ||
			    arg_delay_us > UINT64_C(86400000000))
				return usage_error("Invalid interval '%s': expected seconds (0.5, 2) or a duration "
						   "(500ms, 1min), at least 10ms.", optarg);
			break;
		case ARG_PREFIX:
			arg_prefix = optarg;
			break;
		case ARG_CGROUP:
			arg_cgroup = optarg;
			break;
		case ARG_SYNC:
			arg_sync = true;
			break;
		case ARG_CHARGE:
			arg_charge = optarg;
			break;
		case 'q':
			arg_quiet = true;
			break;
		case ARG_BYTES_BUDGET: {
			uint64_t size;
			if (acct_parse_size(optarg, &size) < 0 || size > INT64_MAX)
				return usage_error("Invalid size '%s': %s.", optarg, acct_size_refusal(optarg));
			arg_bytes_budget = (int64_t)size;
			arg_set_bytes = true;
			break;
		}
		case ARG_CPU_BUDGET: {
			uint64_t us;
			if (acct_parse_duration_us(optarg, &us) < 0 || us > INT64_MAX)
				return usage_error("Invalid duration '%s': expected " ACCT_DURATION_SYNTAX ".", optarg);
			arg_cpu_budget_us = (int64_t)us;
			arg_set_cpu = true;
			break;
		}
		case ARG_TASKS_BUDGET:
			if (parse_uint(optarg, INT64_MAX, &u) < 0)
				return usage_error("Invalid number of tasks '%s'.", optarg);
			arg_tasks_budget = (int64_t)u;
			arg_set_tasks = true;
			break;
		case ARG_AUTO_TUNE:
			if (acct_parse_bool(optarg, &arg_auto_tune) < 0)
				return usage_error("Invalid value '%s' for --auto-tune: expected yes or no.", optarg);
			arg_set_auto_tune = true;
			break;
		case ARG_SINCE:
		case ARG_UNTIL: {
			uint64_t *t = c == ARG_SINCE ? &arg_since_us : &arg_until_us;
			int k = acct_parse_timestamp(optarg, now_us, t);
			if (k < 0)
				return usage_error("Invalid time '%s' for --%s: %s; expected " ACCT_TIMESTAMP_SYNTAX ".",
						   optarg, option_name(c),
						   k == -ERANGE ? "out of range" : "not a time");
			break;
		}
		case ARG_STEP:
			if (acct_parse_duration_us(optarg, &arg_step_us) < 0 || arg_step_us == 0 || arg_step_us > INT64_MAX)
				return usage_error("Invalid step '%s': expected " ACCT_DURATION_SYNTAX ", more than 0.", optarg);
			break;
		case ARG_CSV:
			arg_csv = true;
			break;
		case ARG_PLOT: {
			static const char *const plots[] = {
				[PLOT_MEMORY] = "memory", [PLOT_CPU] = "cpu",	[PLOT_IO] = "io",
				[PLOT_TASKS] = "tasks",	  [PLOT_NONE] = "none", [PLOT_CHARGE] = "charge",
			};
			arg_plot = PLOT_DEFAULT;
			for (size_t i = PLOT_MEMORY; i < ELEMENTSOF(plots); i++)
				if (strcmp(optarg, plots[i]) == 0)
					arg_plot = (enum plot_choice)i;
			if (arg_plot == PLOT_DEFAULT)
				return usage_error("Invalid plot '%s': expected memory, cpu, io, tasks or none "
						   "(with --charge: charge or none).",
						   optarg);
			break;
		}
		case ARG_NO_REMOVED:
			arg_no_removed = true;
			break;
		case ARG_GROUP_BY_LEVEL:
			if (parse_uint(optarg, 1024, &u) < 0 || u == 0)
				return usage_error("Invalid level '%s': expected a number of levels below the root, 1 or more.",
						   optarg);
			arg_group_level = (int)u;
			break;
		default:
			return usage_error("Unexpected option. See 'acctctl --help'.");
		}
	}

	args = argv + optind;
	if (args[0]) {
		v = verb_find(args[0]);
		if (!v)
			return usage_error("Unknown command '%s'. See 'acctctl --help'.", args[0]);
		args++;
	}
	if (v && !v->run) { /* help [COMMAND] */
		const struct verb *what = NULL;
		if (args[0]) {
			what = verb_find(args[0]);
			if (!what)
				return usage_error("Unknown command '%s'. See 'acctctl --help'.", args[0]);
		}
		help_verb(stdout, what);
		exit(EXIT_OK);
	}
	if (help) {
		help_verb(stdout, v);
		exit(EXIT_OK);
	}
	if (!v)
		v = verb_find("list");

	for (int i = 0; i < nseen; i++)
		if (!verb_takes_option(v, seen[i])) {
			const char *name = option_name(seen[i]);
			return usage_error("Option --%s does not apply to '%s'. See 'acctctl %s --help'.", name,
					   v->name, v->name);
		}

	if (arg_csv && arg_json)
		return usage_error("--csv and --json exclude each other.");

	size_t nargs = 0;
	while (args[nargs])
		nargs++;
	if (nargs < v->min_args || (v->max_args != VERB_ANY && nargs > v->max_args)) {
		/* An argument that looks like an option came after "--" (getopt
		 * took every other one): say so, not only how many it needs. */
		for (size_t i = 0; nargs > v->max_args && i < nargs; i++)
			if (args[i][0] == '-' && args[i][1] == '-' && args[i][2])
				return usage_error("%s '%s' came after '--', which ends the options: put options "
						   "before it (acctctl %s --help).",
						   v->args_error, args[i], v->name);
		return usage_error("%s", v->args_error);
	}
	*ret_verb = v;
	*ret_args = args;
	return EXIT_OK;
}

int main(int argc, char **argv)
{
	const struct verb *v = NULL;
	const char *codeset;
	char **args = NULL;
	int r;

	/* only the character type: numbers keep their '.' whatever the locale */
	(void)setlocale(LC_CTYPE, "");
	codeset = nl_langinfo(CODESET);
	utf8 = codeset && strcmp(codeset, "UTF-8") == 0;
	probe_terminal();

	r = parse_argv(argc, argv, &v, &args);
	if (r != EXIT_OK)
		return r;
	command_name = v->name;
	r = v->run(args);
	fflush(stdout);
	pager_close();
	return r;
}
