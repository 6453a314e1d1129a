"""Snapshot start (`weft-cluster up --start snapshot`, docs/cluster.md):
one template VM per image, kernel, QEMU and device build boots to the point
where images/init/rc waits for its identity, and is saved there with QEMU's
migration to a file; every node then starts with `-incoming` from it and
gets its identity through the command channel (chan.py answers the
guest's WAITID with nodeN.identity).

The saved state is cached in $WEFT_CACHE/snapshots/<hash>/state, the hash
covering what must be the same in the template and the nodes: the QEMU
binary's bytes, the image folder (itself named by the hash of its inputs),
the initrd, memory, the weft devices and their properties, the
accelerator, the kernel arguments and WEFT_QEMU_ARGS, and this file."""

import hashlib
import json
import os
import shutil
import socket
import time

from .cluster import spawn, no_thp, stop_pid, tail, write_private
from .rundir import Die, log

TEMPLATE_TIMEOUT = 300          # seconds for the template to boot and be saved


def cache_dir():
    c = os.environ.get("WEFT_CACHE") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "weft")
    return os.path.join(c, "snapshots")


def file_hash(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def key(c):
    """The cache key of cluster C's template."""
    s = c.settings
    initrd = s.initrd or f"{s.image}/initrd.img"
    parts = {
        "qemu": file_hash(s.qemu),
        "image": os.path.realpath(s.image),
        "initrd": [os.path.realpath(initrd), os.path.getsize(initrd), os.stat(initrd).st_mtime_ns],
        "mem": s.mem, "adapters": s.adapters if s.adapter else 0, "devprops": s.devprops,
        "accel": s.accel, "append": c.kernel_append(None), "qemu_args": s.qemu_args,
        "tool": file_hash(os.path.abspath(__file__)),
    }
    return hashlib.sha256(json.dumps(parts, sort_keys=True).encode()).hexdigest()[:16]


def check(c):
    """What snapshot start cannot do yet (a Die naming it)."""
    s = c.settings
    if s.vnet4:
        raise Die("up: --start snapshot goes without --vnet (the virtio-net MAC would be the template's)")
    if s.layer:
        raise Die("up: --start snapshot goes without --layer (its archive is the cluster's own)")
    if any(s.qemu_args_node):
        raise Die("up: --start snapshot goes without WEFT_QEMU_ARGS_<N> (every node is the template)")


class Qmp:
    """A minimal QMP client on a UNIX socket."""

    def __init__(self, path):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(30)
        self.sock.connect(path)
        self.f = self.sock.makefile("rwb")
        self._read()
        self.cmd("qmp_capabilities")

    def _read(self):
        while True:
            line = self.f.readline()
            if not line:
                raise Die("the template's QEMU closed its QMP socket")
            msg = json.loads(line)
            if "event" not in msg:
                return msg

    def cmd(self, name, **args):
        self.f.write(json.dumps({"execute": name, "arguments": args}).encode() + b"\n")
        self.f.flush()
        r = self._read()
        if "error" in r:
            raise Die(f"QMP {name}: {r['error'].get('desc')}")
        return r.get("return")

    def close(self):
        self.sock.close()


def wait_for_identity_request(path, pid, deadline):
    """Connect to the template's command channel and say H until the
    guest answers WAITID (images/init/rc)."""
    while time.monotonic() < deadline:
        try:
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            s.connect(path)
            break
        except OSError:
            s.close()
            time.sleep(0.1)
    else:
        raise Die("the template VM's command channel did not open")
    s.settimeout(1.0)
    buf = b""
    try:
        while time.monotonic() < deadline:
            s.sendall(b"H\n")
            try:
                data = s.recv(4096)
            except socket.timeout:
                data = None
            if data == b"":
                break
            if data:
                buf += data
                if b"WAITID" in buf:
                    return
            if pid is not None and not os.path.exists(f"/proc/{pid}"):
                break
    finally:
        s.close()
    raise Die("the template VM did not reach the point where it waits for its identity")


def make(c):
    """Boot the template, save it to the cache; the state file's path."""
    s = c.settings
    d = os.path.join(cache_dir(), key(c))
    state = os.path.join(d, "state")
    if os.path.isfile(state):
        log(f"snapshot: {state} (cached)")
        return state
    os.makedirs(d, mode=0o700, exist_ok=True)
    t0 = time.monotonic()
    log(f"snapshot: booting a template VM to save in {d}")
    tdir = c.path("template")
    shutil.rmtree(tdir, ignore_errors=True)
    os.mkdir(tdir, 0o700)
    cmd, qmp = os.path.join(tdir, "cmd.sock"), os.path.join(tdir, "qmp.sock")
    args = c.vm_args(f"weft-{c.name}-template", c.kernel_append(None), os.path.join(tdir, "console"), cmd)
    # The same devices as the nodes, without switch link, token or
    # epoch file (none of them is in the saved state).
    props = f",{s.devprops}" if s.devprops else ""
    for _ in range(s.adapters if s.adapter else 0):
        args += ["-device", f"weft{props}"]
    args += s.qemu_args.split() + ["-qmp", f"unix:{qmp},server=on,wait=off"]
    with open(os.path.join(tdir, "cmdline"), "w") as f:
        f.write(" ".join([s.qemu, *args]) + "\n")
    pid = spawn([s.qemu, *args], os.path.join(tdir, "qemu.log"), preexec_fn=no_thp)
    tmp = f"{state}.{os.getpid()}.tmp"
    try:
        wait_for_identity_request(cmd, pid, time.monotonic() + TEMPLATE_TIMEOUT)
        q = Qmp(qmp)
        # Saved running (the guest sits in a read): a node restored from
        # it runs at once.
        q.cmd("migrate", uri=f"file:{tmp}")
        while True:
            st = q.cmd("query-migrate").get("status")
            if st == "completed":
                break
            if st in ("failed", "cancelled"):
                raise Die(f"snapshot: saving the template failed ({st}; {os.path.join(tdir, 'qemu.log')})")
            time.sleep(0.05)
        q.close()
        os.chmod(tmp, 0o600)
        os.replace(tmp, state)
    except Die:
        print("\n".join(tail(os.path.join(tdir, "console"), 20) or []))
        print("\n".join(tail(os.path.join(tdir, "qemu.log"), 20) or []))
        raise
    finally:
        stop_pid(pid)
        if os.path.exists(tmp):
            os.unlink(tmp)
    write_private(os.path.join(d, "key.txt"), f"{c.kernel_append(None)}\n{s.image}\n{s.qemu}\n")
    log(f"snapshot: template saved in {time.monotonic() - t0:.1f} s "
        f"({os.path.getsize(state) >> 20} MiB, {state})")
    return state
