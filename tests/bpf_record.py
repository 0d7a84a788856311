"""bpf_record.py - the BPF collector's records, for tests that read pinned
iterators (tests/integration/test_bpf_pin.py, the boot test).

A record (lib/bpf/cgroup-record.h) is a fixed head, whose layout is mirrored
here with ctypes, and a tail of 8-byte values whose length the head gives:
size = head + 8 * (nr_state + nr_nodes * nr_node_items). records() checks
that a read tiles into whole records exactly, so a test needs no compiler.

    python3 bpf_record.py FILE    prints the number of records in FILE, or
                                  exits 1 saying what does not add up"""
import ctypes
import os
import re
import sys

RECORD_H = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "lib", "bpf", "cgroup-record.h")
RECORD_MAGIC = 0x61637462  # ACCT_BPF_RECORD_MAGIC, "actb"


def _head():
    text = open(RECORD_H).read()
    nr_events = len(re.search(r"enum acct_bpf_event \{(.*?)_ACCT_BPF_EV_MAX", text, re.S).group(1).split(","))
    u8, u16, u32, i32, u64 = ctypes.c_uint8, ctypes.c_uint16, ctypes.c_uint32, ctypes.c_int32, ctypes.c_uint64

    class Head(ctypes.LittleEndianStructure):
        _fields_ = [("magic", u32), ("size", u32), ("id", u64), ("flags", u32), ("level", i32),
                    ("nr_descendants", i32), ("nr_state", u16), ("nr_nodes", u8), ("nr_node_items", u8)] + \
                   [(n, u64) for n in ("usage", "swap_usage", "watermark", "max", "high", "swap_max", "failcnt",
                                       "stats_updates")] + \
                   [("events", u64 * (nr_events - 1))] + \
                   [("psi_total", u64 * int(re.search(r"#define ACCT_BPF_PSI_MAX (\d+)", text).group(1))),
                    ("nr_psi", u32), ("psi_pad", u32)]
    return Head


Head = _head()


def records(data):
    """The heads of the records in data; ValueError unless data is whole
    records, each with the magic and the size its own counts give."""
    heads, off = [], 0
    while off < len(data):
        if len(data) - off < ctypes.sizeof(Head):
            raise ValueError("%d bytes at offset %d: less than a record's head (%d)" %
                             (len(data) - off, off, ctypes.sizeof(Head)))
        h = Head.from_buffer_copy(data, off)
        want = ctypes.sizeof(Head) + 8 * (h.nr_state + h.nr_nodes * h.nr_node_items)
        if h.magic != RECORD_MAGIC or h.size != want or off + h.size > len(data):
            raise ValueError("offset %d: magic %#x size %d (%d expected, %d bytes left)" %
                             (off, h.magic, h.size, want, len(data) - off))
        heads.append(h)
        off += h.size
    return heads


if __name__ == "__main__":
    try:
        print(len(records(open(sys.argv[1], "rb").read())))
    except ValueError as e:
        print("not whole records:", e)
        sys.exit(1)
