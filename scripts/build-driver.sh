#!/usr/bin/env bash
# Builds the guest driver weft.ko against Debian 12's extracted 6.12
# headers (scripts/fetch-kernel.sh) and checks that it also builds against
# the 6.1 headers.  Nothing is installed into the host system.
#
# Usage: build-driver.sh [--out DIR] [--no-6.1] [--checkpatch] [--sparse]
#   --out DIR     output folder (default $WEFT_CACHE/driver/KEY, KEY a hash
#                 of the driver's sources, so that checkouts with different
#                 sources never share a build); weft.ko for 6.12 ends up in
#                 DIR/6.12/guest-driver/weft.ko
#   --no-6.1      skip the 6.1 compatibility build
#   --checkpatch  also run the kernel's checkpatch.pl --strict on the
#                 driver sources (taken from Debian's linux-source-6.12
#                 package, extracted once into $WEFT_CACHE/checkpatch)
#   --sparse      also run sparse (Debian's package) over every source of
#                 the 6.12 build (Kbuild's C=2); any warning fails
# Prints the path of the 6.12 weft.ko on stdout; logs go to stderr.
# Builds use -Werror and W=1, at most -j2.
set -euo pipefail
# shellcheck source=scripts/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

out=
check61=1
checkpatch=0
sparse=0
while [ $# -gt 0 ]; do
	case $1 in
	--out) out=${2:?--out needs a folder}; shift ;;
	--out=*) out=${1#--out=} ;;
	--no-6.1) check61=0 ;;
	--check-6.1) check61=1 ;;
	--checkpatch) checkpatch=1 ;;
	--sparse) sparse=1 ;;
	-h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//' >&2; exit 0 ;;
	*) weft_die "unknown option $1 (see --help)" ;;
	esac
	shift
done
if [ -z "$out" ]; then
	key=$(cat "$WEFT_ROOT"/guest-driver/*.[ch] "$WEFT_ROOT"/guest-driver/policy/*.[ch] \
		"$WEFT_ROOT/guest-driver/Kbuild" "$WEFT_ROOT"/include/weft/*.h "$0" |
		sha256sum | cut -c1-12)
	out=$WEFT_CACHE/driver/$key
fi
mkdir -p "$out"
out=$(cd "$out" && pwd)
# One build at a time in a folder (two runs of the suite side by side).
exec {lock}>"$out/.lock"
flock "$lock"

# build SERIES: copies the sources into $out/SERIES and runs Kbuild there.
build() {
	local series=$1 hdr dir log
	hdr=$("$WEFT_ROOT/scripts/fetch-kernel.sh" --print-headers "$series")
	dir=$out/$series
	mkdir -p "$dir/guest-driver/policy" "$dir/include/weft"
	# Copy only what differs, so that Kbuild's own dependency tracking works
	# (and an older file from another checkout is still taken).
	local f rel changed=0
	for f in "$WEFT_ROOT"/guest-driver/*.[ch] "$WEFT_ROOT"/guest-driver/policy/*.[ch] \
		"$WEFT_ROOT/guest-driver/Kbuild"; do
		rel=${f#"$WEFT_ROOT"/guest-driver/}
		cmp -s "$f" "$dir/guest-driver/$rel" || { cp "$f" "$dir/guest-driver/$rel"; changed=1; }
	done
	for f in "$WEFT_ROOT"/include/weft/*.h; do
		cmp -s "$f" "$dir/include/weft/${f##*/}" || { cp "$f" "$dir/include/weft/"; changed=1; }
	done
	# Files removed from the project must not linger in the copy (Kbuild's
	# generated *.mod.c are no project files).
	for f in "$dir"/guest-driver/*.[ch] "$dir"/guest-driver/policy/*.[ch]; do
		rel=${f#"$dir"/guest-driver/}
		[ -e "$f" ] || continue
		case $rel in *.mod.c) continue ;; esac
		[ -e "$WEFT_ROOT/guest-driver/$rel" ] || { rm -f "$f"; changed=1; }
	done
	# Nothing copied and the last build, against these headers, succeeded:
	# no make (Kbuild takes seconds to find nothing to do, at each
	# weft-cluster up).
	if [ "$changed" = 0 ] && [ -f "$dir/guest-driver/weft.ko" ] &&
		[ "$(cat "$dir/.built" 2>/dev/null)" = "$hdr" ]; then
		weft_log "weft.ko up to date for $series: $dir/guest-driver/weft.ko"
		return 0
	fi
	rm -f "$dir/.built"
	log=$dir/build.log
	if ! make -C "$hdr" M="$dir/guest-driver" -j2 W=1 \
		CONFIG_DEBUG_INFO_BTF_MODULES= modules >"$log" 2>&1; then
		cat "$log" >&2
		weft_die "weft.ko does not build against $series ($hdr)"
	fi
	if grep -E 'warning:|error:' "$log" >&2; then
		weft_die "weft.ko builds with warnings against $series"
	fi
	[ -f "$dir/guest-driver/weft.ko" ] || weft_die "no weft.ko after the $series build"
	echo "$hdr" >"$dir/.built"
	weft_log "weft.ko built against $series: $dir/guest-driver/weft.ko"
}

# The checkpatch.pl of the 6.12 source package, cached.
checkpatch_path() {
	local ver dir deb tmp
	ver=$("$WEFT_ROOT/scripts/fetch-kernel.sh" --print-version 6.12)
	ver=${ver%%+*}                              # 6.12.117
	dir=$WEFT_CACHE/checkpatch/$ver
	if [ ! -x "$dir/scripts/checkpatch.pl" ]; then
		weft_log "extracting checkpatch.pl from linux-source-6.12 ($ver)"
		tmp=$(mktemp -d "$WEFT_CACHE/.cp.XXXXXX")
		chmod 755 "$tmp"
		deb=$(find "$WEFT_CACHE/dl" -maxdepth 1 -name "linux-source-6.12_$ver-*_all.deb" 2>/dev/null | sort -V | tail -n1)
		if [ -z "$deb" ]; then
			(cd "$tmp" && apt-get download -qq linux-source-6.12 >/dev/null 2>&1) ||
				weft_die "apt-get download linux-source-6.12 failed"
			deb=$(find "$tmp" -maxdepth 1 -name 'linux-source-6.12_*_all.deb' | head -n1)
		fi
		[ -n "$deb" ] || weft_die "no linux-source-6.12 package"
		dpkg-deb --fsys-tarfile "$deb" |
			tar -x -C "$tmp" --wildcards './usr/src/linux-source-6.12.tar.xz'
		mkdir -p "$dir"
		tar -xJf "$tmp/usr/src/linux-source-6.12.tar.xz" -C "$dir" --strip-components=1 \
			linux-source-6.12/scripts/checkpatch.pl \
			linux-source-6.12/scripts/spelling.txt \
			linux-source-6.12/scripts/const_structs.checkpatch
		rm -rf "$tmp"
	fi
	echo "$dir/scripts/checkpatch.pl"
}

# sparse over every source of the 6.12 build (C=2 checks whether or not
# a file is rebuilt); its findings fail the run.
run_sparse() {
	local hdr dir=$out/6.12 log
	command -v sparse >/dev/null || weft_apt_install sparse
	hdr=$("$WEFT_ROOT/scripts/fetch-kernel.sh" --print-headers 6.12)
	log=$dir/sparse.log
	weft_log "sparse on guest-driver/ and guest-driver/policy/"
	if ! make -C "$hdr" M="$dir/guest-driver" -j2 W=1 C=2 CHECK=sparse \
		CONFIG_DEBUG_INFO_BTF_MODULES= modules >"$log" 2>&1; then
		cat "$log" >&2
		weft_die "the sparse run of weft.ko failed"
	fi
	if grep -E 'warning:|error:' "$log" >&2; then
		weft_die "sparse reports problems"
	fi
	weft_log "sparse: $(grep -c '^  CHECK' "$log") sources checked, no findings"
}

build 6.12
[ "$check61" = 1 ] && build 6.1
[ "$sparse" = 1 ] && run_sparse
if [ "$checkpatch" = 1 ]; then
	cp=$(checkpatch_path)
	weft_log "checkpatch --strict on guest-driver/ and guest-driver/policy/"
	"$cp" --no-tree --strict --terse --show-types -f \
		--ignore SPDX_LICENSE_TAG,FILE_PATH_CHANGES \
		"$WEFT_ROOT"/guest-driver/*.[ch] "$WEFT_ROOT"/guest-driver/policy/*.[ch] >&2 ||
		weft_die "checkpatch reports problems"
fi
echo "$out/6.12/guest-driver/weft.ko"
