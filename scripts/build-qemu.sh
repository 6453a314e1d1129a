#!/bin/bash
# Builds QEMU 10.0 (Debian trixie's source package) with the weft device
# and its qtest, cached under $WEFT_CACHE/qemu/<version>-<recipe hash>.
#
#   scripts/build-qemu.sh                  build if needed, report, print the binary
#   scripts/build-qemu.sh --print-path     only the qemu-system-x86_64 path on stdout
#   scripts/build-qemu.sh --print-build-dir  only the QEMU build folder on stdout
#
# Progress always goes to stderr.  On a fresh Debian 12 machine it must
# run as root (it adds apt sources and installs the build dependencies);
# once everything is installed and cached it runs as any user who can
# write the cache.  docs/qemu-device.md describes the recipe.
set -euo pipefail

# shellcheck source=lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

mode=report
for arg in "$@"; do
	case "$arg" in
	--print-path) mode=path ;;
	--print-build-dir) mode=builddir ;;
	-h|--help)
		sed -n '2,12s/^# \{0,1\}//p' "${BASH_SOURCE[0]}"
		exit 0 ;;
	*) weft_die "build-qemu.sh: unknown argument $arg (try --help)" ;;
	esac
done

# ---- The recipe: anything here that changes needs a fresh tree ---------
QEMU_SERIES=10.0
QEMU_CONFIGURE=(--python=/usr/bin/python3
	--target-list=x86_64-softmmu --without-default-features
	--enable-kvm --enable-tcg --enable-slirp --disable-docs
	--disable-download --disable-install-blobs)
BUILD_DEPS=(gcc ninja-build pkg-config python3-venv libglib2.0-dev zlib1g-dev
	libslirp-dev dpkg-dev xz-utils)
FIRMWARE_PKGS=(seabios qemu-system-data)
# Bump when the way the device is integrated into the tree changes.
RECIPE_REV=1
RECIPE_HASH=$(printf '%s\n' "$QEMU_SERIES" "${QEMU_CONFIGURE[*]}" "${BUILD_DEPS[*]}" \
	"${FIRMWARE_PKGS[*]}" "$RECIPE_REV" | sha256sum | cut -c1-12)

JOBS=${WEFT_JOBS:-2}
START=$(date +%s%N)

# All progress, including the compiler's, goes to stderr.
run_quiet() {
	"$@" >&2
}

# ---- Packages and apt sources -------------------------------------------
ensure_packages() {
	weft_apt_source trixie-src deb-src trixie
	weft_apt_install "${BUILD_DEPS[@]}"
	weft_ensure_meson
}

# ---- Source ----------------------------------------------------------------
# Sets TREE to the newest cached tree of this recipe; returns 1 if none.
# (The trailing slash: find does not enter a starting point that is a
# symbolic link, and a shared cache may link its qemu folder.)
find_cached_tree() {
	TREE=$(find "$WEFT_CACHE/qemu/" -mindepth 1 -maxdepth 1 -type d \
		-name "$QEMU_SERIES.*-$RECIPE_HASH" 2>/dev/null | sort -V | tail -n1)
	[ -n "$TREE" ] && [ -f "$TREE/.source-ok" ]
}

# Asks apt which QEMU trixie carries, fetches it and sets TREE.  (Not run
# in a subshell, so that apt-get update runs once per invocation.)
fetch_source() {
	local uris dsc ver dir tmp
	weft_apt_update
	uris=$(apt-get source --print-uris qemu/trixie 2>/dev/null) || uris=
	dsc=$(awk '$2 ~ /^qemu_.*[.]dsc$/ {print $2; exit}' <<<"$uris")
	[ -n "$dsc" ] ||
		weft_die "apt has no trixie source for qemu (is the deb-src entry there?)"
	ver=${dsc#qemu_}; ver=${ver%.dsc}; ver=${ver%%+*}; ver=${ver%%-*}
	case "$ver" in "$QEMU_SERIES".*) ;; *) weft_die "trixie carries qemu $ver, not $QEMU_SERIES.x" ;; esac
	dir=$WEFT_CACHE/qemu/$ver-$RECIPE_HASH
	if [ ! -f "$dir/.source-ok" ]; then
		weft_log "fetching the QEMU $ver source package into $dir"
		rm -rf "$dir"
		tmp=$WEFT_CACHE/qemu/dl.$$
		rm -rf "$tmp"; mkdir -p "$tmp"
		(cd "$tmp" && apt-get source -qq qemu/trixie >/dev/null 2>&1) ||
			weft_die "apt-get source qemu/trixie failed"
		mkdir -p "$dir"
		mv "$tmp"/qemu-"$ver"*/ "$dir/src" 2>/dev/null ||
			mv "$(find "$tmp" -mindepth 1 -maxdepth 1 -type d | head -n1)" "$dir/src"
		rm -rf "$tmp"
		[ -x "$dir/src/configure" ] || weft_die "unexpected layout of the qemu source package"
		touch "$dir/.source-ok"
	fi
	TREE=$dir
}

# ---- Device integration ---------------------------------------------------
# sync_tree SRC DST [find-filters...]: copies the files that differ, so that
# unchanged files keep their mtimes, and removes files no longer in SRC.
sync_tree() {
	local src=$1 dst=$2 f rel
	shift 2
	mkdir -p "$dst"
	while IFS= read -r -d '' f; do
		rel=${f#"$src"/}
		if ! cmp -s "$f" "$dst/$rel"; then
			mkdir -p "$(dirname "$dst/$rel")"
			cp "$f" "$dst/$rel.tmp.$$" && mv -f "$dst/$rel.tmp.$$" "$dst/$rel"
		fi
	done < <(find "$src" -type f "$@" -print0)
	while IFS= read -r -d '' f; do
		rel=${f#"$dst"/}
		[ -e "$src/$rel" ] || rm -f "$f"
	done < <(find "$dst" -type f -print0)
}

sync_file() {
	cmp -s "$1" "$2" || { cp "$1" "$2.tmp.$$" && mv -f "$2.tmp.$$" "$2"; }
}

# Adds LINE after the first line matching ANCHOR (a grep -E pattern) in
# FILE, unless FILE already has LINE.
add_line_after() {
	local file=$1 anchor=$2 line=$3
	grep -qxF -- "$line" "$file" && return 0
	grep -qE -- "$anchor" "$file" || weft_die "cannot integrate: no '$anchor' in $file"
	awk -v a="$anchor" -v l="$line" '{print} !done && $0 ~ a {print l; done = 1}' \
		"$file" >"$file.tmp.$$"
	mv -f "$file.tmp.$$" "$file"
}

integrate() {
	local src=$1 hw=$1/hw/weft f
	# Meson cannot glob: every core source must be named in the device's
	# meson.build, or the device would link without it.
	for f in "$WEFT_ROOT"/qemu-device/core/*.c; do
		[ -e "$f" ] || weft_die "qemu-device/core/ has no sources"
		grep -qF "'core/$(basename "$f")'" "$WEFT_ROOT/qemu-device/meson.build" ||
			weft_die "qemu-device/core/$(basename "$f") is not listed in qemu-device/meson.build"
	done
	[ -f "$WEFT_ROOT/tests/qtest/weft-test.c" ] || weft_die "tests/qtest/weft-test.c is missing"
	sync_tree "$WEFT_ROOT/include" "$hw/include" -name '*.h'
	sync_tree "$WEFT_ROOT/qemu-device/include" "$hw/host-include" -name '*.h'
	sync_tree "$WEFT_ROOT/qemu-device/core" "$hw/core" \( -name '*.c' -o -name '*.h' \)
	sync_tree "$WEFT_ROOT/qemu-device/qemu" "$hw/qemu" \
		\( -name '*.c' -o -name '*.h' -o -name trace-events -o -name meson.build \)
	sync_file "$WEFT_ROOT/qemu-device/meson.build" "$hw/meson.build"
	sync_file "$WEFT_ROOT/qemu-device/Kconfig" "$hw/Kconfig"
	sync_file "$WEFT_ROOT/tests/qtest/weft-test.c" "$src/tests/qtest/weft-test.c"

	add_line_after "$src/hw/meson.build" "^subdir\\('virtio'\\)" "subdir('weft')"
	add_line_after "$src/hw/Kconfig" '^source virtio/Kconfig' 'source weft/Kconfig'
	add_line_after "$src/meson.build" "^ *'hw/nvme',\$" "    'hw/weft/qemu',"
	add_line_after "$src/tests/qtest/meson.build" '^qtests_x86_64 = ' \
		"qtests_x86_64 += ['weft-test']"
	add_line_after "$src/tests/qtest/meson.build" '^qtests = \{' \
		"  'weft-test': [weft_qtest_dep],"
}

# ---- Firmware ----------------------------------------------------------------
# The source package carries no blobs: take them from Debian's packages
# and link them where a binary run from the build tree looks.
firmware() {
	local build=$1 fw=$WEFT_CACHE/qemu/firmware bundle f
	if [ ! -f "$fw/.ok" ]; then
		weft_log "fetching firmware packages: ${FIRMWARE_PKGS[*]}"
		rm -rf "$fw"; mkdir -p "$fw/debs" "$fw/root"
		weft_apt_update
		(cd "$fw/debs" && apt-get download -qq "${FIRMWARE_PKGS[@]}" >/dev/null 2>&1) ||
			weft_die "apt-get download ${FIRMWARE_PKGS[*]} failed"
		for f in "$fw"/debs/*.deb; do dpkg-deb -x "$f" "$fw/root"; done
		touch "$fw/.ok"
	fi
	bundle=$build/qemu-bundle/usr/local/share/qemu
	mkdir -p "$bundle"
	while IFS= read -r -d '' f; do
		[ -e "$bundle/$(basename "$f")" ] || ln -sf "$f" "$bundle/$(basename "$f")"
	done < <(find "$fw/root" \( -type f -o -type l \) \( -name '*.bin' -o -name '*.rom' \) -print0)
	[ -e "$bundle/bios-256k.bin" ] || weft_die "no bios-256k.bin in ${FIRMWARE_PKGS[*]}"
}

# ---- Main ----------------------------------------------------------------------
mkdir -p "$WEFT_CACHE/qemu"
exec 9>"$WEFT_CACHE/qemu/.lock"
if ! flock -n 9; then
	weft_log "waiting for another build-qemu.sh to finish"
	flock 9
fi

ensure_packages
find_cached_tree || fetch_source
dir=$TREE
src=$dir/src
build=$dir/build
ver=$(basename "$dir"); ver=${ver%-"$RECIPE_HASH"}

integrate "$src"

if [ ! -f "$build/build.ninja" ]; then
	weft_log "configuring QEMU $ver (${QEMU_CONFIGURE[*]})"
	rm -rf "$build"; mkdir -p "$build"
	(cd "$build" && run_quiet ../src/configure "${QEMU_CONFIGURE[@]}") ||
		weft_die "QEMU configure failed"
fi

firmware "$build"

weft_log "building qemu-system-x86_64 and the weft qtest in $build (-j$JOBS)"
# Warnings in Weft's own sources are errors (QEMU's release tarball builds
# without -Werror): their objects are removed so the next run fails too.
log=$dir/ninja.log
set +e
ninja -C "$build" -j"$JOBS" qemu-system-x86_64 tests/qtest/weft-test 2>&1 |
	tee "$log" >&2
rc=${PIPESTATUS[0]}
set -e
if grep -E '(hw/weft/|tests/qtest/weft-test\.c).*warning:' "$log" >&2; then
	find "$build" -name '*weft*.o' -delete
	weft_die "warnings in the weft device or qtest sources (shown above)"
fi
[ "$rc" -eq 0 ] || weft_die "QEMU build failed"
bin=$build/qemu-system-x86_64
[ -x "$bin" ] || weft_die "no $bin after the build"

devices=$("$bin" -nodefaults -device help 2>&1) || true
grep -q '^name "weft"' <<<"$devices" || weft_die "$bin does not list the weft device"

case "$mode" in
path) echo "$bin" ;;
builddir) echo "$build" ;;
report)
	ms=$((($(date +%s%N) - START) / 1000000))
	weft_log "done in $((ms / 1000)).$(printf '%03d' $((ms % 1000))) s"
	weft_log "qtest: $build/tests/qtest/weft-test"
	echo "$bin" ;;
esac
