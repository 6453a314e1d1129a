/* SPDX-License-Identifier: MIT */
/*
 * weft-switch-bench: throughput of ~2 KiB frames (a full FIFO frame,
 * 2024 bytes) from one client to another through
 * weft-switch, and of the same frames over the same two hops through
 * weft-relay (relay.c, the trivial relay), in one run; prints frames/s,
 * GB/s and the ratio.  A benchmark, not a test.
 *
 *   weft-switch-bench [--switch PATH] [--relay PATH] [--frames N] [--json]
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "weft/wire.h"
#include "wire_io.h"

#define BATCH 32u
#define FRAME_LEN (WEFT_WIRE_HDR_SIZE + WEFT_MAX_PAYLOAD) /* a full FIFO frame */
#define WIRE_LEN (WEFT_WIRE_LEN_PREFIX + FRAME_LEN)

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void die(const char *fmt, const char *arg)
{
	fprintf(stderr, "weft-switch-bench: error: ");
	fprintf(stderr, fmt, arg);
	fputc('\n', stderr);
	exit(1);
}

static void put_frame(unsigned char *p, uint16_t src, uint16_t dst, uint8_t type,
		      uint32_t tid, uint32_t paylen)
{
	struct weft_wire_hdr h = wire_hdr(type, src, dst, tid, paylen);

	h.key = type == WEFT_PKT_HELLO ? WEFT_WIRE_HELLO_MAGIC : 0;
	put_le32(p, WEFT_WIRE_HDR_SIZE + paylen);
	memcpy(p + WEFT_WIRE_LEN_PREFIX, &h, sizeof(h));
}

/* Send n max-size frames from src to dst in batches. */
static int sender(int fd, uint16_t src, uint16_t dst, uint64_t n)
{
	static unsigned char buf[BATCH * WIRE_LEN];
	uint64_t i = 0;
	unsigned int k;

	memset(buf, 0xa5, sizeof(buf));
	while (i < n) {
		unsigned int m = n - i < BATCH ? (unsigned int)(n - i) : BATCH;

		for (k = 0; k < m; k++)
			put_frame(buf + k * WIRE_LEN, src, dst, WEFT_PKT_FIFO, (uint32_t)(i + k),
				  WEFT_MAX_PAYLOAD);
		if (!write_all(fd, buf, (size_t)m * WIRE_LEN))
			return 1;
		i += m;
	}
	return 0;
}

/* Receive n frames; checks lengths and the tid sequence.  Returns the
 * seconds from the first byte to the last. */
static double receiver(int fd, uint64_t n)
{
	static unsigned char buf[256 * 1024];
	size_t have = 0, pos;
	uint64_t got = 0;
	double t0 = 0;

	while (got < n) {
		ssize_t r = read(fd, buf + have, sizeof(buf) - have);

		if (r <= 0)
			die("receiver: stream ended after %s frames", got ? "some" : "no");
		if (!t0)
			t0 = now_s();
		have += (size_t)r;
		pos = 0;
		while (have - pos >= WEFT_WIRE_LEN_PREFIX) {
			uint32_t len = get_le32(buf + pos);
			struct weft_wire_hdr h;

			if (len != FRAME_LEN)
				die("receiver: unexpected frame length%s", "");
			if (have - pos < WEFT_WIRE_LEN_PREFIX + len)
				break;
			memcpy(&h, buf + pos + WEFT_WIRE_LEN_PREFIX, sizeof(h));
			if (h.tid != (uint32_t)got)
				die("receiver: frames out of order or lost%s", "");
			got++;
			pos += WEFT_WIRE_LEN_PREFIX + len;
		}
		memmove(buf, buf + pos, have - pos);
		have -= pos;
	}
	return now_s() - t0;
}

/* Connects to sock (retrying while the server starts) and joins as node. */
static int join(const char *sock, uint16_t node)
{
	unsigned char b[WIRE_LEN];
	struct weft_wire_hdr h;
	struct timespec ts = { 0, 5000000 };
	size_t got = 0;
	int fd = -1, i;

	for (i = 0; i < 2000 && fd < 0; i++) {
		fd = connect_path(sock);
		if (fd < 0)
			nanosleep(&ts, NULL);
	}
	if (fd < 0)
		die("cannot connect to %s", sock);
	put_frame(b, node, 0, WEFT_PKT_HELLO, 0, 0);
	if (!write_all(fd, b, WEFT_WIRE_LEN_PREFIX + WEFT_WIRE_HDR_SIZE))
		die("HELLO to %s failed", sock);
	while (got < WEFT_WIRE_LEN_PREFIX + WEFT_WIRE_HDR_SIZE) {
		ssize_t r = read(fd, b + got, WEFT_WIRE_LEN_PREFIX + WEFT_WIRE_HDR_SIZE - got);

		if (r <= 0)
			die("no HELLO_ACK from %s", sock);
		got += (size_t)r;
	}
	memcpy(&h, b + WEFT_WIRE_LEN_PREFIX, sizeof(h));
	if (h.type != WEFT_PKT_HELLO_ACK || h.status != WEFT_SW_OK)
		die("HELLO refused by %s", sock);
	return fd;
}

/*
 * Starts bin (weft-switch or weft-relay) on a fresh socket, sends n
 * frames from node 1 to node 2 through it and returns the receiver's
 * seconds.  is_switch: bin takes --ctl too.
 */
static double run_server(const char *bin, bool is_switch, uint64_t n)
{
	char dir[] = "/tmp/weft-swbench-XXXXXX", sock[96], ctl[96], cmd[160];
	pid_t sw, pid;
	int tx, rx, st;
	double t;

	if (!mkdtemp(dir))
		die("mkdtemp: %s", strerror(errno));
	snprintf(sock, sizeof(sock), "%s/sw.sock", dir);
	snprintf(ctl, sizeof(ctl), "%s/ctl.sock", dir);
	sw = fork();
	if (sw == 0) {
		int fd = open("/dev/null", O_WRONLY);

		if (fd >= 0)
			dup2(fd, 2);
		if (is_switch)
			execl(bin, bin, "--socket", sock, "--ctl", ctl, "--insecure", (char *)NULL);
		else
			execl(bin, bin, "--socket", sock, "--clients", "2", (char *)NULL);
		_exit(127);
	}
	rx = join(sock, 2);
	tx = join(sock, 1);
	pid = fork();
	if (pid == 0) {
		close(rx);
		_exit(sender(tx, 1, 2, n));
	}
	close(tx);
	t = receiver(rx, n);
	close(rx);
	waitpid(pid, &st, 0);
	if (!WIFEXITED(st) || WEXITSTATUS(st))
		die("sender through %s failed", bin);
	kill(sw, SIGTERM);
	waitpid(sw, &st, 0);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	if (system(cmd) != 0)
		fprintf(stderr, "weft-switch-bench: cannot remove %s\n", dir);
	return t;
}

/* path of the program name next to this binary, in buf */
static const char *beside_me(char *buf, size_t size, const char *name)
{
	char self[PATH_MAX];
	ssize_t l = readlink("/proc/self/exe", self, sizeof(self) - 1);

	if (l < 0)
		die("cannot find myself: %s", strerror(errno));
	self[l] = 0;
	snprintf(buf, size, "%s/%s", dirname(self), name);
	return buf;
}

int main(int argc, char **argv)
{
	char bin[PATH_MAX + 16], rbin[PATH_MAX + 16];
	const char *swbin = NULL, *relay = NULL;
	uint64_t n = 200000;
	bool json = false;
	double ts, tr, bytes;
	int i;

	for (i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--switch") && i + 1 < argc) {
			swbin = argv[++i];
		} else if (!strcmp(argv[i], "--relay") && i + 1 < argc) {
			relay = argv[++i];
		} else if (!strcmp(argv[i], "--json")) {
			json = true;
		} else if (!strcmp(argv[i], "--frames") && i + 1 < argc) {
			char *end;

			n = strtoull(argv[++i], &end, 0);
			if (*end || n == 0 || n > UINT32_MAX)
				die("--frames needs 1..4294967295, got '%s'", argv[i]);
		} else if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
			printf("usage: weft-switch-bench [--switch PATH] [--relay PATH] [--frames N]"
			       " [--json]\n"
			       "Throughput of %u-byte frames through weft-switch and through\n"
			       "weft-relay, the trivial relay (default 200000 frames; both\n"
			       "binaries next to this one).\n", FRAME_LEN);
			return 0;
		} else {
			die("unknown argument '%s' (see --help)", argv[i]);
		}
	}
	if (!swbin)
		swbin = beside_me(bin, sizeof(bin), "weft-switch");
	if (!relay)
		relay = beside_me(rbin, sizeof(rbin), "weft-relay");
	if (access(relay, X_OK) != 0)
		die("weft-relay binary %s not found (use --relay PATH)", relay);
	if (access(swbin, X_OK) != 0)
		die("weft-switch binary %s not found (use --switch PATH)", swbin);
	signal(SIGPIPE, SIG_IGN);

	ts = run_server(swbin, true, n);
	tr = run_server(relay, false, n);
	bytes = (double)n * FRAME_LEN;
	if (json) {
		printf("{\"frames\": %llu, \"frame_bytes\": %u, \"switch_gbps\": %.4f, "
		       "\"relay_gbps\": %.4f, \"ratio\": %.4f}\n", (unsigned long long)n,
		       FRAME_LEN, bytes / ts / 1e9, bytes / tr / 1e9, tr / ts);
		return 0;
	}
	printf("frames: %llu of %u bytes (+%u-byte length prefix)\n", (unsigned long long)n,
	       FRAME_LEN, WEFT_WIRE_LEN_PREFIX);
	printf("switch: %10.0f frames/s  %6.3f GB/s  (%.3f s)\n", n / ts, bytes / ts / 1e9, ts);
	printf("relay:  %10.0f frames/s  %6.3f GB/s  (%.3f s)\n", n / tr, bytes / tr / 1e9, tr);
	printf("ratio switch/relay: %.3f\n", tr / ts);
	return 0;
}
