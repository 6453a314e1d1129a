/* SPDX-License-Identifier: MIT */
/*
 * weft-switch: the fabric process joining Weft adapters over UNIX stream
 * sockets.  Single-threaded, epoll-based.  See docs/switch.md.
 *
 *   weft-switch --socket PATH --ctl PATH [--seed N] [--capture FILE] ...
 *   weft-switch ctl --socket CTLPATH [--json] CMD [ARGS...]
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <libgen.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/timerfd.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "fabric.h"
#include "weft/names.h"
#include "weft/wire.h"
#include "wire_io.h"

#define PROG            "weft-switch"
#define RBUF_SIZE       (256u * 1024u)
#define OUTQ_SIZE       (256u * 1024u)
#define CTL_MAX_REQ     4096u
#define MAX_CLIENTS     1024u
#define MAX_CTL_CONNS   64u
#define DEF_MAX_QUEUED  4096u
#define DEF_CAPTURE     1024u
#define PCAP_MAGIC_NS   0xa1b23c4du

enum ev_kind { EV_LISTEN, EV_CTL_LISTEN, EV_TIMER, EV_SIGNAL, EV_CLIENT, EV_CTL };

struct evsrc {
	enum ev_kind kind;
};

/* Output towards one node.  Kept across reconnects: frames not fully
 * written to the old connection are sent whole to the next one. */
struct outq {
	unsigned char *buf;
	size_t fstart;  /* start of the frame being written */
	size_t off;     /* bytes written so far */
	size_t len;     /* bytes queued */
};

struct client;

struct node {
	struct outq q;
	struct client *c;
};

struct client {
	struct evsrc ev;
	int fd;
	bool registered;
	bool paused;     /* fabric full: the frame at rpos waits */
	bool eof;
	bool hup;        /* peer hung up while paused */
	bool armed;
	uint32_t mask;
	uint16_t node;
	unsigned char *rbuf;
	size_t rpos, rlen;
	unsigned char ack[WEFT_WIRE_LEN_PREFIX + WEFT_WIRE_HDR_SIZE];
	size_t ack_off, ack_len;
	struct client *next;
};

struct ctlconn {
	struct evsrc ev;
	int fd;
	size_t len;
	char req[CTL_MAX_REQ + 1];
	struct ctlconn *next;
};

struct swstats {
	uint64_t connections, disconnects;
	uint64_t bad_hello, hello_rejected, unregistered;
	uint64_t oversize, too_many_clients;
};

struct sw {
	struct weft_fabric *fab;
	uint64_t seed;
	int ep;
	struct evsrc lsn_ev, ctl_ev, tmr_ev, sig_ev;
	int lsn_fd, ctl_fd, tmr_fd, sig_fd;
	const char *sock_path, *ctl_path;
	uint64_t timer_due;
	struct client *clients;
	size_t nclients;
	struct ctlconn *ctls;
	size_t nctls;
	struct node **nodes;
	FILE *pcap;
	char *pcap_path;
	uint64_t pcap_frames;
	struct swstats st;
	bool quit;
	bool verbose;
};

static void logmsg(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void logmsg(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, PROG ": ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* ---- growable text buffer for ctl replies ------------------------------- */

struct sbuf {
	char *s;
	size_t len, cap;
	bool oom;
};

static void sb_printf(struct sbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void sb_printf(struct sbuf *b, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (b->oom)
		return;
	for (;;) {
		size_t room = b->cap - b->len;

		va_start(ap, fmt);
		n = vsnprintf(b->s ? b->s + b->len : NULL, room, fmt, ap);
		va_end(ap);
		if (n < 0) {
			b->oom = true;
			return;
		}
		if ((size_t)n < room) {
			b->len += (size_t)n;
			return;
		}
		{
			size_t nc = (b->cap + (size_t)n + 1) * 2;
			char *ns = realloc(b->s, nc);

			if (!ns) {
				b->oom = true;
				return;
			}
			b->s = ns;
			b->cap = nc;
		}
	}
}

/* ---- pcap ----------------------------------------------------------------- */

static void pcap_write_hdr(FILE *fp)
{
	unsigned char h[24];

	put_le32(h, PCAP_MAGIC_NS);
	h[4] = 2; h[5] = 0;     /* version 2.4 */
	h[6] = 4; h[7] = 0;
	put_le32(h + 8, 0);     /* thiszone */
	put_le32(h + 12, 0);    /* sigfigs */
	put_le32(h + 16, WEFT_WIRE_MAX_FRAME);
	put_le32(h + 20, WEFT_PCAP_LINKTYPE);
	fwrite(h, 1, sizeof(h), fp);
}

static void pcap_record(struct sw *s, const void *frame, size_t len)
{
	unsigned char h[16];
	struct timespec ts;
	size_t incl = len < WEFT_WIRE_MAX_FRAME ? len : WEFT_WIRE_MAX_FRAME;

	if (!s->pcap)
		return;
	clock_gettime(CLOCK_REALTIME, &ts);
	put_le32(h, (uint32_t)ts.tv_sec);
	put_le32(h + 4, (uint32_t)ts.tv_nsec);
	put_le32(h + 8, (uint32_t)incl);
	put_le32(h + 12, (uint32_t)len);
	if (fwrite(h, 1, sizeof(h), s->pcap) != sizeof(h) ||
	    fwrite(frame, 1, incl, s->pcap) != incl) {
		logmsg("capture to %s failed (%s); capture stopped", s->pcap_path,
		       strerror(errno));
		fclose(s->pcap);
		s->pcap = NULL;
		return;
	}
	s->pcap_frames++;
}

static int pcap_start(struct sw *s, const char *path, char *err, size_t errlen)
{
	FILE *fp;

	if (s->pcap) {
		snprintf(err, errlen, "a capture to %s is running; stop it first", s->pcap_path);
		return -1;
	}
	fp = fopen(path, "wb");
	if (!fp) {
		snprintf(err, errlen, "cannot open capture file %s: %s", path, strerror(errno));
		return -1;
	}
	pcap_write_hdr(fp);
	s->pcap = fp;
	s->pcap_path = strdup(path);
	s->pcap_frames = 0;
	return 0;
}

static void pcap_stop(struct sw *s)
{
	if (!s->pcap)
		return;
	fclose(s->pcap);
	s->pcap = NULL;
	free(s->pcap_path);
	s->pcap_path = NULL;
}

static void tap(void *opaque, uint16_t src, const void *frame, size_t len, bool replayed)
{
	(void)src;
	/* Submitted frames were captured when read; record replays here. */
	if (replayed)
		pcap_record(opaque, frame, len);
}

/* ---- sockets -------------------------------------------------------------- */

static int fill_addr(struct sockaddr_un *a, const char *path)
{
	memset(a, 0, sizeof(*a));
	a->sun_family = AF_UNIX;
	if (strlen(path) >= sizeof(a->sun_path))
		return -1;
	strcpy(a->sun_path, path);
	return 0;
}

/* Listen on path.  Refuses a path used by a live listener, removes a stale
 * socket file, and says what is wrong otherwise. */
static int listen_path(const char *what, const char *path)
{
	struct sockaddr_un a;
	struct stat st;
	char *dup, *dir;
	int fd;

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
	if (bind(fd, (struct sockaddr *)&a, sizeof(a)) != 0 || listen(fd, 64) != 0) {
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

/* ---- nodes and clients ------------------------------------------------------ */

static struct node *node_get(struct sw *s, uint16_t id)
{
	struct node *n = s->nodes[id];

	if (n)
		return n;
	n = calloc(1, sizeof(*n));
	if (!n)
		return NULL;
	n->q.buf = malloc(OUTQ_SIZE);
	if (!n->q.buf) {
		free(n);
		return NULL;
	}
	s->nodes[id] = n;
	return n;
}

static void outq_advance(struct outq *q, size_t n)
{
	q->off += n;
	while (q->fstart < q->off) {
		size_t fl = WEFT_WIRE_LEN_PREFIX + get_le32(q->buf + q->fstart);

		if (q->fstart + fl > q->off)
			break;
		q->fstart += fl;
	}
	if (q->off == q->len)
		q->fstart = q->off = q->len = 0;
}

static int outq_append(struct outq *q, const void *frame, size_t len)
{
	size_t need = WEFT_WIRE_LEN_PREFIX + len;

	if (OUTQ_SIZE - q->len < need && q->fstart) {
		memmove(q->buf, q->buf + q->fstart, q->len - q->fstart);
		q->off -= q->fstart;
		q->len -= q->fstart;
		q->fstart = 0;
	}
	if (OUTQ_SIZE - q->len < need)
		return -EAGAIN;
	put_le32(q->buf + q->len, (uint32_t)len);
	memcpy(q->buf + q->len + WEFT_WIRE_LEN_PREFIX, frame, len);
	q->len += need;
	return 0;
}

static int deliver(void *opaque, uint16_t dst, const void *frame, size_t len)
{
	struct sw *s = opaque;
	struct node *n = s->nodes[dst];

	if (!n || !n->c)
		return -EAGAIN;
	return outq_append(&n->q, frame, len);
}

static void client_close(struct sw *s, struct client *c, const char *why)
{
	struct client **pp;

	if (c->registered) {
		struct node *n = s->nodes[c->node];

		weft_fabric_detach(s->fab, c->node);
		n->c = NULL;
		/* Resend a partly written frame whole to the next connection. */
		n->q.off = n->q.fstart;
		if (n->q.off == n->q.len)
			n->q.fstart = n->q.off = n->q.len = 0;
		logmsg("node %u disconnected (%s)", c->node, why);
	} else if (s->verbose) {
		logmsg("unregistered client disconnected (%s)", why);
	}
	for (pp = &s->clients; *pp; pp = &(*pp)->next) {
		if (*pp == c) {
			*pp = c->next;
			break;
		}
	}
	s->nclients--;
	s->st.disconnects++;
	close(c->fd);
	free(c->rbuf);
	free(c);
}

static void send_ack(struct sw *s, struct client *c, uint16_t node, uint16_t status)
{
	struct weft_wire_hdr h = wire_hdr(WEFT_PKT_HELLO_ACK, 0, node, 0, 0);

	h.key = WEFT_WIRE_HELLO_MAGIC;
	h.status = status;
	put_le32(c->ack, WEFT_WIRE_HDR_SIZE);
	memcpy(c->ack + WEFT_WIRE_LEN_PREFIX, &h, sizeof(h));
	c->ack_off = 0;
	c->ack_len = sizeof(c->ack);
	pcap_record(s, &h, sizeof(h));
}

static void handle_hello(struct sw *s, struct client *c, const unsigned char *p, size_t len)
{
	struct weft_wire_hdr h;
	struct node *n;
	uint16_t status;

	memcpy(&h, p, sizeof(h));
	if (h.version != WEFT_WIRE_VERSION || h.key != WEFT_WIRE_HELLO_MAGIC ||
	    h.length != len - WEFT_WIRE_HDR_SIZE) {
		s->st.bad_hello++;
		logmsg("bad HELLO (version %u, key 0x%08x, length %u of %zu)",
		       h.version, h.key, h.length, len);
		send_ack(s, c, h.src_node, WEFT_SW_BAD_HELLO);
		return;
	}
	if (h.src_node > WEFT_NODE_MAX_UNICAST) {
		status = WEFT_SW_BAD_NODE;
	} else if (s->nodes[h.src_node] && s->nodes[h.src_node]->c) {
		status = WEFT_SW_NODE_IN_USE;
	} else {
		n = node_get(s, h.src_node);
		status = n && weft_fabric_attach(s->fab, h.src_node) == 0 ? WEFT_SW_OK
									   : WEFT_SW_BAD_NODE;
	}
	if (status != WEFT_SW_OK) {
		s->st.hello_rejected++;
		logmsg("HELLO for node %u rejected: %s", h.src_node,
		       status == WEFT_SW_NODE_IN_USE ? "node id in use by a live client"
						     : "node id out of the unicast range");
		send_ack(s, c, h.src_node, status);
		return;
	}
	c->registered = true;
	c->node = h.src_node;
	s->nodes[c->node]->c = c;
	send_ack(s, c, c->node, WEFT_SW_OK);
	logmsg("node %u connected", c->node);
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
			logmsg("length prefix %u beyond %u from %s%u: connection dropped", len,
			       WEFT_WIRE_MAX_FRAME, c->registered ? "node " : "unregistered client ",
			       c->registered ? c->node : 0);
			client_close(s, c, "oversize frame");
			return -1;
		}
		if (c->rlen - c->rpos < WEFT_WIRE_LEN_PREFIX + len)
			break;
		p += WEFT_WIRE_LEN_PREFIX;
		if (!c->registered) {
			/* One HELLO_ACK at a time: wait until the last is sent. */
			if (c->ack_off < c->ack_len) {
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
		client_close(s, c, c->rlen ? "closed inside a frame" : "closed");
		return -1;
	}
	return 0;
}

static void client_read(struct sw *s, struct client *c)
{
	ssize_t n;

	if (c->paused || c->eof)
		return;
	n = read(c->fd, c->rbuf + c->rlen, RBUF_SIZE - c->rlen);
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
	client_input(s, c);
}

/* Write pending output.  Returns -1 if the client was closed. */
static int client_flush(struct sw *s, struct client *c)
{
	struct outq *q;

	while (c->ack_off < c->ack_len) {
		ssize_t n = send(c->fd, c->ack + c->ack_off, c->ack_len - c->ack_off,
				 MSG_NOSIGNAL);

		if (n < 0) {
			if (errno == EAGAIN || errno == EINTR)
				return 0;
			client_close(s, c, strerror(errno));
			return -1;
		}
		c->ack_off += (size_t)n;
	}
	if (!c->registered)
		return 0;
	q = &s->nodes[c->node]->q;
	while (q->off < q->len) {
		ssize_t n = send(c->fd, q->buf + q->off, q->len - q->off, MSG_NOSIGNAL);

		if (n < 0) {
			if (errno == EAGAIN || errno == EINTR)
				return 0;
			client_close(s, c, strerror(errno));
			return -1;
		}
		outq_advance(q, (size_t)n);
	}
	return 0;
}

static size_t client_pending(struct sw *s, const struct client *c)
{
	size_t n = c->ack_len - c->ack_off;

	if (c->registered)
		n += s->nodes[c->node]->q.len - s->nodes[c->node]->q.off;
	return n;
}

static bool client_has_output(struct sw *s, const struct client *c)
{
	return client_pending(s, c) != 0;
}

/* Clients use one-shot level events, re-armed here after each event or
 * state change: input only while not paused, output while some is queued. */
static void client_arm(struct sw *s, struct client *c)
{
	uint32_t mask = EPOLLONESHOT;
	struct epoll_event e;

	if (!c->paused && !c->eof)
		mask |= EPOLLIN;
	if (client_has_output(s, c))
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

static void accept_clients(struct sw *s)
{
	for (;;) {
		int fd = accept4(s->lsn_fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
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
		if (c)
			c->rbuf = malloc(RBUF_SIZE);
		if (!c || !c->rbuf) {
			free(c);
			close(fd);
			logmsg("out of memory: connection refused");
			continue;
		}
		c->ev.kind = EV_CLIENT;
		c->fd = fd;
		c->next = s->clients;
		s->clients = c;
		s->nclients++;
		s->st.connections++;
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

/* ---- control commands ------------------------------------------------------- */

static bool parse_u64(const char *t, uint64_t max, uint64_t *out)
{
	char *end;
	unsigned long long v;

	if (!t || !*t || *t == '-')
		return false;
	errno = 0;
	v = strtoull(t, &end, 0);
	if (errno || *end || v > max)
		return false;
	*out = v;
	return true;
}

static bool parse_node(const char *t, uint16_t *node)
{
	uint64_t v;

	if (!parse_u64(t, WEFT_NODE_MAX_UNICAST, &v))
		return false;
	*node = (uint16_t)v;
	return true;
}

static void stats_text(struct sbuf *b, const struct weft_fabric_port_stats *st)
{
	unsigned int d;

	sb_printf(b, " rx_frames=%" PRIu64 " rx_bytes=%" PRIu64 " tx_frames=%" PRIu64
		  " tx_bytes=%" PRIu64 " replayed=%" PRIu64, st->rx_frames, st->rx_bytes,
		  st->tx_frames, st->tx_bytes, st->replayed);
	for (d = 0; d < WEFT_FABRIC_DROP__COUNT; d++)
		sb_printf(b, " drop_%s=%" PRIu64, weft_fabric_drop_name(d), st->drops[d]);
}

static void stats_json(struct sbuf *b, const struct weft_fabric_port_stats *st)
{
	unsigned int d;

	sb_printf(b, "\"rx_frames\":%" PRIu64 ",\"rx_bytes\":%" PRIu64 ",\"tx_frames\":%" PRIu64
		  ",\"tx_bytes\":%" PRIu64 ",\"replayed\":%" PRIu64 ",\"drops\":{",
		  st->rx_frames, st->rx_bytes, st->tx_frames, st->tx_bytes, st->replayed);
	for (d = 0; d < WEFT_FABRIC_DROP__COUNT; d++)
		sb_printf(b, "%s\"%s\":%" PRIu64, d ? "," : "", weft_fabric_drop_name(d),
			  st->drops[d]);
	sb_printf(b, "}");
}

#define SW_STATS_LIST(X) \
	X(connections) X(disconnects) X(bad_hello) X(hello_rejected) \
	X(unregistered) X(oversize) X(too_many_clients)

static void cmd_counters(struct sw *s, struct sbuf *b, bool json, int has_node, uint16_t only)
{
	uint16_t *ids;
	size_t n, i;
	bool first = true;

	n = weft_fabric_ports(s->fab, NULL, 0);
	ids = calloc(n ? n : 1, sizeof(*ids));
	if (!ids) {
		b->oom = true;
		return;
	}
	weft_fabric_ports(s->fab, ids, n);
	if (json)
		sb_printf(b, "{\"seed\":%" PRIu64 ",\"queued\":%zu,\"parked\":%zu,\"capture_mark\":%"
			  PRIu64 ",\"ports\":[", s->seed, weft_fabric_queued(s->fab),
			  weft_fabric_parked(s->fab), weft_fabric_capture_mark(s->fab));
	for (i = 0; i < n; i++) {
		const struct weft_fabric_port_stats *st = weft_fabric_port_stats(s->fab, ids[i]);
		bool att = weft_fabric_port_attached(s->fab, ids[i]);
		bool up = weft_fabric_port_is_up(s->fab, ids[i]);
		size_t held = weft_fabric_port_held(s->fab, ids[i]);

		if (has_node && ids[i] != only)
			continue;
		if (json) {
			sb_printf(b, "%s{\"node\":%u,\"attached\":%s,\"up\":%s,\"held\":%zu,",
				  first ? "" : ",", ids[i], att ? "true" : "false",
				  up ? "true" : "false", held);
			stats_json(b, st);
			sb_printf(b, "}");
		} else {
			sb_printf(b, "port %u %s %s held=%zu", ids[i],
				  att ? "attached" : "detached", up ? "up" : "down", held);
			stats_text(b, st);
			sb_printf(b, "\n");
		}
		first = false;
	}
	free(ids);
	if (has_node && first) {
		b->len = 0;
		sb_printf(b, "ERR node %u has no port (it never connected)\n", only);
		return;
	}
	if (json) {
		sb_printf(b, "],\"total\":{");
		stats_json(b, weft_fabric_total_stats(s->fab));
		sb_printf(b, "},\"switch\":{");
#define SW_JSON(n) sb_printf(b, "\"" #n "\":%" PRIu64 ",", s->st.n);
		SW_STATS_LIST(SW_JSON)
#undef SW_JSON
		sb_printf(b, "\"clients\":%zu}}\n", s->nclients);
	} else if (!has_node) {
		sb_printf(b, "total");
		stats_text(b, weft_fabric_total_stats(s->fab));
		sb_printf(b, "\nswitch");
#define SW_TEXT(n) sb_printf(b, " " #n "=%" PRIu64, s->st.n);
		SW_STATS_LIST(SW_TEXT)
#undef SW_TEXT
		sb_printf(b, " clients=%zu queued=%zu parked=%zu capture_mark=%" PRIu64 "\n",
			  s->nclients, weft_fabric_queued(s->fab), weft_fabric_parked(s->fab),
			  weft_fabric_capture_mark(s->fab));
	}
}

static void faults_out(struct sw *s, struct sbuf *b, bool json)
{
	struct weft_fabric_faults ft;

	weft_fabric_get_faults(s->fab, &ft);
	if (json)
		sb_printf(b, "{\"seed\":%" PRIu64 ",\"drop_ppm\":%u,\"routes\":%u,\"delay_ns\":%"
			  PRIu64 ",\"jitter_ns\":%" PRIu64 ",\"skew_ns\":%" PRIu64 "}\n", s->seed,
			  ft.drop_ppm, ft.routes, ft.delay_ns, ft.jitter_ns, ft.route_skew_ns);
	else
		sb_printf(b, "seed=%" PRIu64 " drop_ppm=%u routes=%u delay_ns=%" PRIu64
			  " jitter_ns=%" PRIu64 " skew_ns=%" PRIu64 "\n", s->seed, ft.drop_ppm,
			  ft.routes, ft.delay_ns, ft.jitter_ns, ft.route_skew_ns);
}

/* Apply KEY=VALUE fault settings (all or nothing). */
static int set_faults(struct weft_fabric_faults *ft, size_t *hold, char **tok, int n,
		      char *err, size_t errlen)
{
	int i;

	for (i = 0; i < n; i++) {
		char *eq = strchr(tok[i], '=');
		const char *k = tok[i], *v;
		uint64_t x;

		if (!eq) {
			snprintf(err, errlen, "set: expected KEY=VALUE, got '%s'", tok[i]);
			return -1;
		}
		*eq = 0;
		v = eq + 1;
		if (!strcmp(k, "drop")) {
			char *end;
			double p = strtod(v, &end);

			if (!*v || *end || !(p >= 0.0 && p <= 1.0)) {
				snprintf(err, errlen, "set: drop must be a probability 0..1, got '%s'", v);
				return -1;
			}
			ft->drop_ppm = (uint32_t)(p * 1000000.0 + 0.5);
			continue;
		}
		if (!parse_u64(v, UINT64_MAX / 4, &x)) {
			snprintf(err, errlen, "set: %s needs a non-negative integer, got '%s'", k, v);
			return -1;
		}
		if (!strcmp(k, "drop_ppm") && x <= 1000000) {
			ft->drop_ppm = (uint32_t)x;
		} else if (!strcmp(k, "routes") && x >= 1 && x <= 64) {
			ft->routes = (uint32_t)x;
		} else if (!strcmp(k, "delay_ns")) {
			ft->delay_ns = x;
		} else if (!strcmp(k, "jitter_ns")) {
			ft->jitter_ns = x;
		} else if (!strcmp(k, "skew_ns")) {
			ft->route_skew_ns = x;
		} else if (!strcmp(k, "hold")) {
			*hold = (size_t)x;
		} else if (!strcmp(k, "drop_ppm") || !strcmp(k, "routes")) {
			snprintf(err, errlen, "set: %s=%s out of range (%s)", k, v,
				 k[0] == 'r' ? "1..64" : "0..1000000");
			return -1;
		} else {
			snprintf(err, errlen, "set: unknown key '%s' (drop, drop_ppm, routes, "
				 "delay_ns, jitter_ns, skew_ns, hold)", k);
			return -1;
		}
	}
	return 0;
}

/* {"capture":"PATH"|null,"frames":N}; PATH is printed as given, with
 * quotes and backslashes escaped. */
static void capture_json(struct sbuf *b, const struct sw *s)
{
	const char *p;

	sb_printf(b, "OK\n{\"capture\":");
	if (!s->pcap) {
		sb_printf(b, "null");
	} else {
		sb_printf(b, "\"");
		for (p = s->pcap_path; *p; p++) {
			if (*p == '"' || *p == '\\')
				sb_printf(b, "\\%c", *p);
			else if ((unsigned char)*p < 0x20)
				sb_printf(b, "\\u%04x", (unsigned char)*p);
			else
				sb_printf(b, "%c", *p);
		}
		sb_printf(b, "\"");
	}
	sb_printf(b, ",\"frames\":%" PRIu64 "}\n", s->pcap_frames);
}

static const char ctl_help[] =
	"commands:\n"
	"  help                         this list\n"
	"  faults                       show the fault settings\n"
	"  set KEY=VALUE...             drop=P drop_ppm=N routes=R delay_ns=N\n"
	"                               jitter_ns=N skew_ns=N hold=FRAMES\n"
	"  clear                        remove all faults (routes=1, no drop/delay)\n"
	"  port NODE up|down            take a node's port down or bring it up\n"
	"  nodes                        ports: attached, up, held frames\n"
	"  mcast join|leave GROUP NODE  multicast membership (GROUP 0..255)\n"
	"  mcast list [GROUP]           members of the groups\n"
	"  counters [NODE]              per-port frames, bytes, drops by reason\n"
	"  mark                         capture mark (frames captured so far)\n"
	"  replay [N] [before=MARK]     re-inject N (default 1) captured frames\n"
	"  capture start FILE | stop    pcap capture of all frames\n"
	"  capture status               current capture\n"
	"option --json: JSON output (every command but help)\n";

static void ctl_exec(struct sw *s, char *line, struct sbuf *b)
{
	char *tok[32], *save = NULL, *t;
	char err[512] = "";
	int n = 0, i;
	bool json = false;

	for (t = strtok_r(line, " \t\r\n", &save); t; t = strtok_r(NULL, " \t\r\n", &save)) {
		if (!strcmp(t, "--json")) {
			json = true;
			continue;
		}
		if (n == 32) {
			sb_printf(b, "ERR too many arguments\n");
			return;
		}
		tok[n++] = t;
	}
	if (n == 0) {
		sb_printf(b, "ERR empty command (try 'help')\n");
		return;
	}
#define FAIL(...) do { snprintf(err, sizeof(err), __VA_ARGS__); goto fail; } while (0)
	if (!strcmp(tok[0], "help")) {
		sb_printf(b, "OK\n%s", ctl_help);
	} else if (!strcmp(tok[0], "faults")) {
		if (n != 1)
			FAIL("faults takes no arguments");
		sb_printf(b, "OK\n");
		faults_out(s, b, json);
	} else if (!strcmp(tok[0], "set")) {
		struct weft_fabric_faults ft;
		size_t hold = SIZE_MAX;

		if (n < 2)
			FAIL("set: expected KEY=VALUE... (see 'help')");
		weft_fabric_get_faults(s->fab, &ft);
		if (set_faults(&ft, &hold, tok + 1, n - 1, err, sizeof(err)))
			goto fail;
		weft_fabric_set_faults(s->fab, &ft);
		if (hold != SIZE_MAX)
			weft_fabric_set_hold_limit(s->fab, hold);
		sb_printf(b, "OK\n");
		faults_out(s, b, json);
	} else if (!strcmp(tok[0], "clear")) {
		struct weft_fabric_faults ft = { .routes = 1 };

		if (n != 1)
			FAIL("clear takes no arguments");
		weft_fabric_set_faults(s->fab, &ft);
		sb_printf(b, "OK\n");
		faults_out(s, b, json);
	} else if (!strcmp(tok[0], "port")) {
		uint16_t node;
		bool up;

		if (n != 3 || (strcmp(tok[2], "up") && strcmp(tok[2], "down")))
			FAIL("port: expected 'port NODE up|down'");
		if (!parse_node(tok[1], &node))
			FAIL("port: node '%s' is not a unicast node id (0..%u)", tok[1],
			     WEFT_NODE_MAX_UNICAST);
		up = !strcmp(tok[2], "up");
		if (weft_fabric_set_port_up(s->fab, node, up))
			FAIL("port: cannot set node %u %s", node, tok[2]);
		logmsg("port %u %s", node, up ? "up" : "down");
		if (json)
			sb_printf(b, "OK\n{\"node\":%u,\"up\":%s}\n", node, up ? "true" : "false");
		else
			sb_printf(b, "OK\nport %u %s\n", node, tok[2]);
	} else if (!strcmp(tok[0], "nodes")) {
		uint16_t *ids;
		size_t np, k;

		np = weft_fabric_ports(s->fab, NULL, 0);
		ids = calloc(np ? np : 1, sizeof(*ids));
		if (!ids)
			FAIL("out of memory");
		weft_fabric_ports(s->fab, ids, np);
		sb_printf(b, json ? "OK\n[" : "OK\n");
		for (k = 0; k < np; k++) {
			bool att = weft_fabric_port_attached(s->fab, ids[k]);
			bool up = weft_fabric_port_is_up(s->fab, ids[k]);
			size_t held = weft_fabric_port_held(s->fab, ids[k]);

			if (json)
				sb_printf(b, "%s{\"node\":%u,\"attached\":%s,\"up\":%s,\"held\":%zu}",
					  k ? "," : "", ids[k], att ? "true" : "false",
					  up ? "true" : "false", held);
			else
				sb_printf(b, "node %u %s %s held=%zu\n", ids[k],
					  att ? "attached" : "detached", up ? "up" : "down", held);
		}
		if (json)
			sb_printf(b, "]\n");
		free(ids);
	} else if (!strcmp(tok[0], "mcast")) {
		uint64_t g;
		uint16_t node;
		int r;

		if (n >= 2 && !strcmp(tok[1], "list")) {
			unsigned int lo = 0, hi = WEFT_NR_MCAST_GROUPS, k;
			bool first = true;

			if (n > 3)
				FAIL("mcast list: expected 'mcast list [GROUP]'");
			if (n == 3) {
				if (!parse_u64(tok[2], WEFT_NR_MCAST_GROUPS - 1, &g))
					FAIL("mcast: group '%s' out of range 0..%u", tok[2],
					     WEFT_NR_MCAST_GROUPS - 1);
				lo = (unsigned int)g;
				hi = lo + 1;
			}
			sb_printf(b, json ? "OK\n{" : "OK\n");
			for (k = lo; k < hi; k++) {
				uint16_t mem[256];
				size_t nm = weft_fabric_mcast_members(s->fab, k, mem, 256), j;

				if (!nm && n != 3)
					continue;
				if (json)
					sb_printf(b, "%s\"%u\":[", first ? "" : ",", k);
				else
					sb_printf(b, "group %u:", k);
				for (j = 0; j < nm && j < 256; j++)
					sb_printf(b, "%s%u", json ? (j ? "," : "") : " ", mem[j]);
				sb_printf(b, "%s", json ? "]" : "\n");
				first = false;
			}
			if (json)
				sb_printf(b, "}\n");
			goto done;
		}
		if (n != 4 || (strcmp(tok[1], "join") && strcmp(tok[1], "leave")))
			FAIL("mcast: expected 'mcast join|leave GROUP NODE' or 'mcast list [GROUP]'");
		if (!parse_u64(tok[2], WEFT_NR_MCAST_GROUPS - 1, &g))
			FAIL("mcast: group '%s' out of range 0..%u", tok[2], WEFT_NR_MCAST_GROUPS - 1);
		if (!parse_node(tok[3], &node))
			FAIL("mcast: node '%s' is not a unicast node id (0..%u)", tok[3],
			     WEFT_NODE_MAX_UNICAST);
		if (!strcmp(tok[1], "join"))
			r = weft_fabric_mcast_join(s->fab, (unsigned int)g, node);
		else
			r = weft_fabric_mcast_leave(s->fab, (unsigned int)g, node);
		if (r == -EEXIST)
			FAIL("mcast: node %u is already in group %" PRIu64, node, g);
		if (r == -ENOENT)
			FAIL("mcast: node %u is not in group %" PRIu64, node, g);
		if (r)
			FAIL("mcast: %s", strerror(-r));
		if (json)
			sb_printf(b, "OK\n{\"op\":\"%s\",\"group\":%" PRIu64 ",\"address\":%u,"
				  "\"node\":%u}\n", tok[1], g,
				  (unsigned int)(WEFT_NODE_MCAST_BASE + g), node);
		else
			sb_printf(b, "OK\nmcast %s group %" PRIu64 " (address 0x%x) node %u\n",
				  tok[1], g, (unsigned int)(WEFT_NODE_MCAST_BASE + g), node);
	} else if (!strcmp(tok[0], "counters")) {
		uint16_t node = 0;

		if (n > 2)
			FAIL("counters: expected 'counters [NODE]'");
		if (n == 2 && !parse_node(tok[1], &node))
			FAIL("counters: node '%s' is not a unicast node id (0..%u)", tok[1],
			     WEFT_NODE_MAX_UNICAST);
		sb_printf(b, "OK\n");
		cmd_counters(s, b, json, n == 2, node);
	} else if (!strcmp(tok[0], "mark")) {
		if (n != 1)
			FAIL("mark takes no arguments");
		sb_printf(b, json ? "OK\n{\"mark\":%" PRIu64 "}\n" : "OK\n%" PRIu64 "\n",
			  weft_fabric_capture_mark(s->fab));
	} else if (!strcmp(tok[0], "replay")) {
		uint64_t cnt = 1, before = 0;
		size_t done;

		for (i = 1; i < n; i++) {
			if (!strncmp(tok[i], "before=", 7)) {
				if (!parse_u64(tok[i] + 7, UINT64_MAX, &before))
					FAIL("replay: bad mark '%s'", tok[i] + 7);
			} else if (!parse_u64(tok[i], 1000000, &cnt)) {
				FAIL("replay: expected 'replay [N] [before=MARK]', N 0..1000000, got '%s'",
				     tok[i]);
			}
		}
		done = weft_fabric_replay(s->fab, before, (size_t)cnt, mono_ns());
		logmsg("replayed %zu captured frame(s)", done);
		sb_printf(b, json ? "OK\n{\"replayed\":%zu}\n" : "OK\nreplayed %zu\n", done);
	} else if (!strcmp(tok[0], "capture")) {
		if (n == 3 && !strcmp(tok[1], "start")) {
			if (pcap_start(s, tok[2], err, sizeof(err)))
				goto fail;
			logmsg("capture to %s started", tok[2]);
			if (json)
				capture_json(b, s);
			else
				sb_printf(b, "OK\ncapture to %s\n", tok[2]);
		} else if (n == 2 && !strcmp(tok[1], "stop")) {
			uint64_t frames = s->pcap_frames;

			if (!s->pcap)
				FAIL("capture: no capture is running");
			logmsg("capture to %s stopped, %" PRIu64 " frames", s->pcap_path, frames);
			pcap_stop(s);
			if (json)
				sb_printf(b, "OK\n{\"capture\":null,\"frames\":%" PRIu64 "}\n", frames);
			else
				sb_printf(b, "OK\ncaptured %" PRIu64 " frames\n", frames);
		} else if (n == 2 && !strcmp(tok[1], "status")) {
			if (json)
				capture_json(b, s);
			else if (s->pcap)
				sb_printf(b, "OK\ncapturing to %s, %" PRIu64 " frames\n", s->pcap_path,
					  s->pcap_frames);
			else
				sb_printf(b, "OK\nnot capturing\n");
		} else {
			FAIL("capture: expected 'capture start FILE', 'capture stop' or "
			     "'capture status'");
		}
	} else {
		FAIL("unknown command '%s' (try 'help')", tok[0]);
	}
done:
	if (b->oom) {
		b->len = 0;
		b->oom = false;
		sb_printf(b, "ERR out of memory\n");
	}
	return;
fail:
	b->len = 0;
	sb_printf(b, "ERR %s\n", err);
#undef FAIL
}

static void ctl_close(struct sw *s, struct ctlconn *k)
{
	struct ctlconn **pp;

	for (pp = &s->ctls; *pp; pp = &(*pp)->next) {
		if (*pp == k) {
			*pp = k->next;
			break;
		}
	}
	s->nctls--;
	close(k->fd);
	free(k);
}

static void ctl_input(struct sw *s, struct ctlconn *k)
{
	ssize_t n = read(k->fd, k->req + k->len, CTL_MAX_REQ - k->len);
	struct sbuf b = { 0 };
	struct timeval tv = { 2, 0 };
	size_t off = 0;
	char *nl;

	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return;
	if (n > 0)
		k->len += (size_t)n;
	k->req[k->len] = 0;
	nl = memchr(k->req, '\n', k->len);
	if (!nl && n > 0 && k->len < CTL_MAX_REQ)
		return;
	if (n < 0 || (!nl && k->len == 0)) {
		ctl_close(s, k);
		return;
	}
	if (nl)
		*nl = 0;
	if (!nl && k->len == CTL_MAX_REQ)
		sb_printf(&b, "ERR request longer than %u bytes\n", CTL_MAX_REQ);
	else
		ctl_exec(s, k->req, &b);
	/* Replies are small: send them with a bounded blocking write. */
	fcntl(k->fd, F_SETFL, fcntl(k->fd, F_GETFL) & ~O_NONBLOCK);
	setsockopt(k->fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	while (!b.oom && off < b.len) {
		ssize_t w = send(k->fd, b.s + off, b.len - off, MSG_NOSIGNAL);

		if (w <= 0)
			break;
		off += (size_t)w;
	}
	free(b.s);
	ctl_close(s, k);
}

static void accept_ctl(struct sw *s)
{
	for (;;) {
		int fd = accept4(s->ctl_fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		struct ctlconn *k;

		if (fd < 0)
			return;
		if (s->nctls >= MAX_CTL_CONNS) {
			logmsg("too many control connections (%u): connection refused",
			       MAX_CTL_CONNS);
			close(fd);
			continue;
		}
		k = calloc(1, sizeof(*k));
		if (!k) {
			close(fd);
			continue;
		}
		s->nctls++;
		k->ev.kind = EV_CTL;
		k->fd = fd;
		k->next = s->ctls;
		s->ctls = k;
		ep_add(s, fd, EPOLLIN | EPOLLRDHUP, k);
	}
}

/* ---- main loop ------------------------------------------------------------- */

static void handle_event(struct sw *s, struct epoll_event *e)
{
	struct evsrc *src = e->data.ptr;

	switch (src->kind) {
	case EV_LISTEN:
		accept_clients(s);
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
		/* Handling an event closes at most its own client, which
		 * has no other event in this batch. */
		for (i = 0; i < n && !s->quit; i++)
			handle_event(s, &evs[i]);
	}
	return 0;
}

static void sw_free(struct sw *s)
{
	size_t i;

	while (s->clients)
		client_close(s, s->clients, "switch exiting");
	while (s->ctls)
		ctl_close(s, s->ctls);
	if (s->nodes) {
		for (i = 0; i <= WEFT_NODE_MAX_UNICAST; i++) {
			if (s->nodes[i]) {
				free(s->nodes[i]->q.buf);
				free(s->nodes[i]);
			}
		}
		free(s->nodes);
	}
	pcap_stop(s);
	weft_fabric_free(s->fab);
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
		"usage: " PROG " --socket PATH --ctl PATH [options]\n"
		"       " PROG " ctl --socket CTLPATH [--json] COMMAND [ARGS...]\n"
		"\n"
		"The Weft fabric switch: adapters connect to --socket, scripts and\n"
		"people control it through --ctl.  See docs/switch.md.\n"
		"\n"
		"options:\n"
		"  --socket PATH      UNIX socket the adapters connect to (required)\n"
		"  --ctl PATH         control socket (required)\n"
		"  --seed N           seed of the fault injection (default 1)\n"
		"  --capture FILE     pcap capture of all frames from the start\n"
		"  --capture-ring N   frames remembered for replay (default %u)\n"
		"  --max-queued N     frames the fabric holds at most (default %u)\n"
		"  --hold N           frames held for absent nodes (default max-queued/2)\n"
		"  --port-queue N     frames queued for one node before its senders are\n"
		"                     held back (default max-queued/4)\n"
		"  --drop P           drop probability 0..1 (default 0)\n"
		"  --routes R         routes per node pair 1..64 (default 1)\n"
		"  --delay-ns N       base delay; --jitter-ns N; --skew-ns N (per route)\n"
		"  --verbose          log more (frames before HELLO, unregistered clients)\n"
		"  -h, --help         this help\n"
		"\n%s", DEF_CAPTURE, DEF_MAX_QUEUED, ctl_help);
}

static int ctl_main(int argc, char **argv)
{
	const char *path = NULL;
	struct sockaddr_un a;
	char req[CTL_MAX_REQ + 2];
	size_t len = 0;
	bool json = false;
	char *reply = NULL;
	size_t rlen = 0, rcap = 0;
	int i, fd;

	for (i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--socket") && i + 1 < argc) {
			path = argv[++i];
		} else if (!strncmp(argv[i], "--socket=", 9)) {
			path = argv[i] + 9;
		} else if (!strcmp(argv[i], "--json")) {
			json = true;
		} else if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
			usage(stdout);
			return 0;
		} else {
			break;
		}
	}
	if (!path) {
		fprintf(stderr, PROG " ctl: error: --socket CTLPATH is required\n");
		return 2;
	}
	if (i == argc) {
		fprintf(stderr, PROG " ctl: error: no command given (try 'help')\n");
		return 2;
	}
	if (json)
		len += (size_t)snprintf(req, sizeof(req), "--json");
	for (; i < argc; i++) {
		char abs[PATH_MAX + 1];
		const char *arg = argv[i];

		/* capture start FILE: the switch may run in another folder. */
		if (i >= 2 && !strcmp(argv[i - 2], "capture") && !strcmp(argv[i - 1], "start") &&
		    arg[0] != '/') {
			char cwd[PATH_MAX];

			if (!getcwd(cwd, sizeof(cwd)) ||
			    snprintf(abs, sizeof(abs), "%s/%s", cwd, arg) >= (int)sizeof(abs)) {
				fprintf(stderr, PROG " ctl: error: capture path too long\n");
				return 2;
			}
			arg = abs;
		}
		if (strpbrk(arg, " \t\r\n") || len + strlen(arg) + 2 > CTL_MAX_REQ) {
			fprintf(stderr, PROG " ctl: error: argument '%s' has blanks or is too long\n",
				arg);
			return 2;
		}
		len += (size_t)snprintf(req + len, sizeof(req) - len, "%s%s", len ? " " : "", arg);
	}
	req[len++] = '\n';
	if (fill_addr(&a, path)) {
		fprintf(stderr, PROG " ctl: error: socket path %s is too long\n", path);
		return 2;
	}
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0 || connect(fd, (struct sockaddr *)&a, sizeof(a)) != 0) {
		fprintf(stderr, PROG " ctl: error: cannot connect to control socket %s: %s%s\n",
			path, strerror(errno),
			errno == ENOENT || errno == ECONNREFUSED ? " (is weft-switch running?)" : "");
		if (fd >= 0)
			close(fd);
		return 2;
	}
	if (send(fd, req, len, MSG_NOSIGNAL) != (ssize_t)len) {
		fprintf(stderr, PROG " ctl: error: sending to %s: %s\n", path, strerror(errno));
		close(fd);
		return 2;
	}
	shutdown(fd, SHUT_WR);
	for (;;) {
		ssize_t n;

		if (rcap - rlen < 4096) {
			char *nr = realloc(reply, rcap + 65536);

			if (!nr) {
				fprintf(stderr, PROG " ctl: error: out of memory\n");
				free(reply);
				close(fd);
				return 2;
			}
			reply = nr;
			rcap += 65536;
		}
		n = read(fd, reply + rlen, rcap - rlen - 1);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		rlen += (size_t)n;
	}
	close(fd);
	if (!reply || rlen == 0) {
		fprintf(stderr, PROG " ctl: error: no reply from %s\n", path);
		free(reply);
		return 2;
	}
	reply[rlen] = 0;
	if (!strncmp(reply, "OK\n", 3)) {
		fputs(reply + 3, stdout);
		free(reply);
		return 0;
	}
	if (!strncmp(reply, "ERR ", 4))
		fprintf(stderr, PROG " ctl: error: %s", reply + 4);
	else
		fprintf(stderr, PROG " ctl: error: malformed reply: %s\n", reply);
	free(reply);
	return 1;
}

static bool opt_u64(const char *name, const char *v, uint64_t max, uint64_t *out)
{
	if (parse_u64(v, max, out))
		return true;
	logmsg("error: %s needs an integer 0..%" PRIu64 ", got '%s'", name, max, v);
	return false;
}

int main(int argc, char **argv)
{
	enum { O_SOCKET = 256, O_CTL, O_SEED, O_CAPTURE, O_RING, O_MAXQ, O_HOLD, O_DROP,
	       O_ROUTES, O_DELAY, O_JITTER, O_SKEW, O_VERBOSE, O_PORTQ };
	static const struct option opts[] = {
		{ "socket", required_argument, NULL, O_SOCKET },
		{ "ctl", required_argument, NULL, O_CTL },
		{ "seed", required_argument, NULL, O_SEED },
		{ "capture", required_argument, NULL, O_CAPTURE },
		{ "capture-ring", required_argument, NULL, O_RING },
		{ "max-queued", required_argument, NULL, O_MAXQ },
		{ "hold", required_argument, NULL, O_HOLD },
		{ "port-queue", required_argument, NULL, O_PORTQ },
		{ "drop", required_argument, NULL, O_DROP },
		{ "routes", required_argument, NULL, O_ROUTES },
		{ "delay-ns", required_argument, NULL, O_DELAY },
		{ "jitter-ns", required_argument, NULL, O_JITTER },
		{ "skew-ns", required_argument, NULL, O_SKEW },
		{ "verbose", no_argument, NULL, O_VERBOSE },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct weft_fabric_faults ft = { .routes = 1 };
	struct sw s;
	const char *capture = NULL;
	uint64_t ring = DEF_CAPTURE, maxq = DEF_MAX_QUEUED, hold = UINT64_MAX, v = 1;
	uint64_t portq = UINT64_MAX;
	sigset_t mask;
	char err[512];
	int o, rc;

	if (argc > 1 && !strcmp(argv[1], "ctl"))
		return ctl_main(argc - 1, argv + 1);

	memset(&s, 0, sizeof(s));
	s.seed = 1;
	s.ep = s.lsn_fd = s.ctl_fd = s.tmr_fd = s.sig_fd = -1;
	while ((o = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (o) {
		case O_SOCKET: s.sock_path = optarg; break;
		case O_CTL: s.ctl_path = optarg; break;
		case O_SEED:
			if (!opt_u64("--seed", optarg, UINT64_MAX, &s.seed))
				return 2;
			break;
		case O_CAPTURE: capture = optarg; break;
		case O_RING:
			if (!opt_u64("--capture-ring", optarg, 1u << 20, &ring))
				return 2;
			break;
		case O_MAXQ:
			if (!opt_u64("--max-queued", optarg, 1u << 22, &maxq) || maxq == 0) {
				if (maxq == 0)
					logmsg("error: --max-queued must be at least 1");
				return 2;
			}
			break;
		case O_HOLD:
			if (!opt_u64("--hold", optarg, 1u << 22, &hold))
				return 2;
			break;
		case O_PORTQ:
			if (!opt_u64("--port-queue", optarg, 1u << 22, &portq) || portq == 0) {
				if (portq == 0)
					logmsg("error: --port-queue must be at least 1");
				return 2;
			}
			break;
		case O_DROP: {
			char *end;
			double p = strtod(optarg, &end);

			if (!*optarg || *end || !(p >= 0.0 && p <= 1.0)) {
				logmsg("error: --drop needs a probability 0..1, got '%s'", optarg);
				return 2;
			}
			ft.drop_ppm = (uint32_t)(p * 1000000.0 + 0.5);
			break;
		}
		case O_ROUTES:
			if (!opt_u64("--routes", optarg, 64, &v) || v == 0) {
				if (v == 0)
					logmsg("error: --routes must be 1..64");
				return 2;
			}
			ft.routes = (uint32_t)v;
			break;
		case O_DELAY:
			if (!opt_u64("--delay-ns", optarg, UINT64_MAX / 4, &ft.delay_ns))
				return 2;
			break;
		case O_JITTER:
			if (!opt_u64("--jitter-ns", optarg, UINT64_MAX / 4, &ft.jitter_ns))
				return 2;
			break;
		case O_SKEW:
			if (!opt_u64("--skew-ns", optarg, UINT64_MAX / 4, &ft.route_skew_ns))
				return 2;
			break;
		case O_VERBOSE: s.verbose = true; break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind < argc) {
		logmsg("error: unexpected argument '%s' (see --help)", argv[optind]);
		return 2;
	}
	if (!s.sock_path || !s.ctl_path) {
		logmsg("error: --socket PATH and --ctl PATH are required (see --help)");
		return 2;
	}
	if (!strcmp(s.sock_path, s.ctl_path)) {
		logmsg("error: --socket and --ctl must be different paths");
		return 2;
	}

	rc = 1;
	s.fab = weft_fabric_new(s.seed, (size_t)maxq, (size_t)ring);
	s.nodes = calloc((size_t)WEFT_NODE_MAX_UNICAST + 1, sizeof(*s.nodes));
	if (!s.fab || !s.nodes) {
		logmsg("error: out of memory");
		goto out;
	}
	weft_fabric_set_faults(s.fab, &ft);
	if (hold != UINT64_MAX)
		weft_fabric_set_hold_limit(s.fab, (size_t)hold);
	weft_fabric_set_port_limit(s.fab, portq != UINT64_MAX ? (size_t)portq
							       : (size_t)(maxq / 4 ? maxq / 4 : 1));
	weft_fabric_set_tap(s.fab, tap, &s);
	if (capture && pcap_start(&s, capture, err, sizeof(err))) {
		logmsg("error: %s", err);
		goto out;
	}

	s.lsn_fd = listen_path("adapter", s.sock_path);
	if (s.lsn_fd < 0)
		goto out;
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
	ep_add(&s, s.lsn_fd, EPOLLIN, &s.lsn_ev);
	ep_add(&s, s.ctl_fd, EPOLLIN, &s.ctl_ev);
	ep_add(&s, s.tmr_fd, EPOLLIN, &s.tmr_ev);
	ep_add(&s, s.sig_fd, EPOLLIN, &s.sig_ev);
	logmsg("listening on %s, control %s, seed %" PRIu64 "%s%s", s.sock_path, s.ctl_path,
	       s.seed, capture ? ", capture " : "", capture ? capture : "");
	rc = run(&s);
out:
	sw_free(&s);
	return rc;
}
