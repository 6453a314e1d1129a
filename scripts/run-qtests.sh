#!/bin/bash
# Runs the weft device's qtests (tests/qtest/weft-test.c) against the QEMU
# that scripts/build-qemu.sh builds (and builds it first when needed):
#
#   1. the whole suite with TAP output;
#   2. the loopback and no-link tests again with -trace 'weft_*', checking
#      that the trace names registers and shows packets sent, received
#      and dropped;
#   3. that `-device help` lists weft and `-device weft,help` describes
#      each of its properties.
#
# Ends with one line "weft qtests: N passed, N failed" and exits non-zero
# when anything failed.  WEFT_QTEST_ARGS adds arguments to the first run
# (e.g. "-p /x86_64/weft/misuse").
set -euo pipefail

# shellcheck source=lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

build=$("$WEFT_ROOT/scripts/build-qemu.sh" --print-build-dir) ||
	weft_die "building QEMU with the weft device failed"
test_bin=$build/tests/qtest/weft-test
[ -x "$test_bin" ] || weft_die "no qtest binary at $test_bin"

out=$(mktemp -d "${TMPDIR:-/tmp}/weft-qtests.XXXXXX")
trap 'rm -rf "$out"' EXIT

passed=0
failed=0

# Runs the test binary in the build folder; TAP goes to stdout and FILE.
run_tap() {
	local file=$1
	shift
	set +e
	(cd "$build" && QTEST_QEMU_BINARY=./qemu-system-x86_64 "$test_bin" --tap "$@") \
		>"$file" 2>"$file.err"
	local rc=$?
	set -e
	cat "$file"
	return $rc
}


# ---- 1. the suite --------------------------------------------------------
weft_log "running $test_bin (TAP)"
rc=0
# shellcheck disable=SC2086
run_tap "$out/suite.tap" -k ${WEFT_QTEST_ARGS:-} || rc=$?
p=$(grep -c '^ok ' "$out/suite.tap" || true)
f=$(grep -c '^not ok ' "$out/suite.tap" || true)
passed=$((passed + p))
failed=$((failed + f))
if [ "$rc" -ne 0 ] || [ "$p" -eq 0 ]; then
	sed 's/^/# stderr: /' "$out/suite.tap.err" | tail -n 60
	if [ "$f" -eq 0 ]; then
		# A crash or abort that TAP did not report still fails the run.
		failed=$((failed + 1))
		echo "not ok $((p + 1)) - weft-test exited with status $rc"
	fi
fi

# ---- 2. the trace run --------------------------------------------------------
# QTEST_TRACE reaches QEMU through a shell: quote the pattern there.
weft_log "running the loopback and no-link tests with -trace 'weft_*'"
set +e
(cd "$build" && QTEST_QEMU_BINARY=./qemu-system-x86_64 QTEST_TRACE="'weft_*'" \
	WEFT_QTEST_SHOW_LOG=1 "$test_bin" --tap -p /x86_64/weft/fifo/loopback \
	-p /x86_64/weft/link/absent) \
	>"$out/trace.tap" 2>"$out/trace.err"
trc=$?
set -e
trace_ok=1
for pat in 'weft_reg_read regs STATUS ' 'weft_reg_write regs CMD_OPEN_WINDOW ' \
	'weft_sram_write sram LMT ' 'weft_db_write doorbell window 0 START_TRANSMIT ' \
	'weft_pkt_tx packet sent FIFO node 5 -> node 5 window 1' \
	'weft_pkt_rx packet received FIFO node 5 -> node 5 window 1' \
	'weft_pkt_drop packet dropped FIFO node 4 -> node 9 window 0: NO_LINK' \
	'weft_link_up node 5: HELLO_ACK received' 'weft_irq MSI-X vector 2'; do
	if grep -qF -- "$pat" "$out/trace.err"; then
		echo "# trace has: $pat"
	else
		echo "# trace lacks: $pat"
		trace_ok=0
	fi
done
echo "# trace sample:"
{
	grep -E 'weft_(reg_write|db_write)' "$out/trace.err" | head -n 4
	grep -E 'weft_(pkt_|irq|link_up)' "$out/trace.err" | head -n 6
} | sed 's/^[0-9]*@[0-9.]*://; s/^/#   /'
if [ "$trc" -eq 0 ] && [ "$trace_ok" = 1 ] && [ "$(grep -c '^ok ' "$out/trace.tap")" -eq 2 ]; then
	passed=$((passed + 1))
	echo "ok $((passed + failed)) - trace run prints register names and packet events"
else
	failed=$((failed + 1))
	echo "not ok $((passed + failed)) - trace run (exit $trc)"
	tail -n 40 "$out/trace.err" | sed 's/^/# stderr: /'
fi

# ---- 3. the device as QEMU lists it -------------------------------------------
tap_check() {
	local what=$1
	shift
	if "$@"; then
		passed=$((passed + 1))
		echo "ok $((passed + failed)) - $what"
	else
		failed=$((failed + 1))
		echo "not ok $((passed + failed)) - $what"
	fi
}
"$build/qemu-system-x86_64" -nodefaults -device help >"$out/devices.txt" 2>&1 || true
"$build/qemu-system-x86_64" -nodefaults -device weft,help >"$out/props.txt" 2>&1 || true
props_described() {
	local p
	for p in node-id windows rcxts handlers chardev epoch-file; do
		grep -qE "^  $p=<[a-z0-9]+> +- [a-z]" "$out/props.txt" || {
			echo "# -device weft,help lacks a description of $p"
			return 1
		}
	done
}
tap_check "-device help lists weft" grep -q '^name "weft", bus PCI' "$out/devices.txt"
tap_check "-device weft,help describes every property" props_described

echo "weft qtests: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
