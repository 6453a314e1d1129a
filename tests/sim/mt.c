/* SPDX-License-Identifier: MIT */
/* Header-matching test helpers (mt.h). */
#include <string.h>

#include "mt.h"
#include "simtest.h"

void mt_init(struct mt *t, unsigned int nodes, const struct weft_sim_config *cfg)
{
	struct weft_sim_config c;
	unsigned int i;

	if (cfg)
		c = *cfg;
	else
		memset(&c, 0, sizeof(c));
	c.nr_nodes = nodes;
	if (!c.mem_size)
		c.mem_size = 16ull << 20;
	memset(t, 0, sizeof(*t));
	REQUIRE(nodes <= 8);
	t->s = st_sim(&c);
	t->n = nodes;
	for (i = 0; i < nodes; i++) {
		struct mt_node *n = &t->node[i];

		n->cq = weft_sim_alloc(t->s, i, 64ull << MT_CQ_LOG2, 4096);
		n->op = weft_sim_alloc(t->s, i, 64, 64);
		REQUIRE(n->cq && n->op);
		weft_sim_reg_write(t->s, i, WEFT_REG_MATCH_CQ_BASE, n->cq);
		weft_sim_reg_write(t->s, i, WEFT_REG_MATCH_CQ_SIZE, MT_CQ_LOG2);
	}
}

void mt_fini(struct mt *t)
{
	weft_sim_free(t->s);
	t->s = NULL;
}

void mt_qcfg(struct mt *t, unsigned int node, unsigned int q, uint64_t qcfg)
{
	weft_sim_reg_write(t->s, node, WEFT_REG_MATCH_QCFG(q), qcfg);
}

uint64_t mt_op(struct mt *t, unsigned int node, const struct weft_match_op *op)
{
	memcpy(mt_ptr(t, node, t->node[node].op, sizeof(*op)), op, sizeof(*op));
	weft_sim_reg_write(t->s, node, WEFT_REG_MATCH_DOORBELL, t->node[node].op);
	return weft_sim_reg_read(t->s, node, WEFT_REG_MATCH_DB_STATUS);
}

static struct weft_match_op op_init(unsigned int opcode, unsigned int q, uint8_t flags,
				    uint64_t addr, uint32_t len, uint32_t id)
{
	struct weft_match_op op;

	memset(&op, 0, sizeof(op));
	op.opcode = (uint8_t)opcode;
	op.flags = flags;
	op.queue = (uint16_t)q;
	op.addr = addr;
	op.len = len;
	op.match_id = id;
	op.req_id = id;
	return op;
}

uint64_t mt_post(struct mt *t, unsigned int node, unsigned int q, uint64_t match,
		 uint64_t ignore, uint16_t src, uint64_t addr, uint32_t len, uint32_t id,
		 uint8_t flags)
{
	struct weft_match_op op = op_init(WEFT_MOP_POST, q, flags, addr, len, id);

	op.match = match;
	op.ignore = ignore;
	op.node = src;
	return mt_op(t, node, &op);
}

uint64_t mt_send(struct mt *t, unsigned int node, uint16_t dst, unsigned int q,
		 uint64_t match, uint64_t addr, uint32_t len, uint32_t req_id, uint8_t flags)
{
	struct weft_match_op op = op_init(WEFT_MOP_SEND, q, flags, addr, len, req_id);

	op.match_id = 0;
	op.match = match;
	op.node = dst;
	return mt_op(t, node, &op);
}

uint64_t mt_simple(struct mt *t, unsigned int node, unsigned int opcode, unsigned int q,
		   uint8_t flags, uint64_t addr, uint32_t len, uint32_t id)
{
	struct weft_match_op op = op_init(opcode, q, flags, addr, len, id);

	return mt_op(t, node, &op);
}

void mt_run(struct mt *t)
{
	REQUIRE(weft_sim_run_idle(t->s, 10000000), "sim went idle");
}

bool mt_cqe(struct mt *t, unsigned int node, struct weft_match_cqe *e)
{
	struct mt_node *n = &t->node[node];
	uint64_t prod = weft_sim_reg_read(t->s, node, WEFT_REG_MATCH_CQ_PROD);

	if (n->cons == prod)
		return false;
	memcpy(e, mt_ptr(t, node, n->cq + (n->cons & ((1u << MT_CQ_LOG2) - 1)) * 64, 64), 64);
	n->cons++;
	weft_sim_reg_write(t->s, node, WEFT_REG_MATCH_CQ_CONS, n->cons);
	return true;
}

unsigned int mt_drain(struct mt *t, unsigned int node, unsigned int type)
{
	struct weft_match_cqe e;
	unsigned int k = 0;

	while (mt_cqe(t, node, &e))
		if (e.type == type)
			k++;
	return k;
}

uint64_t mt_reg(struct mt *t, unsigned int node, uint64_t reg)
{
	return weft_sim_reg_read(t->s, node, reg);
}

uint64_t mt_alloc(struct mt *t, unsigned int node, uint64_t len)
{
	uint64_t a = weft_sim_alloc(t->s, node, len ? len : 1, 64);

	REQUIRE(a != 0, "guest memory");
	return a;
}

uint8_t *mt_ptr(struct mt *t, unsigned int node, uint64_t addr, uint64_t len)
{
	uint8_t *p = weft_sim_ptr(t->s, node, addr, len);

	REQUIRE(p != NULL);
	return p;
}

uint64_t mt_cnt(struct mt *t, unsigned int node, unsigned int c)
{
	return weft_sim_counter(t->s, node, c);
}
