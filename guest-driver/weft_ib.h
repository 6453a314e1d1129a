/* SPDX-License-Identifier: GPL-2.0 */
/*
 * weft_ib.ko: the ib_device of a Weft adapter (docs/verbs-linux.md).
 * Internal definitions shared by the weft_ib_*.c files.
 */
#ifndef WEFT_IB_H
#define WEFT_IB_H

#include <linux/idr.h>
#include <linux/netdevice.h>
#include <linux/pci.h>
#include <linux/spinlock.h>
#include <linux/xarray.h>
#include <rdma/ib_umem.h>
#include <rdma/ib_verbs.h>
#include <rdma/uverbs_ioctl.h>

#include "weft_verbs.h"
#include "weft/ib-abi.h"

#define WEFT_IB_MAX_RING	(4u << 20)	/* largest contiguous ring */
#define WEFT_IB_MAX_CQ_LOG2	16u		/* ring + the consumer index page */
#define WEFT_IB_MAX_CQE		BIT(22)		/* depth of a deep CQ (weft_ib_cq.c) */
#define WEFT_IB_FRMR_PAGES	512u		/* fast-registration page list */
#define WEFT_IB_SQ_STRIDE_MIN	7u
#define WEFT_IB_SQ_STRIDE_MAX	9u
#define WEFT_IB_RQ_STRIDE_MIN	5u
#define WEFT_IB_RQ_STRIDE_MAX	9u
#define WEFT_IB_MAX_SEND_SGE	28u		/* (512 - 64) / 16 */
#define WEFT_IB_MAX_RECV_SGE	31u		/* (512 - 16) / 16 */
#define WEFT_IB_KERNEL_UAR	0u
#define WEFT_IB_MAX_SRQ_WR	BIT(12)		/* ring of 512-byte slots + index page */
/* Adapter formats (weft/verbs.h) are little-endian, as is the only CPU
 * weft.ko supports (it refuses big-endian builds): no byte swapping.
 */

/* A physically contiguous ring the adapter reads or writes. */
struct weft_ring {
	void *va;
	dma_addr_t dma;
	size_t size;		/* page-rounded */
};

struct weft_ibdev {
	struct ib_device ibdev;		/* first: ib_alloc_device */
	struct weft_dev *wdev;
	struct pci_dev *pdev;
	struct net_device *ndev;
	struct weft_verbs_caps caps;
	void __iomem *uar0;		/* the kernel's UAR page */
	struct ida pd_ida, cq_ida, qp_ida, tpt_ida, uar_ida, srq_ida;
	u32 qp_next;			/* where the next QP number is looked for */
	struct xarray cqs, qps, srqs;	/* by number, for events and poll */
	u8 *tpt_gen;			/* last Tag_Instance per Tag_Index */
	spinlock_t gen_lock;
	struct mutex gsi_lock;		/* gsi_used */
	bool gsi_used;
	struct notifier_block nb;
	enum ib_port_state port_state;
	bool fatal;			/* recovery dropped every object */
	struct dentry *dbg;
};

struct weft_ibucontext {
	struct ib_ucontext ibuc;
	u32 uar;
	struct rdma_user_mmap_entry *db_entry;
};

enum weft_mmap_type {
	WEFT_MMAP_UAR,
	WEFT_MMAP_RING,
	WEFT_MMAP_CNTR,		/* an event counter's page: a ring, read-only */
};

struct weft_mmap_entry {
	struct rdma_user_mmap_entry rdma;
	enum weft_mmap_type type;
	phys_addr_t phys;		/* UAR page */
	struct weft_ring ring;		/* RING: freed in mmap_free */
	struct weft_ibdev *dev;
};

struct weft_ibpd {
	struct ib_pd ibpd;
	u32 pdn;
};

/* What a UD send WQE carries of its address handle (hw-spec 16.13). */
struct weft_ibah {
	struct ib_ah ibah;
	u16 dest_node;
	u8 sgid_index, hop_limit, traffic_class;
	u32 flow_label;
	u8 dgid[16];
};

struct weft_ibcq {
	struct ib_cq ibcq;
	u32 cqn;
	u32 log2;
	u32 uar;
	spinlock_t lock;		/* poll, arm */
	struct mutex resize_lock;	/* user CQs: ring, entry, ci_ptr, log2 */
	u32 ci;				/* kernel CQs: consumer index */
	struct weft_ring ring;		/* ring, then the consumer index */
	u32 *ci_ptr;
	struct rdma_user_mmap_entry *entry;	/* user CQs */
	bool deep;			/* asked for more CQEs than the ring has */
	u32 charged;			/* deep: SQ/RQ slots of its QPs (lock) */
};

struct weft_ibqp {
	struct ib_qp ibqp;
	u32 qpn;
	u8 hw_type;			/* enum weft_vqp_type */
	u32 uar;
	bool user;
	u8 sq_log2, sq_stride, rq_log2, rq_stride;
	struct weft_ring sq, rq;
	struct rdma_user_mmap_entry *sq_entry, *rq_entry;
	spinlock_t sq_lock, rq_lock;
	u32 sq_prod, sq_ci, rq_prod, rq_ci;	/* kernel QPs */
	bool sig_all;
	struct mutex mod_lock;		/* modify/query: attr */
	struct ib_qp_attr attr;		/* what query_qp reports */
	struct ib_qp_cap cap;
};

struct weft_ibsrq {
	struct ib_srq ibsrq;
	u32 srqn;
	u32 log2, stride, max_sge;
	u32 uar;
	bool user;
	spinlock_t lock;		/* kernel post_srq_recv */
	u32 prod;			/* kernel SRQs: producer index */
	struct weft_ring ring;		/* ring, then the adapter's consumer index */
	u32 *ci_ptr;
	struct rdma_user_mmap_entry *entry;	/* user SRQs */
	u32 tm_cqn;			/* IB_SRQT_TM: CQ of its completions */
};

struct weft_ibmr {
	struct ib_mr ibmr;
	u32 index;			/* Tag_Index */
	struct ib_umem *umem;
	u64 *pages;			/* ATT page list (fast reg, user) */
	dma_addr_t pages_dma;
	size_t pages_size;
	u32 npages, max_pages;
};

struct weft_ibmw {
	struct ib_mw ibmw;
	u32 index;
};

static inline struct weft_ibdev *to_wdev(struct ib_device *d)
{
	return container_of(d, struct weft_ibdev, ibdev);
}

#define WEFT_IB_TO(type, member, ptr) container_of(ptr, struct type, member)
#define to_wpd(p)	WEFT_IB_TO(weft_ibpd, ibpd, p)
#define to_wah(p)	WEFT_IB_TO(weft_ibah, ibah, p)
#define to_wcq(p)	WEFT_IB_TO(weft_ibcq, ibcq, p)
#define to_wqp(p)	WEFT_IB_TO(weft_ibqp, ibqp, p)
#define to_wmr(p)	WEFT_IB_TO(weft_ibmr, ibmr, p)
#define to_wmw(p)	WEFT_IB_TO(weft_ibmw, ibmw, p)
#define to_wuc(p)	WEFT_IB_TO(weft_ibucontext, ibuc, p)
#define to_wsrq(p)	WEFT_IB_TO(weft_ibsrq, ibsrq, p)

/* weft_ib_main.c */
int weft_ib_ring_alloc(struct weft_ibdev *dev, size_t size, struct weft_ring *r);
void weft_ib_ring_unmap(struct weft_ibdev *dev, struct weft_ring *r);
void weft_ib_ring_free(struct weft_ibdev *dev, struct weft_ring *r);
int weft_ib_ring_publish(struct weft_ibdev *dev, struct ib_ucontext *uctx,
			 struct weft_ring *r, struct rdma_user_mmap_entry **entry,
			 u64 *offset);
void weft_ib_ring_retire(struct weft_ibdev *dev, struct weft_ring *r,
			 struct rdma_user_mmap_entry *entry);
int weft_ib_cmd(struct weft_ibdev *dev, struct weft_vcmd *cmd);
void weft_ib_doorbell(struct weft_ibdev *dev, u32 reg, u64 val);
int weft_ib_node_from_mac(const u8 *mac, u16 *node);

/* weft_ib_debugfs.c */
void weft_ib_debugfs_add(struct weft_ibdev *dev);
void weft_ib_debugfs_del(struct weft_ibdev *dev);
void weft_ib_debugfs_init(void);
void weft_ib_debugfs_exit(void);

/* weft_ib_cq.c */
#ifdef WEFT_HAVE_CREATE_CQ_ATTRS
int weft_ib_create_cq(struct ib_cq *ibcq, const struct ib_cq_init_attr *attr,
		      struct uverbs_attr_bundle *attrs);
#else
int weft_ib_create_cq(struct ib_cq *ibcq, const struct ib_cq_init_attr *attr,
		      struct ib_udata *udata);
#endif
int weft_ib_destroy_cq(struct ib_cq *ibcq, struct ib_udata *udata);
int weft_ib_resize_cq(struct ib_cq *ibcq, int cqe, struct ib_udata *udata);
int weft_ib_modify_cq(struct ib_cq *ibcq, u16 cq_count, u16 cq_period);
int weft_ib_fill_res_cq_entry(struct sk_buff *msg, struct ib_cq *ibcq);
int weft_ib_cq_charge(struct weft_ibqp *qp, const struct ib_qp_init_attr *init);
void weft_ib_cq_uncharge(struct weft_ibqp *qp);
int weft_ib_poll_cq(struct ib_cq *ibcq, int num, struct ib_wc *wc);
int weft_ib_req_notify_cq(struct ib_cq *ibcq, enum ib_cq_notify_flags flags);
void weft_ib_cq_event(struct weft_ibdev *dev, u32 cqn);

/* weft_ib_qp.c */
int weft_ib_create_qp(struct ib_qp *ibqp, struct ib_qp_init_attr *init,
		      struct ib_udata *udata);
int weft_ib_modify_qp(struct ib_qp *ibqp, struct ib_qp_attr *attr, int mask,
		      struct ib_udata *udata);
int weft_ib_query_qp(struct ib_qp *ibqp, struct ib_qp_attr *attr, int mask,
		     struct ib_qp_init_attr *init);
int weft_ib_destroy_qp(struct ib_qp *ibqp, struct ib_udata *udata);
int weft_ib_post_send(struct ib_qp *ibqp, const struct ib_send_wr *wr,
		      const struct ib_send_wr **bad);
int weft_ib_post_recv(struct ib_qp *ibqp, const struct ib_recv_wr *wr,
		      const struct ib_recv_wr **bad);
void weft_ib_qp_retire(struct weft_ibqp *qp, bool sq, u16 wqe_index);
void weft_ib_qp_event(struct weft_ibdev *dev, u32 qpn, enum ib_event_type type);

/* weft_ib_cntr.c: event counters (docs/counters.md) */
extern const struct uapi_definition weft_ib_cntr_defs[];
u8 weft_ib_access(int ib_access);

/* weft_ib_srq.c */
int weft_ib_create_srq(struct ib_srq *ibsrq, struct ib_srq_init_attr *init,
		       struct ib_udata *udata);
int weft_ib_modify_srq(struct ib_srq *ibsrq, struct ib_srq_attr *attr,
		       enum ib_srq_attr_mask mask, struct ib_udata *udata);
int weft_ib_query_srq(struct ib_srq *ibsrq, struct ib_srq_attr *attr);
int weft_ib_destroy_srq(struct ib_srq *ibsrq, struct ib_udata *udata);
int weft_ib_post_srq_recv(struct ib_srq *ibsrq, const struct ib_recv_wr *wr,
			  const struct ib_recv_wr **bad);
void weft_ib_srq_event(struct weft_ibdev *dev, u32 srqn);

/* weft_ib_mr.c */
struct ib_mr *weft_ib_get_dma_mr(struct ib_pd *ibpd, int access);
struct ib_mr *weft_ib_reg_user_mr(struct ib_pd *ibpd, u64 start, u64 length,
				  u64 virt, int access, struct ib_udata *udata);
struct ib_mr *weft_ib_alloc_mr(struct ib_pd *ibpd, enum ib_mr_type type,
			       u32 max_num_sg);
int weft_ib_map_mr_sg(struct ib_mr *ibmr, struct scatterlist *sg, int nents,
		      unsigned int *offset);
int weft_ib_dereg_mr(struct ib_mr *ibmr, struct ib_udata *udata);
int weft_ib_alloc_mw(struct ib_mw *ibmw, struct ib_udata *udata);
int weft_ib_dealloc_mw(struct ib_mw *ibmw);

#endif /* WEFT_IB_H */
