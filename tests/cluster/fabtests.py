"""libfabric's own test suite, fabtests (docs/fabtests.md): the programs
that scripts/build-fabtests.sh stages in the hpc layer's /opt/libfabric/bin
run between node1 (the server, bound to its weft0 address) and node0 (the
client) of the MPI cluster, over libfabric 2.1's verbs;ofi_rxm on
weft_ib0, with data verification (-v) where the program offers it.  Each
scenario passes only when both sides exit 0 and print what the program
prints on success."""

import re

from weftcluster.testing import scenario

BIN = "/opt/libfabric/bin"
PROV = "verbs;ofi_rxm"
SERVER = "10.87.0.2"  # node1's weft0 address (docs/net.md)
# A fabtests benchmark's result line: bytes iters total time MB/sec usec/xfer Mxfers/sec.
RESULT = re.compile(r"^\s*\S+\s+\d+\s+\S+\s+[\d.]+s\s+[\d.]+\s+[\d.]+\s+[\d.]+\s*$")


def fabtest(t, prog, args, server_ok, client_ok, what, prov=PROV, env=""):
    """PROG ARGS on node1 (server) and node0 (client) over libfabric
    provider PROV, with ENV (VAR=VALUE words) on both: both exit 0, and the
    server's and client's output match SERVER_OK and CLIENT_OK (regular
    expressions); WHAT says what held.  The client's last figures line of
    a benchmark, or None."""
    t.need((0, 1), f"{BIN}/{prog}")
    srv = t.bg(1, f"{env} timeout 150 {BIN}/{prog} -p '{prov}' -s {SERVER} {args} 2>&1", timeout=180)
    # The server must listen before the client's first message.
    cli = t.gx(0, f"sleep 3; {env} timeout 140 {BIN}/{prog} -p '{prov}' {args} {SERVER} 2>&1", timeout=180)
    s = srv.wait()
    # The weft provider refuses nothing its own peer sends (docs/libfabric.md "Wire messages").
    refused = [x for x in cli.lines() + s.lines() if x.startswith("weft: refused")]
    good = s.ok and cli.ok and re.search(server_ok, s.out, re.M) and re.search(client_ok, cli.out, re.M) \
        and not refused
    if not good:
        t.show(cli.out, "client | ", 12)
        t.show(s.out, "server | ", 12)
        t.fail(f"{prog} {args}: client exit {cli.rc}, server exit {s.rc}: "
               f"{(refused or [next((x for x in reversed(cli.lines() + s.lines()) if x.strip()), 'no output')])[0]}")
    else:
        figures = [x for x in cli.lines() if RESULT.match(x)]
        if figures:
            t.say(f"{env + ' ' if env else ''}{prog} {args} (TCG): {' '.join(figures[-1].split())}")
        t.checked(f"{prog} {args} over {prov} on weft_ib0, node0 -> node1: {what}")
    for i in range(2):
        t.require(t.no_oops(i), None)
    return figures[-1] if good and figures else None


def benchmark(t, prog, args, what):
    """A fabtests benchmark: both sides print their result line."""
    line = r"^\s*\S+\s+\d+\s+\S+\s+[\d.]+s\s"
    fabtest(t, prog, args, line, line, what)


# The benchmarks: scenario, program, its runs (arguments, what held) and
# the scenario's description.
BENCHMARKS = (
    ("fabtests-tagged-pingpong", "fi_rdm_tagged_pingpong",
     (("-v -S 4096 -I 100", "100 tagged round trips of 4 KiB, data verified"),),
     "between node0 and node1, 4 KiB (ofi_rxm's eager protocol), data verified"),
    ("fabtests-tagged-bw", "fi_rdm_tagged_bw",
     (("-v -S 262144 -I 5", "5 windows of 256 KiB tagged sends, data verified"),),
     "windows of 256 KiB tagged sends (ofi_rxm's rendezvous: RDMA reads), data verified"),
    ("fabtests-rma-bw", "fi_rma_bw",
     (("-v -o write -S 65536 -I 10", "10 windows of 64 KiB RMA writes, data verified"),
      ("-v -o read -S 65536 -I 10", "10 windows of 64 KiB RMA reads, data verified")),
     "RMA write and read of 64 KiB, data verified (delivery complete)"),
    ("fabtests-cntr-pingpong", "fi_rdm_cntr_pingpong",
     (("-v -S 1024 -I 50", "50 round trips of 1 KiB counted by fi_cntr, data verified"),),
     "completions counted by fi_cntr, data verified"),
)


def declare(name, prog, runs, description):
    @scenario(name, "CM", f"fabtests: {prog} -v over verbs;ofi_rxm on weft_ib0, {description}")
    def run(t):
        for args, what in runs:
            benchmark(t, prog, args, what)


for b in BENCHMARKS:
    declare(*b)


@scenario("fabtests-rdm", "CM", "fabtests: fi_rdm over verbs;ofi_rxm on weft_ib0: the client's greeting reaches "
          "the server and is checked byte for byte")
def rdm(t):
    fabtest(t, "fi_rdm", "", r"^Data check OK$", r"^Send completion received$",
            "the greeting arrived and the server's data check passed")


@scenario("fabtests-unexpected-msg", "CM", "fabtests: fi_unexpected_msg -v over verbs;ofi_rxm on weft_ib0: tagged "
          "messages sent before their receives are posted are matched and verified")
def unexpected_msg(t):
    done = r"GOOD all done$"
    fabtest(t, "fi_unexpected_msg", "-v -I 20", done, done,
            "20 rounds of unexpected tagged messages, each matched late and verified")


@scenario("fabtests-recv-cancel", "CM", "fabtests: fi_recv_cancel -V over verbs;ofi_rxm on weft_ib0: a cancelled "
          "tagged receive completes with FI_ECANCELED and FI_RECV, only once; the other receive and the reposted one "
          "take their messages (its buffers need 2 GiB guests)")
def recv_cancel(t):
    fabtest(t, "fi_recv_cancel", "-V", r"^GOOD: Completed Recv Cancel Test$", r"^CANCEL msg posted to server$",
            "fi_cancel of a posted tagged receive gave one FI_ECANCELED error entry with FI_RECV; the uncancelled "
            "receive and the reposted cancelled one completed with their messages")


@scenario("fabtests-tagged-peek", "CM", "fabtests: fi_rdm_tagged_peek over verbs;ofi_rxm on weft_ib0: FI_PEEK, "
          "FI_CLAIM and FI_DISCARD on tagged messages, claimed data checked")
def tagged_peek(t):
    fabtest(t, "fi_rdm_tagged_peek", "", r"^Waiting for messages to complete$", r"^Receive msg 7$",
            "peek, peek with claim, claim and discard of 10 tagged messages, data checked")
