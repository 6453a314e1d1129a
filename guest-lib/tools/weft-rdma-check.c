/* SPDX-License-Identifier: MIT */
/*
 * weft-rdma-check: RDMA write and read patterns, verified byte by byte.
 *
 * The server registers a buffer filled with a known pattern and waits.
 * The client keeps a shadow of what the server's buffer must hold: each
 * RDMA read (remote -> local) is compared with the shadow byte by byte,
 * each RDMA write (local -> remote) updates the shadow and is read back
 * with guard bytes on both sides (so a write that spills over, or lands
 * short, is caught).  Sizes from --min-size to --max-size (default 1 B to
 * 16 MiB: powers of two, their neighbours and odd sizes), each at several
 * local/remote offset pairs including unaligned ones.  Local buffers go
 * through the lazy deregistration cache.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "common.h"

#define TAG     0x43484b31u     /* "CHK1" */
#define TAG_REL 0x43484b52u     /* "CHKR": reliable-layer exchange */
#define MODE_REL 1u
#define REL_SLOTS 16u
#define REL_SIZE 4096u
#define GUARD   64u
#define SLACK   8192u

static const struct tool_desc desc;

static size_t buf_size(const struct tool_opts *o)
{
	return (size_t)o->max_size + SLACK;
}

static int rel_server(struct tool_ctx *c);

/* The client's shadow starts as tool_pat(i, 0) and its first RDMA read may
 * reach this buffer as soon as our rendezvous reply is out: fill it
 * before the rendezvous, not after. */
static int server_prepare(struct tool_ctx *c)
{
	tool_pat_fill(c->buf, c->buf_len, 0);
	return 0;
}

static int server(struct tool_ctx *c)
{
	if (c->peer.mode == MODE_REL)
		return rel_server(c);
	return tool_serve_until_bye(c, &desc);
}

struct check {
	struct tool_ctx *c;
	struct weft_mrc *mrc;
	uint8_t *src, *dst;             /* local: write source, read target */
	uint8_t *shadow;                /* what the server's buffer holds */
	size_t len;
	uint64_t bytes, ops, failures;
};

/* remote[ro..ro+n) <-> local[p..p+n) through the MR cache, one reliable
 * op per registered segment. */
static int xfer(struct check *k, int is_read, uint8_t *p, uint64_t ro, uint64_t n)
{
	struct weft_mr_seg segs[8];
	int ns = weft_mrc_get(k->mrc, p, n, segs, 8);
	if (ns < 0)
		return ns;
	int r = 0;
	for (int i = 0; i < ns && !r; i++) {
		struct weft_rop rop;
		memset(&rop, 0, sizeof(rop));
		rop.is_read = is_read;
		rop.rdma.node = k->c->peer.node;
		rop.rdma.window = k->c->peer.window;
		rop.rdma.local_rcxt = k->c->mine.rcxt[0];
		rop.rdma.remote_rcxt = k->c->peer.rcxt[0];
		rop.rdma.remote_rcxt_key = k->c->peer.key[0];
		rop.rdma.notify = WEFT_COMP_SOURCE;
		rop.rdma.local_pvo = segs[i].pvo;
		rop.rdma.remote_pvo = k->c->peer.buf_pvo + ro + segs[i].offset;
		rop.rdma.length = segs[i].len;
		rop.timeout_ns = 10000000ull + segs[i].len * 40;
		r = tool_rop_run(k->c, &rop, &desc);
		if (r == 0 && rop.status)
			r = -EIO;
		k->ops++;
	}
	weft_mrc_put(k->mrc, p, n);
	k->bytes += n;
	return r;
}

static int verify(struct check *k, const char *what, uint64_t n, uint64_t lo, uint64_t ro,
		  const uint8_t *got, const uint8_t *want)
{
	if (memcmp(got, want, n) == 0)
		return 0;
	uint64_t i = 0;
	while (got[i] == want[i])
		i++;
	k->failures++;
	if (!k->c->o.json)
		printf("FAIL %s size %" PRIu64 " local+%" PRIu64 " remote+%" PRIu64
		       ": byte %" PRIu64 " is 0x%02x, want 0x%02x\n",
		       what, n, lo, ro, i, got[i], want[i]);
	return -1;
}

static int one(struct check *k, uint64_t n, uint64_t lo, uint64_t ro, uint32_t seed)
{
	int r;
	/* read: remote -> dst, compare with the shadow */
	memset(k->dst + lo, 0xee, n);
	r = xfer(k, 1, k->dst + lo, ro, n);
	if (r)
		return r;
	verify(k, "read", n, lo, ro, k->dst + lo, k->shadow + ro);
	/* write: src -> remote, then read back with guards */
	tool_pat_fill(k->src + lo, n, seed);
	r = xfer(k, 0, k->src + lo, ro, n);
	if (r)
		return r;
	memcpy(k->shadow + ro, k->src + lo, n);
	uint64_t gs = ro >= GUARD ? ro - GUARD : 0;
	uint64_t ge = ro + n + GUARD <= k->len ? ro + n + GUARD : k->len;
	memset(k->dst, 0xee, ge - gs);
	r = xfer(k, 1, k->dst, gs, ge - gs);
	if (r)
		return r;
	verify(k, "write", n, lo, ro, k->dst, k->shadow + gs);
	return 0;
}

static int client(struct tool_ctx *c)
{
	struct check k = { .c = c };
	k.len = c->buf_len;
	if (c->peer.buf_len < k.len) {
		tool_err(desc.name, "server buffer is %" PRIu64 " bytes, need %zu (same --max-size "
			 "on both sides)", c->peer.buf_len, k.len);
		return -1;
	}
	struct weft_mrc_attr ma = { .job_id = c->o.job };
	k.mrc = weft_mrc_new(c->dev, &ma);
	k.src = c->buf;                         /* registered by common, reused here */
	k.dst = weft_dev_alloc(c->dev, k.len);
	k.shadow = malloc(k.len);
	if (!k.mrc || !k.dst || !k.shadow) {
		tool_err(desc.name, "out of memory");
		return -1;
	}
	tool_pat_fill(k.shadow, k.len, 0);
	static const uint64_t offs[][2] = { { 0, 0 }, { 1, 3 }, { 7, 0 }, { 0, 4093 }, { 4095, 1 } };
	uint64_t sizes[128];
	unsigned int nsz = 0;
	for (uint64_t p = 1; p <= c->o.max_size && nsz + 3 < 128; p <<= 1) {
		uint64_t cand[3] = { p - 1, p, p + 1 };
		for (int j = 0; j < 3; j++)
			if (cand[j] >= c->o.min_size && cand[j] <= c->o.max_size &&
			    (nsz == 0 || sizes[nsz - 1] < cand[j]))
				sizes[nsz++] = cand[j];
	}
	uint64_t t0 = tool_now_ns();
	unsigned int cases = 0;
	int r = 0;
	for (unsigned int s = 0; s < nsz && !r; s++) {
		unsigned int no = sizes[s] >= (1u << 20) ? 2 : 5;
		for (unsigned int o = 0; o < no && !r; o++) {
			r = one(&k, sizes[s], offs[o][0], offs[o][1], s * 31 + o + 1);
			cases++;
		}
	}
	double secs = (double)(tool_now_ns() - t0) / 1e9;
	struct weft_mrc_stats ms;
	weft_mrc_get_stats(k.mrc, &ms);
	struct weft_win_stats ws;
	weft_win_get_stats(c->win, &ws);
	if (r)
		tool_err(desc.name, "transfer failed: %s", tool_strerror(r));
	int ok = !r && !k.failures;
	if (c->o.json)
		printf("{\"result\":\"%s\",\"cases\":%u,\"sizes\":%u,\"min_size\":%" PRIu64
		       ",\"max_size\":%" PRIu64 ",\"failures\":%" PRIu64 ",\"ops\":%" PRIu64
		       ",\"bytes\":%" PRIu64 ",\"seconds\":%.3f,\"retries\":%" PRIu64
		       ",\"mr_cache\":{\"hits\":%" PRIu64 ",\"misses\":%" PRIu64 ",\"remaps\":%" PRIu64
		       ",\"registrations\":%" PRIu64 "}}\n",
		       ok ? "pass" : "fail", cases, nsz, c->o.min_size, c->o.max_size, k.failures,
		       k.ops, k.bytes, secs, ws.rop_retries, ms.hits, ms.misses, ms.remaps,
		       ms.registrations);
	else
		printf("%s: %u cases (%u sizes %" PRIu64 "..%" PRIu64 " B, write+read, unaligned "
		       "offsets), %" PRIu64 " failures, %" PRIu64 " ops, %" PRIu64 " bytes in %.3f s, "
		       "%" PRIu64 " retries; MR cache %" PRIu64 " hits %" PRIu64 " misses %" PRIu64
		       " remaps\n",
		       ok ? "PASS" : "FAIL", cases, nsz, c->o.min_size, c->o.max_size, k.failures,
		       k.ops, k.bytes, secs, ws.rop_retries, ms.hits, ms.misses, ms.remaps);
	weft_mrc_free(k.mrc);
	weft_dev_free(c->dev, k.dst, k.len);
	free(k.shadow);
	tool_bye(c, &desc);
	return ok ? 0 : -1;
}


/* ---- reliable-layer check (--messages N) ----------------------------------
 * The client sends N messages (sequence number, total, a pattern of a
 * length derived from the sequence) through weft_rel; the server checks
 * that each arrives exactly once and in order, then sends its verdict back
 * on the same channel.  Over a lossy, reordering fabric this is the
 * exactly-once check of the reliable layer. */

struct rel_msg {
	uint64_t seq;
	uint64_t total;
};

struct verdict {
	uint32_t magic;
	uint32_t errors;
	uint64_t delivered;
	uint64_t duplicates;
	uint64_t stale;
};
#define VERDICT_MAGIC 0x54434456u

static size_t rel_len(uint64_t seq)
{
	return sizeof(struct rel_msg) + (size_t)((seq * 37) % (REL_SIZE - sizeof(struct rel_msg)));
}

struct bye_state {
	struct tool_ctx *c;
	int bye;
};

static void on_packet(void *arg, const struct weft_entry *e)
{
	struct bye_state *b = arg;
	if (weft_rdv_is_bye(b->c->win, desc.tag, e))
		b->bye = 1;
	else
		weft_rdv_handle(b->c->win, desc.tag, e, &b->c->mine, sizeof(b->c->mine));
}

static struct weft_rel *rel_setup(struct tool_ctx *c, int server_side)
{
	struct weft_rel_attr ra = { .slots = REL_SLOTS, .slot_size = REL_SIZE,
				    .timeout_ns = c->o.rel_timeout_ns };
	int r;
	struct weft_rel *rel = weft_rel_new(c->win, &ra, &r);
	if (!rel) {
		tool_err(desc.name, "reliable channel: %s", tool_strerror(r));
		return NULL;
	}
	struct weft_rel_info mine, peer;
	size_t len = 0;
	weft_rel_local_info(rel, &mine);
	if (server_side) {
		uint16_t pn, pw;
		r = weft_rdv_serve(c->win, TAG_REL, &mine, sizeof(mine), &peer, sizeof(peer), &len,
				   &pn, &pw, c->o.timeout_ms);
	} else {
		r = weft_rdv_connect(c->win, TAG_REL, c->peer.node, c->peer.window, &mine,
				     sizeof(mine), &peer, sizeof(peer), &len, c->o.timeout_ms);
	}
	if (!r && (len != sizeof(peer) || peer.node != c->peer.node))
		r = -EPROTO;
	if (!r)
		r = weft_rel_connect(rel, &peer);
	if (r) {
		tool_err(desc.name, "reliable channel exchange: %s", tool_strerror(r));
		weft_rel_free(rel);
		return NULL;
	}
	return rel;
}

static int rel_server(struct tool_ctx *c)
{
	struct weft_rel *rel = rel_setup(c, 1);
	if (!rel)
		return -1;
	struct bye_state bs = { .c = c };
	weft_rel_set_packet_handler(rel, on_packet, &bs);
	static uint8_t in[REL_SIZE];
	uint64_t total = c->peer.count, got = 0;
	uint32_t errors = 0;
	int r = 0;
	uint64_t t0 = weft_dev_now_ns(c->dev);
	while (got < total && !r && !bs.bye) {
		size_t len;
		int n = 0;
		r = weft_rel_progress(rel);
		while (!r && (n = weft_rel_recv(rel, in, sizeof(in), &len)) == 1) {
			struct rel_msg m;
			memcpy(&m, in, sizeof(m));
			int bad = len < sizeof(m) || m.seq != got || m.total != total ||
				  len != rel_len(m.seq);
			for (size_t i = sizeof(m); !bad && i < len; i++)
				bad = in[i] != tool_pat(i, (uint32_t)m.seq);
			errors += bad;
			got++;
		}
		if (n < 0)
			r = n;
		if (!r && n == 0 && weft_rel_wait(rel, 100) < 0)
			r = -EPIPE;
		if (weft_dev_now_ns(c->dev) - t0 > 600000000000ull)
			r = -ETIMEDOUT;
	}
	struct weft_rel_stats st;
	weft_rel_get_stats(rel, &st);
	struct verdict v = { VERDICT_MAGIC, errors, got, st.duplicates, st.stale };
	while (!r && !bs.bye && (r = weft_rel_send(rel, &v, sizeof(v))) == -EAGAIN) {
		r = weft_rel_progress(rel);
		if (!r)
			weft_rel_wait(rel, 10);
	}
	/* Keep acknowledging until the client says goodbye. */
	t0 = weft_dev_now_ns(c->dev);
	while (!r && !bs.bye && weft_dev_now_ns(c->dev) - t0 < 60000000000ull) {
		r = weft_rel_progress(rel);
		if (!r && !bs.bye)
			weft_rel_wait(rel, 100);
	}
	weft_rel_free(rel);
	if (bs.bye)
		tool_linger(c, &desc);
	if (r)
		tool_err(desc.name, "reliable channel: %s", tool_strerror(r));
	if (!bs.bye)
		tool_err(desc.name, "the client never said goodbye");
	return r || !bs.bye ? -1 : 0;
}

static int rel_client(struct tool_ctx *c)
{
	struct weft_rel *rel = rel_setup(c, 0);
	if (!rel)
		return -1;
	struct bye_state bs = { .c = c };
	weft_rel_set_packet_handler(rel, on_packet, &bs);
	static uint8_t msg[REL_SIZE], in[REL_SIZE];
	uint64_t total = c->o.count, sent = 0;
	struct verdict v = { 0, 1, 0, 0, 0 };
	int have_verdict = 0, r = 0;
	uint64_t t0 = tool_now_ns();
	uint64_t d0 = weft_dev_now_ns(c->dev);
	while (!have_verdict && !r) {
		int busy = 0;
		while (sent < total) {
			struct rel_msg m = { sent, total };
			size_t len = rel_len(sent);
			memcpy(msg, &m, sizeof(m));
			for (size_t i = sizeof(m); i < len; i++)
				msg[i] = tool_pat(i, (uint32_t)sent);
			r = weft_rel_send(rel, msg, len);
			if (r == -EAGAIN) {
				r = 0;
				break;
			}
			if (r)
				break;
			sent++;
			busy = 1;
		}
		if (!r)
			r = weft_rel_progress(rel);
		size_t len;
		if (!r && weft_rel_recv(rel, in, sizeof(in), &len) == 1 && len == sizeof(v)) {
			memcpy(&v, in, sizeof(v));
			have_verdict = v.magic == VERDICT_MAGIC;
		}
		if (!r && !busy && !have_verdict)
			weft_rel_wait(rel, 100);
		if (weft_dev_now_ns(c->dev) - d0 > 600000000000ull)
			r = -ETIMEDOUT;
	}
	double secs = (double)(tool_now_ns() - t0) / 1e9;
	struct weft_rel_stats st;
	weft_rel_get_stats(rel, &st);
	/* Stay until the server's verdict is acknowledged (bounded). */
	for (int i = 0; !r && i < 50; i++) {
		weft_rel_progress(rel);
		weft_rel_wait(rel, 10);
	}
	weft_rel_free(rel);
	int ok = !r && have_verdict && v.errors == 0 && v.delivered == total;
	if (r)
		tool_err(desc.name, "reliable channel: %s", tool_strerror(r));
	if (c->o.json)
		printf("{\"result\":\"%s\",\"mode\":\"messages\",\"messages\":%" PRIu64
		       ",\"delivered\":%" PRIu64 ",\"failures\":%u,\"duplicates\":%" PRIu64
		       ",\"stale\":%" PRIu64 ",\"retries\":%" PRIu64 ",\"seconds\":%.3f}\n",
		       ok ? "pass" : "fail", total, have_verdict ? v.delivered : 0,
		       have_verdict ? v.errors : 1, have_verdict ? v.duplicates : 0,
		       st.stale + (have_verdict ? v.stale : 0), st.retries, secs);
	else
		printf("%s: %" PRIu64 " messages through the reliable layer, %" PRIu64 " delivered "
		       "exactly once in order, %u bad, %" PRIu64 " duplicates dropped, %" PRIu64
		       " retries, %.3f s\n",
		       ok ? "PASS" : "FAIL", total, have_verdict ? v.delivered : 0,
		       have_verdict ? v.errors : 1, have_verdict ? v.duplicates : 0, st.retries, secs);
	tool_bye(c, &desc);
	return ok ? 0 : -1;
}

enum { OPT_MESSAGES = TOOL_OPT_BASE, OPT_REL_TIMEOUT, OPT_MIN_SIZE, OPT_MAX_SIZE };

static const struct option options[] = {
	{ "messages", required_argument, NULL, OPT_MESSAGES },
	{ "rel-timeout-us", required_argument, NULL, OPT_REL_TIMEOUT },
	{ "min-size", required_argument, NULL, OPT_MIN_SIZE },
	{ "max-size", required_argument, NULL, OPT_MAX_SIZE },
	{ NULL, 0, NULL, 0 },
};

static int option(struct tool_opts *o, const struct option *opt, const char *v)
{
	uint64_t n;

	if (opt->val == OPT_MESSAGES || opt->val == OPT_REL_TIMEOUT) {
		char *end;
		unsigned long long m = strtoull(v, &end, 0);

		if (*end || m == 0 || m > 100000000ull) {
			tool_err(desc.name, "--%s: bad value '%s'", opt->name, v);
			return -1;
		}
		if (opt->val == OPT_MESSAGES) {
			o->peer_mode = MODE_REL;
			o->count = (uint32_t)m;
		} else {
			o->rel_timeout_ns = m * 1000;
		}
		return 0;
	}
	if (tool_parse_size(v, &n) || n == 0 || n > (1ull << 30)) {
		tool_err(desc.name, "--%s: bad size '%s' (1..1G, suffix k/M/G)", opt->name, v);
		return -1;
	}
	if (opt->val == OPT_MIN_SIZE)
		o->min_size = n;
	else
		o->max_size = n;
	return 0;
}

static int client_entry(struct tool_ctx *c)
{
	if (c->o.peer_mode == MODE_REL)
		return rel_client(c);
	if (c->o.min_size > c->o.max_size) {
		tool_err(desc.name, "--min-size is larger than --max-size");
		return -1;
	}
	return client(c);
}

static const struct tool_desc desc = {
	.name = "weft-rdma-check",
	.summary = "Verify RDMA write and read byte by byte over sizes and unaligned offsets.",
	.extra_help = "Tool options:\n"
		      "  --min-size N         smallest transfer (default 1)\n"
		      "  --max-size N         largest transfer (default 16M; same on both sides)\n"
		      "  --messages N         client: instead, send N messages through the reliable\n"
		      "                       layer; the server checks exactly once, in order\n"
		      "  --rel-timeout-us T   reliable layer: first retry timeout (default 5000)\n",
	.tag = TAG,
	.two_node = true,
	.nr_rcxt = 1,
	.buf_size = buf_size,
	.def_min_size = 1,
	.def_max_size = 16u << 20,
	.options = options,
	.option = option,
	.server_prepare = server_prepare,
	.server = server,
	.client = client_entry,
};

int main(int argc, char **argv)
{
	return tool_main(&desc, argc, argv);
}
