/* SPDX-License-Identifier: MIT */
/*
 * weft-switch: TCP listeners (--listen HOST:PORT) for adapters on other
 * hosts, the options of their accepted connections, and how a client is
 * named in the log (SO_PEERCRED over UNIX, the peer address over TCP).
 * See docs/switch.md, "TCP listener".
 */
#define _GNU_SOURCE
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "sw.h"

/* A dead peer (host down, cable pulled) is noticed within about a
 * minute: keepalive probes after 30 s of silence, 3 probes 10 s apart;
 * unacknowledged output fails after 60 s. */
#define KEEP_IDLE_S     30
#define KEEP_INTVL_S    10
#define KEEP_CNT        3
#define USER_TIMEOUT_MS 60000

/* Split "HOST:PORT" or "[V6]:PORT" into host and port; false if malformed. */
static bool split_hostport(const char *spec, char *host, size_t hostlen, const char **port)
{
	const char *colon;
	size_t n;

	if (spec[0] == '[') {
		const char *end = strchr(spec, ']');

		if (!end || end[1] != ':')
			return false;
		n = (size_t)(end - spec - 1);
		if (n == 0 || n >= hostlen)
			return false;
		memcpy(host, spec + 1, n);
		host[n] = '\0';
		*port = end + 2;
	} else {
		colon = strrchr(spec, ':');
		if (!colon || strchr(spec, ':') != colon)
			return false;   /* a bare IPv6 address needs brackets */
		n = (size_t)(colon - spec);
		if (n == 0 || n >= hostlen)
			return false;
		memcpy(host, spec, n);
		host[n] = '\0';
		*port = colon + 1;
	}
	return **port != '\0' && strspn(*port, "0123456789") == strlen(*port) &&
	       strlen(*port) <= 5 && atoi(*port) <= 65535;
}

static void addr_text(const struct sockaddr *sa, socklen_t len, char *out, size_t outlen)
{
	char host[NI_MAXHOST], port[NI_MAXSERV];

	if (getnameinfo(sa, len, host, sizeof(host), port, sizeof(port),
			NI_NUMERICHOST | NI_NUMERICSERV) != 0) {
		snprintf(out, outlen, "(unknown address)");
		return;
	}
	if (sa->sa_family == AF_INET6)
		snprintf(out, outlen, "[%s]:%s", host, port);
	else
		snprintf(out, outlen, "%s:%s", host, port);
}

int listen_tcp(const char *spec, char *name, size_t namelen, char *err, size_t errlen)
{
	struct addrinfo hints = { .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM,
				  .ai_flags = AI_PASSIVE | AI_NUMERICSERV };
	struct sockaddr_storage ss;
	socklen_t sl = sizeof(ss);
	struct addrinfo *res;
	char host[256];
	const char *port;
	int fd, one = 1, r;

	if (!split_hostport(spec, host, sizeof(host), &port)) {
		snprintf(err, errlen, "--listen needs HOST:PORT or [IPV6]:PORT (PORT 0..65535), "
			 "got '%s'", spec);
		return -1;
	}
	r = getaddrinfo(host, port, &hints, &res);
	if (r != 0) {
		snprintf(err, errlen, "--listen %s: %s", spec, gai_strerror(r));
		return -1;
	}
	fd = socket(res->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		snprintf(err, errlen, "--listen %s: socket: %s", spec, strerror(errno));
		freeaddrinfo(res);
		return -1;
	}
	/* A restarted switch binds its port again at once (TIME_WAIT). */
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(fd, res->ai_addr, res->ai_addrlen) != 0 || listen(fd, 64) != 0 ||
	    getsockname(fd, (struct sockaddr *)&ss, &sl) != 0) {
		snprintf(err, errlen, "cannot listen on TCP %s: %s", spec, strerror(errno));
		close(fd);
		freeaddrinfo(res);
		return -1;
	}
	freeaddrinfo(res);
	/* The bound address: with PORT 0 the kernel chose the port. */
	addr_text((struct sockaddr *)&ss, sl, name, namelen);
	return fd;
}

void tcp_client_setup(int fd)
{
	int one = 1, idle = KEEP_IDLE_S, intvl = KEEP_INTVL_S, cnt = KEEP_CNT;
	unsigned int uto = USER_TIMEOUT_MS;

	/* Frames are small and latency matters: no Nagle delay. */
	if (setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one)) != 0 ||
	    setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof(one)) != 0 ||
	    setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &idle, sizeof(idle)) != 0 ||
	    setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &intvl, sizeof(intvl)) != 0 ||
	    setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &cnt, sizeof(cnt)) != 0 ||
	    setsockopt(fd, IPPROTO_TCP, TCP_USER_TIMEOUT, &uto, sizeof(uto)) != 0)
		logmsg("TCP socket options: %s", strerror(errno));
}

void peer_text(int fd, bool tcp, char *out, size_t outlen)
{
	if (tcp) {
		struct sockaddr_storage ss;
		socklen_t sl = sizeof(ss);
		char a[NI_MAXHOST + NI_MAXSERV + 4];

		snprintf(a, sizeof(a), "(unknown address)");
		if (getpeername(fd, (struct sockaddr *)&ss, &sl) == 0)
			addr_text((struct sockaddr *)&ss, sl, a, sizeof(a));
		snprintf(out, outlen, "tcp %s", a);
	} else {
		struct ucred cr = { 0, (uid_t)-1, (gid_t)-1 };
		socklen_t crl = sizeof(cr);

		if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &crl) != 0)
			cr.pid = 0;
		snprintf(out, outlen, "pid %d uid %u", (int)cr.pid, (unsigned int)cr.uid);
	}
}
