/* SPDX-License-Identifier: MIT */
/*
 * Small helpers for the switch's stream protocol (a little-endian 32-bit
 * length prefix, then a frame: struct weft_wire_hdr and its payload),
 * shared by weft-switch, weft-switch-bench and the switch tests.
 */
#ifndef WEFT_SWITCH_WIRE_IO_H
#define WEFT_SWITCH_WIRE_IO_H

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "weft/wire.h"

static inline uint32_t get_le32(const unsigned char *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
	       (uint32_t)p[3] << 24;
}

static inline void put_le32(unsigned char *p, uint32_t v)
{
	p[0] = (unsigned char)v;
	p[1] = (unsigned char)(v >> 8);
	p[2] = (unsigned char)(v >> 16);
	p[3] = (unsigned char)(v >> 24);
}

/* A header with every field zero but these. */
static inline struct weft_wire_hdr wire_hdr(uint8_t type, uint16_t src, uint16_t dst,
					    uint32_t tid, uint32_t paylen)
{
	struct weft_wire_hdr h;

	memset(&h, 0, sizeof(h));
	h.version = WEFT_WIRE_VERSION;
	h.type = type;
	h.src_node = src;
	h.dst_node = dst;
	h.tid = tid;
	h.length = paylen;
	return h;
}

/* Write all of p to a socket (no SIGPIPE); false on error or EOF. */
static inline bool write_all(int fd, const void *p, size_t len)
{
	const unsigned char *b = p;

	while (len) {
		ssize_t n = send(fd, b, len, MSG_NOSIGNAL);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return false;
		b += n;
		len -= (size_t)n;
	}
	return true;
}

/* A connected UNIX stream socket to path, or -1. */
static inline int connect_path(const char *path)
{
	struct sockaddr_un a;
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

	memset(&a, 0, sizeof(a));
	a.sun_family = AF_UNIX;
	snprintf(a.sun_path, sizeof(a.sun_path), "%s", path);
	if (fd >= 0 && connect(fd, (struct sockaddr *)&a, sizeof(a)) != 0) {
		close(fd);
		return -1;
	}
	return fd;
}

#endif
