/* acctctl.h - what every module of acctctl shares: its exit statuses, and
 * the command line as parsed (options.h), which most of them read. */
#pragma once

#include "options.h"

/* Exit statuses (also in --help and docs/acctctl.md). */
enum {
	EXIT_OK = 0,          /* compare: above */
	EXIT_FAIL = 1,        /* failure, or an error reported by acctd */
	EXIT_USAGE = 2,       /* invalid command line */
	EXIT_NOT_RUNNING = 3, /* nothing listens on the address */
	EXIT_DENIED = 4,      /* permission denied (socket or administrative call) */
	EXIT_BELOW = 5,       /* compare: below */
	EXIT_EQUAL = 6,       /* compare: equal */
};
