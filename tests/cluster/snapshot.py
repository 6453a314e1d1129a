"""Snapshot start (docs/cluster.md, "Snapshot start"): both nodes of the
cluster were restored from the template's snapshot (`weft-cluster up
--start snapshot`) and got their identity afterwards.  A restored node
must be indistinguishable from a booted one: its own node id, addresses,
boot id, random numbers and a fresh key epoch, and RDMA, verbs, IP and a
reboot work as on a booted cluster."""

import re
import time

from basic import ip4, ip6, mrkey, rdma_check
from verbs_user import gids, pingpong
from weftcluster.testing import scenario

IDENT = ("hostname; cat /run/weft/node /run/weft/boot_id /proc/cmdline; date +%s; "
         "head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \\n'; echo; "
         "/sbin/ip -br addr show weft0; head -1 /sys/kernel/debug/weft/weft0/state")


def identity(t, n):
    """Node N's identity as it sees it: a dict of what IDENT printed."""
    r = t.gx(n, IDENT)
    lines = r.lines()
    t.require(r.ok and len(lines) >= 8, f"node{n}: identity query failed: {r.tail(4)}")
    return {"hostname": lines[0], "node": lines[1], "boot": lines[2], "cmdline": lines[3], "time": lines[4],
            "random": lines[5], "weft0": lines[6], "state": lines[7]}


def restored(t, n):
    """Node N's QEMU was started to be restored (-incoming, the state comes
    through QMP) with the template's memory file mapped copy on write."""
    cmd = t.file(f"node{n}.cmdline")
    return "-incoming defer" in cmd and re.search(r"memory-backend-file,[^ ]*mem-path=[^ ,]*/snapshots/[0-9a-f-]+/ram,"
                                                  r"share=off", cmd) is not None


def check_identity(t, n, ids):
    """The identity checks of node N (ids: its identity dict)."""
    i = ids
    t.require(restored(t, n) and "weft_identity=wait" in i["cmdline"] and "weft_node=" not in i["cmdline"],
              f"node{n}: not restored from the snapshot (cmdline {i['cmdline']})")
    t.checked(f"node{n}: restored from the snapshot (-incoming, the template's memory copy on write), "
              "kernel command line without identity")
    t.require(i["hostname"] == f"node{n}" and i["node"] == str(n) and re.match(rf"node {n} windows", i["state"]),
              f"node{n}: hostname {i['hostname']}, /run/weft/node {i['node']}, adapter '{i['state']}'")
    t.checked(f"node{n}: hostname node{n}, adapter node id {n}")
    t.require(f"{ip4(n)}/16" in i["weft0"] and f"{ip6(n)}/64" in i["weft0"] and " UP " in f" {i['weft0']} ",
              f"node{n}: weft0 is '{i['weft0']}', expected {ip4(n)}/16 and {ip6(n)}/64, up")
    t.checked(f"node{n}: weft0 up with {ip4(n)}/16 and {ip6(n)}/64")
    skew = abs(int(i["time"]) - time.time()) if i["time"].isdigit() else None
    t.require(skew is not None and skew < 120, f"node{n}: clock {i['time']}, the host's {time.time():.0f}")
    t.checked(f"node{n}: clock within {skew:.0f} s of the host's (set after the restore)")


@scenario("snap-identity", "CR", "snapshot start: both nodes restored from the template, each with its own node id, "
          "hostname, addresses, boot id, random numbers, clock and a fresh key epoch stored by its own adapter")
def snap_identity(t):
    ids = [identity(t, n) for n in (0, 1)]
    for n in (0, 1):
        check_identity(t, n, ids[n])
    t.require(ids[0]["boot"] != ids[1]["boot"] and all(re.fullmatch(r"[0-9a-f-]{36}", x["boot"]) for x in ids),
              f"boot ids {ids[0]['boot']} and {ids[1]['boot']}")
    t.checked(f"boot ids differ: {ids[0]['boot']}, {ids[1]['boot']}")
    t.require(ids[0]["random"] != ids[1]["random"] and len(ids[0]["random"]) == 32,
              f"/dev/urandom gives {ids[0]['random']} on node0 and {ids[1]['random']} on node1")
    t.checked(f"/dev/urandom differs: {ids[0]['random']} vs {ids[1]['random']}")
    for n in (0, 1):
        key, epoch = mrkey(t, n)
        stored = t.file(f"node{n}.epoch").strip()
        # The template's adapter never saw a driver (epoch 0, no store):
        # the driver took a new epoch from this node's own store.
        t.require(epoch >= 1 and stored == str(epoch),
                  f"node{n}: adapter key epoch {epoch}, the node's epoch file holds '{stored}'")
        t.checked(f"node{n}: key epoch {epoch} (the node's own non-volatile store), buffer key {key}")
    r = t.faults("nodes")
    t.require(r.ok and all(re.search(rf"^node {n} attached up", r.out, re.M) for n in (0, 1)),
              f"switch ports: {r.out}")
    t.checked("switch: nodes 0 and 1 attached and up on their own ports")


@scenario("snap-rdma", "CR", "snapshot start: RDMA write and read of 1 MiB between the restored nodes, byte by byte "
          "(libweft, weft-rdma-check)")
def snap_rdma(t):
    t.need((0, 1), "weft-rdma-check")
    rdma_check(t, 1, 0, 4097, "1M", "1M")


@scenario("snap-verbs", "CR", "snapshot start: user verbs between the restored nodes (Debian's ibv_rc_pingpong -c, "
          "data validated, through the Weft provider)")
def snap_verbs(t):
    c = pingpong(t, gids(t), "ibv_rc_pingpong", 4096, 200, "-c")[0]
    t.require(re.search(r"^200 iters in", c.out, re.M), f"ibv_rc_pingpong printed no result: {c.out}")
    line = next(x for x in c.lines() if "bytes in" in x)
    t.checked(f"ibv_rc_pingpong -c 200 x 4096 B node0 <-> node1: {line}")
    t.require(t.no_oops(0) and t.no_oops(1), None)


@scenario("snap-ip", "CR", "snapshot start: IP over Weft between the restored nodes: ping over IPv4 and IPv6 both ways, "
          "iperf3 TCP for 5 s")
def snap_ip(t):
    for a, b in ((0, 1), (1, 0)):
        for addr in (ip4(b), ip6(b)):
            r = t.gx(a, f"ping -c 3 -W 10 {addr}", timeout=60)
            t.require(r.ok and " 0% packet loss" in r.out, f"node{a}: ping {addr}: {r.tail(3)}")
        t.checked(f"node{a} pings node{b} at {ip4(b)} and {ip6(b)}, no loss")
    t.need((0, 1), "iperf3")
    r = t.gx(1, "iperf3 -s -D -1 -p 5202")
    t.require(r.ok, f"node1: iperf3 server did not start: {r.out}")
    time.sleep(1)
    r = t.gx(0, f"iperf3 -c {ip4(1)} -p 5202 -t 5", timeout=120)
    rate = next((x for x in r.lines() if "receiver" in x), "")
    t.require(r.ok and rate, f"iperf3 node0 -> node1 (exit {r.rc}): {r.tail(3)}")
    t.checked(f"iperf3 TCP node0 -> node1, 5 s: {' '.join(rate.split()[4:8])}")


@scenario("snap-reboot", "CR", "snapshot start: node1 rebooted is restored again with a new boot id, its identity and "
          "a newer key epoch; RDMA between the nodes works after it")
def snap_reboot(t):
    before = identity(t, 1)
    _, epoch = mrkey(t, 1)
    r = t.wc("reboot", 1)
    if not r.ok:
        t.show(r.out, "", 5)
    t.require(r.ok, "weft-cluster reboot 1 failed")
    after = identity(t, 1)
    check_identity(t, 1, after)
    t.require(after["boot"] != before["boot"], f"node1: boot id {after['boot']} unchanged by the reboot")
    t.checked(f"node1: new boot id {after['boot']} (was {before['boot']})")
    key, epoch2 = mrkey(t, 1)
    t.require(epoch2 > epoch, f"node1: key epoch {epoch2} after the reboot, {epoch} before")
    t.checked(f"node1: key epoch {epoch2} after the reboot (was {epoch}), buffer key {key}")
    t.need((0, 1), "weft-rdma-check")
    rdma_check(t, 1, 0, 4099, "1M", "1M")
