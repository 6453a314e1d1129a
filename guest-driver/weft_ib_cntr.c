// SPDX-License-Identifier: GPL-2.0
/*
 * weft_ib.ko: event counters for user space (docs/counters.md "Event
 * counters", weft/ib-abi.h): a driver object of ib_uverbs' ioctl
 * interface.  CREATE makes an adapter EVENT counter over the first bytes
 * of a page that the process maps read-only; BIND points a counter slot of
 * one of the process's QPs at it; SET adds to or sets a word of it in the
 * adapter (fi_cntr_add, fi_cntr_set); DESTROY (or the process's end) removes
 * the adapter object before the page goes.
 */
#define UVERBS_MODULE_NAME weft_ib
#include <rdma/uverbs_named_ioctl.h>
#include <rdma/uverbs_std_types.h>

#include "weft_ib.h"
#include "weft/cnt.h"

struct weft_ib_cntr {
	struct weft_ibdev *dev;
	struct weft_ring page;		/* the status block, then nothing */
	struct rdma_user_mmap_entry *entry;
	u32 id;
	u16 gen;
};

static int weft_ib_cntr_cleanup(struct ib_uobject *uobj, enum rdma_remove_reason why,
				struct uverbs_attr_bundle *attrs)
{
	struct weft_ib_cntr *c = uobj->object;

	/* The adapter stops writing the block before its page goes. */
	weft_cnt_ev_destroy(c->dev->wdev, c->id, c->gen);
	weft_ib_ring_retire(c->dev, &c->page, c->entry);
	kfree(c);
	return 0;
}

static int UVERBS_HANDLER(WEFT_IB_METHOD_CNTR_CREATE)(struct uverbs_attr_bundle *attrs)
{
	struct ib_uobject *uobj = uverbs_attr_get_uobject(attrs, WEFT_IB_ATTR_CNTR_CREATE_HANDLE);
	struct weft_ibdev *dev = to_wdev(attrs->context->device);
	struct weft_ib_cntr *c;
	u64 offset;
	int ret;

	if (dev->fatal)
		return -EIO;
	c = kzalloc(sizeof(*c), GFP_KERNEL);
	if (!c)
		return -ENOMEM;
	c->dev = dev;
	ret = weft_ib_ring_alloc(dev, PAGE_SIZE, &c->page);
	if (ret)
		goto err_free;
	ret = weft_cnt_ev_create(dev->wdev, c->page.dma, &c->id, &c->gen);
	if (ret)
		goto err_page;
	ret = weft_ib_ring_publish(dev, attrs->context, &c->page, &c->entry, &offset);
	if (ret)
		goto err_obj;
	container_of(c->entry, struct weft_mmap_entry, rdma)->type = WEFT_MMAP_CNTR;
	uobj->object = c;
	uverbs_finalize_uobj_create(attrs, WEFT_IB_ATTR_CNTR_CREATE_HANDLE);
	return uverbs_copy_to(attrs, WEFT_IB_ATTR_CNTR_CREATE_MMAP, &offset, sizeof(offset));

err_obj:
	weft_cnt_ev_destroy(dev->wdev, c->id, c->gen);
err_page:
	weft_ib_ring_free(dev, &c->page);
err_free:
	kfree(c);
	return ret;
}

static int UVERBS_HANDLER(WEFT_IB_METHOD_CNTR_BIND)(struct uverbs_attr_bundle *attrs)
{
	struct weft_ib_cntr *c = uverbs_attr_get_obj(attrs, WEFT_IB_ATTR_CNTR_BIND_HANDLE);
	struct ib_qp *ibqp = uverbs_attr_get_obj(attrs, WEFT_IB_ATTR_CNTR_BIND_QP);
	struct weft_ibqp *qp;
	u32 slot, events;
	int ret;

	if (IS_ERR(c) || IS_ERR(ibqp))
		return -EINVAL;
	ret = uverbs_copy_from(&slot, attrs, WEFT_IB_ATTR_CNTR_BIND_SLOT);
	if (ret)
		return ret;
	ret = uverbs_copy_from(&events, attrs, WEFT_IB_ATTR_CNTR_BIND_EVENTS);
	if (ret)
		return ret;
	if (!slot || slot >= WEFT_CNT_QP_SLOTS || (events & ~WEFT_CNT_EV_ALL))
		return -EINVAL;
	qp = to_wqp(ibqp);
	if (!qp->user || qp->hw_type != WEFT_VQPT_RC || ibqp->device != &c->dev->ibdev)
		return -EINVAL;
	return weft_cnt_ev_bind(c->dev->wdev, c->id, c->gen, qp->qpn, slot, events);
}

static int UVERBS_HANDLER(WEFT_IB_METHOD_CNTR_SET)(struct uverbs_attr_bundle *attrs)
{
	struct weft_ib_cntr *c = uverbs_attr_get_obj(attrs, WEFT_IB_ATTR_CNTR_SET_HANDLE);
	u32 op, word;
	u64 val;
	int ret;

	if (IS_ERR(c))
		return -EINVAL;
	ret = uverbs_copy_from(&op, attrs, WEFT_IB_ATTR_CNTR_SET_OP);
	if (!ret)
		ret = uverbs_copy_from(&word, attrs, WEFT_IB_ATTR_CNTR_SET_WORD);
	if (!ret)
		ret = uverbs_copy_from(&val, attrs, WEFT_IB_ATTR_CNTR_SET_VALUE);
	if (ret)
		return ret;
	if (op > U8_MAX || word > U8_MAX)
		return -EINVAL;
	ret = weft_cnt_ev_set(c->dev->wdev, c->id, c->gen, op, word, &val);
	if (ret)
		return ret;
	return uverbs_copy_to(attrs, WEFT_IB_ATTR_CNTR_SET_RESULT, &val, sizeof(val));
}

DECLARE_UVERBS_NAMED_METHOD(WEFT_IB_METHOD_CNTR_CREATE,
			    UVERBS_ATTR_IDR(WEFT_IB_ATTR_CNTR_CREATE_HANDLE, WEFT_IB_OBJECT_CNTR,
					    UVERBS_ACCESS_NEW, UA_MANDATORY),
			    UVERBS_ATTR_PTR_OUT(WEFT_IB_ATTR_CNTR_CREATE_MMAP,
						UVERBS_ATTR_TYPE(u64), UA_MANDATORY));

DECLARE_UVERBS_NAMED_METHOD_DESTROY(WEFT_IB_METHOD_CNTR_DESTROY,
				    UVERBS_ATTR_IDR(WEFT_IB_ATTR_CNTR_DESTROY_HANDLE,
						    WEFT_IB_OBJECT_CNTR, UVERBS_ACCESS_DESTROY,
						    UA_MANDATORY));

DECLARE_UVERBS_NAMED_METHOD(WEFT_IB_METHOD_CNTR_BIND,
			    UVERBS_ATTR_IDR(WEFT_IB_ATTR_CNTR_BIND_HANDLE, WEFT_IB_OBJECT_CNTR,
					    UVERBS_ACCESS_READ, UA_MANDATORY),
			    UVERBS_ATTR_IDR(WEFT_IB_ATTR_CNTR_BIND_QP, UVERBS_OBJECT_QP,
					    UVERBS_ACCESS_READ, UA_MANDATORY),
			    UVERBS_ATTR_PTR_IN(WEFT_IB_ATTR_CNTR_BIND_SLOT, UVERBS_ATTR_TYPE(u32),
					       UA_MANDATORY),
			    UVERBS_ATTR_PTR_IN(WEFT_IB_ATTR_CNTR_BIND_EVENTS,
					       UVERBS_ATTR_TYPE(u32), UA_MANDATORY));

DECLARE_UVERBS_NAMED_METHOD(WEFT_IB_METHOD_CNTR_SET,
			    UVERBS_ATTR_IDR(WEFT_IB_ATTR_CNTR_SET_HANDLE, WEFT_IB_OBJECT_CNTR,
					    UVERBS_ACCESS_READ, UA_MANDATORY),
			    UVERBS_ATTR_PTR_IN(WEFT_IB_ATTR_CNTR_SET_OP, UVERBS_ATTR_TYPE(u32),
					       UA_MANDATORY),
			    UVERBS_ATTR_PTR_IN(WEFT_IB_ATTR_CNTR_SET_WORD, UVERBS_ATTR_TYPE(u32),
					       UA_MANDATORY),
			    UVERBS_ATTR_PTR_IN(WEFT_IB_ATTR_CNTR_SET_VALUE, UVERBS_ATTR_TYPE(u64),
					       UA_MANDATORY),
			    UVERBS_ATTR_PTR_OUT(WEFT_IB_ATTR_CNTR_SET_RESULT,
						UVERBS_ATTR_TYPE(u64), UA_MANDATORY));

DECLARE_UVERBS_NAMED_OBJECT(WEFT_IB_OBJECT_CNTR,
			    UVERBS_TYPE_ALLOC_IDR(weft_ib_cntr_cleanup),
			    &UVERBS_METHOD(WEFT_IB_METHOD_CNTR_CREATE),
			    &UVERBS_METHOD(WEFT_IB_METHOD_CNTR_DESTROY),
			    &UVERBS_METHOD(WEFT_IB_METHOD_CNTR_BIND),
			    &UVERBS_METHOD(WEFT_IB_METHOD_CNTR_SET));

const struct uapi_definition weft_ib_cntr_defs[] = {
	UAPI_DEF_CHAIN_OBJ_TREE_NAMED(WEFT_IB_OBJECT_CNTR),
	{},
};
