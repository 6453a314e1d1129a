#!/usr/bin/env bash
# Builds the Weft guest image: Debian 12's 6.12 kernel (scripts/fetch-kernel.sh)
# and an initramfs made from Debian's busybox-static, weft.ko (with the
# modules it depends on, and virtio_net for benchmarks), the libweft tools
# and the in-guest tests, ip (iproute2), ethtool, ping (iputils) and iperf3,
# Debian's RDMA user space (libibverbs1, ibverbs-utils, rdmacm-utils,
# perftest) with the shared libraries they need (from Debian's .debs), the
# Weft rdma-core provider (scripts/build-rdma-core.sh), soft-RoCE for
# side-by-side benchmarks (rdma_rxe and its modules, not loaded at boot,
# and Debian's librxe provider) and the init files of images/init/.  The result is cached under
#   $WEFT_CACHE/images/<hash of every input>/
# holding vmlinuz (a link to the kernel), vmlinux (a link to the same
# kernel uncompressed, which weft-cluster boots), initrd.img,
# kernel-release, manifest.txt (what went in) and debug/weft.ko and
# debug/weft_ib.ko (unstripped, for scripts/weft-gdb).  An unchanged input set
# is not rebuilt.
#
# Usage: build-image.sh [--without-driver] [--print-dir | --print-version]
#   --without-driver  leave weft.ko out (boot-only image for debugging)
#   --print-dir       print only the image folder (the default output)
#   --print-version   print only the kernel release used
# The kernel release used is always logged on stderr.  The tools and the
# guest tests go in when the scripts that build them exist
# (guest-lib/build-static.sh or scripts/build-guest-tools.sh, and
# scripts/build-guest-tests.sh); the driver is required unless
# --without-driver.  WEFT_IMAGE_TOOLS=DIR takes the static tools from DIR.
set -euo pipefail
# shellcheck source=scripts/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

usage() {
	sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//' >&2
	exit "${1:-2}"
}

with_driver=1 print=dir
while [ $# -gt 0 ]; do
	case $1 in
	--without-driver) with_driver=0 ;;
	--print-dir) print=dir ;;
	--print-version) print=version ;;
	-h|--help) usage 0 ;;
	*) weft_log "unknown option '$1'"; usage ;;
	esac
	shift
done

S=$WEFT_ROOT/scripts
INIT=$WEFT_ROOT/images/init
mkdir -p "$WEFT_CACHE/images"

# ---- inputs ----------------------------------------------------------------
# Network tools: the programs taken from these packages, and the packages
# that hold the shared libraries they need (docs/net.md).
NET_PROGS="sbin/ip usr/bin/iperf3 sbin/ethtool bin/ping usr/bin/rdma"
NET_PKGS="iproute2 iperf3 ethtool iputils-ping libiperf0 libssl3 libsctp1 libc6 libbpf1 libelf1
	libmnl0 libbsd0 libcap2 zlib1g libmd0 libidn2-0 libunistring2"
# RDMA user space from Debian bookworm, which the provider is checked
# against (docs/rdma-provider.md): its programs, and the packages of the
# libraries they need (perftest links mlx5's and efa's direct-verbs
# libraries from ibverbs-providers; their provider plugins stay out).
RDMA_PROGS="usr/bin/ibv_devices usr/bin/ibv_devinfo usr/bin/ibv_rc_pingpong
	usr/bin/ibv_ud_pingpong usr/bin/ibv_srq_pingpong usr/bin/rping usr/bin/ucmatose
	usr/bin/ib_write_bw usr/bin/ib_read_bw usr/bin/ib_send_bw usr/bin/ib_atomic_bw
	usr/bin/ib_write_lat usr/bin/ib_read_lat usr/bin/ib_send_lat usr/bin/ib_atomic_lat"
RDMA_PKGS="libibverbs1 ibverbs-utils rdmacm-utils perftest librdmacm1 libibumad3 libnl-3-200
	libnl-route-3-200 libpci3 libudev1 ibverbs-providers libgcc-s1"
# Libraries loaded with dlopen, so in no NEEDED entry: glibc's
# pthread_exit and pthread_cancel unwind through libgcc_s (rping's
# threads end with pthread_exit).
DLOPEN_LIBS="libgcc_s.so.1"
DEB_PROGS="$NET_PROGS $RDMA_PROGS"
DEB_PKGS="$NET_PKGS $RDMA_PKGS"

weft_log "image: resolving inputs"
kernel=$("$S/fetch-kernel.sh" --print-kernel) || weft_die "scripts/fetch-kernel.sh --print-kernel failed"
[ -f "$kernel" ] || weft_die "kernel $kernel is missing"
# fetch-kernel.sh extracts the image package into $WEFT_CACHE/kernel/<release>/.
release=${kernel##*/vmlinuz-}
moddir=$(dirname "$(dirname "$kernel")")/lib/modules/$release
[ -d "$moddir/kernel" ] || weft_die "$moddir/kernel is missing"
weft_log "image: kernel $release"

# The uncompressed kernel for a PVH boot (QEMU -kernel with an ELF that
# has Xen's PHYS32_ENTRY note): under TCG the bzImage's own zstd
# decompression costs each VM about 1 s of host CPU (docs/performance.md,
# "Cluster start").  Extracted once per kernel, next to the bzImage, from
# the payload that the boot protocol header locates (setup_sects at 0x1f1,
# payload_offset and payload_length at 0x248); compressors other than
# gzip append the uncompressed size, 4 bytes, which the tools refuse.
payload() { dd if="$1" iflag=skip_bytes,count_bytes skip="$2" count="$3" bs=1M status=none; }
pvh_kernel() { # BZIMAGE OUT
	local bz=$1 out=$2 tmp setup off len magic unpack
	[ -f "$out" ] && return 0
	setup=$(od -An -tu1 -j 497 -N1 "$bz" | tr -d ' ')
	[ "$setup" != 0 ] || setup=4
	read -r off len < <(od -An -tu4 -j 584 -N8 "$bz")
	off=$(((setup + 1) * 512 + off))
	magic=$(od -An -tx1 -j "$off" -N4 "$bz" | tr -d ' ')
	case $magic in
	28b52ffd) unpack=(zstd -qdc --memory=2048MB); len=$((len - 4)) ;;
	fd377a58) unpack=(xz -dc); len=$((len - 4)) ;;
	1f8b*)    unpack=(gzip -dc) ;;
	*) weft_die "$bz: unknown payload compression (magic $magic)" ;;
	esac
	tmp=$(mktemp "$out.XXXXXX")
	payload "$bz" "$off" "$len" | "${unpack[@]}" >"$tmp" ||
		{ rm -f "$tmp"; weft_die "cannot decompress the payload of $bz"; }
	readelf -n "$tmp" 2>/dev/null | grep -q 'Xen .*(0x00000012)' ||
		{ rm -f "$tmp"; weft_die "$bz has no PVH entry (XEN_ELFNOTE_PHYS32_ENTRY): QEMU cannot boot it uncompressed"; }
	chmod 644 "$tmp"
	mv "$tmp" "$out"
}
vmlinux=$(dirname "$kernel")/vmlinux-$release
pvh_kernel "$kernel" "$vmlinux"
# shellcheck disable=SC2086 # a list of package names
weft_load_candidates busybox-static $DEB_PKGS
bbdeb=$(weft_deb_file busybox-static)
debs=()
for p in $DEB_PKGS; do debs+=("$(weft_deb_file "$p")") || exit 1; done

# Scratch area for the parts built by other scripts.
work=$(mktemp -d "$WEFT_CACHE/images/.work.XXXXXX")
trap 'rm -rf "$work"' EXIT

ko=
if [ "$with_driver" = 1 ]; then
	[ -x "$S/build-driver.sh" ] ||
		weft_die "scripts/build-driver.sh is missing: weft.ko cannot be built (use --without-driver for a boot-only image)"
	weft_log "image: building weft.ko (scripts/build-driver.sh)"
	"$S/build-driver.sh" --no-6.1 >"$work/driver.out" 2>"$work/driver.err" ||
		{ tail -30 "$work/driver.err" >&2; weft_die "scripts/build-driver.sh failed"; }
	ko=$(grep -E '\.ko$' "$work/driver.out" | tail -n1)
	{ [ -n "$ko" ] && [ -f "$ko" ]; } || weft_die "scripts/build-driver.sh printed no existing .ko path"
fi

# The rdma-core provider goes with the driver (docs/rdma-provider.md).
provider=
if [ "$with_driver" = 1 ]; then
	weft_log "image: building the rdma-core provider (scripts/build-rdma-core.sh)"
	provider=$("$S/build-rdma-core.sh" --print-dir 2>"$work/rdma.err") ||
		{ tail -30 "$work/rdma.err" >&2; weft_die "scripts/build-rdma-core.sh failed"; }
	[ -f "$provider/libweft-rdmav34.so" ] || weft_die "no libweft-rdmav34.so in $provider"
fi

# The static libweft tools: WEFT_IMAGE_TOOLS=DIR takes them from DIR (for
# iterating on a tool), otherwise the guest-lib build script makes them.
tools=$work/tools
mkdir -p "$tools"
tools_script=
for f in "$S/build-guest-tools.sh" "$WEFT_ROOT/guest-lib/build-static.sh"; do
	[ -x "$f" ] && { tools_script=$f; break; }
done
if [ -n "${WEFT_IMAGE_TOOLS:-}" ]; then
	[ -d "$WEFT_IMAGE_TOOLS" ] || weft_die "WEFT_IMAGE_TOOLS=$WEFT_IMAGE_TOOLS is not a folder"
	weft_log "image: libweft tools from $WEFT_IMAGE_TOOLS (WEFT_IMAGE_TOOLS)"
	tools=$WEFT_IMAGE_TOOLS
elif [ -n "$tools_script" ]; then
	# Kept in $WEFT_CACHE/guest-tools/<hash of the sources, the script, the
	# compiler and the libc.a they link statically>/: the script rebuilds
	# every tool, seconds that each weft-cluster up would otherwise spend
	# before its VMs start.
	tkey=$( {
		weft_hash "$WEFT_ROOT/guest-lib" "$WEFT_ROOT/include" "$tools_script" \
			"$("${CC:-cc}" -print-file-name=libc.a)"
		"${CC:-cc}" --version 2>&1 | head -n1
		echo "CFLAGS=${CFLAGS:-}"
	} | sha256sum | cut -c1-16)
	if [ -f "$WEFT_CACHE/guest-tools/$tkey/.complete" ]; then
		weft_log "image: static libweft tools cached ($WEFT_CACHE/guest-tools/$tkey)"
	else
		weft_log "image: building the static libweft tools (${tools_script#"$WEFT_ROOT"/})"
		"$tools_script" "$tools" >"$work/tools.log" 2>&1 ||
			{ tail -30 "$work/tools.log" >&2; weft_die "${tools_script#"$WEFT_ROOT"/} failed"; }
		touch "$tools/.complete"
		mkdir -p "$WEFT_CACHE/guest-tools"
		# A concurrent build of the same sources may have won: keep its copy.
		mv -T "$tools" "$WEFT_CACHE/guest-tools/$tkey" 2>/dev/null || true
		# Keep the eight newest.
		find "$WEFT_CACHE/guest-tools" -mindepth 1 -maxdepth 1 -type d -printf '%T@ %p\n' |
			sort -rn | tail -n +9 | cut -d' ' -f2- | while read -r old; do rm -rf "$old"; done
	fi
	tools=$WEFT_CACHE/guest-tools/$tkey
	[ -f "$tools/.complete" ] || weft_die "no libweft tools in $tools"
else
	weft_log "image: no guest-lib/build-static.sh or scripts/build-guest-tools.sh yet: no libweft tools in the image"
fi

# A persistent folder: build-guest-tests.sh rebuilds only what changed.
gtests=$WEFT_CACHE/guest-tests
mkdir -p "$gtests"
if [ -x "$S/build-guest-tests.sh" ]; then
	weft_log "image: building the in-guest tests (scripts/build-guest-tests.sh)"
	"$S/build-guest-tests.sh" "$gtests" >"$work/gtests.log" 2>&1 ||
		{ tail -30 "$work/gtests.log" >&2; weft_die "scripts/build-guest-tests.sh failed"; }
else
	gtests=$work/guest-tests
	mkdir -p "$gtests"
	weft_log "image: scripts/build-guest-tests.sh not available: no guest tests in the image"
fi

# Modules weft.ko needs, dependencies first.  Debian's image package has
# no modules.dep (depmod runs at install), so each module's "depends="
# modinfo field is read and the module found by name in the modules folder.
# Prints paths relative to the modules folder.
modinfo_depends() { # FILE (.ko, .ko.xz, .ko.zst or .ko.gz)
	case $1 in
	*.xz)  xz -dc "$1" ;;
	*.zst) zstd -qdc "$1" ;;
	*.gz)  gzip -dc "$1" ;;
	*)     cat "$1" ;;
	esac | tr '\0' '\n' | sed -n 's/^depends=//p' | tr ',' ' '
}
# Every module of the kernel package by name, dashes as underscores (one
# find, not one per module: they took a second at each up).
declare -A MODPATH=()
while read -r d; do
	n=${d##*/}
	n=${n%%.ko*}
	MODPATH[${n//-/_}]=$d
done < <(find "$moddir/kernel" -name '*.ko*' | LC_ALL=C sort -r)
module_deps() { # KO [MODULE...]: what KO needs, then the MODULEs with theirs
	local seen=" " out=() n
	add() { # add NAME: its dependencies, then itself
		local name=${1//-/_} path d
		case $seen in *" $name "*) return ;; esac
		[ "$name" != weft ] || return 0	# weft_ib.ko's own weft.ko
		seen="$seen$name "
		path=${MODPATH[$name]:-}
		[ -n "$path" ] || weft_die "weft.ko needs module $name, which is not in $moddir"
		for d in $(modinfo_depends "$path"); do add "$d"; done
		out+=("${path#"$moddir"/}")
	}
	for n in $(modinfo_depends "$1") "${@:2}"; do add "$n"; done
	[ ${#out[@]} -eq 0 ] || printf '%s\n' "${out[@]}"
}

deps=
[ -z "$ko" ] || deps=$(module_deps "$ko")

# virtio_net for the cluster's second NIC (weft-cluster --vnet) and the
# benchmarks: into /lib/weft/vnet/ with its own modules.list, loaded at
# boot only when the VM has a virtio network device (images/init/rc).
vdeps=
if [ -n "$ko" ]; then
	vdeps=$(module_deps "$ko" virtio_net) || exit 1
	vdeps=$(grep -vxF -f <(printf '%s\n' "$deps") <<<"$vdeps" || true)
fi

# The RDMA stack (docs/verbs-linux.md): weft_ib.ko, built next to weft.ko,
# with ib_core and the in-kernel RDMA users the cluster tests load, into
# /lib/weft/rdma/ with their own modules.list (not loaded at boot).
ibko= rdeps=
RDMA_MODULES="ib_uverbs ib_umad rdma_ucm ib_cm rdma_cm nvme_fabrics nvme_rdma nvmet nvmet_rdma null_blk configfs"
if [ -n "$ko" ]; then
	ibko=${ko%/*}/weft_ib.ko
	[ -f "$ibko" ] || weft_die "scripts/build-driver.sh built no weft_ib.ko next to $ko"
	rdeps=$(module_deps "$ibko" $RDMA_MODULES) || exit 1
	rdeps=$(grep -vxF -f <(printf '%s\n' "$deps" "$vdeps") <<<"$rdeps" || true)
fi

# Soft-RoCE (rdma_rxe) for side-by-side runs (scripts/weft-rxe-bench):
# into /lib/weft/rxe/ with its own modules.list, less what /lib/weft and
# /lib/weft/rdma already hold; loaded by weft-rxe-up after weft-rdma-up.
# rdma_rxe asks the crypto API for "crc32" without a module dependency:
# crc32_generic provides it (the TCG CPU has no PCLMULQDQ).
xdeps=
if [ -n "$ko" ]; then
	xdeps=$(module_deps "$ibko" rdma_rxe crc32_generic) || exit 1
	xdeps=$(grep -vxF -f <(printf '%s\n' "$deps" "$vdeps" "$rdeps") <<<"$xdeps" || true)
fi

# ---- cache key ---------------------------------------------------------------
dep_files=()
while read -r d; do [ -n "$d" ] && dep_files+=("$moddir/$d"); done <<<"$deps
$vdeps
$rdeps
$xdeps"
# Contents of a folder by relative name (the tools' folder is temporary).
dir_hash() { (cd "$1" && find . -type f -print0 | LC_ALL=C sort -z | xargs -0r sha256sum) | sha256sum; }
key=$( {
	echo "release $release with_driver $with_driver"
	weft_hash "$INIT" "${BASH_SOURCE[0]}" "$bbdeb" "${debs[@]}" "$kernel" ${ko:+"$ko"} \
		${ibko:+"$ibko"} ${provider:+"$provider/libweft-rdmav34.so" "$provider/weft.driver"} \
		${dep_files[@]+"${dep_files[@]}"}
	dir_hash "$tools"
	dir_hash "$gtests"
} | sha256sum | cut -c1-16)
imgdir=$WEFT_CACHE/images/$key

# The network and RDMA programs and the rdma-core provider (from PROVIDER,
# the output of scripts/build-rdma-core.sh, if given) and, found through
# their NEEDED entries, the shared libraries they use (and the dynamic
# loader), from the extracted .debs.
install_deb_tools() { # ROOT MANIFEST [PROVIDER]
	local root=$1 x=$work/debs lib todo=() seen=" " f n p
	# A link in the extracted tree, followed inside it (not into the host).
	inside() {
		local f=$1 t i
		for i in 1 2 3 4 5 6 7 8; do
			[ -L "$f" ] || break
			t=$(readlink "$f")
			case $t in /*) f=$x$t ;; *) f=$(dirname "$f")/$t ;; esac
		done
		echo "$f"
	}
	mkdir -p "$x" "$root/lib/x86_64-linux-gnu" "$root/lib64"
	for f in "${debs[@]}"; do dpkg -x "$f" "$x"; echo "deb $(basename "$f")" >>"$2"; done
	for p in $DEB_PROGS; do
		f=$(inside "$x/$p")
		[ -f "$f" ] || weft_die "no $p in the .debs"
		rm -f "$root/$p"
		install -D -m 755 "$f" "$root/$p"
		todo+=("$f")
	done
	if [ -n "${3:-}" ]; then
		f=$root/usr/lib/x86_64-linux-gnu/libibverbs/libweft-rdmav34.so
		install -D -m 644 "$3/libweft-rdmav34.so" "$f"
		install -D -m 644 "$3/weft.driver" "$root/etc/libibverbs.d/weft.driver"
		echo "provider libweft-rdmav34.so $(sha256sum "$f" | cut -c1-16)" >>"$2"
		todo+=("$f")
		# Soft-RoCE's provider, from ibverbs-providers, for weft-rxe-up.
		f=$root/usr/lib/x86_64-linux-gnu/libibverbs/librxe-rdmav34.so
		install -D -m 644 "$(inside "$x/usr/lib/x86_64-linux-gnu/libibverbs/librxe-rdmav34.so")" "$f" ||
			weft_die "no librxe-rdmav34.so in ibverbs-providers"
		install -D -m 644 "$x/etc/libibverbs.d/rxe.driver" "$root/etc/libibverbs.d/rxe.driver" ||
			weft_die "no rxe.driver in ibverbs-providers"
		echo "provider librxe-rdmav34.so (ibverbs-providers)" >>"$2"
		todo+=("$f")
	fi
	# take_lib NAME WHO: the library NAME into the image, once.
	take_lib() {
		case $seen in *" $1 "*) return 0 ;; esac
		seen="$seen$1 "
		lib=$(find "$x/lib/x86_64-linux-gnu" "$x/usr/lib/x86_64-linux-gnu" -maxdepth 1 -name "$1" 2>/dev/null | head -n1)
		[ -n "$lib" ] || weft_die "library $1 (needed by $2) is in none of: $DEB_PKGS"
		lib=$(inside "$lib")
		[ -f "$lib" ] || weft_die "library $1: broken link in the .debs"
		cp "$lib" "$root/lib/x86_64-linux-gnu/$1"
		todo+=("$lib")
	}
	for n in $DLOPEN_LIBS; do take_lib "$n" dlopen; done
	while [ ${#todo[@]} -gt 0 ]; do
		f=${todo[0]}
		todo=("${todo[@]:1}")
		for n in $(readelf -d "$f" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p'); do
			take_lib "$n" "${f#"$x"/}"
		done
	done
	cp "$(inside "$x/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2")" "$root/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2"
	ln -sf /lib/x86_64-linux-gnu/ld-linux-x86-64.so.2 "$root/lib64/ld-linux-x86-64.so.2"
}

if [ -f "$imgdir/.complete" ]; then
	weft_log "image: cached $imgdir (kernel $release)"
else
	weft_log "image: building initramfs $key"
	root=$work/root
	mkdir -p "$root"/{bin,sbin,usr/bin,usr/sbin,etc/weft,lib/weft,proc,sys,dev,run,tmp,root,usr/lib/weft/tests}
	dpkg -x "$bbdeb" "$work/bb"
	cp "$work/bb/bin/busybox" "$root/bin/busybox"
	bb=$root/bin/busybox
	# One link per applet, where busybox would install it.
	"$bb" --list-full | while read -r a; do
		[ -e "$root/$a" ] || ln -s /bin/busybox "$root/$a"
	done
	ln -sf bin/busybox "$root/init"
	install -m 644 "$INIT/inittab" "$root/etc/inittab"
	install -m 755 "$INIT/rc" "$root/etc/weft/rc"
	install -m 755 "$INIT/weft-agent" "$root/usr/sbin/weft-agent"
	install -m 755 "$INIT/weft-rdma-up" "$root/usr/sbin/weft-rdma-up"
	install -m 755 "$INIT/weft-rxe-up" "$root/usr/sbin/weft-rxe-up"
	echo "root:x:0:0:root:/root:/bin/sh" >"$root/etc/passwd"
	echo "root:x:0:" >"$root/etc/group"
	if [ "$(id -u)" = 0 ]; then
		mknod -m 600 "$root/dev/console" c 5 1
		mknod -m 666 "$root/dev/null" c 1 3
	fi

	manifest=$work/manifest.txt
	{
		echo "kernel $release"
		echo "busybox $(basename "$bbdeb")"
	} >"$manifest"
	# Debug information stays on the host: the guest unpacks every byte of
	# the initramfs at each boot, slowly under TCG (docs/performance.md,
	# "Cluster start").  Our modules keep their symbols (kallsyms, stack
	# traces), executables lose theirs; the kernel package's modules are
	# left as they are (no debug information, and a signature that strip
	# would drop).
	# install_elf MODE FILE DEST: install FILE as DEST, stripped if ELF.
	install_elf() {
		install -m "$1" "$2" "$3"
		[ "$(head -c 4 "$3")" = $'\x7fELF' ] || return 0
		case $3 in
		*.ko) strip --strip-debug "$3" ;;
		*)    strip "$3" ;;
		esac || weft_die "strip $3 failed"
	}
	# install_modules DIR LIST: decompressed, listed in DIR/modules.list.
	install_modules() {
		local dir=$1 d local_name
		mkdir -p "$dir"
		: >"$dir/modules.list"
		while read -r d; do
			[ -n "$d" ] || continue
			local_name=$(basename "${d%%.ko*}").ko
			case $d in
			*.xz)  xz -dc "$moddir/$d" >"$dir/$local_name" ;;
			*.zst) zstd -qdc "$moddir/$d" >"$dir/$local_name" ;;
			*.gz)  gzip -dc "$moddir/$d" >"$dir/$local_name" ;;
			*)     cp "$moddir/$d" "$dir/$local_name" ;;
			esac
			echo "$local_name" >>"$dir/modules.list"
			echo "module $local_name" >>"$manifest"
		done <<<"$2"
	}
	if [ -n "$ko" ]; then
		install_modules "$root/lib/weft" "$deps"
		install_elf 644 "$ko" "$root/lib/weft/weft.ko"
		echo weft.ko >>"$root/lib/weft/modules.list"
		echo "driver weft.ko $(sha256sum "$ko" | cut -c1-16)" >>"$manifest"
		install_modules "$root/lib/weft/vnet" "$vdeps"
		install_modules "$root/lib/weft/rdma" "$rdeps"
		install_elf 644 "$ibko" "$root/lib/weft/rdma/weft_ib.ko"
		echo weft_ib.ko >>"$root/lib/weft/rdma/modules.list"
		echo "driver weft_ib.ko $(sha256sum "$ibko" | cut -c1-16)" >>"$manifest"
		install_modules "$root/lib/weft/rxe" "$xdeps"
	else
		echo "driver none" >>"$manifest"
	fi
	for f in "$tools"/*; do
		[ -f "$f" ] || continue
		install_elf 755 "$f" "$root/usr/bin/${f##*/}"
		echo "tool $(basename "$f")" >>"$manifest"
	done
	for f in "$gtests"/*; do
		[ -f "$f" ] || continue
		install_elf 755 "$f" "$root/usr/lib/weft/tests/${f##*/}"
		echo "test $(basename "$f")" >>"$manifest"
	done
	install_deb_tools "$root" "$manifest" "$provider"
	cp "$manifest" "$root/etc/weft/manifest.txt"

	mkdir -p "$work/out"
	# The modules as built, debug information included, stay next to the
	# image for gdb on a guest (scripts/weft-gdb loads them at the
	# addresses where the guest put them).
	if [ -n "$ko" ]; then
		mkdir -p "$work/out/debug"
		install -m 644 "$ko" "$ibko" "$work/out/debug/"
	fi
	(cd "$root" && find . -mindepth 1 | LC_ALL=C sort | "$bb" cpio -o -H newc 2>/dev/null) \
		>"$work/out/initrd.img" || weft_die "cpio of the initramfs failed"
	ln -s "$kernel" "$work/out/vmlinuz"
	ln -s "$vmlinux" "$work/out/vmlinux"
	echo "$release" >"$work/out/kernel-release"
	cp "$manifest" "$work/out/manifest.txt"
	rm -rf "$imgdir"
	mv "$work/out" "$imgdir"
	touch "$imgdir/.complete"
	weft_log "image: $imgdir ($(du -k "$imgdir/initrd.img" | cut -f1) KiB initramfs, kernel $release)"
	# Keep the eight newest images.
	find "$WEFT_CACHE/images" -mindepth 1 -maxdepth 1 -type d ! -name '.work.*' -printf '%T@ %p\n' |
		sort -rn | tail -n +9 | cut -d' ' -f2- | while read -r old; do rm -rf "$old"; done
fi

case $print in
dir) echo "$imgdir" ;;
version) echo "$release" ;;
esac
