/* SPDX-License-Identifier: MIT */
/* Wire decoder fuzz target (fuzz_wire.h). */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_wire.h"

#define FW_MAX (WFI_SLOT + 64)		/* inputs a little beyond an SRQ buffer */
#define FW_CM_MAX 64			/* rdma_cm pads private data (conn.c keeps 64) */

__attribute__((format(printf, 2, 3)))
static void violation(struct fw_stats *st, const char *fmt, ...)
{
	va_list ap;

	st->violations++;
	fprintf(stderr, "fuzz-wire: violation: ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

static uint64_t interesting(struct fz_src *src)
{
	static const uint64_t v[] = {
		0, 1, 2, 3, 4, 5, 6, 0xff, 0x100, 0xffff, 1024, 1025, 0x7fffffff, 0x80000000,
		0xffffffff, 0x100000000ull, WFI_MAX_MSG, WFI_MAX_MSG + 1, WFI_EAGER, WFI_SLOT,
		WFI_CM_MAGIC, WFI_MSG_BIT, WFI_DATA_BIT, WFI_RNDV_BIT, WFI_SRC_MASK,
		WFI_DATA_BIT | WFI_RNDV_BIT, ~0ull, ~0ull - 1, 1ull << 63,
	};

	return fz_src_below(src, 3) ? v[fz_src_below(src, sizeof(v) / sizeof(v[0]))] :
				      fz_src_u64(src);
}

static void fill(struct fz_src *src, uint8_t *p, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		p[i] = (uint8_t)fz_src_below(src, 256);
}

/* A data message's tag: FI_MSG or an application tag, a source id. */
static uint64_t data_tag(struct fz_src *src)
{
	uint64_t t = fz_src_below(src, 4) ? fz_src_u64(src) & WFI_TAG_MASK : WFI_MSG_BIT;

	return t | (1 + fz_src_below(src, WFI_MAX_PEERS)) << WFI_SRC_SHIFT;
}

/* A valid message of a random kind; an eager payload goes to pay. */
static void gen_valid(struct fz_src *src, struct wfi_wire_msg *m, uint8_t *pay)
{
	memset(m, 0, sizeof(*m));
	m->kind = (enum wfi_wire_kind)fz_src_below(src, 4);
	switch (m->kind) {
	case WFI_MSG_EAGER:
		m->op = WFI_OP_EAGER;
		m->tag = data_tag(src) | (fz_src_below(src, 2) ? WFI_DATA_BIT : 0);
		m->app_ctx = (uint32_t)fz_src_u64(src);
		m->has_data = m->tag & WFI_DATA_BIT;
		m->data = m->app_ctx;
		m->plen = (uint32_t)(fz_src_below(src, 8) ? fz_src_below(src, 64) :
				     fz_src_below(src, WFI_EAGER + 1));
		fill(src, pay, m->plen);
		m->payload = pay;
		break;
	case WFI_MSG_RNDV:
		m->op = fz_src_below(src, 2) ? WFI_OP_RNDV : WFI_OP_EAGER;
		m->has_data = fz_src_below(src, 2);
		m->data = (uint32_t)fz_src_u64(src);
		m->tag = data_tag(src) | WFI_RNDV_BIT |
			 (m->op == WFI_OP_RNDV && m->has_data ? WFI_DATA_BIT : 0);
		m->app_ctx = (uint32_t)fz_src_below(src, 256) |
			     (m->op == WFI_OP_RNDV && m->has_data ? m->data << 8 : 0);
		if (m->op == WFI_OP_RNDV && !m->has_data)
			m->tag &= ~WFI_RNDV_BIT;
		m->rvh = (struct wfi_wire_rvh){ .va = fz_src_u64(src), .rkey = (uint32_t)fz_src_u64(src),
						.len = (uint32_t)fz_src_below(src, WFI_MAX_MSG + 1) };
		break;
	case WFI_MSG_FIN:
		m->op = WFI_OP_FIN;
		m->app_ctx = (uint32_t)fz_src_u64(src);
		m->tag = fz_src_below(src, 2) ? 0 : fz_src_u64(src);
		break;
	default:
		m->op = WFI_OP_NO_TAG;
		m->note = (uint32_t)(1 + fz_src_below(src, 5));
		m->app_ctx = m->note;
		if (m->note == WFI_NOTE_WDATA) {
			m->has_data = true;
			m->data = (uint32_t)fz_src_u64(src);
			m->tag = m->data;
		} else if (m->note == WFI_NOTE_KEYQ) {
			m->key = fz_src_u64(src);
		} else if (m->note == WFI_NOTE_KEYA) {
			m->keya.key = fz_src_u64(src);
			m->keya.found = fz_src_below(src, 2);
			if (m->keya.found) {
				m->keya.va = fz_src_u64(src) >> 1;
				m->keya.len = fz_src_below(src, 1ull << 40);
				m->keya.rkey = (uint32_t)fz_src_u64(src);
			}
		}
		break;
	}
}

static bool same(const struct wfi_wire_msg *a, const struct wfi_wire_msg *b)
{
	return a->kind == b->kind && a->op == b->op && a->app_ctx == b->app_ctx &&
	       a->tag == b->tag && a->plen == b->plen &&
	       (!a->plen || !memcmp(a->payload, b->payload, a->plen)) &&
	       a->rvh.va == b->rvh.va && a->rvh.rkey == b->rvh.rkey && a->rvh.len == b->rvh.len &&
	       a->has_data == b->has_data && (!a->has_data || a->data == b->data) &&
	       a->note == b->note && a->key == b->key && a->keya.key == b->keya.key &&
	       a->keya.va == b->keya.va && a->keya.len == b->keya.len &&
	       a->keya.rkey == b->keya.rkey && a->keya.found == b->keya.found;
}

/* Decodes n bytes of in from a heap copy of exactly n bytes and checks
 * the invariants; returns the reason (and the message in *out). */
static enum wfi_wire_reason check(struct fw_stats *st, const uint8_t *in, size_t n,
				  struct wfi_wire_msg *out)
{
	static uint8_t again[FW_MAX];
	uint8_t *h = malloc(n ? n : 1);
	struct wfi_wire_msg m;
	enum wfi_wire_reason r;
	size_t back;
	int id;

	if (!h)
		abort();
	memcpy(h, in, n);
	r = wfi_wire_decode(h, n, &m);
	if (r != WFI_WIRE_OK) {
		if (r >= WFI_WIRE_DECODE_END || !wfi_wire_reason_name(r))
			violation(st, "%zu bytes: refusal %d is no decoder's named reason", n, (int)r);
		else
			st->refused[r]++;
		goto out;
	}
	st->accepted++;
	id = wfi_wire_src(m.tag);
	switch (m.kind) {
	case WFI_MSG_EAGER:
		if (m.payload != h + WFI_HDR || (size_t)m.plen + WFI_HDR != n)
			violation(st, "eager payload %u bytes not the %zu after the TMH", m.plen,
				  n - WFI_HDR);
		break;
	case WFI_MSG_RNDV:
		if (n != WFI_HDR + (m.has_data ? WFI_RNDV_HDR : WFI_RVH) || m.rvh.len > WFI_MAX_MSG)
			violation(st, "rendezvous of %zu bytes, length %u accepted", n, m.rvh.len);
		break;
	case WFI_MSG_FIN:
		if (n != WFI_HDR)
			violation(st, "a FIN of %zu bytes accepted", n);
		break;
	case WFI_MSG_NOTE:
		if (m.note < WFI_NOTE_READ || m.note > WFI_NOTE_WDATA)
			violation(st, "note kind %u accepted", m.note);
		break;
	default:
		violation(st, "kind %d", (int)m.kind);
	}
	if ((m.kind == WFI_MSG_EAGER || m.kind == WFI_MSG_RNDV) && (id < 1 || id > WFI_MAX_PEERS))
		violation(st, "source id %d accepted", id);
	back = wfi_wire_encode(again, sizeof(again), &m);
	if (back != n || memcmp(again, h, n))
		violation(st, "%zu bytes decode then encode to %zu other bytes", n, back);
out:
	if (out) {
		*out = m;
		if (m.payload)		/* h is freed: point into the caller's bytes */
			out->payload = in + (m.payload - h);
	}
	free(h);
	return r;
}

/* Hostile edits of a valid encoding of n bytes in b (cap bytes): its
 * new length. */
static size_t mutate(struct fz_src *src, uint8_t *b, size_t n, size_t cap)
{
	static const size_t fields[] = { 0, 1, 3, 4, 8, 16, 24, 28, 32, 40, 44 };
	unsigned int k, edits = 1 + (unsigned int)fz_src_below(src, 4);
	size_t o, add;
	uint64_t v;

	for (k = 0; k < edits; k++) {
		switch (fz_src_below(src, 8)) {
		case 0:
			if (n)
				b[fz_src_below(src, n)] ^= (uint8_t)(1u << fz_src_below(src, 8));
			break;
		case 1:
			if (n)
				b[fz_src_below(src, n)] = (uint8_t)fz_src_below(src, 256);
			break;
		case 2:			/* a field set to a hostile value */
		case 3:
			o = fields[fz_src_below(src, sizeof(fields) / sizeof(fields[0]))];
			v = interesting(src);
			if (fz_src_below(src, 2) && o + 4 <= n) {
				b[o] = (uint8_t)(v >> 24);
				b[o + 1] = (uint8_t)(v >> 16);
				b[o + 2] = (uint8_t)(v >> 8);
				b[o + 3] = (uint8_t)v;
			} else if (o + 8 <= n) {
				for (add = 0; add < 8; add++)
					b[o + add] = (uint8_t)(v >> (56 - 8 * add));
			}
			break;
		case 4:
			n = fz_src_below(src, n + 1);
			break;
		case 5:
			add = fz_src_below(src, 8) ? fz_src_below(src, 40) : cap - n;
			add = add > cap - n ? cap - n : add;
			fill(src, b + n, add);
			n += add;
			break;
		case 6:
			if (n)
				b[0] = (uint8_t)(fz_src_below(src, 2) ? fz_src_below(src, 4) :
							       fz_src_below(src, 256));
			break;
		default:		/* tag bits 63..48 */
			if (n > 9) {
				b[8] = (uint8_t)fz_src_below(src, 256);
				b[9] = (uint8_t)fz_src_below(src, 256);
			}
			break;
		}
	}
	return n;
}

/* Connection private data: a connect's, an accept's or a reject's, valid
 * (checked to decode to itself), padded as rdma_cm may, maybe mutated. */
static void cm_input(struct fw_stats *st, struct fz_src *src)
{
	static const size_t len[3] = { WFI_CM_REQ_LEN, WFI_CM_REP_LEN, WFI_CM_REJ_LEN };
	uint8_t b[FW_CM_MAX], again[WFI_CM_REQ_LEN], *h;
	struct wfi_wire_cm_req req = { 0 }, greq = { 0 };
	struct wfi_wire_cm_rep rep = { 0 }, grep = { 0 };
	unsigned int kind = (unsigned int)fz_src_below(src, 3);
	bool mut = fz_src_below(src, 2);
	uint8_t why = fz_src_below(src, 2) ? WFI_CM_REJ_STALE : WFI_CM_REJ_GONE, gwhy = 0;
	size_t n = len[kind], pad;
	enum wfi_wire_reason r;

	st->cm++;
	if (kind == 0) {
		req.addr = (uint32_t)fz_src_u64(src) | 1;
		req.port = (uint16_t)(fz_src_u64(src) | 1);
		req.inc = interesting(src) | 1;
		req.dst_inc = interesting(src);
		wfi_wire_cm_req_encode(b, &req);
	} else if (kind == 1) {
		rep.id = (uint16_t)(1 + fz_src_below(src, WFI_MAX_PEERS));
		rep.inc = interesting(src) | 1;
		wfi_wire_cm_rep_encode(b, &rep);
	} else {
		wfi_wire_cm_rej_encode(b, why);
	}
	pad = fz_src_below(src, FW_CM_MAX - n + 1);	/* rdma_cm's padding */
	fill(src, b + n, pad);
	n += pad;
	if (mut)
		n = mutate(src, b, n, sizeof(b));
	h = malloc(n ? n : 1);
	if (!h)
		abort();
	memcpy(h, b, n);
	r = kind == 0 ? wfi_wire_cm_req_decode(h, n, &greq) :
	    kind == 1 ? wfi_wire_cm_rep_decode(h, n, &grep) : wfi_wire_cm_rej_decode(h, n, &gwhy);
	if (r == WFI_WIRE_OK) {
		st->accepted++;
		if (kind == 0)
			wfi_wire_cm_req_encode(again, &greq);
		else if (kind == 1)
			wfi_wire_cm_rep_encode(again, &grep);
		else
			wfi_wire_cm_rej_encode(again, gwhy);
		if (memcmp(again, h, len[kind]))
			violation(st, "connection data decode then encode to other bytes");
		if (!mut && (kind == 0 ? greq.addr != req.addr || greq.port != req.port ||
					 greq.inc != req.inc || greq.dst_inc != req.dst_inc :
			     kind == 1 ? grep.id != rep.id || grep.inc != rep.inc : gwhy != why))
			violation(st, "valid connection data decoded to other fields");
		if ((kind == 0 && !greq.inc) || (kind == 1 && (!grep.id || grep.id > WFI_MAX_PEERS ||
							       !grep.inc)))
			violation(st, "a connect without an incarnation or an accept id %u accepted",
				  grep.id);
		if (kind == 2 && gwhy != WFI_CM_REJ_STALE && gwhy != WFI_CM_REJ_GONE)
			violation(st, "a reject's why %u accepted", gwhy);
	} else if (r < WFI_WIRE_CM_LEN || r > WFI_WIRE_CM_WHY) {
		violation(st, "connection data refused for %d, no connection reason", (int)r);
	} else {
		st->refused[r]++;
		if (!mut)
			violation(st, "valid connection data refused: %s", wfi_wire_reason_name(r));
	}
	free(h);
}

/* A rendezvous header as the adapter leaves it in a tagged buffer. */
static void rndv_input(struct fw_stats *st, struct fz_src *src)
{
	uint8_t b[40], *h;
	size_t n = fz_src_below(src, sizeof(b) + 1);
	struct wfi_wire_rvh rvh;
	enum wfi_wire_reason r;
	uint32_t data;
	bool has;

	fill(src, b, n);
	if (n >= 16 && fz_src_below(src, 2))
		b[12] &= 0x3f;			/* a length up to 2^30 */
	h = malloc(n ? n : 1);
	if (!h)
		abort();
	memcpy(h, b, n);
	r = wfi_wire_rndv_decode(h, n, &rvh, &has, &data);
	if (r == WFI_WIRE_OK) {
		st->accepted++;
		if ((n != WFI_RVH && n != WFI_RNDV_HDR) || has != (n == WFI_RNDV_HDR) ||
		    rvh.len > WFI_MAX_MSG)
			violation(st, "rendezvous header of %zu bytes accepted", n);
	} else if (r != WFI_WIRE_RNDV_LEN && r != WFI_WIRE_RNDV_SIZE) {
		violation(st, "rendezvous header refused for %d", (int)r);
	} else {
		st->refused[r]++;
	}
	free(h);
}

void fw_input(struct fw_stats *st, struct fz_src *src)
{
	static uint8_t pay[WFI_EAGER], b[FW_MAX];
	struct wfi_wire_msg m, got;
	size_t n;

	st->inputs++;
	switch (fz_src_below(src, 8)) {
	case 0:
	case 1:				/* valid: accepted as it was encoded */
		st->valid++;
		gen_valid(src, &m, pay);
		n = wfi_wire_encode(b, sizeof(b), &m);
		if (!n) {
			violation(st, "a valid message of kind %d does not encode", (int)m.kind);
			break;
		}
		if (check(st, b, n, &got) != WFI_WIRE_OK || !same(&m, &got))
			violation(st, "a valid message of kind %d did not decode to itself",
				  (int)m.kind);
		break;
	case 2:
	case 3:
	case 4:				/* valid, then hostile edits */
		st->mutated++;
		gen_valid(src, &m, pay);
		n = wfi_wire_encode(b, sizeof(b), &m);
		check(st, b, mutate(src, b, n, sizeof(b)), NULL);
		break;
	case 5:				/* random bytes */
		st->random++;
		n = fz_src_below(src, 4) ? fz_src_below(src, 64) : fz_src_below(src, FW_MAX + 1);
		fill(src, b, n);
		check(st, b, n, NULL);
		break;
	case 6:
		cm_input(st, src);
		break;
	default:
		rndv_input(st, src);
		break;
	}
}
