"""bpf_record.py - the size of the BPF collector's record, for tests that read
pinned iterators (tests/integration/test_bpf_pin.py, the boot test).

sizeof(struct acct_bpf_record) of lib/bpf/cgroup-record.h, computed with
ctypes from the header's own constants, so a test checks whole records
without a compiler."""
import ctypes
import os
import re

RECORD_H = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "lib", "bpf", "cgroup-record.h")
RECORD_MAGIC = 0x61637462  # ACCT_BPF_RECORD_MAGIC, "actb"


def record_size():
    """sizeof(struct acct_bpf_record), from cgroup-record.h's own constants."""
    text = open(RECORD_H).read()
    const = {k: int(v) for k, v in re.findall(r"#define (ACCT_BPF_\w+_MAX|ACCT_BPF_NODE_ITEMS) (\d+)", text)}
    nr_events = len(re.search(r"enum acct_bpf_event \{(.*?)_ACCT_BPF_EV_MAX", text, re.S).group(1).split(","))
    u32, i32, u64, i64 = ctypes.c_uint32, ctypes.c_int32, ctypes.c_uint64, ctypes.c_int64

    class Record(ctypes.Structure):
        _fields_ = [("magic", u32), ("size", u32), ("id", u64), ("flags", u32), ("level", i32),
                    ("nr_descendants", i32), ("nr_state", u32)] + \
                   [(n, u64) for n in ("usage", "swap_usage", "watermark", "max", "high", "swap_max", "failcnt",
                                       "stats_updates")] + \
                   [("events", u64 * (nr_events - 1)), ("state", i64 * const["ACCT_BPF_STATE_MAX"]),
                    ("node_state", i64 * const["ACCT_BPF_NODE_ITEMS"] * const["ACCT_BPF_NODES_MAX"])]
    return ctypes.sizeof(Record)


if __name__ == "__main__":
    print(record_size())
