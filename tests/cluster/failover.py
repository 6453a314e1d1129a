"""Failover under a stream (issues 7 and 8), on cluster CF: node S streams
RDMA writes and reads to node T; during the stream an event happens to T
(reboot: T's VM restarts; recover: T's adapter recovers; fatal: an
adapter-internal fatal error).  Then the stream restarts as a
reliable-layer stream (weft-rdma-check --messages) of the same job: both
ends acquire rCxts and register memory again, and while it runs the switch
replays old frames captured before the event.  No stale frame may be
accepted (each is dropped with a counted reason, or is an old completion
the ULP drops by tid), every new message arrives exactly once, and the
adapter, switch, weft-info and driver counters must agree
(docs/cluster.md, "Failover under a stream").

The nodes' weft0 interfaces are down meanwhile: their own frames (ARP,
IPv6 neighbour discovery, the window-open announcement) would otherwise
land in the capture ring between the event and the mark, and a replayed
copy of such a current frame is rightly accepted by the adapter, which the
count of stale frames could not tell apart.  With weft0 down its window is
closed, so replayed IP frames are dropped with a counted reason like the
stream's."""

import json
import re
import time

from basic import verdict
from weftcluster.testing import scenario

JOB = 4200
STREAM = "--mode both --min-size 64K --max-size 4M --depth 8 --iters 20000"
MSGS = 2000
RELT = "--rel-timeout-us 200000"
HELD = ("windows_open", "rcxts_held", "mrs", "pages_pinned")


def counters(text):
    """"NAME VALUE" lines -> {NAME: int}."""
    d = {}
    for line in text.splitlines():
        f = line.split()
        if len(f) == 2 and f[1].isdigit():
            d[f[0]] = int(f[1])
    return d


def adapter_counters(t, n):
    r = t.gx(n, "cat /sys/kernel/debug/weft/weft0/counters")
    t.require(r.ok, f"node{n}: cannot read the adapter counters: {r.out}")
    return counters(r.out)


def recovery_count(t, n):
    return t.gx(n, "cat /sys/class/misc/weft0/device/recovery_count").out


def fo_ip(t, state, *nodes):
    """weft0 up or down on NODES, its addresses kept."""
    for i in nodes:
        r = t.gx(i, f"sysctl -qw net.ipv6.conf.weft0.keep_addr_on_down=1 && ip link set weft0 {state}")
        t.require(r.ok, f"node{i}: ip link set weft0 {state}: {r.out}")


def start_stream(t, s, tgt):
    """The old stream: until well over a capture ring of frames (8192) has
    passed, so that the ring holds only stream frames.  Its jobs."""
    t.need((s, tgt), "weft-bw", "weft-rdma-check")
    before = adapter_counters(t, s).get("TX_PACKETS", 0)
    win, srv = t.server(tgt, JOB, f"weft-bw --server --job {JOB} {STREAM}")
    cli = t.bg(s, f"weft-bw --client --peer {tgt} --peer-window {win} --job {JOB} {STREAM}")
    sent = 0
    for _ in range(240):
        sent = adapter_counters(t, s).get("TX_PACKETS", 0) - before
        if sent >= 10000:
            break
        if cli.done():
            r = cli.wait()
            t.fail(f"the stream node{s} -> node{tgt} ended before the event (status {r.rc}): {r.tail(3)}")
            t.stop()
        time.sleep(0.5)
    t.require(sent >= 10000, f"the stream node{s} -> node{tgt} did not get going ({sent} frames sent)")
    t.checked(f"node{s} streams RDMA to node{tgt}: {sent} frames sent so far")
    return srv, cli


# The event.  Right after it the stream's source is stopped: every frame
# the switch captured from then back (its capture ring holds the last 8192
# frames, all of the stream) belongs to the old incarnation.
def event_reboot(t, s, tgt):
    boot0 = t.gx(tgt, "cat /proc/sys/kernel/random/boot_id").out
    reboot = t.bg_host(lambda: t.wc("reboot", tgt))
    down = False
    for _ in range(100):
        if not re.search(rf"^node{tgt} +[0-9]+ +[a-z]+ +ready", t.wc("status").out, re.M):
            down = True
            break
        time.sleep(0.2)
    t.gx(s, "killall -KILL weft-bw")
    if not down:
        t.fail(f"node{tgt} never left the ready state after the reboot began")
    t.checked(f"node{tgt}'s VM went down mid-stream (no longer ready); node{s}'s stream stopped just after")
    r = reboot.wait()
    if not r.ok:
        t.show(r.out, "")
        t.fail(f"node{tgt} did not come back from the reboot")
        t.stop()
    r = t.gx(tgt, "cat /proc/sys/kernel/random/boot_id; cat /run/weft/driver; ls /dev/weft0")
    t.require(r.ok and r.lines()[:1] != [boot0] and "loaded" in r.lines(), f"node{tgt} after reboot: {r.out}")
    t.checked(f"node{tgt} rebooted (new boot id), weft.ko loaded again with new keys")
    fo_ip(t, "down", tgt)


def event_fatal(t, s, tgt):
    rc0 = int(recovery_count(t, tgt))
    r = t.gx(tgt, "echo 1 > /sys/kernel/debug/weft/weft0/inject_fatal")
    t.require(r.ok, f"node{tgt}: fatal error injection failed: {r.out}")
    # Nobody asks for a recovery: the adapter's interrupt makes weft.ko
    # recover by itself.
    for _ in range(60):
        if recovery_count(t, tgt) == str(rc0 + 1):
            break
        time.sleep(0.5)
    t.gx(s, "killall -KILL weft-bw")
    r = t.gx(tgt, 'cat /sys/class/misc/weft0/device/recovery_count; dmesg | grep -c "adapter recovery: device error"')
    lines = r.lines() or [""]
    t.require(lines[0] == str(rc0 + 1), f"node{tgt}: recovery count {rc0} -> {lines[0]} 30 s after the injected "
              f"fatal error, expected {rc0 + 1}")
    t.require(lines[-1].isdigit() and int(lines[-1]) >= 1,
              f"node{tgt}: the kernel log shows no recovery for a device error")
    t.checked(f"node{tgt}: injected adapter fatal error, weft.ko recovered by itself (device error), recovery count "
              f"{rc0} -> {rc0 + 1}; node{s}'s stream stopped just after")


def event_recover(t, s, tgt):
    rc0 = int(recovery_count(t, tgt))
    r = t.gx(tgt, "echo 1 > /sys/kernel/debug/weft/weft0/recover")
    t.require(r.ok, f"node{tgt}: recovery through debugfs failed: {r.out}")
    t.gx(s, "killall -KILL weft-bw")
    now = recovery_count(t, tgt)
    t.require(now == str(rc0 + 1), f"node{tgt}: recovery count {rc0} -> {now}, expected {rc0 + 1}")
    t.checked(f"node{tgt}: adapter recovered mid-stream, recovery count {rc0} -> {now}; node{s}'s stream stopped "
              "just after")


def released(t, s, tgt, srv, cli):
    """Both ends of the old stream are gone and released everything."""
    # The server on T was told of the recovery (or went down with its VM).
    for _ in range(60):
        if srv.done():
            break
        time.sleep(0.5)
    if not srv.done():
        t.gx(tgt, "killall -KILL weft-bw")
        t.say(f"the weft-bw server on node{tgt} was still running 30 s after the event: killed")
    cli.wait()
    r = srv.wait()
    t.say(f"weft-bw server on node{tgt} ended with status {r.rc}: "
          f"{([x for x in r.lines() if not x.startswith('{')] or [''])[-1]}")
    for i in (s, tgt):
        for _ in range(60):
            d = counters(t.gx(i, "cat /sys/kernel/debug/weft/driver").out)
            if all(d.get(k) == 0 for k in ("windows_open", "rcxts_held", "pages_pinned")):
                break
            time.sleep(0.5)
        else:
            r = t.gx(i, "ps | grep -v grep | grep weft-; cat /sys/kernel/debug/weft/weft0/state")
            t.fail(f"node{i}: resources still held 30 s after the stream's processes were killed: {d} -- "
                   f"{' '.join(r.lines())}")
            t.stop()
    t.checked("both stream ends are gone and their windows, rCxts and pinned pages are released")


def snapshot(t, s, tgt):
    """One consistent snapshot of both nodes' counters (debugfs, weft-info,
    the driver's) and the switch's.  The nodes' weft0 interfaces send IPv6
    and ARP frames of their own at any time, so the switch is read before
    and after the nodes: a snapshot counts only if no frame reached either
    node in between."""
    def tx(sw):
        return [p["tx_frames"] for p in sw["ports"] if p["node"] in (s, tgt)]

    for _ in range(20):
        sw0 = t.faults_json("counters")
        t.require(sw0, "switch counters unreadable")
        snap = {"nodes": {}}
        for n in (s, tgt):
            r = t.gx(n, "cat /sys/kernel/debug/weft/weft0/counters; echo ==; weft-info --json; echo ==; "
                        "cat /sys/kernel/debug/weft/driver")
            t.require(r.ok, f"node{n}: cannot read the counters: {r.out}")
            parts = r.out.split("\n==\n")
            try:
                info = {k: v for k, v in json.loads(parts[1]).get("counters", {}).items() if isinstance(v, int)}
            except (ValueError, IndexError, AttributeError):
                info = None
            t.require(info is not None, f"node{n}: weft-info --json printed no counters")
            snap["nodes"][n] = {"adapter": counters(parts[0]), "info": info,
                                "driver": counters(parts[2] if len(parts) > 2 else "")}
        snap["switch"] = t.faults_json("counters")
        t.require(snap["switch"], "switch counters unreadable")
        if tx(sw0) == tx(snap["switch"]):
            return snap
        time.sleep(0.3)
    t.fail(f"the switch kept delivering frames to node{s} or node{tgt} during 20 snapshots")
    t.stop()


def new_stream(t, s, tgt, snap0):
    """The stream restarts: T opens a window of the same job again and S a
    new client, both acquire rCxts and register memory anew (after a reboot
    with T's new PVO keys, after a recovery with the new rCxt key), and the
    reliable layer streams MSGS messages.  While it runs, the switch replays
    the old stream's frames still in its capture ring (the new stream's
    frames push the oldest out), so they meet rCxts and registrations that
    are live again.  (frames replayed, the client's verdict)."""
    mark = t.faults("mark").out
    t.require(mark.isdigit(), f"switch capture mark: {mark}")
    win, srv = t.server(tgt, JOB, f"weft-rdma-check --server --job {JOB} {RELT}")
    cli = t.bg(s, f"weft-rdma-check --client --peer {tgt} --peer-window {win} --job {JOB} --messages {MSGS} {RELT} "
                  "--json")
    base = snap0["nodes"][tgt]["adapter"]
    started = False
    for _ in range(200):
        c = adapter_counters(t, tgt)
        if c.get("RX_COMPLETIONS", 0) - base.get("RX_COMPLETIONS", 0) >= 2:
            started = True
            break
        if cli.done():
            break
        time.sleep(0.1)
    if not started or cli.done():
        t.fail(f"the new stream node{s} -> node{tgt} did not get going: {cli.wait().tail(3)}")
        t.stop()
    r = t.faults("replay", 2048, f"before={mark}")
    t.require(r.ok, f"switch replay: {r.out}")
    m = re.search(r"[0-9]+", r.out)
    total = int(m.group()) if m else 0
    dv = ""
    for i in (s, tgt):
        d = counters(t.gx(i, "cat /sys/kernel/debug/weft/driver").out)
        dv += f"node{i} " + "".join(f"{k}={d[k]} " for k in HELD if k in d)
    t.checked(f"the new stream runs (weft-rdma-check --messages {MSGS}, node{s} -> node{tgt}, "
              f"{c.get('RX_PACKETS', 0) - base.get('RX_PACKETS', 0)} frames received by node{tgt} so far)")
    t.say(f"driver resources: {dv}")
    t.say(f"switch: {r.out} (old stream frames from the capture ring, captured before mark {mark})")
    t.require(total > 0, "the switch replayed no frame")
    cr = cli.wait()
    sr = srv.wait()
    j = cr.json()
    t.say(f"new stream: result {j.get('result', 'none')}, delivered {j.get('delivered', '?')}/{MSGS}, out of order "
          f"or repeated {j.get('failures', '?')}, duplicates dropped {j.get('duplicates', '?')}, stale completions "
          f"ignored {j.get('stale', '?')}, retries {j.get('retries', '?')}")
    verdict(t, cr, sr, cr.ok and j.get("result") == "pass" and j.get("delivered") == MSGS and j.get("failures") == 0,
            f"the new stream did not deliver every message exactly once (client exit {cr.rc}, server exit {sr.rc})",
            f"weft-rdma-check server on node{tgt}", 5)
    t.checked(f"the reliable layer delivered all {MSGS} messages exactly once and in order (sequence-checked by the "
              "server)")
    return total, j


def report(t, ev, s, tgt, snap0, snap1, total, j):
    """The counters of the two snapshots must agree (docs/cluster.md,
    "Failover under a stream", point 4).  Prints the campaign's report."""
    bad = []
    replayed = drops_all = 0
    reasons = {}
    port = {n: {k: next(p for p in snap["switch"]["ports"] if p["node"] == n) for k, snap in ((0, snap0), (1, snap1))}
            for n in (s, tgt)}
    for n in (s, tgt):
        c0, c1 = snap0["nodes"][n]["adapter"], snap1["nodes"][n]["adapter"]
        info, drv = snap1["nodes"][n]["info"], snap1["nodes"][n]["driver"]
        d = {k: c1.get(k, 0) - c0.get(k, 0) for k in c1}
        drops = sum(v for k, v in d.items() if k.startswith("DROP_"))
        for k, v in d.items():
            if k.startswith("DROP_") and v:
                reasons[k[5:]] = reasons.get(k[5:], 0) + v
        tx = port[n][1]["tx_frames"] - port[n][0]["tx_frames"]
        rep = port[n][1]["replayed"] - port[n][0]["replayed"]
        replayed += rep
        drops_all += drops
        rx = d.get("RX_PACKETS", 0)
        t.say(f"counters: node{n}: switch delivered {tx} frames ({rep} replayed); adapter accepted {rx} (RX_PACKETS) + "
              f"dropped {drops} = {rx + drops}; driver: " +
              " ".join(f"{k}={v}" for k, v in sorted(drv.items())
                       if k in ("windows_open", "rcxts_held", "mrs", "pages_pinned", "recoveries")))
        if tx != rx + drops:
            bad.append(f"node{n}: switch delivered {tx} frames, adapter RX_PACKETS+DROP_* moved by {rx + drops}")
        diff = [k for k in c1 if k in info and info[k] != c1[k]]
        if diff:
            bad.append(f"node{n}: weft-info and debugfs counters differ: " +
                       ", ".join(f"{k} {info[k]}/{c1[k]}" for k in diff))
        held = [f"{k}={drv.get(k, -1)}" for k in HELD if drv.get(k, -1) != 0]
        if held:
            bad.append(f"node{n}: driver still holds {' '.join(held)} after the new stream ended")
    if replayed != total:
        bad.append(f"the switch said replayed {total}, its ports count {replayed} replayed deliveries")
    # Every frame the switch delivered was accepted or dropped (checked per
    # node above), and the new stream's own frames were all accepted (no
    # loss, so no retry): the replayed frames the adapters accepted are
    # replayed - drops.  As in the seed, the adapter checks a completion's
    # rCxt but not its tid, so an old completion naming a re-used rCxt id
    # (same key: that node did not recover) is accepted and the ULP drops
    # it by tid; the tool counts those as "stale".  Stale frames accepted =
    # those the adapters accepted and the ULP did not drop.
    ulp_stale, retries = j.get("stale", 0), j.get("retries", 0)
    accepted = replayed - drops_all
    stale_accepted = max(0, accepted - ulp_stale)
    if drops_all > replayed:
        bad.append(f"replayed {replayed} frames but the adapters' drop counters moved by {drops_all}")
    elif accepted != ulp_stale and (retries == 0 or accepted > ulp_stale):
        bad.append(f"the adapters accepted {accepted} replayed frames (replayed {replayed} - dropped {drops_all}), "
                   f"the ULP dropped {ulp_stale} stale completions")
    t.say(f"failover-cluster: events=1 replayed={replayed} stale_accepted={stale_accepted} "
          f"lost={MSGS - j.get('delivered', 0)} duplicated={j.get('failures', 0)}")
    t.say(f"failover-cluster {ev}: replayed {replayed} = dropped by the adapters {drops_all} "
          f"({' '.join(f'{k}={v}' for k, v in sorted(reasons.items())) or 'none'}) + stale completions accepted by an "
          f"adapter and dropped by the ULP (tid) {accepted}")
    t.require(not bad, ";".join(bad))
    t.checked("stale frames accepted 0; replayed frames = the adapters' DROP_* deltas + stale completions the ULP "
              "dropped; per node, frames the switch delivered = RX_PACKETS + DROP_* deltas; weft-info = debugfs "
              "counters; driver resources back to 0")
    if ev != "reboot":
        now = recovery_count(t, tgt)
        drec = snap1["nodes"][tgt]["driver"].get("recoveries")
        arec = snap1["nodes"][tgt]["adapter"].get("RECOVERIES")
        t.require(now == str(drec) == str(arec),
                  f"node{tgt}: recovery count {now} (sysfs), driver recoveries {drec}, adapter RECOVERIES {arec} "
                  "disagree")
        t.checked(f"node{tgt}: recovery count (sysfs) = driver recoveries = adapter RECOVERIES counter = {now}")


EVENTS = {"reboot": event_reboot, "fatal": event_fatal, "recover": event_recover}


def failover_run(t, ev, s, tgt):
    srv, cli = start_stream(t, s, tgt)
    EVENTS[ev](t, s, tgt)
    released(t, s, tgt, srv, cli)
    snap0 = snapshot(t, s, tgt)
    total, j = new_stream(t, s, tgt, snap0)
    # Quiescent again: the switch holds nothing, then the second snapshot.
    for _ in range(40):
        sw = t.faults("--json", "counters").out
        if '"queued":0,"parked":0' in sw:
            break
        time.sleep(0.25)
    time.sleep(0.5)
    snap1 = snapshot(t, s, tgt)
    report(t, ev, s, tgt, snap0, snap1, total, j)
    t.require(t.no_oops(s) and t.no_oops(tgt), None)
    t.checked(f"no kernel warning or oops on node{s} and node{tgt}")


def failover(t, ev):
    s, tgt = (1, 0) if ev == "recover" else (0, 1)
    fo_ip(t, "down", s, tgt)
    try:
        failover_run(t, ev, s, tgt)
    finally:
        fo_ip(t, "up", s, tgt)


DESC = "old frames replayed into the restarted stream all dropped (by reason); every new message exactly once; " \
       "device, switch and driver counters agree"


@scenario("reboot-streaming", "CF", "node1 rebooted while node0 streams to it; " + DESC)
def reboot_streaming(t):
    failover(t, "reboot")


@scenario("recovery-streaming", "CF", "adapter recovery on node0 while node1 streams to it; " + DESC)
def recovery_streaming(t):
    failover(t, "recover")


@scenario("fatal-streaming", "CF", "adapter-internal fatal error injected on node1 (DEBUG_INJECT) while node0 "
          "streams to it: weft.ko recovers by itself; " + DESC)
def fatal_streaming(t):
    failover(t, "fatal")
