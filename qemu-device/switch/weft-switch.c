/* SPDX-License-Identifier: MIT */
/*
 * weft-switch: the fabric process joining Weft adapters over UNIX stream
 * sockets, and TCP for adapters on other hosts (listen.c).
 * Single-threaded, epoll-based.  This file is the event loop,
 * the sockets, the clients and their HELLO; see sw.h for the other
 * modules and docs/switch.md for the behaviour.
 *
 *   weft-switch --socket PATH --ctl PATH (--tokens FILE | --insecure) ...
 *   weft-switch --listen HOST:PORT --ctl PATH --tokens FILE ...
 *   weft-switch ctl --socket CTLPATH [--json] CMD [ARGS...]
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <libgen.h>
#include <limits.h>
#include <malloc.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/timerfd.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "sw.h"
#include "weft/names.h"
#include "weft-host/shm.h"
#include "wire_io.h"

#define RBUF_SIZE       (256u * 1024u)  /* at most, per client */
#define BUF_START       (8u * 1024u)    /* starts this small and grows */
#define OUTQ_SIZE       (256u * 1024u)  /* bytes queued at most, per node */
#define OUTQ_FRAMES     1024u           /* frames queued at most (one writev) */
#define OUTQ_START      16u             /* frame slots at first */
#define DEF_MAX_QUEUED  4096u   /* with --max-queued: the old single budget */
#define DEF_PORT_QUEUE  256u
#define DEF_HOLD        4096u
#define DEF_CAPTURE     1024u
#define DEF_STALL_MS    5000u
#define DEF_EXPIRE_MS   300000u
#define SWEEP_NS        1000000000ull
#define TCP_HELLO_NS    10000000000ull  /* a TCP client's HELLO must succeed within */

/* Output towards one node: the fabric's frames themselves (each held,
 * weft_fabric_frame_hold), written with their length prefix by one
 * sendmsg of many iovecs.  Kept across a reconnect: a frame not fully
 * written to the old connection is sent whole to the next one. */
struct outq {
	const unsigned char **f;        /* frames f[head .. head + n) */
	size_t cap, head, n;
	size_t off;     /* bytes of f[head] (with its prefix) written */
	size_t bytes;   /* bytes queued, prefixes included, off not deducted */
};

/* A node record exists while its node is attached, or while output for
 * it is left from its last connection (until it comes back or expires). */
struct node {
	struct outq q;
	struct client *c;
	uint16_t id;
	uint64_t detached_at;
	struct node *prev, *next;
};

/* The shared-memory transport of one client (weft-host/shm.h). */
struct shm_link {
	struct evsrc ev;        /* EV_SHM: the switch's eventfd */
	struct client *c;
	void *mem;
	struct weft_shm_view rx;        /* adapter -> switch, we consume */
	struct weft_shm_view tx;        /* switch -> adapter, we produce */
	int memfd;              /* until sent with the HELLO_ACK */
	int efd_adapter, efd_switch;
	bool paused;            /* fabric full: the record at rx waits */
	bool kick;              /* records published since the last wake-up check */
};

struct client {
	struct evsrc ev;
	int fd;
	struct shm_link *shm;   /* NULL: frames go over the socket */
	bool registered;
	bool paused;     /* fabric full: the frame at rpos waits */
	bool eof;
	bool hup;        /* peer hung up while paused */
	bool armed;
	bool close_after_ack; /* refused authentication */
	uint32_t mask;
	uint16_t node;
	bool tcp;        /* accepted on a TCP listener: never shared memory */
	uint64_t since;  /* accepted at (mono_ns) */
	char who[SW_ADDR_LEN + 8];      /* for the log (peer_text) */
	unsigned char *rbuf;
	size_t rpos, rlen, rcap;
	unsigned char ack[WEFT_WIRE_LEN_PREFIX + WEFT_WIRE_HDR_SIZE];
	size_t ack_off, ack_len;
	struct client *next;
};

static struct node *node_list;  /* every node record */
static uint64_t next_sweep;
static uint64_t freed;          /* client or node records freed since the last sweep */
static size_t tcp_unregistered; /* TCP clients without a node yet */

void logmsg(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, PROG ": ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* ---- sockets -------------------------------------------------------------- */

static int fill_addr(struct sockaddr_un *a, const char *path)
{
	memset(a, 0, sizeof(*a));
	a->sun_family = AF_UNIX;
	if (strlen(path) >= sizeof(a->sun_path))
		return -1;
	memcpy(a->sun_path, path, strlen(path));
	return 0;
}

/* Listen on path, mode 0600 whatever the umask.  Refuses a path used by
 * a live listener, removes a stale socket file, and says what is wrong
 * otherwise. */
static int listen_path(const char *what, const char *path)
{
	struct sockaddr_un a;
	struct stat st;
	char *dup, *dir;
	mode_t old;
	int fd, r;

	if (fill_addr(&a, path)) {
		logmsg("error: %s socket path %s is too long (at most %zu bytes)", what, path,
		       sizeof(a.sun_path) - 1);
		return -1;
	}
	dup = strdup(path);
	if (!dup)
		return -1;
	dir = dirname(dup);
	if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode)) {
		logmsg("error: %s socket %s: folder %s does not exist", what, path, dir);
		free(dup);
		return -1;
	}
	free(dup);
	if (lstat(path, &st) == 0) {
		if (!S_ISSOCK(st.st_mode)) {
			logmsg("error: %s socket path %s exists and is not a socket", what, path);
			return -1;
		}
		fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (fd < 0)
			return -1;
		if (connect(fd, (struct sockaddr *)&a, sizeof(a)) == 0) {
			close(fd);
			logmsg("error: %s socket %s is in use by a running switch", what, path);
			return -1;
		}
		close(fd);
		if (unlink(path) != 0) {
			logmsg("error: cannot remove stale %s socket %s: %s", what, path,
			       strerror(errno));
			return -1;
		}
		logmsg("removed stale %s socket %s", what, path);
	}
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		logmsg("error: socket: %s", strerror(errno));
		return -1;
	}
	/* The socket file is created by bind with the umask: 0600 from the start. */
	old = umask(0177);
	r = bind(fd, (struct sockaddr *)&a, sizeof(a));
	umask(old);
	if (r != 0 || chmod(path, 0600) != 0 || listen(fd, 64) != 0) {
		logmsg("error: cannot listen on %s socket %s: %s", what, path, strerror(errno));
		close(fd);
		return -1;
	}
	return fd;
}

static void ep_add(struct sw *s, int fd, uint32_t events, void *ptr)
{
	struct epoll_event e = { .events = events, .data.ptr = ptr };

	if (epoll_ctl(s->ep, EPOLL_CTL_ADD, fd, &e) != 0)
		logmsg("epoll_ctl add: %s", strerror(errno));
}

/* ---- output queues ---------------------------------------------------------- */

/* A queued frame's length, from the prefix the fabric keeps before it. */
static uint32_t frame_len(const unsigned char *frame)
{
	return get_le32(frame - WEFT_WIRE_LEN_PREFIX);
}

static size_t outq_pending(const struct outq *q)
{
	return q->bytes - q->off;
}

/* Drop the first frame (written, or moved into a ring). */
static void outq_pop(struct sw *s, struct outq *q)
{
	const unsigned char *fr = q->f[q->head];

	q->bytes -= WEFT_WIRE_LEN_PREFIX + frame_len(fr);
	weft_fabric_frame_release(s->fab, fr);
	q->off = 0;
	q->head = --q->n ? q->head + 1 : 0;
}

/* Queue a frame the fabric delivers (no copy: it is held until written).
 * -EAGAIN while the queue is full: the fabric keeps the frame. */
static int outq_append(struct outq *q, const void *frame, size_t len)
{
	if (q->n && (q->n == OUTQ_FRAMES || q->bytes + WEFT_WIRE_LEN_PREFIX + len > OUTQ_SIZE))
		return -EAGAIN;
	if (q->head + q->n == q->cap) {
		if (q->head) {
			memmove(q->f, q->f + q->head, q->n * sizeof(*q->f));
			q->head = 0;
		} else {
			size_t nc = q->cap ? 2 * q->cap : OUTQ_START;
			const unsigned char **nf = realloc(q->f, nc * sizeof(*nf));

			if (!nf)
				return -EAGAIN;
			q->f = nf;
			q->cap = nc;
		}
	}
	weft_fabric_frame_hold(frame);
	q->f[q->head + q->n++] = frame;
	q->bytes += WEFT_WIRE_LEN_PREFIX + len;
	return 0;
}

/* Write the queued frames to fd, each sendmsg taking all of them
 * (OUTQ_FRAMES iovecs at most: the whole queue), until the queue is
 * empty or the socket full; a frame written in part stays first, with
 * q->off.  0, or -1 (errno) on a socket error. */
static int outq_write(struct sw *s, struct outq *q, int fd)
{
	struct iovec iov[OUTQ_FRAMES];
	struct msghdr m = { .msg_iov = iov };

	while (q->n) {
		size_t i, left;
		ssize_t w;

		for (i = 0; i < q->n; i++) {
			const unsigned char *fr = q->f[q->head + i];

			iov[i].iov_base = (void *)(uintptr_t)(fr - WEFT_WIRE_LEN_PREFIX);
			iov[i].iov_len = WEFT_WIRE_LEN_PREFIX + frame_len(fr);
		}
		iov[0].iov_base = (unsigned char *)iov[0].iov_base + q->off;
		iov[0].iov_len -= q->off;
		m.msg_iovlen = i;
		w = sendmsg(fd, &m, MSG_NOSIGNAL);
		if (w < 0)
			return errno == EAGAIN || errno == EINTR ? 0 : -1;
		for (left = (size_t)w, i = 0; left; i++) {
			if (left < iov[i].iov_len) {
				q->off += left;
				break;
			}
			left -= iov[i].iov_len;
			outq_pop(s, q);
		}
	}
	return 0;
}

/* ---- nodes ------------------------------------------------------------------ */

static struct node *node_get(struct sw *s, uint16_t id)
{
	struct node *n = s->nodes[id];

	if (n)
		return n;
	n = calloc(1, sizeof(*n));
	if (!n)
		return NULL;
	n->id = id;
	n->next = node_list;
	if (node_list)
		node_list->prev = n;
	node_list = n;
	s->nodes[id] = n;
	s->nnodes++;
	return n;
}

static void node_free(struct sw *s, struct node *n)
{
	if (n->prev)
		n->prev->next = n->next;
	else
		node_list = n->next;
	if (n->next)
		n->next->prev = n->prev;
	s->nodes[n->id] = NULL;
	s->nnodes--;
	freed++;
	while (n->q.n)
		outq_pop(s, &n->q);
	free(n->q.f);
	free(n);
}

static void client_close(struct sw *s, struct client *c, const char *why);

/* A TCP client that has not got a node within TCP_HELLO_NS goes: whoever
 * reaches the port cannot keep client slots without a token. */
static void hello_sweep(struct sw *s, uint64_t now)
{
	struct client *c, *next;

	for (c = s->clients; c && tcp_unregistered; c = next) {
		next = c->next;
		if (c->tcp && !c->registered && now - c->since >= TCP_HELLO_NS) {
			s->st.hello_timeout++;
			logmsg("%s: no node after %llu s: connection closed", c->who,
			       TCP_HELLO_NS / 1000000000ull);
			client_close(s, c, "no HELLO in time");
		}
	}
}

/* Output left for nodes that stayed away longer than the expiry goes,
 * and TCP clients past their HELLO deadline.  Memory freed by closed clients and nodes is given back to the system
 * (malloc_trim also releases free pages inside the heap), so the
 * switch's size follows the attached ports, not its history. */
static void node_sweep(struct sw *s, uint64_t now)
{
	struct node *n, *next;

	if (now < next_sweep)
		return;
	next_sweep = now + (s->expiry_ns && s->expiry_ns < SWEEP_NS ? s->expiry_ns : SWEEP_NS);
	hello_sweep(s, now);
	for (n = node_list; n; n = next) {
		next = n->next;
		if (!n->c && s->expiry_ns && now - n->detached_at >= s->expiry_ns) {
			logmsg("node %u: output left from its last connection expired", n->id);
			node_free(s, n);
		}
	}
	if (freed) {
		freed = 0;
		malloc_trim(0);
	}
}

static int deliver(void *opaque, uint16_t dst, const void *frame, size_t len)
{
	struct sw *s = opaque;
	struct node *n = s->nodes[dst];
	struct shm_link *l;

	if (!n || !n->c)
		return -EAGAIN;
	l = n->c->shm;
	/* Straight into the ring unless older output waits for room there. */
	if (l && n->q.n == 0 && weft_shm_push(&l->tx, frame, (uint32_t)len) == 0) {
		l->kick = true;
		return 0;
	}
	return outq_append(&n->q, frame, len);
}

/* ---- shared-memory transport (weft-host/shm.h, docs/switch.md) ------------------- */

static void shm_free(struct sw *s, struct shm_link *l)
{
	if (!l)
		return;
	/* The adapter holds the eventfd too: the epoll registration would
	 * outlive our descriptor. */
	if (l->efd_switch >= 0)
		epoll_ctl(s->ep, EPOLL_CTL_DEL, l->efd_switch, NULL);
	if (l->mem)
		munmap(l->mem, WEFT_SHM_SIZE);
	if (l->memfd >= 0)
		close(l->memfd);
	if (l->efd_adapter >= 0)
		close(l->efd_adapter);
	if (l->efd_switch >= 0)
		close(l->efd_switch);
	free(l);
}

/* The memfd (sealed: the adapter can neither shrink nor grow it, so the
 * mapping never faults), its rings and both eventfds; NULL on failure. */
static struct shm_link *shm_new(struct sw *s, struct client *c)
{
	struct shm_link *l = calloc(1, sizeof(*l));
	struct epoll_event e = { .events = EPOLLIN };

	if (!l)
		return NULL;
	l->ev.kind = EV_SHM;
	l->c = c;
	l->efd_adapter = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	l->efd_switch = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	l->memfd = memfd_create("weft-shm", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (l->efd_adapter < 0 || l->efd_switch < 0 || l->memfd < 0 ||
	    ftruncate(l->memfd, WEFT_SHM_SIZE) != 0 ||
	    fcntl(l->memfd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) != 0)
		goto fail;
	l->mem = mmap(NULL, WEFT_SHM_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, l->memfd, 0);
	if (l->mem == MAP_FAILED) {
		l->mem = NULL;
		goto fail;
	}
	weft_shm_init(l->mem);
	weft_shm_view_init(&l->rx, l->mem, WEFT_SHM_A2S_OFF, false);
	weft_shm_view_init(&l->tx, l->mem, WEFT_SHM_S2A_OFF, true);
	e.data.ptr = l;
	if (epoll_ctl(s->ep, EPOLL_CTL_ADD, l->efd_switch, &e) != 0)
		goto fail;
	return l;
fail:
	logmsg("shared memory for node %u: %s; the socket carries its frames",
	       c->node, strerror(errno));
	shm_free(s, l);
	return NULL;
}

static void shm_signal(int fd)
{
	uint64_t one = 1;

	if (write(fd, &one, sizeof(one)) < 0 && errno != EAGAIN)
		logmsg("eventfd write: %s", strerror(errno));
}

/* A client with shared memory has two descriptors in epoll: events of
 * the current batch still to be handled must not reach it once closed. */
static void forget_events(struct sw *s, const struct client *c, const struct shm_link *l)
{
	int i;

	for (i = s->batch_i + 1; i < s->batch_n; i++) {
		void *p = s->batch[i].data.ptr;

		if (p && (p == (const void *)c || p == (const void *)l))
			s->batch[i].data.ptr = NULL;
	}
}

/* The adapter broke the shared memory's rules: like a broken stream. */
static void shm_violation(struct sw *s, struct client *c, const char *what)
{
	s->st.bad_shm++;
	logmsg("node %u: %s in shared memory: connection dropped", c->node, what);
	client_close(s, c, "shared-memory protocol violation");
}

/* Take the adapter's records into the fabric, each copied out of the
 * shared memory before it is looked at.  -1 if the client was closed. */
static int shm_input(struct sw *s, struct client *c)
{
	static unsigned char buf[WEFT_WIRE_MAX_FRAME];
	struct shm_link *l = c->shm;
	uint64_t now = mono_ns();
	bool took = false;
	uint32_t rec;
	int len;

	if (!weft_shm_hdr_ok(l->mem)) {
		shm_violation(s, c, "a changed ring header");
		return -1;
	}
	while ((len = weft_shm_peek(&l->rx, buf, &rec)) > 0) {
		if (!l->paused)
			pcap_record(s, buf, (size_t)len);
		if (weft_fabric_submit(s->fab, c->node, buf, (size_t)len, now) == -EAGAIN) {
			l->paused = true;
			break;
		}
		l->paused = false;
		weft_shm_consume(&l->rx, rec);
		took = true;
	}
	if (len < 0) {
		shm_violation(s, c, "an impossible ring index or record length");
		return -1;
	}
	if (len == 0)
		l->paused = false;
	if (took && weft_shm_wake_producer(&l->rx))
		shm_signal(l->efd_adapter);
	return 0;
}

/* Move output that waited for room into the ring and wake the adapter if
 * it sleeps.  -1 if the client was closed. */
static int shm_output(struct sw *s, struct client *c)
{
	struct shm_link *l = c->shm;
	struct outq *q = &s->nodes[c->node]->q;

	while (q->n) {
		const unsigned char *fr = q->f[q->head];
		uint32_t len = frame_len(fr);
		int r = weft_shm_push(&l->tx, fr, len);

		if (r == -EAGAIN) {
			if (weft_shm_producer_wait(&l->tx, len))
				break;
			continue;
		}
		if (r < 0) {
			shm_violation(s, c, "an impossible ring index");
			return -1;
		}
		l->kick = true;
		outq_pop(s, q);
	}
	if (l->kick) {
		l->kick = false;
		if (weft_shm_wake_consumer(&l->tx))
			shm_signal(l->efd_adapter);
	}
	return 0;
}

/* Before the switch sleeps: announce it on every ring, or go on reading
 * one that is not empty.  True if some input was taken. */
static bool shm_sleep(struct sw *s)
{
	struct client *c, *next;
	bool busy = false;

	for (c = s->clients; c; c = next) {
		next = c->next;
		if (!c->shm || c->shm->memfd >= 0 || c->shm->paused)
			continue;
		if (!weft_shm_consumer_sleep(&c->shm->rx)) {
			busy = true;
			shm_input(s, c);
		}
	}
	return busy;
}

/* ---- clients -------------------------------------------------------------------- */

static void client_close(struct sw *s, struct client *c, const char *why)
{
	struct client **pp;

	if (c->registered) {
		struct node *n = s->nodes[c->node];

		weft_fabric_detach(s->fab, c->node);
		n->c = NULL;
		n->detached_at = mono_ns();
		/* Resend a partly written frame whole to the next connection. */
		n->q.off = 0;
		if (n->q.n == 0)
			node_free(s, n);
		logmsg("node %u disconnected (%s)", c->node, why);
	} else if (s->verbose) {
		logmsg("unregistered client %s disconnected (%s)", c->who, why);
	}
	if (c->tcp && !c->registered)
		tcp_unregistered--;
	for (pp = &s->clients; *pp; pp = &(*pp)->next) {
		if (*pp == c) {
			*pp = c->next;
			break;
		}
	}
	s->nclients--;
	s->st.disconnects++;
	freed++;
	forget_events(s, c, c->shm);
	shm_free(s, c->shm);
	close(c->fd);
	free(c->rbuf);
	free(c);
}

static void send_ack(struct sw *s, struct client *c, uint16_t node, uint16_t status)
{
	struct weft_wire_hdr h = wire_hdr(WEFT_PKT_HELLO_ACK, 0, node, 0, 0);

	h.key = WEFT_WIRE_HELLO_MAGIC;
	h.status = status;
	if (c->shm && status == WEFT_SW_OK)
		h.flags = WEFT_WF_SHM;
	put_le32(c->ack, WEFT_WIRE_HDR_SIZE);
	memcpy(c->ack + WEFT_WIRE_LEN_PREFIX, &h, sizeof(h));
	c->ack_off = 0;
	c->ack_len = sizeof(c->ack);
	pcap_record(s, &h, sizeof(h));
}

static const char *status_text(uint16_t status)
{
	switch (status) {
	case WEFT_SW_NODE_IN_USE: return "node id in use by a live client";
	case WEFT_SW_BAD_NODE: return "node id out of the unicast range";
	case WEFT_SW_AUTH_FAILED: return "authentication failed (no token, or not this node's)";
	default: return "refused";
	}
}

static void handle_hello(struct sw *s, struct client *c, const unsigned char *p, size_t len)
{
	size_t paylen = len - WEFT_WIRE_HDR_SIZE;
	struct weft_wire_hdr h;
	struct node *n;
	uint16_t status;

	memcpy(&h, p, sizeof(h));
	if (h.version != WEFT_WIRE_VERSION || h.key != WEFT_WIRE_HELLO_MAGIC ||
	    h.length != paylen || (paylen != 0 && paylen != WEFT_WIRE_TOKEN_SIZE)) {
		s->st.bad_hello++;
		logmsg("bad HELLO (version %u, key 0x%08x, length %u of %zu) from %s",
		       h.version, h.key, h.length, len, c->who);
		send_ack(s, c, h.src_node, WEFT_SW_BAD_HELLO);
		return;
	}
	if (h.src_node > WEFT_NODE_MAX_UNICAST) {
		status = WEFT_SW_BAD_NODE;
	} else if (s->auth && (paylen != WEFT_WIRE_TOKEN_SIZE ||
			       !auth_check(s->auth, h.src_node, p + WEFT_WIRE_HDR_SIZE))) {
		status = WEFT_SW_AUTH_FAILED;
	} else if (s->nodes[h.src_node] && s->nodes[h.src_node]->c) {
		status = WEFT_SW_NODE_IN_USE;
	} else {
		n = node_get(s, h.src_node);
		status = n && weft_fabric_attach(s->fab, h.src_node) == 0 ? WEFT_SW_OK
									   : WEFT_SW_BAD_NODE;
		if (n && status != WEFT_SW_OK && n->q.n == 0)
			node_free(s, n);
	}
	if (status != WEFT_SW_OK) {
		if (status == WEFT_SW_AUTH_FAILED) {
			s->st.auth_failed++;
			c->close_after_ack = true;
		} else {
			s->st.hello_rejected++;
		}
		logmsg("HELLO for node %u from %s rejected: %s", h.src_node, c->who,
		       status_text(status));
		send_ack(s, c, h.src_node, status);
		return;
	}
	c->registered = true;
	c->node = h.src_node;
	if (c->tcp)
		tcp_unregistered--;
	s->nodes[c->node]->c = c;
	/* Descriptors cannot travel over TCP: the socket carries the frames. */
	if ((h.flags & WEFT_WF_SHM_REQ) && s->shm && !c->tcp)
		c->shm = shm_new(s, c);
	send_ack(s, c, c->node, WEFT_SW_OK);
	logmsg("node %u connected (%s%s, %s)", c->node, c->who,
	       s->auth ? ", token checked" : ", no authentication",
	       c->shm ? "shared memory" : "socket");
}

/* Process the complete frames in c->rbuf.  Returns -1 if the client was
 * closed. */
static int client_input(struct sw *s, struct client *c)
{
	/* One time stamp per batch read: the frames arrived together. */
	uint64_t now = mono_ns();

	while (c->rlen - c->rpos >= WEFT_WIRE_LEN_PREFIX) {
		unsigned char *p = c->rbuf + c->rpos;
		uint32_t len = get_le32(p);

		if (len > WEFT_WIRE_MAX_FRAME) {
			s->st.oversize++;
			logmsg("length prefix %u beyond %u from %s%u (%s): connection dropped", len,
			       WEFT_WIRE_MAX_FRAME, c->registered ? "node " : "unregistered client ",
			       c->registered ? c->node : 0, c->who);
			client_close(s, c, "oversize frame");
			return -1;
		}
		if (c->rlen - c->rpos < WEFT_WIRE_LEN_PREFIX + len)
			break;
		p += WEFT_WIRE_LEN_PREFIX;
		if (!c->registered) {
			/* One HELLO_ACK at a time: wait until the last is sent. */
			if (c->ack_off < c->ack_len || c->close_after_ack) {
				c->paused = true;
				return 0;
			}
			pcap_record(s, p, len);
			if (len >= WEFT_WIRE_HDR_SIZE && p[1] == WEFT_PKT_HELLO) {
				handle_hello(s, c, p, len);
			} else {
				s->st.unregistered++;
				if (s->verbose)
					logmsg("frame before HELLO dropped");
			}
		} else {
			if (!c->paused)
				pcap_record(s, p, len);
			if (weft_fabric_submit(s->fab, c->node, p, len, now) == -EAGAIN) {
				c->paused = true;
				return 0;
			}
			c->paused = false;
		}
		c->rpos += WEFT_WIRE_LEN_PREFIX + len;
	}
	c->paused = false;
	if (c->rpos) {
		memmove(c->rbuf, c->rbuf + c->rpos, c->rlen - c->rpos);
		c->rlen -= c->rpos;
		c->rpos = 0;
	}
	if (c->eof) {
		/* What the adapter left in its ring goes first, as far as it fits. */
		if (c->shm && shm_input(s, c) < 0)
			return -1;
		client_close(s, c, c->rlen ? "closed inside a frame" : "closed");
		return -1;
	}
	return 0;
}

static void client_read(struct sw *s, struct client *c)
{
	size_t space;
	ssize_t n;

	if (c->paused || c->eof)
		return;
	if (c->rlen == c->rcap && c->rcap < RBUF_SIZE) {
		unsigned char *nb = realloc(c->rbuf, 2 * c->rcap);

		if (nb) {
			c->rbuf = nb;
			c->rcap *= 2;
		}
	}
	if (c->rlen == c->rcap)
		return;
	space = c->rcap - c->rlen;
	n = read(c->fd, c->rbuf + c->rlen, space);
	if (n == 0) {
		c->eof = true;
	} else if (n < 0) {
		if (errno == EAGAIN || errno == EINTR)
			return;
		client_close(s, c, strerror(errno));
		return;
	} else {
		c->rlen += (size_t)n;
	}
	if (client_input(s, c) < 0)
		return;
	/* A read that filled the buffer left more waiting: a busy client's
	 * buffer doubles (up to RBUF_SIZE) so that one read system call, one
	 * epoll_wait and one re-arm carry more frames. */
	if (n > 0 && (size_t)n == space && c->rcap < RBUF_SIZE) {
		unsigned char *nb = realloc(c->rbuf, 2 * c->rcap);

		if (nb) {
			c->rbuf = nb;
			c->rcap *= 2;
		}
	}
}

/* The HELLO_ACK granting shared memory, with the memfd and the eventfds
 * (weft-host/shm.h); once sent, the memfd is the adapter's business. */
static ssize_t send_ack_fds(struct client *c)
{
	struct shm_link *l = c->shm;
	int fds[WEFT_SHM_NFDS] = { l->memfd, l->efd_adapter, l->efd_switch };
	union {
		struct cmsghdr h;
		char buf[CMSG_SPACE(sizeof(fds))];
	} u;
	struct iovec iov = { c->ack + c->ack_off, c->ack_len - c->ack_off };
	struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1,
			    .msg_control = u.buf, .msg_controllen = sizeof(u.buf) };
	struct cmsghdr *cm;
	ssize_t n;

	memset(&u, 0, sizeof(u));
	cm = CMSG_FIRSTHDR(&m);
	cm->cmsg_level = SOL_SOCKET;
	cm->cmsg_type = SCM_RIGHTS;
	cm->cmsg_len = CMSG_LEN(sizeof(fds));
	memcpy(CMSG_DATA(cm), fds, sizeof(fds));
	n = sendmsg(c->fd, &m, MSG_NOSIGNAL);
	if (n > 0) {
		close(l->memfd);
		l->memfd = -1;
	}
	return n;
}

/* Write pending output.  Returns -1 if the client was closed. */
static int client_flush(struct sw *s, struct client *c)
{

	while (c->ack_off < c->ack_len) {
		ssize_t n = c->shm && c->shm->memfd >= 0 ? send_ack_fds(c)
			: send(c->fd, c->ack + c->ack_off, c->ack_len - c->ack_off,
			       MSG_NOSIGNAL);

		if (n < 0) {
			if (errno == EAGAIN || errno == EINTR)
				return 0;
			client_close(s, c, strerror(errno));
			return -1;
		}
		c->ack_off += (size_t)n;
	}
	if (c->close_after_ack) {
		client_close(s, c, "authentication failed");
		return -1;
	}
	if (!c->registered)
		return 0;
	if (c->shm)
		return shm_output(s, c);
	if (outq_write(s, &s->nodes[c->node]->q, c->fd) < 0) {
		client_close(s, c, strerror(errno));
		return -1;
	}
	return 0;
}

static size_t client_pending(struct sw *s, const struct client *c)
{
	size_t n = c->ack_len - c->ack_off;

	if (c->registered)
		n += outq_pending(&s->nodes[c->node]->q);
	return n;
}

static bool client_has_output(struct sw *s, const struct client *c)
{
	return client_pending(s, c) != 0 || c->close_after_ack || (c->shm && c->shm->kick);
}

/* Output that waits for the socket (not for room in a ring). */
static bool client_sock_output(struct sw *s, const struct client *c)
{
	if (c->shm)
		return c->ack_off < c->ack_len || c->close_after_ack;
	return client_has_output(s, c);
}

/* Clients use one-shot level events, re-armed here after each event or
 * state change: input only while not paused, output while some is queued. */
static void client_arm(struct sw *s, struct client *c)
{
	uint32_t mask = EPOLLONESHOT;
	struct epoll_event e;

	if (!c->paused && !c->eof)
		mask |= EPOLLIN;
	if (client_sock_output(s, c))
		mask |= EPOLLOUT;
	/* A known hangup is not asked for again (it would be reported in a
	 * loop while paused); with nothing else to wait for, stay unarmed. */
	if (!c->hup)
		mask |= EPOLLRDHUP;
	else if (!(mask & (EPOLLIN | EPOLLOUT)))
		return;
	if (c->armed && mask == c->mask)
		return;
	e.events = mask;
	e.data.ptr = c;
	if (epoll_ctl(s->ep, EPOLL_CTL_MOD, c->fd, &e) != 0)
		logmsg("epoll_ctl mod: %s", strerror(errno));
	c->armed = true;
	c->mask = mask;
}

/* Accept on the UNIX listener or a TCP one (tcp): the same clients. */
static void accept_clients(struct sw *s, int lfd, bool tcp)
{
	for (;;) {
		int fd = accept4(lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		struct client *c;

		if (fd < 0)
			return;
		if (s->nclients >= MAX_CLIENTS) {
			s->st.too_many_clients++;
			logmsg("too many clients (%u): connection refused", MAX_CLIENTS);
			close(fd);
			continue;
		}
		c = calloc(1, sizeof(*c));
		if (c) {
			c->rbuf = malloc(BUF_START);
			c->rcap = BUF_START;
		}
		if (!c || !c->rbuf) {
			free(c);
			close(fd);
			logmsg("out of memory: connection refused");
			continue;
		}
		if (tcp)
			tcp_client_setup(fd);
		c->tcp = tcp;
		c->since = mono_ns();
		tcp_unregistered += tcp;
		peer_text(fd, tcp, c->who, sizeof(c->who));
		c->ev.kind = EV_CLIENT;
		c->fd = fd;
		c->next = s->clients;
		s->clients = c;
		s->nclients++;
		s->st.connections++;
		s->st.tcp_connections += tcp;
		ep_add(s, fd, EPOLLIN | EPOLLRDHUP | EPOLLONESHOT, c);
		c->armed = true;
		c->mask = EPOLLIN | EPOLLRDHUP | EPOLLONESHOT;
	}
}

/* Deliver what is due, write it out, let paused clients continue.  Frames
 * parked behind a full output queue are retried as long as writing makes
 * room: once the queue is empty no EPOLLOUT would wake us for them.
 * Returns true if work is left (the caller then does not sleep). */
static bool pump(struct sw *s)
{
	int round;

	node_sweep(s, mono_ns());
	for (round = 0; round < 16; round++) {
		struct client *c, *next;
		bool again = false;
		size_t wrote = 0;

		weft_fabric_poll(s->fab, mono_ns(), deliver, s);
		for (c = s->clients; c; c = next) {
			next = c->next;
			if (client_has_output(s, c)) {
				size_t before = client_pending(s, c);

				if (client_flush(s, c) < 0)
					continue;
				wrote += before - client_pending(s, c);
			}
		}
		for (c = s->clients; c; c = next) {
			next = c->next;
			if (c->shm && c->shm->paused) {
				if (shm_input(s, c) < 0)
					continue;
				if (!c->shm->paused)
					again = true;
			}
			if (c->paused) {
				if (client_input(s, c) < 0)
					continue;
				if (!c->paused)
					again = true;
			}
		}
		if (wrote && weft_fabric_parked(s->fab))
			again = true;
		if (!again)
			return false;
	}
	return true;
}

static void arm_timer(struct sw *s)
{
	uint64_t due = weft_fabric_next_due(s->fab);
	struct itimerspec its;
	struct node *n;

	/* Paused clients wait for a port to stall; output left for absent
	 * nodes waits for its expiry, TCP clients for their HELLO deadline. */
	if (tcp_unregistered && next_sweep < due)
		due = next_sweep;
	for (n = node_list; n && s->expiry_ns; n = n->next) {
		if (!n->c) {
			if (next_sweep < due)
				due = next_sweep;
			break;
		}
	}
	if (due == s->timer_due)
		return;
	memset(&its, 0, sizeof(its));
	if (due != UINT64_MAX) {
		if (due == 0)
			due = 1;
		its.it_value.tv_sec = (time_t)(due / 1000000000ull);
		its.it_value.tv_nsec = (long)(due % 1000000000ull);
	}
	timerfd_settime(s->tmr_fd, TFD_TIMER_ABSTIME, &its, NULL);
	s->timer_due = due;
}

/* ---- main loop ------------------------------------------------------------- */

static void handle_event(struct sw *s, struct epoll_event *e)
{
	struct evsrc *src = e->data.ptr;

	if (!src)
		return;         /* its client was closed earlier in this batch */
	switch (src->kind) {
	case EV_LISTEN:
		accept_clients(s, s->lsn_fd, false);
		break;
	case EV_TCP_LISTEN:
		accept_clients(s, ((struct tcp_listener *)src)->fd, true);
		break;
	case EV_CTL_LISTEN:
		accept_ctl(s);
		break;
	case EV_TIMER: {
		uint64_t x;

		if (read(s->tmr_fd, &x, sizeof(x)) < 0 && errno != EAGAIN)
			logmsg("timerfd read: %s", strerror(errno));
		s->timer_due = UINT64_MAX - 1;
		break;
	}
	case EV_SIGNAL: {
		struct signalfd_siginfo si;

		if (read(s->sig_fd, &si, sizeof(si)) == (ssize_t)sizeof(si))
			logmsg("signal %u: exiting", si.ssi_signo);
		s->quit = true;
		break;
	}
	case EV_CLIENT: {
		struct client *c = (struct client *)src;

		c->armed = false;
		if (e->events & EPOLLOUT && client_flush(s, c) < 0)
			break;
		if (e->events & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR)) {
			if (c->paused) {
				/* Hangup while paused: read the rest once unpaused. */
				c->hup = true;
				break;
			}
			client_read(s, c);
		}
		break;
	}
	case EV_CTL:
		ctl_input(s, (struct ctlconn *)src);
		break;
	case EV_SHM: {
		struct shm_link *l = (struct shm_link *)src;
		uint64_t x;

		if (read(l->efd_switch, &x, sizeof(x)) < 0 && errno != EAGAIN)
			logmsg("eventfd read: %s", strerror(errno));
		if (!l->paused && shm_input(s, l->c) < 0)
			break;
		client_flush(s, l->c);
		break;
	}
	}
}

static int run(struct sw *s)
{
	struct epoll_event evs[64];

	while (!s->quit) {
		struct client *c;
		bool busy;
		int n, i;

		busy = pump(s);
		if (!busy)
			busy = shm_sleep(s);
		for (c = s->clients; c; c = c->next)
			client_arm(s, c);
		arm_timer(s);
		if (s->pcap && !busy)
			fflush(s->pcap);
		n = epoll_wait(s->ep, evs, 64, busy ? 0 : -1);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			logmsg("epoll_wait: %s", strerror(errno));
			return 1;
		}
		/* Handling an event closes at most its own client; its other
		 * events in this batch are forgotten (forget_events). */
		s->batch = evs;
		s->batch_n = n;
		for (i = 0; i < n && !s->quit; i++) {
			s->batch_i = i;
			handle_event(s, &evs[i]);
		}
		s->batch_n = 0;
	}
	return 0;
}

static void sw_free(struct sw *s)
{
	size_t i;

	while (s->clients)
		client_close(s, s->clients, "switch exiting");
	ctl_free_all(s);
	while (node_list)
		node_free(s, node_list);
	free(s->nodes);
	pcap_stop(s);
	weft_fabric_free(s->fab);
	auth_free(s->auth);
	free(s->run_dir);
	for (i = 0; i < s->ntcp; i++)
		if (s->tcp[i].fd >= 0)
			close(s->tcp[i].fd);
	if (s->lsn_fd >= 0) {
		close(s->lsn_fd);
		unlink(s->sock_path);
	}
	if (s->ctl_fd >= 0) {
		close(s->ctl_fd);
		unlink(s->ctl_path);
	}
	if (s->tmr_fd >= 0)
		close(s->tmr_fd);
	if (s->sig_fd >= 0)
		close(s->sig_fd);
	if (s->ep >= 0)
		close(s->ep);
}

/* ---- command line ------------------------------------------------------------ */

static void usage(FILE *fp)
{
	fprintf(fp,
		"usage: " PROG " --socket PATH --ctl PATH (--tokens FILE | --insecure) [options]\n"
		"       " PROG " --listen HOST:PORT [--socket PATH] --ctl PATH --tokens FILE [options]\n"
		"       " PROG " ctl --socket CTLPATH [--json] COMMAND [ARGS...]\n"
		"\n"
		"The Weft fabric switch: adapters connect to --socket (and to --listen\n"
		"from other hosts), scripts and people control it through --ctl.\n"
		"See docs/switch.md.\n"
		"\n"
		"options:\n"
		"  --socket PATH      UNIX socket the adapters connect to\n"
		"  --listen HOST:PORT TCP listener for adapters on other hosts (HOST an IPv4\n"
		"                     address or a name, or [IPV6]:PORT; PORT 0: any free\n"
		"                     port; up to %u times); needs --tokens, which travel in\n"
		"                     clear: only on a trusted network or through a tunnel\n"
		"                     (one of --socket and --listen is required)\n"
		"  --ctl PATH         control socket (required)\n"
		"  --tokens FILE      node tokens, lines 'NODE HEX64' (mode 0600): a HELLO\n"
		"                     must carry its node's token\n"
		"  --insecure         no tokens: any client may claim any free node id\n"
		"  --run-dir DIR      folder where 'ctl capture start' may write\n"
		"  --seed N           seed of the fault injection (default 1)\n"
		"  --capture FILE     pcap capture of all frames from the start\n"
		"  --capture-ring N   frames remembered for replay (default %u)\n"
		"  --port-queue N     frames queued for one node (default %u)\n"
		"  --max-queued N     frames the fabric holds at most (default: for every\n"
		"                     client its port queue, plus the hold; with this\n"
		"                     option port-queue and hold default to N/4 and N/2)\n"
		"  --stall-ms N       a node at its queue limit that takes nothing for N ms\n"
		"                     has its frames dropped (STALLED) (default %u, 0 never)\n"
		"  --expire-ms N      frames held for, and ports of, absent nodes expire\n"
		"                     after N ms (default %u, 0 never)\n"
		"  --transport T      auto (default): shared memory for adapters that ask for\n"
		"                     it (docs/switch.md); socket: frames only over the socket\n"
		"  --verbose          log more (frames before HELLO, unregistered clients)\n"
		"  -h, --help         this help\n"
		"\n%s\n", SW_MAX_TCP, DEF_CAPTURE, DEF_PORT_QUEUE, DEF_STALL_MS, DEF_EXPIRE_MS, fault_help);
	ctl_print_help(fp);
}

static bool opt_u64(const char *name, const char *v, uint64_t max, uint64_t *out)
{
	if (parse_u64(v, max, out))
		return true;
	logmsg("error: %s needs an integer 0..%" PRIu64 ", got '%s'", name, max, v);
	return false;
}

struct opts {
	const char *capture, *tokens, *run_dir;
	bool insecure;
	uint64_t ring, maxq, portq, stall_ms, expire_ms;
	struct fault_settings fs;
};

enum { O_SOCKET = 256, O_CTL, O_SEED, O_CAPTURE, O_RING, O_MAXQ, O_VERBOSE, O_PORTQ,
       O_TOKENS, O_INSECURE, O_RUNDIR, O_STALL, O_EXPIRE, O_TRANSPORT, O_LISTEN, O_FAULT };

/* Parse the command line into s and o; 0, or the exit status. */
static int parse_args(int argc, char **argv, struct sw *s, struct opts *o)
{
	static const struct option fixed[] = {
		{ "socket", required_argument, NULL, O_SOCKET },
		{ "listen", required_argument, NULL, O_LISTEN },
		{ "ctl", required_argument, NULL, O_CTL },
		{ "seed", required_argument, NULL, O_SEED },
		{ "capture", required_argument, NULL, O_CAPTURE },
		{ "capture-ring", required_argument, NULL, O_RING },
		{ "max-queued", required_argument, NULL, O_MAXQ },
		{ "port-queue", required_argument, NULL, O_PORTQ },
		{ "tokens", required_argument, NULL, O_TOKENS },
		{ "insecure", no_argument, NULL, O_INSECURE },
		{ "run-dir", required_argument, NULL, O_RUNDIR },
		{ "stall-ms", required_argument, NULL, O_STALL },
		{ "expire-ms", required_argument, NULL, O_EXPIRE },
		{ "verbose", no_argument, NULL, O_VERBOSE },
		{ "transport", required_argument, NULL, O_TRANSPORT },
		{ "help", no_argument, NULL, 'h' },
	};
	struct option opts[sizeof(fixed) / sizeof(fixed[0]) + 16];
	size_t nf = sizeof(fixed) / sizeof(fixed[0]), i;
	char err[400];
	int c;

	memcpy(opts, fixed, sizeof(fixed));
	/* The fault keys, the same words as the control command 'set'. */
	for (i = 0; i < fault_nkeys() && i < 15; i++)
		opts[nf + i] = (struct option){ fault_key_option(i), required_argument, NULL,
						(int)(O_FAULT + i) };
	memset(&opts[nf + i], 0, sizeof(opts[0]));
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case O_SOCKET: s->sock_path = optarg; break;
		case O_LISTEN:
			if (s->ntcp == SW_MAX_TCP) {
				logmsg("error: at most %u --listen options", SW_MAX_TCP);
				return 2;
			}
			s->tcp[s->ntcp++].spec = optarg;
			break;
		case O_CTL: s->ctl_path = optarg; break;
		case O_SEED:
			if (!opt_u64("--seed", optarg, UINT64_MAX, &s->seed))
				return 2;
			break;
		case O_CAPTURE: o->capture = optarg; break;
		case O_TOKENS: o->tokens = optarg; break;
		case O_INSECURE: o->insecure = true; break;
		case O_RUNDIR: o->run_dir = optarg; break;
		case O_RING:
			if (!opt_u64("--capture-ring", optarg, 1u << 20, &o->ring))
				return 2;
			break;
		case O_MAXQ:
			if (!opt_u64("--max-queued", optarg, 1u << 22, &o->maxq) || o->maxq == 0) {
				if (o->maxq == 0)
					logmsg("error: --max-queued must be at least 1");
				return 2;
			}
			break;
		case O_PORTQ:
			if (!opt_u64("--port-queue", optarg, 1u << 22, &o->portq) || o->portq == 0) {
				if (o->portq == 0)
					logmsg("error: --port-queue must be at least 1");
				return 2;
			}
			break;
		case O_STALL:
			if (!opt_u64("--stall-ms", optarg, UINT32_MAX, &o->stall_ms))
				return 2;
			break;
		case O_EXPIRE:
			if (!opt_u64("--expire-ms", optarg, UINT32_MAX, &o->expire_ms))
				return 2;
			break;
		case O_VERBOSE: s->verbose = true; break;
		case O_TRANSPORT:
			if (strcmp(optarg, "auto") != 0 && strcmp(optarg, "socket") != 0) {
				logmsg("error: --transport is auto or socket, got '%s'", optarg);
				return 2;
			}
			s->shm = strcmp(optarg, "auto") == 0;
			break;
		case 'h':
			usage(stdout);
			return -1;
		default:
			if (c >= O_FAULT && (size_t)(c - O_FAULT) < fault_nkeys()) {
				if (fault_set(&o->fs, fault_key_option((size_t)(c - O_FAULT)), optarg,
					      err, sizeof(err))) {
					logmsg("error: --%s", err);
					return 2;
				}
				break;
			}
			usage(stderr);
			return 2;
		}
	}
	if (optind < argc) {
		logmsg("error: unexpected argument '%s' (see --help)", argv[optind]);
		return 2;
	}
	if ((!s->sock_path && !s->ntcp) || !s->ctl_path) {
		logmsg("error: --socket PATH (or --listen HOST:PORT) and --ctl PATH are required "
		       "(see --help)");
		return 2;
	}
	if (s->sock_path && !strcmp(s->sock_path, s->ctl_path)) {
		logmsg("error: --socket and --ctl must be different paths");
		return 2;
	}
	if (!o->tokens == !o->insecure) {
		logmsg("error: give --tokens FILE (node authentication) or --insecure (none)");
		return 2;
	}
	/* Anyone who reaches the port could claim any node id. */
	if (s->ntcp && o->insecure) {
		logmsg("error: --listen needs --tokens: --insecure is for the UNIX socket only");
		return 2;
	}
	return 0;
}

/* Fabric, tokens, run folder and capture from the options; false on error. */
static bool setup(struct sw *s, struct opts *o)
{
	uint64_t portq = o->portq, hold = o->fs.hold, maxq = o->maxq;
	char err[512];
	FILE *fp;

	if (maxq) {
		if (!portq)
			portq = maxq / 4 ? maxq / 4 : 1;
		if (hold == UINT64_MAX)
			hold = maxq / 2;
	} else {
		if (!portq)
			portq = DEF_PORT_QUEUE;
		if (hold == UINT64_MAX)
			hold = DEF_HOLD;
		maxq = (uint64_t)MAX_CLIENTS * portq + hold;
	}
	s->fab = weft_fabric_new(s->seed, (size_t)maxq, (size_t)o->ring);
	s->nodes = calloc((size_t)WEFT_NODE_MAX_UNICAST + 1, sizeof(*s->nodes));
	if (!s->fab || !s->nodes) {
		logmsg("error: out of memory");
		return false;
	}
	weft_fabric_set_faults(s->fab, &o->fs.ft);
	weft_fabric_set_hold_limit(s->fab, (size_t)hold);
	weft_fabric_set_port_limit(s->fab, (size_t)portq);
	weft_fabric_set_stall_ns(s->fab, o->stall_ms * 1000000ull);
	s->expiry_ns = o->expire_ms * 1000000ull;
	weft_fabric_set_expiry_ns(s->fab, s->expiry_ns);
	weft_fabric_set_tap(s->fab, pcap_tap, s);
	if (o->tokens) {
		s->auth = auth_load(o->tokens, err, sizeof(err));
		if (!s->auth) {
			logmsg("error: %s", err);
			return false;
		}
	}
	if (o->run_dir) {
		struct stat st;

		s->run_dir = realpath(o->run_dir, NULL);
		if (!s->run_dir || stat(s->run_dir, &st) != 0 || !S_ISDIR(st.st_mode)) {
			logmsg("error: --run-dir %s is not a folder", o->run_dir);
			return false;
		}
	}
	if (o->capture) {
		fp = fopen(o->capture, "wbe");
		if (!fp) {
			logmsg("error: cannot open capture file %s: %s", o->capture, strerror(errno));
			return false;
		}
		pcap_start(s, fp, o->capture);
	}
	return true;
}

int main(int argc, char **argv)
{
	struct opts o = { .ring = DEF_CAPTURE, .stall_ms = DEF_STALL_MS,
			  .expire_ms = DEF_EXPIRE_MS,
			  .fs = { .ft = { .routes = 1 }, .hold = UINT64_MAX } };
	struct sw s;
	sigset_t mask;
	char err[512];
	size_t i;
	int rc;

	if (argc > 1 && !strcmp(argv[1], "ctl"))
		return ctl_main(argc - 1, argv + 1);

	memset(&s, 0, sizeof(s));
	s.seed = 1;
	s.shm = true;
	s.ep = s.lsn_fd = s.ctl_fd = s.tmr_fd = s.sig_fd = -1;
	for (i = 0; i < SW_MAX_TCP; i++)
		s.tcp[i].fd = -1;
	rc = parse_args(argc, argv, &s, &o);
	if (rc)
		return rc < 0 ? 0 : rc;

	rc = 1;
	if (!setup(&s, &o))
		goto out;
	if (s.sock_path) {
		s.lsn_fd = listen_path("adapter", s.sock_path);
		if (s.lsn_fd < 0)
			goto out;
	}
	for (i = 0; i < s.ntcp; i++) {
		s.tcp[i].fd = listen_tcp(s.tcp[i].spec, s.tcp[i].name, sizeof(s.tcp[i].name),
					 err, sizeof(err));
		if (s.tcp[i].fd < 0) {
			logmsg("error: %s", err);
			goto out;
		}
		s.tcp[i].ev.kind = EV_TCP_LISTEN;
	}
	s.ctl_fd = listen_path("control", s.ctl_path);
	if (s.ctl_fd < 0)
		goto out;

	sigemptyset(&mask);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGHUP);
	sigprocmask(SIG_BLOCK, &mask, NULL);
	signal(SIGPIPE, SIG_IGN);
	s.sig_fd = signalfd(-1, &mask, SFD_NONBLOCK | SFD_CLOEXEC);
	s.tmr_fd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
	s.ep = epoll_create1(EPOLL_CLOEXEC);
	if (s.sig_fd < 0 || s.tmr_fd < 0 || s.ep < 0) {
		logmsg("error: cannot set up the event loop: %s", strerror(errno));
		goto out;
	}
	s.timer_due = UINT64_MAX;
	s.lsn_ev.kind = EV_LISTEN;
	s.ctl_ev.kind = EV_CTL_LISTEN;
	s.tmr_ev.kind = EV_TIMER;
	s.sig_ev.kind = EV_SIGNAL;
	if (s.lsn_fd >= 0)
		ep_add(&s, s.lsn_fd, EPOLLIN, &s.lsn_ev);
	for (i = 0; i < s.ntcp; i++)
		ep_add(&s, s.tcp[i].fd, EPOLLIN, &s.tcp[i].ev);
	ep_add(&s, s.ctl_fd, EPOLLIN, &s.ctl_ev);
	ep_add(&s, s.tmr_fd, EPOLLIN, &s.tmr_ev);
	ep_add(&s, s.sig_fd, EPOLLIN, &s.sig_ev);
	logmsg("listening on %s, control %s, seed %" PRIu64 "%s%s",
	       s.sock_path ? s.sock_path : "TCP only", s.ctl_path,
	       s.seed, o.capture ? ", capture " : "", o.capture ? o.capture : "");
	for (i = 0; i < s.ntcp; i++)
		logmsg("listening on TCP %s (--listen %s; tokens travel in clear, no shared memory)",
		       s.tcp[i].name, s.tcp[i].spec);
	if (s.auth)
		logmsg("%zu node token(s) loaded from %s", auth_nodes(s.auth), o.tokens);
	else
		logmsg("insecure: no node authentication (--insecure)");
	rc = run(&s);
out:
	sw_free(&s);
	return rc;
}
