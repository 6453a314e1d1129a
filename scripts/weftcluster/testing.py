"""The cluster scenarios' framework (tests/cluster/run.py runs them).

A scenario is a plain function of one argument, a Scenario `t`, declared
with the @scenario decorator: its name, the cluster it runs on (a key of
the runner's cluster table) and what it checks.  It runs commands in the
guests (t.gx, t.bg), and reports checks: t.fail(REASON) records a failed
check (a "not ok" point) and goes on; t.require(COND, REASON) fails and
stops the scenario when COND is false; t.checked(WHAT) is the "ok" point
of a check that held (nothing when a failure came since the previous
check).  A scenario fails when any check failed, when it raised, or when it
checked nothing.  docs/testing.md has an example.
"""

import json
import os
import re
import shlex
import subprocess
import sys
import threading
import time
import traceback

from .chan import alive
from .cluster import Cluster
from .rundir import ROOT, run_dir

WC = os.path.join(ROOT, "scripts", "weft-cluster")
GX_TIMEOUT = 300

REGISTRY = []


def scenario(name, cluster, description):
    """Declare a scenario: NAME (its TAP name), the CLUSTER key it runs
    on, and a one-line DESCRIPTION (run.py --list)."""
    def register(fn):
        REGISTRY.append((name, cluster, description, fn))
        return fn
    return register


class Stop(Exception):
    """Ends a scenario after a failed check (already recorded)."""


class Result:
    """A guest command's exit status and output (trailing newlines cut,
    as $(...) in a shell)."""

    def __init__(self, rc, out):
        self.rc = rc
        self.out = out.rstrip("\n")

    @property
    def ok(self):
        return self.rc == 0

    def lines(self):
        return self.out.splitlines()

    def json(self):
        """The last line of the output that is a JSON object ({} if none)."""
        for line in reversed(self.lines()):
            if line.startswith("{"):
                try:
                    return json.loads(line)
                except ValueError:
                    return {}
        return {}

    def last_json_line(self):
        return next((x for x in reversed(self.lines()) if x.startswith("{")), "")

    def tail(self, n):
        return "\n".join(self.lines()[-n:])


class Job:
    """FN (which returns a Result) run in a background thread: a guest
    command (Scenario.bg) or a host one (Scenario.bg_host)."""

    def __init__(self, fn):
        self.result = None
        self.thread = threading.Thread(target=self._run, args=(fn,), daemon=True)
        self.thread.start()

    def _run(self, fn):
        self.result = fn()

    def done(self):
        return not self.thread.is_alive()

    def wait(self):
        self.thread.join()
        return self.result or Result(255, "the job ended without a result")


def first_int(text):
    m = re.search(r"-?\d+", text or "")
    return int(m.group()) if m else None


class Scenario:
    """One scenario's run on one cluster: its checks, and its ways to the
    guests, the switch and weft-cluster."""

    def __init__(self, cluster, emit, dmesg_seen, tmp):
        self.cluster = cluster
        self.c = cluster.name
        self.dir = cluster.dir
        self.tmp = tmp
        self.emit = emit              # writes one line of the subtest
        self.dmesg_seen = dmesg_seen  # (cluster, node) -> kernel log lines seen
        self.why = []
        self.npt = 0
        self.held = True

    # ---- checks --------------------------------------------------------
    def fail(self, reason):
        """A failed check: a "not ok" point; the scenario fails.  False."""
        reason = " | ".join(str(reason).splitlines())
        self.npt += 1
        self.held = False
        self.why.append(reason)
        self.emit(f"not ok {self.npt} - {reason}")
        return False

    def checked(self, what):
        """The "ok" point of a check that held (none after a failure)."""
        if self.held:
            self.npt += 1
            self.emit(f"ok {self.npt} - {what}")
        self.held = True

    def require(self, cond, reason):
        """Fail with REASON and stop the scenario unless COND (REASON None:
        the failure is already recorded, as by no_oops)."""
        if not cond:
            if reason is not None:
                self.fail(reason)
            raise Stop()

    def stop(self):
        raise Stop()

    def say(self, text):
        """Diagnostics (a "#" line of the subtest each)."""
        for line in str(text).splitlines() or [""]:
            self.emit(f"#   {line}")

    def show(self, text, prefix, n=None):
        """The last N lines of TEXT as diagnostics, each after "| PREFIX"."""
        lines = str(text).splitlines()
        for line in lines[-n:] if n else lines:
            self.emit(f"#   | {prefix}{line}")

    # ---- the guests ------------------------------------------------------
    def gx(self, node, cmd, timeout=GX_TIMEOUT):
        """Run CMD with sh in guest NODE: a Result."""
        return Result(*self.cluster.node(node).exec(cmd, timeout))

    def bg(self, node, cmd, timeout=GX_TIMEOUT):
        """Run CMD in guest NODE in the background: a Job."""
        return Job(lambda: self.gx(node, cmd, timeout))

    def bg_host(self, fn):
        """FN (returning a Result) in the background: a Job."""
        return Job(fn)

    def need(self, nodes, *programs):
        """The programs must be in the image of the guest NODES (a node or
        several), else fail and stop."""
        for node in [nodes] if isinstance(nodes, int) else nodes:
            missing = [p for p in programs
                       if not self.gx(node, f"command -v {p} >/dev/null || [ -x /usr/lib/weft/tests/{p} ]").ok]
            self.require(not missing, f"missing in the guest image: {' '.join(missing)} (tools come from "
                         "scripts/build-guest-tools.sh, guest tests from scripts/build-guest-tests.sh; "
                         "see docs/cluster.md)")

    def counter(self, node, name, adapter=0):
        """An adapter counter from debugfs (else fail and stop)."""
        r = self.gx(node, f"awk '$1 == \"{name}\" {{print $2}}' /sys/kernel/debug/weft/weft{adapter}/counters")
        self.require(r.ok and r.out.isdigit(), f"node{node}: cannot read counter {name} from debugfs ({r.out})")
        return int(r.out)

    def server(self, node, job, cmd):
        """Start a tool's server in the background and wait until it has
        opened its window (a new window of job JOB): (window, Job)."""
        ls = ("awk '$1 == \"window\" && $3 == \"job\" && $4 == " + str(job) +
              " {sub(\":\", \"\", $2); print $2}' /sys/kernel/debug/weft/weft0/state")
        old = set(self.gx(node, ls).out.split())
        j = self.bg(node, cmd)
        for i in range(240):
            r = self.gx(node, ls)
            if r.ok:
                new = [w for w in r.out.split() if w not in old]
                if new:
                    return new[0], j
            if j.done():
                r = j.wait()
                self.fail(f"node{node}: {cmd.split()[0]} ended (status {r.rc}) before opening its window: {r.out}")
                raise Stop()
            if i < 239:
                time.sleep(0.5)
        self.fail(f"node{node}: {cmd.split()[0]} did not open a window of job {job}")
        raise Stop()

    def no_oops(self, node):
        """The node's kernel log has no BUG, oops, warning or kernel
        protection fault since the last no_oops of that node (a reboot, or
        a log that wrapped, starts over).  A user program's fault ("traps:
        prog[pid] ... in lib") is that program's failure, which its own
        check reports, not the kernel's.  False (after a failed check) if
        it has."""
        key = (self.c, node)
        seen = self.dmesg_seen.get(key, 0)
        r = self.gx(node, f"dmesg >/tmp/no_oops.log; n=$(wc -l </tmp/no_oops.log); s={seen}; "
                          "[ $n -ge $s ] || s=0; echo \"lines $n\"; "
                          "tail -n +$((s + 1)) /tmp/no_oops.log | grep -E 'BUG|Oops|WARNING|general protection|Call Trace' | "
                          "grep -vE 'traps: [^ ]+\\[[0-9]+\\] ' | head -5")
        n = next((x[6:] for x in r.lines() if x.startswith("lines ")), "")
        if not (r.ok and n.isdigit()):
            return self.fail(f"node{node}: cannot read the kernel log: {r.out}")
        self.dmesg_seen[key] = int(n)
        bad = "\n".join(x for x in r.lines() if not x.startswith("lines "))
        return self.fail(f"node{node}: kernel log shows: {bad}") if bad else True

    # ---- the switch and weft-cluster --------------------------------------
    def faults(self, *args):
        """weft-switch ctl ARGS on the cluster's switch: a Result."""
        p = self.cluster.ctl(*[str(a) for a in args], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        return Result(p.returncode, p.stdout)

    def faults_json(self, *args):
        """weft-switch ctl --json ARGS: the object, or None."""
        r = self.faults("--json", *args)
        try:
            return json.loads(r.out) if r.ok else None
        except ValueError:
            return None

    def wc(self, *args):
        """scripts/weft-cluster --name CLUSTER ARGS: a Result (stdout and
        stderr together)."""
        p = subprocess.run([WC, "--name", self.c, *[str(a) for a in args]], stdin=subprocess.DEVNULL,
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        return Result(p.returncode, p.stdout)

    def switch_pid(self):
        """The switch pid that `weft-cluster status` reports (None if none)."""
        m = re.search(r"^weft-switch: pid (\d+),", self.wc("status").out, re.M)
        return int(m.group(1)) if m else None

    def file(self, name):
        """A file of the cluster's folder, as text ("" if unreadable)."""
        try:
            with open(os.path.join(self.dir, name), encoding="utf-8", errors="replace") as f:
                return f.read()
        except OSError:
            return ""


class ClusterSpec:
    """One line of the runner's cluster table."""

    def __init__(self, prefix, nodes, adapters=1, switch_args="", props="", transport="auto", fixed=False, trace="",
                 layer="", mem=0, start="", main_loop=False):
        self.prefix, self.nodes, self.adapters = prefix, nodes, adapters
        self.switch_args, self.props = switch_args, props
        self.transport, self.fixed = transport, fixed
        self.trace = trace            # QEMU trace event patterns kept in nodeN.trace ("": none)
        self.layer = layer            # an image layer (up --layer; "": none)
        self.mem = mem                # MiB per VM (0: weft-cluster's default)
        self.start = start            # up --start: boot, snapshot (restored from a template), "": the default
        self.main_loop = main_loop    # up --main-loop: the devices in QEMU's main loop, not in IOThreads

    def up_args(self):
        """`weft-cluster up` options (WEFT_TRANSPORT, when set, is every
        cluster's transport but a fixed one's; WEFT_START, when set, is
        the --start of every cluster that names none)."""
        t = self.transport if self.fixed else os.environ.get("WEFT_TRANSPORT") or self.transport
        start = self.start or os.environ.get("WEFT_START", "")
        return ["up", "-n", str(self.nodes), "--adapters", str(self.adapters), "--switch-args", self.switch_args,
                "--device-props", self.props, "--transport", t] + (["--trace", self.trace] if self.trace else []) + \
            (["--layer", self.layer] if self.layer else []) + (["--mem", str(self.mem)] if self.mem else []) + \
            (["--start", start] if start else []) + (["--main-loop"] if self.main_loop else [])


class Runner:
    """Runs scenarios as TAP: the plan, then per scenario its checks as an
    indented TAP 14 subtest and its point (docs/testing.md)."""

    def __init__(self, table, tmp):
        self.table = table
        self.tmp = tmp
        self.names = {k: f"{spec.prefix}-{os.getpid()}" for k, spec in table.items()}
        self.up_error = {}      # cluster key -> why it is not usable ("" when up)
        self.dmesg_seen = {}
        self.passed = self.failed = 0
        self.summary = []

    def out(self, line):
        print(line, flush=True)

    def wc(self, key, *args):
        return subprocess.run([WC, "--name", self.names[key], *args], stdin=subprocess.DEVNULL,
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)

    def cluster_up(self, key):
        if key in self.up_error:
            return
        spec = self.table[key]
        self.out(f"# starting cluster {self.names[key]} ({spec.nodes} nodes)")
        # Known before `up` runs, so that cleanup() takes down what an
        # interrupted `up` had started.
        self.up_error[key] = f"cluster {self.names[key]} interrupted while starting"
        p = self.wc(key, *spec.up_args())
        lines = p.stdout.splitlines()
        if p.returncode == 0:
            for line in lines:
                if re.search(r"ready after|NODE|node[0-9] |up:|snapshot:|start:", line):
                    self.out(f"# | {line}")
            self.up_error[key] = ""
        else:
            for line in lines[-40:]:
                self.out(f"# | {line}")
            err = [x for x in lines if "error:" in x]
            self.up_error[key] = f"cluster {self.names[key]} did not come up: {err[-1] if err else ''}"

    def down(self, key, why):
        self.wc(key, "down")
        self.up_error[key] = why

    def console_tails(self, t):
        for i in range(self.table_nodes(t)):
            t.emit(f"#   ---- {t.c} node{i} console (last 30 lines) ----")
            t.show(t.wc("console", i, "-n", 30).out, "")
            t.emit(f"#   ---- {t.c} node{i} kernel log (last 15 lines) ----")
            t.show(t.wc("exec", "--timeout", 20, i, "--", "dmesg | tail -n 15").out, "")

    def table_nodes(self, t):
        return t.cluster.settings.nodes if t.cluster.settings else 0

    def run(self, k, name, key, desc, fn):
        self.out(f"# Subtest: {name}")
        t0 = time.monotonic()
        cl = Cluster(self.names[key], run_dir())
        t = Scenario(cl, lambda line: self.out("    " + line), self.dmesg_seen, self.tmp)
        t.emit(f"# {desc}")
        if self.up_error.get(key):
            t.fail(self.up_error[key])
        else:
            try:
                cl.load()
                fn(t)
            except Stop:
                pass
            except Exception:  # a scenario's bug is its failure, not the run's end
                t.show(traceback.format_exc(), "")
                t.fail(f"the scenario raised {sys.exc_info()[1]!r}")
            if not t.npt:
                t.fail("the scenario checked nothing")
            if t.why:
                self.console_tails(t)
        self.out(f"    1..{t.npt}")
        if not t.why:
            self.out(f"ok {k} - {name} ({time.monotonic() - t0:.0f} s)")
            self.passed += 1
            self.summary.append(f"PASS {name}")
        else:
            more = f" (and {len(t.why) - 1} more)" if len(t.why) > 1 else ""
            self.out(f"not ok {k} - {name}: {t.why[0]}{more}")
            self.failed += 1
            self.summary.append(f"FAIL {name}")

    def cleanup(self):
        """Take the clusters down; their logs are kept only when something
        failed."""
        for key, name in self.names.items():
            if key in self.up_error:
                self.wc(key, "down")
            d = os.path.join(run_dir(), name)
            if self.failed == 0:
                subprocess.run(["rm", "-rf", "--", d])
            elif os.path.isdir(d):
                self.out(f"# logs of cluster {name}: {d}")


def q(text):
    """TEXT quoted for the guest's sh."""
    return shlex.quote(str(text))


__all__ = ["scenario", "Scenario", "Stop", "Result", "ClusterSpec", "Runner", "REGISTRY", "first_int", "alive", "q"]
