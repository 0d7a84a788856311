#!/usr/bin/python3
"""jsonq.py - small queries on acctctl's JSON output for the boot test.

    jsonq.py get KEY         the first value of KEY anywhere (strings bare)
    jsonq.py sum KEY         the sum of the integer values of KEY anywhere
    jsonq.py has-suffix S    print the first string value that ends with S; exit 1 if none

Input on stdin: one JSON document, or one per line (acctctl --json=short
prints a list as a sequence of objects)."""
import json
import sys


def load(text):
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return [json.loads(line) for line in text.splitlines() if line.strip()]


def walk(o):
    """Every (key, value) pair in the document, depth first; list items have key None."""
    if isinstance(o, dict):
        for k, v in o.items():
            yield k, v
            yield from walk(v)
    elif isinstance(o, list):
        for v in o:
            yield None, v
            yield from walk(v)


def main():
    op, arg = sys.argv[1], sys.argv[2]
    doc = load(sys.stdin.read())
    if op == "get":
        v = next((v for k, v in walk(doc) if k == arg), None)
        print(v if isinstance(v, str) else json.dumps(v))
    elif op == "sum":
        print(sum(v for k, v in walk(doc) if k == arg and isinstance(v, int) and not isinstance(v, bool)))
    elif op == "has-suffix":
        found = next((v for _, v in walk(doc) if isinstance(v, str) and v.endswith(arg)), None)
        if found is None:
            return 1
        print(found)
    else:
        print("jsonq.py: unknown operation " + op, file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
