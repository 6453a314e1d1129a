# shellcheck shell=bash
# libweft's further operations between real guests (issue 14), sourced by
# tests/cluster/run.sh and run with its helpers (gx, bg, bgwait, server,
# need, fail, checked, say).  Every part runs weft-ops (docs/tools.md):
# its roles check their side byte by byte and print one JSON line; a part
# whose role failed fails the scenario, the other parts still run.

# jget PATH: a field (dotted path) of the last JSON line of $OUT; booleans
# as true/false, objects as JSON.
jget() {
	grep -E '^\{' <<<"$OUT" | tail -n1 | python3 -c '
import json, sys
v = json.load(sys.stdin)
for k in sys.argv[1].split("."):
    v = v.get(k) if isinstance(v, dict) else None
print(json.dumps(v) if isinstance(v, (dict, list, bool)) or v is None else v)' "$1" 2>/dev/null
}

# role_ok WHAT: $RC 0 and a "pass" verdict in $OUT, else a failed check.
role_ok() {
	[ "$RC" = 0 ] && [ "$(jget result)" = pass ] && return 0
	fail "$1: exit $RC, $(grep -v '^{' <<<"$OUT" | tail -n 3) $(grep -E '^\{' <<<"$OUT" | tail -n1)"
}

# ops_server CLUSTER NODE NAME JOB ARGS: a weft-ops role that waits for its
# peers, in the background; its window in $SW.
ops_server() {
	server "$1" "$2" "$3" "$4" "weft-ops $5 --job $4 --timeout 120000 --json"
}

# Third-party transfer: node1 (manager B) makes node2 (data source C)
# write into node0 (data target A).
ops_third_party() {
	local c=$1 job=4401 wa wc mout aout cout ok=1
	ops_server "$c" 0 ops-tp-a "$job" "third-party --target" || return 1
	wa=$SW
	ops_server "$c" 2 ops-tp-c "$job" "third-party --source" || return 1
	wc=$SW
	gx "$c" 1 "weft-ops third-party --manager --peer 0 --peer-window $wa --source-node 2 --source-window $wc --job $job --timeout 120000 --json"
	mout=$OUT
	role_ok "third-party manager (node1)" || ok=0
	bgwait ops-tp-a
	aout=$OUT
	role_ok "third-party data target (node0)" || ok=0
	bgwait ops-tp-c
	cout=$OUT
	role_ok "third-party data source (node2)" || ok=0
	[ "$ok" = 1 ] || return 1
	OUT=$aout
	[ "$(jget completions)" = 1 ] && [ "$(jget verified)" = true ] ||
		fail "third-party: node0 has $(jget completions) TARGET completions, data verified $(jget verified)" || return 1
	local bytes tid
	bytes=$(jget bytes) tid=$(jget tid)
	OUT=$mout
	[ "$(jget status)" = OK ] && [ "$(jget tid)" = "$tid" ] ||
		fail "third-party: the manager's completion (status $(jget status), tid $(jget tid)) is not of node0's transfer (tid $tid)" || return 1
	OUT=$cout
	[ "$(jget entries)" = 0 ] || fail "third-party: the data source got $(jget entries) entries" || return 1
	checked "third-party: node1 made node2 write $bytes B into node0 (tid $tid): node0 got the TARGET completion and byte-exact data, node1 the SOURCE completion, node2 nothing"
}

# bcast_targets CLUSTER JOB NAME ARGS NODE...: start the targets; their
# common window in $TW.
bcast_targets() {
	local c=$1 job=$2 name=$3 args=$4 n
	shift 4
	TW=
	for n in "$@"; do
		ops_server "$c" "$n" "$name-$n" "$job" "$args" || return 1
		[ -z "$TW" ] || [ "$TW" = "$SW" ] ||
			fail "the targets' windows differ (node$n has $SW, another $TW): a broadcast needs one window id" || return 1
		TW=$SW
	done
}

# A broadcast write from node0 to nodes 1-3; a switch drop rule loses
# node3's first acknowledgement, so node0 re-sends to node3 alone.
ops_bcast() {
	local c=$1 job=4402 n sout ok=1 tries
	bcast_targets "$c" "$job" ops-bc "bcast --target" 1 2 3 || return 1
	OUT=$("$WC" --name "$c" faults drop clear 2>&1) || fail "switch: drop clear: $OUT" || return 1
	OUT=$("$WC" --name "$c" faults drop add src=3 src-window="$TW" dst=0 type=fifo count=1 2>&1) ||
		fail "switch: drop add: $OUT" || return 1
	say "switch: $OUT"
	gx "$c" 0 "weft-ops bcast --source --targets 1,2,3 --peer-window $TW --job $job --ack-timeout 5000 --timeout 120000 --json"
	sout=$OUT
	say "bcast source: $(grep -E '^\{' <<<"$OUT" | tail -n1)"
	role_ok "broadcast source (node0)" || ok=0
	for n in 1 2 3; do
		bgwait "ops-bc-$n"
		declare "bc$n=$OUT"
		say "bcast target node$n: $(grep -E '^\{' <<<"$OUT" | tail -n1)"
		role_ok "broadcast target (node$n)" || ok=0
	done
	OUT=$("$WC" --name "$c" faults drop list 2>&1)
	local rule=$OUT
	"$WC" --name "$c" faults drop clear >/dev/null 2>&1
	[ "$ok" = 1 ] || return 1
	grep -q 'left=0 dropped=1' <<<"$rule" ||
		fail "the switch's drop rule did not drop exactly one frame: $rule" || return 1
	OUT=$sout
	tries=$(jget tries)
	[ "$tries" = '{"1": 1, "2": 1, "3": 2}' ] && [ "$(jget retries)" = 1 ] ||
		fail "broadcast: sends per target $tries, re-sends $(jget retries) (want node3 alone re-sent to, once)" || return 1
	for n in 1 2 3; do
		local v="bc$n"
		OUT=${!v}
		local want_acks=1 want_dups=0
		[ "$n" != 3 ] || want_acks=2 want_dups=1
		[ "$(jget delivered)" = 1 ] && [ "$(jget first_via)" = broadcast ] &&
			[ "$(jget acks)" = "$want_acks" ] && [ "$(jget duplicates)" = "$want_dups" ] ||
			fail "broadcast: node$n delivered $(jget delivered) (first by $(jget first_via)), acknowledged $(jget acks) times, $(jget duplicates) re-sent copies (want 1, broadcast, $want_acks, $want_dups)" || return 1
	done
	checked "broadcast: one write reached nodes 1, 2 and 3 byte-exact; the switch dropped node3's acknowledgement (rule: left=0 dropped=1); node0 re-sent to node3 alone (sends 1/1/2), node3 acknowledged again and ignored the copy; every target delivered the data once"
}

# A multicast write from node0 to group 9 = {1, 3}; node2 is no member.
ops_mcast() {
	local c=$1 job=4403 g=9 n ok=1 sout
	for n in 1 3; do
		OUT=$("$WC" --name "$c" faults mcast join "$g" "$n" 2>&1) ||
			fail "switch: mcast join $g $n: $OUT" || return 1
	done
	bcast_targets "$c" "$job" ops-mc "mcast --target" 1 3 || return 1
	local tw=$TW
	bcast_targets "$c" "$job" ops-mc "mcast --target --non-member" 2 || return 1
	[ "$TW" = "$tw" ] || fail "node2's window $TW differs from the members' $tw" || return 1
	gx "$c" 0 "weft-ops mcast --source --group $g --targets 1,3 --others 2 --peer-window $tw --job $job --ack-timeout 5000 --timeout 120000 --json"
	sout=$OUT
	say "mcast source: $(grep -E '^\{' <<<"$OUT" | tail -n1)"
	role_ok "multicast source (node0)" || ok=0
	for n in 1 2 3; do
		bgwait "ops-mc-$n"
		declare "mc$n=$OUT"
		say "mcast node$n: $(grep -E '^\{' <<<"$OUT" | tail -n1)"
		role_ok "multicast $([ "$n" = 2 ] && echo non-member || echo member) (node$n)" || ok=0
	done
	for n in 1 3; do "$WC" --name "$c" faults mcast leave "$g" "$n" >/dev/null 2>&1; done
	[ "$ok" = 1 ] || return 1
	OUT=$sout
	[ "$(jget retries)" = 0 ] && [ "$(jget acked)" = 2 ] ||
		fail "multicast: $(jget acked) acknowledgements, $(jget retries) re-sends (want 2, 0)" || return 1
	for n in 1 3; do
		local v="mc$n"
		OUT=${!v}
		[ "$(jget delivered)" = 1 ] && [ "$(jget duplicates)" = 0 ] ||
			fail "multicast: member node$n delivered $(jget delivered), $(jget duplicates) copies" || return 1
	done
	local v=mc2
	OUT=${!v}
	[ "$(jget data_entries)" = 0 ] || fail "multicast: non-member node2 got $(jget data_entries) DATA entries" || return 1
	checked "multicast: a write to group $g reached members node1 and node3 once each, byte-exact, both acknowledged without a re-send; node2 (no member) got nothing"
}

# A conditional RDMA from node2 to node3: 4 member writes gate the signal.
ops_cond() {
	local c=$1 job=4404 sout cout ok=1
	ops_server "$c" 3 ops-cond "$job" "cond --server" || return 1
	gx "$c" 2 "weft-ops cond --client --peer 3 --peer-window $SW --members 4 --job $job --timeout 120000 --json"
	cout=$OUT
	say "cond client: $(grep -E '^\{' <<<"$OUT" | tail -n1)"
	role_ok "cond client (node2)" || ok=0
	bgwait ops-cond
	sout=$OUT
	say "cond server: $(grep -E '^\{' <<<"$OUT" | tail -n1)"
	role_ok "cond server (node3)" || ok=0
	[ "$ok" = 1 ] || return 1
	[ "$(jget before_signal)" = 4 ] && [ "$(jget data_at_signal)" = true ] &&
		[ "$(jget signal_verified)" = true ] ||
		fail "cond: the signal came after $(jget before_signal) of 4 member completions, data at signal $(jget data_at_signal)" || return 1
	OUT=$cout
	[ "$(jget query.expect)" = 4 ] ||
		fail "cond: the queue expected $(jget query.expect) members, not 4" || return 1
	checked "conditional RDMA: node2's signal write reached node3 only after all 4 member writes (4 completions before it, their 4 buffers byte-exact when it came); the queue reported expect 4, tagged $(jget query.tagged)"
}

# The four half-RDMA modes between node0 (client) and node1 (server).
ops_half() {
	local c=$1 job=4405 sout cout ok=1
	ops_server "$c" 1 ops-half "$job" "half --server" || return 1
	gx "$c" 0 "weft-ops half --client --peer 1 --peer-window $SW --job $job --timeout 120000 --json"
	cout=$OUT
	say "half client: $(grep -E '^\{' <<<"$OUT" | tail -n1)"
	role_ok "half client (node0)" || ok=0
	bgwait ops-half
	sout=$OUT
	say "half server: $(grep -E '^\{' <<<"$OUT" | tail -n1)"
	role_ok "half server (node1)" || ok=0
	[ "$ok" = 1 ] || return 1
	[ "$(jget write_fifo.verified)" = true ] && [ "$(jget put.verified)" = true ] &&
		[ "$(jget read_put.requests)" = 1 ] && [ "$(jget read_put.completions)" = 1 ] ||
		fail "half: server side: $(jget write_fifo) $(jget put) $(jget read_put)" || return 1
	local wfe
	wfe=$(jget write_fifo.entries)
	OUT=$cout
	[ "$(jget read_fifo.verified)" = true ] && [ "$(jget read_put.verified)" = true ] &&
		[ "$(jget put.completion)" = true ] ||
		fail "half: client side: $(jget put) $(jget read_fifo) $(jget read_put)" || return 1
	checked "half-RDMA: write_fifo ($wfe DATA entries reassembled on node1), put (placed on node1, completions at both ends), read_fifo ($(jget read_fifo.entries) DATA entries on node0, then the completion), read_put (node1's program answered with put_reply): $(jget bytes) B each, byte-exact"
}

sc_seed000_ops() {
	local c=$1 i
	for i in 0 1 2 3; do need "$c" "$i" weft-ops || return 1; done
	ops_third_party "$c"
	ops_bcast "$c"
	ops_mcast "$c"
	ops_cond "$c"
	ops_half "$c"
	for i in 0 1 2 3; do no_oops "$c" "$i"; done
}
