#!/usr/bin/env python3
"""The stamps that make `weft-cluster up`'s checks a cache hit
(scripts/weftcluster/stamp.py, docs/cluster.md "What up checks") and
scripts/build-guest-tests.sh's own (weft_stat_hash of scripts/lib.sh): a
file written, added, removed or made executable in the checkout, a changed
build variable or a changed answer (the QEMU binary rebuilt, the image
gone) makes the checks run again; a file that .gitignore names (build
output) and a variable that only says how to run a cluster do not.  Needs
no VM.  Run by meson (suite scripts, TAP: one point per check)."""

import os
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "scripts"))

from weftcluster import stamp  # noqa: E402
from tap import check, plan  # noqa: E402

LIB = os.path.join(HERE, "..", "..", "scripts", "lib.sh")


def write(path, text, age=0):
    """Write TEXT to PATH (folders made), its times AGE seconds ago."""
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(text)
    t = time.time() - age
    os.utime(path, (t, t))


def checkout(root):
    """A small checkout: sources, a .gitignore and ignored build output."""
    write(f"{root}/.gitignore", "build*/\n*.o\n__pycache__/\ndocs/*.tmp\n")
    write(f"{root}/guest-driver/weft_main.c", "int x;\n", 100)
    write(f"{root}/tests/guest/weft-test-a.c", "int main(void) { return 0; }\n", 100)
    write(f"{root}/scripts/build-image.sh", "#!/bin/sh\n", 100)
    write(f"{root}/build/qemu-device/switch/weft-switch", "binary", 100)
    write(f"{root}/guest-driver/weft_main.o", "object", 100)


def fingerprints(t):
    root = f"{t}/src"
    checkout(root)
    f0 = stamp.fingerprint(root)
    lines = stamp.tree(root)
    names = sorted(x.split()[0] for x in lines)
    check("the tree lists the sources and .gitignore, not build output or objects",
          names == [".gitignore", "guest-driver/weft_main.c", "scripts/build-image.sh",
                    "tests/guest/weft-test-a.c"], names)
    check("the fingerprint is stable", stamp.fingerprint(root) == f0)

    write(f"{root}/build/qemu-device/switch/other.o", "x")
    write(f"{root}/scripts/__pycache__/cli.cpython-311.pyc", "x")
    write(f"{root}/guest-driver/weft_qp.o", "x")
    check("build output, objects and __pycache__ leave it as it was", stamp.fingerprint(root) == f0)

    # A pattern with a slash inside is not understood: it ignores nothing.
    write(f"{root}/docs/x.tmp", "x")
    f1 = stamp.fingerprint(root)
    check("a file matched only by a pattern with a slash inside counts", f1 != f0)
    os.unlink(f"{root}/docs/x.tmp")
    os.rmdir(f"{root}/docs")
    check("... and removing it gives the fingerprint back", stamp.fingerprint(root) == f0)

    write(f"{root}/tests/guest/weft-test-a.c", "int main(void) { return 0; }\n")
    f2 = stamp.fingerprint(root)
    check("a guest test source touched (same bytes, new time) changes it", f2 != f0)

    write(f"{root}/guest-driver/weft_new.c", "int y;\n")
    f3 = stamp.fingerprint(root)
    check("a new driver source changes it", f3 not in (f0, f2))

    os.unlink(f"{root}/guest-driver/weft_new.c")
    check("removing it changes it back", stamp.fingerprint(root) == f2)

    os.chmod(f"{root}/scripts/build-image.sh", 0o755)
    f4 = stamp.fingerprint(root)
    check("a mode change (a script made executable) changes it", f4 != f2)

    os.environ["WEFT_IMAGE_TOOLS"] = f"{t}/tools"
    f5 = stamp.fingerprint(root)
    del os.environ["WEFT_IMAGE_TOOLS"]
    check("a build variable (WEFT_IMAGE_TOOLS) changes it", f5 != f4 and stamp.fingerprint(root) == f4)

    os.environ["WEFT_CLUSTER"] = "another"
    os.environ["WEFT_QEMU_ARGS_3"] = "-S"
    same = stamp.fingerprint(root) == f4
    del os.environ["WEFT_CLUSTER"], os.environ["WEFT_QEMU_ARGS_3"]
    check("a run-only variable (WEFT_CLUSTER, WEFT_QEMU_ARGS_<N>) does not", same)


def answers(t):
    root = f"{t}/src2"
    checkout(root)
    image = f"{t}/cache/images/abc"
    for f in (".complete", "initrd.img", "vmlinux"):
        write(f"{image}/{f}", f, 100)
    qemu = f"{t}/qemu-system-x86_64"
    write(qemu, "qemu build 1", 100)
    sw = f"{root}/build/qemu-device/switch/weft-switch"
    got = {"qemu": qemu, "image": image, "switch": sw}
    kind = {"driver": True, "switch": True}

    st = stamp.Stamp(kind, root)
    check("no stamp yet: no hit", st.hit() is None)
    st.save(got)
    check("the stamp's file is the user's alone", os.stat(st.path).st_mode & 0o077 == 0)
    check("saved: the next up hits, with the answers", stamp.Stamp(kind, root).hit() == got)
    check("another kind of checks (--no-adapter) has a stamp of its own",
          stamp.Stamp({"driver": False, "switch": False}, root).hit() is None)

    write(qemu, "qemu build 2")
    check("the QEMU binary rebuilt: no hit", stamp.Stamp(kind, root).hit() is None)
    stamp.Stamp(kind, root).save(got)
    check("saved again: a hit", stamp.Stamp(kind, root).hit() == got)

    os.unlink(f"{image}/initrd.img")
    check("the image pruned meanwhile: no hit", stamp.Stamp(kind, root).hit() is None)
    write(f"{image}/initrd.img", "initrd.img", 100)
    stamp.Stamp(kind, root).save(got)

    # The fingerprint is taken when the checks start: a source written
    # while they run makes the next up check again.
    during = stamp.Stamp(kind, root)
    write(f"{root}/tests/guest/weft-test-a.c", "int main(void) { return 1; }\n")
    during.save(got)
    check("a source written while the checks ran: the next up checks again",
          stamp.Stamp(kind, root).hit() is None)

    with open(stamp.Stamp(kind, root).path, "w") as f:
        f.write("{not json")
    check("a damaged stamp is no hit (and no error)", stamp.Stamp(kind, root).hit() is None)


def stat_hash(t):
    """lib.sh's weft_stat_hash, which build-guest-tests.sh's stamp uses."""
    d = f"{t}/gt"
    write(f"{d}/src/weft-test-a.c", "a", 100)
    write(f"{d}/src/wt.h", "h", 100)

    def h():
        r = subprocess.run(["bash", "-c", 'source "$1" && weft_stat_hash "$2" "$3"', "-", LIB,
                            f"{d}/src", f"{d}/missing"], stdout=subprocess.PIPE, text=True)
        return r.stdout.strip() if r.returncode == 0 else f"failed {r.returncode}"

    h0 = h()
    check(f"weft_stat_hash gives a short hash ({h0})", len(h0) == 16 and h() == h0, h0)
    write(f"{d}/src/wt.h", "h")
    h1 = h()
    check("weft_stat_hash: a header touched changes it", h1 != h0)
    write(f"{d}/src/weft-test-b.c", "b")
    h2 = h()
    check("weft_stat_hash: a new test changes it", h2 not in (h0, h1))
    write(f"{d}/missing/x", "x")
    check("weft_stat_hash: a missing path that appears changes it", h() != h2)


def main():
    with tempfile.TemporaryDirectory() as t:
        os.environ["WEFT_CACHE"] = f"{t}/cache"
        fingerprints(t)
        answers(t)
        stat_hash(t)
    return plan()


if __name__ == "__main__":
    sys.exit(main())
