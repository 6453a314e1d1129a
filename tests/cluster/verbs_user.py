"""User-space verbs scenarios (docs/rdma-provider.md): Debian's unmodified
rdma-core examples and perftest on the Weft provider, node0 (client) and
node1 (server).  Node N has 10.87.0.(N+1) on weft0, so its RoCE v2 GID is
::ffff:10.87.0.(N+1)."""

import re
import time

from basic import ip4
from ib import hexreg, ib_load
from weftcluster.testing import scenario


def ib_dev(t, n):
    """The RDMA modules loaded: the node's ib_device as libibverbs lists it
    and the GID index of its IPv4 address, from ibv_devinfo -v."""
    ib_load(t, n)
    addr = f"::ffff:{ip4(n)}"
    r = t.gx(n, "ibv_devinfo -v")
    t.require(r.ok, f"node{n}: ibv_devinfo -v failed ({r.rc}): {r.tail(3)}")
    dev = next((x.split()[1] for x in r.lines() if x.startswith("hca_id:") and len(x.split()) > 1), "")
    # GID[  3]:		::ffff:10.87.0.1, RoCE v2
    gid = next((int(m.group(1)) for x in r.lines()
                for m in [re.search(r"GID\[ *([0-9]+)\]", x)] if m and "RoCE v2" in x and addr + "," in x), None)
    t.require(dev, f"node{n}: ibv_devinfo lists no device: {r.tail(3)}")
    t.require(gid is not None, f"node{n}: {dev} has no RoCE v2 GID {addr}")
    return dev, gid


def res_counts(t, n, dev):
    """The device's ib_core object counts (pd cq qp mr ctx ...), from
    iproute2's `rdma resource show`."""
    r = t.gx(n, "/usr/bin/rdma resource show")
    t.require(r.ok, f"node{n}: rdma resource show failed: {r.out}")
    res = "\n".join(re.sub(r"^[0-9]*: [^ ]*: ", "", x) for x in r.lines() if f" {dev}: " in x)
    t.require(res, f"node{n}: rdma resource show has no line for {dev}: {r.out}")
    return res


def user_objects(t, n, dev):
    """How many PDs, CQs, QPs and MRs of DEV a process owns (`rdma resource
    show` names their pid)."""
    r = t.gx(n, f"for t in pd cq qp mr; do /usr/bin/rdma resource show $t dev {dev}; done")
    t.require(r.ok, f"node{n}: rdma resource show failed: {r.out}")
    return sum(1 for x in r.lines() if " pid " in x)


def res_le(a, b):
    """Every "name count" of resource line A is at most B's."""
    def pairs(x):
        w = x.split()
        return {w[k]: int(w[k + 1]) for k in range(0, len(w) - 1, 2) if w[k + 1].isdigit()}
    pb = pairs(b)
    return all(v <= pb.get(k, 0) for k, v in pairs(a).items())


def cm_listening(t, n):
    """Wait (30 s at most) until an rdma_cm ID listens on node N."""
    return t.gx(n, "for i in $(seq 150); do /usr/bin/rdma resource show cm_id | grep -q LISTEN && exit 0; "
                   "sleep 0.2; done; exit 1").ok


# A client's connection refused because nothing listened yet on the
# server (the CM's REJ reason 8, "invalid service ID", as rdma_cm reports
# it).  perftest with -R connects twice: its control connection first,
# then, after the server has closed that listener, exchanged versions over
# the control connection and set up its resources, the test QPs through a
# second listener on the same port.  The client sends its second request
# as soon as the exchange is done; a server that is slower than that (a
# loaded host under TCG) has no listener yet and the client gives up.
CM_NOT_LISTENING = "RDMA_CM_EVENT_REJECTED; error: 8."


def pair(t, name, server, client, cm=False):
    """The server on node1, then the client on node0: after the server's
    rdma_cm ID listens when the commands use rdma_cm (CM), else retried
    while the server's TCP port is not open yet.  A client refused because
    the server was not listening yet (CM_NOT_LISTENING) runs again with a
    new server, at most 3 times, and says so.  (client, server) Results
    when both exited 0, else None (what they printed is shown).  A server
    whose client failed would wait for it forever: it is killed."""
    for attempt in range(1, 4):
        srv = t.bg(1, server)
        if cm:
            if not cm_listening(t, 1):
                t.say("node1: no rdma_cm ID listening after 30 s")
            # perftest gives rdma_resolve_addr and rdma_resolve_route 2 s
            # each; under TCG an ARP exchange can take longer, so the
            # neighbour is resolved first (as on any host that has talked
            # to its peer before).
            c = t.gx(0, f"ping -c 1 -W 10 {ip4(1)} >/dev/null; {client}")
        else:
            c = t.gx(0, f"i=0; while [ $i -lt 20 ]; do {client} 2>/tmp/{name}.err && exit 0; "
                        f"grep -q -e 'Couldn.t connect' -e 'Unable to open' /tmp/{name}.err || "
                        f"{{ cat /tmp/{name}.err; exit 1; }}; "
                        f"i=$((i + 1)); sleep 1; done; cat /tmp/{name}.err; exit 1")
        if not c.ok:
            time.sleep(5)
            if not srv.done():
                t.gx(1, f"killall -KILL {server.split()[0]}")
        s = srv.wait()
        if c.ok and s.ok:
            return c, s
        if cm and CM_NOT_LISTENING in c.out and attempt < 3:
            t.say(f"{name}: attempt {attempt} refused, the server not listening yet ({CM_NOT_LISTENING}); "
                  "again with a new server")
            continue
        break
    t.say(f"client exit {c.rc}, server exit {s.rc}")
    t.show("\n".join(x[:200] for x in c.lines()), "client: ", 12)
    t.show("\n".join(x[:200] for x in s.lines()), "server: ", 12)
    return None


@scenario("ibv-devinfo", "C2", "user verbs: ibv_devices and ibv_devinfo -v (Debian's, unmodified) show the Weft "
          "device on both nodes through the provider: port ACTIVE, Ethernet, the IPv4-mapped RoCE v2 GID, limits equal "
          "to the adapter's registers")
def ibv_devinfo(t):
    for n in (0, 1):
        dev, gid = ib_dev(t, n)
        v = t.gx(n, f"ibv_devices; ibv_devinfo -v -d {dev}").out
        t.require(re.search(rf"^ *{dev}", v, re.M), f"node{n}: ibv_devices does not list {dev}")
        grep = lambda pat: [x for x in v.splitlines() if re.search(pat, x)]  # noqa: E731
        t.require(grep(r"state:\s+PORT_ACTIVE"), f"node{n}: port not ACTIVE: {grep('state:')}")
        t.require(grep(r"link_layer:\s+Ethernet"), f"node{n}: link layer not Ethernet: {grep('link_layer')}")
        t.require(grep(r"vendor_id:\s+0x1234") and grep(r"vendor_part_id:\s+30565"),
                  f"node{n}: not the Weft PCI function: {' '.join(grep('vendor'))}")
        # The limits are the adapter's registers (docs/verbs-linux.md): QPs
        # less QP0 and the GSI, TPT entries less entry 0, SRQs numbered
        # 1 .. VERBS_NR_QP - 1.
        for reg, key, delta in (("VERBS_NR_QP", "max_qp", -2), ("VERBS_NR_CQ", "max_cq", 0),
                                ("VERBS_NR_PD", "max_pd", 0), ("VERBS_NR_TPT", "max_mr", -1),
                                ("VERBS_NR_QP", "max_srq", -1)):
            val = hexreg(t, n, reg)
            got = next((x.split()[1] for x in v.splitlines() if x.split()[:1] == [key + ":"] and len(x.split()) > 1),
                       "")
            t.require(got == str(val + delta), f"node{n}: ibv_devinfo {key} = '{got}', the adapter's {reg} is {val}")
        t.require(grep(r"max_srq_wr:\s+4096$"), f"node{n}: max_srq_wr is not 4096")
        # weft0's nominal 10000 Mb/s (docs/net.md), as ib_core maps it
        t.require(grep(r"active_width:\s+1X") and grep(r"active_speed:\s+10.0 Gbps"),
                  f"node{n}: port rate not weft0's 10000 Mb/s: {' '.join(grep('active_(width|speed)'))}")
        r = t.gx(n, "dmesg")
        t.require(r.ok and "speed is unknown" not in r.out,
                  f"node{n}: ib_core found weft0's speed unknown: {[x for x in r.lines() if 'speed is' in x][:2]}")
        limits = " ".join(re.sub(r"[\t ]+", " ", x) for x in grep(r"max_(qp|cq|pd):"))
        t.checked(f"node{n}: {dev} (0x1234:0x7765), port ACTIVE, Ethernet, 1X 10.0 Gbps, GID[{gid}] ::ffff:{ip4(n)} "
                  f"RoCE v2, {limits} ")


def gids(t):
    """The device and both nodes' GID indexes: (dev, server node1's, client
    node0's)."""
    _, sgid = ib_dev(t, 1)
    dev, cgid = ib_dev(t, 0)
    return dev, sgid, cgid


def no_oops_both(t):
    return t.no_oops(0) and t.no_oops(1)


def pingpong(t, g, tool, size, iters, flags=""):
    """Debian's TOOL (an ibv_*_pingpong) with FLAGS, ITERS messages of SIZE
    bytes, server node1, client node0 (G: gids' device and GID indexes):
    the (client, server) Results, once the client printed its bytes line
    (else fail and stop; it counts both directions)."""
    dev, sgid, cgid = g
    args = f"{flags} -s {size} -n {iters}".strip()
    r = pair(t, tool, f"{tool} -d {dev} -g {sgid} {args}", f"{tool} -d {dev} -g {cgid} {args} {ip4(1)}")
    t.require(r, f"{tool} {args} failed")
    t.require(re.search(rf"^{2 * size * iters} bytes in", r[0].out, re.M), f"{tool} printed no result: {r[0].out}")
    return r


@scenario("rc-pingpong", "C2", "user verbs: ibv_rc_pingpong -c (data validated) and ibv_ud_pingpong between node0 and "
          "node1 over the Weft GIDs")
def rc_pingpong(t):
    g = gids(t)
    c = pingpong(t, g, "ibv_rc_pingpong", 4096, 500, "-c")[0]
    t.require(re.search(r"^500 iters in", c.out, re.M), f"ibv_rc_pingpong printed no result: {c.out}")
    t.checked(f"ibv_rc_pingpong -c (data validated), 500 x 4096 B: {' '.join(x for x in c.lines() if 'bytes in' in x)}")
    c = pingpong(t, g, "ibv_ud_pingpong", 1024, 500)[0]
    t.checked(f"ibv_ud_pingpong, 500 x 1024 B: {' '.join(x for x in c.lines() if 'bytes in' in x)}")
    no_oops_both(t)


class Perf:
    """perftest runs between node1 (server) and node0 (client)."""

    def __init__(self, t, flags="", cm=False):
        self.t, self.flags, self.cm = t, flags, cm
        self.dev, self.sgid, self.cgid = gids(t)

    def run(self, tool, args):
        """One perftest pair: its result line, split."""
        t = self.t
        r = pair(t, tool, f"{tool} -d {self.dev} -x {self.sgid} -F {args}",
                 f"{tool} -d {self.dev} -x {self.cgid} -F {args} {ip4(1)}", cm=self.cm)
        t.require(r, f"{tool} {args} failed")
        # The result line: the size, the iterations, then the figures.
        lines = r[0].lines()
        head = next((k for k, x in enumerate(lines) if re.match(r"^ *#bytes", x)), None)
        line = next((x for x in lines[head + 1:] if x.split() and x.split()[0].isdigit()), None) \
            if head is not None else None
        t.require(line, f"{tool} {args} printed no result line: {r[0].tail(5)}")
        return line.split()

    def bw(self, tool, size, iters):
        """A bandwidth test with sane figures (#bytes #iterations BW peak BW
        average MsgRate)."""
        f = self.run(tool, f"{self.flags} -s {size} -n {iters} --report_gbits")
        try:
            ok = int(f[0]) == size and int(f[1]) == iters and float(f[3]) > 0
        except (ValueError, IndexError):
            ok = False
        self.t.require(ok, f"{tool} {self.flags} {size} B: no sane figures: {' '.join(f)}")
        self.t.checked(f"{tool} {self.flags} {size} B x {iters}: average {f[3]} Gb/s, {f[4]} Mpps")

    def lat(self, tool, size, iters):
        """A latency test with sane figures (#bytes #iterations t_min t_max
        t_typical t_avg ...)."""
        f = self.run(tool, f"{self.flags} -s {size} -n {iters}")
        try:
            ok = int(f[0]) == size and int(f[1]) == iters and float(f[2]) > 0 and float(f[5]) >= float(f[2])
        except (ValueError, IndexError):
            ok = False
        self.t.require(ok, f"{tool} {self.flags} {size} B: no sane figures: {' '.join(f)}")
        self.t.checked(f"{tool} {self.flags} {size} B x {iters}: t_min {f[2]} us, t_typical {f[4]} us, "
                       f"t_avg {f[5]} us")


def perf_all(t, flags="", cm=False):
    """Every perftest tool at sizes up to 1 MiB."""
    p = Perf(t, flags, cm)
    for tool in ("ib_write_bw", "ib_read_bw", "ib_send_bw"):
        for size in (4096, 65536, 1048576):
            p.bw(tool, size, 200 if size < 1048576 else 50)
    p.bw("ib_atomic_bw", 8, 200)
    for tool in ("ib_write_lat", "ib_read_lat", "ib_send_lat"):
        for size in (8, 4096, 1048576):
            p.lat(tool, size, 200 if size < 1048576 else 20)
    no_oops_both(t)


@scenario("perftest", "C2", "user verbs: ib_write_bw, ib_read_bw, ib_send_bw (4 KiB, 64 KiB, 1 MiB), ib_atomic_bw, "
          "ib_write_lat, ib_read_lat and ib_send_lat (8 B, 4 KiB, 1 MiB) between the nodes succeed with sane figures "
          "(printed)")
def perftest(t):
    perf_all(t)


@scenario("perftest-cm", "C2", "user verbs through rdma_cm: the same perftest runs with -R (connections by rdma_cm "
          "over the Weft addresses)")
def perftest_cm(t):
    perf_all(t, "-R", cm=True)


@scenario("rping", "C2", "rdma_cm: rping -c -V (every ping's data verified), 200 pings of 4 KiB between the nodes")
def rping(t):
    ib_load(t, 0)
    ib_load(t, 1)
    r = pair(t, "rping", f"rping -s -a {ip4(1)} -V -C 200 -S 1024", f"rping -c -a {ip4(1)} -V -C 200 -S 1024 -v",
             cm=True)
    t.require(r, "rping -c -V failed")
    c = r[0]
    # -v prints each ping's data: 200 lines, none with a verify error.
    n = sum(1 for x in c.lines() if x.startswith("ping data: rdma-ping-"))
    t.require(n == 200, f"rping printed {sum(1 for x in c.lines() if x.startswith('ping data'))} of 200 pings: "
              f"{' | '.join(x[:200] for x in c.lines()[-3:])}")
    t.checked("rping -c -V -C 200 -S 1024 (verify): 200 pings, each verified")
    no_oops_both(t)


# A lossy fabric: the same perftest write and read through a switch that
# drops 1% of the frames and reorders them over 4 routes.
@scenario("verbs-lossy", "C2", "user verbs through a switch with 1% loss and reordering: ib_write_bw and ib_read_bw "
          "complete, the adapter's retransmit counter moves")
def verbs_lossy(t):
    p = Perf(t)
    r0, t0 = t.counter(0, "V_RETRANSMITS"), t.counter(0, "V_TIMEOUTS")
    r = t.faults("set", "drop_ppm=10000", "routes=4", "jitter_ns=50000")
    t.require(r.ok, f"switch: faults set: {r.out}")
    t.say(f"switch faults: {r.out}")
    try:
        p.bw("ib_write_bw", 65536, 100)
        p.bw("ib_read_bw", 65536, 100)
    finally:
        t.require(t.faults("clear").ok, "switch: faults clear failed")
    r1, t1 = t.counter(0, "V_RETRANSMITS"), t.counter(0, "V_TIMEOUTS")
    t.require(r1 > r0, f"node0: V_RETRANSMITS did not move ({r0} -> {r1})")
    t.checked(f"through 1% loss and reordering: node0 V_RETRANSMITS {r0} -> {r1}, V_TIMEOUTS {t0} -> {t1}")
    no_oops_both(t)


@scenario("verbs-kill", "C2", "user verbs: ib_write_bw killed with SIGKILL mid-transfer on both nodes: rdma resource "
          "counts back to their start")
def verbs_kill(t):
    dev, sgid, cgid = gids(t)
    before0, before1 = res_counts(t, 0, dev), res_counts(t, 1, dev)
    # A 60 s write stream, killed with SIGKILL on both sides after 5 s.
    srv = t.bg(1, f"ib_write_bw -d {dev} -x {sgid} -F -D 60 -s 65536 & echo $! >/tmp/kill-s.pid; wait")
    r = t.gx(0, f"i=0; while [ $i -lt 20 ]; do ib_write_bw -d {dev} -x {cgid} -F -D 60 -s 65536 {ip4(1)} "
                ">/tmp/kill-c.out 2>&1 & p=$!; sleep 5; if kill -0 $p 2>/dev/null; then /usr/bin/rdma resource show | "
                "sed 's/^/during: /'; kill -9 $p; echo killed-running; exit 0; fi; "
                "grep -q -e 'Couldn.t connect' -e 'Unable to open' /tmp/kill-c.out || { cat /tmp/kill-c.out; exit 1; }; "
                "i=$((i + 1)); done; exit 1")
    t.require(r.ok and "killed-running" in r.out, f"node0: ib_write_bw was not running after 5 s: {r.out}")
    during = "\n".join(re.sub(r"^during: [0-9]*: [^ ]*: ", "", x) for x in r.lines()
                       if x.startswith(f"during: 0: {dev}: "))
    t.require(during and during != before0,
              f"node0: the running ib_write_bw held no objects: before '{before0}', during '{during}'")
    t.gx(1, "kill -9 $(cat /tmp/kill-s.pid)")
    srv.wait()
    # The kernel tears a killed process's objects down when its file
    # descriptors close; allow it a few seconds under TCG.
    for _ in range(10):
        res = res_counts(t, 0, dev)
        if res == before0:
            break
        time.sleep(1)
    t.require(res == before0, f"node0: objects left after the kill: before '{before0}', after '{res}'")
    res = res_counts(t, 1, dev)
    t.require(res == before1, f"node1: objects left after the kill: before '{before1}', after '{res}'")
    t.checked(f"ib_write_bw killed mid-transfer on both nodes: ib_core objects from '{during}' back to the start "
              f"({before0})")
    no_oops_both(t)


# Adapter recovery under a running user verbs program (docs/verbs-linux.md):
# node1's adapter is recovered while ib_write_bw streams node0 -> node1.
# Both programs end with an error, the process's objects are gone, a new
# weft_ib0 comes up ACTIVE by itself and a new ib_write_bw runs.
@scenario("verbs-recovery", "C2", "user verbs: node1's adapter recovered under a running ib_write_bw: both ends fail, "
          "the process's objects are gone, a new weft_ib0 comes up ACTIVE by itself, a new ib_write_bw runs")
def verbs_recovery(t):
    dev, sgid, cgid = gids(t)
    start1 = res_counts(t, 1, dev)
    srv = t.bg(1, f"ib_write_bw -d {dev} -x {sgid} -F -D 60 -s 65536")
    cli = t.bg(0, f"i=0; while [ $i -lt 20 ]; do ib_write_bw -d {dev} -x {cgid} -F -D 60 -s 65536 {ip4(1)} "
                  "2>/tmp/rec.err && exit 0; grep -q -e 'Couldn.t connect' -e 'Unable to open' /tmp/rec.err || "
                  "{ cat /tmp/rec.err; exit 1; }; i=$((i + 1)); sleep 1; done; exit 2")
    # Streaming: node1 holds the server's QP beside the GSI QP.
    for _ in range(30):
        res = res_counts(t, 1, dev)
        if res != start1:
            break
        time.sleep(1)
    t.require(res != start1, f"node1: ib_write_bw never created its objects ({res})")
    time.sleep(3)
    if cli.done():
        t.fail(f"node0: ib_write_bw ended before the recovery: {cli.wait().tail(3)}")
        t.stop()
    r = t.gx(1, "echo 1 >/sys/class/misc/weft0/device/recover")
    t.require(r.ok, f"node1: recovery through sysfs failed: {r.out}")
    r = srv.wait()
    t.require(not r.ok, "node1: ib_write_bw exited 0 across the recovery")
    t.checked(f"node1: adapter recovered under ib_write_bw; the server ended with an error (exit {r.rc}: "
              f"{r.tail(1)[:80]})")
    r = cli.wait()
    t.require(not r.ok, "node0: ib_write_bw exited 0 although its peer's adapter was recovered")
    t.checked(f"node0: the client ended with an error too (exit {r.rc})")
    r = t.gx(1, "for i in $(seq 100); do /usr/bin/rdma link show 2>/dev/null | grep -q 'state ACTIVE' && exit 0; "
                "sleep 0.2; done; /usr/bin/rdma link show; exit 1")
    t.require(r.ok, f"node1: no ACTIVE RDMA link after the recovery: {r.out}")
    # The new device holds only ib_core's own objects: none owned by a
    # process, and no more of any kind than the old one held at the start
    # (it can hold fewer: ib_core keeps CQ pools, which nvme-rdma fills,
    # until a device goes away).
    for _ in range(20):
        res, uobj = res_counts(t, 1, dev), user_objects(t, 1, dev)
        if uobj == 0 and res_le(res, start1):
            break
        time.sleep(0.5)
    t.require(uobj == 0, f"node1: {uobj} objects of a process after the recovery")
    t.require(res_le(res, start1), f"node1: objects after the recovery '{res}', more than at the start '{start1}'")
    t.checked(f"node1: a new {dev} came up ACTIVE by itself holding no process's objects; ib_core objects '{res}' "
              f"(at the start '{start1}')")
    Perf(t).bw("ib_write_bw", 65536, 100)
    no_oops_both(t)


# ---- the verbs test programs (tests/verbs/, docs/rdma-provider.md "Tests") ----
def vtap(t, n, name, r):
    """The TAP output of a verbs test program as the scenario's checks:
    each "# checked:" line (printed only for a point whose checks held) is
    a check, each "not ok" point a failed one, each "# figure:" line is
    printed; the program must also exit 0 with its whole plan passed."""
    for line in r.lines():
        if line.startswith("# checked: node"):
            t.checked(line[len("# checked: "):])
        elif line.startswith("# checked: "):
            t.checked(f"node{n}: {line[len('# checked: '):]}")
        elif line.startswith("not ok "):
            # the failed point is a check of its own: checked closes it
            t.fail(f"node{n}: {name}: {line[len('not ok '):]}")
            t.checked(line)
        elif line.startswith("# FAIL") or line.startswith("Bail out!"):
            t.say(f"node{n}: {line}")
        elif line.startswith("# figure: "):
            t.say(f"node{n}: {line[2:]}")
    lines = r.lines()
    ok = sum(1 for x in lines if x.startswith("ok "))
    bad = sum(1 for x in lines if x.startswith("not ok "))
    plans = [x[3:] for x in lines if re.fullmatch(r"1\.\.[0-9]+", x)]
    plan = int(plans[-1]) if plans else None
    if not r.ok or bad or not ok or plan != ok + bad:
        t.show(r.out, "", 5)
        return t.fail(f"node{n}: {name} failed (exit {r.rc}, {bad} of {ok + bad} points failed, "
                      f"plan {plan if plan is not None else 'missing'})")
    return True


def vone(t, test, g0, g1):
    """TEST on node0 alone (-s -g GIDX)."""
    return vtap(t, 0, test, t.gx(0, f"/usr/lib/weft/tests/{test} -s -g {g0}"))


def vpair(t, test, g0, g1):
    """TEST as the target on node0 (-s) and as the initiator on node1 (-c
    node0's address), each with its node's GID index."""
    srv = t.bg(0, f"/usr/lib/weft/tests/{test} -s -g {g0}")
    c = t.gx(1, f"/usr/lib/weft/tests/{test} -c {ip4(0)} -g {g1}")
    ok = vtap(t, 0, f"{test} -s", srv.wait())
    return vtap(t, 1, f"{test} -c", c) and ok


def vrun(t, how, test):
    """The RDMA modules loaded and the GID indexes found on both nodes, TEST
    run by HOW (vone or vpair); afterwards ib_core's object counts (`rdma
    resource show`) are back to their values before the run on both nodes,
    and neither kernel logged a warning."""
    t.need(0, test)
    _, g1 = ib_dev(t, 1)
    dev, g0 = ib_dev(t, 0)
    start = [res_counts(t, n, dev) for n in (0, 1)]
    how(t, test, g0, g1)
    for n in (0, 1):
        # A process's objects go when its file descriptors close.
        for _ in range(10):
            res = res_counts(t, n, dev)
            if res == start[n]:
                break
            time.sleep(1)
        if res != start[n]:
            t.fail(f"node{n}: ib_core objects after {test}: '{res}', before: '{start[n]}'")
    t.checked(f"both nodes: rdma resource show counts after {test} as before it ({re.sub(' +', ' ', start[0])})")
    no_oops_both(t)
    t.checked("both nodes: no kernel warning or oops")


@scenario("verbs-isolation", "C2", "user verbs: node1's RDMA WRITE/READ with rkeys node0's process did not give it (a "
          "guessed key byte, another PD's, another process's) complete with IBV_WC_REM_ACCESS_ERR, the QP goes to ERR, "
          "node0's memory unchanged; another process on node0 cannot query, modify or destroy the owner's QP, CQ, MR or "
          "PD (weft-verbs-isolation)")
def verbs_isolation(t):
    vrun(t, vpair, "weft-verbs-isolation")


@scenario("verbs-errors", "C2", "user verbs: every verbs call with bad arguments fails with the errno of a real HCA's "
          "provider or driver (EINVAL, EOPNOTSUPP, EFAULT, EBUSY; bad_wr set); ib_core object counts unchanged, no "
          "kernel warning (weft-verbs-errors)")
def verbs_errors(t):
    vrun(t, vone, "weft-verbs-errors")


@scenario("verbs-mw", "C2", "user verbs: type 1 (ibv_bind_mw) and type 2 (IBV_WR_BIND_MW) memory windows: node1's "
          "writes and reads inside a window byte-exact, outside it, without the right, through another QP, after "
          "LOCAL_INV, send with invalidate or dealloc IBV_WC_REM_ACCESS_ERR (weft-verbs-mw)")
def verbs_mw(t):
    vrun(t, vpair, "weft-verbs-mw")


@scenario("verbs-qpx", "C2", "user verbs: the extended QP API (ibv_create_qp_ex, ibv_wr_*): node1's RDMA WRITE (3 SGEs, "
          "through a window node0 bound with ibv_wr_bind_mw), WRITE_IMM, SEND, SEND_IMM and SEND_INV from inline "
          "data, READ, both atomics and a UD SEND land byte-exact; ibv_wr_abort and a failed ibv_wr_complete post "
          "nothing; after node0's ibv_wr_local_inv a write through the window fails (weft-verbs-qpx)")
def verbs_qpx(t):
    vrun(t, vpair, "weft-verbs-qpx")


@scenario("verbs-cq", "C2", "user verbs: ibv_resize_cq on node1 with completions waiting and with RDMA writes in "
          "flight: every completion once and in order, a resize below the completions outstanding EINVAL, the CQ's "
          "event after the resizes; ibv_modify_cq: 4 events for 16 completions with count 4 (16 without), none "
          "before the 4th, a period's event not before it, bad values EINVAL, a stream's events with and without "
          "moderation as a figure; node0's memory byte-exact (weft-verbs-cq)")
def verbs_cq(t):
    vrun(t, vpair, "weft-verbs-cq")


@scenario("verbs-cntr", "C2", "user verbs: event counters through weft_ib's uverbs object: node1's unsignaled "
          "WRITEs and READs naming slot 1 counted by the adapter, node0's REMOTE_WRITE and REMOTE_READ counters "
          "moved with no poll on node0, the block read-only, bad slots EINVAL; node0's WRITE held by a WAIT_CNT "
          "on its REMOTE_WRITE counter lands on node1 after node1's WRITEs, never before; the SET method moves a "
          "counter in the adapter and releases a second WAIT_CNT exactly at its threshold (weft-verbs-cntr)")
def verbs_cntr(t):
    vrun(t, vpair, "weft-verbs-cntr")


@scenario("verbs-uc", "C2", "user verbs: UC QPs: node1's SEND of 3 packets, SEND_IMM, WRITE of 8 packets and WRITE_IMM "
          "land byte-exact on node0 with their completions; RDMA READ, atomics and SEND with invalidate on UC "
          "EINVAL at ibv_post_send (weft-verbs-uc)")
def verbs_uc(t):
    vrun(t, vpair, "weft-verbs-uc")
