#!/usr/bin/python3
"""check-journal.py - the boot test's check of acctd's journal.

    journalctl -u acctd -o json | check-journal.py

Passes (exit 0) when acctd's own entries (SYSLOG_IDENTIFIER=acctd) all carry
the structured fields of lib/basic/log.c (MESSAGE, PRIORITY, CODE_FILE, CODE_LINE,
CODE_FUNC), the expected messages are there with their priorities (ready and
stopping at info, the refused reload at err), and nothing else was logged at
warning or above: that would be the sandbox getting in acctd's way.

One exception: acctd --bpf-pin (ExecStartPre=) logs through its stdout stream
("<N>message", log.h LOG_TARGET_JOURNAL_STREAM), since a native message of a
process that has exited loses its unit in journald. Its entries
(_TRANSPORT=stdout) carry MESSAGE and PRIORITY only, and must come from no
process that also logged natively: the daemon itself never uses the stream.
At least one of them says what it pinned."""
import json
import sys

FIELDS = ("MESSAGE", "PRIORITY", "CODE_FILE", "CODE_LINE", "CODE_FUNC")
EXPECTED = (("Ready", "6"), ("Reload failed", "3"), ("Received", "6"))
# The second: step 1b listens on 0.0.0.0 before a daemon-reload, on purpose.
ALLOWED_WARNINGS = ("Reload failed", "[metrics] listen = 0.0.0.0:9847 is not a loopback address")


def main():
    entries = [json.loads(line) for line in sys.stdin if line.strip()]
    own = [e for e in entries if e.get("SYSLOG_IDENTIFIER") == "acctd"]
    ok = bool(own)
    if not own:
        print("no journal entries from acctd itself")
    native_pids = {e.get("_PID") for e in own if e.get("_TRANSPORT") != "stdout"}
    for e in own:
        fields = FIELDS
        if e.get("_TRANSPORT") == "stdout":
            fields = FIELDS[:2]
            if e.get("_PID") in native_pids:
                print("the daemon wrote to its stdout: %s" % json.dumps(e))
                ok = False
        missing = [f for f in fields if f not in e]
        if missing:
            print("entry without %s: %s" % (", ".join(missing), json.dumps(e)))
            ok = False
    if not any(e.get("_TRANSPORT") == "stdout" and ": pinned at " in e.get("MESSAGE", "") for e in own):
        print("no line of acctd --bpf-pin's through its stream (\"...: pinned at ...\", _TRANSPORT=stdout)")
        ok = False
    for prefix, prio in EXPECTED:
        if not any(e.get("MESSAGE", "").startswith(prefix) and e.get("PRIORITY") == prio for e in own):
            print("no '%s...' at priority %s" % (prefix, prio))
            ok = False
    for e in own:
        msg = e.get("MESSAGE", "")
        if int(e.get("PRIORITY", "7")) <= 4 and not msg.startswith(ALLOWED_WARNINGS):
            print("unexpected priority %s: %s (%s:%s)" % (e["PRIORITY"], msg, e.get("CODE_FILE"), e.get("CODE_LINE")))
            ok = False
    if ok:
        print("journal: %d entries from acctd, all structured" % len(own))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
