// SPDX-License-Identifier: MIT
/*
 * Frames for the Wireshark dissector test (tests/wireshark/dissector_test.py).
 *
 *   weft-dissect-gen OUT.pcap OUT.expect OUT.reasons
 *
 * Writes a pcap of link type WEFT_PCAP_LINKTYPE made with the real C
 * structures of include/weft/wire.h, verbs.h, net.h, match.h and cnt.h,
 * the values the dissector must show for each frame, one "FRAME FIELD
 * VALUE" line each, and the names of WEFT_REASON_LIST in order, one a line
 * (the test compares them with the dissector's table).
 * Every field of struct weft_wire_hdr, weft_vhdr, weft_vaddr,
 * weft_net_hdr, weft_match_whdr and weft_cnt_hdr is listed here with offsetof/sizeof; the listing must cover
 * its structure byte for byte (else the program fails), and a "pattern"
 * frame per structure gives every field bytes that depend on their offset,
 * so a dissector that reads a field at another offset or size shows
 * another value.  Then one frame of every packet type, verbs opcode, ACK
 * syndrome, Terminate reason, HELLO_ACK status, matching op, RNDV_ACK
 * status, matching NAK reason, counter packet type and CNT_ERROR cause, an
 * IPv4 frame of IP over Weft, malformed frames and random ones.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "weft/wire.h"
#include "weft/verbs.h"
#include "weft/net.h"
#include "weft/match.h"
#include "weft/cnt.h"
#include "weft/counters.h"
#include "weft/names.h"
#include "weft/fifo.h"

struct fld {
	const char *name;
	size_t off, size;
};

#define FLD(type, f) { #f, offsetof(struct type, f), sizeof(((struct type *)0)->f) }

static const struct fld wire_fields[] = {
	FLD(weft_wire_hdr, version), FLD(weft_wire_hdr, type), FLD(weft_wire_hdr, notify),
	FLD(weft_wire_hdr, flags), FLD(weft_wire_hdr, dst_node), FLD(weft_wire_hdr, src_node),
	FLD(weft_wire_hdr, dst_window), FLD(weft_wire_hdr, src_window), FLD(weft_wire_hdr, key),
	FLD(weft_wire_hdr, length), FLD(weft_wire_hdr, rcxt), FLD(weft_wire_hdr, src_rcxt),
	FLD(weft_wire_hdr, rcxt_key), FLD(weft_wire_hdr, src_rcxt_key), FLD(weft_wire_hdr, tid),
	FLD(weft_wire_hdr, reserved0), FLD(weft_wire_hdr, pvo), FLD(weft_wire_hdr, aux_pvo),
	FLD(weft_wire_hdr, total_length), FLD(weft_wire_hdr, offset),
	FLD(weft_wire_hdr, protocol_cookie), FLD(weft_wire_hdr, user_cookie),
	FLD(weft_wire_hdr, ctl_node), FLD(weft_wire_hdr, ctl_window), FLD(weft_wire_hdr, ctl_rcxt),
	FLD(weft_wire_hdr, ctl_rcxt_key), FLD(weft_wire_hdr, status), FLD(weft_wire_hdr, reserved1),
};

static const struct fld vhdr_fields[] = {
	FLD(weft_vhdr, opcode), FLD(weft_vhdr, flags), FLD(weft_vhdr, reserved0),
	FLD(weft_vhdr, dst_qpn), FLD(weft_vhdr, src_qpn), FLD(weft_vhdr, psn), FLD(weft_vhdr, msn),
	FLD(weft_vhdr, imm_inv), FLD(weft_vhdr, va), FLD(weft_vhdr, rkey), FLD(weft_vhdr, dma_len),
	FLD(weft_vhdr, swap_add), FLD(weft_vhdr, compare), FLD(weft_vhdr, syndrome),
	FLD(weft_vhdr, qkey),
};

static const struct fld vaddr_fields[] = {
	FLD(weft_vaddr, sgid), FLD(weft_vaddr, dgid), FLD(weft_vaddr, flow_label),
	FLD(weft_vaddr, traffic_class), FLD(weft_vaddr, hop_limit), FLD(weft_vaddr, reserved),
};

static const struct fld net_fields[] = {
	FLD(weft_net_hdr, version), FLD(weft_net_hdr, type), FLD(weft_net_hdr, flags),
	FLD(weft_net_hdr, reserved), FLD(weft_net_hdr, frag_index), FLD(weft_net_hdr, frag_count),
	FLD(weft_net_hdr, src_epoch), FLD(weft_net_hdr, dst_epoch), FLD(weft_net_hdr, seq),
	FLD(weft_net_hdr, total_len), FLD(weft_net_hdr, csum_start), FLD(weft_net_hdr, csum_offset),
};

static const struct fld match_fields[] = {
	FLD(weft_match_whdr, op), FLD(weft_match_whdr, flags), FLD(weft_match_whdr, queue),
	FLD(weft_match_whdr, len), FLD(weft_match_whdr, match), FLD(weft_match_whdr, total),
	FLD(weft_match_whdr, offset), FLD(weft_match_whdr, sslot), FLD(weft_match_whdr, rslot),
	FLD(weft_match_whdr, status), FLD(weft_match_whdr, req_id),
};

static const struct fld cnt_fields[] = {
	FLD(weft_cnt_hdr, obj), FLD(weft_cnt_hdr, gen), FLD(weft_cnt_hdr, slot),
	FLD(weft_cnt_hdr, dir), FLD(weft_cnt_hdr, cause), FLD(weft_cnt_hdr, seq),
	FLD(weft_cnt_hdr, reserved0), FLD(weft_cnt_hdr, region_pa), FLD(weft_cnt_hdr, block_pa),
	FLD(weft_cnt_hdr, remote_va), FLD(weft_cnt_hdr, length), FLD(weft_cnt_hdr, offset),
	FLD(weft_cnt_hdr, span),
};

#define N(a) (sizeof(a) / sizeof((a)[0]))

static FILE *pcap, *expect;
static unsigned int frame_no;

static void die(const char *what)
{
	fprintf(stderr, "weft-dissect-gen: %s\n", what);
	exit(1);
}

/* The listing of a structure covers it exactly: fields in order, no gap,
 * no overlap, ending at its size. */
static void check_cover(const char *sname, const struct fld *f, size_t n, size_t size)
{
	size_t at = 0, i;

	for (i = 0; i < n; i++) {
		if (f[i].off != at) {
			fprintf(stderr, "weft-dissect-gen: %s.%s at %zu, expected %zu: a field this test does not know\n",
				sname, f[i].name, f[i].off, at);
			exit(1);
		}
		at += f[i].size;
	}
	if (at != size) {
		fprintf(stderr, "weft-dissect-gen: the fields of %s end at %zu, the structure at %zu\n",
			sname, at, size);
		exit(1);
	}
}

static void put32(uint32_t v)
{
	uint8_t b[4] = { (uint8_t)v, (uint8_t)(v >> 8), (uint8_t)(v >> 16), (uint8_t)(v >> 24) };

	if (fwrite(b, 1, 4, pcap) != 4)
		die("write failed");
}

static void put16(uint16_t v)
{
	uint8_t b[2] = { (uint8_t)v, (uint8_t)(v >> 8) };

	if (fwrite(b, 1, 2, pcap) != 2)
		die("write failed");
}

/* One record: caplen bytes of buf kept, wire length len. */
static unsigned int record(const void *buf, uint32_t caplen, uint32_t len)
{
	frame_no++;
	put32(1700000000u + frame_no);
	put32(0);
	put32(caplen);
	put32(len);
	if (caplen && fwrite(buf, 1, caplen, pcap) != caplen)
		die("write failed");
	return frame_no;
}

static void expect_u(unsigned int fr, const char *name, uint64_t v)
{
	fprintf(expect, "%u %s %llu\n", fr, name, (unsigned long long)v);
}

static void expect_s(unsigned int fr, const char *name, const char *s)
{
	fprintf(expect, "%u %s %s\n", fr, name, s);
}

/* Little-endian value of a field as stored at p. */
static uint64_t le(const uint8_t *p, size_t size)
{
	uint64_t v = 0;

	while (size--)
		v = (v << 8) | p[size];
	return v;
}

/* Expect every integer field of a listing (prefix + name) as stored at p. */
static void expect_all(unsigned int fr, const char *prefix, const struct fld *f, size_t n,
		       const uint8_t *p)
{
	char name[64];
	size_t i;

	for (i = 0; i < n; i++) {
		snprintf(name, sizeof(name), "%s%s", prefix, f[i].name);
		if (f[i].size <= 8)
			expect_u(fr, name, le(p + f[i].off, f[i].size));
	}
}

/* A byte pattern where each byte depends on its offset in the structure. */
static void pattern(uint8_t *p, size_t size, unsigned int salt)
{
	size_t i;

	for (i = 0; i < size; i++)
		p[i] = (uint8_t)(i * 7 + salt);
}

static uint8_t frame[WEFT_WIRE_MAX_FRAME + 64];

static struct weft_wire_hdr *hdr(uint8_t type, uint32_t payload)
{
	struct weft_wire_hdr *h = (struct weft_wire_hdr *)frame;

	memset(frame, 0, sizeof(frame));
	h->version = WEFT_WIRE_VERSION;
	h->type = type;
	h->src_node = 1;
	h->dst_node = 2;
	h->length = payload;
	return h;
}

static unsigned int emit(uint32_t payload)
{
	return record(frame, WEFT_WIRE_HDR_SIZE + payload, WEFT_WIRE_HDR_SIZE + payload);
}

static struct weft_vhdr *verbs(uint8_t op, uint32_t data)
{
	struct weft_vhdr *v;

	hdr(WEFT_PKT_VERBS, sizeof(*v) + data);
	v = (struct weft_vhdr *)(frame + WEFT_WIRE_HDR_SIZE);
	v->opcode = op;
	return v;
}

/* A WEFT_PKT_MATCH frame of op OP with DATA data bytes (len set). */
static struct weft_match_whdr *match(uint8_t op, uint32_t data)
{
	struct weft_match_whdr *m;

	hdr(WEFT_PKT_MATCH, sizeof(*m) + data);
	m = (struct weft_match_whdr *)(frame + WEFT_WIRE_HDR_SIZE);
	m->op = op;
	m->len = data;
	m->total = data;
	m->match = WEFT_MW(0, 3, 1, 0x1234);
	return m;
}

/* A counter frame of type TYPE with DATA data bytes (span set). */
static struct weft_cnt_hdr *cnt(uint8_t type, uint32_t data)
{
	struct weft_cnt_hdr *ch;

	hdr(type, sizeof(*ch) + data);
	ch = (struct weft_cnt_hdr *)(frame + WEFT_WIRE_HDR_SIZE);
	ch->obj = 5;
	ch->gen = 2;
	ch->dir = type == WEFT_PKT_CNT_READ_OP ? WEFT_CNT_WRITE : WEFT_CNT_READ;
	ch->length = 4096;
	ch->span = data;
	return ch;
}

static void write_reasons(const char *path)
{
	static const char *const names[] = {
#define WEFT_REASON_STR(name, text) #name,
		WEFT_REASON_LIST(WEFT_REASON_STR)
#undef WEFT_REASON_STR
	};
	FILE *f = fopen(path, "w");
	size_t i;

	if (!f)
		die("cannot create the reasons file");
	for (i = 0; i < N(names); i++)
		fprintf(f, "%s\n", names[i]);
	if (fclose(f))
		die("cannot write the reasons file");
}

int main(int argc, char **argv)
{
	static const uint8_t types[] = {
		WEFT_PKT_FIFO, WEFT_PKT_RDMAW, WEFT_PKT_RDMAR_REQ, WEFT_PKT_COMPLETION,
		WEFT_PKT_TP_RDMAR_REQ, WEFT_PKT_TP_RDMAW, WEFT_PKT_FIFO_DATA,
		WEFT_PKT_RDMAR_FIFO_REQ, WEFT_PKT_RDMAR_PUT_REQ, WEFT_PKT_HELLO_ACK,
	};
	struct weft_wire_hdr *h;
	struct weft_vhdr *v;
	struct weft_net_hdr *nh;
	struct weft_match_whdr *m;
	struct weft_cnt_hdr *ch;
	unsigned int fr, i;

	if (argc != 4)
		die("usage: weft-dissect-gen OUT.pcap OUT.expect OUT.reasons");
	check_cover("weft_wire_hdr", wire_fields, N(wire_fields), sizeof(struct weft_wire_hdr));
	check_cover("weft_vhdr", vhdr_fields, N(vhdr_fields), sizeof(struct weft_vhdr));
	check_cover("weft_vaddr", vaddr_fields, N(vaddr_fields), sizeof(struct weft_vaddr));
	check_cover("weft_net_hdr", net_fields, N(net_fields), sizeof(struct weft_net_hdr));
	check_cover("weft_match_whdr", match_fields, N(match_fields), sizeof(struct weft_match_whdr));
	check_cover("weft_cnt_hdr", cnt_fields, N(cnt_fields), sizeof(struct weft_cnt_hdr));
	write_reasons(argv[3]);
	pcap = fopen(argv[1], "wb");
	expect = fopen(argv[2], "w");
	if (!pcap || !expect)
		die("cannot create the output files");
	put32(0xa1b2c3d4u);
	put16(2);
	put16(4);
	put32(0);
	put32(0);
	put32(65535);
	put32(WEFT_PCAP_LINKTYPE);

	/* Pattern frames: every field's value depends on its offset. */
	h = hdr(WEFT_PKT_RDMAW, 0);
	pattern(frame, sizeof(*h), 3);
	h->version = WEFT_WIRE_VERSION;
	h->type = WEFT_PKT_RDMAW;
	h->length = 0;
	h->flags = WEFT_WF_READ_RESP | WEFT_WF_LAST;
	fr = emit(0);
	expect_all(fr, "weft.", wire_fields, N(wire_fields), frame);
	expect_s(fr, "weft.type_name", "RDMAW");
	expect_u(fr, "weft.flags.read_resp", 1);
	expect_u(fr, "weft.flags.last", 1);
	expect_u(fr, "weft.flags.half", 0);
	expect_u(fr, "malformed", 0);

	v = verbs(WEFT_VOP_WRITE, 16);
	pattern((uint8_t *)v, sizeof(*v), 5);
	v->opcode = WEFT_VOP_WRITE;
	v->flags = WEFT_VF_FIRST | WEFT_VF_ACKREQ;
	fr = emit(sizeof(*v) + 16);
	expect_all(fr, "weft.vhdr.", vhdr_fields, N(vhdr_fields), (uint8_t *)v);
	expect_s(fr, "weft.vhdr.opcode_name", "WRITE");
	expect_u(fr, "weft.vhdr.flags.first", 1);
	expect_u(fr, "weft.vhdr.flags.ackreq", 1);
	expect_u(fr, "weft.vhdr.flags.last", 0);
	expect_u(fr, "malformed", 0);

	{
		struct weft_vaddr *a;

		v = verbs(WEFT_VOP_UD_SEND, sizeof(*a) + 8);
		v->qkey = WEFT_VERBS_GSI_QKEY;
		a = (struct weft_vaddr *)(v + 1);
		pattern((uint8_t *)a, sizeof(*a), 9);
		fr = emit(sizeof(*v) + sizeof(*a) + 8);
		expect_all(fr, "weft.vaddr.", vaddr_fields, N(vaddr_fields), (uint8_t *)a);
		/* the GIDs: as IPv6 addresses, compared as 32 hex digits */
		{
			char gid[40];
			size_t k;

			for (k = 0; k < 16; k++)
				sprintf(gid + 2 * k, "%02x", a->sgid[k]);
			expect_s(fr, "weft.vaddr.sgid", gid);
			for (k = 0; k < 16; k++)
				sprintf(gid + 2 * k, "%02x", a->dgid[k]);
			expect_s(fr, "weft.vaddr.dgid", gid);
		}
		expect_u(fr, "weft.vhdr.qkey", WEFT_VERBS_GSI_QKEY);
		expect_s(fr, "weft.vhdr.opcode_name", "UD_SEND");
		expect_u(fr, "malformed", 0);
	}

	h = hdr(WEFT_PKT_FIFO, sizeof(*nh) + 40);
	h->key = WEFT_NET_KEY;
	nh = (struct weft_net_hdr *)(frame + WEFT_WIRE_HDR_SIZE);
	pattern((uint8_t *)nh, sizeof(*nh), 11);
	nh->version = WEFT_NET_VERSION;
	nh->type = WEFT_NET_FRAG;
	nh->flags = WEFT_NET_F_CSUM;
	nh->frag_index = 0;
	nh->frag_count = 2;
	fr = emit(sizeof(*nh) + 40);
	expect_all(fr, "weft.net.", net_fields, N(net_fields), (uint8_t *)nh);
	expect_u(fr, "weft.net.flags.csum", 1);
	expect_u(fr, "malformed", 0);

	m = match(WEFT_MWOP_DATA, 16);
	pattern((uint8_t *)m, sizeof(*m), 13);
	m->op = WEFT_MWOP_DATA;
	m->flags = WEFT_MWF_RNR | WEFT_MWF_TO_SENDER | WEFT_MWF_SYN;
	m->len = 16;
	fr = emit(sizeof(*m) + 16);
	expect_all(fr, "weft.match.", match_fields, N(match_fields), (uint8_t *)m);
	expect_s(fr, "weft.type_name", "MATCH");
	expect_s(fr, "weft.match.op_name", "DATA");
	expect_u(fr, "weft.match.flags.rnr", 1);
	expect_u(fr, "weft.match.flags.to_sender", 1);
	expect_u(fr, "weft.match.flags.syn", 1);
	expect_u(fr, "malformed", 0);

	ch = cnt(WEFT_PKT_CNT_DATA, 24);
	pattern((uint8_t *)ch, sizeof(*ch), 17);
	ch->dir = WEFT_CNT_WRITE;
	ch->span = 24;
	fr = emit(sizeof(*ch) + 24);
	expect_all(fr, "weft.cnt.", cnt_fields, N(cnt_fields), (uint8_t *)ch);
	expect_s(fr, "weft.type_name", "CNT_DATA");
	expect_s(fr, "weft.cnt.dir_name", "WRITE");
	expect_u(fr, "malformed", 0);

	/* Every packet type, with its name. */
	for (i = 0; i < N(types); i++) {
		h = hdr(types[i], 0);
		h->dst_node = (uint16_t)(i == 0 ? WEFT_NODE_BROADCAST : 2);
		h->notify = WEFT_NOTIFY_BOTH;
		fr = emit(0);
		expect_u(fr, "weft.type", types[i]);
		expect_s(fr, "weft.type_name", weft_pkt_type_name(types[i]));
		expect_s(fr, "weft.dst_kind", i == 0 ? "broadcast" : "2");
		expect_u(fr, "malformed", 0);
	}
	h = hdr(WEFT_PKT_FIFO, 0);
	h->dst_node = WEFT_NODE_MCAST_BASE + 7;
	fr = emit(0);
	expect_s(fr, "weft.dst_kind", "mcast7");
	h = hdr(WEFT_PKT_HELLO, WEFT_WIRE_TOKEN_SIZE);
	h->key = WEFT_WIRE_HELLO_MAGIC;
	fr = emit(WEFT_WIRE_TOKEN_SIZE);
	expect_s(fr, "weft.type_name", "HELLO");
	expect_u(fr, "malformed", 0);
	for (i = 0; i <= WEFT_SW_AUTH_FAILED; i++) {
		h = hdr(WEFT_PKT_HELLO_ACK, 0);
		h->status = (uint16_t)i;
		fr = emit(0);
		expect_u(fr, "weft.status", i);
		expect_s(fr, "weft.status_name",
			 (const char *[]){ "OK", "NODE_IN_USE", "BAD_NODE", "BAD_HELLO",
					   "AUTH_FAILED" }[i]);
	}
	for (i = 0; i < WEFT_R__COUNT; i++) {
		h = hdr(WEFT_PKT_COMPLETION, 0);
		h->status = (uint16_t)i;
		fr = emit(0);
		expect_s(fr, "weft.status_name", weft_reason_name(i));
	}

	/* Every verbs opcode; ACK syndromes; a Terminate for every reason. */
	for (i = WEFT_VOP_SEND; i <= WEFT_VOP_UD_SEND; i++) {
		uint32_t extra = i == WEFT_VOP_UD_SEND ? sizeof(struct weft_vaddr) : 0;

		v = verbs((uint8_t)i, extra);
		fr = emit(sizeof(*v) + extra);
		expect_u(fr, "weft.vhdr.opcode", i);
		expect_s(fr, "weft.vhdr.opcode_name", weft_vop_name(i));
		expect_u(fr, "malformed", 0);
	}
	for (i = WEFT_VACK_ACK; i <= WEFT_VACK_NAK_RNR; i++) {
		v = verbs(WEFT_VOP_ACK, 0);
		v->syndrome = i;
		fr = emit(sizeof(*v));
		expect_s(fr, "weft.vhdr.syndrome_name",
			 (const char *[]){ "ACK", "NAK_SEQ", "NAK_RNR" }[i]);
	}
	for (i = 0; i < WEFT_R__COUNT; i++) {
		v = verbs(WEFT_VOP_TERMINATE, 0);
		v->syndrome = i;
		fr = emit(sizeof(*v));
		expect_s(fr, "weft.vhdr.syndrome_name", weft_reason_name(i));
	}

	/* Every matching op (data only in EAGER and DATA); RNDV_ACK
	 * statuses; a NAK for every reason. */
	for (i = WEFT_MWOP_EAGER; i <= WEFT_MWOP_ACK; i++) {
		uint32_t data = i == WEFT_MWOP_EAGER || i == WEFT_MWOP_DATA ? 8 : 0;

		match((uint8_t)i, data);
		fr = emit(sizeof(*m) + data);
		expect_u(fr, "weft.type", WEFT_PKT_MATCH);
		expect_u(fr, "weft.match.op", i);
		expect_s(fr, "weft.match.op_name", weft_mwop_name(i));
		expect_u(fr, "weft.match.len", data);
		expect_u(fr, "malformed", 0);
	}
	for (i = WEFT_MACK_MATCHED; i <= WEFT_MACK_NOT_FOUND; i++) {
		m = match(WEFT_MWOP_RNDV_ACK, 0);
		m->status = i;
		fr = emit(sizeof(*m));
		expect_s(fr, "weft.match.status_name",
			 (const char *[]){ "", "MATCHED", "PENDING", "NOT_FOUND" }[i]);
		expect_u(fr, "malformed", 0);
	}
	for (i = 0; i < WEFT_R__COUNT; i++) {
		m = match(WEFT_MWOP_NAK, 0);
		m->status = i;
		fr = emit(sizeof(*m));
		expect_s(fr, "weft.match.status_name", weft_reason_name(i));
	}

	/* Every counter packet type (data only in CNT_DATA); a CNT_ERROR for
	 * every cause. */
	for (i = WEFT_PKT_CNT_WRITE_OP; i <= WEFT_PKT_CNT_ERROR; i++) {
		uint32_t data = i == WEFT_PKT_CNT_DATA ? WEFT_CNT_CHUNK : 0;

		ch = cnt((uint8_t)i, data);
		fr = emit(sizeof(*ch) + data);
		expect_u(fr, "weft.type", i);
		expect_s(fr, "weft.type_name", weft_pkt_type_name(i));
		expect_s(fr, "weft.cnt.dir_name", i == WEFT_PKT_CNT_READ_OP ? "WRITE" : "READ");
		expect_u(fr, "weft.cnt.span", data);
		expect_u(fr, "malformed", 0);
	}
	for (i = 0; i < WEFT_R__COUNT; i++) {
		ch = cnt(WEFT_PKT_CNT_ERROR, 0);
		ch->cause = (uint16_t)i;
		fr = emit(sizeof(*ch));
		expect_u(fr, "weft.cnt.cause", i);
		expect_s(fr, "weft.cnt.cause_name", weft_reason_name(i));
	}

	/* IP over Weft: an ICMP echo request 10.87.0.1 -> 10.87.0.2. */
	{
		static const uint8_t eth_ip[] = {
			0x02, 0x57, 0x46, 0x00, 0x00, 0x01, 0x02, 0x57, 0x46, 0x00, 0x00, 0x00,
			0x08, 0x00,
			0x45, 0x00, 0x00, 0x1c, 0x12, 0x34, 0x40, 0x00, 0x40, 0x01, 0x00, 0x00,
			10, 87, 0, 1, 10, 87, 0, 2,
			0x08, 0x00, 0xf7, 0xfe, 0x00, 0x01, 0x00, 0x00,
		};

		h = hdr(WEFT_PKT_FIFO, sizeof(*nh) + sizeof(eth_ip));
		h->key = WEFT_NET_KEY;
		nh = (struct weft_net_hdr *)(frame + WEFT_WIRE_HDR_SIZE);
		nh->version = WEFT_NET_VERSION;
		nh->type = WEFT_NET_FRAME;
		nh->frag_count = 1;
		nh->src_epoch = 7;
		nh->total_len = sizeof(eth_ip);
		memcpy(nh + 1, eth_ip, sizeof(eth_ip));
		fr = emit(sizeof(*nh) + sizeof(eth_ip));
		expect_s(fr, "ip.src", "10.87.0.1");
		expect_s(fr, "ip.dst", "10.87.0.2");
		expect_u(fr, "icmp.type", 8);
		expect_u(fr, "malformed", 0);
	}

	/* Malformed frames: each must be flagged, none may break the dissector. */
	hdr(WEFT_PKT_FIFO, 0);
	fr = record(frame, 50, 50);                     /* shorter than the header */
	expect_u(fr, "malformed", 1);
	fr = record(frame, 0, 0);                       /* empty record */
	expect_u(fr, "malformed", 1);
	hdr(WEFT_PKT_RDMAW, 100);
	fr = emit(20);                                  /* length says 100, 20 follow */
	expect_u(fr, "malformed", 1);
	hdr(WEFT_PKT_RDMAW, 64);
	fr = record(frame, WEFT_WIRE_HDR_SIZE + 10, WEFT_WIRE_HDR_SIZE + 64); /* snapped */
	expect_u(fr, "malformed", 1);
	h = hdr(WEFT_PKT_RDMAW, 0);
	h->version = 2;
	fr = emit(0);
	expect_u(fr, "malformed", 1);
	hdr(0x42, 0);
	fr = emit(0);
	expect_u(fr, "malformed", 1);
	hdr(WEFT_PKT_COMPLETION, 8);
	fr = emit(8);                                   /* header-only type with payload */
	expect_u(fr, "malformed", 1);
	hdr(WEFT_PKT_VERBS, 10);
	fr = emit(10);                                  /* no room for struct weft_vhdr */
	expect_u(fr, "malformed", 1);
	verbs(WEFT_VOP_UD_SEND, 8);
	fr = emit(sizeof(struct weft_vhdr) + 8);        /* UD_SEND without its address */
	expect_u(fr, "malformed", 1);
	verbs(0x77, 0);
	fr = emit(sizeof(struct weft_vhdr));            /* unknown opcode */
	expect_u(fr, "malformed", 1);
	h = hdr(WEFT_PKT_FIFO, sizeof(*nh) + 10);
	h->key = WEFT_NET_KEY;
	nh = (struct weft_net_hdr *)(frame + WEFT_WIRE_HDR_SIZE);
	nh->version = WEFT_NET_VERSION;
	nh->type = WEFT_NET_FRAME;
	nh->total_len = 60;
	fr = emit(sizeof(*nh) + 10);                    /* FRAME shorter than total_len */
	expect_u(fr, "malformed", 1);
	h = hdr(WEFT_PKT_FIFO, 12);
	h->key = WEFT_NET_KEY;
	fr = emit(12);                                  /* no room for struct weft_net_hdr */
	expect_u(fr, "malformed", 1);
	h = hdr(WEFT_PKT_HELLO, 5);
	h->key = WEFT_WIRE_HELLO_MAGIC;
	fr = emit(5);                                   /* token of 5 bytes */
	expect_u(fr, "malformed", 1);

	hdr(WEFT_PKT_MATCH, 20);
	fr = emit(20);                                  /* no room for struct weft_match_whdr */
	expect_u(fr, "malformed", 1);
	m = match(WEFT_MWOP_DATA, 4);
	m->len = 10;
	fr = emit(sizeof(*m) + 4);                      /* len says 10, 4 follow */
	expect_u(fr, "malformed", 1);
	match(WEFT_MWOP_ACK + 1, 0);
	fr = emit(sizeof(*m));                          /* unknown op */
	expect_u(fr, "malformed", 1);
	m = match(WEFT_MWOP_RNDV_REQ, 8);
	m->total = 1 << 20;
	fr = emit(sizeof(*m) + 8);                      /* rendezvous request with data */
	expect_u(fr, "malformed", 1);
	m = match(WEFT_MWOP_EAGER, 8);
	m->total = 9;
	fr = emit(sizeof(*m) + 8);                      /* EAGER total differs from len */
	expect_u(fr, "malformed", 1);
	hdr(WEFT_PKT_CNT_WRITE_OP, 30);
	fr = emit(30);                                  /* no room for struct weft_cnt_hdr */
	expect_u(fr, "malformed", 1);
	cnt(WEFT_PKT_CNT_ACK, 8);
	fr = emit(sizeof(*ch) + 8);                     /* data in a CNT_ACK */
	expect_u(fr, "malformed", 1);
	cnt(WEFT_PKT_CNT_DATA, 0);
	fr = emit(sizeof(*ch));                         /* CNT_DATA without data */
	expect_u(fr, "malformed", 1);
	cnt(WEFT_PKT_CNT_DATA, WEFT_CNT_CHUNK + 1);
	fr = emit(sizeof(*ch) + WEFT_CNT_CHUNK + 1);    /* more than a chunk */
	expect_u(fr, "malformed", 1);
	ch = cnt(WEFT_PKT_CNT_DATA, 16);
	ch->span = 32;
	fr = emit(sizeof(*ch) + 16);                    /* span says 32, 16 follow */
	expect_u(fr, "malformed", 1);
	ch = cnt(WEFT_PKT_CNT_WRITE_OP, 0);
	ch->dir = 3;
	fr = emit(sizeof(*ch));                         /* unknown direction */
	expect_u(fr, "malformed", 1);

	/* Random frames, random lengths and contents (fixed seed): no check
	 * but that the dissector never fails on them. */
	srand(25);
	for (i = 0; i < 300; i++) {
		uint32_t len = (uint32_t)rand() % (WEFT_WIRE_MAX_FRAME + 40), k;

		for (k = 0; k < len; k++)
			frame[k] = (uint8_t)rand();
		if (i % 3 == 0 && len >= WEFT_WIRE_HDR_SIZE) {
			/* plausible headers reach the bodies */
			h = (struct weft_wire_hdr *)frame;
			h->version = WEFT_WIRE_VERSION;
			h->type = (uint8_t[]){ WEFT_PKT_VERBS, WEFT_PKT_FIFO, WEFT_PKT_HELLO,
					       WEFT_PKT_MATCH, WEFT_PKT_CNT_DATA,
					       WEFT_PKT_CNT_ERROR }[i % 18 / 3];
			h->key = i % 2 ? WEFT_NET_KEY : h->key;
			h->length = len - WEFT_WIRE_HDR_SIZE;
		}
		fr = record(frame, len, len);
		(void)fr;
	}
	if (fclose(pcap) || fclose(expect))
		die("cannot write the output files");
	printf("%u frames\n", frame_no);
	return 0;
}
