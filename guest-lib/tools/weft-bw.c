/* SPDX-License-Identifier: MIT */
/*
 * weft-bw: RDMA write and read bandwidth over a range of message sizes.
 * The client keeps --depth reliable operations in flight (without it
 * 256 KiB worth, 8 to 64; one rCxt pair each, SOURCE completion, retried
 * on timeout; those that finished posted again as one list, one
 * doorbell) and counts the bytes of completed operations per second of
 * wall time.  After each size, one
 * write of a pattern and a read back, in two spare areas, check the data of
 * that size byte for byte (not timed).
 *
 * --stripe DEV: each write is one message striped by libweft over both
 * adapters of the node (weft_stripe_*, half of it over each), to both
 * adapters of the peer; one completion per message.  The buffers are
 * registered once, through the first adapters: their node-global PVOs
 * serve both paths.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "common.h"

#define TAG     0x42574257u     /* "BWBW" */

static const struct tool_desc desc;

/* --seconds: run each size for at least this long instead of --iters. */
static unsigned int min_seconds;

/* The buffers hold --max-size x min(--depth, BW_MAX_SLOTS) bytes of
 * slots, then two spare --max-size areas that only the data check uses
 * (its pattern, written to the peer's first spare area, and the read
 * back).  At size s an operation in flight has a slot of its own while
 * they fit (64 slots of 4 KiB fit the default buffers many times over);
 * beyond that operations share slots.  A retry of a finished reliable op
 * can still place its bytes later (its read response, or its write at
 * the peer), so the check keeps off the slots. */
#define BW_MAX_SLOTS    8u
/* Without --depth: 256 KiB in flight, 8 to 64 operations (64 at 4 KiB,
 * 8 from 32 KiB on, as the tool kept before at every size). */
#define BW_AUTO_BYTES   (256u << 10)
#define BW_AUTO_MIN     8u
/* Finished operations are posted again in lists, one doorbell each
 * (weft_win_rop_post_list): when a poll finds nothing more, or once this
 * many wait. */
#define BW_POST_BATCH   16u

static uint64_t slots_bytes(const struct tool_opts *o)
{
	unsigned int d = o->depth ? o->depth : BW_MAX_SLOTS;

	return o->max_size * (d < BW_MAX_SLOTS ? d : BW_MAX_SLOTS);
}

/* Operations in flight at size bytes: --depth, or without it
 * BW_AUTO_BYTES worth within BW_AUTO_MIN..TOOL_MAX_RCXT. */
static unsigned int depth_at(const struct tool_opts *o, uint64_t size)
{
	uint64_t d = BW_AUTO_BYTES / size;

	if (o->depth)
		return o->depth;
	return d < BW_AUTO_MIN ? BW_AUTO_MIN : d > TOOL_MAX_RCXT ? TOOL_MAX_RCXT : (unsigned int)d;
}

/* rCxts each side holds: the depth of the smallest size, the deepest
 * (a run at --depth 8 leaves the adapter's other rCxts to others). */
static unsigned int rcxt_count(const struct tool_opts *o)
{
	return depth_at(o, o->min_size);
}

static size_t buf_size(const struct tool_opts *o)
{
	return (size_t)(slots_bytes(o) + 2 * o->max_size);
}

/* The buffer offset of operation i of size bytes. */
static uint64_t slot_off(const struct tool_opts *o, unsigned int i, uint64_t size)
{
	return (uint64_t)i * size % (slots_bytes(o) / size * size);
}

/* One striped write of size bytes from slot offset off to the peer's
 * slot off, over path 0 (first adapters) and path 1 (second adapters). */
static void stripe_init(struct tool_ctx *c, struct weft_stripe *st, unsigned int i,
			uint64_t off, uint64_t size)
{
	memset(st, 0, sizeof(*st));
	st->nr_paths = 2;
	st->length = size;
	st->chunk = size > 1 ? (size + 1) / 2 : 1;
	st->timeout_ns = 10000000ull + st->chunk * 40 * depth_at(&c->o, size);
	st->path[0] = (struct weft_stripe_path){
		.win = c->win, .node = c->peer.node, .window = c->peer.window,
		.local_rcxt = c->mine.rcxt[i], .remote_rcxt = c->peer.rcxt[i],
		.remote_rcxt_key = c->peer.key[i],
		.local_pvo = c->buf_pvo + off, .remote_pvo = c->peer.buf_pvo + off,
	};
	st->path[1] = (struct weft_stripe_path){
		.win = c->win2, .node = c->peer.node2, .window = c->peer.window2,
		.local_rcxt = c->mine.rcxt2[i], .remote_rcxt = c->peer.rcxt2[i],
		.remote_rcxt_key = c->peer.key2[i],
		.local_pvo = c->mine.buf_pvo + off, .remote_pvo = c->peer.buf_pvo + off,
	};
}

/* The striped writes of one size: --depth messages in flight. */
static int run_stripe(struct tool_ctx *c, uint64_t n, uint64_t size, uint64_t t0,
		      uint64_t *done_out)
{
	static struct weft_stripe st[TOOL_MAX_RCXT];
	unsigned int depth = depth_at(&c->o, size);
	uint64_t posted = 0, done = 0;
	struct weft_entry e;
	int r = 0;

	for (unsigned int i = 0; i < depth && posted < n; i++, posted++) {
		stripe_init(c, &st[i], i, slot_off(&c->o, i, size), size);
		r = weft_stripe_write(&st[i]);
		if (r)
			return r;
	}
	while (done < n) {
		int got = 0;

		for (int w = 0; w < 2 && !r; w++) {
			struct weft_win *win = w ? c->win2 : c->win;
			int p = 0;

			while (!r && (p = weft_win_poll(win, &e)) == 1) {
				got = 1;
				if (e.type == WEFT_ENT_PACKET) {
					weft_rdv_handle(c->win, desc.tag, &e, &c->mine,
							sizeof(c->mine));
					continue;
				}
				for (unsigned int i = 0; i < depth; i++) {
					if (weft_stripe_entry(&st[i], &e) != 1)
						continue;
					if (st[i].state != WEFT_ROP_DONE) {
						r = st[i].error ? st[i].error : -EIO;
						break;
					}
					done++;
					if (min_seconds &&
					    tool_now_ns() - t0 >= min_seconds * 1000000000ull)
						n = posted;
					if (posted < n) {
						r = weft_stripe_write(&st[i]);
						posted++;
					}
					break;
				}
			}
			if (!r && p < 0)
				r = p;
		}
		if (r)
			return r;
		if (!got) {
			r = weft_win_wait(c->win, 1);
			r = r < 0 ? r : 0;
			if (r)
				return r;
		}
	}
	*done_out = done;
	return 0;
}

/* Write size bytes of a pattern from the first spare area to the
 * server's and read them back into the second: 0 if they came back byte
 * for byte, -EBADMSG if not, or a negative errno. */
static int check_size(struct tool_ctx *c, int is_read, uint64_t size)
{
	uint32_t seed = (uint32_t)size ^ (is_read ? 0x80000000u : 0);
	uint64_t pat = slots_bytes(&c->o), back = pat + c->o.max_size;
	struct weft_rop rop;
	tool_pat_fill(c->buf + pat, size, seed);
	memset(c->buf + back, 0, size);
	for (int rd = 0; rd < 2; rd++) {
		if (!rd && c->win2) {
			struct weft_stripe st;

			stripe_init(c, &st, 0, pat, size);
			int r = weft_stripe_write(&st);
			if (!r)
				r = weft_stripe_wait(&st, c->o.timeout_ms);
			if (r == 0)
				r = -ETIMEDOUT;
			if (r < 0)
				return r;
			if (st.state != WEFT_ROP_DONE)
				return st.error ? st.error : -EIO;
			continue;
		}
		memset(&rop, 0, sizeof(rop));
		rop.is_read = rd;
		rop.rdma.node = c->peer.node;
		rop.rdma.window = c->peer.window;
		rop.rdma.local_rcxt = c->mine.rcxt[0];
		rop.rdma.remote_rcxt = c->peer.rcxt[0];
		rop.rdma.remote_rcxt_key = c->peer.key[0];
		rop.rdma.notify = WEFT_COMP_SOURCE;
		rop.rdma.local_pvo = c->buf_pvo + (rd ? back : pat);
		rop.rdma.remote_pvo = c->peer.buf_pvo + pat;
		rop.rdma.length = size;
		rop.timeout_ns = 10000000ull + size * 40;
		int r = tool_rop_run(c, &rop, &desc);
		if (r)
			return r;
	}
	return tool_pat_diff(c->buf + back, size, seed) < 0 ? 0 : -EBADMSG;
}

static int server(struct tool_ctx *c)
{
	return tool_serve_until_bye(c, &desc);
}

static int run_size(struct tool_ctx *c, int is_read, uint64_t size, int first)
{
	unsigned int depth = depth_at(&c->o, size);
	uint64_t n = c->o.iters;
	if (min_seconds)
		n = UINT64_MAX;
	else if (!n) {
		n = (64ull << 20) / size;
		if (n < 16)
			n = 16;
		if (n > 20000)
			n = 20000;
	}
	struct weft_rop rops[TOOL_MAX_RCXT];
	/* Finished operations to post again, all at the next empty poll. */
	struct weft_rop *ready[TOOL_MAX_RCXT];
	unsigned int nr = 0;
	uint64_t posted = 0, done = 0, retries0;
	struct weft_win_stats ws;
	uint64_t retries2 = 0;
	weft_win_get_stats(c->win, &ws);
	retries0 = ws.rop_retries;
	if (c->win2) {
		weft_win_get_stats(c->win2, &ws);
		retries2 = ws.rop_retries;
	}
	uint64_t t0 = tool_now_ns();
	int r = 0;
	if (c->win2 && !is_read) {
		r = run_stripe(c, n, size, t0, &done);
		depth = 0;
		n = done;
	}
	for (unsigned int i = 0; i < depth && posted < n; i++, posted++) {
		memset(&rops[i], 0, sizeof(rops[i]));
		rops[i].is_read = is_read;
		rops[i].rdma.node = c->peer.node;
		rops[i].rdma.window = c->peer.window;
		rops[i].rdma.local_rcxt = c->mine.rcxt[i];
		rops[i].rdma.remote_rcxt = c->peer.rcxt[i];
		rops[i].rdma.remote_rcxt_key = c->peer.key[i];
		rops[i].rdma.notify = WEFT_COMP_SOURCE;
		rops[i].rdma.local_pvo = c->buf_pvo + slot_off(&c->o, i, size);
		rops[i].rdma.remote_pvo = c->peer.buf_pvo + slot_off(&c->o, i, size);
		rops[i].rdma.length = size;
		rops[i].timeout_ns = 10000000ull + size * 40 * depth;
		ready[nr++] = &rops[i];
	}
	struct weft_entry e;
	while (!r && done < n) {
		int p = weft_win_poll(c->win, &e);
		if (p < 0) {
			r = p;
			break;
		}
		if (nr && (p == 0 || nr >= BW_POST_BATCH)) {
			/* One doorbell for the operations that finished since. */
			int k = weft_win_rop_post_list(c->win, ready, nr);
			if (k < 0 && k != -EAGAIN) {
				r = k;
				break;
			}
			if (k > 0) {
				nr -= (unsigned int)k;
				memmove(ready, ready + k, nr * sizeof(ready[0]));
			}
			if (p == 0)
				continue;
		} else if (p == 0) {
			r = weft_win_wait(c->win, 1000);
			r = r < 0 ? r : 0;
			continue;
		}
		if (e.type == WEFT_ENT_PACKET) {
			weft_rdv_handle(c->win, desc.tag, &e, &c->mine, sizeof(c->mine));
			continue;
		}
		if (e.type != WEFT_ENT_ROP)
			continue;
		if (e.rop->state != WEFT_ROP_DONE) {
			r = e.rop->error ? e.rop->error : -EIO;
			break;
		}
		done++;
		if (min_seconds && tool_now_ns() - t0 >= min_seconds * 1000000000ull)
			n = posted;
		if (posted < n) {
			ready[nr++] = e.rop;
			posted++;
		}
	}
	double secs = (double)(tool_now_ns() - t0) / 1e9;
	if (r == -ETIMEDOUT) {
		tool_err(desc.name, "RDMA %s of %" PRIu64 " B: no completion from node %u within "
			 "the retry budget (--timeout %d ms): giving up", is_read ? "read" : "write",
			 size, c->peer.node, c->o.timeout_ms);
		return r;
	}
	if (r) {
		tool_err(desc.name, "RDMA %s of %" PRIu64 " B: %s", is_read ? "read" : "write", size,
			 tool_strerror(r));
		return r;
	}
	weft_win_get_stats(c->win, &ws);
	uint64_t retries = ws.rop_retries - retries0;
	if (c->win2) {
		weft_win_get_stats(c->win2, &ws);
		retries += ws.rop_retries - retries2;
	}
	double mbs = (double)(done * size) / secs / 1e6;
	r = check_size(c, is_read, size);
	if (r) {
		tool_err(desc.name, "data check after the RDMA %ss of %" PRIu64 " B: %s",
			 is_read ? "read" : "write", size,
			 r == -EBADMSG ? "the bytes read back differ from the bytes written" :
			 tool_strerror(r));
		return r;
	}
	if (c->o.json)
		printf("%s{\"op\":\"%s\",\"size\":%" PRIu64 ",\"depth\":%u,\"ops\":%" PRIu64
		       ",\"seconds\":%.6f,\"MBps\":%.1f,\"ops_per_s\":%.0f,\"retries\":%" PRIu64
		       ",\"verified\":true}",
		       first ? "" : ",", is_read ? "read" : "write", size, depth_at(&c->o, size),
		       done, secs, mbs, (double)done / secs, retries);
	else
		printf("%-5s %9" PRIu64 " B %7" PRIu64 " ops %9.3f s %10.1f MB/s %10.0f ops/s  "
		       "retries %" PRIu64 "  data checked\n",
		       is_read ? "read" : "write", size, done, secs, mbs, (double)done / secs,
		       retries);
	return 0;
}

static int client(struct tool_ctx *c)
{
	if (c->peer.buf_len < buf_size(&c->o)) {
		tool_err(desc.name, "server buffer too small: give the same --max-size and --depth "
			 "on both sides");
		return -1;
	}
	if (c->o.min_size > c->o.max_size) {
		tool_err(desc.name, "--min-size is larger than --max-size");
		return -1;
	}
	const char *m = c->o.mode;
	int w = !strcmp(m, "write") || !strcmp(m, "both");
	int rd = !strcmp(m, "read") || !strcmp(m, "both");
	if (c->o.json)
		printf("{\"backend\":\"%s\",\"depth\":%u,\"adapters\":%u,\"results\":[",
		       c->o.sim ? "sim" : "kernel", c->o.depth, c->win2 ? 2u : 1u);
	else if (c->win2)
		printf("writes striped over 2 adapters (nodes %u and %u to %u and %u)\n",
		       c->mine.node, c->mine.node2, c->peer.node, c->peer.node2);
	int r = 0, first = 1;
	for (int pass = 0; pass < 2 && !r; pass++) {
		if ((pass == 0 && !w) || (pass == 1 && !rd))
			continue;
		for (uint64_t s = c->o.min_size; s <= c->o.max_size && !r; s *= 2) {
			r = run_size(c, pass, s, first);
			first = 0;
		}
	}
	if (c->o.json)
		printf("]}\n");
	tool_bye(c, &desc);
	return r;
}

enum {
	OPT_MODE = TOOL_OPT_BASE, OPT_SECONDS, OPT_MIN_SIZE, OPT_MAX_SIZE, OPT_ITERS, OPT_DEPTH,
	OPT_MEMCPY, OPT_JSON,
};

static const struct option options[] = {
	{ "mode", required_argument, NULL, OPT_MODE },
	{ "seconds", required_argument, NULL, OPT_SECONDS },
	{ "min-size", required_argument, NULL, OPT_MIN_SIZE },
	{ "max-size", required_argument, NULL, OPT_MAX_SIZE },
	{ "iters", required_argument, NULL, OPT_ITERS },
	{ "depth", required_argument, NULL, OPT_DEPTH },
	{ NULL, 0, NULL, 0 },
};
#define NR_OPTIONS (sizeof(options) / sizeof(options[0]))

static int option(struct tool_opts *o, const struct option *opt, const char *v)
{
	uint64_t n;

	if (opt->val == OPT_MODE)
		return tool_mode_option(o, desc.name, v, "write", "read");
	if (opt->val == OPT_SECONDS) {
		if (tool_parse_size(v, &n) || n == 0 || n > 3600) {
			tool_err(desc.name, "--%s: bad value '%s' (1..3600)", opt->name, v);
			return -1;
		}
		min_seconds = (unsigned int)n;
		return 0;
	}
	if (tool_parse_size(v, &n) || n == 0 || n > (1ull << 30) ||
	    (opt->val == OPT_DEPTH && n > TOOL_MAX_RCXT)) {
		tool_err(desc.name, "--%s: bad value '%s'", opt->name, v);
		return -1;
	}
	if (opt->val == OPT_MIN_SIZE)
		o->min_size = n;
	else if (opt->val == OPT_MAX_SIZE)
		o->max_size = n;
	else if (opt->val == OPT_ITERS)
		o->iters = (unsigned int)n;
	else
		o->depth = (unsigned int)n;
	return 0;
}

static const struct tool_desc desc = {
	.name = "weft-bw",
	.summary = "Measure RDMA write and read bandwidth over a range of message sizes.",
	.extra_help = "Tool options:\n"
		      "  --mode M             write, read or both (default both)\n"
		      "  --min-size N         first size (default 1K), doubled up to\n"
		      "  --max-size N         last size (default 4M; same on both sides)\n"
		      "  --depth N            operations in flight, 1..64 (default: 256 KiB worth,\n"
		      "                       8..64: 64 at 4 KiB, 8 from 32 KiB on; same on both sides)\n"
		      "  --iters N            operations per size (default: 64 MiB worth, 16..20000)\n"
		      "  --seconds S          instead of --iters: keep posting for S s per size\n"
		      "  --memcpy             no adapter: print the host memcpy baseline for the sizes\n"
		      "  (--stripe DEV: writes are striped over this adapter and DEV, half each)\n",
	.tag = TAG,
	.two_node = true,
	.stripe = true,
	.rcxt_count = rcxt_count,
	.def_min_size = 1024,
	.def_max_size = 4u << 20,
	.def_depth = 0,                 /* by size: depth_at() */
	.def_mode = "both",
	.buf_size = buf_size,
	.options = options,
	.option = option,
	.server = server,
	.client = client,
};

/* --memcpy takes the sizes, --iters and --json only. */
static int memcpy_option(void *arg, const struct option *opt, const char *v)
{
	struct tool_opts *o = arg;

	if (opt->val == OPT_JSON) {
		o->json = true;
	} else if (opt->val == OPT_MODE || opt->val == OPT_SECONDS || opt->val == OPT_DEPTH) {
		tool_err(desc.name, "--memcpy takes --min-size, --max-size, --iters, --json only");
		return 2;
	} else if (opt->val != OPT_MEMCPY && option(o, opt, v)) {
		return 2;
	}
	return 0;
}

/* Host baseline: memcpy between two buffers at the same sizes. */
static int memcpy_baseline(int argc, char **argv)
{
	struct tool_opts o = { .min_size = desc.def_min_size, .max_size = desc.def_max_size };
	struct option opts[NR_OPTIONS + 2];
	int r;

	/* The tool's table (its zero entry replaced), --memcpy and --json. */
	memcpy(opts, options, sizeof(options));
	opts[NR_OPTIONS - 1] = (struct option){ "memcpy", no_argument, NULL, OPT_MEMCPY };
	opts[NR_OPTIONS] = (struct option){ "json", no_argument, NULL, OPT_JSON };
	memset(&opts[NR_OPTIONS + 1], 0, sizeof(opts[0]));
	r = tool_getopt(desc.name, argc, argv, opts, memcpy_option, &o);

	if (r)
		return r;
	if (o.min_size > o.max_size) {
		tool_err(desc.name, "--min-size is larger than --max-size");
		return 2;
	}
	uint8_t *a = malloc(o.max_size), *b = malloc(o.max_size);
	if (!a || !b) {
		tool_err(desc.name, "out of memory");
		return 1;
	}
	memset(a, 1, o.max_size);
	memset(b, 2, o.max_size);
	if (o.json)
		printf("{\"backend\":\"host\",\"results\":[");
	int first = 1;
	for (uint64_t s = o.min_size; s <= o.max_size; s *= 2) {
		/* At least 1 GiB per size, and the best of three runs, so that
		 * timer resolution and a preemption do not make the figure. */
		uint64_t n = o.iters ? o.iters : (1ull << 30) / s;
		if (n < 16)
			n = 16;
		if (!o.iters && n > 1000000)
			n = 1000000;
		double secs = 0;
		for (int rep = 0; rep < 3; rep++) {
			uint64_t t0 = tool_now_ns();
			for (uint64_t i = 0; i < n; i++) {
				memcpy(i & 1 ? a : b, i & 1 ? b : a, s);
				__asm__ volatile("" : : "r"(a), "r"(b) : "memory");
			}
			double t = (double)(tool_now_ns() - t0) / 1e9;
			if (rep == 0 || t < secs)
				secs = t;
		}
		double mbs = (double)(n * s) / secs / 1e6;
		if (o.json)
			printf("%s{\"op\":\"memcpy\",\"size\":%" PRIu64 ",\"ops\":%" PRIu64
			       ",\"seconds\":%.6f,\"MBps\":%.1f,\"ops_per_s\":%.0f,\"retries\":0}",
			       first ? "" : ",", s, n, secs, mbs, (double)n / secs);
		else
			printf("%-6s %9" PRIu64 " B %7" PRIu64 " ops %9.3f s %10.1f MB/s %10.0f ops/s\n",
			       "memcpy", s, n, secs, mbs, (double)n / secs);
		first = 0;
	}
	if (o.json)
		printf("]}\n");
	free(a);
	free(b);
	return 0;
}

int main(int argc, char **argv)
{
	for (int i = 1; i < argc; i++)
		if (!strcmp(argv[i], "--memcpy"))
			return memcpy_baseline(argc, argv);
	return tool_main(&desc, argc, argv);
}
