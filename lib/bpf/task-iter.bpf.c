/* task-iter.bpf.c - a BPF task iterator that writes one struct
 * acct_task_record per thread (task-record.h): its cgroup in each hierarchy
 * asked for and whether it is active (R or D), so that one walk replaces a
 * cgroup.threads read per cgroup and a /proc/<tid>/stat read per thread.
 *
 * Built like cgroup-iter.bpf.c: no kernel headers, the few fields read are
 * declared with preserve_access_index and relocated against the running
 * kernel's BTF (CO-RE). A kernel that lacks one of them (task_struct's
 * __state is Linux 5.14's name) refuses the load, and threads keep coming
 * from files. */
#include "task-record.h"

#include "bpf-prelude.h"

enum cgroup_subsys_id { cpu_cgrp_id, cpuacct_cgrp_id, io_cgrp_id, memory_cgrp_id };

struct kernfs_node { u64 id; } __pai;
struct cgroup { struct kernfs_node *kn; } __pai;
struct cgroup_subsys_state { struct cgroup *cgroup; } __pai;
struct css_set {
	struct cgroup_subsys_state *subsys[16];
	struct cgroup *dfl_cgrp;
} __pai;
/* Only with CONFIG_FAIR_GROUP_SCHED (sched_entity's cfs_rq) and
 * CONFIG_CFS_BANDWIDTH (throttle_count): read where the kernel has them. */
struct cfs_rq { int throttle_count; } __pai;
struct sched_entity { struct cfs_rq *cfs_rq; } __pai;
struct task_struct {
	_Bool throttled; /* Linux 6.18's task-based CFS throttling */
	unsigned int __state;
	int exit_state;
	int pid;
	int tgid;
	unsigned int policy;
	struct sched_entity se;
	struct css_set *cgroups;
} __pai;

struct seq_file;
struct bpf_iter_meta { struct seq_file *seq; } __pai;
struct bpf_iter__task {
	struct bpf_iter_meta *meta;
	struct task_struct *task;
} __pai;

/* Which slots to fill (bss, set by the reader before each walk): bit per
 * enum acct_hierarchy. */
__u32 slots = 0;

/* The state bits of include/linux/sched.h, stable since 5.14 (TASK_FROZEN
 * since 6.1; before, a frozen task kept its sleeping state). */
#define TASK_REPORT 0x7f
#define TASK_UNINTERRUPTIBLE 0x2
#define TASK_NOLOAD 0x400
#define TASK_RTLOCK_WAIT 0x1000
#define TASK_FROZEN 0x8000
/* The policies of the fair class (include/uapi/linux/sched.h). */
#define SCHED_NORMAL 0
#define SCHED_BATCH 3
#define SCHED_IDLE 5

/* Whether runnable task t is held back by CFS bandwidth control (cpu.max,
 * cpu.cfs_quota_us) so that the load average does not count it, though it
 * stays R in /proc. How depends on the kernel:
 * - Linux 6.18 and later throttle tasks, not groups: a task of a throttled
 *   group runs on to its return to user space, and only then leaves the run
 *   queue (throttle_cfs_rq_work() sets task_struct's `throttled`). Until
 *   then it is queued and counted, also while it waits behind other tasks:
 *   beside two CPU hogs, kernel-truth's quota'd burners were, and a check
 *   of the group alone made acctd's root load 2.6 below the kernel's.
 * - Before, throttle_cfs_rq() takes a throttled group's tasks out of the run
 *   queue's count (calc_load_fold_active()) at once; tg_throttle_down()
 *   raises throttle_count of the throttled cfs_rq and of every one below it.
 * A task of another class (RT, deadline) has no say in a cfs_rq. 0 where the
 * kernel has no group scheduling or no bandwidth control: nothing is
 * throttled there. */
static __always_inline int cfs_throttled(struct task_struct *t)
{
	if (bpf_core_field_exists(t->throttled) && bpf_core_field_size(t->throttled) == 1)
		return BPF_CORE_READ(t, throttled);
	if (!bpf_core_field_exists(t->se.cfs_rq) ||
	    !bpf_core_field_exists(((struct cfs_rq *)0)->throttle_count))
		return 0;
	u32 policy = BPF_CORE_READ(t, policy);
	if (policy != SCHED_NORMAL && policy != SCHED_BATCH && policy != SCHED_IDLE)
		return 0;
	return BPF_CORE_READ(t, se.cfs_rq, throttle_count) > 0;
}

/* The id of the cgroup that css_set cs puts a task in, in the hierarchy of
 * controller ssid; 0 when the controller is not in this kernel. */
static __always_inline u64 v1_id(struct css_set *cs, u32 ssid)
{
	struct cgroup_subsys_state *css = 0;
	if (ssid >= 16 || bpf_probe_read_kernel(&css, sizeof(css), (char *)cs + bpf_core_field_offset(cs->subsys) +
							   ssid * sizeof(void *)) || !css)
		return 0;
	return BPF_CORE_READ(css, cgroup, kn, id);
}

SEC("iter/task")
int acct_task_iter(struct bpf_iter__task *ctx)
{
	struct seq_file *seq = ctx->meta->seq;
	struct task_struct *t = ctx->task;
	struct acct_task_record r = {};

	if (!t) /* the end of the walk */
		return 0;
	r.tid = BPF_CORE_READ(t, pid);
	if (BPF_CORE_READ(t, tgid) == (int)(bpf_get_current_pid_tgid() >> 32))
		r.flags |= ACCT_TASK_F_SELF;
	/* Active as the load average counts (kernel/sched/core.c): running
	 * or runnable on a run queue, no reported state bit, or asleep
	 * uninterruptible without TASK_NOLOAD (the idle kernel threads). A
	 * frozen task counts neither way, nor does an rtlock's sleep:
	 * /proc/<tid>/stat shows both as D (task_state_index()), which the
	 * load average leaves out; nor a runnable task of a CFS-throttled
	 * group, R in /proc (cfs_throttled()). */
	u32 ts = BPF_CORE_READ(t, __state);
	u32 st = (ts | (u32)BPF_CORE_READ(t, exit_state)) & TASK_REPORT;
	int runnable = st == 0 && !(ts & (TASK_FROZEN | TASK_RTLOCK_WAIT)) && !cfs_throttled(t);
	int blocked = (ts & TASK_UNINTERRUPTIBLE) && !(ts & (TASK_NOLOAD | TASK_FROZEN));
	if (runnable || blocked)
		r.flags |= ACCT_TASK_F_ACTIVE;

	struct css_set *cs = BPF_CORE_READ(t, cgroups);
	u32 want = slots;
	if (cs) {
		if (want & 1)
			r.cgroup[0] = BPF_CORE_READ(cs, dfl_cgrp, kn, id);
		if ((want & 2) && bpf_core_enum_value_exists(enum cgroup_subsys_id, memory_cgrp_id))
			r.cgroup[1] = v1_id(cs, bpf_core_enum_value(enum cgroup_subsys_id, memory_cgrp_id));
		if ((want & 4) && bpf_core_enum_value_exists(enum cgroup_subsys_id, cpuacct_cgrp_id))
			r.cgroup[2] = v1_id(cs, bpf_core_enum_value(enum cgroup_subsys_id, cpuacct_cgrp_id));
		if ((want & 8) && bpf_core_enum_value_exists(enum cgroup_subsys_id, cpu_cgrp_id))
			r.cgroup[3] = v1_id(cs, bpf_core_enum_value(enum cgroup_subsys_id, cpu_cgrp_id));
		if ((want & 16) && bpf_core_enum_value_exists(enum cgroup_subsys_id, io_cgrp_id))
			r.cgroup[4] = v1_id(cs, bpf_core_enum_value(enum cgroup_subsys_id, io_cgrp_id));
	}
	bpf_seq_write(seq, &r, sizeof(r));
	return 0;
}

char LICENSE[] SEC("license") = "GPL";
