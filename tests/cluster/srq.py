"""Shared receive queues (docs/rdma-provider.md, docs/verbs-linux.md):
Debian's ibv_srq_pingpong, the SRQ verbs test program, and nvme-rdma with
the target's queues on kernel SRQs.  The guest side checks itself; each
scenario runs one program or tool and reads its verdict."""

import re

from ib import IBDEV, NQN, NVCFG, ib_load_both, nvme_rdma
from verbs_user import gids, no_oops_both, pingpong, vpair, vrun
from weftcluster.testing import scenario


@scenario("srq-pingpong", "C2", "user verbs: Debian's ibv_srq_pingpong -c (16 RC QPs on one SRQ per node, data "
          "validated), 500 x 4 KiB between the nodes")
def srq_pingpong(t):
    c, s = pingpong(t, gids(t), "ibv_srq_pingpong", 4096, 500, "-c")
    t.require(re.search(r"^500 iters in", c.out, re.M), f"ibv_srq_pingpong printed no result: {c.out}")
    bad = [x for x in c.lines() + s.lines() if "invalid data" in x]
    t.require(not bad, f"ibv_srq_pingpong -c found invalid data: {' | '.join(bad[:3])}")
    t.checked("ibv_srq_pingpong -c (16 QPs on one SRQ each side, data validated), 500 x 4096 B: "
              f"{' '.join(x for x in c.lines() if 'bytes in' in x)}; "
              f"{' '.join(x for x in c.lines() if 'usec/iter' in x)}")
    no_oops_both(t)


@scenario("verbs-srq", "C2", "user verbs: SRQ limits in ibv_query_device; 11 messages over 2 QPs into one SRQ "
          "byte-exact, each WQE once; IBV_EVENT_SRQ_LIMIT_REACHED; post_recv on an SRQ QP EINVAL; a QP of the SRQ in "
          "ERR gives IBV_EVENT_QP_LAST_WQE_REACHED and the SRQ's other WQEs serve the other QP; destroy while attached "
          "EBUSY; max_inline_data 128 and an IBV_SEND_INLINE send from an unregistered buffer reused at once "
          "(weft-verbs-srq)")
def verbs_srq(t):
    vrun(t, vpair, "weft-verbs-srq")


def nvmet_srq(t, v):
    """Node0's nvmet-rdma configuration removed (what nvme_rdma made, if
    anything) and the module reloaded with use_srq=V (a read-only
    parameter: only insmod sets it).  False (after a failed check) if
    not."""
    want = "Y" if v else "N"
    r = t.gx(0, f"""S={NVCFG}/subsystems/{NQN} P={NVCFG}/ports/1
        rm -f $P/subsystems/{NQN}; [ ! -d $P ] || rmdir $P
        [ ! -d $S/namespaces/1 ] || {{ echo 0 >$S/namespaces/1/enable; rmdir $S/namespaces/1; }}
        [ ! -d $S ] || rmdir $S
        m=$(grep -m1 '^nvmet.rdma' /lib/weft/rdma/modules.list) || {{ echo no nvmet-rdma module; exit 1; }}
        [ ! -d /sys/module/nvmet_rdma ] || rmmod nvmet_rdma || exit 1
        insmod /lib/weft/rdma/$m use_srq={v} || exit 1
        cat /sys/module/nvmet_rdma/parameters/use_srq""", timeout=120)
    if r.ok and (r.lines() or [""])[-1] == want:
        return True
    return t.fail(f"node0: nvmet_rdma not reloaded with use_srq={v}: {r.out}")


def nvme_srq_in_use(t):
    """While the host is connected: node0's target holds SRQs (rdma
    resource)."""
    r = t.gx(0, f"/usr/bin/rdma resource show {IBDEV}")
    m = re.search(r" srq ([0-9]+)", r.out)
    n = int(m.group(1)) if m else 0
    t.require(n > 0, f"node0: nvmet-rdma (use_srq=1) holds no SRQ while connected: {r.out}")
    t.checked(f"node0: nvmet-rdma's queues receive through {n} kernel SRQ(s) (rdma resource: "
              f"{re.sub(' +', ' ', r.out)[:120]})")


# After nvme-rdma (it takes nvme-rdma's target configuration down): the
# scenario files' order in run.py keeps it after ib.py's.
@scenario("nvme-srq", "C2", "RDMA core: the nvme-rdma scenario with node0's nvmet-rdma loaded with use_srq=1: the "
          "target holds kernel SRQs while connected, 64 MiB written and read back with equal sha256, the same bytes in "
          "the target's file, clean disconnect")
def nvme_srq(t):
    ib_load_both(t)
    t.require(nvmet_srq(t, 1), None)
    t.checked("node0: nvmet_rdma loaded with use_srq=1")
    try:
        nvme_rdma(t, after_connect=nvme_srq_in_use)
    finally:
        # Node0's nvmet-rdma back to use_srq=0 for what runs next.
        nvmet_srq(t, 0)
