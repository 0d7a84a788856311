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
struct task_struct {
	unsigned int __state;
	int exit_state;
	int pid;
	int tgid;
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

/* task_state_index()'s values (include/linux/sched.h), stable since 5.14. */
#define TASK_REPORT 0x7f
#define TASK_UNINTERRUPTIBLE 0x2
#define TASK_IDLE 0x402
#define TASK_RTLOCK_WAIT 0x1000

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
	/* As task_state_index() reports it: R is no state bit, D is
	 * TASK_UNINTERRUPTIBLE as the highest reported bit, except the idle
	 * kernel threads (I) and with an rtmutex's sleep counted as D. */
	u32 ts = BPF_CORE_READ(t, __state);
	u32 st = (ts | (u32)BPF_CORE_READ(t, exit_state)) & TASK_REPORT;
	if (ts == TASK_RTLOCK_WAIT || (ts != TASK_IDLE && (st == 0 || (st & ~1u) == TASK_UNINTERRUPTIBLE)))
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
