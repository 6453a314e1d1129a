#!/usr/bin/env bash
# Builds the in-guest driver tests (tests/guest/*.c) as static binaries,
# and the user verbs tests (tests/verbs/*.c) linked against the guest's
# libibverbs (Debian bookworm's libibverbs1, with the headers of the same
# version's libibverbs-dev; docs/rdma-provider.md).
#
# Usage: build-guest-tests.sh OUTDIR
# Writes OUTDIR/weft-test-*, OUTDIR/weft-verbs-* and OUTDIR/weft-guest-tests
# (runs the driver tests in the guest).  Prints OUTDIR on stdout; logs go
# to stderr.  OUTDIR.inputs (next to OUTDIR, whose every file goes into
# build-image.sh's key) records the stat hash of every input (the sources,
# this script, the host's packages and apt's view of them, the compiler's
# environment) and of the outputs: when both are unchanged the script ends
# at once (the full check, an apt-cache call and a find per test, took
# 3-15 s of every weft-cluster up).
set -euo pipefail
# shellcheck source=scripts/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

[ $# -eq 1 ] || weft_die "usage: build-guest-tests.sh OUTDIR"
out=$1
mkdir -p "$out"
out=$(cd "$out" && pwd)
command -v gcc >/dev/null || weft_apt_install gcc
[ -e /usr/lib/x86_64-linux-gnu/libc.a ] || weft_apt_install libc6-dev

src=$WEFT_ROOT/tests/guest
vsrc=$WEFT_ROOT/tests/verbs
common=$WEFT_ROOT/tests/common     # weft_test.h: the checks and TAP output
# The stamp: what was read, and what was written.
inputs() {
	weft_stat_hash "$src" "$vsrc" "$common" "$WEFT_ROOT/include" "${BASH_SOURCE[0]}" \
		"$WEFT_ROOT/scripts/lib.sh" /var/lib/dpkg/status
	weft_apt_state
	printf '%s\n' "PATH=$PATH" "CC=${CC:-}" "CFLAGS=${CFLAGS:-}"
}
stamp=$out.inputs
outputs() {
	find "$out" -maxdepth 1 -type f -printf '%f %s %T@ %i %m\n' | LC_ALL=C sort |
		sha256sum | cut -c1-16
}
read_in=$(inputs | sha256sum | cut -c1-16)
if [ "$(cat "$stamp" 2>/dev/null)" = "$read_in $(outputs)" ]; then
	weft_log "guest tests up to date in $out (nothing they are built from changed)"
	echo "$out"
	exit 0
fi
rm -f "$stamp"
cflags=(-std=gnu11 -O2 -g -Wall -Wextra -Werror -static -I"$WEFT_ROOT/include" -I"$src"
	-I"$common")
n=0
for c in "$src"/weft-test-*.c; do
	name=$(basename "$c" .c)
	if [ ! -x "$out/$name" ] || [ "$c" -nt "$out/$name" ] || [ "$src/wt.h" -nt "$out/$name" ] ||
		[ -n "$(find "$WEFT_ROOT/include/weft" "$common" -newer "$out/$name" -print -quit)" ]; then
		gcc "${cflags[@]}" -o "$out/$name.tmp" "$c" "$common/weft_test.c" ||
			weft_die "building $name failed"
		mv "$out/$name.tmp" "$out/$name"
	fi
	n=$((n + 1))
done

# The verbs tests: dynamic, against the libibverbs the image carries (the
# apt candidate of libibverbs1, as scripts/build-image.sh takes it), so
# they can only use what that library exports.
debs=$WEFT_CACHE/debs
mkdir -p "$debs"
ver=$(apt-cache policy libibverbs1 | awk '/Candidate:/ {print $2}')
{ [ -n "$ver" ] && [ "$ver" != "(none)" ]; } || weft_die "apt has no libibverbs1 candidate"
vdebs=()
for p in libibverbs1 libibverbs-dev; do
	f=$debs/${p}_${ver//:/%3a}_amd64.deb
	if [ ! -f "$f" ]; then
		(cd "$debs" && apt-get download -qq "$p=$ver" >/dev/null 2>&1) ||
			weft_die "apt-get download $p=$ver failed"
	fi
	vdebs+=("$f")
done
sysroot=$(mktemp -d)
trap 'rm -rf "$sysroot"' EXIT
for f in "${vdebs[@]}"; do dpkg -x "$f" "$sysroot"; done
vlib=$sysroot/usr/lib/x86_64-linux-gnu
if [ ! -e "$vlib/libibverbs.so.1" ] || [ ! -f "$sysroot/usr/include/infiniband/verbs.h" ]; then
	weft_die "no libibverbs.so.1 or infiniband/verbs.h in ${vdebs[*]}"
fi
# libibverbs.so.1 needs libnl, which the build does not: its own
# dependencies are resolved in the guest.
vflags=(-std=gnu11 -D_GNU_SOURCE -O2 -g -Wall -Wextra -Werror -I"$sysroot/usr/include"
	-I"$vsrc" -I"$common" -I"$WEFT_ROOT/include")
for c in "$vsrc"/weft-verbs-*.c; do
	name=$(basename "$c" .c)
	if [ ! -x "$out/$name" ] || [ -n "$(find "$c" "$vsrc/vt.h" "$common" "${vdebs[@]}" \
		-newer "$out/$name" -print -quit)" ]; then
		gcc "${vflags[@]}" -o "$out/$name.tmp" "$c" "$common/weft_test.c" \
			-L"$vlib" -l:libibverbs.so.1 -Wl,--allow-shlib-undefined ||
			weft_die "building $name failed"
		mv "$out/$name.tmp" "$out/$name"
	fi
	n=$((n + 1))
done
install -m 755 "$src/weft-guest-tests" "$out/weft-guest-tests"
# The inputs as read at the start: one changed meanwhile is built next time.
echo "$read_in $(outputs)" >"$stamp"
weft_log "built $n guest tests into $out"
echo "$out"
