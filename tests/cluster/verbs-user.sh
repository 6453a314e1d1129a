# shellcheck shell=bash
# User-space verbs scenarios (docs/rdma-provider.md): Debian's unmodified
# rdma-core examples and perftest on the Weft provider, node0 (client) and
# node1 (server), sourced by tests/cluster/run.sh after tests/cluster/ib.sh
# and run with their helpers (gx, bg, bgwait, fail, checked, say, no_oops;
# ib_load, hexreg).  Node N has 10.87.0.(N+1) on weft0, so its RoCE v2 GID
# is ::ffff:10.87.0.(N+1).
# Each scenario returns non-zero at the first check that does not hold.

# ib_dev CLUSTER NODE: the RDMA modules loaded, the node's ib_device as
# libibverbs lists it (into $UDEV) and the GID index of its IPv4 address
# (into $GIDX), from ibv_devinfo -v.
ib_dev() {
	local c=$1 n=$2 addr
	ib_load "$c" "$n" || return 1
	addr="::ffff:$(ip4 "$n")"
	gx "$c" "$n" "ibv_devinfo -v"
	[ "$RC" = 0 ] || fail "node$n: ibv_devinfo -v failed ($RC): $(tail -n 3 <<<"$OUT")" || return 1
	UDEV=$(awk '/^hca_id:/ {print $2; exit}' <<<"$OUT")
	# GID[  3]:		::ffff:10.87.0.1, RoCE v2
	GIDX=$(awk -v a="$addr," '/GID\[/ && /RoCE v2/ && index($0, a) {
		g = $0; sub(/.*GID\[ */, "", g); sub(/\].*/, "", g); print g + 0; exit}' <<<"$OUT")
	[ -n "$UDEV" ] || fail "node$n: ibv_devinfo lists no device: $(tail -n 3 <<<"$OUT")" || return 1
	[ -n "$GIDX" ] || fail "node$n: $UDEV has no RoCE v2 GID $addr" || return 1
}

# res_counts CLUSTER NODE: the device's ib_core object counts (pd cq qp mr
# ctx ...), from iproute2's `rdma resource show`, into $RES.
res_counts() {
	gx "$1" "$2" "/usr/bin/rdma resource show"
	[ "$RC" = 0 ] || fail "node$2: rdma resource show failed: $OUT" || return 1
	RES=$(grep -F " $UDEV: " <<<"$OUT" | sed 's/^[0-9]*: [^ ]*: //')
	[ -n "$RES" ] || fail "node$2: rdma resource show has no line for $UDEV: $OUT"
}

# user_objects CLUSTER NODE: how many PDs, CQs, QPs and MRs of $UDEV a
# process owns (`rdma resource show` names their pid), into $UOBJ.
user_objects() {
	gx "$1" "$2" "for t in pd cq qp mr; do /usr/bin/rdma resource show \$t dev $UDEV; done"
	[ "$RC" = 0 ] || fail "node$2: rdma resource show failed: $OUT" || return 1
	UOBJ=$(grep -c ' pid ' <<<"$OUT" || true)
}

# res_le A B: every "name count" of resource line A is at most B's.
res_le() {
	local -A b=()
	local -a w
	local k
	read -ra w <<<"$2"
	for ((k = 0; k + 1 < ${#w[@]}; k += 2)); do b[${w[k]}]=${w[k + 1]}; done
	read -ra w <<<"$1"
	for ((k = 0; k + 1 < ${#w[@]}; k += 2)); do
		[ "${w[k + 1]}" -le "${b[${w[k]}]:-0}" ] || return 1
	done
}

# cm_listening CLUSTER NODE: waits (30 s at most) until an rdma_cm ID
# listens on NODE (`rdma resource show cm_id`).
cm_listening() {
	gx "$1" "$2" "for i in \$(seq 150); do /usr/bin/rdma resource show cm_id | grep -q LISTEN && exit 0; sleep 0.2; done; exit 1"
	[ "$RC" = 0 ]
}

# pair CLUSTER NAME SERVER_CMD CLIENT_CMD: the server on node1, then the
# client on node0: after the server's rdma_cm ID listens when the commands
# use rdma_cm (PAIR_CM=1), else retried while the server's TCP port is not
# open yet; the outputs in $SOUT/$COUT, exit statuses in $SRC/$CRC.  A
# server whose client failed would wait for it forever: it is killed.
pair() {
	local c=$1 name=$2 s=$3 cl=$4
	bg "$c" 1 "$name-s" "$s"
	if [ "${PAIR_CM:-0}" = 1 ]; then
		cm_listening "$c" 1 || say "node1: no rdma_cm ID listening after 30 s"
		# perftest gives rdma_resolve_addr and rdma_resolve_route 2 s
		# each; under TCG an ARP exchange can take longer, so the
		# neighbour is resolved first (as on any host that has talked
		# to its peer before).
		gx "$c" 0 "ping -c 1 -W 10 $(ip4 1) >/dev/null; $cl"
	else
		gx "$c" 0 "i=0; while [ \$i -lt 20 ]; do $cl 2>/tmp/$name.err && exit 0;
			grep -q -e 'Couldn.t connect' -e 'Unable to open' /tmp/$name.err || { cat /tmp/$name.err; exit 1; };
			i=\$((i + 1)); sleep 1; done; cat /tmp/$name.err; exit 1"
	fi
	COUT=$OUT CRC=$RC
	if [ "$CRC" != 0 ]; then
		sleep 5
		bgdone "$name-s" || gx "$c" 1 "killall -KILL ${s%% *}"
	fi
	bgwait "$name-s"
	SOUT=$OUT SRC=$RC
	[ "$CRC" = 0 ] && [ "$SRC" = 0 ] && return 0
	say "client exit $CRC, server exit $SRC"
	tail -n 12 <<<"$COUT" | cut -c1-200 | sed "s/^/  | client: /"
	tail -n 12 <<<"$SOUT" | cut -c1-200 | sed "s/^/  | server: /"
	return 1
}

sc_ibv_devinfo() {
	local c=$1 n v l got
	for n in 0 1; do
		ib_dev "$c" "$n" || return 1
		gx "$c" "$n" "ibv_devices; ibv_devinfo -v -d $UDEV"
		v=$OUT
		grep -q "^ *$UDEV" <<<"$v" || fail "node$n: ibv_devices does not list $UDEV" || return 1
		grep -qE 'state:[[:space:]]+PORT_ACTIVE' <<<"$v" || fail "node$n: port not ACTIVE: $(grep state: <<<"$v")" || return 1
		grep -qE 'link_layer:[[:space:]]+Ethernet' <<<"$v" || fail "node$n: link layer not Ethernet: $(grep link_layer <<<"$v")" || return 1
		grep -qE 'vendor_id:[[:space:]]+0x1234' <<<"$v" && grep -qE 'vendor_part_id:[[:space:]]+30565' <<<"$v" ||
			fail "node$n: not the Weft PCI function: $(grep -E 'vendor' <<<"$v" | tr '\n' ' ')" || return 1
		# The limits are the adapter's registers (docs/verbs-linux.md):
		# QPs less QP0 and the GSI, TPT entries less entry 0, SRQs
		# numbered 1 .. VERBS_NR_QP - 1.
		for l in "VERBS_NR_QP max_qp -2" "VERBS_NR_CQ max_cq 0" "VERBS_NR_PD max_pd 0" \
			"VERBS_NR_TPT max_mr -1" "VERBS_NR_QP max_srq -1"; do
			set -- $l
			hexreg "$c" "$n" "$1" || return 1
			got=$(awk -v k="$2:" '$1 == k {print $2; exit}' <<<"$v")
			[ "$got" = $((VAL + $3)) ] ||
				fail "node$n: ibv_devinfo $2 = '$got', the adapter's $1 is $VAL" || return 1
		done
		grep -qE 'max_srq_wr:[[:space:]]+4096$' <<<"$v" || fail "node$n: max_srq_wr is not 4096" || return 1
		checked "node$n: $UDEV (0x1234:0x7765), port ACTIVE, Ethernet, GID[$GIDX] ::ffff:$(ip4 "$n") RoCE v2, $(grep -E 'max_(qp|cq|pd):' <<<"$v" | tr -s '\t ' ' ' | tr '\n' ' ')"
	done
}

sc_rc_pingpong() {
	local c=$1 sgid cgid dev
	ib_dev "$c" 1 || return 1
	sgid=$GIDX
	ib_dev "$c" 0 || return 1
	cgid=$GIDX dev=$UDEV
	pair "$c" rcpp "ibv_rc_pingpong -d $dev -g $sgid -c -s 4096 -n 500" \
		"ibv_rc_pingpong -d $dev -g $cgid -c -s 4096 -n 500 $(ip4 1)" ||
		fail "ibv_rc_pingpong -c failed" || return 1
	grep -q '^4096000 bytes in' <<<"$COUT" && grep -q '^500 iters in' <<<"$COUT" ||
		fail "ibv_rc_pingpong printed no result: $COUT" || return 1
	checked "ibv_rc_pingpong -c (data validated), 500 x 4096 B: $(grep -h 'bytes in' <<<"$COUT")"
	pair "$c" udpp "ibv_ud_pingpong -d $dev -g $sgid -s 1024 -n 500" \
		"ibv_ud_pingpong -d $dev -g $cgid -s 1024 -n 500 $(ip4 1)" ||
		fail "ibv_ud_pingpong failed" || return 1
	grep -q '^1024000 bytes in' <<<"$COUT" || fail "ibv_ud_pingpong printed no result: $COUT" || return 1
	checked "ibv_ud_pingpong, 500 x 1024 B: $(grep -h 'bytes in' <<<"$COUT")"
	no_oops "$c" 0 && no_oops "$c" 1
}

# perf_run CLUSTER TOOL ARGS: one perftest pair; its result line in $LINE.
perf_run() {
	local c=$1 tool=$2 args=$3
	pair "$c" "$tool" "$tool -d $PDEV -x $PSGID -F $args" \
		"$tool -d $PDEV -x $PCGID -F $args $(ip4 1)" ||
		fail "$tool $args failed" || return 1
	# The result line: the size, the iterations, then the figures.
	LINE=$(awk '/^ *#bytes/ {h = 1; next} h && $1 ~ /^[0-9]+$/ {print; exit}' <<<"$COUT")
	[ -n "$LINE" ] || fail "$tool $args printed no result line: $(tail -n 5 <<<"$COUT")"
}

# perf_bw CLUSTER TOOL SIZE ITERS [FLAGS]: a bandwidth test with sane figures.
perf_bw() {
	local c=$1 t=$2 sz=$3 n=$4 f=${5:-}
	perf_run "$c" "$t" "$f -s $sz -n $n --report_gbits" || return 1
	# #bytes #iterations BW peak BW average MsgRate
	awk -v s="$sz" -v n="$n" '{exit !($1 == s && $2 == n && $4 > 0)}' <<<"$LINE" ||
		fail "$t $f $sz B: no sane figures: $LINE" || return 1
	checked "$t $f $sz B x $n: $(awk '{printf "average %s Gb/s, %s Mpps", $4, $5}' <<<"$LINE")"
}

# perf_lat CLUSTER TOOL SIZE ITERS [FLAGS]: a latency test with sane figures.
perf_lat() {
	local c=$1 t=$2 sz=$3 n=$4 f=${5:-}
	perf_run "$c" "$t" "$f -s $sz -n $n" || return 1
	# #bytes #iterations t_min t_max t_typical t_avg ...
	awk -v s="$sz" -v n="$n" '{exit !($1 == s && $2 == n && $3 > 0 && $6 >= $3)}' <<<"$LINE" ||
		fail "$t $f $sz B: no sane figures: $LINE" || return 1
	checked "$t $f $sz B x $n: $(awk '{printf "t_min %s us, t_typical %s us, t_avg %s us", $3, $5, $6}' <<<"$LINE")"
}

# perf_gids CLUSTER: the device and both nodes' GID indexes (PDEV, PSGID
# for the server node1, PCGID for the client node0).
perf_gids() {
	ib_dev "$1" 1 || return 1
	PSGID=$GIDX
	ib_dev "$1" 0 || return 1
	PCGID=$GIDX PDEV=$UDEV
}

# perf_all CLUSTER [FLAGS]: every perftest tool at sizes up to 1 MiB.
perf_all() {
	local c=$1 f=${2:-} t sz
	perf_gids "$c" || return 1
	for t in ib_write_bw ib_read_bw ib_send_bw; do
		for sz in 4096 65536 1048576; do
			perf_bw "$c" "$t" "$sz" $((sz < 1048576 ? 200 : 50)) "$f" || return 1
		done
	done
	perf_bw "$c" ib_atomic_bw 8 200 "$f" || return 1
	for t in ib_write_lat ib_read_lat ib_send_lat; do
		for sz in 8 4096 1048576; do
			perf_lat "$c" "$t" "$sz" $((sz < 1048576 ? 200 : 20)) "$f" || return 1
		done
	done
	no_oops "$c" 0 && no_oops "$c" 1
}

sc_perftest() { perf_all "$1"; }
sc_perftest_cm() { PAIR_CM=1 perf_all "$1" -R; }

sc_rping() {
	local c=$1
	ib_load "$c" 0 && ib_load "$c" 1 || return 1
	PAIR_CM=1 pair "$c" rping "rping -s -a $(ip4 1) -V -C 200 -S 1024" \
		"rping -c -a $(ip4 1) -V -C 200 -S 1024 -v" ||
		fail "rping -c -V failed" || return 1
	# -v prints each ping's data: 200 lines, none with a verify error.
	[ "$(grep -c '^ping data: rdma-ping-' <<<"$COUT")" = 200 ] ||
		fail "rping printed $(grep -c "^ping data" <<<"$COUT") of 200 pings: $(tail -n 3 <<<"$COUT" | cut -c1-200)" || return 1
	checked "rping -c -V -C 200 -S 1024 (verify): 200 pings, each verified"
	no_oops "$c" 0 && no_oops "$c" 1
}

# A lossy fabric: the same perftest write and read through a switch that
# drops 1% of the frames and reorders them over 4 routes.
sc_verbs_lossy() {
	local c=$1 r0 r1 t0 t1 rc=0
	perf_gids "$c" || return 1
	counter "$c" 0 V_RETRANSMITS || return 1
	r0=$VAL
	counter "$c" 0 V_TIMEOUTS || return 1
	t0=$VAL
	OUT=$("$WC" --name "$c" faults set drop_ppm=10000 routes=4 jitter_ns=50000 2>&1) ||
		fail "switch: faults set: $OUT" || return 1
	say "switch faults: $OUT"
	perf_bw "$c" ib_write_bw 65536 100 && perf_bw "$c" ib_read_bw 65536 100 || rc=1
	"$WC" --name "$c" faults clear >/dev/null 2>&1 || { fail "switch: faults clear failed"; return 1; }
	[ $rc = 0 ] || return 1
	counter "$c" 0 V_RETRANSMITS || return 1
	r1=$VAL
	counter "$c" 0 V_TIMEOUTS || return 1
	t1=$VAL
	[ "$r1" -gt "$r0" ] || fail "node0: V_RETRANSMITS did not move ($r0 -> $r1)" || return 1
	checked "through 1% loss and reordering: node0 V_RETRANSMITS $r0 -> $r1, V_TIMEOUTS $t0 -> $t1"
	no_oops "$c" 0 && no_oops "$c" 1
}

sc_verbs_kill() {
	local c=$1 sgid cgid dev before0 before1 during
	ib_dev "$c" 1 || return 1
	sgid=$GIDX
	ib_dev "$c" 0 || return 1
	cgid=$GIDX dev=$UDEV
	res_counts "$c" 0 || return 1
	before0=$RES
	res_counts "$c" 1 || return 1
	before1=$RES
	# A 60 s write stream, killed with SIGKILL on both sides after 5 s.
	bg "$c" 1 kill-s "ib_write_bw -d $dev -x $sgid -F -D 60 -s 65536 & echo \$! >/tmp/kill-s.pid; wait"
	gx "$c" 0 "i=0; while [ \$i -lt 20 ]; do ib_write_bw -d $dev -x $cgid -F -D 60 -s 65536 $(ip4 1) >/tmp/kill-c.out 2>&1 & p=\$!;
		sleep 5; if kill -0 \$p 2>/dev/null; then /usr/bin/rdma resource show | sed 's/^/during: /'; kill -9 \$p; echo killed-running; exit 0; fi;
		grep -q -e 'Couldn.t connect' -e 'Unable to open' /tmp/kill-c.out || { cat /tmp/kill-c.out; exit 1; }; i=\$((i + 1)); done; exit 1"
	[ "$RC" = 0 ] && grep -q killed-running <<<"$OUT" ||
		fail "node0: ib_write_bw was not running after 5 s: $OUT" || return 1
	during=$(grep -F "during: 0: $dev: " <<<"$OUT" | sed 's/^during: [0-9]*: [^ ]*: //')
	[ -n "$during" ] && [ "$during" != "$before0" ] ||
		fail "node0: the running ib_write_bw held no objects: before '$before0', during '$during'" || return 1
	gx "$c" 1 "kill -9 \$(cat /tmp/kill-s.pid)"
	bgwait kill-s
	# The kernel tears a killed process's objects down when its file
	# descriptors close; allow it a few seconds under TCG.
	for _ in 1 2 3 4 5 6 7 8 9 10; do
		res_counts "$c" 0 || return 1
		[ "$RES" = "$before0" ] && break
		sleep 1
	done
	[ "$RES" = "$before0" ] || fail "node0: objects left after the kill: before '$before0', after '$RES'" || return 1
	res_counts "$c" 1 || return 1
	[ "$RES" = "$before1" ] || fail "node1: objects left after the kill: before '$before1', after '$RES'" || return 1
	checked "ib_write_bw killed mid-transfer on both nodes: ib_core objects from '$during' back to the start ($before0)"
	no_oops "$c" 0 && no_oops "$c" 1
}

# Adapter recovery under a running user verbs program (docs/verbs-linux.md):
# node1's adapter is recovered while ib_write_bw streams node0 -> node1.
# Both programs end with an error, the process's objects are gone, a new
# weft_ib0 comes up ACTIVE by itself and a new ib_write_bw runs.
sc_verbs_recovery() {
	local c=$1 start1
	perf_gids "$c" || return 1
	res_counts "$c" 1 || return 1
	start1=$RES
	bg "$c" 1 rec-s "ib_write_bw -d $PDEV -x $PSGID -F -D 60 -s 65536"
	bg "$c" 0 rec-c "i=0; while [ \$i -lt 20 ]; do ib_write_bw -d $PDEV -x $PCGID -F -D 60 -s 65536 $(ip4 1) 2>/tmp/rec.err && exit 0;
		grep -q -e 'Couldn.t connect' -e 'Unable to open' /tmp/rec.err || { cat /tmp/rec.err; exit 1; };
		i=\$((i + 1)); sleep 1; done; exit 2"
	# Streaming: node1 holds the server's QP beside the GSI QP.
	for _ in $(seq 30); do
		res_counts "$c" 1 || return 1
		[ "$RES" != "$start1" ] && break
		sleep 1
	done
	[ "$RES" != "$start1" ] || fail "node1: ib_write_bw never created its objects ($RES)" || return 1
	sleep 3
	bgdone rec-c && { bgwait rec-c; fail "node0: ib_write_bw ended before the recovery: $(tail -n 3 <<<"$OUT")"; return 1; }
	gx "$c" 1 "echo 1 >/sys/class/misc/weft0/device/recover"
	[ "$RC" = 0 ] || fail "node1: recovery through sysfs failed: $OUT" || return 1
	bgwait rec-s
	[ "$RC" != 0 ] || fail "node1: ib_write_bw exited 0 across the recovery" || return 1
	checked "node1: adapter recovered under ib_write_bw; the server ended with an error (exit $RC: $(tail -n 1 <<<"$OUT" | cut -c1-80))"
	bgwait rec-c
	[ "$RC" != 0 ] || fail "node0: ib_write_bw exited 0 although its peer's adapter was recovered" || return 1
	checked "node0: the client ended with an error too (exit $RC)"
	gx "$c" 1 "for i in \$(seq 100); do /usr/bin/rdma link show 2>/dev/null | grep -q 'state ACTIVE' && exit 0; sleep 0.2; done; /usr/bin/rdma link show; exit 1"
	[ "$RC" = 0 ] || fail "node1: no ACTIVE RDMA link after the recovery: $OUT" || return 1
	# The new device holds only ib_core's own objects: none owned by a
	# process, and no more of any kind than the old one held at the start
	# (it can hold fewer: ib_core keeps CQ pools, which nvme-rdma fills,
	# until a device goes away).
	for _ in $(seq 20); do
		res_counts "$c" 1 || return 1
		user_objects "$c" 1 || return 1
		[ "$UOBJ" = 0 ] && res_le "$RES" "$start1" && break
		sleep 0.5
	done
	[ "$UOBJ" = 0 ] || fail "node1: $UOBJ objects of a process after the recovery: $OUT" || return 1
	res_le "$RES" "$start1" || fail "node1: objects after the recovery '$RES', more than at the start '$start1'" || return 1
	checked "node1: a new $UDEV came up ACTIVE by itself holding no process's objects; ib_core objects '$RES' (at the start '$start1')"
	perf_gids "$c" || return 1
	perf_bw "$c" ib_write_bw 65536 100 || return 1
	no_oops "$c" 0 && no_oops "$c" 1
}

# ---- the verbs test programs (tests/verbs/, docs/rdma-provider.md "Tests") ----

# vtap NODE NAME: the TAP output ($OUT, exit status $RC) of a verbs test
# program as the scenario's checks: each "# checked:" line (printed only
# for a point whose checks held) is a check, each "not ok" point a failed
# one; the program must also exit 0 with its whole plan passed.
vtap() {
	local n=$1 name=$2 line ok bad plan
	while IFS= read -r line; do
		case $line in
		"# checked: node"*) checked "${line#"# checked: "}" ;;
		"# checked: "*) checked "node$n: ${line#"# checked: "}" ;;
		# the failed point is a check of its own: checked closes it
		"not ok "*) fail "node$n: $name: ${line#not ok }" || checked "$line" ;;
		"# FAIL"* | "Bail out!"*) say "node$n: $line" ;;
		esac
	done <<<"$OUT"
	ok=$(grep -c '^ok ' <<<"$OUT")
	bad=$(grep -c '^not ok ' <<<"$OUT")
	plan=$(sed -n 's/^1\.\.\([0-9][0-9]*\)$/\1/p' <<<"$OUT" | tail -n1)
	if [ "$RC" != 0 ] || [ "$bad" != 0 ] || [ "$ok" = 0 ] || [ "${plan:-none}" != $((ok + bad)) ]; then
		tail -n 5 <<<"$OUT" | sed 's/^/  | /'
		fail "node$n: $name failed (exit $RC, $bad of $((ok + bad)) points failed, plan ${plan:-missing})"
		return 1
	fi
}

# vone CLUSTER TEST: TEST on node0 alone (-s -g GIDX).
vone() {
	local c=$1 t=$2
	gx "$c" 0 "/usr/lib/weft/tests/$t -s -g $G0"
	vtap 0 "$t"
}

# vpair CLUSTER TEST: TEST as the target on node0 (-s) and as the
# initiator on node1 (-c node0's address), each with its node's GID index.
vpair() {
	local c=$1 t=$2 cout crc
	bg "$c" 0 "$t-s" "/usr/lib/weft/tests/$t -s -g $G0"
	gx "$c" 1 "/usr/lib/weft/tests/$t -c $(ip4 0) -g $G1"
	cout=$OUT crc=$RC
	bgwait "$t-s"
	vtap 0 "$t -s"
	OUT=$cout RC=$crc vtap 1 "$t -c"
}

# vrun CLUSTER HOW TEST: the RDMA modules loaded and the GID indexes found
# on both nodes (G0, G1), TEST run by HOW (vone or vpair); afterwards
# ib_core's object counts (`rdma resource show`) are back to their values
# before the run on both nodes, and neither kernel logged a warning.
vrun() {
	local c=$1 how=$2 t=$3 n rc=0
	local -a start
	need "$c" 0 "$t" || return 1
	ib_dev "$c" 1 || return 1
	G1=$GIDX
	ib_dev "$c" 0 || return 1
	G0=$GIDX
	for n in 0 1; do
		res_counts "$c" "$n" || return 1
		start[n]=$RES
	done
	"$how" "$c" "$t" || rc=1
	for n in 0 1; do
		# A process's objects go when its file descriptors close.
		for _ in 1 2 3 4 5 6 7 8 9 10; do
			res_counts "$c" "$n" || return 1
			[ "$RES" = "${start[n]}" ] && break
			sleep 1
		done
		[ "$RES" = "${start[n]}" ] ||
			fail "node$n: ib_core objects after $t: '$RES', before: '${start[n]}'" || rc=1
	done
	checked "both nodes: rdma resource show counts after $t as before it ($(tr -s ' ' <<<"${start[0]}"))"
	no_oops "$c" 0 && no_oops "$c" 1 || rc=1
	checked "both nodes: no kernel warning or oops"
	return $rc
}

sc_verbs_isolation() { vrun "$1" vpair weft-verbs-isolation; }
sc_verbs_errors() { vrun "$1" vone weft-verbs-errors; }
sc_verbs_mw() { vrun "$1" vpair weft-verbs-mw; }
