/* SPDX-License-Identifier: GPL-2.0 */
/*
 * weft.ko's interface to its companion weft_ib.ko (docs/verbs-linux.md):
 * the auxiliary device of each adapter, verbs commands, and the events
 * and recoveries weft.ko forwards.
 */
#ifndef WEFT_VERBS_DRV_H
#define WEFT_VERBS_DRV_H

#include <linux/auxiliary_bus.h>
#include <linux/netdevice.h>

#include "weft/fifo.h"
#include "weft/verbs.h"

struct weft_dev;

/* The auxiliary device "weft.rdma.N" of adapter weftN. */
struct weft_adev {
	struct auxiliary_device adev;
	struct weft_dev *wdev;
};

/* What weft.ko calls in its companion; NULL hooks are skipped. */
struct weft_verbs_ops {
	/* WEFT_EV_VERBS_CQ / _ASYNC, from the interrupt path (evlock held). */
	void (*event)(void *priv, const struct weft_event *ev);
	/* Adapter recovery: before (begin) and after the adapter forgot every
	 * verbs object; wdev->lock held, may sleep.
	 */
	void (*recover)(void *priv, bool begin);
};

/* Verbs limits read from BAR 0 at probe. */
struct weft_verbs_caps {
	u32 nr_qp, nr_cq, nr_pd, nr_tpt, nr_uar;
	u64 uar_off;		/* BAR 4 offset of UAR page 0 */
	u16 node_id;
	u32 nr_handlers;
};

int weft_verbs_add(struct weft_dev *wdev);
void weft_verbs_del(struct weft_dev *wdev);
bool weft_verbs_event(struct weft_dev *wdev, const struct weft_event *ev);
void weft_verbs_recover(struct weft_dev *wdev, bool begin);
/* A WEFT_CMD_* status as an errno (the counter engine's commands too). */
int weft_vcmd_errno(u32 st);

/* Exported to weft_ib.ko. */
void weft_verbs_set_ops(struct weft_dev *wdev, const struct weft_verbs_ops *ops,
			void *priv);
void weft_verbs_sync(struct weft_dev *wdev);
int weft_vcmd(struct weft_dev *wdev, const struct weft_vcmd *cmd,
	      struct weft_vcmd_resp *resp);
void weft_verbs_get_caps(struct weft_dev *wdev, struct weft_verbs_caps *caps);
struct net_device *weft_verbs_netdev(struct weft_dev *wdev);
struct pci_dev *weft_verbs_pdev(struct weft_dev *wdev);
phys_addr_t weft_verbs_uar_phys(struct weft_dev *wdev, u32 uar);
/* Event counters (weft_cnt.c, docs/counters.md "Event counters"). */
int weft_cnt_ev_create(struct weft_dev *wdev, dma_addr_t block, u32 *id, u16 *gen);
int weft_cnt_ev_bind(struct weft_dev *wdev, u32 id, u16 gen, u32 qpn, u8 slot, u8 events);
int weft_cnt_ev_set(struct weft_dev *wdev, u32 id, u16 gen, u8 op, u8 word, u64 *val);
void weft_cnt_ev_destroy(struct weft_dev *wdev, u32 id, u16 gen);

#endif /* WEFT_VERBS_DRV_H */
