/* SPDX-License-Identifier: MIT */
/*
 * Weft's libfabric provider (docs/libfabric.md): FI_EP_RDM over RC QPs of
 * the Weft rdma-core provider, all attached to one tag-matching SRQ per
 * endpoint, so the adapter matches FI_TAGGED (and FI_MSG) receives.
 * Written against libfabric's public headers only.
 */
#ifndef WFI_H
#define WFI_H

#include <netinet/in.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <infiniband/tm_types.h>
#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>
#include <rdma/fabric.h>
#include <rdma/fi_atomic.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_eq.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_rma.h>
#include <rdma/fi_tagged.h>
#include <rdma/fi_trigger.h>
#include <rdma/providers/fi_prov.h>

#include "fi_weft.h"
#include "wire.h"

#define WFI_NAME "weft"
#define WFI_PROV_VERSION FI_VERSION(1, 0)
#define WFI_IFACE "weft0"		/* the netdev of weft_ib0 (docs/net.md) */

/* The wire's layout, tag bits and messages are wire.h's. */
_Static_assert(WFI_HDR == sizeof(struct ibv_tmh), "TMH size");
_Static_assert(WFI_RVH == sizeof(struct ibv_rvh), "RVH size");
_Static_assert((int)WFI_OP_NO_TAG == IBV_TMH_NO_TAG && (int)WFI_OP_RNDV == IBV_TMH_RNDV &&
	       (int)WFI_OP_FIN == IBV_TMH_FIN && (int)WFI_OP_EAGER == IBV_TMH_EAGER, "TMH opcodes");

/* Limits (fi_info, docs/libfabric.md "Limits"). */
#define WFI_TX_SIZE 256			/* send operations per endpoint */
#define WFI_HW_RX 256			/* receives listed in the adapter (TM tags) */
#define WFI_RX_SIZE 8192		/* receives posted per endpoint, the rest software-listed */
#define WFI_PROMOTE_MAX 32		/* receives moved into the adapter per progress call */
#define WFI_SW_CLASSES 8		/* masks of software-listed receives with buckets of their own */
#define WFI_SW_BUCKET_BITS 10		/* (mask, tag) buckets of the software list: 1024 */
#define WFI_SW_BUCKETS (1 << WFI_SW_BUCKET_BITS)
#define WFI_SRQ_WQES 128		/* SRQ buffers */
#define WFI_UX_MAX 16384		/* unexpected messages held per endpoint */
#define WFI_UX_BYTES (64u << 20)	/* and their payload bytes */
#define WFI_CQ_SIZE 1024		/* default fi_cq size */
#define WFI_VCQ_SIZE 16384		/* the endpoint's verbs CQ */
#define WFI_QP_WR 128			/* send WRs per RC QP */
#define WFI_AV_MAX 4096
#define WFI_CONNECT_MS 20000
#define WFI_CNT_SLOTS 3			/* counter slots per QP (docs/counters.md "Event counters") */
#define WFI_CNT_EV_WRITE 0x01u		/* a slot's events: RDMA WRITEs placed, atomics applied */
#define WFI_CNT_EV_READ 0x02u		/* RDMA READs served */

/* An event counter of the adapter (hwcntr.c): its uverbs handle and its
 * status block (struct weft_cnt_ev_block) mapped read-only; blk NULL:
 * none. */
struct wfi_hwcntr {
	uint32_t handle;
	const volatile void *blk;
};

/* fi_ep_alias: another fid_ep of an endpoint with its own default flags. */
struct wfi_alias {
	struct fid_ep ep_fid;
	struct wfi_ep *ep;
	uint64_t flags;			/* FI_TRANSMIT or FI_RECV and op flags */
};

/* An operation deferred until a counter reaches a threshold: posted with
 * FI_TRIGGER (per endpoint) or queued with fi_control(FI_QUEUE_WORK) (per
 * domain), copied in full when queued (trigger.c). */
struct wfi_trig {
	bool used;
	bool hw;			/* FI_TRIGGER held by the adapter: a WAIT_CNT before it */
	bool recall;			/* hw: its trigger QP stopped (a software move of its counter) */
	int tx;				/* hw: the send slot of its operation */
	struct wfi_peer *peer;		/* hw: the peer whose trigger QP holds it */
	struct wfi_tq *tq;		/* hw: that trigger connection */
	enum fi_op_type type;
	struct wfi_ep *ep;		/* NULL for FI_OP_CNTR_SET/ADD */
	void *buf, *desc, *ctx, *result;
	size_t len;
	fi_addr_t dest;
	uint64_t addr, key, tag, ignore, data, flags, threshold;
	uint64_t operand, compare;	/* atomics */
	enum fi_datatype dt;
	enum fi_op op;
	struct fid_cntr *cntr;		/* the triggering counter */
	struct fid_cntr *comp;		/* FI_QUEUE_WORK's completion counter */
	struct fid_cntr *target;	/* FI_OP_CNTR_SET/ADD: the counter and value */
	uint64_t value;
};
#define WFI_TRIG_MAX 64
#define WFI_DOM_EPS 64

/* The endpoint name (docs/libfabric.md "Names"): its rdma_cm address and
 * port, and in sin_zero its incarnation (8 bytes, big-endian), drawn at
 * random when it is enabled; 0 in a name means whoever listens there. */
struct wfi_addr {
	struct sockaddr_in sin;
};

static inline uint64_t wfi_name_inc(const struct sockaddr_in *sin)
{
	const uint8_t *b = (const uint8_t *)sin->sin_zero;
	uint64_t v = 0;
	int i;

	for (i = 0; i < 8; i++)
		v = v << 8 | b[i];
	return v;
}

static inline void wfi_name_set_inc(struct sockaddr_in *sin, uint64_t v)
{
	uint8_t *b = (uint8_t *)sin->sin_zero;
	int i;

	for (i = 7; i >= 0; i--, v >>= 8)
		b[i] = (uint8_t)v;
}

/* Do two names have the same address and port (whatever incarnations)? */
static inline bool wfi_same_place(const struct sockaddr_in *a, const struct sockaddr_in *b)
{
	return a->sin_addr.s_addr == b->sin_addr.s_addr && a->sin_port == b->sin_port;
}

struct wfi_fabric {
	struct fid_fabric fabric_fid;
};

/* A registration of a user buffer (docs/libfabric.md "Registration
 * cache"): cached in the domain's table, or made for one operation. */
struct wfi_reg {
	struct ibv_mr *mr;
	uintptr_t start;		/* the registered range */
	size_t len;
	uint64_t *pfn;			/* cached: each page's frame when registered */
	uint64_t last;			/* cached: last use (LRU) */
	int refs;			/* operations using it */
	bool cached;			/* in the table */
};
#define WFI_MRC_ENTRIES 64		/* cached registrations per domain */
#define WFI_MRC_BYTES (256ull << 20)	/* and the bytes they pin */
#define WFI_MRC_REGION (64ull << 20)	/* largest registration cached */

struct wfi_mrc {
	struct wfi_reg *ent[WFI_MRC_ENTRIES];
	int n;
	int pagemap;			/* /proc/self/pagemap; -1: cache off */
	long page;
	uint64_t tick;
	uint64_t *scratch;		/* WFI_MRC_REGION's frames */
	struct fi_weft_mrc_stats st;
};

struct wfi_domain {
	struct fid_domain domain_fid;
	struct wfi_fabric *fabric;
	struct ibv_context *ctx;	/* librdmacm's context of weft_ib0 */
	struct ibv_pd *pd;
	uint32_t max_tags;		/* tm_caps.max_num_tags */
	uint64_t mr_mode;
	pthread_mutex_t lock;		/* FI_THREAD_SAFE: every call under it */
	int refs;
	struct wfi_mrc mrc;		/* the registration cache */
	struct wfi_trig work[WFI_TRIG_MAX];	/* FI_QUEUE_WORK, bounded */
	int nwork;
	bool working;			/* running deferred work (no reentry) */
	struct wfi_ep *eps[WFI_DOM_EPS];	/* its endpoints (unbound counters) */
	int neps;
	bool keyed_mode;		/* FI_RMA without FI_MR_PROV_KEY (key.c) */
	struct wfi_mr **keyed;		/* its regions by requested key */
	size_t nkeyed, capkeyed;
};

struct wfi_av {
	struct fid_av av_fid;
	struct wfi_domain *dom;
	enum fi_av_type type;
	size_t count, cap;
	struct sockaddr_in *tab;
	uint8_t *used;
	int refs;
};

struct wfi_cq_ent {
	struct fi_cq_tagged_entry e;
	fi_addr_t src;
};

struct wfi_cq {
	struct fid_cq cq_fid;
	struct wfi_domain *dom;
	enum fi_cq_format format;
	struct wfi_cq_ent *ring;	/* bounded: size entries */
	size_t size, head, count;
	struct fi_cq_err_entry *err;	/* bounded: size entries */
	size_t ehead, ecount;
	struct wfi_ep *eps[8];		/* endpoints bound to it (progress) */
	int signaled;			/* fi_cq_signal: the next sread returns */
	int neps;
	int refs;
};

struct wfi_mr {
	struct fid_mr mr_fid;
	struct wfi_domain *dom;
	struct ibv_mr *mr;
	uint64_t key;			/* the requested key (keyed mode) */
};

/* A target region learnt from its endpoint (key.c). */
struct wfi_rkey {
	bool used, found;
	int peer;			/* index in the endpoint's peers */
	uint32_t rkey;
	uint64_t key, va, len;
};
#define WFI_RKEYS 32

enum wfi_conn_state { WFI_C_NONE, WFI_C_CONNECTING, WFI_C_UP, WFI_C_FAILED };

/* A trigger connection to a peer (trigger.c "In the adapter"): it
 * carries only WAIT_CNTs on one counter (cntr) and their operations, in
 * non-decreasing threshold order (last). */
struct wfi_tq {
	bool used;			/* taken by cntr, for good */
	struct rdma_cm_id *id;
	enum wfi_conn_state state;
	int err;
	uint8_t hw;			/* its counter slots bound, as hw_out */
	int slot;			/* the slot bound to cntr */
	struct fid_cntr *cntr;
	uint64_t serial;		/* cntr's serial (wfi_cntr_serial) */
	uint64_t last;
	bool off;			/* failed or stopped: software from then on */
};
#define WFI_TQ_MAX 4			/* trigger connections per peer (counters) */

struct wfi_peer {
	struct sockaddr_in sin;		/* the peer endpoint's name */
	uint16_t my_id;			/* our id at the peer (from its accept) */
	enum wfi_conn_state state;
	struct rdma_cm_id *out;		/* the connection we opened to send */
	int err;
	uint8_t hw_out;			/* the out QP's counter slots bound (bit s: slot s) */
	/* The trigger connections (trigger.c "In the adapter"), one per
	 * triggering counter, made on the first triggered operation on that
	 * counter to this peer that the adapter can hold. */
	struct wfi_tq tq[WFI_TQ_MAX];
	bool dead;			/* a connection with it dropped (peer_dead) */
	bool gone;			/* and what came before is taken (wfi_conn_settle) */
};

/* A send: eager (bounce buffer) or rendezvous (the user buffer, FIN). */
struct wfi_tx {
	void *ctx;
	uint64_t tag, len;
	uint64_t cflags;		/* the completion's flags */
	struct wfi_reg *reg;		/* rendezvous, RMA: the user buffer's MR */
	uint32_t qpn;			/* rendezvous: the QP it went on (FIN) */
	uint32_t app_ctx;		/* rendezvous: its TMH app_ctx (FIN) */
	void *result;			/* fetching atomic: 8 bytes from the slot */
	struct fid_cntr *ccntr;		/* deferred work's completion counter */
	bool hw;			/* its WQE names a counter slot: the adapter counts it */
	int trig;			/* a held trigger's op: its entry + 1 until its WAIT_CNT passed */
	bool recalled;			/* flushed behind a recalled WAIT_CNT: no completion */
	int flushes;			/* held: its WQEs (each flush gives a completion) */
	bool busy, signal, internal, rndv, sent, fin;
};
#define WFI_TX_FIN 16			/* slots kept for FINs */
#define WFI_TX_USER (WFI_TX_SIZE - WFI_TX_FIN)

/* A posted receive: listed in the adapter (HW) or in software (SW, once
 * the adapter's tags are taken: docs/libfabric.md "Posted receives beyond
 * the adapter"), matched (MATCHED),
 * being deleted to take an unexpected message (DEL) or to cancel it
 * (CANCEL), reading a rendezvous (READ), waiting for a FIN slot (FIN),
 * completed but waiting for its DEL's completion (DONE). */
enum wfi_rx_state {
	WFI_RX_FREE, WFI_RX_HW, WFI_RX_SW, WFI_RX_MATCHED, WFI_RX_DEL, WFI_RX_CANCEL, WFI_RX_READ,
	WFI_RX_FIN, WFI_RX_DONE,
};

struct wfi_rx {
	void *ctx;
	uint8_t *buf;			/* the user's buffer */
	uint64_t len, tag, mask, flags;	/* wire tag and mask */
	uint64_t seq;			/* post order */
	uint32_t handle;		/* TM handle while listed */
	int sw_next, sw_prev;		/* SW: the software list, in post order */
	int bk_next, bk_prev;		/* SW: its bucket (or the unbucketed list), in post order */
	int sw_class;			/* SW: its mask's class, -1: unbucketed */
	struct wfi_reg *reg;		/* > eager: the user buffer's MR */
	int ux;				/* DEL: the unexpected message (SRQ slot) */
	uint64_t got_tag, got_len;
	uint32_t got_data;		/* remote CQ data (WFI_DATA_BIT) */
	struct rdma_cm_id *from;	/* rendezvous: the sender's connection */
	uint32_t fin_ctx;		/* rendezvous: the sender's app_ctx */
	struct fid_cntr *ccntr;		/* deferred work's completion counter */
	enum wfi_rx_state state;
	bool msg, bounce, del_pending;
	int err;			/* CANCEL: the error (0: FI_ECANCELED) */
};

/* An unexpected message: its eager payload copied out of the SRQ buffer
 * (so the SRQ never stalls on messages software holds), or its
 * rendezvous header.  WFI_UX_MAX of them and WFI_UX_BYTES of payload at
 * most: beyond, the progress loop stops taking arrivals and the adapter's
 * RNR flow control holds the senders. */
struct wfi_ux {
	uint8_t *buf;			/* eager payload (malloc) */
	int next, prev;			/* arrival-order list of held messages */
	uint64_t tag, len;		/* wire tag, payload length */
	uint64_t seq;			/* arrival order */
	bool used, rndv, claimed, taken;
	void *claim_ctx;		/* FI_CLAIM */
	struct wfi_wire_rvh rvh;
	uint32_t app_ctx;
	uint32_t data;			/* remote CQ data */
	struct rdma_cm_id *from;
};

struct wfi_ep {
	struct fid_ep ep_fid;
	struct wfi_domain *dom;
	struct fi_info *info;
	struct wfi_av *av;
	struct wfi_cq *tx_cq, *rx_cq;
	struct fid_cntr *tx_cntr, *rx_cntr, *rd_cntr, *wr_cntr;	/* FI_SEND, RECV, READ, WRITE */
	struct fid_cntr *rrd_cntr, *rwr_cntr;	/* FI_REMOTE_READ, FI_REMOTE_WRITE (FI_RMA_EVENT) */
	bool tx_sel, rx_sel, enabled;
	uint64_t tx_op_flags, rx_op_flags;
	struct wfi_addr name;
	struct rdma_event_channel *ch;
	struct rdma_cm_id *listen;
	struct ibv_cq_ex *vcq;
	struct ibv_srq *srq;
	uint8_t *slots;			/* tx bounces, rx bounces, SRQ buffers */
	struct ibv_mr *slots_mr;
	struct wfi_tx tx[WFI_TX_SIZE];
	struct wfi_rx rx[WFI_RX_SIZE];	/* [0, hw_rx): may be listed in the adapter */
	int hw_rx;			/* adapter tags used (tm_caps.max_num_tags, <= WFI_HW_RX) */
	int sw_free[WFI_RX_SIZE];	/* stack of free receives [hw_rx, WFI_RX_SIZE) */
	int sw_nfree;
	int sw_head, sw_tail, nsw;	/* the software-listed receives, oldest first */
	/* The software list again, by key (docs/libfabric.md "Posted receives
	 * beyond the adapter"): each receive whose mask has a class is in the
	 * bucket of (class, tag), the others in one unbucketed list; all in
	 * post order. */
	uint64_t sw_cmask[WFI_SW_CLASSES];	/* a class's mask */
	int sw_cref[WFI_SW_CLASSES];	/* its receives (0: the class is free) */
	int sw_bhead[WFI_SW_BUCKETS], sw_btail[WFI_SW_BUCKETS];
	int sw_ohead, sw_otail;		/* the unbucketed receives */
	struct fi_weft_rx_stats rx_st;	/* FI_WEFT_RX_OPS */
	int nfin;			/* receives in WFI_RX_FIN */
	struct wfi_ux *ux;		/* WFI_UX_MAX */
	int *ux_free;			/* stack of free ux indices */
	int ux_nfree, ux_head, ux_tail;
	size_t ux_bytes;
	uint64_t ux_dropped;		/* arrivals lost to a failed malloc */
	uint64_t rx_seq, ux_seq;
	bool rvh;			/* rendezvous as TMH RNDV (unless WEFT_FI_RNDV=eager) */
	struct wfi_trig trig[WFI_TRIG_MAX];	/* FI_TRIGGER, bounded */
	int ntrig;
	struct fid_cntr *work_cntr;	/* completion counter of the op being posted */
	struct wfi_rkey rkeys[WFI_RKEYS];	/* keyed mode: regions learnt */
	unsigned int rkey_next;
	int keyq_peer;			/* the peer a key query waits on, or -1 */
	uint64_t keyq_key;
	bool log;			/* WEFT_FI_LOG: completion errors, CM events on stderr */
	uint32_t unexp_cnt;		/* unexpected messages seen (TM sync) */
	uint32_t sync_sent;		/* the count the last tag operation carried */
	struct wfi_peer *peers;		/* index + 1 = the peer's id here */
	int npeers;
	struct rdma_cm_id *in[WFI_MAX_PEERS];	/* accepted connections */
	uint8_t in_hw[WFI_MAX_PEERS];	/* their counter slots bound (bit s: slot s) */
	int nin;
	int ndead;			/* peers gone */
	bool settle;			/* a peer is dead, not gone yet */
	uint64_t wire_refused[WFI_WIRE_NREASONS];	/* peers' messages refused (wfi_refuse) */
};

extern struct fi_provider wfi_prov;

static inline uint8_t *wfi_tx_slot(struct wfi_ep *ep, int i)
{
	return ep->slots + (size_t)i * WFI_SLOT;
}

static inline uint8_t *wfi_rx_slot(struct wfi_ep *ep, int i)
{
	return ep->slots + (size_t)(WFI_TX_SIZE + i) * WFI_SLOT;
}

static inline uint8_t *wfi_ux_slot(struct wfi_ep *ep, int i)
{
	return ep->slots + (size_t)(WFI_TX_SIZE + WFI_HW_RX + i) * WFI_SLOT;
}

#define WFI_NSLOTS (WFI_TX_SIZE + WFI_HW_RX + WFI_SRQ_WQES)

/* wr_id of the endpoint's work requests: kind in the top byte. */
enum { WFI_WR_TX = 1, WFI_WR_RX, WFI_WR_UX, WFI_WR_OP, WFI_WR_READ, WFI_WR_TRIG };
#define WFI_WR(kind, i) (((uint64_t)(kind) << 56) | (uint32_t)(i))
#define WFI_WR_KIND(w) ((int)((w) >> 56))
#define WFI_WR_IDX(w) ((int)(uint32_t)(w))
#define WFI_WR_ADD (1ull << 32)		/* WFI_WR_OP: a TAG_ADD (else DEL or SYNC) */

/* info.c */
int wfi_getinfo(uint32_t version, const char *node, const char *service, uint64_t flags,
		const struct fi_info *hints, struct fi_info **info);
int wfi_local_addr(struct sockaddr_in *sin);
/* fabric.c */
int wfi_fabric(struct fi_fabric_attr *attr, struct fid_fabric **fabric, void *context);
/* eq.c */
int wfi_eq_open(struct fid_fabric *fabric, struct fi_eq_attr *attr, struct fid_eq **eq,
		void *context);
/* domain.c */
int wfi_domain_open(struct fid_fabric *fabric, struct fi_info *info, struct fid_domain **dom,
		    void *context);
/* av.c */
int wfi_av_open(struct fid_domain *domain, struct fi_av_attr *attr, struct fid_av **av,
		void *context);
int wfi_av_get(struct wfi_av *av, fi_addr_t a, struct sockaddr_in *sin);
fi_addr_t wfi_av_find(struct wfi_av *av, const struct sockaddr_in *sin);
/* cq.c */
int wfi_cq_open(struct fid_domain *domain, struct fi_cq_attr *attr, struct fid_cq **cq,
		void *context);
bool wfi_cq_room(struct wfi_cq *cq);
void wfi_cq_put(struct wfi_cq *cq, void *ctx, uint64_t flags, size_t len, void *buf,
		uint64_t data, uint64_t tag, fi_addr_t src);
void wfi_cq_err(struct wfi_cq *cq, void *ctx, uint64_t flags, int err, size_t len, uint64_t tag,
		size_t olen);
/* trigger.c */
int wfi_trig_add(struct wfi_ep *ep, const struct wfi_trig *w);
void wfi_trig_progress(struct wfi_ep *ep);
int wfi_queue_work(struct wfi_domain *d, const struct fi_deferred_work *w);
void wfi_dom_forget_ep(struct wfi_domain *d, struct wfi_ep *ep);
void wfi_trig_wait_done(struct wfi_ep *ep, int i, int status);
void wfi_trig_recall(struct wfi_domain *d, struct fid_cntr *c);
void wfi_trig_close(struct wfi_ep *ep);
/* key.c */
int wfi_key_add(struct wfi_domain *d, struct wfi_mr *m, uint64_t key);
void wfi_key_del(struct wfi_domain *d, struct wfi_mr *m);
void wfi_key_note(struct wfi_ep *ep, const struct wfi_wire_msg *m, uint32_t qpn);
int wfi_key_target(struct wfi_ep *ep, fi_addr_t dest, size_t len, uint64_t *addr,
		   uint64_t *key);
/* atomic.c */
enum { WFI_ATOMIC_BASE, WFI_ATOMIC_FETCH, WFI_ATOMIC_COMPARE };
int wfi_atomic_valid(int kind, enum fi_datatype dt, enum fi_op op, size_t *count);
ssize_t wfi_atomic_post(struct wfi_ep *ep, int kind, const void *operand, size_t count,
			const void *compare, void *result, fi_addr_t dest, uint64_t addr,
			uint64_t key, enum fi_datatype dt, enum fi_op op, void *ctx,
			uint64_t flags);
int wfi_atomic_kind(enum fi_op_type type);
ssize_t wfi_atomic_held(struct wfi_ep *ep, struct wfi_trig *t, int idx);
int wfi_query_atomic(struct fid_domain *d, enum fi_datatype dt, enum fi_op op,
		     struct fi_atomic_attr *attr, uint64_t flags);
extern struct fi_ops_atomic wfi_atomic_ops;
ssize_t wfi_rma(struct wfi_ep *ep, bool write, void *buf, size_t len, void *desc,
		fi_addr_t peer_addr, uint64_t addr, uint64_t key, uint64_t data, void *ctx,
		uint64_t flags);
ssize_t wfi_rma_held(struct wfi_ep *ep, struct wfi_trig *t, int idx);
struct ibv_qp *wfi_wait_before(struct wfi_trig *t, int idx, struct ibv_send_wr *wait,
			       struct ibv_send_wr *wr);
void wfi_tx_held(struct wfi_tx *x, int i, struct wfi_trig *t, int idx, const struct ibv_send_wr *wr);
void wfi_note_after(struct wfi_ep *ep, int i, struct ibv_send_wr *wr, struct ibv_send_wr *nwr,
		    struct ibv_sge *nsge, uint32_t kind, uint64_t data);
void wfi_rma_note(struct wfi_ep *ep, const struct wfi_wire_msg *m, uint32_t qpn);
void wfi_rma_count(struct wfi_ep *ep, uint8_t mask, struct wfi_tx *t, struct ibv_send_wr *wr,
		   struct fid_cntr *c);
/* cntr.c */
int wfi_cntr_open(struct fid_domain *domain, struct fi_cntr_attr *attr, struct fid_cntr **cntr,
		  void *context);
uint64_t wfi_cntr_value(struct fid_cntr *c);
void wfi_cntr_inc(struct fid_cntr *c, bool err);
void wfi_cntr_move(struct fid_cntr *c, bool set, uint64_t value);
int wfi_cntr_bind_ep(struct fid_cntr *c, struct wfi_ep *ep, uint64_t flag);
void wfi_cntr_unbind_ep(struct fid_cntr *c, struct wfi_ep *ep);
uint8_t wfi_cntr_qp(struct wfi_ep *ep, struct ibv_qp *qp, bool in);
unsigned int wfi_cntr_send_flags(struct wfi_ep *ep, uint8_t mask, struct fid_cntr *c);
void wfi_cntr_hw_done(struct fid_cntr *c);
void wfi_cntr_hw_flushed(struct fid_cntr *c, int n);
void wfi_cntr_remote(struct wfi_ep *ep, struct fid_cntr *c, uint32_t qpn, unsigned int ev);
const char *wfi_cntr_trig_exact(struct fid_cntr *c, struct wfi_domain *d);
enum wfi_trig_ev { WFI_TRIG_HW, WFI_TRIG_SW, WFI_TRIG_ENDED, WFI_TRIG_RECALLED };
void wfi_cntr_trig_count(struct fid_cntr *c, enum wfi_trig_ev ev);
uint64_t wfi_cntr_block(struct fid_cntr *c);
uint64_t wfi_cntr_serial(struct fid_cntr *c);
int wfi_cntr_qp_wait(struct wfi_ep *ep, struct ibv_qp *qp, uint8_t mask, struct fid_cntr *c);
/* hwcntr.c */
int wfi_hw_create(struct ibv_context *ctx, struct wfi_hwcntr *h);
void wfi_hw_destroy(struct ibv_context *ctx, struct wfi_hwcntr *h);
int wfi_hw_bind(struct ibv_context *ctx, const struct wfi_hwcntr *h, struct ibv_qp *qp,
		uint32_t slot, uint32_t events);
int wfi_hw_set(struct ibv_context *ctx, const struct wfi_hwcntr *h, uint32_t op, uint32_t word,
	       uint64_t value, uint64_t *result);
void wfi_hw_read(const struct wfi_hwcntr *h, uint64_t *count, uint64_t *errors);
unsigned int wfi_hw_send_flags(int s);
/* mr.c */
int wfi_mr_reg(struct fid *fid, const void *buf, size_t len, uint64_t access, uint64_t offset,
	       uint64_t requested_key, uint64_t flags, struct fid_mr **mr, void *context);
int wfi_mr_regv(struct fid *fid, const struct iovec *iov, size_t count, uint64_t access,
		uint64_t offset, uint64_t requested_key, uint64_t flags, struct fid_mr **mr,
		void *context);
int wfi_mr_regattr(struct fid *fid, const struct fi_mr_attr *attr, uint64_t flags,
		   struct fid_mr **mr);
/* mrcache.c */
void wfi_mrc_init(struct wfi_domain *d);
void wfi_mrc_fini(struct wfi_domain *d);
struct wfi_reg *wfi_reg_get(struct wfi_domain *d, void *buf, size_t len, int access);
void wfi_reg_put(struct wfi_domain *d, struct wfi_reg *r);
int wfi_domain_ops_open(struct fid *fid, const char *name, uint64_t flags, void **ops, void *ctx);
/* ep.c */
struct wfi_ep *wfi_ep_of(struct fid_ep *fep);
uint64_t wfi_op_flags(struct fid_ep *fep, uint64_t dir);
int wfi_ep_open(struct fid_domain *domain, struct fi_info *info, struct fid_ep **ep,
		void *context);
/* conn.c */
int wfi_conn_listen(struct wfi_ep *ep);
void wfi_conn_progress(struct wfi_ep *ep);
int wfi_conn_get(struct wfi_ep *ep, fi_addr_t dest, struct wfi_peer **peer);
int wfi_peer_id(struct wfi_ep *ep, const struct sockaddr_in *sin);
fi_addr_t wfi_peer_fi_addr(struct wfi_ep *ep, uint64_t wire_tag);
void wfi_conn_close(struct wfi_ep *ep);
struct rdma_cm_id *wfi_conn_by_qpn(struct wfi_ep *ep, uint32_t qpn);
bool wfi_qpn_dead(struct wfi_ep *ep, uint32_t qpn);
bool wfi_conn_of_peer(struct wfi_ep *ep, const struct rdma_cm_id *id, int peer_id);
void wfi_conn_settle(struct wfi_ep *ep);
int wfi_conn_trig(struct wfi_ep *ep, struct wfi_peer *p, struct wfi_tq *q);
void wfi_conn_trig_stop(struct wfi_tq *q);
/* tx.c */
ssize_t wfi_send(struct wfi_ep *ep, const void *buf, size_t len, fi_addr_t dest, uint64_t tag,
		 uint64_t data, void *ctx, uint64_t flags, bool msg);
void wfi_tx_done(struct wfi_ep *ep, int i, int status);
int wfi_tx_slot_find(struct wfi_ep *ep, int first, int end);
int wfi_tx_begin(struct wfi_ep *ep, fi_addr_t dest, size_t len, void *ctx, uint64_t cflags,
		 uint64_t flags, struct wfi_peer **peer);
void wfi_tx_finish(struct wfi_ep *ep, struct wfi_tx *t, int status);
void wfi_tx_fin(struct wfi_ep *ep, uint32_t app_ctx, uint32_t qpn);
int wfi_post_fin(struct wfi_ep *ep, struct rdma_cm_id *id, uint32_t app_ctx);
void wfi_tx_peer_dead(struct wfi_ep *ep, uint32_t qpn);
/* rx.c */
ssize_t wfi_recv(struct wfi_ep *ep, void *buf, size_t len, fi_addr_t src, uint64_t tag,
		 uint64_t ignore, void *ctx, uint64_t flags, bool msg);
ssize_t wfi_cancel(fid_t fid, void *context);
void wfi_rx_tm(struct wfi_ep *ep, uint64_t wr_id, int status, unsigned int wc_flags,
	       uint32_t len, uint32_t qp_num, const struct ibv_wc_tm_info *tm);
void wfi_rx_unexpected(struct wfi_ep *ep, int slot, uint32_t len, uint32_t qp_num);
void wfi_rx_op_done(struct wfi_ep *ep, uint64_t wr_id, int status);
void wfi_rx_read_done(struct wfi_ep *ep, int i, int status);
void wfi_rx_retry_fin(struct wfi_ep *ep);
void wfi_rx_peer_dead(struct wfi_ep *ep);
void wfi_rx_promote(struct wfi_ep *ep);
int wfi_srq_post(struct wfi_ep *ep, int slot);
bool wfi_ux_room(struct wfi_ep *ep);
int wfi_ux_init(struct wfi_ep *ep);
void wfi_rx_init(struct wfi_ep *ep, uint32_t max_tags);
void wfi_ux_fini(struct wfi_ep *ep);
int wfi_tag_post(struct wfi_ep *ep, struct ibv_ops_wr *wr);
int wfi_ep_ops_open(struct fid *fid, const char *name, uint64_t flags, void **ops, void *ctx);
/* progress.c */
void wfi_progress(struct wfi_ep *ep);
void wfi_refuse(struct wfi_ep *ep, enum wfi_wire_reason why, uint32_t qpn);
/* api.c: the data-path entry points */
extern struct fi_ops_msg wfi_msg_ops;
extern struct fi_ops_tagged wfi_tagged_ops;
/* rma.c */
extern struct fi_ops_rma wfi_rma_ops;
/* ops.c: the operations the provider does not offer */
int wfi_no_bind(struct fid *fid, struct fid *bfid, uint64_t flags);
int wfi_no_control(struct fid *fid, int command, void *arg);
int wfi_no_ops_open(struct fid *fid, const char *name, uint64_t flags, void **ops, void *ctx);
int wfi_ops_named(struct fid *fid, const char *name, uint64_t flags, void **ops,
		  const char *want, void *table);

#endif
