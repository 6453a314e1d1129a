/* SPDX-License-Identifier: MIT */
/* Weft sim: private state shared by sim.c, sim_drv.c and sim_user.c. */
#ifndef WEFT_SIM_INT_H
#define WEFT_SIM_INT_H

#include "weft_policy.h"
#include "weft_sim.h"

#define SIM_NR_EVENT_TYPES      (WEFT_EV_MATCH_STOPPED + 1u)
#define SIM_NR_TABLES           (WEFT_NR_JOB_SLOTS * WEFT_SLOT_TABLES) /* 30 */

struct sim_ext {
	uint64_t addr, size;
	bool drv;               /* driver memory: freed by a reboot */
};

struct sim_mr {
	bool live;
	uint32_t job;
	unsigned int table;
	uint32_t first, npages;
};

struct sim_win {
	bool open;
	uint32_t job;
	uint32_t open_seq;      /* bumped each time the adapter window is (re)opened */
	uint64_t send_addr, recv_addr;
	uint32_t send_log2, recv_log2, quantum;
	bool bcast, early;
	uint64_t fatals;
};

struct sim_node {
	struct weft_sim *sim;
	unsigned int id;
	/*
	 * The guest's first adapter: it holds the guest's memory, its
	 * allocator and the node-global driver state (job slots, TCE
	 * placement, registrations, PVO keys).  Itself for that adapter.
	 */
	struct sim_node *host;
	struct weft_core *core;
	struct weft_core_config cc;     /* the core's, for weft_sim_core_reload */
	struct weft_core_ops ops;
	void *tx_frame;         /* fabric frame the core builds in, or NULL */
	uint8_t *mem;
	bool kicked, busy;
	uint32_t irq_pending;
	uint64_t timer;         /* core timer deadline, 0 = none */

	/* guest memory allocator */
	struct sim_ext *ext;
	size_t next, ncap;

	/* sim driver */
	uint64_t rng;
	uint32_t gen;           /* bumped by boot and recovery */
	struct weft_keygen keys;        /* PVO keys (driver policy) */
	uint32_t nr_windows, nr_rcxt, nr_handlers;
	uint64_t evq_addr;
	uint64_t evq_cons;
	/* this adapter's copy of the 30 tables, in guest memory */
	uint64_t tce_addr[SIM_NR_TABLES];
	uint32_t tce_nr[SIM_NR_TABLES];
	uint8_t tce_shift[SIM_NR_TABLES];
	/* node-global (used in the host only) */
	uint64_t *tce_used[SIM_NR_TABLES];      /* bitmap of TCEs in use */
	uint32_t slot_job[WEFT_NR_JOB_SLOTS];
	struct sim_mr *mr;
	size_t nr_mr, mr_cap;
	struct sim_win win[WEFT_MAX_WINDOWS];
	uint32_t *ring_ids;
	struct weft_rcxt_ring ring;     /* free rCxts (driver policy) */
	uint16_t *rcxt_owner;   /* window + 1 of a held rCxt, 0 = free */
	uint64_t ev_count[SIM_NR_EVENT_TYPES];
	uint32_t async_obj, async_what;  /* last WEFT_EV_VERBS_ASYNC */
	bool rereg_on_fatal;    /* driver option (weft_sim_config) */
};

struct weft_sim {
	struct weft_sim_config cfg;
	unsigned int nr_nodes;
	unsigned int adapters;  /* adapters per guest */
	uint64_t mem_size;
	uint64_t tick_ns;
	unsigned int budget;
	uint64_t reboot_ns;
	uint32_t tce_64k;               /* 64 KiB tables per job slot */
	uint64_t now;
	struct weft_fabric *fabric;
	weft_sim_dma_hook dma_hook;
	void *dma_hook_opaque;
	struct sim_node node[WEFT_SIM_MAX_NODES];
};

uint64_t sim_rand(uint64_t *state);
uint64_t sim_alloc(struct weft_sim *s, struct sim_node *n, uint64_t size, uint64_t align,
		   bool drv);
void sim_free_addr(struct sim_node *n, uint64_t addr);
void sim_free_drv(struct sim_node *n);
bool sim_poll_node(struct weft_sim *s, struct sim_node *n);

/* sim_drv.c */
int sim_drv_boot(struct weft_sim *s, struct sim_node *n);
/* The adapters of n's guest: [*first, *end) node indexes. */
void sim_guest_adapters(const struct weft_sim *s, const struct sim_node *n,
			unsigned int *first, unsigned int *end);
void sim_drv_free(struct sim_node *n);
void sim_drv_service(struct weft_sim *s, struct sim_node *n);

#endif /* WEFT_SIM_INT_H */
