/* bpf-bounds.h - the running kernel's memcg batching, read from its BTF: the
 * inputs of the memcg bounds (cgroup/memcg-bounds.h) that both collectors
 * serve with their values. Its own module so that its few rules (what a
 * kernel without BTF is taken to do, where the charge stock's size is found)
 * are tested and mutated apart from the collector's loading and walking
 * (tests/test-bpf-bounds.c, tools/mutate/targets).
 *
 * Threads: no state; any thread may call these. */
#pragma once

#include "cgroup/memcg-bounds.h"

struct btf;

/* The batching of the running kernel for nr_cpus CPUs (0: possible CPUs),
 * from its BTF where it has the charge stock type (btf_path NULL: the
 * kernel's, /sys/kernel/btf/vmlinux; else the file standing in for it).
 * Never fails: unknown parts take the values that make bounds largest.
 * Parsing BTF takes tens of milliseconds: call it once. */
void acct_bpf_memcg_batching_detect(struct acct_memcg_batching *ret, unsigned nr_cpus, const char *btf_path);

/* The same from BTF already parsed (NULL: none could be read, taken as
 * a kernel with the largest known stock), for a caller that reads more of
 * it (the collector). The BTF stays the caller's. */
void acct_bpf_memcg_batching_from_btf(struct acct_memcg_batching *ret, unsigned nr_cpus, const struct btf *btf);

/* The kernel's BTF (btf_path NULL) or the file standing in for it; NULL when
 * neither can be read. Free it with btf__free(). */
struct btf *acct_bpf_btf_load(const char *btf_path);
