"""Snapshot start (`weft-cluster up`, docs/cluster.md): one template VM per
image, kernel, QEMU and device build boots to the point where
images/init/rc waits for its identity, and is saved there; every node then
starts from it with `-incoming` and gets its identity through the command
channel (chan.py answers the guest's WAITID with nodeN.identity).

The template's guest memory is a file of its own (`ram`, a
memory-backend-file shared with the file) and the saved state (`state`,
QEMU's migration to a file with x-ignore-shared) holds the devices and
firmware only.  Every node maps `ram` privately (copy on write), so the
restored VMs share the template's pages in the page cache and read
nothing: a page is copied only when a node writes it.

A snapshot is cached in $WEFT_CACHE/snapshots/<shape>-<build>/, the shape
hashing what the cluster asks for (memory, adapters, device properties,
accelerator, kernel arguments, WEFT_QEMU_ARGS) and the build what it runs
(the QEMU binary's bytes, the image folder, itself named by the hash of
its inputs, the initrd, and this file).  Each `up` from a snapshot keeps
the newest WEFT_SNAPSHOT_KEEP (default 2) snapshots of every shape and
removes the others, never one that a running QEMU names."""

import hashlib
import json
import os
import re
import shutil
import socket
import threading
import time

from .cluster import spawn, no_thp, stop_pid, tail, write_private
from .rundir import Die, log
from .stamp import cache_root

TEMPLATE_TIMEOUT = 300          # seconds for the template to boot and be saved
QMP_TIMEOUT = 60                # seconds for a restored node's QEMU to open its QMP socket
KEEP = 2                        # snapshots kept per shape (WEFT_SNAPSHOT_KEEP)
ENTRY = re.compile(r"^([0-9a-f]{8})-[0-9a-f]{16}$")


def cache_dir():
    return os.path.join(cache_root(), "snapshots")


def file_hash(path):
    """The SHA-256 of PATH's bytes, remembered per path, size and
    modification time in the cache (hashing the 70 MiB QEMU binary costs
    a noticeable part of an `up`)."""
    st = os.stat(path)
    memo = os.path.join(cache_dir(), "hashes.json")
    tag = f"{os.path.realpath(path)} {st.st_size} {st.st_mtime_ns} {st.st_ino}"
    try:
        with open(memo) as f:
            known = json.load(f)
    except (OSError, ValueError):
        known = {}
    if isinstance(known, dict) and isinstance(known.get(tag), str):
        return known[tag]
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    known = {k: v for k, v in known.items() if os.path.exists(k.rsplit(" ", 3)[0])} if isinstance(known, dict) else {}
    known[tag] = h.hexdigest()
    os.makedirs(cache_dir(), mode=0o700, exist_ok=True)
    tmp = f"{memo}.{os.getpid()}.tmp"
    write_private(tmp, json.dumps(known, indent=1) + "\n")
    os.replace(tmp, memo)
    return h.hexdigest()


def digest(parts):
    return hashlib.sha256(json.dumps(parts, sort_keys=True).encode()).hexdigest()


def key(c):
    """The cache key of cluster C's template: SHAPE-BUILD (hex)."""
    s = c.settings
    initrd = s.initrd or f"{s.image}/initrd.img"
    shape = {"mem": s.mem, "adapters": s.adapters if s.adapter else 0, "devprops": s.devprops,
             "accel": s.accel, "append": c.kernel_append(None), "qemu_args": s.qemu_args,
             "iothread": s.iothread}
    build = {"qemu": file_hash(s.qemu), "image": os.path.realpath(s.image),
             "initrd": [os.path.realpath(initrd), os.path.getsize(initrd), os.stat(initrd).st_mtime_ns],
             "tool": file_hash(os.path.abspath(__file__))}
    return f"{digest(shape)[:8]}-{digest(build)[:16]}"


def why_boot(s):
    """Why settings S need booted nodes ("" when a snapshot start can do
    them): what a restored node would share with the template."""
    if s.vnet4:
        return "--vnet (the virtio-net MAC would be the template's)"
    if s.layer:
        return "--layer (its archive is the cluster's own)"
    if any(s.qemu_args_node):
        return "WEFT_QEMU_ARGS_<N> (every node is the template)"
    return ""


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
    """The template's folder in the cache (its `state` and `ram`), booted
    and saved first if it is not there; then the cache is pruned."""
    s = c.settings
    d = os.path.join(cache_dir(), key(c))
    state, ram = os.path.join(d, "state"), os.path.join(d, "ram")
    if os.path.isfile(state) and os.path.isfile(ram):
        log(f"snapshot: {d} (cached)")
        os.utime(state)         # its last use, for prune
        prune(d)
        return d
    os.makedirs(d, mode=0o700, exist_ok=True)
    t0 = time.monotonic()
    log(f"snapshot: booting a template VM to save in {d}")
    tdir = c.path("template")
    shutil.rmtree(tdir, ignore_errors=True)
    os.mkdir(tdir, 0o700)
    cmd, qmp = os.path.join(tdir, "cmd.sock"), os.path.join(tdir, "qmp.sock")
    tmp, ram_tmp = f"{state}.{os.getpid()}.tmp", f"{ram}.{os.getpid()}.tmp"
    args = c.vm_args(f"weft-{c.name}-template", c.kernel_append(None), os.path.join(tdir, "console"), cmd)
    # Its memory is the file that the nodes map (cluster.start_node).
    args += ["-object", f"memory-backend-file,id=weft-ram,size={s.mem}M,mem-path={ram_tmp},share=on"]
    # The same devices as the nodes, without switch link, token or
    # epoch file (none of them is in the saved state).
    props = f",{s.devprops}" if s.devprops else ""
    for _ in range(s.adapters if s.adapter else 0):
        args += ["-device", f"weft{props}"]
    args += s.qemu_args.split() + ["-qmp", f"unix:{qmp},server=on,wait=off"]
    with open(os.path.join(tdir, "cmdline"), "w") as f:
        f.write(" ".join([s.qemu, *args]) + "\n")
    pid = spawn([s.qemu, *args], os.path.join(tdir, "qemu.log"), preexec_fn=no_thp)
    try:
        wait_for_identity_request(cmd, pid, time.monotonic() + TEMPLATE_TIMEOUT)
        q = Qmp(qmp)
        # The guest memory stays in its file (x-ignore-shared); saved
        # running (the guest sits in a read): a node restored from it runs
        # at once.  Migration stops the guest at the end, so the file
        # holds the memory of that moment.
        q.cmd("migrate-set-capabilities", capabilities=[{"capability": "x-ignore-shared", "state": True}])
        q.cmd("migrate", uri=f"file:{tmp}")
        while True:
            st = q.cmd("query-migrate").get("status")
            if st == "completed":
                break
            if st in ("failed", "cancelled"):
                raise Die(f"snapshot: saving the template failed ({st}; {os.path.join(tdir, 'qemu.log')})")
            time.sleep(0.05)
        q.close()
        stop_pid(pid)
        os.chmod(ram_tmp, 0o600)
        os.replace(ram_tmp, ram)
        os.chmod(tmp, 0o600)
        os.replace(tmp, state)
    except Die:
        print("\n".join(tail(os.path.join(tdir, "console"), 20) or []))
        print("\n".join(tail(os.path.join(tdir, "qemu.log"), 20) or []))
        raise
    finally:
        stop_pid(pid)
        for f in (tmp, ram_tmp):
            if os.path.exists(f):
                os.unlink(f)
    write_private(os.path.join(d, "key.txt"), f"{c.kernel_append(None)}\n{s.image}\n{s.qemu}\n")
    log(f"snapshot: template saved in {time.monotonic() - t0:.1f} s (state {os.path.getsize(state) >> 10} KiB, "
        f"memory {os.stat(ram).st_blocks >> 11} MiB of {s.mem} in {d})")
    prune(d)
    return d


def restore(c, nodes):
    """Restore NODES (their QEMUs started with `-incoming defer`, by
    cluster.start_node) from the cluster's snapshot, through each one's
    QMP socket, all at once."""
    errors = {}

    def one(i):
        sock = c.path(f"node{i}.qmp.sock")
        deadline = time.monotonic() + QMP_TIMEOUT
        while True:
            try:
                q = Qmp(sock)
                break
            except OSError as e:
                if time.monotonic() > deadline or not os.path.exists(f"/proc/{c.node_pid(i)}"):
                    errors[i] = f"no QMP on {sock}: {e}"
                    return
                time.sleep(0.02)
            except Die as e:
                errors[i] = str(e)
                return
        try:
            q.cmd("migrate-set-capabilities", capabilities=[{"capability": "x-ignore-shared", "state": True}])
            q.cmd("migrate-incoming", uri=f"file:{os.path.join(c.settings.snapshot, 'state')}")
        except (OSError, Die) as e:
            errors[i] = str(e)
        finally:
            q.close()

    threads = [threading.Thread(target=one, args=(i,), daemon=True) for i in nodes]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for i, why in sorted(errors.items()):
        c.show_tail(i)
        raise Die(f"node{i}: restoring from {c.settings.snapshot} failed: {why}")


def in_use():
    """The snapshot folders that a running process's command line names
    (the QEMUs of every cluster restored from one, of any run directory)."""
    root = cache_dir() + os.sep
    used = set()
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                argv = f.read().decode("utf-8", "replace")
        except OSError:
            continue
        for m in re.finditer(re.escape(root) + r"([^/\0,]+)", argv):
            used.add(m.group(1))
    return used


def prune(current, keep=None):
    """Keep the newest KEEP (WEFT_SNAPSHOT_KEEP, default 2) snapshots of
    every shape by last use, CURRENT (a folder) always; remove the others
    and folders of an older layout, except those a running QEMU uses and
    templates still being made.  The names removed."""
    if keep is None:
        v = os.environ.get("WEFT_SNAPSHOT_KEEP", str(KEEP))
        if not v.isdigit() or int(v) < 1:
            raise Die(f"WEFT_SNAPSHOT_KEEP needs a count of 1 or more, got '{v}'")
        keep = int(v)
    root = cache_dir()
    used = in_use() | {os.path.basename(current)}
    shapes = {}
    gone = []
    now = time.time()
    for name in os.listdir(root):
        d = os.path.join(root, name)
        if not os.path.isdir(d):
            continue
        try:
            last = os.stat(os.path.join(d, "state")).st_mtime
        except FileNotFoundError:
            last = None
        m = ENTRY.match(name)
        if last is None:
            # A template being made (by another `up`) or one that failed.
            if now - os.stat(d).st_mtime > 2 * TEMPLATE_TIMEOUT:
                gone.append(name)
        elif not m:
            gone.append(name)
        else:
            shapes.setdefault(m.group(1), []).append((last, name))
    for entries in shapes.values():
        entries.sort(reverse=True)
        gone += [name for _, name in entries[keep:]]
    gone = [name for name in gone if name not in used]
    for name in sorted(gone):
        shutil.rmtree(os.path.join(root, name), ignore_errors=True)
        log(f"snapshot: removed {name} from the cache (WEFT_SNAPSHOT_KEEP keeps {keep} per shape)")
    return gone
