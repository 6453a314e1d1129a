#!/bin/bash
# SPDX-License-Identifier: MIT
# build-static.sh OUTDIR: build the libweft tools as static binaries for
# the guest initramfs (kernel backend only, no simulator), into OUTDIR.
# CC (default cc) and CFLAGS (default -O2) may be set.  Prints the paths.
set -euo pipefail

usage() { echo "usage: $0 OUTDIR" >&2; exit 2; }
[ $# -eq 1 ] || usage
case $1 in -h|--help) echo "usage: $0 OUTDIR  (static weft-* tools, kernel backend)"; exit 0 ;; esac

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/.." && pwd)
out=$1
CC=${CC:-cc}
command -v "$CC" >/dev/null || { echo "$0: error: compiler '$CC' not found" >&2; exit 1; }
mkdir -p "$out"
out=$(cd "$out" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

read -r -a extra <<<"${CFLAGS:--O2}"
cflags=(-std=gnu11 -Wall -Wextra -Werror "${extra[@]}" -I"$root/include" -I"$here/include"
	-I"$here/src" -I"$here/tools")

for s in dev win ops mrc rel rdv stripe cnt be_kernel sim_none; do
	"$CC" "${cflags[@]}" -c "$here/src/$s.c" -o "$tmp/$s.o"
done
ar rcs "$tmp/libweft.a" "$tmp"/*.o
"$CC" "${cflags[@]}" -c "$here/tools/common.c" -o "$tmp/common.o"
for t in weft-info weft-pingpong weft-bw weft-rdma-check weft-ops weft-cnt; do
	"$CC" "${cflags[@]}" -static "$here/tools/$t.c" "$tmp/common.o" "$tmp/libweft.a" \
		-lpthread -o "$out/$t"
	echo "$out/$t"
done
