/* SPDX-License-Identifier: ((GPL-2.0 WITH Linux-syscall-note) OR MIT) */
/*
 * weft.ko user ABI: /dev/weftN ioctls, mmap layout and events.
 * Used by the driver (guest-driver/) and libweft (guest-lib/).
 * docs/driver.md describes each call and its errors.
 *
 * Every structure is a multiple of 8 bytes; reserved fields are 0 on
 * input (the driver refuses anything else with EINVAL) and on output.
 */
#ifndef WEFT_UAPI_H
#define WEFT_UAPI_H

#include <linux/types.h>
#include <linux/ioctl.h>

/* QUERY's abi_version; libweft refuses a driver of another version. */
#define WEFT_UAPI_VERSION	2
/* ioctl type code, free in the kernel's ioctl number registry; this ABI
 * uses numbers 0x00-0x3f of it (docs/driver.md, "User ABI").
 */
#define WEFT_IOC_MAGIC		0xE6

struct weft_ioc_query {
	__u32 abi_version;	/* out: WEFT_UAPI_VERSION */
	__u16 node_id;		/* out */
	__u16 nr_windows;	/* out */
	__u32 nr_rcxt;		/* out */
	__u32 recovery_count;	/* out */
	__u32 nr_handlers;	/* out */
	__u32 max_payload;	/* out: WEFT_MAX_PAYLOAD */
	__aligned_u64 hw_id;	/* out: ID register */
};

/* Open a window: the driver allocates contiguous FIFOs, writes the LMT
 * and opens the window.  The mmap offsets map, for this fd only:
 * the doorbell page, the send FIFO and the receive FIFO.
 */
struct weft_ioc_open_window {
	__u32 job_id;		/* in: job (window key); must be attached */
	__u32 send_log2;	/* in: log2(send frames), 1..WEFT_FIFO_MAX_LOG2 */
	__u32 recv_log2;	/* in: log2(receive frames) */
	__u32 flags;		/* in: WEFT_OPEN_F_* */
	__u32 quantum;		/* in: send quantum k (0 = default) */
	__u32 window;		/* out: window number */
	__aligned_u64 db_offset;	/* out: mmap offset of the doorbell page */
	__aligned_u64 send_offset;	/* out: mmap offset of the send FIFO */
	__aligned_u64 recv_offset;	/* out: mmap offset of the receive FIFO */
	__aligned_u64 send_size;	/* out: bytes */
	__aligned_u64 recv_size;	/* out: bytes */
};

/* weft_ioc_open_window.flags */
#define WEFT_OPEN_F_BCAST	0x1	/* allow broadcast/multicast sends */
#define WEFT_OPEN_F_EARLY_INT	0x2

struct weft_ioc_window {
	__u32 window;
	__u32 timeout_ms;	/* close: snapshot wait (0 = default 1000) */
};

struct weft_ioc_rcxt {
	__u32 window;		/* in: owning window of this fd */
	__u32 rcxt;		/* out (alloc) / in (free) */
	__u16 key;		/* out: recovery count used as key */
	__u16 reserved[3];
};

struct weft_ioc_job {
	__u32 job_id;		/* in: nonzero job id */
	__u32 slot;		/* out: job slot 0..WEFT_NR_JOB_SLOTS-1 */
};

struct weft_ioc_reg_mr {
	__aligned_u64 addr;	/* in: user virtual address */
	__aligned_u64 length;	/* in: bytes, > 0 */
	__u32 job_id;		/* in: attached job owning the tables */
	__u32 page_shift;	/* in: 12, 16 or 24 (0 = 12) */
	__aligned_u64 pvo;	/* out: PVO of addr */
	__u32 handle;		/* out */
	__u32 reserved;
};

struct weft_ioc_dereg_mr {
	__u32 handle;
	__u32 reserved;
};

#define WEFT_IOC_QUERY		_IOR(WEFT_IOC_MAGIC, 0x00, struct weft_ioc_query)
#define WEFT_IOC_JOB_ATTACH	_IOWR(WEFT_IOC_MAGIC, 0x01, struct weft_ioc_job)
#define WEFT_IOC_JOB_DETACH	_IOW(WEFT_IOC_MAGIC, 0x02, struct weft_ioc_job)
#define WEFT_IOC_OPEN_WINDOW	_IOWR(WEFT_IOC_MAGIC, 0x03, struct weft_ioc_open_window)
#define WEFT_IOC_CLOSE_WINDOW	_IOW(WEFT_IOC_MAGIC, 0x04, struct weft_ioc_window)
#define WEFT_IOC_ALLOC_RCXT	_IOWR(WEFT_IOC_MAGIC, 0x05, struct weft_ioc_rcxt)
#define WEFT_IOC_FREE_RCXT	_IOW(WEFT_IOC_MAGIC, 0x06, struct weft_ioc_rcxt)
#define WEFT_IOC_REG_MR		_IOWR(WEFT_IOC_MAGIC, 0x07, struct weft_ioc_reg_mr)
#define WEFT_IOC_DEREG_MR	_IOW(WEFT_IOC_MAGIC, 0x08, struct weft_ioc_dereg_mr)

/* read() on the fd returns whole struct weft_uevent records for the
 * fd's windows; poll() reports POLLIN when one is queued.
 */
enum weft_uevent_type {
	WEFT_UEV_RECV = 1,		/* receive threshold reached */
	WEFT_UEV_SEND = 2,		/* send threshold reached */
	WEFT_UEV_FATAL = 3,		/* window fatal error: window is unusable */
	WEFT_UEV_PROTECTION = 4,	/* an incoming packet failed a protection check */
	WEFT_UEV_RECOVERY = 5,		/* adapter recovered: windows, rCxts, MRs invalid */
};

struct weft_uevent {
	__u32 type;
	__u32 window;
	__u32 rcxt;
	__u32 reason;		/* enum weft_reason */
	__aligned_u64 info;
};

/*
 * ---- Counter-bearing RDMA objects (docs/counters.md) ----------------------
 * Kernel uapi types, self-contained: this block needs only <linux/types.h>.
 * The driver pins and translates the caller's range itself; the caller
 * never names a physical address.  The status block of an object
 * (struct weft_cnt_block of weft/cnt.h) is mapped read-only, one page
 * at cnt_offset, so polling the counter needs no system call.
 */
#include <linux/types.h>

struct weft_ioc_cnt_create {
	__aligned_u64 addr;	/* in: region, user virtual address */
	__aligned_u64 length;	/* in: 1 .. WEFT_CNT_MAX_LEN bytes */
	__u32 mode;		/* in: enum weft_cnt_mode */
	__u32 ops;		/* in: WEFT_CNT_MODE_OPS: operations counted */
	__u32 flags;		/* in: WEFT_CNTF_IRQ: wake WEFT_IOC_CNT_WAIT at zero */
	__u32 id;		/* out: object id */
	__u32 gen;		/* out: generation */
	__u32 reserved;
	__aligned_u64 block_offset;	/* out: mmap offset of the status page */
};

struct weft_ioc_cnt_post {
	__u32 id;		/* in: object id */
	__u32 slot;		/* in: 0 .. WEFT_CNT_MAX_OPS - 1 */
	__u32 dir;		/* in: enum weft_cnt_dir */
	__u32 node;		/* in: the peer */
	__aligned_u64 offset;	/* in: in the region, multiple of WEFT_CNT_CHUNK */
	__aligned_u64 length;	/* in */
	__aligned_u64 remote_va;	/* in: exposed by the peer */
	__u32 seq;		/* out */
	__u32 reserved;
};

struct weft_ioc_cnt_wait {
	__u32 id;		/* in */
	__u32 timeout_ms;	/* in: 0 = do not sleep */
	__u32 failed;		/* in: return once more operations than this failed */
	__u32 error;		/* out: enum weft_reason of the last failure */
	__aligned_u64 count;	/* out: the counter */
};

struct weft_ioc_cnt_expose {
	__aligned_u64 addr;	/* in: range of the caller, exposed at this VA */
	__aligned_u64 length;	/* in */
	__u32 rights;		/* in: WEFT_CNT_R_* */
	__u32 peer;		/* in: node allowed, or WEFT_CNT_ANY_PEER */
	__u32 index;		/* out: exposure index */
	__u32 reserved;
};

struct weft_ioc_cnt_id {
	__u32 id;		/* object id or exposure index */
	__u32 reserved;
};

#define WEFT_IOC_CNT_CREATE	_IOWR(WEFT_IOC_MAGIC, 0x40, struct weft_ioc_cnt_create)
#define WEFT_IOC_CNT_POST	_IOWR(WEFT_IOC_MAGIC, 0x41, struct weft_ioc_cnt_post)
#define WEFT_IOC_CNT_WAIT	_IOWR(WEFT_IOC_MAGIC, 0x42, struct weft_ioc_cnt_wait)
#define WEFT_IOC_CNT_DESTROY	_IOW(WEFT_IOC_MAGIC, 0x43, struct weft_ioc_cnt_id)
#define WEFT_IOC_CNT_EXPOSE	_IOWR(WEFT_IOC_MAGIC, 0x44, struct weft_ioc_cnt_expose)
#define WEFT_IOC_CNT_UNEXPOSE	_IOW(WEFT_IOC_MAGIC, 0x45, struct weft_ioc_cnt_id)

#endif /* WEFT_UAPI_H */
