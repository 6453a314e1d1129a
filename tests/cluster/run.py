#!/usr/bin/env python3
"""Weft cluster tests: real guests (TCG here), the real driver and the real
switch.  Boots the clusters of CLUSTERS below one at a time, runs the
scenarios on them, and always takes the clusters down.

  tests/cluster/run.py              every scenario
  tests/cluster/run.py NAME...      only these (see --list)
  tests/cluster/run.py --list       scenario names and what they check

Output is TAP (docs/testing.md): the plan, then one point per scenario,
each preceded by its checks as an indented TAP 14 subtest; all other
output is "#" diagnostics.  A scenario fails when any of its checks
failed, when it raised, or when it checked nothing; a failure prints the
tail of each node's console.  A scenario whose prerequisites are missing
fails and says what is missing.  The exit status is non-zero if any
scenario failed.
Environment: WEFT_QEMU / WEFT_SWITCH / WEFT_BUILD as for weft-cluster;
WEFT_TRANSPORT=auto|shm|socket, when set, is every cluster's
`weft-cluster up --transport` (by default the 4-node cluster runs on the
socket, ctt-<pid> always over TCP, the others on shared memory;
docs/cluster.md).  WEFT_START=boot|snapshot, when set, is the
`up --start` of every cluster that names none (by default ctb-<pid> and
the MPI cluster boot, ctr-<pid> is restored, and the others start as
`up` does by default: restored from a snapshot).
"""

import importlib
import os
import signal
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.realpath(__file__)), "..", "..", "scripts"))
sys.path.insert(0, os.path.dirname(os.path.realpath(__file__)))

from weftcluster.testing import REGISTRY, ClusterSpec, Runner  # noqa: E402

# The scenario files (tests/cluster/NAME.py); each declares its scenarios
# with @scenario.  A new file is one more name here.
SCENARIO_FILES = ("basic", "failover", "net", "ops", "ib", "verbs_user", "srq", "tm", "counters", "dbg",
                  "mpi", "fabtests", "ofi", "osc", "snapshot")
for f in SCENARIO_FILES:
    importlib.import_module(f)

# The clusters a run needs; a cluster is named PREFIX-<pid>.
CLUSTERS = {
    # Booted (up --start boot), for the scenarios that test booting
    # itself; every other cluster starts as weft-cluster's default
    # does, restored from a snapshot, unless it needs booting.
    "CB": ClusterSpec("ctb", 2, start="boot"),
    "C2": ClusterSpec("ct2", 2),
    # The failover campaign (failover.py) replays old frames while a new
    # stream runs: its switch keeps 8192 frames, so the old ones outlive
    # the new stream's first frames.  Its adapters have 40 rCxts, a little
    # more than one stream holds, so that restarted streams get the old
    # streams' rCxt ids back (the seed's "pool below twice the outstanding
    # rCxts" case) and the keys, not the ids, are what stops stale frames.
    "CF": ClusterSpec("ctf", 2, switch_args="--capture-ring 8192", props="rcxts=40"),
    # The 4-node adapters let up to 4 receive entries become valid out of
    # slot order (rx-overlap, seed item 15): IP over Weft, libweft's FIFO
    # and the half-RDMA modes must poll per slot to pass there.  They run
    # on the socket fallback, the others on the shared-memory rings (auto),
    # so that every run covers both.  Their devices run in QEMU's main
    # loop (the others each in its own IOThread, up's default), so that
    # every run covers both modes too.
    "C4": ClusterSpec("ct4", 4, props="rx-overlap=4", transport="socket", main_loop=True),
    # Two adapters per node, for striping over adapters.
    "CS": ClusterSpec("cts", 2, adapters=2),
    # Always through the switch's TCP listener on 127.0.0.1, as from
    # another host (WEFT_TRANSPORT does not change it).
    "CT": ClusterSpec("ctt", 2, transport="tcp", fixed=True),
    # The debugging tools' cluster (dbg.py): every node's QEMU keeps the
    # trace events of doorbell, UAR and register writes, commands, packets
    # and interrupts in nodeN.trace, for scripts/weft-timeline.
    "CD": ClusterSpec("ctd", 2, trace="weft_db_write,weft_uar_write,weft_reg_write,weft_cmd,weft_pkt_*,"
                      "weft_verbs_pkt_*,weft_irq*"),
    # MPI (mpi.py): the hpc image layer (Open MPI, MPICH, UCX, libfabric,
    # dropbear; docs/mpi.md), 4 nodes for 8 ranks 2 per node, with room
    # for 64 MiB messages; 2 GiB each for fabtests' fi_recv_cancel, whose
    # buffers take 1 GiB (docs/fabtests.md).  Guest memory is only
    # allocated on the host when touched.
    # It boots: a snapshot start goes without a layer (docs/cluster.md).
    "CM": ClusterSpec("ctm", 4, layer="hpc", mem=2048, start="boot"),
    # Snapshot start (snapshot.py): both nodes restored from the template
    # snapshot (up --start snapshot, whatever WEFT_START says), their
    # identity given after the restore.
    "CR": ClusterSpec("ctr", 2, start="snapshot"),
}


def main(argv):
    want = []
    for a in argv:
        if a in ("-h", "--help"):
            sys.stdout.write(__doc__)
            return 0
        if a == "--list":
            for name, _, desc, _ in REGISTRY:
                print(f"{name:<20} {desc}")
            return 0
        if a.startswith("-"):
            sys.stderr.write(f"unknown option {a}\n{__doc__}")
            return 2
        want.append(a)
    known = {name for name, *_ in REGISTRY}
    for a in want:
        if a not in known:
            print(f"weft: error: no scenario '{a}' (see --list)", file=sys.stderr)
            return 1
    # The selected scenarios, grouped by cluster (in the order each cluster
    # first appears) so that every cluster is booted once and its
    # scenarios run back to back.
    order = list(dict.fromkeys(key for _, key, _, _ in REGISTRY))
    sel = [s for key in order for s in REGISTRY if s[1] == key and (not want or s[0] in want)]
    # Interrupted, the clusters still go down (the finally below).
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    print(f"1..{len(sel)}", flush=True)
    with tempfile.TemporaryDirectory(prefix="weft-ct.") as tmp:
        r = Runner(CLUSTERS, tmp)
        t0 = time.monotonic()
        last = None
        try:
            for k, (name, key, desc, fn) in enumerate(sel, 1):
                if key != last:
                    # One cluster at a time: this machine has 2 cores.
                    if last:
                        r.down(last, f"cluster {r.names[last]} already taken down")
                    r.cluster_up(key)
                    last = key
                r.run(k, name, key, desc, fn)
        finally:
            r.cleanup()
        print(f"# cluster run took {time.monotonic() - t0:.0f} s")
        for s in r.summary:
            print(f"# {s}")
        print(f"# cluster: {r.passed} passed, {r.failed} failed")
    return 1 if r.failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
