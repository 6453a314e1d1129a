#!/usr/bin/env python3
"""The Wireshark dissector against the C wire format (TAP).

  dissector_test.py GEN WEFT_WIRESHARK

GEN (weft-dissect-gen) writes frames built with include/weft's structures,
what each must decode to and the reason names of WEFT_REASON_LIST, which
must equal the dissector's REASONS table; WEFT_WIRESHARK (scripts/weft-wireshark)
decodes them with tshark and scripts/wireshark/weft.lua.  Every expected
field value must be shown, every malformed frame flagged and no other, and
the random frames must never break the dissector.  Without tshark the test
is skipped (exit 77), never passed; scripts/weft-test installs it.
"""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile


def main():
    gen, ww = sys.argv[1], sys.argv[2]
    if not shutil.which("tshark"):
        print("1..0 # SKIP tshark is not installed (apt-get install tshark)")
        return 77
    tmp = tempfile.mkdtemp(prefix="weft-dissect.")
    try:
        pcap, exp = os.path.join(tmp, "frames.pcap"), os.path.join(tmp, "frames.expect")
        rsn = os.path.join(tmp, "reasons")
        subprocess.run([gen, pcap, exp, rsn], check=True, stdout=subprocess.DEVNULL)
        with open(rsn) as f:
            c_reasons = f.read().split()
        want = {}
        with open(exp) as f:
            for line in f:
                fr, name, value = line.split(None, 2)
                want.setdefault(int(fr), []).append((name, value.strip()))
        out = subprocess.run([sys.executable, ww, "frames", pcap], check=True,
                             stdout=subprocess.PIPE, text=True).stdout
        got = {}
        for line in out.splitlines():
            fr = json.loads(line)
            got[fr["frame"]] = fr
    finally:
        shutil.rmtree(tmp)

    points = []

    def point(ok, what):
        points.append(("ok" if ok else "not ok") + " %d - %s" % (len(points) + 1, what))

    lua = os.path.join(os.path.dirname(os.path.realpath(ww)), "wireshark", "weft.lua")
    with open(lua) as f:
        table = re.search(r"^local REASONS = \{(.*?)^\}", f.read(), re.S | re.M)
    lua_reasons = re.findall(r'"([A-Z0-9_]+)"', table.group(1)) if table else []
    diff = next((i for i in range(max(len(c_reasons), len(lua_reasons)))
                 if i >= len(c_reasons) or i >= len(lua_reasons) or c_reasons[i] != lua_reasons[i]), None)
    point(diff is None and c_reasons,
          "weft.lua REASONS is WEFT_REASON_LIST (%d names)%s" % (
              len(c_reasons), "" if diff is None else ": first difference at %d: C %s, Lua %s" % (
                  diff, c_reasons[diff] if diff < len(c_reasons) else "(end)",
                  lua_reasons[diff] if diff < len(lua_reasons) else "(end)")))

    for fr in sorted(want):
        g = got.get(fr)
        if g is None:
            point(False, "frame %d: not decoded at all" % fr)
            continue
        bad = []
        for name, value in want[fr]:
            if name == "malformed":
                flagged = bool(g["malformed"])
                if flagged != (value == "1"):
                    bad.append("malformed: expected %s, dissector says %s" %
                               (value, "; ".join(g["malformed"]) or "well formed"))
                continue
            shows = g["fields"].get(name)
            if not shows:
                bad.append("%s missing (expected %s)" % (name, value))
                continue
            show = shows[0]
            if value.isdigit():
                try:
                    ok = int(show, 0) == int(value)
                except ValueError:
                    ok = False
            else:
                ok = show == value
            if not ok:
                bad.append("%s = %s, expected %s" % (name, show, value))
        what = "frame %d: %d expected values (%s)" % (
            fr, len(want[fr]), ", ".join(sorted({n for n, _ in want[fr]}))[:120])
        point(not bad, what + ("" if not bad else ": " + "; ".join(bad)))
    broken = [f for f, g in got.items()
              if any("dissector error" in m or m.startswith("_ws.lua") for m in g["malformed"])]
    undecoded = [f for f, g in got.items() if "weft" not in g["protos"]]
    point(not broken and not undecoded and len(got) >= max(want),
          "all %d frames (%d random) decoded as Weft, the dissector never failed%s" %
          (len(got), len(got) - max(want),
           "" if not broken and not undecoded else ": broken %s, undecoded %s" % (broken[:10], undecoded[:10])))
    print("1..%d" % len(points))
    print("\n".join(points))
    return 0 if all(p.startswith("ok") for p in points) else 1


if __name__ == "__main__":
    sys.exit(main())
