#!/usr/bin/env bash
# The rdma-core provider on the host, with no VM (docs/rdma-provider.md):
# built by scripts/build-rdma-core.sh, it must link against Debian
# bookworm's libibverbs1 44.0 with every symbol bound, and bookworm's own
# ibv_devices must list a Weft device through it, matched by PCI id.  The
# device is a fake sysfs tree and device node in a private mount namespace
# (unshare -m: the host's /sys and /dev are untouched).  Controls: without
# the provider, and with another PCI device id, the device is not listed.
# TAP on stdout in the shape of docs/testing.md's "TAP streams of runs":
# one run, its checks as indented points; run by scripts/weft-test.
# Needs root (the mount namespace); skipped otherwise, which is no pass.
set -uo pipefail
# shellcheck source=scripts/lib.sh
source "$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)/scripts/lib.sh"

[ "$(id -u)" = 0 ] || { echo "1..0 # SKIP needs root for a private mount namespace"; exit 0; }

T=$(mktemp -d /tmp/weft-provider-test.XXXXXX)
trap 'rm -rf "$T"' EXIT
checks=0 failures=0
check() { # check DESCRIPTION COMMAND...
	local what=$1
	shift
	checks=$((checks + 1))
	if "$@" >"$T/out" 2>&1; then
		echo "    ok $checks - $what"
	else
		failures=$((failures + 1))
		echo "    not ok $checks - $what"
		cat "$T/out" "$T/out.dev" 2>/dev/null | sed 's/^/    # | /' | tail -8
	fi
}

echo "1..1"
echo "# Subtest: provider-match"
out=$("$WEFT_ROOT/scripts/build-rdma-core.sh" --print-dir 2>"$T/build.err") ||
	{ sed 's/^/# /' "$T/build.err" | tail -20; echo "Bail out! scripts/build-rdma-core.sh failed"; exit 2; }

# Bookworm's libibverbs, its libnl and ibverbs-utils, unpacked.
root=$T/root
mkdir -p "$root" "$WEFT_CACHE/debs"
for p in libibverbs1 libnl-3-200 libnl-route-3-200 ibverbs-utils; do
	v=$(apt-cache policy "$p" | awk '/Candidate:/ {print $2}')
	deb=$WEFT_CACHE/debs/${p}_${v//:/%3a}_amd64.deb
	[ -f "$deb" ] || (cd "$WEFT_CACHE/debs" && apt-get download -qq "$p=$v" >/dev/null 2>&1) ||
		{ echo "Bail out! apt-get download $p=$v failed"; exit 2; }
	dpkg -x "$deb" "$root"
done
libs=$root/usr/lib/x86_64-linux-gnu:$root/lib/x86_64-linux-gnu

linked() {
	LD_LIBRARY_PATH=$libs ldd -r "$out/libweft-rdmav34.so" || return 1
	! LD_LIBRARY_PATH=$libs ldd -r "$out/libweft-rdmav34.so" 2>&1 | grep -q 'undefined symbol'
}
check "libweft-rdmav34.so binds every symbol against bookworm's libibverbs.so.1 (ldd -r)" linked

# fake_dev DEVICE_ID: a sysfs tree of one uverbs device, weft_ib0, on a PCI
# function 1234:DEVICE_ID.
fake_dev() {
	local s=$T/sys d=$T/sys/class/infiniband/weft_ib0
	rm -rf "$s"
	mkdir -p "$s/class/infiniband_verbs/uverbs0" "$d/device"
	echo 6 >"$s/class/infiniband_verbs/abi_version"
	echo weft_ib0 >"$s/class/infiniband_verbs/uverbs0/ibdev"
	echo 1 >"$s/class/infiniband_verbs/uverbs0/abi_version"
	echo 231:192 >"$s/class/infiniband_verbs/uverbs0/dev"
	ln -s ../../infiniband/weft_ib0/device "$s/class/infiniband_verbs/uverbs0/device"
	echo "pci:v00001234d0000${1}sv00001AF4sd00001100bc02sc07i00" >"$d/device/modalias"
	echo 0257:46ff:fe00:0001 >"$d/node_guid"
	echo 1 >"$d/node_type"
}

# devices [PROVIDER]: bookworm's ibv_devices in a mount namespace that sees
# the fake tree as /sys and a private /dev holding uverbs0.
devices() {
	unshare -m sh -c '
		mount --bind "$1/sys" /sys && mount -t tmpfs none /dev &&
		mkdir /dev/infiniband && mknod /dev/infiniband/uverbs0 c 231 192 &&
		mknod -m 666 /dev/null c 1 3 &&
		IBV_SHOW_WARNINGS=1 RDMAV_DRIVERS=$2 LD_LIBRARY_PATH=$3 "$1/root/usr/bin/ibv_devices"
	' sh "$T" "${1:-}" "$libs"
}

fake_dev 7765
devices "$out/libweft" >"$T/out.dev" 2>&1
check "ibv_devices (libibverbs 44.0) lists weft_ib0 on 1234:7765 through the provider" \
	grep -Eq '^[[:space:]]+weft_ib0[[:space:]]+025746fffe000001$' "$T/out.dev"

devices >"$T/out.dev" 2>&1
check "without the provider: not listed, libibverbs finds no driver for weft_ib0" \
	sh -c "! grep -q 'weft_ib0 ' '$T/out.dev' && grep -q 'no userspace device-specific driver found for weft_ib0' '$T/out.dev'"

fake_dev 7766
devices "$out/libweft" >"$T/out.dev" 2>&1
check "another PCI device id (1234:7766): the provider does not claim it" \
	sh -c "! grep -q 'weft_ib0 ' '$T/out.dev' && grep -q 'no userspace device-specific driver found for weft_ib0' '$T/out.dev'"

echo "    1..$checks"
if [ "$failures" = 0 ]; then
	echo "ok 1 - provider-match: $checks of $checks points passed"
else
	echo "not ok 1 - provider-match: $failures of $checks points failed"
	exit 1
fi
