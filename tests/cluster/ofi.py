"""Weft's libfabric provider, `weft` (docs/libfabric.md): libweft-fi.so from
the hpc layer, loaded by Debian's libfabric1 1.17 and by the staged
libfabric 2.1 that fabtests run with.  weft-fi-check runs the provider's
argument checks and a loopback on one node; fabtests' programs run with
`-p weft` between node1 (the server, bound to its weft0 address) and node0
(the client), with data verification (-v) where the program offers it.
Each scenario passes only when every side exits 0 and prints what it
prints on success."""

import re

from weftcluster.testing import scenario

BIN = "/opt/libfabric/bin"
PROV = "weft"
SERVER = "10.87.0.2"  # node1's weft0 address (docs/net.md)
RESULT = re.compile(r"^\s*\S+\s+\d+\s+\S+\s+[\d.]+s\s+[\d.]+\s+[\d.]+\s+[\d.]+\s*$")


@scenario("ofi-check", "CM", "weft libfabric provider: fi_info lists it under libfabric 1.17 and 2.1; "
          "weft-fi-check's bad-argument checks and loopback tagged messages on node0")
def check(t):
    t.need((0,), "/usr/bin/weft-fi-check", f"{BIN}/fi_info")
    for cmd, label in (("fi_info -p weft", "Debian's libfabric1 1.17"),
                       (f"{BIN}/fi_info -p weft", "the staged libfabric 2.1")):
        r = t.gx(0, f"{cmd} 2>&1")
        if r.ok and re.search(r"^provider: weft$", r.out, re.M) and "FI_EP_RDM" in r.out:
            t.checked(f"{label}: `{cmd}` lists provider weft, FI_EP_RDM")
        else:
            t.show(r.out, "fi_info | ", 12)
            t.fail(f"{label}: `{cmd}` exit {r.rc}, no weft provider listed")
    r = t.gx(0, "weft-fi-check 2>&1", timeout=240)
    oks = [x for x in r.lines() if x.startswith("ok ")]
    bad = [x for x in r.lines() if x.startswith("not ok")]
    if r.ok and oks and not bad:
        t.checked(f"weft-fi-check: {len(oks)} checks held (bad arguments answered with the manual's "
                  "errors, loopback eager/unexpected/rendezvous byte-exact, fi_cancel)")
    else:
        t.show(r.out, "check | ", 40)
        t.fail(f"weft-fi-check exit {r.rc}: {len(bad)} failed: {bad[:3]}")
    t.require(t.no_oops(0), None)


def fabtest(t, prog, args, server_ok, client_ok, what):
    """PROG -p weft ARGS on node1 (server) and node0 (client): both exit 0
    and print SERVER_OK and CLIENT_OK (regular expressions)."""
    t.need((0, 1), f"{BIN}/{prog}")
    srv = t.bg(1, f"timeout 150 {BIN}/{prog} -p {PROV} -s {SERVER} {args} 2>&1", timeout=180)
    cli = t.gx(0, f"sleep 3; timeout 140 {BIN}/{prog} -p {PROV} {args} {SERVER} 2>&1", timeout=180)
    s = srv.wait()
    good = s.ok and cli.ok and re.search(server_ok, s.out, re.M) and re.search(client_ok, cli.out, re.M)
    if not good:
        t.show(cli.out, "client | ", 12)
        t.show(s.out, "server | ", 12)
        t.fail(f"{prog} -p weft {args}: client exit {cli.rc}, server exit {s.rc}: "
               f"{next((x for x in reversed(cli.lines() + s.lines()) if x.strip()), 'no output')}")
    else:
        figures = [x for x in cli.lines() if RESULT.match(x)]
        if figures:
            t.say(f"{prog} -p weft {args} (TCG): {' '.join(figures[-1].split())}")
        t.checked(f"{prog} -p weft {args}, node0 -> node1 on weft_ib0: {what}")
    for i in range(2):
        t.require(t.no_oops(i), None)


LINE = r"^\s*\S+\s+\d+\s+\S+\s+[\d.]+s\s"

# scenario, program, runs (arguments, what held), server and client success
# patterns, description.
RUNS = (
    ("ofi-tagged-pingpong", "fi_rdm_tagged_pingpong",
     (("-v -S 4096 -I 100", "100 round trips of 4 KiB matched by the adapter, data verified"),),
     LINE, LINE, "4 KiB eager tagged round trips, data verified"),
    ("ofi-tagged-bw", "fi_rdm_tagged_bw",
     (("-v -S 262144 -I 5", "5 windows of 256 KiB tagged sends (rendezvous, RDMA READ), data verified"),),
     LINE, LINE, "256 KiB rendezvous tagged sends, data verified"),
    ("ofi-rdm", "fi_rdm", (("", "the greeting arrived and the server's data check passed"),),
     r"^Data check OK$", r"^Send completion received$", "FI_MSG greeting checked byte for byte"),
    ("ofi-unexpected-msg", "fi_unexpected_msg",
     (("-v -I 20", "20 rounds of unexpected tagged messages, each matched late and verified"),),
     r"GOOD all done$", r"GOOD all done$", "unexpected tagged messages matched late, verified"),
    ("ofi-tagged-peek", "fi_rdm_tagged_peek",
     (("", "peek, peek with claim, claim and discard of 10 tagged messages, data checked"),),
     r"^Waiting for messages to complete$", r"^Receive msg 7$", "FI_PEEK, FI_CLAIM, FI_DISCARD"),
)


def declare(name, prog, runs, server_ok, client_ok, description):
    @scenario(name, "CM", f"weft libfabric provider: fabtests {prog} -p weft, {description}")
    def run(t):
        for args, what in runs:
            fabtest(t, prog, args, server_ok, client_ok, what)


for r in RUNS:
    declare(*r)
