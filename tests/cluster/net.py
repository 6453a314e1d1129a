"""IP over Weft scenarios (docs/net.md).  Every node N has 10.87.0.(N+1)/16
and fd57:6566::(N+1)/64 on weft0 (the weft-cluster defaults).  Busybox sh
runs its own applets first, so iproute2 and iputils are called by their
paths."""

import hashlib
import json
import os
import re
import struct
import subprocess
import time

from basic import PING, ip4, ip6
from weftcluster.testing import scenario

NT = "/usr/lib/weft/tests/weft-test-net"
IP = "/sbin/ip"


def netstat_sum(t, n, *names):
    """The sum of weft0 ethtool counters NAMES on node N."""
    r = t.gx(n, "ethtool -S weft0")
    t.require(r.ok, f"node{n}: ethtool -S weft0 failed: {r.out}")
    total = 0
    for line in r.lines():
        f = line.split()
        if len(f) >= 2 and f[0].rstrip(":") in names and f[1].isdigit():
            total += int(f[1])
    return total


# ---- four nodes: reachability, ARP, flood ping, large broadcast -------------------
@scenario("ip-reach", "C4", "IP over Weft, 4 nodes: every node pings every other over IPv4 and IPv6, ARP resolves, "
          "ping -f loses nothing")
def ip_reach(t):
    t.need(range(4), "ethtool")
    jobs = {}
    for i in range(4):
        cmd = "".join(f" {PING} -c 2 -W 5 {ip4(j)} >/dev/null && echo v4-{j} ok;"
                      f" {PING} -c 2 -W 5 {ip6(j)} >/dev/null && echo v6-{j} ok;" for j in range(4) if j != i)
        jobs[i] = t.bg(i, f"{cmd} {IP} -4 neigh show dev weft0")
    bad = 0
    for i in range(4):
        r = jobs[i].wait()
        for j in range(4):
            if i == j:
                continue
            for v in ("v4", "v6"):
                if f"{v}-{j} ok" not in r.lines():
                    t.say(f"node{i} -> node{j}: {v} ping failed")
                    bad += 1
            if not re.search(rf"^{re.escape(ip4(j))} lladdr 02:57:46:00:00:0{j} ", r.out, re.M):
                t.say(f"node{i}: no ARP entry {ip4(j)} -> 02:57:46:00:00:0{j}: {r.out}")
                bad += 1
    t.require(bad == 0, f"{bad} reachability checks failed")
    t.checked("every node pings every other over IPv4 and IPv6 (24 pairs), ARP resolved to 02:57:46:00:00:0N")
    r = t.gx(0, f"{PING} -q -f -c 1500 -w 60 {ip4(1)}", timeout=120)
    t.require(" 1500 received, 0% packet loss" in r.out,
              "node0 -> node1 ping -f: " + " ".join(x for x in r.lines() if re.search("transmitted|rtt", x)))
    sent = next((re.sub(r", time.*", "", x) for x in r.lines() if "transmitted" in x), "")
    m = re.search(r"ipg/ewma.*", r.out)
    t.checked(f"ping -f node0 -> node1: {sent}, {m.group() if m else ''}")


def broadcast_fragments(path):
    """The capture: FIFO packets from node 0 to 0xFFFF whose payload (net
    header, Ethernet, IPv4) is one fragment of a 16 KiB UDP datagram.
    (True, what they were) for a complete set of rewritten fragments."""
    hdr = 28  # struct weft_net_hdr (include/weft/net.h)
    with open(path, "rb") as f:
        d = f.read()
    off, frags = 24, {}
    while off + 16 <= len(d):
        _, _, incl, _ = struct.unpack_from("<IIII", d, off)
        rec = d[off + 16:off + 16 + incl]
        off += 16 + incl
        if len(rec) < 104 + hdr + 34 or rec[1] != 1:
            continue
        dst, src = struct.unpack_from("<HH", rec, 4)
        p = rec[104:]
        if dst != 0xFFFF or src != 0 or p[1] != 1 or struct.unpack_from(">H", p, hdr + 12)[0] != 0x0800:
            continue
        ip = p[hdr + 14:]
        tot, ident, frag = struct.unpack_from(">HHH", ip, 2)
        if ip[9] != 17 or not frag & 0x3fff:
            continue
        frags.setdefault(ident, []).append(((frag & 0x1fff) * 8, tot - 20, bool(frag & 0x2000), len(rec)))
    for ident, fl in frags.items():
        fl.sort()
        pos, ok = 0, True
        for o, n, _, _ in fl:
            ok &= o == pos
            pos += n
        ok &= all(mf for _, _, mf, _ in fl[:-1]) and not fl[-1][2]
        if pos == 16384 + 8 and ok:
            return True, ("%d FIFO packets (IP id %d, at most %d bytes on the wire), offsets %s, MF set on all but "
                          "the last" % (len(fl), ident, max(r for *_, r in fl), ",".join(str(o) for o, *_ in fl)))
    return False, "no complete set of rewritten fragments; seen: %s" % {
        k: [(o, n, mf) for o, n, mf, _ in v] for k, v in frags.items()}


@scenario("ip-bcast", "C4", "IP over Weft: a 16 KiB UDP broadcast from node0 reaches every other node intact; the "
          "capture shows FIFO packets with rewritten IP fragment fields")
def ip_bcast(t):
    # The switch writes captures only inside the cluster's own folder.
    pcap = os.path.join(t.dir, "ip-bcast.pcap")
    t.need(range(4), "weft-test-net")
    t.require(t.faults("capture", "start", pcap).ok, "capture start failed")
    jobs = {i: t.bg(i, f"{NT} udp-recv 5400 16384 21 60") for i in (1, 2, 3)}
    time.sleep(5)
    r = t.gx(0, f"{NT} udp-bcast 10.87.255.255 5400 16384 21")
    t.require(r.ok, f"node0: udp-bcast failed: {r.out}")
    for i in (1, 2, 3):
        r = jobs[i].wait()
        t.require(r.ok and f"received 16384 bytes intact from {ip4(0)}" in r.out,
                  f"node{i}: the 16 KiB broadcast did not arrive intact: {r.out}")
    t.checked("a 16 KiB UDP broadcast from node0 reached node1, node2 and node3 intact")
    t.require(t.faults("capture", "stop").ok, "capture stop failed")
    ok, res = broadcast_fragments(pcap)
    t.require(ok, f"capture: {res}")
    t.checked(f"capture: the datagram went as {res}")


# ---- two nodes: TCP ------------------------------------------------------------------
def sha256_of(line):
    m = re.search(r"^[0-9a-f]{64}", line, re.M)
    return m.group() if m else ""


@scenario("ip-tcp", "C2", "IP over Weft: iperf3 TCP node0 -> node1 for 10 s without error; 256 MiB through a TCP "
          "socket with equal sha256")
def ip_tcp(t):
    t.need((0, 1), "iperf3", "weft-test-net")
    r = t.gx(1, "iperf3 -s -D -1 -p 5201")
    t.require(r.ok, f"node1: iperf3 server did not start: {r.out}")
    time.sleep(1)
    r = t.gx(0, f"iperf3 -c {ip4(1)} -p 5201 -t 10 -J", timeout=120)
    try:
        j = json.loads(r.out)
        if j.get("error"):
            fig = "error: " + j["error"]
        else:
            e = j["end"]
            fig = "%.0f Mbit/s sent, %.0f Mbit/s received, %d retransmits, %.1f s" % (
                e["sum_sent"]["bits_per_second"] / 1e6, e["sum_received"]["bits_per_second"] / 1e6,
                e["sum_sent"].get("retransmits", 0), e["sum_received"]["seconds"])
    except (ValueError, KeyError, TypeError) as e:
        j, fig = {"error": True}, repr(e)
    t.require(r.ok and not j.get("error"), f"iperf3 node0 -> node1 (exit {r.rc}): {fig} {r.tail(3)}")
    t.checked(f"iperf3 TCP node0 -> node1, 10 s, no error: {fig}")
    # The expected sha256 comes from the same generator run on the host (the
    # guest test binary is static): hashing 256 MiB under TCG is slow.
    cache = os.environ.get("WEFT_CACHE") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "weft")
    gen = os.path.join(cache, "guest-tests", "weft-test-net")
    try:
        want = hashlib.sha256(subprocess.run([gen, "gen", "268435456", "12"], stdout=subprocess.PIPE,
                                             check=True).stdout).hexdigest()
    except (OSError, subprocess.CalledProcessError):
        want = None
    t.require(want, f"cannot run {gen} on the host")
    recv = t.bg(1, f"{NT} tcp-recv 5301 | sha256sum", timeout=600)
    r = t.gx(0, f"{NT} tcp-send {ip4(1)} 5301 268435456 12", timeout=600)
    t.require(r.ok, f"node0: sending 256 MiB failed: {r.out}")
    r = recv.wait()
    got = sha256_of(r.out)
    t.require(r.ok and want == got, f"256 MiB over TCP: sent sha256 {want}, received {got} (exit {r.rc})")
    t.checked(f"256 MiB through a TCP socket node0 -> node1: sha256 {got} at both ends")


@scenario("ip-lossy", "C2", "IP over Weft: 4 MiB over TCP through 2% loss on the switch, byte-exact (TCP "
          "retransmits)")
def ip_lossy(t):
    t.need(0, "weft-test-net")
    t.require(t.faults("set", "drop=0.02").ok, "cannot set 2% loss on the switch")
    try:
        recv = t.bg(1, f"{NT} tcp-recv 5302 | sha256sum")
        s = t.gx(0, f"{NT} tcp-send {ip4(1)} 5302 4194304 13 && {NT} gen 4194304 13 | sha256sum")
        r = recv.wait()
        sw = t.faults_json("counters")
    finally:
        t.require(t.faults("clear").ok, "cannot clear the switch faults")
    got, want = sha256_of(r.out), sha256_of(s.out)
    try:
        drops = sw["total"]["drops"]["RANDOM"]
    except (KeyError, TypeError):
        drops = None
    t.require(s.ok and r.ok and want and want == got,
              f"4 MiB over TCP with 2% loss: sent sha256 {want}, received {got} (exit {s.rc}/{r.rc})")
    t.require(isinstance(drops, int) and drops > 0, f"the switch dropped nothing (drop_RANDOM '{drops}')")
    t.checked(f"4 MiB over TCP through 2% loss ({drops} frames dropped by the switch): sha256 {got} at both ends")


# ---- two nodes: node1 rebooted / its adapter recovered while node0 pings it --------
# Frames from before the event are not delivered: frames captured by the
# switch before the event are replayed afterwards; the epoch checks
# (rx_drop_stale_*, rx_drop_unsynced) drop at least as many, and the data
# frames the drivers deliver meanwhile are no more than the peers' new ones
# (background ARP and neighbour discovery).
STALE = ("rx_drop_stale_epoch", "rx_drop_stale_peer", "rx_drop_unsynced")
FRESH = ("tx_frames", "tx_frag_frames", "tx_ip_pieces")
RX = ("rx_frames", "rx_reassembled")


def ip_event(t, kind):
    t.need(0, "ethtool")
    # the counters start again at the reboot
    s0 = 0 if kind == "reboot" else netstat_sum(t, 1, "rx_drop_stale_epoch")
    # The frames replayed below are the last 400 the switch captured before
    # the mark: make them IP frames, whatever ran on the cluster before.
    r = t.gx(0, f"{PING} -q -f -c 300 -w 60 {ip4(1)}", timeout=120)
    t.require(" 300 received" in r.out, f"node0 -> node1 ping -f before the {kind}: "
              + " ".join(x for x in r.lines() if "transmitted" in x))
    ping = t.bg(0, f"{PING} -i 0.2 -w 45 {ip4(1)}")
    time.sleep(4)
    mark = (t.faults_json("mark") or {}).get("mark")
    t.require(isinstance(mark, int), "no capture mark from the switch")
    if kind == "reboot":
        r = t.wc("reboot", 1)
        t.require(r.ok, f"node1 did not come back: {r.tail(3)}")
    else:
        r = t.gx(1, "echo 1 > /sys/class/misc/weft0/device/recover")
        t.require(r.ok, f"node1: recovery failed: {r.out}")
    r = ping.wait()
    m = re.search(r"([0-9]+) packets transmitted", r.out)
    sent = int(m.group(1)) if m else None
    seqs = sorted({int(x) for x in re.findall(r"icmp_seq=([0-9]+)", r.out)})
    last = seqs[-10:]
    t.require(sent is not None and last and last[0] == sent - 9 and last[-1] == sent,
              f"pings did not resume after the {kind}: {sent} sent, last replies {' '.join(map(str, last))}")
    t.checked(f"node1 {kind} while node0 pinged it: {r.out.count('icmp_seq=')} of {sent} answered, the last 10 "
              f"({' '.join(map(str, last))} ) all answered")
    t.say(f"node1: {netstat_sum(t, 1, 'rx_drop_stale_epoch') - s0} frames for its earlier epoch dropped "
          f"(rx_drop_stale_epoch) across the {kind}")
    # The senders' counts are read before the receivers' (and after them at
    # the end), a second apart: a frame received in the window was then
    # sent in it, whatever arrives between two reads.
    f0, f1 = netstat_sum(t, 0, *FRESH), netstat_sum(t, 1, *FRESH)
    time.sleep(1)
    d0, d1 = netstat_sum(t, 0, *STALE), netstat_sum(t, 1, *STALE)
    a0, a1 = netstat_sum(t, 0, *RX), netstat_sum(t, 1, *RX)
    k = (t.faults_json("replay", 400, f"before={mark}") or {}).get("replayed")
    t.require(isinstance(k, int) and k > 0, f"the switch replayed nothing ({k})")
    time.sleep(3)
    n = netstat_sum(t, 0, *STALE) - d0 + netstat_sum(t, 1, *STALE) - d1
    a0, a1 = netstat_sum(t, 0, *RX) - a0, netstat_sum(t, 1, *RX) - a1
    f0, f1 = netstat_sum(t, 0, *FRESH) - f0, netstat_sum(t, 1, *FRESH) - f1
    # Frames delivered meanwhile must be the peers' fresh ones (ARP, ND).
    t.require(n >= k and a0 <= f1 and a1 <= f0,
              f"after replaying {k} pre-{kind} frames: {n} epoch drops; data frames delivered node0 {a0} (node1 sent "
              f"{f1} new), node1 {a1} (node0 sent {f0} new)")
    t.checked(f"{k} frames from before the {kind} replayed: {n} dropped by the epoch checks; delivered meanwhile: "
              f"node0 {a0}, node1 {a1}, no more than the peers' new frames ({f1}, {f0})")


@scenario("ip-reboot", "C2", "IP over Weft: node1 rebooted while node0 pings it: pings resume by themselves; replayed "
          "pre-reboot frames dropped by the epoch checks")
def ip_reboot(t):
    ip_event(t, "reboot")


@scenario("ip-recovery", "C2", "IP over Weft: node1's adapter recovered while node0 pings it: pings resume by "
          "themselves; replayed pre-recovery frames dropped by the epoch checks")
def ip_recovery(t):
    ip_event(t, "recover")


# ---- two nodes: unload with traffic running -------------------------------------------
# node1 unloads and reloads weft.ko 5 times with weft0 up while node0 floods
# it with pings: no oops, no hang in rmmod (a leaked device reference would
# hang unregister_netdev), memory back to where it was, weft0 works after.
@scenario("ip-unload", "C2", "IP over Weft: weft.ko unloaded and reloaded 5 times on node1 with weft0 up under ping "
          "-f: no oops, no hang, no memory lost")
def ip_unload(t):
    t.need(1, "ethtool")
    mem = "grep -E '^(MemAvailable|Slab):' /proc/meminfo | awk '{print $2}' | tr '\\n' ' '"
    before = t.gx(1, mem).out.split()
    flood = t.bg(0, f"{PING} -q -f -w 40 {ip4(1)}")
    r = t.gx(1, f"set -e; for i in 1 2 3 4 5; do rmmod weft; insmod /lib/weft/weft.ko; "
                f"{IP} link set weft0 up; {IP} addr add {ip4(1)}/16 dev weft0; "
                f"{IP} addr add {ip6(1)}/64 dev weft0 nodad; sleep 4; done", timeout=200)
    t.require(r.ok, f"node1: unload/reload with traffic failed: {r.out}")
    r = flood.wait()
    t.require(" received" in r.out, f"node0: ping -f did not run: {r.out}")
    m = re.search(r"[0-9]* packets transmitted, [0-9]* received", r.out)
    t.checked(f"node1: weft.ko unloaded and reloaded 5 times with weft0 up under ping -f from node0 "
              f"({m.group() if m else ''})")
    after = t.gx(1, mem).out.split()
    # MemAvailable may not drop by more than 8 MiB; each cycle holds 7 MiB
    # of FIFOs and peer table, so a leaked interface shows.
    ma0, sl0 = (before + ["", ""])[:2]
    ma1, sl1 = (after + ["", ""])[:2]
    t.require(ma0.isdigit() and ma1.isdigit() and int(ma0) - int(ma1) < 8192,
              f"node1: MemAvailable {ma0} -> {ma1} kB, Slab {sl0} -> {sl1} kB after 5 cycles")
    t.checked(f"node1: MemAvailable {ma0} -> {ma1} kB, Slab {sl0} -> {sl1} kB after 5 cycles")
    t.require(t.no_oops(1), None)
    r = t.gx(0, f"{PING} -c 3 -W 5 {ip4(1)}")
    t.require(r.ok, f"node0 cannot ping node1 after the reloads: {r.out}")
    t.checked("no oops on node1; node0 pings node1 after the last reload")
