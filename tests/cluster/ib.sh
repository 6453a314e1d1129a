# shellcheck shell=bash
# RDMA core scenarios (docs/verbs-linux.md), sourced by tests/cluster/run.sh
# and run with its helpers (gx, bg, bgwait, fail, checked, say, no_oops).
# The image keeps weft_ib.ko and the kernel's RDMA modules in
# /lib/weft/rdma/ (modules.list: dependencies first); they are loaded here,
# not at boot.  Node N has 10.87.0.(N+1) on weft0 (weft-cluster defaults).
# Each scenario returns non-zero at the first check that does not hold.

IBDEV=weft_ib0
IBSYS=/sys/class/infiniband/$IBDEV

# ib_load CLUSTER NODE: weft_ib.ko and the RDMA modules loaded (the
# image's weft-rdma-up).
ib_load() {
	local c=$1 n=$2
	gx "$c" "$n" "weft-rdma-up && [ -e $IBSYS ]"
	[ "$RC" = 0 ] || fail "node$n: weft-rdma-up failed: $OUT"
}

# hexreg CLUSTER NODE NAME: an adapter register from weft.ko's debugfs (VAL).
hexreg() {
	gx "$1" "$2" "awk '\$1 == \"$3\" {print \$3}' /sys/kernel/debug/weft/weft0/regs"
	[ "$RC" = 0 ] && [[ $OUT =~ ^0x[0-9a-f]+$ ]] || fail "node$2: no register $3 in debugfs ($OUT)" || return 1
	VAL=$((OUT))
}

# ibattr CLUSTER NODE NAME: an attribute ib_core holds for weft_ib0 (VAL).
ibattr() {
	gx "$1" "$2" "awk '\$1 == \"$3\" {print \$2}' /sys/kernel/debug/weft_ib/$IBDEV/attrs"
	[ "$RC" = 0 ] && [ -n "$OUT" ] || fail "node$2: no attribute $3 in weft_ib's debugfs ($OUT)" || return 1
	VAL=$((OUT))
}

# link_state CLUSTER NODE: the port's state as `rdma link` prints it (VAL).
link_state() {
	gx "$1" "$2" "/usr/bin/rdma link show $IBDEV/1"
	VAL=$(sed -n 's/.* state \([A-Z_]*\) .*/\1/p' <<<"$OUT")
}

sc_ib_device() {
	local c=$1 n want v reg attr
	for n in 0 1; do ib_load "$c" "$n" || return 1; done
	checked "both nodes: weft_ib.ko bound to weft.ko's auxiliary device, $IBDEV registered"
	for n in 0 1; do
		gx "$c" "$n" "/usr/bin/rdma link show $IBDEV/1"
		grep -qE "^link $IBDEV/1 state ACTIVE physical_state LINK_UP netdev weft0" <<<"$OUT" ||
			fail "node$n: rdma link: $OUT" || return 1
	done
	checked "both nodes: rdma link shows $IBDEV/1 ACTIVE, LINK_UP, netdev weft0"
	for n in 0 1; do
		gx "$c" "$n" "cat $IBSYS/ports/1/link_layer $IBSYS/ports/1/pkeys/0 $IBSYS/node_guid"
		[ "$RC" = 0 ] && [ "$(sed -n 1p <<<"$OUT")" = Ethernet ] &&
			[ "$(sed -n 2p <<<"$OUT")" = 0xffff ] &&
			[ "$(sed -n 3p <<<"$OUT")" = "0057:46ff:fe00:000$n" ] ||
			fail "node$n: link_layer, pkey 0, node_guid: $OUT" || return 1
	done
	checked "both nodes: link layer Ethernet, pkey 0 = 0xffff, node_guid from the Weft MAC (0057:46ff:fe00:000N)"
	for n in 0 1; do
		want=$(printf '0000:0000:0000:0000:0000:ffff:0a57:%04x' $((n + 1)))
		gx "$c" "$n" "for g in $IBSYS/ports/1/gids/*; do i=\${g##*/}; echo \"\$i \$(cat \$g) \$(cat $IBSYS/ports/1/gid_attrs/types/\$i 2>/dev/null) \$(cat $IBSYS/ports/1/gid_attrs/ndevs/\$i 2>/dev/null)\"; done"
		grep -qE "^[0-9]+ $want RoCE v2 weft0$" <<<"$OUT" ||
			fail "node$n: no RoCE v2 GID $want on weft0 in the GID table: $(grep -v ' 0000:0000:0000:0000:0000:0000:0000:0000' <<<"$OUT" | tr '\n' ';')" ||
			return 1
	done
	checked "both nodes: the GID table holds the node's IPv4-mapped address (::ffff:10.87.0.N+1) as a RoCE v2 GID of weft0"
	for n in 0 1; do
		for v in "VERBS_NR_QP max_qp -2" "VERBS_NR_CQ max_cq 0" "VERBS_NR_PD max_pd 0" \
			"VERBS_NR_TPT max_mr -1" "VERBS_NR_TPT max_mw -1" "VERBS_NR_UAR uars 0" \
			"VERBS_NR_QP max_srq -1"; do
			set -- $v
			hexreg "$c" "$n" "$1" || return 1
			reg=$VAL
			ibattr "$c" "$n" "$2" || return 1
			attr=$VAL
			[ "$attr" = $((reg + $3)) ] ||
				fail "node$n: $2 = $attr, but the adapter's $1 is $reg" || return 1
		done
		ibattr "$c" "$n" max_qp_wr || return 1
		[ "$VAL" = 32768 ] || fail "node$n: max_qp_wr $VAL, the adapter's queues hold 32768" || return 1
	done
	checked "both nodes: device attributes = the adapter's registers (max_qp = VERBS_NR_QP - 2, max_srq = VERBS_NR_QP - 1, max_cq, max_pd, max_mr/max_mw = VERBS_NR_TPT - 1, UARs), max_qp_wr 32768"
	gx "$c" 1 "/sbin/ip link set weft0 down"
	link_state "$c" 1
	[ "$VAL" = DOWN ] || fail "node1: weft0 down, but rdma link says: $OUT" || return 1
	gx "$c" 1 "/sbin/ip link set weft0 up; /sbin/ip addr replace 10.87.0.2/16 dev weft0"
	for v in $(seq 40); do
		link_state "$c" 1
		[ "$VAL" = ACTIVE ] && break
		sleep 0.5
	done
	[ "$VAL" = ACTIVE ] || fail "node1: weft0 up again, but rdma link says: $OUT" || return 1
	checked "node1: the port follows weft0 (DOWN when the link is set down, ACTIVE again after up)"
	for n in 0 1; do no_oops "$c" "$n" || return 1; done
}

# ---- NVMe over Fabrics, RDMA transport (docs/verbs-linux.md) ----------------------
NQN=nqn.2026-11.weft:nvme-rdma-test
NVCFG=/sys/kernel/config/nvmet

sc_nvme_rdma() {
	local c=$1 n sum dev mb=64
	for n in 0 1; do ib_load "$c" "$n" || return 1; done
	# The target: an 80 MiB file on tmpfs (buffered I/O), port 4420 on node0's
	# Weft address; the address is on weft0 before the port is linked.
	GX_TIMEOUT=120 gx "$c" 0 "set -e
		grep -q ' /sys/kernel/config ' /proc/mounts || mount -t configfs none /sys/kernel/config
		mkdir -p /run/nvt; grep -q ' /run/nvt ' /proc/mounts || mount -t tmpfs tmpfs /run/nvt
		dd if=/dev/zero of=/run/nvt/disk bs=1048576 count=80 2>/dev/null
		S=$NVCFG/subsystems/$NQN P=$NVCFG/ports/1
		mkdir \$S; echo 1 >\$S/attr_allow_any_host
		mkdir \$S/namespaces/1; echo -n /run/nvt/disk >\$S/namespaces/1/device_path
		echo 1 >\$S/namespaces/1/buffered_io; echo 1 >\$S/namespaces/1/enable
		mkdir \$P; echo rdma >\$P/addr_trtype; echo ipv4 >\$P/addr_adrfam
		echo 10.87.0.1 >\$P/addr_traddr; echo 4420 >\$P/addr_trsvcid
		ln -s \$S \$P/subsystems/$NQN"
	[ "$RC" = 0 ] || fail "node0: nvmet-rdma target set-up failed: $OUT" || return 1
	checked "node0: nvmet-rdma target listening on 10.87.0.1:4420 ($NQN, an 80 MiB tmpfs file)"
	GX_TIMEOUT=180 gx "$c" 1 "echo transport=rdma,traddr=10.87.0.1,trsvcid=4420,nqn=$NQN >/dev/nvme-fabrics || exit 1
		for i in \$(seq 100); do
			for d in /sys/block/nvme*n1; do
				case \${d##*/} in *c*) continue ;; esac	# hidden multipath paths
				[ -e /sys/class/block/\${d##*/}/dev ] && { echo \${d##*/}; exit 0; }
			done
			sleep 0.3
		done; exit 1"
	dev=$(tail -n1 <<<"$OUT")
	[ "$RC" = 0 ] && [ -n "$dev" ] || fail "node1: nvme-rdma connect to 10.87.0.1:4420 failed: $OUT" || return 1
	checked "node1: nvme-rdma connected over Weft, namespace $dev"
	# A variant's extra check while connected (tests/cluster/srq.sh).
	[ -z "${NVME_AFTER_CONNECT:-}" ] || "$NVME_AFTER_CONNECT" "$c" || return 1
	GX_TIMEOUT=600 gx "$c" 1 "set -e
		[ -b /dev/$dev ] || mknod /dev/$dev b \$(tr : ' ' </sys/class/block/$dev/dev)
		dd if=/dev/urandom of=/tmp/nvdata bs=1048576 count=$mb 2>/dev/null
		sha256sum </tmp/nvdata
		dd if=/tmp/nvdata of=/dev/$dev bs=1048576 oflag=direct 2>/dev/null
		sync; echo 3 >/proc/sys/vm/drop_caches
		dd if=/dev/$dev bs=1048576 count=$mb iflag=direct 2>/dev/null | sha256sum"
	sum=$(sed -n 1p <<<"$OUT" | cut -c1-64)
	[ "$RC" = 0 ] && [ -n "$sum" ] && [ "$(sed -n 2p <<<"$OUT" | cut -c1-64)" = "$sum" ] ||
		fail "node1: $mb MiB written to and read back from /dev/$dev differ or failed: $OUT" || return 1
	gx "$c" 0 "dd if=/run/nvt/disk bs=1048576 count=$mb 2>/dev/null | sha256sum"
	[ "$(cut -c1-64 <<<"$OUT")" = "$sum" ] ||
		fail "node0: the target's file does not hold what node1 wrote: $OUT (want $sum)" || return 1
	checked "$mb MiB of random data written by node1 through nvme-rdma (O_DIRECT) and read back with equal sha256 ${sum:0:16}; node0's backing file holds the same bytes"
	GX_TIMEOUT=120 gx "$c" 1 "for x in /sys/class/nvme/nvme*; do echo 1 >\$x/delete_controller; done
		for i in \$(seq 50); do ls /sys/class/nvme/ 2>/dev/null | grep -q . || exit 0; sleep 0.2; done; exit 1"
	[ "$RC" = 0 ] || fail "node1: controllers still present after delete_controller: $OUT" || return 1
	gx "$c" 1 "/usr/bin/rdma resource show $IBDEV"
	grep -qE ' qp 1 ' <<<"$OUT" || fail "node1: RDMA resources not released after the disconnect (only QP1 should stay): $OUT" || return 1
	checked "node1: disconnected cleanly; only the GSI QP is left (rdma resource: $(tr -s ' ' <<<"$OUT" | cut -c1-120))"
	for n in 0 1; do no_oops "$c" "$n" || return 1; done
}
