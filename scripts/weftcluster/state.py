"""A cluster's settings, saved by `up` as cluster.json in its folder and
read back by every later command (only from a folder and a file that are
this user's and writable by nobody else)."""

import dataclasses
import json
import os

from .rundir import Die, trusted

STATE = "cluster.json"


@dataclasses.dataclass
class Settings:
    nodes: int              # VMs here (-n)
    mem: int = 512          # MiB per VM
    seed: int = 1           # the switch's --seed
    adapter: bool = True    # False: --no-adapter (no switch, boot-only image)
    adapters: int = 1       # weft devices per node
    accel: str = "tcg"
    qemu: str = ""
    image: str = ""         # the folder build-image.sh printed
    layer: str = ""         # --layer: the folder build-layer.sh printed ("" without)
    initrd: str = ""        # with --layer: the cluster's initrd.img (image + layer + cluster archives)
    switch: str = ""        # the weft-switch binary ("" with --switch or --no-adapter)
    devprops: str = ""      # --device-props
    swargs: str = ""        # --switch-args
    transport: str = "auto"
    listen: str = ""        # our switch's --listen
    remote: str = ""        # --switch HOST:PORT of another host
    base: int = 0           # --first-node: node id of local node 0
    net4: str = ""
    net6: str = ""
    vnet4: str = ""
    vnet_mcast: str = ""    # the multicast group of --vnet with other than 2 nodes
    trace: str = ""         # --trace: QEMU trace event patterns, comma-separated
    qemu_args: str = ""     # WEFT_QEMU_ARGS
    qemu_args_node: list = dataclasses.field(default_factory=list)  # WEFT_QEMU_ARGS_<N>
    iothread: bool = False  # each weft device in its own IOThread (up's default; --main-loop or WEFT_IOTHREAD=0: not)
    start: str = "boot"     # boot, or snapshot (restored from `snapshot`; up's default where it can)
    snapshot: str = ""      # a snapshot start: the template's folder in the cache (snapshot.py)

    def save(self, directory):
        path = os.path.join(directory, STATE)
        tmp = path + ".new"
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
        with os.fdopen(fd, "w") as f:
            json.dump(dataclasses.asdict(self), f, indent=1)
            f.write("\n")
        os.replace(tmp, path)

    @classmethod
    def load(cls, directory):
        """The settings in DIRECTORY, or None when there are none; a file
        or folder that is not trusted, or that does not parse, is an error."""
        path = os.path.join(directory, STATE)
        if not os.path.lexists(path):
            return None
        if not (trusted(directory) and trusted(path)):
            raise Die(f"refusing to read {path}: it or its folder is not yours, or others may write to it")
        try:
            with open(path, encoding="utf-8") as f:
                raw = json.load(f)
            fields = {f.name: f for f in dataclasses.fields(cls)}
            if not isinstance(raw, dict) or set(raw) - set(fields) or "nodes" not in raw:
                raise ValueError("unexpected fields")
            for k, v in raw.items():
                want = fields[k].type
                if type(v) is not want:
                    raise ValueError(f"{k} is not a {want.__name__}")
            s = cls(**raw)
            if not 1 <= s.nodes <= 64 or any(not isinstance(a, str) for a in s.qemu_args_node):
                raise ValueError("bad node count or QEMU arguments")
        except (OSError, ValueError) as e:
            raise Die(f"cannot read {path}: {e}") from None
        return s
