/* options.c - the command line's values before parse_argv() (acctctl.c)
 * sets them: the defaults every verb sees for an option not given (see
 * options.h). Data only: it calls nothing. */
#include "options.h"

#include "columns.h"

const char *arg_address;
enum json_mode arg_json = JSON_OFF;
enum color_mode arg_color = COLOR_AUTO;
bool arg_legend = true;
bool arg_pager = true;
bool arg_full;
bool arg_quiet;
bool arg_tree;
bool arg_all;
bool arg_precise;
bool arg_batch;
int arg_sort = -1;
int arg_depth = DEPTH_DEFAULT;
uint64_t arg_top;
struct columns arg_columns;
uint64_t arg_iterations;
uint64_t arg_delay_us = 1000000;
const char *arg_prefix;
const char *arg_cgroup;
bool arg_sync;
const char *arg_charge;
bool arg_set_bytes, arg_set_cpu, arg_set_tasks, arg_set_auto_tune;
int64_t arg_bytes_budget, arg_cpu_budget_us, arg_tasks_budget;
bool arg_auto_tune;
uint64_t arg_since_us, arg_until_us, arg_step_us;
uint64_t arg_now_us;
bool arg_csv;
enum plot_choice arg_plot = PLOT_DEFAULT;
bool arg_no_removed;
int arg_group_level;

const char *command_name = "acctctl";
