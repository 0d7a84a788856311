#!/usr/bin/env python3
"""varlink-idl-check.py - check a varlink interface file against the grammar.

The interface file is what every client (and the reference implementations'
code generators) reads, so it must parse everywhere. This is a strict parser
of the grammar of https://varlink.org/Interface-Definition, written here so
that `make check` needs no network and no pip:

    interface  = ws "interface" wsp+ iface-name eol member+
    member     = ws ("type" wsp+ name wsp* typedef
                   | "method" wsp+ name wsp* struct wsp* "->" wsp* struct
                   | "error" wsp+ name wsp* struct) eol
    typedef    = struct | enum
    struct     = "(" ws [field *(ws "," ws field)] ws ")"
    enum       = "(" ws field-name *(ws "," ws field-name) ws ")"
    field      = field-name ws ":" ws type
    type       = ["?"] (element | "[]" type | "[string]" type)  (no "??")
    element    = "bool" | "int" | "float" | "string" | "object"
                 | name | struct | enum
    iface-name = ALPHA *("-"* ALNUM) 1*("." ALNUM *("-"* ALNUM))
                 (reverse domain; upper case as in io.systemd.Hostname, which
                 the current reference parsers accept)
    name       = [A-Z] *[A-Za-z0-9]              (types, methods, errors)
    field-name = [A-Za-z] *(["_"] [A-Za-z0-9])   (no leading, trailing or double _)
    ws         = *(" " / "\\t" / eol / comment), comment = "#" to the end of the line

and what the grammar cannot say: member names are unique across types,
methods and errors (they share one namespace: `type Status` beside `method
Status` is what the reference C parser rejects with DuplicateMemberName);
field names are unique within a struct, enum values within an enum; a named
type refers to a `type` member of the file.

Usage: varlink-idl-check.py FILE...   exits 0 when every file is valid, 1 with
"FILE:LINE:COL: message" on the first error of each invalid file.
Run as a module, check_text(text) returns None or (line, col, message).
"""

import re
import sys

IFACE_NAME = re.compile(r'[A-Za-z](-*[A-Za-z0-9])*(\.[A-Za-z0-9](-*[A-Za-z0-9])*)+')
NAME = re.compile(r'[A-Z][A-Za-z0-9]*')
FIELD_NAME = re.compile(r'[A-Za-z](_?[A-Za-z0-9])*')
WORD = re.compile(r'[A-Za-z0-9_.-]+')  # a whole word, so that a bad name is seen whole
BUILTIN = {'bool', 'int', 'float', 'string', 'object'}
KEYWORDS = ('type', 'method', 'error')


class IdlError(Exception):
    def __init__(self, pos, msg):
        super().__init__(msg)
        self.pos = pos
        self.msg = msg


class Parser:
    def __init__(self, text):
        self.s = text
        self.i = 0
        self.members = {}      # name -> (kind, pos)
        self.references = []   # (name, pos) of named types used

    # --- characters and blanks -------------------------------------------
    def fail(self, msg, pos=None):
        raise IdlError(self.i if pos is None else pos, msg)

    def peek(self, n=1):
        return self.s[self.i:self.i + n]

    def wsp(self):
        """Blanks within a line."""
        while self.peek() in (' ', '\t') and self.peek():
            self.i += 1

    def ws(self):
        """Blanks, line ends and comments."""
        while self.i < len(self.s):
            c = self.s[self.i]
            if c in ' \t\n':
                self.i += 1
            elif c == '#':
                self.comment()
            else:
                break

    def comment(self):
        end = self.s.find('\n', self.i)
        if end < 0:
            self.fail('comment not ended by a newline')
        self.i = end + 1

    def eol(self):
        """The end of a line, after optional blanks and a comment."""
        self.wsp()
        if self.peek() == '#':
            self.comment()
        elif self.peek() == '\n':
            self.i += 1
        else:
            self.fail('expected the end of the line, found %r' % (self.peek() or 'end of file'))

    def expect(self, token):
        if not self.s.startswith(token, self.i):
            self.fail('expected %r, found %r' % (token, self.peek() or 'end of file'))
        self.i += len(token)

    def word(self, rule, what):
        pos = self.i
        m = WORD.match(self.s, pos)
        if not m:
            self.fail('expected %s, found %r' % (what, self.peek() or 'end of file'))
        w = m.group(0)
        if not rule.fullmatch(w):
            self.fail('invalid %s %r' % (what, w), pos)
        self.i = m.end()
        return w, pos

    # --- the grammar -------------------------------------------------------
    def interface(self):
        self.ws()
        if not (self.s.startswith('interface', self.i) and self.s[self.i + 9:self.i + 10] in (' ', '\t')):
            self.fail('the file must begin with "interface NAME"')
        self.i += 9
        self.wsp()
        self.word(IFACE_NAME, 'interface name')
        self.eol()
        self.ws()
        if self.i >= len(self.s):
            self.fail('an interface needs at least one member')
        while self.i < len(self.s):
            self.member()
            self.ws()
        for name, pos in self.references:
            kind = self.members.get(name, (None,))[0]
            if kind is None:
                self.fail('unknown type %r' % name, pos)
            if kind != 'type':
                self.fail('%r is a %s, not a type' % (name, kind), pos)

    def member(self):
        pos = self.i
        m = WORD.match(self.s, pos)
        kw = m.group(0) if m else ''
        if kw not in KEYWORDS:
            self.fail('expected type, method or error, found %r' % (kw or self.peek() or 'end of file'))
        self.i = m.end()
        if self.peek() not in (' ', '\t'):
            self.fail('expected a blank after %r' % kw)
        self.wsp()
        name, npos = self.word(NAME, 'member name')
        if name in self.members:
            self.fail('duplicate member name %r (already used by a %s)' % (name, self.members[name][0]), npos)
        self.members[name] = (kw, npos)
        self.wsp()
        if kw == 'type':
            if self.peek() != '(':
                self.fail('expected "(" after the type name')
            self.struct_or_enum(allow_enum=True)
        elif kw == 'method':
            self.struct()
            self.wsp()
            self.expect('->')
            self.wsp()
            self.struct()
        else:
            self.struct()
        self.eol()

    def struct(self):
        if self.peek() != '(':
            self.fail('expected "("')
        kind = self.struct_or_enum(allow_enum=False)
        assert kind == 'struct'

    def struct_or_enum(self, allow_enum):
        """A parenthesised list of fields (struct) or of names (enum). An empty
        list is a struct."""
        self.expect('(')
        self.ws()
        if self.peek() == ')':
            self.i += 1
            return 'struct'
        kind = None
        seen = set()
        while True:
            name, npos = self.word(FIELD_NAME, 'field name')
            self.ws()
            this = 'struct' if self.peek() == ':' else 'enum'
            if kind is None:
                kind = this
                if kind == 'enum' and not allow_enum:
                    self.fail('expected ":" after field %r' % name)
            elif this != kind:
                self.fail('a list mixes fields and enum values')
            if name in seen:
                self.fail('duplicate %s %r' % ('field' if kind == 'struct' else 'enum value', name), npos)
            seen.add(name)
            if kind == 'struct':
                self.i += 1
                self.ws()
                self.type()
                self.ws()
            if self.peek() == ',':
                self.i += 1
                self.ws()
                continue
            if self.peek() == ')':
                self.i += 1
                return kind
            self.fail('expected "," or ")", found %r' % (self.peek() or 'end of file'))

    def type(self):
        if self.peek() == '?':
            self.i += 1
            if self.peek() == '?':
                self.fail('"??" is not a type: a nullable type cannot be nullable again')
        if self.peek(2) == '[]':
            self.i += 2
            return self.type_no_null_prefix()
        if self.peek(8) == '[string]':
            self.i += 8
            return self.type_no_null_prefix()
        if self.peek() == '[':
            self.fail('only [] and [string] are container types')
        if self.peek() == '(':
            self.struct_or_enum(allow_enum=True)
            return
        pos = self.i
        m = WORD.match(self.s, pos)
        if not m:
            self.fail('expected a type, found %r' % (self.peek() or 'end of file'))
        w = m.group(0)
        if w in BUILTIN:
            self.i = m.end()
            return
        name, _ = self.word(NAME, 'type name')
        self.references.append((name, pos))

    def type_no_null_prefix(self):
        # "[]?string" is valid (nullable elements); only "??" is not.
        return self.type()


def check_text(text):
    """None when text is a valid interface, else (line, column, message)."""
    p = Parser(text)
    try:
        p.interface()
    except IdlError as e:
        line = text.count('\n', 0, e.pos) + 1
        col = e.pos - (text.rfind('\n', 0, e.pos) + 1) + 1
        return (line, col, e.msg)
    return None


def main(argv):
    if len(argv) < 2:
        print('usage: varlink-idl-check.py FILE...', file=sys.stderr)
        return 2
    bad = 0
    for path in argv[1:]:
        with open(path, encoding='utf-8') as f:
            err = check_text(f.read())
        if err:
            print('%s:%d:%d: %s' % (path, *err))
            bad += 1
    return 1 if bad else 0


if __name__ == '__main__':
    sys.exit(main(sys.argv))
