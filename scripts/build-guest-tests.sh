#!/usr/bin/env bash
# Builds the in-guest driver tests (tests/guest/*.c) as static binaries.
#
# Usage: build-guest-tests.sh OUTDIR
# Writes OUTDIR/weft-test-* and OUTDIR/weft-guest-tests (runs them all in
# the guest).  Prints OUTDIR on stdout; logs go to stderr.
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
common=$WEFT_ROOT/tests/common     # weft_test.h: the checks and TAP output
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
install -m 755 "$src/weft-guest-tests" "$out/weft-guest-tests"
weft_log "built $n guest tests into $out"
echo "$out"
