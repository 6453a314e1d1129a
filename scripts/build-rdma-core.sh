#!/bin/bash
# Builds Weft's rdma-core provider (rdma-provider/) inside Debian trixie's
# rdma-core 56.1 source tree, but against the public headers of the guest's
# libibverbs (Debian bookworm, 44.0), and checks that it only imports what
# that library exports and shares no struct whose layout differs from the
# library's.  docs/rdma-provider.md describes the recipe and the consistency
# rule.
#
#   scripts/build-rdma-core.sh               build if needed, print the output folder
#   scripts/build-rdma-core.sh --print-dir   the same, only the folder on stdout
#
# The output folder, $WEFT_CACHE/rdma-core/out-<key>/, holds
# libweft-rdmav34.so and weft.driver; the key hashes the rdma-core version,
# rdma-provider/, the ABI headers and this script.  The verified source
# tarball is cached by version under $WEFT_CACHE/rdma-core/src-<version>/.
# On a fresh Debian 12 machine it must run as root (apt sources, build
# dependencies); once cached it runs as any user who can write the cache.
set -euo pipefail

# shellcheck source=lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

weft_build_args 15 "$@"

# ---- The recipe ------------------------------------------------------------
RDMA_CORE_VERSION=56.1
PABI=34
CMAKE_FLAGS=(-GNinja -DNO_PYVERBS=1 -DNO_MAN_PAGES=1 -DENABLE_RESOLVE_NEIGH=0
	-DENABLE_STATIC=0 -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_INSTALL_PREFIX=/usr)
BUILD_DEPS=(cmake ninja-build gcc pkg-config python3 binutils dpkg-dev)
# The guest's libibverbs (docs/rdma-provider.md, "Consistency") and the
# package with its public headers, which the provider is compiled against.
GUEST_LIBIBVERBS=libibverbs1
GUEST_LIBIBVERBS_DEV=libibverbs-dev
# libibverbs' own public headers in that package (the *dv.h of other
# providers are not needed).
GUEST_HEADERS=(verbs.h verbs_api.h ib_user_ioctl_verbs.h tm_types.h opcode.h arch.h sa.h sa-kern-abi.h)
# Imports that exist in bookworm's library under the same version node but
# with another meaning (changed signature) or that a provider must not need.
FORBIDDEN_IMPORTS=(ibv_cmd_reg_dmabuf_mr ibv_cmd_create_cq_ex2)
JOBS=${WEFT_JOBS:-2}

PROVIDER=$WEFT_ROOT/rdma-provider
ABI_HDR=$WEFT_ROOT/include/weft/ib-abi.h
TOP=$WEFT_CACHE/rdma-core
START=$(date +%s)

mkdir -p "$TOP"
weft_lock "$TOP/.lock" build-rdma-core.sh

key=$( {
	echo "$RDMA_CORE_VERSION ${CMAKE_FLAGS[*]} ${FORBIDDEN_IMPORTS[*]}"
	weft_hash "$PROVIDER" "$ABI_HDR" "$WEFT_ROOT/include/weft/hw.h" "${BASH_SOURCE[0]}" \
		"$WEFT_ROOT/scripts/abi-layout.py"
} | sha256sum | cut -c1-16)
out=$TOP/out-$key
weft_cached_exit "$out" "rdma-core: provider" "$out"

weft_apt_source trixie-src deb-src trixie
weft_apt_install "${BUILD_DEPS[@]}"

# ---- Source: the verified orig tarball, cached by version -----------------
src_dir=$TOP/src-$RDMA_CORE_VERSION
tarball=$src_dir/rdma-core_$RDMA_CORE_VERSION.orig.tar.gz
if [ ! -f "$src_dir/.verified" ]; then
	weft_apt_update
	srcver=$(weft_src_version rdma-core)
	case "$srcver" in
	"$RDMA_CORE_VERSION"-*) ;;
	*) weft_die "apt offers rdma-core source $srcver, not $RDMA_CORE_VERSION (is the trixie deb-src entry there?)" ;;
	esac
	# The sha256 list of the stanza of that version.
	sums=$(weft_src_sums rdma-core "$srcver")
	dl=$TOP/dl.$$
	rm -rf "$dl"; mkdir -p "$dl"
	weft_log "rdma-core: fetching the $srcver source package"
	weft_src_download rdma-core "$srcver" "$dl"
	n=0
	while read -r sum file; do
		case "$file" in *.dsc) continue ;; esac
		[ -f "$dl/$file" ] || weft_die "rdma-core: $file was not downloaded"
		echo "$sum  $dl/$file" | sha256sum -c --quiet - ||
			weft_die "rdma-core: $file does not match the sha256 apt lists"
		n=$((n + 1))
	done <<<"$sums"
	[ "$n" -ge 2 ] || weft_die "rdma-core: apt lists no tarball checksums"
	[ -f "$dl/$(basename "$tarball")" ] || weft_die "rdma-core: no $(basename "$tarball")"
	rm -rf "$src_dir"; mkdir -p "$src_dir"
	mv "$dl/$(basename "$tarball")" "$tarball"
	rm -rf "$dl"
	touch "$src_dir/.verified"
	weft_log "rdma-core: $(basename "$tarball") verified ($n tarballs checked)"
fi

# ---- The guest's libibverbs, for the import check --------------------------
debs=$WEFT_CACHE/debs
mkdir -p "$debs"
libver=$(apt-cache policy "$GUEST_LIBIBVERBS" | awk '/Candidate:/ {print $2}')
{ [ -n "$libver" ] && [ "$libver" != "(none)" ]; } || weft_die "apt has no $GUEST_LIBIBVERBS"
libdeb=$debs/${GUEST_LIBIBVERBS}_${libver//:/%3a}_amd64.deb
devdeb=$debs/${GUEST_LIBIBVERBS_DEV}_${libver//:/%3a}_amd64.deb
for pkg in "$GUEST_LIBIBVERBS" "$GUEST_LIBIBVERBS_DEV"; do
	[ -f "$debs/${pkg}_${libver//:/%3a}_amd64.deb" ] && continue
	(cd "$debs" && apt-get download -qq "$pkg=$libver" >/dev/null) ||
		weft_die "apt-get download $pkg=$libver failed"
done

# ---- Tree: unpack, add the provider, register it -----------------------------
[ -f "$ABI_HDR" ] || weft_die "include/weft/ib-abi.h is missing (the user/kernel ABI)"
[ -f "$PROVIDER/CMakeLists.txt" ] || weft_die "rdma-provider/CMakeLists.txt is missing"
work=$TOP/work-$key
rm -rf "$work"; mkdir -p "$work"
trap 'rm -rf "$work"' EXIT
tar -xzf "$tarball" -C "$work"
tree=$work/rdma-core-$RDMA_CORE_VERSION
[ -f "$tree/CMakeLists.txt" ] || weft_die "unexpected layout of the rdma-core tarball"

mkdir -p "$tree/providers/weft"
cp "$PROVIDER"/*.c "$PROVIDER"/*.h "$PROVIDER/CMakeLists.txt" "$tree/providers/weft/"
# The provider sees the adapter's formats as <weft/...>, and the kernel ABI
# as rdma-core's generated <kernel-abi/weft-abi.h>.
mkdir -p "$tree/providers/weft/weft"
cp "$WEFT_ROOT"/include/weft/*.h "$tree/providers/weft/weft/"
cp "$ABI_HDR" "$tree/kernel-headers/rdma/weft-abi.h"
# The guest library's public headers, found before the tree's own
# (rdma-provider/CMakeLists.txt): a struct the provider shares with
# libibverbs 44.0 and its programs (ibv_qp_ex inside verbs_qp, ibv_port_attr)
# gets the library's layout, not 56.1's.
dpkg -x "$devdeb" "$work/guestdev"
mkdir -p "$tree/providers/weft/guest-include/infiniband"
for h in "${GUEST_HEADERS[@]}"; do
	cp "$work/guestdev/usr/include/infiniband/$h" "$tree/providers/weft/guest-include/infiniband/" ||
		weft_die "no infiniband/$h in $(basename "$devdeb")"
done

# add_after FILE ANCHOR LINE: LINE after each line equal to ANCHOR.
add_after() {
	grep -qxF -- "$2" "$1" || weft_die "cannot register the provider: no '$2' in $1"
	awk -v a="$2" -v l="$3" '{print} $0 == a {print l}' "$1" >"$1.new"
	mv -f "$1.new" "$1"
}
add_after "$tree/CMakeLists.txt" 'add_subdirectory(providers/vmw_pvrdma)' \
	'add_subdirectory(providers/weft)'
add_after "$tree/kernel-headers/CMakeLists.txt" '  rdma/vmw_pvrdma-abi.h' '  rdma/weft-abi.h'
[ "$(grep -c 'add_subdirectory(providers/weft)' "$tree/CMakeLists.txt")" = 1 ] &&
	[ "$(grep -c 'rdma/weft-abi.h' "$tree/kernel-headers/CMakeLists.txt")" = 2 ] ||
	weft_die "cannot register the provider and rdma/weft-abi.h in the tree's CMake"

# ---- Build --------------------------------------------------------------------
weft_log "rdma-core: configuring $RDMA_CORE_VERSION"
mkdir -p "$tree/build"
(cd "$tree/build" && cmake "${CMAKE_FLAGS[@]}" .. >"$work/cmake.log" 2>&1) ||
	{ tail -30 "$work/cmake.log" >&2; weft_die "cmake of rdma-core failed"; }
weft_log "rdma-core: building weft-rdmav$PABI (-j$JOBS)"
ninja -C "$tree/build" -j"$JOBS" "weft-rdmav$PABI" >"$work/ninja.log" 2>&1 ||
	{ tail -40 "$work/ninja.log" >&2; weft_die "building the weft provider failed"; }
if grep -E 'providers/weft/.*warning:' "$work/ninja.log" >&2; then
	weft_die "warnings in rdma-provider/ (shown above)"
fi
so=$tree/build/lib/libweft-rdmav$PABI.so
[ -f "$so" ] || weft_die "no $so after the build"

# ---- Imports against the guest's libibverbs ----------------------------------
dpkg -x "$libdeb" "$work/guestlib"
glib=$(find "$work/guestlib" -name 'libibverbs.so.1.*' -type f | head -n1)
[ -n "$glib" ] || weft_die "no libibverbs.so.1 in $(basename "$libdeb")"
# objdump -T: defined symbols have a section, imports *UND*; the version
# node is the column before the name.
objdump -T "$glib" | awk 'NF >= 6 && !/[*]UND[*]/ && $(NF-1) ~ /^IBVERBS_/ {print $NF, $(NF-1)}' |
	sort -u >"$work/exports"
objdump -T "$so" | awk 'NF >= 6 && /[*]UND[*]/ && $(NF-1) ~ /IBVERBS_/ {
	v = $(NF-1); gsub(/[()]/, "", v); print $NF, v}' | sort -u >"$work/imports"
[ -s "$work/imports" ] || weft_die "the provider imports nothing from libibverbs: objdump output not understood"
missing=$(comm -23 "$work/imports" "$work/exports")
[ -z "$missing" ] ||
	weft_die "the provider imports symbols that $GUEST_LIBIBVERBS $libver lacks: $missing"
for s in "${FORBIDDEN_IMPORTS[@]}"; do
	! grep -q "^$s " "$work/imports" ||
		weft_die "the provider imports $s, whose ABI differs in $GUEST_LIBIBVERBS $libver"
done
weft_log "rdma-core: $(wc -l <"$work/imports") libibverbs imports, all exported by $GUEST_LIBIBVERBS $libver"

# ---- Layouts against the guest's libibverbs -----------------------------------
# Every struct and union that both the provider's DWARF and the guest's
# public headers describe must have the same size and member offsets
# (libibverbs 44.0 reads verbs_qp.comp_mask after its own ibv_qp_ex, for one).
echo '#include <infiniband/verbs.h>' >"$work/probe.c"
gcc -g -fno-eliminate-unused-debug-types -c -I"$work/guestdev/usr/include" \
	"$work/probe.c" -o "$work/probe.o" || weft_die "cannot compile the layout probe"
python3 "$WEFT_ROOT/scripts/abi-layout.py" "$so" "$work/probe.o" >"$work/layouts" ||
	{ cat "$work/layouts" >&2; weft_die "the provider's struct layouts differ from $GUEST_LIBIBVERBS_DEV $libver's (above)"; }
weft_log "rdma-core: $(tail -n1 "$work/layouts")"

rm -rf "$out.new"; mkdir -p "$out.new"
cp "$so" "$out.new/"
echo "driver weft" >"$out.new/weft.driver"
cp "$work/imports" "$out.new/imports.txt"
echo "$GUEST_LIBIBVERBS $libver" >"$out.new/checked-against"
rm -rf "$out"; mv "$out.new" "$out"
touch "$out/.complete"
# Keep the four newest outputs.
find "$TOP" -mindepth 1 -maxdepth 1 -type d -name 'out-*' -printf '%T@ %p\n' |
	sort -rn | tail -n +5 | cut -d' ' -f2- | while read -r old; do rm -rf "$old"; done
weft_log "rdma-core: provider built in $(($(date +%s) - START)) s: $out"
echo "$out"
