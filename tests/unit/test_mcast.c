/* SPDX-License-Identifier: MIT */
/*
 * Item 78, multicast RDMA (seed 1.5.11): an RDMA write to a multicast id
 * is placed by the adapters that define the reserved rCxt; every other
 * adapter that sees the packets discards them silently (no event, no
 * window error, no memory touched).  With SOURCE notification the source
 * gets one completion per member.
 */
#include <string.h>

#include "harness.h"

#define JOB     0x78u
#define PKEY    0x0777u
#define R_MC    12u             /* the group's reserved rCxt */
#define R_SRC   4u
#define GROUP   5u
#define LEN     5000u

static unsigned int completions(struct h_node *n, uint16_t *src)
{
	uint64_t cnt = h_db_r(n, 0, WEFT_DB_RECV_COUNT), i;
	unsigned int k = 0;
	struct weft_recv_hdr rh;

	for (i = 0; i < cnt; i++) {
		h_recv_hdr(n, 0, (uint32_t)i, &rh);
		if (rh.type == WEFT_RF_COMPLETION) {
			k++;
			if (src)
				*src = rh.src_node;
		}
	}
	return k;
}

int main(void)
{
	struct h_node a, m[3];
	struct weft_lmt l;
	struct weft_rdma_req q;
	struct weft_event ev;
	uint64_t abuf, apvo, buf[3];
	unsigned int i, k, evs = 0;
	uint16_t src = 0;
	size_t p;

	t_begin("item 78: members (reserved rCxt defined) place the write, the non-member discards it");
	h_init(&a, 1, 2, 32, 1, 0);
	h_lmt_prepare(&a, 0, JOB, 4, 5, 4, &l);
	l.config_parm_bcast = 1;
	h_lmt_write(&a, 0, &l);
	CHECK_EQ(h_cmd(&a, WEFT_REG_CMD_OPEN_WINDOW, 0), WEFT_CMD_OK, "open source");
	h_acquire(&a, R_SRC, 0, 0);
	h_tce_table(&a, 0, 8, 12, JOB);
	abuf = h_alloc(&a, 8192, 4096);
	apvo = h_map(&a, 0, 0, PKEY, abuf, 8192);
	for (p = 0; p < LEN; p++)
		((uint8_t *)h_ptr(&a, abuf))[p] = (uint8_t)(p * 31 + 7);
	for (i = 0; i < 3; i++) {
		h_init(&m[i], (uint16_t)(2 + i), 2, 32, 1, 0);
		h_evq_setup(&m[i]);
		CHECK_EQ(h_open(&m[i], 0, JOB, 4, 5, 4), WEFT_CMD_OK, "open receiver");
		if (i < 2)      /* nodes 2 and 3 are members: rCxt 12 defined */
			CHECK_EQ(h_acquire(&m[i], R_MC, 0, 0), WEFT_CMD_OK, "reserved rCxt");
		h_tce_table(&m[i], 0, 8, 12, JOB);
		buf[i] = h_alloc(&m[i], 8192, 4096);
		h_map(&m[i], 0, 0, PKEY, buf[i], 8192);
	}
	memset(&q, 0, sizeof(q));
	q.local_pvo = apvo;
	q.remote_pvo = weft_pvo_make(PKEY, 0, 0);
	q.length = LEN;
	q.local_rcxt = R_SRC;
	q.remote_rcxt = R_MC;
	q.notify = WEFT_NOTIFY_BOTH;
	q.tid = 1;
	h_put_rdma(&a, 0, WEFT_SF_RDMAW, WEFT_NODE_MCAST_BASE + GROUP, 0, &q);
	h_start(&a, 0, 1);
	h_poll(&a, 64);
	CHECK_EQ(a.ntx, 3, "three packets to the multicast id");
	/* Every adapter sees the packets (seed 1.5.11). */
	for (k = 0; k < a.ntx; k++) {
		CHECK_EQ(h_txhdr(&a, k)->dst_node, WEFT_NODE_MCAST_BASE + GROUP, "multicast id");
		for (i = 0; i < 3; i++)
			weft_core_receive(m[i].c, a.tx[k].data, a.tx[k].len);
	}
	a.ntx = 0;
	for (i = 0; i < 3; i++)
		h_poll(&m[i], 64);
	for (i = 0; i < 2; i++) {
		CHECK(memcmp(h_ptr(&m[i], buf[i]), h_ptr(&a, abuf), LEN) == 0, "member placed");
		CHECK_EQ(completions(&m[i], &src), 1, "member TARGET completion");
		CHECK_EQ(src, 1, "naming the source");
		CHECK_EQ(m[i].ntx, 1, "member sends its SOURCE completion");
	}
	CHECK_EQ(((uint8_t *)h_ptr(&m[2], buf[2]))[0] | ((uint8_t *)h_ptr(&m[2], buf[2]))[LEN - 1],
		 0, "non-member memory untouched");
	CHECK_EQ(h_drops(&m[2], WEFT_R_RCXT_INVALID), 3, "non-member: every packet RCXT_INVALID");
	CHECK_EQ(completions(&m[2], NULL), 0, "no completion at the non-member");
	CHECK_EQ(h_db_r(&m[2], 0, WEFT_DB_RECV_COUNT), 0, "nothing in its FIFO");
	while (h_evq_next(&m[2], &ev))
		evs++;
	CHECK_EQ(evs, 0, "no event at the non-member");
	CHECK_EQ(h_db_r(&m[2], 0, WEFT_DB_STATE), WEFT_WIN_VALID, "no window error");
	CHECK_EQ(m[2].ntx, 0, "the non-member sends nothing");

	t_begin("item 78: the source gets one SOURCE completion per member");
	for (i = 0; i < 2; i++)
		h_deliver(&m[i], &a);
	h_poll(&a, 64);
	CHECK_EQ(completions(&a, NULL), 2, "two completions, one per member");

	t_begin("item 78: a window without config_parm_bcast may not multicast");
	CHECK_EQ(h_open(&a, 1, JOB, 4, 5, 4), WEFT_CMD_OK, "open window 1 (no bcast)");
	h_acquire(&a, R_SRC + 1, 1, 0);
	q.local_rcxt = R_SRC + 1;
	q.tid = 2;
	h_put_rdma(&a, 1, WEFT_SF_RDMAW, WEFT_NODE_MCAST_BASE + GROUP, 0, &q);
	h_start(&a, 1, 1);
	h_poll(&a, 64);
	CHECK_EQ(a.ntx, 0, "nothing sent");
	{
		struct weft_send_line s;

		h_send_line(&a, 1, 0, &s);
		CHECK_EQ(s.hdr.status, WEFT_R_BCAST_DISABLED, "BCAST_DISABLED");
	}
	h_fini(&a);
	for (i = 0; i < 3; i++)
		h_fini(&m[i]);
	return t_done();
}
