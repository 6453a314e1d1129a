"""`up`'s checks as a cache hit (docs/cluster.md, "What up checks").

Before its VMs start, `up` runs scripts/build-qemu.sh, scripts/build-image.sh
and the switch's meson build; each finds, at length, that nothing changed
(3-30 s, most of an 8-node start from a snapshot).  A stamp in
$WEFT_CACHE/up-checks/ remembers, per checkout and kind of check, what they
answered and a fingerprint of everything they read:

- every file of the checkout (path, size, modification time, inode and
  mode), less what .gitignore names (build folders, objects, __pycache__);
- the host's packages and apt's view of them (/var/lib/dpkg/status, apt's
  lists, sources and preferences), which give the compiler, the kernel and
  the .debs;
- the environment, less the variables that only say how to run a cluster;
- what they answered: the files of the QEMU binary, the image and the
  switch, still there and unchanged.

When the fingerprint and the answers are as recorded, `up` uses the answers
and runs none of the checks; any difference runs them all, as before, and
records the stamp again.  The fingerprint is taken before the checks run,
so that a file changed while they run makes the next `up` check again."""

import fnmatch
import hashlib
import json
import os

from .rundir import ROOT

# Environment variables that say how to run a cluster, not what to build:
# left out of the fingerprint (a new variable is in it: a needless check at
# worst).
RUN_ONLY = ("WEFT_CLUSTER", "WEFT_RUN_DIR", "WEFT_ACCEL", "WEFT_QEMU_ARGS", "WEFT_KERNEL_APPEND",
            "WEFT_IOTHREAD", "WEFT_SNAPSHOT_KEEP", "WEFT_JOBS", "WEFT_TRANSPORT", "WEFT_START")
HOST_FILES = ("/var/lib/dpkg/status", "/etc/apt/sources.list", "/etc/apt/preferences")
HOST_DIRS = ("/var/lib/apt/lists", "/etc/apt/sources.list.d", "/etc/apt/preferences.d")


def cache_root():
    return os.environ.get("WEFT_CACHE") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "weft")


def ignored(root):
    """The .gitignore patterns of ROOT as (folder patterns, file patterns),
    each matched against a name; a pattern with a slash inside is left out
    (it then ignores nothing here: a needless check at worst)."""
    dirs, files = [".git"], []
    try:
        with open(os.path.join(root, ".gitignore")) as f:
            lines = f.read().splitlines()
    except OSError:
        lines = []
    for p in (x.strip() for x in lines):
        if not p or p.startswith(("#", "!")) or "/" in p.rstrip("/"):
            continue
        (dirs if p.endswith("/") else files).append(p.rstrip("/"))
    return dirs, files


def stat_line(path, st):
    return f"{path} {st.st_size} {st.st_mtime_ns} {st.st_ino} {st.st_mode:o}"


def tree(root):
    """A line per file of the checkout ROOT (its path relative to ROOT)."""
    dirs, files = ignored(root)
    out = []
    for top, subdirs, names in os.walk(root):
        subdirs[:] = sorted(d for d in subdirs if not any(fnmatch.fnmatchcase(d, p) for p in dirs))
        for name in sorted(names):
            if any(fnmatch.fnmatchcase(name, p) for p in files):
                continue
            path = os.path.join(top, name)
            try:
                out.append(stat_line(os.path.relpath(path, root), os.lstat(path)))
            except FileNotFoundError:
                out.append(f"{os.path.relpath(path, root)} gone")
    return out


def host():
    """A line per file of the host's package state."""
    paths = list(HOST_FILES)
    for d in HOST_DIRS:
        try:
            paths += [os.path.join(d, n) for n in sorted(os.listdir(d))]
        except OSError:
            paths.append(d)
    out = []
    for p in paths:
        try:
            out.append(stat_line(p, os.stat(p)))
        except OSError:
            out.append(f"{p} missing")
    return out


def environment():
    return [f"{k}={v}" for k, v in sorted(os.environ.items())
            if k.startswith(("WEFT_", "CC", "CFLAGS", "PATH")) and not k.startswith(RUN_ONLY)]


def fingerprint(root=ROOT):
    """The hash of what the checks read (the module's text)."""
    h = hashlib.sha256()
    for line in tree(root) + host() + environment():
        h.update(line.encode() + b"\n")
    return h.hexdigest()


def answer_files(answers):
    """A line per file that the answers ANSWERS (a dict of paths: a file, or
    an image folder with its .complete, initrd.img and vmlinux) stand for."""
    out = []
    for what, path in sorted(answers.items()):
        if not path:
            continue
        files = [os.path.join(path, f) for f in (".complete", "initrd.img", "vmlinux")] \
            if os.path.isdir(path) else [path]
        for f in files:
            try:
                out.append(f"{what} {stat_line(f, os.stat(f))}")
            except OSError:
                out.append(f"{what} {f} missing")
    return out


class Stamp:
    """The stamp of one kind of checks (KIND, a dict: which checks run and
    with what options) of the checkout ROOT."""

    def __init__(self, kind, root=ROOT):
        name = hashlib.sha256(json.dumps([os.path.realpath(root), kind], sort_keys=True).encode()).hexdigest()
        self.path = os.path.join(cache_root(), "up-checks", f"{name[:16]}.json")
        self.inputs = fingerprint(root)

    def hit(self):
        """The answers recorded, when nothing read or answered changed since;
        else None."""
        try:
            with open(self.path) as f:
                rec = json.load(f)
            answers = rec["answers"]
            if rec["inputs"] != self.inputs or rec["files"] != answer_files(answers):
                return None
        except (OSError, ValueError, KeyError, TypeError):
            return None
        return answers

    def save(self, answers):
        """Record ANSWERS (a dict of paths) for the fingerprint taken."""
        os.makedirs(os.path.dirname(self.path), mode=0o700, exist_ok=True)
        tmp = f"{self.path}.{os.getpid()}.tmp"
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
        with os.fdopen(fd, "w") as f:
            json.dump({"inputs": self.inputs, "answers": answers, "files": answer_files(answers)}, f, indent=1)
            f.write("\n")
        os.replace(tmp, self.path)
