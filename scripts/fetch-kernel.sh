#!/usr/bin/env bash
# Fetches Debian 12's guest kernel (6.12 LTS) and the headers that the
# weft.ko module builds against (6.12, and 6.1 as a compatibility check),
# without installing anything: the .debs are `dpkg -x`-ed into
#   $WEFT_CACHE/kernel/<kernel release>/
# (for example $WEFT_CACHE/kernel/6.12.117+deb12-amd64/).
#
# Pinned rule for the kernel: among the packages
#   linux-image-6.12.<N>+deb12-amd64-unsigned
# known to apt with an installable candidate (any configured bookworm
# suite: bookworm, bookworm-updates, bookworm-security, bookworm-backports),
# take the highest <N>.  For 6.1: the highest linux-headers-6.1.0-<N>-amd64.
# WEFT_KERNEL_612=<release> / WEFT_KERNEL_61=<release> override the rule
# (e.g. WEFT_KERNEL_612=6.12.117+deb12-amd64).
#
# Usage: fetch-kernel.sh [--print-kernel | --print-modules-dir |
#                         --print-headers 6.12|6.1 | --print-version 6.12|6.1]
# Without an option it fetches both and prints a summary on stderr.
# The --print-* options print exactly one path (or version) on stdout.
# Everything else goes to stderr.
set -euo pipefail
# shellcheck source=scripts/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

KROOT=$WEFT_CACHE/kernel

usage() {
	sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//' >&2
	exit "${1:-2}"
}

# The highest version-sorted name among apt's packages matching REGEX
# (group 1 is the part to return) that have an installable candidate.
# Arguments: REGEX
newest_pkg() {
	local re=$1 names best
	names=$(apt-cache search --names-only "$re" 2>/dev/null | awk '{print $1}')
	[ -n "$names" ] || return 1
	# shellcheck disable=SC2086 # one word per package name
	best=$(apt-cache policy $names 2>/dev/null | awk '
		/^[^ ].*:$/ {name = substr($0, 1, length($0) - 1)}
		/^  Candidate:/ && $2 != "(none)" {print name}' | sort -V | tail -n1)
	[ -n "$best" ] || return 1
	echo "$best"
}

# Which suite carries the candidate of PKG (for the log).
pkg_suite() {
	apt-cache policy "$1" 2>/dev/null |
		awk '/\*\*\*/ {getline; print $3; exit} / 500 / && $3 ~ /\// {print $3; exit}'
}

# The newest already-extracted release matching GLOB (offline fallback).
cached_release() {
	local d
	d=$(find "$KROOT" -mindepth 1 -maxdepth 1 -type d -name "$1" 2>/dev/null | sort -V | tail -n1)
	[ -n "$d" ] && [ -f "$d/.complete" ] && basename "$d"
}

# remember SERIES RELEASE: the rule's answer for this apt state, in
# $KROOT/.resolved-SERIES (apt-cache takes a second or more per call, and
# every weft-cluster up resolves the kernel twice).
remember() {
	local f=$KROOT/.resolved-$1
	mkdir -p "$KROOT"
	echo "$(weft_apt_state) $2" >"$f.$$" && mv "$f.$$" "$f"
}

# resolve SERIES -> kernel release (e.g. 6.12.117+deb12-amd64, 6.1.0-56-amd64)
resolve() {
	local series=$1 pkg rel state
	case $series in
	6.12) [ -z "${WEFT_KERNEL_612:-}" ] || { echo "$WEFT_KERNEL_612"; return; } ;;
	6.1)  [ -z "${WEFT_KERNEL_61:-}" ] || { echo "$WEFT_KERNEL_61"; return; } ;;
	esac
	if read -r state rel 2>/dev/null <"$KROOT/.resolved-$series" && [ -n "$rel" ] &&
		[ "$state" = "$(weft_apt_state)" ]; then
		echo "$rel"
		return
	fi
	case $series in
	6.12)
		pkg=$(newest_pkg '^linux-image-6\.12\.[0-9]+\+deb12-amd64-unsigned$') || {
			weft_apt_update_if_root
			pkg=$(newest_pkg '^linux-image-6\.12\.[0-9]+\+deb12-amd64-unsigned$')
		} || pkg=
		if [ -z "$pkg" ]; then
			rel=$(cached_release '6.12.*+deb12-amd64') ||
				weft_die "no linux-image-6.12.*+deb12-amd64-unsigned in apt (bookworm, bookworm-updates, bookworm-security) and none cached"
			echo "$rel"; return
		fi
		rel=${pkg#linux-image-}; rel=${rel%-unsigned}
		;;
	6.1)
		pkg=$(newest_pkg '^linux-headers-6\.1\.0-[0-9]+-amd64$') || {
			weft_apt_update_if_root
			pkg=$(newest_pkg '^linux-headers-6\.1\.0-[0-9]+-amd64$')
		} || pkg=
		if [ -z "$pkg" ]; then
			rel=$(cached_release '6.1.0-*-amd64') ||
				weft_die "no linux-headers-6.1.0-*-amd64 in apt and none cached"
			echo "$rel"; return
		fi
		rel=${pkg#linux-headers-}
		;;
	*) weft_die "unknown kernel series '$series' (6.12 or 6.1)" ;;
	esac
	remember "$series" "$rel"
	echo "$rel"
}

weft_apt_update_if_root() {
	[ "$(id -u)" = 0 ] && weft_apt_update
	return 0
}

# fetch SERIES RELEASE: download + extract into $KROOT/RELEASE (idempotent).
fetch() {
	local series=$1 rel=$2 dir=$KROOT/$2 tmp pkgs p kb flavour common
	[ -f "$dir/.complete" ] && return 0
	flavour=${rel##*-}              # amd64
	common=${rel%-"$flavour"}-common  # 6.12.117+deb12-common / 6.1.0-56-common
	case $series in
	6.12) kb=linux-kbuild-${rel%-"$flavour"}
	      pkgs=("linux-image-$rel-unsigned" "linux-headers-$rel" "linux-headers-$common" "$kb") ;;
	6.1)  kb=linux-kbuild-6.1
	      pkgs=("linux-headers-$rel" "linux-headers-$common" "$kb") ;;
	esac
	# One fetch of a release at a time: another run may be extracting it.
	mkdir -p "$KROOT"
	local lock
	exec {lock}>"$KROOT/.lock-$rel"
	flock "$lock"
	if [ -f "$dir/.complete" ]; then
		exec {lock}>&-
		return 0
	fi
	weft_log "fetching kernel $rel ($(pkg_suite "${pkgs[0]}")): ${pkgs[*]}"
	tmp=$(mktemp -d "$KROOT/.dl.XXXXXX")
	chmod 755 "$tmp"
	(cd "$tmp" && apt-get download -qq "${pkgs[@]}" >/dev/null 2>"$tmp/err") || {
		cat "$tmp/err" >&2
		weft_die "apt-get download ${pkgs[*]} failed"
	}
	mkdir -p "$tmp/root"
	for p in "$tmp"/*.deb; do
		dpkg -x "$p" "$tmp/root" || weft_die "dpkg -x $p failed"
	done
	# The headers' Makefile includes the -common tree by absolute path.
	local mk=$tmp/root/usr/src/linux-headers-$rel/Makefile
	[ -f "$mk" ] || weft_die "no Makefile in linux-headers-$rel"
	sed -i "s#/usr/src/linux-headers-$common#$dir/usr/src/linux-headers-$common#g" "$mk"
	grep -q "$dir/usr/src/linux-headers-$common" "$mk" ||
		weft_die "could not rewrite the include line of $mk"
	# Absolute symlinks inside the trees would point into the host: make
	# them point into the extraction.
	local l t
	while IFS= read -r -d '' l; do
		t=$(readlink "$l")
		case $t in /*) ln -sfn "$dir$t" "$l" ;; esac
	done < <(find "$tmp/root" -type l -print0)
	if [ "$series" = 6.12 ]; then
		[ -f "$tmp/root/boot/vmlinuz-$rel" ] || weft_die "no /boot/vmlinuz-$rel in linux-image-$rel-unsigned"
	fi
	rm -rf "$dir"
	mv "$tmp/root" "$dir"
	rm -rf "$tmp"
	printf '%s\n' "${pkgs[@]}" >"$dir/.complete"
	exec {lock}>&-
	weft_log "kernel $rel extracted into $dir"
}

headers_dir() { echo "$KROOT/$1/usr/src/linux-headers-$1"; }

main() {
	local what=all series=
	case ${1:-} in
	"") ;;
	--print-kernel) what=kernel; series=6.12 ;;
	--print-modules-dir) what=modules; series=6.12 ;;
	--print-headers|--print-version)
		what=${1#--print-}; series=${2:-}
		case $series in 6.12|6.1) ;; *) weft_die "$1 needs 6.12 or 6.1" ;; esac ;;
	-h|--help) usage 0 ;;
	*) usage ;;
	esac

	local rel612 rel61
	if [ "$what" = all ] || [ "$series" = 6.12 ]; then
		rel612=$(resolve 6.12)
		weft_log "kernel 6.12: $rel612"
		fetch 6.12 "$rel612"
	fi
	if [ "$what" = all ] || [ "$series" = 6.1 ]; then
		rel61=$(resolve 6.1)
		weft_log "kernel 6.1 (headers): $rel61"
		fetch 6.1 "$rel61"
	fi
	case $what in
	kernel)  echo "$KROOT/$rel612/boot/vmlinuz-$rel612" ;;
	modules) echo "$KROOT/$rel612/lib/modules/$rel612" ;;
	headers) if [ "$series" = 6.12 ]; then headers_dir "$rel612"; else headers_dir "$rel61"; fi ;;
	version) if [ "$series" = 6.12 ]; then echo "$rel612"; else echo "$rel61"; fi ;;
	all)
		weft_log "vmlinuz:      $KROOT/$rel612/boot/vmlinuz-$rel612"
		weft_log "modules dir:  $KROOT/$rel612/lib/modules/$rel612"
		weft_log "headers 6.12: $(headers_dir "$rel612")"
		weft_log "headers 6.1:  $(headers_dir "$rel61")"
		;;
	esac
}

main "$@"
