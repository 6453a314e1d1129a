/* SPDX-License-Identifier: MIT */
/*
 * weft-test-net: traffic helper for the IP-over-Weft cluster scenarios
 * (tests/cluster/run.py, docs/net.md).  The data is a pseudo-random
 * stream from a seed, so both ends can produce or check it.
 *
 *   weft-test-net gen BYTES SEED              the stream on stdout
 *   weft-test-net tcp-send ADDR PORT BYTES SEED  connect and send it
 *   weft-test-net tcp-recv PORT               accept one connection, copy to stdout
 *   weft-test-net udp-bcast ADDR PORT SIZE SEED  one broadcast datagram
 *   weft-test-net udp-recv PORT SIZE SEED SECONDS  wait for one datagram, check it
 *
 * Exit status 0 on success; errors are printed on stderr.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

static void fill(uint8_t *buf, size_t len, uint64_t *state)
{
	size_t i;

	for (i = 0; i < len; i++) {
		if (!(i & 7)) {
			*state ^= *state << 13;
			*state ^= *state >> 7;
			*state ^= *state << 17;
		}
		buf[i] = (uint8_t)(*state >> (8 * (i & 7)));
	}
}

static uint64_t seed_state(const char *s)
{
	return strtoull(s, NULL, 0) * 0x9e3779b97f4a7c15ull | 1;
}

static int write_all(int fd, const uint8_t *p, size_t n)
{
	while (n) {
		ssize_t w = write(fd, p, n);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return -1;
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

/* The stream, in 64 KiB blocks; the state carries over between blocks. */
static int stream(int fd, unsigned long long bytes, const char *seed)
{
	static uint8_t buf[65536];
	uint64_t st = seed_state(seed);

	while (bytes) {
		size_t n = bytes < sizeof(buf) ? bytes : sizeof(buf);

		fill(buf, sizeof(buf), &st);
		if (write_all(fd, buf, n)) {
			perror("weft-test-net: write");
			return 1;
		}
		bytes -= n;
	}
	return 0;
}

static int addr_of(const char *a, int port, struct sockaddr_in *sa)
{
	memset(sa, 0, sizeof(*sa));
	sa->sin_family = AF_INET;
	sa->sin_port = htons(port);
	if (!a)
		return 0;
	if (inet_pton(AF_INET, a, &sa->sin_addr) != 1) {
		fprintf(stderr, "weft-test-net: bad IPv4 address '%s'\n", a);
		return -1;
	}
	return 0;
}

static int tcp_send(const char *a, int port, unsigned long long bytes, const char *seed)
{
	struct sockaddr_in sa;
	int fd, i, rc;

	if (addr_of(a, port, &sa))
		return 2;
	/* The receiver may still be starting: try for 20 s. */
	for (i = 0; i < 200; i++) {
		fd = socket(AF_INET, SOCK_STREAM, 0);
		if (fd < 0) {
			perror("weft-test-net: socket");
			return 1;
		}
		if (!connect(fd, (struct sockaddr *)&sa, sizeof(sa)))
			break;
		close(fd);
		fd = -1;
		usleep(100000);
	}
	if (fd < 0) {
		perror("weft-test-net: connect");
		return 1;
	}
	rc = stream(fd, bytes, seed);
	if (!rc && shutdown(fd, SHUT_WR)) {
		perror("weft-test-net: shutdown");
		rc = 1;
	}
	close(fd);
	return rc;
}

static int tcp_recv(int port)
{
	static uint8_t buf[65536];
	struct sockaddr_in sa;
	int ls, fd, one = 1;
	ssize_t n;

	addr_of(NULL, port, &sa);
	ls = socket(AF_INET, SOCK_STREAM, 0);
	if (ls < 0 || setsockopt(ls, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) ||
	    bind(ls, (struct sockaddr *)&sa, sizeof(sa)) || listen(ls, 1)) {
		perror("weft-test-net: listen");
		return 1;
	}
	fd = accept(ls, NULL, NULL);
	if (fd < 0) {
		perror("weft-test-net: accept");
		return 1;
	}
	while ((n = read(fd, buf, sizeof(buf))) != 0) {
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 || write_all(1, buf, (size_t)n)) {
			perror("weft-test-net: tcp-recv");
			return 1;
		}
	}
	close(fd);
	close(ls);
	return 0;
}

static int udp_bcast(const char *a, int port, size_t size, const char *seed)
{
	struct sockaddr_in sa;
	uint64_t st = seed_state(seed);
	uint8_t *buf = malloc(size);
	int fd, one = 1;
	ssize_t n;

	if (!buf || addr_of(a, port, &sa))
		return 2;
	fill(buf, size, &st);
	fd = socket(AF_INET, SOCK_DGRAM, 0);
	if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_BROADCAST, &one, sizeof(one))) {
		perror("weft-test-net: socket");
		return 1;
	}
	n = sendto(fd, buf, size, 0, (struct sockaddr *)&sa, sizeof(sa));
	if (n != (ssize_t)size) {
		perror("weft-test-net: sendto");
		return 1;
	}
	printf("sent %zu bytes to %s:%d\n", size, a, port);
	close(fd);
	free(buf);
	return 0;
}

static int udp_recv(int port, size_t size, const char *seed, int seconds)
{
	struct sockaddr_in sa, from;
	socklen_t fl = sizeof(from);
	uint64_t st = seed_state(seed);
	uint8_t *want = malloc(size), *buf = malloc(size + 1);
	struct pollfd pfd;
	int fd, one = 1;
	ssize_t n;

	if (!want || !buf)
		return 2;
	fill(want, size, &st);
	addr_of(NULL, port, &sa);
	fd = socket(AF_INET, SOCK_DGRAM, 0);
	if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) ||
	    bind(fd, (struct sockaddr *)&sa, sizeof(sa))) {
		perror("weft-test-net: bind");
		return 1;
	}
	printf("listening\n");
	fflush(stdout);
	pfd.fd = fd;
	pfd.events = POLLIN;
	if (poll(&pfd, 1, seconds * 1000) != 1) {
		fprintf(stderr, "weft-test-net: no datagram within %d s\n", seconds);
		return 1;
	}
	n = recvfrom(fd, buf, size + 1, 0, (struct sockaddr *)&from, &fl);
	if (n != (ssize_t)size) {
		fprintf(stderr, "weft-test-net: datagram of %zd bytes, expected %zu\n", n, size);
		return 1;
	}
	if (memcmp(buf, want, size)) {
		fprintf(stderr, "weft-test-net: datagram content differs\n");
		return 1;
	}
	printf("received %zd bytes intact from %s\n", n, inet_ntoa(from.sin_addr));
	free(want);
	free(buf);
	return 0;
}

int main(int argc, char **argv)
{
	const char *m = argc > 1 ? argv[1] : "";

	if (!strcmp(m, "gen") && argc == 4)
		return stream(1, strtoull(argv[2], NULL, 0), argv[3]);
	if (!strcmp(m, "tcp-send") && argc == 6)
		return tcp_send(argv[2], atoi(argv[3]), strtoull(argv[4], NULL, 0), argv[5]);
	if (!strcmp(m, "tcp-recv") && argc == 3)
		return tcp_recv(atoi(argv[2]));
	if (!strcmp(m, "udp-bcast") && argc == 6)
		return udp_bcast(argv[2], atoi(argv[3]), strtoul(argv[4], NULL, 0), argv[5]);
	if (!strcmp(m, "udp-recv") && argc == 6)
		return udp_recv(atoi(argv[2]), strtoul(argv[3], NULL, 0), argv[4], atoi(argv[5]));
	fprintf(stderr, "usage: weft-test-net gen BYTES SEED | tcp-send ADDR PORT BYTES SEED |\n"
		"       tcp-recv PORT | udp-bcast ADDR PORT SIZE SEED |\n"
		"       udp-recv PORT SIZE SEED SECONDS\n");
	return 2;
}
