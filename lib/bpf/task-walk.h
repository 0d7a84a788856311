/* task-walk.h - every thread's cgroups and state in one read, through a BPF
 * task iterator (task-iter.bpf.c, records in task-record.h), instead of a
 * cgroup.threads read per cgroup and a /proc/<tid>/stat read per thread.
 *
 * The sampler uses it at load passes for each cgroup's own threads and the
 * active ones among them (lib/core/sample-load.c), and cross-checks it
 * against the files it replaces; files remain the fallback where it cannot
 * be loaded (no BTF, no privilege: a pinned cgroup iterator does not give
 * it) and after repeated mismatches.
 *
 * Pid 1. On this project's machines (a Firecracker VM whose init is not
 * systemd) the kernel's task iterator never visits pid 1's thread group,
 * although /proc shows it; a walk that did not see tid 1 adds its threads
 * from /proc/1/task (their states and cgroups), so that the root's task
 * count stays whole (kernel-truth compares it with the kernel's).
 *
 * Privilege. Loading the program needs CAP_BPF and CAP_PERFMON. An
 * unprivileged daemon (acctd.service) reads a walk that the privileged pin
 * step (acctd --bpf-pin) attached and pinned in bpffs: opening the pin and
 * reading it needs only the file's permission, no bpf(). Such a walk cannot
 * be told which slots to fill: it fills those it was pinned with.
 *
 * Tests: ACCTD_TEST_TASK_WALK_DROP=1 in the environment drops the records
 * of odd tids, a kernel that misses threads, for the sampler's cross-check.
 *
 * Threads: one thread at a time uses a walk (the sampler's worker 0). */
#pragma once

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "cgroup/cgroup-layout.h"
#include "task-record.h"

struct acct_task_walk;

/* Load and attach the program; layout (kept, must outlive the walk) says
 * where each hierarchy is mounted, for pid 1's threads read from /proc.
 * Returns 0 with *ret, or a negative errno
 * with *ret NULL and `reason` (at least 160 bytes) saying why in an
 * operator's words: -ENOENT without kernel BTF at btf_path (NULL: the
 * running kernel's), -EPERM without the privilege, -EINVAL or -EACCES when
 * the verifier refused the program, -ENOMEM. */
int acct_task_walk_new(const struct acct_hierarchies *layout, const char *btf_path, struct acct_task_walk **ret,
		       char *reason, size_t reason_size);
/* Use the walk pinned at `path` (acct_task_walk_pin()) instead of loading
 * one: no privilege beyond the pin's file mode. Opens it once to check that
 * it can be read. Returns 0 with *ret, or a negative errno with *ret NULL
 * and `reason` set: -ENOENT where nothing is pinned there (the caller may
 * attach one itself), -EACCES or -EPERM where it may not be read, -EINVAL
 * where the file is not a pinned iterator, -ENOMEM. */
int acct_task_walk_open_pin(const struct acct_hierarchies *layout, const char *path, struct acct_task_walk **ret,
			    char *reason, size_t reason_size);
/* Pin w's link at `path` (on bpffs; an existing file there is replaced),
 * mode 0644, with `slots` as the slots every read of the pin fills (bit per
 * enum acct_hierarchy: the hierarchies mounted). Needs the privilege that
 * loaded it; w must not be a pin opened with acct_task_walk_open_pin().
 * Returns 0 or a negative errno. */
int acct_task_walk_pin(struct acct_task_walk *w, uint32_t slots, const char *path);
/* Where w's records come from, in an operator's words: "task iterator,
 * attached" or "task iterator pinned at PATH". Valid while w lives. */
const char *acct_task_walk_source(const struct acct_task_walk *w);
/* Detach and free. Accepts NULL; returns NULL. */
struct acct_task_walk *acct_task_walk_free(struct acct_task_walk *w);

/* Walk every thread, filling the slots of `slots` (bit per enum
 * acct_hierarchy; a pinned walk fills those it was pinned with, whatever
 * `slots` says). Returns the number of records, valid in *ret_records
 * until the next call or the free, or a negative errno (-ENOMEM, a read
 * error, -EBADMSG when the output is not whole records). Costs one BPF
 * program run per thread (a few probe reads per slot) and one copy of its
 * 48-byte record, plus three small /proc reads per thread of pid 1 where
 * the iterator misses it. */
ssize_t acct_task_walk_read(struct acct_task_walk *w, uint32_t slots, const struct acct_task_record **ret_records);
