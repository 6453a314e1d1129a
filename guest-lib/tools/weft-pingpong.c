/* SPDX-License-Identifier: MIT */
/*
 * weft-pingpong: one-way latency (round trip / 2) in FIFO mode (packet
 * echoed by the server) and RDMA mode (RDMA write with target completion,
 * answered by an RDMA write back), with percentiles.  A lost round trip
 * (no answer within 1 s of device time) is re-sent and counted.  Every
 * answer is checked byte for byte: the message carries a pattern seeded
 * by its sequence number, the FIFO echo must carry it back, and the RDMA
 * answer writes the server's copy back into the second half of the
 * client's buffer.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "common.h"

#define TAG     0x50494e47u     /* "PING" */
#define PMAGIC  0x676e6950u

static const struct tool_desc desc;

/*
 * --wait: how this side waits for an answer.  Busy polls the receive
 * FIFO for up to BUSY_SPIN_NS per wait (longer than any wait the tool
 * asks for, so it never sleeps); irq sleeps on the adapter's interrupt
 * at once; hybrid keeps libweft's default spin (weft_win_set_spin).
 */
#define BUSY_SPIN_NS 2000000000ull
static enum { WAIT_HYBRID, WAIT_BUSY, WAIT_IRQ } wait_mode;

static void set_wait_mode(struct tool_ctx *c)
{
	if (wait_mode == WAIT_BUSY)
		weft_win_set_spin(c->win, BUSY_SPIN_NS);
	else if (wait_mode == WAIT_IRQ)
		weft_win_set_spin(c->win, 0);
}

struct ping {
	uint32_t magic;
	uint32_t seq;
};

/* Two halves: the message at 0, the RDMA answer at the second half. */
static size_t buf_size(const struct tool_opts *o)
{
	return 2 * (o->min_size < 4096 ? 4096 : (size_t)o->min_size);
}

static int reply_rdma(struct tool_ctx *c, uint64_t len, uint64_t cookie)
{
	struct weft_rdma op = {
		.node = c->peer.node, .window = c->peer.window,
		.local_rcxt = c->mine.rcxt[1], .remote_rcxt = c->peer.rcxt[0],
		.remote_rcxt_key = c->peer.key[0], .notify = WEFT_COMP_TARGET,
		.local_pvo = c->buf_pvo, .remote_pvo = c->peer.buf_pvo + c->peer.buf_len / 2,
		.length = len, .user_cookie = cookie,
	};
	struct weft_entry e;
	for (;;) {
		int r = weft_win_rdma_write(c->win, &op);
		if (r != -EAGAIN)
			return r;
		if ((r = weft_win_poll(c->win, &e)) < 0)
			return r;
	}
}

static int server(struct tool_ctx *c)
{
	struct weft_entry e;
	set_wait_mode(c);
	for (;;) {
		int r = tool_poll_wait(c, &e, 1000);
		if (r < 0) {
			tool_err(desc.name, "serving node %u window %u: %s", c->peer.node,
				 c->peer.window, tool_strerror(r));
			return r;
		}
		if (r == 0)
			continue;
		if (e.type == WEFT_ENT_COMPLETION && (e.flags & WEFT_ENT_F_TARGET) && !e.status) {
			if (e.length > c->buf_len || e.length == 0)
				continue;
			if ((r = reply_rdma(c, e.length, e.user_cookie)) < 0) {
				tool_err(desc.name, "answering node %u: %s", c->peer.node,
					 tool_strerror(r));
				return r;
			}
			continue;
		}
		if (e.type != WEFT_ENT_PACKET)
			continue;
		struct ping p;
		if (e.length >= sizeof(p)) {
			memcpy(&p, e.data, sizeof(p));
			if (p.magic == PMAGIC) {
				while ((r = weft_win_send(c->win, e.src_node, e.src_window, e.data,
							  e.length)) == -EAGAIN)
					weft_win_poll(c->win, &e);
				continue;
			}
		}
		if (weft_rdv_is_bye(c->win, desc.tag, &e))
			return tool_linger(c, &desc);
		weft_rdv_handle(c->win, desc.tag, &e, &c->mine, sizeof(c->mine));
	}
}

/* Wait for the answer of seq; 1 = got it, 0 = timed out, -EBADMSG = it
 * differs from what was sent (size bytes, pattern seeded by seq), < 0
 * error. */
static int await(struct tool_ctx *c, int rdma, uint32_t seq, uint64_t size, uint64_t limit_ns)
{
	struct weft_entry e;
	uint64_t start = weft_dev_now_ns(c->dev);
	for (;;) {
		int r = weft_win_poll(c->win, &e);
		if (r < 0)
			return r;
		if (r == 0) {
			if (weft_dev_now_ns(c->dev) - start >= limit_ns)
				return 0;
			if ((r = weft_win_wait(c->win, 100)) < 0)
				return r;
			continue;
		}
		if (rdma && e.type == WEFT_ENT_COMPLETION && (e.flags & WEFT_ENT_F_TARGET) &&
		    e.user_cookie == seq && !e.status)
			return e.length == size &&
			       tool_pat_diff(c->buf + c->buf_len / 2, size, seq) < 0 ? 1 : -EBADMSG;
		if (!rdma && e.type == WEFT_ENT_PACKET && e.length >= sizeof(struct ping)) {
			struct ping p;
			memcpy(&p, e.data, sizeof(p));
			if (p.magic == PMAGIC && p.seq == seq)
				return e.length == size &&
				       tool_pat_diff(e.data + sizeof(p), size - sizeof(p), seq) < 0 ?
				       1 : -EBADMSG;
		}
		if (e.type == WEFT_ENT_PACKET)
			weft_rdv_handle(c->win, desc.tag, &e, &c->mine, sizeof(c->mine));
	}
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

static double pct(const uint64_t *v, unsigned int n, double p)
{
	unsigned int i = (unsigned int)(p / 100.0 * (n - 1) + 0.5);
	return (double)v[i < n ? i : n - 1] / 1000.0;
}

static int run_mode(struct tool_ctx *c, int rdma, int first)
{
	unsigned int iters = c->o.iters, warm = iters / 10 + 1;
	uint64_t size = c->o.min_size;
	uint64_t *lat = calloc(iters, sizeof(*lat));
	uint8_t pkt[WEFT_LIB_MAX_PAYLOAD];
	if (!lat)
		return -ENOMEM;
	uint64_t lost = 0, sum = 0, verified = 0;
	int r = 0;
	for (unsigned int i = 0; i < warm + iters && r >= 0; i++) {
		uint32_t seq = i + (rdma ? 0x40000000u : 0);
		if (rdma)
			tool_pat_fill(c->buf, size, seq);
		else
			tool_pat_fill(pkt + sizeof(struct ping), size - sizeof(struct ping), seq);
		uint64_t t0 = tool_now_ns();
		for (;;) {
			if (rdma) {
				struct weft_rdma op = {
					.node = c->peer.node, .window = c->peer.window,
					.local_rcxt = c->mine.rcxt[1], .remote_rcxt = c->peer.rcxt[0],
					.remote_rcxt_key = c->peer.key[0], .notify = WEFT_COMP_TARGET,
					.local_pvo = c->buf_pvo, .remote_pvo = c->peer.buf_pvo,
					.length = size, .user_cookie = seq,
				};
				r = weft_win_rdma_write(c->win, &op);
			} else {
				struct ping p = { PMAGIC, seq };
				memcpy(pkt, &p, sizeof(p));
				r = weft_win_send(c->win, c->peer.node, c->peer.window, pkt, size);
			}
			if (r == -EAGAIN) {
				struct weft_entry e;
				weft_win_poll(c->win, &e);
				continue;
			}
			if (r < 0)
				break;
			r = await(c, rdma, seq, size, 1000000000ull);
			if (r != 0)
				break;
			lost++;
			/* Re-sent for --timeout without an answer: the peer is gone. */
			if (tool_now_ns() - t0 >= (uint64_t)c->o.timeout_ms * 1000000ull) {
				r = -ETIMEDOUT;
				break;
			}
		}
		uint64_t t1 = tool_now_ns();
		verified += r > 0;
		if (i >= warm && r > 0) {
			lat[i - warm] = (t1 - t0) / 2;
			sum += lat[i - warm];
		}
	}
	if (r == -ETIMEDOUT) {
		tool_err(desc.name, "%s ping-pong: no answer from node %u for %d ms (--timeout): "
			 "giving up", rdma ? "RDMA" : "FIFO", c->peer.node, c->o.timeout_ms);
		free(lat);
		return r;
	}
	if (r == -EBADMSG) {
		tool_err(desc.name, "%s ping-pong: the answer to round trip %u differs from what was "
			 "sent (%" PRIu64 " bytes)", rdma ? "RDMA" : "FIFO", (unsigned int)verified,
			 size);
		free(lat);
		return r;
	}
	if (r < 0) {
		tool_err(desc.name, "%s ping-pong: %s", rdma ? "RDMA" : "FIFO", tool_strerror(r));
		free(lat);
		return r;
	}
	qsort(lat, iters, sizeof(*lat), cmp_u64);
	const char *m = rdma ? "rdma" : "fifo";
	if (c->o.json)
		printf("%s{\"mode\":\"%s\",\"size\":%" PRIu64 ",\"iters\":%u,\"lost\":%" PRIu64
		       ",\"verified\":%" PRIu64 ",\"lat_us\":{\"min\":%.3f,\"p50\":%.3f,\"p90\":%.3f,\"p99\":%.3f,"
		       "\"p99.9\":%.3f,\"max\":%.3f,\"mean\":%.3f}}",
		       first ? "" : ",", m, size, iters, lost, verified, pct(lat, iters, 0),
		       pct(lat, iters, 50), pct(lat, iters, 90), pct(lat, iters, 99),
		       pct(lat, iters, 99.9), pct(lat, iters, 100), (double)sum / iters / 1000.0);
	else
		printf("%-5s %8" PRIu64 " B %7u iters  lost %-4" PRIu64 " verified %-7" PRIu64
		       " one-way us: min %.2f p50 %.2f p90 %.2f p99 %.2f p99.9 %.2f max %.2f mean %.2f\n",
		       m, size, iters, lost, verified, pct(lat, iters, 0), pct(lat, iters, 50),
		       pct(lat, iters, 90), pct(lat, iters, 99), pct(lat, iters, 99.9),
		       pct(lat, iters, 100), (double)sum / iters / 1000.0);
	free(lat);
	return 0;
}

static int client(struct tool_ctx *c)
{
	const char *mode = c->o.mode;
	int fifo = !strcmp(mode, "fifo") || !strcmp(mode, "both");
	int rdma = !strcmp(mode, "rdma") || !strcmp(mode, "both");
	if (fifo && (c->o.min_size < sizeof(struct ping) || c->o.min_size > WEFT_LIB_MAX_PAYLOAD)) {
		tool_err(desc.name, "FIFO mode needs --size %zu..%u", sizeof(struct ping),
			 WEFT_LIB_MAX_PAYLOAD);
		return -1;
	}
	if (c->peer.buf_len < c->o.min_size) {
		tool_err(desc.name, "server buffer too small: give the same --size on both sides");
		return -1;
	}
	set_wait_mode(c);
	if (c->o.json)
		printf("{\"backend\":\"%s\",\"wait\":\"%s\",\"results\":[",
		       c->o.sim ? "sim" : "kernel",
		       wait_mode == WAIT_BUSY ? "busy" : wait_mode == WAIT_IRQ ? "irq" : "hybrid");
	int r = 0;
	if (fifo)
		r = run_mode(c, 0, 1);
	if (!r && rdma)
		r = run_mode(c, 1, !fifo);
	if (c->o.json)
		printf("]}\n");
	tool_bye(c, &desc);
	return r;
}

enum { OPT_MODE = TOOL_OPT_BASE, OPT_WAIT, OPT_SIZE, OPT_ITERS };

static const struct option options[] = {
	{ "mode", required_argument, NULL, OPT_MODE },
	{ "wait", required_argument, NULL, OPT_WAIT },
	{ "size", required_argument, NULL, OPT_SIZE },
	{ "iters", required_argument, NULL, OPT_ITERS },
	{ NULL, 0, NULL, 0 },
};

static int option(struct tool_opts *o, const struct option *opt, const char *v)
{
	uint64_t n;

	switch (opt->val) {
	case OPT_MODE:
		return tool_mode_option(o, desc.name, v, "fifo", "rdma");
	case OPT_WAIT:
		if (!strcmp(v, "busy")) {
			wait_mode = WAIT_BUSY;
		} else if (!strcmp(v, "irq")) {
			wait_mode = WAIT_IRQ;
		} else if (!strcmp(v, "hybrid")) {
			wait_mode = WAIT_HYBRID;
		} else {
			tool_err(desc.name, "--wait: busy, irq or hybrid, not '%s'", v);
			return -1;
		}
		return 0;
	default:
		if (tool_parse_size(v, &n) || n == 0 || n > (1u << 24)) {
			tool_err(desc.name, "--%s: bad value '%s'", opt->name, v);
			return -1;
		}
		if (opt->val == OPT_SIZE)
			o->min_size = n;
		else
			o->iters = (unsigned int)n;
		return 0;
	}
}

static const struct tool_desc desc = {
	.name = "weft-pingpong",
	.summary = "Measure one-way latency (round trip / 2) in FIFO and RDMA modes.",
	.extra_help = "Tool options:\n"
		      "  --mode M             fifo, rdma or both (default both)\n"
		      "  --size N             message bytes (default 8; FIFO mode <= 1920)\n"
		      "  --iters N            round trips measured (default 1000)\n"
		      "  --wait W             busy (poll the FIFO), irq (sleep on the interrupt)\n"
		      "                       or hybrid (libweft's short spin, then sleep; default)\n",
	.tag = TAG,
	.two_node = true,
	.nr_rcxt = 2,
	.def_min_size = 8,
	.def_iters = 1000,
	.def_mode = "both",
	.buf_size = buf_size,
	.options = options,
	.option = option,
	.server = server,
	.client = client,
};

int main(int argc, char **argv)
{
	return tool_main(&desc, argc, argv);
}
