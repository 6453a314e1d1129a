"""rdma-core's tag-matching verbs (docs/matching.md "Tag-matching verbs",
docs/rdma-provider.md): the guest program weft-verbs-tm drives a
tag-matching SRQ through ibv_create_srq_ex, ibv_post_srq_ops and the
extended CQ, and checks itself; the scenario runs it and reads its
verdict."""

from verbs_user import vpair, vrun
from weftcluster.testing import scenario


@scenario("verbs-tm", "C2", "user verbs: tag matching (IBV_SRQT_TM) with the device matching: tm_caps; an eager "
          "message matched into its tagged buffer (one and several packets: MATCH|DATA_VALID, MATCH then DATA_VALID, "
          "tag and app_ctx in ibv_wc_read_tm_info); an unexpected message in an SRQ buffer followed by TAG_SYNC; "
          "NO_TAG; a TAG_DEL racing its message gives IBV_WC_TM_ERR; the tags the SRQ holds (handle, tag, mask, "
          "length, lkey, state) in weft.ko's debugfs match file (QUERY_HQ); a 16 MiB rendezvous the adapter reads "
          "(MATCH, DATA_VALID, FIN at node1); 10,048 random tags and masks against a reference, all byte-exact "
          "(weft-verbs-tm)")
def verbs_tm(t):
    vrun(t, vpair, "weft-verbs-tm")
