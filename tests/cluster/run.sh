#!/usr/bin/env bash
# Weft cluster tests: real guests (TCG here), the real driver and the real
# switch.  Boots its own clusters (ct2-<pid>: 2 nodes; ctf-<pid>: 2 nodes
# with small rCxt pools, for the failover campaign; ct4-<pid>: 4 nodes;
# cts-<pid>: 2 adapters per node; ctt-<pid>: 2 nodes joined to the switch
# over TCP), one at a time, runs the scenarios, and always takes the clusters down.
#
#   tests/cluster/run.sh              every scenario
#   tests/cluster/run.sh NAME...      only these (see --list)
#   tests/cluster/run.sh --list       scenario names and what they check
#
# Output is TAP (docs/testing.md): the plan, then one point per scenario,
# each preceded by its checks as an indented TAP 14 subtest; all other
# output is "#" diagnostics.  A scenario fails when any of its checks
# failed, when it returned non-zero, or when it checked nothing; a failure
# prints the tail of each node's console.  A scenario whose prerequisites
# are missing fails and says what is missing.  The exit status is non-zero
# if any scenario failed.
# Environment: WEFT_QEMU / WEFT_SWITCH / WEFT_BUILD as for weft-cluster;
# WEFT_TRANSPORT=auto|shm|socket, when set, is every cluster's
# `weft-cluster up --transport` (by default the 4-node cluster runs on the
# socket, ctt-<pid> always over TCP, the others on shared memory;
# docs/cluster.md).
set -uo pipefail
# shellcheck source=scripts/lib.sh
source "$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)/scripts/lib.sh"

WC=$WEFT_ROOT/scripts/weft-cluster
TMP=$(mktemp -d /tmp/weft-ct.XXXXXX)
C2=ct2-$$
CF=ctf-$$
C4=ct4-$$
CS=cts-$$
CT=ctt-$$
passed=0 failed=0
summary=()
declare -A up_error=()  # cluster -> why it is not usable ("" when up)
declare -A csize=([$C2]=2 [$CF]=2 [$C4]=4 [$CS]=2 [$CT]=2)
# The failover campaign (cluster $CF) replays old frames while a new stream
# runs: its switch keeps 8192 frames, so the old ones outlive the new
# stream's first frames.  Its adapters have 40 rCxts, a little more than
# one stream holds, so that restarted streams get the old streams' rCxt
# ids back (the seed's "pool below twice the outstanding rCxts" case) and
# the keys, not the ids, are what stops stale frames.
declare -A cargs=([$C2]="" [$CF]="--capture-ring 8192" [$C4]="" [$CS]="")
# The 4-node adapters let up to 4 receive entries become valid out of slot
# order (rx-overlap, seed item 15): IP over Weft, libweft's FIFO and the
# half-RDMA modes must poll per slot to pass there.
declare -A cprops=([$C2]="" [$CF]="rcxts=40" [$C4]="rx-overlap=4" [$CS]="")
# Adapters per node (weft-cluster up --adapters): cluster $CS has two, for
# striping over adapters.
declare -A cadapters=([$CS]=2)
# Transport between QEMU and the switch (weft-cluster up --transport): the
# shared-memory rings (auto) everywhere but the 4-node cluster, which runs
# on the socket fallback, so that every run covers both; WEFT_TRANSPORT
# runs every cluster on one, but cluster $CT, which always reaches the
# switch over TCP (its TCP listener on 127.0.0.1, as from another host).
declare -A ctransport=([$C4]=socket [$CT]=tcp)

# ---- scenario list: name, cluster, description --------------------------------
SCENARIOS=(
	"boot|$C2|both nodes boot, load weft.ko, see their adapter with the right node id, switch ports attached"
	"fifo-pingpong|$C2|FIFO (and RDMA) ping-pong between node0 and node1 (weft-pingpong): every answer byte-exact, nothing lost, latency figures printed"
	"rdma-1mib|$C2|RDMA write and read of 1 MiB between two nodes, verified byte by byte (weft-rdma-check)"
	"rdma-sizes|$C2|RDMA write and read from 1 byte to 16 MiB with unaligned offsets, byte by byte (weft-rdma-check)"
	"bandwidth|$C2|RDMA write and read bandwidth over message sizes (weft-bw): each size's data checked, figures printed"
	"lossy-rdma|$C2|RDMA write and read, 1 byte to 4 KiB, through a fabric with 5% loss and reordering: reliable operations retry, byte-exact"
	"reliable-messages|$C2|reliable layer: 10000 messages through a fabric with 5% loss and reordering, each delivered exactly once and in order (weft-rdma-check --messages)"
	"switch-restart|$C2|weft-cluster switch restart kills the switch and starts it again while the reliable layer streams 20000 messages: each delivered exactly once and in order; status and ctl manage the new switch"
	"mr-cache|$C2|lazy deregistration: transfers from an already registered buffer are MR cache hits with no registration call (mr_cache counters)"
	"ip-tcp|$C2|IP over Weft: iperf3 TCP node0 -> node1 for 10 s without error; 256 MiB through a TCP socket with equal sha256"
	"ip-lossy|$C2|IP over Weft: 4 MiB over TCP through 2% loss on the switch, byte-exact (TCP retransmits)"
	"ip-reboot|$C2|IP over Weft: node1 rebooted while node0 pings it: pings resume by themselves; replayed pre-reboot frames dropped by the epoch checks"
	"ip-recovery|$C2|IP over Weft: node1's adapter recovered while node0 pings it: pings resume by themselves; replayed pre-recovery frames dropped by the epoch checks"
	"ip-unload|$C2|IP over Weft: weft.ko unloaded and reloaded 5 times on node1 with weft0 up under ping -f: no oops, no hang, no memory lost"
	"ioctl-errors|$C2|every ioctl with good and bad arguments; another process's window cannot be mapped or used (weft-test-ioctl, weft-test-isolation)"
	"process-death|$C2|a process killed mid-transfer releases its windows, rCxts, registrations and pinned pages (weft-test-kill)"
	"close-inflight|$C2|Close Window with traffic in flight waits for Snapshot View to clear and returns (weft-test-close)"
	"window-fatal|$C2|window fatal errors are reported to the owning process (weft-test-fatal)"
	"recovery|$C2|adapter recovery through sysfs and debugfs: count bumped, users told, old rCxts and registrations dead (weft-test-recovery)"
	"events|$C2|adapter events reach the owning process through read() and poll(), in order, none lost, never another process's (weft-test-events)"
	"stale-mappings|$C2|a process keeps touching its mapped window through recoveries: no signal, STATE not VALID, FIFOs keep their contents, every call on the old window ESTALE, close releases everything (weft-test-stale)"
	"unbind|$C2|the PCI device unbound from weft.ko under an open fd: resources released, mappings gone (SIGBUS), every call fails, rebind works (weft-test-unbind)"
	"modload|$C2|weft.ko loaded and unloaded 20 times on node1: no leak in the driver counters (weft-test-modload)"
	"fork|$C2|a forked child that touches the parent's doorbell page or FIFOs gets SIGSEGV, the parent's traffic is unaffected, mappings never executable (weft-test-fork)"
	"reboot-keys|$C2|node1 rebooted three times, the same buffer registered after each boot: three different PVO keys, each in the block of a new adapter key epoch (weft-test-mrkey)"
	"reboot-streaming|$CF|node1 rebooted while node0 streams to it; old frames replayed into the restarted stream all dropped (by reason); every new message exactly once; device, switch and driver counters agree"
	"recovery-streaming|$CF|adapter recovery on node0 while node1 streams to it; old frames replayed into the restarted stream all dropped (by reason); every new message exactly once; device, switch and driver counters agree"
	"fatal-streaming|$CF|adapter-internal fatal error injected on node1 (DEBUG_INJECT) while node0 streams to it: weft.ko recovers by itself; old frames replayed into the restarted stream all dropped (by reason); every new message exactly once; device, switch and driver counters agree"
	"ip-reach|$C4|IP over Weft, 4 nodes: every node pings every other over IPv4 and IPv6, ARP resolves, ping -f loses nothing"
	"ip-bcast|$C4|IP over Weft: a 16 KiB UDP broadcast from node0 reaches every other node intact; the capture shows FIFO packets with rewritten IP fragment fields"
	"nvme-rdma|$C2|RDMA core: nvmet-rdma target on node0 (configfs, a tmpfs file), nvme-rdma host on node1 over the Weft address: 64 MiB written and read back with equal sha256, the same bytes in the target's file, clean disconnect, no oops"
	"ibv-devinfo|$C2|user verbs: ibv_devices and ibv_devinfo -v (Debian's, unmodified) show the Weft device on both nodes through the provider: port ACTIVE, Ethernet, the IPv4-mapped RoCE v2 GID, limits equal to the adapter's registers"
	"rc-pingpong|$C2|user verbs: ibv_rc_pingpong -c (data validated) and ibv_ud_pingpong between node0 and node1 over the Weft GIDs"
	"perftest|$C2|user verbs: ib_write_bw, ib_read_bw, ib_send_bw (4 KiB, 64 KiB, 1 MiB), ib_atomic_bw, ib_write_lat, ib_read_lat and ib_send_lat (8 B, 4 KiB, 1 MiB) between the nodes succeed with sane figures (printed)"
	"perftest-cm|$C2|user verbs through rdma_cm: the same perftest runs with -R (connections by rdma_cm over the Weft addresses)"
	"rping|$C2|rdma_cm: rping -c -V (every ping's data verified), 200 pings of 4 KiB between the nodes"
	"verbs-lossy|$C2|user verbs through a switch with 1% loss and reordering: ib_write_bw and ib_read_bw complete, the adapter's retransmit counter moves"
	"verbs-recovery|$C2|user verbs: node1's adapter recovered under a running ib_write_bw: both ends fail, the process's objects are gone, a new weft_ib0 comes up ACTIVE by itself, a new ib_write_bw runs"
	"verbs-kill|$C2|user verbs: ib_write_bw killed with SIGKILL mid-transfer on both nodes: rdma resource counts back to their start"
	"verbs-isolation|$C2|user verbs: node1's RDMA WRITE/READ with rkeys node0's process did not give it (a guessed key byte, another PD's, another process's) complete with IBV_WC_REM_ACCESS_ERR, the QP goes to ERR, node0's memory unchanged; another process on node0 cannot query, modify or destroy the owner's QP, CQ, MR or PD (weft-verbs-isolation)"
	"verbs-errors|$C2|user verbs: every verbs call with bad arguments fails with the errno of a real HCA's provider or driver (EINVAL, EOPNOTSUPP, EFAULT, EBUSY; bad_wr set); ib_core object counts unchanged, no kernel warning (weft-verbs-errors)"
	"verbs-mw|$C2|user verbs: type 1 (ibv_bind_mw) and type 2 (IBV_WR_BIND_MW) memory windows: node1's writes and reads inside a window byte-exact, outside it, without the right, through another QP, after LOCAL_INV, send with invalidate or dealloc IBV_WC_REM_ACCESS_ERR (weft-verbs-mw)"
	"ib-device|$C2|RDMA core: weft_ib.ko registers weft_ib0 on both nodes: rdma link ACTIVE on weft0, the IPv4-mapped RoCE v2 GID, pkey, node GUID, device attributes = the adapter's registers, the port follows the carrier"
	"all-to-all|$C4|4 nodes: every ordered pair runs an RDMA write/read check at the same time, byte-exact"
	"seed000-ops|$C4|libweft's further operations between guests (weft-ops): a third-party transfer (node1 makes node2 write into node0; TARGET completion at node0, SOURCE at node1, none at node2); a broadcast write reaching nodes 1-3 with node3's acknowledgement dropped by a switch drop rule, node3 alone re-sent to; a multicast write reaching only the group's members; a conditional RDMA whose signal arrives after its 4 writes; the four half-RDMA modes; all byte-exact"
	"tcp-transport|$CT|2 nodes whose QEMUs reach the switch over TCP on 127.0.0.1 (up --transport tcp): each node registered over TCP with its token on the socket transport; RDMA write and read 1 byte to 4 MiB byte-exact; IPv4 and IPv6 pings over weft0 lose nothing; after a switch restart on the same port the nodes are back over TCP"
	"stripe-2adapters|$CS|nodes with 2 adapters each (4 switch ports): node0 stripes 16 MiB RDMA writes over both its adapters to both of node1's (weft-bw --stripe), byte-exact, half of the bytes through each adapter; single-adapter and 2-adapter weft-bw figures side by side; a buffer registered once through either adapter is used with the same PVO through both, its deregistration through either drops later writes to it on both ; recovery, unbind and bind of weft1 keep the registrations made through weft0 (weft-test-nodeglobal)"
	"counters|$C2|counter-bearing RDMA objects (weft-cnt): reads and writes from 1 B to 64 MiB between node0 and node1, byte-exact, each with an interrupt wait and with a poll of the mapped counter word; no object left"
	"counters-retry|$C2|counter RDMA read of a range node1 exposes only later: CNT_ERROR with cause CNT_NOT_EXPOSED first, a retry after the exposure succeeds"
	"counters-kill|$C2|a process killed in the middle of a 64 MiB counter read leaves no live object, no pinned page, late chunks dropped by the adapter; a new client works"
	"counters-bench|$C2|benchmark: counter RDMA read and write bandwidth and latency next to libweft RDMA read and write, one run (figures)"
)

usage() {
	sed -n '2,/^set -uo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//'
	exit "${1:-2}"
}

# ---- helpers -----------------------------------------------------------------------
say() { printf '  %s\n' "$*"; }

# gx CLUSTER NODE CMD: run CMD in a guest; output in $OUT, status in $RC.
gx() {
	OUT=$("$WC" --name "$1" exec --timeout "${GX_TIMEOUT:-300}" "$2" -- "$3" 2>&1)
	RC=$?
}

# A scenario's checks.  A check is whatever a scenario tests between two
# calls of `checked`; `fail REASON` records a failed check (a "not ok"
# point; the scenario fails) and returns 1, and `checked WHAT` is the
# "ok" point of a check that held: it prints nothing when the check
# failed.  Points are marked for run_scenario's filter, which indents
# them into the scenario's subtest.
why=() npt=0 held=1
point() { printf '@@tap@@ %s\n' "$*"; }
fail() {
	local r=$*
	r=${r//$'\n'/ | }
	npt=$((npt + 1)) held=0
	why+=("$r")
	point "not ok $npt - $r"
	return 1
}
checked() {
	[ "$held" = 0 ] || { npt=$((npt + 1)); point "ok $npt - $*"; }
	held=1
}

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
# and wait until it has opened its window (a new window of job JOB); the
# window number is left in $SW.
server() {
	local c=$1 n=$2 name=$3 job=$4 cmd=$5 i old
	local list="awk '\$1 == \"window\" && \$3 == \"job\" && \$4 == $job {sub(\":\", \"\", \$2); print \$2}' /sys/kernel/debug/weft/weft0/state"
	gx "$c" "$n" "$list"
	old=" $(tr '\n' ' ' <<<"$OUT") "
	bg "$c" "$n" "$name" "$cmd"
	for i in $(seq 240); do
		gx "$c" "$n" "$list"
		if [ "$RC" = 0 ]; then
			for SW in $OUT; do
				case $old in *" $SW "*) ;; *) return 0 ;; esac
			done
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
# no_oops CLUSTER NODE: the node's kernel log has no BUG, oops, warning or
# kernel protection fault since the last no_oops of that node (a reboot, or
# a log that wrapped, starts over).  A user program's fault ("traps:
# prog[pid] ... in lib") is that program's failure, which its own check
# reports, not the kernel's.
declare -A dmesg_seen=()
no_oops() {
	local k=$1/$2 n
	gx "$1" "$2" "dmesg >/tmp/no_oops.log; n=\$(wc -l </tmp/no_oops.log); s=${dmesg_seen[$k]:-0};
		[ \$n -ge \$s ] || s=0; echo \"lines \$n\";
		tail -n +\$((s + 1)) /tmp/no_oops.log | grep -E 'BUG|Oops|WARNING|general protection|Call Trace' |
		grep -vE 'traps: [^ ]+\[[0-9]+\] ' | head -5"
	n=$(sed -n 's/^lines //p' <<<"$OUT")
	[ "$RC" = 0 ] && [ -n "$n" ] || fail "node$2: cannot read the kernel log: $OUT" || return 1
	dmesg_seen[$k]=$n
	OUT=$(grep -v '^lines ' <<<"$OUT")
	[ -z "$OUT" ] || fail "node$2: kernel log shows: $OUT"
}

console_tails() {
	local c=$1 n i
	n=$(sed -n 's/^NODES=//p' "$(weft_run_dir)/$c/cluster.env" 2>/dev/null)
	for ((i = 0; i < ${n:-0}; i++)); do
		echo "  ---- $c node$i console (last 30 lines) ----"
		"$WC" --name "$c" console "$i" -n 30 2>&1 | sed 's/^/  | /'
		echo "  ---- $c node$i kernel log (last 15 lines) ----"
		"$WC" --name "$c" exec --timeout 20 "$i" -- 'dmesg | tail -n 15' 2>&1 | sed 's/^/  | /'
	done
}

cluster_up() { # cluster_up NAME N
	local c=$1 n=$2 t
	[ -z "${up_error[$c]+x}" ] || return 0
	echo "# starting cluster $c ($n nodes)"
	t=${ctransport[$c]:-auto}
	[ "$t" = tcp ] || t=${WEFT_TRANSPORT:-$t}
	if "$WC" --name "$c" up -n "$n" --adapters "${cadapters[$c]:-1}" --switch-args "${cargs[$c]:-}" \
		--device-props "${cprops[$c]:-}" --transport "$t" \
		>"$TMP/$c.up" 2>&1; then
		sed 's/^/# | /' "$TMP/$c.up" | grep -E 'ready after|NODE|node[0-9] |up:' || true
		up_error[$c]=
	else
		sed 's/^/# | /' "$TMP/$c.up" | tail -40
		up_error[$c]="cluster $c did not come up: $(grep -E 'error:' "$TMP/$c.up" | tail -1)"
	fi
}

# Take the clusters down; their logs are kept only when something failed.
cleanup() {
	local c
	for c in "$C2" "$CF" "$C4" "$CS" "$CT"; do
		[ -z "${up_error[$c]+x}" ] || "$WC" --name "$c" down >/dev/null 2>&1
		if [ "$failed" = 0 ]; then
			rm -rf "$(weft_run_dir)/${c:?}"
		else
			echo "# logs of cluster $c: $(weft_run_dir)/$c"
		fi
	done
	rm -rf "$TMP"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# run_scenario NUMBER NAME CLUSTER DESCRIPTION: one TAP point, after the
# scenario's checks as a subtest.
run_scenario() {
	local k=$1 name=$2 c=$3 desc=$4 t0 rc fpid out
	echo "# Subtest: $name"
	t0=$SECONDS
	why=() npt=0 held=1
	# The filter indents the scenario's points and makes the rest "#"
	# lines; it ends at the @@end@@ line (jobs the scenario left running
	# may hold the pipe open), and is waited for by its own pid.
	exec {out}> >(awk '/^@@end@@$/ {exit}
		{ if (!sub(/^@@tap@@ /, "    ")) $0 = "    # " $0; print; fflush() }')
	fpid=$!
	{
		echo "$desc"
		if [ -n "${up_error[$c]:-}" ]; then
			fail "${up_error[$c]}"
		else
			"sc_${name//-/_}" "$c"
			rc=$?
			[ "$rc" = 0 ] || [ ${#why[@]} -gt 0 ] || fail "the scenario returned $rc"
			[ "$npt" -gt 0 ] || fail "the scenario checked nothing"
			[ ${#why[@]} -eq 0 ] || console_tails "$c"
		fi
		echo "@@end@@"
	} >&"$out" 2>&1
	exec {out}>&-
	wait "$fpid"
	echo "    1..$npt"
	if [ ${#why[@]} -eq 0 ]; then
		echo "ok $k - $name ($((SECONDS - t0)) s)"
		passed=$((passed + 1))
		summary+=("PASS $name")
	else
		echo "not ok $k - $name: ${why[0]}$([ ${#why[@]} -lt 2 ] || echo " (and $((${#why[@]} - 1)) more)")"
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

# gtest CLUSTER NODE TEST [ARGS]: run an in-guest driver test (TAP, from
# tests/common/weft_test.h): one check, which holds when the test exited 0
# with every point of its plan passed.
gtest() {
	local c=$1 n=$2 t=$3 args=${4:-} ok bad plan
	need "$c" "$n" "$t" || return 1
	GX_TIMEOUT=240 gx "$c" "$n" "/usr/lib/weft/tests/$t $args"
	ok=$(grep -c '^ok ' <<<"$OUT")
	bad=$(grep -c '^not ok ' <<<"$OUT")
	plan=$(sed -n 's/^1\.\.\([0-9][0-9]*\)$/\1/p' <<<"$OUT" | tail -n1)
	if [ "$RC" != 0 ] || [ "$bad" != 0 ] || [ "$ok" = 0 ] || [ "${plan:-none}" != $((ok + bad)) ]; then
		grep -E '^not ok|^# FAIL|^Bail out|error|fatal' <<<"$OUT" | head -20 | sed 's/^/  | /'
		[ "$ok" != 0 ] || tail -n 10 <<<"$OUT" | sed 's/^/  | /'
		fail "node$n: $t failed (exit $RC, $bad of $((ok + bad)) points failed, plan ${plan:-missing})"
		return 1
	fi
	checked "node$n: $t: all $ok points of its plan passed"
}

sc_ioctl_errors() {
	gtest "$1" 0 weft-test-ioctl || return 1
	gtest "$1" 0 weft-test-isolation
}

sc_process_death() { gtest "$1" 0 weft-test-kill; }

sc_close_inflight() { gtest "$1" 0 weft-test-close; }

sc_window_fatal() { gtest "$1" 0 weft-test-fatal; }

sc_recovery() { gtest "$1" 1 weft-test-recovery; }

sc_events() { gtest "$1" 0 weft-test-events; }

sc_stale_mappings() { gtest "$1" 1 weft-test-stale; }

sc_unbind() { gtest "$1" 1 weft-test-unbind; }

sc_modload() {
	gtest "$1" 1 weft-test-modload "/lib/weft/weft.ko 20" || return 1
	gx "$1" 1 'ls /dev/weft0 && head -1 /sys/kernel/debug/weft/weft0/state'
	[ "$RC" = 0 ] || fail "node1: no adapter after the load/unload cycles: $OUT"
	checked "node1: weft.ko loaded again afterwards, /dev/weft0 back"
}

sc_fork() { gtest "$1" 0 weft-test-fork; }

# mrkey CLUSTER NODE: weft-test-mrkey; the buffer's key in $KEY, the
# adapter's key epoch in $EPOCH.
mrkey() {
	gtest "$1" "$2" weft-test-mrkey || return 1
	KEY=$(sed -n 's/^# mrkey: .* key \(0x[0-9a-f]*\) epoch [0-9]*$/\1/p' <<<"$OUT")
	EPOCH=$(sed -n 's/^# mrkey: .* epoch \([0-9]*\)$/\1/p' <<<"$OUT")
	[ -n "$KEY" ] && [ -n "$EPOCH" ] || fail "node$2: weft-test-mrkey printed no key line: $(tail -n 3 <<<"$OUT")"
}

sc_reboot_keys() {
	local c=$1 i keys=() epochs=() k
	mrkey "$c" 1 || return 1
	keys+=("$KEY") epochs+=("$EPOCH")
	for i in 1 2 3; do
		"$WC" --name "$c" reboot 1 >"$TMP/reboot-keys.$i" 2>&1 ||
			{ tail -5 "$TMP/reboot-keys.$i" | sed 's/^/  | /'; fail "reboot $i of node1 failed"; return 1; }
		mrkey "$c" 1 || return 1
		[ "$EPOCH" -gt "${epochs[-1]}" ] ||
			{ fail "reboot $i: adapter key epoch $EPOCH, before it ${epochs[-1]}"; return 1; }
		for k in "${keys[@]}"; do
			[ "$KEY" != "$k" ] || { fail "reboot $i: the buffer got key $KEY again (keys ${keys[*]})"; return 1; }
		done
		keys+=("$KEY") epochs+=("$EPOCH")
		checked "node1 reboot $i: same buffer, key $KEY (epoch $EPOCH), none of the earlier keys"
	done
	checked "node1: keys ${keys[*]} over 3 reboots, all different; epochs ${epochs[*]}"
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

# tool2 CLUSTER SERVER CLIENT NAME JOB TOOL ARGS: a two-node tool run with
# the same ARGS on both sides; the client's output is left in $OUT.
tool2() {
	local c=$1 s=$2 k=$3 name=$4 job=$5 tool=$6 args=$7
	server "$c" "$s" "$name" "$job" "$tool --server --job $job $args" || return 1
	GX_TIMEOUT=600 gx "$c" "$k" "$tool --client --peer $s --peer-window $SW --job $job $args --json"
	local crc=$RC cout=$OUT
	bgwait "$name"
	local src=$RC sout=$OUT
	OUT=$cout
	if [ "$crc" != 0 ] || [ "$src" != 0 ]; then
		tail -n 10 <<<"$cout" | sed 's/^/  | client: /'
		tail -n 5 <<<"$sout" | sed 's/^/  | server: /'
		fail "$tool node$k -> node$s: client exit $crc, server exit $src"
		return 1
	fi
}

# Print the "results" of a tool's JSON output, one line each, and check
# that every entry has the numeric fields given.
results() {
	grep -E '^\{' <<<"$OUT" | tail -n1 | python3 -c '
import json, sys
d = json.load(sys.stdin)
res = d.get("results") or []
need = sys.argv[1].split(",")
bad = 0
for r in res:
    flat = dict(r)
    flat.update(r.get("lat_us", {}))
    if any(not isinstance(flat.get(k), (int, float)) or flat.get(k) < 0 for k in need):
        bad += 1
    if "lat_us" in r:
        l = r["lat_us"]
        print("  figures: %s %d B x%d: one-way us min %.2f p50 %.2f p90 %.2f p99 %.2f max %.2f (lost %d)" %
              (r["mode"], r["size"], r["iters"], l["min"], l["p50"], l["p90"], l["p99"], l["max"], r["lost"]))
    else:
        print("  figures: %-5s %9d B %7d ops %8.3f s %9.1f MB/s (retries %d)" %
              (r["op"], r["size"], r["ops"], r["seconds"], r["MBps"], r["retries"]))
sys.exit(0 if res and not bad else 1)
' "$1"
}

# every_result N PYEXPR: the last JSON line of $OUT has N "results", and
# PYEXPR (over one result, r) holds for each.
every_result() {
	grep -E '^\{' <<<"$OUT" | tail -n1 | python3 -c '
import json, sys
res = json.load(sys.stdin).get("results") or []
sys.exit(0 if len(res) == int(sys.argv[1]) and all(eval(sys.argv[2], {}, {"r": r}) for r in res) else 1)
' "$1" "$2" 2>/dev/null
}

# The tool checks every answer byte for byte ("verified": round trips
# whose answer carried exactly what was sent, warm-up included).
sc_fifo_pingpong() {
	local c=$1
	need "$c" 0 weft-pingpong || return 1
	need "$c" 1 weft-pingpong || return 1
	tool2 "$c" 1 0 pp 4099 weft-pingpong "--mode fifo --size 64 --iters 1000" || return 1
	results iters,lost,p50,p99 || fail "weft-pingpong printed no usable FIFO figures: $(tail -n 3 <<<"$OUT")" || return 1
	every_result 1 'r["mode"] == "fifo" and r["verified"] == 1101' ||
		fail "FIFO ping-pong: not all 1101 round trips verified: $(grep -E '^\{' <<<"$OUT")" || return 1
	grep -q '"lost":0' <<<"$OUT" || fail "messages lost on a fault-free fabric: $OUT" || return 1
	checked "node0 <-> node1 FIFO ping-pong: 1101 round trips of 64 bytes (100 warm-up), every echo byte-exact, none lost"
	tool2 "$c" 1 0 pp-rdma 4100 weft-pingpong "--mode rdma --size 4096 --iters 300" || return 1
	results iters,lost,p50,p99 || fail "weft-pingpong printed no usable RDMA figures" || return 1
	every_result 1 'r["mode"] == "rdma" and r["verified"] == 331' ||
		fail "RDMA ping-pong: not all 331 round trips verified: $(grep -E '^\{' <<<"$OUT")" || return 1
	checked "node0 <-> node1 RDMA ping-pong: 331 round trips of 4 KiB (30 warm-up), every answer written back byte-exact"
}

# weft-bw checks the data of every size (a write of a pattern read back)
# and prints a result only after that check held.
sc_bandwidth() {
	local c=$1
	need "$c" 0 weft-bw || return 1
	need "$c" 1 weft-bw || return 1
	tool2 "$c" 1 0 bw 4101 weft-bw "--mode both --min-size 4K --max-size 1M --depth 8 --iters 64" || return 1
	results ops,seconds,MBps || fail "weft-bw printed no usable figures: $(tail -n 3 <<<"$OUT")" || return 1
	every_result 18 'r["verified"] is True and r["ops"] == 64' ||
		fail "weft-bw: not 9 write and 9 read sizes each with 64 operations and verified data: $(grep -E '^\{' <<<"$OUT")" || return 1
	checked "node0 -> node1 RDMA write and read, 4 KiB..1 MiB, depth 8: 64 operations per size, each size's data written and read back byte-exact"
}

# RDMA through a lossy, reordering fabric: libweft's reliable operations
# (re-issued with a larger tid after a timeout) still give byte-exact
# transfers, and the retries show in the tool's figures.
lossy_body() {
	local c=$1 retries
	OUT=$("$WC" --name "$c" faults set drop=0.05 routes=4 skew_ns=200000 jitter_ns=300000 2>&1) ||
		fail "switch: faults set: $OUT" || return 1
	say "switch faults: $("$WC" --name "$c" faults faults 2>&1 | tr '\n' ' ')"
	rdma_check "$c" 1 0 4102 1 4K || return 1
	retries=$(json retries)
	[[ $retries =~ ^[0-9]+$ ]] && [ "$retries" -gt 0 ] ||
		fail "no retries reported with 5% loss (retries: ${retries:-none}): the faults did not act" || return 1
	checked "with 5% loss and 4 routes (reordering), $retries re-issued operations, every transfer byte-exact"
	OUT=$("$WC" --name "$c" faults counters 2>&1)
	say "switch: $(grep '^total' <<<"$OUT")"
}
sc_lossy_rdma() {
	local r
	need "$1" 0 weft-rdma-check || return 1
	need "$1" 1 weft-rdma-check || return 1
	lossy_body "$1"
	r=$?
	"$WC" --name "$1" faults clear >/dev/null 2>&1 || { fail "switch: faults clear failed"; return 1; }
	return $r
}

# ---- reliable layer and lazy deregistration (issue 6) ----------------------------------
# The reliable layer (weft_rel) through a lossy, reordering switch: the
# client sends 10000 sequence-numbered messages, the server checks that
# each arrives exactly once and in order.
reliable_body() {
	local c=$1 job=4104 n=10000 sw0 sw1
	OUT=$("$WC" --name "$c" faults set drop_ppm=50000 routes=4 jitter_ns=50000 2>&1) ||
		fail "switch: faults set: $OUT" || return 1
	say "switch faults: $OUT"
	sw0=$("$WC" --name "$c" faults --json counters 2>&1)
	server "$c" 1 rel-srv "$job" "weft-rdma-check --server --job $job" || return 1
	GX_TIMEOUT=600 gx "$c" 0 "weft-rdma-check --client --peer 1 --peer-window $SW --job $job --messages $n --json"
	local crc=$RC cout=$OUT
	bgwait rel-srv
	local src=$RC sout=$OUT
	OUT=$cout
	local result delivered failures dups stale retries secs mode
	result=$(json result) delivered=$(json delivered) failures=$(json failures) mode=$(json mode)
	dups=$(json duplicates) stale=$(json stale) retries=$(json retries) secs=$(json seconds)
	sw1=$("$WC" --name "$c" faults --json counters 2>&1)
	local swdrops
	swdrops=$(python3 -c 'import json,sys; a,b=(json.loads(x) for x in sys.argv[1:3]); print(b["total"]["drops"]["RANDOM"]-a["total"]["drops"]["RANDOM"])' "$sw0" "$sw1" 2>/dev/null)
	say "figures: messages $n, delivered ${delivered:-?}, out of order or repeated ${failures:-?}, retries ${retries:-?}, duplicates dropped ${dups:-?}, stale completions ignored ${stale:-?}, ${secs:-?} s; frames dropped by the switch ${swdrops:-?}"
	if [ "$crc" != 0 ] || [ "$result" != pass ] || [ "$mode" != messages ] || [ "$delivered" != "$n" ] || [ "$failures" != 0 ]; then
		tail -n 10 <<<"$cout" | sed 's/^/  | client: /'
		tail -n 5 <<<"$sout" | sed 's/^/  | server: /'
		fail "reliable layer: client exit $crc, result ${result:-none}, delivered ${delivered:-none} of $n, failures ${failures:-?}"
		return 1
	fi
	[ "$src" = 0 ] || { tail -n 5 <<<"$sout" | sed 's/^/  | server: /'; fail "weft-rdma-check server on node1 exited $src"; return 1; }
	[[ $swdrops =~ ^[0-9]+$ ]] && [ "$swdrops" -gt 0 ] ||
		fail "the switch dropped no frame (${swdrops:-unreadable}): the faults did not act" || return 1
	checked "with 5% loss, 4 routes and jitter ($swdrops frames dropped by the switch): \"result\":\"pass\", \"delivered\":$n, each message exactly once, in order (sequence-checked by the server)"
}
sc_reliable_messages() {
	local r
	need "$1" 0 weft-rdma-check || return 1
	need "$1" 1 weft-rdma-check || return 1
	reliable_body "$1"
	r=$?
	OUT=$("$WC" --name "$1" faults clear 2>&1) || { fail "switch: faults clear failed: $OUT"; return 1; }
	checked "switch faults reset: $OUT"
	return $r
}

# ---- the switch as a fault (issue 16) ---------------------------------------------
# switch_pid CLUSTER: the switch pid that `weft-cluster status` reports.
switch_pid() {
	"$WC" --name "$1" status 2>/dev/null | sed -n 's/^weft-switch: pid \([0-9]*\),.*/\1/p'
}

# node0's rx_frames in the switch's counters (empty if unreadable).
switch_rx0() {
	"$WC" --name "$1" faults --json counters 2>/dev/null |
		python3 -c 'import json,sys; print(sum(p["rx_frames"] for p in json.load(sys.stdin)["ports"] if p["node"] == 0))' 2>/dev/null
}

# The switch is killed and started again mid-stream (weft-cluster switch
# restart); the adapters reconnect by themselves and the reliable layer
# retransmits what the dead switch held.
sc_switch_restart() {
	local c=$1 job=4106 n=20000 pid0 pid1 rx=0 rx0 i
	need "$c" 0 weft-rdma-check || return 1
	need "$c" 1 weft-rdma-check || return 1
	pid0=$(switch_pid "$c")
	[[ $pid0 =~ ^[0-9]+$ ]] || fail "weft-cluster status shows no running switch" || return 1
	rx0=$(switch_rx0 "$c")
	[[ $rx0 =~ ^[0-9]+$ ]] || fail "cannot read the switch's counters" || return 1
	server "$c" 1 sr-srv "$job" "weft-rdma-check --server --job $job" || return 1
	GX_TIMEOUT=900 bg "$c" 0 sr-cli "weft-rdma-check --client --peer 1 --peer-window $SW --job $job --messages $n --json"
	# Restart once node0 has sent 2000 frames of this stream.
	for i in $(seq 600); do
		rx=$(( $(switch_rx0 "$c" || echo 0) - rx0 ))
		[ "$rx" -ge 2000 ] && break
		bgdone sr-cli && break
		sleep 0.2
	done
	if bgdone sr-cli || [ "$rx" -lt 2000 ]; then
		bgwait sr-cli
		fail "the stream did not get going before the restart (node0 frames of this stream at the switch: $rx; client: $(tail -n 3 <<<"$OUT"))"
		return 1
	fi
	OUT=$("$WC" --name "$c" switch restart 2>&1) || fail "weft-cluster switch restart: $OUT" || return 1
	pid1=$(switch_pid "$c")
	{ [[ $pid1 =~ ^[0-9]+$ ]] && [ "$pid1" != "$pid0" ] && kill -0 "$pid1" 2>/dev/null && ! kill -0 "$pid0" 2>/dev/null; } ||
		fail "after the restart status shows switch pid '${pid1:-none}' (old $pid0)" || return 1
	checked "weft-cluster switch restart killed weft-switch pid $pid0 mid-stream ($rx frames of the stream from node0 had passed it) and started pid $pid1, which status reports"
	for i in $(seq 150); do
		OUT=$("$WC" --name "$c" faults nodes 2>&1)
		grep -q 'node 0 attached' <<<"$OUT" && grep -q 'node 1 attached' <<<"$OUT" && break
		sleep 0.2
	done
	grep -q 'node 0 attached' <<<"$OUT" && grep -q 'node 1 attached' <<<"$OUT" ||
		fail "the adapters did not reconnect to the new switch: $OUT" || return 1
	checked "both adapters reconnected to the new switch with their tokens (ctl nodes: $(tr '\n' ';' <<<"$OUT"))"
	bgwait sr-cli
	local crc=$RC cout=$OUT
	bgwait sr-srv
	local src=$RC sout=$OUT
	OUT=$cout
	local result delivered failures dups retries secs
	result=$(json result) delivered=$(json delivered) failures=$(json failures)
	dups=$(json duplicates) retries=$(json retries) secs=$(json seconds)
	rx=$(switch_rx0 "$c")
	say "figures: messages $n, delivered ${delivered:-?}, out of order or repeated ${failures:-?}, retries ${retries:-?}, duplicates dropped ${dups:-?}, ${secs:-?} s; frames from node0 through the new switch ${rx:-?}"
	if [ "$crc" != 0 ] || [ "$result" != pass ] || [ "$delivered" != "$n" ] || [ "$failures" != 0 ]; then
		tail -n 10 <<<"$cout" | sed 's/^/  | client: /'
		tail -n 5 <<<"$sout" | sed 's/^/  | server: /'
		fail "reliable layer across the switch restart: client exit $crc, result ${result:-none}, delivered ${delivered:-none} of $n, failures ${failures:-?}"
		return 1
	fi
	[ "$src" = 0 ] || { tail -n 5 <<<"$sout" | sed 's/^/  | server: /'; fail "weft-rdma-check server on node1 exited $src"; return 1; }
	[ "${rx:-0}" -gt 0 ] || fail "the new switch forwarded no frame from node0 (${rx:-unreadable})" || return 1
	checked "\"result\":\"pass\", \"delivered\":$n across the restart, each message exactly once and in order (sequence-checked by the server), $rx frames from node0 through the new switch"
}

# Lazy deregistration: weft-rdma-check moves every transfer through the
# MR cache; its two local buffers are registered once, and every later
# transfer from the same buffer is a cache hit with no registration call.
sc_mr_cache() {
	local c=$1 job=4105
	need "$c" 0 weft-rdma-check || return 1
	need "$c" 1 weft-rdma-check || return 1
	rdma_check "$c" 1 0 "$job" 4K 4K || return 1
	local mc
	mc=$(json mr_cache)
	local v
	v=$(python3 -c '
import json, sys
d = json.loads(sys.argv[1]); m = d["mr_cache"]
gets = 3 * d["cases"]
print(m["hits"], m["misses"], m["remaps"], m["registrations"], gets, d["ops"])' "$(grep -E '^\{' <<<"$OUT" | tail -n1)" 2>/dev/null)
	local hits misses remaps regs gets ops
	read -r hits misses remaps regs gets ops <<<"$v"
	say "figures: mr_cache $mc over $gets transfers ($ops operations)"
	[[ $hits =~ ^[0-9]+$ ]] || fail "weft-rdma-check printed no mr_cache counters: $(tail -n 2 <<<"$OUT")" || return 1
	[ "$regs" -ge 1 ] && [ "$regs" -le 2 ] ||
		fail "$regs registrations for 2 local buffers (expected 1..2)" || return 1
	[ $((hits + misses)) = "$gets" ] ||
		fail "hits $hits + misses $misses != $gets transfers" || return 1
	[ "$hits" -ge $((gets - 2)) ] ||
		fail "only $hits cache hits for $gets transfers from 2 buffers" || return 1
	checked "$gets transfers from 2 buffers: $regs registration calls, $hits cache hits, $misses misses, $remaps remaps: every transfer after the first from a buffer skipped registration"
}

# ---- failover under a stream (issues 7 and 8) -----------------------------------------
# cnt NAME: value of counter NAME in the counters text $CNT.
cnt() { awk -v n="$1" '$1 == n {print $2; f = 1} END {if (!f) print 0}' <<<"$CNT"; }
drops() { awk '$1 ~ /^DROP_/ {s += $2} END {print s + 0}' <<<"$CNT"; }
counters() { # counters CLUSTER NODE -> $CNT
	gx "$1" "$2" 'cat /sys/kernel/debug/weft/weft0/counters'
	CNT=$OUT
	[ "$RC" = 0 ] || fail "node$2: cannot read the adapter counters: $OUT"
}
replayed_to() { # replayed_to CLUSTER NODE: frames the switch replayed to NODE
	"$WC" --name "$1" faults counters | awk -v n="$2" '$1 == "port" && $2 == n {for (i = 3; i <= NF; i++) if ($i ~ /^replayed=/) {sub("replayed=", "", $i); print $i}}'
}

# failover CLUSTER EVENT: node S streams RDMA writes and reads to node T;
# during the stream EVENT happens to T (reboot: T's VM restarts; recover:
# T's adapter recovers).  Then the stream restarts as a reliable-layer
# stream (weft-rdma-check --messages) of the same job: both ends acquire
# rCxts and register memory again, and while it runs the switch replays
# old frames captured before the event.  No stale frame may be accepted
# (each is dropped with a counted reason, or is an old completion the ULP
# drops by tid), every new message arrives exactly once, and the adapter,
# switch, weft-info and driver counters must agree.
# The nodes' weft0 interfaces are down meanwhile: their own frames (ARP,
# IPv6 neighbour discovery, the window-open announcement) would otherwise
# land in the capture ring between the event and the mark, and a replayed
# copy of such a current frame is rightly accepted by the adapter, which
# the count of stale frames could not tell apart.  With weft0 down its
# window is closed, so replayed IP frames are dropped with a counted
# reason like the stream's.
failover() {
	local c=$1 ev=$2 s t rc
	if [ "$ev" = recover ]; then s=1 t=0; else s=0 t=1; fi
	fo_ip "$c" down "$s" "$t" || return 1
	failover_run "$c" "$ev" "$s" "$t"
	rc=$?
	fo_ip "$c" up "$s" "$t" || return 1
	return "$rc"
}

# fo_ip CLUSTER up|down NODE...: weft0 up or down, its addresses kept.
fo_ip() {
	local c=$1 st=$2 i
	shift 2
	for i in "$@"; do
		gx "$c" "$i" "sysctl -qw net.ipv6.conf.weft0.keep_addr_on_down=1 && ip link set weft0 $st"
		[ "$RC" = 0 ] || fail "node$i: ip link set weft0 $st: $OUT" || return 1
	done
}

failover_run() {
	local c=$1 ev=$2 s=$3 t=$4 job=4200 mark i rc0 before_tx now_tx
	for i in $s $t; do need "$c" "$i" weft-bw weft-rdma-check || return 1; done
	local args="--mode both --min-size 64K --max-size 4M --depth 8 --iters 20000"
	counters "$c" "$s" || return 1
	before_tx=$(cnt TX_PACKETS)
	server "$c" "$t" fo-srv "$job" "weft-bw --server --job $job $args" || return 1
	bg "$c" "$s" fo-cli "weft-bw --client --peer $t --peer-window $SW --job $job $args"
	# The stream runs until well over a capture ring of frames (8192) has
	# passed, so that the ring holds only stream frames.
	for i in $(seq 240); do
		counters "$c" "$s" || return 1
		now_tx=$(cnt TX_PACKETS)
		[ $((now_tx - before_tx)) -ge 10000 ] && break
		if bgdone fo-cli; then
			bgwait fo-cli
			fail "the stream node$s -> node$t ended before the event (status $RC): $(tail -n 3 <<<"$OUT")"
			return 1
		fi
		sleep 0.5
	done
	[ $((now_tx - before_tx)) -ge 10000 ] || fail "the stream node$s -> node$t did not get going ($((now_tx - before_tx)) frames sent)" || return 1
	checked "node$s streams RDMA to node$t: $((now_tx - before_tx)) frames sent so far"
	# The event.  Right after it the stream's source is stopped: every frame
	# the switch captured from then back (its capture ring holds the last
	# 8192 frames, all of the stream) belongs to the old incarnation.
	if [ "$ev" = reboot ]; then
		gx "$c" "$t" 'cat /proc/sys/kernel/random/boot_id'
		local boot0=$OUT
		( "$WC" --name "$c" reboot "$t" >"$TMP/reboot.out" 2>&1; echo $? >"$TMP/reboot.rc" ) &
		local rbpid=$! down=
		for i in $(seq 100); do
			"$WC" --name "$c" status 2>/dev/null | grep -qE "^node$t +[0-9]+ +[a-z]+ +ready" ||
				{ down=1; break; }
			sleep 0.2
		done
		gx "$c" "$s" 'killall -KILL weft-bw'
		[ -n "$down" ] || fail "node$t never left the ready state after the reboot began"
		checked "node$t's VM went down mid-stream (no longer ready); node$s's stream stopped just after"
		wait "$rbpid"
		[ "$(cat "$TMP/reboot.rc")" = 0 ] ||
			{ sed 's/^/  | /' "$TMP/reboot.out"; fail "node$t did not come back from the reboot"; return 1; }
		gx "$c" "$t" 'cat /proc/sys/kernel/random/boot_id; cat /run/weft/driver; ls /dev/weft0'
		[ "$RC" = 0 ] && [ "$(head -n1 <<<"$OUT")" != "$boot0" ] && grep -qx loaded <<<"$OUT" ||
			fail "node$t after reboot: $OUT" || return 1
		checked "node$t rebooted (new boot id), weft.ko loaded again with new keys"
		fo_ip "$c" down "$t" || return 1
	elif [ "$ev" = fatal ]; then
		gx "$c" "$t" 'cat /sys/class/misc/weft0/device/recovery_count'
		rc0=$OUT
		gx "$c" "$t" 'echo 1 > /sys/kernel/debug/weft/weft0/inject_fatal'
		[ "$RC" = 0 ] || fail "node$t: fatal error injection failed: $OUT" || return 1
		# Nobody asks for a recovery: the adapter's interrupt makes
		# weft.ko recover by itself.
		for i in $(seq 60); do
			gx "$c" "$t" 'cat /sys/class/misc/weft0/device/recovery_count'
			[ "$OUT" = $((rc0 + 1)) ] && break
			sleep 0.5
		done
		gx "$c" "$s" 'killall -KILL weft-bw'
		gx "$c" "$t" 'cat /sys/class/misc/weft0/device/recovery_count; dmesg | grep -c "adapter recovery: device error"'
		[ "$(sed -n 1p <<<"$OUT")" = $((rc0 + 1)) ] ||
			fail "node$t: recovery count $rc0 -> $(sed -n 1p <<<"$OUT") 30 s after the injected fatal error, expected $((rc0 + 1))" || return 1
		[ "$(sed -n '$p' <<<"$OUT")" -ge 1 ] 2>/dev/null ||
			fail "node$t: the kernel log shows no recovery for a device error" || return 1
		checked "node$t: injected adapter fatal error, weft.ko recovered by itself (device error), recovery count $rc0 -> $((rc0 + 1)); node$s's stream stopped just after"
	else
		gx "$c" "$t" 'cat /sys/class/misc/weft0/device/recovery_count'
		rc0=$OUT
		gx "$c" "$t" 'echo 1 > /sys/kernel/debug/weft/weft0/recover'
		[ "$RC" = 0 ] || fail "node$t: recovery through debugfs failed: $OUT" || return 1
		gx "$c" "$s" 'killall -KILL weft-bw'
		gx "$c" "$t" 'cat /sys/class/misc/weft0/device/recovery_count'
		[ "$RC" = 0 ] && [ "$OUT" = $((rc0 + 1)) ] ||
			fail "node$t: recovery count $rc0 -> $OUT, expected $((rc0 + 1))" || return 1
		checked "node$t: adapter recovered mid-stream, recovery count $rc0 -> $OUT; node$s's stream stopped just after"
	fi

	# The server on T was told of the recovery (or went down with its VM).
	for i in $(seq 60); do bgdone fo-srv && break; sleep 0.5; done
	if ! bgdone fo-srv; then
		gx "$c" "$t" 'killall -KILL weft-bw'
		say "the weft-bw server on node$t was still running 30 s after the event: killed"
	fi
	bgwait fo-cli
	bgwait fo-srv
	say "weft-bw server on node$t ended with status $RC: $(grep -v '^{' <<<"$OUT" | tail -n 1)"
	for i in $s $t; do
		local k
		for k in $(seq 60); do
			gx "$c" "$i" "cat /sys/kernel/debug/weft/driver"
			grep -q '^windows_open 0$' <<<"$OUT" && grep -q '^rcxts_held 0$' <<<"$OUT" &&
				grep -q '^pages_pinned 0$' <<<"$OUT" && break
			sleep 0.5
		done
		grep -q '^windows_open 0$' <<<"$OUT" && grep -q '^rcxts_held 0$' <<<"$OUT" &&
			grep -q '^pages_pinned 0$' <<<"$OUT" || {
			local held=$OUT
			gx "$c" "$i" 'ps | grep -v grep | grep weft-; cat /sys/kernel/debug/weft/weft0/state'
			fail "node$i: resources still held 30 s after the stream's processes were killed: $(tr '\n' ' ' <<<"$held") -- $(tr '\n' ' ' <<<"$OUT")"
			return 1
		}
	done
	checked "both stream ends are gone and their windows, rCxts and pinned pages are released"
	mark=$("$WC" --name "$c" faults mark 2>&1)
	[[ $mark =~ ^[0-9]+$ ]] || fail "switch capture mark: $mark" || return 1

	# The stream restarts: T opens a window of the same job again and S a
	# new client, both acquire rCxts and register memory anew (after a
	# reboot with T's new PVO keys, after a recovery with the new rCxt
	# key), and the reliable layer streams $msgs messages.  While it runs,
	# the switch replays the old stream's frames still in its capture ring
	# (the new stream's frames push the oldest out), so they meet rCxts
	# and registrations that are live again.
	fo_snap "$c" "$s" "$t" 0 || return 1
	local relt="--rel-timeout-us 200000" msgs=2000
	server "$c" "$t" fo-new "$job" "weft-rdma-check --server --job $job $relt" || return 1
	bg "$c" "$s" fo-msg "weft-rdma-check --client --peer $t --peer-window $SW --job $job --messages $msgs $relt --json"
	local rx0 started=
	rx0=$(awk '$1 == "RX_PACKETS" {print $2}' "$TMP/fo0.$t")
	for i in $(seq 200); do
		counters "$c" "$t" || return 1
		[ $(($(cnt RX_COMPLETIONS) - $(awk '$1 == "RX_COMPLETIONS" {print $2}' "$TMP/fo0.$t"))) -ge 2 ] && { started=1; break; }
		bgdone fo-msg && break
		sleep 0.1
	done
	[ -n "$started" ] && ! bgdone fo-msg ||
		{ bgwait fo-msg; fail "the new stream node$s -> node$t did not get going: $(tail -n 3 <<<"$OUT")"; return 1; }
	OUT=$("$WC" --name "$c" faults replay 2048 "before=$mark" 2>&1) || fail "switch replay: $OUT" || return 1
	local total dv rpl=$OUT
	total=$(grep -oE '[0-9]+' <<<"$OUT" | head -n1)
	for i in $s $t; do
		drv "$c" "$i"
		dv+="node$i $(awk '$1 == "windows_open" || $1 == "rcxts_held" || $1 == "mrs" || $1 == "pages_pinned" {printf "%s=%s ", $1, $2}' <<<"$OUT")"
	done
	checked "the new stream runs (weft-rdma-check --messages $msgs, node$s -> node$t, $(( $(cnt RX_PACKETS) - rx0 )) frames received by node$t so far)"
	say "driver resources: $dv"
	say "switch: $rpl (old stream frames from the capture ring, captured before mark $mark)"
	[ "${total:-0}" -gt 0 ] || fail "the switch replayed no frame" || return 1

	bgwait fo-msg
	local crc=$RC cout=$OUT
	bgwait fo-new
	local src=$RC sout=$OUT
	OUT=$cout
	local result delivered failures dups stale retries
	result=$(json result) delivered=$(json delivered) failures=$(json failures)
	dups=$(json duplicates) stale=$(json stale) retries=$(json retries)
	say "new stream: result ${result:-none}, delivered ${delivered:-?}/$msgs, out of order or repeated ${failures:-?}, duplicates dropped ${dups:-?}, stale completions ignored ${stale:-?}, retries ${retries:-?}"
	if [ "$crc" != 0 ] || [ "$result" != pass ] || [ "$delivered" != "$msgs" ] || [ "$failures" != 0 ]; then
		tail -n 5 <<<"$cout" | sed 's/^/  | client: /'
		tail -n 5 <<<"$sout" | sed 's/^/  | server: /'
		fail "the new stream did not deliver every message exactly once (client exit $crc, server exit $src)"
		return 1
	fi
	[ "$src" = 0 ] || { tail -n 5 <<<"$sout" | sed 's/^/  | server: /'; fail "weft-rdma-check server on node$t exited $src"; return 1; }
	checked "the reliable layer delivered all $msgs messages exactly once and in order (sequence-checked by the server)"

	# Quiescent again: the switch holds nothing, then the second snapshot.
	for i in $(seq 40); do
		"$WC" --name "$c" faults --json counters 2>/dev/null | grep -q '"queued":0,"parked":0' && break
		sleep 0.25
	done
	sleep 0.5
	fo_snap "$c" "$s" "$t" 1 || return 1
	local lost=$((msgs - delivered))
	python3 - "$TMP" "$s" "$t" "$total" "$ev" "$lost" "$failures" "$stale" "$retries" <<'PY' >"$TMP/fo.report"
import json, sys
tmp, s, t, total, ev, lost, dup = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), sys.argv[5], int(sys.argv[6]), int(sys.argv[7])
ulp_stale, retries = int(sys.argv[8]), int(sys.argv[9])
def cnt(path):
    d = {}
    for l in open(path):
        f = l.split()
        if len(f) == 2 and f[1].isdigit():
            d[f[0]] = int(f[1])
    return d
def port(sw, n):
    return next(p for p in sw["ports"] if p["node"] == int(n))
sw0 = json.load(open(tmp + "/fo0.sw")); sw1 = json.load(open(tmp + "/fo1.sw"))
bad = []
replayed = drops_all = 0
reasons = {}
for n in (s, t):
    c0, c1 = cnt("%s/fo0.%s" % (tmp, n)), cnt("%s/fo1.%s" % (tmp, n))
    info = cnt("%s/fo1.%s.info" % (tmp, n))
    p0, p1 = port(sw0, n), port(sw1, n)
    d = {k: c1.get(k, 0) - c0.get(k, 0) for k in c1}
    drops = sum(v for k, v in d.items() if k.startswith("DROP_"))
    for k, v in d.items():
        if k.startswith("DROP_") and v:
            reasons[k[5:]] = reasons.get(k[5:], 0) + v
    tx = p1["tx_frames"] - p0["tx_frames"]
    rep = p1["replayed"] - p0["replayed"]
    replayed += rep
    drops_all += drops
    print("  counters: node%s: switch delivered %d frames (%d replayed); adapter accepted %d (RX_PACKETS) + dropped %d = %d; driver: %s" % (
        n, tx, rep, d.get("RX_PACKETS", 0), drops, d.get("RX_PACKETS", 0) + drops,
        " ".join("%s=%d" % (k, v) for k, v in sorted(cnt("%s/fo1.%s.drv" % (tmp, n)).items()) if k in ("windows_open", "rcxts_held", "mrs", "pages_pinned", "recoveries"))))
    if tx != d.get("RX_PACKETS", 0) + drops:
        bad.append("node%s: switch delivered %d frames, adapter RX_PACKETS+DROP_* moved by %d" % (n, tx, d.get("RX_PACKETS", 0) + drops))
    diff = [k for k in c1 if k in info and info[k] != c1[k]]
    if diff:
        bad.append("node%s: weft-info and debugfs counters differ: %s" % (n, ", ".join("%s %d/%d" % (k, info[k], c1[k]) for k in diff)))
    drv = cnt("%s/fo1.%s.drv" % (tmp, n))
    held = ["%s=%d" % (k, drv.get(k, -1)) for k in ("windows_open", "rcxts_held", "mrs", "pages_pinned") if drv.get(k, -1) != 0]
    if held:
        bad.append("node%s: driver still holds %s after the new stream ended" % (n, " ".join(held)))
if replayed != total:
    bad.append("the switch said replayed %d, its ports count %d replayed deliveries" % (total, replayed))
# Every frame the switch delivered was accepted or dropped (checked per
# node above), and the new stream's own frames were all accepted (no loss,
# so no retry): the replayed frames the adapters accepted are
# replayed - drops.  As in the seed, the adapter checks a completion's rCxt
# but not its tid, so an old completion naming a re-used rCxt id (same key:
# that node did not recover) is accepted and the ULP drops it by tid; the
# tool counts those as "stale".  Stale frames accepted = those the adapters
# accepted and the ULP did not drop.
adapter_accepted = replayed - drops_all
stale_accepted = max(0, adapter_accepted - ulp_stale)
if drops_all > replayed:
    bad.append("replayed %d frames but the adapters' drop counters moved by %d" % (replayed, drops_all))
elif adapter_accepted != ulp_stale and (retries == 0 or adapter_accepted > ulp_stale):
    bad.append("the adapters accepted %d replayed frames (replayed %d - dropped %d), the ULP dropped %d stale completions" % (adapter_accepted, replayed, drops_all, ulp_stale))
print("failover-cluster: events=1 replayed=%d stale_accepted=%d lost=%d duplicated=%d" % (replayed, stale_accepted, lost, dup))
print("failover-cluster %s: replayed %d = dropped by the adapters %d (%s) + stale completions accepted by an adapter and dropped by the ULP (tid) %d" % (
    ev, replayed, drops_all, " ".join("%s=%d" % kv for kv in sorted(reasons.items())) or "none", adapter_accepted))
for b in bad:
    print("BAD " + b)
PY
	grep -v '^BAD ' "$TMP/fo.report"
	if grep -q '^BAD ' "$TMP/fo.report"; then
		fail "$(grep '^BAD ' "$TMP/fo.report" | sed 's/^BAD //' | paste -sd ';' -)"
		return 1
	fi
	checked "stale frames accepted 0; replayed frames = the adapters' DROP_* deltas + stale completions the ULP dropped; per node, frames the switch delivered = RX_PACKETS + DROP_* deltas; weft-info = debugfs counters; driver resources back to 0"
	if [ "$ev" != reboot ]; then
		gx "$c" "$t" 'cat /sys/class/misc/weft0/device/recovery_count'
		local rcnow=$OUT
		local drec dcnt_rec
		drec=$(awk '$1 == "recoveries" {print $2}' "$TMP/fo1.$t.drv")
		dcnt_rec=$(awk '$1 == "RECOVERIES" {print $2}' "$TMP/fo1.$t")
		[ "$rcnow" = "$drec" ] && [ "$rcnow" = "$dcnt_rec" ] ||
			fail "node$t: recovery count $rcnow (sysfs), driver recoveries $drec, adapter RECOVERIES $dcnt_rec disagree" || return 1
		checked "node$t: recovery count (sysfs) = driver recoveries = adapter RECOVERIES counter = $rcnow"
	fi
	no_oops "$c" "$s" && no_oops "$c" "$t" || return 1
	checked "no kernel warning or oops on node$s and node$t"
}

# fo_snap CLUSTER S T K: adapter counters (debugfs), weft-info's counters
# and the driver's counters of nodes S and T, and the switch's per-port
# counters, into $TMP/foK.*.
# One consistent snapshot of both nodes' counters and the switch's.  The
# nodes' weft0 interfaces send IPv6 and ARP frames of their own at any
# time, so the switch is read before and after the nodes: a snapshot
# counts only if no frame reached either node in between.
fo_snap() {
	local c=$1 s=$2 t=$3 k=$4 n
	for _ in $(seq 20); do
		"$WC" --name "$c" faults --json counters >"$TMP/fo$k.sw0" 2>&1 ||
			fail "switch counters: $(cat "$TMP/fo$k.sw0")" || return 1
		for n in $s $t; do
			gx "$c" "$n" 'cat /sys/kernel/debug/weft/weft0/counters; echo ==; weft-info --json; echo ==; cat /sys/kernel/debug/weft/driver'
			[ "$RC" = 0 ] || fail "node$n: cannot read the counters: $OUT" || return 1
			awk '/^==$/ {p++; next} p == 0' <<<"$OUT" >"$TMP/fo$k.$n"
			awk '/^==$/ {p++; next} p == 1' <<<"$OUT" | python3 -c '
import json, sys
for k, v in json.load(sys.stdin).get("counters", {}).items(): print(k, v)' >"$TMP/fo$k.$n.info" 2>/dev/null ||
				fail "node$n: weft-info --json printed no counters" || return 1
			awk '/^==$/ {p++; next} p == 2' <<<"$OUT" >"$TMP/fo$k.$n.drv"
		done
		"$WC" --name "$c" faults --json counters >"$TMP/fo$k.sw" 2>&1 ||
			fail "switch counters: $(cat "$TMP/fo$k.sw")" || return 1
		python3 - "$TMP/fo$k.sw0" "$TMP/fo$k.sw" "$s" "$t" <<'PY' && return 0
import json, sys
a, b = (json.load(open(f)) for f in sys.argv[1:3])
tx = lambda sw: [p["tx_frames"] for p in sw["ports"] if str(p["node"]) in sys.argv[3:]]
sys.exit(tx(a) != tx(b))
PY
		sleep 0.3
	done
	fail "the switch kept delivering frames to node$s or node$t during 20 snapshots"
}

sc_recovery_streaming() { failover "$1" recover; }
sc_fatal_streaming() { failover "$1" fatal; }
sc_reboot_streaming() { failover "$1" reboot; }

# txbytes CLUSTER NODE ADAPTER: TX_BYTES of /dev/weftADAPTER (in $OUT).
txbytes() { gx "$1" "$2" "awk '\$1 == \"TX_BYTES\" {print \$2}' /sys/kernel/debug/weft/weft$3/counters"; }

# Two adapters per node: adapter a of node N has node id N + 2a.  weft-bw
# runs once over the first adapters alone and once with --stripe weft1
# (the buffers registered once, their PVOs used on both adapters);
# its data check writes a 16 MiB pattern (striped in the second run) and
# reads it back byte for byte, and prints a figure only after that held.
sc_stripe_2adapters() {
	local c=$1 i a id tx0 tx1 tx0b tx1b
	for i in 0 1; do
		for a in 0 1; do
			id=$((i + 2 * a))
			gx "$c" "$i" "head -1 /sys/kernel/debug/weft/weft$a/state"
			grep -q "^node $id windows" <<<"$OUT" ||
				fail "node$i: /dev/weft$a does not have node id $id: $OUT" || return 1
		done
		checked "node$i: weft0 and weft1 present with node ids $i and $((i + 2))"
	done
	need "$c" 0 weft-bw || return 1
	need "$c" 1 weft-bw || return 1
	local args="--mode write --min-size 16M --max-size 16M --depth 1 --iters 4"
	tool2 "$c" 1 0 bw-one 4301 weft-bw "$args" || return 1
	results ops,seconds,MBps || fail "weft-bw printed no usable figures" || return 1
	every_result 1 'r["verified"] is True and r["ops"] == 4' ||
		fail "weft-bw (1 adapter): no verified 16 MiB result: $(grep -E '^\{' <<<"$OUT")" || return 1
	checked "1 adapter: node0 -> node1 16 MiB RDMA writes, data written and read back byte-exact"
	txbytes "$c" 0 0; tx0=$OUT
	txbytes "$c" 0 1; tx1=$OUT
	[[ $tx0 =~ ^[0-9]+$ && $tx1 =~ ^[0-9]+$ ]] || fail "node0: cannot read TX_BYTES of weft0/weft1: $tx0 $tx1" || return 1
	tool2 "$c" 1 0 bw-stripe 4302 weft-bw "$args --stripe weft1" || return 1
	results ops,seconds,MBps || fail "weft-bw --stripe printed no usable figures" || return 1
	[ "$(json adapters)" = 2 ] || fail "weft-bw --stripe did not run over 2 adapters: $(grep -E '^\{' <<<"$OUT")" || return 1
	every_result 1 'r["verified"] is True and r["ops"] == 4' ||
		fail "weft-bw --stripe: no verified 16 MiB result: $(grep -E '^\{' <<<"$OUT")" || return 1
	checked "2 adapters: node0 -> node1 16 MiB RDMA writes striped over weft0 and weft1 (one completion each), the striped 16 MiB pattern read back byte-exact"
	txbytes "$c" 0 0; tx0b=$OUT
	txbytes "$c" 0 1; tx1b=$OUT
	# Bytes each adapter sent: 4 timed writes and the check's striped
	# write, 8 MiB of each through each adapter, plus headers, retries and
	# (adapter 0) the check's read request.
	local d0=$((tx0b - tx0)) d1=$((tx1b - tx1)) half=$((5 * 8 * 1048576))
	{ [ "$d0" -ge "$half" ] && [ "$d1" -ge "$half" ]; } ||
		fail "node0: bytes sent by weft0 $d0 and by weft1 $d1, expected at least $half each" || return 1
	checked "node0: weft0 sent $d0 bytes and weft1 $d1 bytes (at least 5 x 8 MiB each): both adapters carried half of every write"
	# Node-global registrations: one registration, one PVO through both
	# adapters; a deregistration through either invalidates it on both;
	# recovery, unbind and bind of weft1 under live registrations.
	gtest "$c" 0 weft-test-nodeglobal || return 1
	no_oops "$c" 0
}

# ---- the switch over TCP -------------------------------------------------------------
# Cluster $CT runs `up --transport tcp`: its switch listens on a TCP port of
# 127.0.0.1 besides its UNIX socket and each QEMU's chardev connects to
# that port, so the frames take the path they take between two hosts
# (docs/cluster.md, "Across two hosts").
sc_tcp_transport() {
	local c=$1 d addr n i
	d=$(weft_run_dir)/$c
	addr=$(cat "$d/switch.addr" 2>/dev/null)
	[[ $addr =~ ^127\.0\.0\.1:[0-9]+$ ]] ||
		fail "no TCP listener address on 127.0.0.1 in $d/switch.addr: '$addr'" || return 1
	for i in 0 1; do
		grep -q -- "-chardev socket,id=sw,host=127.0.0.1,port=${addr#*:},reconnect-ms=1000,nodelay=on " "$d/node$i.cmdline" ||
			fail "node$i's QEMU does not reach the switch over TCP $addr: $(grep -o -- '-chardev socket,id=sw[^ ]*' "$d/node$i.cmdline")" || return 1
		grep -qE ": node $i connected \(tcp 127\.0\.0\.1:[0-9]+, token checked, socket\)$" "$d/switch.log" ||
			fail "the switch log does not show node $i registered over TCP with its token on the socket transport" || return 1
		if grep -E ": node $i connected \(" "$d/switch.log" | grep -qv "(tcp "; then
			fail "node $i also connected other than over TCP: $(grep -E ": node $i connected" "$d/switch.log")"
			return 1
		fi
	done
	n=$("$WC" --name "$c" faults counters 2>&1 | sed -n 's/^switch .* tcp_connections=\([0-9]*\).*/\1/p')
	[ "${n:-0}" -ge 2 ] || fail "the switch counted ${n:-no} TCP connections, expected at least 2" || return 1
	checked "the switch listens on TCP $addr, both QEMUs connect to it (chardev host=127.0.0.1,port=${addr#*:},nodelay=on), each node registered over TCP with its token on the socket transport (transport=auto cannot pass descriptors over TCP); tcp_connections=$n"
	need "$c" 0 weft-rdma-check || return 1
	need "$c" 1 weft-rdma-check || return 1
	rdma_check "$c" 1 0 4401 1 4M || return 1
	GX_TIMEOUT=120 gx "$c" 0 "$PING -c 20 -i 0.2 -W 5 $(ip4 1); $PING -c 5 -W 5 $(ip6 1)"
	{ grep -q ' 20 received, 0% packet loss' <<<"$OUT" && grep -q ' 5 received, 0% packet loss' <<<"$OUT"; } ||
		fail "node0 -> node1 pings over TCP: $(grep -E 'transmitted' <<<"$OUT" | tr '\n' ' ')" || return 1
	checked "IP over Weft through the TCP link: node0 -> node1 $(grep -E 'transmitted' <<<"$OUT" | sed 's/, time.*//' | paste -sd';' -) (IPv4, then IPv6)"
	# A restarted switch listens on the same port; the chardevs reconnect.
	"$WC" --name "$c" switch restart >"$TMP/tcp-restart.out" 2>&1 ||
		fail "switch restart: $(tail -3 "$TMP/tcp-restart.out")" || return 1
	for i in $(seq 60); do
		OUT=$("$WC" --name "$c" faults nodes 2>&1)
		grep -q 'node 0 attached' <<<"$OUT" && grep -q 'node 1 attached' <<<"$OUT" && break
		sleep 0.5
	done
	{ grep -q 'node 0 attached' <<<"$OUT" && grep -q 'node 1 attached' <<<"$OUT"; } ||
		fail "the nodes did not come back to the restarted switch within 30 s: $OUT" || return 1
	n=$(grep -c ": listening on TCP $addr " "$d/switch.log")
	[ "$n" = 2 ] || fail "the restarted switch does not listen on $addr again ($n listener lines)" || return 1
	for i in 0 1; do
		n=$(grep -cE ": node $i connected \(tcp 127\.0\.0\.1:[0-9]+, token checked, socket\)$" "$d/switch.log")
		[ "$n" -ge 2 ] || fail "node $i did not register again over TCP after the restart ($n registrations)" || return 1
	done
	GX_TIMEOUT=60 gx "$c" 0 "$PING -c 5 -W 5 $(ip4 1)"
	grep -q ' 5 received, 0% packet loss' <<<"$OUT" ||
		fail "node0 -> node1 pings after the switch restart: $(grep -E 'transmitted' <<<"$OUT")" || return 1
	checked "switch restart: the new switch listens on $addr again, both QEMUs reconnect over TCP by themselves and register with their tokens, 5 pings node0 -> node1 answered"
	for i in 0 1; do no_oops "$c" "$i" || return 1; done
}

# ---- four nodes --------------------------------------------------------------------
# Every node runs a weft-rdma-check server for each of the 3 others (started
# one after the other, so each has its own window), then every ordered pair
# runs its client at the same time.  All use one job (a node has 5 job
# slots, and 6 windows here).
sc_all_to_all() {
	local c=$1 i j k=0 job=4300 ok=0 bad=0
	for i in 0 1 2 3; do need "$c" "$i" weft-rdma-check || return 1; done
	declare -A win=()
	for j in 0 1 2 3; do
		for i in 0 1 2 3; do
			[ "$i" = "$j" ] && continue
			server "$c" "$j" "a2a-s$i-$j" "$job" \
				"weft-rdma-check --server --job $job --timeout 120000 --max-size 256K" || return 1
			win[$i-$j]=$SW
		done
	done
	checked "12 servers up (3 per node, each on its own window)"
	for i in 0 1 2 3; do
		for j in 0 1 2 3; do
			[ "$i" = "$j" ] && continue
			bg "$c" "$i" "a2a-c$i-$j" "weft-rdma-check --client --peer $j --peer-window ${win[$i-$j]} --job $job --timeout 120000 --min-size 1 --max-size 256K --json"
			k=$((k + 1))
		done
	done
	for i in 0 1 2 3; do
		for j in 0 1 2 3; do
			[ "$i" = "$j" ] && continue
			bgwait "a2a-c$i-$j"
			local crc=$RC r cout=$OUT
			r=$(json result)
			bgwait "a2a-s$i-$j"
			if [ "$crc" = 0 ] && [ "$r" = pass ] && [ "$RC" = 0 ]; then
				ok=$((ok + 1))
			else
				bad=$((bad + 1))
				say "node$i -> node$j: client exit $crc result ${r:-none}, server exit $RC"
				grep -v '^{' <<<"$cout" | tail -n 3 | sed 's/^/  | client: /'
				tail -n 3 <<<"$OUT" | sed 's/^/  | server: /'
			fi
		done
	done
	[ "$bad" = 0 ] || fail "$bad of 12 ordered pairs failed" || return 1
	checked "all 12 ordered pairs: RDMA write+read 1 B..256 KiB byte-exact, all at the same time"
	for i in 0 1 2 3; do no_oops "$c" "$i" || return 1; done
}

# libweft's further operations between guests (sc_seed000_ops).
# shellcheck source=tests/cluster/ops.sh
source "$WEFT_ROOT/tests/cluster/ops.sh"

# IP over Weft (sc_ip_*).
# shellcheck source=tests/cluster/net.sh
source "$WEFT_ROOT/tests/cluster/net.sh"

# The RDMA core (sc_ib_*).
# shellcheck source=tests/cluster/ib.sh
source "$WEFT_ROOT/tests/cluster/ib.sh"

# User-space verbs through the rdma-core provider (sc_ibv_devinfo, ...).
# shellcheck source=tests/cluster/verbs-user.sh
source "$WEFT_ROOT/tests/cluster/verbs-user.sh"

# Counter-bearing RDMA objects (sc_counters, ...).
# shellcheck source=tests/cluster/counters.sh
source "$WEFT_ROOT/tests/cluster/counters.sh"

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

# The selected scenarios, grouped by cluster (in the order each cluster first
# appears in SCENARIOS) so that every cluster is booted once and its
# scenarios run back to back.
sel=() order=()
for s in "${SCENARIOS[@]}"; do
	IFS='|' read -r _ c _ <<<"$s"
	printf '%s\n' ${order[@]+"${order[@]}"} | grep -qx -- "$c" || order+=("$c")
done
for oc in "${order[@]}"; do
	for s in "${SCENARIOS[@]}"; do
		IFS='|' read -r n c _ <<<"$s"
		[ "$c" = "$oc" ] || continue
		if [ ${#want[@]} -eq 0 ] || printf '%s\n' "${want[@]}" | grep -qx "$n"; then
			sel+=("$s")
		fi
	done
done
echo "1..${#sel[@]}"
t_start=$SECONDS
last_cluster='' k=0
for s in "${sel[@]}"; do
	IFS='|' read -r n c d <<<"$s"
	if [ "$c" != "$last_cluster" ]; then
		# One cluster at a time: this machine has 2 cores.
		[ -z "$last_cluster" ] || { "$WC" --name "$last_cluster" down >/dev/null 2>&1; up_error[$last_cluster]="cluster $last_cluster already taken down"; }
		cluster_up "$c" "${csize[$c]}"
		last_cluster=$c
	fi
	k=$((k + 1))
	run_scenario "$k" "$n" "$c" "$d"
done
echo "# cluster run took $((SECONDS - t_start)) s"
printf '# %s\n' "${summary[@]}"
echo "# cluster: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
