#!/usr/bin/env bash
# Builds the MPI programs of tests/mpi (weft-mpi-check, weft-mpi-bench;
# docs/mpi.md) with Debian bookworm's Open MPI compiler wrapper (mpicc from
# libopenmpi-dev, the version the hpc image layer carries), and again with
# MPICH's (libmpich-dev) as NAME.mpich, into a tree for the layer
# (scripts/build-layer.sh stages it):
#   $WEFT_CACHE/mpi-tests/<hash of the sources, this script and mpicc>/root/usr/bin/
# An unchanged input set is not rebuilt.
#
# Usage: build-mpi-tests.sh [--print-dir]
#   --print-dir  print only the tree's folder (the default output)
set -euo pipefail
# shellcheck source=scripts/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

case ${1:-} in
''|--print-dir) ;;
*) weft_die "usage: build-mpi-tests.sh [--print-dir]" ;;
esac
command -v mpicc.openmpi >/dev/null || weft_apt_install libopenmpi-dev
command -v mpicc.mpich >/dev/null || weft_apt_install libmpich-dev
src=$WEFT_ROOT/tests/mpi
key=$( {
	weft_hash "$src" "${BASH_SOURCE[0]}"
	mpicc.openmpi --showme:version 2>&1
	mpicc.openmpi --showme 2>&1
	mpicc.mpich -show 2>&1
	dpkg-query -W -f '${Version}\n' libopenmpi-dev libmpich-dev
} | sha256sum | cut -c1-16)
out=$WEFT_CACHE/mpi-tests/$key
if [ ! -f "$out/.complete" ]; then
	weft_log "mpi tests: building $key"
	mkdir -p "$WEFT_CACHE/mpi-tests"
	tmp=$(mktemp -d "$WEFT_CACHE/mpi-tests/.work.XXXXXX")
	trap 'rm -rf "$tmp"' EXIT
	mkdir -p "$tmp/root/usr/bin"
	for c in "$src"/*.c; do
		b=$tmp/root/usr/bin/$(basename "$c" .c)
		mpicc.openmpi -std=gnu11 -O2 -Wall -Wextra -Werror -o "$b" "$c" -lm ||
			weft_die "building $(basename "$c") failed"
		# MPICH's MPI_STATUSES_IGNORE is the address 1, which gcc 12
		# takes for an array of size 0 (-Wstringop-overflow at MPI_Waitall).
		mpicc.mpich -std=gnu11 -O2 -Wall -Wextra -Werror -Wno-stringop-overflow -o "$b.mpich" "$c" -lm ||
			weft_die "building $(basename "$c") with MPICH failed"
		strip "$b" "$b.mpich"
	done
	rm -rf "$out"
	mv "$tmp" "$out"
	trap - EXIT
	touch "$out/.complete"
	# Keep the four newest.
	find "$WEFT_CACHE/mpi-tests" -mindepth 1 -maxdepth 1 -type d ! -name '.work.*' -printf '%T@ %p\n' |
		sort -rn | tail -n +5 | cut -d' ' -f2- | while read -r old; do rm -rf "$old"; done
fi
echo "$out/root"
