// SPDX-License-Identifier: GPL-2.0
/*
 * weft.ko side of the verbs engine (docs/verbs-linux.md): the auxiliary
 * device weft_ib.ko binds to, the command block of VERBS_CMD, and the
 * forwarding of verbs events and recoveries to the companion.
 */
#include <linux/dma-mapping.h>
#include <linux/module.h>
#include <linux/slab.h>

#include "weft_drv.h"
#include "weft_verbs.h"

static void weft_adev_release(struct device *dev)
{
	struct auxiliary_device *adev = to_auxiliary_dev(dev);

	kfree(container_of(adev, struct weft_adev, adev));
}

/*
 * After an adapter recovery the adapter holds no verbs object (hw-spec
 * 16.1).  weft_ib is unbound from the auxiliary device (its ib_device
 * unregistered, user contexts disassociated) and bound again, so a new
 * ib_device comes up on the recovered adapter.
 */
static void weft_verbs_reprobe(struct work_struct *work)
{
	struct weft_dev *wdev = container_of(work, struct weft_dev, vreprobe);
	int ret;

	ret = device_reprobe(&wdev->adev->adev.dev);
	if (ret)
		dev_warn(&wdev->pdev->dev, "verbs companion not bound again after recovery: %d\n",
			 ret);
}

int weft_verbs_add(struct weft_dev *wdev)
{
	struct weft_adev *wa;
	int ret;

	INIT_WORK(&wdev->vreprobe, weft_verbs_reprobe);
	mutex_init(&wdev->vcmd_lock);
	wdev->vcmd = weft_coherent_alloc(wdev, WEFT_VCMD_BLOCK_SIZE, &wdev->vcmd_dma);
	if (!wdev->vcmd)
		return -ENOMEM;
	wa = kzalloc(sizeof(*wa), GFP_KERNEL);
	if (!wa) {
		ret = -ENOMEM;
		goto err_block;
	}
	wa->wdev = wdev;
	wa->adev.name = "rdma";
	wa->adev.id = wdev->id;
	wa->adev.dev.parent = &wdev->pdev->dev;
	wa->adev.dev.release = weft_adev_release;
	ret = auxiliary_device_init(&wa->adev);
	if (ret) {
		kfree(wa);
		goto err_block;
	}
	ret = auxiliary_device_add(&wa->adev);
	if (ret) {
		auxiliary_device_uninit(&wa->adev);
		goto err_block;
	}
	wdev->adev = wa;
	return 0;

err_block:
	weft_coherent_free(wdev, WEFT_VCMD_BLOCK_SIZE, wdev->vcmd, wdev->vcmd_dma);
	wdev->vcmd = NULL;
	return ret;
}

/* Unbinds weft_ib.ko from the adapter (it removes its ib_device first). */
void weft_verbs_del(struct weft_dev *wdev)
{
	if (!wdev->adev)
		return;
	cancel_work_sync(&wdev->vreprobe);
	auxiliary_device_delete(&wdev->adev->adev);
	auxiliary_device_uninit(&wdev->adev->adev);
	wdev->adev = NULL;
	weft_coherent_free(wdev, WEFT_VCMD_BLOCK_SIZE, wdev->vcmd, wdev->vcmd_dma);
	wdev->vcmd = NULL;
}

/* From weft_dispatch, evlock held: true if the event was a verbs one. */
bool weft_verbs_event(struct weft_dev *wdev, const struct weft_event *ev)
{
	lockdep_assert_held(&wdev->evlock);
	if (ev->type != WEFT_EV_VERBS_CQ && ev->type != WEFT_EV_VERBS_ASYNC)
		return false;
	if (wdev->vops && wdev->vops->event)
		wdev->vops->event(wdev->vpriv, ev);
	return true;
}

/* From weft_recover, wdev->lock held. */
void weft_verbs_recover(struct weft_dev *wdev, bool begin)
{
	lockdep_assert_held(&wdev->lock);
	if (!wdev->vops)
		return;
	if (wdev->vops->recover)
		wdev->vops->recover(wdev->vpriv, begin);
	if (!begin)
		schedule_work(&wdev->vreprobe);
}

void weft_verbs_set_ops(struct weft_dev *wdev, const struct weft_verbs_ops *ops,
			void *priv)
{
	unsigned long flags;

	mutex_lock(&wdev->lock);
	spin_lock_irqsave(&wdev->evlock, flags);
	wdev->vops = ops;
	wdev->vpriv = priv;
	spin_unlock_irqrestore(&wdev->evlock, flags);
	mutex_unlock(&wdev->lock);
}
EXPORT_SYMBOL_GPL(weft_verbs_set_ops);

/* Returns once no event handler runs any more on another CPU. */
void weft_verbs_sync(struct weft_dev *wdev)
{
	unsigned long flags;

	spin_lock_irqsave(&wdev->evlock, flags);
	spin_unlock_irqrestore(&wdev->evlock, flags);
}
EXPORT_SYMBOL_GPL(weft_verbs_sync);

int weft_vcmd_errno(u32 st)
{
	switch (st) {
	case WEFT_CMD_OK:
		return 0;
	case WEFT_CMD_EBUSY:
		return -EBUSY;
	case WEFT_CMD_ENOMEM:
		return -ENOMEM;
	case WEFT_CMD_EFAULT:
		return -EFAULT;
	default:
		return -EINVAL;
	}
}

/*
 * Runs one verbs command (hw-spec 16.4): the adapter executes it during
 * the VERBS_CMD write and writes the response into the block.
 */
int weft_vcmd(struct weft_dev *wdev, const struct weft_vcmd *cmd,
	      struct weft_vcmd_resp *resp)
{
	struct weft_vcmd_resp *r;
	int ret;

	mutex_lock(&wdev->vcmd_lock);
	if (wdev->dead || !wdev->vcmd) {
		mutex_unlock(&wdev->vcmd_lock);
		return -ENODEV;
	}
	memcpy(wdev->vcmd, cmd, sizeof(*cmd));
	r = (struct weft_vcmd_resp *)((u8 *)wdev->vcmd + sizeof(*cmd));
	memset(r, 0, sizeof(*r));
	weft_wr(wdev, WEFT_REG_VERBS_CMD, wdev->vcmd_dma);
	ret = weft_vcmd_errno(weft_rd(wdev, WEFT_REG_VERBS_CMD_STATUS));
	if (!ret)
		ret = weft_vcmd_errno(r->status);
	if (resp)
		memcpy(resp, r, sizeof(*r));
	if (ret)
		dev_dbg(&wdev->pdev->dev, "verbs command %u handle 0x%x: status %u reason %u\n",
			cmd->op, cmd->handle, r->status, r->reason);
	mutex_unlock(&wdev->vcmd_lock);
	return ret;
}
EXPORT_SYMBOL_GPL(weft_vcmd);

void weft_verbs_get_caps(struct weft_dev *wdev, struct weft_verbs_caps *caps)
{
	caps->nr_qp = weft_rd(wdev, WEFT_REG_VERBS_NR_QP);
	caps->nr_cq = weft_rd(wdev, WEFT_REG_VERBS_NR_CQ);
	caps->nr_pd = weft_rd(wdev, WEFT_REG_VERBS_NR_PD);
	caps->nr_tpt = weft_rd(wdev, WEFT_REG_VERBS_NR_TPT);
	caps->nr_uar = weft_rd(wdev, WEFT_REG_VERBS_NR_UAR);
	caps->uar_off = weft_rd(wdev, WEFT_REG_VERBS_UAR_OFF);
	caps->node_id = wdev->node_id;
	caps->nr_handlers = wdev->nr_handlers;
	/* An adapter that says more than its BAR 4 holds gets fewer pages. */
	if (caps->uar_off >= wdev->db_len)
		caps->nr_uar = 0;
	else
		caps->nr_uar = min_t(u64, caps->nr_uar,
				     (wdev->db_len - caps->uar_off) / PAGE_SIZE);
}
EXPORT_SYMBOL_GPL(weft_verbs_get_caps);

struct pci_dev *weft_verbs_pdev(struct weft_dev *wdev)
{
	return wdev->pdev;
}
EXPORT_SYMBOL_GPL(weft_verbs_pdev);

phys_addr_t weft_verbs_uar_phys(struct weft_dev *wdev, u32 uar)
{
	return wdev->db_phys + weft_rd(wdev, WEFT_REG_VERBS_UAR_OFF) +
	       (phys_addr_t)uar * PAGE_SIZE;
}
EXPORT_SYMBOL_GPL(weft_verbs_uar_phys);
