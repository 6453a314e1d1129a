/* SPDX-License-Identifier: MIT */
/*
 * Half-RDMA / half-FIFO (seed 1.5.7, hw-spec 5.3), one program for the
 * two checklist items, selected by the argument:
 *   52  the write modes: RDMA at the sender into the target's receive
 *       FIFO (RDMAW_FIFO), and send-FIFO data placed at a PVO by the
 *       target adapter (PUT);
 *   53  the read modes: RDMA at the data source into this receive FIFO
 *       (RDMAR_FIFO), and the data source's program answering from its
 *       send FIFO, placed here by RDMA (RDMAR_PUT + PUT READ_RESP).
 */
#include <stdlib.h>
#include <string.h>

#include "harness.h"

#define JOB     0x51u
#define PKEY_A  0x0101u
#define PKEY_B  0x0202u
#define R_A     3u
#define R_B     6u
#define BUFSZ   (32u * 1024u)

static void rig_init(struct h_pair *g)
{
	static const struct h_pair_cfg cfg = {
		.windows = 2, .rcxts = 32, .handlers = 1, .job = JOB,
		.slog2 = 4, .rlog2 = 6, .quantum = 8, .tce_entries = 16,
		.key_a = PKEY_A, .key_b = PKEY_B, .bufsz = BUFSZ,
	};

	h_pair_init(g, &cfg);
	CHECK_EQ(h_acquire(&g->a, R_A, 0, 0), WEFT_CMD_OK, "acquire a");
	CHECK_EQ(h_acquire(&g->b, R_B, 0, 0), WEFT_CMD_OK, "acquire b");
}

static void pattern(uint8_t *p, size_t len, uint8_t seed)
{
	size_t i;

	for (i = 0; i < len; i++)
		p[i] = (uint8_t)(seed + i * 7 + (i >> 9));
}

/* Receive entries of window 0 with their type counted; DATA entries are
 * reassembled into out by their offset.  Returns the number of DATA
 * entries; *last counts entries flagged LAST, *cpl completions, and
 * *cpl_after is true when every completion comes after every DATA entry. */
static unsigned int collect(struct h_node *n, uint8_t *out, size_t outlen, uint8_t flags,
			    unsigned int *last, unsigned int *cpl, bool *cpl_after)
{
	uint64_t cnt = h_db_r(n, 0, WEFT_DB_RECV_COUNT), i;
	unsigned int data = 0;
	bool seen_cpl = false;
	struct weft_recv_hdr rh;

	*last = *cpl = 0;
	*cpl_after = true;
	for (i = 0; i < cnt; i++) {
		h_recv_hdr(n, 0, (uint32_t)i, &rh);
		if (rh.type == WEFT_RF_COMPLETION) {
			(*cpl)++;
			seen_cpl = true;
			continue;
		}
		if (rh.type != WEFT_RF_DATA)
			continue;
		data++;
		if (seen_cpl)
			*cpl_after = false;
		CHECK_EQ(rh.flags & (WEFT_RF_VALID | WEFT_RF_READ), WEFT_RF_VALID | flags,
			 "DATA entry flags");
		if (rh.flags & WEFT_RF_LAST)
			(*last)++;
		if (rh.offset + rh.length <= outlen)
			memcpy(out + rh.offset, h_recv_payload(n, 0, (uint32_t)i), rh.length);
		else
			CHECK(0, "DATA entry offset %llu beyond the transfer",
			      (unsigned long long)rh.offset);
	}
	return data;
}

static void deliver_reversed(struct h_node *from, struct h_node *to)
{
	size_t i;

	for (i = from->ntx; i-- > 0;)
		CHECK_EQ(weft_core_receive(to->c, from->tx[i].data, from->tx[i].len), 0,
			 "receive queued");
	from->ntx = 0;
	h_poll(to, 256);
}

static void test_rdmaw_fifo(void)
{
	struct h_pair g;
	struct weft_rdma_req q;
	struct weft_send_line s;
	struct h_pkt bad;
	uint8_t *got = calloc(1, 10000);
	unsigned int last, cpl, n;
	bool after;

	t_begin("item 52: RDMAW_FIFO: RDMA from the sender's PVO lands in the target's receive FIFO");
	rig_init(&g);
	pattern(h_ptr(&g.a, g.abuf), 10000, 3);
	memset(&q, 0, sizeof(q));
	q.local_pvo = g.apvo;
	q.remote_pvo = 0x5000;          /* a hint for the receiver only */
	q.length = 10000;
	q.local_rcxt = R_A;
	q.remote_rcxt = 999;            /* no rCxt is needed at the target */
	q.notify = WEFT_NOTIFY_BOTH;    /* no completions exist for this mode */
	q.tid = 4;
	q.protocol_cookie = 0xc0;
	q.user_cookie = 0xc1;
	h_put_rdma(&g.a, 0, WEFT_SF_RDMAW_FIFO, 2, 0, &q);
	h_start(&g.a, 0, 1);
	h_poll(&g.a, 64);
	CHECK_EQ(g.a.ntx, 6, "ceil(10000/1920) packets");
	CHECK_EQ(h_txhdr(&g.a, 0)->type, WEFT_PKT_FIFO_DATA, "FIFO_DATA on the wire");
	h_send_line(&g.a, 0, 0, &s);
	CHECK(s.hdr.flags & WEFT_SF_DONE, "frame done after the last packet");
	CHECK_EQ(s.hdr.status, WEFT_R_OK, "status OK");
	bad = g.a.tx[1];
	((struct weft_wire_hdr *)bad.data)->offset = 100;   /* breaks the chunking */
	deliver_reversed(&g.a, &g.b);
	n = collect(&g.b, got, 10000, 0, &last, &cpl, &after);
	CHECK_EQ(n, 6, "six DATA entries, delivered in reverse order");
	CHECK_EQ(last, 1, "exactly one LAST");
	CHECK_EQ(cpl, 0, "no completion entry at the target");
	CHECK(memcmp(got, h_ptr(&g.a, g.abuf), 10000) == 0, "reassembled by offset: byte-exact");
	{
		struct weft_recv_hdr rh;

		h_recv_hdr(&g.b, 0, 0, &rh);
		CHECK_EQ(rh.total_length, 10000, "total in every entry");
		CHECK_EQ(rh.tid, 4, "tid");
		CHECK_EQ(rh.src_node, 1, "source node");
		CHECK_EQ(rh.rcxt, R_A, "sender's rCxt");
		CHECK_EQ(rh.pvo, 0x5000, "the sender's hint");
		CHECK_EQ(rh.user_cookie, 0xc1, "user cookie");
	}
	CHECK_EQ(h_cnt(&g.b, WEFT_CNT_RDMAW_DONE), 0, "no RDMA placement at the target");
	weft_core_receive(g.b.c, bad.data, bad.len);
	h_poll(&g.b, 16);
	CHECK_EQ(h_drops(&g.b, WEFT_R_LENGTH), 1, "off-chunk FIFO_DATA dropped LENGTH");
	CHECK_EQ(h_db_r(&g.b, 0, WEFT_DB_RECV_COUNT), 6, "and not delivered");
	h_poll(&g.b, 16);
	CHECK_EQ(g.b.ntx, 0, "the target sends nothing back");
	free(got);
	h_pair_fini(&g);
}

/* Software copies len bytes of src into PUT frames of 1920 bytes. */
static unsigned int put_frames(struct h_node *n, uint16_t dest, struct weft_rdma_req *q,
			       const uint8_t *src, uint64_t len)
{
	unsigned int k = 0;

	q->length = len;
	for (q->offset = 0; q->offset < len; q->offset += WEFT_MAX_PAYLOAD, k++) {
		uint64_t m = len - q->offset;

		h_put_put(n, 0, dest, 0, q, src + q->offset,
			  (uint16_t)(m > WEFT_MAX_PAYLOAD ? WEFT_MAX_PAYLOAD : m));
	}
	return k;
}

static unsigned int count_type(struct h_node *n, uint8_t type, uint8_t flags)
{
	uint64_t cnt = h_db_r(n, 0, WEFT_DB_RECV_COUNT), i;
	unsigned int k = 0;
	struct weft_recv_hdr rh;

	for (i = 0; i < cnt; i++) {
		h_recv_hdr(n, 0, (uint32_t)i, &rh);
		if (rh.type == type && (rh.flags & flags) == flags)
			k++;
	}
	return k;
}

static void test_put(void)
{
	struct h_pair g;
	struct weft_rdma_req q;
	struct weft_send_line s;
	uint8_t *src = malloc(5000);
	unsigned int k;

	t_begin("item 52: PUT: software copies into the send FIFO, the target adapter places at a PVO");
	rig_init(&g);
	pattern(src, 5000, 9);
	memset(&q, 0, sizeof(q));
	q.remote_pvo = g.bpvo + 100;
	q.local_rcxt = R_A;
	q.remote_rcxt = R_B;
	q.notify = WEFT_NOTIFY_BOTH;
	q.tid = 1;
	k = put_frames(&g.a, 2, &q, src, 5000);
	CHECK_EQ(k, 3, "three frames");
	h_start(&g.a, 0, k);
	h_poll(&g.a, 64);
	CHECK_EQ(g.a.ntx, 3, "one RDMAW packet per frame");
	CHECK_EQ(h_txhdr(&g.a, 2)->type, WEFT_PKT_RDMAW, "an ordinary RDMAW packet");
	CHECK(h_txhdr(&g.a, 2)->flags & WEFT_WF_HALF, "flagged HALF");
	CHECK_EQ(h_txhdr(&g.a, 2)->offset, 3840, "offset of the third frame");
	h_run2(&g.a, &g.b);
	CHECK(memcmp(h_ptr(&g.b, g.bbuf + 100), src, 5000) == 0, "placed byte-exact at the PVO");
	CHECK_EQ(((uint8_t *)h_ptr(&g.b, g.bbuf))[99], 0, "nothing before it");
	CHECK_EQ(((uint8_t *)h_ptr(&g.b, g.bbuf))[5100], 0, "nothing after it");
	CHECK_EQ(count_type(&g.b, WEFT_RF_COMPLETION, WEFT_RF_AS_TARGET), 1,
		 "one TARGET completion");
	CHECK_EQ(count_type(&g.a, WEFT_RF_COMPLETION, WEFT_RF_AS_SOURCE), 1,
		 "one SOURCE completion back at the sender");
	CHECK_EQ(h_cnt(&g.b, WEFT_CNT_RDMAW_DONE), 1, "RDMAW_DONE at the target");

	t_begin("item 52: PUT frame checks: bad chunk length, wrong tid on a later frame");
	q.tid = 2;
	q.length = 5000;
	q.offset = 0;
	h_put_put(&g.a, 0, 2, 0, &q, src, 1000);                /* should be 1920 */
	q.offset = 1920;
	h_put_put(&g.a, 0, 2, 0, &q, src, 1920);                /* tid 2 never started */
	h_start(&g.a, 0, 2);
	h_poll(&g.a, 64);
	CHECK_EQ(g.a.ntx, 0, "nothing sent");
	h_send_line(&g.a, 0, 3, &s);
	CHECK_EQ(s.hdr.status, WEFT_R_LENGTH, "short first frame: LENGTH");
	h_send_line(&g.a, 0, 4, &s);
	CHECK_EQ(s.hdr.status, WEFT_R_TID_STALE, "later frame of an unstarted tid: TID_STALE");
	CHECK_EQ(h_db_r(&g.a, 0, WEFT_DB_STATE), WEFT_WIN_VALID, "no window error");

	t_begin("item 52: PUT without a local rCxt: placed, no completion comes back");
	memset(h_ptr(&g.b, g.bbuf), 0, 8192);
	q.local_rcxt = WEFT_RCXT_NONE;
	q.notify = WEFT_NOTIFY_SOURCE;
	q.tid = 3;
	q.remote_pvo = g.bpvo;
	k = put_frames(&g.a, 2, &q, src, 3000);
	h_start(&g.a, 0, k);
	h_run2(&g.a, &g.b);
	CHECK(memcmp(h_ptr(&g.b, g.bbuf), src, 3000) == 0, "placed");
	CHECK_EQ(count_type(&g.a, WEFT_RF_COMPLETION, 0), 1, "still only the first completion");
	CHECK_EQ(h_cnt(&g.b, WEFT_CNT_TX_COMPLETIONS), 1, "the target sent none for it");
	free(src);
	h_pair_fini(&g);
}

static void test_rdmar_fifo(void)
{
	struct h_pair g;
	struct weft_rdma_req q;
	struct h_pkt dup;
	uint8_t *got = calloc(1, 7000);
	unsigned int last, cpl, n;
	bool after;

	t_begin("item 53: RDMAR_FIFO: the data source's adapter reads its PVO into our receive FIFO");
	rig_init(&g);
	pattern(h_ptr(&g.b, g.bbuf), 7000, 21);
	memset(&q, 0, sizeof(q));
	q.local_pvo = 0x7000;           /* a hint echoed in the entries */
	q.remote_pvo = g.bpvo;
	q.length = 7000;
	q.local_rcxt = R_A;
	q.remote_rcxt = R_B;
	q.notify = WEFT_NOTIFY_BOTH;    /* only SOURCE is possible: a local entry */
	q.tid = 5;
	h_put_rdma(&g.a, 0, WEFT_SF_RDMAR_FIFO, 2, 0, &q);
	h_start(&g.a, 0, 1);
	h_poll(&g.a, 64);
	CHECK_EQ(g.a.ntx, 1, "one request packet");
	CHECK_EQ(h_txhdr(&g.a, 0)->type, WEFT_PKT_RDMAR_FIFO_REQ, "RDMAR_FIFO_REQ");
	h_deliver(&g.a, &g.b);
	h_poll(&g.b, 64);
	CHECK_EQ(g.b.ntx, 4, "data source sends ceil(7000/1920) packets");
	CHECK_EQ(h_txhdr(&g.b, 0)->type, WEFT_PKT_FIFO_DATA, "as FIFO_DATA");
	dup = g.b.tx[2];
	deliver_reversed(&g.b, &g.a);
	n = collect(&g.a, got, 7000, WEFT_RF_READ, &last, &cpl, &after);
	CHECK_EQ(n, 4, "four DATA entries, READ flag");
	CHECK_EQ(last, 1, "one LAST");
	CHECK_EQ(cpl, 1, "one local completion");
	CHECK(after, "the completion follows every DATA entry");
	CHECK(memcmp(got, h_ptr(&g.b, g.bbuf), 7000) == 0, "byte-exact");
	CHECK_EQ(h_cnt(&g.a, WEFT_CNT_RDMAR_DONE), 1, "RDMAR_DONE once");
	weft_core_receive(g.a.c, dup.data, dup.len);
	h_poll(&g.a, 16);
	CHECK_EQ(h_drops(&g.a, WEFT_R_TID_STALE), 1, "a late packet after completion: TID_STALE");
	CHECK_EQ(h_db_r(&g.a, 0, WEFT_DB_RECV_COUNT), 5, "not delivered");
	h_poll(&g.b, 16);
	CHECK_EQ(g.a.ntx + g.b.ntx, 0, "no completion packets either way");

	t_begin("item 53: RDMAR_FIFO: a duplicated response chunk is taken once");
	q.tid = 6;
	h_put_rdma(&g.a, 0, WEFT_SF_RDMAR_FIFO, 2, 0, &q);
	h_start(&g.a, 0, 1);
	h_poll(&g.a, 64);
	h_deliver(&g.a, &g.b);
	h_poll(&g.b, 64);
	dup = g.b.tx[0];
	weft_core_receive(g.a.c, dup.data, dup.len);
	h_deliver(&g.b, &g.a);
	h_poll(&g.a, 64);
	CHECK_EQ(h_drops(&g.a, WEFT_R_DUPLICATE), 1, "second copy: DUPLICATE");
	CHECK_EQ(h_db_r(&g.a, 0, WEFT_DB_RECV_COUNT), 10, "4 + 1 DATA/completion entries more");
	free(got);
	h_pair_fini(&g);
}

static void test_rdmar_put(void)
{
	struct h_pair g;
	struct weft_rdma_req q, resp;
	struct weft_recv_hdr rh;
	uint8_t *src = malloc(5000);
	uint64_t i, cnt;
	unsigned int k;
	bool found = false;

	rig_init(&g);
	pattern(src, 5000, 77);
	t_begin("item 53: RDMAR_PUT: the request reaches the source's program, its PUT frames are placed here");
	memset(&q, 0, sizeof(q));
	q.local_pvo = g.apvo;
	q.remote_pvo = 0x1234000;       /* what the program is asked for */
	q.length = 5000;
	q.local_rcxt = R_A;
	q.notify = WEFT_NOTIFY_BOTH;
	q.tid = 9;
	q.user_cookie = 0xabc;
	h_put_rdma(&g.a, 0, WEFT_SF_RDMAR_PUT, 2, 0, &q);
	h_start(&g.a, 0, 1);
	h_poll(&g.a, 64);
	CHECK_EQ(h_txhdr(&g.a, 0)->type, WEFT_PKT_RDMAR_PUT_REQ, "RDMAR_PUT_REQ");
	h_deliver(&g.a, &g.b);
	h_poll(&g.b, 64);
	cnt = h_db_r(&g.b, 0, WEFT_DB_RECV_COUNT);
	for (i = 0; i < cnt; i++) {
		h_recv_hdr(&g.b, 0, (uint32_t)i, &rh);
		if (rh.type == WEFT_RF_READ_REQ) {
			found = true;
			break;
		}
	}
	CHECK(found, "a READ_REQ entry in the source's receive FIFO");
	CHECK_EQ(rh.rcxt, R_A, "names the requester's rCxt");
	CHECK_EQ(rh.tid, 9, "and tid");
	CHECK_EQ(rh.total_length, 5000, "and length");
	CHECK_EQ(rh.pvo, g.apvo, "and destination PVO");
	CHECK_EQ(rh.src_pvo, 0x1234000, "and what to send");
	CHECK_EQ(rh.user_cookie, 0xabc, "cookie");
	/* The program answers from its send FIFO, through its own rCxt so
	 * that it learns when the data has landed. */
	memset(&resp, 0, sizeof(resp));
	resp.remote_pvo = rh.pvo;
	resp.remote_rcxt = rh.rcxt;
	resp.remote_rcxt_key = rh.rcxt_key;
	resp.tid = rh.tid;
	resp.local_rcxt = R_B;
	resp.notify = WEFT_NOTIFY_TARGET;
	resp.xflags = WEFT_RQ_READ_RESP;
	k = put_frames(&g.b, rh.src_node, &resp, src, rh.total_length);
	h_start(&g.b, 0, k);
	h_run2(&g.b, &g.a);
	CHECK(memcmp(h_ptr(&g.a, g.abuf), src, 5000) == 0, "placed byte-exact at the requester");
	CHECK_EQ(count_type(&g.a, WEFT_RF_COMPLETION, WEFT_RF_AS_SOURCE | WEFT_RF_READ), 1,
		 "one read completion at the requester");
	CHECK_EQ(count_type(&g.b, WEFT_RF_COMPLETION, WEFT_RF_AS_TARGET | WEFT_RF_READ), 1,
		 "one TARGET completion back at the data source");
	CHECK_EQ(h_cnt(&g.a, WEFT_CNT_RDMAR_DONE), 1, "RDMAR_DONE");

	t_begin("item 53: RDMAR_PUT: a late response frame of the finished tid is not placed");
	memset(h_ptr(&g.a, g.abuf), 0, 2048);
	resp.local_rcxt = WEFT_RCXT_NONE;
	resp.offset = 0;
	h_put_put(&g.b, 0, 1, 0, &resp, src, WEFT_MAX_PAYLOAD);
	h_start(&g.b, 0, 1);
	h_run2(&g.b, &g.a);
	CHECK_EQ(h_drops(&g.a, WEFT_R_TID_STALE), 1, "TID_STALE at the requester");
	CHECK_EQ(((uint8_t *)h_ptr(&g.a, g.abuf))[0], 0, "not placed");
	free(src);
	h_pair_fini(&g);
}

int main(int argc, char **argv)
{
	const char *item = argc > 1 ? argv[1] : "";

	if (strcmp(item, "52") == 0) {
		test_rdmaw_fifo();
		test_put();
	} else if (strcmp(item, "53") == 0) {
		test_rdmar_fifo();
		test_rdmar_put();
	} else {
		t_bail("usage: test_half 52|53");
	}
	return t_done();
}
