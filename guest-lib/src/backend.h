/* SPDX-License-Identifier: MIT */
/*
 * libweft backend interface: the library's whole contact with the kernel
 * (or with the in-process simulator).  Everything else in libweft is
 * plain memory access to the FIFOs and doorbell stores.
 */
#ifndef WEFT_LIB_BACKEND_H
#define WEFT_LIB_BACKEND_H

#include <stdint.h>
#include <stddef.h>

#include "weft/uapi.h"

struct weft_be;

/* An open window as the backend hands it out. */
struct weft_be_win {
	uint32_t window;
	uint32_t send_log2, recv_log2;
	uint8_t *send_fifo;             /* send_frames * WEFT_FRAME_SIZE bytes */
	uint8_t *recv_fifo;
	uint64_t send_size, recv_size;
	volatile uint64_t *db;          /* mapped doorbell page, or NULL: use db_write/db_read */
	void *priv;                     /* backend's own state */
};

/* The mapping behind an address: its extent and what backs it.  Two
 * lookups of the same address that differ in any field mean the mapping
 * was replaced. */
struct weft_be_map {
	uint64_t start, end;            /* extent of the mapping */
	uint64_t dev, ino, off;         /* backing object and offset of start */
	uint64_t serial;                /* backend's own generation, 0 if none */
};

struct weft_be_ops {
	const char *name;
	int (*query)(struct weft_be *be, struct weft_ioc_query *q);
	int (*job_attach)(struct weft_be *be, uint32_t job_id);
	int (*open_window)(struct weft_be *be, const struct weft_ioc_open_window *req,
			   struct weft_be_win *out);
	int (*close_window)(struct weft_be *be, struct weft_be_win *w);
	int (*alloc_rcxt)(struct weft_be *be, uint32_t window, uint32_t *rcxt, uint16_t *key);
	int (*free_rcxt)(struct weft_be *be, uint32_t window, uint32_t rcxt);
	/* page_shift 0: the backend's default page size. */
	int (*reg_mr)(struct weft_be *be, uint32_t job_id, uint64_t addr, uint64_t len,
		      unsigned int page_shift, uint64_t *pvo, uint32_t *handle);
	int (*dereg_mr)(struct weft_be *be, uint32_t handle);
	/* Doorbell access when w->db is NULL. */
	void (*db_write)(struct weft_be *be, struct weft_be_win *w, uint32_t off, uint64_t val);
	uint64_t (*db_read)(struct weft_be *be, struct weft_be_win *w, uint32_t off);
	/* Wait up to timeout_ms (-1 forever) for an event; 1 = events may be
	 * queued (read them with read_event), 0 = timeout, < 0 error. */
	int (*wait)(struct weft_be *be, int timeout_ms);
	/* Take one queued event: 1 = *ev filled, 0 = none. */
	int (*read_event)(struct weft_be *be, struct weft_uevent *ev);
	/* Make the (simulated) hardware progress; NULL for real hardware. */
	void (*progress)(struct weft_be *be);
	/* Serialise FIFO accesses against the (simulated) hardware; NULL for
	 * real hardware. */
	void (*lock)(struct weft_be *be);
	void (*unlock)(struct weft_be *be);
	int (*event_fd)(struct weft_be *be);
	/* Privileged register read (BAR 0) for diagnostics; -ENOTSUP. */
	int (*reg_read)(struct weft_be *be, uint64_t off, uint64_t *val);
	uint64_t (*now_ns)(struct weft_be *be);
	const char *(*dev_name)(struct weft_be *be);
	/* Registrable memory and mapping identity. */
	void *(*alloc)(struct weft_be *be, size_t len);
	void (*free)(struct weft_be *be, void *p, size_t len);
	int (*map_lookup)(struct weft_be *be, uint64_t addr, struct weft_be_map *m);
	void (*close)(struct weft_be *be);
	/* Counter objects (docs/counters.md), as the WEFT_IOC_CNT_* ioctls;
	 * cnt_create maps the status block read-only at *block. */
	int (*cnt_create)(struct weft_be *be, struct weft_ioc_cnt_create *req,
			  const volatile void **block);
	int (*cnt_post)(struct weft_be *be, struct weft_ioc_cnt_post *req);
	int (*cnt_wait)(struct weft_be *be, struct weft_ioc_cnt_wait *req);
	int (*cnt_destroy)(struct weft_be *be, uint32_t id, const volatile void *block);
	int (*cnt_expose)(struct weft_be *be, struct weft_ioc_cnt_expose *req);
	int (*cnt_unexpose)(struct weft_be *be, uint32_t index);
};

struct weft_be {
	const struct weft_be_ops *ops;
};

/* Constructors. */
struct weft_be *weft_be_kernel_open(const char *path, char *err, size_t errlen);

/* Helpers of the kernel backend, usable by others: memfd-backed memory and
 * /proc/self/maps lookups. */
void *weft_be_memfd_alloc(size_t len);
void weft_be_memfd_free(void *p, size_t len);
int weft_be_proc_map_lookup(uint64_t addr, struct weft_be_map *m);

#endif /* WEFT_LIB_BACKEND_H */
