/* SPDX-License-Identifier: MIT */
/*
 * Helpers for the header-matching sim tests, the differential test and
 * the matching benchmark: what a driver does through the MATCH registers
 * (docs/matching.md), on sim nodes.
 */
#ifndef WEFT_MT_H
#define WEFT_MT_H

#include <stdbool.h>
#include <stdint.h>

#include "weft/match.h"
#include "weft_sim.h"

#define MT_CQ_LOG2      12u

struct mt_node {
	uint64_t cq;            /* completion ring */
	uint64_t op;            /* operation block */
	uint64_t cons;          /* completions taken */
};

struct mt {
	struct weft_sim *s;
	unsigned int n;
	struct mt_node node[8];
};

/* A sim of nodes adapters (cfg may be NULL; nr_nodes is set from nodes),
 * each with its completion ring set up. */
void mt_init(struct mt *t, unsigned int nodes, const struct weft_sim_config *cfg);
void mt_fini(struct mt *t);
void mt_qcfg(struct mt *t, unsigned int node, unsigned int q, uint64_t qcfg);
/* Ring the doorbell with op; returns MATCH_DB_STATUS. */
uint64_t mt_op(struct mt *t, unsigned int node, const struct weft_match_op *op);
uint64_t mt_post(struct mt *t, unsigned int node, unsigned int q, uint64_t match,
		 uint64_t ignore, uint16_t src, uint64_t addr, uint32_t len, uint32_t id,
		 uint8_t flags);
uint64_t mt_send(struct mt *t, unsigned int node, uint16_t dst, unsigned int q,
		 uint64_t match, uint64_t addr, uint32_t len, uint32_t req_id, uint8_t flags);
uint64_t mt_simple(struct mt *t, unsigned int node, unsigned int opcode, unsigned int q,
		   uint8_t flags, uint64_t addr, uint32_t len, uint32_t id);
void mt_run(struct mt *t);
/* Next completion of node, or false when there is none. */
bool mt_cqe(struct mt *t, unsigned int node, struct weft_match_cqe *e);
/* Drain completions of node; count those of type. */
unsigned int mt_drain(struct mt *t, unsigned int node, unsigned int type);
uint64_t mt_reg(struct mt *t, unsigned int node, uint64_t reg);
uint64_t mt_alloc(struct mt *t, unsigned int node, uint64_t len);
uint8_t *mt_ptr(struct mt *t, unsigned int node, uint64_t addr, uint64_t len);
uint64_t mt_cnt(struct mt *t, unsigned int node, unsigned int c);

#endif /* WEFT_MT_H */
