#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Run one libweft tool and check what it printed; report in TAP.

  tool-tap.py [--exit N] [--stderr-has TEXT] [--expect PATH OP VALUE]... -- TOOL ARG...

Each option is one TAP test point:
  --exit N                  the tool's exit status is N (default 0; always checked)
  --stderr-has TEXT         its standard error contains TEXT
  --expect PATH OP VALUE    in the last JSON line of its standard output, PATH
                            (dotted keys or list indexes; "results.*.lost" =
                            every entry of the list "results", which must not
                            be empty)
                            compares OP (== != >= > <=) to VALUE (JSON: 0,
                            "pass", true)
The tool's output is shown as TAP diagnostics ("# ").  See docs/testing.md.
"""
import json
import operator
import subprocess
import sys

OPS = {"==": operator.eq, "!=": operator.ne, ">=": operator.ge, ">": operator.gt,
       "<=": operator.le}


def values(doc, path):
    """Every value at PATH; None when a key is missing or a list is empty."""
    vals = [doc]
    for key in path.split("."):
        nxt = []
        for v in vals:
            if key == "*":
                if not isinstance(v, list) or not v:
                    return None
                nxt.extend(v)
            elif isinstance(v, dict) and key in v:
                nxt.append(v[key])
            elif isinstance(v, list) and key.isdigit() and int(key) < len(v):
                nxt.append(v[int(key)])
            else:
                return None
        vals = nxt
    return vals


def main(argv):
    if "--" not in argv:
        print("Bail out! usage: tool-tap.py [checks] -- TOOL ARG...")
        return 2
    sep = argv.index("--")
    opts, cmd = argv[:sep], argv[sep + 1:]
    want_exit, stderr_has, expects = 0, [], []
    i = 0
    while i < len(opts):
        if opts[i] == "--exit":
            want_exit = int(opts[i + 1])
            i += 2
        elif opts[i] == "--stderr-has":
            stderr_has.append(opts[i + 1])
            i += 2
        elif opts[i] == "--expect" and opts[i + 2] in OPS:
            expects.append((opts[i + 1], opts[i + 2], json.loads(opts[i + 3])))
            i += 4
        else:
            print("Bail out! bad option %r" % opts[i])
            return 2
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    except (OSError, subprocess.TimeoutExpired) as e:
        print("Bail out! cannot run %s: %s" % (" ".join(cmd), e))
        return 2
    for line in (p.stdout + p.stderr).splitlines()[-40:]:
        print("# " + line)
    n = 0
    bad = 0

    def point(ok, what):
        nonlocal n, bad
        n += 1
        bad += not ok
        print("%s %d - %s" % ("ok" if ok else "not ok", n, what.replace("#", "\\#")))

    point(p.returncode == want_exit, "exit status %d (got %d)" % (want_exit, p.returncode))
    for text in stderr_has:
        point(text in p.stderr, "standard error says %r" % text)
    doc = None
    if expects:
        lines = [l for l in p.stdout.splitlines() if l.startswith("{")]
        try:
            doc = json.loads(lines[-1]) if lines else None
        except json.JSONDecodeError:
            doc = None
    for path, op, want in expects:
        got = values(doc, path) if doc is not None else None
        ok = got is not None and all(
            type(g) is type(want) or (isinstance(g, (int, float)) and isinstance(want, (int, float)))
            for g in got) and all(OPS[op](g, want) for g in got)
        shown = "no JSON" if doc is None else "missing" if got is None else \
            (json.dumps(got[0]) if len(got) == 1 else json.dumps(got) if len(got) <= 8 else
             "%d values, %d not matching" % (len(got), sum(not OPS[op](g, want) for g in got)))
        point(ok, "%s %s %s (got %s)" % (path, op, json.dumps(want), shown))
    print("1..%d" % n)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
