/* bpf-prelude.h - what acctd's BPF programs (cgroup-iter.bpf.c,
 * task-iter.bpf.c) start with instead of kernel headers: the integer types
 * libbpf's headers expect, those headers, and __pai for the kernel types each
 * program declares with only the fields it reads (CO-RE relocates them
 * against the running kernel's BTF). Compiled for the BPF target only. */
#pragma once

typedef unsigned char u8;
typedef unsigned int u32;
typedef unsigned long long u64;
typedef long long s64;
typedef u32 __u32;
typedef u64 __u64;
typedef u8 __u8;
typedef unsigned short __u16;
typedef int __s32;
typedef long long __s64;
typedef __u16 __be16;
typedef __u32 __be32;
typedef __u32 __wsum;

#include <bpf/bpf_helpers.h>
#include <bpf/bpf_core_read.h>

#define __pai __attribute__((preserve_access_index))
