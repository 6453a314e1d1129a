/* SPDX-License-Identifier: MIT */
/*
 * weft-cnt: counter-bearing RDMA objects (docs/counters.md) between two
 * nodes, self-checking.  The server exposes its buffer; the client moves
 * data with counter RDMA reads and writes and checks every byte.
 *
 *   --mode check   sizes min..max: read, write, read back; both
 *                  notification modes (interrupt wait, polled word)
 *   --mode retry   read a range the server exposes only after
 *                  --expose-delay: the first try must fail with
 *                  CNT_NOT_EXPOSED, a retry after the exposure succeeds
 *   --mode kill    start a read of --max-size bytes and die by SIGKILL
 *                  at once, mid-transfer
 *   --mode bench   bandwidth and latency of counter reads and writes next
 *                  to libweft's RDMA reads and writes, in one run
 *
 * Server buffer: [0, max) pattern (read source), [max, 2 max) write
 * target.  Client buffer: [0, max) read target, [max, 2 max) write source.
 */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common.h"

#define CNT_TAG         0x434e5431u     /* "CNT1" */
#define SEED_READ       0x5eadu
#define WAIT_MS         60000

enum cnt_mode { M_CHECK, M_RETRY, M_KILL, M_BENCH };

static const struct tool_desc desc;
static unsigned int expose_delay_ms;
static enum cnt_mode mode = M_CHECK;
static unsigned int notify = 3;         /* bit 0: interrupt, bit 1: poll */

static size_t span(const struct tool_opts *o)
{
	return (size_t)((2 * o->max_size + 4095) & ~4095ull);
}

/* The harness allocates and registers the buffer only for the bench (its
 * libweft RDMA baseline needs a PVO; 2 x 64 MiB would not fit the TCE
 * tables); counter RDMA needs no registration, so the other modes
 * allocate the buffer themselves (own_buf). */
static size_t buf_size(const struct tool_opts *o)
{
	return mode == M_BENCH ? span(o) : 0;
}

static int own_buf(struct tool_ctx *c)
{
	if (c->buf)
		return 0;
	c->buf_len = span(&c->o);
	c->buf = weft_dev_alloc(c->dev, c->buf_len);
	if (!c->buf) {
		tool_err("weft-cnt", "cannot allocate %zu bytes of buffer", c->buf_len);
		return -1;
	}
	return 0;
}

static int expose_half(struct tool_ctx *c, unsigned int half, unsigned int rights)
{
	uint32_t idx;
	int r = weft_cnt_expose(c->dev, c->buf + half * c->o.max_size, c->o.max_size, rights,
				c->peer.magic ? c->peer.node : WEFT_CNT_ANY_NODE, &idx);

	if (r)
		tool_err("weft-cnt", "exposing half %u: %s", half, tool_strerror(r));
	return r;
}

static int server_prepare(struct tool_ctx *c)
{
	if (own_buf(c))
		return -1;
	tool_pat_fill(c->buf, c->o.max_size, SEED_READ);
	memset(c->buf + c->o.max_size, 0, c->o.max_size);
	c->mine.buf_va = (uint64_t)(uintptr_t)c->buf;
	if (expose_half(c, 0, WEFT_CNT_EXPOSE_READ))
		return -1;
	return expose_delay_ms ? 0 : expose_half(c, 1, WEFT_CNT_EXPOSE_READ | WEFT_CNT_EXPOSE_WRITE);
}

static int server(struct tool_ctx *c)
{
	if (expose_delay_ms) {
		usleep(expose_delay_ms * 1000u);
		if (expose_half(c, 1, WEFT_CNT_EXPOSE_READ | WEFT_CNT_EXPOSE_WRITE))
			return -1;
		if (!c->o.json)
			printf("exposed the second half after %u ms\n", expose_delay_ms);
	}
	return tool_serve_until_bye(c, &desc);
}

/* One counter operation on [off, off + n) of a fresh object over the
 * client's buffer; waits by interrupt or by polling the word. */
static int cnt_op(struct tool_ctx *c, int is_read, uint64_t off, uint64_t n, uint64_t rva,
		  bool irq, unsigned int *reason)
{
	struct weft_cnt *k;
	uint64_t v;
	int r = weft_cnt_create(c->dev, c->buf + off, n, irq ? WEFT_CNT_F_IRQ : 0, 0, &k);

	*reason = 0;
	if (r)
		return r;
	v = weft_cnt_value(k);
	if (v != n) {
		tool_err("weft-cnt", "counter starts at %" PRIu64 ", not %" PRIu64, v, n);
		weft_cnt_destroy(k);
		return -EBADMSG;
	}
	r = is_read ? weft_cnt_read(k, 0, c->peer.node, 0, n, rva) :
		      weft_cnt_write(k, 0, c->peer.node, 0, n, rva);
	if (!r)
		r = weft_cnt_wait(k, 0, WAIT_MS);
	if (r == -EIO)
		weft_cnt_failures(k, reason);
	weft_cnt_destroy(k);
	return r;
}

/* A check that held (also with --json: the verdict stays the last line). */
static void say(const char *fmt, uint64_t n, const char *how)
{
	printf(fmt, n, how);
	fflush(stdout);
}

/* Sizes of --mode check: min, then powers of 4 up to max, each also
 * plus 5 bytes (not a whole number of chunks), and max. */
static unsigned int check_sizes(const struct tool_opts *o, uint64_t *sz, unsigned int cap)
{
	unsigned int k = 0;
	uint64_t p;

	sz[k++] = o->min_size;
	for (p = 4; p <= o->max_size && k + 2 < cap; p *= 4) {
		if (p <= o->min_size)
			continue;
		sz[k++] = p;
		if (p >= 1024 && p + 5 <= o->max_size)
			sz[k++] = p + 5;
	}
	if (sz[k - 1] != o->max_size && k < cap)
		sz[k++] = o->max_size;
	return k;
}

static int check(struct tool_ctx *c)
{
	uint64_t max = c->o.max_size, sz[64], checked = 0;
	unsigned int reason, ns = check_sizes(&c->o, sz, 64);
	long long d;
	int r;

	for (unsigned int i = 0; i < ns; i++) {
		uint64_t n = sz[i];

		for (unsigned int how = 0; how < 2; how++) {
			bool irq = how == 0;
			const char *hs = irq ? "interrupt" : "poll";
			uint32_t seed = (uint32_t)(n * 2654435761u) ^ how;

			if (!(notify & (1u << how)))
				continue;
			memset(c->buf, 0, n);
			r = cnt_op(c, 1, 0, n, c->peer.buf_va, irq, &reason);
			if (r) {
				tool_err("weft-cnt", "read of %" PRIu64 " B (%s): %s %s", n, hs,
					 tool_strerror(r), weft_cnt_reason_name(reason));
				return 1;
			}
			d = tool_pat_diff(c->buf, n, SEED_READ);
			if (d >= 0) {
				tool_err("weft-cnt", "read of %" PRIu64 " B: byte %lld differs", n, d);
				return 1;
			}
			say("verified: counter read of %" PRIu64 " B byte-exact, %s\n", n, hs);
			tool_pat_fill(c->buf + max, n, seed);
			r = cnt_op(c, 0, max, n, c->peer.buf_va + max, irq, &reason);
			if (r) {
				tool_err("weft-cnt", "write of %" PRIu64 " B (%s): %s %s", n, hs,
					 tool_strerror(r), weft_cnt_reason_name(reason));
				return 1;
			}
			memset(c->buf, 0, n);
			r = cnt_op(c, 1, 0, n, c->peer.buf_va + max, !irq, &reason);
			d = r ? 0 : tool_pat_diff(c->buf, n, seed);
			if (r || d >= 0) {
				tool_err("weft-cnt", "write of %" PRIu64 " B not read back: %s, byte %lld",
					 n, tool_strerror(r), d);
				return 1;
			}
			say("verified: counter write of %" PRIu64 " B byte-exact (read back), %s\n",
			    n, hs);
			checked += 2;
		}
	}
	if (c->o.json)
		printf("{\"tool\":\"weft-cnt\",\"mode\":\"check\",\"max\":%" PRIu64
		       ",\"transfers\":%" PRIu64 ",\"result\":\"pass\"}\n", max, checked);
	return checked ? 0 : 1;
}

/* The server exposes the second half late: the first read fails with
 * the peer's cause, a retry after the exposure succeeds. */
static int retry(struct tool_ctx *c)
{
	uint64_t n = c->o.max_size, rva = c->peer.buf_va + n;
	unsigned int reason = 0, tries = 1, failed;
	struct weft_cnt *k;
	int r = weft_cnt_create(c->dev, c->buf, n, WEFT_CNT_F_IRQ, 0, &k);

	if (r) {
		tool_err("weft-cnt", "create: %s", tool_strerror(r));
		return 1;
	}
	r = weft_cnt_read(k, 0, c->peer.node, 0, n, rva);
	if (!r)
		r = weft_cnt_wait(k, 0, WAIT_MS);
	failed = weft_cnt_failures(k, &reason);
	if (r != -EIO || strcmp(weft_cnt_reason_name(reason), "CNT_NOT_EXPOSED") ||
	    weft_cnt_value(k) != n) {
		tool_err("weft-cnt", "first read: %s, reason %s, counter %" PRIu64 " (want a "
			 "CNT_NOT_EXPOSED error and an untouched counter)", tool_strerror(r),
			 weft_cnt_reason_name(reason), weft_cnt_value(k));
		weft_cnt_destroy(k);
		return 1;
	}
	printf("verified: unexposed range answered with the error message, cause %s, "
	       "counter untouched\n", weft_cnt_reason_name(reason));
	while (r == -EIO && tries < 200) {
		usleep(100000);
		tries++;
		r = weft_cnt_read(k, 0, c->peer.node, 0, n, rva);
		if (!r)
			r = weft_cnt_wait(k, failed, WAIT_MS);
		failed = weft_cnt_failures(k, &reason);
	}
	weft_cnt_destroy(k);
	/* The second half holds zeros until a write: check them. */
	for (uint64_t i = 0; !r && i < n; i++)
		if (c->buf[i] != 0)
			r = -EBADMSG;
	if (r) {
		tool_err("weft-cnt", "retries: %s after %u tries", tool_strerror(r), tries);
		return 1;
	}
	printf("verified: retry %u after the exposure succeeded, %" PRIu64 " B byte-exact\n",
	       tries, n);
	if (c->o.json)
		printf("{\"tool\":\"weft-cnt\",\"mode\":\"retry\",\"tries\":%u,\"result\":\"pass\"}\n",
		       tries);
	return 0;
}

/* Start a big read and die at once by SIGKILL, mid-transfer. */
static int kill_me(struct tool_ctx *c)
{
	struct weft_cnt *k;
	int r = weft_cnt_create(c->dev, c->buf, c->o.max_size, WEFT_CNT_F_IRQ, 0, &k);

	if (!r)
		r = weft_cnt_read(k, 0, c->peer.node, 0, c->o.max_size, c->peer.buf_va);
	if (r) {
		tool_err("weft-cnt", "posting the read: %s", tool_strerror(r));
		return 1;
	}
	printf("posted: counter read of %" PRIu64 " B, counter %" PRIu64 ", killing myself\n",
	       c->o.max_size, weft_cnt_value(k));
	fflush(stdout);
	raise(SIGKILL);
	return 1;
}

static int rop_op(struct tool_ctx *c, int is_read, uint64_t n)
{
	struct weft_rop rop;

	memset(&rop, 0, sizeof(rop));
	rop.is_read = is_read;
	rop.rdma.node = c->peer.node;
	rop.rdma.window = c->peer.window;
	rop.rdma.local_rcxt = c->mine.rcxt[0];
	rop.rdma.remote_rcxt = c->peer.rcxt[0];
	rop.rdma.remote_rcxt_key = c->peer.key[0];
	rop.rdma.notify = WEFT_COMP_SOURCE;
	rop.rdma.local_pvo = c->buf_pvo;
	rop.rdma.remote_pvo = c->peer.buf_pvo + (is_read ? 0 : c->o.max_size);
	rop.rdma.length = n;
	rop.timeout_ns = 10000000ull + n * 40;
	return tool_rop_run(c, &rop, &desc);
}

static int bench(struct tool_ctx *c)
{
	static const char *const names[4] = {
		"counter-read", "counter-write", "rdma-read", "rdma-write",
	};
	unsigned int reason;
	uint64_t n;

	if (!c->o.json)
		printf("%-14s %10s %8s %12s %12s\n", "operation", "bytes", "iters", "MB/s", "us/op");
	for (n = c->o.min_size; n <= c->o.max_size; n *= 8) {
		for (unsigned int op = 0; op < 4; op++) {
			uint64_t t0 = tool_now_ns(), dt;
			unsigned int it;
			int r = 0;

			for (it = 0; it < c->o.iters && !r; it++)
				r = op < 2 ? cnt_op(c, op == 0, op == 0 ? 0 : c->o.max_size, n,
						    c->peer.buf_va + (op == 0 ? 0 : c->o.max_size),
						    true, &reason) :
					     rop_op(c, op == 2, n);
			if (r) {
				tool_err("weft-cnt", "%s of %" PRIu64 " B: %s", names[op], n,
					 tool_strerror(r));
				return 1;
			}
			dt = tool_now_ns() - t0;
			if (c->o.json)
				printf("{\"tool\":\"weft-cnt\",\"op\":\"%s\",\"bytes\":%" PRIu64
				       ",\"iters\":%u,\"mbps\":%.2f,\"us\":%.1f}\n", names[op], n,
				       c->o.iters, n * c->o.iters * 1e3 / (double)dt,
				       dt / 1e3 / c->o.iters);
			else
				printf("%-14s %10" PRIu64 " %8u %12.2f %12.1f\n", names[op], n,
				       c->o.iters, n * c->o.iters * 1e3 / (double)dt,
				       dt / 1e3 / c->o.iters);
		}
	}
	if (c->o.json)
		printf("{\"tool\":\"weft-cnt\",\"mode\":\"bench\",\"result\":\"pass\"}\n");
	return 0;
}

static int client(struct tool_ctx *c)
{
	int r;

	if (!c->peer.buf_va) {
		tool_err("weft-cnt", "the server sent no buffer address");
		return 1;
	}
	if (own_buf(c))
		return 1;
	switch (mode) {
	case M_RETRY:
		r = retry(c);
		break;
	case M_KILL:
		r = kill_me(c);
		break;
	case M_BENCH:
		r = bench(c);
		break;
	default:
		r = check(c);
		break;
	}
	tool_bye(c, &desc);
	return r;
}

static const struct tool_desc desc = {
	.name = "weft-cnt",
	.summary = "Counter-bearing RDMA objects between two nodes, byte-exact (docs/counters.md).",
	.tag = CNT_TAG,
	.two_node = true,
	.nr_rcxt = 1,
	.def_min_size = 1,
	.def_max_size = 1 << 20,
	.def_iters = 20,
	.buf_size = buf_size,
	.server_prepare = server_prepare,
	.server = server,
	.client = client,
};

static void help(void)
{
	printf("Usage: weft-cnt [options] (--server | --client --peer NODE)\n%s\n\n"
	       "  --help               this text\n"
	       "  --json               machine-readable output\n"
	       "  --backend B          kernel (default) or sim (both sides in this process)\n"
	       "  --dev NAME           adapter (default weft0)\n"
	       "  --job ID             job id / window key (default 0x7765)\n"
	       "  --timeout MS         rendezvous timeout (default 30000)\n"
	       "  --server | --client  side\n"
	       "  --peer NODE          the server's node (client)\n"
	       "  --peer-window W      the server's window (default 0)\n"
	       "  --loss PPM           sim backend: fabric loss\n"
	       "  --routes N           sim backend: routes per node pair (reordering)\n"
	       "  --mode M             check (default), retry, kill or bench\n"
	       "  --min-size N         first size (default 1)\n"
	       "  --max-size N         last size and half the buffer (default 1 MiB)\n"
	       "  --iters N            bench: operations per size (default 20)\n"
	       "  --notify N           check: interrupt, poll or both (default)\n"
	       "  --expose-delay MS    server: expose the second half only after MS\n",
	       desc.summary);
}

enum {
	O_JSON = 256, O_BACKEND, O_DEV, O_JOB, O_TIMEOUT, O_SERVER, O_CLIENT, O_PEER,
	O_PEER_WINDOW, O_LOSS, O_ROUTES, O_MODE, O_MIN, O_MAX, O_ITERS, O_NOTIFY, O_DELAY,
};

static const struct option longopts[] = {
	{ "help", no_argument, NULL, 'h' },
	{ "json", no_argument, NULL, O_JSON },
	{ "backend", required_argument, NULL, O_BACKEND },
	{ "dev", required_argument, NULL, O_DEV },
	{ "job", required_argument, NULL, O_JOB },
	{ "timeout", required_argument, NULL, O_TIMEOUT },
	{ "server", no_argument, NULL, O_SERVER },
	{ "client", no_argument, NULL, O_CLIENT },
	{ "peer", required_argument, NULL, O_PEER },
	{ "peer-window", required_argument, NULL, O_PEER_WINDOW },
	{ "loss", required_argument, NULL, O_LOSS },
	{ "routes", required_argument, NULL, O_ROUTES },
	{ "mode", required_argument, NULL, O_MODE },
	{ "min-size", required_argument, NULL, O_MIN },
	{ "max-size", required_argument, NULL, O_MAX },
	{ "iters", required_argument, NULL, O_ITERS },
	{ "notify", required_argument, NULL, O_NOTIFY },
	{ "expose-delay", required_argument, NULL, O_DELAY },
	{ NULL, 0, NULL, 0 },
};

static const char *const mode_names[] = { "check", "retry", "kill", "bench" };
static const char *const notify_names[] = { "", "interrupt", "poll", "both" };

/* Index of s in names[0..n), or -1. */
static int pick(const char *s, const char *const *names, int n)
{
	for (int i = 0; i < n; i++)
		if (names[i][0] && !strcmp(s, names[i]))
			return i;
	return -1;
}

static int num(const char *opt, const char *s, uint64_t lo, uint64_t hi, uint64_t *out)
{
	if (tool_parse_size(s, out) || *out < lo || *out > hi) {
		tool_err("weft-cnt", "--%s: bad value '%s' (%" PRIu64 "..%" PRIu64 ")", opt, s, lo,
			 hi);
		return -1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	struct tool_opts o;
	uint64_t v;
	int ch, idx;

	tool_opts_init(&desc, &o);
	while ((ch = getopt_long(argc, argv, "h", longopts, &idx)) != -1) {
		const char *name = ch >= O_JSON ? longopts[idx].name : "";
		int bad = 0;

		switch (ch) {
		case 'h':
			help();
			return 0;
		case O_JSON:
			o.json = true;
			break;
		case O_BACKEND:
			if (strcmp(optarg, "sim") && strcmp(optarg, "kernel")) {
				tool_err("weft-cnt", "--backend must be kernel or sim");
				return 2;
			}
			o.sim = !strcmp(optarg, "sim");
			break;
		case O_DEV:
			o.dev = optarg;
			break;
		case O_SERVER:
			o.server = true;
			break;
		case O_CLIENT:
			o.client = true;
			break;
		case O_MODE:
			idx = pick(optarg, mode_names, 4);
			bad = idx < 0;
			mode = (enum cnt_mode)idx;
			break;
		case O_NOTIFY:
			idx = pick(optarg, notify_names, 4);
			bad = idx < 0;
			notify = (unsigned int)idx;
			break;
		case O_JOB:
			bad = num(name, optarg, 1, 0xffffffffu, &v);
			o.job = (uint32_t)v;
			break;
		case O_TIMEOUT:
			bad = num(name, optarg, 0, 0x7fffffff, &v);
			o.timeout_ms = (int)v;
			break;
		case O_PEER:
			bad = num(name, optarg, 0, 0xefff, &v);
			o.peer_node = (int)v;
			break;
		case O_PEER_WINDOW:
			bad = num(name, optarg, 0, 127, &v);
			o.peer_window = (int)v;
			break;
		case O_LOSS:
			bad = num(name, optarg, 0, 1000000, &v);
			o.loss_ppm = (uint32_t)v;
			break;
		case O_ROUTES:
			bad = num(name, optarg, 1, 16, &v);
			o.routes = (uint32_t)v;
			break;
		case O_MIN:
			bad = num(name, optarg, 1, 64ull << 20, &o.min_size);
			break;
		case O_MAX:
			bad = num(name, optarg, 1, 64ull << 20, &o.max_size);
			break;
		case O_ITERS:
			bad = num(name, optarg, 1, 1000000, &v);
			o.iters = (unsigned int)v;
			break;
		case O_DELAY:
			bad = num(name, optarg, 0, 600000, &v);
			expose_delay_ms = (unsigned int)v;
			break;
		default:
			tool_err("weft-cnt", "unknown option (see --help)");
			return 2;
		}
		if (bad) {
			if (ch == O_MODE || ch == O_NOTIFY)
				tool_err("weft-cnt", "--%s: unknown value '%s'", name, optarg);
			return 2;
		}
	}
	if (optind < argc) {
		tool_err("weft-cnt", "unexpected argument '%s'", argv[optind]);
		return 2;
	}
	if (o.min_size > o.max_size) {
		tool_err("weft-cnt", "--min-size is larger than --max-size");
		return 2;
	}
	return tool_run(&desc, &o);
}
