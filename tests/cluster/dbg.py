"""Driver developers' tools (docs/debugging.md: dissector, gdb, timelines).
They run on cluster CD (run.py: 2 nodes, `up --trace` keeps the doorbell,
UAR and register writes, commands, packets and interrupts of every node's
QEMU in nodeN.trace)."""

import json
import os
import re
import shutil
import signal
import subprocess
import tempfile
import time

from basic import PING, ip4, tool2, tool2_window
from ib import hexreg, ib_load
from verbs_user import Perf, pingpong
from weftcluster.rundir import ROOT
from weftcluster.state import Settings
from weftcluster.testing import scenario

WWS = os.path.join(ROOT, "scripts", "weft-wireshark")
TIMELINE = os.path.join(ROOT, "scripts", "weft-timeline")


def host(*cmd):
    """A host command: (exit status, stdout, stderr)."""
    p = subprocess.run(list(cmd), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       text=True)
    return p.returncode, p.stdout, p.stderr


def cap_start(t, name):
    """A switch capture into the cluster's folder: its path."""
    cap = os.path.join(t.dir, f"{name}.pcap")
    if os.path.exists(cap):
        os.unlink(cap)
    r = t.faults("capture", "start", cap)
    t.require(r.ok, f"capture start failed: {r.out}")
    return cap


def cap_stop(t):
    r = t.faults("capture", "stop")
    t.require(r.ok, f"capture stop failed: {r.out}")
    t.say(f"switch: {r.out}")


def report(t, ok, what, why):
    """One check of a checker: WHAT when it held, else WHY (a failed check
    of its own, the next one still counts)."""
    if ok:
        t.checked(what)
    else:
        t.fail(why)
        t.checked(why)


# ---- the dissector ------------------------------------------------------------------
def field(fr, name, i=0):
    """Field NAME of a weft-wireshark frame: an int when it reads as one."""
    v = fr["fields"].get(name)
    if not v or len(v) <= i:
        return None
    try:
        return int(v[i], 0)
    except ValueError:
        return v[i]


def check_frames(t, frames, qa, pa, qb, pb):
    """Every decoded field against what the wireshark scenario sent."""
    f = field
    weft = [x for x in frames if f(x, "weft.type") is not None]
    bad = [x["frame"] for x in weft if f(x, "weft.src_node") not in (0, 1) or f(x, "weft.version") != 1]
    report(t, not bad, f"all {len(weft)} frames: version 1, source node 0 or 1",
           f"frames with another node or version: {bad[:10]}")

    def by(ty, key=None):
        return [x for x in weft if f(x, "weft.type_name") == ty and (key is None or f(x, "weft.key") == key)]

    def way(xs, s, d):
        return [x for x in xs if f(x, "weft.src_node") == s and f(x, "weft.dst_node") == d]

    fifo = [x for x in by("FIFO", 4201) if f(x, "weft.length") == 64]
    report(t, len(way(fifo, 0, 1)) == 6 and len(way(fifo, 1, 0)) == 6,
           "FIFO, key 4201 (the job): 6 packets of 64 bytes node0 -> node1 and 6 back (5 round trips + 1 warm-up)",
           f"FIFO key 4201, 64 bytes: {len(way(fifo, 0, 1))} node0 -> node1, {len(way(fifo, 1, 0))} back")
    w = by("RDMAW", 4202)
    ok = bool(w) and all(f(x, "weft.total_length") == 4096 and f(x, "weft.offset") in (0, 1920, 3840) for x in w) and \
        [sum(f(x, "weft.flags.last") == 1 for x in way(w, a, b)) for a, b in ((0, 1), (1, 0))] == [4, 4]
    seen = [(f(x, "weft.src_node"), f(x, "weft.total_length"), f(x, "weft.offset"), f(x, "weft.flags.last"))
            for x in w][:8]
    report(t, ok, f"RDMAW key 4202: {len(w)} packets of 4096-byte writes at offsets 0/1920/3840, 4 messages with LAST "
           "each way (4 round trips)", f"RDMAW key 4202: {len(w)} packets ({seen})")
    rq = by("RDMAR_REQ", 4203)
    rw = [x for x in by("RDMAW", 4203) if f(x, "weft.flags.read_resp") == 1]
    ok = bool(rq) and all(f(x, "weft.total_length") == 8192 and f(x, "weft.length") == 0 for x in rq) and \
        bool(rw) and all(f(x, "weft.total_length") == 8192 for x in rw)
    report(t, ok, f"RDMA read key 4203: {len(rq)} RDMAR_REQ of 8192 bytes, answered by {len(rw)} RDMAW READ_RESP "
           "packets", f"RDMA read key 4203: {len(rq)} requests, {len(rw)} responses")
    v = [x for x in weft if f(x, "weft.type_name") == "VERBS"]

    def vop(op, **kw):
        return [x for x in v if f(x, "weft.vhdr.opcode_name") == op and
                all(f(x, "weft.vhdr." + k) == val for k, val in kw.items())]

    s1 = vop("SEND", src_qpn=qa, dst_qpn=qb, psn=pa)
    s2 = vop("SEND", src_qpn=qb, dst_qpn=qa, psn=pb)
    ok = bool(s1 and s2) and f(s1[0], "weft.vhdr.dma_len") == 2048 and f(s1[0], "weft.vhdr.flags.first") == 1 and \
        f(s1[0], "weft.src_node") == 0 and f(s2[0], "weft.src_node") == 1
    seen = [(f(x, "weft.vhdr.src_qpn"), f(x, "weft.vhdr.dst_qpn"), f(x, "weft.vhdr.psn")) for x in vop("SEND")][:4]
    report(t, ok, f"ibv_rc_pingpong: first SEND QP {qa:#x} -> {qb:#x} PSN {pa:#x} (node0) and QP {qb:#x} -> {qa:#x} "
           f"PSN {pb:#x} (node1), 2048-byte messages, FIRST set",
           f"no SEND QP {qa:#x} -> {qb:#x} PSN {pa:#x} / QP {qb:#x} -> {qa:#x} PSN {pb:#x} (sends seen: {seen})")
    acks = vop("ACK")
    report(t, bool(acks) and all(f(x, "weft.vhdr.syndrome_name") in ("ACK", "NAK_SEQ", "NAK_RNR") for x in acks),
           f"{len(acks)} ACK packets with syndrome names", f"ACK packets: {len(acks)}")
    wr, rr, resp = vop("WRITE", dma_len=4096), vop("READ_REQ", dma_len=4096), vop("READ_RESP")
    at, ar = vop("FAA") + vop("CAS"), vop("ATOMIC_RESP")
    report(t, bool(wr and rr and resp and at and ar),
           f"ib_write_bw: {len(wr)} WRITE of 4096; ib_read_bw: {len(rr)} READ_REQ of 4096, {len(resp)} READ_RESP; "
           f"ib_atomic_bw: {len(at)} {'/'.join(sorted({f(x, 'weft.vhdr.opcode_name') for x in at}))}, "
           f"{len(ar)} ATOMIC_RESP",
           f"verbs: {len(wr)} WRITE, {len(rr)} READ_REQ, {len(resp)} READ_RESP, {len(at)} atomics, "
           f"{len(ar)} ATOMIC_RESP")
    term = vop("TERMINATE")
    ok = bool(term) and all(f(x, "weft.src_node") == 0 and f(x, "weft.dst_node") == 1 for x in term) and \
        all(f(x, "weft.vhdr.syndrome_name") not in (None, "UNKNOWN", "OK") for x in term)
    report(t, ok, f"{len(term)} TERMINATE node0 -> node1, syndromes "
           f"{','.join(sorted({str(f(x, 'weft.vhdr.syndrome_name')) for x in term}))}",
           f"TERMINATE: {[(f(x, 'weft.src_node'), f(x, 'weft.vhdr.syndrome_name')) for x in term][:5]}")
    req = [x for x in weft if f(x, "ip.src") == ip4(0) and f(x, "ip.dst") == ip4(1) and f(x, "icmp.type") == 8]
    rep = [x for x in weft if f(x, "ip.src") == ip4(1) and f(x, "icmp.type") == 0]
    ok = len(req) >= 3 and len(rep) >= 3 and \
        all(f(x, "weft.key") == 0x4e455449 and f(x, "weft.type_name") == "FIFO" for x in req + rep)
    report(t, ok, f"IP over Weft: {len(req)} ICMP echo requests {ip4(0)} -> {ip4(1)} and {len(rep)} replies, in FIFO "
           "packets with key WEFT_NET_KEY, decoded by Wireshark's IP dissector",
           f"ICMP: {len(req)} requests, {len(rep)} replies decoded")


def qpn_psn(out, which):
    """QPN and PSN of ibv_rc_pingpong's last "WHICH address:" line (the
    attempt that connected: pair retries the client while the server's
    port is closed, and each attempt prints its own), None if none:
    local address:  LID 0x0000, QPN 0x000011, PSN 0x2f0e5a, GID ..."""
    m = re.findall(rf"{which} address: .*QPN (0x[0-9a-f]+), PSN (0x[0-9a-f]+)", out)
    return (int(m[-1][0], 16), int(m[-1][1], 16)) if m else None


def ws_traffic(t, p):
    """Traffic of every kind between the nodes (P: their perftest set-up):
    ibv_rc_pingpong's (local, remote) QPN and PSN."""
    tool2(t, 1, 0, 4201, "weft-pingpong", "--mode fifo --size 64 --iters 5")
    tool2(t, 1, 0, 4202, "weft-pingpong", "--mode rdma --size 4096 --iters 3")
    tool2(t, 1, 0, 4203, "weft-bw", "--mode both --min-size 8K --max-size 8K --depth 1 --iters 2")
    c = pingpong(t, (p.dev, p.sgid, p.cgid), "ibv_rc_pingpong", 2048, 3)[0]
    a, b = qpn_psn(c.out, "local"), qpn_psn(c.out, "remote")
    t.require(a and b, f"ibv_rc_pingpong printed no QPN/PSN lines: {c.tail(4)}")
    p.bw("ib_write_bw", 4096, 5)
    p.bw("ib_read_bw", 4096, 5)
    p.bw("ib_atomic_bw", 8, 5)
    # Remote access violations: node0, the responder, terminates node1's QPs.
    t.need(0, "weft-verbs-isolation")
    iso = t.bg(0, f"/usr/lib/weft/tests/weft-verbs-isolation -s -g {p.cgid}")
    c = t.gx(1, f"/usr/lib/weft/tests/weft-verbs-isolation -c {ip4(0)} -g {p.sgid}")
    iso.wait()
    t.require(c.ok, f"node1: weft-verbs-isolation -c exited {c.rc}: {c.tail(3)}")
    r = t.gx(0, f"{PING} -c 3 -W 5 {ip4(1)}")
    t.require(r.ok, f"node0: ping {ip4(1)}: {r.out}")
    return a, b


# Traffic of every kind, captured by the switch and decoded by tshark with
# scripts/wireshark/weft.lua: every decoded field checked against what was
# sent, no frame malformed or undecoded.
@scenario("wireshark", "CD", "the switch captures FIFO, RDMA write and read, verbs send/write/read/atomic, Terminates "
          "and IP between 2 nodes; tshark with scripts/wireshark/weft.lua decodes every frame (none malformed) with "
          "the node ids, lengths, keys, QPNs, PSNs and opcodes that were sent")
def wireshark(t):
    t.require(shutil.which("tshark"), "tshark is not installed (scripts/weft-test installs it: apt-get install tshark)")
    p = Perf(t)
    cap = cap_start(t, "wireshark")
    try:
        (qa, pa), (qb, pb) = ws_traffic(t, p)
    finally:
        cap_stop(t)
    t.checked("traffic captured: FIFO, RDMA write/read, verbs send/write/read/atomic, Terminates, ping "
              f"({os.path.getsize(cap) // 1024} KiB)")
    rc, out, err = host("python3", WWS, "check", cap)
    out = (out + err).rstrip("\n")
    t.require(rc == 0, "frames malformed or not decoded as Weft: " + "\n".join(out.splitlines()[-6:]))
    t.checked(f"tshark with the dissector: {(out.splitlines() or [''])[-1]}")
    rc, out, err = host("python3", WWS, "frames", cap)
    t.require(rc == 0, f"weft-wireshark frames: {err}")
    check_frames(t, [json.loads(x) for x in out.splitlines() if x.strip()], qa, pa, qb, pb)
    t.require(t.no_oops(0) and t.no_oops(1), None)


# ---- gdb --------------------------------------------------------------------------
GDB_FUNC = "weft_ib_query_port"


def gdb_refusals(t):
    """A node that does not exist or does not run is refused."""
    no7 = t.wc("gdb", 7, "--batch")
    t.require(not no7.ok and "has nodes 0..1" in no7.out, f"gdb on node 7 of a 2-node cluster: {no7.out}")
    with tempfile.TemporaryDirectory(prefix="stopped.", dir=t.tmp) as d:
        Settings(nodes=2, image="/nonexistent").save(d)
        gone = subprocess.Popen(["true"])
        gone.wait()
        with open(os.path.join(d, "node1.pid"), "w", encoding="utf-8") as f:
            f.write(f"{gone.pid}\n")
        rc, out, err = host("python3", os.path.join(ROOT, "scripts", "weft-gdb"), "--dir", d, "--name", "stopped",
                            "1", "--batch")
    out = (out + err).rstrip("\n")
    t.require(rc != 0 and "node1 of cluster stopped is not running" in out, f"weft-gdb on a stopped node: {out}")
    t.checked(f"refused: a node outside the cluster ({no7.out}), a node that is not running ({out})")


def read_text(path):
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            return f.read()
    except OSError:
        return ""


# gdb on node1 in batch mode: a breakpoint in weft_ib.ko, hit by a sysfs
# read; the backtrace names the function and its caller in ib_core,
# arguments and driver structures print, and the guest runs on.
@scenario("gdb", "CD", "weft-cluster gdb 1 in batch mode: a breakpoint in weft_ib_query_port hit by a sysfs read, the "
          "backtrace names it and its caller, arguments and driver structures print, gdb detaches and the guest runs "
          "on; a stopped or absent node is refused")
def gdb(t):
    t.require(shutil.which("gdb"), "gdb is not installed (scripts/weft-test installs it)")
    ib_load(t, 1)
    nrqp = hexreg(t, 1, "VERBS_NR_QP")
    gdb_refusals(t)
    path = os.path.join(t.tmp, "gdb.out")
    ex = [f"break {GDB_FUNC}", "echo weft-gdb: continuing\\n", "continue", "bt", "info args", "print ibdev->name",
          "print ((struct weft_ibdev *)ibdev)->caps", "ptype struct weft_ibdev", "delete", "detach"]
    # weft-cluster gdb ends in an exec of gdb: a signal for this process
    # reaches gdb itself.
    with open(path, "w", encoding="utf-8") as f:
        g = subprocess.Popen([os.path.join(ROOT, "scripts", "weft-cluster"), "--name", t.c, "gdb", "1", "--batch",
                              *[a for e in ex for a in ("-ex", e)]],
                             stdin=subprocess.DEVNULL, stdout=f, stderr=subprocess.STDOUT)
    try:
        for _ in range(300):
            if re.search(r"^weft-gdb: continuing", read_text(path), re.M) or g.poll() is not None:
                break
            time.sleep(1)
        out = read_text(path)
        if not re.search(r"^weft-gdb: continuing", out, re.M):
            t.show(out, "", 20)
            t.fail("gdb did not attach and continue")
            t.stop()
        bp = next((x for x in out.splitlines() if x.startswith("Breakpoint 1 at")), "")
        t.checked(f"gdb attached to node1 over {t.dir}/node1.gdb.sock, symbols loaded, breakpoint set, guest "
                  f"continued: {bp}")
        st = t.gx(1, "cat /sys/class/infiniband/weft_ib0/ports/1/state")
        # The breakpoint hit, gdb prints and detaches; 60 s at most, then
        # gdb, still waiting in "continue", is interrupted and runs the rest.
        try:
            g.wait(timeout=60)
        except subprocess.TimeoutExpired:
            g.send_signal(signal.SIGINT)
            g.wait(timeout=120)
    finally:
        if g.poll() is None:
            g.kill()
            g.wait()
    out = read_text(path)
    t.show("\n".join([x for x in out.splitlines()
                      if x and not re.search(r"^warning: |_addr = |^add symbol table|^Reading symbols", x)][:30]),
           "gdb: ")
    t.require(st.ok and "ACTIVE" in st.out, f"node1: port state read under gdb: {st.out}")
    t.require(re.search(rf"^Breakpoint 1, {GDB_FUNC} \(", out, re.M), f"breakpoint in {GDB_FUNC} not hit")
    t.require(re.search(rf"^#0 +{GDB_FUNC} \(", out, re.M), f"backtrace frame #0 is not {GDB_FUNC}")
    caller = re.search(r"^#1 +0x[0-9a-f]+ in ([A-Za-z_][A-Za-z0-9_.]*) ", out, re.M)
    t.require(caller, "backtrace frame #1 names no caller")
    frame0 = next(x for x in out.splitlines() if x.startswith("#0 "))
    t.checked(f"backtrace: {frame0[:70]} ... called by {caller.group(1)}")
    caps = re.search(rf"^\$2 = \{{nr_qp = {nrqp}, .* node_id = 1, .*", out, re.M)
    t.require(re.search(r"^port = 1$", out, re.M) and '"weft_ib0"' in out and
              re.search(r"^type = struct weft_ibdev \{", out, re.M) and caps,
              f"arguments or driver structures not printed as expected (nr_qp {nrqp}, node_id 1)")
    t.checked(f"info args shows port = 1, ibdev->name is \"weft_ib0\", the driver's caps {caps.group(0)[:90]}..., "
              "ptype prints struct weft_ibdev")
    t.require(re.search(r"^\[Inferior 1 \(process 1\) detached\]", out, re.M), "gdb did not detach")
    r = t.gx(1, "cat /sys/class/infiniband/weft_ib0/ports/1/state; head -n 1 /sys/kernel/debug/weft/weft0/state")
    t.require(r.ok and "ACTIVE" in r.out, f"node1 after gdb detached: {r.out}")
    t.checked(f"gdb detached; node1 answers, port ACTIVE: {' '.join(r.lines())}")
    t.require(t.no_oops(1), None)


# ---- timelines --------------------------------------------------------------------
def check_timeline(t, ev, sw):
    """node0's doorbell write, its tx trace, the frame on the wire, node1's
    receive and its answer on the wire, in that order."""
    wire = [e for e in ev if e["kind"] == "wire" and e["node"] == 0 and e["frame"]["type"] == "FIFO"
            and e["frame"]["src"] == 0 and e["frame"]["dst"] == 1 and e["frame"]["dst_window"] == sw
            and e["frame"]["length"] == 64]
    # The warm-up and the measured round trip.
    t.require(len(wire) == 2, f"{len(wire)} FIFO frames node0 -> node1 window {sw} of 64 bytes in the capture, "
              "expected the warm-up and the round trip")
    w = wire[1]
    t.checked(f"capture: {len(wire)} FIFO frames of 64 bytes node0 -> node1 window {sw} (warm-up and round trip), the "
              f"second at {w['t']:.6f}")
    db = [e for e in ev if e["node"] == 0 and e["event"] == "weft_db_write" and "START_TRANSMIT" in e["text"]
          and wire[0]["t"] < e["t"] <= w["t"]]
    # The traces count the whole packet: the 104-byte header and the payload.
    pkt = re.compile(rf"FIFO node 0 -> node 1 window {sw}, 168 bytes")
    tx = [e for e in ev if e["node"] == 0 and e["event"] == "weft_pkt_tx" and pkt.search(e["text"])
          and e["t"] > wire[0]["t"]]
    rx = [e for e in ev if e["node"] == 1 and e["event"] == "weft_pkt_rx" and pkt.search(e["text"])
          and e["t"] >= w["t"]]
    back = [e for e in ev if e["kind"] == "wire" and e["node"] == 1 and e["frame"]["type"] == "FIFO"
            and e["frame"]["src"] == 1 and e["frame"]["dst"] == 0 and e["frame"]["length"] == 64 and rx
            and e["t"] >= rx[0]["t"]]
    t.require(db, "node0: no START_TRANSMIT doorbell write between the two frames")
    t0 = db[-1]["t"]
    t.require(tx and tx[0]["t"] >= t0, "node0: no FIFO tx trace after its doorbell write")
    t.require(rx, "node1: no FIFO rx trace after the frame was on the wire")
    t.require(back, "node1: no answer on the wire after its receive")
    t.checked(f"in order: node0's {db[-1]['text'].split(' [')[0]} at +0.000000 s, tx trace at +{tx[0]['t'] - t0:.6f}, "
              f"wire at +{w['t'] - t0:.6f}, node1 rx at +{rx[0]['t'] - t0:.6f}, node1's answer on the wire at "
              f"+{back[0]['t'] - t0:.6f}")
    t.say("timeline from node0's doorbell write to node1's answer (weft-timeline --merged):")
    for e in ev:
        if t0 <= e["t"] <= back[0]["t"] and (e["kind"] != "wire" or e in (w, back[0])):
            t.say("  %+10.6f  node%d  %-5s %s %s" % (e["t"] - t0, e["node"], e["kind"], e["event"], e["text"][:90]))


# One FIFO exchange (weft-pingpong, 1 round trip after 1 warm-up) in the
# timeline of the nodes' QEMU traces and the capture: node0's doorbell
# write, its packet on the wire, node1's receive and its answer, in order.
@scenario("timeline", "CD", "weft-timeline merges the nodes' QEMU traces (up --trace) with the capture: node0's "
          "doorbell write, its FIFO packet on the wire, node1's receive and its answer, in that order")
def timeline(t):
    t.require(all(os.path.exists(os.path.join(t.dir, f"node{n}.trace")) for n in (0, 1)),
              f"no nodeN.trace in {t.dir}: the cluster was not started with --trace")
    cap = cap_start(t, "timeline")
    try:
        sw, _ = tool2_window(t, 1, 0, 4301, "weft-pingpong", "--mode fifo --size 64 --iters 1")
    finally:
        cap_stop(t)
    rc, out, err = host("python3", TIMELINE, "--json", "--capture", cap, t.dir)
    t.require(rc == 0, f"weft-timeline: {err}")
    ev = [json.loads(x) for x in out.splitlines() if x.strip()]
    rc, merged, err = host("python3", TIMELINE, "--merged", "--capture", cap, t.dir)
    t.require(rc == 0, "weft-timeline --merged: " + "\n".join((merged + err).splitlines()[-2:]))
    check_timeline(t, ev, int(sw))
