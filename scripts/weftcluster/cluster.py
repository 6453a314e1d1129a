"""One cluster: its folder, its switch, its VMs and their nodes.

A Cluster is made from a name and the run directory; `settings` is None
until `up` saved them (cluster.json) or `load` read them.  Node objects run
commands through the cluster's channel daemon.
"""

import ctypes
import ipaddress
import os
import re
import secrets
import signal
import subprocess
import sys
import time
import uuid

from .chan import Channel, alive, read_pid
from .rundir import Die, log
from .state import Settings

CHAN = os.path.join(os.path.dirname(os.path.abspath(__file__)), "chan.py")

# Kernel arguments that only shorten the boot (docs/performance.md,
# "Cluster start"): no crypto self-tests at algorithm registration, and
# neither the jitter entropy source's start-up test nor the SP800-108 KDF
# self-test, which nothing in the guest uses; under TCG these cost each VM
# about 0.7 s of host CPU.
BOOT_ARGS = "cryptomgr.notests initcall_blacklist=jent_mod_init,crypto_kdf108_init"


def no_thp():
    """In the child before exec: QEMU runs without transparent huge pages
    (prctl PR_SET_THP_DISABLE, kept across exec): a guest's first touch of
    a 2 MiB region made the host zero all of it, 0.3-0.6 s of system time
    per boot (docs/performance.md, "Cluster start")."""
    ctypes.CDLL(None).prctl(41, 1, 0, 0, 0)


def spawn(argv, logfile, append=True, preexec_fn=None):
    """Start ARGV in its own session, holding none of our descriptors (a
    pipe the caller reads to its end would never end), output to LOGFILE;
    its pid."""
    with open(logfile, "ab" if append else "wb") as out:
        p = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
                             start_new_session=True, preexec_fn=preexec_fn)
    return p.pid


def kill(pid, sig):
    """Send SIG to PID if it is alive (it may end meanwhile)."""
    if alive(pid):
        try:
            os.kill(pid, sig)
        except ProcessLookupError:
            pass


def stop_pid(pid):
    """SIGTERM, then SIGKILL after 5 s; waits at most 2 s more."""
    if not alive(pid):
        return
    kill(pid, signal.SIGTERM)
    for _ in range(50):
        if not alive(pid):
            return
        time.sleep(0.1)
    kill(pid, signal.SIGKILL)
    for _ in range(20):
        if not alive(pid):
            return
        time.sleep(0.1)


def host_addr(net, n):
    """Host N+1 of the network NET ("A.B.C.D/LEN" or "PREFIX::/LEN"), with
    /LEN; "" without a network."""
    if not net:
        return ""
    iface = ipaddress.ip_interface(net)
    return f"{iface.ip + n + 1}/{iface.network.prefixlen}"


def tail(path, lines):
    try:
        with open(path, "rb") as f:
            return f.read().decode("utf-8", "replace").splitlines()[-lines:]
    except OSError:
        return None


class Node:
    """Node INDEX of a cluster (its local index; `nid` is its node id)."""

    def __init__(self, cluster, index):
        self.cluster = cluster
        self.index = index

    def exec(self, cmd, timeout=None):
        """Run CMD with sh in the guest: (exit status, output as text).  A
        node that cannot run it gives status 255 and the reason."""
        try:
            rc, out = self.cluster.channel.exec(self.index, cmd, timeout)
        except (OSError, ValueError) as e:
            return 255, f"weft-cluster: {e}"
        return rc, out.decode("utf-8", "replace")


class Cluster:
    def __init__(self, name, run_dir):
        self.name = name
        self.dir = os.path.join(run_dir, name)
        self.settings = None
        self.channel = Channel(self.dir)

    def path(self, f):
        return os.path.join(self.dir, f)

    def load(self):
        self.settings = Settings.load(self.dir)
        if self.settings is None:
            raise Die(f"no cluster '{self.name}' (no {self.path('cluster.json')}); "
                      f"start one with: weft-cluster --name {self.name} up -n N")
        return self.settings

    def node(self, i):
        return Node(self, i)

    def node_index(self, spec):
        """Node spec N or nodeN -> N, checked against the cluster size."""
        n = spec[4:] if spec.startswith("node") else spec
        if not n.isdigit():
            raise Die(f"bad node '{spec}' (use N or nodeN)")
        if int(n) >= self.settings.nodes:
            raise Die(f"cluster {self.name} has nodes 0..{self.settings.nodes - 1}, not {spec}")
        return int(n)

    def nid(self, i):
        """Local node I's node id on the fabric (--first-node + I)."""
        return self.settings.base + i

    # ---- processes -------------------------------------------------------
    def node_pid(self, i):
        return read_pid(self.path(f"node{i}.pid"))

    def pid(self, what):
        """The pid of the cluster's "switch" or "chan" (None if none)."""
        return read_pid(self.path(f"{what}.pid"))

    def running(self):
        """Any of the cluster's processes is alive."""
        return (any(alive(self.node_pid(i)) for i in range(self.settings.nodes))
                or alive(self.pid("switch")) or alive(self.pid("chan")))

    def start_chan(self):
        """Start the command channel daemon; chan_started() waits for it.
        It needs only the cluster's folder: it connects to each node's
        serial socket as that appears."""
        pid = spawn([sys.executable, CHAN, "serve", "--dir", self.dir, "--nodes", str(self.settings.nodes)],
                    self.path("chan.log"), append=False)
        with open(self.path("chan.pid"), "w") as f:
            f.write(f"{pid}\n")

    def chan_started(self):
        """Wait until the daemon that start_chan started answers (its
        socket exists from its bind, before it listens)."""
        pid = self.pid("chan")
        for _ in range(500):
            try:
                self.channel.status()
                return
            except (OSError, ValueError):
                if not alive(pid):
                    break
            time.sleep(0.02)
        sys.stderr.write("\n".join(tail(self.path("chan.log"), 50) or []) + "\n")
        raise Die("the command channel daemon did not start")

    # ---- the switch ------------------------------------------------------
    def switch_addr(self):
        """The HOST:PORT the nodes connect to over TCP: the other host's
        switch (--switch), or the address our switch's listener bound."""
        if self.settings.remote:
            return self.settings.remote
        try:
            with open(self.path("switch.addr")) as f:
                return f.read().strip()
        except OSError:
            return ""

    def ctl(self, *args, **kw):
        """weft-switch ctl ARGS on the cluster's control socket."""
        return subprocess.run([self.settings.switch, "ctl", "--socket", self.path("switch.ctl"), *args], **kw)

    def make_tokens(self, count):
        """A random 256-bit token per node id, in nodeID.token (for QEMU)
        and switch.tokens (for weft-switch), all mode 0600."""
        lines = []
        for i in range(count):
            t = secrets.token_hex(32)
            write_private(self.path(f"node{i}.token"), t)
            lines.append(f"{i} {t}\n")
        write_private(self.path("switch.tokens"), "".join(lines))

    def start_switch(self):
        """weft-switch for the cluster (tokens, run folder, seed and
        --switch-args from the settings); its pid in switch.pid.  Waits
        until its control socket answers."""
        s = self.settings
        # A restarted switch listens on the port it had: the nodes'
        # chardevs reconnect to it.
        addr = self.switch_addr()
        tcp = ["--listen", addr] if addr else ["--listen", s.listen] if s.listen else []
        argv = [s.switch, "--socket", self.path("switch.sock"), "--ctl", self.path("switch.ctl"),
                "--run-dir", self.dir, "--tokens", self.path("switch.tokens"), "--seed", str(s.seed),
                *tcp, "--transport", "socket" if s.transport == "socket" else "auto", *s.swargs.split()]
        pid = spawn(argv, self.path("switch.log"))
        with open(self.path("switch.pid"), "w") as f:
            f.write(f"{pid}\n")
        for _ in range(100):
            if self.ctl("faults", stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).returncode == 0:
                if tcp and not self.switch_addr():
                    bound = re.findall(r": listening on TCP (\S+) \(--listen ",
                                       "\n".join(tail(self.path("switch.log"), 1000) or []))
                    with open(self.path("switch.addr"), "w") as f:
                        f.write(f"{bound[-1] if bound else ''}\n")
                extra = (f", {s.swargs}" if s.swargs else "") + (f", TCP {self.switch_addr()}" if tcp else "")
                log(f"weft-switch up (pid {pid}, seed {s.seed}{extra})")
                return
            if not alive(pid):
                break
            time.sleep(0.1)
        sys.stderr.write("\n".join(tail(self.path("switch.log"), 20) or []) + "\n")
        raise Die(f"weft-switch did not start (log: {self.path('switch.log')})")

    def transports(self):
        """How each node's last HELLO was served, from the switch log
        ("node0 shared memory, node1 socket")."""
        got = {}
        pat = re.compile(r": node (\d+) connected \(.*, (shared memory|socket)\)$")
        for line in tail(self.path("switch.log"), 100000) or []:
            m = pat.search(line)
            if m and m.group(1) not in got:
                got[m.group(1)] = m.group(2)
        return ", ".join(f"node{k} {v}" for k, v in sorted(got.items()))

    # ---- VMs -------------------------------------------------------------
    def sw_chardev(self, cid):
        """The -chardev of one switch connection: the UNIX socket, or TCP
        (no descriptors travel: the device's transport=auto then uses the
        socket, docs/switch.md).  A listener on the wildcard address is
        reached through loopback."""
        if self.settings.transport != "tcp":
            return f"socket,id={cid},path={self.path('switch.sock')},reconnect-ms=1000"
        host, _, port = self.switch_addr().rpartition(":")
        host = host.strip("[]")
        host = {"0.0.0.0": "127.0.0.1", "::": "::1"}.get(host, host)
        return f"socket,id={cid},host={host},port={port},reconnect-ms=1000,nodelay=on"

    def addresses(self, i):
        """Node I's addresses: weft0's IPv4 and IPv6, eth0's (--vnet)."""
        s = self.settings
        return (host_addr(s.net4, self.nid(i)), host_addr(s.net6, self.nid(i)),
                host_addr(s.vnet4, self.nid(i)))

    def vnet_args(self, i):
        """Node I's virtio-net NIC (--vnet).  Two nodes are joined point to
        point by a UNIX stream socket in the cluster's folder (node0
        listens, node1 connects and reconnects after a reboot of node0);
        any other count shares a multicast group on the loopback interface,
        chosen at random by `up`, as QEMU's hub of socket backends."""
        s = self.settings
        if s.nodes == 2:
            nd = f"stream,id=vnet,addr.type=unix,addr.path={self.path('vnet.sock')}"
            nd += ",server=on" if i == 0 else ",server=off,reconnect-ms=500"
        else:
            nd = f"socket,id=vnet,mcast={s.vnet_mcast},localaddr=127.0.0.1"
        return ["-netdev", nd, "-device", f"virtio-net-pci,netdev=vnet,mac=52:54:00:57:00:{i + 1:02x},romfile="]

    def debug_args(self, i):
        """Node I's gdbstub, on a UNIX socket of the cluster's folder (never
        TCP), and with --trace its QEMU trace events, time-stamped, in
        nodeI.trace (the file of an earlier boot is kept as
        nodeI.trace.SECONDS)."""
        sock, trace = self.path(f"node{i}.gdb.sock"), self.path(f"node{i}.trace")
        if os.path.lexists(sock):
            os.unlink(sock)
        args = ["-chardev", f"socket,id=gdb,path={sock},server=on,wait=off", "-gdb", "chardev:gdb"]
        if not self.settings.trace:
            return args
        if os.path.isfile(trace) and os.path.getsize(trace):
            os.replace(trace, f"{trace}.{int(time.time())}")
        args += [x for p in self.settings.trace.split(",") for x in ("-trace", f"enable={p}")]
        return args + ["-trace", f"file={trace}", "-msg", "timestamp=on"]

    def kernel_append(self, i):
        """The kernel command line of node I, or (I None, or a cluster
        started from a snapshot) the template's: weft_identity=wait and no
        identity, which the node gets after the restore (images/init/rc)."""
        s = self.settings
        env = [os.environ["WEFT_KERNEL_APPEND"]] if os.environ.get("WEFT_KERNEL_APPEND") else []
        if i is None or s.start == "snapshot":
            return ["console=ttyS0", "weft_identity=wait", "panic=-1", "quiet", BOOT_ARGS] + env
        ip4, ip6, vnet = self.addresses(i)
        append = ["console=ttyS0", f"weft_node={self.nid(i)}", "panic=-1", "quiet", BOOT_ARGS]
        append += [f"weft_ip={ip4}"] if ip4 else []
        append += [f"weft_vnet_ip={vnet}"] if vnet else []
        append += [f"weft_ip6={ip6}"] if ip6 else []
        return append + env

    def identity(self, i):
        """Node I's identity for a start from a snapshot, in nodeI.identity
        (mode 0600; chan.py sends it when the node asks): what the kernel
        command line gives a booted node, a boot id of this start and
        entropy of its own."""
        ip4, ip6, _ = self.addresses(i)
        words = [f"weft_node={self.nid(i)}"]
        words += [f"weft_ip={ip4}"] if ip4 else []
        words += [f"weft_ip6={ip6}"] if ip6 else []
        words += [f"weft_boot={uuid.uuid4()}", f"weft_seed={secrets.token_hex(32)}"]
        write_private(self.path(f"node{i}.identity"), " ".join(words) + "\n")

    def vm_args(self, name, append, console, cmd_sock):
        """The QEMU arguments every VM of the cluster shares, the template
        of a snapshot included: machine, kernel, the console and command
        channel serial ports, the accelerator."""
        s = self.settings
        machine = "q35,memory-backend=weft-ram" if s.start == "snapshot" else "q35"
        args = ["-nodefaults", "-machine", machine, "-m", str(s.mem), "-smp", "1", "-display", "none",
                "-no-reboot", "-no-user-config", "-name", name,
                "-kernel", f"{s.image}/vmlinux", "-initrd", s.initrd or f"{s.image}/initrd.img",
                "-append", " ".join(append),
                "-chardev", f"file,id=con,path={console},append=on", "-serial", "chardev:con",
                "-chardev", f"socket,id=cmd,path={cmd_sock},server=on,wait=off",
                "-serial", "chardev:cmd"]
        args += ["-accel", "kvm", "-cpu", "host"] if s.accel == "kvm" else ["-accel", "tcg"]
        if s.start == "snapshot":
            # A GUID of its own in every VM: the restored kernels reseed
            # their random number generators (docs/cluster.md).
            args += ["-device", "vmgenid,guid=auto"]
        return args

    def start_node(self, i):
        s = self.settings
        args = self.vm_args(f"weft-{self.name}-node{i}", self.kernel_append(i), self.path(f"node{i}.console"),
                            self.path(f"node{i}.cmd.sock"))
        if s.adapter:
            # Over TCP the device's auto finds no descriptor passing and
            # uses the socket.  The node's switch token reaches the device
            # through a secret object read from a 0600 file, never on the
            # command line.  Adapter a of node i has node id i + a*nodes.
            dev = "auto" if s.transport == "tcp" else s.transport
            props = f",{s.devprops}" if s.devprops else ""
            for a in range(s.adapters):
                nid = self.nid(i) if a == 0 else i + a * s.nodes
                sfx = str(a) if a else ""
                io = f",iothread=weft-io{sfx}" if s.iothread else ""
                if s.iothread:
                    # The adapter's work off the main loop (docs/qemu-device.md).
                    args += ["-object", f"iothread,id=weft-io{sfx}"]
                args += ["-chardev", self.sw_chardev(f"sw{sfx}"),
                         "-object", f"secret,id=weft-token{sfx},file={self.path(f'node{nid}.token')},format=raw",
                         "-device", f"weft,node-id={nid},chardev=sw{sfx},token-secret=weft-token{sfx},"
                                    f"epoch-file={self.path(f'node{nid}.epoch')},transport={dev}{props}{io}"]
        if s.vnet4:
            args += self.vnet_args(i)
        args += self.debug_args(i)
        args += s.qemu_args.split()
        args += s.qemu_args_node[i].split() if i < len(s.qemu_args_node) else []
        if s.start == "snapshot":
            # The guest memory is the template's file, mapped copy on
            # write; the devices' state comes through QMP
            # (snapshot.restore).
            self.identity(i)
            qmp = self.path(f"node{i}.qmp.sock")
            if os.path.lexists(qmp):
                os.unlink(qmp)
            args += ["-object", f"memory-backend-file,id=weft-ram,size={s.mem}M,"
                                f"mem-path={os.path.join(s.snapshot, 'ram')},share=off",
                     "-qmp", f"unix:{qmp},server=on,wait=off", "-incoming", "defer"]
        try:
            os.unlink(self.path(f"node{i}.cmd.sock"))
        except FileNotFoundError:
            pass
        with open(self.path(f"node{i}.cmdline"), "w") as f:
            f.write(" ".join([s.qemu, *args]) + "\n")
        pid = spawn([s.qemu, *args], self.path(f"node{i}.qemu.log"), preexec_fn=no_thp)
        with open(self.path(f"node{i}.pid"), "w") as f:
            f.write(f"{pid}\n")

    # ---- reports ---------------------------------------------------------
    def show_tail(self, i, lines=25):
        """A node's console and QEMU log tails, for errors (stderr)."""
        con = self.path(f"node{i}.console")
        text = tail(con, 100000) or []
        err = sys.stderr
        for line in [x for x in text if re.search(r"Kernel panic|BUG:|Oops|weft: insmod", x)][:3]:
            print(f"node{i}: {line}", file=err)
        print(f"---- node{i} console (last {lines} lines of {con}) ----", file=err)
        print("\n".join(text[-lines:]) if text else "(no console output)", file=err)
        q = tail(self.path(f"node{i}.qemu.log"), 15)
        if q:
            print(f"---- node{i} QEMU messages ({self.path(f'node{i}.qemu.log')}) ----", file=err)
            print("\n".join(q), file=err)

    def node_status(self):
        try:
            return self.channel.status()
        except (OSError, ValueError):
            return {}

    def bad_nodes(self, st):
        """Ready nodes whose driver failed or that have no adapter: index -> why."""
        bad = {}
        for i, n in st.items():
            if self.settings.adapter and n.get("ready") and n["driver"] != "loaded":
                bad[i] = "weft.ko: " + n["driver"]
            elif self.settings.adapter and n.get("ready") and n["adapters"] == 0:
                bad[i] = "no /dev/weft* device after loading weft.ko"
        return bad

    def table(self):
        """The node table: NODE PID ACCEL STATE ADDRESS CONSOLE."""
        s = self.settings
        st = self.node_status()
        fmt = "%-7s %-8s %-5s %-28s %-34s %s"
        lines = [fmt % ("NODE", "PID", "ACCEL", "STATE", "ADDRESS", "CONSOLE")]
        for i in range(s.nodes):
            pid = self.node_pid(i)
            n = st.get(i, {})
            if not alive(pid):
                state = "stopped"
            elif not n.get("ready"):
                state = "booting" if n.get("connected") else "starting"
            elif s.adapter and n["driver"] != "loaded":
                state = "ready, driver " + n["driver"]
            elif s.adapter and n["adapters"] == 0:
                state = "ready, no /dev/weft*"
            elif s.adapter:
                state = "ready (weft0)" if n["adapters"] == 1 else f"ready ({n['adapters']} adapters)"
            else:
                state = "ready"
            ip4, ip6, vnet = self.addresses(i)
            addr = " ".join([a for a in (ip4, ip6) if a] + ([f"eth0 {vnet}"] if vnet else []))
            lines.append(fmt % (f"node{i}", pid or "-", s.accel, state, addr or "-",
                                self.path(f"node{i}.console")))
        return "\n".join(lines)


def write_private(path, text):
    """Write TEXT to a new file PATH of mode 0600."""
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write(text)
