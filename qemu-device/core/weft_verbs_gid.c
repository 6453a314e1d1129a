/* SPDX-License-Identifier: MIT */
/*
 * Weft verbs engine: the port's GID table (RoCE v2 addressing) and the
 * 40-byte network header a UD receive starts with (docs/hw-spec.md 16.13).
 */
#include <string.h>

#include "weft_verbs_int.h"

#define UDP_LEN         8u
#define BTH_LEN         12u
#define DETH_LEN        8u
#define IMMDT_LEN       4u
#define ICRC_LEN        4u
#define IPV4_LEN        20u
#define IPPROTO_UDP_NR  17u

static const uint8_t v4_prefix[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff };

unsigned int vq_gid_type(const uint8_t gid[16])
{
	static const uint8_t zero[16];

	if (memcmp(gid, zero, sizeof(zero)) == 0)
		return 0;
	return memcmp(gid, v4_prefix, sizeof(v4_prefix)) == 0 ? WEFT_VGID_IPV4 : WEFT_VGID_IPV6;
}

const struct vq_gid *vq_gid_get(struct weft_core *c, unsigned int index)
{
	const struct vq_gid *g;

	if (index >= WEFT_VERBS_GID_TBL)
		return NULL;
	g = &c->verbs->gid[index];
	return g->valid ? g : NULL;
}

bool vq_gid_local(struct weft_core *c, const uint8_t gid[16])
{
	unsigned int i;

	for (i = 0; i < WEFT_VERBS_GID_TBL; i++)
		if (c->verbs->gid[i].valid && memcmp(c->verbs->gid[i].gid, gid, 16) == 0)
			return true;
	return false;
}

unsigned int vq_cmd_gid(struct weft_core *c, const struct weft_vcmd *k, unsigned int *reason)
{
	struct vq_gid *g;
	struct weft_vgid_entry out;

	*reason = WEFT_R_GID_INVALID;
	if (k->handle >= WEFT_VERBS_GID_TBL)
		return WEFT_CMD_EINVAL;
	g = &c->verbs->gid[k->handle];
	switch (k->op) {
	case WEFT_VCMD_SET_GID:
		if (k->u.gid.port != WEFT_VERBS_PORT)
			return WEFT_CMD_EINVAL;
		*reason = WEFT_R_GID_TYPE;
		if ((k->u.gid.type != WEFT_VGID_IPV4 && k->u.gid.type != WEFT_VGID_IPV6) ||
		    vq_gid_type(k->u.gid.gid) != k->u.gid.type)
			return WEFT_CMD_EINVAL;
		memcpy(g->gid, k->u.gid.gid, sizeof(g->gid));
		g->type = k->u.gid.type;
		g->valid = true;
		break;
	case WEFT_VCMD_CLEAR_GID:
		if (k->u.gid.port != WEFT_VERBS_PORT)
			return WEFT_CMD_EINVAL;
		if (!g->valid)
			return WEFT_CMD_ESTATE;
		memset(g, 0, sizeof(*g));
		break;
	default: /* QUERY_GID */
		memset(&out, 0, sizeof(out));
		memcpy(out.gid, g->gid, sizeof(out.gid));
		out.valid = g->valid;
		out.type = g->type;
		out.port = WEFT_VERBS_PORT;
		*reason = WEFT_R_DMA_ERROR;
		if (weft_dma_write(c, k->u.query.addr, &out, sizeof(out)) != 0)
			return WEFT_CMD_EFAULT;
		break;
	}
	*reason = WEFT_R_OK;
	return WEFT_CMD_OK;
}

unsigned int vq_gid_addr(struct weft_core *c, const struct weft_vwqe *w, struct weft_vaddr *a)
{
	const struct vq_gid *g = vq_gid_get(c, w->u.ud.sgid_index);

	if (!g)
		return WEFT_R_GID_INVALID;
	if (vq_gid_type(w->u.ud.dgid) != g->type)
		return WEFT_R_GID_TYPE;
	memset(a, 0, sizeof(*a));
	memcpy(a->sgid, g->gid, sizeof(a->sgid));
	memcpy(a->dgid, w->u.ud.dgid, sizeof(a->dgid));
	a->flow_label = w->u.ud.flow_label & 0xfffffu;
	a->traffic_class = w->u.ud.traffic_class;
	a->hop_limit = w->u.ud.hop_limit;
	return WEFT_R_OK;
}

static void put_be16(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}

/* The Internet checksum of an IPv4 header (RFC 1071). */
static uint16_t ip_csum(const uint8_t *p, unsigned int len)
{
	uint32_t sum = 0;
	unsigned int i;

	for (i = 0; i + 1 < len; i += 2)
		sum += (uint32_t)p[i] << 8 | p[i + 1];
	while (sum >> 16)
		sum = (sum & 0xffffu) + (sum >> 16);
	return (uint16_t)~sum;
}

unsigned int vq_gid_grh(const struct weft_vaddr *a, uint32_t dlen, bool imm,
			uint8_t out[WEFT_VERBS_GRH_SIZE])
{
	uint32_t ip_payload = UDP_LEN + BTH_LEN + DETH_LEN + (imm ? IMMDT_LEN : 0) + dlen +
			      ICRC_LEN;
	unsigned int type = vq_gid_type(a->sgid);
	uint8_t *h;

	memset(out, 0, WEFT_VERBS_GRH_SIZE);
	if (type == 0 || type != vq_gid_type(a->dgid))
		return 0;
	if (type == WEFT_VGID_IPV6) {
		uint32_t w0 = 6u << 28 | (uint32_t)a->traffic_class << 20 |
			      (a->flow_label & 0xfffffu);

		out[0] = (uint8_t)(w0 >> 24);
		out[1] = (uint8_t)(w0 >> 16);
		out[2] = (uint8_t)(w0 >> 8);
		out[3] = (uint8_t)w0;
		put_be16(out + 4, ip_payload);
		out[6] = IPPROTO_UDP_NR;
		out[7] = a->hop_limit;
		memcpy(out + 8, a->sgid, 16);
		memcpy(out + 24, a->dgid, 16);
		return WEFT_VGID_IPV6;
	}
	h = out + WEFT_VERBS_GRH_SIZE - IPV4_LEN;
	h[0] = 0x45;                    /* version 4, 5 words */
	h[1] = a->traffic_class;
	put_be16(h + 2, IPV4_LEN + ip_payload);
	put_be16(h + 6, 0x4000);        /* don't fragment */
	h[8] = a->hop_limit;
	h[9] = IPPROTO_UDP_NR;
	memcpy(h + 12, a->sgid + 12, 4);
	memcpy(h + 16, a->dgid + 12, 4);
	put_be16(h + 10, ip_csum(h, IPV4_LEN));
	return WEFT_VGID_IPV4;
}
