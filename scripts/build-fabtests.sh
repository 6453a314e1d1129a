#!/bin/bash
# Builds libfabric 2.1.0 and its fabtests from Debian trixie's libfabric
# source package (the verified orig tarball, which carries fabtests/),
# consistently: fabtests compile against that libfabric's headers and run
# against its library.  libfabric is built with its verbs and ofi_rxm
# providers (and tcp, as a baseline) against this machine's bookworm
# rdma-core dev packages, so it loads in the guest's libibverbs1 and
# librdmacm1.  docs/fabtests.md describes the recipe.
#
#   scripts/build-fabtests.sh               build if needed, print the staged tree
#   scripts/build-fabtests.sh --print-dir   the same, only the folder on stdout
#
# The staged tree, $WEFT_CACHE/libfabric/out-<key>/root/, is a guest file
# system fragment under /opt/libfabric (lib/libfabric.so.1, bin/fi_info and
# the fabtests programs, stripped, with RUNPATH /opt/libfabric/lib); the
# key hashes the source checksum, the configure flags, the versions of the
# build packages and this script.  out-<key>/manifest.txt lists what went
# in and the shared libraries it needs from the guest.  On a fresh Debian 12
# machine it must run as root (apt sources, build dependencies); once
# cached it runs as any user who can write the cache.
set -euo pipefail

# shellcheck source=lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

weft_build_args 20 "$@"

# ---- The recipe ------------------------------------------------------------
LIBFABRIC_VERSION=2.1.0
# The orig tarball's sha256, as Debian's trixie source index lists it.
ORIG_SHA256=1a66369772d5bb151737214af1c478993e969cf298e8f9ed369e7a2ab8d8c6df
PREFIX=/opt/libfabric
# Only the named providers; optional host libraries the guest lacks are off.
LIBFABRIC_CONFIGURE=(--prefix="$PREFIX" --disable-static --enable-only
	--enable-verbs=yes --enable-rxm=yes --enable-tcp=yes
	--with-uring=no --enable-xpmem=no --disable-kdreg2)
FABTESTS_CONFIGURE=(--prefix="$PREFIX")
BUILD_DEPS=(gcc make autoconf automake libtool pkg-config xz-utils binutils
	libibverbs-dev librdmacm-dev)
# The guest's libraries that the staged programs may need (images/, the
# base image's RDMA user space and libc).
GUEST_LIBS=(libfabric.so.1 libibverbs.so.1 librdmacm.so.1 libc.so.6 libm.so.6
	ld-linux-x86-64.so.2)
CFLAGS="-g -O2"
JOBS=${WEFT_JOBS:-2}

TOP=$WEFT_CACHE/libfabric
START=$(date +%s)

mkdir -p "$TOP"
weft_lock "$TOP/.lock" build-fabtests.sh

weft_apt_source trixie-src deb-src trixie
weft_apt_install "${BUILD_DEPS[@]}"

key=$( {
	echo "$LIBFABRIC_VERSION $ORIG_SHA256 $PREFIX"
	echo "${LIBFABRIC_CONFIGURE[*]} | ${FABTESTS_CONFIGURE[*]} | $CFLAGS | ${GUEST_LIBS[*]}"
	dpkg-query -W -f='${Package} ${Version}\n' "${BUILD_DEPS[@]}"
	weft_hash "${BASH_SOURCE[0]}"
} | sha256sum | cut -c1-16)
out=$TOP/out-$key
weft_cached_exit "$out" "libfabric: staged tree" "$out/root"

# ---- Source: the verified orig tarball, cached by version -----------------
src_dir=$TOP/src-$LIBFABRIC_VERSION
tarball=$src_dir/libfabric_$LIBFABRIC_VERSION.orig.tar.xz
if [ ! -f "$src_dir/.verified" ]; then
	weft_apt_update
	srcver=$(weft_src_version libfabric)
	case "$srcver" in
	"$LIBFABRIC_VERSION"-*) ;;
	*) weft_die "apt offers libfabric source ${srcver:-none}, not $LIBFABRIC_VERSION (is the trixie deb-src entry there?)" ;;
	esac
	listed=$(weft_src_sums libfabric "$srcver" | awk -v f="$(basename "$tarball")" '$2 == f {print $1}')
	[ "$listed" = "$ORIG_SHA256" ] ||
		weft_die "apt lists sha256 ${listed:-none} for $(basename "$tarball"), the recipe pins $ORIG_SHA256"
	dl=$TOP/dl.$$
	rm -rf "$dl"; mkdir -p "$dl"
	weft_log "libfabric: fetching the $srcver source package"
	weft_src_download libfabric "$srcver" "$dl"
	[ -f "$dl/$(basename "$tarball")" ] || weft_die "libfabric: $(basename "$tarball") was not downloaded"
	echo "$ORIG_SHA256  $dl/$(basename "$tarball")" | sha256sum -c --quiet - ||
		weft_die "libfabric: $(basename "$tarball") does not match sha256 $ORIG_SHA256"
	rm -rf "$src_dir"; mkdir -p "$src_dir"
	mv "$dl/$(basename "$tarball")" "$tarball"
	rm -rf "$dl"
	touch "$src_dir/.verified"
	weft_log "libfabric: $(basename "$tarball") verified (sha256 $ORIG_SHA256)"
fi

# ---- Build: libfabric, then fabtests against it -------------------------------
work=$TOP/work-$key
rm -rf "$work"; mkdir -p "$work"
trap 'rm -rf "$work"' EXIT
tar -xJf "$tarball" -C "$work"
tree=$work/libfabric-$LIBFABRIC_VERSION
[ -f "$tree/configure.ac" ] && [ -f "$tree/fabtests/configure.ac" ] ||
	weft_die "unexpected layout of the libfabric tarball (no configure.ac or fabtests/)"
inst=$work/inst
# assert() names its source file: name it relative to the tree, so that no
# staged file carries the build folder.
build_cflags="$CFLAGS -fmacro-prefix-map=$tree/="

# The tarball is a git export without configure scripts.
weft_log "libfabric: autoreconf"
(cd "$tree" && autoreconf -if >"$work/autoreconf.log" 2>&1 &&
	cd fabtests && autoreconf -if >>"$work/autoreconf.log" 2>&1) ||
	{ tail -30 "$work/autoreconf.log" >&2; weft_die "autoreconf of libfabric failed"; }

weft_log "libfabric: configuring $LIBFABRIC_VERSION (${LIBFABRIC_CONFIGURE[*]})"
mkdir -p "$work/build-lib"
(cd "$work/build-lib" && "$tree/configure" "${LIBFABRIC_CONFIGURE[@]}" \
	CFLAGS="$build_cflags" >"$work/configure.log" 2>&1) ||
	{ tail -30 "$work/configure.log" >&2; weft_die "configure of libfabric failed"; }
weft_log "libfabric: building (-j$JOBS)"
make -C "$work/build-lib" -j"$JOBS" >"$work/make.log" 2>&1 &&
	make -C "$work/build-lib" install DESTDIR="$inst" >>"$work/make.log" 2>&1 ||
	{ tail -40 "$work/make.log" >&2; weft_die "building libfabric failed"; }
# libtool archives would point fabtests' link at $PREFIX, not at $inst.
find "$inst" -name '*.la' -delete

weft_log "libfabric: configuring and building fabtests (-j$JOBS)"
mkdir -p "$work/build-ft"
(cd "$work/build-ft" && "$tree/fabtests/configure" "${FABTESTS_CONFIGURE[@]}" \
	--with-libfabric="$inst$PREFIX" CFLAGS="$build_cflags" LDFLAGS="-Wl,-rpath,$PREFIX/lib" \
	>"$work/configure-ft.log" 2>&1) ||
	{ tail -30 "$work/configure-ft.log" >&2; weft_die "configure of fabtests failed"; }
make -C "$work/build-ft" -j"$JOBS" >"$work/make-ft.log" 2>&1 &&
	make -C "$work/build-ft" install DESTDIR="$inst" >>"$work/make-ft.log" 2>&1 ||
	{ tail -40 "$work/make-ft.log" >&2; weft_die "building fabtests failed"; }

# ---- Stage: the library and the ELF programs, stripped ------------------------
stage=$work/stage
mkdir -p "$stage$PREFIX/lib" "$stage$PREFIX/bin"
cp -a "$inst$PREFIX"/lib/libfabric.so.1* "$stage$PREFIX/lib/"
[ -n "$(find "$stage$PREFIX/lib" -name 'libfabric.so.1.*' -type f)" ] ||
	weft_die "no libfabric.so.1.* was installed"
n=0
for f in "$inst$PREFIX"/bin/*; do
	[ -f "$f" ] && [ "$(head -c4 "$f" | od -An -c | tr -d ' ')" = '177ELF' ] || continue
	cp "$f" "$stage$PREFIX/bin/"
	n=$((n + 1))
done
strip --strip-unneeded "$stage$PREFIX"/lib/libfabric.so.1.* "$stage$PREFIX"/bin/*

# Consistency: the library has the providers asked for, every program runs
# against this library (RUNPATH) and needs nothing the guest lacks.
for p in verbs rxm tcp; do
	grep -qE "^#define HAVE_${p^^} 1" "$work/build-lib/config.h" ||
		weft_die "libfabric was configured without its $p provider"
done
manifest=$work/manifest.txt
{
	echo "libfabric $LIBFABRIC_VERSION (orig sha256 $ORIG_SHA256), prefix $PREFIX"
	echo "configure: ${LIBFABRIC_CONFIGURE[*]}"
	echo "fabtests configure: ${FABTESTS_CONFIGURE[*]}"
	echo "CFLAGS: $CFLAGS"
	dpkg-query -W -f='built with ${Package} ${Version}\n' "${BUILD_DEPS[@]}"
} >"$manifest"
while IFS= read -r -d '' f; do
	rel=${f#"$stage"}
	needed=$(objdump -p "$f" | awk '$1 == "NEEDED" {print $2}' | sort | tr '\n' ' ')
	for lib in $needed; do
		printf '%s\n' "${GUEST_LIBS[@]}" | grep -qxF "$lib" ||
			weft_die "$rel needs $lib, which the guest image lacks"
	done
	case "$rel" in
	"$PREFIX"/bin/*)
		rp=$(objdump -p "$f" | awk '$1 == "RUNPATH" || $1 == "RPATH" {print $2}')
		[ "$rp" = "$PREFIX/lib" ] || weft_die "$rel has run path '${rp}', not $PREFIX/lib"
		grep -qw libfabric.so.1 <<<"$needed" || weft_die "$rel does not link libfabric.so.1" ;;
	esac
	echo "$rel: $needed"
done < <(find "$stage" -type f -print0 | LC_ALL=C sort -z) >>"$manifest"
if grep -rqF "$work" "$stage"; then
	weft_die "a staged file names the build folder $work"
fi

rm -rf "$out.new"; mkdir -p "$out.new"
mv "$stage" "$out.new/root"
mv "$manifest" "$out.new/manifest.txt"
rm -rf "$out"; mv "$out.new" "$out"
touch "$out/.complete"
# Keep the two newest staged trees.
find "$TOP" -mindepth 1 -maxdepth 1 -type d -name 'out-*' -printf '%T@ %p\n' |
	sort -rn | tail -n +3 | cut -d' ' -f2- | while read -r old; do rm -rf "$old"; done
weft_log "libfabric: $n programs and libfabric.so.1 staged in $(($(date +%s) - START)) s ($(du -sh "$out/root" | cut -f1)): $out/root"
echo "$out/root"
