#!/usr/bin/env python3
"""weft-cluster's run directory (docs/cluster.md, "Run directory"): created
private (mode 0700), and refused when another user owns it, when it is a
symbolic link or when others may write to it; a cluster.json it cannot
trust is never read.  Named clusters side by side and `list` work.
Needs no VM.  Run by meson (suite scripts, TAP: one point per check);
needs root for `chown nobody` (skipped otherwise, which is no pass)."""

import os
import pwd
import shutil
import subprocess
import sys
import tempfile

WC = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "scripts", "weft-cluster")
checks = failures = 0
out = ""


def check(what, ok):
    global checks, failures
    checks += 1
    print(f"{'ok' if ok else 'not ok'} {checks} - {what}")
    if not ok:
        failures += 1
        for line in out.splitlines()[-5:]:
            print(f"# | {line}")


def wc(run_dir, *args):
    """weft-cluster ARGS with WEFT_RUN_DIR=RUN_DIR: its exit status; its
    output in `out`."""
    global out
    p = subprocess.run([WC, *args], env=dict(os.environ, WEFT_RUN_DIR=run_dir),
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    out = p.stdout
    return p.returncode


def mode(path):
    return f"{os.stat(path).st_mode & 0o7777:o}"


def main(t):
    nobody = pwd.getpwnam("nobody").pw_uid
    os.chmod(t, 0o755)

    # 1. A missing run directory is created with mode 0700.
    new = f"{t}/new"
    rc = wc(new, "list")
    check(f"a new run directory is created with mode 700 ({mode(new)}) and list works",
          rc == 0 and mode(new) == "700" and "no clusters in" in out)

    # 2. Created in advance by another user: refused, with the reason.
    hijack = f"{t}/hijack"
    os.mkdir(hijack, 0o700)
    os.chown(hijack, nobody, -1)
    for cmd in (["list"], ["up", "-n", "1"], ["status"], ["down"]):
        rc = wc(hijack, "--name", "c1", *cmd)
        check(f"'{' '.join(cmd)}' refuses a run directory owned by nobody (exit {rc}): clear message",
              rc != 0 and f"refusing run directory {hijack}: it belongs to uid {nobody}, not to you" in out)
    check("nothing was written into the foreign run directory", not os.listdir(hijack))

    # 3. A symbolic link, even to a folder of ours: refused.
    os.mkdir(f"{t}/real", 0o700)
    os.symlink(f"{t}/real", f"{t}/link")
    rc = wc(f"{t}/link", "list")
    check(f"a run directory that is a symbolic link is refused (exit {rc})",
          rc != 0 and "it is a symbolic link" in out)

    # 4. Ours but writable by others: refused; ours and only readable: tightened.
    os.mkdir(f"{t}/open")
    os.chmod(f"{t}/open", 0o777)
    rc = wc(f"{t}/open", "list")
    check(f"a run directory of mode 777 is refused (exit {rc})",
          rc != 0 and "lets other users write to it" in out and mode(f"{t}/open") == "777")
    os.mkdir(f"{t}/old")
    os.chmod(f"{t}/old", 0o755)
    rc = wc(f"{t}/old", "list")
    check(f"a run directory of ours with mode 755 is tightened to {mode(f'{t}/old')}",
          rc == 0 and mode(f"{t}/old") == "700")

    # 5. A cluster.json that is not ours, or that others may write, is
    # never read: one that would be valid is refused for what it is.
    planted = f"{new}/planted"
    os.mkdir(planted, 0o700)
    state = f"{planted}/cluster.json"
    with open(state, "w") as f:
        f.write('{"nodes": 1}\n')
    os.chown(state, nobody, -1)
    os.chmod(state, 0o644)
    rc = wc(new, "--name", "planted", "status")
    check(f"status refuses a cluster.json owned by another user (exit {rc})",
          rc != 0 and "refusing to read" in out)
    rc = wc(new, "--name", "planted", "down")
    check(f"down refuses it too (exit {rc})", rc != 0 and "refusing to read" in out)
    os.chown(state, 0, -1)
    os.chmod(state, 0o666)
    rc = wc(new, "--name", "planted", "status")
    check(f"status refuses a cluster.json that others may write (exit {rc})",
          rc != 0 and "refusing to read" in out)
    os.chmod(state, 0o600)
    with open(state, "w") as f:
        f.write('{"nodes": "1; touch x"}\n')
    rc = wc(new, "--name", "planted", "status")
    check(f"status refuses a cluster.json of ours with a field of the wrong type (exit {rc})",
          rc != 0 and "cannot read" in out)

    # 6. Named clusters side by side, and list.
    shutil.rmtree(planted)
    for c in ("alpha", "beta"):
        os.mkdir(f"{new}/{c}", 0o700)
        with open(f"{new}/{c}/cluster.json", "w") as f:
            f.write('{"nodes": 2}\n')
    rc = wc(new, "list")
    check("list shows both named clusters",
          rc == 0 and "\nalpha: 0 of 2 node(s) running" in "\n" + out and "\nbeta: 0 of 2 node(s) running" in out)
    rc = wc(new, "--name", "alpha", "down")
    check(f"down of one named cluster works and leaves the other (exit {rc})",
          rc == 0 and os.path.isfile(f"{new}/beta/cluster.json"))


if __name__ == "__main__":
    if os.getuid() != 0:
        print("1..0 # SKIP needs root to create a folder owned by another user")
        sys.exit(0)
    try:
        pwd.getpwnam("nobody")
    except KeyError:
        print("1..0 # SKIP no user 'nobody'")
        sys.exit(0)
    with tempfile.TemporaryDirectory(prefix="weft-rundir-test.") as tmp:
        main(tmp)
    print(f"1..{checks}")
    print(f"# run directory: {checks} checks, {failures} failed")
    sys.exit(1 if failures else 0)
