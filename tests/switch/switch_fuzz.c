/* SPDX-License-Identifier: MIT */
/*
 * Fuzzing weft-switch from outside: a real switch process (the sanitized
 * build in the 'san' suite) and up to 24 client connections doing random
 * things: random and valid HELLOs (good, wrong and missing tokens, bad
 * versions and lengths), well-formed and broken frames of random
 * lengths and destinations, garbage, frames cut in two, oversize length
 * prefixes, disconnects, clients that never read, a few control
 * commands, and clients on the shared-memory transport (weft-host/shm.h)
 * that publish good and broken frames and scribble on the ring indexes,
 * record lengths, data and header.  Every 5,000 actions the switch must still answer its
 * control socket in time (no stall); at the end two good clients must
 * still exchange frames in order, and the switch must exit 0 on SIGTERM
 * with no sanitizer report in its log.
 *
 *   switch-fuzz PATH-TO-weft-switch [--actions N] [--seed S]
 *
 * Speaks TAP (tests/common/weft_test.h): three points (the actions with
 * the switch up and answering, forwarding at the end, a clean exit), the
 * figures of the run (actions by kind, frames and bytes sent, the
 * switch's counters) as "#" lines.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "weft-host/shm.h"
#include "weft/wire.h"
#include "weft_test.h"
#include "wire_io.h"

#define NCLIENTS        24
#define NODES           12      /* node ids 0..11 have tokens */
#define CHECK_EVERY     5000
#define CTL_TIMEOUT_MS  20000

static uint64_t rng;
static unsigned char tokens[NODES][WEFT_WIRE_TOKEN_SIZE];
static char dir[64] = "/tmp/weft-swfuzz-XXXXXX";
static char sock[96], ctlp[96], logp[96];
static pid_t swpid;

enum act { A_CONNECT, A_CLOSE, A_HELLO, A_FRAME, A_BADFRAME, A_GARBAGE, A_SPLIT,
	   A_OVERSIZE, A_READ, A_CTL, A_SHM, A__N };
static const char *const act_name[A__N] = {
	"connect", "close", "hello", "frame", "bad-frame", "garbage", "split", "oversize",
	"read", "ctl", "shm",
};
static uint64_t acts[A__N], frames_sent, bytes_sent;

struct cl {
	int fd;
	bool reads;     /* some clients never read */
	uint16_t node;  /* the node it claimed last (0xffff: none) */
	void *mem;      /* shared memory granted to it, or NULL */
	int efd_switch;
	struct weft_shm_view tx;
};

static struct cl cls[NCLIENTS];

static uint64_t rnd(void)
{
	uint64_t z = (rng += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static uint64_t below(uint64_t n)
{
	return n ? rnd() % n : 0;
}

/* How often each action is drawn (out of their sum): mostly traffic from
 * registered clients, now and then everything else. */
static const unsigned int weight[A__N] = {
	[A_CONNECT] = 4, [A_CLOSE] = 3, [A_HELLO] = 8, [A_FRAME] = 45, [A_BADFRAME] = 8,
	[A_GARBAGE] = 3, [A_SPLIT] = 8, [A_OVERSIZE] = 1, [A_READ] = 18, [A_CTL] = 1,
	[A_SHM] = 10,
};

static enum act pick(void)
{
	unsigned int sum = 0, r, k;

	for (k = 0; k < A__N; k++)
		sum += weight[k];
	r = (unsigned int)below(sum);
	for (k = 0; r >= weight[k]; k++)
		r -= weight[k];
	return (enum act)k;
}

/* End the run after a failed check. */
__attribute__((noreturn)) static void finish(void)
{
	if (swpid > 0)
		kill(swpid, SIGKILL);
	exit(t_done());
}

/* A failed check that ends the run: the open point fails. */
__attribute__((noreturn)) static void die(const char *what)
{
	CHECK(0, "%s (switch log %s)", what, logp);
	finish();
}

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* Non-blocking send of a whole buffer, or of nothing if the socket is
 * full right now (the stream may then be cut: that is fuzz too). */
static void cl_close(struct cl *c)
{
	if (c->mem) {
		munmap(c->mem, WEFT_SHM_SIZE);
		close(c->efd_switch);
		c->mem = NULL;
	}
	close(c->fd);
	c->fd = -1;
}

static void send_nb(struct cl *c, const void *p, size_t len)
{
	ssize_t n;

	if (c->fd < 0)
		return;
	n = send(c->fd, p, len, MSG_NOSIGNAL | MSG_DONTWAIT);
	if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK) {
		cl_close(c);
		return;
	}
	if (n > 0)
		bytes_sent += (uint64_t)n;
}

static void send_frame_nb(struct cl *c, const void *frame, size_t len, uint32_t prefix)
{
	unsigned char b[4 + WEFT_WIRE_MAX_FRAME + 64];

	put_le32(b, prefix);
	memcpy(b + 4, frame, len);
	send_nb(c, b, 4 + len);
	frames_sent++;
}

static uint16_t rnd_node(void)
{
	switch (below(8)) {
	case 0: return (uint16_t)rnd();
	case 1: return WEFT_NODE_BROADCAST;
	case 2: return (uint16_t)(WEFT_NODE_MCAST_BASE + below(4));
	default: return (uint16_t)below(NODES + 2);
	}
}

static void do_hello(struct cl *c)
{
	unsigned char b[WEFT_WIRE_HDR_SIZE + WEFT_WIRE_TOKEN_SIZE + 8];
	uint16_t node = below(8) ? (uint16_t)below(NODES + 2) : (uint16_t)rnd();
	struct weft_wire_hdr h = wire_hdr(WEFT_PKT_HELLO, node, 0, 0, 0);
	size_t len = sizeof(h);
	/* 0-2: bad magic, version, length; 3-7: the node's token; 8: one bit
	 * off; 9: random bytes of a random length. */
	unsigned int k = below(2) ? 3 + (unsigned int)below(5) : (unsigned int)below(10);

	h.key = k == 0 ? (uint32_t)rnd() : WEFT_WIRE_HELLO_MAGIC;
	if (below(2))
		h.flags = WEFT_WF_SHM_REQ;
	if (k == 1)
		h.version = (uint8_t)rnd();
	if (k >= 3) {
		/* With a token: the node's own (mostly), a wrong one, a short one. */
		size_t tl = k == 9 ? below(WEFT_WIRE_TOKEN_SIZE + 8) : WEFT_WIRE_TOKEN_SIZE;
		size_t i;

		for (i = 0; i < tl; i++)
			b[len + i] = node < NODES && k <= 7 && i < WEFT_WIRE_TOKEN_SIZE ?
				     tokens[node][i] : (unsigned char)rnd();
		if (k == 8 && node < NODES)
			b[len + below(tl)] ^= 1;
		len += tl;
		h.length = (uint32_t)tl;
	}
	if (k == 2)
		h.length = (uint32_t)rnd();
	memcpy(b, &h, sizeof(h));
	c->node = node;
	send_frame_nb(c, b, len, (uint32_t)len);
}

/* A data frame: mostly well formed from the node it claimed. */
static size_t make_frame(struct cl *c, unsigned char *b, bool broken)
{
	uint32_t pay = (uint32_t)(below(3) ? below(256) : below(WEFT_MAX_PAYLOAD + 1));
	struct weft_wire_hdr h = wire_hdr((uint8_t)(1 + below(6)), c->node, rnd_node(),
					  (uint32_t)rnd(), pay);
	size_t i;

	if (broken) {
		switch (below(5)) {
		case 0: h.version = (uint8_t)rnd(); break;
		case 1: h.length = (uint32_t)rnd(); break;
		case 2: h.src_node = (uint16_t)rnd(); break;
		case 3: h.type = (uint8_t)rnd(); break;
		default: h.type = WEFT_PKT_HELLO_ACK; break;
		}
	}
	memcpy(b, &h, sizeof(h));
	for (i = 0; i < pay; i++)
		b[sizeof(h) + i] = (unsigned char)rnd();
	return sizeof(h) + pay;
}

/* Descriptors that came with a HELLO_ACK: map the memfd once. */
static void take_fds(struct cl *c, struct msghdr *m)
{
	struct cmsghdr *cm = CMSG_FIRSTHDR(m);
	int fds[WEFT_SHM_NFDS];
	size_t i;

	if (!cm || cm->cmsg_type != SCM_RIGHTS || cm->cmsg_len != CMSG_LEN(sizeof(fds)))
		return;
	memcpy(fds, CMSG_DATA(cm), sizeof(fds));
	if (!c->mem) {
		c->mem = mmap(NULL, WEFT_SHM_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, fds[0], 0);
		if (c->mem == MAP_FAILED) {
			c->mem = NULL;
		} else {
			c->efd_switch = fds[2];
			fds[2] = -1;
			weft_shm_view_init(&c->tx, c->mem, WEFT_SHM_A2S_OFF, true);
		}
	}
	for (i = 0; i < WEFT_SHM_NFDS; i++)
		if (fds[i] >= 0)
			close(fds[i]);
}

static void drain(struct cl *c)
{
	unsigned char b[65536];
	union {
		struct cmsghdr h;
		char buf[CMSG_SPACE(WEFT_SHM_NFDS * sizeof(int))];
	} u;

	while (c->fd >= 0) {
		struct iovec iov = { b, sizeof(b) };
		struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1,
				    .msg_control = u.buf, .msg_controllen = sizeof(u.buf) };
		ssize_t n = recvmsg(c->fd, &m, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);

		if (n > 0) {
			take_fds(c, &m);
			continue;
		}
		if (n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK))
			cl_close(c);
		return;
	}
}

/* A shared-memory client: a good or broken frame through its ring, or
 * scribbles on what the switch reads (indexes, a record length, data,
 * the header); then it wakes the switch. */
static void do_shm(struct cl *c)
{
	unsigned char b[WEFT_WIRE_MAX_FRAME + 64];
	struct weft_shm_ring *s2a = (struct weft_shm_ring *)((unsigned char *)c->mem +
							     WEFT_SHM_S2A_OFF);
	uint64_t one = 1;
	uint32_t v = (uint32_t)rnd();
	size_t len;

	switch (below(12)) {
	case 0: c->tx.ctl->head = below(2) ? v : c->tx.pos + (v & 0xff); break;
	case 1: s2a->tail = below(2) ? v : s2a->tail + (v & 0xff); break;
	case 2:
		memcpy(c->tx.data + (c->tx.pos + 8 * below(4)) % WEFT_SHM_RING_SIZE, &v, sizeof(v));
		c->tx.ctl->head = c->tx.pos + 8 * (uint32_t)below(300);
		break;
	case 3: ((unsigned char *)c->mem)[below(sizeof(struct weft_shm_hdr))] ^= 1; break;
	case 4: c->tx.data[below(WEFT_SHM_RING_SIZE)] = (unsigned char)v; break;
	default:
		len = make_frame(c, b, below(4) == 0);
		if (len > WEFT_WIRE_MAX_FRAME)
			len = WEFT_WIRE_MAX_FRAME;
		if (weft_shm_push(&c->tx, b, (uint32_t)len) == 0)
			frames_sent++;
		break;
	}
	if (write(c->efd_switch, &one, sizeof(one)) < 0 && errno != EAGAIN)
		cl_close(c);
}

/* One control request; the reply in out.  False if the switch did not
 * answer within CTL_TIMEOUT_MS. */
static bool ctl_req(const char *cmd, char *out, size_t outlen)
{
	int fd = connect_path(ctlp);
	uint64_t end = now_ms() + CTL_TIMEOUT_MS;
	size_t len = 0;
	char line[256];
	int n = snprintf(line, sizeof(line), "%s\n", cmd);

	out[0] = 0;
	if (fd < 0)
		return false;
	if (!write_all(fd, line, (size_t)n)) {
		close(fd);
		return false;
	}
	shutdown(fd, SHUT_WR);
	for (;;) {
		struct pollfd pf = { fd, POLLIN, 0 };
		uint64_t t = now_ms();
		ssize_t r;

		if (t >= end || poll(&pf, 1, (int)(end - t)) <= 0)
			break;
		r = read(fd, out + len, outlen - 1 - len);
		if (r <= 0)
			break;
		len += (size_t)r;
		if (len == outlen - 1)
			break;
	}
	out[len] = 0;
	close(fd);
	return !strncmp(out, "OK\n", 3);
}

static void do_ctl(void)
{
	static const char *const cmds[] = {
		"counters", "nodes", "faults", "set drop_ppm=20000", "set --routes 3",
		"set jitter_ns=100000", "clear", "port 3 down", "port 3 up", "mcast join 1 4",
		"mcast leave 1 4", "mcast join 2 7", "replay 20", "mark", "--json counters",
		"set hold=50", "frobnicate", "port 99999 down",
	};
	char out[65536];

	ctl_req(cmds[below(sizeof(cmds) / sizeof(cmds[0]))], out, sizeof(out));
}

static void action(void)
{
	unsigned char b[WEFT_WIRE_MAX_FRAME + 64];
	struct cl *c = &cls[below(NCLIENTS)];
	enum act a = pick();
	size_t len, i;

	if (c->fd < 0 && a != A_CTL)
		a = A_CONNECT;
	acts[a]++;
	switch (a) {
	case A_CONNECT:
		if (c->fd >= 0)
			cl_close(c);
		c->fd = connect_path(sock);
		c->reads = below(3) != 0;
		c->node = 0xffff;
		if (below(4))
			do_hello(c);
		break;
	case A_CLOSE:
		cl_close(c);
		break;
	case A_HELLO:
		do_hello(c);
		break;
	case A_FRAME:
	case A_BADFRAME:
		len = make_frame(c, b, a == A_BADFRAME);
		send_frame_nb(c, b, len, (uint32_t)len);
		break;
	case A_GARBAGE:
		len = below(sizeof(b));
		for (i = 0; i < len; i++)
			b[i] = (unsigned char)rnd();
		send_nb(c, b, len);
		break;
	case A_SPLIT:
		/* A frame in two writes (the switch reassembles), or cut. */
		len = make_frame(c, b + 4, false);
		put_le32(b, (uint32_t)(below(8) ? len : below(WEFT_WIRE_MAX_FRAME)));
		i = 1 + below(len + 3);
		send_nb(c, b, i);
		if (below(4))
			send_nb(c, b + i, len + 4 - i);
		break;
	case A_OVERSIZE:
		put_le32(b, (uint32_t)(WEFT_WIRE_MAX_FRAME + 1 + below(1u << 30)));
		send_nb(c, b, 4);
		break;
	case A_READ:
		drain(c);
		break;
	case A_CTL:
		do_ctl();
		break;
	case A_SHM:
		if (c->mem)
			do_shm(c);
		else
			drain(c);
		break;
	case A__N:
		break;
	}
	/* Readers read now and then; the others never do. */
	if (c->reads && below(4) == 0)
		drain(c);
}

static void write_tokens(const char *path)
{
	FILE *fp;
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	unsigned int n, i;

	fp = fd >= 0 ? fdopen(fd, "w") : NULL;
	if (!fp)
		t_bail("cannot write the token file %s", path);
	for (n = 0; n < NODES; n++) {
		fprintf(fp, "%u ", n);
		for (i = 0; i < WEFT_WIRE_TOKEN_SIZE; i++) {
			tokens[n][i] = (unsigned char)rnd();
			fprintf(fp, "%02x", tokens[n][i]);
		}
		fprintf(fp, "\n");
	}
	fclose(fp);
}

static void start_switch(const char *bin)
{
	char tok[128];
	int i;

	if (!mkdtemp(dir))
		t_bail("mkdtemp: %s", strerror(errno));
	snprintf(sock, sizeof(sock), "%s/sw.sock", dir);
	snprintf(ctlp, sizeof(ctlp), "%s/ctl.sock", dir);
	snprintf(logp, sizeof(logp), "%s/switch.log", dir);
	snprintf(tok, sizeof(tok), "%s/tokens", dir);
	write_tokens(tok);
	swpid = fork();
	if (swpid == 0) {
		int fd = open(logp, O_WRONLY | O_CREAT | O_TRUNC, 0600);

		if (fd >= 0) {
			dup2(fd, 2);
			close(fd);
		}
		execl(bin, bin, "--socket", sock, "--ctl", ctlp, "--tokens", tok, "--run-dir", dir,
		      "--seed", "7", "--port-queue", "64", "--hold", "256", "--stall-ms", "100",
		      "--expire-ms", "200", (char *)NULL);
		_exit(127);
	}
	for (i = 0; i < 2000; i++) {
		int fd = connect_path(ctlp);

		if (fd >= 0) {
			close(fd);
			return;
		}
		if (waitpid(swpid, NULL, WNOHANG) == swpid)
			t_bail("weft-switch exited at start (log %s)", logp);
		usleep(10000);
	}
	t_bail("weft-switch did not start (log %s)", logp);
}

/* The switch is alive and answers its control socket in time. */
static void check_alive(uint64_t done)
{
	char out[65536];
	int st = 0;

	if (!CHECK(waitpid(swpid, &st, WNOHANG) != swpid,
		   "weft-switch died after %" PRIu64 " actions (status 0x%x, log %s)", done, st,
		   logp)) {
		swpid = -1;
		finish();
	}
	if (!CHECK(ctl_req("counters", out, sizeof(out)),
		   "no control answer within %d ms after %" PRIu64 " actions (stall)",
		   CTL_TIMEOUT_MS, done))
		finish();
}

/* A good client: HELLO with the node's token, blocking socket. */
static int good_client(uint16_t node)
{
	unsigned char b[WEFT_WIRE_HDR_SIZE + WEFT_WIRE_TOKEN_SIZE];
	struct weft_wire_hdr h = wire_hdr(WEFT_PKT_HELLO, node, 0, 0, WEFT_WIRE_TOKEN_SIZE);
	unsigned char p[4];
	int fd = connect_path(sock);
	size_t i;

	h.key = WEFT_WIRE_HELLO_MAGIC;
	memcpy(b, &h, sizeof(h));
	memcpy(b + sizeof(h), tokens[node], WEFT_WIRE_TOKEN_SIZE);
	put_le32(p, sizeof(b));
	if (fd < 0 || !write_all(fd, p, 4) || !write_all(fd, b, sizeof(b)))
		die("good client cannot connect");
	/* The HELLO_ACK (the node may still be held by a closing fuzz
	 * client for a moment: try again). */
	for (i = 0; i < 4 + WEFT_WIRE_HDR_SIZE;) {
		struct pollfd pf = { fd, POLLIN, 0 };
		ssize_t n;

		if (poll(&pf, 1, CTL_TIMEOUT_MS) <= 0)
			die("no HELLO_ACK for a good client");
		n = read(fd, i < 4 ? p + i : b + (i - 4), i < 4 ? 4 - i : 4 + WEFT_WIRE_HDR_SIZE - i);
		if (n <= 0)
			die("good client: connection closed");
		i += (size_t)n;
	}
	memcpy(&h, b, sizeof(h));
	if (h.status != WEFT_SW_OK) {
		close(fd);
		return -1;
	}
	return fd;
}

/* One frame; *tid is its tid if it is one of check_forwarding's frames
 * (from node 0, 64 bytes of 0x5a), else UINT32_MAX. */
static bool recv_one(int fd, uint32_t *tid)
{
	unsigned char b[WEFT_WIRE_MAX_FRAME], p[4];
	size_t got = 0, len;
	struct weft_wire_hdr h;

	while (got < 4) {
		struct pollfd pf = { fd, POLLIN, 0 };
		ssize_t n;

		if (poll(&pf, 1, CTL_TIMEOUT_MS) <= 0 || (n = read(fd, p + got, 4 - got)) <= 0)
			return false;
		got += (size_t)n;
	}
	len = get_le32(p);
	if (len < WEFT_WIRE_HDR_SIZE || len > WEFT_WIRE_MAX_FRAME)
		return false;
	for (got = 0; got < len;) {
		struct pollfd pf = { fd, POLLIN, 0 };
		ssize_t n;

		if (poll(&pf, 1, CTL_TIMEOUT_MS) <= 0 || (n = read(fd, b + got, len - got)) <= 0)
			return false;
		got += (size_t)n;
	}
	memcpy(&h, b, sizeof(h));
	*tid = UINT32_MAX;
	if (h.src_node == 0 && h.dst_node == 1 && len == sizeof(h) + 64 && b[sizeof(h)] == 0x5a &&
	    b[len - 1] == 0x5a)
		*tid = h.tid;
	return true;
}

/* Two good clients (nodes 0 and 1) still exchange 200 frames in order. */
static void check_forwarding(void)
{
	unsigned char b[WEFT_WIRE_MAX_FRAME];
	int a = -1, z = -1, i, tries;
	uint32_t tid, want = 0;

	for (tries = 0; tries < 200 && (a < 0 || z < 0); tries++) {
		if (a < 0)
			a = good_client(0);
		if (z < 0)
			z = good_client(1);
		if (a < 0 || z < 0)
			usleep(50000);
	}
	if (a < 0 || z < 0)
		die("good clients could not register nodes 0 and 1");
	/* Faults off, ports up, so the check is exact. */
	{
		char out[4096];

		if (!ctl_req("clear", out, sizeof(out)) || !ctl_req("port 0 up", out, sizeof(out)) ||
		    !ctl_req("port 1 up", out, sizeof(out)))
			die("control commands at the end");
	}
	for (i = 0; i < 200; i++) {
		struct weft_wire_hdr h = wire_hdr(WEFT_PKT_FIFO, 0, 1, (uint32_t)(1000000 + i), 64);
		unsigned char p[4];

		memcpy(b, &h, sizeof(h));
		memset(b + sizeof(h), 0x5a, 64);
		put_le32(p, sizeof(h) + 64);
		if (!write_all(a, p, 4) || !write_all(a, b, sizeof(h) + 64))
			die("good client cannot send");
	}
	/* Frames from the fuzz phase held for node 1 may come first. */
	while (want < 200) {
		if (!recv_one(z, &tid))
			die("good clients: frames stopped (stall)");
		if (tid < 1000000 || tid >= 1000200)
			continue;
		if (tid != 1000000 + want)
			die("good clients: frames out of order");
		want++;
	}
	CHECK(want == 200);
	close(a);
	close(z);
}

static void print_counters(void)
{
	char out[65536], *line, *save = NULL;

	if (!ctl_req("counters", out, sizeof(out)))
		return;
	for (line = strtok_r(out + 3, "\n", &save); line; line = strtok_r(NULL, "\n", &save))
		if (!strncmp(line, "total ", 6) || !strncmp(line, "switch ", 7))
			t_diag("%s", line);
}

int main(int argc, char **argv)
{
	uint64_t n = 100000, seed = 1, i, t0;
	char cmd[256], out[4096];
	int st = 0, k;
	FILE *p;

	if (argc < 2)
		t_bail("usage: switch-fuzz PATH-TO-weft-switch [--actions N] [--seed S]");
	for (k = 2; k < argc; k++) {
		if (!strcmp(argv[k], "--actions") && k + 1 < argc)
			n = strtoull(argv[++k], NULL, 0);
		else if (!strcmp(argv[k], "--seed") && k + 1 < argc)
			seed = strtoull(argv[++k], NULL, 0);
		else
			t_bail("unknown argument '%s'", argv[k]);
	}
	signal(SIGPIPE, SIG_IGN);
	rng = seed;
	for (k = 0; k < NCLIENTS; k++)
		cls[k].fd = -1;
	start_switch(argv[1]);
	t_begin("%" PRIu64 " random client actions (seed %" PRIu64 "): the switch stays up and "
		"answers its control socket every %u actions", n, seed, CHECK_EVERY);
	t0 = now_ms();
	for (i = 1; i <= n; i++) {
		action();
		if (i % CHECK_EVERY == 0)
			check_alive(i);
	}
	check_alive(n);
	{
		char line[512];
		size_t l = (size_t)snprintf(line, sizeof(line), "%" PRIu64 " actions in %.1f s:", n,
					    (double)(now_ms() - t0) / 1000.0);

		for (k = 0; k < A__N && l < sizeof(line); k++)
			l += (size_t)snprintf(line + l, sizeof(line) - l, " %s=%" PRIu64, act_name[k],
					      acts[k]);
		t_diag("%s", line);
	}
	t_diag("%" PRIu64 " frames, %" PRIu64 " bytes sent", frames_sent, bytes_sent);
	print_counters();
	for (k = 0; k < NCLIENTS; k++)
		if (cls[k].fd >= 0)
			cl_close(&cls[k]);
	t_begin("two good clients exchange 200 frames in order after the fuzzing");
	check_forwarding();
	t_begin("weft-switch exits 0 on SIGTERM with no sanitizer report in its log");
	kill(swpid, SIGTERM);
	k = waitpid(swpid, &st, 0) == swpid && WIFEXITED(st) && WEXITSTATUS(st) == 0;
	swpid = -1;
	if (!CHECK(k, "weft-switch did not exit cleanly (status 0x%x, log %s)", st, logp))
		return t_done();
	/* No sanitizer report in the switch's log. */
	snprintf(cmd, sizeof(cmd), "grep -c -E 'runtime error|AddressSanitizer|LeakSanitizer' %s",
		 logp);
	p = popen(cmd, "r");
	out[0] = 0;
	if (p) {
		if (!fgets(out, sizeof(out), p))
			out[0] = 0;
		pclose(p);
	}
	if (!CHECK(atoi(out) == 0, "sanitizer report in %s", logp))
		return t_done();
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	if (system(cmd) != 0)
		t_diag("cannot remove %s", dir);
	return t_done();
}
