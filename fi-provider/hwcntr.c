// SPDX-License-Identifier: MIT
/*
 * The adapter's event counters (docs/libfabric.md "Counters",
 * docs/counters.md "Event counters"): the small direct-verbs piece that
 * verbs lacks.  weft_ib's uverbs driver object WEFT_IB_OBJECT_CNTR
 * (weft/ib-abi.h) through the RDMA_VERBS_IOCTL of the verbs context's
 * command file, as rdma-core's direct-verbs providers reach their driver
 * objects: CREATE (an EVENT counter and the offset of its status block,
 * mapped read-only), BIND (a counter slot of one of this context's RC
 * QPs), SET (fi_cntr_add/set in the adapter: the CNT_CMD EV_SET,
 * docs/counters.md "Event counters") and DESTROY.  The block is the
 * adapter's: software only reads it, and moves it through SET.
 */
#include <errno.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <rdma/rdma_user_ioctl.h>

#include "wfi.h"
#include "weft/cnt.h"
#include "weft/ib-abi.h"

#define WFI_HW_PAGE 4096

_Static_assert(WFI_CNT_SLOTS == WEFT_CNT_QP_SLOTS - 1, "counter slots per QP");
_Static_assert(WFI_CNT_EV_WRITE == WEFT_CNT_EV_REMOTE_WRITE &&
	       WFI_CNT_EV_READ == WEFT_CNT_EV_REMOTE_READ, "event bits");

/* One method of the counter object with its n attributes (in and out):
 * 0 or the errno. */
static int hw_ioctl(struct ibv_context *ctx, uint16_t method, struct ib_uverbs_attr *a,
		    uint16_t n)
{
	struct {
		struct ib_uverbs_ioctl_hdr hdr;
		struct ib_uverbs_attr attr[5];
	} c;

	if (!ctx || n > 5)
		return EINVAL;
	memset(&c, 0, sizeof(c));
	c.hdr.length = (uint16_t)(sizeof(c.hdr) + n * sizeof(c.attr[0]));
	c.hdr.object_id = WEFT_IB_OBJECT_CNTR;
	c.hdr.method_id = method;
	c.hdr.num_attrs = n;
	memcpy(c.attr, a, n * sizeof(*a));
	if (ioctl(ctx->cmd_fd, RDMA_VERBS_IOCTL, &c))
		return errno ? errno : EIO;
	memcpy(a, c.attr, n * sizeof(*a));
	return 0;
}

static int hw_destroy_handle(struct ibv_context *ctx, uint32_t handle)
{
	struct ib_uverbs_attr a = { .attr_id = WEFT_IB_ATTR_CNTR_DESTROY_HANDLE, .data = handle };

	return hw_ioctl(ctx, WEFT_IB_METHOD_CNTR_DESTROY, &a, 1);
}

/* A new EVENT counter of the adapter, its block mapped: 0 or the errno
 * (the adapter's 256 objects taken: ENOSPC; no such object in this
 * kernel: EOPNOTSUPP, ...), h untouched then. */
int wfi_hw_create(struct ibv_context *ctx, struct wfi_hwcntr *h)
{
	uint64_t off = 0;
	struct ib_uverbs_attr a[2] = {
		{ .attr_id = WEFT_IB_ATTR_CNTR_CREATE_HANDLE },
		{ .attr_id = WEFT_IB_ATTR_CNTR_CREATE_MMAP, .len = sizeof(off),
		  .data = (uintptr_t)&off },
	};
	uint32_t handle;
	void *p;
	int e;

	e = hw_ioctl(ctx, WEFT_IB_METHOD_CNTR_CREATE, a, 2);
	if (e)
		return e;
	handle = (uint32_t)a[0].data;
	p = mmap(NULL, WFI_HW_PAGE, PROT_READ, MAP_SHARED, ctx->cmd_fd, (off_t)off);
	if (p == MAP_FAILED) {
		e = errno ? errno : EIO;
		hw_destroy_handle(ctx, handle);
		return e;
	}
	h->handle = handle;
	h->blk = p;
	return 0;
}

void wfi_hw_destroy(struct ibv_context *ctx, struct wfi_hwcntr *h)
{
	if (!h->blk)
		return;
	munmap((void *)h->blk, WFI_HW_PAGE);
	h->blk = NULL;
	hw_destroy_handle(ctx, h->handle);
}

/* Slot (1 .. WFI_CNT_SLOTS) of qp counts on h: the WQEs that name it, and
 * the events (WFI_CNT_EV_*) the QP serves.  0 or the errno. */
int wfi_hw_bind(struct ibv_context *ctx, const struct wfi_hwcntr *h, struct ibv_qp *qp,
		uint32_t slot, uint32_t events)
{
	struct ib_uverbs_attr a[4] = {
		{ .attr_id = WEFT_IB_ATTR_CNTR_BIND_HANDLE, .data = h->handle },
		{ .attr_id = WEFT_IB_ATTR_CNTR_BIND_QP },
		{ .attr_id = WEFT_IB_ATTR_CNTR_BIND_SLOT, .len = 4, .data = slot },
		{ .attr_id = WEFT_IB_ATTR_CNTR_BIND_EVENTS, .len = 4, .data = events },
	};

	if (!h->blk || !qp || slot < 1 || slot > WFI_CNT_SLOTS)
		return EINVAL;
	a[1].data = qp->handle;
	return hw_ioctl(ctx, WEFT_IB_METHOD_CNTR_BIND, a, 4);
}

/* op (WEFT_CNT_EV_ADD or _SET) value on word (WEFT_CNT_EV_COUNT or
 * _ERRORS) of h in the adapter, which writes the block and releases the
 * WAIT_CNTs the new count reaches: 0 and the word's new value in
 * *result, or the errno (a kernel without the method: EOPNOTSUPP,
 * EPROTONOSUPPORT, ...). */
int wfi_hw_set(struct ibv_context *ctx, const struct wfi_hwcntr *h, uint32_t op, uint32_t word,
	       uint64_t value, uint64_t *result)
{
	uint64_t r = 0;
	struct ib_uverbs_attr a[5] = {
		{ .attr_id = WEFT_IB_ATTR_CNTR_SET_HANDLE, .data = h->handle },
		{ .attr_id = WEFT_IB_ATTR_CNTR_SET_OP, .len = 4, .data = op },
		{ .attr_id = WEFT_IB_ATTR_CNTR_SET_WORD, .len = 4, .data = word },
		{ .attr_id = WEFT_IB_ATTR_CNTR_SET_VALUE, .len = 8, .data = value },
		{ .attr_id = WEFT_IB_ATTR_CNTR_SET_RESULT, .len = 8, .data = (uintptr_t)&r },
	};
	int e;

	if (!h->blk)
		return EINVAL;
	e = hw_ioctl(ctx, WEFT_IB_METHOD_CNTR_SET, a, 5);
	if (!e)
		*result = r;
	return e;
}

/* The block's two words as the adapter last wrote them. */
void wfi_hw_read(const struct wfi_hwcntr *h, uint64_t *count, uint64_t *errors)
{
	const volatile struct weft_cnt_ev_block *b = h->blk;

	if (!b) {
		*count = *errors = 0;
		return;
	}
	*count = __atomic_load_n(&b->count, __ATOMIC_ACQUIRE);
	*errors = __atomic_load_n(&b->errors, __ATOMIC_ACQUIRE);
}

/* The send_flags bits that make a send WQE count on slot s. */
unsigned int wfi_hw_send_flags(int s)
{
	return s >= 1 && s <= WFI_CNT_SLOTS ? WEFT_IB_SEND_CNT_SLOT((unsigned int)s) : 0;
}
