#!/usr/bin/env python3
"""weft-cluster's image layers and mpirun without a VM (docs/mpi.md): the
cluster's cpio archive read back by a newc reader written here (names,
modes, contents, 4-byte alignment, the trailer), `/etc/hosts` and the
dropbear files of a layer that carries dropbearkey (a stand-in program),
and mpirun's command line and its refusals.  Run by meson (suite scripts,
TAP: one point per check)."""

import os
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "scripts"))

from weftcluster import layer, mpirun  # noqa: E402
from weftcluster.cluster import Cluster  # noqa: E402
from weftcluster.rundir import Die  # noqa: E402
from weftcluster.state import Settings  # noqa: E402
from tap import check, plan  # noqa: E402

def read_newc(data):
    """[(name, mode, bytes)] of a newc archive, up to its trailer; raises
    ValueError on a malformed or misaligned entry."""
    out, off = [], 0
    while True:
        if off % 4 or data[off:off + 6] != b"070701":
            raise ValueError(f"no newc header at {off}")
        f = [int(data[off + 6 + 8 * k: off + 14 + 8 * k], 16) for k in range(13)]
        mode, size, namesize = f[1], f[6], f[11]
        name = data[off + 110: off + 110 + namesize - 1].decode()
        if data[off + 110 + namesize - 1] != 0:
            raise ValueError(f"name of {name} not NUL-terminated")
        off += 110 + namesize
        off += -off % 4
        body = data[off: off + size]
        off += size
        off += -off % 4
        if name == "TRAILER!!!":
            return out, off
        out.append((name, mode, body))


def main():
    entries = [("etc", 0o755, None), ("etc/a", 0o644, b"x"), ("etc/bb", 0o600, b"12345"), ("e", 0o644, b"")]
    arc = layer.newc(entries)
    try:
        got, end = read_newc(arc)
    except ValueError as e:
        got, end = [], -1
        check("newc: the archive reads back", False, str(e))
    check("newc: names, modes and contents read back, the trailer last, the end aligned",
          [(n, m, b) for n, m, b in got] ==
          [("etc", 0o040755, b""), ("etc/a", 0o100644, b"x"), ("etc/bb", 0o100600, b"12345"), ("e", 0o100644, b"")]
          and end == len(arc) and len(arc) % 4 == 0, f"{got} end {end} of {len(arc)}")

    with tempfile.TemporaryDirectory() as tmp:
        c = Cluster("t", tmp)
        os.makedirs(c.dir)
        c.settings = Settings(nodes=3, net4="10.87.0.0/16", net6="fd57:6566::/64")
        ldir = os.path.join(tmp, "layer")
        os.makedirs(f"{ldir}/host/lib")
        arc = layer.cluster_archive(c, ldir)
        files = {n: (m, b) for n, m, b in read_newc(arc)[0]}
        hosts = files.get("etc/hosts", (0, b""))[1].decode()
        check("cluster archive: /etc/hosts names every node at its IPv4 and IPv6 address",
              "10.87.0.1 node0\n" in hosts and "fd57:6566::3 node2\n" in hosts and "127.0.0.1 localhost" in hosts,
              hosts)
        check("cluster archive: no dropbear files for a layer without dropbearkey",
              not any(n.startswith(("root", "etc/dropbear")) for n in files), sorted(files))

        # A stand-in dropbearkey, run as the layer's would be (through
        # host/lib/ld-linux-x86-64.so.2 --library-path host/lib PROGRAM).
        fake = f"{ldir}/host/lib/ld-linux-x86-64.so.2"
        with open(fake, "w") as f:
            f.write('#!/bin/sh\nshift 2; shift; [ "$2" = ed25519 ] || exit 1\n'
                    'printf "key-of-%s" "${4##*/}" >"$4"\n'
                    'echo "Public key portion is:"\necho "ssh-ed25519 AAAA${4##*/} root@vm"\n')
        os.chmod(fake, 0o755)
        open(f"{ldir}/host/dropbearkey", "w").close()
        files = {n: (m, b) for n, m, b in read_newc(layer.cluster_archive(c, ldir))[0]}
        key = files.get("etc/dropbear/dropbear_ed25519_host_key")
        cli = files.get("root/.ssh/id_dropbear")
        check("cluster archive: the host key and root's client key, mode 0600",
              key == (0o100600, b"key-of-host") and cli == (0o100600, b"key-of-client"), f"{key} {cli}")
        check("cluster archive: /root and /root/.ssh mode 0700",
              files.get("root", (0,))[0] == 0o040700 and files.get("root/.ssh", (0,))[0] == 0o040700,
              f"{files.get('root')} {files.get('root/.ssh')}")
        auth = files.get("root/.ssh/authorized_keys", (0, b""))[1].decode()
        known = files.get("root/.ssh/known_hosts", (0, b""))[1].decode()
        check("cluster archive: the client key authorised, the host key known under every name and address",
              auth == "ssh-ed25519 AAAAclient root@vm\n" and "node1 ssh-ed25519 AAAAhost\n" in known
              and "10.87.0.3 ssh-ed25519 AAAAhost\n" in known and "fd57:6566::1 ssh-ed25519 AAAAhost\n" in known,
              f"{auth!r} {known!r}")
        check("cluster archive: no file of the keys' making left in the cluster's folder",
              sorted(os.listdir(c.dir)) == [], os.listdir(c.dir))

        c.settings = Settings(nodes=4)
        o, prog = mpirun.parse(["-np", "8", "--per-node", "2", "--transport", "ucx", "--mca", "a", "b", "--",
                                "prog", "x y"])
        argv = mpirun.command(c, o, prog)
        check("mpirun: 8 ranks 2 per node on node0..node3, pml ucx, the extra --mca, then the program",
              argv == ["mpirun", "--allow-run-as-root", "-np", "8", "--host", "node0:2,node1:2,node2:2,node3:2",
                       "--map-by", "slot", "--mca", "pml", "ucx", "--mca", "a", "b", "prog", "x y"], argv)
        o, prog = mpirun.parse(["-np", "4", "--per-node", "2", "--transport", "ofi", "--ofi-provider", "verbs;ofi_rxm",
                                "--", "p"])
        argv = mpirun.command(c, o, prog)
        check("mpirun: --ofi-provider names mtl ofi's libfabric provider",
              argv[8:] == ["--mca", "pml", "cm", "--mca", "mtl", "ofi", "--mca", "mtl_ofi_provider_include",
                           "verbs;ofi_rxm", "p"], argv)
        o, prog = mpirun.parse(["-np", "8", "--per-node", "2", "--impl", "mpich", "--", "prog.mpich", "a"])
        argv = mpirun.command(c, o, prog)
        check("mpirun: --impl mpich runs hydra through weft-rsh, 2 ranks on each of node0..node3",
              argv == ["mpiexec.hydra", "-launcher", "ssh", "-launcher-exec", "weft-rsh", "-np", "8", "-hosts",
                       "node0:2,node1:2,node2:2,node3:2", "prog.mpich", "a"], argv)
        o, prog = mpirun.parse(["-np", "3", "--", "p"])
        argv = mpirun.command(c, o, prog)
        check("mpirun: without --per-node, 3 ranks spread 1 per node over 3 nodes, no transport options",
              argv[4:8] == ["--host", "node0:1,node1:1,node2:1", "--map-by", "slot"] and argv[-1] == "p"
              and "--mca" not in argv, argv)
        for bad, why in ((["-np", "2", "p"], "no --"), (["--", "p"], "no -np"), (["-np", "0", "--", "p"], "0 ranks"),
                         (["-np", "2", "--transport", "ib", "--", "p"], "unknown transport"),
                         (["-np", "2", "--bogus", "--", "p"], "unknown option"),
                         (["-np", "2", "--mca", "x", "--", "p"], "--mca without a value"),
                         (["-np", "2", "--"], "no program"),
                         (["-np", "2", "--impl", "lam", "--", "p"], "unknown implementation"),
                         (["-np", "2", "--impl", "mpich", "--transport", "tcp", "--", "p"], "mpich with a transport"),
                         (["-np", "2", "--impl", "mpich", "--mca", "a", "b", "--", "p"], "mpich with --mca"),
                         (["-np", "2", "--ofi-provider", "verbs", "--", "p"], "a provider without ofi"),
                         (["-np", "2", "--transport", "ofi", "--ofi-provider", "a b", "--", "p"],
                          "a provider name with a space")):
            try:
                mpirun.parse(bad)
                ok = False
            except Die:
                ok = True
            check(f"mpirun: refused: {why}", ok, bad)
        o, prog = mpirun.parse(["-np", "9", "--per-node", "2", "--", "p"])
        try:
            mpirun.command(c, o, prog)
            ok = False
        except Die:
            ok = True
        check("mpirun: refused: 9 ranks at 2 per node need 5 of the 4 nodes", ok)
    return plan()


if __name__ == "__main__":
    sys.exit(main())
