"""RDMA core scenarios (docs/verbs-linux.md).  The image keeps weft_ib.ko
and the kernel's RDMA modules in /lib/weft/rdma/ (modules.list:
dependencies first); they are loaded here, not at boot.  Node N has
10.87.0.(N+1) on weft0 (weft-cluster defaults)."""

import json
import re
import time

from weftcluster.testing import scenario

IBDEV = "weft_ib0"
IBSYS = f"/sys/class/infiniband/{IBDEV}"


def ib_load(t, n):
    """weft_ib.ko and the RDMA modules loaded (the image's weft-rdma-up)."""
    r = t.gx(n, f"weft-rdma-up && [ -e {IBSYS} ]")
    t.require(r.ok, f"node{n}: weft-rdma-up failed: {r.out}")


def ib_load_both(t):
    for n in (0, 1):
        ib_load(t, n)


def hexreg(t, n, name):
    """An adapter register from weft.ko's debugfs."""
    r = t.gx(n, f"awk '$1 == \"{name}\" {{print $3}}' /sys/kernel/debug/weft/weft0/regs")
    t.require(r.ok and re.fullmatch(r"0x[0-9a-f]+", r.out), f"node{n}: no register {name} in debugfs ({r.out})")
    return int(r.out, 16)


def ibattr(t, n, name):
    """An attribute ib_core holds for weft_ib0."""
    r = t.gx(n, f"awk '$1 == \"{name}\" {{print $2}}' /sys/kernel/debug/weft_ib/{IBDEV}/attrs")
    try:
        if r.ok and r.out:
            return int(r.out, 0)
    except ValueError:
        pass
    t.fail(f"node{n}: no attribute {name} in weft_ib's debugfs ({r.out})")
    t.stop()


def link_state(t, n):
    """The port's state as `rdma link` prints it, and the whole line."""
    r = t.gx(n, f"/usr/bin/rdma link show {IBDEV}/1")
    m = re.search(r" state ([A-Z_]*) ", r.out)
    return (m.group(1) if m else ""), r.out


@scenario("ib-device", "C2", "RDMA core: weft_ib.ko registers weft_ib0 on both nodes: rdma link ACTIVE on weft0, the "
          "IPv4-mapped RoCE v2 GID, pkey, node GUID, device attributes = the adapter's registers, the port follows "
          "the carrier")
def ib_device(t):
    ib_load_both(t)
    t.checked(f"both nodes: weft_ib.ko bound to weft.ko's auxiliary device, {IBDEV} registered")
    for n in (0, 1):
        r = t.gx(n, f"/usr/bin/rdma link show {IBDEV}/1")
        t.require(re.search(rf"^link {IBDEV}/1 state ACTIVE physical_state LINK_UP netdev weft0", r.out, re.M),
                  f"node{n}: rdma link: {r.out}")
    t.checked(f"both nodes: rdma link shows {IBDEV}/1 ACTIVE, LINK_UP, netdev weft0")
    for n in (0, 1):
        r = t.gx(n, f"cat {IBSYS}/ports/1/link_layer {IBSYS}/ports/1/pkeys/0 {IBSYS}/node_guid")
        t.require(r.ok and r.lines()[:3] == ["Ethernet", "0xffff", f"0057:46ff:fe00:000{n}"],
                  f"node{n}: link_layer, pkey 0, node_guid: {r.out}")
    t.checked("both nodes: link layer Ethernet, pkey 0 = 0xffff, node_guid from the Weft MAC (0057:46ff:fe00:000N)")
    for n in (0, 1):
        want = f"0000:0000:0000:0000:0000:ffff:0a57:{n + 1:04x}"
        r = t.gx(n, f"for g in {IBSYS}/ports/1/gids/*; do i=${{g##*/}}; echo \"$i $(cat $g) "
                    f"$(cat {IBSYS}/ports/1/gid_attrs/types/$i 2>/dev/null) "
                    f"$(cat {IBSYS}/ports/1/gid_attrs/ndevs/$i 2>/dev/null)\"; done")
        t.require(re.search(rf"^[0-9]+ {want} RoCE v2 weft0$", r.out, re.M),
                  f"node{n}: no RoCE v2 GID {want} on weft0 in the GID table: " +
                  ";".join(x for x in r.lines() if " 0000:0000:0000:0000:0000:0000:0000:0000" not in x))
    t.checked("both nodes: the GID table holds the node's IPv4-mapped address (::ffff:10.87.0.N+1) as a RoCE v2 GID "
              "of weft0")
    for n in (0, 1):
        for reg, attr, delta in (("VERBS_NR_QP", "max_qp", -2), ("VERBS_NR_CQ", "max_cq", 0),
                                 ("VERBS_NR_PD", "max_pd", 0), ("VERBS_NR_TPT", "max_mr", -1),
                                 ("VERBS_NR_TPT", "max_mw", -1), ("VERBS_NR_UAR", "uars", 0),
                                 ("VERBS_NR_QP", "max_srq", -1)):
            v, a = hexreg(t, n, reg), ibattr(t, n, attr)
            t.require(a == v + delta, f"node{n}: {attr} = {a}, but the adapter's {reg} is {v}")
        v = ibattr(t, n, "max_qp_wr")
        t.require(v == 32768, f"node{n}: max_qp_wr {v}, the adapter's queues hold 32768")
    t.checked("both nodes: device attributes = the adapter's registers (max_qp = VERBS_NR_QP - 2, "
              "max_srq = VERBS_NR_QP - 1, max_cq, max_pd, max_mr/max_mw = VERBS_NR_TPT - 1, UARs), max_qp_wr 32768")
    t.gx(1, "/sbin/ip link set weft0 down")
    state, out = link_state(t, 1)
    t.require(state == "DOWN", f"node1: weft0 down, but rdma link says: {out}")
    t.gx(1, "/sbin/ip link set weft0 up; /sbin/ip addr replace 10.87.0.2/16 dev weft0")
    for _ in range(40):
        state, out = link_state(t, 1)
        if state == "ACTIVE":
            break
        time.sleep(0.5)
    t.require(state == "ACTIVE", f"node1: weft0 up again, but rdma link says: {out}")
    t.checked("node1: the port follows weft0 (DOWN when the link is set down, ACTIVE again after up)")
    for n in (0, 1):
        t.require(t.no_oops(n), None)


# ---- NVMe over Fabrics, RDMA transport (docs/verbs-linux.md) ----------------------
def cq_dim(t, dev):
    """Adaptive moderation (DIM): ib_core tunes the CQs that nvme-rdma's
    host and nvmet-rdma's target take from its CQ pool through weft_ib's
    modify_cq, and `rdma resource show cq -dd` reads the values back from
    the adapter (QUERY_CQ, docs/hw-spec.md 16.7 "Moderation"). 1024
    synchronous 4 KiB reads give DIM well over its 64 events per
    decision, and its first decision always moves off the start profile."""
    r = t.gx(1, f"dd if=/dev/{dev} of=/dev/null bs=4096 count=1024 iflag=direct 2>&1 | tail -1", timeout=600)
    t.require(r.ok, f"node1: 1024 reads of 4 KiB from /dev/{dev} failed: {r.out}")
    for n in (0, 1):
        r = t.gx(n, f"/usr/bin/rdma -j -dd resource show cq dev {IBDEV}")
        try:
            cqs = json.loads(r.out or "[]")
        except ValueError:
            cqs = None
        t.require(r.ok and isinstance(cqs, list), f"node{n}: rdma -j -dd resource show cq: {r.out}")
        if not isinstance(cqs, list):
            continue
        dim = [c for c in cqs if c.get("comm") == "ib_core" and c.get("adaptive-moderation") is True]
        tuned = [c for c in dim if c.get("drv_mod_count", 0) > 0]
        desc = ", ".join(f"cqn {c.get('cqn')}: count {c.get('drv_mod_count')} period {c.get('drv_mod_period_us')} us"
                         for c in dim)
        t.require(dim and tuned, f"node{n}: no pool CQ with adaptive moderation that DIM tuned on the adapter: {r.out}")
        if dim and tuned:
            t.checked(f"node{n}: DIM tuned {len(tuned)} of {len(dim)} pool CQs on the adapter after 1024 reads of "
                      f"4 KiB ({desc})")


NQN = "nqn.2026-11.weft:nvme-rdma-test"
NVCFG = "/sys/kernel/config/nvmet"


@scenario("nvme-rdma", "C2", "RDMA core: nvmet-rdma target on node0 (configfs, a tmpfs file), nvme-rdma host on "
          "node1 over the Weft address: 64 MiB written and read back with equal sha256, the same bytes in the "
          "target's file, the kernel's DIM tuning pool CQs in the adapter, clean disconnect, no oops")
def nvme_rdma(t, after_connect=None):
    """AFTER_CONNECT(t), when given, is a variant's extra check while the
    host is connected (nvme-srq in srq.py), in place of the DIM check."""
    mb = 64
    ib_load_both(t)
    # The target: an 80 MiB file on tmpfs (buffered I/O), port 4420 on
    # node0's Weft address; the address is on weft0 before the port is
    # linked.
    r = t.gx(0, f"""set -e
        grep -q ' /sys/kernel/config ' /proc/mounts || mount -t configfs none /sys/kernel/config
        mkdir -p /run/nvt; grep -q ' /run/nvt ' /proc/mounts || mount -t tmpfs tmpfs /run/nvt
        dd if=/dev/zero of=/run/nvt/disk bs=1048576 count=80 2>/dev/null
        S={NVCFG}/subsystems/{NQN} P={NVCFG}/ports/1
        mkdir $S; echo 1 >$S/attr_allow_any_host
        mkdir $S/namespaces/1; echo -n /run/nvt/disk >$S/namespaces/1/device_path
        echo 1 >$S/namespaces/1/buffered_io; echo 1 >$S/namespaces/1/enable
        mkdir $P; echo rdma >$P/addr_trtype; echo ipv4 >$P/addr_adrfam
        echo 10.87.0.1 >$P/addr_traddr; echo 4420 >$P/addr_trsvcid
        ln -s $S $P/subsystems/{NQN}""", timeout=120)
    t.require(r.ok, f"node0: nvmet-rdma target set-up failed: {r.out}")
    t.checked(f"node0: nvmet-rdma target listening on 10.87.0.1:4420 ({NQN}, an 80 MiB tmpfs file)")
    r = t.gx(1, f"""echo transport=rdma,traddr=10.87.0.1,trsvcid=4420,nqn={NQN} >/dev/nvme-fabrics || exit 1
        for i in $(seq 100); do
            for d in /sys/block/nvme*n1; do
                [ -e "$d" ] || continue	# no namespace yet: the pattern itself
                case ${{d##*/}} in *c*) continue ;; esac	# hidden multipath paths
                [ -e /sys/class/block/${{d##*/}}/dev ] && {{ echo ${{d##*/}}; exit 0; }}
            done
            sleep 0.3
        done; exit 1""", timeout=180)
    dev = (r.lines() or [""])[-1]
    t.require(r.ok and dev, f"node1: nvme-rdma connect to 10.87.0.1:4420 failed: {r.out}")
    t.checked(f"node1: nvme-rdma connected over Weft, namespace {dev}")
    if after_connect:
        after_connect(t)
    r = t.gx(1, f"""set -e
        [ -b /dev/{dev} ] || mknod /dev/{dev} b $(tr : ' ' </sys/class/block/{dev}/dev)
        dd if=/dev/urandom of=/tmp/nvdata bs=1048576 count={mb} 2>/dev/null
        sha256sum </tmp/nvdata
        dd if=/tmp/nvdata of=/dev/{dev} bs=1048576 oflag=direct 2>/dev/null
        sync; echo 3 >/proc/sys/vm/drop_caches
        dd if=/dev/{dev} bs=1048576 count={mb} iflag=direct 2>/dev/null | sha256sum""", timeout=600)
    lines = r.lines() + ["", ""]
    s = lines[0][:64]
    t.require(r.ok and s and lines[1][:64] == s,
              f"node1: {mb} MiB written to and read back from /dev/{dev} differ or failed: {r.out}")
    r = t.gx(0, f"dd if=/run/nvt/disk bs=1048576 count={mb} 2>/dev/null | sha256sum")
    t.require(r.out[:64] == s, f"node0: the target's file does not hold what node1 wrote: {r.out} (want {s})")
    t.checked(f"{mb} MiB of random data written by node1 through nvme-rdma (O_DIRECT) and read back with equal sha256 "
              f"{s[:16]}; node0's backing file holds the same bytes")
    if not after_connect:
        cq_dim(t, dev)
    r = t.gx(1, """for x in /sys/class/nvme/nvme*; do echo 1 >$x/delete_controller; done
        for i in $(seq 50); do ls /sys/class/nvme/ 2>/dev/null | grep -q . || exit 0; sleep 0.2; done; exit 1""",
             timeout=120)
    t.require(r.ok, f"node1: controllers still present after delete_controller: {r.out}")
    r = t.gx(1, f"/usr/bin/rdma resource show {IBDEV}")
    t.require(" qp 1 " in r.out, f"node1: RDMA resources not released after the disconnect (only QP1 should stay): "
              f"{r.out}")
    t.checked(f"node1: disconnected cleanly; only the GSI QP is left (rdma resource: "
              f"{re.sub(' +', ' ', r.out)[:120]})")
    for n in (0, 1):
        t.require(t.no_oops(n), None)
