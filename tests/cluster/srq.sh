# shellcheck shell=bash
# Shared receive queues (issue 20, docs/rdma-provider.md, docs/verbs-linux.md):
# scenarios sourced by tests/cluster/run.sh.  The guest side checks
# itself; each function here runs one program or tool and reads its
# verdict, so that it ports as it stands.

# sc_srq_pingpong: Debian's ibv_srq_pingpong (16 QPs on one SRQ per
# side), data checked with -c: node1 serves, node0 connects.
sc_srq_pingpong() {
	local c=$1 sgid cgid dev
	ib_dev "$c" 1 || return 1
	sgid=$GIDX
	ib_dev "$c" 0 || return 1
	cgid=$GIDX dev=$UDEV
	pair "$c" srqpp "ibv_srq_pingpong -d $dev -g $sgid -c -s 4096 -n 500" \
		"ibv_srq_pingpong -d $dev -g $cgid -c -s 4096 -n 500 $(ip4 1)" ||
		fail "ibv_srq_pingpong -c failed" || return 1
	grep -q '^4096000 bytes in' <<<"$COUT" && grep -q '^500 iters in' <<<"$COUT" ||
		fail "ibv_srq_pingpong printed no result: $COUT" || return 1
	! grep -q 'invalid data' <<<"$COUT$SOUT" ||
		fail "ibv_srq_pingpong -c found invalid data: $(grep -h 'invalid data' <<<"$COUT$SOUT" | head -3)" || return 1
	checked "ibv_srq_pingpong -c (16 QPs on one SRQ each side, data validated), 500 x 4096 B: $(grep -h 'bytes in' <<<"$COUT"); $(grep -h 'usec/iter' <<<"$COUT")"
	no_oops "$c" 0 && no_oops "$c" 1
}

# sc_verbs_srq: weft-verbs-srq (tests/verbs/weft-verbs-srq.c).
sc_verbs_srq() { vrun "$1" vpair weft-verbs-srq; }

# nvmet_srq CLUSTER USE_SRQ: node0's nvmet-rdma configuration removed
# (what sc_nvme_rdma made, if anything) and the module reloaded with
# use_srq=USE_SRQ (a read-only parameter: only insmod sets it).
nvmet_srq() {
	local c=$1 v=$2 want=N
	[ "$v" = 0 ] || want=Y
	GX_TIMEOUT=120 gx "$c" 0 "S=$NVCFG/subsystems/$NQN P=$NVCFG/ports/1
		rm -f \$P/subsystems/$NQN; [ ! -d \$P ] || rmdir \$P
		[ ! -d \$S/namespaces/1 ] || { echo 0 >\$S/namespaces/1/enable; rmdir \$S/namespaces/1; }
		[ ! -d \$S ] || rmdir \$S
		m=\$(grep -m1 '^nvmet.rdma' /lib/weft/rdma/modules.list) || { echo no nvmet-rdma module; exit 1; }
		[ ! -d /sys/module/nvmet_rdma ] || rmmod nvmet_rdma || exit 1
		insmod /lib/weft/rdma/\$m use_srq=$v || exit 1
		cat /sys/module/nvmet_rdma/parameters/use_srq"
	[ "$RC" = 0 ] && [ "$(tail -n1 <<<"$OUT")" = "$want" ] ||
		fail "node0: nvmet_rdma not reloaded with use_srq=$v: $OUT"
}

# While the host is connected: node0's target holds SRQs (rdma resource).
nvme_srq_in_use() {
	local c=$1 n
	gx "$c" 0 "/usr/bin/rdma resource show $IBDEV"
	n=$(sed -n 's/.* srq \([0-9]*\).*/\1/p' <<<"$OUT")
	[ -n "$n" ] && [ "$n" -gt 0 ] ||
		fail "node0: nvmet-rdma (use_srq=1) holds no SRQ while connected: $OUT" || return 1
	checked "node0: nvmet-rdma's queues receive through $n kernel SRQ(s) (rdma resource: $(tr -s ' ' <<<"$OUT" | cut -c1-120))"
}

# sc_nvme_srq: sc_nvme_rdma (64 MiB byte-exact) with the target's queues
# on SRQs; node0's nvmet-rdma is put back to use_srq=0 afterwards.
sc_nvme_srq() {
	local c=$1 n rc=0
	for n in 0 1; do ib_load "$c" "$n" || return 1; done
	nvmet_srq "$c" 1 || return 1
	checked "node0: nvmet_rdma loaded with use_srq=1"
	NVME_AFTER_CONNECT=nvme_srq_in_use sc_nvme_rdma "$c" || rc=1
	nvmet_srq "$c" 0 || rc=1
	return "$rc"
}
