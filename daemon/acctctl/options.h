/* options.h - acctctl's command line as acctctl.c's parse_argv() leaves it:
 * the global options and the verb's name. A module of its own, below the
 * verbs and helpers that read it, so that none of them calls back up into
 * acctctl.c (main and the verbs[] table), which alone writes these. */
#pragma once

#include <stdbool.h>
#include <stdint.h>

/* --depth: not given (the command's default: all for list, TOP_DEPTH for
 * top, as systemd-cgtop's), or "all". */
enum { DEPTH_DEFAULT = -1, DEPTH_ALL = -2, TOP_DEPTH = 3 };

/* --json: short, one document on one line; pretty, indented; lines, a list
 * as one object per line (JSON Lines, for line-by-line tools). */
enum json_mode { JSON_OFF, JSON_SHORT, JSON_PRETTY, JSON_LINES };

/* --color: auto (the default), only where terminal.h's colors_enabled()
 * finds a terminal that wants it; always; never. */
enum color_mode { COLOR_AUTO, COLOR_ALWAYS, COLOR_NEVER };

/* The options (defaults in options.c). */
extern const char *arg_address;
extern enum json_mode arg_json;
extern enum color_mode arg_color;
extern bool arg_legend;
extern bool arg_pager;
extern bool arg_full;
extern bool arg_quiet;
extern bool arg_tree;
extern bool arg_all;
extern bool arg_precise;
extern bool arg_batch;
extern int arg_sort;   /* enum sort_key; -1: the command's default */
extern int arg_depth;  /* levels below the prefix, or DEPTH_DEFAULT, DEPTH_ALL */
extern uint64_t arg_top; /* list and usage --top: the first N rows of the sort (0: all) */
extern struct columns arg_columns; /* -o/--output (columns.h); n 0: the command's default */
extern uint64_t arg_iterations; /* 0: forever */
extern uint64_t arg_delay_us;
extern const char *arg_prefix;
extern const char *arg_cgroup; /* charge --cgroup; NULL: acctctl's own */
extern bool arg_sync;         /* charge --sync: return once the charge is durable */
extern const char *arg_charge; /* usage --charge: a charged resource's integral; NULL: none */
extern bool arg_set_bytes, arg_set_cpu, arg_set_tasks, arg_set_auto_tune;
extern int64_t arg_bytes_budget, arg_cpu_budget_us, arg_tasks_budget;
extern bool arg_auto_tune;
/* usage and history: --since and --until as CLOCK_REALTIME
 * microseconds (0: not given), --step (0: acctd's default), --csv, --plot,
 * --no-removed. */
enum plot_choice { PLOT_DEFAULT, PLOT_MEMORY, PLOT_CPU, PLOT_IO, PLOT_TASKS, PLOT_NONE, PLOT_CHARGE };
extern uint64_t arg_since_us, arg_until_us, arg_step_us;
extern uint64_t arg_now_us; /* CLOCK_REALTIME microseconds when the command line was read: --since's
                             * and --until's "now", and the window's end without --until */
extern bool arg_csv;
extern enum plot_choice arg_plot;
extern bool arg_no_removed;
extern int arg_group_level; /* usage --group-by-level (0: none) */

/* The verb, for messages ("Permission denied: tune needs root ..."); "acctctl"
 * until the command line names one. */
extern const char *command_name;
