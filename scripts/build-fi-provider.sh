#!/usr/bin/env bash
# Builds Weft's libfabric provider (fi-provider/, docs/libfabric.md),
# libweft-fi.so, against the public headers of the guest's libfabric
# (Debian bookworm's libfabric-dev 1.17, extracted from its .deb) and this
# machine's rdma-core dev packages (the guest's libibverbs1/librdmacm1
# version; weft/ib-abi.h and weft/cnt.h for the adapter's event counters),
# and weft-fi-check and weft-fi-wire (fi-provider/check/).  The staged tree
# holds the library in Debian libfabric1's
# provider folder and a link to it in the provider folder of the staged
# libfabric 2.1 (/opt/libfabric, scripts/build-fabtests.sh), so both load it.
#
# Usage: build-fi-provider.sh [--print-dir]
#   prints the staged folder ($WEFT_CACHE/fi-provider/out-<key>) last
set -euo pipefail
# shellcheck source=scripts/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

case ${1:-} in
''|--print-dir) ;;
*) sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//' >&2; exit 2 ;;
esac

SRC=$WEFT_ROOT/fi-provider
CFLAGS="-std=gnu11 -O2 -g0 -fPIC -Wall -Wextra -Werror -fvisibility=hidden"
weft_load_candidates libfabric-dev
dev=$(weft_deb_file libfabric-dev)
for h in infiniband/verbs.h infiniband/tm_types.h rdma/rdma_cma.h; do
	[ -f "/usr/include/$h" ] || weft_die "$h is missing: install libibverbs-dev and librdmacm-dev"
done

TOP=$WEFT_CACHE/fi-provider
key=$( {
	echo "$CFLAGS"
	gcc --version | head -1
	dpkg-query -W libibverbs-dev librdmacm-dev
	weft_hash "$dev" "$SRC" "$WEFT_ROOT/include/weft" "${BASH_SOURCE[0]}"
} | sha256sum | cut -c1-16)
out=$TOP/out-$key
if [ ! -f "$out/.complete" ]; then
	mkdir -p "$TOP"
	work=$(mktemp -d "$TOP/.work.XXXXXX")
	trap 'rm -rf "$work"' EXIT
	dpkg -x "$dev" "$work/dev"
	inc=$work/dev/usr/include
	[ -f "$inc/rdma/providers/fi_prov.h" ] || weft_die "libfabric-dev has no rdma/providers/fi_prov.h"
	so=$work/root/usr/lib/x86_64-linux-gnu/libfabric/libweft-fi.so
	mkdir -p "$(dirname "$so")" "$work/root/opt/libfabric/lib/libfabric"
	weft_log "fi-provider: building $key"
	# libfabric's symbols come from the library that loads the provider.
	# shellcheck disable=SC2086
	gcc $CFLAGS -shared -I"$inc" -I"$WEFT_ROOT/include" -o "$so" "$SRC"/*.c -Wl,-z,defs -Wl,--unresolved-symbols=ignore-in-object-files \
		-libverbs -lrdmacm -lpthread
	# The argument checker (fi-provider/check/), against the guest's
	# libfabric1 (this machine's libfabric1 is the same 1.17 package).
	mkdir -p "$work/root/usr/bin"
	# shellcheck disable=SC2086
	gcc $CFLAGS -I"$inc" -o "$work/root/usr/bin/weft-fi-check" "$SRC/check/weft-fi-check.c" \
		/usr/lib/x86_64-linux-gnu/libfabric.so.1
	# The hostile peer (fi-provider/check/weft-fi-wire.c): raw rdma_cm and
	# verbs against the provider's endpoint.
	# shellcheck disable=SC2086
	gcc $CFLAGS -I"$inc" -o "$work/root/usr/bin/weft-fi-wire" "$SRC/check/weft-fi-wire.c" \
		/usr/lib/x86_64-linux-gnu/libfabric.so.1 -lrdmacm -libverbs
	ln -s ../../../../usr/lib/x86_64-linux-gnu/libfabric/libweft-fi.so \
		"$work/root/opt/libfabric/lib/libfabric/libweft-fi.so"
	nm -D --defined-only "$so" | grep -qw fi_prov_ini || weft_die "libweft-fi.so exports no fi_prov_ini"
	rm -rf "${work:?}/dev" "$out"
	mv "$work" "$out"
	touch "$out/.complete"
	trap - EXIT
	# Keep the two newest trees.
	find "$TOP" -maxdepth 1 -name 'out-*' -printf '%T@ %p\n' | sort -rn | tail -n +3 | cut -d' ' -f2- |
		xargs -r rm -rf
fi
echo "$out/root"
