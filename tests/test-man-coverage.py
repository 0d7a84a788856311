#!/usr/bin/python3
"""test-man-coverage.py - the man pages (docs/man/*.scd) say what the programs do.

Checks the scdoc sources against the built programs and the interface file,
so that a key, option, command or method added to the code without its man
page fails the test (and one removed from the code leaves no stale entry):

1. acctd.conf(5): every key that "acctd --check-config" prints with the
   built-in defaults is an item "*KEY =* ..." under "## [SECTION]", and that
   item says "Default: *VALUE*." (or "Default: empty") with the value acctd
   prints. The keys are also read from lib/config/config.c's keys[] table and
   must be the same set, so neither source can hide a key from the check.
2. acctd(8): every option of "acctd --help" is an item.
3. acctctl(1): every command of "acctctl --help", every option of it and of
   each "acctctl COMMAND --help", every exit status and every QUANTITY that
   "acctctl compare --help" lists.
4. io.acctd.Accounting(7): every method, type and error that
   daemon/acctd/io.acctd.Accounting.varlink declares.
5. acct_charge(3): every symbol that lib/client/acct-client.sym exports in
   its version nodes after ACCT_CLIENT_0 (the charging calls, issue 32) is
   named in the page's NAME section and declared in its SYNOPSIS.

Usage: test-man-coverage.py ACCTD ACCTCTL
Exit 0 when all hold, 1 otherwise (each finding on its own line).
"""
import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MAN = os.path.join(ROOT, "docs", "man")

# Keys whose built-in default depends on who runs acctd: the page states the
# rule instead of one value (/run/acctd/io.acctd as root, else below
# $XDG_RUNTIME_DIR), so only the root case is compared, and only as root.
DEFAULT_BY_CALLER = {("api", "socket"): "/run/acctd/io.acctd", ("history", "path"): "/var/lib/acctd/history.db",
                     ("api", "charge_state_path"): "/var/lib/acctd/charges.state"}

LONG_OPTION = re.compile(r"(?<![\w-])--([a-z][a-z-]*[a-z])")
SHORT_OPTION = re.compile(r"(?<![\w-])-([a-zA-Z])\b")


def read(path):
    with open(path, encoding="utf-8") as f:
        return f.read()


def run(argv):
    p = subprocess.run(argv, capture_output=True, text=True, timeout=60)
    if p.returncode != 0:
        sys.exit("%s exited with %d: %s" % (" ".join(argv), p.returncode, p.stderr.strip()))
    return p.stdout


def unescape(s):
    """scdoc's backslash escapes: \\* is *, \\_ is _."""
    return re.sub(r"\\(.)", r"\1", s)


def indent(line):
    return len(line) - len(line.lstrip("\t"))


def items(text):
    """{term: body} of scdoc's items: a line (at any depth of tabs) followed
    directly by lines indented one tab deeper or more."""
    out = {}
    lines = text.splitlines()
    for i, line in enumerate(lines):
        term = line.lstrip("\t")
        if not term or term[0] in " #;-`":
            continue
        body = []
        for nxt in lines[i + 1:]:
            if not nxt.strip() or indent(nxt) <= indent(line):
                break
            body.append(nxt.strip())
        if body:
            out[term] = " ".join(body)
    return out


def sections(text, level):
    """{heading: text below it} for the headings of `level` ("#" or "##")."""
    out = {}
    parts = re.split(r"^(%s .*)$" % re.escape(level), text, flags=re.M)
    for head, body in zip(parts[1::2], parts[2::2]):
        out[head[len(level) + 1:].strip()] = body
    return out


def config_keys_from_dump(acctd):
    dump = run([acctd, "--check-config", "--config", "", "--config-dropins", ""])
    keys, section = {}, None
    for line in dump.splitlines():
        m = re.match(r"^\[(\w+)\]$", line)
        if m:
            section = m.group(1)
            continue
        m = re.match(r"^(\w+) =(?: (.*))?$", line)
        if m and section:
            keys[(section, m.group(1))] = m.group(2) or ""
    return keys


def config_keys_from_table():
    src = read(os.path.join(ROOT, "lib", "config", "config.c"))
    table = re.search(r"keys\[\] = \{(.*?)\n\};", src, re.S)
    if not table:
        return None
    return set(re.findall(r'KEY(?:_AT_START)?\("(\w+)",\s*"(\w+)"', table.group(1)))


def check_config_page(acctd, errors):
    page = read(os.path.join(MAN, "acctd.conf.5.scd"))
    keys = config_keys_from_dump(acctd)
    table = config_keys_from_table()
    if not keys:
        errors.append("acctd --check-config printed no keys")
    if table is None:
        errors.append("lib/config/config.c: no keys[] table found")
    elif table != set(keys):
        for s, k in sorted(table ^ set(keys)):
            errors.append("[%s] %s: in %s but not in %s" % (
                s, k, *(("keys[]", "--check-config") if (s, k) in table else ("--check-config", "keys[]"))))

    documented = set()
    for head, body in sections(page, "##").items():
        m = re.fullmatch(r"\[(\w+)\]", head)
        if not m:
            continue
        for term, text in items(body).items():
            km = re.match(r"^\*(\w+) =\*", term)
            if not km:
                continue
            key = (m.group(1), km.group(1))
            documented.add(key)
            if key not in keys:
                errors.append("acctd.conf.5.scd: [%s] %s is documented but acctd has no such key" % key)
                continue
            dm = re.search(r"Default: (empty|\*((?:\\.|[^*\\])*)\*)", text)
            if not dm:
                errors.append("acctd.conf.5.scd: [%s] %s: no \"Default:\" in its entry" % key)
                continue
            said = "" if dm.group(1) == "empty" else unescape(dm.group(2))
            want = keys[key]
            if key in DEFAULT_BY_CALLER:
                if said != DEFAULT_BY_CALLER[key] or (os.geteuid() == 0 and want != said):
                    errors.append("acctd.conf.5.scd: [%s] %s: says the default is '%s', acctd as root uses '%s'"
                                  % (*key, said, want if os.geteuid() == 0 else DEFAULT_BY_CALLER[key]))
            elif said != want:
                errors.append("acctd.conf.5.scd: [%s] %s: says the default is '%s', acctd --check-config says '%s'"
                              % (*key, said, want))
    # [resource.NAME]: the keys of resource_keys[], each an item of its section.
    src = read(os.path.join(ROOT, "lib", "config", "config-resources.c"))
    rtable = re.search(r"resource_keys\[\] = \{(.*?)\n\};", src, re.S)
    rkeys = set(re.findall(r'RKEY\("(\w+)"', rtable.group(1))) if rtable else set()
    if not rkeys:
        errors.append("lib/config/config.c: no resource_keys[] table found")
    rbody = sections(page, "##").get("[resource.NAME]")
    if rbody is None:
        errors.append("acctd.conf.5.scd: no section \"## [resource.NAME]\"")
    else:
        rdoc = {m.group(1) for m in (re.match(r"^\*(\w+) =\*", t) for t in items(rbody)) if m}
        for k in sorted(rkeys - rdoc):
            errors.append("acctd.conf.5.scd: [resource.NAME] %s is missing" % k)
        for k in sorted(rdoc - rkeys):
            errors.append("acctd.conf.5.scd: [resource.NAME] %s is documented but acctd has no such key" % k)
    for key in sorted(set(keys) - documented):
        errors.append("acctd.conf.5.scd: [%s] %s is missing (no item \"*%s =* ...\" under \"## [%s]\")"
                      % (key[0], key[1], key[1], key[0]))


def option_terms(page):
    """The options the page documents as item terms: "*--name*", "*-x*"."""
    terms = set()
    for term in items(page):
        terms.update("--" + o for o in re.findall(r"\*--([a-z][a-z-]*)\*", term))
        terms.update("-" + o for o in re.findall(r"\*-([a-zA-Z])\*", term))
    return terms


def help_options(text):
    """Options a --help text names in its option lines (those starting with -)."""
    found = set()
    for line in text.splitlines():
        if re.match(r"^\s+-", line):
            first = line.strip().split("  ")[0]
            found.update("--" + o for o in LONG_OPTION.findall(first))
            found.update("-" + o for o in SHORT_OPTION.findall(first))
    return found


def check_acctd_page(acctd, errors):
    page = read(os.path.join(MAN, "acctd.8.scd"))
    options = help_options(run([acctd, "--help"]))
    if not options:
        errors.append("acctd --help: no options found")
    documented = option_terms(sections(page, "#").get("OPTIONS", ""))
    for o in sorted(options - documented):
        errors.append("acctd.8.scd: option %s of acctd --help is missing from OPTIONS" % o)
    for o in sorted(documented - options - {"-h"}):
        errors.append("acctd.8.scd: option %s is documented but acctd --help does not list it" % o)


def check_acctctl_page(acctctl, errors):
    page = read(os.path.join(MAN, "acctctl.1.scd"))
    main = run([acctctl, "--help"])
    commands = re.search(r"^Commands:\n(.*?)\n\n", main, re.S | re.M)
    verbs = re.findall(r"^  ([a-z]+)", commands.group(1), re.M) if commands else []
    if not verbs:
        errors.append("acctctl --help: no commands found")
    options = help_options(main.split("Options:", 1)[-1])
    quantities = set()
    for v in verbs:
        text = run([acctctl, v, "--help"])
        options |= help_options(text)
        q = re.search(r"^QUANTITY: (.*?)\.\n", text, re.S | re.M)
        if q:
            quantities |= {w.strip() for w in q.group(1).replace("\n", " ").split(",")}
    statuses = re.findall(r"^  (\d)  ", main.split("Exit status:", 1)[-1], re.M)

    heads = sections(page, "#")
    cmd_terms = {re.match(r"^\*([a-z]+)\*", t).group(1)
                 for t in items(heads.get("COMMANDS", "")) if re.match(r"^\*([a-z]+)\*", t)}
    for v in verbs:
        if v not in cmd_terms:
            errors.append("acctctl.1.scd: command %s is missing from COMMANDS" % v)
    for v in sorted(cmd_terms - set(verbs)):
        errors.append("acctctl.1.scd: command %s is documented but acctctl --help does not list it" % v)

    documented = option_terms(heads.get("COMMANDS", "") + heads.get("OPTIONS", ""))
    for o in sorted(options - documented):
        errors.append("acctctl.1.scd: option %s of acctctl's help is missing (no item \"*%s*\")" % (o, o))

    exit_terms = {t.strip("*") for t in items(heads.get("EXIT STATUS", "")) if re.fullmatch(r"\*\d\*", t)}
    if not statuses:
        errors.append("acctctl --help: no exit statuses found")
    for s in statuses:
        if s not in exit_terms:
            errors.append("acctctl.1.scd: exit status %s is missing from EXIT STATUS" % s)

    for q in sorted(quantities):
        if "*%s*" % q not in page:
            errors.append("acctctl.1.scd: quantity %s of acctctl compare --help is missing" % q)


def check_interface_page(errors):
    page = read(os.path.join(MAN, "io.acctd.Accounting.7.scd"))
    iface = read(os.path.join(ROOT, "daemon", "acctd", "io.acctd.Accounting.varlink"))
    names = re.findall(r"^(method|type|error) (\w+)", iface, re.M)
    if not names:
        errors.append("io.acctd.Accounting.varlink: no declarations found")
    heads = sections(page, "#")
    terms = {
        "method": list(items(heads.get("METHODS", ""))),
        "type": list(items(heads.get("TYPES", ""))),
        "error": list(items(heads.get("ERRORS", ""))),
    }
    # A method's item starts "*Name*(", an error's "*io.acctd.Accounting.Name*";
    # a type's item names it among others ("*Pressure*, *PressureLine*").
    pattern = {
        "method": r"^\*%s\*\(",
        "type": r"(^|, )\*%s\*(,|$)",
        "error": r"^\*io\.acctd\.Accounting\.%s\*",
    }
    for kind, name in names:
        if not any(re.search(pattern[kind] % name, t) for t in terms[kind]):
            errors.append("io.acctd.Accounting.7.scd: %s %s is missing from %sS" % (kind, name, kind.upper()))


def check_charge_page(errors):
    sym = read(os.path.join(ROOT, "lib", "client", "acct-client.sym"))
    page = read(os.path.join(MAN, "acct_charge.3.scd"))
    name = page.split("# NAME", 1)[-1].split("# SYNOPSIS", 1)[0]
    synopsis = page.split("# SYNOPSIS", 1)[-1].split("# DESCRIPTION", 1)[0]
    nodes = re.findall(r"(ACCT_CLIENT_\d+)\s*\{(.*?)\}", sym, re.S)
    if len(nodes) < 2:
        errors.append("acct-client.sym: no version node after ACCT_CLIENT_0")
    for node, body in nodes[1:]:
        for symbol in re.findall(r"^\s*(acct_\w+);", body, re.M):
            if not re.search(r"\b%s\b" % symbol, name):
                errors.append("acct_charge.3.scd: %s (%s) is not named in NAME" % (symbol, node))
            if not re.search(r"\b%s\(" % symbol, synopsis):
                errors.append("acct_charge.3.scd: %s (%s) is not declared in SYNOPSIS" % (symbol, node))


def main():
    if len(sys.argv) != 3:
        sys.exit("usage: test-man-coverage.py ACCTD ACCTCTL")
    errors = []
    check_config_page(sys.argv[1], errors)
    check_acctd_page(sys.argv[1], errors)
    check_acctctl_page(sys.argv[2], errors)
    check_interface_page(errors)
    check_charge_page(errors)
    for e in errors:
        print(e)
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
