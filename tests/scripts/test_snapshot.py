#!/usr/bin/env python3
"""weft-cluster's snapshot cache (docs/cluster.md, "Snapshot start"): the
cache key is SHAPE-BUILD, the shape shared by the templates of the same
cluster options and the build changing with the QEMU binary; prune keeps
the newest WEFT_SNAPSHOT_KEEP snapshots of each shape and the one in use,
removes older ones and folders of an older layout, and never removes a
snapshot that a running process's command line names or a template that
is still being made.  Needs no VM.  Run by meson (suite scripts, TAP: one
point per check)."""

import os
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "scripts"))

from weftcluster import snapshot  # noqa: E402
from weftcluster.cluster import Cluster  # noqa: E402
from weftcluster.rundir import Die  # noqa: E402
from weftcluster.state import Settings  # noqa: E402
from tap import check, plan  # noqa: E402

def entry(root, name, age, state=True):
    """A snapshot folder NAME last used AGE seconds ago (without state: a
    template being made, its folder AGE seconds old)."""
    d = os.path.join(root, name)
    os.makedirs(d)
    t = time.time() - age
    if state:
        for f in ("state", "ram"):
            with open(os.path.join(d, f), "w") as fh:
                fh.write(f)
        os.utime(os.path.join(d, "state"), (t, t))
    os.utime(d, (t, t))
    return d


def cluster(t, qemu, mem=512, props="", iothread=True):
    c = Cluster("c", t)
    c.settings = Settings(nodes=2, mem=mem, qemu=qemu, image=t, devprops=props, start="snapshot",
                          initrd=os.path.join(t, "initrd.img"), iothread=iothread)
    return c


def keys(t):
    qemu = os.path.join(t, "qemu")
    with open(qemu, "w") as f:
        f.write("one build")
    with open(os.path.join(t, "initrd.img"), "w") as f:
        f.write("initrd")
    k1 = snapshot.key(cluster(t, qemu))
    check(f"the key is SHAPE-BUILD ({k1})", snapshot.ENTRY.match(k1) is not None, k1)
    check("the same cluster gives the same key (the QEMU hash remembered)",
          snapshot.key(cluster(t, qemu)) == k1 and os.path.isfile(os.path.join(t, "cache", "snapshots", "hashes.json")))
    with open(qemu, "w") as f:
        f.write("another build")
    os.utime(qemu, (time.time() + 5, time.time() + 5))
    k2 = snapshot.key(cluster(t, qemu))
    check(f"another QEMU binary: the same shape, another build ({k1} -> {k2})",
          k2[:8] == k1[:8] and k2 != k1, k2)
    k3 = snapshot.key(cluster(t, qemu, mem=1024))
    k4 = snapshot.key(cluster(t, qemu, props="rcxts=40"))
    k5 = snapshot.key(cluster(t, qemu, iothread=False))
    check(f"other --mem, --device-props or --main-loop: another shape ({k3}, {k4}, {k5})",
          len({k2[:8], k3[:8], k4[:8], k5[:8]}) == 4, f"{k2} {k3} {k4} {k5}")


def prune(t):
    root = os.path.join(t, "cache", "snapshots")
    a = ["aaaaaaaa-000000000000000" + str(i) for i in range(1, 5)]
    entry(root, a[0], 400)          # oldest, but a running process names it
    entry(root, a[1], 300)
    entry(root, a[2], 200)
    cur = entry(root, a[3], 0)      # the one this `up` uses: make() marked its use
    entry(root, "bbbbbbbb-0000000000000001", 1000)
    entry(root, "0123456789abcdef", 10)                                   # older layout
    entry(root, "cccccccc-0000000000000001", 10, state=False)             # being made
    entry(root, "cccccccc-0000000000000002", 3 * snapshot.TEMPLATE_TIMEOUT, state=False)  # failed
    holder = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)",
                               f"mem-path={os.path.join(root, a[0], 'ram')}"])
    for _ in range(100):            # until the child runs python, not a copy of us
        with open(f"/proc/{holder.pid}/cmdline", "rb") as f:
            if b"mem-path=" in f.read():
                break
        time.sleep(0.05)
    try:
        gone = set(snapshot.prune(cur, keep=2))
    finally:
        holder.kill()
        holder.wait()
    left = set(os.listdir(root)) - {"hashes.json"}
    check("keep 2 per shape: the current and the newest other one stay, the one between goes",
          a[3] in left and a[2] in left and a[1] in gone and a[1] not in left, f"gone {sorted(gone)}")
    check("a snapshot that a running process names stays, however old", a[0] in left, f"left {sorted(left)}")
    check("a shape's only snapshot stays", "bbbbbbbb-0000000000000001" in left, f"left {sorted(left)}")
    check("a folder of an older layout goes", "0123456789abcdef" in gone, f"gone {sorted(gone)}")
    check("a template being made stays, one that failed long ago goes",
          "cccccccc-0000000000000001" in left and "cccccccc-0000000000000002" in gone, f"gone {sorted(gone)}")
    check("nothing else goes", gone == {a[1], "0123456789abcdef", "cccccccc-0000000000000002"}, f"gone {sorted(gone)}")
    # Without the holder, the oldest goes too.
    gone = set(snapshot.prune(cur, keep=2))
    check("once no process names it, the oldest goes", gone == {a[0]}, f"gone {sorted(gone)}")
    gone = set(snapshot.prune(cur, keep=1))
    check("keep 1: only the current one of its shape stays", gone == {a[2]} and os.path.isdir(cur),
          f"gone {sorted(gone)}")
    os.environ["WEFT_SNAPSHOT_KEEP"] = "0"
    try:
        snapshot.prune(cur)
        refused = False
    except Die:
        refused = True
    del os.environ["WEFT_SNAPSHOT_KEEP"]
    check("WEFT_SNAPSHOT_KEEP=0 is refused", refused)


def main():
    with tempfile.TemporaryDirectory(prefix="weft-snap-test.") as t:
        os.environ["WEFT_CACHE"] = os.path.join(t, "cache")
        os.environ.pop("WEFT_KERNEL_APPEND", None)
        os.environ.pop("WEFT_SNAPSHOT_KEEP", None)
        keys(t)
        prune(t)
    return plan()


if __name__ == "__main__":
    sys.exit(main())
