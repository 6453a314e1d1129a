/* SPDX-License-Identifier: MIT */
/*
 * Weft provider: the command structures of the user/kernel ABI, built by
 * rdma-core's DECLARE_DRV_CMD from include/weft/ib-abi.h (installed in the
 * rdma-core tree as <rdma/weft-abi.h>).
 */
#ifndef WEFT_PROVIDER_ABI_H
#define WEFT_PROVIDER_ABI_H

#include <infiniband/kern-abi.h>
#include <rdma/weft-abi.h>
#include <kernel-abi/weft-abi.h>

DECLARE_DRV_CMD(weft_alloc_ucontext, IB_USER_VERBS_CMD_GET_CONTEXT,
		empty, weft_ib_alloc_ucontext_resp);
DECLARE_DRV_CMD(weft_create_cq, IB_USER_VERBS_CMD_CREATE_CQ,
		empty, weft_ib_create_cq_resp);
DECLARE_DRV_CMD(weft_create_cq_ex, IB_USER_VERBS_EX_CMD_CREATE_CQ,
		empty, weft_ib_create_cq_resp);
DECLARE_DRV_CMD(weft_create_qp, IB_USER_VERBS_CMD_CREATE_QP,
		empty, weft_ib_create_qp_resp);
DECLARE_DRV_CMD(weft_create_srq, IB_USER_VERBS_CMD_CREATE_SRQ,
		empty, weft_ib_create_srq_resp);
DECLARE_DRV_CMD(weft_create_srq_ex, IB_USER_VERBS_CMD_CREATE_XSRQ,
		weft_ib_create_srq_req, weft_ib_create_srq_resp);
DECLARE_DRV_CMD(weft_resize_cq, IB_USER_VERBS_CMD_RESIZE_CQ,
		empty, weft_ib_resize_cq_resp);
DECLARE_DRV_CMD(weft_create_ah, IB_USER_VERBS_CMD_CREATE_AH,
		empty, weft_ib_create_ah_resp);

#endif /* WEFT_PROVIDER_ABI_H */
