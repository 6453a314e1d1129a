"""MPI one-sided communication on Weft (docs/mpi.md "One-sided"): Open
MPI's osc rdma over btl ofi over the weft libfabric provider's FI_RMA and
FI_ATOMIC, on the 4-node cluster with the hpc image layer.  weft-mpi-osc
(tests/mpi) puts and gets 1 B to 4 MiB byte-exact with fences and with
passive-target locks, and checks MPI_Accumulate, MPI_Fetch_and_op and
MPI_Compare_and_swap; the adapters' byte counters show the windows' data
crossed Weft's verbs."""

import re

from mpi import program_checks
from weftcluster.testing import scenario

PROG = "weft-mpi-osc"
CHECKS = ("fence-put", "fence-get", "lock-put-get", "win-create-put", "win-create-get", "accumulate",
          "fetch-and-op", "compare-and-swap")
MAX = 4 << 20


def tx_bytes(t):
    """Bytes the 4 nodes' adapters have sent so far (verbs, debugfs)."""
    return [t.counter(i, "V_TX_BYTES") for i in range(4)]


@scenario("osc-rdma", "CM", "MPI one-sided: weft-mpi-osc, 8 ranks 2 per node, through Open MPI's osc rdma over btl "
          "ofi on the weft provider (--mca osc rdma --mca btl self,ofi): MPI_Put and MPI_Get 1 B..4 MiB byte-exact "
          "with fences, passive-target locks and MPI_Win_create memory, MPI_Accumulate, MPI_Fetch_and_op and "
          "MPI_Compare_and_swap; the adapters' byte counters moved")
def osc_rdma(t):
    t.need((0,), f"/usr/bin/{PROG}")
    before = tx_bytes(t)
    # btl self,ofi: no shared-memory btl, so every window access between
    # ranks, within a node too, is the provider's RDMA (osc rdma needs one
    # btl that reaches every rank); pml cm with mtl ofi carries MPI's
    # messages.  btl_base_verbose shows btl ofi's selection.
    r = t.wc("mpirun", "-np", 8, "--per-node", 2, "--transport", "ofi",
             "--mca", "osc", "rdma", "--mca", "btl", "self,ofi", "--mca", "btl_ofi_provider_include", "weft",
             "--mca", "btl_base_verbose", 100, "--timeout", 900, "--",
             PROG, "--max-size", MAX, "--iters", 20)
    picked = len(re.findall(r"select: init of component ofi returned success", r.out))
    if picked == 8:
        t.checked("btl ofi initialised over the weft provider in all 8 ranks (FI_RMA | FI_ATOMIC, "
                  "FI_MR_VIRT_ADDR | FI_MR_PROV_KEY | FI_MR_ALLOCATED)")
    else:
        t.show(r.out, "mpirun | ", 30)
        t.fail(f"btl ofi initialised in {picked} of 8 ranks")
    program_checks(t, r, "osc rdma", CHECKS)
    if not r.ok or not re.search(rf"^{PROG}: PASS: ", r.out, re.M):
        t.show("\n".join(x for x in r.lines() if "mca:" not in x and "select:" not in x), "osc | ", 30)
        t.fail(f"{PROG}: weft-cluster mpirun exited {r.rc}: "
               f"{next((x for x in reversed(r.lines()) if x.strip()), '')}")
    else:
        t.checked(f"{PROG} passed, exit 0, through osc rdma and btl ofi")
    sent = [b - a for a, b in zip(before, tx_bytes(t))]
    # Each rank puts and gets at least 4 x 4 MiB through its windows.
    t.require(min(sent) >= 16 * MAX // 4,
              f"the adapters sent only {sent} bytes: the windows' data did not go over weft_ib0")
    t.checked(f"the windows' data went over Weft's verbs: bytes sent per node {sent}")
    for i in range(4):
        t.require(t.no_oops(i), None)
