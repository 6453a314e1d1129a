# shellcheck shell=bash
# Common helpers for Weft's set-up, build and test scripts.  Source it.
#
# WEFT_CACHE  cache folder for slow, input-keyed artefacts
#             (default: ${XDG_CACHE_HOME:-$HOME/.cache}/weft)

WEFT_ROOT=${WEFT_ROOT:-$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)}
WEFT_CACHE=${WEFT_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/weft}
export WEFT_ROOT WEFT_CACHE

weft_log()  { printf '[weft %(%H:%M:%S)T] %s\n' -1 "$*" >&2; }
weft_die()  { printf 'weft: error: %s\n' "$*" >&2; exit 1; }

weft_need_root() {
	[ "$(id -u)" = 0 ] || weft_die "$1 needs root (it installs Debian packages); run it as root"
}

# The Debian archive URI of this machine, read from its own apt sources
# (deb822 .sources files first, then one-line sources.list entries).
# No mirror host is written anywhere in the project.
weft_debian_uri() {
	local f uri
	for f in /etc/apt/sources.list.d/*.sources; do
		[ -f "$f" ] || continue
		uri=$(awk '/^URIs:/ {print $2; exit}' "$f" | grep -v -- '-security' || true)
		if [ -n "$uri" ] && ! grep -q 'debian-security' <<<"$uri"; then
			echo "$uri"; return 0
		fi
	done
	for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
		[ -f "$f" ] || continue
		uri=$(awk '$1 == "deb" && $0 !~ /security/ {for (i = 2; i <= NF; i++) if ($i ~ /^[a-z]+:\/\//) {print $i; exit}}' "$f")
		if [ -n "$uri" ]; then echo "$uri"; return 0; fi
	done
	return 1
}

# weft_apt_source NAME TYPES SUITES [COMPONENTS]
# Adds /etc/apt/sources.list.d/weft-NAME.sources built from this
# machine's own archive URI; runs apt-get update when it is new.
WEFT_APT_UPDATED=${WEFT_APT_UPDATED:-0}
weft_apt_source() {
	local name=$1 types=$2 suites=$3 comps=${4:-main} uri file
	file=/etc/apt/sources.list.d/weft-$name.sources
	uri=$(weft_debian_uri) || weft_die "cannot find a Debian archive URI in /etc/apt/sources.list*"
	local want
	want=$(printf 'Types: %s\nURIs: %s\nSuites: %s\nComponents: %s\nSigned-By: /usr/share/keyrings/debian-archive-keyring.gpg\n' \
		"$types" "$uri" "$suites" "$comps")
	if [ ! -f "$file" ] || [ "$(cat "$file")" != "$want" ]; then
		weft_need_root "adding apt source $name"
		printf '%s\n' "$want" >"$file"
		# Never let trixie (or backports) win over bookworm by default.
		if [ "$name" != "${name#trixie}" ]; then
			printf 'Package: *\nPin: release n=trixie\nPin-Priority: 100\n' \
				>/etc/apt/preferences.d/weft-trixie
		fi
		WEFT_APT_UPDATED=0
	fi
}

# weft_apt_state: a hash of apt's view of the packages (names, sizes and
# times of its lists and configuration): what apt-cache answers changes
# only with it.
weft_apt_state() {
	stat -c '%n %s %Y' /var/lib/apt/lists/* /etc/apt/sources.list /etc/apt/sources.list.d/* \
		/etc/apt/preferences /etc/apt/preferences.d/* 2>/dev/null | sha256sum | cut -c1-16
}

weft_apt_update() {
	if [ "$WEFT_APT_UPDATED" != 1 ]; then
		weft_log "apt-get update"
		apt-get update -qq >/dev/null || weft_die "apt-get update failed"
		WEFT_APT_UPDATED=1
	fi
}

# weft_apt_install PKG... : installs the packages that are missing.
weft_apt_install() {
	local missing=() p
	for p in "$@"; do
		dpkg-query -W -f='${Status}' "${p%%/*}" 2>/dev/null | grep -q 'install ok installed' ||
			missing+=("$p")
	done
	[ ${#missing[@]} -eq 0 ] && return 0
	weft_need_root "installing ${missing[*]}"
	weft_apt_update
	weft_log "apt-get install ${missing[*]}"
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null ||
		weft_die "apt-get install ${missing[*]} failed"
}

# weft_ensure_meson: meson >= 1.5 (QEMU 10 needs it; bookworm has 1.0, so it
# comes from bookworm-backports).  Every script uses this one meson, so no
# build folder is made by one meson version and read by another.
weft_meson_ok() {
	local v
	v=$(dpkg-query -W -f='${Version}' meson 2>/dev/null) || return 1
	dpkg-query -W -f='${Status}' meson 2>/dev/null | grep -q 'install ok installed' || return 1
	dpkg --compare-versions "$v" ge 1.5
}
weft_ensure_meson() {
	weft_meson_ok && return 0
	weft_apt_source bookworm-backports deb bookworm-backports
	weft_need_root "installing meson >= 1.5"
	weft_apt_update
	weft_log "apt-get install -t bookworm-backports meson ninja-build"
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
		-t bookworm-backports meson ninja-build >/dev/null ||
		weft_die "installing meson from bookworm-backports failed"
}

# weft_meson_setup BUILD LOG: configures BUILD for this tree.  A folder made
# by another meson version is reconfigured from scratch (meson refuses to
# read it).  Setup output goes to LOG, which must lie outside BUILD.
weft_meson_setup() {
	local build=$1 log=$2 have want
	want=$(meson --version) || weft_die "meson is not installed"
	if [ -f "$build/build.ninja" ]; then
		have=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["meson_version"]["full"])' \
			"$build/meson-info/meson-info.json" 2>/dev/null) || have=
		[ "$have" = "$want" ] && return 0
		weft_log "meson $want: setting up $build again (it was made by meson ${have:-unknown})"
		meson setup --wipe "$build" "$WEFT_ROOT" >"$log" 2>&1 && return 0
		tail -30 "$log" >&2
		weft_die "meson setup --wipe $build failed"
	fi
	meson setup "$build" "$WEFT_ROOT" >"$log" 2>&1 ||
		{ tail -30 "$log" >&2; weft_die "meson setup $build failed"; }
}

# weft_hash FILE|DIR... : a short hash of the contents (sorted, stable).
weft_hash() {
	local p
	for p in "$@"; do
		if [ -d "$p" ]; then
			find "$p" -type f ! -name '*.o' -print0 | LC_ALL=C sort -z | xargs -0 sha256sum
		elif [ -e "$p" ]; then
			sha256sum "$p"
		else
			echo "missing $p"
		fi
	done | sed "s#$WEFT_ROOT/##" | sha256sum | cut -c1-16
}

# weft_stat_hash PATH... : a short hash of the names, sizes, modification
# times and inodes of the files under the PATHs (a missing PATH counted as
# such): cheap to take, and it changes with any file written, added or
# removed, where weft_hash reads every byte.
weft_stat_hash() {
	local p
	for p in "$@"; do
		if [ -e "$p" ]; then
			find "$p" -type f -printf '%p %s %T@ %i %m\n'
		else
			echo "missing $p"
		fi
	done | LC_ALL=C sort | sha256sum | cut -c1-16
}

# Debian packages as .debs in $WEFT_CACHE/debs (build-image.sh, build-layer.sh).
WEFT_DEBS=$WEFT_CACHE/debs
declare -A CAND=()
# Candidate versions of packages, one apt-cache call for all of them,
# kept in $WEFT_DEBS/.candidates-<hash of apt's state and the names> (the call
# took 0.5-2 s of every weft-cluster up); a day-old list goes.
weft_load_candidates() { # PACKAGE...
	local p v f
	mkdir -p "$WEFT_DEBS"
	f=$WEFT_DEBS/.candidates-$( { weft_apt_state; echo "$@"; } | sha256sum | cut -c1-16)
	if [ ! -f "$f" ]; then
		find "$WEFT_DEBS" -maxdepth 1 -name '.candidates-*' -mtime +1 -delete
		apt-cache policy "$@" 2>/dev/null |
			awk '/^[^ ].*:$/ {p = substr($0, 1, length($0) - 1)} /^  Candidate:/ {print p, $2}' \
			>"$f.$$"
		mv "$f.$$" "$f"
	fi
	while read -r p v; do CAND[$p]=$v; done <"$f"
}

# The candidate .deb of a package, downloaded once into $WEFT_CACHE/debs.
weft_deb_file() { # PACKAGE
	local pkg=$1 ver file
	ver=${CAND[$pkg]:-}
	if [ -z "$ver" ] || [ "$ver" = "(none)" ]; then
		[ "$(id -u)" = 0 ] && weft_apt_update
		weft_load_candidates "$pkg"
		ver=${CAND[$pkg]:-}
	fi
	{ [ -n "$ver" ] && [ "$ver" != "(none)" ]; } || weft_die "apt has no $pkg candidate"
	# amd64, or all for an architecture-independent package.
	deb() {
		local a
		for a in amd64 all; do
			file=$WEFT_DEBS/${pkg}_${ver//:/%3a}_$a.deb
			[ -f "$file" ] && return 0
		done
		return 1
	}
	if ! deb; then
		weft_log "downloading $pkg $ver"
		mkdir -p "$WEFT_DEBS"
		(cd "$WEFT_DEBS" && apt-get download -qq "$pkg=$ver" >/dev/null 2>"$WEFT_DEBS/.err") ||
			{ cat "$WEFT_DEBS/.err" >&2; weft_die "apt-get download $pkg=$ver failed"; }
		deb || weft_die "$pkg download did not produce $file"
	fi
	echo "$file"
}


# weft_build_args HELP_LINES ARG...: the options of a build script whose
# output folder is all it prints: --print-dir (the default anyway) and
# --help (lines 2..HELP_LINES of the script's header).
weft_build_args() {
	local last=$1 arg script=${BASH_SOURCE[1]}
	shift
	for arg in "$@"; do
		case "$arg" in
		--print-dir) ;;
		-h|--help)
			sed -n "2,${last}s/^# \\{0,1\\}//p" "$script"
			exit 0 ;;
		*) weft_die "$(basename "$script"): unknown argument $arg (try --help)" ;;
		esac
	done
}

# weft_lock FILE WHAT: holds an exclusive lock on FILE (fd 9) until the
# script ends, saying that it waits for another WHAT when it has to.
weft_lock() {
	exec 9>"$1"
	if ! flock -n 9; then
		weft_log "waiting for another $2 to finish"
		flock 9
	fi
}

# weft_src_version PKG: the newest version of source package PKG apt offers.
weft_src_version() {
	apt-cache showsrc "$1" | awk '/^Version:/ {print $2}' | sort -V | tail -n1
}

# weft_src_sums PKG VERSION: "sha256 file" for each file of that version.
weft_src_sums() {
	apt-cache showsrc "$1" | awk -v v="$2" '
		/^Package:/ {take = 0} /^Version:/ {take = ($2 == v)}
		/^Checksums-Sha256:/ {s = take; next} /^[^ ]/ {s = 0} s {print $1, $3}'
}

# weft_src_download PKG VERSION DIR: the files of source package PKG=VERSION
# into DIR.  The archive lacks the .dsc and the Debian tarball of some
# packages (404), so apt-get source fails after the orig tarballs arrived:
# those failures, and only those, are expected.  The caller checks sums.
weft_src_download() {
	local pkg=$1 ver=$2 dl=$3
	if ! (cd "$dl" && apt-get source --download-only -qq "$pkg=$ver" >"$dl/.log" 2>&1) &&
		grep '^E: ' "$dl/.log" |
		grep -vE "Failed to fetch .*/${pkg}_${ver}\\.(dsc|debian\\.tar\\.[a-z]+) +404|Failed to fetch some archives" |
		grep -q .; then
		cat "$dl/.log" >&2
		weft_die "apt-get source --download-only $pkg failed other than by a missing .dsc or Debian tarball"
	fi
}

# weft_cached_exit DIR WHAT PATH: when DIR, a cached build output, is
# complete (DIR/.complete), says so and ends the script printing PATH.
weft_cached_exit() {
	[ -f "$1/.complete" ] || return 0
	weft_log "$2 cached: $3"
	echo "$3"
	exit 0
}
