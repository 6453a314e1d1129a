// SPDX-License-Identifier: MIT
/*
 * Weft provider: registration with libibverbs, matched by PCI id
 * (weft/hw.h), and the user context with its UAR doorbell page.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "weft.h"
#include "weft/hw.h"
#include "weft-abi.h"

static const struct verbs_match_ent weft_match_table[] = {
	VERBS_PCI_MATCH(WEFT_PCI_VENDOR_ID, WEFT_PCI_DEVICE_ID, NULL),
	{}
};

static void weft_free_context(struct ibv_context *ibctx);

static const struct verbs_context_ops weft_ctx_ops = {
	.query_device_ex = weft_query_device_ex,
	.query_port = weft_query_port,
	.alloc_pd = weft_alloc_pd,
	.dealloc_pd = weft_dealloc_pd,
	.reg_mr = weft_reg_mr,
	.dereg_mr = weft_dereg_mr,
	.alloc_mw = weft_alloc_mw,
	.dealloc_mw = weft_dealloc_mw,
	.bind_mw = weft_bind_mw,
	.create_cq = weft_create_cq,
	.create_cq_ex = weft_create_cq_ex,
	.poll_cq = weft_poll_cq,
	.req_notify_cq = weft_req_notify_cq,
	.destroy_cq = weft_destroy_cq,
	.resize_cq = weft_resize_cq,
	.modify_cq = weft_modify_cq,
	.create_qp = weft_create_qp,
	.create_qp_ex = weft_create_qp_ex,
	.query_qp = weft_query_qp,
	.modify_qp = weft_modify_qp,
	.destroy_qp = weft_destroy_qp,
	.post_send = weft_post_send,
	.post_recv = weft_post_recv,
	.create_srq = weft_create_srq,
	.modify_srq = weft_modify_srq,
	.query_srq = weft_query_srq,
	.destroy_srq = weft_destroy_srq,
	.post_srq_recv = weft_post_srq_recv,
	.create_srq_ex = weft_create_srq_ex,
	.post_srq_ops = weft_post_srq_ops,
	.create_ah = weft_create_ah,
	.destroy_ah = weft_destroy_ah,
	.free_context = weft_free_context,
};

static struct verbs_context *weft_alloc_context(struct ibv_device *ibdev,
						int cmd_fd, void *private_data)
{
	struct weft_alloc_ucontext_resp resp = {};
	struct ibv_get_context cmd = {};
	struct weft_context *ctx;

	ctx = verbs_init_and_alloc_context(ibdev, cmd_fd, ctx, ibv_ctx,
					   RDMA_DRIVER_UNKNOWN);
	if (!ctx)
		return NULL;
	if (ibv_cmd_get_context(&ctx->ibv_ctx, &cmd, sizeof(cmd),
				&resp.ibv_resp, sizeof(resp)))
		goto err_free;

	/* A kernel with other ring formats would corrupt every queue. */
	if (resp.ring_format != WEFT_IB_RING_FORMAT ||
	    resp.cqe_size != sizeof(struct weft_vcqe) ||
	    resp.db_mmap_size != WEFT_DB_PAGE_SIZE) {
		errno = EPROTO;
		goto err_free;
	}
	ctx->uar_index = resp.uar_index;
	ctx->uar = mmap(NULL, WEFT_DB_PAGE_SIZE, PROT_WRITE, MAP_SHARED, cmd_fd,
			resp.db_mmap_offset);
	if (ctx->uar == MAP_FAILED)
		goto err_free;
	if (pthread_mutex_init(&ctx->qp_table_lock, NULL))
		goto err_unmap;

	verbs_set_ops(&ctx->ibv_ctx, &weft_ctx_ops);
	return &ctx->ibv_ctx;

err_unmap:
	munmap(ctx->uar, WEFT_DB_PAGE_SIZE);
err_free:
	verbs_uninit_context(&ctx->ibv_ctx);
	free(ctx);
	return NULL;
}

static void weft_free_context(struct ibv_context *ibctx)
{
	struct weft_context *ctx = to_wctx(ibctx);
	unsigned int i;

	for (i = 0; i < WEFT_QP_TABLE_TOP; i++)
		free(ctx->qp_table[i]);
	pthread_mutex_destroy(&ctx->qp_table_lock);
	munmap(ctx->uar, WEFT_DB_PAGE_SIZE);
	verbs_uninit_context(&ctx->ibv_ctx);
	free(ctx);
}

static struct verbs_device *weft_alloc_device(struct verbs_sysfs_dev *sysfs_dev)
{
	struct weft_device *dev;

	dev = calloc(1, sizeof(*dev));
	if (!dev)
		return NULL;
	return &dev->ibv_dev;
}

static void weft_uninit_device(struct verbs_device *verbs_device)
{
	free(container_of(verbs_device, struct weft_device, ibv_dev));
}

static const struct verbs_device_ops weft_dev_ops = {
	.name = "weft",
	.match_min_abi_version = WEFT_IB_UVERBS_ABI_VERSION,
	.match_max_abi_version = WEFT_IB_UVERBS_ABI_VERSION,
	.match_table = weft_match_table,
	.alloc_device = weft_alloc_device,
	.uninit_device = weft_uninit_device,
	.alloc_context = weft_alloc_context,
};
PROVIDER_DRIVER(weft, weft_dev_ops);
