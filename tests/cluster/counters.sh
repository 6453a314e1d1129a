# shellcheck shell=bash
# Counter-bearing RDMA objects between two guests (docs/counters.md),
# sourced by tests/cluster/run.sh and run with its helpers (gx, bg, bgwait,
# server, need, fail, checked, json, counter).  The guest side checks
# itself: weft-cnt prints a "verified:" line per check that held and a
# JSON verdict; the glue here only starts it and reads the verdict, the
# driver's debugfs view and the adapter counters.

# cnt_objects CLUSTER NODE: live counter objects in weft.ko (debugfs), in $VAL.
cnt_objects() {
	gx "$1" "$2" "grep -c '^object ' /sys/kernel/debug/weft/weft0/cnt"
	VAL=${OUT//[!0-9]/}
	VAL=${VAL:-0}
}

# The number of "verified:" lines of the last run, in $VAL.
cnt_verified() {
	VAL=$(grep -c '^verified:' <<<"$OUT")
}

# Reads and writes from 1 B to 64 MiB, byte-exact, with both notification
# modes (interrupt wait and a poll of the mapped counter word).
sc_counters() {
	local c=$1 before
	need "$c" 0 weft-cnt || return 1
	need "$c" 1 weft-cnt || return 1
	counter "$c" 0 C_NOTIFY || return 1
	before=$VAL
	tool2 "$c" 1 0 cnt 4601 weft-cnt "--max-size 64M --timeout 120000" || return 1
	cnt_verified
	[ "$(json result)" = pass ] && [ "$VAL" -gt 0 ] ||
		fail "weft-cnt check: result $(json result), $VAL verified lines: $(tail -n 3 <<<"$OUT")" || return 1
	grep -q 'counter read of 67108864 B byte-exact, interrupt' <<<"$OUT" &&
		grep -q 'counter write of 67108864 B byte-exact (read back), poll' <<<"$OUT" ||
		fail "64 MiB not verified in both modes: $(grep '67108864' <<<"$OUT")" || return 1
	checked "node0 <-> node1: $(json transfers) counter reads and writes (writes read back) from 1 B to 64 MiB, byte-exact, each size with an interrupt wait and with a poll of the mapped word"
	counter "$c" 0 C_NOTIFY || return 1
	[ "$VAL" -gt "$before" ] || fail "the adapter counted no zero notification" || return 1
	cnt_objects "$c" 0
	[ "$VAL" = 0 ] || fail "node0: $VAL counter objects left after the run" || return 1
	checked "node0's adapter counted its zero notifications (C_NOTIFY $before -> more), no object left in weft.ko"
}

# The server exposes the range only after 4 s: the first read gets the
# error message with its cause, a retry after the exposure succeeds.
sc_counters_retry() {
	local c=$1 errs
	need "$c" 0 weft-cnt || return 1
	need "$c" 1 weft-cnt || return 1
	counter "$c" 0 C_ERR_RX || return 1
	errs=$VAL
	server "$c" 1 cnt-retry 4602 "weft-cnt --server --job 4602 --max-size 1M --expose-delay 4000" || return 1
	gx "$c" 0 "weft-cnt --client --peer 1 --peer-window $SW --job 4602 --max-size 1M --mode retry"
	local crc=$RC cout=$OUT
	bgwait cnt-retry
	OUT=$cout
	[ "$crc" = 0 ] && grep -q '^verified: unexposed range answered with the error message, cause CNT_NOT_EXPOSED' <<<"$OUT" ||
		fail "weft-cnt retry: exit $crc: $(tail -n 3 <<<"$OUT")" || return 1
	counter "$c" 0 C_ERR_RX || return 1
	[ "$VAL" -gt "$errs" ] || fail "node0's adapter received no CNT_ERROR" || return 1
	checked "node1 had not exposed the range: node0's read got CNT_ERROR with cause CNT_NOT_EXPOSED (C_ERR_RX $errs -> $VAL), counter untouched"
	grep -q '^verified: retry .* after the exposure succeeded' <<<"$cout" ||
		fail "no successful retry: $(tail -n 2 <<<"$cout")" || return 1
	checked "$(grep '^verified: retry' <<<"$cout" | sed 's/^verified: //')"
}

# A process killed with SIGKILL in the middle of a 64 MiB counter read:
# weft.ko destroys its object, the adapter drops the late chunks, the
# pinned pages go back, and a new client still works.
sc_counters_kill() {
	local c=$1 pinned0 late0 late
	need "$c" 0 weft-cnt || return 1
	need "$c" 1 weft-cnt || return 1
	drv "$c" 0
	pinned0=$(awk '$1 == "pages_pinned" {print $2}' <<<"$OUT")
	counter "$c" 0 DROP_CNT_OBJ_INVALID || return 1
	late0=$VAL
	server "$c" 1 cnt-kill 4603 "weft-cnt --server --job 4603 --max-size 64M --timeout 120000" || return 1
	# The victim posts a 64 MiB read and kills itself with SIGKILL at once.
	gx "$c" 0 "weft-cnt --client --peer 1 --peer-window $SW --job 4603 --max-size 64M --mode kill; echo status \$?"
	grep -q '^posted:' <<<"$OUT" && grep -q '^status 137' <<<"$OUT" ||
		fail "the victim did not post and die by SIGKILL: $OUT" || return 1
	sleep 3
	cnt_objects "$c" 0
	[ "$VAL" = 0 ] || fail "node0: $VAL counter objects left after SIGKILL" || return 1
	drv "$c" 0
	[ "$(awk '$1 == "pages_pinned" {print $2}' <<<"$OUT")" = "$pinned0" ] ||
		fail "node0: pinned pages $pinned0 before, $(awk '$1 == "pages_pinned" {print $2}' <<<"$OUT") after" || return 1
	checked "a process killed by SIGKILL right after posting a 64 MiB counter read left no live object in weft.ko and no pinned page"
	counter "$c" 0 DROP_CNT_OBJ_INVALID || return 1
	late=$VAL
	[ "$late" -gt "$late0" ] || fail "no late chunk dropped after the kill ($late0 -> $late)" || return 1
	checked "late chunks of the dead object dropped by the adapter without a write (CNT_OBJ_INVALID drops $late0 -> $late)"
	gx "$c" 0 "weft-cnt --client --peer 1 --peer-window $SW --job 4603 --max-size 64M --min-size 1M --notify poll --json"
	local crc=$RC cout=$OUT
	bgwait cnt-kill
	OUT=$cout
	[ "$crc" = 0 ] && [ "$(json result)" = pass ] ||
		fail "a new client after the kill: exit $crc: $(tail -n 3 <<<"$OUT")" || return 1
	checked "a new client then moved 1 MiB..64 MiB byte-exact through the same server"
}

# Bandwidth and latency of counter RDMA next to libweft's RDMA, one run:
# figures, with the baseline from the same run.
sc_counters_bench() {
	local c=$1
	need "$c" 0 weft-cnt || return 1
	need "$c" 1 weft-cnt || return 1
	tool2 "$c" 1 0 cnt-bench 4604 weft-cnt "--mode bench --min-size 8 --max-size 4M --iters 8 --timeout 120000" || return 1
	grep -E '^\{"tool":"weft-cnt","op"' <<<"$OUT" | python3 -c '
import json, sys
for l in sys.stdin:
    r = json.loads(l)
    print("  figures: %-13s %8d B x%d: %9.2f MB/s %10.1f us/op" % (r["op"], r["bytes"], r["iters"], r["mbps"], r["us"]))'
	[ "$(json result)" = pass ] || fail "weft-cnt bench: $(tail -n 2 <<<"$OUT")" || return 1
	checked "every counter and libweft RDMA read and write of the benchmark completed (figures above, not a test)"
}
