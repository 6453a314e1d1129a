"""Counter-bearing RDMA objects between two guests (docs/counters.md).  The
guest side checks itself: weft-cnt prints a "verified:" line per check that
held and a JSON verdict; these scenarios only start it and read the
verdict, the driver's debugfs view and the adapter counters."""

import json
import re
import time

from basic import tool2
from weftcluster.testing import scenario


def cnt_objects(t, n):
    """Live counter objects in weft.ko (debugfs)."""
    # grep -c prints 0 and exits 1 when no line matches.
    r = t.gx(n, "grep -c '^object ' /sys/kernel/debug/weft/weft0/cnt")
    t.require(r.out.isdigit(), f"node{n}: cannot read weft.ko's counter objects from debugfs: {r.out}")
    return int(r.out)


def pages_pinned(t, n):
    """The driver's pinned pages (its global debugfs counters)."""
    r = t.gx(n, "awk '$1 == \"pages_pinned\" {print $2}' /sys/kernel/debug/weft/driver")
    t.require(r.ok and r.out.isdigit(), f"node{n}: cannot read pages_pinned from the driver's debugfs: {r.out}")
    return int(r.out)


def verified(r, prefix):
    """R's "verified:" lines that start with PREFIX, without "verified: "."""
    return [x[len("verified: "):] for x in r.lines() if x.startswith("verified: " + prefix)]


# Reads and writes from 1 B to 64 MiB, byte-exact, with both notification
# modes (interrupt wait and a poll of the mapped counter word).
@scenario("counters", "C2", "counter-bearing RDMA objects (weft-cnt): reads and writes from 1 B to 64 MiB between "
          "node0 and node1, byte-exact, each with an interrupt wait and with a poll of the mapped counter word; no "
          "object left")
def counters(t):
    t.need((0, 1), "weft-cnt")
    before = t.counter(0, "C_NOTIFY")
    r = tool2(t, 1, 0, 4601, "weft-cnt", "--max-size 64M --timeout 120000")
    j = r.json()
    nver = len(verified(r, ""))
    t.require(j.get("result") == "pass" and nver > 0,
              f"weft-cnt check: result {j.get('result')}, {nver} verified lines: {r.tail(3)}")
    t.require("counter read of 67108864 B byte-exact, interrupt" in r.out and
              "counter write of 67108864 B byte-exact (read back), poll" in r.out,
              f"64 MiB not verified in both modes: {' | '.join(x for x in r.lines() if '67108864' in x)}")
    t.checked(f"node0 <-> node1: {j.get('transfers')} counter reads and writes (writes read back) from 1 B to 64 MiB, "
              "byte-exact, each size with an interrupt wait and with a poll of the mapped word")
    after = t.counter(0, "C_NOTIFY")
    t.require(after > before, f"the adapter counted no zero notification (C_NOTIFY {before} -> {after})")
    left = cnt_objects(t, 0)
    t.require(left == 0, f"node0: {left} counter objects left after the run")
    t.checked(f"node0's adapter counted its zero notifications (C_NOTIFY {before} -> {after}), no object left in "
              "weft.ko")


# The server exposes the range only after 4 s: the first read gets the
# error message with its cause, a retry after the exposure succeeds.
@scenario("counters-retry", "C2", "counter RDMA read of a range node1 exposes only later: CNT_ERROR with cause "
          "CNT_NOT_EXPOSED first, a retry after the exposure succeeds")
def counters_retry(t):
    t.need((0, 1), "weft-cnt")
    errs = t.counter(0, "C_ERR_RX")
    win, srv = t.server(1, 4602, "weft-cnt --server --job 4602 --max-size 1M --expose-delay 4000")
    c = t.gx(0, f"weft-cnt --client --peer 1 --peer-window {win} --job 4602 --max-size 1M --mode retry")
    srv.wait()
    t.require(c.ok and verified(c, "unexposed range answered with the error message, cause CNT_NOT_EXPOSED"),
              f"weft-cnt retry: exit {c.rc}: {c.tail(3)}")
    now = t.counter(0, "C_ERR_RX")
    t.require(now > errs, f"node0's adapter received no CNT_ERROR (C_ERR_RX {errs} -> {now})")
    t.checked(f"node1 had not exposed the range: node0's read got CNT_ERROR with cause CNT_NOT_EXPOSED (C_ERR_RX "
              f"{errs} -> {now}), counter untouched")
    retry = [x for x in verified(c, "retry ") if re.search(r" after the exposure succeeded", x)]
    t.require(retry, f"no successful retry: {c.tail(2)}")
    t.checked("; ".join(verified(c, "retry")))


# A process killed with SIGKILL in the middle of a 64 MiB counter read:
# weft.ko destroys its object, the adapter drops the late chunks, the
# pinned pages go back, and a new client still works.
@scenario("counters-kill", "C2", "a process killed in the middle of a 64 MiB counter read leaves no live object, no "
          "pinned page, late chunks dropped by the adapter; a new client works")
def counters_kill(t):
    t.need((0, 1), "weft-cnt")
    pinned0 = pages_pinned(t, 0)
    late0 = t.counter(0, "DROP_CNT_OBJ_INVALID")
    win, srv = t.server(1, 4603, "weft-cnt --server --job 4603 --max-size 64M --timeout 120000")
    # The victim posts a 64 MiB read and kills itself with SIGKILL at once.
    r = t.gx(0, f"weft-cnt --client --peer 1 --peer-window {win} --job 4603 --max-size 64M --mode kill; "
                "echo status $?")
    t.require(any(x.startswith("posted:") for x in r.lines()) and "status 137" in r.lines(),
              f"the victim did not post and die by SIGKILL: {r.out}")
    time.sleep(3)
    objs = cnt_objects(t, 0)
    t.require(objs == 0, f"node0: {objs} counter objects left after SIGKILL")
    pinned = pages_pinned(t, 0)
    t.require(pinned == pinned0, f"node0: pinned pages {pinned0} before, {pinned} after")
    t.checked("a process killed by SIGKILL right after posting a 64 MiB counter read left no live object in weft.ko "
              "and no pinned page")
    late = t.counter(0, "DROP_CNT_OBJ_INVALID")
    t.require(late > late0, f"no late chunk dropped after the kill ({late0} -> {late})")
    t.checked(f"late chunks of the dead object dropped by the adapter without a write (CNT_OBJ_INVALID drops {late0} "
              f"-> {late})")
    c = t.gx(0, f"weft-cnt --client --peer 1 --peer-window {win} --job 4603 --max-size 64M --min-size 1M "
                "--notify poll --json")
    srv.wait()
    t.require(c.ok and c.json().get("result") == "pass", f"a new client after the kill: exit {c.rc}: {c.tail(3)}")
    t.checked("a new client then moved 1 MiB..64 MiB byte-exact through the same server")


# Bandwidth and latency of counter RDMA next to libweft's RDMA, one run:
# figures, with the baseline from the same run.
@scenario("counters-bench", "C2", "benchmark: counter RDMA read and write bandwidth and latency next to libweft RDMA "
          "read and write, one run (figures)")
def counters_bench(t):
    t.need((0, 1), "weft-cnt")
    r = tool2(t, 1, 0, 4604, "weft-cnt", "--mode bench --min-size 8 --max-size 4M --iters 8 --timeout 120000")
    for line in r.lines():
        if line.startswith('{"tool":"weft-cnt","op"'):
            x = json.loads(line)
            t.say("figures: %-13s %8d B x%d: %9.2f MB/s %10.1f us/op" %
                  (x["op"], x["bytes"], x["iters"], x["mbps"], x["us"]))
    t.require(r.json().get("result") == "pass", f"weft-cnt bench: {r.tail(2)}")
    t.checked("every counter and libweft RDMA read and write of the benchmark completed (figures above, not a test)")
