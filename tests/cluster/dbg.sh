# shellcheck shell=bash
# Driver developers' tools (docs/debugging.md: dissector, gdb, timelines),
# sourced by tests/cluster/run.sh
# and run with its helpers (gx, bg, bgwait, tool2, server, fail, checked,
# say, no_oops; ib_load; ib_dev, pair, perf_gids, perf_bw).  They run on
# cluster ctd-<pid> (2 nodes, up --trace: doorbell, UAR and register
# writes, commands, packets and interrupts of every node's QEMU in
# nodeN.trace).  Each scenario returns non-zero at the first check that
# does not hold.

WWS=$WEFT_ROOT/scripts/weft-wireshark

# cap_start CLUSTER NAME / cap_stop CLUSTER: a switch capture into the
# cluster's folder (its path in $CAP).
cap_start() {
	CAP=$(weft_run_dir)/$1/$2.pcap
	rm -f "$CAP"
	OUT=$("$WC" --name "$1" faults capture start "$CAP" 2>&1) || fail "capture start failed: $OUT"
}
cap_stop() {
	OUT=$("$WC" --name "$1" faults capture stop 2>&1) || fail "capture stop failed: $OUT" || return 1
	say "switch: $OUT"
}

# verdicts: the "ok|WHAT" and "fail|WHY" lines of a checker on stdin as
# checks (other lines are said); non-zero if any failed or none came.  Not
# in a pipeline: the checks must count in this shell.
verdicts() {
	local v what n=0 rc=0
	while IFS='|' read -r v what; do
		case $v in
		ok) checked "$what"; n=$((n + 1)) ;;
		fail) fail "$what"; rc=1 ;;
		*) say "$v${what:+|$what}" ;;
		esac
	done
	[ "$n" -gt 0 ] || [ "$rc" = 1 ] || fail "the checker reported nothing"
}

# Traffic of every kind, captured by the switch and decoded by tshark with
# scripts/wireshark/weft.lua: every decoded field checked against what was
# sent, no frame malformed or undecoded.
sc_wireshark() {
	local c=$1 dev sgid cgid rc=0 qa pa qb pb
	command -v tshark >/dev/null ||
		fail "tshark is not installed (scripts/weft-test installs it: apt-get install tshark)" || return 1
	perf_gids "$c" || return 1
	dev=$PDEV sgid=$PSGID cgid=$PCGID
	cap_start "$c" wireshark || return 1
	tool2 "$c" 1 0 ws-fifo 4201 weft-pingpong "--mode fifo --size 64 --iters 5" || rc=1
	tool2 "$c" 1 0 ws-rdma 4202 weft-pingpong "--mode rdma --size 4096 --iters 3" || rc=1
	tool2 "$c" 1 0 ws-bw 4203 weft-bw "--mode both --min-size 8K --max-size 8K --depth 1 --iters 2" || rc=1
	pair "$c" ws-rc "ibv_rc_pingpong -d $dev -g $sgid -s 2048 -n 3" \
		"ibv_rc_pingpong -d $dev -g $cgid -s 2048 -n 3 $(ip4 1)" || fail "ibv_rc_pingpong failed" || rc=1
	# local address:  LID 0x0000, QPN 0x000011, PSN 0x2f0e5a, GID ...
	qa=$(sed -n 's/.*local address: .*QPN \(0x[0-9a-f]*\), PSN \(0x[0-9a-f]*\).*/\1 \2/p' <<<"$COUT")
	qb=$(sed -n 's/.*remote address: .*QPN \(0x[0-9a-f]*\), PSN \(0x[0-9a-f]*\).*/\1 \2/p' <<<"$COUT")
	pa=${qa#* } qa=${qa% *} pb=${qb#* } qb=${qb% *}
	perf_bw "$c" ib_write_bw 4096 5 || rc=1
	perf_bw "$c" ib_read_bw 4096 5 || rc=1
	perf_bw "$c" ib_atomic_bw 8 5 || rc=1
	# Remote access violations: node0, the responder, terminates node1's QPs.
	G0=$PCGID G1=$PSGID
	need "$c" 0 weft-verbs-isolation || rc=1
	bg "$c" 0 ws-iso "/usr/lib/weft/tests/weft-verbs-isolation -s -g $G0"
	gx "$c" 1 "/usr/lib/weft/tests/weft-verbs-isolation -c $(ip4 0) -g $G1"
	[ "$RC" = 0 ] || fail "node1: weft-verbs-isolation -c exited $RC: $(tail -n 3 <<<"$OUT")" || rc=1
	bgwait ws-iso
	gx "$c" 0 "$PING -c 3 -W 5 $(ip4 1)"
	[ "$RC" = 0 ] || fail "node0: ping $(ip4 1): $OUT" || rc=1
	cap_stop "$c" || return 1
	[ "$rc" = 0 ] || return 1
	[ -n "$qa" ] && [ -n "$qb" ] || fail "ibv_rc_pingpong printed no QPN/PSN lines: $(head -n 4 <<<"$COUT")" || return 1
	checked "traffic captured: FIFO, RDMA write/read, verbs send/write/read/atomic, Terminates, ping ($(du -k "$CAP" | cut -f1) KiB)"
	OUT=$(python3 "$WWS" check "$CAP" 2>&1) ||
		fail "frames malformed or not decoded as Weft: $(tail -n 6 <<<"$OUT")" || return 1
	checked "tshark with the dissector: $(tail -n 1 <<<"$OUT")"
	python3 "$WWS" frames "$CAP" >"$TMP/ws.frames" 2>"$TMP/ws.err" ||
		fail "weft-wireshark frames: $(cat "$TMP/ws.err")" || return 1
	python3 - "$TMP/ws.frames" "$qa" "$pa" "$qb" "$pb" >"$TMP/ws.verdicts" 2>&1 <<'EOF' || echo 'fail|the checker failed' >>"$TMP/ws.verdicts"
import json, sys
frames = [json.loads(l) for l in open(sys.argv[1])]
qa, pa, qb, pb = (int(x, 16) for x in sys.argv[2:6])
def f(fr, name, i=0):
    v = fr["fields"].get(name)
    if not v or len(v) <= i:
        return None
    try:
        return int(v[i], 0)
    except ValueError:
        return v[i]
def report(ok, what, why):
    print(("ok|" + what) if ok else ("fail|" + why))
weft = [x for x in frames if f(x, "weft.type") is not None]
bad = [x["frame"] for x in weft if f(x, "weft.src_node") not in (0, 1) or f(x, "weft.version") != 1]
report(not bad, "all %d frames: version 1, source node 0 or 1" % len(weft), "frames with another node or version: %s" % bad[:10])
def by(t, key=None):
    return [x for x in weft if f(x, "weft.type_name") == t and (key is None or f(x, "weft.key") == key)]
def way(xs, s, d):
    return [x for x in xs if f(x, "weft.src_node") == s and f(x, "weft.dst_node") == d]
fifo = [x for x in by("FIFO", 4201) if f(x, "weft.length") == 64]
ok = len(way(fifo, 0, 1)) == 6 and len(way(fifo, 1, 0)) == 6
report(ok, "FIFO, key 4201 (the job): 6 packets of 64 bytes node0 -> node1 and 6 back (5 round trips + 1 warm-up)",
       "FIFO key 4201, 64 bytes: %d node0 -> node1, %d back" % (len(way(fifo, 0, 1)), len(way(fifo, 1, 0))))
w = by("RDMAW", 4202)
ok = w and all(f(x, "weft.total_length") == 4096 and f(x, "weft.offset") in (0, 1920, 3840) for x in w) and \
    [sum(f(x, "weft.flags.last") == 1 for x in way(w, a, b)) for a, b in ((0, 1), (1, 0))] == [4, 4]
report(ok, "RDMAW key 4202: %d packets of 4096-byte writes at offsets 0/1920/3840, 4 messages with LAST each way (4 round trips)" % len(w),
       "RDMAW key 4202: %d packets (%s)" % (len(w), [(f(x, 'weft.src_node'), f(x, 'weft.total_length'), f(x, 'weft.offset'), f(x, 'weft.flags.last')) for x in w][:8]))
rq = by("RDMAR_REQ", 4203)
rw = [x for x in by("RDMAW", 4203) if f(x, "weft.flags.read_resp") == 1]
ok = rq and all(f(x, "weft.total_length") == 8192 and f(x, "weft.length") == 0 for x in rq) and \
    rw and all(f(x, "weft.total_length") == 8192 for x in rw)
report(ok, "RDMA read key 4203: %d RDMAR_REQ of 8192 bytes, answered by %d RDMAW READ_RESP packets" % (len(rq), len(rw)),
       "RDMA read key 4203: %d requests, %d responses" % (len(rq), len(rw)))
v = [x for x in weft if f(x, "weft.type_name") == "VERBS"]
def vop(op, **kw):
    return [x for x in v if f(x, "weft.vhdr.opcode_name") == op and all(f(x, "weft.vhdr." + k) == val for k, val in kw.items())]
s1 = vop("SEND", src_qpn=qa, dst_qpn=qb, psn=pa)
s2 = vop("SEND", src_qpn=qb, dst_qpn=qa, psn=pb)
ok = s1 and s2 and f(s1[0], "weft.vhdr.dma_len") == 2048 and f(s1[0], "weft.vhdr.flags.first") == 1 and \
    f(s1[0], "weft.src_node") == 0 and f(s2[0], "weft.src_node") == 1
report(ok, "ibv_rc_pingpong: first SEND QP 0x%x -> 0x%x PSN 0x%x (node0) and QP 0x%x -> 0x%x PSN 0x%x (node1), 2048-byte messages, FIRST set" % (qa, qb, pa, qb, qa, pb),
       "no SEND QP 0x%x -> 0x%x PSN 0x%x / QP 0x%x -> 0x%x PSN 0x%x (sends seen: %s)" % (qa, qb, pa, qb, qa, pb,
       [(f(x, 'weft.vhdr.src_qpn'), f(x, 'weft.vhdr.dst_qpn'), f(x, 'weft.vhdr.psn')) for x in vop('SEND')][:4]))
acks = vop("ACK")
ok = acks and all(f(x, "weft.vhdr.syndrome_name") in ("ACK", "NAK_SEQ", "NAK_RNR") for x in acks)
report(ok, "%d ACK packets with syndrome names" % len(acks), "ACK packets: %d" % len(acks))
wr = vop("WRITE", dma_len=4096)
rr = vop("READ_REQ", dma_len=4096)
resp = vop("READ_RESP")
at = vop("FAA") + vop("CAS")
ar = vop("ATOMIC_RESP")
ok = wr and rr and resp and at and ar
report(ok, "ib_write_bw: %d WRITE of 4096; ib_read_bw: %d READ_REQ of 4096, %d READ_RESP; ib_atomic_bw: %d %s, %d ATOMIC_RESP" % (
       len(wr), len(rr), len(resp), len(at), "/".join(sorted({f(x, 'weft.vhdr.opcode_name') for x in at})), len(ar)),
       "verbs: %d WRITE, %d READ_REQ, %d READ_RESP, %d atomics, %d ATOMIC_RESP" % (len(wr), len(rr), len(resp), len(at), len(ar)))
t = vop("TERMINATE")
ok = t and all(f(x, "weft.src_node") == 0 and f(x, "weft.dst_node") == 1 for x in t) and \
    all(f(x, "weft.vhdr.syndrome_name") not in (None, "UNKNOWN", "OK") for x in t)
report(ok, "%d TERMINATE node0 -> node1, syndromes %s" % (len(t), ",".join(sorted({str(f(x, 'weft.vhdr.syndrome_name')) for x in t}))),
       "TERMINATE: %s" % [(f(x, 'weft.src_node'), f(x, 'weft.vhdr.syndrome_name')) for x in t][:5])
req = [x for x in weft if f(x, "ip.src") == "10.87.0.1" and f(x, "ip.dst") == "10.87.0.2" and f(x, "icmp.type") == 8]
rep = [x for x in weft if f(x, "ip.src") == "10.87.0.2" and f(x, "icmp.type") == 0]
ok = len(req) >= 3 and len(rep) >= 3 and all(f(x, "weft.key") == 0x4e455449 and f(x, "weft.type_name") == "FIFO" for x in req + rep)
report(ok, "IP over Weft: %d ICMP echo requests 10.87.0.1 -> 10.87.0.2 and %d replies, in FIFO packets with key WEFT_NET_KEY, decoded by Wireshark's IP dissector" % (len(req), len(rep)),
       "ICMP: %d requests, %d replies decoded" % (len(req), len(rep)))
EOF
	verdicts <"$TMP/ws.verdicts" || return 1
	no_oops "$c" 0 && no_oops "$c" 1
}

# gdb on node1 in batch mode: a breakpoint in weft_ib.ko, hit by a sysfs
# read; the backtrace names the function and its caller in ib_core,
# arguments and driver structures print, and the guest runs on.
GDB_FUNC=weft_ib_query_port
sc_gdb() {
	local c=$1 tpid gpid rc out=$TMP/gdb.out d no7
	command -v gdb >/dev/null || fail "gdb is not installed (scripts/weft-test installs it)" || return 1
	ib_load "$c" 1 || return 1
	hexreg "$c" 1 VERBS_NR_QP || return 1
	NRQP=$VAL
	# A node that does not exist or does not run is refused.
	if OUT=$("$WC" --name "$c" gdb 7 --batch 2>&1) || ! grep -q 'has nodes 0..1' <<<"$OUT"; then
		fail "gdb on node 7 of a 2-node cluster: $OUT"
		return 1
	fi
	no7=$OUT
	d=$(mktemp -d "$TMP/stopped.XXXXXX")
	printf 'NODES=2\nIMAGE=/nonexistent\n' >"$d/cluster.env"
	sh -c 'exit 0' & wait $!
	echo $! >"$d/node1.pid"
	if OUT=$(python3 "$WEFT_ROOT/scripts/weft-gdb" --dir "$d" --name stopped 1 --batch 2>&1) ||
		! grep -q 'node1 of cluster stopped is not running' <<<"$OUT"; then
		fail "weft-gdb on a stopped node: $OUT"
		return 1
	fi
	checked "refused: a node outside the cluster ($no7), a node that is not running ($OUT)"
	( timeout -s INT 300 "$WC" --name "$c" gdb 1 --batch -ex "break $GDB_FUNC" \
		-ex 'echo weft-gdb: continuing\n' -ex continue -ex bt \
		-ex 'info args' -ex 'print ibdev->name' -ex 'print ((struct weft_ibdev *)ibdev)->caps' \
		-ex 'ptype struct weft_ibdev' -ex delete -ex detach \
		>"$out" 2>&1; echo $? >"$TMP/gdb.rc" ) &
	tpid=$!
	for _ in $(seq 300); do
		grep -q '^weft-gdb: continuing' "$out" 2>/dev/null && break
		[ -f "$TMP/gdb.rc" ] && break
		sleep 1
	done
	grep -q '^weft-gdb: continuing' "$out" || { sed 's/^/  | /' "$out" | tail -n 20; fail "gdb did not attach and continue"; wait "$tpid"; return 1; }
	checked "gdb attached to node1 over $(weft_run_dir)/$c/node1.gdb.sock, symbols loaded, breakpoint set, guest continued: $(grep -m1 '^Breakpoint 1 at' "$out")"
	gx "$c" 1 "cat /sys/class/infiniband/weft_ib0/ports/1/state"
	rc=$RC
	# The breakpoint hit, gdb prints and detaches; 60 s at most.
	for _ in $(seq 60); do
		[ -f "$TMP/gdb.rc" ] && break
		sleep 1
	done
	if [ ! -f "$TMP/gdb.rc" ]; then
		# Still waiting in "continue": interrupt gdb (the child of our
		# timeout), which then runs the rest and detaches.
		gpid=$(pgrep -P "$(pgrep -P "$tpid" | head -n 1)" | head -n 1)
		[ -z "$gpid" ] || kill -INT "$gpid"
	fi
	wait "$tpid"
	grep -vE '^warning: |_addr = |^add symbol table|^Reading symbols|^$' "$out" | head -n 30 | sed 's/^/  | gdb: /'
	[ "$rc" = 0 ] && grep -q ACTIVE <<<"$OUT" || fail "node1: port state read under gdb: $OUT" || return 1
	grep -qE "^Breakpoint 1, $GDB_FUNC \(" "$out" || fail "breakpoint in $GDB_FUNC not hit" || return 1
	grep -qE "^#0 +$GDB_FUNC \(" "$out" || fail "backtrace frame #0 is not $GDB_FUNC" || return 1
	grep -qE '^#1 +0x[0-9a-f]+ in [A-Za-z_][A-Za-z0-9_.]* ' "$out" || fail "backtrace frame #1 names no caller" || return 1
	checked "backtrace: $(grep -E '^#0 ' "$out" | cut -c1-70) ... called by $(sed -n 's/^#1 *0x[0-9a-f]* in \([^ ]*\) .*/\1/p' "$out")"
	grep -qE '^port = 1$' "$out" && grep -q '"weft_ib0"' "$out" && grep -q '^type = struct weft_ibdev {' "$out" &&
		grep -qE "^\\\$2 = \\{nr_qp = $NRQP, .* node_id = 1, " "$out" ||
		fail "arguments or driver structures not printed as expected (nr_qp $NRQP, node_id 1)" || return 1
	checked "info args shows port = 1, ibdev->name is \"weft_ib0\", the driver's caps $(grep -E '^[$]2 = ' "$out" | cut -c1-90)..., ptype prints struct weft_ibdev"
	grep -q '^\[Inferior 1 (process 1) detached\]' "$out" || fail "gdb did not detach" || return 1
	gx "$c" 1 "cat /sys/class/infiniband/weft_ib0/ports/1/state; head -n 1 /sys/kernel/debug/weft/weft0/state"
	[ "$RC" = 0 ] && grep -q ACTIVE <<<"$OUT" || fail "node1 after gdb detached: $OUT" || return 1
	checked "gdb detached; node1 answers, port ACTIVE: $(tr '\n' ' ' <<<"$OUT")"
	no_oops "$c" 1
}

# One FIFO exchange (weft-pingpong, 1 round trip after 1 warm-up) in the
# timeline of the nodes' QEMU traces and the capture: node0's doorbell
# write, its packet on the wire, node1's receive and its answer, in order.
sc_timeline() {
	local c=$1 d
	d=$(weft_run_dir)/$c
	ls "$d"/node0.trace "$d"/node1.trace >/dev/null 2>&1 ||
		fail "no nodeN.trace in $d: the cluster was not started with --trace" || return 1
	cap_start "$c" timeline || return 1
	tool2 "$c" 1 0 tl-fifo 4301 weft-pingpong "--mode fifo --size 64 --iters 1" || return 1
	cap_stop "$c" || return 1
	python3 "$WEFT_ROOT/scripts/weft-timeline" --json --capture "$CAP" "$d" >"$TMP/tl.json" 2>"$TMP/tl.err" ||
		fail "weft-timeline: $(cat "$TMP/tl.err")" || return 1
	python3 "$WEFT_ROOT/scripts/weft-timeline" --merged --capture "$CAP" "$d" >"$TMP/tl.txt" 2>&1 ||
		fail "weft-timeline --merged: $(tail -n 2 "$TMP/tl.txt")" || return 1
	python3 - "$TMP/tl.json" "$SW" >"$TMP/tl.verdicts" 2>&1 <<'EOF' || echo 'fail|the checker failed' >>"$TMP/tl.verdicts"
import json, re, sys
ev = [json.loads(l) for l in open(sys.argv[1])]
sw = int(sys.argv[2])
wire = [e for e in ev if e["kind"] == "wire" and e["node"] == 0 and e["frame"]["type"] == "FIFO"
        and e["frame"]["src"] == 0 and e["frame"]["dst"] == 1 and e["frame"]["dst_window"] == sw
        and e["frame"]["length"] == 64]
# The warm-up and the measured round trip.
if len(wire) != 2:
    print("fail|%d FIFO frames node0 -> node1 window %d of 64 bytes in the capture, expected the warm-up and the round trip" % (len(wire), sw))
    sys.exit(0)
w = wire[1]
print("ok|capture: %d FIFO frames of 64 bytes node0 -> node1 window %d (warm-up and round trip), the second at %.6f" % (len(wire), sw, w["t"]))
db = [e for e in ev if e["node"] == 0 and e["event"] == "weft_db_write" and "START_TRANSMIT" in e["text"]
      and wire[0]["t"] < e["t"] <= w["t"]]
# The traces count the whole packet: the 104-byte header and the payload.
tx = [e for e in ev if e["node"] == 0 and e["event"] == "weft_pkt_tx"
      and re.search(r"FIFO node 0 -> node 1 window %d, 168 bytes" % sw, e["text"]) and e["t"] > wire[0]["t"]]
rx = [e for e in ev if e["node"] == 1 and e["event"] == "weft_pkt_rx"
      and re.search(r"FIFO node 0 -> node 1 window %d, 168 bytes" % sw, e["text"]) and e["t"] >= w["t"]]
back = [e for e in ev if e["kind"] == "wire" and e["node"] == 1 and e["frame"]["type"] == "FIFO"
        and e["frame"]["src"] == 1 and e["frame"]["dst"] == 0 and e["frame"]["length"] == 64 and rx and e["t"] >= rx[0]["t"]]
if not db:
    print("fail|node0: no START_TRANSMIT doorbell write between the two frames")
elif not tx or tx[0]["t"] < db[-1]["t"]:
    print("fail|node0: no FIFO tx trace after its doorbell write")
elif not rx:
    print("fail|node1: no FIFO rx trace after the frame was on the wire")
elif not back:
    print("fail|node1: no answer on the wire after its receive")
else:
    print("ok|in order: node0's %s at +%.6f s, tx trace at +%.6f, wire at +%.6f, node1 rx at +%.6f, node1's answer on the wire at +%.6f"
          % (db[-1]["text"].split(" [")[0], 0, tx[0]["t"] - db[-1]["t"], w["t"] - db[-1]["t"], rx[0]["t"] - db[-1]["t"], back[0]["t"] - db[-1]["t"]))
    print("timeline from node0's doorbell write to node1's answer (weft-timeline --merged):")
    for e in ev:
        if db[-1]["t"] <= e["t"] <= back[0]["t"] and (e["kind"] != "wire" or e in (w, back[0])):
            print("  %+10.6f  node%d  %-5s %s %s" % (e["t"] - db[-1]["t"], e["node"], e["kind"], e["event"], e["text"][:90]))
EOF
	verdicts <"$TMP/tl.verdicts"
}
