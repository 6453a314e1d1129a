/* SPDX-License-Identifier: MIT */
/*
 * Conditional RDMA (seed 1.5.12, hw-spec 5.4), one program for the two
 * checklist items, selected by the argument:
 *   54  a COND entry, N RDMA writes and a signal write: the signal goes
 *       only after the N SOURCE completions reached the source adapter;
 *   55  COND_CTL clears, sets and queries the conditional counters and
 *       queues, and the reported counts match.
 */
#include <stdlib.h>
#include <string.h>

#include "harness.h"

#define JOB     0x54u
#define PKEY_A  0x0303u
#define PKEY_B  0x0404u
#define NMEM    3u
#define R_SIG   10u             /* signal rCxt at both ends */
#define BUFSZ   (40u * 1024u)

static void rig_init(struct h_pair *g)
{
	static const struct h_pair_cfg cfg = {
		.windows = 2, .rcxts = 32, .handlers = 1, .job = JOB,
		.slog2 = 5, .rlog2 = 6, .quantum = 8, .tce_entries = 16,
		.key_a = PKEY_A, .key_b = PKEY_B, .bufsz = BUFSZ,
	};
	uint32_t r;

	h_pair_init(g, &cfg);
	for (r = 1; r <= NMEM; r++) {
		h_acquire(&g->a, r, 0, 0);
		h_acquire(&g->b, r, 0, 0);
	}
	h_acquire(&g->a, R_SIG, 0, 0);
	h_acquire(&g->b, R_SIG, 0, 0);
	memset(h_ptr(&g->a, g->abuf), 0x5a, BUFSZ);
}

static void post_cond(struct h_node *n, uint8_t type, uint8_t op, uint8_t cond, uint32_t value)
{
	struct weft_rdma_req q;
	struct weft_cond_req cr;

	memset(&q, 0, sizeof(q));
	memset(&cr, 0, sizeof(cr));
	cr.op = op;
	cr.cond = cond;
	cr.value = value;
	memcpy(&q, &cr, sizeof(cr));
	h_put_rdma(n, 0, type, 2, 0, &q);
}

/* RDMA write of 3000 bytes through rCxt r (same id at both ends), into
 * B's buffer at slot r. */
static void post_write(struct h_pair *g, uint32_t r, uint32_t tid, uint8_t notify)
{
	struct weft_rdma_req q;

	memset(&q, 0, sizeof(q));
	q.local_pvo = g->apvo + r * 3072;
	q.remote_pvo = g->bpvo + r * 3072;
	q.length = 3000;
	q.local_rcxt = r;
	q.remote_rcxt = r;
	q.notify = notify;
	q.tid = tid;
	q.user_cookie = r;
	h_put_rdma(&g->a, 0, WEFT_SF_RDMAW, 2, 0, &q);
}

/* The queue state written back into send frame idx. */
static struct weft_cond_req frame_cond(struct h_node *n, uint32_t idx, uint16_t *status)
{
	struct weft_send_line s;
	struct weft_cond_req cr;

	h_send_line(n, 0, idx, &s);
	memcpy(&cr, &s.rdma, sizeof(cr));
	*status = s.hdr.status;
	CHECK(s.hdr.flags & WEFT_SF_DONE, "frame %u done", idx);
	return cr;
}

/* Packets in a's capture that belong to rCxt r (its RDMAW payload). */
static unsigned int sent_on(struct h_node *a, uint32_t r)
{
	unsigned int k = 0;
	size_t i;

	for (i = 0; i < a->ntx; i++)
		if (h_txhdr(a, i)->type == WEFT_PKT_RDMAW && h_txhdr(a, i)->src_rcxt == r)
			k++;
	return k;
}

/* Move b's completion packets to a one at a time, up to max. */
static unsigned int pass_completions(struct h_node *b, struct h_node *a, unsigned int max)
{
	unsigned int k = 0;
	size_t i, keep = 0;

	for (i = 0; i < b->ntx; i++) {
		if (h_txhdr(b, i)->type == WEFT_PKT_COMPLETION && k < max) {
			weft_core_receive(a->c, b->tx[i].data, b->tx[i].len);
			k++;
		} else {
			b->tx[keep++] = b->tx[i];
		}
	}
	b->ntx = keep;
	h_poll(a, 64);
	return k;
}

static void test_signal_after_n(void)
{
	struct h_pair g;
	struct weft_recv_hdr rh;
	struct h_pkt first;
	uint16_t st;
	uint32_t r;
	uint64_t i, cnt;
	int sig_seq = -1, last_member_seq = -1;

	t_begin("item 54: COND + 3 writes + signal: the signal waits for all 3 completions");
	rig_init(&g);
	post_cond(&g.a, WEFT_SF_COND, 0, 2, NMEM);
	for (r = 1; r <= NMEM; r++)
		post_write(&g, r, 1, WEFT_NOTIFY_BOTH);
	post_write(&g, R_SIG, 1, WEFT_NOTIFY_TARGET);
	h_start(&g.a, 0, NMEM + 2);
	h_poll(&g.a, 256);
	for (r = 1; r <= NMEM; r++)
		CHECK_EQ(sent_on(&g.a, r), 2, "member sent (2 packets)");
	CHECK_EQ(sent_on(&g.a, R_SIG), 0, "signal not sent");
	CHECK_EQ(h_db_r(&g.a, 0, WEFT_DB_SEND_COUNT), NMEM + 2, "every frame processed (signal held)");
	CHECK_EQ(frame_cond(&g.a, 0, &st).q_state, WEFT_COND_COLLECTING, "COND frame: collecting");
	h_deliver(&g.a, &g.b);
	h_poll(&g.b, 256);
	CHECK_EQ(g.b.ntx, NMEM, "three SOURCE completions on their way");
	first = g.b.tx[0];
	CHECK_EQ(pass_completions(&g.b, &g.a, 1), 1, "first completion in");
	weft_core_receive(g.a.c, first.data, first.len);         /* replayed */
	h_poll(&g.a, 64);
	CHECK_EQ(h_drops(&g.a, WEFT_R_DUPLICATE), 1, "its replay is a DUPLICATE");
	CHECK_EQ(pass_completions(&g.b, &g.a, 1), 1, "second completion in");
	CHECK_EQ(sent_on(&g.a, R_SIG), 0, "2 of 3 (and a replay): still held");
	CHECK_EQ(pass_completions(&g.b, &g.a, 1), 1, "third completion in");
	CHECK_EQ(sent_on(&g.a, R_SIG), 2, "now the signal goes");
	h_deliver(&g.a, &g.b);
	h_poll(&g.b, 64);
	cnt = h_db_r(&g.b, 0, WEFT_DB_RECV_COUNT);
	for (i = 0; i < cnt; i++) {
		h_recv_hdr(&g.b, 0, (uint32_t)i, &rh);
		if (rh.type != WEFT_RF_COMPLETION)
			continue;
		if (rh.rcxt == R_SIG)
			sig_seq = (int)i;
		else
			last_member_seq = (int)i;
	}
	CHECK(sig_seq > last_member_seq && last_member_seq >= 0,
	      "the target sees the signal after every member (%d > %d)", sig_seq, last_member_seq);
	CHECK(memcmp(h_ptr(&g.a, g.abuf + R_SIG * 3072), h_ptr(&g.b, g.bbuf + R_SIG * 3072),
		     3000) == 0, "signal data placed");
	CHECK_EQ(h_db_r(&g.a, 0, WEFT_DB_STATE), WEFT_WIN_VALID, "window valid");

	t_begin("item 54: completions already in before the signal frame: the signal goes at once");
	post_cond(&g.a, WEFT_SF_COND, 0, 2, 1);
	post_write(&g, 1, 2, WEFT_NOTIFY_SOURCE);
	h_start(&g.a, 0, 2);
	h_run2(&g.a, &g.b);
	g.a.ntx = 0;
	post_write(&g, R_SIG, 2, WEFT_NOTIFY_TARGET);
	h_start(&g.a, 0, 1);
	h_poll(&g.a, 64);
	CHECK_EQ(sent_on(&g.a, R_SIG), 2, "signal sent when its frame is processed");

	t_begin("item 54: a member that asks no SOURCE completion is refused (COND_BUSY)");
	post_cond(&g.a, WEFT_SF_COND, 0, 3, 1);
	post_write(&g, 2, 3, WEFT_NOTIFY_TARGET);
	h_start(&g.a, 0, 2);
	h_poll(&g.a, 64);
	{
		struct weft_send_line s;

		h_send_line(&g.a, 0, (uint32_t)h_db_r(&g.a, 0, WEFT_DB_SEND_COUNT) - 1, &s);
		CHECK_EQ(s.hdr.status, WEFT_R_COND_BUSY, "member refused");
	}
	CHECK_EQ(sent_on(&g.a, 2), 0, "not sent");
	h_pair_fini(&g);
}

static void test_counters(void)
{
	struct h_pair g;
	struct weft_cond_req cr;
	uint16_t st;
	uint32_t idx = 0;

	t_begin("item 55: QUERY reports the counters: expect, tagged, done, state");
	rig_init(&g);
	post_cond(&g.a, WEFT_SF_COND_CTL, WEFT_COND_QUERY, 1, 0);
	h_start(&g.a, 0, 1);
	h_poll(&g.a, 16);
	cr = frame_cond(&g.a, idx++, &st);
	CHECK_EQ(st, WEFT_R_OK, "query OK");
	CHECK_EQ(cr.q_state, WEFT_COND_IDLE, "idle at first");
	post_cond(&g.a, WEFT_SF_COND, 0, 1, 2);
	post_write(&g, 1, 1, WEFT_NOTIFY_SOURCE);
	post_cond(&g.a, WEFT_SF_COND_CTL, WEFT_COND_QUERY, 1, 0);
	post_write(&g, 2, 1, WEFT_NOTIFY_SOURCE);
	post_write(&g, R_SIG, 1, WEFT_NOTIFY_TARGET);
	post_cond(&g.a, WEFT_SF_COND_CTL, WEFT_COND_QUERY, 1, 0);
	h_start(&g.a, 0, 6);
	h_poll(&g.a, 256);
	cr = frame_cond(&g.a, idx + 2, &st);
	CHECK_EQ(cr.q_state, WEFT_COND_COLLECTING, "after 1 member: collecting");
	CHECK_EQ(cr.q_expect, 2, "expect 2");
	CHECK_EQ(cr.q_tagged, 1, "tagged 1");
	cr = frame_cond(&g.a, idx + 5, &st);
	CHECK_EQ(cr.q_state, WEFT_COND_HELD, "after the signal frame: held");
	CHECK_EQ(cr.q_tagged, 2, "tagged 2");
	CHECK_EQ(cr.q_done, 0, "done 0");
	idx += 6;
	h_deliver(&g.a, &g.b);
	h_poll(&g.b, 64);
	pass_completions(&g.b, &g.a, 1);
	g.a.ntx = 0;
	post_cond(&g.a, WEFT_SF_COND_CTL, WEFT_COND_QUERY, 1, 0);
	h_start(&g.a, 0, 1);
	h_poll(&g.a, 16);
	cr = frame_cond(&g.a, idx++, &st);
	CHECK_EQ(cr.q_done, 1, "one completion counted");
	CHECK_EQ(cr.q_state, WEFT_COND_HELD, "still held");

	t_begin("item 55: SET done = expect releases the held signal");
	post_cond(&g.a, WEFT_SF_COND_CTL, WEFT_COND_SET, 1, 2);
	h_start(&g.a, 0, 1);
	h_poll(&g.a, 64);
	cr = frame_cond(&g.a, idx++, &st);
	CHECK_EQ(cr.q_done, 2, "done set to 2");
	CHECK_EQ(cr.q_state, WEFT_COND_FIRED, "fired");
	CHECK_EQ(cr.q_fired, 1, "fired once");
	CHECK_EQ(sent_on(&g.a, R_SIG), 2, "signal sent");
	pass_completions(&g.b, &g.a, 1);        /* the late member: no effect */
	post_cond(&g.a, WEFT_SF_COND_CTL, WEFT_COND_QUERY, 1, 0);
	h_start(&g.a, 0, 1);
	h_poll(&g.a, 16);
	cr = frame_cond(&g.a, idx++, &st);
	CHECK_EQ(cr.q_fired, 1, "a late completion does not fire again");

	t_begin("item 55: CLEAR discards a held signal and zeroes the counters");
	g.a.ntx = 0;
	post_cond(&g.a, WEFT_SF_COND, 0, 4, 1);
	post_write(&g, 3, 2, WEFT_NOTIFY_SOURCE);
	post_write(&g, R_SIG, 2, WEFT_NOTIFY_TARGET);
	post_cond(&g.a, WEFT_SF_COND_CTL, WEFT_COND_CLEAR, 4, 0);
	h_start(&g.a, 0, 4);
	h_poll(&g.a, 64);
	cr = frame_cond(&g.a, idx + 3, &st);
	CHECK_EQ(st, WEFT_R_OK, "clear OK");
	CHECK_EQ(cr.q_state, WEFT_COND_IDLE, "idle");
	CHECK_EQ(cr.q_expect + cr.q_done + cr.q_tagged + cr.q_fired, 0, "counters zero");
	idx += 4;
	h_deliver(&g.a, &g.b);
	h_poll(&g.b, 64);
	pass_completions(&g.b, &g.a, 8);
	h_poll(&g.a, 64);
	CHECK_EQ(sent_on(&g.a, R_SIG), 0, "the discarded signal never goes");

	t_begin("item 55: refused commands: bad queue, bad count, a second COND while collecting");
	post_cond(&g.a, WEFT_SF_COND_CTL, WEFT_COND_QUERY, WEFT_NR_COND, 0);
	post_cond(&g.a, WEFT_SF_COND, 0, 0, 0);
	post_cond(&g.a, WEFT_SF_COND, 0, 0, WEFT_COND_MAX_MEMBERS + 1);
	post_cond(&g.a, WEFT_SF_COND, 0, 0, 2);
	post_cond(&g.a, WEFT_SF_COND, 0, 5, 2);
	post_cond(&g.a, WEFT_SF_COND_CTL, 9, 0, 0);
	h_start(&g.a, 0, 6);
	h_poll(&g.a, 64);
	frame_cond(&g.a, idx, &st);
	CHECK_EQ(st, WEFT_R_BAD_HEADER, "queue out of range");
	frame_cond(&g.a, idx + 1, &st);
	CHECK_EQ(st, WEFT_R_LENGTH, "count 0");
	frame_cond(&g.a, idx + 2, &st);
	CHECK_EQ(st, WEFT_R_LENGTH, "count 65");
	frame_cond(&g.a, idx + 3, &st);
	CHECK_EQ(st, WEFT_R_OK, "COND queue 0");
	cr = frame_cond(&g.a, idx + 4, &st);
	CHECK_EQ(st, WEFT_R_COND_BUSY, "another COND while queue 0 collects");
	frame_cond(&g.a, idx + 5, &st);
	CHECK_EQ(st, WEFT_R_BAD_HEADER, "unknown op");
	CHECK_EQ(h_db_r(&g.a, 0, WEFT_DB_STATE), WEFT_WIN_VALID, "no window error");

	t_begin("item 55: closing the window empties the queues");
	CHECK_EQ(h_cmd(&g.a, WEFT_REG_CMD_CLOSE_WINDOW, 0), WEFT_CMD_OK, "close");
	h_poll(&g.a, 16);
	CHECK_EQ(h_cmd(&g.a, WEFT_REG_CMD_OPEN_WINDOW, 0), WEFT_CMD_OK, "reopen");
	g.a.sprod[0] = 0;
	post_cond(&g.a, WEFT_SF_COND_CTL, WEFT_COND_QUERY, 0, 0);
	h_start(&g.a, 0, 1);
	h_poll(&g.a, 16);
	cr = frame_cond(&g.a, 0, &st);
	CHECK_EQ(cr.q_state, WEFT_COND_IDLE, "queue 0 idle after close/open");
	h_pair_fini(&g);
}

int main(int argc, char **argv)
{
	const char *item = argc > 1 ? argv[1] : "";

	if (strcmp(item, "54") == 0) {
		test_signal_after_n();
	} else if (strcmp(item, "55") == 0) {
		test_counters();
	} else {
		t_bail("usage: test_cond 54|55");
	}
	return t_done();
}
