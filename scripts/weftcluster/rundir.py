"""The run directory of the clusters, its checks, and messages.

The run directory is $WEFT_RUN_DIR, else $XDG_RUNTIME_DIR/weft-cluster,
else /tmp/weft-cluster-$UID.  It must be this user's, not a symbolic link,
with mode 0700 (docs/cluster.md, "Run directory").
"""

import os
import stat
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


class Die(Exception):
    """A fatal error: weft-cluster prints it and exits 1."""


def log(msg):
    print(f"[weft {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def run_dir():
    if os.environ.get("WEFT_RUN_DIR"):
        return os.environ["WEFT_RUN_DIR"]
    if os.environ.get("XDG_RUNTIME_DIR"):
        return os.path.join(os.environ["XDG_RUNTIME_DIR"], "weft-cluster")
    return f"/tmp/weft-cluster-{os.getuid()}"


def private_dir(d):
    """D must be a directory of this user, not a symbolic link, with mode
    0700; it is created so if missing (mkdir with mode 0700 is atomic:
    whoever creates it first owns it).  A directory of this user that
    nobody else could write to (e.g. 0755 from an older weft-cluster) is
    tightened to 0700; anything else is refused."""
    try:
        os.mkdir(d, 0o700)
    except FileExistsError:
        pass
    except OSError as e:
        raise Die(f"cannot create the run directory {d}: {e.strerror}") from None
    st = os.lstat(d)
    if stat.S_ISLNK(st.st_mode):
        raise Die(f"refusing run directory {d}: it is a symbolic link (remove it, or set "
                  "WEFT_RUN_DIR to a folder of your own)")
    if not stat.S_ISDIR(st.st_mode):
        raise Die(f"refusing run directory {d}: it is not a directory")
    me = os.getuid()
    if st.st_uid != me:
        raise Die(f"refusing run directory {d}: it belongs to uid {st.st_uid}, not to you (uid {me}); "
                  "it may have been created to take over your clusters' sockets and files. "
                  "Remove it, or set WEFT_RUN_DIR to a folder of your own")
    mode = stat.S_IMODE(st.st_mode)
    if mode == 0o700:
        return
    if mode & 0o022:
        raise Die(f"refusing run directory {d}: mode {mode:o} lets other users write to it; "
                  "check its contents, then chmod 700 it or remove it")
    os.chmod(d, 0o700)
    log(f"run directory {d}: mode {mode:o} tightened to 700")


def trusted(path):
    """PATH (a file or a folder, not a symbolic link) is this user's and
    nobody else may write to it."""
    try:
        st = os.lstat(path)
    except OSError:
        return False
    return (not stat.S_ISLNK(st.st_mode) and st.st_uid == os.getuid()
            and not st.st_mode & 0o022)
