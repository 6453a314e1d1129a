/* SPDX-License-Identifier: MIT */
/*
 * weft-relay: the trivial relay that weft-switch-bench measures the
 * switch against.  It speaks the same stream protocol as weft-switch
 * (include/weft/wire.h: HELLO, HELLO_ACK, length-prefixed frames) on a
 * UNIX socket and forwards every frame to the client whose node id is the
 * frame's dst_node, with the same read buffer size and the same
 * one-process event loop shape, but with nothing else: no fabric model,
 * no faults, no capture, no counters, no checks beyond what keeps it from
 * writing out of bounds.  It is a baseline, not a switch.
 *
 *   weft-relay --socket PATH [--clients N]
 *
 * Exits when every one of N (default 2) clients has connected and gone.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <stdlib.h>

#include "wire_io.h"

#define MAX_CLIENTS 16u
#define RBUF        (256u * 1024u)

struct client {
	int fd;
	uint16_t node;
	bool hello;
	size_t have;
	unsigned char buf[RBUF];
};

static struct client cl[MAX_CLIENTS];

static int fail(const char *what)
{
	fprintf(stderr, "weft-relay: %s: %s\n", what, strerror(errno));
	return 1;
}

static struct client *by_node(unsigned int n, uint16_t node)
{
	unsigned int i;

	for (i = 0; i < n; i++)
		if (cl[i].fd >= 0 && cl[i].hello && cl[i].node == node)
			return &cl[i];
	return NULL;
}

/*
 * Forwards the complete frames in c's buffer, each run of consecutive
 * frames for one destination in one write; false to drop the client.
 */
static bool forward(unsigned int n, struct client *c)
{
	size_t pos = 0, run = 0;
	struct client *to = NULL;

	while (c->have - pos >= WEFT_WIRE_LEN_PREFIX) {
		uint32_t len = get_le32(c->buf + pos);
		struct weft_wire_hdr h;
		struct client *d;

		if (len < WEFT_WIRE_HDR_SIZE || len > WEFT_WIRE_MAX_FRAME)
			return false;
		if (c->have - pos < WEFT_WIRE_LEN_PREFIX + len)
			break;
		memcpy(&h, c->buf + pos + WEFT_WIRE_LEN_PREFIX, sizeof(h));
		d = c->hello ? by_node(n, h.dst_node) : NULL;
		if (to && d != to) {
			write_all(to->fd, c->buf + run, pos - run);
			to = NULL;
		}
		if (!c->hello) {
			struct weft_wire_hdr a = wire_hdr(WEFT_PKT_HELLO_ACK, 0, h.src_node, 0, 0);
			unsigned char ack[WEFT_WIRE_LEN_PREFIX + WEFT_WIRE_HDR_SIZE];

			if (h.type != WEFT_PKT_HELLO)
				return false;
			c->hello = true;
			c->node = h.src_node;
			put_le32(ack, WEFT_WIRE_HDR_SIZE);
			memcpy(ack + WEFT_WIRE_LEN_PREFIX, &a, sizeof(a));
			if (!write_all(c->fd, ack, sizeof(ack)))
				return false;
		} else if (d && !to) {
			to = d;
			run = pos;
		}
		pos += WEFT_WIRE_LEN_PREFIX + len;
	}
	if (to)
		write_all(to->fd, c->buf + run, pos - run);
	memmove(c->buf, c->buf + pos, c->have - pos);
	c->have -= pos;
	return true;
}

int main(int argc, char **argv)
{
	const char *path = NULL;
	unsigned int want = 2, n = 0, gone = 0, i;
	struct pollfd pf[MAX_CLIENTS + 1];
	struct sockaddr_un a;
	int lfd;

	for (i = 1; i < (unsigned int)argc; i++) {
		if (!strcmp(argv[i], "--socket") && i + 1 < (unsigned int)argc)
			path = argv[++i];
		else if (!strcmp(argv[i], "--clients") && i + 1 < (unsigned int)argc)
			want = (unsigned int)strtoul(argv[++i], NULL, 0);
		else
			path = NULL, i = (unsigned int)argc;
	}
	if (!path || want == 0 || want > MAX_CLIENTS) {
		fprintf(stderr, "usage: weft-relay --socket PATH [--clients 1..%u]\n", MAX_CLIENTS);
		return 2;
	}
	lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	memset(&a, 0, sizeof(a));
	a.sun_family = AF_UNIX;
	snprintf(a.sun_path, sizeof(a.sun_path), "%s", path);
	unlink(path);
	if (lfd < 0 || bind(lfd, (struct sockaddr *)&a, sizeof(a)) || listen(lfd, 8))
		return fail(path);
	while (gone < want) {
		pf[0].fd = n < want ? lfd : -1;
		pf[0].events = POLLIN;
		for (i = 0; i < n; i++) {
			pf[i + 1].fd = cl[i].fd;
			pf[i + 1].events = POLLIN;
		}
		if (poll(pf, n + 1, -1) < 0) {
			if (errno == EINTR)
				continue;
			return fail("poll");
		}
		if (pf[0].revents & POLLIN) {
			cl[n].fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
			if (cl[n].fd < 0)
				return fail("accept");
			cl[n].hello = false;
			cl[n].have = 0;
			pf[n + 1].revents = 0;
			n++;
		}
		for (i = 0; i < n; i++) {
			struct client *c = &cl[i];
			ssize_t r;

			if (c->fd < 0 || !(pf[i + 1].revents & (POLLIN | POLLHUP | POLLERR)))
				continue;
			r = read(c->fd, c->buf + c->have, RBUF - c->have);
			if (r > 0) {
				c->have += (size_t)r;
				if (forward(n, c))
					continue;
			} else if (r < 0 && errno == EINTR) {
				continue;
			}
			close(c->fd);
			c->fd = -1;
			gone++;
		}
	}
	unlink(path);
	return 0;
}
