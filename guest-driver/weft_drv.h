/* SPDX-License-Identifier: GPL-2.0 */
/*
 * weft.ko: Linux driver for the Weft emulated RDMA switch adapter.
 * Internal definitions shared by the driver's source files.
 */
#ifndef WEFT_DRV_H
#define WEFT_DRV_H

#include <linux/atomic.h>
#include <linux/device.h>
#include <linux/fs.h>
#include <linux/io.h>
#include <linux/kref.h>
#include <linux/miscdevice.h>
#include <linux/list.h>
#include <linux/mutex.h>
#include <linux/pci.h>
#include <linux/scatterlist.h>
#include <linux/seq_file.h>
#include <linux/spinlock.h>
#include <linux/wait.h>
#include <linux/workqueue.h>
#include <linux/xarray.h>

#include "weft/hw.h"
#include "weft/sram.h"
#include "weft/fifo.h"
#include "weft/xlate.h"
#include "weft/counters.h"
#include "weft/uapi.h"
#include "policy/weft_policy.h"

#define WEFT_DRV_NAME		"weft"
#define WEFT_MAX_DEVS		16
#define WEFT_UEV_RING		256	/* events queued per fd */
#define WEFT_CMD_TIMEOUT_MS	1000
#define WEFT_CLOSE_DEF_MS	1000
#define WEFT_CLOSE_MAX_MS	60000

/*
 * mmap offsets: each window owns a 256 MiB region of the fd's offset
 * space; the doorbell page, the send FIFO and the receive FIFO sit at
 * fixed places in it.  FIFOs are at most 64 MiB.
 */
#define WEFT_MMAP_WIN_SHIFT	28
#define WEFT_MMAP_DB		0x0000000ull
#define WEFT_MMAP_SEND		0x4000000ull
#define WEFT_MMAP_RECV		0x8000000ull
#define WEFT_MMAP_WIN(w)	((u64)(w) << WEFT_MMAP_WIN_SHIFT)
/* Counter objects' status pages (weft_cnt.c): one page per object id. */
#define WEFT_MMAP_CNT		WEFT_MMAP_WIN(WEFT_MAX_WINDOWS)

/* Module parameters (weft_main.c). */
extern unsigned int weft_max_fifo_log2;
extern unsigned int weft_evq_log2;
extern unsigned int weft_tce_4k_entries;
extern unsigned int weft_tce_16m_entries;
extern unsigned int weft_tce_64k_tables;
extern unsigned int weft_tce_64k_entries;
extern bool weft_rereg_on_fatal;

/* Driver resource counters, module-wide, for leak checks (debugfs). */
struct weft_res {
	atomic_t devices;
	atomic_t ctxs;
	atomic_t windows;		/* windows open (incl. closing) */
	atomic_t windows_zombie;	/* close timed out, memory kept */
	atomic_t rcxts;			/* rCxts held by processes */
	atomic_t mrs;			/* memory registrations */
	atomic64_t pages_pinned;
	atomic64_t coherent_bytes;	/* DMA-coherent memory allocated */
	atomic64_t recoveries;		/* recoveries done by the driver */
	atomic64_t events;		/* adapter events consumed */
	atomic64_t uevents_dropped;	/* user events lost on a full ring */
};

extern struct weft_res weft_res;

/* One adapter's copy of a TCE table, in its own DMA memory. */
struct weft_tce_table {
	__le64 *va;
	dma_addr_t dma;
};

enum weft_win_state {
	WEFT_WS_OPEN,
	WEFT_WS_FATAL,		/* window fatal error reported */
	WEFT_WS_CLOSING,	/* Close Window issued, snapshot not yet clear */
	WEFT_WS_STALE,		/* invalidated by a recovery, still mapped */
};

struct weft_ctx;
struct weft_net;
struct weft_adev;
struct weft_verbs_ops;
struct weft_cnt_drv;

struct weft_window {
	struct weft_dev *wdev;
	struct weft_ctx *ctx;	/* NULL once a zombie */
	struct list_head node;	/* ctx->windows or wdev->zombies */
	u32 idx;
	u32 job_id;
	enum weft_win_state state;
	void *send_va, *recv_va;
	dma_addr_t send_dma, recv_dma;
	size_t send_size, recv_size;
	u32 nr_rcxt;		/* rCxts held */
};

/* One adapter's DMA mapping of a registration's pages. */
struct weft_mr_map {
	struct sg_table sgt;
	bool mapped;
};

/*
 * A registration: node-global (weft_mr.c), one PVO through every adapter;
 * map[] is indexed by the adapter's id.
 */
struct weft_mr {
	struct list_head node;	/* the node's registrations */
	u32 handle;
	u32 slot;
	u32 table;		/* index in the slot */
	u32 first;		/* first TCE */
	u32 nr_tce;
	u32 key;		/* 17-bit PVO key */
	u64 pvo;
	struct page **pages;
	unsigned long npages;
	struct weft_mr_map map[WEFT_MAX_DEVS];
	struct mm_struct *mm;	/* for locked_vm accounting */
};

struct weft_ctx {
	struct weft_dev *wdev;
	struct address_space *mapping;
	struct list_head node;		/* wdev->ctxs */
	struct list_head windows;
	struct xarray mrs;
	u32 slots;			/* bitmap of attached job slots */
	/* user events */
	spinlock_t evlock;
	wait_queue_head_t wq;
	struct weft_uevent ev[WEFT_UEV_RING];
	u32 ev_head, ev_count;
};

struct weft_handler {
	struct weft_dev *wdev;
	u32 idx;
	int irq;
	u64 count;
};

struct weft_dev {
	struct pci_dev *pdev;
	struct kref kref;
	int id;				/* N of /dev/weftN */
	char name[16];			/* "weftN" */
	struct miscdevice misc;
	void __iomem *regs;
	void __iomem *sram;
	resource_size_t sram_len;
	resource_size_t db_phys, db_len;

	/* identity */
	u64 hw_id;
	u16 node_id;
	u32 nr_windows, nr_rcxt, nr_handlers, nr_tce_tables;

	/* control path: everything below is under lock */
	struct mutex lock;
	bool dead;			/* removed: every call fails */
	bool recovering;
	struct list_head ctxs;
	struct list_head zombies;	/* windows whose close timed out */
	struct weft_window *win[WEFT_MAX_WINDOWS];
	u16 *rcxt_win;			/* owner window + 1, 0 = free */
	u32 *rcxt_ids;			/* storage of rcxt_ring */
	struct weft_rcxt_ring rcxt_ring;	/* free rCxts (policy) */
	u32 recovery_count;
	u64 closes, closes_waited;	/* Close Window: all, snapshot was busy */
	u64 close_snapshot;		/* Snapshot View right after the last close */
	/* this adapter's copy of the node's tables (weft_mr.c) */
	struct weft_tce_table tbl[WEFT_NR_JOB_SLOTS][WEFT_SLOT_TABLES];
	struct list_head node_link;	/* the node's adapters */

	/* event queue and interrupts */
	spinlock_t evlock;		/* evq consumption and win[] readers in IRQ */
	struct weft_event *evq;
	dma_addr_t evq_dma;
	u32 evq_entries;
	u64 evq_cons;
	struct weft_handler hdl[WEFT_MAX_HANDLERS];
	u64 evq_stale;
	struct work_struct recover_work;

	struct weft_net *net;		/* the weftN interface (weft_net.c) */

	/* verbs engine (weft_verbs.c) */
	struct mutex vcmd_lock;		/* the command block */
	void *vcmd;
	dma_addr_t vcmd_dma;
	struct weft_adev *adev;		/* auxiliary device of weft_ib.ko */
	struct work_struct vreprobe;	/* rebinds weft_ib after a recovery */
	const struct weft_verbs_ops *vops;	/* under lock and evlock */
	void *vpriv;

	/* counter engine (weft_cnt.c) */
	struct weft_cnt_drv *cnt;

	/* debugfs */
	struct dentry *dbg;
	u32 dbg_rcxt_first, dbg_rcxt_count;
};

static inline u64 weft_rd(struct weft_dev *wdev, u32 off)
{
	return readq(wdev->regs + off);
}

static inline void weft_wr(struct weft_dev *wdev, u32 off, u64 val)
{
	writeq(val, wdev->regs + off);
}

/* weft_main.c */
void weft_dev_put(struct weft_dev *wdev);
int weft_cmd(struct weft_dev *wdev, u32 reg, u64 val);
int weft_wait_snapshot(struct weft_dev *wdev, unsigned int timeout_ms);
int weft_recover(struct weft_dev *wdev, const char *why);
void weft_hw_setup(struct weft_dev *wdev);
void *weft_coherent_alloc(struct weft_dev *wdev, size_t size, dma_addr_t *dma);
void weft_coherent_free(struct weft_dev *wdev, size_t size, void *va,
			dma_addr_t dma);

/* weft_chr.c */
int weft_chr_add(struct weft_dev *wdev);
void weft_chr_del(struct weft_dev *wdev);
void weft_ctx_event(struct weft_ctx *ctx, u32 type, u32 window, u32 rcxt,
		    u32 reason, u64 info);
void weft_window_free(struct weft_window *win);
void weft_window_zap(struct weft_window *win);
int weft_window_close(struct weft_window *win, unsigned int timeout_ms);
void weft_rcxt_release_window(struct weft_dev *wdev, struct weft_window *win,
			      bool cmd);
void weft_ctx_teardown(struct weft_ctx *ctx);

/* weft_mr.c */
int weft_node_init(void);
void weft_node_fini(void);
int weft_slots_init(struct weft_dev *wdev);
void weft_slots_fini(struct weft_dev *wdev);
int weft_node_add(struct weft_dev *wdev);
void weft_node_del(struct weft_dev *wdev);
void weft_slots_program(struct weft_dev *wdev);
int weft_job_attach(struct weft_ctx *ctx, struct weft_ioc_job *job);
int weft_job_detach(struct weft_ctx *ctx, struct weft_ioc_job *job);
void weft_job_detach_all(struct weft_ctx *ctx);
int weft_job_slot(struct weft_ctx *ctx, u32 job_id);
int weft_reg_mr(struct weft_ctx *ctx, struct weft_ioc_reg_mr *arg);
int weft_dereg_mr(struct weft_ctx *ctx, u32 handle);
void weft_mr_release_all(struct weft_ctx *ctx, bool stale);
void weft_tce_show_dev(struct seq_file *m, struct weft_dev *wdev);
void weft_keys_show(struct seq_file *m);

/* weft_net.c */
int weft_net_add(struct weft_dev *wdev);
void weft_net_del(struct weft_dev *wdev);
bool weft_net_event(struct weft_dev *wdev, const struct weft_event *ev);
void weft_net_recover_begin(struct weft_dev *wdev);
void weft_net_recover_end(struct weft_dev *wdev);

/* weft_cnt.c (counter-bearing RDMA objects, docs/counters.md) */
int weft_cnt_add(struct weft_dev *wdev);
void weft_cnt_del(struct weft_dev *wdev);
void weft_cnt_free(struct weft_dev *wdev);
int weft_cnt_create(struct weft_ctx *ctx, struct weft_ioc_cnt_create *a);
int weft_cnt_post(struct weft_ctx *ctx, struct weft_ioc_cnt_post *a);
int weft_cnt_wait(struct weft_ctx *ctx, struct weft_ioc_cnt_wait *a);
int weft_cnt_destroy(struct weft_ctx *ctx, u32 id);
int weft_cnt_expose(struct weft_ctx *ctx, struct weft_ioc_cnt_expose *a);
int weft_cnt_unexpose(struct weft_ctx *ctx, u32 idx);
int weft_cnt_mmap(struct weft_ctx *ctx, struct vm_area_struct *vma, u64 off);
bool weft_cnt_event(struct weft_dev *wdev, const struct weft_event *ev);
void weft_cnt_teardown(struct weft_ctx *ctx);
void weft_cnt_recover(struct weft_dev *wdev);
int weft_cnt_show(struct seq_file *m, struct weft_dev *wdev);

/* weft_debugfs.c */
void weft_debugfs_init(void);
void weft_debugfs_exit(void);
void weft_debugfs_add(struct weft_dev *wdev);
void weft_debugfs_del(struct weft_dev *wdev);

#endif /* WEFT_DRV_H */
