"""weft-cluster mpirun: Open MPI's mpirun, or MPICH's mpiexec.hydra, on
node0 of a cluster booted with the hpc layer (docs/mpi.md), its output
streamed back while it runs and its exit status passed back.

  weft-cluster mpirun -np N [--per-node K] [--impl openmpi|mpich]
                      [--transport tcp|ucx|ofi] [--ofi-provider NAME]
                      [--mca NAME VALUE]... [--timeout S] -- PROGRAM [ARGS...]

Ranks go K to a node (default: N spread evenly over the nodes), node0
first.  Without --transport the image's Open MPI parameters file chooses
(/etc/openmpi/openmpi-mca-params.conf in the layer).  tcp is ob1 with the
tcp, vader and self BTLs over weft0; ucx is pml ucx with UCX's defaults
(rc_verbs on weft_ib0); ofi is pml cm with mtl ofi and the libfabric
provider named by --ofi-provider, else by WEFT_OFI_PROVIDER, else weft.
--impl mpich runs MPICH's hydra instead, which Debian builds with UCX
only: it takes no --transport, --ofi-provider or --mca, and the program
must be an MPICH build (weft-mpi-check.mpich)."""

import os
import secrets
import shlex
import sys
import time

from .rundir import Die

TRANSPORTS = {
    "tcp": ["--mca", "pml", "ob1", "--mca", "btl", "self,vader,tcp"],
    "ucx": ["--mca", "pml", "ucx"],
    "ofi": ["--mca", "pml", "cm", "--mca", "mtl", "ofi"],
}
POLL_S = 1.0


def parse(args):
    """(options dict, program argv) of the command line ARGS."""
    if "--" not in args:
        raise Die("mpirun: no program (weft-cluster mpirun -np N [OPTIONS] -- PROGRAM [ARGS...])")
    k = args.index("--")
    head, prog = args[:k], args[k + 1:]
    if not prog:
        raise Die("mpirun: no program after --")
    o = {"np": None, "per_node": None, "impl": "openmpi", "transport": "", "provider": "", "mca": [],
         "timeout": 0.0}
    i = 0
    while i < len(head):
        a = head[i]
        need = 2 if a == "--mca" else 1
        if a not in ("-np", "--np", "-n", "--per-node", "--impl", "--transport", "--ofi-provider", "--mca",
                     "--timeout"):
            raise Die(f"mpirun: unknown option '{a}'")
        if i + need >= len(head):
            raise Die(f"mpirun: {a} needs {'NAME VALUE' if need == 2 else 'a value'}")
        v = head[i + 1]
        if a in ("-np", "--np", "-n", "--per-node"):
            if not v.isdigit() or not 1 <= int(v) <= 4096:
                raise Die(f"mpirun: {a} needs a count 1..4096, got '{v}'")
            o["np" if a != "--per-node" else "per_node"] = int(v)
        elif a == "--transport":
            if v not in TRANSPORTS:
                raise Die(f"mpirun: --transport needs tcp, ucx or ofi, got '{v}'")
            o["transport"] = v
        elif a == "--impl":
            if v not in ("openmpi", "mpich"):
                raise Die(f"mpirun: --impl needs openmpi or mpich, got '{v}'")
            o["impl"] = v
        elif a == "--ofi-provider":
            if not v or any(ch.isspace() or ch in "'\"" for ch in v):
                raise Die(f"mpirun: --ofi-provider needs a provider name, got '{v}'")
            o["provider"] = v
        elif a == "--timeout":
            try:
                o["timeout"] = float(v)
            except ValueError:
                raise Die(f"mpirun: --timeout needs seconds, got '{v}'") from None
        else:
            o["mca"] += ["--mca", v, head[i + 2]]
        i += need + 1
    if o["np"] is None:
        raise Die("mpirun: -np N is required")
    if o["provider"] and o["transport"] != "ofi":
        raise Die("mpirun: --ofi-provider needs --transport ofi")
    if o["impl"] == "mpich" and (o["transport"] or o["mca"]):
        raise Die("mpirun: --impl mpich takes no --transport, --ofi-provider or --mca (MPICH uses UCX only)")
    return o, prog


def command(c, o, prog):
    """The mpirun command line for node0 (a list of words)."""
    s = c.settings
    n = o["np"]
    k = o["per_node"] or -(-n // s.nodes)
    need = -(-n // k)
    if need > s.nodes:
        raise Die(f"mpirun: {n} ranks at {k} per node need {need} nodes; cluster '{c.name}' has {s.nodes}")
    hosts = ",".join(f"node{c.nid(i)}:{k}" for i in range(need))
    if o["impl"] == "mpich":
        # hydra starts its proxies through weft-rsh; ranks fill node0 first.
        return ["mpiexec.hydra", "-launcher", "ssh", "-launcher-exec", "weft-rsh", "-np", str(n),
                "-hosts", hosts] + prog
    argv = ["mpirun", "--allow-run-as-root", "-np", str(n), "--host", hosts, "--map-by", "slot"]
    if o["transport"]:
        argv += TRANSPORTS[o["transport"]]
    if o["transport"] == "ofi":
        provider = o["provider"] or os.environ.get("WEFT_OFI_PROVIDER", "weft")
        argv += ["--mca", "mtl_ofi_provider_include", provider]
    return argv + o["mca"] + prog


def cmd_mpirun(c, args):
    o, prog = parse(args)
    s = c.load()
    if not s.layer or "/hpc-" not in s.layer:
        raise Die(f"cluster '{c.name}' was not booted with the hpc layer (weft-cluster up --layer hpc)")
    argv = command(c, o, prog)
    job = secrets.token_hex(6)
    base = f"/tmp/weft-mpirun.{job}"
    line = " ".join(shlex.quote(w) for w in argv)
    print(f"weft-cluster: node0: {line}", file=sys.stderr, flush=True)
    # In the background on node0, so that its output can be read while it
    # runs; its exit status in .rc when it ends.
    start = (f"( {line} >{base}.out 2>&1 </dev/null; echo $? >{base}.rc.new; mv {base}.rc.new {base}.rc ) "
             f">/dev/null 2>&1 & echo $! >{base}.pid")
    rc, out = c.channel.exec(0, start, 30)
    if rc != 0:
        raise Die(f"mpirun: cannot start on node0: {out.decode('utf-8', 'replace').strip()}")
    t0 = time.monotonic()
    off = 0
    sink = sys.stdout.buffer
    try:
        while True:
            # The status first: once .rc exists the output is complete.
            rc, data = c.channel.exec(0, f"cat {base}.rc 2>/dev/null || echo -; tail -c +{off + 1} {base}.out", 60)
            head, _, rest = data.partition(b"\n")
            if rest:
                sink.write(rest)
                sink.flush()
                off += len(rest)
            status = head.strip().decode()
            if status != "-":
                c.channel.exec(0, f"rm -f {base}.out {base}.rc {base}.pid", 30)
                return int(status) if status.isdigit() else 1
            if o["timeout"] and time.monotonic() - t0 > o["timeout"]:
                print(f"weft-cluster: mpirun: timed out after {o['timeout']:.0f} s; killing it", file=sys.stderr)
                kill(c, base)
                return 124
            time.sleep(POLL_S)
    except KeyboardInterrupt:
        kill(c, base)
        raise


def kill(c, base):
    """mpirun (and hydra) end their ranks on every node when they get
    SIGTERM.  The guests' busybox has no pkill: the job's shell's children
    come from ps.  SIGKILL follows when the job has not ended in 30 s."""
    kids = f"$(ps -o pid,ppid | awk -v p=$(cat {base}.pid) '$2 == p {{print $1}}')"
    c.channel.exec(0, f"for k in {kids}; do kill -TERM $k; done; i=0; "
                      f"while [ ! -f {base}.rc ] && [ $i -lt 30 ]; do sleep 1; i=$((i + 1)); done; "
                      f"[ -f {base}.rc ] || for k in {kids}; do kill -KILL $k; done; "
                      f"rm -f {base}.out {base}.rc {base}.pid", 60)
