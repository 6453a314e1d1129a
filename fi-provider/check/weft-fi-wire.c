// SPDX-License-Identifier: MIT
/*
 * weft-fi-wire: a hostile peer of the weft libfabric provider
 * (docs/libfabric.md "Wire messages").  The program opens a weft endpoint,
 * then, as a raw rdma_cm and verbs peer on the same node, connects to it
 * with a connect whose magic is wrong, one whose name is not its address,
 * one whose name has no incarnation and one for another incarnation of the
 * endpoint (all must be rejected, the last told why), then with a valid
 * one that it closes, a replay of that name (rejected, told why) and a
 * new incarnation at the same address, and sends on that connection one
 * message of each kind the provider must refuse.  The
 * endpoint must complete nothing for them; then a message sent before its
 * receive is posted and one sent after must arrive byte-exact with the
 * peer's source, so the refusals left the endpoint (and its tag-matching
 * sync with the adapter) working.  Each refusal's reason is the
 * provider's line on stderr, which the scenario ofi-wire checks.
 * Prints "ok N - ..." / "not ok N - ..." and exits non-zero when a check
 * failed.
 *
 * Usage: weft-fi-wire
 */
#include <arpa/inet.h>
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <infiniband/verbs.h>
#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_tagged.h>
#include <rdma/rdma_cma.h>

#include "../wire.h"
#include "fi_check.h"

#define SLOT 64				/* bytes per hostile message */
#define NMSG 32

struct ep {
	struct side s;
	struct sockaddr_in name;
	uint64_t seen;			/* completions and errors polled */
	struct fi_cq_tagged_entry last;	/* the last completion polled */
	bool held;			/* and not yet taken (recv_wait) */
};

struct raw {
	struct rdma_event_channel *ch;
	struct rdma_cm_id *id;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_mr *mr;
	uint8_t buf[NMSG][SLOT];
	uint16_t my_id;			/* our id at the endpoint (its accept) */
	uint8_t rej[WFI_CM_REJ_LEN];	/* a reject's private data */
};

static int ep_open(struct ep *e)
{
	size_t len = sizeof(e->name);
	int ret = side_open(&e->s, NULL, NULL, 0);

	return ret ? ret : fi_getname(&e->s.ep->fid, &e->name, &len);
}

/* Progresses the endpoint once, counting what it completes (the last
 * completion is kept for recv_wait). */
static void ep_poll(struct ep *e)
{
	struct fi_cq_tagged_entry c;
	struct fi_cq_err_entry err;
	ssize_t r = fi_cq_read(e->s.cq, &c, 1);

	if (r == 1) {
		e->seen++;
		e->last = c;
		e->held = true;
	} else if (r == -FI_EAVAIL) {
		memset(&err, 0, sizeof(err));
		fi_cq_readerr(e->s.cq, &err, 0);
		e->seen++;
	}
}

/* The next connection event of the raw peer (progressing the endpoint,
 * which accepts or rejects), within 20 s: its type, or -1.  Its private
 * data go to pd (n bytes at most). */
static int raw_event(struct raw *r, struct ep *e, uint8_t *pd, size_t n)
{
	double end = now() + 20;
	struct rdma_cm_event *ev;
	int type;

	while (now() < end) {
		ep_poll(e);
		if (rdma_get_cm_event(r->ch, &ev))
			continue;
		type = ev->event;
		if (pd && ev->param.conn.private_data)
			memcpy(pd, ev->param.conn.private_data,
			       ev->param.conn.private_data_len < n ? ev->param.conn.private_data_len : n);
		rdma_ack_cm_event(ev);
		return type;
	}
	return -1;
}

static void raw_close(struct raw *r)
{
	if (r->id) {
		if (r->id->qp)
			rdma_destroy_qp(r->id);
		rdma_destroy_id(r->id);
	}
	if (r->mr)
		ibv_dereg_mr(r->mr);
	if (r->cq)
		ibv_destroy_cq(r->cq);
	if (r->pd)
		ibv_dealloc_pd(r->pd);
	if (r->ch)
		rdma_destroy_event_channel(r->ch);
	memset(r, 0, sizeof(*r));
}

/* A connect's private data [magic | addr | port 4242 | 0 0 | inc | dst_inc]. */
struct raw_req {
	uint32_t magic, addr;
	uint64_t inc, dst_inc;
	uint8_t len;			/* the bytes sent (rdma_cm pads with zeros) */
};

/* The endpoint's incarnation: its name's sin_zero (docs/libfabric.md "Names"). */
static uint64_t ep_inc(const struct ep *e)
{
	uint64_t v;

	memcpy(&v, e->name.sin_zero, 8);
	return be64toh(v);
}

/* Connects to the endpoint with private data q: the connection event
 * that ends it (ESTABLISHED or REJECTED), or -1; the reject's private
 * data go to r->rej. */
static int raw_connect(struct raw *r, struct ep *e, const struct raw_req *q)
{
	struct sockaddr_in src = e->name, dst = e->name;
	struct ibv_qp_init_attr qa = { .qp_type = IBV_QPT_RC,
				       .cap = { .max_send_wr = NMSG, .max_recv_wr = 1,
						.max_send_sge = 1, .max_recv_sge = 1 } };
	uint8_t pd[WFI_CM_REQ_LEN], rep[WFI_CM_REP_LEN] = { 0 };
	uint16_t port = htons(4242);
	uint32_t magic = htonl(q->magic);
	uint64_t inc = htobe64(q->inc), dst_inc = htobe64(q->dst_inc);
	struct rdma_conn_param cp = { .private_data = pd, .private_data_len = q->len,
				      .responder_resources = 1, .initiator_depth = 1,
				      .retry_count = 7, .rnr_retry_count = 7 };
	int fl, ev;

	memcpy(pd, &magic, 4);
	memcpy(pd + 4, &q->addr, 4);
	memcpy(pd + 8, &port, 2);
	pd[10] = pd[11] = 0;
	memcpy(pd + 12, &inc, 8);
	memcpy(pd + 20, &dst_inc, 8);
	src.sin_port = 0;
	memset(src.sin_zero, 0, sizeof(src.sin_zero));
	memset(dst.sin_zero, 0, sizeof(dst.sin_zero));
	memset(r->rej, 0, sizeof(r->rej));
	r->ch = rdma_create_event_channel();
	if (!r->ch)
		return -1;
	fl = fcntl(r->ch->fd, F_GETFL);
	if (fl < 0 || fcntl(r->ch->fd, F_SETFL, fl | O_NONBLOCK) ||
	    rdma_create_id(r->ch, &r->id, NULL, RDMA_PS_TCP) ||
	    rdma_resolve_addr(r->id, (struct sockaddr *)&src, (struct sockaddr *)&dst, 2000) ||
	    raw_event(r, e, NULL, 0) != RDMA_CM_EVENT_ADDR_RESOLVED ||
	    rdma_resolve_route(r->id, 2000) ||
	    raw_event(r, e, NULL, 0) != RDMA_CM_EVENT_ROUTE_RESOLVED)
		return -1;
	r->pd = ibv_alloc_pd(r->id->verbs);
	r->cq = r->pd ? ibv_create_cq(r->id->verbs, 2 * NMSG, NULL, NULL, 0) : NULL;
	r->mr = r->cq ? ibv_reg_mr(r->pd, r->buf, sizeof(r->buf), IBV_ACCESS_LOCAL_WRITE) : NULL;
	qa.send_cq = qa.recv_cq = r->cq;
	if (!r->mr || rdma_create_qp(r->id, r->pd, &qa) || rdma_connect(r->id, &cp))
		return -1;
	ev = raw_event(r, e, rep, sizeof(rep));
	if (ev == RDMA_CM_EVENT_ESTABLISHED)
		r->my_id = (uint16_t)(rep[4] << 8 | rep[5]);
	else if (ev == RDMA_CM_EVENT_REJECTED)
		memcpy(r->rej, rep, sizeof(r->rej));
	return ev;
}

/* A connect with private data q is rejected (its reject saying why, when
 * why is not 0); the refusal it tests is reported as sent. */
static bool rejected(struct ep *e, const struct raw_req *q, uint8_t why, const char *reason)
{
	struct raw bad = { 0 };
	bool ok = raw_connect(&bad, e, q) == RDMA_CM_EVENT_REJECTED &&
		  (!why || (!memcmp(bad.rej, "WFI3", 4) && bad.rej[4] == why));

	raw_close(&bad);
	fprintf(stderr, "weft-fi-wire: sent %s\n", reason);
	return ok;
}

/* Message i: a TMH and n payload bytes (n + 16 <= SLOT); its length. */
static uint32_t tmh(struct raw *r, int i, uint8_t op, uint32_t app_ctx, uint64_t tag,
		    const void *p, uint32_t n)
{
	uint32_t a = htobe32(app_ctx);
	uint64_t t = htobe64(tag);

	memset(r->buf[i], 0, SLOT);
	r->buf[i][0] = op;
	memcpy(r->buf[i] + 4, &a, 4);
	memcpy(r->buf[i] + 8, &t, 8);
	if (n)
		memcpy(r->buf[i] + WFI_HDR, p, n);
	return WFI_HDR + n;
}

/* Sends buf[i] (n bytes) and waits for its completion (progressing the
 * endpoint): true when it was delivered. */
static bool raw_send(struct raw *r, struct ep *e, int i, uint32_t n)
{
	struct ibv_sge sge = { (uintptr_t)r->buf[i], n, r->mr->lkey };
	struct ibv_send_wr wr = { .wr_id = (uint64_t)i, .sg_list = &sge, .num_sge = 1,
				  .opcode = IBV_WR_SEND, .send_flags = IBV_SEND_SIGNALED }, *bad;
	double end = now() + 20;
	struct ibv_wc wc;

	if (ibv_post_send(r->id->qp, &wr, &bad))
		return false;
	while (now() < end) {
		ep_poll(e);
		if (ibv_poll_cq(r->cq, 1, &wc) == 1)
			return wc.status == IBV_WC_SUCCESS;
	}
	return false;
}

/* The completion of the receive into got (tag, want's bytes and NUL)
 * within 20 s. */
static bool recv_wait(struct ep *e, char *got, uint64_t tag, const char *want)
{
	double end = now() + 20;

	while (!e->held && now() < end)
		ep_poll(e);
	if (!e->held)
		return false;
	e->held = false;
	return e->last.op_context == got && e->last.tag == tag &&
	       e->last.len == strlen(want) + 1 && !strcmp(got, want);
}

int main(void)
{
	static const char early[] = "sent before its receive", late[] = "sent after its receive";
	uint8_t keya[WFI_KEYA_LEN] = { 0 }, rvh[WFI_RVH] = { 0 }, four[4] = { 1, 2, 3, 4 };
	struct raw bad = { 0 }, r = { 0 };
	struct raw_req good, q;
	struct ep e = { 0 };
	uint64_t src, key = 0;
	char got[2][64] = { { 0 } };
	double end;
	int i, ev, n = 0;
	bool ok;
	struct {
		const char *reason;
		uint32_t len;
	} msg[NMSG];

	if (ep_open(&e)) {
		printf("Bail out! no weft endpoint\n");
		return 2;
	}
	good = (struct raw_req){ WFI_CM_MAGIC, e.name.sin_addr.s_addr, 0x1c0ffee, ep_inc(&e),
				 WFI_CM_REQ_LEN };
	q = good;
	q.magic = 0x12345678;
	CHECK(rejected(&e, &q, 0, "cm-magic"), "a connect with a wrong magic is rejected (cm-magic)");
	q = good;
	q.addr = htonl(0x0a000063);
	CHECK(rejected(&e, &q, 0, "cm-addr"),
	      "a connect naming an address it does not come from is rejected (cm-addr)");
	q = good;
	q.len = 12;			/* a name of address and port only */
	CHECK(rejected(&e, &q, 0, "cm-name"), "a connect whose name is short (no incarnation) is "
	      "rejected (cm-name)");
	q = good;
	q.dst_inc = ep_inc(&e) ^ 1;
	CHECK(rejected(&e, &q, WFI_CM_REJ_STALE, "cm-stale"), "a connect for another incarnation "
	      "of the endpoint's name is rejected and told so (cm-stale)");
	/* A connection that drops: its name is gone, and a connect with it
	 * again (a replay) is refused, while a new incarnation at the same
	 * address is a new peer. */
	ev = raw_connect(&bad, &e, &good);
	CHECK(ev == RDMA_CM_EVENT_ESTABLISHED, "a valid connect is accepted");
	raw_close(&bad);
	for (end = now() + 1; now() < end;)
		ep_poll(&e);
	CHECK(rejected(&e, &good, WFI_CM_REJ_GONE, "cm-gone"), "once its connection dropped, a "
	      "connect replaying its name is rejected and told so (cm-gone)");
	q = good;
	q.inc = good.inc + 1;
	ev = raw_connect(&r, &e, &q);
	CHECK(ev == RDMA_CM_EVENT_ESTABLISHED && r.my_id >= 1 && r.my_id <= WFI_MAX_PEERS,
	      "a connect of a new incarnation at the same address is accepted, id %u", r.my_id);
	if (ev != RDMA_CM_EVENT_ESTABLISHED)
		return 1;
	src = (uint64_t)r.my_id << WFI_SRC_SHIFT;
	/* One message of each kind the provider must refuse. */
#define M(WHY, LEN) do { msg[n].reason = (WHY); msg[n].len = (LEN); n++; } while (0)
	memset(r.buf[n], 0, SLOT);
	M("short", 8);
	M("reserved", tmh(&r, n, WFI_OP_NO_TAG, WFI_NOTE_WRITE, 0, NULL, 0));
	r.buf[n - 1][2] = 1;
	M("fin-len", tmh(&r, n, WFI_OP_FIN, 5, 0, four, 4));
	M("fin-stray", tmh(&r, n, WFI_OP_FIN, 5, 0, NULL, 0));
	M("note-kind", tmh(&r, n, WFI_OP_NO_TAG, 9, 0, NULL, 0));
	M("note-len", tmh(&r, n, WFI_OP_NO_TAG, WFI_NOTE_KEYQ, 0, four, 4));
	M("note-tag", tmh(&r, n, WFI_OP_NO_TAG, WFI_NOTE_WRITE, 7, NULL, 0));
	keya[31] = 2;
	M("keya-found", tmh(&r, n, WFI_OP_NO_TAG, WFI_NOTE_KEYA, 0, keya, sizeof(keya)));
	keya[31] = 0;
	M("keya-stray", tmh(&r, n, WFI_OP_NO_TAG, WFI_NOTE_KEYA, 0, keya, sizeof(keya)));
	M("keyq-mode", tmh(&r, n, WFI_OP_NO_TAG, WFI_NOTE_KEYQ, 0, &key, sizeof(key)));
	M("tag-source", tmh(&r, n, WFI_OP_EAGER, 0, 0x77, four, 4));
	M("tag-bits", tmh(&r, n, WFI_OP_EAGER, 0, WFI_MSG_BIT | src | 5, four, 4));
	M("rndv-len", tmh(&r, n, WFI_OP_RNDV, 0, src | 0x99, rvh, 10));
	rvh[12] = 0x80;			/* a length of 2^31 */
	M("rndv-size", tmh(&r, n, WFI_OP_EAGER, 0, src | WFI_RNDV_BIT | 0x99, rvh, sizeof(rvh)));
	M("source-forged", tmh(&r, n, WFI_OP_EAGER, 0,
			       ((uint64_t)(r.my_id + 1) << WFI_SRC_SHIFT) | 0x55, four, 4));
#undef M
	for (i = 0; i < n; i++)
		if (!raw_send(&r, &e, i, msg[i].len))
			break;
	CHECK(i == n, "the %d hostile messages were delivered (%d)", n, i);
	for (end = now() + 1; now() < end;)
		ep_poll(&e);
	CHECK(e.seen == 0, "they completed nothing at the endpoint (%llu completions)",
	      (unsigned long long)e.seen);
	for (i = 0; i < n; i++)
		fprintf(stderr, "weft-fi-wire: sent %s\n", msg[i].reason);
	/* The endpoint still works: a message held as unexpected, then one
	 * that a receive listed in the adapter after the refused unexpected
	 * messages takes (so the TM sync counted them). */
	ok = raw_send(&r, &e, n, tmh(&r, n, WFI_OP_EAGER, 0, src | 0x43, early, sizeof(early)));
	for (end = now() + 0.5; now() < end;)
		ep_poll(&e);
	ok = ok && !fi_trecv(e.s.ep, got[0], sizeof(got[0]), NULL, FI_ADDR_UNSPEC, 0x43, 0, got[0]);
	CHECK(ok && recv_wait(&e, got[0], 0x43, early),
	      "a message sent before its receive arrives whole");
	ok = !fi_trecv(e.s.ep, got[1], sizeof(got[1]), NULL, FI_ADDR_UNSPEC, 0x42, 0, got[1]);
	for (end = now() + 0.5; now() < end;)
		ep_poll(&e);
	ok = ok && !e.held &&
	     raw_send(&r, &e, n + 1, tmh(&r, n + 1, WFI_OP_EAGER, 0, src | 0x42, late, sizeof(late)));
	CHECK(ok && recv_wait(&e, got[1], 0x42, late),
	      "a message sent after its receive (listed in the adapter) arrives whole");
	raw_close(&r);
	side_close(&e.s);
	printf("1..%d\n", n_checks);
	return n_failed ? 1 : 0;
}
