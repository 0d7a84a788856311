/* acctd.c - the daemon's entry point: command line, then the manager. */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api.h"
#include "basic/log.h"
#include "bpf-pin.h"
#include "build-config.h"
#include "config/config.h"
#include "manager.h"
#include "metrics-http.h"
#include "state-file.h"

enum action { RUN, DUMP, CHECK_CONFIG, BPF_PIN, HELP, VERSION };

static void help(void)
{
	printf("Usage: acctd [OPTIONS]\n\n"
	       "cgroup-aware resource accounting daemon: keeps every cgroup's memory and\n"
	       "load with their error bounds and ages.\n\n"
	       "  --config FILE            read FILE instead of " ACCT_CONFIG_FILE " (\"\": none)\n"
	       "  --config-dropins DIR     read DIR/*.conf instead of " ACCT_CONFIG_DROPIN_DIR "/*.conf (\"\": none)\n"
	       "  --cgroup-root DIR        read cgroups under DIR instead of discovering them\n"
	       "  --socket PATH            varlink socket (default /run/acctd/io.acctd as root)\n"
	       "  --metrics-listen ADDR    HOST:PORT for /metrics and the page (/ui/), or none (default "
	       ACCT_METRICS_DEFAULT_LISTEN ")\n"
	       "  --log-level LEVEL        err, warning, notice, info or debug\n"
	       "  --check-config           validate the configuration, print it, exit: 0 valid, 1 invalid,\n"
	       "                           3 valid but something in it is ignored (an unknown key)\n"
	       "  --dump                   sample once, print the ledger as JSON, exit\n"
	       "  --bpf-pin                as root: load the BPF cgroup iterator and pin it in\n"
	       "                           [sampling] bpf_pin_dir for the unprivileged daemon, exit\n"
	       "  --state-file PATH        write the ledger (tombstones too) as JSON to PATH after every pass\n"
	       "  --meminfo FILE           check the root's memory against FILE instead of /proc/meminfo\n"
	       "                           (default with --cgroup-root or [cgroups] root: no such check)\n"
	       "  --version                print the version\n"
	       "  -h, --help               print this help\n\n"
	       "See 'man acctd'; every configuration key, its default and what the error\n"
	       "budgets mean: 'man acctd.conf'.\n");
}

static int parse_argv(int argc, char **argv, struct manager_config_source *src, enum action *action)
{
	enum { ARG_CONFIG = 0x100, ARG_DROPINS, ARG_ROOT, ARG_SOCKET, ARG_METRICS, ARG_LOG_LEVEL, ARG_CHECK,
	       ARG_DUMP, ARG_BPF_PIN, ARG_VERSION, ARG_STATE_FILE, ARG_MEMINFO };
	static const struct option options[] = {
		{ "config", required_argument, NULL, ARG_CONFIG },
		{ "config-dropins", required_argument, NULL, ARG_DROPINS },
		{ "cgroup-root", required_argument, NULL, ARG_ROOT },
		{ "socket", required_argument, NULL, ARG_SOCKET },
		{ "metrics-listen", required_argument, NULL, ARG_METRICS },
		{ "log-level", required_argument, NULL, ARG_LOG_LEVEL },
		{ "check-config", no_argument, NULL, ARG_CHECK },
		{ "dump", no_argument, NULL, ARG_DUMP },
		{ "bpf-pin", no_argument, NULL, ARG_BPF_PIN },
		{ "state-file", required_argument, NULL, ARG_STATE_FILE },
		{ "meminfo", required_argument, NULL, ARG_MEMINFO },
		{ "version", no_argument, NULL, ARG_VERSION },
		{ "help", no_argument, NULL, 'h' },
		{}
	};
	int c;

	while ((c = getopt_long(argc, argv, "h", options, NULL)) >= 0) {
		const char *section = NULL, *key = NULL, *origin = NULL;
		switch (c) {
		case ARG_CONFIG:
			src->main_file = optarg;
			break;
		case ARG_DROPINS:
			src->dropin_dir = optarg;
			break;
		case ARG_ROOT:
			section = "cgroups", key = "root", origin = "--cgroup-root";
			break;
		case ARG_SOCKET:
			section = "api", key = "socket", origin = "--socket";
			break;
		case ARG_METRICS:
			section = "metrics", key = "listen", origin = "--metrics-listen";
			break;
		case ARG_LOG_LEVEL:
			section = "log", key = "level", origin = "--log-level";
			break;
		case ARG_CHECK:
			*action = CHECK_CONFIG;
			break;
		case ARG_DUMP:
			*action = DUMP;
			break;
		case ARG_BPF_PIN:
			*action = BPF_PIN;
			break;
		case ARG_STATE_FILE:
			src->state_file = optarg;
			break;
		case ARG_MEMINFO:
			src->meminfo_file = optarg;
			break;
		case ARG_VERSION:
			*action = VERSION;
			break;
		case 'h':
			*action = HELP;
			break;
		default:
			return -EINVAL;
		}
		if (section) {
			if (src->nr_overrides >= sizeof(src->overrides) / sizeof(src->overrides[0]))
				return -E2BIG;
			src->overrides[src->nr_overrides].section = section;
			src->overrides[src->nr_overrides].key = key;
			src->overrides[src->nr_overrides].value = optarg;
			src->overrides[src->nr_overrides].origin = origin;
			src->nr_overrides++;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "acctd: unexpected argument '%s'\n", argv[optind]);
		return -EINVAL;
	}
	return 0;
}

/* --check-config: the configuration read as a start would read it, and
 * nothing else (no cgroup is scanned). Exit status: 0 when it is valid and
 * nothing was ignored, 1 when acctd would refuse it, CHECK_CONFIG_IGNORED when
 * it is valid but ignores something (a deployment script can tell). */
#define CHECK_CONFIG_IGNORED 3
DEFINE_TRIVIAL_CLEANUP_FUNC(struct acct_config *, acct_config_free)
static int check_config(const struct manager_config_source *src)
{
	_cleanup_(acct_config_diag_clear) struct acct_config_diag diag = { 0 };
	_cleanup_(acct_config_freep) struct acct_config *c = NULL;
	int r;

	r = manager_config_load(src, &c, &diag);
	for (size_t i = 0; i < diag.nr_warnings; i++)
		fprintf(stderr, "acctd: warning: %s\n", diag.warnings[i]);
	if (r < 0) {
		fprintf(stderr, "acctd: %s\n", diag.error ? diag.error : strerror(-r));
		return 1;
	}
	acct_config_dump(c, stdout);
	if (fflush(stdout) != 0 || ferror(stdout))
		return 1;
	return diag.nr_warnings > 0 ? CHECK_CONFIG_IGNORED : 0;
}

/* The values of the options that set configuration keys (--log-level,
 * --metrics-listen, ...), validated as the configuration will apply them,
 * before any file is read: a bad one is an invalid command line (exit 2),
 * as an unknown option is, not a refused configuration (1). Returns 0,
 * -EINVAL with the message printed, or -ENOMEM. */
static int check_overrides(const struct manager_config_source *src)
{
	_cleanup_(acct_config_diag_clear) struct acct_config_diag diag = { 0 };
	_cleanup_(acct_config_freep) struct acct_config *c = NULL;
	int r;

	r = acct_config_new_defaults(&c);
	for (unsigned i = 0; r >= 0 && i < src->nr_overrides; i++)
		r = acct_config_set(c, src->overrides[i].section, src->overrides[i].key, src->overrides[i].value,
				    src->overrides[i].origin, &diag);
	if (r == -ENOMEM)
		return r;
	if (r < 0) {
		fprintf(stderr, "acctd: %s\n", diag.error ? diag.error : strerror(-r));
		return -EINVAL;
	}
	return 0;
}

/* What serves the manager's data, in the order they start and end: the
 * varlink API (first: it detaches its connections from the history's
 * queries before they end), /metrics (which shows the API's figures), and
 * the state file. */
static int add_frontends(struct manager *m)
{
	struct api_server *api = NULL;
	int r;

	r = api_server_add(m, &api);
	if (r >= 0)
		r = metrics_server_add(m, api);
	if (r >= 0)
		r = state_file_add(m);
	if (r < 0)
		return log_oom();
	return 0;
}

/* At the stop, how long the queued log may wait for its reader. */
#define LOG_STOP_WAIT_US (1 * USEC_PER_SEC)

int main(int argc, char **argv)
{
	struct manager_config_source src = { 0 };
	enum action action = RUN;
	_cleanup_(manager_freep) struct manager *m = NULL;
	int r;

	log_open();
	if (parse_argv(argc, argv, &src, &action) < 0) {
		fprintf(stderr, "Try 'acctd --help'.\n");
		return 2;
	}
	if (action == HELP) {
		help();
		return 0;
	}
	if (action == VERSION) {
		printf("acctd " ACCTD_VERSION "\n");
		return 0;
	}
	r = check_overrides(&src);
	if (r == -ENOMEM) {
		log_oom();
		return 1;
	}
	if (r < 0) {
		fprintf(stderr, "Try 'acctd --help'.\n");
		return 2;
	}
	if (action == BPF_PIN)
		return bpf_pin_run(&src);
	if (action == CHECK_CONFIG)
		return check_config(&src);
	if (action == RUN)
		/* A reader of the log that goes away (acctd 2>&1 | less, then q)
		 * must not end the daemon: its lines are dropped and counted
		 * (log.h), as under systemd, whose IgnoreSIGPIPE= is on. */
		(void)signal(SIGPIPE, SIG_IGN);
	r = manager_new(&src, &m);
	if (r < 0)
		return 1;
	if (action == DUMP)
		r = manager_dump(m, stdout);
	else {
		/* From here a slow reader of the log cannot hold acctd up
		 * (log.h): messages are queued, dropped and counted when full. */
		(void)log_start_writer();
		r = add_frontends(m);
		if (r >= 0)
			r = manager_start(m);
		if (r >= 0)
			r = manager_run(m);
		m = manager_free(m);
		log_stop_writer(LOG_STOP_WAIT_US);
	}
	return r < 0 ? 1 : r;
}
