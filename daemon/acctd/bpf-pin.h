/* bpf-pin.h - acctd --bpf-pin: the privileged half of the BPF collector.
 *
 * acctd runs as an unprivileged user without capabilities, which cannot load
 * a BPF program. So a privileged step (ExecStartPre=+ in acctd.service, run as
 * root) loads the cgroup iterator, attaches it to every hierarchy, tells it
 * which memory.stat items to copy per NUMA node, and pins the links in bpffs
 * ([sampling] bpf_pin_dir) with mode 0644; the daemon then reads the pins with
 * plain read(). docs/systemd.md ("BPF: the privilege split") says why and what
 * it costs. */
#pragma once

#include "manager.h"

/* Do what acctd --bpf-pin does, with the configuration of src: with
 * collector = files, remove the pins of an earlier run; otherwise mount bpffs
 * at /sys/fs/bpf if nothing is mounted there, attach the iterator to every
 * hierarchy of the host's layout and pin it at bpf_pin_dir/<hierarchy>,
 * replacing earlier pins. Prints (or logs, under systemd) one line per
 * hierarchy: pinned, or why not.
 *
 * Returns the exit status: 0 when at least one hierarchy was pinned, when
 * BPF is unavailable with collector = auto (the daemon then reads files: a
 * missing BPF must not keep the service from starting), and for
 * collector = files; 1 on a real error (the configuration, the layout, a pin
 * directory that is not on bpffs, out of memory) and with collector = bpf
 * when nothing could be pinned. */
int bpf_pin_run(const struct manager_config_source *src);
