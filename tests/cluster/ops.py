"""libweft's further operations between real guests (issue 14).  Every
part runs weft-ops (docs/tools.md): its roles check their side byte by
byte and print one JSON line; a part whose role failed fails the scenario,
the other parts still run."""

import json

from weftcluster.testing import Stop, scenario


def jget(r, path):
    """A field (dotted PATH) of R's last JSON line; booleans as true/false,
    objects as JSON, as the shell scenarios compared them."""
    v = r.json()
    for k in path.split("."):
        v = v.get(k) if isinstance(v, dict) else None
    return json.dumps(v) if isinstance(v, (dict, list, bool)) or v is None else str(v)


def role_ok(t, r, what):
    """Exit 0 and a "pass" verdict, else a failed check."""
    if r.ok and jget(r, "result") == "pass":
        return True
    rest = [x for x in r.lines() if not x.startswith("{")][-3:]
    return t.fail(f"{what}: exit {r.rc}, {' '.join(rest)} {r.last_json_line()}")


def ops_server(t, node, job, args):
    """A weft-ops role that waits for its peers, in the background:
    (window, Job)."""
    return t.server(node, job, f"weft-ops {args} --job {job} --timeout 120000 --json")


def say_json(t, what, r):
    t.say(f"{what}: {r.last_json_line()}")


# Third-party transfer: node1 (manager B) makes node2 (data source C)
# write into node0 (data target A).
def third_party(t):
    job = 4401
    wa, ja = ops_server(t, 0, job, "third-party --target")
    wc, jc = ops_server(t, 2, job, "third-party --source")
    m = t.gx(1, f"weft-ops third-party --manager --peer 0 --peer-window {wa} --source-node 2 --source-window {wc} "
                f"--job {job} --timeout 120000 --json")
    ok = role_ok(t, m, "third-party manager (node1)")
    a = ja.wait()
    ok &= role_ok(t, a, "third-party data target (node0)")
    c = jc.wait()
    ok &= role_ok(t, c, "third-party data source (node2)")
    t.require(ok, None)
    t.require(jget(a, "completions") == "1" and jget(a, "verified") == "true",
              f"third-party: node0 has {jget(a, 'completions')} TARGET completions, data verified {jget(a, 'verified')}")
    tid = jget(a, "tid")
    t.require(jget(m, "status") == "OK" and jget(m, "tid") == tid,
              f"third-party: the manager's completion (status {jget(m, 'status')}, tid {jget(m, 'tid')}) is not of "
              f"node0's transfer (tid {tid})")
    t.require(jget(c, "entries") == "0", f"third-party: the data source got {jget(c, 'entries')} entries")
    t.checked(f"third-party: node1 made node2 write {jget(a, 'bytes')} B into node0 (tid {tid}): node0 got the "
              "TARGET completion and byte-exact data, node1 the SOURCE completion, node2 nothing")


def targets(t, job, args, nodes):
    """Start the targets on NODES: their common window and their jobs."""
    tw, jobs = None, {}
    for n in nodes:
        w, jobs[n] = ops_server(t, n, job, args)
        t.require(tw is None or tw == w, f"the targets' windows differ (node{n} has {w}, another {tw}): a broadcast "
                  "needs one window id")
        tw = w
    return tw, jobs


def source(t, what, args, jobs, names):
    """node0's source role of WHAT (ARGS), then the targets' JOBS; NAMES(n)
    gives (the operation, node n's label, its role).  (all passed, the
    source's Result, node -> target's Result)."""
    s = t.gx(0, f"weft-ops {what} --source {args} --ack-timeout 5000 --timeout 120000 --json")
    say_json(t, f"{what} source", s)
    ok = role_ok(t, s, f"{names(0)[0]} source (node0)")
    out = {}
    for n in sorted(jobs):
        out[n] = jobs[n].wait()
        say_json(t, names(n)[1], out[n])
        ok &= role_ok(t, out[n], names(n)[2])
    return ok, s, out


# A broadcast write from node0 to nodes 1-3; a switch drop rule loses
# node3's first acknowledgement, so node0 re-sends to node3 alone.
def bcast(t):
    job = 4402
    tw, jobs = targets(t, job, "bcast --target", (1, 2, 3))
    r = t.faults("drop", "clear")
    t.require(r.ok, f"switch: drop clear: {r.out}")
    r = t.faults("drop", "add", "src=3", f"src-window={tw}", "dst=0", "type=fifo", "count=1")
    t.require(r.ok, f"switch: drop add: {r.out}")
    t.say(f"switch: {r.out}")
    ok, s, out = source(t, "bcast", f"--targets 1,2,3 --peer-window {tw} --job {job}", jobs,
                        lambda n: ("broadcast", f"bcast target node{n}", f"broadcast target (node{n})"))
    rule = t.faults("drop", "list").out
    t.faults("drop", "clear")
    t.require(ok, None)
    t.require("left=0 dropped=1" in rule, f"the switch's drop rule did not drop exactly one frame: {rule}")
    tries = jget(s, "tries")
    t.require(tries == '{"1": 1, "2": 1, "3": 2}' and jget(s, "retries") == "1",
              f"broadcast: sends per target {tries}, re-sends {jget(s, 'retries')} (want node3 alone re-sent to, once)")
    for n in (1, 2, 3):
        acks, dups = ("2", "1") if n == 3 else ("1", "0")
        r = out[n]
        t.require(jget(r, "delivered") == "1" and jget(r, "first_via") == "broadcast" and jget(r, "acks") == acks
                  and jget(r, "duplicates") == dups,
                  f"broadcast: node{n} delivered {jget(r, 'delivered')} (first by {jget(r, 'first_via')}), acknowledged "
                  f"{jget(r, 'acks')} times, {jget(r, 'duplicates')} re-sent copies (want 1, broadcast, {acks}, {dups})")
    t.checked("broadcast: one write reached nodes 1, 2 and 3 byte-exact; the switch dropped node3's acknowledgement "
              "(rule: left=0 dropped=1); node0 re-sent to node3 alone (sends 1/1/2), node3 acknowledged again and "
              "ignored the copy; every target delivered the data once")


# A multicast write from node0 to group 9 = {1, 3}; node2 is no member.
def mcast(t):
    job, g = 4403, 9
    for n in (1, 3):
        r = t.faults("mcast", "join", g, n)
        t.require(r.ok, f"switch: mcast join {g} {n}: {r.out}")
    tw, jobs = targets(t, job, "mcast --target", (1, 3))
    w2, jobs2 = targets(t, job, "mcast --target --non-member", (2,))
    jobs.update(jobs2)
    t.require(w2 == tw, f"node2's window {w2} differs from the members' {tw}")
    ok, s, out = source(t, "mcast", f"--group {g} --targets 1,3 --others 2 --peer-window {tw} --job {job}", jobs,
                        lambda n: ("multicast", f"mcast node{n}",
                                   f"multicast {'non-member' if n == 2 else 'member'} (node{n})"))
    for n in (1, 3):
        t.faults("mcast", "leave", g, n)
    t.require(ok, None)
    t.require(jget(s, "retries") == "0" and jget(s, "acked") == "2",
              f"multicast: {jget(s, 'acked')} acknowledgements, {jget(s, 'retries')} re-sends (want 2, 0)")
    for n in (1, 3):
        t.require(jget(out[n], "delivered") == "1" and jget(out[n], "duplicates") == "0",
                  f"multicast: member node{n} delivered {jget(out[n], 'delivered')}, "
                  f"{jget(out[n], 'duplicates')} copies")
    t.require(jget(out[2], "data_entries") == "0",
              f"multicast: non-member node2 got {jget(out[2], 'data_entries')} DATA entries")
    t.checked(f"multicast: a write to group {g} reached members node1 and node3 once each, byte-exact, both "
              "acknowledged without a re-send; node2 (no member) got nothing")


def client_server(t, job, what, snode, sargs, cnode, cargs):
    """A weft-ops pair: the server role on SNODE, then the client role on
    CNODE (its window given); both must pass.  (client, server) Results."""
    w, js = ops_server(t, snode, job, f"{what} --server{sargs}")
    c = t.gx(cnode, f"weft-ops {what} --client --peer {snode} --peer-window {w}{cargs} --job {job} --timeout 120000 "
                    "--json")
    say_json(t, f"{what} client", c)
    ok = role_ok(t, c, f"{what} client (node{cnode})")
    s = js.wait()
    say_json(t, f"{what} server", s)
    ok &= role_ok(t, s, f"{what} server (node{snode})")
    t.require(ok, None)
    return c, s


# A conditional RDMA from node2 to node3: 4 member writes gate the signal.
def cond(t):
    c, s = client_server(t, 4404, "cond", 3, "", 2, " --members 4")
    t.require(jget(s, "before_signal") == "4" and jget(s, "data_at_signal") == "true"
              and jget(s, "signal_verified") == "true",
              f"cond: the signal came after {jget(s, 'before_signal')} of 4 member completions, data at signal "
              f"{jget(s, 'data_at_signal')}")
    t.require(jget(c, "query.expect") == "4", f"cond: the queue expected {jget(c, 'query.expect')} members, not 4")
    t.checked("conditional RDMA: node2's signal write reached node3 only after all 4 member writes (4 completions "
              "before it, their 4 buffers byte-exact when it came); the queue reported expect 4, tagged "
              f"{jget(c, 'query.tagged')}")


# The four half-RDMA modes between node0 (client) and node1 (server).
def half(t):
    c, s = client_server(t, 4405, "half", 1, "", 0, "")
    t.require(jget(s, "write_fifo.verified") == "true" and jget(s, "put.verified") == "true"
              and jget(s, "read_put.requests") == "1" and jget(s, "read_put.completions") == "1",
              f"half: server side: {jget(s, 'write_fifo')} {jget(s, 'put')} {jget(s, 'read_put')}")
    t.require(jget(c, "read_fifo.verified") == "true" and jget(c, "read_put.verified") == "true"
              and jget(c, "put.completion") == "true",
              f"half: client side: {jget(c, 'put')} {jget(c, 'read_fifo')} {jget(c, 'read_put')}")
    t.checked(f"half-RDMA: write_fifo ({jget(s, 'write_fifo.entries')} DATA entries reassembled on node1), put (placed "
              f"on node1, completions at both ends), read_fifo ({jget(c, 'read_fifo.entries')} DATA entries on node0, "
              "then the completion), read_put (node1's program answered with put_reply): "
              f"{jget(c, 'bytes')} B each, byte-exact")


@scenario("seed000-ops", "C4", "libweft's further operations between guests (weft-ops): a third-party transfer "
          "(node1 makes node2 write into node0; TARGET completion at node0, SOURCE at node1, none at node2); a "
          "broadcast write reaching nodes 1-3 with node3's acknowledgement dropped by a switch drop rule, node3 alone "
          "re-sent to; a multicast write reaching only the group's members; a conditional RDMA whose signal arrives "
          "after its 4 writes; the four half-RDMA modes; all byte-exact")
def seed000_ops(t):
    t.need(range(4), "weft-ops")
    for part in (third_party, bcast, mcast, cond, half):
        try:
            part(t)
        except Stop:
            pass
    for i in range(4):
        t.no_oops(i)
