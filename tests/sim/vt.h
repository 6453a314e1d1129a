/* SPDX-License-Identifier: MIT */
/* Helpers shared by the verbs sim tests (docs/hw-spec.md section 16). */
#ifndef WEFT_VT_H
#define WEFT_VT_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "weft/names.h"
#include "weft_test.h"
#include "weft_sim_verbs.h"

#define VT_PD           1u
#define VT_CQ           1u
#define VT_MR_INDEX     1u
#define VT_MR           WEFT_STAG(VT_MR_INDEX, 1)

/* One node's verbs set-up: PD 1, CQ 1 (send and receive of every QP),
 * a buffer registered as region VT_MR with every right. */
struct vt_node {
	struct weft_sim *s;
	unsigned int id;
	struct wsv_cq cq;
	uint64_t buf, len;
	uint8_t *mem;           /* host pointer of buf */
};

struct weft_sim *vt_sim(unsigned int nodes, uint64_t mem, uint64_t seed,
			uint32_t drop_ppm, uint64_t jitter_ns);
void vt_node(struct weft_sim *s, unsigned int id, uint64_t len, uint32_t cq_log2,
	     struct vt_node *out);
/* Create RC QPs qa on a and qb on b (SQ/RQ 2^log2) and connect them. */
void vt_rc(struct vt_node *a, uint32_t qa, struct vt_node *b, uint32_t qb, uint32_t log2,
	   const struct wsv_rc_params *p, struct wsv_qp *oa, struct wsv_qp *ob);
/* Post one signaled WQE with one SGE over [off, off + len) of the node's
 * buffer (lkey VT_MR). */
void vt_post(struct vt_node *n, struct wsv_qp *q, uint64_t wr_id, unsigned int op,
	     uint64_t off, uint64_t len, uint64_t raddr, uint32_t rkey, uint32_t imm_inv,
	     unsigned int flags);
void vt_recv(struct vt_node *n, struct wsv_qp *q, uint64_t wr_id, uint64_t off, uint64_t len);
/* Wait for one CQE (fails the test after deadline ns). */
void vt_cqe(struct vt_node *n, struct weft_vcqe *e, uint64_t deadline_ns);
/* No CQE arrives within ns. */
void vt_no_cqe(struct vt_node *n, uint64_t ns);
void vt_fill(uint8_t *p, size_t n, uint64_t seed);
uint64_t vt_cnt(struct weft_sim *s, unsigned int node, unsigned int counter);
uint64_t vt_drops(struct weft_sim *s, unsigned int node, unsigned int reason);
unsigned int vt_qp_state(struct vt_node *n, uint32_t qpn);

/* Programs made of named cases: with a case name, runs that case as one
 * TAP point ("<kind> <name>"); without, runs them all. */
struct vt_case {
	const char *name;
	void (*fn)(void);
};
int vt_main(const char *kind, const struct vt_case *cases, unsigned int n, int argc,
	    char **argv);

#endif /* WEFT_VT_H */
