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
#define GUARD   64u
#define SLACK   8192u

static const struct tool_desc desc;

static size_t buf_size(const struct tool_opts *o)
{
	return (size_t)o->max_size + SLACK;
}

static uint8_t pat(uint64_t i, uint32_t seed)
{
	uint64_t x = (i + 1) * 0x9e3779b97f4a7c15ull ^ seed;
	x ^= x >> 29;
	return (uint8_t)(x * 0xbf58476d1ce4e5b9ull >> 56);
}

static int server(struct tool_ctx *c)
{
	for (size_t i = 0; i < c->buf_len; i++)
		c->buf[i] = pat(i, 0);
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
		rop.timeout_ns = 50000000ull + segs[i].len * 20;
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
	for (uint64_t i = 0; i < n; i++)
		k->src[lo + i] = pat(i, seed);
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
	for (size_t i = 0; i < k.len; i++)
		k.shadow[i] = pat(i, 0);
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
		tool_err(desc.name, "transfer failed: %s", strerror(-r));
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
	int br = tool_bye(c, &desc);
	if (br)
		tool_err(desc.name, "server did not acknowledge the end: %s", strerror(-br));
	return ok ? 0 : -1;
}

static int option(struct tool_opts *o, const char *a, const char *v)
{
	if (!v || (strcmp(a, "--min-size") && strcmp(a, "--max-size")))
		return 0;
	uint64_t n;
	if (tool_parse_size(v, &n) || n == 0 || n > (1ull << 30)) {
		tool_err(desc.name, "%s: bad size '%s' (1..1G, suffix k/M/G)", a, v);
		return -1;
	}
	if (!strcmp(a, "--min-size"))
		o->min_size = n;
	else
		o->max_size = n;
	return 2;
}

static int client_entry(struct tool_ctx *c)
{
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
		      "  --max-size N         largest transfer (default 16M; same on both sides)\n",
	.tag = TAG,
	.two_node = true,
	.nr_rcxt = 1,
	.buf_size = buf_size,
	.def_min_size = 1,
	.def_max_size = 16u << 20,
	.option = option,
	.server = server,
	.client = client_entry,
};

int main(int argc, char **argv)
{
	return tool_main(&desc, argc, argv);
}
