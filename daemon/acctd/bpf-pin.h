/* bpf-pin.h - acctd --bpf-pin: the privileged half of the BPF collector.
 *
 * acctd runs as an unprivileged user without capabilities, which cannot load
 * a BPF program. So a privileged step (ExecStartPre=+ in acctd.service, run as
 * root) loads the cgroup iterator, attaches it to every hierarchy, tells it
 * which memory.stat items to copy per NUMA node, and pins the links in bpffs
 * ([sampling] bpf_pin_dir) with mode 0644; the daemon then reads the pins with
 * plain read(). The task iterator (threads and their states, for tasks and
 * load: lib/bpf/task-walk.h) is pinned beside them at BPF_PIN_TASKS.
 * docs/systemd.md ("BPF: the privilege split") says why and what
 * it costs. */
#pragma once

#include "manager.h"

/* Where --bpf-pin leaves the daemon the reason it pinned nothing, when it
 * did (root-only /run: cleared at boot, written only by root); the
 * environment's ACCTD_BPF_PIN_REPORT stands in for it (tests). Two lines:
 * the pin directory, then the reason. */
#define BPF_PIN_REPORT "/run/acctd-bpf-pin"
#define BPF_PIN_REPORT_MAX 4096
/* The task iterator's pin in bpf_pin_dir (no hierarchy has this name). */
#define BPF_PIN_TASKS "tasks"

/* Do what acctd --bpf-pin does, with the configuration of src: with
 * collector = files, remove the pins of an earlier run; otherwise remove the
 * pins of an earlier run, attach the iterator to every hierarchy of the
 * host's layout, mount bpffs at /sys/fs/bpf if nothing is mounted there and
 * the pins go below it (only then: where nothing loads, nothing is mounted),
 * and pin it at bpf_pin_dir/<hierarchy>; then pin the task iterator at
 * bpf_pin_dir/BPF_PIN_TASKS, with every mounted hierarchy's slot (not with
 * cgroup_root set: its cgroups are the kernel's). Prints (or logs, under
 * systemd) one line per hierarchy that is not pinned and why, one per pin,
 * or one line saying why nothing was pinned; and a "threads:" line, pinned
 * or why not (which fails nothing: the daemon counts threads from files).
 *
 * BPF is unavailable wherever the kernel or its policy refuses any step:
 * no bpffs that can be mounted, a read-only or refusing bpffs, pins of an
 * earlier run that cannot be removed, bpf() refused (EPERM, no CAP_BPF, a
 * seccomp filter), no BTF, a verifier that refuses the program. Then with
 * collector = auto it leaves the reason at BPF_PIN_REPORT for the daemon
 * (which then opens no pin in bpf_pin_dir and reads files, showing the
 * reason in Status) and exits 0: a missing BPF must not keep the service
 * from starting; with collector = bpf it exits 1.
 *
 * Returns the exit status: 0 when at least one hierarchy was pinned (the
 * report is removed), when BPF is unavailable with collector = auto, and for
 * collector = files (pins it cannot remove are only noted, and reported so
 * that a later collector = auto does not read them); 1 on a real error (not root, the configuration, no cgroup
 * hierarchy, a pin directory outside /sys/fs/bpf that is not on bpffs, out
 * of memory) and with collector = bpf when nothing could be pinned. */
int bpf_pin_run(const struct manager_config_source *src);

/* For the daemon: the reason --bpf-pin left for pin directory dir (see
 * BPF_PIN_REPORT), at most BPF_PIN_REPORT_MAX bytes read, from a regular
 * file of root's, never through a symlink. Returns 1 with *ret_reason a
 * malloc'ed copy (free() it); 0 when there is none for dir (the pins there,
 * if any, are this boot's latest); a negative errno when it cannot be read
 * or is not root's (-EPERM), *ret_reason untouched. */
int bpf_pin_report_read(const char *dir, char **ret_reason);
