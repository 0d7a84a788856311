/* task-record.h - the record the BPF task iterator writes per thread.
 *
 * Shared by the BPF program (task-iter.bpf.c) and its reader (task-walk.c):
 * plain fixed-width types only. One record per thread the iterator visits
 * (every thread of acctd's pid namespace), in no particular order. */
#pragma once

/* One cgroup id per hierarchy, in the order of enum acct_hierarchy
 * (lib/cgroup/cgroup-layout.h): unified, memory, cpuacct, cpu, blkio. */
#define ACCT_TASK_SLOTS 5

enum acct_task_record_flags {
	/* Running or runnable (R), or uninterruptible (D) and not idle: what
	 * /proc/<tid>/stat shows as R or D, and what the load average counts. */
	ACCT_TASK_F_ACTIVE = 1u << 0,
	/* A thread of the process that reads the iterator (acctd itself). */
	ACCT_TASK_F_SELF = 1u << 1,
};

struct acct_task_record {
	unsigned int tid;   /* the kernel's pid of the thread (the init namespace's) */
	unsigned int flags; /* enum acct_task_record_flags */
	/* The thread's cgroup (kernfs node id, the directory's inode) in each
	 * hierarchy the reader asked for (the program's slot mask), 0 where
	 * not asked or not mounted. */
	unsigned long long cgroup[ACCT_TASK_SLOTS];
};
