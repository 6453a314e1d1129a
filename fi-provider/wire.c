// SPDX-License-Identifier: MIT
/*
 * The provider's wire messages (wire.h, docs/libfabric.md "Wire
 * messages"): big-endian fields, read and written byte by byte, every
 * length checked before the bytes it covers are read.
 */
#include <string.h>

#include "wire.h"

static const char *const reason_names[WFI_WIRE_NREASONS] = {
	[WFI_WIRE_OK] = "ok",
	[WFI_WIRE_SHORT] = "short",
	[WFI_WIRE_LONG] = "long",
	[WFI_WIRE_RESERVED] = "reserved",
	[WFI_WIRE_OPCODE] = "opcode",
	[WFI_WIRE_FIN_LEN] = "fin-len",
	[WFI_WIRE_NOTE_KIND] = "note-kind",
	[WFI_WIRE_NOTE_LEN] = "note-len",
	[WFI_WIRE_NOTE_TAG] = "note-tag",
	[WFI_WIRE_KEYA_FOUND] = "keya-found",
	[WFI_WIRE_KEYA_RANGE] = "keya-range",
	[WFI_WIRE_TAG_SRC] = "tag-source",
	[WFI_WIRE_TAG_BITS] = "tag-bits",
	[WFI_WIRE_RNDV_LEN] = "rndv-len",
	[WFI_WIRE_RNDV_SIZE] = "rndv-size",
	[WFI_WIRE_CM_LEN] = "cm-len",
	[WFI_WIRE_CM_MAGIC] = "cm-magic",
	[WFI_WIRE_CM_NAME] = "cm-name",
	[WFI_WIRE_CM_ID] = "cm-id",
	[WFI_WIRE_CM_WHY] = "cm-why",
	[WFI_WIRE_FIN_STRAY] = "fin-stray",
	[WFI_WIRE_KEYQ_MODE] = "keyq-mode",
	[WFI_WIRE_KEYA_STRAY] = "keya-stray",
	[WFI_WIRE_SRC_FORGED] = "source-forged",
	[WFI_WIRE_CM_ADDR] = "cm-addr",
	[WFI_WIRE_CM_STALE] = "cm-stale",
	[WFI_WIRE_CM_GONE] = "cm-gone",
};

const char *wfi_wire_reason_name(enum wfi_wire_reason r)
{
	return (unsigned int)r < WFI_WIRE_NREASONS ? reason_names[r] : NULL;
}

static uint32_t get32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static uint64_t get64(const uint8_t *p)
{
	return (uint64_t)get32(p) << 32 | get32(p + 4);
}

static void put32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 24);
	p[1] = (uint8_t)(v >> 16);
	p[2] = (uint8_t)(v >> 8);
	p[3] = (uint8_t)v;
}

static void put64(uint8_t *p, uint64_t v)
{
	put32(p, (uint32_t)(v >> 32));
	put32(p + 4, (uint32_t)v);
}

/* The RVH's length is a 32-bit field: WFI_MAX_MSG bounds it. */
static enum wfi_wire_reason rvh_get(const uint8_t *p, struct wfi_wire_rvh *rvh)
{
	rvh->va = get64(p);
	rvh->rkey = get32(p + 8);
	rvh->len = get32(p + 12);
	return rvh->len > WFI_MAX_MSG ? WFI_WIRE_RNDV_SIZE : WFI_WIRE_OK;
}

enum wfi_wire_reason wfi_wire_rndv_decode(const uint8_t *h, size_t n, struct wfi_wire_rvh *rvh,
					  bool *has_data, uint32_t *data)
{
	if (n != WFI_RVH && n != WFI_RNDV_HDR)
		return WFI_WIRE_RNDV_LEN;
	*has_data = n == WFI_RNDV_HDR;
	*data = *has_data ? get32(h + WFI_RVH) : 0;
	return rvh_get(h, rvh);
}

/* A data message's tag: its source and the flag bits senders set. */
static enum wfi_wire_reason tag_check(uint8_t op, uint64_t tag)
{
	int src = wfi_wire_src(tag);
	bool rndv_bit = tag & WFI_RNDV_BIT, data_bit = tag & WFI_DATA_BIT;

	if (src < 1 || src > WFI_MAX_PEERS)
		return WFI_WIRE_TAG_SRC;
	if ((tag & WFI_MSG_BIT) && (tag & WFI_TAG_MASK))
		return WFI_WIRE_TAG_BITS;
	/* An RNDV has bits 62 and 61 both (CQ data in its app_ctx) or
	 * neither; an eager message bit 61 only alone (a rendezvous header). */
	if (op == WFI_OP_RNDV ? rndv_bit != data_bit : rndv_bit && data_bit)
		return WFI_WIRE_TAG_BITS;
	return WFI_WIRE_OK;
}

static enum wfi_wire_reason note_decode(const uint8_t *p, uint32_t n, struct wfi_wire_msg *m)
{
	uint32_t want;

	switch (m->note) {
	case WFI_NOTE_READ:
	case WFI_NOTE_WRITE:
	case WFI_NOTE_WDATA:
		want = 0;
		break;
	case WFI_NOTE_KEYQ:
		want = WFI_KEYQ_LEN;
		break;
	case WFI_NOTE_KEYA:
		want = WFI_KEYA_LEN;
		break;
	default:
		return WFI_WIRE_NOTE_KIND;
	}
	if (n != want)
		return WFI_WIRE_NOTE_LEN;
	/* fi_writedata's data is the tag (cq_data_size 4); others send 0. */
	if (m->note == WFI_NOTE_WDATA ? m->tag > UINT32_MAX : m->tag != 0)
		return WFI_WIRE_NOTE_TAG;
	if (m->note == WFI_NOTE_WDATA) {
		m->has_data = true;
		m->data = (uint32_t)m->tag;
	} else if (m->note == WFI_NOTE_KEYQ) {
		m->key = get64(p);
	} else if (m->note == WFI_NOTE_KEYA) {
		uint32_t found = get32(p + 28);

		m->keya = (struct wfi_wire_keya){ .key = get64(p), .va = get64(p + 8),
						  .len = get64(p + 16), .rkey = get32(p + 24),
						  .found = found == 1 };
		if (found > 1)
			return WFI_WIRE_KEYA_FOUND;
		if (found ? m->keya.va + m->keya.len < m->keya.va :
			    m->keya.va || m->keya.len || m->keya.rkey)
			return WFI_WIRE_KEYA_RANGE;
	}
	return WFI_WIRE_OK;
}

enum wfi_wire_reason wfi_wire_decode(const uint8_t *buf, size_t len, struct wfi_wire_msg *m)
{
	const uint8_t *p = buf + WFI_HDR;
	enum wfi_wire_reason why;
	uint32_t n;

	memset(m, 0, sizeof(*m));
	if (len < WFI_HDR)
		return WFI_WIRE_SHORT;
	m->op = buf[0];
	m->app_ctx = get32(buf + 4);
	m->tag = get64(buf + 8);
	if (len > WFI_SLOT)
		return WFI_WIRE_LONG;
	n = (uint32_t)(len - WFI_HDR);
	if (buf[1] || buf[2] || buf[3])
		return WFI_WIRE_RESERVED;
	switch (m->op) {
	case WFI_OP_FIN:
		/* The app_ctx names the send; the tag is the message's
		 * (an adapter's FIN) or 0 (software's). */
		m->kind = WFI_MSG_FIN;
		return n ? WFI_WIRE_FIN_LEN : WFI_WIRE_OK;
	case WFI_OP_NO_TAG:
		m->kind = WFI_MSG_NOTE;
		m->note = m->app_ctx;
		return note_decode(p, n, m);
	case WFI_OP_EAGER:
	case WFI_OP_RNDV:
		break;
	default:
		return WFI_WIRE_OPCODE;
	}
	why = tag_check(m->op, m->tag);
	if (why)
		return why;
	if (m->op == WFI_OP_EAGER && !(m->tag & WFI_RNDV_BIT)) {
		m->kind = WFI_MSG_EAGER;
		m->payload = p;
		m->plen = n;
		m->has_data = m->tag & WFI_DATA_BIT;
		m->data = m->app_ctx;
		return WFI_WIRE_OK;
	}
	m->kind = WFI_MSG_RNDV;
	why = wfi_wire_rndv_decode(p, n, &m->rvh, &m->has_data, &m->data);
	if (why)
		return why;
	/* An RNDV carries its data after the RVH exactly when bit 62 says. */
	if (m->op == WFI_OP_RNDV && m->has_data != !!(m->tag & WFI_DATA_BIT))
		return WFI_WIRE_RNDV_LEN;
	return WFI_WIRE_OK;
}

size_t wfi_wire_encode(uint8_t *buf, size_t cap, const struct wfi_wire_msg *m)
{
	uint8_t op;
	size_t n = 0;

	switch (m->kind) {
	case WFI_MSG_EAGER:
		op = WFI_OP_EAGER;
		n = m->plen;
		break;
	case WFI_MSG_RNDV:
		op = m->op == WFI_OP_RNDV ? WFI_OP_RNDV : WFI_OP_EAGER;
		n = m->has_data ? WFI_RNDV_HDR : WFI_RVH;
		break;
	case WFI_MSG_FIN:
		op = WFI_OP_FIN;
		break;
	case WFI_MSG_NOTE:
		op = WFI_OP_NO_TAG;
		n = m->note == WFI_NOTE_KEYQ ? WFI_KEYQ_LEN :
		    m->note == WFI_NOTE_KEYA ? WFI_KEYA_LEN : 0;
		break;
	default:
		return 0;
	}
	if (cap < WFI_HDR || n > cap - WFI_HDR)
		return 0;
	memset(buf, 0, WFI_HDR);
	buf[0] = op;
	put32(buf + 4, m->kind == WFI_MSG_NOTE ? m->note : m->app_ctx);
	put64(buf + 8, m->kind == WFI_MSG_NOTE && m->note == WFI_NOTE_WDATA ? m->data : m->tag);
	buf += WFI_HDR;
	if (m->kind == WFI_MSG_EAGER && n) {
		memcpy(buf, m->payload, n);
	} else if (m->kind == WFI_MSG_RNDV) {
		put64(buf, m->rvh.va);
		put32(buf + 8, m->rvh.rkey);
		put32(buf + 12, m->rvh.len);
		if (m->has_data)
			put32(buf + WFI_RVH, m->data);
	} else if (m->kind == WFI_MSG_NOTE && m->note == WFI_NOTE_KEYQ) {
		put64(buf, m->key);
	} else if (m->kind == WFI_MSG_NOTE && m->note == WFI_NOTE_KEYA) {
		put64(buf, m->keya.key);
		put64(buf + 8, m->keya.va);
		put64(buf + 16, m->keya.len);
		put32(buf + 24, m->keya.rkey);
		put32(buf + 28, m->keya.found);
	}
	return WFI_HDR + n;
}

enum wfi_wire_reason wfi_wire_cm_req_decode(const uint8_t *p, size_t n, struct wfi_wire_cm_req *r)
{
	if (!p || n < WFI_CM_REQ_LEN)
		return WFI_WIRE_CM_LEN;
	if (get32(p) != WFI_CM_MAGIC)
		return WFI_WIRE_CM_MAGIC;
	/* Address and port already in network order: copied as they are. */
	memcpy(&r->addr, p + 4, 4);
	memcpy(&r->port, p + 8, 2);
	r->inc = get64(p + 12);
	r->dst_inc = get64(p + 20);
	if (!r->addr || !r->port || p[10] || p[11] || !r->inc)
		return WFI_WIRE_CM_NAME;
	return WFI_WIRE_OK;
}

void wfi_wire_cm_req_encode(uint8_t p[WFI_CM_REQ_LEN], const struct wfi_wire_cm_req *r)
{
	put32(p, WFI_CM_MAGIC);
	memcpy(p + 4, &r->addr, 4);
	memcpy(p + 8, &r->port, 2);
	p[10] = p[11] = 0;
	put64(p + 12, r->inc);
	put64(p + 20, r->dst_inc);
}

enum wfi_wire_reason wfi_wire_cm_rep_decode(const uint8_t *p, size_t n, struct wfi_wire_cm_rep *r)
{
	if (!p || n < WFI_CM_REP_LEN)
		return WFI_WIRE_CM_LEN;
	if (get32(p) != WFI_CM_MAGIC)
		return WFI_WIRE_CM_MAGIC;
	r->id = (uint16_t)(p[4] << 8 | p[5]);
	r->inc = get64(p + 8);
	if (!r->id || r->id > WFI_MAX_PEERS || p[6] || p[7])
		return WFI_WIRE_CM_ID;
	if (!r->inc)
		return WFI_WIRE_CM_NAME;
	return WFI_WIRE_OK;
}

void wfi_wire_cm_rep_encode(uint8_t p[WFI_CM_REP_LEN], const struct wfi_wire_cm_rep *r)
{
	put32(p, WFI_CM_MAGIC);
	p[4] = (uint8_t)(r->id >> 8);
	p[5] = (uint8_t)r->id;
	p[6] = p[7] = 0;
	put64(p + 8, r->inc);
}

enum wfi_wire_reason wfi_wire_cm_rej_decode(const uint8_t *p, size_t n, uint8_t *why)
{
	if (!p || n < WFI_CM_REJ_LEN)
		return WFI_WIRE_CM_LEN;
	if (get32(p) != WFI_CM_MAGIC)
		return WFI_WIRE_CM_MAGIC;
	*why = p[4];
	if ((*why != WFI_CM_REJ_STALE && *why != WFI_CM_REJ_GONE) || p[5] || p[6] || p[7])
		return WFI_WIRE_CM_WHY;
	return WFI_WIRE_OK;
}

void wfi_wire_cm_rej_encode(uint8_t p[WFI_CM_REJ_LEN], uint8_t why)
{
	put32(p, WFI_CM_MAGIC);
	p[4] = why;
	p[5] = p[6] = p[7] = 0;
}
