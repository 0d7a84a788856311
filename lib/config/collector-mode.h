/* collector-mode.h - the names of [sampling] collector's modes and the default
 * place of pinned iterators: configuration, kept here rather than beside the
 * BPF collector so that parsing acctd.conf needs no BPF (the generator parses
 * it and links neither the program nor libbpf). */
#pragma once

/* Where acctd --bpf-pin pins the iterators and the daemon looks for them by
 * default ([sampling] bpf_pin_dir). */
#define ACCT_BPF_PIN_DIR "/sys/fs/bpf/acctd"

/* [sampling] collector = ... */
enum acct_collector_mode {
	ACCT_COLLECTOR_AUTO,  /* BPF where it works, files elsewhere */
	ACCT_COLLECTOR_BPF,   /* BPF required: acctd refuses to start without it */
	ACCT_COLLECTOR_FILES, /* cgroupfs files only */
	_ACCT_COLLECTOR_MAX,
};
/* "auto", "bpf", "files"; NULL outside the enum. */
const char *acct_collector_mode_to_string(enum acct_collector_mode m);
/* The mode named s, or -EINVAL. */
int acct_collector_mode_from_string(const char *s);
