/* SPDX-License-Identifier: MIT */
/*
 * weft-switch end-to-end tests: a real switch process, real UNIX and TCP
 * sockets, client processes (fork) and the ctl CLI.
 *
 *   switch-test PATH-TO-weft-switch [TEST...]
 *
 * Waits for events are bounded (WAIT_MS) and fail with a message; no
 * assertion depends on how fast anything runs.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "weft-host/shm.h"
#include "weft/wire.h"
#include "weft_test.h"
#include "wire_io.h"

/* A check with a message (weft_test.h's CHECK takes one too). */
#define CHECKM CHECK

#define WAIT_MS 20000

static const char *swbin;
static void msleep(int ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };

	nanosleep(&ts, NULL);
}

/* ---- switch process ------------------------------------------------------- */

struct sw {
	char dir[64];
	char sock[96], ctl[96], log[96];
	pid_t pid;
};

/* Start a switch in a fresh folder (its --run-dir); extra options end
 * with NULL.  Without --tokens among them it runs --insecure. */
static void sw_start(struct sw *s, const char *seed, ...)
{
	const char *argv[36];
	va_list ap;
	int n = 0, i;
	bool tokens = false;

	snprintf(s->dir, sizeof(s->dir), "/tmp/weft-swtest-XXXXXX");
	if (!mkdtemp(s->dir))
		t_bail("mkdtemp %s: %s", s->dir, strerror(errno));
	snprintf(s->sock, sizeof(s->sock), "%s/sw.sock", s->dir);
	snprintf(s->ctl, sizeof(s->ctl), "%s/ctl.sock", s->dir);
	snprintf(s->log, sizeof(s->log), "%s/switch.log", s->dir);
	argv[n++] = swbin;
	argv[n++] = "--socket";
	argv[n++] = s->sock;
	argv[n++] = "--ctl";
	argv[n++] = s->ctl;
	argv[n++] = "--seed";
	argv[n++] = seed;
	argv[n++] = "--run-dir";
	argv[n++] = s->dir;
	va_start(ap, seed);
	while (n < 33 && (argv[n] = va_arg(ap, const char *))) {
		tokens |= !strcmp(argv[n], "--tokens");
		n++;
	}
	va_end(ap);
	if (!tokens)
		argv[n++] = "--insecure";
	argv[n] = NULL;
	s->pid = fork();
	if (s->pid == 0) {
		int fd = open(s->log, O_WRONLY | O_CREAT | O_TRUNC, 0644);

		if (fd >= 0) {
			dup2(fd, 2);
			close(fd);
		}
		execv(swbin, (char *const *)argv);
		_exit(127);
	}
	for (i = 0; i < WAIT_MS / 10; i++) {
		int fd = connect_path(s->ctl);

		if (fd >= 0) {
			close(fd);
			return;
		}
		if (waitpid(s->pid, NULL, WNOHANG) == s->pid)
			t_bail("weft-switch exited at start (log %s)", s->log);
		msleep(10);
	}
	t_bail("weft-switch did not open %s within %d ms", s->ctl, WAIT_MS);
}

static void dump_log(const struct sw *s)
{
	char buf[4096];
	FILE *fp = fopen(s->log, "r");
	size_t n;

	if (!fp)
		return;
	fprintf(stderr, "---- %s ----\n", s->log);
	while ((n = fread(buf, 1, sizeof(buf), fp)) > 0)
		fwrite(buf, 1, n, stderr);
	fclose(fp);
}

/* Stop with SIGTERM: the switch must exit 0 (also no sanitizer report). */
static void sw_stop(struct sw *s)
{
	int st = 0;
	unsigned long before = t_failures();
	char cmd[160];

	kill(s->pid, SIGTERM);
	if (waitpid(s->pid, &st, 0) != s->pid)
		st = -1;
	CHECKM(WIFEXITED(st) && WEXITSTATUS(st) == 0,
	       "weft-switch did not exit cleanly (status 0x%x)", st);
	CHECKM(access(s->sock, F_OK) != 0, "socket %s left behind", s->sock);
	if (t_failures() != before)
		dump_log(s);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", s->dir);
	if (system(cmd) != 0)
		fprintf(stderr, "cannot remove %s\n", s->dir);
}

/* Read fd until EOF or out is full; out is NUL-terminated.  Returns the
 * length read. */
static size_t read_all(int fd, char *out, size_t outlen)
{
	size_t len = 0;

	for (;;) {
		ssize_t r = read(fd, out + len, outlen - 1 - len);

		if (r <= 0)
			break;
		len += (size_t)r;
		if (len == outlen - 1)
			break;
	}
	out[len] = 0;
	return len;
}

/* Run `weft-switch ctl --socket CTL args...`; output (stdout+stderr) in
 * out; returns the exit status. */
static int ctl(const struct sw *s, char *out, size_t outlen, const char *fmt, ...)
{
	char line[512], *argv[40], *save = NULL, *t;
	int pfd[2], n = 0, st = 0;
	va_list ap;
	pid_t pid;

	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	argv[n++] = (char *)swbin;
	argv[n++] = "ctl";
	argv[n++] = "--socket";
	argv[n++] = (char *)s->ctl;
	for (t = strtok_r(line, " ", &save); t && n < 39; t = strtok_r(NULL, " ", &save))
		argv[n++] = t;
	argv[n] = NULL;
	if (pipe(pfd) != 0)
		t_bail("pipe: %s", strerror(errno));
	pid = fork();
	if (pid == 0) {
		dup2(pfd[1], 1);
		dup2(pfd[1], 2);
		close(pfd[0]);
		close(pfd[1]);
		execv(swbin, argv);
		_exit(127);
	}
	close(pfd[1]);
	read_all(pfd[0], out, outlen);
	close(pfd[0]);
	waitpid(pid, &st, 0);
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128;
}

/* The control protocol spoken directly (one request line, reply "OK\n"
 * or "ERR ...\n" then the body), for the polling loops: cheaper than a
 * CLI process per poll.  Returns 0 on OK, 1 on ERR, 2 if unreachable. */
static int ctl_direct(const struct sw *s, char *out, size_t outlen, const char *cmd)
{
	int fd = connect_path(s->ctl);
	size_t len;
	char line[512];
	int n = snprintf(line, sizeof(line), "%s\n", cmd);

	out[0] = 0;
	if (fd < 0)
		return 2;
	if (!write_all(fd, line, (size_t)n)) {
		close(fd);
		return 2;
	}
	shutdown(fd, SHUT_WR);
	len = read_all(fd, out, outlen);
	close(fd);
	if (!strncmp(out, "OK\n", 3)) {
		memmove(out, out + 3, len - 2);
		return 0;
	}
	return 1;
}

static void ctl_ok(const struct sw *s, const char *cmd)
{
	char out[8192];
	int rc = ctl(s, out, sizeof(out), "%s", cmd);

	CHECKM(rc == 0, "ctl '%s' failed (%d): %s", cmd, rc, out);
}

/* Value of KEY on the "port NODE" line (node >= 0), the "total" line
 * (-2) or the "switch" line (-1) of `ctl counters`; -1 if absent. */
static long long counter(const struct sw *s, int node, const char *key)
{
	static char out[65536];
	char head[32], pat[64], *line, *save = NULL, *p;

	if (ctl_direct(s, out, sizeof(out), "counters") != 0)
		return -1;
	if (node >= 0)
		snprintf(head, sizeof(head), "port %d ", node);
	else if (node == -2)
		snprintf(head, sizeof(head), "total ");
	else
		snprintf(head, sizeof(head), "switch ");
	snprintf(pat, sizeof(pat), " %s=", key);
	for (line = strtok_r(out, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		if (strncmp(line, head, strlen(head)))
			continue;
		p = strstr(line, pat);
		return p ? atoll(p + strlen(pat)) : -1;
	}
	return -1;
}

/* Wait until the counter reaches want. */
static bool wait_counter(const struct sw *s, int node, const char *key, long long want)
{
	long long v = -1;
	int i;

	for (i = 0; i < WAIT_MS / 20; i++) {
		v = counter(s, node, key);
		if (v >= want)
			return true;
		msleep(20);
	}
	CHECK(0, "counter %s of %s%d is %lld, expected %lld within %d ms", key,
	      node >= 0 ? "port " : "switch", node, v, want, WAIT_MS);
	return false;
}

static bool wait_ctl_contains(const struct sw *s, const char *cmd, const char *needle)
{
	char out[8192];
	int i;

	for (i = 0; i < WAIT_MS / 20; i++) {
		if (ctl_direct(s, out, sizeof(out), cmd) == 0 && strstr(out, needle))
			return true;
		msleep(20);
	}
	CHECK(0, "'%s' never showed '%s'; last: %s", cmd, needle, out);
	return false;
}

/* ---- adapter side ----------------------------------------------------------- */

static bool send_raw(int fd, uint32_t prefix, const void *frame, size_t len)
{
	unsigned char p[4];

	put_le32(p, prefix);
	return write_all(fd, p, 4) && write_all(fd, frame, len);
}

static size_t mkframe(unsigned char *b, uint8_t type, uint16_t src, uint16_t dst,
		      uint32_t tid, uint32_t paylen)
{
	struct weft_wire_hdr h = wire_hdr(type, src, dst, tid, paylen);
	uint32_t i;

	memcpy(b, &h, sizeof(h));
	for (i = 0; i < paylen; i++)
		b[sizeof(h) + i] = (unsigned char)(tid + i);
	return sizeof(h) + paylen;
}

static bool send_frame(int fd, uint16_t src, uint16_t dst, uint32_t tid, uint32_t paylen)
{
	unsigned char b[WEFT_WIRE_MAX_FRAME];
	size_t len = mkframe(b, WEFT_PKT_FIFO, src, dst, tid, paylen);

	return send_raw(fd, (uint32_t)len, b, len);
}

static bool read_full(int fd, void *p, size_t len, int timeout_ms)
{
	unsigned char *b = p;

	while (len) {
		struct pollfd pf = { fd, POLLIN, 0 };
		ssize_t n;

		if (poll(&pf, 1, timeout_ms) <= 0)
			return false;
		n = read(fd, b, len);
		if (n <= 0)
			return false;
		b += n;
		len -= (size_t)n;
	}
	return true;
}

/* Receive one frame; returns its length, 0 on timeout/EOF, -1 if bad. */
static long recv_frame(int fd, unsigned char *b, int timeout_ms)
{
	unsigned char p[4];
	uint32_t len;

	if (!read_full(fd, p, 4, timeout_ms))
		return 0;
	len = get_le32(p);
	if (len < WEFT_WIRE_HDR_SIZE || len > WEFT_WIRE_MAX_FRAME)
		return -1;
	if (!read_full(fd, b, len, WAIT_MS))
		return -1;
	return (long)len;
}

static struct weft_wire_hdr hdr_of(const unsigned char *b)
{
	struct weft_wire_hdr h;

	memcpy(&h, b, sizeof(h));
	return h;
}

/* Connect and say HELLO; returns the HELLO_ACK status (or -1) and the fd. */
static int hello(const struct sw *s, uint16_t node, uint32_t key, int *fdp)
{
	unsigned char b[WEFT_WIRE_MAX_FRAME];
	struct weft_wire_hdr h;
	size_t len;
	int fd = connect_path(s->sock);

	*fdp = fd;
	if (fd < 0)
		return -1;
	len = mkframe(b, WEFT_PKT_HELLO, node, 0, 0, 0);
	h = hdr_of(b);
	h.key = key;
	memcpy(b, &h, sizeof(h));
	if (!send_raw(fd, (uint32_t)len, b, len))
		return -1;
	if (recv_frame(fd, b, WAIT_MS) != WEFT_WIRE_HDR_SIZE)
		return -1;
	h = hdr_of(b);
	if (h.type != WEFT_PKT_HELLO_ACK || h.dst_node != node)
		return -1;
	return h.status;
}

/* HELLO with a token payload (tok NULL: none) on a new connection;
 * returns the HELLO_ACK status (or -1) and the fd. */
static int hello_token(const struct sw *s, uint16_t node, const unsigned char *tok, int *fdp)
{
	unsigned char b[WEFT_WIRE_MAX_FRAME];
	struct weft_wire_hdr h;
	size_t len;
	int fd = connect_path(s->sock);

	*fdp = fd;
	if (fd < 0)
		return -1;
	h = wire_hdr(WEFT_PKT_HELLO, node, 0, 0, tok ? WEFT_WIRE_TOKEN_SIZE : 0);
	h.key = WEFT_WIRE_HELLO_MAGIC;
	memcpy(b, &h, sizeof(h));
	len = sizeof(h);
	if (tok) {
		memcpy(b + len, tok, WEFT_WIRE_TOKEN_SIZE);
		len += WEFT_WIRE_TOKEN_SIZE;
	}
	if (!send_raw(fd, (uint32_t)len, b, len))
		return -1;
	if (recv_frame(fd, b, WAIT_MS) != WEFT_WIRE_HDR_SIZE)
		return -1;
	h = hdr_of(b);
	if (h.type != WEFT_PKT_HELLO_ACK || h.dst_node != node)
		return -1;
	return h.status;
}

static int join(const struct sw *s, uint16_t node)
{
	int fd, st = hello(s, node, WEFT_WIRE_HELLO_MAGIC, &fd);

	if (st != 0)
		CHECK(0, "HELLO for node %u: status %d", node, st);
	return fd;
}

/* Receive n frames into tids (with sources in srcs if not NULL). */
static size_t recv_n(int fd, size_t n, uint32_t *tids, uint16_t *srcs)
{
	unsigned char b[WEFT_WIRE_MAX_FRAME];
	size_t i;

	for (i = 0; i < n; i++) {
		long len = recv_frame(fd, b, WAIT_MS);
		struct weft_wire_hdr h;

		if (len <= 0)
			break;
		h = hdr_of(b);
		if (h.length != (uint32_t)len - WEFT_WIRE_HDR_SIZE ||
		    (h.length && b[WEFT_WIRE_HDR_SIZE] != (unsigned char)h.tid))
			return i;
		tids[i] = h.tid;
		if (srcs)
			srcs[i] = h.src_node;
	}
	return i;
}

/* Fork a client that sends n max-size frames with tids 0..n-1 from src to
 * dst on fd and exits 0 if all were sent. */
static pid_t fork_sender(int fd, uint16_t src, uint16_t dst, size_t n)
{
	pid_t pid = fork();
	size_t i;

	if (pid == 0) {
		for (i = 0; i < n; i++)
			if (!send_frame(fd, src, dst, (uint32_t)i, WEFT_MAX_PAYLOAD))
				_exit(1);
		_exit(0);
	}
	return pid;
}

/* Wait for a sender from fork_sender(); it must have sent everything. */
static void reap_sender(pid_t pid)
{
	int st = 0;

	waitpid(pid, &st, 0);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
}

/* tids[i] == i for every i < n. */
static bool in_order(const uint32_t *tids, size_t n)
{
	size_t i;
	bool ok = true;

	for (i = 0; i < n; i++)
		ok &= tids[i] == i;
	return ok;
}

static bool nothing_pending(int fd)
{
	struct pollfd pf = { fd, POLLIN, 0 };

	return poll(&pf, 1, 0) == 0;
}

/* ---- tests ------------------------------------------------------------------ */

/* Run a shell command; its output (NUL-terminated) in out.  Returns the
 * pclose() status, -1 if it could not run. */
static int run_shell(const char *cmd, char *out, size_t outlen)
{
	FILE *p = popen(cmd, "r");
	size_t n = p ? fread(out, 1, outlen - 1, p) : 0;

	out[n] = 0;
	return p ? pclose(p) : -1;
}

static void test_start_errors(void)
{
	struct sw s;
	char out[8192], cmd[512];
	int fd, rc;
	struct sockaddr_un a;

	sw_start(&s, "1", NULL);
	/* Same path while the switch runs. */
	snprintf(cmd, sizeof(cmd), "%s --insecure --socket %s --ctl %s/other 2>&1", swbin, s.sock,
		 s.dir);
	rc = run_shell(cmd, out, sizeof(out));
	CHECKM(WIFEXITED(rc) && WEXITSTATUS(rc) != 0 && strstr(out, "in use by a running switch"),
	       "second switch on a live path: rc %d, '%s'", rc, out);
	/* Missing folder. */
	snprintf(cmd, sizeof(cmd), "%s --insecure --socket %s/nope/sw.sock --ctl %s/c2 2>&1", swbin,
		 s.dir, s.dir);
	rc = run_shell(cmd, out, sizeof(out));
	CHECKM(WIFEXITED(rc) && WEXITSTATUS(rc) != 0 && strstr(out, "does not exist"),
	       "missing folder: rc %d, '%s'", rc, out);
	/* Not a socket. */
	snprintf(cmd, sizeof(cmd), "touch %s/file && %s --insecure --socket %s/file --ctl %s/c3 2>&1",
		 s.dir, swbin, s.dir, s.dir);
	rc = run_shell(cmd, out, sizeof(out));
	CHECKM(WIFEXITED(rc) && WEXITSTATUS(rc) != 0 && strstr(out, "not a socket"),
	       "not a socket: rc %d, '%s'", rc, out);
	/* Missing options, --help. */
	snprintf(cmd, sizeof(cmd), "%s --socket %s/x 2>&1", swbin, s.dir);
	rc = run_shell(cmd, out, sizeof(out));
	CHECKM(WIFEXITED(rc) && WEXITSTATUS(rc) == 2 && strstr(out, "required"),
	       "missing --ctl: rc %d, '%s'", rc, out);
	snprintf(cmd, sizeof(cmd), "%s --help", swbin);
	rc = run_shell(cmd, out, sizeof(out));
	CHECKM(WIFEXITED(rc) && WEXITSTATUS(rc) == 0 && strstr(out, "--socket PATH"),
	       "--help: rc %d", rc);
	sw_stop(&s);

	/* A stale socket file (bound, never unlinked) is removed. */
	sw_start(&s, "1", NULL);
	kill(s.pid, SIGKILL);
	waitpid(s.pid, NULL, 0);
	CHECK(access(s.sock, F_OK) == 0);
	fd = socket(AF_UNIX, SOCK_STREAM, 0);
	memset(&a, 0, sizeof(a));
	a.sun_family = AF_UNIX;
	snprintf(a.sun_path, sizeof(a.sun_path), "%s", s.sock);
	CHECK(connect(fd, (struct sockaddr *)&a, sizeof(a)) != 0);
	close(fd);
	{
		struct sw s2 = s;

		s2.pid = fork();
		if (s2.pid == 0) {
			int lfd = open(s.log, O_WRONLY | O_CREAT | O_TRUNC, 0644);

			dup2(lfd, 2);
			execl(swbin, swbin, "--socket", s.sock, "--ctl", s.ctl, "--insecure", (char *)NULL);
			_exit(127);
		}
		for (rc = 0; rc < WAIT_MS / 10; rc++) {
			fd = connect_path(s.ctl);
			if (fd >= 0)
				break;
			msleep(10);
		}
		CHECKM(fd >= 0, "switch did not start over stale sockets");
		if (fd >= 0)
			close(fd);
		ctl(&s2, out, sizeof(out), "counters");
		CHECK(strstr(out, "switch ") != NULL);
		{
			FILE *lf = fopen(s.log, "r");
			size_t n = lf ? fread(out, 1, sizeof(out) - 1, lf) : 0;

			out[n] = 0;
			if (lf)
				fclose(lf);
		}
		CHECKM(strstr(out, "removed stale adapter socket"), "no stale notice: %s", out);
		sw_stop(&s2);
	}
}

/* Three client processes: unicast to each other, one broadcast each. */
static int node_proc(const struct sw *s, uint16_t me, int go_fd)
{
	uint32_t tids[64];
	uint16_t srcs[64];
	int fd = join(s, me), seen[4][8];
	uint16_t j;
	size_t n, i;
	char c;

	if (fd < 0 || t_failures())
		return 1;
	if (read(go_fd, &c, 1) != 1)
		return 1;
	for (j = 1; j <= 3; j++) {
		uint32_t k;

		if (j == me)
			continue;
		for (k = 0; k < 5; k++)
			if (!send_frame(fd, me, j, me * 100 + j * 10 + k, 40 + k))
				return 1;
	}
	if (!send_frame(fd, me, WEFT_NODE_BROADCAST, me * 100 + 99, 8))
		return 1;
	/* 2 senders x 5 unicast + 2 broadcasts. */
	n = recv_n(fd, 12, tids, srcs);
	CHECKM(n == 12, "node %u received %zu of 12 frames", me, n);
	memset(seen, 0, sizeof(seen));
	for (i = 0; i < n; i++) {
		uint32_t from = tids[i] / 100, to = tids[i] / 10 % 10, k = tids[i] % 10;

		CHECKM(from == srcs[i] && from != me && from >= 1 && from <= 3,
		       "node %u got tid %u from %u", me, tids[i], srcs[i]);
		if (tids[i] % 100 == 99) {
			if (from <= 3)
				seen[from][7]++;
			continue;
		}
		CHECKM(to == me && k < 5, "node %u got tid %u", me, tids[i]);
		if (from <= 3 && k < 5) {
			/* Order per source is kept with one route. */
			CHECKM(seen[from][0] == (int)k, "node %u: from %u expected k %d got %u", me,
			       from, seen[from][0], k);
			seen[from][0]++;
		}
	}
	for (j = 1; j <= 3; j++)
		if (j != me)
			CHECKM(seen[j][7] == 1 && seen[j][0] == 5,
			       "node %u from %u: %d broadcasts, %d unicast", me, j, seen[j][7],
			       seen[j][0]);
	CHECK(nothing_pending(fd));
	close(fd);
	return t_failures() ? 1 : 0;
}

static void test_routing_broadcast(void)
{
	struct sw s;
	pid_t pids[3];
	int go[2], i, st;

	sw_start(&s, "3", NULL);
	if (pipe(go) != 0)
		t_bail("pipe: %s", strerror(errno));
	for (i = 0; i < 3; i++) {
		pids[i] = fork();
		if (pids[i] == 0) {
			close(go[1]);
			_exit(node_proc(&s, (uint16_t)(i + 1), go[0]));
		}
	}
	close(go[0]);
	/* Everybody registered before anybody sends. */
	wait_counter(&s, -1, "clients", 3);
	wait_ctl_contains(&s, "nodes", "node 3 attached");
	wait_ctl_contains(&s, "nodes", "node 2 attached");
	wait_ctl_contains(&s, "nodes", "node 1 attached");
	CHECK(write(go[1], "xxx", 3) == 3, "start the node processes");
	close(go[1]);
	for (i = 0; i < 3; i++) {
		waitpid(pids[i], &st, 0);
		CHECKM(WIFEXITED(st) && WEXITSTATUS(st) == 0, "node process %d failed", i + 1);
	}
	CHECK(counter(&s, 1, "rx_frames") == 11);
	CHECK(counter(&s, 2, "tx_frames") == 12);
	sw_stop(&s);
}

static void test_mcast(void)
{
	struct sw s;
	char out[8192];
	uint32_t tids[4];
	int f1, f2, f3, f4;

	sw_start(&s, "4", NULL);
	f1 = join(&s, 1);
	f2 = join(&s, 2);
	f3 = join(&s, 3);
	f4 = join(&s, 4);
	ctl_ok(&s, "mcast join 7 2");
	ctl_ok(&s, "mcast join 7 3");
	ctl_ok(&s, "mcast join 7 1");
	CHECK(ctl(&s, out, sizeof(out), "mcast list 7") == 0 && strstr(out, "group 7: 2 3 1"));
	CHECK(ctl(&s, out, sizeof(out), "--json mcast list") == 0 && strstr(out, "\"7\":[2,3,1]"));
	CHECK(send_frame(f1, 1, WEFT_NODE_MCAST_BASE + 7, 70, 16));
	CHECK(recv_n(f2, 1, tids, NULL) == 1 && tids[0] == 70);
	CHECK(recv_n(f3, 1, tids, NULL) == 1 && tids[0] == 70);
	wait_counter(&s, 3, "tx_frames", 1);
	CHECK(counter(&s, 4, "tx_frames") == 0);
	CHECK(counter(&s, 1, "tx_frames") == 0);
	CHECK(nothing_pending(f4) && nothing_pending(f1));
	ctl_ok(&s, "mcast leave 7 3");
	CHECK(send_frame(f4, 4, WEFT_NODE_MCAST_BASE + 7, 71, 16));
	CHECK(recv_n(f1, 1, tids, NULL) == 1 && tids[0] == 71);
	CHECK(recv_n(f2, 1, tids, NULL) == 1 && tids[0] == 71);
	wait_counter(&s, 2, "tx_frames", 2);
	CHECK(counter(&s, 3, "tx_frames") == 1);
	/* An empty group has no route. */
	CHECK(send_frame(f4, 4, WEFT_NODE_MCAST_BASE + 8, 72, 16));
	wait_counter(&s, 4, "drop_NO_ROUTE", 1);
	close(f1);
	close(f2);
	close(f3);
	close(f4);
	sw_stop(&s);
}

/* A drop rule for one node's FIFO packets to one node: the broadcast copy
 * for node 1 is dropped once, everything else flows. */
static void test_drop_rule(void)
{
	struct sw s;
	char out[8192];
	uint32_t tids[4];
	unsigned char b[WEFT_WIRE_MAX_FRAME];
	size_t len;
	int f1, f2, f3;

	sw_start(&s, "9", NULL);
	f1 = join(&s, 1);
	f2 = join(&s, 2);
	f3 = join(&s, 3);
	CHECK(ctl(&s, out, sizeof(out), "drop add src=3 src-window=0 dst=1 type=fifo") == 0 &&
	      strstr(out, "rule 0: src=3 src_window=0 dst=1 type=fifo left=1 dropped=0"));
	CHECK(ctl(&s, out, sizeof(out), "drop add type=bogus") == 1 &&
	      strstr(out, "unknown packet type"));
	CHECK(ctl(&s, out, sizeof(out), "drop add src=3 count=0") == 1 && strstr(out, "count"));
	CHECK(ctl(&s, out, sizeof(out), "drop frob") == 1 && strstr(out, "expected"));
	/* Another type from node 3 to node 1 is not the rule's. */
	len = mkframe(b, WEFT_PKT_FIFO_DATA, 3, 1, 80, 16);
	CHECK(send_raw(f3, (uint32_t)len, b, len));
	CHECK(recv_n(f1, 1, tids, NULL) == 1 && tids[0] == 80);
	CHECK(send_frame(f3, 3, WEFT_NODE_BROADCAST, 81, 16));
	CHECK(recv_n(f2, 1, tids, NULL) == 1 && tids[0] == 81);
	wait_counter(&s, 1, "drop_RULE", 1);
	CHECK(nothing_pending(f1));
	CHECK(send_frame(f3, 3, WEFT_NODE_BROADCAST, 82, 16));
	CHECK(recv_n(f1, 1, tids, NULL) == 1 && tids[0] == 82);
	CHECK(recv_n(f2, 1, tids, NULL) == 1 && tids[0] == 82);
	CHECK(ctl(&s, out, sizeof(out), "drop list") == 0 && strstr(out, "left=0 dropped=1"));
	CHECK(ctl(&s, out, sizeof(out), "--json drop list") == 0 &&
	      strstr(out, "\"src\":3,\"src_window\":0,\"dst\":1,\"type\":\"fifo\",\"left\":0,"
		     "\"dropped\":1"));
	CHECK(counter(&s, 2, "drop_RULE") == 0 && counter(&s, -2, "drop_RULE") == 1);
	ctl_ok(&s, "drop clear");
	CHECK(ctl(&s, out, sizeof(out), "drop list") == 0 && !strstr(out, "rule"));
	close(f1);
	close(f2);
	close(f3);
	sw_stop(&s);
}

static size_t inversions(const uint32_t *t, size_t n)
{
	size_t i, inv = 0;

	for (i = 1; i < n; i++)
		inv += t[i] < t[i - 1];
	return inv;
}

static bool all_once(const uint32_t *t, size_t n, uint32_t base, size_t count)
{
	static unsigned char seen[4096];
	size_t i;

	if (n != count || count > sizeof(seen))
		return false;
	memset(seen, 0, count);
	for (i = 0; i < n; i++) {
		if (t[i] < base || t[i] - base >= count || seen[t[i] - base])
			return false;
		seen[t[i] - base] = 1;
	}
	return true;
}

static void test_reorder_routes(void)
{
	struct sw s;
	uint32_t tids[64];
	size_t n;
	int f1, f2, i;

	/* 4 routes, 50 ms apart: frame k takes route k % 4. */
	sw_start(&s, "5", "--routes", "4", "--skew-ns", "50000000", NULL);
	f1 = join(&s, 1);
	f2 = join(&s, 2);
	for (i = 0; i < 40; i++)
		CHECK(send_frame(f1, 1, 2, (uint32_t)i, 100));
	n = recv_n(f2, 40, tids, NULL);
	CHECKM(all_once(tids, n, 0, 40), "routes: %zu frames, not each of 40 once", n);
	CHECKM(inversions(tids, n) > 0, "4 routes with skew gave no reordering");
	CHECK(nothing_pending(f2));
	close(f1);
	close(f2);
	sw_stop(&s);
}

static void test_delay_jitter(void)
{
	struct sw s;
	char out[8192];
	uint32_t tids[128];
	size_t n;
	int f1, f2, i;

	sw_start(&s, "6", NULL);
	f1 = join(&s, 1);
	f2 = join(&s, 2);
	ctl_ok(&s, "set delay_ns=1000000 jitter_ns=30000000");
	CHECK(ctl(&s, out, sizeof(out), "faults") == 0 &&
	      strstr(out, "delay_ns=1000000 jitter_ns=30000000"));
	for (i = 0; i < 100; i++)
		CHECK(send_frame(f1, 1, 2, (uint32_t)i, 64));
	n = recv_n(f2, 100, tids, NULL);
	CHECKM(all_once(tids, n, 0, 100), "jitter: %zu frames, not each of 100 once", n);
	CHECKM(inversions(tids, n) > 0, "30 ms jitter gave no reordering");
	/* A long delay keeps the frame in flight. */
	ctl_ok(&s, "set delay_ns=600000000000 jitter_ns=0");
	CHECK(send_frame(f1, 1, 2, 500, 64));
	wait_counter(&s, 1, "rx_frames", 101);
	CHECK(counter(&s, -1, "queued") == 1);
	CHECK(nothing_pending(f2));
	ctl_ok(&s, "clear");
	CHECK(send_frame(f1, 1, 2, 501, 64));
	CHECK(recv_n(f2, 1, tids, NULL) == 1 && tids[0] == 501);
	close(f1);
	close(f2);
	sw_stop(&s);
}

/* Send 300 frames through drop=0.3; returns the delivered tids. */
static size_t drop_run(const char *seed, uint32_t *tids, long long *drops)
{
	struct sw s;
	size_t n;
	int f1, f2, i;

	sw_start(&s, seed, "--drop", "0.3", NULL);
	f1 = join(&s, 1);
	f2 = join(&s, 2);
	for (i = 0; i < 300; i++)
		CHECK(send_frame(f1, 1, 2, (uint32_t)i, 32));
	wait_counter(&s, 1, "rx_frames", 300);
	*drops = counter(&s, 2, "drop_RANDOM");
	n = recv_n(f2, (size_t)(300 - *drops), tids, NULL);
	CHECK(n == (size_t)(300 - *drops));
	CHECK(counter(&s, 2, "tx_frames") == (long long)n);
	CHECK(nothing_pending(f2));
	close(f1);
	close(f2);
	sw_stop(&s);
	return n;
}

static void test_drop_seeded(void)
{
	static uint32_t a[300], b[300], c[300];
	long long da, db, dc;
	size_t na, nb, nc, i;

	na = drop_run("77", a, &da);
	nb = drop_run("77", b, &db);
	nc = drop_run("78", c, &dc);
	CHECKM(da > 45 && da < 135, "drop=0.3 dropped %lld of 300", da);
	CHECK(na == nb && da == db && memcmp(a, b, na * sizeof(a[0])) == 0);
	CHECKM(na != nc || memcmp(a, c, na * sizeof(a[0])) != 0,
	       "seeds 77 and 78 dropped the same frames");
	for (i = 1; i < na; i++)
		CHECK(a[i] > a[i - 1]);
	(void)dc;
}

static void test_port_down_up(void)
{
	struct sw s;
	uint32_t tids[4];
	int f1, f2;

	sw_start(&s, "8", NULL);
	f1 = join(&s, 1);
	f2 = join(&s, 2);
	ctl_ok(&s, "port 2 down");
	CHECK(send_frame(f1, 1, 2, 1, 16));
	CHECK(send_frame(f1, 1, 2, 2, 16));
	CHECK(send_frame(f2, 2, 1, 3, 16));
	wait_counter(&s, 2, "drop_PORT_DOWN", 3);
	CHECK(nothing_pending(f1) && nothing_pending(f2));
	wait_ctl_contains(&s, "nodes", "node 2 attached down");
	ctl_ok(&s, "port 2 up");
	CHECK(send_frame(f1, 1, 2, 4, 16));
	CHECK(send_frame(f2, 2, 1, 5, 16));
	CHECK(recv_n(f2, 1, tids, NULL) == 1 && tids[0] == 4);
	CHECK(recv_n(f1, 1, tids, NULL) == 1 && tids[0] == 5);
	close(f1);
	close(f2);
	sw_stop(&s);
}

static void test_capture_replay(void)
{
	struct sw s;
	char out[8192], path[160];
	unsigned char buf[65536];
	uint32_t tids[8];
	size_t n, off, recs = 0, replayed_recs = 0;
	FILE *fp;
	int f1, f2, i;

	sw_start(&s, "9", NULL);
	snprintf(path, sizeof(path), "%s/cap.pcap", s.dir);
	f1 = join(&s, 1);
	f2 = join(&s, 2);
	CHECK(ctl(&s, out, sizeof(out), "capture start %s", path) == 0);
	for (i = 1; i <= 3; i++)
		CHECK(send_frame(f1, 1, 2, (uint32_t)i, 100));
	CHECK(recv_n(f2, 3, tids, NULL) == 3 && tids[0] == 1 && tids[2] == 3);
	CHECK(ctl(&s, out, sizeof(out), "mark") == 0 && atoi(out) == 3);
	CHECK(send_frame(f1, 1, 2, 4, 100));
	CHECK(recv_n(f2, 1, tids, NULL) == 1 && tids[0] == 4);
	/* Two frames from before the mark come back (trickle traffic). */
	CHECK(ctl(&s, out, sizeof(out), "replay 5 before=2") == 0 && strstr(out, "replayed 2"));
	n = recv_n(f2, 2, tids, NULL);
	CHECK(n == 2 && tids[0] == 1 && tids[1] == 2);
	wait_counter(&s, 2, "replayed", 2);
	CHECK(ctl(&s, out, sizeof(out), "capture stop") == 0 && strstr(out, "captured"));
	/* pcap: header, link type, records; replays flagged. */
	fp = fopen(path, "rb");
	CHECKM(fp != NULL, "no capture file %s", path);
	n = fp ? fread(buf, 1, sizeof(buf), fp) : 0;
	if (fp)
		fclose(fp);
	CHECK(n >= 24 && buf[0] == 0x4d && buf[1] == 0x3c && buf[2] == 0xb2 && buf[3] == 0xa1);
	CHECK(n >= 24 && buf[20] == WEFT_PCAP_LINKTYPE && buf[21] == 0);
	for (off = 24; off + 16 <= n;) {
		uint32_t incl = (uint32_t)buf[off + 8] | (uint32_t)buf[off + 9] << 8 |
				(uint32_t)buf[off + 10] << 16;
		struct weft_wire_hdr h;

		if (off + 16 + incl > n || incl < sizeof(h))
			break;
		memcpy(&h, buf + off + 16, sizeof(h));
		CHECK(h.src_node == 1 && h.dst_node == 2 && h.length + sizeof(h) == incl);
		recs++;
		if (h.flags & WEFT_WF_REPLAYED) {
			CHECK(h.tid == 1 || h.tid == 2);
			replayed_recs++;
		}
		off += 16 + incl;
	}
	CHECKM(off == n, "pcap has trailing garbage at %zu of %zu", off, n);
	CHECKM(recs == 6 && replayed_recs == 2, "pcap: %zu records, %zu replayed", recs,
	       replayed_recs);
	CHECK(ctl(&s, out, sizeof(out), "capture stop") == 1 && strstr(out, "no capture"));
	close(f1);
	close(f2);
	sw_stop(&s);
}

static void test_reconnect(void)
{
	struct sw s;
	uint32_t tids[16];
	uint16_t srcs[16];
	int f1, f3, f2, fx, st, i;
	pid_t pid;

	sw_start(&s, "10", NULL);
	f1 = join(&s, 1);
	f3 = join(&s, 3);
	/* Node 2 is another process ("VM") that receives one frame and dies. */
	pid = fork();
	if (pid == 0) {
		int fd = join(&s, 2);

		_exit(fd >= 0 && !t_failures() && recv_n(fd, 1, tids, NULL) == 1 && tids[0] == 1 ? 0 : 1);
	}
	wait_ctl_contains(&s, "nodes", "node 2 attached");
	CHECK(send_frame(f1, 1, 2, 1, 16));
	waitpid(pid, &st, 0);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	wait_ctl_contains(&s, "nodes", "node 2 detached");
	/* While node 2 is away: its frames are held, others talk on. */
	for (i = 0; i < 5; i++) {
		CHECK(send_frame(f1, 1, 2, (uint32_t)(10 + i), 16));
		CHECK(send_frame(f1, 1, 3, (uint32_t)(20 + i), 16));
		CHECK(send_frame(f3, 3, 1, (uint32_t)(30 + i), 16));
	}
	CHECK(recv_n(f3, 5, tids, NULL) == 5 && tids[0] == 20 && tids[4] == 24);
	CHECK(recv_n(f1, 5, tids, NULL) == 5 && tids[0] == 30 && tids[4] == 34);
	wait_ctl_contains(&s, "nodes", "node 2 detached up held=5");
	/* The same node id while node 1 is live is refused. */
	CHECK(hello(&s, 1, WEFT_WIRE_HELLO_MAGIC, &fx) == WEFT_SW_NODE_IN_USE);
	close(fx);
	/* Node 2 comes back and gets what was held, in order. */
	f2 = join(&s, 2);
	CHECK(recv_n(f2, 5, tids, srcs) == 5);
	for (i = 0; i < 5; i++)
		CHECK(tids[i] == (uint32_t)(10 + i) && srcs[i] == 1);
	CHECK(send_frame(f2, 2, 3, 40, 16));
	CHECK(recv_n(f3, 1, tids, NULL) == 1 && tids[0] == 40);
	CHECK(counter(&s, 2, "drop_ABSENT") == 0);
	close(f1);
	close(f2);
	close(f3);
	sw_stop(&s);
}

static void test_bad_frames(void)
{
	struct sw s;
	unsigned char b[WEFT_WIRE_MAX_FRAME];
	struct weft_wire_hdr h;
	uint32_t tids[2];
	size_t len;
	int f1, f2, fx, st;

	sw_start(&s, "11", NULL);
	f1 = join(&s, 1);
	f2 = join(&s, 2);
	/* Too short, wrong length field, spoofed source, HELLO again. */
	memset(b, 0, sizeof(b));
	CHECK(send_raw(f1, 10, b, 10));
	len = mkframe(b, WEFT_PKT_FIFO, 1, 2, 1, 64);
	CHECK(send_raw(f1, (uint32_t)len - 4, b, len - 4));
	len = mkframe(b, WEFT_PKT_FIFO, 9, 2, 1, 64);
	CHECK(send_raw(f1, (uint32_t)len, b, len));
	len = mkframe(b, WEFT_PKT_HELLO, 1, 0, 0, 0);
	CHECK(send_raw(f1, (uint32_t)len, b, len));
	wait_counter(&s, 1, "drop_BAD_FRAME", 4);
	/* Unknown destination. */
	CHECK(send_frame(f1, 1, 999, 2, 8));
	wait_counter(&s, 1, "drop_NO_ROUTE", 1);
	/* Data before HELLO. */
	fx = connect_path(s.sock);
	len = mkframe(b, WEFT_PKT_FIFO, 5, 2, 3, 8);
	CHECK(fx >= 0 && send_raw(fx, (uint32_t)len, b, len));
	wait_counter(&s, -1, "unregistered", 1);
	close(fx);
	/* Bad HELLOs: wrong magic, multicast node id. */
	st = hello(&s, 5, 0x1234, &fx);
	CHECK(st == WEFT_SW_BAD_HELLO);
	/* The same connection may try again. */
	len = mkframe(b, WEFT_PKT_HELLO, 5, 0, 0, 0);
	h = hdr_of(b);
	h.key = WEFT_WIRE_HELLO_MAGIC;
	memcpy(b, &h, sizeof(h));
	CHECK(send_raw(fx, (uint32_t)len, b, len));
	CHECK(recv_frame(fx, b, WAIT_MS) == WEFT_WIRE_HDR_SIZE && hdr_of(b).status == WEFT_SW_OK);
	close(fx);
	CHECK(hello(&s, WEFT_NODE_MCAST_BASE, WEFT_WIRE_HELLO_MAGIC, &fx) == WEFT_SW_BAD_NODE);
	close(fx);
	/* Two HELLOs back to back (bad key, then good): two answers, in order. */
	fx = connect_path(s.sock);
	len = mkframe(b, WEFT_PKT_HELLO, 8, 0, 0, 0);
	h = hdr_of(b);
	h.key = 1;
	memcpy(b, &h, sizeof(h));
	CHECK(fx >= 0 && send_raw(fx, (uint32_t)len, b, len));
	h.key = WEFT_WIRE_HELLO_MAGIC;
	memcpy(b, &h, sizeof(h));
	CHECK(send_raw(fx, (uint32_t)len, b, len));
	CHECK(recv_frame(fx, b, WAIT_MS) == WEFT_WIRE_HDR_SIZE &&
	      hdr_of(b).status == WEFT_SW_BAD_HELLO);
	CHECK(recv_frame(fx, b, WAIT_MS) == WEFT_WIRE_HDR_SIZE && hdr_of(b).status == WEFT_SW_OK);
	close(fx);
	wait_counter(&s, -1, "bad_hello", 2);
	CHECK(counter(&s, -1, "hello_rejected") == 1);
	/* Length prefix beyond the maximum: the connection is dropped (the
	 * prefix alone: the switch may close before more bytes arrive). */
	fx = join(&s, 6);
	put_le32(b, WEFT_WIRE_MAX_FRAME + 1);
	CHECK(write_all(fx, b, 4));
	CHECK(recv_frame(fx, b, WAIT_MS) == 0);
	close(fx);
	wait_counter(&s, -1, "oversize", 1);
	/* Random garbage of valid lengths, some with plausible headers. */
	fx = join(&s, 7);
	srand(11);
	for (st = 0; st < 500; st++) {
		uint32_t l = (uint32_t)rand() % (WEFT_WIRE_MAX_FRAME + 1), k;

		for (k = 0; k < l; k++)
			b[k] = (unsigned char)rand();
		if (l >= sizeof(h) && st % 2) {
			h = hdr_of(b);
			h.version = WEFT_WIRE_VERSION;
			h.src_node = 7;
			h.dst_node = (uint16_t)(st % 4 ? rand() : 2);
			memcpy(b, &h, sizeof(h));
		}
		if (!send_raw(fx, l, b, l))
			break;
	}
	CHECK(st == 500);
	wait_counter(&s, 7, "rx_frames", 500);
	close(fx);
	/* Whatever of it reached node 2 is drained before the check below. */
	while (recv_frame(f2, b, 200) > 0)
		;
	/* The switch still routes. */
	CHECK(send_frame(f1, 1, 2, 77, 8));
	CHECK(recv_n(f2, 1, tids, NULL) == 1 && tids[0] == 77);
	close(f1);
	close(f2);
	sw_stop(&s);
}

static void test_ctl_errors(void)
{
	struct sw s;
	struct sw none;
	char out[8192];

	sw_start(&s, "12", NULL);
	CHECK(ctl(&s, out, sizeof(out), "frobnicate") == 1 && strstr(out, "unknown command 'frobnicate'"));
	CHECK(ctl(&s, out, sizeof(out), "port 2 sideways") == 1 && strstr(out, "port NODE up|down"));
	CHECK(ctl(&s, out, sizeof(out), "port 70000 down") == 1 && strstr(out, "not a unicast node"));
	CHECK(ctl(&s, out, sizeof(out), "set colour=blue") == 1 && strstr(out, "colour"));
	CHECK(ctl(&s, out, sizeof(out), "set drop=2") == 1 && strstr(out, "probability"));
	CHECK(ctl(&s, out, sizeof(out), "set routes=0") == 1 && strstr(out, "out of range"));
	CHECK(ctl(&s, out, sizeof(out), "mcast join 300 1") == 1 && strstr(out, "out of range"));
	CHECK(ctl(&s, out, sizeof(out), "mcast leave 3 1") == 1 && strstr(out, "not in group"));
	CHECK(ctl(&s, out, sizeof(out), "counters 42") == 1 && strstr(out, "has no port"));
	CHECK(ctl(&s, out, sizeof(out), "capture start /nonexistent/dir/x.pcap") == 1 &&
	      strstr(out, "cannot open capture file"));
	CHECK(ctl(&s, out, sizeof(out), "replay x") == 1 && strstr(out, "replay"));
	CHECK(ctl(&s, out, sizeof(out), "help") == 0 && strstr(out, "mcast join|leave"));
	CHECK(ctl(&s, out, sizeof(out), "--json counters") == 0 &&
	      strstr(out, "\"ports\":[]") && strstr(out, "\"switch\":{"));
	CHECK(ctl(&s, out, sizeof(out), "--json faults") == 0 && strstr(out, "\"routes\":1"));
	CHECK(ctl(&s, out, sizeof(out), "--json port 3 down") == 0 &&
	      strstr(out, "{\"node\":3,\"up\":false}"));
	CHECK(ctl(&s, out, sizeof(out), "--json capture status") == 0 &&
	      strstr(out, "{\"capture\":null,\"frames\":0}"));
	none = s;
	snprintf(none.ctl, sizeof(none.ctl), "%s/absent.sock", s.dir);
	CHECK(ctl(&none, out, sizeof(out), "counters") == 2 && strstr(out, "cannot connect"));
	sw_stop(&s);
}

/* Wait until a sender is held back (a frame parked); 1..limit frames are
 * then queued. */
static void wait_parked(const struct sw *s, long long limit)
{
	long long q;

	wait_counter(s, -1, "parked", 1);
	q = counter(s, -1, "queued");
	CHECKM(q > 0 && q <= limit, "queued %lld not within 1..%lld", q, limit);
}

/* A receiver that does not read: the switch stops reading the sender
 * (bounded memory), drops nothing, and everything arrives in order once
 * the receiver reads. */
static void test_backpressure(void)
{
	enum { N = 2000 };
	struct sw s;
	static uint32_t tids[N];
	size_t n;
	int f1, f2, st;
	pid_t pid;

	sw_start(&s, "13", "--max-queued", "64", "--stall-ms", "0", NULL);
	f2 = join(&s, 2);
	f1 = join(&s, 1);
	pid = fork_sender(f1, 1, 2, N);
	close(f1);
	/* Wait until the fabric is full: the sender is then held back. */
	wait_parked(&s, 64);
	CHECK(waitpid(pid, &st, WNOHANG) == 0);
	n = recv_n(f2, N, tids, NULL);
	CHECKM(n == N, "received %zu of %d", n, N);
	CHECKM(in_order(tids, n), "frames out of order under backpressure");
	reap_sender(pid);
	wait_counter(&s, 2, "tx_frames", N);
	CHECK(counter(&s, 2, "drop_ABSENT") == 0 && counter(&s, 1, "drop_BAD_FRAME") == 0);
	close(f2);
	sw_stop(&s);
}

/* One receiver that does not read holds back only its own senders:
 * traffic between other nodes keeps flowing. */
static void test_slow_receiver(void)
{
	enum { N = 2000 };
	struct sw s;
	static uint32_t tids[N];
	size_t n, i;
	int f1, f2, f3, f4, st;
	pid_t pid;

	sw_start(&s, "15", "--max-queued", "64", "--port-queue", "16", "--stall-ms", "0", NULL);
	f1 = join(&s, 1);
	f2 = join(&s, 2);
	f3 = join(&s, 3);
	f4 = join(&s, 4);
	pid = fork_sender(f1, 1, 3, N);
	close(f1);
	/* Node 3's queue is at its limit... */
	wait_parked(&s, 16);
	/* ...and nodes 2 and 4 still talk. */
	for (i = 0; i < 200; i++)
		CHECK(send_frame(f2, 2, 4, (uint32_t)i, 512));
	n = recv_n(f4, 200, tids, NULL);
	CHECKM(n == 200, "2 -> 4 received %zu of 200 while 3 is slow", n);
	CHECK(waitpid(pid, &st, WNOHANG) == 0);
	n = recv_n(f3, N, tids, NULL);
	CHECKM(n == N, "slow receiver got %zu of %d", n, N);
	CHECKM(in_order(tids, n), "slow receiver: frames out of order");
	reap_sender(pid);
	close(f2);
	close(f3);
	close(f4);
	sw_stop(&s);
}

/* A long stream with no ctl traffic to wake the switch: frames parked
 * behind a full output queue must still flow (lost-wakeup regression). */
static void test_stream(void)
{
	enum { N = 20000 };
	struct sw s;
	static uint32_t tids[N];
	size_t n;
	int f1, f2;
	pid_t pid;

	sw_start(&s, "14", "--max-queued", "64", "--stall-ms", "0", NULL);
	f2 = join(&s, 2);
	f1 = join(&s, 1);
	pid = fork_sender(f1, 1, 2, N);
	close(f1);
	n = recv_n(f2, N, tids, NULL);
	CHECKM(n == N, "stream: received %zu of %d", n, N);
	CHECKM(in_order(tids, n), "stream: frames out of order");
	reap_sender(pid);
	close(f2);
	sw_stop(&s);
}


/* Payload length of frame tid in test_partial_writes: every length. */
static uint32_t pw_paylen(uint32_t tid)
{
	return (tid * 37u) % (WEFT_MAX_PAYLOAD + 1u);
}

/* Bytes in fd's receive queue once the writer has stopped adding to it. */
static int settled_unread(int fd)
{
	int n = -1, last = -2, i;

	for (i = 0; i < 100 && n != last; i++) {
		last = n;
		msleep(50);
		if (ioctl(fd, FIONREAD, &n) != 0)
			return -1;
	}
	return n;
}

/*
 * Read frames of test_partial_writes from fd in pieces of odd sizes into
 * buf (have bytes kept between calls) until tid *next reaches until; each
 * must be whole, in order and intact.  False on the first that is not.
 */
static bool pw_read(int fd, unsigned char *buf, size_t *have, uint32_t *next, uint32_t until)
{
	static const size_t piece[] = { 1, 7, 100, 2029, 4096, 13, 65536, 3 };
	size_t k = 0;

	while (*next < until) {
		struct pollfd pf = { fd, POLLIN, 0 };
		size_t pos = 0;
		ssize_t r;

		if (poll(&pf, 1, WAIT_MS) <= 0)
			return false;
		r = read(fd, buf + *have, piece[k++ % 8]);
		if (r <= 0)
			return false;
		*have += (size_t)r;
		while (*next < until && *have - pos >= WEFT_WIRE_LEN_PREFIX) {
			uint32_t len = get_le32(buf + pos), i;
			const unsigned char *f = buf + pos + WEFT_WIRE_LEN_PREFIX;
			struct weft_wire_hdr h;

			if (len < WEFT_WIRE_HDR_SIZE || len > WEFT_WIRE_MAX_FRAME)
				return false;
			if (*have - pos < WEFT_WIRE_LEN_PREFIX + len)
				break;
			h = hdr_of(f);
			if (len != WEFT_WIRE_HDR_SIZE + pw_paylen(*next) || h.tid != *next ||
			    h.length != pw_paylen(*next))
				return false;
			for (i = 0; i < h.length; i++)
				if (f[WEFT_WIRE_HDR_SIZE + i] != (unsigned char)(h.tid + i))
					return false;
			pos += WEFT_WIRE_LEN_PREFIX + len;
			(*next)++;
		}
		memmove(buf, buf + pos, *have - pos);
		*have -= pos;
	}
	return true;
}

/*
 * Frames of every length queued for a receiver that does not read: the
 * switch writes them in sendmsg batches cut wherever the socket is full;
 * read back in odd pieces, each arrives whole, once and in order.  The
 * receiver then leaves with bytes unread: the frames in its dead socket
 * are gone, and the next connection of the node starts exactly with the
 * first frame not wholly written to the old one (a frame cut there is
 * sent again whole), the rest following in order.
 */
static void test_partial_writes(void)
{
	enum { N = 3000 };
	static unsigned char buf[WEFT_WIRE_MAX_FRAME + 70000];
	unsigned char b[WEFT_WIRE_MAX_FRAME];
	struct sw s;
	size_t have = 0, left;
	uint32_t next = 0, t, i;
	int f1, f2, unread;

	/* A port queue above N: nothing for node 2 is dropped while it is away. */
	sw_start(&s, "16", "--port-queue", "4096", "--stall-ms", "0", NULL);
	f2 = join(&s, 2);
	f1 = join(&s, 1);
	for (i = 0; i < N; i++) {
		size_t len = mkframe(b, WEFT_PKT_FIFO, 1, 2, i, pw_paylen(i));

		if (!send_raw(f1, (uint32_t)len, b, len))
			break;
	}
	CHECKM(i == N, "sent %u of %d frames", i, N);
	/* The switch's output for node 2 is full: it parks the rest. */
	wait_counter(&s, -1, "parked", 1);
	CHECKM(pw_read(f2, buf, &have, &next, N / 2), "frame %u not whole, in order or intact",
	       next);
	/* Stop reading: the switch fills the socket again, then node 2 goes. */
	unread = settled_unread(f2);
	CHECKM(unread > 0, "nothing waits in node 2's socket (%d)", unread);
	close(f2);
	wait_ctl_contains(&s, "nodes", "node 2 detached");
	/* Which frames died with the socket: whole ones, then maybe a cut one. */
	left = have + (size_t)(unread > 0 ? unread : 0);
	for (t = next; t < N && left >= WEFT_WIRE_LEN_PREFIX + WEFT_WIRE_HDR_SIZE + pw_paylen(t); t++)
		left -= WEFT_WIRE_LEN_PREFIX + WEFT_WIRE_HDR_SIZE + pw_paylen(t);
	t_diag("%d bytes unread when node 2 left: frames %u..%u whole%s", unread, next, t - 1,
	       left ? ", the next one cut" : "");
	f2 = join(&s, 2);
	have = 0;
	next = t;
	CHECKM(pw_read(f2, buf, &have, &next, N), "after the reconnect frame %u (from %u) not "
	       "whole, in order or intact", next, t);
	CHECK(have == 0 && nothing_pending(f2));
	CHECK(counter(&s, 2, "tx_frames") == N && counter(&s, 2, "drop_ABSENT") == 0);
	close(f1);
	close(f2);
	sw_stop(&s);
	t_checked("%d frames of 104..%u bytes, written in cut batches and read in odd pieces, "
		  "arrive whole, once and in order; after a reconnect the node gets exactly the "
		  "frames not wholly written to its old socket", N, WEFT_WIRE_MAX_FRAME);
}

/* ---- authentication, local surfaces, fairness ------------------------------- */

/* Token of node n in the tests: 32 bytes derived from n (and a salt). */
static void test_token(uint16_t n, unsigned char salt, unsigned char *tok)
{
	unsigned int i;

	for (i = 0; i < WEFT_WIRE_TOKEN_SIZE; i++)
		tok[i] = (unsigned char)(n * 37 + i * 11 + salt);
}

/* Write a token file for nodes first..last into dir with mode; returns
 * its path (static). */
static const char *write_tokens(const char *dir, uint16_t first, uint16_t last, mode_t mode)
{
	static char path[160];
	unsigned char tok[WEFT_WIRE_TOKEN_SIZE];
	FILE *fp;
	uint16_t n;
	unsigned int i;

	snprintf(path, sizeof(path), "%s/tokens", dir);
	fp = fopen(path, "w");
	if (!fp)
		return path;
	fprintf(fp, "# node token\n");
	for (n = first; n <= last; n++) {
		test_token(n, 0, tok);
		fprintf(fp, "%u ", n);
		for (i = 0; i < WEFT_WIRE_TOKEN_SIZE; i++)
			fprintf(fp, "%02x", tok[i]);
		fprintf(fp, "\n");
	}
	fclose(fp);
	chmod(path, mode);
	return path;
}

/* Nothing but EOF (or a reset) on fd within ms: no frame at all. */
static bool only_eof(int fd, int ms)
{
	unsigned char b[WEFT_WIRE_MAX_FRAME];

	return recv_frame(fd, b, ms) == 0;
}

/* A token directory shared by the switch and the test. */
static void tok_switch(struct sw *s, const char *seed)
{
	char dir[64] = "/tmp/weft-swtok-XXXXXX";
	const char *path;

	if (!mkdtemp(dir)) {
		perror("mkdtemp");
		exit(1);
	}
	path = write_tokens(dir, 1, 4, 0600);
	sw_start(s, seed, "--tokens", path, NULL);
	/* The switch has read it: the file can go. */
	unlink(path);
	rmdir(dir);
}

/* A client claiming a node id it has no token for is refused, closed and
 * counted, whether the real node is attached or away, and never receives
 * a frame for that node; held frames go to the real node only. */
static void test_auth_hijack(void)
{
	struct sw s;
	unsigned char tok[WEFT_WIRE_TOKEN_SIZE], wrong[WEFT_WIRE_TOKEN_SIZE];
	uint32_t tids[8];
	uint16_t srcs[8];
	char out[8192], cmd[512];
	int f1, f2, fx, rc, i;

	/* A token file others can read is refused at start. */
	{
		char dir[64] = "/tmp/weft-swtok-XXXXXX";

		CHECK(mkdtemp(dir) != NULL);
		snprintf(cmd, sizeof(cmd), "%s --socket %s/s --ctl %s/c --tokens %s 2>&1", swbin,
			 dir, dir, write_tokens(dir, 1, 2, 0644));
		rc = run_shell(cmd, out, sizeof(out));
		CHECK(WIFEXITED(rc) && WEXITSTATUS(rc) == 1 && strstr(out, "mode 0600"),
		       "token file 0644: rc %d, '%s'", rc, out);
		snprintf(cmd, sizeof(cmd), "%s --socket %s/s --ctl %s/c 2>&1", swbin, dir, dir);
		rc = run_shell(cmd, out, sizeof(out));
		CHECK(WIFEXITED(rc) && WEXITSTATUS(rc) == 2 && strstr(out, "--insecure"),
		       "neither --tokens nor --insecure: rc %d, '%s'", rc, out);
		snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
		CHECK(system(cmd) == 0);
	}
	tok_switch(&s, "30");
	/* Before the real node boots: no token, a wrong token, another
	 * node's token. */
	CHECK(hello_token(&s, 1, NULL, &fx) == WEFT_SW_AUTH_FAILED);
	CHECK(only_eof(fx, WAIT_MS), "refused client not closed");
	close(fx);
	test_token(1, 1, wrong);
	CHECK(hello_token(&s, 1, wrong, &fx) == WEFT_SW_AUTH_FAILED);
	close(fx);
	test_token(2, 0, wrong);
	CHECK(hello_token(&s, 1, wrong, &fx) == WEFT_SW_AUTH_FAILED);
	close(fx);
	/* A node without a token in the table is refused too. */
	test_token(9, 0, wrong);
	CHECK(hello_token(&s, 9, wrong, &fx) == WEFT_SW_AUTH_FAILED);
	close(fx);
	/* The real nodes get in: nothing was taken before them. */
	test_token(1, 0, tok);
	CHECK(hello_token(&s, 1, tok, &f1) == WEFT_SW_OK);
	test_token(2, 0, tok);
	CHECK(hello_token(&s, 2, tok, &f2) == WEFT_SW_OK);
	/* While node 1 is attached, a claim without its token is refused as
	 * AUTH_FAILED (not NODE_IN_USE: nothing is learned) and gets nothing. */
	CHECK(hello_token(&s, 1, wrong, &fx) == WEFT_SW_AUTH_FAILED);
	CHECK(send_frame(f2, 2, 1, 50, 32));
	CHECK(recv_n(f1, 1, tids, NULL) == 1 && tids[0] == 50);
	CHECK(only_eof(fx, 500), "hijacker got a frame while node 1 was attached");
	close(fx);
	/* Node 1 goes away; frames for it are held. */
	close(f1);
	wait_ctl_contains(&s, "nodes", "node 1 detached");
	for (i = 0; i < 3; i++)
		CHECK(send_frame(f2, 2, 1, (uint32_t)(60 + i), 32));
	wait_ctl_contains(&s, "nodes", "node 1 detached up held=3");
	/* The hijacker tries again while node 1 is away: refused, nothing
	 * delivered, the frames stay held. */
	CHECK(hello_token(&s, 1, NULL, &fx) == WEFT_SW_AUTH_FAILED);
	CHECK(only_eof(fx, 500), "hijacker got a held frame");
	close(fx);
	CHECK(hello_token(&s, 1, wrong, &fx) == WEFT_SW_AUTH_FAILED);
	CHECK(only_eof(fx, 500), "hijacker got a held frame");
	close(fx);
	wait_ctl_contains(&s, "nodes", "node 1 detached up held=3");
	/* The real node comes back and gets them, in order. */
	test_token(1, 0, tok);
	CHECK(hello_token(&s, 1, tok, &f1) == WEFT_SW_OK);
	CHECK(recv_n(f1, 3, tids, srcs) == 3);
	for (i = 0; i < 3; i++)
		CHECK(tids[i] == (uint32_t)(60 + i) && srcs[i] == 2);
	CHECK(counter(&s, -1, "auth_failed") == 7);
	CHECK(counter(&s, -1, "hello_rejected") == 0);
	CHECK(ctl(&s, out, sizeof(out), "--json counters") == 0 && strstr(out, "\"auth_failed\":7"));
	close(f1);
	close(f2);
	/* The log names who tried (SO_PEERCRED). */
	snprintf(cmd, sizeof(cmd), "grep -c 'HELLO for node 1 from pid [0-9]* uid %u rejected: "
		 "authentication failed' %s", (unsigned int)getuid(), s.log);
	CHECK(run_shell(cmd, out, sizeof(out)) == 0 && atoi(out) == 6);
	sw_stop(&s);
}

/* Sockets are 0600 whatever the umask; ctl captures only inside the run
 * folder; --capture on the command line may go anywhere. */
static void test_local_surfaces(void)
{
	struct sw s;
	struct stat st;
	char out[8192], path[200], link[200], other[64] = "/tmp/weft-swother-XXXXXX";
	mode_t old = umask(0);

	sw_start(&s, "31", NULL);
	umask(old);
	CHECK(stat(s.sock, &st) == 0 && (st.st_mode & 0777) == 0600);
	CHECK(stat(s.ctl, &st) == 0 && (st.st_mode & 0777) == 0600);
	CHECK(mkdtemp(other) != NULL);
	/* Outside the run folder: refused, no file. */
	snprintf(path, sizeof(path), "%s/x.pcap", other);
	CHECK(ctl(&s, out, sizeof(out), "capture start %s", path) == 1 &&
	      strstr(out, "outside the switch's run folder"));
	CHECK(access(path, F_OK) != 0);
	CHECK(ctl(&s, out, sizeof(out), "capture start %s/../x.pcap", s.dir) == 1 &&
	      strstr(out, "outside"));
	/* A symbolic link inside pointing out: refused, nothing written. */
	snprintf(link, sizeof(link), "%s/link.pcap", s.dir);
	CHECK(symlink(path, link) == 0);
	CHECK(ctl(&s, out, sizeof(out), "capture start %s", link) == 1);
	CHECK(access(path, F_OK) != 0);
	/* Inside: allowed, mode 0600. */
	snprintf(path, sizeof(path), "%s/in.pcap", s.dir);
	CHECK(ctl(&s, out, sizeof(out), "capture start %s", path) == 0);
	CHECK(stat(path, &st) == 0 && (st.st_mode & 0777) == 0600);
	CHECK(ctl(&s, out, sizeof(out), "capture stop") == 0);
	sw_stop(&s);
	/* The operator's --capture path outside the run folder is taken. */
	snprintf(path, sizeof(path), "%s/op.pcap", other);
	sw_start(&s, "31", "--capture", path, NULL);
	CHECK(ctl(&s, out, sizeof(out), "capture status") == 0 && strstr(out, "op.pcap"));
	sw_stop(&s);
	CHECK(access(path, F_OK) == 0);
	snprintf(path, sizeof(path), "rm -rf '%s'", other);
	CHECK(system(path) == 0);
}

/* The command line and `set` speak one fault vocabulary (README's
 * `faults set --drop-ppm 50000` goes through `ctl set`). */
static void test_fault_words(void)
{
	struct sw s;
	char out[8192];

	sw_start(&s, "32", "--drop-ppm", "250000", "--delay-ns", "7", NULL);
	CHECK(ctl(&s, out, sizeof(out), "faults") == 0 &&
	      strstr(out, "drop_ppm=250000 routes=1 delay_ns=7"));
	CHECK(ctl(&s, out, sizeof(out), "set --drop-ppm 50000") == 0 &&
	      strstr(out, "drop_ppm=50000"));
	CHECK(ctl(&s, out, sizeof(out), "set --jitter-ns=9 skew-ns=3 routes=2") == 0 &&
	      strstr(out, "drop_ppm=50000 routes=2 delay_ns=7 jitter_ns=9 skew_ns=3"));
	CHECK(ctl(&s, out, sizeof(out), "set drop_ppm=1000 --drop 0.5") == 0 &&
	      strstr(out, "drop_ppm=500000"));
	CHECK(ctl(&s, out, sizeof(out), "set --drop-ppm") == 1 && strstr(out, "--KEY VALUE"));
	CHECK(ctl(&s, out, sizeof(out), "set --colour blue") == 1 && strstr(out, "colour"));
	/* All or nothing. */
	CHECK(ctl(&s, out, sizeof(out), "set --routes 3 --routes 0") == 1);
	CHECK(ctl(&s, out, sizeof(out), "faults") == 0 && strstr(out, "routes=2"));
	sw_stop(&s);
}

/* Receive n unicast frames on each of fa (from node sa) and fb (from sb)
 * at the same time, skipping frames from others; counts in *na, *nb. */
static void recv_two(int fa, uint16_t sa, uint32_t *ta, size_t *na,
		     int fb, uint16_t sb, uint32_t *tb, size_t *nb, size_t n)
{
	unsigned char b[WEFT_WIRE_MAX_FRAME];

	*na = *nb = 0;
	while (*na < n || *nb < n) {
		struct pollfd pf[2] = { { fa, POLLIN, 0 }, { fb, POLLIN, 0 } };
		int k;

		if (poll(pf, 2, WAIT_MS) <= 0)
			return;
		for (k = 0; k < 2; k++) {
			struct weft_wire_hdr h;

			if (!(pf[k].revents & (POLLIN | POLLHUP)))
				continue;
			if (recv_frame(pf[k].fd, b, WAIT_MS) <= 0)
				return;
			h = hdr_of(b);
			if (h.dst_node == WEFT_NODE_BROADCAST)
				continue;
			if (k == 0 && h.src_node == sa && *na < n)
				ta[(*na)++] = h.tid;
			if (k == 1 && h.src_node == sb && *nb < n)
				tb[(*nb)++] = h.tid;
		}
	}
}

/* A client that sends to dsts (and broadcasts) until killed, never reads. */
static pid_t fork_flooder(int fd, uint16_t me, const uint16_t *dsts, size_t nd)
{
	pid_t pid = fork();
	uint32_t k;

	if (pid == 0) {
		for (k = 0;; k++) {
			uint16_t d = k % 8 == 7 ? WEFT_NODE_BROADCAST : dsts[k % nd];

			if (!send_frame(fd, me, d, k, 1024))
				_exit(0);
		}
	}
	return pid;
}

/* Four clients that connect, flood each other and never read do not stop
 * two other nodes exchanging 10,000 frames (with broadcasts among them). */
static void test_non_readers(void)
{
	enum { N = 5000 };
	static uint32_t t1[N], t2[N];
	static const uint16_t bad[4] = { 11, 12, 13, 14 };
	struct sw s;
	pid_t fl[4], p1, p2, pb;
	size_t n1, n2, i;
	long long stalled = 0;
	int f1, f2, fb[4];

	sw_start(&s, "33", "--stall-ms", "2000", NULL);
	f1 = join(&s, 1);
	f2 = join(&s, 2);
	for (i = 0; i < 4; i++)
		fb[i] = join(&s, bad[i]);
	for (i = 0; i < 4; i++)
		fl[i] = fork_flooder(fb[i], bad[i], bad, 4);
	/* The non-readers' queues fill up... */
	for (i = 0; i < 4; i++)
		wait_counter(&s, bad[i], "drop_STALLED", 1);
	/* ...and 1 and 2 exchange 10,000 frames, plus broadcasts that reach
	 * the non-readers too. */
	p1 = fork_sender(f1, 1, 2, N);
	p2 = fork_sender(f2, 2, 1, N);
	pb = fork();
	if (pb == 0) {
		int fb1 = join(&s, 3);

		for (i = 0; i < 20; i++)
			if (!send_frame(fb1, 3, WEFT_NODE_BROADCAST, (uint32_t)i, 64))
				_exit(1);
		/* Wait for the switch to take them before closing. */
		msleep(1000);
		_exit(0);
	}
	recv_two(f1, 2, t1, &n1, f2, 1, t2, &n2, N);
	CHECK(n1 == N && n2 == N, "1 got %zu, 2 got %zu of %d while 4 clients do not read", n1,
	       n2, N);
	CHECK(in_order(t1, n1) && in_order(t2, n2), "frames out of order");
	reap_sender(p1);
	reap_sender(p2);
	reap_sender(pb);
	wait_counter(&s, 3, "rx_frames", 20);
	for (i = 0; i < 4; i++) {
		kill(fl[i], SIGKILL);
		waitpid(fl[i], NULL, 0);
		stalled += counter(&s, bad[i], "drop_STALLED");
	}
	CHECK(stalled > 0, "no STALLED drops counted");
	/* The broadcasts from 3 reached 1 and 2 (those after they read). */
	CHECK(counter(&s, 1, "tx_frames") >= N && counter(&s, 2, "tx_frames") >= N);
	for (i = 0; i < 4; i++)
		close(fb[i]);
	close(f1);
	close(f2);
	sw_stop(&s);
}

static size_t lines(const char *t)
{
	size_t n = 0;

	for (; *t; t++)
		n += *t == '\n';
	return n;
}

/* Wait until the switch counter key is below max. */
static bool wait_counter_below(const struct sw *s, const char *key, long long max)
{
	int i;

	for (i = 0; i < WAIT_MS / 20; i++) {
		long long v = counter(s, -1, key);

		if (v >= 0 && v < max)
			return true;
		msleep(20);
	}
	return false;
}

/* Resident set of pid in KiB, or -1. */
static long rss_kib(pid_t pid)
{
	char path[64], line[256];
	long kib = -1;
	FILE *fp;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	fp = fopen(path, "r");
	if (!fp)
		return -1;
	while (fgets(line, sizeof(line), fp))
		if (!strncmp(line, "VmRSS:", 6))
			kib = atol(line + 6);
	fclose(fp);
	return kib;
}

/* One connect-HELLO-frame-close cycle of a node id never used before;
 * the frame goes to the node itself, which is leaving. */
static bool churn_cycle(const struct sw *s, uint16_t node)
{
	int fd, st = hello(s, node, WEFT_WIRE_HELLO_MAGIC, &fd);
	bool ok = st == WEFT_SW_OK && send_frame(fd, node, node, node, 512);

	if (fd >= 0)
		close(fd);
	return ok;
}

/* 10,000 connect-and-close cycles over 2,000 node ids, each leaving a
 * frame held for the node that left, keep the switch's RSS within 10% of
 * where it stood after a warm-up round over the same ids (which fills
 * the capture ring and touches the id-indexed tables, both fixed in size). */
static void test_churn_rss(void)
{
	enum { IDS = 2000, WARM = IDS, N = 10000 };
	struct sw s;
	bool sanitized;
	long rss0, rss1;
	uint32_t tid;
	int f1, f2, i, bad = 0;
	char out[65536], *saved;

	/* ASan's quarantine keeps freed memory on purpose: measure the
	 * switch, not the quarantine (the sanitized run's options are put
	 * back afterwards). */
	saved = getenv("ASAN_OPTIONS") ? strdup(getenv("ASAN_OPTIONS")) : NULL;
	sanitized = saved != NULL;
	setenv("ASAN_OPTIONS", "halt_on_error=1:abort_on_error=1:detect_leaks=1:quarantine_size_mb=0:"
	       "allocator_release_to_os_interval_ms=10", 1);
	sw_start(&s, "34", "--expire-ms", "50", NULL);
	f1 = join(&s, 1);
	f2 = join(&s, 2);
	for (i = 0; i < WARM; i++)
		bad += !churn_cycle(&s, (uint16_t)(1000 + i % IDS));
	wait_ctl_contains(&s, "counters", "node_records=2 ");
	msleep(1200);
	rss0 = rss_kib(s.pid);
	for (i = 0; i < N; i++) {
		uint16_t node = (uint16_t)(1000 + i % IDS);

		bad += !churn_cycle(&s, node);
		/* A frame for the node that has left: held, then expired. */
		if (!send_frame(f2, 2, node, (uint32_t)i, 256))
			bad++;
	}
	CHECK(bad == 0, "%d cycles failed", bad);
	/* The switch still routes; the held frames and ports expire. */
	CHECK(send_frame(f2, 2, 1, 424242, 8));
	CHECK(recv_n(f1, 1, &tid, NULL) == 1 && tid == 424242);
	wait_ctl_contains(&s, "counters", "node_records=2 ");
	msleep(1200);
	CHECK(wait_counter_below(&s, "queued", 1), "held frames did not expire");
	rss1 = rss_kib(s.pid);
	t_diag("churn-rss: %d cycles: switch RSS %ld KiB after warm-up, %ld KiB after (%.1f%%)",
	       N, rss0, rss1, rss0 > 0 ? 100.0 * (double)(rss1 - rss0) / (double)rss0 : 0.0);
	/* The bound is the plain switch's: under ASan the allocator's size
	 * classes and shadow pages move RSS by more than 10% from run to run
	 * (+2% and +16% seen), so there it is a figure and the leak checker
	 * (detect_leaks=1) is the check. */
	if (sanitized)
		t_diag("under ASan RSS is a figure, not checked: %ld -> %ld KiB", rss0, rss1);
	else
		CHECK(rss0 > 0 && rss1 > 0 && rss1 * 10 <= rss0 * 11,
		      "RSS grew from %ld to %ld KiB over %d cycles", rss0, rss1, N);
	CHECK(counter(&s, -2, "drop_EXPIRED") >= 1);
	/* Only the two attached nodes keep ports. */
	CHECK(ctl_direct(&s, out, sizeof(out), "nodes") == 0);
	CHECK(lines(out) == 2, "ports left after churn:\n%s", out);
	close(f1);
	close(f2);
	sw_stop(&s);
	if (saved)
		setenv("ASAN_OPTIONS", saved, 1);
	else
		unsetenv("ASAN_OPTIONS");
	free(saved);
}

/* A frame held for an absent node does not delay a broadcast or the
 * unicast behind it, even with many more absent nodes than the fabric
 * has room for (each once a broadcast destination); held frames expire. */
static void test_held_broadcast(void)
{
	struct sw s;
	uint32_t tids[4];
	uint16_t srcs[4];
	int f1, f2, f3, i;

	sw_start(&s, "35", "--expire-ms", "1500", "--max-queued", "64", NULL);
	f1 = join(&s, 1);
	f2 = join(&s, 2);
	/* 100 nodes come and go: ports, but nothing held for them. */
	for (i = 0; i < 100; i++) {
		int fx;

		CHECK(hello(&s, (uint16_t)(100 + i), WEFT_WIRE_HELLO_MAGIC, &fx) == WEFT_SW_OK);
		close(fx);
	}
	f3 = join(&s, 3);
	close(f3);
	wait_ctl_contains(&s, "nodes", "node 3 detached");
	CHECK(send_frame(f1, 1, 3, 1, 32));
	CHECK(send_frame(f1, 1, WEFT_NODE_BROADCAST, 2, 32));
	CHECK(send_frame(f1, 1, 2, 3, 32));
	CHECK(recv_n(f2, 2, tids, srcs) == 2 && tids[0] == 2 && tids[1] == 3);
	/* Only the unicast is held for node 3; the broadcast skipped it. */
	wait_ctl_contains(&s, "nodes", "node 3 detached up held=1");
	CHECK(counter(&s, -1, "queued") == 1);
	/* The held frame expires, and so does the absent node's port. */
	wait_counter(&s, -2, "drop_EXPIRED", 1);
	CHECK(counter(&s, -1, "queued") == 0);
	close(f1);
	close(f2);
	sw_stop(&s);
}

/* ---- shared-memory transport (weft-host/shm.h) ------------------------------ */

/* An adapter on the shared-memory transport: the socket, the mapping and
 * both eventfds, and its views of the two rings. */
struct shm_client {
	int fd, efd_me, efd_switch;
	void *mem;
	struct weft_shm_view tx, rx;
};

/* HELLO asking for shared memory; the HELLO_ACK's status (or -1), and in
 * *granted whether it came with the descriptors (then mapped into c). */
static int hello_shm(const struct sw *s, uint16_t node, struct shm_client *c, bool *granted)
{
	unsigned char b[WEFT_WIRE_LEN_PREFIX + WEFT_WIRE_HDR_SIZE];
	int fds[WEFT_SHM_NFDS];
	union {
		struct cmsghdr h;
		char buf[CMSG_SPACE(sizeof(fds))];
	} u;
	struct iovec iov = { b, sizeof(b) };
	struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1,
			    .msg_control = u.buf, .msg_controllen = sizeof(u.buf) };
	struct weft_wire_hdr h = wire_hdr(WEFT_PKT_HELLO, node, 0, 0, 0);
	struct cmsghdr *cm;
	ssize_t n;

	memset(c, 0, sizeof(*c));
	*granted = false;
	c->fd = connect_path(s->sock);
	if (c->fd < 0)
		return -1;
	h.key = WEFT_WIRE_HELLO_MAGIC;
	h.flags = WEFT_WF_SHM_REQ;
	if (!send_raw(c->fd, sizeof(h), &h, sizeof(h)))
		return -1;
	n = recvmsg(c->fd, &m, MSG_WAITALL);
	if (n != (ssize_t)sizeof(b))
		return -1;
	h = hdr_of(b + WEFT_WIRE_LEN_PREFIX);
	if (h.type != WEFT_PKT_HELLO_ACK || h.dst_node != node)
		return -1;
	cm = CMSG_FIRSTHDR(&m);
	if (!cm || cm->cmsg_type != SCM_RIGHTS || cm->cmsg_len != CMSG_LEN(sizeof(fds)))
		return h.status;
	memcpy(fds, CMSG_DATA(cm), sizeof(fds));
	CHECKM(h.flags & WEFT_WF_SHM, "descriptors came without WEFT_WF_SHM");
	/* The memfd is sealed: the adapter cannot shrink it under the switch. */
	CHECK(ftruncate(fds[0], 4096) != 0 && errno == EPERM);
	c->mem = mmap(NULL, WEFT_SHM_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, fds[0], 0);
	close(fds[0]);
	if (c->mem == MAP_FAILED)
		return -1;
	c->efd_me = fds[1];
	c->efd_switch = fds[2];
	CHECK(weft_shm_hdr_ok(c->mem));
	weft_shm_view_init(&c->tx, c->mem, WEFT_SHM_A2S_OFF, true);
	weft_shm_view_init(&c->rx, c->mem, WEFT_SHM_S2A_OFF, false);
	*granted = true;
	return h.status;
}

static void shm_close(struct shm_client *c)
{
	if (c->mem) {
		munmap(c->mem, WEFT_SHM_SIZE);
		close(c->efd_me);
		close(c->efd_switch);
	}
	close(c->fd);
	c->mem = NULL;
}

static void shm_kick(int efd)
{
	uint64_t one = 1;

	CHECK(write(efd, &one, sizeof(one)) == sizeof(one));
}

/* Publish n frames src -> dst (tids base..) in the ring, waking the
 * switch as an adapter does; true if all went in. */
static bool shm_send(struct shm_client *c, uint16_t src, uint16_t dst, uint32_t base, size_t n)
{
	unsigned char b[WEFT_WIRE_MAX_FRAME];
	size_t i, len;
	int spins = 0;

	for (i = 0; i < n;) {
		len = mkframe(b, WEFT_PKT_FIFO, src, dst, base + (uint32_t)i, 1000);
		if (weft_shm_push(&c->tx, b, (uint32_t)len) == 0) {
			i++;
			continue;
		}
		if (weft_shm_wake_consumer(&c->tx))
			shm_kick(c->efd_switch);
		if (++spins > WAIT_MS)
			return false;
		msleep(1);
	}
	if (weft_shm_wake_consumer(&c->tx))
		shm_kick(c->efd_switch);
	return true;
}

/* Take n frames from the ring (sleeping on the eventfd when it is
 * empty); their tids in tids; the count received. */
static size_t shm_recv(struct shm_client *c, size_t n, uint32_t *tids)
{
	unsigned char b[WEFT_WIRE_MAX_FRAME];
	size_t got = 0;
	uint32_t rec;

	while (got < n) {
		int len = weft_shm_peek(&c->rx, b, &rec);
		struct pollfd pf = { c->efd_me, POLLIN, 0 };
		uint64_t x;

		if (len > 0) {
			tids[got++] = hdr_of(b).tid;
			weft_shm_consume(&c->rx, rec);
			if (weft_shm_wake_producer(&c->rx))
				shm_kick(c->efd_switch);
			continue;
		}
		if (len < 0 || !weft_shm_consumer_sleep(&c->rx))
			continue;
		if (poll(&pf, 1, WAIT_MS) <= 0)
			break;
		CHECK(read(c->efd_me, &x, sizeof(x)) == sizeof(x));
	}
	return got;
}

static void test_shm(void)
{
	struct shm_client a, bad;
	struct sw s;
	char out[8192], path[160];
	uint32_t tids[300];
	bool granted;
	size_t i, n;
	int f2, fd;

	sw_start(&s, "5", NULL);
	f2 = join(&s, 2);
	CHECK(hello_shm(&s, 1, &a, &granted) == WEFT_SW_OK && granted);
	if (!granted) {
		close(f2);
		sw_stop(&s);
		return;
	}
	/* Ring to socket and socket to ring, more than a ring holds. */
	CHECK(shm_send(&a, 1, 2, 0, 300));
	n = recv_n(f2, 300, tids, NULL);
	CHECKM(n == 300 && in_order(tids, n), "node 2 got %zu of 300 frames from the ring", n);
	for (i = 0; i < 300; i++)
		CHECK(send_frame(f2, 2, 1, (uint32_t)(1000 + i), 1000));
	n = shm_recv(&a, 300, tids);
	for (i = 0; i < n; i++)
		tids[i] -= 1000;
	CHECKM(n == 300 && in_order(tids, n), "node 1 got %zu of 300 frames in its ring", n);
	CHECK(counter(&s, 1, "rx_frames") == 300 && counter(&s, 1, "tx_frames") == 300);
	t_checked("300 frames of 1104 bytes each way between a shared-memory node and a socket "
		  "node, more than a ring holds: in order, counted on the port");

	/* Faults and capture see the ring's frames. */
	ctl_ok(&s, "set drop=1");
	CHECK(shm_send(&a, 1, 2, 2000, 10));
	wait_counter(&s, 2, "drop_RANDOM", 10);
	ctl_ok(&s, "clear");
	snprintf(path, sizeof(path), "%s/shm.pcap", s.dir);
	CHECK(ctl(&s, out, sizeof(out), "capture start %s", path) == 0);
	CHECK(shm_send(&a, 1, 2, 3000, 3));
	CHECK(recv_n(f2, 3, tids, NULL) == 3 && tids[0] == 3000 && tids[2] == 3002);
	CHECK(ctl(&s, out, sizeof(out), "capture stop") == 0 && strstr(out, "captured 3 frames"),
	      "%s", out);
	CHECK(ctl(&s, out, sizeof(out), "replay 1") == 0 && strstr(out, "replayed 1"));
	CHECK(recv_n(f2, 1, tids, NULL) == 1 && tids[0] == 0, "replayed tid %u", tids[0]);
	t_checked("drop=1 drops the ring's frames (drop_RANDOM), a capture records them, "
		  "replay re-sends them");

	/* A hostile adapter: an impossible head.  It is dropped and counted,
	 * the others keep talking. */
	CHECK(hello_shm(&s, 3, &bad, &granted) == WEFT_SW_OK && granted);
	if (granted) {
		bad.tx.ctl->head = WEFT_SHM_RING_SIZE + 8;
		bad.tx.ctl->cons_sleeping = 0;
		shm_kick(bad.efd_switch);
		CHECK(wait_counter(&s, -1, "bad_shm", 1));
		CHECK(only_eof(bad.fd, WAIT_MS));
		shm_close(&bad);
	}
	CHECK(hello_shm(&s, 3, &bad, &granted) == WEFT_SW_OK && granted);
	if (granted) {
		/* A record length beyond the wire's bound. */
		uint32_t huge = 1u << 20;

		memcpy(bad.tx.data, &huge, sizeof(huge));
		bad.tx.ctl->head = 1024;
		shm_kick(bad.efd_switch);
		CHECK(wait_counter(&s, -1, "bad_shm", 2));
		CHECK(only_eof(bad.fd, WAIT_MS));
		shm_close(&bad);
	}
	CHECK(hello_shm(&s, 3, &bad, &granted) == WEFT_SW_OK && granted);
	if (granted) {
		/* A tail ahead of what the switch published to it. */
		bad.rx.ctl->tail = 4096;
		CHECK(send_frame(f2, 2, 3, 1, 100));
		CHECK(wait_counter(&s, -1, "bad_shm", 3));
		CHECK(only_eof(bad.fd, WAIT_MS));
		shm_close(&bad);
	}
	CHECK(hello_shm(&s, 3, &bad, &granted) == WEFT_SW_OK && granted);
	if (granted) {
		/* The header rewritten. */
		((struct weft_shm_hdr *)bad.mem)->ring_size = 1u << 30;
		CHECK(shm_send(&bad, 3, 2, 1, 1));
		shm_kick(bad.efd_switch);
		CHECK(wait_counter(&s, -1, "bad_shm", 4));
		CHECK(only_eof(bad.fd, WAIT_MS));
		shm_close(&bad);
	}
	/* Node 3's last frame was not routed: node 2 gets node 1's next. */
	CHECK(shm_send(&a, 1, 2, 4000, 5));
	CHECK(recv_n(f2, 5, tids, NULL) == 5 && tids[0] == 4000);
	t_checked("an impossible head, a record length of 1 MiB, an impossible tail and a "
		  "rewritten header from shared-memory clients: each is disconnected and "
		  "counted (bad_shm), nothing of theirs is routed; nodes 1 and 2 go on");
	shm_close(&a);
	close(f2);
	sw_stop(&s);

	/* --transport socket: the request is answered without descriptors. */
	sw_start(&s, "5", "--transport", "socket", NULL);
	CHECK(hello_shm(&s, 1, &a, &granted) == WEFT_SW_OK && !granted);
	fd = a.fd;
	f2 = join(&s, 2);
	CHECK(send_frame(fd, 1, 2, 7, 100));
	CHECK(recv_n(f2, 1, tids, NULL) == 1 && tids[0] == 7);
	close(fd);
	close(f2);
	sw_stop(&s);
	t_checked("with --transport socket a HELLO asking for shared memory gets a plain "
		  "HELLO_ACK and the socket carries the frames");
}

/* ---- TCP listener (--listen) ----------------------------------------------- */

/* The port of the switch's TCP listener on host as its log names it
 * ("127.0.0.1", "[::1]"); 0 if the log does not say within WAIT_MS. */
static int tcp_port(const struct sw *s, const char *host)
{
	char line[512], pat[80], *p;
	int i, port = 0;

	snprintf(pat, sizeof(pat), "listening on TCP %s:", host);
	for (i = 0; i < WAIT_MS / 20 && !port; i++) {
		FILE *fp = fopen(s->log, "r");

		while (fp && fgets(line, sizeof(line), fp))
			if ((p = strstr(line, pat)))
				port = atoi(p + strlen(pat));
		if (fp)
			fclose(fp);
		if (!port)
			msleep(20);
	}
	return port;
}

/* A TCP connection to the loopback address of family (AF_INET, AF_INET6)
 * on port, or -1. */
static int connect_tcp(int family, int port)
{
	struct sockaddr_in a4 = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port),
				  .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	struct sockaddr_in6 a6 = { .sin6_family = AF_INET6, .sin6_port = htons((uint16_t)port),
				   .sin6_addr = IN6ADDR_LOOPBACK_INIT };
	int fd = socket(family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	bool v4 = family == AF_INET;

	if (fd < 0)
		return -1;
	if (connect(fd, v4 ? (struct sockaddr *)&a4 : (struct sockaddr *)&a6,
		    v4 ? sizeof(a4) : sizeof(a6)) != 0) {
		close(fd);
		return -1;
	}
	return fd;
}

/* Whether ::1 can be bound here (IPv6 loopback). */
static bool have_ipv6_loopback(void)
{
	struct sockaddr_in6 a6 = { .sin6_family = AF_INET6, .sin6_addr = IN6ADDR_LOOPBACK_INIT };
	int fd = socket(AF_INET6, SOCK_STREAM | SOCK_CLOEXEC, 0);
	bool ok = fd >= 0 && bind(fd, (struct sockaddr *)&a6, sizeof(a6)) == 0;

	if (fd >= 0)
		close(fd);
	return ok;
}

/* HELLO for node on fd with its token (salt 0: the right one; tok false:
 * none) and flags; the HELLO_ACK's status (or -1), its flags in *ackf. */
static int hello_fd(int fd, uint16_t node, bool tok, unsigned char salt, uint8_t flags,
		    uint8_t *ackf)
{
	unsigned char b[WEFT_WIRE_MAX_FRAME];
	struct weft_wire_hdr h = wire_hdr(WEFT_PKT_HELLO, node, 0, 0,
					  tok ? WEFT_WIRE_TOKEN_SIZE : 0);
	size_t len = sizeof(h);

	h.key = WEFT_WIRE_HELLO_MAGIC;
	h.flags = flags;
	memcpy(b, &h, sizeof(h));
	if (tok) {
		test_token(node, salt, b + len);
		len += WEFT_WIRE_TOKEN_SIZE;
	}
	if (fd < 0 || !send_raw(fd, (uint32_t)len, b, len) ||
	    recv_frame(fd, b, WAIT_MS) != WEFT_WIRE_HDR_SIZE)
		return -1;
	h = hdr_of(b);
	if (h.type != WEFT_PKT_HELLO_ACK || h.dst_node != node)
		return -1;
	*ackf = h.flags;
	return h.status;
}

/* One max-size frame src -> dst, received whole and byte for byte. */
static bool exact_frame(int from, int to, uint16_t src, uint16_t dst, uint32_t tid)
{
	unsigned char want[WEFT_WIRE_MAX_FRAME], got[WEFT_WIRE_MAX_FRAME];
	size_t len = mkframe(want, WEFT_PKT_FIFO, src, dst, tid, WEFT_MAX_PAYLOAD);

	return send_raw(from, (uint32_t)len, want, len) &&
	       recv_frame(to, got, WAIT_MS) == (long)len && !memcmp(want, got, len);
}

/* n max-size frames each way between a and b, all received in order. */
static bool stream_both(int a, uint16_t na, int b, uint16_t nb, size_t n)
{
	static uint32_t tids[512];
	pid_t p;
	bool ok;

	p = fork_sender(a, na, nb, n);
	ok = recv_n(b, n, tids, NULL) == n && in_order(tids, n);
	reap_sender(p);
	p = fork_sender(b, nb, na, n);
	ok &= recv_n(a, n, tids, NULL) == n && in_order(tids, n);
	reap_sender(p);
	return ok;
}

/* Lines of the switch log matching the extended regular expression re. */
static int log_count(const struct sw *s, const char *re)
{
	char cmd[512], out[64];

	snprintf(cmd, sizeof(cmd), "grep -cE '%s' %s", re, s->log);
	return run_shell(cmd, out, sizeof(out)) == -1 ? -1 : atoi(out);
}

/* Adapters on other hosts: tokens are mandatory, a bad length prefix
 * drops the connection, no shared memory, the peer address in the log,
 * frames byte-exact between TCP and UNIX clients, IPv6 if the host has
 * it, and a client without a node is closed after 10 s. */
static void test_tcp(void)
{
	char dir[64] = "/tmp/weft-swtok-XXXXXX", cmd[512], out[8192];
	bool v6 = have_ipv6_loopback();
	int p4, p6 = 0, fi, fx, f1, f2, f3, f4, rc;
	unsigned char b[WEFT_WIRE_MAX_FRAME];
	struct timespec t0, t1;
	long long conns;
	const char *tokens;
	uint8_t af;
	struct sw s;

	CHECK(mkdtemp(dir) != NULL);
	tokens = write_tokens(dir, 1, 4, 0600);
	/* No TCP listener without tokens, and a listener needs HOST:PORT. */
	snprintf(cmd, sizeof(cmd), "%s --listen 127.0.0.1:0 --ctl %s/c --insecure 2>&1", swbin,
		 dir);
	rc = run_shell(cmd, out, sizeof(out));
	CHECK(WIFEXITED(rc) && WEXITSTATUS(rc) == 2 && strstr(out, "--listen needs --tokens"),
	      "--listen --insecure: rc %d, '%s'", rc, out);
	snprintf(cmd, sizeof(cmd), "%s --listen 127.0.0.1 --ctl %s/c --tokens %s 2>&1", swbin,
		 dir, tokens);
	rc = run_shell(cmd, out, sizeof(out));
	CHECK(WIFEXITED(rc) && WEXITSTATUS(rc) != 0 && strstr(out, "HOST:PORT"),
	      "--listen without a port: rc %d, '%s'", rc, out);
	t_checked("--listen with --insecure is refused (exit 2), --listen without a port too");

	if (v6)
		sw_start(&s, "41", "--tokens", tokens, "--listen", "127.0.0.1:0",
			 "--listen", "[::1]:0", NULL);
	else
		sw_start(&s, "41", "--tokens", tokens, "--listen", "127.0.0.1:0", NULL);
	unlink(tokens);
	rmdir(dir);
	p4 = tcp_port(&s, "127.0.0.1");
	if (v6)
		p6 = tcp_port(&s, "[::1]");
	REQUIRE(p4 > 0 && (!v6 || p6 > 0), "no TCP port in %s", s.log);

	/* A client that never says HELLO (its deadline runs from here). */
	clock_gettime(CLOCK_MONOTONIC, &t0);
	fi = connect_tcp(AF_INET, p4);
	CHECK(fi >= 0);

	/* Without the node's token: refused and closed, the address logged. */
	fx = connect_tcp(AF_INET, p4);
	CHECK(hello_fd(fx, 1, false, 0, 0, &af) == WEFT_SW_AUTH_FAILED);
	CHECK(only_eof(fx, WAIT_MS), "refused TCP client not closed");
	close(fx);
	fx = connect_tcp(AF_INET, p4);
	CHECK(hello_fd(fx, 1, true, 1, 0, &af) == WEFT_SW_AUTH_FAILED);
	CHECK(only_eof(fx, WAIT_MS), "refused TCP client not closed");
	close(fx);
	CHECK(counter(&s, -1, "auth_failed") == 2);
	CHECK(log_count(&s, "HELLO for node 1 from tcp 127\\.0\\.0\\.1:[0-9]+ rejected: "
			"authentication failed") == 2);
	t_checked("over TCP a HELLO without the node's token or with a wrong one is answered "
		  "AUTH_FAILED, closed, counted and logged with the peer address");

	/* A good client, asking for shared memory: the socket it is. */
	f1 = connect_tcp(AF_INET, p4);
	CHECK(hello_fd(f1, 1, true, 0, WEFT_WF_SHM_REQ, &af) == WEFT_SW_OK);
	CHECK(!(af & WEFT_WF_SHM), "shared memory granted over TCP (flags 0x%x)", af);
	f2 = connect_path(s.sock);
	CHECK(hello_fd(f2, 2, true, 0, 0, &af) == WEFT_SW_OK);
	CHECK(exact_frame(f1, f2, 1, 2, 7) && exact_frame(f2, f1, 2, 1, 8));
	CHECK(stream_both(f1, 1, f2, 2, 400), "stream TCP <-> UNIX out of order or short");
	CHECK(nothing_pending(f1) && nothing_pending(f2));
	CHECK(log_count(&s, "node 1 connected \\(tcp 127\\.0\\.0\\.1:[0-9]+, token checked, "
			"socket\\)$") == 1);
	t_checked("a TCP client with its token is node 1 on the socket transport (shared "
		  "memory asked, not granted); max-size frames byte-exact both ways with a UNIX "
		  "client, 400 each way in order");

	/* A length prefix beyond the largest frame drops the connection,
	 * registered or not. */
	f3 = connect_tcp(AF_INET, p4);
	CHECK(hello_fd(f3, 3, true, 0, 0, &af) == WEFT_SW_OK);
	CHECK(send_raw(f3, WEFT_WIRE_MAX_FRAME + 1, b, 16));
	CHECK(only_eof(f3, WAIT_MS), "oversize prefix over TCP: not closed");
	close(f3);
	fx = connect_tcp(AF_INET, p4);
	CHECK(fx >= 0 && send_raw(fx, 0xfffffff0u, b, 16));
	CHECK(only_eof(fx, WAIT_MS), "oversize prefix before HELLO over TCP: not closed");
	close(fx);
	CHECK(wait_counter(&s, -1, "oversize", 2));
	CHECK(log_count(&s, "length prefix [0-9]+ beyond [0-9]+ from (node 3|unregistered "
			"client 0) \\(tcp 127\\.0\\.0\\.1:[0-9]+\\): connection dropped") == 2);
	CHECK(exact_frame(f1, f2, 1, 2, 9), "node 1 hurt by the dropped clients");
	t_checked("an oversize length prefix over TCP drops the connection (after HELLO and "
		  "before), counted and logged with the address; node 1 goes on");

	if (v6) {
		f4 = connect_tcp(AF_INET6, p6);
		CHECK(hello_fd(f4, 4, true, 0, 0, &af) == WEFT_SW_OK);
		CHECK(exact_frame(f4, f1, 4, 1, 10) && exact_frame(f1, f4, 1, 4, 11));
		CHECK(log_count(&s, "node 4 connected \\(tcp \\[::1\\]:[0-9]+, token checked") == 1);
		close(f4);
		t_checked("IPv6: a client on [::1] is node 4, frames byte-exact with the IPv4 "
			  "TCP node 1, its address logged in brackets");
	} else {
		t_diag("no IPv6 loopback here: the [::1] listener was not tried");
	}

	/* The silent client is closed at its deadline, not before. */
	CHECK(only_eof(fi, WAIT_MS), "TCP client without HELLO not closed");
	clock_gettime(CLOCK_MONOTONIC, &t1);
	CHECK(t1.tv_sec - t0.tv_sec >= 9, "closed after %ld s", (long)(t1.tv_sec - t0.tv_sec));
	close(fi);
	CHECK(wait_counter(&s, -1, "hello_timeout", 1) && counter(&s, -1, "hello_timeout") == 1);
	conns = counter(&s, -1, "tcp_connections");
	CHECK(conns == (v6 ? 7 : 6), "tcp_connections %lld", conns);
	CHECK(log_count(&s, "tcp 127\\.0\\.0\\.1:[0-9]+: no node after 10 s") == 1);
	t_checked("a TCP client without a node is closed after 10 s (hello_timeout), TCP "
		  "connections counted");
	close(f1);
	close(f2);
	sw_stop(&s);
}

static const struct {
	const char *name;
	void (*fn)(void);
} tests[] = {
	{ "start-errors", test_start_errors },
	{ "routing-broadcast", test_routing_broadcast },
	{ "mcast", test_mcast },
	{ "drop-rule", test_drop_rule },
	{ "reorder-routes", test_reorder_routes },
	{ "delay-jitter", test_delay_jitter },
	{ "drop-seeded", test_drop_seeded },
	{ "port-down-up", test_port_down_up },
	{ "capture-replay", test_capture_replay },
	{ "reconnect", test_reconnect },
	{ "bad-frames", test_bad_frames },
	{ "ctl-errors", test_ctl_errors },
	{ "backpressure", test_backpressure },
	{ "stream", test_stream },
	{ "slow-receiver", test_slow_receiver },
	{ "partial-writes", test_partial_writes },
	{ "auth-hijack", test_auth_hijack },
	{ "local-surfaces", test_local_surfaces },
	{ "fault-words", test_fault_words },
	{ "non-readers", test_non_readers },
	{ "churn-rss", test_churn_rss },
	{ "held-broadcast", test_held_broadcast },
	{ "shm", test_shm },
	{ "tcp", test_tcp },
};

int main(int argc, char **argv)
{
	size_t i;
	int j, ran = 0;

	if (argc < 2) {
		fprintf(stderr, "usage: switch-test PATH-TO-weft-switch [TEST...]\n");
		return 2;
	}
	swbin = argv[1];
	if (access(swbin, X_OK) != 0)
		t_bail("weft-switch binary %s is missing or not executable", swbin);
	signal(SIGPIPE, SIG_IGN);
	for (i = 0; i < sizeof(tests) / sizeof(tests[0]); i++) {
		bool want = argc == 2;

		for (j = 2; j < argc; j++)
			want |= !strcmp(argv[j], tests[i].name);
		if (!want)
			continue;
		t_begin("%s", tests[i].name);
		tests[i].fn();
		ran++;
	}
	if (!ran)
		t_bail("no test matched");
	return t_done();
}
