#!/usr/bin/env bash
# Builds an optional layer of the guest image: a second initramfs archive
# that `weft-cluster up --layer NAME` appends to the image's (Linux unpacks
# concatenated cpio archives in order, so the layer adds to and overrides
# the base image).  A layer is defined by images/layers/NAME/: layer.conf
# (below) and root/, a tree copied over the packages last.  The result is
# cached under
#   $WEFT_CACHE/layers/NAME-<hash of every input>/
# holding layer.cpio, manifest.txt (what went in) and host/, the files of
# the layer that weft-cluster runs on the host (with the layer's own
# libraries, from host/lib).  An unchanged input set is not rebuilt.
#
# layer.conf, one directive a line ("#" starts a comment):
#   packages PKG...   Debian packages put in whole (less documentation,
#                     manual pages and locales)
#   libraries PKG...  packages that the shared libraries come from: every
#                     ELF file of the layer has each NEEDED library found
#                     in the layer or taken from these (else the build fails
#                     and names the library)
#   link PATH TARGET  a symbolic link (what Debian's alternatives make)
#   stage SCRIPT      a tree made by another build script (SCRIPT
#                     --print-dir prints its folder), copied in after the
#                     packages, when SCRIPT exists in the repository
#   host PATH         a program of the layer kept in host/ for weft-cluster
#
# Usage: build-layer.sh NAME [--print-dir]
set -euo pipefail
# shellcheck source=scripts/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

usage() {
	sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//' >&2
	exit "${1:-2}"
}

name=
while [ $# -gt 0 ]; do
	case $1 in
	--print-dir) ;;
	-h|--help) usage 0 ;;
	-*) weft_log "unknown option '$1'"; usage ;;
	*) [ -z "$name" ] || usage; name=$1 ;;
	esac
	shift
done
[ -n "$name" ] || usage
case $name in *[!a-z0-9_-]*) weft_die "bad layer name '$name'" ;; esac
LDIR=$WEFT_ROOT/images/layers/$name
[ -f "$LDIR/layer.conf" ] || weft_die "no layer '$name' ($LDIR/layer.conf is missing)"

# ---- the definition -----------------------------------------------------------
pkgs=() libpkgs=() links=() stages=() hosts=()
while read -r what args; do
	case $what in
	''|'#'*) ;;
	packages) read -ra a <<<"$args"; pkgs+=("${a[@]}") ;;
	libraries) read -ra a <<<"$args"; libpkgs+=("${a[@]}") ;;
	link) links+=("$args") ;;
	stage) stages+=("$args") ;;
	host) hosts+=("$args") ;;
	*) weft_die "$LDIR/layer.conf: unknown directive '$what'" ;;
	esac
done <"$LDIR/layer.conf"

mkdir -p "$WEFT_CACHE/layers"
work=$(mktemp -d "$WEFT_CACHE/layers/.work.XXXXXX")
trap 'rm -rf "$work"' EXIT

weft_load_candidates busybox-static "${pkgs[@]}" "${libpkgs[@]}"
debs=() libdebs=()
for p in "${pkgs[@]}"; do debs+=("$(weft_deb_file "$p")") || exit 1; done
for p in "${libpkgs[@]}"; do libdebs+=("$(weft_deb_file "$p")") || exit 1; done

# Staged trees: each script's folder (the scripts cache their own builds).
staged=()
for s in "${stages[@]}"; do
	[ -x "$WEFT_ROOT/$s" ] || { weft_log "layer $name: no $s: nothing staged from it"; continue; }
	weft_log "layer $name: $s --print-dir"
	d=$("$WEFT_ROOT/$s" --print-dir 2>"$work/stage.err" | tail -n1) ||
		{ tail -30 "$work/stage.err" >&2; weft_die "$s failed"; }
	[ -d "$d" ] || weft_die "$s printed '$d', which is not a folder"
	staged+=("$d")
done

dir_hash() { (cd "$1" && find . \( -type f -o -type l \) -print0 | LC_ALL=C sort -z | xargs -0r sha256sum) | sha256sum; }
key=$( {
	echo "layer $name"
	weft_hash "$LDIR" "${BASH_SOURCE[0]}" "$WEFT_ROOT/scripts/lib.sh" "${debs[@]}" "${libdebs[@]}" \
		"$(weft_deb_file busybox-static)"
	for d in ${staged[@]+"${staged[@]}"}; do dir_hash "$d"; done
} | sha256sum | cut -c1-16)
out=$WEFT_CACHE/layers/$name-$key

if [ -f "$out/.complete" ]; then
	weft_log "layer $name: cached $out"
	echo "$out"
	exit 0
fi
weft_log "layer $name: building $key"

root=$work/root
libs=$work/libs
mkdir -p "$root" "$libs"
manifest=$work/manifest.txt
echo "layer $name $key" >"$manifest"
for f in "${debs[@]}"; do
	dpkg -x "$f" "$root"
	echo "deb $(basename "$f")" >>"$manifest"
done
rm -rf "$root"/usr/share/{doc,man,info,lintian,locale,bug}
for f in "${libdebs[@]}"; do dpkg -x "$f" "$libs"; done
for d in ${staged[@]+"${staged[@]}"}; do
	cp -a "$d/." "$root/"
	echo "staged $d" >>"$manifest"
done
cp -a "$LDIR/root/." "$root/"
for l in "${links[@]}"; do
	read -r path target <<<"$l"
	mkdir -p "$root/$(dirname "$path")"
	ln -sfn "$target" "$root/$path"
	echo "link $path -> $target" >>"$manifest"
done

# The shared libraries: each NEEDED name looked up in the layer's library
# folders, else copied (as the real file, under its NEEDED name) from the
# library packages.
LIBDIRS="lib/x86_64-linux-gnu usr/lib/x86_64-linux-gnu"
# A link inside TREE followed inside it (not into the host).
inside() { # TREE PATH
	local f=$2 t
	for _ in 1 2 3 4 5 6 7 8; do
		[ -L "$f" ] || break
		t=$(readlink "$f")
		case $t in /*) f=$1$t ;; *) f=$(dirname "$f")/$t ;; esac
	done
	echo "$f"
}
find_lib() { # TREE NAME
	local d
	for d in $LIBDIRS; do
		[ -e "$1/$d/$2" ] && { inside "$1" "$1/$d/$2"; return 0; }
	done
	return 1
}
# Debian's alternatives link for the PSM library (libpsm-infinipath1).
for f in "$libs"/usr/lib/libpsm1/*.so.1.*; do
	[ -f "$f" ] || continue
	n=${f##*/}
	ln -sfn "/usr/lib/libpsm1/$n" "$libs/usr/lib/x86_64-linux-gnu/${n%.*}"
done
declare -A seen=()
todo=()
while read -r -d '' f; do
	[ "$(head -c 4 "$f")" = $'\x7fELF' ] && todo+=("$f")
done < <(find "$root" -type f -print0)
while [ ${#todo[@]} -gt 0 ]; do
	f=${todo[0]}
	todo=("${todo[@]:1}")
	for n in $(readelf -d "$f" 2>/dev/null | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p'); do
		# In the layer: its library folders, or beside the file (plugins
		# that find each other through RUNPATH $ORIGIN, as UCX's).
		[ -e "$(dirname "$f")/$n" ] && case $f in "$root"/*) continue ;; esac
		find_lib "$root" "$n" >/dev/null && continue
		[ -z "${seen[$n]:-}" ] || continue
		seen[$n]=1
		lib=$(find_lib "$libs" "$n") ||
			weft_die "layer $name: library $n (needed by ${f#"$root"/}) is in no package of layer.conf"
		install -D -m 644 "$lib" "$root/usr/lib/x86_64-linux-gnu/$n"
		echo "library $n" >>"$manifest"
		todo+=("$lib")
	done
done

# Host programs, with the libraries they need and the dynamic loader
# (host/lib/ld-linux-x86-64.so.2 --library-path host/lib host/PROGRAM).
hl=$work/out/host/lib
mkdir -p "$hl"
todo=()
for h in ${hosts[@]+"${hosts[@]}"}; do
	[ -f "$root/$h" ] || weft_die "layer $name: host program $h is not in the layer"
	cp "$root/$h" "$work/out/host/"
	todo+=("$root/$h")
done
if [ ${#todo[@]} -gt 0 ]; then
	install -m 755 "$(find_lib "$root" ld-linux-x86-64.so.2)" "$hl/"
fi
while [ ${#todo[@]} -gt 0 ]; do
	f=${todo[0]}
	todo=("${todo[@]:1}")
	for n in $(readelf -d "$f" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p'); do
		[ -e "$hl/$n" ] && continue
		lib=$(find_lib "$root" "$n") || weft_die "layer $name: no $n for its host programs"
		cp "$lib" "$hl/$n"
		todo+=("$lib")
	done
done

# Debian's busybox makes the archive, as for the base image.
dpkg -x "$(weft_deb_file busybox-static)" "$work/bb"
(cd "$root" && find . -mindepth 1 | LC_ALL=C sort | "$work/bb/bin/busybox" cpio -o -H newc 2>/dev/null) \
	>"$work/out/layer.cpio" || weft_die "cpio of layer $name failed"
cp "$manifest" "$work/out/manifest.txt"
rm -rf "$out"
mv "$work/out" "$out"
touch "$out/.complete"
weft_log "layer $name: $out ($(du -k "$out/layer.cpio" | cut -f1) KiB)"
# Keep the four newest builds of this layer.
find "$WEFT_CACHE/layers" -mindepth 1 -maxdepth 1 -type d -name "$name-*" -printf '%T@ %p\n' |
	sort -rn | tail -n +5 | cut -d' ' -f2- | while read -r old; do rm -rf "$old"; done
echo "$out"
