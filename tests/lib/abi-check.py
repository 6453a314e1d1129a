#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""abi-check.py LIB HEADER [--drop NAME --expect-difference]: TAP test that
the dynamic symbols LIB exports are exactly the functions HEADER declares
(docs/libweft.md, "ABI").  With --drop NAME the header is taken not to
declare NAME, and --expect-difference passes only if the comparison then
reports NAME as exported but not declared: the check is seen to fail on a
difference."""
import argparse
import re
import subprocess
import sys


def header_names(path):
    text = open(path, encoding="utf-8").read()
    text = re.sub(r"/\*.*?\*/", " ", text, flags=re.S)
    text = re.sub(r"//[^\n]*", " ", text)
    # Preprocessor lines, joined over their continuations.
    text = re.sub(r"^[ \t]*#(?:[^\n]*\\\n)*[^\n]*", " ", text, flags=re.M)
    return set(re.findall(r"\b(weft_\w+)\s*\(", text))


def exported_names(lib):
    out = subprocess.run(["nm", "-D", "--defined-only", lib], check=True,
                         capture_output=True, text=True).stdout
    names = set()
    for line in out.splitlines():
        f = line.split()
        if len(f) < 3 or f[1] == "A":   # A: the version node itself
            continue
        names.add(f[2].split("@")[0])
    return names


def compare(lib, header, drop):
    """TAP points of the comparison, and whether it held."""
    declared = header_names(header) - set(drop)
    exported = exported_names(lib)
    lines, ok = [], bool(declared)
    extra = sorted(exported - declared)
    missing = sorted(declared - exported)
    for what, names in (("exported but not declared", extra),
                        ("declared but not exported", missing)):
        if names:
            ok = False
            lines.append(f"not ok - {len(names)} {what}")
            lines.extend(f"#   {name}" for name in names)
        else:
            lines.append(f"ok - nothing {what}")
    lines.append(("ok" if declared else "not ok") +
                 f" - {len(exported)} exported, {len(declared)} declared")
    return lines, ok, extra


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("lib")
    ap.add_argument("header")
    ap.add_argument("--drop", action="append", default=[])
    ap.add_argument("--expect-difference", action="store_true")
    a = ap.parse_args()
    lines, ok, extra = compare(a.lib, a.header, a.drop)
    if a.expect_difference:
        print("1..2")
        for line in lines:
            print("# " + line)
        good = not ok
        print(("ok" if good else "not ok") + " 1 - the comparison fails")
        good2 = bool(a.drop) and extra == sorted(a.drop)
        print(("ok" if good2 else "not ok") +
              f" 2 - it names exactly the dropped {', '.join(a.drop) or '(none)'}")
        return 0 if good and good2 else 1
    print(f"1..{sum(1 for l in lines if not l.startswith('#'))}")
    n = 0
    for line in lines:
        if line.startswith("#"):
            print(line)
            continue
        n += 1
        word, rest = line.split(" - ", 1)
        print(f"{word} {n} - {rest}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
