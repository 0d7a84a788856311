#!/usr/bin/env python3
"""test-varlink-idl-check.py - the interface checker accepts the grammar and
nothing else.

A checker that accepted everything would let `make check` pass on an invalid
interface file, so it is tested here on valid interfaces that use every part
of the grammar and on inputs that break one rule each, with the line of the
error it must report.

Usage: test-varlink-idl-check.py [INTERFACE-FILE]  (the installed interface
file, which must pass, and must fail once a member's name is repeated)."""

import importlib.util
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
spec = importlib.util.spec_from_file_location('idl', os.path.join(HERE, 'varlink-idl-check.py'))
idl = importlib.util.module_from_spec(spec)
spec.loader.exec_module(idl)

# Every construct of the grammar, in the shapes the specification shows.
VALID = [
    '''# The Varlink Service Interface is provided by every varlink service.
interface org.varlink.service

# Get a list of all the interfaces a service provides.
method GetInfo() -> (
  vendor: string,
  product: string,
  version: string,
  url: string,
  interfaces: []string
)

method GetInterfaceDescription(interface: string) -> (description: string)
error InterfaceNotFound (interface: string)
error PermissionDenied ()
''',
    '''interface org.example.more-test
type MyType (
   example_bool: bool,
   example_int: int,
   example_float: float,
   example_string: string,
   example_object: object,
   example_enum: (one, two, three),
   example_struct: (first: int, second: string),
   example_array: []string,
   example_dictionary: [string]string,
   example_stringset: [string](),
   example_nullable: ?string,
   example_nullable_array_struct: ?[](first: int, second: string),
   example_array_of_nullable: []?int,
   example_other_type: MyOtherType,
   camelCase: int
)
type MyOtherType (a: int)  # a comment after a member
type Colour (red, green, blue)
method Ping(x: ?MyType) -> ()
''',
    'interface io.systemd.Hostname\nmethod Describe() -> (Hostname: string)\n',
    'interface a.b\nerror E ()\n',
]

# (what it breaks, text, line of the error)
INVALID = [
    ('duplicate member: a type and a method', 'interface a.b\ntype Status (a: int)\nmethod Status() -> (s: Status)\n', 3),
    ('duplicate member: two errors', 'interface a.b\nerror E ()\nerror E (x: int)\n', 3),
    ('duplicate field', 'interface a.b\ntype T (\n  a: int,\n  a: string\n)\n', 4),
    ('duplicate method parameter', 'interface a.b\nmethod M(a: int, a: int) -> ()\n', 2),
    ('duplicate enum value', 'interface a.b\ntype T (x, y, x)\n', 2),
    ('interface name without a dot', 'interface acctd\nerror E ()\n', 1),
    ('interface name with an underscore', 'interface io.acct_d\nerror E ()\n', 1),
    ('interface name ending in a hyphen', 'interface io.acctd-\nerror E ()\n', 1),
    ('interface name with an empty label', 'interface io..acctd\nerror E ()\n', 1),
    ('interface name with a hyphen after a dot', 'interface io.-acctd\nerror E ()\n', 1),
    ('member name in lower case', 'interface a.b\nmethod status() -> ()\n', 2),
    ('member name with an underscore', 'interface a.b\ntype My_Type (a: int)\n', 2),
    ('field name with a leading underscore', 'interface a.b\ntype T (_a: int)\n', 2),
    ('field name with a trailing underscore', 'interface a.b\ntype T (a_: int)\n', 2),
    ('field name with a double underscore', 'interface a.b\ntype T (a__b: int)\n', 2),
    ('field name starting with a digit', 'interface a.b\ntype T (1a: int)\n', 2),
    ('field name with a hyphen', 'interface a.b\ntype T (a-b: int)\n', 2),
    ('no interface line', 'type T (a: int)\n', 1),
    ('a member before the interface line', 'error E ()\ninterface a.b\n', 1),
    ('no member', 'interface a.b\n# nothing\n', 3),
    ('two members on one line', 'interface a.b\nerror E () error F ()\n', 2),
    ('a method without ->', 'interface a.b\nmethod M() ()\n', 2),
    ('a method with an enum for parameters', 'interface a.b\nmethod M(a, b) -> ()\n', 2),
    ('a type that is not a parenthesised list', 'interface a.b\ntype T int\n', 2),
    ('a missing comma', 'interface a.b\ntype T (a: int\n b: int)\n', 3),
    ('a trailing comma', 'interface a.b\ntype T (a: int,)\n', 2),
    ('an unclosed list', 'interface a.b\ntype T (a: int\n', 3),
    ('a nullable nullable', 'interface a.b\ntype T (a: ??int)\n', 2),
    ('a map keyed by int', 'interface a.b\ntype T (a: [int]string)\n', 2),
    ('an unknown type', 'interface a.b\ntype T (a: Missing)\n', 2),
    ('a method used as a type', 'interface a.b\nmethod M() -> ()\ntype T (a: M)\n', 3),
    ('a builtin type in the wrong case', 'interface a.b\ntype T (a: Int)\n', 2),
    ('a list mixing fields and enum values', 'interface a.b\ntype T (a: int, b)\n', 2),
    ('a keyword that does not exist', 'interface a.b\nstruct T (a: int)\n', 2),
    ('a comment without a final newline', 'interface a.b\nerror E ()\n# end', 3),
]


def main():
    failures = 0
    for text in VALID:
        err = idl.check_text(text)
        if err is not None:
            print('FAIL: valid interface rejected at %d:%d: %s\n%s' % (*err, text))
            failures += 1
    for what, text, line in INVALID:
        err = idl.check_text(text)
        if err is None:
            print('FAIL: accepted %s:\n%s' % (what, text))
            failures += 1
        elif err[0] != line:
            print('FAIL: %s reported on line %d, not %d: %s' % (what, err[0], line, err[2]))
            failures += 1
    if len(sys.argv) > 1:
        with open(sys.argv[1], encoding='utf-8') as f:
            text = f.read()
        err = idl.check_text(text)
        if err is not None:
            print('FAIL: %s:%d:%d: %s' % (sys.argv[1], *err))
            failures += 1
        # Each member's name repeated by a new error must be caught.
        names = [line.split()[1].split('(')[0] for line in text.splitlines()
                 if line.split()[:1] in (['type'], ['method'], ['error'])]
        for name in names:
            if idl.check_text(text + 'error %s ()\n' % name) is None:
                print('FAIL: %s with a second member %r accepted' % (sys.argv[1], name))
                failures += 1
        print('%s: valid, %d member names each caught when repeated' % (sys.argv[1], len(names)))
    print('%d valid and %d invalid inputs checked, %d failures' % (len(VALID), len(INVALID), failures))
    return 1 if failures else 0


if __name__ == '__main__':
    sys.exit(main())
