#!/bin/bash
# Runs the weft device's qtests (tests/qtest/weft-test.c) against the QEMU
# that scripts/build-qemu.sh builds (and builds it first when needed).
# Three runs of the qtest binary:
#
#   1. the whole suite (glib's TAP);
#   2. the loopback and no-link tests again with -trace 'weft_*', checking
#      that the trace names registers and shows packets sent, received
#      and dropped;
#   3. the whole suite with every device's adapter in an IOThread
#      (WEFT_QTEST_IOTHREAD: -object iothread and the device's iothread).
#
# Output is TAP (docs/testing.md): the plan "1..3", and each run as one
# point preceded by its own points as an indented subtest.  A run passes
# when the binary exited 0, planned at least one point and every point of
# its plan passed (none skipped).  Exits non-zero when a run failed.  WEFT_QTEST_ARGS adds
# arguments to the first and third runs (e.g. "-p /x86_64/weft/misuse").
set -euo pipefail

# shellcheck source=lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

build=$("$WEFT_ROOT/scripts/build-qemu.sh" --print-build-dir) ||
	weft_die "building QEMU with the weft device failed"
test_bin=$build/tests/qtest/weft-test
[ -x "$test_bin" ] || weft_die "no qtest binary at $test_bin"

out=$(mktemp -d "${TMPDIR:-/tmp}/weft-qtests.XXXXXX")
trap 'rm -rf "$out"' EXIT
failed=0

# run_point N NAME FILE RC: FILE's TAP as an indented subtest, then the
# run's point: ok when RC is 0, FILE plans at least one point, every
# planned point reported ok and none was skipped.
run_point() {
	local n=$1 name=$2 file=$3 rc=$4 plan ok bad what
	echo "# Subtest: $name"
	sed 's/^/    /' "$file"
	plan=$(sed -n 's/^1\.\.\([0-9][0-9]*\).*/\1/p' "$file" | head -n1)
	ok=$(grep -E '^ok ' "$file" | grep -cvE '# (SKIP|TODO)' || true)
	bad=$(grep -cE '^not ok |^ok .*# (SKIP|TODO)' "$file" || true)
	what="$ok of ${plan:-no plan} points passed, $bad failed or skipped"
	if [ "$rc" -eq 0 ] && [ "${plan:-0}" -gt 0 ] && [ "$bad" -eq 0 ] && [ "$ok" -eq "$plan" ]; then
		echo "ok $n - $name: $what"
	else
		echo "not ok $n - $name: $what, exit status $rc"
		failed=$((failed + 1))
	fi
}

echo "1..3"

# ---- 1. the suite --------------------------------------------------------
weft_log "running $test_bin (TAP)" >&2
rc=0
# shellcheck disable=SC2086
(cd "$build" && QTEST_QEMU_BINARY=./qemu-system-x86_64 "$test_bin" --tap -k \
	${WEFT_QTEST_ARGS:-}) >"$out/suite.tap" 2>"$out/suite.err" || rc=$?
[ "$rc" -eq 0 ] || tail -n 60 "$out/suite.err" | sed 's/^/# stderr: /'
run_point 1 "qtest suite" "$out/suite.tap" "$rc"

# ---- 2. the trace run --------------------------------------------------------
# QTEST_TRACE reaches QEMU through a shell: quote the pattern there.
weft_log "running the loopback and no-link tests with -trace 'weft_*'" >&2
rc=0
(cd "$build" && QTEST_QEMU_BINARY=./qemu-system-x86_64 QTEST_TRACE="'weft_*'" \
	WEFT_QTEST_SHOW_LOG=1 "$test_bin" --tap -p /x86_64/weft/fifo/loopback \
	-p /x86_64/weft/link/absent) >"$out/trace.out" 2>"$out/trace.err" || rc=$?
# The two tests' own points, then one point per trace line looked for.
{
	grep -E '^(ok|not ok) ' "$out/trace.out" | sed 's/^\(ok\|not ok\) [0-9]*/\1/'
	for pat in 'weft_reg_read regs STATUS ' 'weft_reg_write regs CMD_OPEN_WINDOW ' \
		'weft_sram_write sram LMT ' 'weft_db_write doorbell window 0 START_TRANSMIT ' \
		'weft_pkt_tx packet sent FIFO node 5 -> node 5 window 1' \
		'weft_pkt_rx packet received FIFO node 5 -> node 5 window 1' \
		'weft_pkt_drop packet dropped FIFO node 4 -> node 9 window 0: NO_LINK' \
		'weft_link_up node 5: HELLO_ACK received' 'weft_irq MSI-X vector 2'; do
		if grep -qF -- "$pat" "$out/trace.err"; then
			echo "ok - the trace has: $pat"
		else
			echo "not ok - the trace lacks: $pat"
		fi
	done
	echo "# trace sample:"
	{
		grep -E 'weft_(reg_write|db_write)' "$out/trace.err" | head -n 4
		grep -E 'weft_(pkt_|irq|link_up)' "$out/trace.err" | head -n 6
	} | sed 's/^[0-9]*@[0-9.]*://; s/^/#   /'
} | awk '/^(ok|not ok)/ {n++; sub(/^(ok|not ok)/, "& " n)} {print} END {print "1.." n}' \
	>"$out/trace.tap"
# The trace run must have run both tests.
[ "$(grep -c '^ok ' "$out/trace.out" || true)" -eq 2 ] || { [ "$rc" -ne 0 ] || rc=1; }
[ "$rc" -eq 0 ] || tail -n 40 "$out/trace.err" | sed 's/^/# stderr: /'
run_point 2 "trace run (-trace 'weft_*')" "$out/trace.tap" "$rc"

weft_log "running $test_bin again with every device in an IOThread" >&2
rc=0
(cd "$build" && QTEST_QEMU_BINARY=./qemu-system-x86_64 WEFT_QTEST_IOTHREAD=1 \
	"$test_bin" --tap -k ${WEFT_QTEST_ARGS:-}) >"$out/iothread.tap" 2>"$out/iothread.err" || rc=$?
[ "$rc" -eq 0 ] || tail -n 60 "$out/iothread.err" | sed 's/^/# stderr: /'
run_point 3 "qtest suite, iothread=" "$out/iothread.tap" "$rc"

[ "$failed" -eq 0 ]
