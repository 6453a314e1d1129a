"""MPI on Weft (docs/mpi.md): the 4-node cluster with the hpc image layer
(Debian's Open MPI, MPICH, UCX, libfabric, dropbear and tests/mpi).  The
MPI correctness program runs through `weft-cluster mpirun`, 8 ranks, 2
per node, over each of Open MPI's transports and under MPICH; UCX's own
ucx_perftest runs between two of the nodes with UCX's default settings."""

import re

from weftcluster.testing import scenario

CHECK = "weft-mpi-check"
# The program's checks (tests/mpi/weft-mpi-check.c), each an "ok NAME:" line.
CHECKS = ("layout", "any-source-any-tag", "non-overtaking", "probe", "cancel", "sizes", "sizes-intra-node",
          "unexpected-flood", "unexpected-flood-any-source", "bcast", "allreduce", "alltoall")


def perftest(t, test):
    """ucx_perftest TEST between node1 (server) and node0, UCX's defaults:
    the client's result line (the transport UCX chose is checked)."""
    srv = t.bg(1, "timeout 100 ucx_perftest -p 13337", timeout=130)
    r = t.gx(0, f"sleep 2; UCX_LOG_LEVEL=info timeout 90 ucx_perftest -p 13337 10.87.0.2 -t {test} -n 1000",
             timeout=130)
    s = srv.wait()
    lane = re.search(r"ep_cfg\[\d+\]: tag\(([^)]*)\)", r.out)
    final = [x for x in r.lines() if re.match(r"^Final:", x.strip())]
    if not (r.ok and s.ok and final):
        t.show(r.out, "client | ", 25)
        t.show(s.out, "server | ", 10)
        errs = [x for x in r.lines() + s.lines() if "completion with error" in x]
        errs = errs or [x for x in r.lines() if "error" in x.lower()] or [r.tail(1)]
        return t.fail(f"ucx_perftest -t {test}: client exit {r.rc}, server exit {s.rc}: {errs[0].strip()}")
    if not lane or not lane.group(1).startswith("rc_verbs/weft_ib0"):
        return t.fail(f"ucx_perftest -t {test}: UCX chose {lane.group(1) if lane else 'no transport'}, "
                      "not rc_verbs on weft_ib0")
    t.checked(f"ucx_perftest -t {test} over {lane.group(1)}, 1000 iterations: {' '.join(final[0].split())}")
    return True


@scenario("ucx-perftest", "CM", "UCX: Debian's ucx_perftest with UCX's default settings between node0 and node1, "
          "tag_lat and tag_bw, over rc_verbs on weft_ib0")
def ucx_perftest(t):
    if perftest(t, "tag_lat"):
        perftest(t, "tag_bw")
    for i in range(2):
        t.require(t.no_oops(i), None)


def verbs_packets(t):
    """Verbs packets sent by each of the 4 nodes' adapters so far."""
    return [t.counter(i, "V_TX_PKTS") for i in range(4)]


def program_checks(t, r, label, names):
    """One point for each of NAMES from an MPI program's output R, where
    rank 0 printed "ok NAME: DETAIL" or "FAIL NAME: ..." (tests/mpi)."""
    seen = {}
    for line in r.lines():
        m = re.match(r"^(ok|FAIL) ([a-z-]+): (.*)$", line)
        if m:
            seen[m.group(2)] = (m.group(1), m.group(3))
    for name in names:
        verdict, detail = seen.get(name, ("missing", ""))
        if verdict == "ok":
            t.checked(f"{label}: {name}: {detail}")
        else:
            t.fail(f"{label}: {name}: {verdict} {detail}")


def mpi_check(t, label, opts, prog=CHECK, rdma=False):
    """weft-mpi-check (PROG, an MPICH build for --impl mpich) through
    weft-cluster mpirun with OPTS, 8 ranks on 4 nodes: one check per line
    of the program, and its verdict.  With RDMA, the data must have gone
    through Weft's verbs (the adapters' V_TX_PKTS counters)."""
    before = verbs_packets(t)
    r = t.wc("mpirun", "-np", 8, "--per-node", 2, *opts, "--timeout", 900, "--",
             prog, "--per-node", 2, "--flood", 1000)
    program_checks(t, r, label, CHECKS)
    if not r.ok or not re.search(r"^weft-mpi-check: PASS: ", r.out, re.M):
        t.show(r.out, f"{label} | ", 40)
        t.fail(f"{label}: weft-cluster mpirun exited {r.rc}: "
               f"{next((x for x in reversed(r.lines()) if x.strip()), '')}")
    else:
        t.checked(f"{label}: {prog} passed, exit 0 through weft-cluster mpirun")
    sent = [b - a for a, b in zip(before, verbs_packets(t))]
    if rdma:
        # 64 MiB alone is 16384 packets of 4 KiB (the verbs MTU, hw-spec 16.9).
        t.require(min(sent[0], sent[len(sent) // 2]) >= 16384,
                  f"{label}: the adapters sent only {sent} verbs packets: the data did not go over weft_ib0")
        t.checked(f"{label}: the data went over Weft's verbs: verbs packets sent per node {sent}")
    for i in range(4):
        t.require(t.no_oops(i), None)


@scenario("mpi-tcp", "CM", "MPI: weft-mpi-check through weft-cluster mpirun, 8 ranks 2 per node over Open MPI's ob1 "
          "and tcp on weft0: ANY_SOURCE/ANY_TAG, non-overtaking, probes, cancel, 0 B..64 MiB byte-exact between and "
          "within nodes, unexpected floods, collectives")
def mpi_tcp(t):
    mpi_check(t, "tcp", ("--transport", "tcp"))


@scenario("mpi-ucx", "CM", "MPI: the mpi-tcp checks over Open MPI's pml ucx with UCX's defaults; the adapters' verbs "
          "packet counters show the data went over rc_verbs on weft_ib0")
def mpi_ucx(t):
    mpi_check(t, "ucx", ("--transport", "ucx"), rdma=True)


@scenario("mpi-ofi-rxm", "CM", "MPI: the mpi-tcp checks over Open MPI's mtl ofi with libfabric 1.17's verbs;ofi_rxm "
          "on weft_ib0 (with the layer's SAR limit, docs/fabtests.md); the adapters' verbs packet counters show the "
          "data went over weft_ib0")
def mpi_ofi_rxm(t):
    mpi_check(t, "verbs;ofi_rxm", ("--transport", "ofi", "--ofi-provider", "verbs;ofi_rxm"), rdma=True)


@scenario("mpich-ucx", "CM", "MPI: the mpi-tcp checks built against MPICH 4.0.2 (weft-mpi-check.mpich), run by "
          "hydra through weft-cluster mpirun --impl mpich, over UCX with its defaults; the adapters' verbs packet "
          "counters show the data went over weft_ib0")
def mpich_ucx(t):
    mpi_check(t, "mpich", ("--impl", "mpich"), prog=CHECK + ".mpich", rdma=True)
