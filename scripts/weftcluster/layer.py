"""Image layers (scripts/build-layer.sh, docs/mpi.md): `up --layer NAME`
boots the nodes with the image's initramfs, the layer's archive and a small
archive of the cluster's own, concatenated in the cluster's folder (Linux
unpacks concatenated cpio archives in order).

The cluster's archive holds /etc/hosts with every node's name and weft0
address and, when the layer carries dropbear (host/dropbearkey), the
cluster's keys, made at `up`: one host key for every node's dropbear and one
client key for root, authorised on every node, with the host key known
under every node's names and addresses."""

import os
import re
import subprocess
import tempfile

from .rundir import ROOT, Die, log

LAYER_NAME = re.compile(r"^[a-z0-9_-]+$")


def build(name):
    """The layer's folder (scripts/build-layer.sh NAME)."""
    p = subprocess.run([f"{ROOT}/scripts/build-layer.sh", name, "--print-dir"], stdout=subprocess.PIPE, text=True)
    out = p.stdout.strip().splitlines()
    if p.returncode != 0 or not out or not os.path.isfile(f"{out[-1]}/layer.cpio"):
        raise Die(f"scripts/build-layer.sh {name} failed")
    return out[-1]


def newc(entries):
    """A cpio archive (newc, as the kernel reads it) of ENTRIES: (path,
    mode, data) with data None for a folder."""
    out = bytearray()

    def add(path, mode, data, ino):
        name = path.encode() + b"\0"
        fields = [ino, mode, 0, 0, 1 if data is not None else 2, 0, len(data or b""), 0, 0, 0, 0, len(name), 0]
        out.extend(b"070701" + b"".join(b"%08X" % f for f in fields) + name)
        out.extend(b"\0" * (-len(out) % 4))
        out.extend(data or b"")
        out.extend(b"\0" * (-len(out) % 4))

    for ino, (path, mode, data) in enumerate(entries, 1):
        add(path, mode | (0o100000 if data is not None else 0o040000), data, ino)
    add("TRAILER!!!", 0, b"", 0)
    return bytes(out)


def dropbear_key(layer_dir, tmp, name):
    """A new ed25519 key made by the layer's dropbearkey (run with the
    layer's own libraries): (private key file bytes, public key line)."""
    host = f"{layer_dir}/host"
    path = os.path.join(tmp, name)
    p = subprocess.run([f"{host}/lib/ld-linux-x86-64.so.2", "--library-path", f"{host}/lib",
                        f"{host}/dropbearkey", "-t", "ed25519", "-f", path],
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    pub = [x for x in p.stdout.splitlines() if x.startswith("ssh-ed25519 ")]
    if p.returncode != 0 or not pub:
        raise Die(f"dropbearkey failed: {p.stdout.strip()}")
    with open(path, "rb") as f:
        return f.read(), pub[0]


def cluster_archive(cluster, layer_dir):
    """The cluster's own archive (see the module's text)."""
    s = cluster.settings
    hosts = ["127.0.0.1 localhost"]
    for i in range(s.nodes):
        ip4, ip6, _ = cluster.addresses(i)
        hosts += [f"{a.split('/')[0]} node{cluster.nid(i)}" for a in (ip4, ip6) if a]
    entries = [("etc", 0o755, None), ("etc/hosts", 0o644, ("\n".join(hosts) + "\n").encode())]
    if os.path.isfile(f"{layer_dir}/host/dropbearkey"):
        with tempfile.TemporaryDirectory(dir=cluster.dir) as tmp:
            hostkey, hostpub = dropbear_key(layer_dir, tmp, "host")
            client, pub = dropbear_key(layer_dir, tmp, "client")
        names = [n for line in hosts[1:] for n in line.split()]
        known = "".join(f"{n} {' '.join(hostpub.split()[:2])}\n" for n in names)
        entries += [("etc/dropbear", 0o755, None), ("etc/dropbear/dropbear_ed25519_host_key", 0o600, hostkey),
                    ("root", 0o700, None), ("root/.ssh", 0o700, None),
                    ("root/.ssh/id_dropbear", 0o600, client),
                    ("root/.ssh/authorized_keys", 0o600, (pub + "\n").encode()),
                    ("root/.ssh/known_hosts", 0o600, known.encode())]
        log("layer: the cluster's dropbear host and client keys made")
    return newc(entries)


def make_initrd(cluster, layer_dir):
    """The cluster's initrd.img: the image's, the layer's and the cluster's
    archives; its path."""
    s = cluster.settings
    path = cluster.path("initrd.img")
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
    with os.fdopen(fd, "wb") as out:
        for part in (f"{s.image}/initrd.img", f"{layer_dir}/layer.cpio"):
            with open(part, "rb") as f:
                while True:
                    b = f.read(1 << 22)
                    if not b:
                        break
                    out.write(b)
                    # Archives start on 4-byte boundaries.
            out.write(b"\0" * (-out.tell() % 4))
        out.write(cluster_archive(cluster, layer_dir))
    return path
