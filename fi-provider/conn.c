// SPDX-License-Identifier: MIT
/*
 * Connections (docs/libfabric.md "Connections"): an endpoint listens with
 * librdmacm on its name; the first send to a peer opens an RC QP to it
 * (our "out" connection) and waits until it is up; a peer's connection to
 * us is accepted from the progress loop.  Every QP is attached to the
 * endpoint's tag-matching SRQ, and its counter slots are bound to the
 * endpoint's counters as it is made (cntr.c).  The accept names the id
 * the sender puts in its wire tags (our index of the sender,
 * FI_DIRECTED_RECV).  Peers are known by their full names, incarnation
 * included (docs/libfabric.md "Names"): a connect names both ends, and a
 * target refuses one meant for another incarnation of its name or coming
 * from a name it holds as dead.  The private data are encoded and decoded
 * by wire.c.
 */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <arpa/inet.h>

#include "wfi.h"

int wfi_conn_listen(struct wfi_ep *ep)
{
	struct sockaddr_in *bound, at = ep->name.sin;
	int fl;

	ep->ch = rdma_create_event_channel();
	if (!ep->ch)
		return -FI_ENOMEM;
	fl = fcntl(ep->ch->fd, F_GETFL);
	if (fl < 0 || fcntl(ep->ch->fd, F_SETFL, fl | O_NONBLOCK))
		return -FI_EIO;
	if (rdma_create_id(ep->ch, &ep->listen, NULL, RDMA_PS_TCP))
		return -FI_ENOMEM;
	wfi_name_set_inc(&at, 0);	/* the incarnation is ours, not rdma_cm's */
	if (rdma_bind_addr(ep->listen, (struct sockaddr *)&at))
		return errno == EADDRINUSE ? -FI_EADDRINUSE : -FI_EADDRNOTAVAIL;
	if (ep->listen->verbs != ep->dom->ctx)
		return -FI_ENODEV;
	if (rdma_listen(ep->listen, 64))
		return -FI_EIO;
	bound = (struct sockaddr_in *)rdma_get_local_addr(ep->listen);
	ep->name.sin.sin_port = bound->sin_port;
	return 0;
}

static struct ibv_qp_init_attr qp_attr(struct wfi_ep *ep)
{
	struct ibv_qp_init_attr a = {
		.send_cq = ibv_cq_ex_to_cq(ep->vcq), .recv_cq = ibv_cq_ex_to_cq(ep->vcq),
		.srq = ep->srq, .qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = WFI_QP_WR, .max_send_sge = 1 },
	};

	return a;
}

static struct rdma_conn_param conn_param(const void *pd, uint8_t len)
{
	struct rdma_conn_param p = {
		.private_data = pd, .private_data_len = len, .responder_resources = 4,
		.initiator_depth = 4, .retry_count = 7, .rnr_retry_count = 7,
	};

	return p;
}

/* Our entry for the peer with this name, or -1.  A name with an
 * incarnation is its own entry, dead or alive, else the live entry at its
 * address and port whose incarnation is not known yet, which takes it;
 * a name without one (an address given by the application: "whoever
 * listens there") is the latest live entry at its address and port. */
static int peer_find(struct wfi_ep *ep, const struct sockaddr_in *sin)
{
	uint64_t inc = wfi_name_inc(sin);
	int i;

	for (i = ep->npeers - 1; i >= 0; i--) {
		struct wfi_peer *p = &ep->peers[i];

		if (wfi_same_place(&p->sin, sin) && (inc ? wfi_name_inc(&p->sin) == inc : !p->dead))
			return i;
	}
	for (i = ep->npeers - 1; inc && i >= 0; i--) {
		struct wfi_peer *p = &ep->peers[i];

		if (wfi_same_place(&p->sin, sin) && !p->dead && !wfi_name_inc(&p->sin)) {
			wfi_name_set_inc(&p->sin, inc);
			return i;
		}
	}
	return -1;
}

/* The peer with this name (a new entry when it has none, peer_find); its
 * id is the index + 1, or a negative error when the table is full. */
int wfi_peer_id(struct wfi_ep *ep, const struct sockaddr_in *sin)
{
	int i = peer_find(ep, sin);

	if (i >= 0)
		return i + 1;
	if (ep->npeers == WFI_MAX_PEERS)
		return -FI_ENOSPC;
	memset(&ep->peers[ep->npeers], 0, sizeof(ep->peers[0]));
	ep->peers[ep->npeers].sin = *sin;
	return ++ep->npeers;
}

fi_addr_t wfi_peer_fi_addr(struct wfi_ep *ep, uint64_t wire_tag)
{
	int id = (int)((wire_tag & WFI_SRC_MASK) >> WFI_SRC_SHIFT);

	if (id < 1 || id > ep->npeers)
		return FI_ADDR_NOTAVAIL;
	return wfi_av_find(ep->av, &ep->peers[id - 1].sin);
}

static void drop_id(struct rdma_cm_id **id)
{
	if (*id) {
		if ((*id)->qp)
			rdma_destroy_qp(*id);
		rdma_destroy_id(*id);
		*id = NULL;
	}
}

static void drop_out(struct wfi_peer *p)
{
	p->hw_out = 0;
	drop_id(&p->out);
}

/* Is connection id (accepted or ours) the one of the peer with this id? */
bool wfi_conn_of_peer(struct wfi_ep *ep, const struct rdma_cm_id *id, int peer_id)
{
	return id && peer_id >= 1 && peer_id <= ep->npeers && id->context == &ep->peers[peer_id - 1];
}

static void on_request(struct wfi_ep *ep, struct rdma_cm_event *ev)
{
	struct ibv_qp_init_attr a = qp_attr(ep);
	uint8_t rep[WFI_CM_REP_LEN], rej[WFI_CM_REJ_LEN];
	struct rdma_conn_param p = conn_param(rep, sizeof(rep));
	struct rdma_cm_id *id = ev->id;
	const struct sockaddr_in *from = (const struct sockaddr_in *)rdma_get_peer_addr(id);
	struct sockaddr_in name = { .sin_family = AF_INET };
	struct wfi_wire_cm_rep r = { .inc = wfi_name_inc(&ep->name.sin) };
	struct wfi_wire_cm_req req;
	enum wfi_wire_reason why;
	uint8_t rej_len = 0;
	int pid = -1;

	why = wfi_wire_cm_req_decode(ev->param.conn.private_data, ev->param.conn.private_data_len,
				     &req);
	/* The name's address is the one the connection comes from (its
	 * port, the peer's listening one, is not the connection's). */
	if (!why && (from->sin_family != AF_INET || from->sin_addr.s_addr != req.addr))
		why = WFI_WIRE_CM_ADDR;
	/* Meant for an earlier endpoint at our name (a stale AV entry). */
	if (!why && req.dst_inc && req.dst_inc != r.inc)
		why = WFI_WIRE_CM_STALE;
	if (!why && ep->nin < WFI_MAX_PEERS) {
		name.sin_addr.s_addr = req.addr;
		name.sin_port = req.port;
		wfi_name_set_inc(&name, req.inc);
		pid = wfi_peer_id(ep, &name);
		/* A name whose connection dropped: its incarnation is over,
		 * a connect with it again is a replay. */
		if (pid > 0 && ep->peers[pid - 1].dead)
			why = WFI_WIRE_CM_GONE;
	}
	if (why) {
		wfi_refuse(ep, why, 0);
		/* Told why, the connector fails its operations at once. */
		if (why == WFI_WIRE_CM_STALE || why == WFI_WIRE_CM_GONE) {
			wfi_wire_cm_rej_encode(rej, why == WFI_WIRE_CM_STALE ? WFI_CM_REJ_STALE :
					       WFI_CM_REJ_GONE);
			rej_len = sizeof(rej);
		}
		goto reject;
	}
	if (pid < 0)
		goto reject;
	r.id = (uint16_t)pid;
	wfi_wire_cm_rep_encode(rep, &r);
	if (rdma_create_qp(id, ep->dom->pd, &a))
		goto reject;
	/* The peer's RDMA counts from its first WRITE: bound before the accept. */
	ep->in_hw[ep->nin] = wfi_cntr_qp(ep, id->qp, true);
	if (rdma_accept(id, &p)) {
		rdma_destroy_qp(id);
		goto reject;
	}
	id->context = &ep->peers[pid - 1];	/* its drop is the peer's (peer_dead) */
	ep->in[ep->nin++] = id;
	return;
reject:
	rdma_reject(id, rej_len ? rej : NULL, rej_len);
	rdma_destroy_id(id);
}

static void qp_err(struct rdma_cm_id *id)
{
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_ERR };

	if (id && id->qp)
		ibv_modify_qp(id->qp, &a, IBV_QP_STATE);
}

/* A connection with peer p dropped (a killed process's kernel disconnects
 * its connections; docs/libfabric.md "A peer that goes away"): every QP
 * to and from it moves to the error state, so what is posted on them
 * (sends, software READs, the adapter's rendezvous READs) completes with
 * a flush error, and sends to it answer -FI_ECONNRESET.  Once the verbs
 * CQ has been emptied of what arrived before (wfi_conn_settle), sends
 * waiting for its FIN and receives directed to it fail. */
static void peer_dead(struct wfi_ep *ep, struct wfi_peer *p)
{
	int i;

	if (p->dead)
		return;
	p->dead = true;
	p->err = -FI_ECONNRESET;
	ep->settle = true;
	qp_err(p->out);
	for (i = 0; i < WFI_TQ_MAX; i++) {
		qp_err(p->tq[i].id);	/* its held triggers flush: errors (trigger.c) */
		p->tq[i].off = true;
	}
	for (i = 0; i < ep->nin; i++)
		if (ep->in[i]->context == p)
			qp_err(ep->in[i]);
}

/* The progress loop found the verbs CQ empty: the dead peers' messages
 * and FINs that came before their connections dropped are taken. */
void wfi_conn_settle(struct wfi_ep *ep)
{
	int i;

	ep->settle = false;
	for (i = 0; i < ep->npeers; i++) {
		struct wfi_peer *p = &ep->peers[i];

		if (!p->dead || p->gone)
			continue;
		p->gone = true;
		ep->ndead++;
		if (p->out && p->out->qp)
			wfi_tx_peer_dead(ep, p->out->qp->qp_num);
	}
}

/* Peer p's trigger connection whose id is id, or NULL. */
static struct wfi_tq *tq_of(struct wfi_peer *p, const struct rdma_cm_id *id)
{
	int i;

	for (i = 0; i < WFI_TQ_MAX; i++)
		if (p->tq[i].id && p->tq[i].id == id)
			return &p->tq[i];
	return NULL;
}

static void on_event(struct wfi_ep *ep, struct rdma_cm_event *ev)
{
	struct wfi_peer *p = ev->id->context;
	struct wfi_wire_cm_req req = {
		ep->name.sin.sin_addr.s_addr, ep->name.sin.sin_port, wfi_name_inc(&ep->name.sin),
		p ? wfi_name_inc(&p->sin) : 0,
	};
	uint8_t pd[WFI_CM_REQ_LEN], rj;
	struct rdma_conn_param cp = conn_param(pd, sizeof(pd));
	enum wfi_wire_reason why;
	struct ibv_qp_init_attr a;
	struct wfi_wire_cm_rep rep;
	enum wfi_conn_state *st;
	struct wfi_tq *q;
	int *err;

	if (ev->event == RDMA_CM_EVENT_CONNECT_REQUEST) {
		on_request(ep, ev);
		return;
	}
	/* The peer's DREQ answered with a DREP (docs/libfabric.md "A peer
	 * that goes away"): until then the kernel's CM keeps the connection
	 * among its remote QPs and refuses as stale (IB_CM_REJ_STALE_CONN)
	 * every REQ from the peer's adapter with that QP's number, should
	 * a later QP there get it again. */
	if (ev->event == RDMA_CM_EVENT_DISCONNECTED)
		rdma_disconnect(ev->id);
	if (!p)
		return;
	q = tq_of(p, ev->id);
	if (p->out != ev->id && !q) {	/* an accepted connection */
		if (ev->event == RDMA_CM_EVENT_DISCONNECTED)
			peer_dead(ep, p);
		return;
	}
	/* Our connection to p: its normal one or one of its trigger ones. */
	st = q ? &q->state : &p->state;
	err = q ? &q->err : &p->err;
	switch (ev->event) {
	case RDMA_CM_EVENT_ADDR_RESOLVED:
		if (rdma_resolve_route(ev->id, 2000))
			*st = WFI_C_FAILED;
		break;
	case RDMA_CM_EVENT_ROUTE_RESOLVED:
		a = qp_attr(ep);
		wfi_wire_cm_req_encode(pd, &req);
		if (rdma_create_qp(ev->id, ep->dom->pd, &a)) {
			*st = WFI_C_FAILED;
			break;
		}
		if (q) {
			/* The same slots as the normal QP (its operations'
			 * counters) and the triggering counter's. */
			q->hw = wfi_cntr_qp(ep, ev->id->qp, false);
			q->slot = wfi_cntr_qp_wait(ep, ev->id->qp, q->hw, q->cntr);
		} else {
			p->hw_out = wfi_cntr_qp(ep, ev->id->qp, false);
		}
		if (rdma_connect(ev->id, &cp))
			*st = WFI_C_FAILED;
		break;
	case RDMA_CM_EVENT_ESTABLISHED:
		why = wfi_wire_cm_rep_decode(ev->param.conn.private_data,
					     ev->param.conn.private_data_len, &rep);
		/* Accepted by another incarnation than the one we named. */
		if (!why && wfi_name_inc(&p->sin) && rep.inc != wfi_name_inc(&p->sin))
			why = WFI_WIRE_CM_STALE;
		if (why) {
			wfi_refuse(ep, why, ev->id->qp ? ev->id->qp->qp_num : 0);
			*st = WFI_C_FAILED;
			break;
		}
		/* A name without an incarnation learns the one listening. */
		wfi_name_set_inc(&p->sin, rep.inc);
		if (!q)
			p->my_id = rep.id;
		*st = WFI_C_UP;
		break;
	case RDMA_CM_EVENT_REJECTED:
		/* The target listens as another incarnation of the name, or
		 * holds ours as dead: the peer this name meant is gone. */
		if (!wfi_wire_cm_rej_decode(ev->param.conn.private_data,
					    ev->param.conn.private_data_len, &rj)) {
			if (ep->log)
				fprintf(stderr, "weft: connect refused by its target: %s\n",
					rj == WFI_CM_REJ_STALE ? "cm-stale (another incarnation listens there)" :
					"cm-gone (the target holds this endpoint as gone)");
			*st = WFI_C_FAILED;
			peer_dead(ep, p);
			*err = -FI_ECONNRESET;
			break;
		}
		*err = -FI_ECONNREFUSED;
		*st = WFI_C_FAILED;
		break;
	case RDMA_CM_EVENT_DISCONNECTED:
		*st = WFI_C_FAILED;
		peer_dead(ep, p);
		break;
	case RDMA_CM_EVENT_ADDR_ERROR:
	case RDMA_CM_EVENT_ROUTE_ERROR:
	case RDMA_CM_EVENT_CONNECT_ERROR:
	case RDMA_CM_EVENT_UNREACHABLE:
		*err = -FI_EHOSTUNREACH;
		*st = WFI_C_FAILED;
		break;
	default:
		break;
	}
}

/* Handles the connection events queued (at most 32 a call). */
void wfi_conn_progress(struct wfi_ep *ep)
{
	struct rdma_cm_event *ev;
	int n;

	for (n = 0; n < 32 && ep->ch && !rdma_get_cm_event(ep->ch, &ev); n++) {
		struct rdma_cm_event copy = *ev;
		uint8_t pd[64];

		/* The event's private data lives in the event: keep a copy. */
		if (ev->param.conn.private_data_len && ev->param.conn.private_data) {
			size_t len = ev->param.conn.private_data_len < sizeof(pd) ?
				     ev->param.conn.private_data_len : sizeof(pd);

			memcpy(pd, ev->param.conn.private_data, len);
			copy.param.conn.private_data = pd;
			copy.param.conn.private_data_len = (uint8_t)len;
		}
		rdma_ack_cm_event(ev);
		if (ep->log) {
			char a[INET_ADDRSTRLEN];

			fprintf(stderr, "weft: %s:%u: %s (status %d) on QP %u\n",
				inet_ntop(AF_INET, &ep->name.sin.sin_addr, a, sizeof(a)),
				ntohs(ep->name.sin.sin_port), rdma_event_str(copy.event),
				copy.status, copy.id->qp ? copy.id->qp->qp_num : 0);
		}
		on_event(ep, &copy);
	}
}

static uint64_t ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* A new connection *id to peer p (its normal one or its trigger one),
 * resolving; the progress loop takes it on (on_event). */
static int start_id(struct wfi_ep *ep, struct wfi_peer *p, struct rdma_cm_id **id,
		    enum wfi_conn_state *st, int *err)
{
	struct sockaddr_in src = ep->name.sin, dst = p->sin;

	src.sin_port = 0;
	wfi_name_set_inc(&src, 0);	/* incarnations are ours, not rdma_cm's */
	wfi_name_set_inc(&dst, 0);
	*err = 0;
	if (rdma_create_id(ep->ch, id, p, RDMA_PS_TCP)) {
		*id = NULL;
		return -FI_ENOMEM;
	}
	if (rdma_resolve_addr(*id, (struct sockaddr *)&src, (struct sockaddr *)&dst, 2000)) {
		drop_id(id);
		return -FI_EHOSTUNREACH;
	}
	*st = WFI_C_CONNECTING;
	return 0;
}

static int start(struct wfi_ep *ep, struct wfi_peer *p)
{
	p->hw_out = 0;
	return start_id(ep, p, &p->out, &p->state, &p->err);
}

/* The peer at dest, connected: waits (progressing the endpoint) until the
 * connection is up, retrying a refused one, for at most WFI_CONNECT_MS. */
int wfi_conn_get(struct wfi_ep *ep, fi_addr_t dest, struct wfi_peer **peer)
{
	uint64_t end = ms() + WFI_CONNECT_MS;
	struct sockaddr_in sin;
	struct wfi_peer *p;
	int id, ret;

	if (wfi_av_get(ep->av, dest, &sin))
		return -FI_EINVAL;
	id = wfi_peer_id(ep, &sin);
	if (id < 0)
		return id;
	p = &ep->peers[id - 1];
	*peer = p;
	if (p->dead)
		return p->err;
	if (p->state == WFI_C_UP)
		return 0;
	if (p->state != WFI_C_CONNECTING) {
		drop_out(p);
		ret = start(ep, p);
		if (ret)
			return ret;
	}
	while (p->state == WFI_C_CONNECTING || (p->state == WFI_C_FAILED &&
						 p->err == -FI_ECONNREFUSED && ms() < end)) {
		if (p->state == WFI_C_FAILED) {
			/* The peer may not listen yet: try again. */
			drop_out(p);
			ret = start(ep, p);
			if (ret)
				return ret;
		}
		wfi_progress(ep);
		if (ms() >= end)
			break;
		sched_yield();
	}
	if (p->state == WFI_C_UP)
		return 0;
	ret = p->err ? p->err : -FI_ETIMEDOUT;
	drop_out(p);
	p->state = WFI_C_NONE;
	return ret;
}

/* The connection whose QP has this number (accepted or ours). */
struct rdma_cm_id *wfi_conn_by_qpn(struct wfi_ep *ep, uint32_t qpn)
{
	int i;

	for (i = 0; i < ep->nin; i++)
		if (ep->in[i]->qp && ep->in[i]->qp->qp_num == qpn)
			return ep->in[i];
	for (i = 0; i < ep->npeers; i++)
		if (ep->peers[i].out && ep->peers[i].out->qp && ep->peers[i].out->qp->qp_num == qpn)
			return ep->peers[i].out;
	return NULL;
}

/* Is qpn our connection to a peer that is gone? */
bool wfi_qpn_dead(struct wfi_ep *ep, uint32_t qpn)
{
	int i;

	for (i = 0; ep->ndead && i < ep->npeers; i++)
		if (ep->peers[i].gone && ep->peers[i].out && ep->peers[i].out->qp &&
		    ep->peers[i].out->qp->qp_num == qpn)
			return true;
	return false;
}

/* Peer p's trigger connection q (its normal one up), taken for its
 * counter q->cntr: made on its first use, then waited for (progressing
 * the endpoint) until it is up, WFI_CONNECT_MS at most.  0, or an error
 * and the triggers on that counter to p stay in software. */
int wfi_conn_trig(struct wfi_ep *ep, struct wfi_peer *p, struct wfi_tq *q)
{
	uint64_t end = ms() + WFI_CONNECT_MS;
	int ret;

	if (q->off)
		return -FI_EOPNOTSUPP;
	if (q->state == WFI_C_UP)
		return 0;
	if (!q->id) {
		ret = start_id(ep, p, &q->id, &q->state, &q->err);
		if (ret) {
			q->off = true;
			return ret;
		}
	}
	while (q->state == WFI_C_CONNECTING && ms() < end) {
		wfi_progress(ep);
		sched_yield();
	}
	if (q->state == WFI_C_UP && q->slot)
		return 0;
	q->off = true;
	qp_err(q->id);
	return q->err ? q->err : -FI_ETIMEDOUT;
}

/* A software move of the counter trigger connection q waits on: its held
 * WAIT_CNTs are flushed (trigger.c takes them back) and the triggers on
 * that counter to its peer stay in software from then on. */
void wfi_conn_trig_stop(struct wfi_tq *q)
{
	q->off = true;
	qp_err(q->id);
}

void wfi_conn_close(struct wfi_ep *ep)
{
	int i, j;

	for (i = 0; i < ep->npeers; i++) {
		drop_out(&ep->peers[i]);
		for (j = 0; j < WFI_TQ_MAX; j++)
			drop_id(&ep->peers[i].tq[j].id);
	}
	for (i = 0; i < ep->nin; i++) {
		rdma_destroy_qp(ep->in[i]);
		rdma_destroy_id(ep->in[i]);
	}
	ep->nin = 0;
	if (ep->listen)
		rdma_destroy_id(ep->listen);
	ep->listen = NULL;
	if (ep->ch)
		rdma_destroy_event_channel(ep->ch);
	ep->ch = NULL;
}
