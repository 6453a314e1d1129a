"""weft-cluster: boot and drive clusters of Weft VMs joined by weft-switch.

  weft-cluster [--name NAME] up -n N [--mem MB] [--seed S] [--timeout S] [--no-adapter]
               [--adapters A] [--switch-args "ARGS"] [--device-props "PROP=V,..."]
               [--transport auto|shm|socket|tcp] [--listen HOST:PORT] [--fabric-nodes M]
               [--switch HOST:PORT --tokens DIR [--first-node F]]
               [--net A.B.C.D/LEN|none] [--net6 PREFIX::/LEN|none]
               [--vnet A.B.C.D/LEN] [--trace PATTERN[,PATTERN...]] [--layer NAME]
               [--start snapshot|boot] [--main-loop]
  weft-cluster [--name NAME] exec [--timeout S] NODE|N,M,...|all -- CMD...
  weft-cluster [--name NAME] mpirun -np N [--per-node K] [--impl openmpi|mpich]
               [--transport tcp|ucx|ofi] [--ofi-provider NAME]
               [--mca NAME VALUE]... [--timeout S] -- PROGRAM [ARGS...]
  weft-cluster [--name NAME] console NODE [-f] [-n LINES]
  weft-cluster [--name NAME] status
  weft-cluster [--name NAME] faults ARGS...   (weft-switch ctl ARGS...)
  weft-cluster [--name NAME] switch kill|start|restart
  weft-cluster [--name NAME] reboot NODE [--timeout S]
  weft-cluster [--name NAME] gdb NODE [GDB ARGS...]   (scripts/weft-gdb)
  weft-cluster [--name NAME] down
  weft-cluster list

NODE is N or nodeN (exec also takes a comma list, or all).  NAME defaults
to $WEFT_CLUSTER or "default"; each cluster has its own folder of sockets,
pids and logs under the run directory ($WEFT_RUN_DIR, else
$XDG_RUNTIME_DIR/weft-cluster, else /tmp/weft-cluster-$UID), so several
clusters run side by side.  The run directory must be yours with mode
0700 (weft-cluster creates it so, and refuses one that is not).  `up` builds
what is missing (QEMU, the guest image with weft.ko, weft-switch), starts
the switch and N VMs (KVM where /dev/kvm is writable and the CPU has vmx or
svm, TCG otherwise) and waits until every node reports ready.
docs/cluster.md has the rest.
Environment: WEFT_QEMU (a QEMU with the weft device instead of
scripts/build-qemu.sh), WEFT_SWITCH (a weft-switch binary), WEFT_BUILD
(meson build folder, default build/), WEFT_ACCEL=kvm|tcg,
WEFT_KERNEL_APPEND (more guest kernel arguments), WEFT_QEMU_ARGS (more
QEMU arguments for every node), WEFT_QEMU_ARGS_<N> (for node N) and
WEFT_IOTHREAD=0 (the weft devices run in QEMU's main loop, as
`up --main-loop` does; by default each runs in its own IOThread).
With --adapters A each node has A weft devices, each on its own switch
port: adapter a of node N has node id N + a*n (adapter 0 keeps id N).
Node N gets address N+1 of --net (default 10.87.0.0/16) and of --net6
(default fd57:6566::/64) on weft0 (docs/net.md).  --vnet gives every node
a second NIC, virtio-net eth0 with address N+1 of A.B.C.D/LEN, on an L2
segment of the cluster's own (off by default; docs/cluster.md).
--layer NAME appends the image layer NAME (scripts/build-layer.sh, e.g.
hpc: Open MPI, MPICH, UCX, libfabric and dropbear; docs/mpi.md) and an
archive of the cluster's own (/etc/hosts, dropbear keys made at up).
mpirun runs Open MPI's mpirun (--impl mpich: MPICH's mpiexec.hydra) on
node0 of a cluster up with --layer hpc, its output streamed, its exit
status passed back (docs/mpi.md).
--start snapshot (the default where it can) starts every node from a
snapshot of a template VM taken where the guest waits for its identity,
cached per image, kernel, QEMU and device build; the nodes share the
template's memory copy on write, and their identity (node id, addresses,
boot id, entropy, time) comes after the restore (docs/cluster.md,
"Snapshot start").  --start boot boots every node; without --start, up
boots them where a snapshot cannot serve (--vnet, --layer,
WEFT_QEMU_ARGS_<N>).  WEFT_SNAPSHOT_KEEP (default 2): snapshots kept in
the cache per cluster shape.
--transport: how frames go between each QEMU and the switch: auto
(default; shared-memory rings, the socket if the switch does not grant
them), shm (only shared memory), socket, or tcp (the switch's TCP
listener, --listen, default 127.0.0.1:0; docs/switch.md).
Across hosts (docs/cluster.md, "Across two hosts"): --listen HOST:PORT
lets nodes of other hosts join this cluster's switch over TCP, with
tokens made for node ids 0..M-1 (--fabric-nodes M); on the other host,
--switch HOST:PORT starts no switch and runs nodes F..F+N-1 (their
node ids, addresses and hostnames; exec and console still take 0..N-1)
with the tokens DIR/nodeID.token copied from the switch's host.
Debugging (docs/cluster.md, "Debugging a guest"): every node's QEMU
gdbstub listens on the UNIX socket nodeN.gdb.sock of the cluster's
folder (`gdb N` attaches gdb to it with the kernel's and weft.ko's
symbols); --trace keeps the QEMU trace events matching the patterns in
nodeN.trace there (scripts/weft-timeline reads them with the capture).
"""

import argparse
import ipaddress
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import threading
import time

from . import layer, snapshot, stamp
from .mpirun import cmd_mpirun
from .chan import ChannelError, alive
from .cluster import Cluster, kill, stop_pid, tail
from .rundir import ROOT, Die, log, private_dir, run_dir, trusted
from .state import STATE, Settings

NAME = re.compile(r"^[A-Za-z0-9_.-]+$")
HOSTPORT = re.compile(r"^([A-Za-z0-9.-]+|\[([0-9A-Fa-f:.]+)\]):([0-9]{1,5})$")
TRACE = re.compile(r"^[A-Za-z0-9_*?]+(,[A-Za-z0-9_*?]+)*$")
DEVPROPS = re.compile(r"^[a-z0-9-]+=[^, ]+(,[a-z0-9-]+=[^, ]+)*$")


class Parser(argparse.ArgumentParser):
    """argparse that reports like the rest of weft-cluster: one error line."""

    def error(self, message):
        raise Die(f"{self.prog}: {message}")


# ---- argument types (argparse calls them; ValueError/TypeError -> error) ----
def checked(what, test):
    def parse(text):
        try:
            v = test(text)
        except ValueError:
            v = None
        if v is None:
            raise argparse.ArgumentTypeError(f"{what}, got '{text}'")
        return v
    return parse


def int_in(lo, hi):
    return lambda t: int(t) if t.isdigit() and lo <= int(t) <= hi else None


def hostport(t):
    if not t:
        return t
    m = HOSTPORT.match(t)
    if not m or int(m.group(3)) > 65535:
        return None
    if m.group(2):
        ipaddress.IPv6Address(m.group(2))
    return t


def net(version, lo, hi):
    def parse(t):
        if t in ("none", ""):
            return ""
        iface = ipaddress.ip_interface(t)
        return t if iface.version == version and lo <= iface.network.prefixlen <= hi and "/" in t else None
    return parse


def up_parser():
    p = Parser(prog="up", add_help=False)
    p.add_argument("-n", "--nodes", required=True, type=checked("-n needs a node count 1..64", int_in(1, 64)))
    p.add_argument("--mem", default=512, type=checked("--mem needs megabytes", int_in(1, 1 << 20)))
    p.add_argument("--seed", default=1, type=checked("--seed needs a number", int_in(0, 1 << 63)))
    p.add_argument("--timeout", default=0, type=checked("--timeout needs seconds", int_in(0, 1 << 31)))
    p.add_argument("--no-adapter", dest="adapter", action="store_false")
    p.add_argument("--adapters", default=1,
                   type=checked("--adapters needs 1..4 adapters per node, at most 64 in all", int_in(1, 4)))
    p.add_argument("--switch-args", default="")
    p.add_argument("--device-props", default="", type=checked(
        "--device-props needs PROP=VALUE[,PROP=VALUE...] (weft device properties)",
        lambda t: t if not t or DEVPROPS.match(t) else None))
    p.add_argument("--transport", default="auto", choices=("auto", "shm", "socket", "tcp"))
    p.add_argument("--listen", default="", type=checked("--listen needs HOST:PORT or [IPV6]:PORT", hostport))
    p.add_argument("--fabric-nodes", default=0, type=checked("--fabric-nodes needs a node count 0..64",
                                                             int_in(0, 64)))
    p.add_argument("--switch", dest="remote", default="",
                   type=checked("--switch needs HOST:PORT or [IPV6]:PORT", hostport))
    p.add_argument("--tokens", default="")
    p.add_argument("--first-node", default=0, type=checked("--first-node needs a node id 0..63", int_in(0, 63)))
    p.add_argument("--net", default="10.87.0.0/16",
                   type=checked("--net needs A.B.C.D/LEN (LEN 8..30) or none", net(4, 8, 30)))
    p.add_argument("--net6", default="fd57:6566::/64",
                   type=checked("--net6 needs PREFIX::/LEN (LEN 16..64) or none", net(6, 16, 64)))
    p.add_argument("--vnet", default="", type=checked("--vnet needs A.B.C.D/LEN (LEN 8..30)", net(4, 8, 30)))
    p.add_argument("--trace", default="", type=checked(
        "--trace needs QEMU trace event patterns, e.g. 'weft_*' or weft_db_write,weft_pkt_*",
        lambda t: t if not t or TRACE.match(t) else None))
    p.add_argument("--start", default="", choices=("boot", "snapshot"))
    p.add_argument("--main-loop", action="store_true")
    p.add_argument("--layer", default="", type=checked("--layer needs a layer name (images/layers/NAME)",
                                                       lambda t: t if not t or layer.LAYER_NAME.match(t) else None))
    return p


def accelerator():
    """KVM only where /dev/kvm is writable and the CPU has vmx or svm (or
    WEFT_ACCEL=kvm), TCG otherwise; the reason is logged."""
    want = os.environ.get("WEFT_ACCEL", "auto")
    if want in ("kvm", "tcg"):
        accel = want
    else:
        with open("/proc/cpuinfo") as f:
            virt = re.search(r"\b(vmx|svm)\b", f.read())
        accel = "kvm" if os.access("/dev/kvm", os.W_OK) and virt else "tcg"
    if accel == "kvm":
        log("accelerator: KVM")
    elif os.path.exists("/dev/kvm"):
        log("accelerator: TCG (/dev/kvm exists but without vmx/svm in /proc/cpuinfo; WEFT_ACCEL=kvm forces it)")
    else:
        log("accelerator: TCG (no /dev/kvm)")
    return accel


def run_script(argv, what):
    """A build script's stdout (its last line), stderr passed through."""
    p = subprocess.run(argv, stdout=subprocess.PIPE, text=True)
    out = p.stdout.strip().splitlines()
    if p.returncode != 0 or not out:
        raise Die(f"{what} failed")
    return out[-1]


def from_env(var, what):
    """The executable the environment variable VAR names, or None."""
    p = os.environ.get(var)
    if p:
        if not os.access(p, os.X_OK):
            raise Die(f"{var}={p} is not an executable")
        log(f"{what}: {p} ({var})")
    return p


def find_qemu():
    q = from_env("WEFT_QEMU", "QEMU")
    if q:
        return q
    log("QEMU: scripts/build-qemu.sh (the first build takes several minutes)")
    q = run_script([f"{ROOT}/scripts/build-qemu.sh", "--print-path"], "scripts/build-qemu.sh")
    if not os.access(q, os.X_OK):
        raise Die(f"scripts/build-qemu.sh printed '{q}', which is not an executable")
    return q


def find_switch(rdir):
    sw = from_env("WEFT_SWITCH", "weft-switch")
    if sw:
        return sw
    build = os.environ.get("WEFT_BUILD") or f"{ROOT}/build"
    log(f"weft-switch: meson compile -C {build}")
    # meson's set-up is the build scripts' (scripts/lib.sh).
    if subprocess.run(["bash", "-c", 'source "$1/scripts/lib.sh" && weft_ensure_meson && weft_meson_setup "$2" "$3"',
                       "-", ROOT, build, f"{rdir}/meson-setup.log"]).returncode != 0:
        raise Die(f"meson setup {build} failed")
    clog = f"{rdir}/meson-compile.log"
    with open(clog, "w") as f:
        if subprocess.run(["meson", "compile", "-C", build, "-j", "2", "weft-switch"],
                          stdout=f, stderr=subprocess.STDOUT).returncode != 0:
            print("\n".join(tail(clog, 30) or []), file=sys.stderr)
            raise Die(f"meson compile -C {build} failed")
    sw = f"{build}/qemu-device/switch/weft-switch"
    if not os.access(sw, os.X_OK):
        raise Die(f"the build has no {sw} (qemu-device/switch must build weft-switch)")
    return sw


def in_parallel(*fns):
    """Call FNS at once, each in a thread: their results, in order (the
    first exception raised by one of them is raised)."""
    out = [None] * len(fns)
    err = [None] * len(fns)

    def one(k):
        try:
            out[k] = fns[k]()
        except Exception as e:  # passed on to the caller below
            err[k] = e

    threads = [threading.Thread(target=one, args=(k,), daemon=True) for k in range(len(fns))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for e in err:
        if e is not None:
            raise e
    return out


class Phases:
    """Wall time of each phase of `up`, logged at its end (docs/performance.md,
    "Cluster start from a snapshot")."""

    def __init__(self):
        self.t0 = self.last = time.monotonic()
        self.parts = []

    def timed(self, what, fn):
        """FN's result; its own wall time noted as WHAT (for phases run side
        by side)."""
        t = time.monotonic()
        try:
            return fn()
        finally:
            self.parts.append((what, time.monotonic() - t, True))

    def mark(self, what):
        """The time since the previous mark, noted as WHAT."""
        now = time.monotonic()
        self.parts.append((what, now - self.last, False))
        self.last = now

    def total(self):
        return time.monotonic() - self.t0

    def line(self):
        out, inner = [], []
        for what, dt, side in self.parts:
            if side:
                inner.append(f"{what} {dt:.2f}")
            else:
                out.append(f"{what} {dt:.2f}" + (f" ({', '.join(inner)})" if inner else ""))
                inner = []
        return "; ".join(out) + " s"


def kernel_release(image):
    return "".join(tail(f"{image}/kernel-release", 1) or [])


def check_up(a):
    """The cross-option rules of `up`; fills in --listen, --fabric-nodes
    and the transport they imply."""
    n = a.nodes
    if n * a.adapters > 64:
        raise Die("up: --adapters needs 1..4 adapters per node, at most 64 in all")
    if a.first_node + n > 64:
        raise Die(f"up: --first-node needs 0..{64 - n} (node ids up to 63), got '{a.first_node}'")
    if a.remote:
        if a.listen or a.fabric_nodes or a.adapters != 1 or not a.adapter:
            raise Die("up: --switch (nodes of another host's switch) goes without --listen, --fabric-nodes, "
                      "--adapters and --no-adapter")
        if a.transport not in ("auto", "tcp"):
            raise Die(f"up: with --switch the nodes connect over TCP (--transport tcp), not {a.transport}")
        if not a.tokens:
            raise Die("up: --switch needs --tokens DIR (nodeID.token files from the switch's host)")
        if not (trusted(a.tokens) and os.path.isdir(a.tokens)):
            raise Die(f"up: --tokens {a.tokens} must be a folder of yours that nobody else may write to")
        for i in range(a.first_node, a.first_node + n):
            try:
                with open(f"{a.tokens}/node{i}.token") as f:
                    ok = re.fullmatch(r"[0-9a-f]{64}\n?", f.read(66))
            except OSError:
                ok = None
            if not ok:
                raise Die(f"up: no token for node {i} in {a.tokens} (node{i}.token, 64 hex digits, "
                          "from the switch's host)")
        a.transport = "tcp"
    else:
        if a.tokens or a.first_node:
            raise Die("up: --tokens and --first-node go with --switch HOST:PORT")
        if a.transport == "tcp" and not a.listen:
            a.listen = "127.0.0.1:0"
        if a.fabric_nodes and not a.listen:
            raise Die("up: --fabric-nodes is for nodes of other hosts: it needs --listen HOST:PORT")
        a.fabric_nodes = max(a.fabric_nodes, n * a.adapters)


def cmd_up(c, args):
    # A value that starts with "-" (--switch-args "--insecure") is the
    # option's, not an option of its own.
    args = list(args)
    for k in range(len(args) - 2, -1, -1):
        if args[k] in ("--switch-args", "--device-props"):
            args[k:k + 2] = [f"{args[k]}={args[k + 1]}"]
    a = up_parser().parse_args(args)
    check_up(a)
    n = a.nodes
    # A layer is more to unpack at each boot: twice the time.
    timeout = a.timeout or (60 + 15 * n) * (2 if a.layer else 1)
    old = Settings.load(c.dir)
    if old is not None:
        c.settings = old
        if c.running():
            raise Die(f"cluster '{c.name}' is already up (weft-cluster --name {c.name} down first)")
    ph = Phases()
    # What the checks answered last time, when nothing they read changed
    # since (stamp.py; docs/cluster.md, "What up checks").
    checks = stamp.Stamp({"driver": a.adapter, "switch": a.adapter and not a.remote})
    known = checks.hit()

    def image_and_layer():
        if known:
            image = known["image"]
        else:
            log("guest image: scripts/build-image.sh")
            image = run_script([f"{ROOT}/scripts/build-image.sh"] + ([] if a.adapter else ["--without-driver"]),
                               "scripts/build-image.sh")
        if a.layer:
            log(f"image layer: scripts/build-layer.sh {a.layer}")
        return image, layer.build(a.layer) if a.layer else ""

    if known:
        qemu, sw = known["qemu"], known["switch"]
        log(f"checks: nothing they read changed since they passed ({checks.path}): QEMU {qemu}, "
            f"image {known['image']}" + (f", weft-switch {sw}" if sw else ""))
        image, ldir = ph.timed("build-layer.sh", image_and_layer) if a.layer else image_and_layer()
    else:
        qemu = ph.timed("build-qemu.sh", find_qemu)
        # The image's checks and the switch's meson run side by side
        # (QEMU's build first: it installs the packages and meson both need).
        (image, ldir), sw = in_parallel(
            lambda: ph.timed("build-image.sh", image_and_layer),
            lambda: ph.timed("switch build", lambda: find_switch(os.path.dirname(c.dir)))
            if a.adapter and not a.remote else "")
        checks.save({"qemu": qemu, "image": image, "switch": sw})
    ph.mark("checks")
    accel = accelerator()
    mcast = ""
    if a.vnet and n != 2:
        mcast = f"239.255.{random.randrange(256)}.{random.randrange(1, 255)}:{random.randrange(20000, 60000)}"
    if os.path.lexists(c.dir):
        shutil.rmtree(c.dir)
    os.mkdir(c.dir, 0o700)
    s = c.settings = Settings(
        nodes=n, mem=a.mem, seed=a.seed, adapter=a.adapter, adapters=a.adapters, accel=accel, qemu=qemu,
        image=image, layer=ldir, switch=sw, devprops=a.device_props, swargs=a.switch_args, transport=a.transport,
        listen=a.listen, remote=a.remote, base=a.first_node, net4=a.net, net6=a.net6, vnet4=a.vnet,
        vnet_mcast=mcast, trace=a.trace, qemu_args=os.environ.get("WEFT_QEMU_ARGS", ""),
        qemu_args_node=[os.environ.get(f"WEFT_QEMU_ARGS_{i}", "") for i in range(n)], start=a.start,
        iothread=not a.main_loop and os.environ.get("WEFT_IOTHREAD", "1") != "0")
    if ldir:
        s.initrd = layer.make_initrd(c, ldir)
    why = snapshot.why_boot(s)
    if a.start == "snapshot" and why:
        raise Die(f"up: --start snapshot goes without {why}")
    if not a.start:
        s.start = "boot" if why else "snapshot"
        if why:
            log(f"start: every node boots (a snapshot start goes without {why})")
    s.save(c.dir)
    # The channel daemon starts (a Python process: about half a second)
    # while the snapshot is found or made and the switch starts.
    c.start_chan()
    if s.start == "snapshot":
        try:
            s.snapshot = snapshot.make(c)
        except Die:
            # Nothing of the cluster runs: a new `up` may start it.
            stop_pid(c.pid("chan"))
            raise
        s.save(c.dir)
    ph.mark("snapshot")

    if a.remote:
        # Copies, mode 0600: down removes them, the folder given stays.
        for i in range(n):
            nid = c.nid(i)
            with open(f"{a.tokens}/node{nid}.token") as f:
                token = f.read()
            with open(os.open(c.path(f"node{nid}.token"), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), "w") as f:
                f.write(token)
        log(f"switch on {a.remote} (another host): nodes {s.base}..{s.base + n - 1} connect over TCP")
    elif a.adapter:
        c.make_tokens(a.fabric_nodes)
        c.start_switch()
        if a.fabric_nodes > n * a.adapters:
            log(f"tokens for nodes {n * a.adapters}..{a.fabric_nodes - 1} of other hosts: "
                f"{c.dir}/node<ID>.token (copy them to a 0700 folder there: up --switch {c.switch_addr()} "
                "--tokens DIR --first-node ID)")
    ph.mark("switch")
    how = "restored from the snapshot" if s.start == "snapshot" else "booting"
    log(f"starting {n} VM(s) ({accel}, {a.mem} MiB each, kernel {kernel_release(image)}, {how})")
    for i in range(n):
        c.start_node(i)
    ph.mark("QEMU start")
    if s.start == "snapshot":
        snapshot.restore(c, range(n))
        ph.mark("restore")
    c.chan_started()
    ph.mark("channel")
    log(f"waiting for the nodes to report ready (timeout {timeout} s)")
    if not c.channel.wait(range(n), timeout):
        st = c.node_status()
        for i in range(n):
            if not st.get(i, {}).get("ready"):
                c.show_tail(i)
        print(c.table())
        raise Die(f"cluster '{c.name}': some nodes did not boot (weft-cluster --name {c.name} down to clean up)")
    ph.mark("ready")
    bad = c.bad_nodes(c.node_status())
    if bad:
        for i, why in sorted(bad.items()):
            print(f"node{i}: {why}", file=sys.stderr)
            c.show_tail(i)
        print(c.table())
        raise Die(f"cluster '{c.name}': the adapter is not usable on every node")
    print(c.table(), flush=True)
    if a.remote:
        log(f"up: transport tcp to the switch on {a.remote}")
    elif a.adapter:
        tcp = f" (TCP listener {c.switch_addr()})" if s.listen else ""
        log(f"up: transport {s.transport}{tcp}; the switch says: {c.transports()}")
    ph.mark("report")
    log(f"up: phases: {ph.line()}")
    log(f"cluster '{c.name}' up: {n} node(s) in {ph.total():.1f} s (state: {c.dir})")


def cmd_exec(c, args):
    head, cmd = (args[:args.index("--")], args[args.index("--") + 1:]) if "--" in args else (args, None)
    p = Parser(prog="exec", add_help=False)
    p.add_argument("--timeout", type=checked("--timeout needs seconds", float))
    p.add_argument("nodes", nargs="?")
    p.add_argument("cmd", nargs="*")
    a = p.parse_args(head)
    if a.nodes is None:
        raise Die("exec: which node? (NODE, a comma list or all)")
    cmd = " ".join(a.cmd if cmd is None else a.cmd + cmd)
    if not cmd:
        raise Die("exec: no command (weft-cluster exec NODE -- CMD...)")
    c.load()
    nodes = list(range(c.settings.nodes)) if a.nodes == "all" else [c.node_index(x) for x in a.nodes.split(",")]
    results = {}

    def one(i):
        try:
            results[i] = c.channel.exec(i, cmd, a.timeout)
        except (OSError, ValueError) as e:
            results[i] = (1, None, str(e))

    threads = [threading.Thread(target=one, args=(i,), daemon=True) for i in nodes]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    status = 0
    out = sys.stdout.buffer
    for i in nodes:
        rc, text = results[i][0], results[i][1]
        if len(nodes) > 1:
            out.write(f"--- node{i} (exit {rc}) ---\n".encode())
        if text is None:
            out.flush()
            print(f"weft-cluster: {results[i][2]}", file=sys.stderr)
        else:
            out.write(text)
        out.flush()
        status = status or rc
    return status


def node_command(c, prog, args, *options):
    """The options and the NODE of a command on one node: OPTIONS are
    (flags, add_argument keywords) pairs.  (options, node index)."""
    p = Parser(prog=prog, add_help=False)
    for flags, kw in options:
        p.add_argument(*flags, **kw)
    p.add_argument("node", nargs="?")
    a = p.parse_args(args)
    if a.node is None:
        raise Die(f"{prog}: which node?")
    c.load()
    return a, c.node_index(a.node)


def cmd_console(c, args):
    a, i = node_command(c, "console", args, (("-f", "--follow"), {"action": "store_true"}),
                        (("-n",), {"dest": "lines", "type": checked("-n needs a line count", int_in(0, 1 << 31))}))
    f = c.path(f"node{i}.console")
    if not os.path.isfile(f):
        raise Die(f"node{i} has no console log yet ({f})")
    if a.follow:
        os.execvp("tail", ["tail", "-n", str(20 if a.lines is None else a.lines), "-f", f])
    lines = tail(f, a.lines) if a.lines else tail(f, 1 << 62)
    sys.stdout.write("".join(x + "\n" for x in lines or []))


def cmd_status(c, args):
    Parser(prog="status", add_help=False).parse_args(args)
    s = c.load()
    print(f"cluster {c.name}: {s.nodes} node(s), state folder {c.dir}")
    print(f"image: {s.image} (kernel {kernel_release(s.image)})")
    if s.layer:
        print(f"layer: {s.layer} (initrd {s.initrd})")
    print(f"qemu: {s.qemu}")
    pid = c.pid("chan")
    print(f"command channel: pid {pid}" if alive(pid) else "command channel: stopped")
    if s.vnet4:
        if s.nodes == 2:
            print(f"virtio-net eth0: {s.vnet4}, node0 <-> node1 over {c.path('vnet.sock')}")
        else:
            print(f"virtio-net eth0: {s.vnet4}, multicast group {s.vnet_mcast} on the loopback interface")
    if s.remote:
        print(f"weft-switch: on {s.remote} (another host, not managed here); nodes 0..{s.nodes - 1} here are "
              f"node ids {s.base}..{s.base + s.nodes - 1}")
    elif s.adapter:
        pid = c.pid("switch")
        if alive(pid):
            tcp = f", TCP {c.switch_addr()}" if s.listen else ""
            print(f"weft-switch: pid {pid}, seed {s.seed}, socket {c.path('switch.sock')}{tcp}, "
                  f"control {c.path('switch.ctl')}", flush=True)
            r = c.ctl("nodes", stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
            ports = r.stdout.splitlines()
            ports.sort(key=lambda x: int(x.split()[1]) if len(x.split()) > 1 and x.split()[1].isdigit() else -1)
            for line in ports:
                print(f"  switch port: {line}")
        else:
            print(f"weft-switch: stopped (log {c.path('switch.log')})")
    print(c.table())


def local_switch(c):
    """The cluster runs its own switch (not --no-adapter, not --switch)."""
    s = c.load()
    if not s.adapter:
        raise Die(f"cluster '{c.name}' runs without adapters (--no-adapter): no switch")
    if s.remote:
        raise Die(f"cluster '{c.name}' uses the switch on {s.remote} (another host): run weft-switch ctl "
                  "or weft-cluster there")


def cmd_faults(c, args):
    local_switch(c)
    if not alive(c.pid("switch")):
        raise Die(f"weft-switch of cluster '{c.name}' is not running")
    return c.ctl(*args).returncode


def cmd_switch(c, args):
    """The switch as a fault: kill it (SIGKILL, as a crash), start it again
    with the same command line, or both.  The adapters reconnect by
    themselves (reconnect-ms) and the cluster keeps managing the new switch."""
    if len(args) != 1 or args[0] not in ("kill", "start", "restart"):
        raise Die("switch: expected kill, start or restart" + (f", not '{args[0]}'" if len(args) == 1 else ""))
    local_switch(c)
    pid = c.pid("switch")
    if args[0] == "start":
        if alive(pid):
            raise Die(f"weft-switch of cluster '{c.name}' is running (pid {pid})")
    else:
        if not alive(pid):
            raise Die(f"weft-switch of cluster '{c.name}' is not running")
        kill(pid, signal.SIGKILL)
        for _ in range(50):
            if not alive(pid):
                break
            time.sleep(0.1)
        if alive(pid):
            raise Die(f"weft-switch (pid {pid}) did not die")
        with open(c.path("switch.log"), "a") as f:
            f.write(f"==== weft-cluster: switch killed at {time.strftime('%F %T')} ====\n")
        log(f"weft-switch (pid {pid}) killed")
        if args[0] == "kill":
            return
    c.start_switch()


def cmd_reboot(c, args):
    a, i = node_command(c, "reboot", args, (("--timeout",), {
        "default": 120, "type": checked("--timeout needs seconds", int_in(1, 1 << 31))}))
    boot = c.node_status().get(i, {}).get("boot_id", "none")
    t0 = time.monotonic()
    pid = c.node_pid(i)
    log(f"node{i}: stopping VM (pid {pid or 'none'})")
    stop_pid(pid)
    with open(c.path(f"node{i}.console"), "a") as f:
        f.write(f"\n==== weft-cluster: node{i} rebooted at {time.strftime('%F %T')} ====\n")
    if c.settings.start == "snapshot" and not os.path.isdir(c.settings.snapshot):
        # Pruned meanwhile (snapshot.prune keeps what a running QEMU
        # uses; a 1-node cluster has none while it reboots).
        c.settings.snapshot = snapshot.make(c)
        c.settings.save(c.dir)
    c.start_node(i)
    if c.settings.start == "snapshot":
        snapshot.restore(c, [i])
    log(f"node{i}: VM restarted (pid {c.node_pid(i)}), waiting for ready")
    if not c.channel.wait([i], a.timeout, not_boot={i: boot}):
        c.show_tail(i)
        raise Die(f"node{i} did not come back after reboot")
    bad = c.bad_nodes(c.node_status()).get(i)
    if bad:
        c.show_tail(i)
        raise Die(f"node{i}: {bad}")
    log(f"node{i} back in {time.monotonic() - t0:.0f} s")


def cmd_down(c, args):
    if args:
        raise Die(f"down: unknown argument '{args[0]}'")
    s = c.settings = Settings.load(c.dir)
    if s is None:
        log(f"cluster '{c.name}' is not up")
        return
    pids = [c.node_pid(i) for i in range(s.nodes)]
    for pid in pids:
        kill(pid, signal.SIGTERM)
    for pid in pids:
        stop_pid(pid)
    gone = [f"node{i}.{f}" for i in range(s.nodes) for f in ("pid", "cmd.sock", "gdb.sock", "qmp.sock", "identity")]
    for what in ("switch", "chan"):
        stop_pid(c.pid(what))
        gone += [f"{what}.pid", f"{what}.sock"]
    gone += ["switch.ctl", "switch.tokens", "vnet.sock", "switch.addr", "initrd.img"]
    gone += [f for f in os.listdir(c.dir) if re.fullmatch(r"node\d+\.token", f)]
    for f in gone:
        try:
            os.unlink(c.path(f))
        except FileNotFoundError:
            pass
    log(f"cluster '{c.name}' down (logs kept in {c.dir})")


def cmd_gdb(c, args):
    """gdb NODE [GDB ARGS...]: scripts/weft-gdb does the work (it refuses
    a node that is not running)."""
    if not args:
        raise Die("gdb: which node?")
    c.load()
    os.execvp(sys.executable, [sys.executable, f"{ROOT}/scripts/weft-gdb", "--dir", c.dir, "--name", c.name, *args])


def cmd_list(rdir, args):
    Parser(prog="list", add_help=False).parse_args(args)
    any_ = False
    for name in sorted(os.listdir(rdir)):
        c = Cluster(name, rdir)
        if not os.path.lexists(c.path(STATE)):
            continue
        any_ = True
        try:
            c.load()
        except Die as e:
            print(f"{name}: not read ({e})")
            continue
        up = sum(alive(c.node_pid(i)) for i in range(c.settings.nodes))
        print(f"{name}: {up} of {c.settings.nodes} node(s) running ({c.dir})")
    if not any_:
        print(f"no clusters in {rdir}")


COMMANDS = {"up": cmd_up, "exec": cmd_exec, "mpirun": cmd_mpirun, "console": cmd_console, "status": cmd_status,
            "faults": cmd_faults, "switch": cmd_switch, "reboot": cmd_reboot, "gdb": cmd_gdb, "down": cmd_down}


def main(argv):
    # --name NAME may come anywhere before the command's own "--".
    name = os.environ.get("WEFT_CLUSTER") or "default"
    args = []
    while argv:
        a = argv.pop(0)
        if a == "--":
            args += [a] + argv
            break
        if a == "--name":
            if not argv:
                raise Die("--name needs a cluster name")
            name = argv.pop(0)
        else:
            args.append(a)
    if not args or args[0] in ("-h", "--help", "help"):
        sys.stderr.write(__doc__)
        return 0
    if not NAME.match(name) or name in (".", ".."):
        raise Die(f"bad cluster name '{name}' (letters, digits, . _ -)")
    cmd, args = args[0], args[1:]
    if cmd != "list" and cmd not in COMMANDS:
        log(f"unknown command '{cmd}'")
        sys.stderr.write(__doc__)
        return 2
    rdir = run_dir()
    private_dir(rdir)
    if cmd == "list":
        return cmd_list(rdir, args) or 0
    return COMMANDS[cmd](Cluster(name, rdir), args) or 0


def run():
    try:
        sys.exit(main(sys.argv[1:]))
    except Die as e:
        print(f"weft: error: {e}", file=sys.stderr)
        sys.exit(1)
    except ChannelError as e:
        print(f"weft-cluster: {e}", file=sys.stderr)
        sys.exit(1)
    except KeyboardInterrupt:
        sys.exit(130)
