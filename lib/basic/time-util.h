/* time-util.h - conversions between acctd's time unit, microseconds in a
 * uint64_t (see parse.h for the USEC_PER_* constants), and the structures of
 * the system and library interfaces. (Not "time.h": that would shadow the C
 * library's header for everything built with this folder on the include path.)
 * Pure: no I/O, no allocation. */
#pragma once

#include <stdint.h>
#include <sys/time.h>

/* `usec` as a struct timeval (libevent timeouts), exact: seconds and the
 * remaining microseconds. */
struct timeval timeval_from_usec(uint64_t usec);
