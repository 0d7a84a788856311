/* cgfs-parse.h - parsers for the files of cgroupfs and /proc that acctd reads.
 *
 * Pure functions over a NUL-terminated buffer holding a whole file: no I/O, no
 * allocation unless stated, no logging. Every parser is strict: a malformed
 * file (missing fields, junk after a number, a truncated line, a number that
 * does not fit) is refused with -EBADMSG or -ERANGE and *ret is not written,
 * so that a garbage read fails that one sample and nothing else.
 * Common rules: lines end in '\n' (the last one may lack it, but an empty line
 * is malformed); fields are separated by exactly one space, with no leading or
 * trailing blanks; numbers are unsigned decimal without sign ("-1" and "+1"
 * are -EBADMSG) and junk in a token wins over its overflow. Callback parsers
 * check the whole buffer before the first call: a malformed file never reaches
 * fn. A NULL buffer, callback or (unless stated) output is -EINVAL. No locale
 * is consulted.
 * Formats follow the kernel's Documentation/admin-guide/cgroup-v2.rst and
 * cgroup-v1/{memory,cpuacct}.rst; fixtures are in tests/data/kernel. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define CGFS_MAX_NODES 64   /* NUMA nodes a numa_stat line may list */
#define CGFS_KEY_MAX 64     /* longest key kept from a flat-keyed file; longer is -EBADMSG */

/* A single value ("12345\n"). "max" (v2 limits) gives UINT64_MAX. v1 limits
 * use a huge number (9223372036854771712) for "no limit"; it is returned as is. */
int cgfs_parse_u64(const char *buf, uint64_t *ret);

/* Flat keyed files ("key value\n" per line: memory.stat, cpu.stat, cgroup.events,
 * cgroup.stat, cpuacct.stat, v1 cpu.stat). fn is called for every line in order;
 * a non-zero return from fn stops the parse and is returned. Lines must be
 * "KEY SP VALUE" with VALUE an unsigned 64-bit decimal; an empty file is valid.
 * KEY is 1..CGFS_KEY_MAX printable ASCII bytes without blanks; fn gets it as a
 * pointer into buf, not NUL-terminated. Returns 0, fn's value, or
 * -EBADMSG/-ERANGE. */
typedef int (*cgfs_kv_fn)(const char *key, size_t key_len, uint64_t value, void *userdata);
int cgfs_parse_flat_keyed(const char *buf, cgfs_kv_fn fn, void *userdata);

/* Look one key up in a flat-keyed buffer (the whole buffer is checked; the
 * first of duplicate keys wins). Returns 0, -ENOENT when absent, or a parse
 * error. */
int cgfs_flat_keyed_get(const char *buf, const char *key, uint64_t *ret);

/* Pressure stall information (cpu.pressure, memory.pressure, io.pressure and
 * /proc/pressure/ *):
 *   some avg10=0.00 avg60=0.00 avg300=0.00 total=0
 *   full avg10=0.00 avg60=0.00 avg300=0.00 total=0
 * "full" is absent in older kernels' cpu.pressure (present=false, zeros then).
 * "some" must come first, "full" only second; the avgs are "D+.DD" exactly,
 * read as fixed point (the double nearest the decimal, as strtod() in the C
 * locale would give). */
struct cgfs_psi_line {
	bool present;
	double avg10, avg60, avg300; /* percent */
	uint64_t total_us;           /* cumulative stall time */
};
struct cgfs_psi {
	struct cgfs_psi_line some, full;
};
int cgfs_parse_pressure(const char *buf, struct cgfs_psi *ret);

/* v2 cpu.stat (usage_usec, user_usec, system_usec, and with the cpu controller
 * nr_periods, nr_throttled, throttled_usec, nr_bursts, burst_usec) and v1
 * cpu.stat (nr_periods, nr_throttled, throttled_time in ns, converted to
 * throttled_usec, rounded down). Fields the file lacks are 0 with their has_
 * flag false. Each group comes whole or not at all: part of one, a key twice,
 * throttled_usec with throttled_time, or neither group is -EBADMSG. Other keys
 * (nice_usec, nr_bursts, wait_sum, ...) are ignored. */
struct cgfs_cpu_stat {
	uint64_t usage_usec, user_usec, system_usec;
	uint64_t nr_periods, nr_throttled, throttled_usec;
	bool has_usage, has_throttling;
};
int cgfs_parse_cpu_stat(const char *buf, struct cgfs_cpu_stat *ret);

/* v1 cpuacct.stat ("user N\nsystem N\n" in USER_HZ ticks): converted to
 * microseconds with `user_hz` ticks per second (rounded down, no intermediate
 * overflow). Both keys are required, others ignored. Returns 0, -EBADMSG,
 * -ERANGE (a result above UINT64_MAX) or -EINVAL (user_hz 0). */
int cgfs_parse_cpuacct_stat(const char *buf, unsigned user_hz, uint64_t *ret_user_usec,
			    uint64_t *ret_system_usec);

/* v1 cpuacct.usage_percpu: space-separated nanoseconds per CPU. Stores up to
 * `max` values and the count in *ret_n. -ERANGE for a value above UINT64_MAX
 * (*ret_n untouched) or for more values than max (*ret_n then says how many
 * there are); nothing is written to values on any error. At least one
 * value; the kernel's trailing space is optional. values may be NULL when
 * max is 0. */
int cgfs_parse_percpu(const char *buf, uint64_t *values, size_t max, size_t *ret_n);

/* memory.numa_stat.
 * v2: lines "KEY N0=BYTES N1=BYTES ..." (anon, file, kernel_stack, ...).
 * v1: lines "KEY=TOTAL N0=PAGES N1=PAGES ..." (total, file, anon, unevictable,
 *     and hierarchical_* ones), values in pages.
 * fn gets each line's key, its per-node values (index = node number, nodes not
 * listed are 0) and the number of node slots used (highest node + 1). For v1
 * `total` is the KEY=TOTAL value, for v2 the sum. Units are as in the file:
 * the caller multiplies v1 pages by the page size. All lines of a file have one
 * format; each lists at least one node, node numbers strictly increasing; a
 * node >= CGFS_MAX_NODES or a v2 sum above UINT64_MAX is -ERANGE. */
typedef int (*cgfs_numa_fn)(const char *key, size_t key_len, uint64_t total, const uint64_t *per_node,
			    size_t nr_nodes, void *userdata);
int cgfs_parse_numa_stat(const char *buf, cgfs_numa_fn fn, void *userdata);

/* A v1 memory.numa_stat's memory per node, in pages: the hierarchical_total
 * line (the cgroup and its descendants, as memory.usage_in_bytes counts them)
 * where the kernel gives it, else the total line (the cgroup's own pages;
 * kernels before hierarchical_* lines). Fills per_node[0..max) (nodes not
 * listed are 0), the node slots used in *ret_nodes and whether the values are
 * hierarchical in *ret_hierarchical (may be NULL). Returns 0, the parse error
 * of cgfs_parse_numa_stat(), -ENOENT when neither line is there, or -ERANGE
 * when a line lists a node >= max. Nothing is written on failure. */
int cgfs_numa_v1_nodes(const char *buf, uint64_t *per_node, size_t max, size_t *ret_nodes, bool *ret_hierarchical);

/* /proc/meminfo: "Key:   VALUE kB" (or without a unit, e.g. HugePages_Total).
 * Values with "kB" are returned in bytes. key is given without the colon
 * (-EINVAL otherwise); the whole buffer is checked. Returns 0, -ENOENT, or a
 * parse error. */
int cgfs_meminfo_get(const char *buf, const char *key, uint64_t *ret);

/* cgroup.events: "populated 0|1" and "frozen 0|1". "populated" is required,
 * "frozen" (5.2+) reads as false when absent; other keys are ignored. Either
 * output may be NULL. */
int cgfs_parse_events(const char *buf, bool *ret_populated, bool *ret_frozen);

/* cgroup.procs / tasks: one PID per line. fn is called per PID; returns 0, fn's
 * value, -EBADMSG (also for PID 0) or -ERANGE (a PID above INT_MAX). */
typedef int (*cgfs_pid_fn)(int pid, void *userdata);
int cgfs_parse_pids(const char *buf, cgfs_pid_fn fn, void *userdata);

/* /proc/PID/stat: the state letter (field 3), parsed past the parenthesised
 * comm, which may itself hold spaces and parentheses (the last ')' closes it).
 * The letter must be one of task_state_array's (RSDTtXZPI, and xKW of older
 * kernels) followed by a space or the end. Returns 0, -EBADMSG or -ERANGE. */
int cgfs_parse_proc_stat_state(const char *buf, char *ret_state);

/* ---- block I/O and memory events ---- */

/* I/O of one block device: bytes and operations read, written and discarded.
 * `present` has a bit per field (1u << enum cgfs_io_field) the file gave. */
enum cgfs_io_field {
	CGFS_IO_RBYTES,
	CGFS_IO_WBYTES,
	CGFS_IO_RIOS,
	CGFS_IO_WIOS,
	CGFS_IO_DBYTES,
	CGFS_IO_DIOS,
	_CGFS_IO_FIELD_MAX,
};
#define CGFS_IO_MAX_DEVICES 64 /* devices one file may list */
struct cgfs_io_device {
	unsigned major, minor;
	uint64_t v[_CGFS_IO_FIELD_MAX];
	uint8_t present;
};

/* v2 io.stat: one line per device, "MAJ:MIN KEY=VALUE KEY=VALUE ...". The
 * keys rbytes, wbytes, rios, wios, dbytes, dios are unsigned decimals (at
 * most once each per line); other keys (io.cost's cost.vrate=135.04,
 * iolatency's depth=max, ...) are skipped, but must be KEY=TOKEN with both
 * non-empty and blank-free. A line names at least one KEY=VALUE, except
 * "MAJ:MIN " alone (Linux 6.1's root io.stat: a device with no I/O), which is
 * left out; a device appears at most once; an empty file (no I/O yet) is
 * valid. Stores up to
 * `max` devices in file order and their count in *ret_n; more is -ERANGE.
 * Nothing is written on error. */
int cgfs_parse_io_stat(const char *buf, struct cgfs_io_device *devs, size_t max, size_t *ret_n);

/* v1 blkio rwstat files (blkio.throttle.io_service_bytes[_recursive] with
 * `ios` false: bytes; blkio.throttle.io_serviced[_recursive] with `ios`
 * true: operations): lines "MAJ:MIN OP VALUE" with OP one of Read, Write,
 * Sync, Async, Discard, Total (others are skipped), each op at most once per
 * device and a device's lines together, then a last line "Total VALUE" (the
 * sum of the devices' Total), which is required. Read, Write and Discard go
 * to the read, write and discard field of the kind `ios` selects; Sync, Async
 * and Total are checked for syntax only. The devices are merged into
 * devs[0..*n_inout): a device already there gets the fields, a new one is
 * appended (-ERANGE beyond `max`; nothing written then), so the bytes file
 * and the operations file fill one array. Discard is absent in kernels before
 * 4.19 (its bit stays clear). ret_total may be NULL. */
int cgfs_parse_blkio_rwstat(const char *buf, bool ios, struct cgfs_io_device *devs, size_t max, size_t *n_inout,
			    uint64_t *ret_total);

/* v2 memory.events (and memory.events.local): flat keyed, "low", "high",
 * "max", "oom", "oom_kill" and "oom_group_kill" (5.16+) counts; other keys
 * (sock_fail, ...) are ignored, a known key twice is -EBADMSG. `present` has
 * a bit per field (1u << enum cgfs_memory_event) the file gave. */
enum cgfs_memory_event {
	CGFS_MEMEV_LOW,
	CGFS_MEMEV_HIGH,
	CGFS_MEMEV_MAX,
	CGFS_MEMEV_OOM,
	CGFS_MEMEV_OOM_KILL,
	CGFS_MEMEV_OOM_GROUP_KILL,
	_CGFS_MEMEV_MAX,
};
struct cgfs_memory_events {
	uint64_t v[_CGFS_MEMEV_MAX];
	uint8_t present;
};
int cgfs_parse_memory_events(const char *buf, struct cgfs_memory_events *ret);

/* v1 memory.oom_control: flat keyed "oom_kill_disable 0|1", "under_oom 0|1"
 * and (4.13+) "oom_kill N". under_oom is required (0 or 1); oom_kill reads as
 * absent (*ret_has_oom_kill false, *ret_oom_kill 0) on older kernels. */
int cgfs_parse_oom_control(const char *buf, bool *ret_under_oom, uint64_t *ret_oom_kill, bool *ret_has_oom_kill);
