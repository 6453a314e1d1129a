# shellcheck shell=bash
# IP over Weft scenarios (docs/net.md), sourced by tests/cluster/run.sh and
# run with its helpers (gx, bg, bgwait, need, fail, checked, say).  Every
# node N has 10.87.0.(N+1)/16 and fd57:6566::(N+1)/64 on weft0 (the
# weft-cluster defaults).  Busybox sh runs its own applets first, so
# iproute2 and iputils are called by their paths.
# Each scenario returns non-zero at the first check that does not hold.

NT=/usr/lib/weft/tests/weft-test-net
IP=/sbin/ip
PING=/bin/ping

ip4() { echo "10.87.0.$(($1 + 1))"; }
ip6() { printf 'fd57:6566::%x\n' $(($1 + 1)); }

# netstat_sum CLUSTER NODE NAME...: sum of weft0 ethtool counters (into $VAL).
netstat_sum() {
	local c=$1 n=$2
	shift 2
	gx "$c" "$n" "ethtool -S weft0"
	[ "$RC" = 0 ] || fail "node$n: ethtool -S weft0 failed: $OUT" || return 1
	VAL=$(awk -v names=" $* " '{k = $1; sub(":", "", k)} index(names, " " k " ") {s += $2} END {print s + 0}' <<<"$OUT")
}

# ---- four nodes: reachability, ARP, flood ping, large broadcast -------------------
sc_ip_reach() {
	local c=$1 i j cmd bad=0
	for i in 0 1 2 3; do need "$c" "$i" ethtool || return 1; done
	for i in 0 1 2 3; do
		cmd=
		for j in 0 1 2 3; do
			[ "$i" = "$j" ] && continue
			cmd="$cmd $PING -c 2 -W 5 $(ip4 "$j") >/dev/null && echo v4-$j ok;"
			cmd="$cmd $PING -c 2 -W 5 $(ip6 "$j") >/dev/null && echo v6-$j ok;"
		done
		bg "$c" "$i" "reach$i" "$cmd $IP -4 neigh show dev weft0"
	done
	for i in 0 1 2 3; do
		bgwait "reach$i"
		for j in 0 1 2 3; do
			[ "$i" = "$j" ] && continue
			for v in v4 v6; do
				grep -qx "$v-$j ok" <<<"$OUT" || { say "node$i -> node$j: $v ping failed"; bad=$((bad + 1)); }
			done
			grep -q "^$(ip4 "$j") lladdr 02:57:46:00:00:0$j " <<<"$OUT" ||
				{ say "node$i: no ARP entry $(ip4 "$j") -> 02:57:46:00:00:0$j: $OUT"; bad=$((bad + 1)); }
		done
	done
	[ "$bad" = 0 ] || fail "$bad reachability checks failed" || return 1
	checked "every node pings every other over IPv4 and IPv6 (24 pairs), ARP resolved to 02:57:46:00:00:0N"
	GX_TIMEOUT=120 gx "$c" 0 "$PING -q -f -c 1500 -w 60 $(ip4 1)"
	grep -q ' 1500 received, 0% packet loss' <<<"$OUT" ||
		fail "node0 -> node1 ping -f: $(grep -E 'transmitted|rtt' <<<"$OUT" | tr '\n' ' ')" || return 1
	checked "ping -f node0 -> node1: $(grep -E 'transmitted' <<<"$OUT" | sed 's/, time.*//'), $(grep -o 'ipg/ewma.*' <<<"$OUT")"
}

sc_ip_bcast() {
	# The switch writes captures only inside the cluster's own folder.
	local c=$1 i pcap res
	pcap=$(weft_run_dir)/$c/ip-bcast.pcap
	for i in 0 1 2 3; do need "$c" "$i" weft-test-net || return 1; done
	"$WC" --name "$c" faults capture start "$pcap" >/dev/null 2>&1 || fail "capture start failed" || return 1
	for i in 1 2 3; do bg "$c" "$i" "bcast$i" "$NT udp-recv 5400 16384 21 60"; done
	sleep 5
	gx "$c" 0 "$NT udp-bcast 10.87.255.255 5400 16384 21"
	[ "$RC" = 0 ] || fail "node0: udp-bcast failed: $OUT" || return 1
	for i in 1 2 3; do
		bgwait "bcast$i"
		[ "$RC" = 0 ] && grep -q "received 16384 bytes intact from $(ip4 0)" <<<"$OUT" ||
			fail "node$i: the 16 KiB broadcast did not arrive intact: $OUT" || return 1
	done
	checked "a 16 KiB UDP broadcast from node0 reached node1, node2 and node3 intact"
	"$WC" --name "$c" faults capture stop >/dev/null 2>&1 || fail "capture stop failed" || return 1
	# The capture: FIFO packets from node 0 to 0xFFFF whose payload (net
	# header, Ethernet, IPv4) is one fragment of the UDP datagram.
	res=$(python3 - "$pcap" <<'EOF'
import struct, sys
H = 28  # struct weft_net_hdr (include/weft/net.h)
d = open(sys.argv[1], "rb").read()
off, frags = 24, {}
while off + 16 <= len(d):
    _, _, incl, _ = struct.unpack_from("<IIII", d, off)
    rec = d[off + 16:off + 16 + incl]
    off += 16 + incl
    if len(rec) < 104 + H + 34 or rec[1] != 1:
        continue
    dst, src = struct.unpack_from("<HH", rec, 4)
    p = rec[104:]
    if dst != 0xFFFF or src != 0 or p[1] != 1 or struct.unpack_from(">H", p, H + 12)[0] != 0x0800:
        continue
    ip = p[H + 14:]
    tot, ident, frag = struct.unpack_from(">HHH", ip, 2)
    if ip[9] != 17 or not (frag & 0x3fff):
        continue
    frags.setdefault(ident, []).append(((frag & 0x1fff) * 8, tot - 20, bool(frag & 0x2000), len(rec)))
for ident, fl in frags.items():
    fl.sort()
    total = sum(n for _, n, _, _ in fl)
    pos, ok = 0, True
    for o, n, mf, _ in fl:
        ok &= o == pos
        pos += n
    ok &= all(mf for _, _, mf, _ in fl[:-1]) and not fl[-1][2]
    if total == 16384 + 8 and ok:
        print("%d FIFO packets (IP id %d, at most %d bytes on the wire), offsets %s, MF set on all but the last"
              % (len(fl), ident, max(r for *_, r in fl), ",".join(str(o) for o, *_ in fl)))
        sys.exit(0)
print("no complete set of rewritten fragments; seen: %s" % {k: [(o, n, mf) for o, n, mf, _ in v] for k, v in frags.items()})
sys.exit(1)
EOF
) || fail "capture: $res" || return 1
	checked "capture: the datagram went as $res"
}

# ---- two nodes: TCP ------------------------------------------------------------------
sc_ip_tcp() {
	local c=$1 r want got
	for i in 0 1; do need "$c" "$i" iperf3 weft-test-net || return 1; done
	gx "$c" 1 'iperf3 -s -D -1 -p 5201'
	[ "$RC" = 0 ] || fail "node1: iperf3 server did not start: $OUT" || return 1
	sleep 1
	GX_TIMEOUT=120 gx "$c" 0 "iperf3 -c $(ip4 1) -p 5201 -t 10 -J"
	r=$(python3 -c '
import json, sys
j = json.loads(sys.stdin.read())
if j.get("error"):
    print("error: " + j["error"]); sys.exit(1)
e = j["end"]
print("%.0f Mbit/s sent, %.0f Mbit/s received, %d retransmits, %.1f s"
      % (e["sum_sent"]["bits_per_second"] / 1e6, e["sum_received"]["bits_per_second"] / 1e6,
         e["sum_sent"].get("retransmits", 0), e["sum_received"]["seconds"]))
' <<<"$OUT" 2>&1)
	local prc=$?
	[ "$RC" = 0 ] && [ "$prc" = 0 ] || fail "iperf3 node0 -> node1 (exit $RC): $r $(tail -n 3 <<<"$OUT")" || return 1
	checked "iperf3 TCP node0 -> node1, 10 s, no error: $r"
	# The expected sha256 comes from the same generator run on the host (the
	# guest test binary is static): hashing 256 MiB under TCG is slow.
	want=$("$WEFT_CACHE/guest-tests/weft-test-net" gen 268435456 12 | sha256sum | cut -c1-64)
	[[ $want =~ ^[0-9a-f]{64}$ ]] || fail "cannot run $WEFT_CACHE/guest-tests/weft-test-net on the host" || return 1
	GX_TIMEOUT=600 bg "$c" 1 ip-recv "$NT tcp-recv 5301 | sha256sum"
	GX_TIMEOUT=600 gx "$c" 0 "$NT tcp-send $(ip4 1) 5301 268435456 12"
	[ "$RC" = 0 ] || fail "node0: sending 256 MiB failed: $OUT" || return 1
	bgwait ip-recv
	got=$(grep -oE '^[0-9a-f]{64}' <<<"$OUT")
	[ "$RC" = 0 ] && [ "$want" = "$got" ] ||
		fail "256 MiB over TCP: sent sha256 $want, received $got (exit $RC)" || return 1
	checked "256 MiB through a TCP socket node0 -> node1: sha256 $got at both ends"
}

sc_ip_lossy() {
	local c=$1 want got drops
	need "$c" 0 weft-test-net || return 1
	"$WC" --name "$c" faults set drop=0.02 >/dev/null 2>&1 || fail "cannot set 2% loss on the switch" || return 1
	bg "$c" 1 ip-lossy "$NT tcp-recv 5302 | sha256sum"
	GX_TIMEOUT=300 gx "$c" 0 "$NT tcp-send $(ip4 1) 5302 4194304 13 && $NT gen 4194304 13 | sha256sum"
	local src=$RC sout=$OUT
	bgwait ip-lossy
	got=$(grep -oE '^[0-9a-f]{64}' <<<"$OUT")
	drops=$("$WC" --name "$c" faults --json counters 2>/dev/null |
		python3 -c 'import json,sys; print(json.load(sys.stdin)["total"]["drops"]["RANDOM"])' 2>/dev/null)
	"$WC" --name "$c" faults clear >/dev/null 2>&1 || fail "cannot clear the switch faults" || return 1
	want=$(grep -oE '^[0-9a-f]{64}' <<<"$sout")
	[ "$src" = 0 ] && [ "$RC" = 0 ] && [ -n "$want" ] && [ "$want" = "$got" ] ||
		fail "4 MiB over TCP with 2% loss: sent sha256 $want, received $got (exit $src/$RC)" || return 1
	[[ $drops =~ ^[0-9]+$ ]] && [ "$drops" -gt 0 ] || fail "the switch dropped nothing (drop_RANDOM '$drops')" || return 1
	checked "4 MiB over TCP through 2% loss ($drops frames dropped by the switch): sha256 $got at both ends"
}

# ---- two nodes: node1 rebooted / its adapter recovered while node0 pings it --------
# Frames from before the event are not delivered: frames captured by the
# switch before the event are replayed afterwards; the epoch checks
# (rx_drop_stale_*, rx_drop_unsynced) drop at least as many, and the data
# frames the drivers deliver meanwhile are no more than the peers' new
# ones (background ARP and neighbour discovery).
STALE=(rx_drop_stale_epoch rx_drop_stale_peer rx_drop_unsynced)
FRESH=(tx_frames tx_frag_frames tx_ip_pieces)
ip_event() {
	local c=$1 kind=$2 mark t seqs last k d0 d1 a0 a1 f0 f1 n s0
	need "$c" 0 ethtool || return 1
	netstat_sum "$c" 1 rx_drop_stale_epoch || return 1
	[ "$kind" = reboot ] && VAL=0	# the counters start again at the reboot
	s0=$VAL
	# The frames replayed below are the last 400 the switch captured before
	# the mark: make them IP frames, whatever ran on the cluster before.
	GX_TIMEOUT=120 gx "$c" 0 "$PING -q -f -c 300 -w 60 $(ip4 1)"
	grep -q ' 300 received' <<<"$OUT" ||
		fail "node0 -> node1 ping -f before the $kind: $(grep -E 'transmitted' <<<"$OUT")" || return 1
	bg "$c" 0 "ping-$kind" "$PING -i 0.2 -w 45 $(ip4 1)"
	sleep 4
	mark=$("$WC" --name "$c" faults --json mark 2>/dev/null | python3 -c 'import json,sys; print(json.load(sys.stdin)["mark"])')
	[[ $mark =~ ^[0-9]+$ ]] || fail "no capture mark from the switch" || return 1
	if [ "$kind" = reboot ]; then
		"$WC" --name "$c" reboot 1 >"$TMP/ip-reboot.log" 2>&1 || fail "node1 did not come back: $(tail -3 "$TMP/ip-reboot.log")" || return 1
	else
		gx "$c" 1 'echo 1 > /sys/class/misc/weft0/device/recover'
		[ "$RC" = 0 ] || fail "node1: recovery failed: $OUT" || return 1
	fi
	bgwait "ping-$kind"
	t=$(grep -oE '[0-9]+ packets transmitted' <<<"$OUT" | cut -d' ' -f1)
	seqs=$(grep -oE 'icmp_seq=[0-9]+' <<<"$OUT" | cut -d= -f2 | sort -n | uniq)
	last=$(tail -n 10 <<<"$seqs" | tr '\n' ' ')
	[[ $t =~ ^[0-9]+$ ]] && [ "$(tail -n 10 <<<"$seqs" | head -n 1)" = "$((t - 9))" ] &&
		[ "$(tail -n 1 <<<"$seqs")" = "$t" ] ||
		fail "pings did not resume after the $kind: $t sent, last replies $last" || return 1
	checked "node1 $kind while node0 pinged it: $(grep -c 'icmp_seq=' <<<"$OUT") of $t answered, the last 10 ($last) all answered"
	netstat_sum "$c" 1 rx_drop_stale_epoch || return 1
	say "node1: $((VAL - s0)) frames for its earlier epoch dropped (rx_drop_stale_epoch) across the $kind"
	# The senders' counts are read before the receivers' (and after them at
	# the end), a second apart: a frame received in the window was then
	# sent in it, whatever arrives between two reads.
	netstat_sum "$c" 0 "${FRESH[@]}" || return 1
	f0=$VAL
	netstat_sum "$c" 1 "${FRESH[@]}" || return 1
	f1=$VAL
	sleep 1
	netstat_sum "$c" 0 "${STALE[@]}" || return 1
	d0=$VAL
	netstat_sum "$c" 1 "${STALE[@]}" || return 1
	d1=$VAL
	netstat_sum "$c" 0 rx_frames rx_reassembled || return 1
	a0=$VAL
	netstat_sum "$c" 1 rx_frames rx_reassembled || return 1
	a1=$VAL
	k=$("$WC" --name "$c" faults --json replay 400 before="$mark" 2>/dev/null |
		python3 -c 'import json,sys; print(json.load(sys.stdin)["replayed"])')
	[[ $k =~ ^[0-9]+$ ]] && [ "$k" -gt 0 ] || fail "the switch replayed nothing ($k)" || return 1
	sleep 3
	netstat_sum "$c" 0 "${STALE[@]}" || return 1
	n=$((VAL - d0))
	netstat_sum "$c" 1 "${STALE[@]}" || return 1
	n=$((n + VAL - d1))
	netstat_sum "$c" 0 rx_frames rx_reassembled || return 1
	a0=$((VAL - a0))
	netstat_sum "$c" 1 rx_frames rx_reassembled || return 1
	a1=$((VAL - a1))
	netstat_sum "$c" 0 "${FRESH[@]}" || return 1
	f0=$((VAL - f0))
	netstat_sum "$c" 1 "${FRESH[@]}" || return 1
	f1=$((VAL - f1))
	# Frames delivered meanwhile must be the peers' fresh ones (ARP, ND).
	[ "$n" -ge "$k" ] && [ "$a0" -le "$f1" ] && [ "$a1" -le "$f0" ] ||
		fail "after replaying $k pre-$kind frames: $n epoch drops; data frames delivered node0 $a0 (node1 sent $f1 new), node1 $a1 (node0 sent $f0 new)" || return 1
	checked "$k frames from before the $kind replayed: $n dropped by the epoch checks; delivered meanwhile: node0 $a0, node1 $a1, no more than the peers' new frames ($f1, $f0)"
}

sc_ip_reboot() { ip_event "$1" reboot; }
sc_ip_recovery() { ip_event "$1" recover; }

# ---- two nodes: unload with traffic running -------------------------------------------
# node1 unloads and reloads weft.ko 5 times with weft0 up while node0 floods
# it with pings: no oops, no hang in rmmod (a leaked device reference would
# hang unregister_netdev), memory back to where it was, weft0 works after.
sc_ip_unload() {
	local c=$1 before after cmd ma0 sl0 ma1 sl1
	need "$c" 1 ethtool || return 1
	cmd="grep -E '^(MemAvailable|Slab):' /proc/meminfo | awk '{print \$2}' | tr '\n' ' '"
	gx "$c" 1 "$cmd"
	before=$OUT
	bg "$c" 0 ip-flood "$PING -q -f -w 40 $(ip4 1)"
	GX_TIMEOUT=200 gx "$c" 1 "set -e; for i in 1 2 3 4 5; do rmmod weft; insmod /lib/weft/weft.ko;
		$IP link set weft0 up; $IP addr add $(ip4 1)/16 dev weft0; $IP addr add $(ip6 1)/64 dev weft0 nodad;
		sleep 4; done"
	[ "$RC" = 0 ] || fail "node1: unload/reload with traffic failed: $OUT" || return 1
	bgwait ip-flood
	grep -q ' received' <<<"$OUT" || fail "node0: ping -f did not run: $OUT" || return 1
	checked "node1: weft.ko unloaded and reloaded 5 times with weft0 up under ping -f from node0 ($(grep -o '[0-9]* packets transmitted, [0-9]* received' <<<"$OUT"))"
	gx "$c" 1 "$cmd"
	after=$OUT
	# MemAvailable may not drop by more than 8 MiB; each cycle holds 7 MiB
	# of FIFOs and peer table, so a leaked interface shows.
	read -r ma0 sl0 <<<"$before"
	read -r ma1 sl1 <<<"$after"
	[[ $ma0 =~ ^[0-9]+$ && $ma1 =~ ^[0-9]+$ ]] && [ $((ma0 - ma1)) -lt 8192 ] ||
		fail "node1: MemAvailable $ma0 -> $ma1 kB, Slab $sl0 -> $sl1 kB after 5 cycles" || return 1
	checked "node1: MemAvailable $ma0 -> $ma1 kB, Slab $sl0 -> $sl1 kB after 5 cycles"
	no_oops "$c" 1 || return 1
	gx "$c" 0 "$PING -c 3 -W 5 $(ip4 1)"
	[ "$RC" = 0 ] || fail "node0 cannot ping node1 after the reloads: $OUT" || return 1
	checked "no oops on node1; node0 pings node1 after the last reload"
}
