"""Two-node and four-node scenarios of the driver, libweft's tools, the
reliable layer, the switch as a fault, TCP and striping over adapters
(docs/cluster.md, "The scenarios")."""

import re
import time

from weftcluster.testing import alive, scenario

PING = "/bin/ping"


def ip4(n):
    return f"10.87.0.{n + 1}"


def ip6(n):
    return f"fd57:6566::{n + 1:x}"


@scenario("boot", "CB", "both nodes boot (no -incoming: the cluster is booted, up --start boot), load weft.ko, "
          "see their adapter with the right node id, switch ports attached")
def boot(t):
    for i in (0, 1):
        cmd = t.file(f"node{i}.cmdline")
        t.require(cmd and "-incoming" not in cmd and "weft_identity=wait" not in cmd,
                  f"node{i}: not booted: its QEMU command line is '{cmd.strip()}'")
        t.checked(f"node{i}: booted (its QEMU without -incoming, the identity on its kernel command line)")
        r = t.gx(i, "cat /run/weft/driver; ls /dev/weft0; cat /sys/kernel/debug/weft/weft0/state | head -1; hostname")
        if not r.ok:
            t.fail(f"node{i}: {r.out}")
        if "loaded" not in r.lines():
            t.fail(f"node{i}: weft.ko not loaded: {r.out}")
        if not re.search(rf"^node {i} windows", r.out, re.M):
            t.fail(f"node{i}: debugfs state does not show node id {i}: {r.out}")
        if f"node{i}" not in r.lines():
            t.fail(f"node{i}: hostname is not node{i}")
        t.checked(f"node{i}: weft.ko loaded, /dev/weft0 present, adapter node id {i}, hostname node{i}")
        r = t.gx(i, 'awk "\\$1 == \\"STATUS\\" {print \\$3}" /sys/kernel/debug/weft/weft0/regs')
        # STATUS: READY (bit 0) and LINK_UP (bit 1).
        try:
            ok = r.ok and int(r.out, 0) & 3 == 3
        except ValueError:
            ok = False
        if not ok:
            t.fail(f"node{i}: STATUS register {r.out} lacks READY|LINK_UP")
        t.checked(f"node{i}: STATUS register {r.out} has READY and LINK_UP")
    r = t.faults("nodes")
    if not r.ok:
        t.fail(f"weft-switch ctl nodes failed: {r.out}")
    for i in (0, 1):
        if not re.search(rf"^node {i} attached up", r.out, re.M):
            t.fail(f"switch does not show node {i} attached and up: {r.out}")
    t.checked("switch: nodes 0 and 1 attached and up")


def tap_counts(out):
    """(ok points, not ok points, plan or None) of a TAP output."""
    lines = out.splitlines()
    ok = sum(1 for x in lines if x.startswith("ok "))
    bad = sum(1 for x in lines if x.startswith("not ok "))
    plans = [x[3:] for x in lines if re.fullmatch(r"1\.\.\d+", x)]
    return ok, bad, int(plans[-1]) if plans else None


def gtest(t, n, test, args=""):
    """An in-guest driver test (TAP, from tests/common/weft_test.h): one
    check, which holds when the test exited 0 with every point of its plan
    passed.  Its Result (stops the scenario when it failed)."""
    t.need(n, test)
    r = t.gx(n, f"/usr/lib/weft/tests/{test} {args}", timeout=240)
    ok, bad, plan = tap_counts(r.out)
    if not r.ok or bad or not ok or plan != ok + bad:
        t.show("\n".join([x for x in r.lines() if re.search(r"^not ok|^# FAIL|^Bail out|error|fatal", x)][:20]), "")
        if not ok:
            t.show(r.out, "", 10)
        t.fail(f"node{n}: {test} failed (exit {r.rc}, {bad} of {ok + bad} points failed, "
               f"plan {plan if plan is not None else 'missing'})")
        t.stop()
    t.checked(f"node{n}: {test}: all {ok} points of its plan passed")
    return r


def guest_test(name, node, test, desc):
    scenario(name, "C2", desc)(lambda t: gtest(t, node, test))


@scenario("ioctl-errors", "C2", "every ioctl with good and bad arguments; another process's window cannot be "
          "mapped or used (weft-test-ioctl, weft-test-isolation)")
def ioctl_errors(t):
    gtest(t, 0, "weft-test-ioctl")
    gtest(t, 0, "weft-test-isolation")


guest_test("process-death", 0, "weft-test-kill", "a process killed mid-transfer releases its windows, rCxts, "
           "registrations and pinned pages (weft-test-kill)")
guest_test("close-inflight", 0, "weft-test-close", "Close Window with traffic in flight waits for Snapshot View "
           "to clear and returns (weft-test-close)")
guest_test("window-fatal", 0, "weft-test-fatal", "window fatal errors are reported to the owning process "
           "(weft-test-fatal)")
guest_test("recovery", 1, "weft-test-recovery", "adapter recovery through sysfs and debugfs: count bumped, "
           "users told, old rCxts and registrations dead (weft-test-recovery)")
guest_test("events", 0, "weft-test-events", "adapter events reach the owning process through read() and "
           "poll(), in order, none lost, never another process's (weft-test-events)")
guest_test("stale-mappings", 1, "weft-test-stale", "a process keeps touching its mapped window through "
           "recoveries: no signal, STATE not VALID, FIFOs keep their contents, every call on the old window "
           "ESTALE, close releases everything (weft-test-stale)")
guest_test("unbind", 1, "weft-test-unbind", "the PCI device unbound from weft.ko under an open fd: resources "
           "released, mappings gone (SIGBUS), every call fails, rebind works (weft-test-unbind)")


@scenario("modload", "C2", "weft.ko loaded and unloaded 20 times on node1: no leak in the driver counters "
          "(weft-test-modload)")
def modload(t):
    gtest(t, 1, "weft-test-modload", "/lib/weft/weft.ko 20")
    r = t.gx(1, "ls /dev/weft0 && head -1 /sys/kernel/debug/weft/weft0/state")
    if not r.ok:
        t.fail(f"node1: no adapter after the load/unload cycles: {r.out}")
    t.checked("node1: weft.ko loaded again afterwards, /dev/weft0 back")
    # The new weft0 has none of the addresses /etc/weft/rc gave the first
    # one: give them back, so that the scenarios after this one find node1
    # as it started.
    r = t.gx(1, f"/sbin/ip link set weft0 up && /sbin/ip addr add {ip4(1)}/16 dev weft0 && "
                f"/sbin/ip addr add {ip6(1)}/64 dev weft0 nodad && /sbin/ip -br addr show weft0")
    t.require(r.ok and f"{ip4(1)}/16" in r.out and f"{ip6(1)}/64" in r.out,
              f"node1: weft0's addresses not restored: {r.out}")
    t.checked(f"node1: weft0 up again with {ip4(1)}/16 and {ip6(1)}/64")


guest_test("fork", 0, "weft-test-fork", "a forked child that touches the parent's doorbell page or FIFOs gets "
           "SIGSEGV, the parent's traffic is unaffected, mappings never executable (weft-test-fork)")


def mrkey(t, n):
    """weft-test-mrkey: the buffer's key and the adapter's key epoch."""
    r = gtest(t, n, "weft-test-mrkey")
    m = re.search(r"^# mrkey: .* key (0x[0-9a-f]*) epoch ([0-9]*)$", r.out, re.M)
    t.require(m and m.group(2), f"node{n}: weft-test-mrkey printed no key line: {r.tail(3)}")
    return m.group(1), int(m.group(2))


@scenario("reboot-keys", "CB", "node1 of the booted cluster rebooted three times, the same buffer registered after "
          "each boot: three different PVO keys, each in the block of a new adapter key epoch (weft-test-mrkey)")
def reboot_keys(t):
    key, epoch = mrkey(t, 1)
    keys, epochs = [key], [epoch]
    for i in (1, 2, 3):
        r = t.wc("reboot", 1)
        if not r.ok:
            t.show(r.out, "", 5)
        t.require(r.ok, f"reboot {i} of node1 failed")
        key, epoch = mrkey(t, 1)
        t.require(epoch > epochs[-1], f"reboot {i}: adapter key epoch {epoch}, before it {epochs[-1]}")
        t.require(key not in keys, f"reboot {i}: the buffer got key {key} again (keys {' '.join(keys)})")
        keys.append(key)
        epochs.append(epoch)
        t.checked(f"node1 reboot {i}: same buffer, key {key} (epoch {epoch}), none of the earlier keys")
    t.checked(f"node1: keys {' '.join(keys)} over 3 reboots, all different; epochs {' '.join(map(str, epochs))}")


# ---- two-node tool scenarios ------------------------------------------------
def verdict(t, c, sr, ok, reason, server, tail=10):
    """Fail with REASON and stop unless OK (the client C's verdict), then
    unless the server's Result SR (SERVER: "TOOL on nodeN") is a success;
    the ends of their outputs are shown."""
    if not ok:
        t.show(c.out, "client: ", tail)
        t.show(sr.out, "server: ", 5)
        t.fail(reason)
        t.stop()
    if not sr.ok:
        t.show(sr.out, "server: ", 5)
        t.fail(f"{server} exited {sr.rc}")
        t.stop()


def rdma_check(t, s, k, job, lo, hi):
    """weft-rdma-check between two nodes; holds when the client reports
    "pass" with no failures.  The client's Result."""
    win, srv = t.server(s, job, f"weft-rdma-check --server --job {job} --max-size {hi}")
    c = t.gx(k, f"weft-rdma-check --client --peer {s} --peer-window {win} --job {job} --min-size {lo} "
                f"--max-size {hi} --json", timeout=900)
    sr = srv.wait()
    j = c.json()
    verdict(t, c, sr, c.ok and j.get("result") == "pass" and j.get("failures") == 0,
            f"weft-rdma-check node{k} -> node{s}: client exit {c.rc}, result {j.get('result', 'none')}, "
            f"failures {j.get('failures', '?')}", f"weft-rdma-check server on node{s}", 15)
    t.checked(f"node{k} -> node{s} window {win}: {j.get('cases')} write+read cases, sizes {lo}..{hi}, byte-exact, "
              f"{j.get('bytes')} bytes in {j.get('seconds')} s")
    return c


@scenario("rdma-1mib", "C2", "RDMA write and read of 1 MiB between two nodes, verified byte by byte "
          "(weft-rdma-check)")
def rdma_1mib(t):
    t.need((0, 1), "weft-rdma-check")
    rdma_check(t, 1, 0, 4097, "1M", "1M")


@scenario("rdma-sizes", "C2", "RDMA write and read from 1 byte to 16 MiB with unaligned offsets, byte by byte "
          "(weft-rdma-check)")
def rdma_sizes(t):
    t.need((0, 1), "weft-rdma-check")
    rdma_check(t, 1, 0, 4098, 1, "16M")


def tool2_window(t, s, k, job, tool, args):
    """A two-node tool run with the same ARGS on both sides: the server's
    window and the client's Result (stops the scenario when either side
    failed)."""
    win, srv = t.server(s, job, f"{tool} --server --job {job} {args}")
    c = t.gx(k, f"{tool} --client --peer {s} --peer-window {win} --job {job} {args} --json", timeout=600)
    sr = srv.wait()
    verdict(t, c, sr, c.ok and sr.ok, f"{tool} node{k} -> node{s}: client exit {c.rc}, server exit {sr.rc}", "")
    return win, c


def tool2(t, s, k, job, tool, args):
    """tool2_window's client Result."""
    return tool2_window(t, s, k, job, tool, args)[1]


def results(t, r, need):
    """Print the "results" of a tool's JSON output, one line each; True
    when there are some and every entry has the numeric fields NEED."""
    res = r.json().get("results") or []
    bad = 0
    for x in res:
        flat = dict(x)
        flat.update(x.get("lat_us", {}))
        if any(not isinstance(flat.get(k), (int, float)) or flat.get(k) < 0 for k in need):
            bad += 1
        try:
            if "lat_us" in x:
                lat = x["lat_us"]
                t.say("figures: %s %d B x%d: one-way us min %.2f p50 %.2f p90 %.2f p99 %.2f max %.2f (lost %d)" %
                      (x["mode"], x["size"], x["iters"], lat["min"], lat["p50"], lat["p90"], lat["p99"],
                       lat["max"], x["lost"]))
            else:
                t.say("figures: %-5s %9d B %7d ops %8.3f s %9.1f MB/s (retries %d)" %
                      (x["op"], x["size"], x["ops"], x["seconds"], x["MBps"], x["retries"]))
        except (KeyError, TypeError):
            bad += 1
    return bool(res) and not bad


def every_result(r, n, pred):
    """The last JSON line of R has N "results", and PRED holds for each."""
    res = r.json().get("results") or []
    try:
        return len(res) == n and all(pred(x) for x in res)
    except (KeyError, TypeError):
        return False


# The tool checks every answer byte for byte ("verified": round trips
# whose answer carried exactly what was sent, warm-up included).
@scenario("fifo-pingpong", "C2", "FIFO (and RDMA) ping-pong between node0 and node1 (weft-pingpong): every "
          "answer byte-exact, nothing lost, latency figures printed")
def fifo_pingpong(t):
    t.need((0, 1), "weft-pingpong")
    r = tool2(t, 1, 0, 4099, "weft-pingpong", "--mode fifo --size 64 --iters 1000")
    t.require(results(t, r, ["iters", "lost", "p50", "p99"]),
              f"weft-pingpong printed no usable FIFO figures: {r.tail(3)}")
    t.require(every_result(r, 1, lambda x: x["mode"] == "fifo" and x["verified"] == 1101),
              f"FIFO ping-pong: not all 1101 round trips verified: {r.last_json_line()}")
    t.require('"lost":0' in r.out, f"messages lost on a fault-free fabric: {r.out}")
    t.checked("node0 <-> node1 FIFO ping-pong: 1101 round trips of 64 bytes (100 warm-up), every echo byte-exact, "
              "none lost")
    r = tool2(t, 1, 0, 4100, "weft-pingpong", "--mode rdma --size 4096 --iters 300")
    t.require(results(t, r, ["iters", "lost", "p50", "p99"]), "weft-pingpong printed no usable RDMA figures")
    t.require(every_result(r, 1, lambda x: x["mode"] == "rdma" and x["verified"] == 331),
              f"RDMA ping-pong: not all 331 round trips verified: {r.last_json_line()}")
    t.checked("node0 <-> node1 RDMA ping-pong: 331 round trips of 4 KiB (30 warm-up), every answer written back "
              "byte-exact")


# weft-bw checks the data of every size (a write of a pattern read back)
# and prints a result only after that check held.
@scenario("bandwidth", "C2", "RDMA write and read bandwidth over message sizes (weft-bw): each size's data "
          "checked, figures printed")
def bandwidth(t):
    t.need((0, 1), "weft-bw")
    r = tool2(t, 1, 0, 4101, "weft-bw", "--mode both --min-size 4K --max-size 1M --depth 64 --iters 64")
    t.require(results(t, r, ["ops", "seconds", "MBps"]), f"weft-bw printed no usable figures: {r.tail(3)}")
    t.require(every_result(r, 18, lambda x: x["verified"] is True and x["ops"] == 64),
              "weft-bw: not 9 write and 9 read sizes each with 64 operations and verified data: "
              f"{r.last_json_line()}")
    t.checked("node0 -> node1 RDMA write and read, 4 KiB..1 MiB, depth 64 (above 128 KiB, operations share "
              "the buffers' 8 slots): 64 operations per size, each size's data written and read back byte-exact")


def clear_faults(t, fn):
    """Run FN(t), then clear the switch's faults whatever happened."""
    try:
        fn(t)
    finally:
        r = t.faults("clear")
        if not r.ok:
            t.fail("switch: faults clear failed")
    return r


# RDMA through a lossy, reordering fabric: libweft's reliable operations
# (re-issued with a larger tid after a timeout) still give byte-exact
# transfers, and the retries show in the tool's figures.
def lossy_body(t):
    r = t.faults("set", "drop=0.05", "routes=4", "skew_ns=200000", "jitter_ns=300000")
    t.require(r.ok, f"switch: faults set: {r.out}")
    t.say(f"switch faults: {' '.join(t.faults('faults').lines())}")
    c = rdma_check(t, 1, 0, 4102, 1, "4K")
    retries = c.json().get("retries")
    t.require(isinstance(retries, int) and retries > 0,
              f"no retries reported with 5% loss (retries: {retries}): the faults did not act")
    t.checked(f"with 5% loss and 4 routes (reordering), {retries} re-issued operations, every transfer byte-exact")
    t.say("switch: " + " ".join(x for x in t.faults("counters").lines() if x.startswith("total")))


@scenario("lossy-rdma", "C2", "RDMA write and read, 1 byte to 4 KiB, through a fabric with 5% loss and "
          "reordering: reliable operations retry, byte-exact")
def lossy_rdma(t):
    t.need((0, 1), "weft-rdma-check")
    clear_faults(t, lossy_body)


def random_drops(sw):
    return sw["total"]["drops"]["RANDOM"]


def figures(t, n, j, more, switch):
    """The figures of a --messages run (its JSON J), MORE of them, and what
    the SWITCH saw."""
    t.say(f"figures: messages {n}, delivered {j.get('delivered', '?')}, out of order or repeated "
          f"{j.get('failures', '?')}, retries {j.get('retries', '?')}, duplicates dropped {j.get('duplicates', '?')}, "
          f"{more}{j.get('seconds', '?')} s; {switch}")


def messages_verdict(t, c, sr, n, what, server_node=1):
    """The reliable layer's verdict of a --messages run (client C, server
    SR): fails and stops unless every message arrived exactly once."""
    j = c.json()
    verdict(t, c, sr, c.ok and j.get("result") == "pass" and j.get("delivered") == n and j.get("failures") == 0,
            f"{what}: client exit {c.rc}, result {j.get('result', 'none')}, delivered {j.get('delivered', 'none')} "
            f"of {n}, failures {j.get('failures', '?')}", f"weft-rdma-check server on node{server_node}")
    return j


# The reliable layer (weft_rel) through a lossy, reordering switch: the
# client sends 10000 sequence-numbered messages, the server checks that
# each arrives exactly once and in order.
def reliable_body(t):
    job, n = 4104, 10000
    r = t.faults("set", "drop_ppm=50000", "routes=4", "jitter_ns=50000")
    t.require(r.ok, f"switch: faults set: {r.out}")
    t.say(f"switch faults: {r.out}")
    sw0 = t.faults_json("counters")
    win, srv = t.server(1, job, f"weft-rdma-check --server --job {job}")
    c = t.gx(0, f"weft-rdma-check --client --peer 1 --peer-window {win} --job {job} --messages {n} --json",
             timeout=600)
    sr = srv.wait()
    j = c.json()
    sw1 = t.faults_json("counters")
    try:
        swdrops = random_drops(sw1) - random_drops(sw0)
    except (KeyError, TypeError):
        swdrops = None
    figures(t, n, j, f"stale completions ignored {j.get('stale', '?')}, ",
            f"frames dropped by the switch {swdrops if swdrops is not None else '?'}")
    verdict(t, c, sr, j.get("mode") == "messages", f"reliable layer: client exit {c.rc}, result "
            f"{j.get('result', 'none')}, mode {j.get('mode')}", "weft-rdma-check server on node1")
    messages_verdict(t, c, sr, n, "reliable layer")
    t.require(isinstance(swdrops, int) and swdrops > 0,
              f"the switch dropped no frame ({swdrops if swdrops is not None else 'unreadable'}): "
              "the faults did not act")
    t.checked(f"with 5% loss, 4 routes and jitter ({swdrops} frames dropped by the switch): \"result\":\"pass\", "
              f"\"delivered\":{n}, each message exactly once, in order (sequence-checked by the server)")


@scenario("reliable-messages", "C2", "reliable layer: 10000 messages through a fabric with 5% loss and "
          "reordering, each delivered exactly once and in order (weft-rdma-check --messages)")
def reliable_messages(t):
    t.need((0, 1), "weft-rdma-check")
    r = clear_faults(t, reliable_body)
    t.require(r.ok, f"switch: faults clear failed: {r.out}")
    t.checked(f"switch faults reset: {r.out}")


# ---- the switch as a fault (issue 16) ------------------------------------------
def switch_rx0(t):
    """node0's rx_frames in the switch's counters (None if unreadable)."""
    sw = t.faults_json("counters")
    try:
        return sum(p["rx_frames"] for p in sw["ports"] if p["node"] == 0)
    except (KeyError, TypeError):
        return None


def attached(t, nodes, tries, period):
    """Wait until the switch shows NODES attached: the last `ctl nodes`."""
    for _ in range(tries):
        r = t.faults("nodes")
        if all(f"node {i} attached" in r.out for i in nodes):
            break
        time.sleep(period)
    return r


# The switch is killed and started again mid-stream (weft-cluster switch
# restart); the adapters reconnect by themselves and the reliable layer
# retransmits what the dead switch held.
@scenario("switch-restart", "C2", "weft-cluster switch restart kills the switch and starts it again while the "
          "reliable layer streams 20000 messages: each delivered exactly once and in order; status and ctl manage "
          "the new switch")
def switch_restart(t):
    job, n = 4106, 20000
    t.need((0, 1), "weft-rdma-check")
    pid0 = t.switch_pid()
    t.require(pid0, "weft-cluster status shows no running switch")
    rx0 = switch_rx0(t)
    t.require(rx0 is not None, "cannot read the switch's counters")
    win, srv = t.server(1, job, f"weft-rdma-check --server --job {job}")
    cli = t.bg(0, f"weft-rdma-check --client --peer 1 --peer-window {win} --job {job} --messages {n} --json",
               timeout=900)
    # Restart once node0 has sent 2000 frames of this stream.
    rx = 0
    for _ in range(600):
        rx = (switch_rx0(t) or 0) - rx0
        if rx >= 2000 or cli.done():
            break
        time.sleep(0.2)
    if cli.done() or rx < 2000:
        t.fail(f"the stream did not get going before the restart (node0 frames of this stream at the switch: {rx}; "
               f"client: {cli.wait().tail(3)})")
        t.stop()
    r = t.wc("switch", "restart")
    t.require(r.ok, f"weft-cluster switch restart: {r.out}")
    pid1 = t.switch_pid()
    t.require(pid1 and pid1 != pid0 and alive(pid1) and not alive(pid0),
              f"after the restart status shows switch pid '{pid1 or 'none'}' (old {pid0})")
    t.checked(f"weft-cluster switch restart killed weft-switch pid {pid0} mid-stream ({rx} frames of the stream "
              f"from node0 had passed it) and started pid {pid1}, which status reports")
    r = attached(t, (0, 1), 150, 0.2)
    t.require("node 0 attached" in r.out and "node 1 attached" in r.out,
              f"the adapters did not reconnect to the new switch: {r.out}")
    t.checked(f"both adapters reconnected to the new switch with their tokens (ctl nodes: {';'.join(r.lines())};)")
    c = cli.wait()
    sr = srv.wait()
    j = c.json()
    rx = switch_rx0(t)
    figures(t, n, j, "", f"frames from node0 through the new switch {rx if rx is not None else '?'}")
    messages_verdict(t, c, sr, n, "reliable layer across the switch restart")
    t.require((rx or 0) > 0, f"the new switch forwarded no frame from node0 ({rx if rx is not None else 'unreadable'})")
    t.checked(f"\"result\":\"pass\", \"delivered\":{n} across the restart, each message exactly once and in order "
              f"(sequence-checked by the server), {rx} frames from node0 through the new switch")


# Lazy deregistration: weft-rdma-check moves every transfer through the
# MR cache; its two local buffers are registered once, and every later
# transfer from the same buffer is a cache hit with no registration call.
@scenario("mr-cache", "C2", "lazy deregistration: transfers from an already registered buffer are MR cache hits "
          "with no registration call (mr_cache counters)")
def mr_cache(t):
    t.need((0, 1), "weft-rdma-check")
    j = rdma_check(t, 1, 0, 4105, "4K", "4K").json()
    m = j.get("mr_cache")
    try:
        hits, misses, remaps, regs = m["hits"], m["misses"], m["remaps"], m["registrations"]
        gets, ops = 3 * j["cases"], j["ops"]
    except (KeyError, TypeError):
        t.fail(f"weft-rdma-check printed no mr_cache counters: {j}")
        t.stop()
    t.say(f"figures: mr_cache {m} over {gets} transfers ({ops} operations)")
    t.require(1 <= regs <= 2, f"{regs} registrations for 2 local buffers (expected 1..2)")
    t.require(hits + misses == gets, f"hits {hits} + misses {misses} != {gets} transfers")
    t.require(hits >= gets - 2, f"only {hits} cache hits for {gets} transfers from 2 buffers")
    t.checked(f"{gets} transfers from 2 buffers: {regs} registration calls, {hits} cache hits, {misses} misses, "
              f"{remaps} remaps: every transfer after the first from a buffer skipped registration")


# ---- two adapters per node ------------------------------------------------------
def txbytes(t, n, a):
    """TX_BYTES of /dev/weftA on node N (None if unreadable)."""
    r = t.gx(n, f"awk '$1 == \"TX_BYTES\" {{print $2}}' /sys/kernel/debug/weft/weft{a}/counters")
    return int(r.out) if r.out.isdigit() else None


# Two adapters per node: adapter a of node N has node id N + 2a.  weft-bw
# runs once over the first adapters alone and once with --stripe weft1
# (the buffers registered once, their PVOs used on both adapters); its
# data check writes a 16 MiB pattern (striped in the second run) and reads
# it back byte for byte, and prints a figure only after that held.
@scenario("stripe-2adapters", "CS", "nodes with 2 adapters each (4 switch ports): node0 stripes 16 MiB RDMA writes "
          "over both its adapters to both of node1's (weft-bw --stripe), byte-exact, half of the bytes through each "
          "adapter; single-adapter and 2-adapter weft-bw figures side by side; a buffer registered once through "
          "either adapter is used with the same PVO through both, its deregistration through either drops later "
          "writes to it on both ; recovery, unbind and bind of weft1 keep the registrations made through weft0 "
          "(weft-test-nodeglobal)")
def stripe_2adapters(t):
    for i in (0, 1):
        for a in (0, 1):
            nid = i + 2 * a
            r = t.gx(i, f"head -1 /sys/kernel/debug/weft/weft{a}/state")
            t.require(re.search(rf"^node {nid} windows", r.out, re.M),
                      f"node{i}: /dev/weft{a} does not have node id {nid}: {r.out}")
        t.checked(f"node{i}: weft0 and weft1 present with node ids {i} and {i + 2}")
    t.need((0, 1), "weft-bw")
    args = "--mode write --min-size 16M --max-size 16M --depth 1 --iters 4"
    r = tool2(t, 1, 0, 4301, "weft-bw", args)
    t.require(results(t, r, ["ops", "seconds", "MBps"]), "weft-bw printed no usable figures")
    t.require(every_result(r, 1, lambda x: x["verified"] is True and x["ops"] == 4),
              f"weft-bw (1 adapter): no verified 16 MiB result: {r.last_json_line()}")
    t.checked("1 adapter: node0 -> node1 16 MiB RDMA writes, data written and read back byte-exact")
    tx0, tx1 = txbytes(t, 0, 0), txbytes(t, 0, 1)
    t.require(tx0 is not None and tx1 is not None, f"node0: cannot read TX_BYTES of weft0/weft1: {tx0} {tx1}")
    r = tool2(t, 1, 0, 4302, "weft-bw", args + " --stripe weft1")
    t.require(results(t, r, ["ops", "seconds", "MBps"]), "weft-bw --stripe printed no usable figures")
    t.require(r.json().get("adapters") == 2, f"weft-bw --stripe did not run over 2 adapters: {r.last_json_line()}")
    t.require(every_result(r, 1, lambda x: x["verified"] is True and x["ops"] == 4),
              f"weft-bw --stripe: no verified 16 MiB result: {r.last_json_line()}")
    t.checked("2 adapters: node0 -> node1 16 MiB RDMA writes striped over weft0 and weft1 (one completion each), "
              "the striped 16 MiB pattern read back byte-exact")
    d0, d1 = (txbytes(t, 0, 0) or 0) - tx0, (txbytes(t, 0, 1) or 0) - tx1
    # Bytes each adapter sent: 4 timed writes and the check's striped
    # write, 8 MiB of each through each adapter, plus headers, retries and
    # (adapter 0) the check's read request.
    half = 5 * 8 * 1048576
    t.require(d0 >= half and d1 >= half,
              f"node0: bytes sent by weft0 {d0} and by weft1 {d1}, expected at least {half} each")
    t.checked(f"node0: weft0 sent {d0} bytes and weft1 {d1} bytes (at least 5 x 8 MiB each): both adapters carried "
              "half of every write")
    # Node-global registrations: one registration, one PVO through both
    # adapters; a deregistration through either invalidates it on both;
    # recovery, unbind and bind of weft1 under live registrations.
    gtest(t, 0, "weft-test-nodeglobal")
    t.no_oops(0)


# ---- the switch over TCP ---------------------------------------------------------
# Cluster CT runs `up --transport tcp`: its switch listens on a TCP port of
# 127.0.0.1 besides its UNIX socket and each QEMU's chardev connects to
# that port, so the frames take the path they take between two hosts
# (docs/cluster.md, "Across two hosts").
@scenario("tcp-transport", "CT", "2 nodes whose QEMUs reach the switch over TCP on 127.0.0.1 (up --transport tcp): "
          "each node registered over TCP with its token on the socket transport; RDMA write and read 1 byte to "
          "4 MiB byte-exact; IPv4 and IPv6 pings over weft0 lose nothing; after a switch restart on the same port "
          "the nodes are back over TCP")
def tcp_transport(t):
    addr = t.file("switch.addr").strip()
    t.require(re.fullmatch(r"127\.0\.0\.1:[0-9]+", addr),
              f"no TCP listener address on 127.0.0.1 in {t.dir}/switch.addr: '{addr}'")
    port = addr.partition(":")[2]
    log = t.file("switch.log")

    def registrations(i, text):
        return re.findall(rf": node {i} connected \(tcp 127\.0\.0\.1:[0-9]+, token checked, socket\)$", text, re.M)

    for i in (0, 1):
        cmdline = t.file(f"node{i}.cmdline")
        t.require(f"-chardev socket,id=sw,host=127.0.0.1,port={port},reconnect-ms=1000,nodelay=on " in cmdline,
                  f"node{i}'s QEMU does not reach the switch over TCP {addr}: "
                  f"{' '.join(re.findall(r'-chardev socket,id=sw[^ ]*', cmdline))}")
        t.require(registrations(i, log), f"the switch log does not show node {i} registered over TCP with its token "
                  "on the socket transport")
        conn = re.findall(rf"^.*: node {i} connected \(.*$", log, re.M)
        t.require(all("(tcp " in x for x in conn), f"node {i} also connected other than over TCP: {' | '.join(conn)}")
    m = re.search(r"^switch .* tcp_connections=([0-9]*)", t.faults("counters").out, re.M)
    n = int(m.group(1)) if m and m.group(1) else 0
    t.require(n >= 2, f"the switch counted {n or 'no'} TCP connections, expected at least 2")
    t.checked(f"the switch listens on TCP {addr}, both QEMUs connect to it (chardev host=127.0.0.1,port={port},"
              "nodelay=on), each node registered over TCP with its token on the socket transport (transport=auto "
              f"cannot pass descriptors over TCP); tcp_connections={n}")
    t.need((0, 1), "weft-rdma-check")
    rdma_check(t, 1, 0, 4401, 1, "4M")
    r = t.gx(0, f"{PING} -c 20 -i 0.2 -W 5 {ip4(1)}; {PING} -c 5 -W 5 {ip6(1)}", timeout=120)
    sent = [x for x in r.lines() if "transmitted" in x]
    t.require(" 20 received, 0% packet loss" in r.out and " 5 received, 0% packet loss" in r.out,
              f"node0 -> node1 pings over TCP: {' '.join(sent)}")
    t.checked("IP over Weft through the TCP link: node0 -> node1 "
              f"{';'.join(re.sub(r', time.*', '', x) for x in sent)} (IPv4, then IPv6)")
    # A restarted switch listens on the same port; the chardevs reconnect.
    r = t.wc("switch", "restart")
    t.require(r.ok, f"switch restart: {r.tail(3)}")
    r = attached(t, (0, 1), 60, 0.5)
    t.require("node 0 attached" in r.out and "node 1 attached" in r.out,
              f"the nodes did not come back to the restarted switch within 30 s: {r.out}")
    log = t.file("switch.log")
    n = log.count(f": listening on TCP {addr} ")
    t.require(n == 2, f"the restarted switch does not listen on {addr} again ({n} listener lines)")
    for i in (0, 1):
        n = len(registrations(i, log))
        t.require(n >= 2, f"node {i} did not register again over TCP after the restart ({n} registrations)")
    r = t.gx(0, f"{PING} -c 5 -W 5 {ip4(1)}", timeout=60)
    t.require(" 5 received, 0% packet loss" in r.out,
              f"node0 -> node1 pings after the switch restart: {' '.join(x for x in r.lines() if 'transmitted' in x)}")
    t.checked(f"switch restart: the new switch listens on {addr} again, both QEMUs reconnect over TCP by themselves "
              "and register with their tokens, 5 pings node0 -> node1 answered")
    for i in (0, 1):
        t.require(t.no_oops(i), None)


# ---- four nodes --------------------------------------------------------------------
# Every node runs a weft-rdma-check server for each of the 3 others (started
# one after the other, so each has its own window), then every ordered pair
# runs its client at the same time.  All use one job (a node has 5 job
# slots, and 6 windows here).
@scenario("all-to-all", "C4", "4 nodes: every ordered pair runs an RDMA write/read check at the same time, "
          "byte-exact")
def all_to_all(t):
    job = 4300
    t.need(range(4), "weft-rdma-check")
    pairs = [(i, j) for j in range(4) for i in range(4) if i != j]
    srv = {}
    for i, j in pairs:
        srv[i, j] = t.server(j, job, f"weft-rdma-check --server --job {job} --timeout 120000 --max-size 256K")
    t.checked("12 servers up (3 per node, each on its own window)")
    cli = {(i, j): t.bg(i, f"weft-rdma-check --client --peer {j} --peer-window {srv[i, j][0]} --job {job} "
                           "--timeout 120000 --min-size 1 --max-size 256K --json")
           for j in range(4) for i in range(4) if i != j}
    bad = 0
    for i in range(4):
        for j in range(4):
            if i == j:
                continue
            c = cli[i, j].wait()
            s = srv[i, j][1].wait()
            verdict = c.json().get("result")
            if c.ok and verdict == "pass" and s.ok:
                continue
            bad += 1
            t.say(f"node{i} -> node{j}: client exit {c.rc} result {verdict or 'none'}, server exit {s.rc}")
            t.show("\n".join(x for x in c.lines() if not x.startswith("{")), "client: ", 3)
            t.show(s.out, "server: ", 3)
    t.require(bad == 0, f"{bad} of 12 ordered pairs failed")
    t.checked("all 12 ordered pairs: RDMA write+read 1 B..256 KiB byte-exact, all at the same time")
    for i in range(4):
        t.require(t.no_oops(i), None)
