#!/usr/bin/env bash
# Weft cluster tests: real guests (TCG here), the real driver and the real
# switch.  Boots its own clusters (ct2-<pid>: 2 nodes, ct4-<pid>: 4 nodes),
# runs the scenarios, and always takes the clusters down.
#
#   tests/cluster/run.sh              every scenario
#   tests/cluster/run.sh NAME...      only these (see --list)
#   tests/cluster/run.sh --list       scenario names and what they check
#
# Each scenario prints what it checks and PASS or FAIL; a failure prints
# the tail of each node's console.  A scenario whose prerequisites are
# missing fails and says what is missing.  The last line is
#   cluster: N passed, M failed
# and the exit status is non-zero if any scenario failed.
# Environment: WEFT_QEMU / WEFT_SWITCH / WEFT_BUILD as for weft-cluster.
set -uo pipefail
# shellcheck source=scripts/lib.sh
source "$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)/scripts/lib.sh"

WC=$WEFT_ROOT/scripts/weft-cluster
TMP=$(mktemp -d /tmp/weft-ct.XXXXXX)
C2=ct2-$$
C4=ct4-$$
passed=0 failed=0
summary=()
declare -A up_error=()  # cluster -> why it is not usable ("" when up)
declare -A csize=([$C2]=2 [$C4]=4)

# ---- scenario list: name, cluster, description --------------------------------
SCENARIOS=(
	"boot|$C2|both nodes boot, load weft.ko, see their adapter with the right node id, switch ports attached"
	"fifo-pingpong|$C2|FIFO ping-pong between node0 and node1 (weft-pingpong), latency figures printed"
	"rdma-1mib|$C2|RDMA write and read of 1 MiB between two nodes, verified byte by byte (weft-rdma-check)"
	"rdma-sizes|$C2|RDMA write and read from 1 byte to 16 MiB with unaligned offsets (weft-rdma-check)"
	"bandwidth|$C2|weft-bw write and read bandwidth over message sizes, figures printed"
	"ioctl-errors|$C2|every ioctl with good and bad arguments; another process's window cannot be mapped or used (weft-test-ioctl, weft-test-isolation)"
	"process-death|$C2|a process killed mid-transfer releases its windows, rCxts, registrations and pinned pages (weft-test-kill)"
	"close-inflight|$C2|Close Window with traffic in flight waits for Snapshot View to clear and returns (weft-test-close)"
	"window-fatal|$C2|window fatal errors are reported to the owning process (weft-test-fatal)"
	"recovery|$C2|adapter recovery through sysfs and debugfs: count bumped, users told, old rCxts and registrations dead (weft-test-recovery)"
	"recovery-streaming|$C2|adapter recovery on node0 while node1 streams: count bumped, old rCxts rejected, new traffic flows"
	"reboot-streaming|$C2|node1 rebooted while node0 streams to it: node1 comes back with new keys, traffic flows again"
	"modload|$C2|weft.ko loaded and unloaded 20 times on node1: no leak in the driver counters (weft-test-modload)"
	"all-to-all|$C4|4 nodes: every ordered pair does an RDMA write/read check at the same time"
)

usage() {
	sed -n '2,/^set -uo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//'
	exit "${1:-2}"
}

# ---- helpers -----------------------------------------------------------------------
say() { printf '  %s\n' "$*"; }
checked() { printf '  checked: %s\n' "$*"; }

# gx CLUSTER NODE CMD: run CMD in a guest; output in $OUT, status in $RC.
gx() {
	OUT=$("$WC" --name "$1" exec --timeout "${GX_TIMEOUT:-300}" "$2" -- "$3" 2>&1)
	RC=$?
}

# Fail the current scenario with a reason (return 1 from the scenario).
why=
fail() { why=$*; return 1; }

# need CLUSTER NODE PROGRAM...: the programs must be in that guest's image.
need() {
	local c=$1 n=$2 p missing=()
	shift 2
	for p in "$@"; do
		gx "$c" "$n" "command -v $p >/dev/null || [ -x /usr/lib/weft/tests/$p ]"
		[ "$RC" = 0 ] || missing+=("$p")
	done
	[ ${#missing[@]} -eq 0 ] ||
		fail "missing in the guest image: ${missing[*]} (tools come from scripts/build-guest-tools.sh, guest tests from scripts/build-guest-tests.sh; see docs/cluster.md)"
}

# counter CLUSTER NODE NAME: an adapter counter from debugfs (into $VAL).
counter() {
	gx "$1" "$2" "awk '\$1 == \"$3\" {print \$2}' /sys/kernel/debug/weft/weft0/counters"
	VAL=$OUT
	[ "$RC" = 0 ] && [[ $VAL =~ ^[0-9]+$ ]] || fail "node$2: cannot read counter $3 from debugfs ($OUT)"
}

# ---- guest processes ---------------------------------------------------------------
# bg CLUSTER NODE NAME CMD: run CMD in a guest from a background host job;
# its output goes to $TMP/NAME.out and its status to $TMP/NAME.rc.
declare -A bgpid=()
bg() {
	local c=$1 n=$2 name=$3 cmd=$4
	( "$WC" --name "$c" exec --timeout "${GX_TIMEOUT:-300}" "$n" -- "$cmd" >"$TMP/$name.out" 2>&1
	  echo $? >"$TMP/$name.rc" ) &
	bgpid[$name]=$!
}

# bgwait NAME: wait for a bg job; its output in $OUT, status in $RC.
bgwait() {
	wait "${bgpid[$1]}" 2>/dev/null
	OUT=$(cat "$TMP/$1.out" 2>/dev/null)
	RC=$(cat "$TMP/$1.rc" 2>/dev/null || echo 255)
}

# bgdone NAME: 0 when the bg job has ended.
bgdone() { ! kill -0 "${bgpid[$1]}" 2>/dev/null; }

# server CLUSTER NODE NAME JOB CMD: start a tool's server in the background
# and wait until its window (of job JOB) is open; the window number is
# left in $SW.
server() {
	local c=$1 n=$2 name=$3 job=$4 cmd=$5 i
	bg "$c" "$n" "$name" "$cmd"
	for i in $(seq 240); do
		gx "$c" "$n" "awk '\$1 == \"window\" && \$3 == \"job\" && \$4 == $job {sub(\":\", \"\", \$2); print \$2; exit}' /sys/kernel/debug/weft/weft0/state"
		if [ "$RC" = 0 ] && [[ $OUT =~ ^[0-9]+$ ]]; then
			SW=$OUT
			return 0
		fi
		if bgdone "$name"; then
			bgwait "$name"
			fail "node$n: $name ended (status $RC) before opening its window: $OUT"
			return 1
		fi
		[ "$i" -lt 240 ] && sleep 0.5
	done
	fail "node$n: $name did not open a window of job $job"
}

# json FIELD: a top-level field of the last JSON line of $OUT.
json() {
	grep -E '^\{' <<<"$OUT" | tail -n1 | python3 -c "import json,sys; v=json.load(sys.stdin).get(sys.argv[1]); print(json.dumps(v) if isinstance(v,(dict,list)) else v)" "$1" 2>/dev/null
}

# drv CLUSTER NODE: the driver's global resource counters (debugfs) as
# "name value" lines, in $OUT.
drv() { gx "$1" "$2" 'cat /sys/kernel/debug/weft/driver'; }

# no_oops CLUSTER NODE: the guest kernel log has no oops, BUG or warning.
no_oops() {
	gx "$1" "$2" "dmesg | grep -E 'BUG|Oops|WARNING|general protection|Call Trace' | head -5"
	[ -z "$OUT" ] || fail "node$2: kernel log shows: $OUT"
}

console_tails() {
	local c=$1 n i
	n=$(sed -n 's/^NODES=//p' "${WEFT_RUN_DIR:-/tmp/weft-cluster-$(id -u)}/$c/cluster.env" 2>/dev/null)
	for ((i = 0; i < ${n:-0}; i++)); do
		echo "  ---- $c node$i console (last 30 lines) ----"
		"$WC" --name "$c" console "$i" -n 30 2>&1 | sed 's/^/  | /'
		echo "  ---- $c node$i kernel log (last 15 lines) ----"
		"$WC" --name "$c" exec --timeout 20 "$i" -- 'dmesg | tail -n 15' 2>&1 | sed 's/^/  | /'
	done
}

cluster_up() { # cluster_up NAME N
	local c=$1 n=$2
	[ -z "${up_error[$c]+x}" ] || return 0
	say "starting cluster $c ($n nodes)"
	if "$WC" --name "$c" up -n "$n" >"$TMP/$c.up" 2>&1; then
		sed 's/^/  | /' "$TMP/$c.up" | grep -E 'ready after|NODE|node[0-9] |up:' || true
		up_error[$c]=
	else
		sed 's/^/  | /' "$TMP/$c.up" | tail -40
		up_error[$c]="cluster $c did not come up: $(grep -E 'error:' "$TMP/$c.up" | tail -1)"
	fi
}

cleanup() {
	local c
	for c in "$C2" "$C4"; do
		[ -z "${up_error[$c]+x}" ] || "$WC" --name "$c" down >/dev/null 2>&1
	done
	rm -rf "$TMP"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

run_scenario() { # run_scenario NAME CLUSTER DESCRIPTION
	local name=$1 c=$2 desc=$3 t0 rc
	echo "=== $name: $desc"
	t0=$SECONDS
	why=
	if [ -n "${up_error[$c]:-}" ]; then
		why=${up_error[$c]}
		rc=1
	else
		"sc_${name//-/_}" "$c"
		rc=$?
	fi
	if [ "$rc" = 0 ]; then
		echo "PASS $name ($((SECONDS - t0)) s)"
		passed=$((passed + 1))
		summary+=("PASS $name")
	else
		echo "FAIL $name: ${why:-scenario returned $rc}"
		[ -n "${up_error[$c]:-}" ] || console_tails "$c"
		failed=$((failed + 1))
		summary+=("FAIL $name")
	fi
}

# ---- scenarios ---------------------------------------------------------------------
sc_boot() {
	local c=$1 i
	for i in 0 1; do
		gx "$c" "$i" 'cat /run/weft/driver; ls /dev/weft0; cat /sys/kernel/debug/weft/weft0/state | head -1; hostname'
		[ "$RC" = 0 ] || fail "node$i: $OUT"
		grep -qx loaded <<<"$OUT" || fail "node$i: weft.ko not loaded: $OUT"
		grep -q "^node $i windows" <<<"$OUT" || fail "node$i: debugfs state does not show node id $i: $OUT"
		grep -qx "node$i" <<<"$OUT" || fail "node$i: hostname is not node$i"
		checked "node$i: weft.ko loaded, /dev/weft0 present, adapter node id $i, hostname node$i"
		gx "$c" "$i" 'awk "\$1 == \"STATUS\" {print \$3}" /sys/kernel/debug/weft/weft0/regs'
		# STATUS: READY (bit 0) and LINK_UP (bit 1).
		[ "$RC" = 0 ] && [ $(( OUT & 3 )) = 3 ] || fail "node$i: STATUS register $OUT lacks READY|LINK_UP"
		checked "node$i: STATUS register $OUT has READY and LINK_UP"
	done
	OUT=$("$WC" --name "$c" faults nodes 2>&1) || fail "weft-switch ctl nodes failed: $OUT"
	for i in 0 1; do
		grep -q "^node $i attached up" <<<"$OUT" || fail "switch does not show node $i attached and up: $OUT"
	done
	checked "switch: nodes 0 and 1 attached and up"
}

# gtest CLUSTER NODE TEST [ARGS]: run an in-guest driver test; prints its
# check count, and its failing checks.
gtest() {
	local c=$1 n=$2 t=$3 args=${4:-} ok bad
	need "$c" "$n" "$t" || return 1
	GX_TIMEOUT=240 gx "$c" "$n" "/usr/lib/weft/tests/$t $args"
	ok=$(grep -c '^ok  :' <<<"$OUT")
	bad=$(grep -c '^FAIL' <<<"$OUT")
	checked "node$n: $t: $ok checks passed, $bad failed (exit $RC)"
	if [ "$RC" != 0 ] || [ "$bad" != 0 ] || [ "$ok" = 0 ]; then
		grep -E '^FAIL|error|fatal' <<<"$OUT" | head -20 | sed 's/^/  | /'
		[ "$ok" != 0 ] || tail -n 10 <<<"$OUT" | sed 's/^/  | /'
		fail "node$n: $t failed (exit $RC, $bad failed checks)"
		return 1
	fi
}

sc_ioctl_errors() {
	gtest "$1" 0 weft-test-ioctl || return 1
	gtest "$1" 0 weft-test-isolation
}

sc_process_death() { gtest "$1" 0 weft-test-kill; }

sc_close_inflight() { gtest "$1" 0 weft-test-close; }

sc_window_fatal() { gtest "$1" 0 weft-test-fatal; }

sc_recovery() { gtest "$1" 1 weft-test-recovery; }

sc_modload() {
	gtest "$1" 1 weft-test-modload "/lib/weft/weft.ko 20" || return 1
	gx "$1" 1 'ls /dev/weft0 && head -1 /sys/kernel/debug/weft/weft0/state'
	[ "$RC" = 0 ] || fail "node1: no adapter after the load/unload cycles: $OUT"
	checked "node1: weft.ko loaded again afterwards, /dev/weft0 back"
}

# ---- two-node tool scenarios ---------------------------------------------------------
# rdma_check CLUSTER SERVER CLIENT JOB MIN MAX: weft-rdma-check between two
# nodes; passes when the client reports "pass" with no failures.
rdma_check() {
	local c=$1 s=$2 k=$3 job=$4 min=$5 max=$6 name=rc-$2-$3-$4
	server "$c" "$s" "$name" "$job" "weft-rdma-check --server --job $job --max-size $max" || return 1
	GX_TIMEOUT=900 gx "$c" "$k" "weft-rdma-check --client --peer $s --peer-window $SW --job $job --min-size $min --max-size $max --json"
	local crc=$RC cout=$OUT
	bgwait "$name"
	local src=$RC sout=$OUT
	OUT=$cout
	local result failures cases bytes secs
	result=$(json result) failures=$(json failures) cases=$(json cases) bytes=$(json bytes) secs=$(json seconds)
	if [ "$crc" != 0 ] || [ "$result" != pass ] || [ "$failures" != 0 ]; then
		tail -n 15 <<<"$cout" | sed 's/^/  | client: /'
		tail -n 5 <<<"$sout" | sed 's/^/  | server: /'
		fail "weft-rdma-check node$k -> node$s: client exit $crc, result ${result:-none}, failures ${failures:-?}"
		return 1
	fi
	[ "$src" = 0 ] || { tail -n 5 <<<"$sout" | sed 's/^/  | server: /'; fail "weft-rdma-check server on node$s exited $src"; return 1; }
	checked "node$k -> node$s window $SW: $cases write+read cases, sizes $min..$max, byte-exact, $bytes bytes in $secs s"
}

sc_rdma_1mib() {
	need "$1" 0 weft-rdma-check || return 1
	need "$1" 1 weft-rdma-check || return 1
	rdma_check "$1" 1 0 4097 1M 1M
}

sc_rdma_sizes() {
	need "$1" 0 weft-rdma-check || return 1
	need "$1" 1 weft-rdma-check || return 1
	rdma_check "$1" 1 0 4098 1 16M
}

# ---- main ----------------------------------------------------------------------------
want=()
for a in "$@"; do
	case $a in
	-h|--help) usage 0 ;;
	--list)
		for s in "${SCENARIOS[@]}"; do
			IFS='|' read -r n _ d <<<"$s"
			printf '%-20s %s\n' "$n" "$d"
		done
		exit 0 ;;
	-*) echo "unknown option $a" >&2; usage ;;
	*) want+=("$a") ;;
	esac
done
for a in ${want[@]+"${want[@]}"}; do
	printf '%s\n' "${SCENARIOS[@]}" | grep -q "^$a|" || weft_die "no scenario '$a' (see --list)"
done

t_start=$SECONDS
last_cluster=
for s in "${SCENARIOS[@]}"; do
	IFS='|' read -r n c d <<<"$s"
	if [ ${#want[@]} -gt 0 ] && ! printf '%s\n' "${want[@]}" | grep -qx "$n"; then
		continue
	fi
	if [ "$c" != "$last_cluster" ]; then
		# One cluster at a time: this machine has 2 cores.
		[ -z "$last_cluster" ] || { "$WC" --name "$last_cluster" down >/dev/null 2>&1; up_error[$last_cluster]="cluster $last_cluster already taken down"; }
		cluster_up "$c" "${csize[$c]}"
		last_cluster=$c
	fi
	run_scenario "$n" "$c" "$d"
done
echo "cluster run took $((SECONDS - t_start)) s"
printf '%s\n' "${summary[@]}"
echo "cluster: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
