/* SPDX-License-Identifier: MIT */
/*
 * Helpers of the two-node user verbs tests (tests/verbs/weft-verbs-*.c):
 * the Weft device through libibverbs, RC queue pairs connected over the
 * RoCE v2 GID, and a TCP socket between the two nodes for exchanging
 * queue pair numbers, addresses and keys (as ibv_rc_pingpong does).
 * Checks and TAP output come from tests/common/weft_test.h.
 *
 * Every program runs as "-s -g GIDX" on node0 (the target, which owns
 * the memory) and "-c ADDR -g GIDX" on node1 (the initiator), GIDX being
 * the node's RoCE v2 GID index (ibv_devinfo -v).
 */
#ifndef WEFT_VERBS_VT_H
#define WEFT_VERBS_VT_H

#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
#include <infiniband/verbs.h>

#include "weft_test.h"

#define VT_PORT 18533		/* the TCP port of the exchange */
#define VT_PSN_MASK 0xffffffu

struct vt {
	int server;			/* node0: the target */
	const char *addr;		/* node1: node0's address */
	int gidx;
	int fd;				/* the exchange socket */
	struct ibv_context *ctx;
	union ibv_gid gid;
	struct ibv_device_attr attr;
	uint32_t next_psn;
};

/* What one side tells the other about a queue pair and a buffer. */
struct vt_msg {
	uint32_t qpn;
	uint32_t psn;
	uint8_t gid[16];
	uint64_t addr;
	uint32_t rkey;
	uint32_t len;
	uint32_t aux[4];
};

static inline uint64_t vt_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static inline void vt_usage(const char *prog)
{
	fprintf(stderr, "usage: %s -s -g GIDX | -c ADDR -g GIDX\n", prog);
	exit(2);
}

static inline void vt_args(struct vt *v, int argc, char **argv)
{
	int i;

	memset(v, 0, sizeof(*v));
	v->gidx = -1;
	v->fd = -1;
	for (i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "-s"))
			v->server = 1;
		else if (!strcmp(argv[i], "-c") && i + 1 < argc)
			v->addr = argv[++i];
		else if (!strcmp(argv[i], "-g") && i + 1 < argc)
			v->gidx = atoi(argv[++i]);
		else
			vt_usage(argv[0]);
	}
	if (v->gidx < 0 || v->server == !!v->addr)
		vt_usage(argv[0]);
}

/* The first (only) RDMA device, its attributes and GID. */
static inline void vt_open(struct vt *v)
{
	struct ibv_device **list;
	int n;

	list = ibv_get_device_list(&n);
	if (!list || n < 1)
		t_bail("no RDMA device (ibv_get_device_list: %d, errno %d)", n, errno);
	v->ctx = ibv_open_device(list[0]);
	if (!v->ctx)
		t_bail("ibv_open_device(%s): errno %d", ibv_get_device_name(list[0]), errno);
	ibv_free_device_list(list);
	if (ibv_query_device(v->ctx, &v->attr))
		t_bail("ibv_query_device failed");
	if (ibv_query_gid(v->ctx, 1, v->gidx, &v->gid))
		t_bail("ibv_query_gid(%d) failed", v->gidx);
	v->next_psn = (uint32_t)(getpid() * 7919u) & VT_PSN_MASK;
}

/* ---- ib_core's object counts ---------------------------------------------- */

enum { VT_PD, VT_CQ, VT_QP, VT_MR, VT_CTX, VT_NRES };
static const char *const vt_res_name[VT_NRES] = { "pd", "cq", "qp", "mr", "ctx" };

/* The device's object counts from iproute2's `rdma resource show`
 * (ib_core's restrack): "0: weft_ib0: pd 1 cq 2 qp 1 cm_id 0 mr 0 ctx 0 srq 0". */
static inline void vt_res(struct vt *v, long out[VT_NRES])
{
	char line[512], want[80], *tok, *save;
	const char *dev = ibv_get_device_name(v->ctx->device);
	int i, found = 0;
	FILE *f;

	snprintf(want, sizeof(want), " %s: ", dev);
	f = popen("/usr/bin/rdma resource show 2>&1", "r");
	if (!f)
		t_bail("popen rdma resource show: errno %d", errno);
	for (i = 0; i < VT_NRES; i++)
		out[i] = -1;
	while (fgets(line, sizeof(line), f)) {
		char *p = strstr(line, want);

		if (!p)
			continue;
		found = 1;
		tok = strtok_r(p + strlen(want), " \n", &save);
		while (tok) {
			char *val = strtok_r(NULL, " \n", &save);

			for (i = 0; val && i < VT_NRES; i++)
				if (!strcmp(tok, vt_res_name[i]))
					out[i] = strtol(val, NULL, 10);
			tok = val ? strtok_r(NULL, " \n", &save) : NULL;
		}
	}
	pclose(f);
	for (i = 0; i < VT_NRES; i++)
		if (out[i] < 0)
			found = 0;
	if (!found)
		t_bail("rdma resource show has no counts for %s", dev);
}

/* ---- the exchange socket -------------------------------------------------- */

static inline void vt_sock(struct vt *v)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(VT_PORT) };
	int one = 1, s;
	uint64_t end = vt_ms() + 60000;

	if (v->server) {
		s = socket(AF_INET, SOCK_STREAM, 0);
		if (s < 0 || setsockopt(s, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) ||
		    bind(s, (struct sockaddr *)&sa, sizeof(sa)) || listen(s, 1))
			t_bail("listen on port %d: errno %d", VT_PORT, errno);
		v->fd = accept(s, NULL, NULL);
		close(s);
		if (v->fd < 0)
			t_bail("accept: errno %d", errno);
	} else {
		if (inet_pton(AF_INET, v->addr, &sa.sin_addr) != 1)
			t_bail("bad address %s", v->addr);
		for (;;) {
			s = socket(AF_INET, SOCK_STREAM, 0);
			if (s < 0)
				t_bail("socket: errno %d", errno);
			if (!connect(s, (struct sockaddr *)&sa, sizeof(sa)))
				break;
			close(s);
			if (vt_ms() > end)
				t_bail("cannot connect to %s:%d", v->addr, VT_PORT);
			usleep(200000);
		}
		v->fd = s;
	}
	setsockopt(v->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

static inline void vt_send(struct vt *v, const void *buf, size_t len)
{
	const char *p = buf;

	while (len) {
		ssize_t n = write(v->fd, p, len);

		if (n <= 0)
			t_bail("the peer went away (write: errno %d)", errno);
		p += n;
		len -= (size_t)n;
	}
}

static inline void vt_recv(struct vt *v, void *buf, size_t len)
{
	char *p = buf;

	while (len) {
		ssize_t n = read(v->fd, p, len);

		if (n <= 0)
			t_bail("the peer went away (read: %zd, errno %d)", n, errno);
		p += n;
		len -= (size_t)n;
	}
}

/* Both sides reach the same step: STEP must be equal on both. */
static inline void vt_sync(struct vt *v, uint32_t step)
{
	uint32_t got;

	vt_send(v, &step, sizeof(step));
	vt_recv(v, &got, sizeof(got));
	if (got != step)
		t_bail("out of step with the peer: here %u, there %u", step, got);
}

static inline void vt_xchg(struct vt *v, const struct vt_msg *mine, struct vt_msg *theirs)
{
	vt_send(v, mine, sizeof(*mine));
	vt_recv(v, theirs, sizeof(*theirs));
}

/* ---- queue pairs ------------------------------------------------------------ */

static inline struct ibv_qp *vt_rc_qp(struct ibv_pd *pd, struct ibv_cq *cq)
{
	struct ibv_qp_init_attr a = {
		.send_cq = cq, .recv_cq = cq, .qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = 16, .max_recv_wr = 16, .max_send_sge = 1,
			 .max_recv_sge = 1 },
	};
	struct ibv_qp *qp = ibv_create_qp(pd, &a);

	if (!qp)
		t_bail("ibv_create_qp (RC): errno %d", errno);
	return qp;
}

static inline int vt_qp_init(struct ibv_qp *qp, int access)
{
	struct ibv_qp_attr a = {
		.qp_state = IBV_QPS_INIT, .pkey_index = 0, .port_num = 1,
		.qp_access_flags = access,
	};

	return ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
			     IBV_QP_ACCESS_FLAGS);
}

static inline int vt_qp_rtr(struct vt *v, struct ibv_qp *qp, const struct vt_msg *peer)
{
	struct ibv_qp_attr a = {
		.qp_state = IBV_QPS_RTR, .path_mtu = IBV_MTU_1024,
		.dest_qp_num = peer->qpn, .rq_psn = peer->psn,
		.max_dest_rd_atomic = 1, .min_rnr_timer = 12,
		.ah_attr = { .is_global = 1, .port_num = 1,
			     .grh = { .sgid_index = (uint8_t)v->gidx, .hop_limit = 64 } },
	};

	memcpy(a.ah_attr.grh.dgid.raw, peer->gid, 16);
	return ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
			     IBV_QP_DEST_QPN | IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC |
			     IBV_QP_MIN_RNR_TIMER);
}

static inline int vt_qp_rts(struct ibv_qp *qp, uint32_t psn)
{
	struct ibv_qp_attr a = {
		.qp_state = IBV_QPS_RTS, .timeout = 14, .retry_cnt = 7, .rnr_retry = 7,
		.sq_psn = psn, .max_rd_atomic = 1,
	};

	return ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
			     IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC);
}

/* The queue pair's state as the kernel reports it, or -1. */
static inline int vt_qp_state(struct ibv_qp *qp)
{
	struct ibv_qp_init_attr init;
	struct ibv_qp_attr a;

	if (ibv_query_qp(qp, &a, IBV_QP_STATE, &init))
		return -1;
	return a.qp_state;
}

/* Waits (5 s at most) until the queue pair is in STATE; its last state. */
static inline int vt_qp_wait(struct ibv_qp *qp, int state)
{
	uint64_t end = vt_ms() + 5000;
	int s;

	while ((s = vt_qp_state(qp)) != state && vt_ms() < end)
		usleep(10000);
	return s;
}

/*
 * A new RC queue pair of PD on CQ, connected to a new one of the peer
 * (both sides call it at the same step), in RTS, with remote ACCESS.
 */
static inline struct ibv_qp *vt_connect_qp(struct vt *v, struct ibv_qp *qp, int access);

static inline struct ibv_qp *vt_connect(struct vt *v, struct ibv_pd *pd, struct ibv_cq *cq,
					int access)
{
	return vt_connect_qp(v, vt_rc_qp(pd, cq), access);
}

/* The same for an RC queue pair the caller created (in RESET). */
static inline struct ibv_qp *vt_connect_qp(struct vt *v, struct ibv_qp *qp, int access)
{
	struct vt_msg mine = { .qpn = qp->qp_num }, peer;

	mine.psn = v->next_psn;
	v->next_psn = (v->next_psn + 4099) & VT_PSN_MASK;
	memcpy(mine.gid, v->gid.raw, 16);
	vt_xchg(v, &mine, &peer);
	if (vt_qp_init(qp, access) || vt_qp_rtr(v, qp, &peer) || vt_qp_rts(qp, mine.psn))
		t_bail("connecting QP %u to the peer's QP %u: errno %d", qp->qp_num, peer.qpn,
		       errno);
	/* Both ends are ready to receive before either sends. */
	vt_sync(v, 0x515);
	return qp;
}

/* One completion (10 s at most): 1 with *wc filled, 0 on timeout. */
static inline int vt_poll(struct ibv_cq *cq, struct ibv_wc *wc)
{
	uint64_t end = vt_ms() + 10000;
	int n;

	do {
		n = ibv_poll_cq(cq, 1, wc);
		if (n < 0)
			t_bail("ibv_poll_cq: %d", n);
		if (n)
			return 1;
	} while (vt_ms() < end);
	return 0;
}

/* Posts one signaled RDMA WRITE or READ of len bytes and returns its
 * completion status (-1: none within 10 s, -2: the post failed). */
static inline int vt_rdma(struct ibv_qp *qp, struct ibv_cq *cq, enum ibv_wr_opcode op,
			  struct ibv_mr *mr, void *buf, uint32_t len, uint64_t raddr, uint32_t rkey)
{
	struct ibv_sge sge = { .addr = (uintptr_t)buf, .length = len, .lkey = mr->lkey };
	struct ibv_send_wr wr = {
		.wr_id = 0x1000 + op, .sg_list = &sge, .num_sge = 1, .opcode = op,
		.send_flags = IBV_SEND_SIGNALED,
		.wr.rdma = { .remote_addr = raddr, .rkey = rkey },
	}, *bad = NULL;
	struct ibv_wc wc;

	if (ibv_post_send(qp, &wr, &bad))
		return -2;
	if (!vt_poll(cq, &wc))
		return -1;
	return wc.status;
}

/* An errno's name ("EINVAL"), "success" for 0. */
static inline const char *vt_en(int e)
{
	const char *s = e ? strerrorname_np(e) : "success";

	return s ? s : "?";
}

static inline const char *vt_status(int s)
{
	if (s == -1)
		return "no completion in 10 s";
	if (s == -2)
		return "post failed";
	return ibv_wc_status_str((enum ibv_wc_status)s);
}

/* Byte i of pattern SEED. */
static inline uint8_t vt_pat(uint8_t seed, size_t i)
{
	return (uint8_t)(seed ^ (i * 13) ^ (i >> 8));
}

static inline void vt_fill(uint8_t *p, size_t len, uint8_t seed)
{
	size_t i;

	for (i = 0; i < len; i++)
		p[i] = vt_pat(seed, i);
}

/* The first offset where p differs from pattern SEED (from index off), or -1. */
static inline long vt_diff(const uint8_t *p, size_t len, uint8_t seed, size_t off)
{
	size_t i;

	for (i = 0; i < len; i++)
		if (p[i] != vt_pat(seed, off + i))
			return (long)i;
	return -1;
}

/* The main() of a two-node program: SERVER as node0 (-s), CLIENT as
 * node1 (-c ADDR); the TAP plan and exit status of weft_test.h. */
static inline int vt_run(int argc, char **argv, void (*server)(struct vt *),
			 void (*client)(struct vt *))
{
	struct vt v;

	vt_args(&v, argc, argv);
	if (v.server)
		server(&v);
	else
		client(&v);
	return t_done();
}

#endif /* WEFT_VERBS_VT_H */
