/* SPDX-License-Identifier: MIT */
/*
 * weft-ops: libweft's further operations between real nodes, each checked
 * byte by byte (docs/tools.md):
 *
 *   third-party  B (manager) asks C (data source) to write into A (data
 *                target): A gets the TARGET completion, B the SOURCE one,
 *                C none (weft_win_tp_read)
 *   half         the four half-RDMA modes: write_fifo, put, read_fifo,
 *                read_put answered by put_reply
 *   cond         a conditional RDMA: N member writes gate a signal write;
 *                the target sees the signal only after the N writes
 *   bcast        a broadcast RDMA write into every target's receive FIFO,
 *                acknowledged per target; unacknowledged targets alone
 *                are re-sent to by unicast (item 77)
 *   mcast        the same to a multicast group: members get it, others not
 *
 * Each operation has a mode per role; roles meet through rendezvous
 * windows (--peer, --peer-window) like weft-rdma-check.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "common.h"

#define TAG_TP          0x4f505450u     /* "OPTP" */
#define TAG_HALF        0x4f504846u     /* "OPHF" */
#define TAG_COND        0x4f50434eu     /* "OPCN" */
#define TAG_BCAST       0x4f504243u     /* "OPBC" */
#define SEED_TP         0x7470u
#define SEED_WF         0x5746u
#define SEED_PUT        0x5055u
#define SEED_RF         0x5246u
#define SEED_RP         0x5250u
#define SEED_MEMBER     0x4d42u
#define SEED_SIGNAL     0x5349u
#define SEED_BCAST      0x4243u
#define COOKIE_TP       0x7470000000000001ull
#define COOKIE_MEMBER   0x4d454d0000000000ull
#define COOKIE_SIGNAL   0x5349470000000001ull
#define COND_QUEUE      1u
#define COND_MAX        7u              /* member writes: rCxts 0..6, signal on 7 */
#define COND_DEF        3u
#define SIGNAL_LEN      64u
#define REGION(s)       (((s) + 4095u) & ~(uint64_t)4095u)

static const struct tool_desc tp_desc, half_desc, cond_desc;

/* ---- shared ---------------------------------------------------------------- */

/* Wait for the next entry until the device time deadline: 1 with *e,
 * 0 at the deadline, < 0 on a window error.  Repeated rendezvous hellos
 * (of d's tag, or answered before) are answered on the way. */
static int next_entry(struct tool_ctx *c, const struct tool_desc *d, struct weft_entry *e,
		      uint64_t deadline)
{
	while (weft_dev_now_ns(c->dev) < deadline) {
		int r = tool_poll_wait(c, e, 200);

		if (r < 0)
			return r;
		if (r == 0)
			continue;
		if (d && e->type == WEFT_ENT_PACKET &&
		    weft_rdv_handle(c->win, d->tag, e, &c->mine, sizeof(c->mine)))
			continue;
		return 1;
	}
	return 0;
}

static uint64_t deadline_of(struct tool_ctx *c)
{
	return weft_dev_now_ns(c->dev) + (uint64_t)c->o.timeout_ms * 1000000ull;
}

/* Print the verdict: text or one JSON line.  fields is JSON members
 * without braces. */
static int verdict(struct tool_ctx *c, const char *op, const char *role, bool pass,
		   const char *text, const char *fields)
{
	if (c->o.json)
		printf("{\"op\":\"%s\",\"role\":\"%s\",\"result\":\"%s\",\"node\":%u,"
		       "\"window\":%u%s%s}\n", op, role, pass ? "pass" : "fail", c->mine.node,
		       c->mine.window, *fields ? "," : "", fields);
	else
		printf("%s %s %s: %s\n", op, role, pass ? "PASS" : "FAIL", text);
	fflush(stdout);
	return pass ? 0 : -1;
}

/* --size N for the two-node operations: both sides must give the same. */
static int size_option(struct tool_opts *o, const char *tool, const char *v, uint64_t max)
{
	uint64_t s;

	if (tool_parse_size(v, &s) || s == 0 || s > max) {
		tool_err(tool, "--size needs 1..%" PRIu64 " bytes", max);
		return -1;
	}
	o->max_size = s;
	o->count = (uint32_t)s;
	return 0;
}

/* The client's --size (0: it gave none, the default) against ours. */
static int peer_size(struct tool_ctx *c, const struct tool_desc *d)
{
	uint64_t theirs = c->peer.count ? c->peer.count : d->def_max_size;

	if (theirs != c->o.max_size) {
		tool_err(d->name, "the client runs --size %" PRIu64 ", this side --size %" PRIu64
			 ": give the same on both sides", theirs, c->o.max_size);
		return -1;
	}
	return 0;
}

/* Say BYE to node/window (the peer waits for it before it ends). */
static int bye(struct tool_ctx *c, const char *tool, uint32_t tag, uint16_t node,
	       uint16_t window)
{
	int r = weft_rdv_bye(c->win, tag, node, window, c->o.timeout_ms);

	if (r)
		tool_err(tool, "node %u window %u did not acknowledge the end: %s", node, window,
			 tool_strerror(r));
	return r;
}

/* ---- third-party ------------------------------------------------------------ */

enum tp_role { TP_NONE, TP_TARGET, TP_SOURCE };
static enum tp_role tp_role;
static int tp_src_node = -1, tp_src_window;

static size_t tp_buf(const struct tool_opts *o)
{
	return (size_t)o->max_size;
}

/* Codes of the operations' own options (one table each). */
enum {
	OPT_TARGET = TOOL_OPT_BASE, OPT_SOURCE, OPT_MANAGER, OPT_SIZE, OPT_SOURCE_NODE,
	OPT_SOURCE_WINDOW, OPT_MEMBERS,
};

static const struct option tp_options[] = {
	{ "target", no_argument, NULL, OPT_TARGET },
	{ "source", no_argument, NULL, OPT_SOURCE },
	{ "manager", no_argument, NULL, OPT_MANAGER },
	{ "size", required_argument, NULL, OPT_SIZE },
	{ "source-node", required_argument, NULL, OPT_SOURCE_NODE },
	{ "source-window", required_argument, NULL, OPT_SOURCE_WINDOW },
	{ NULL, 0, NULL, 0 },
};

static int tp_option(struct tool_opts *o, const struct option *opt, const char *v)
{
	long n;

	switch (opt->val) {
	case OPT_TARGET:
	case OPT_SOURCE:
		o->server = true;
		tp_role = opt->val == OPT_TARGET ? TP_TARGET : TP_SOURCE;
		return 0;
	case OPT_MANAGER:
		o->client = true;
		return 0;
	case OPT_SIZE:
		return size_option(o, tp_desc.name, v, 1u << 24);
	case OPT_SOURCE_NODE:
		if (tool_int_option(tp_desc.name, opt, v, 0xEFFF, &n))
			return -1;
		tp_src_node = (int)n;
		return 0;
	default:
		if (tool_int_option(tp_desc.name, opt, v, 127, &n))
			return -1;
		tp_src_window = (int)n;
		return 0;
	}
}

static int tp_prepare(struct tool_ctx *c)
{
	if (tp_role == TP_NONE) {
		tool_err(tp_desc.name, "give --target (node A), --source (node C) or --manager "
			 "(node B)");
		return -1;
	}
	if (tp_role == TP_TARGET)
		memset(c->buf, 0, c->buf_len);
	else
		tool_pat_fill(c->buf, c->buf_len, SEED_TP);
	return 0;
}

static int tp_server(struct tool_ctx *c)
{
	const char *tool = tp_desc.name;
	uint64_t end = deadline_of(c);
	unsigned int comps = 0, others = 0;
	struct weft_entry e, got;
	bool done = false;
	char text[512], fields[512];
	int r;

	if (peer_size(c, &tp_desc))
		return -1;
	memset(&got, 0, sizeof(got));
	/* The manager says BYE after its SOURCE completion; the data target
	 * also waits for its own TARGET completion. */
	while (!done || (tp_role == TP_TARGET && comps == 0)) {
		r = next_entry(c, &tp_desc, &e, end);
		if (r < 0) {
			tool_err(tool, "serving node %u: %s", c->peer.node, tool_strerror(r));
			return -1;
		}
		if (r == 0) {
			tool_err(tool, "%s within --timeout %d ms", done ? "no TARGET completion" :
				 "the manager (node %u) did not end the session", c->o.timeout_ms);
			return -1;
		}
		if (weft_rdv_is_bye(c->win, tp_desc.tag, &e)) {
			done = true;
		} else if (tp_role == TP_TARGET && e.type == WEFT_ENT_COMPLETION &&
			   (e.flags & WEFT_ENT_F_TARGET)) {
			if (comps++ == 0)
				got = e;
		} else {
			others++;
		}
	}
	tool_linger(c, &tp_desc);
	if (tp_role == TP_SOURCE) {
		snprintf(text, sizeof(text), "data source: %u entries besides the session "
			 "(none expected: the data source gets no completion)", others);
		snprintf(fields, sizeof(fields), "\"entries\":%u", others);
		return verdict(c, "third-party", "source", others == 0, text, fields);
	}
	long long bad = tool_pat_diff(c->buf, c->o.max_size, SEED_TP);
	bool pass = comps == 1 && others == 0 && bad < 0 && got.status == 0 &&
		    (got.flags & WEFT_ENT_F_READ) && got.length == c->o.max_size &&
		    got.user_cookie == COOKIE_TP && got.rcxt == c->mine.rcxt[0];
	snprintf(text, sizeof(text), "data target: %u TARGET completion(s) (tid %u, %" PRIu64
		 " B, status %s, from the manager's operation), %u other entries; buffer %s",
		 comps, got.tid, got.length, weft_status_name(got.status), others,
		 bad < 0 ? "byte-exact" : "differs");
	if (bad >= 0)
		snprintf(text + strlen(text), sizeof(text) - strlen(text),
			 " from byte %lld", bad);
	snprintf(fields, sizeof(fields), "\"bytes\":%" PRIu64 ",\"completions\":%u,\"tid\":%u,"
		 "\"entries\":%u,\"verified\":%s,\"first_bad\":%lld", c->o.max_size, comps,
		 got.tid, others, bad < 0 ? "true" : "false", bad);
	return verdict(c, "third-party", "target", pass, text, fields);
}

static int tp_client(struct tool_ctx *c)
{
	const char *tool = tp_desc.name;
	struct tool_peer src;
	size_t len = 0;
	struct weft_entry e;
	unsigned int comps = 0, others = 0;
	char text[512], fields[512];
	int r;

	if (tp_src_node < 0) {
		tool_err(tool, "--manager needs --source-node NODE (and --source-window W)");
		return -1;
	}
	r = weft_rdv_connect(c->win, tp_desc.tag, (uint16_t)tp_src_node, (uint16_t)tp_src_window,
			     &c->mine, sizeof(c->mine), &src, sizeof(src), &len, c->o.timeout_ms);
	if (r) {
		tool_err(tool, "no answer from the data source, node %d window %d: %s",
			 tp_src_node, tp_src_window, tool_strerror(r));
		return -1;
	}
	if (len != sizeof(src) || src.nr_rcxt < 1 || src.buf_len < c->o.max_size ||
	    c->peer.buf_len < c->o.max_size) {
		tool_err(tool, "the data source or target registered less than --size %" PRIu64
			 " B (give the same --size everywhere)", c->o.max_size);
		return -1;
	}
	struct weft_tp_read op = {
		.rdma = { .node = src.node, .window = src.window, .local_rcxt = c->mine.rcxt[0],
			  .remote_rcxt = src.rcxt[0], .remote_rcxt_key = src.key[0],
			  .notify = WEFT_COMP_BOTH, .local_pvo = c->peer.buf_pvo,
			  .remote_pvo = src.buf_pvo, .length = c->o.max_size,
			  .user_cookie = COOKIE_TP },
		.tp_node = c->peer.node, .tp_window = c->peer.window,
		.tp_rcxt = c->peer.rcxt[0], .tp_rcxt_key = c->peer.key[0],
	};
	r = weft_win_tp_read(c->win, &op);
	if (r) {
		tool_err(tool, "posting the third-party read: %s", tool_strerror(r));
		return -1;
	}
	uint64_t end = deadline_of(c);
	struct weft_entry got;
	memset(&got, 0, sizeof(got));
	while (comps == 0) {
		r = next_entry(c, &tp_desc, &e, end);
		if (r <= 0) {
			tool_err(tool, "no SOURCE completion for the third-party read: %s",
				 r ? tool_strerror(r) : "--timeout passed");
			return -1;
		}
		if (e.type == WEFT_ENT_COMPLETION && (e.flags & WEFT_ENT_F_SOURCE) &&
		    e.tid == op.rdma.tid) {
			got = e;
			comps++;
		} else if (e.type != WEFT_ENT_PACKET) {  /* not a repeated reply */
			others++;
		}
	}
	r = bye(c, tool, tp_desc.tag, c->peer.node, c->peer.window);
	r |= bye(c, tool, tp_desc.tag, src.node, src.window);
	bool pass = r == 0 && got.status == 0 && (got.flags & WEFT_ENT_F_READ) &&
		    got.user_cookie == COOKIE_TP && got.length == c->o.max_size && others == 0;
	snprintf(text, sizeof(text), "manager: node %u wrote %" PRIu64 " B into node %u; the "
		 "SOURCE completion came here (tid %u, status %s), %u other entries", src.node,
		 c->o.max_size, c->peer.node, got.tid, weft_status_name(got.status), others);
	snprintf(fields, sizeof(fields), "\"bytes\":%" PRIu64 ",\"data_source\":%u,"
		 "\"data_target\":%u,\"tid\":%u,\"status\":\"%s\",\"entries\":%u",
		 c->o.max_size, src.node, c->peer.node, got.tid, weft_status_name(got.status),
		 others);
	return verdict(c, "third-party", "manager", pass, text, fields);
}

static const struct tool_desc tp_desc = {
	.name = "weft-ops third-party",
	.summary = "Third-party transfer: the manager B makes the data source C write --size\n"
		   "bytes into the data target A; A gets the TARGET completion, B the SOURCE\n"
		   "one, C none.  A and C verify their side, B its completion.",
	.extra_help = "Roles:\n"
		      "  --target             node A: waits (a server), checks data and completion\n"
		      "  --source             node C: waits (a server), holds the pattern\n"
		      "  --manager --peer A --peer-window WA --source-node C --source-window WC\n"
		      "                       node B: posts the third-party read\n"
		      "  --size N             bytes (default 50000; the same on every node)\n",
	.tag = TAG_TP,
	.two_node = true,
	.nr_rcxt = 1,
	.buf_size = tp_buf,
	.def_max_size = 50000,
	.options = tp_options,
	.option = tp_option,
	.server_prepare = tp_prepare,
	.server = tp_server,
	.client = tp_client,
};

/* ---- half-RDMA ----------------------------------------------------------------- */

/* Server buffer: [0, S) receives the put, [S, 2S) is read by read_fifo.
 * Client buffer: [0, S) is sent by write_fifo, [S, 2S) receives the
 * read_put answer. */
static size_t half_buf(const struct tool_opts *o)
{
	return 2 * (size_t)REGION(o->max_size);
}

static const struct option half_options[] = {
	{ "size", required_argument, NULL, OPT_SIZE },
	{ NULL, 0, NULL, 0 },
};

static int half_option(struct tool_opts *o, const struct option *opt, const char *v)
{
	(void)opt;
	/* put and put_reply carry at most one send FIFO (64 frames). */
	return size_option(o, half_desc.name, v, 64u * WEFT_LIB_MAX_PAYLOAD);
}

static int half_prepare(struct tool_ctx *c)
{
	uint64_t r = REGION(c->o.max_size);

	memset(c->buf, 0, r);
	tool_pat_fill(c->buf + r, c->o.max_size, SEED_RF);
	return 0;
}

static int half_server(struct tool_ctx *c)
{
	const char *tool = half_desc.name;
	uint64_t s = c->o.max_size, end = deadline_of(c);
	uint8_t *rxbuf = malloc(s), *reply = malloc(s);
	struct weft_fifo_rx rx = { .buf = rxbuf, .cap = s };
	unsigned int wf_entries = 0, put_comps = 0, rp_reqs = 0, rp_comps = 0, others = 0;
	bool wf_ok = false, put_ok = false, done = false;
	struct weft_entry e;
	char text[768], fields[512];
	int r, rc = -1;

	if (!rxbuf || !reply || peer_size(c, &half_desc))
		goto out;
	tool_pat_fill(reply, s, SEED_RP);
	while (!done || !wf_ok || put_comps == 0 || rp_comps == 0) {
		r = next_entry(c, &half_desc, &e, end);
		if (r <= 0) {
			tool_err(tool, "serving node %u: %s (write_fifo %s, put completions %u, "
				 "read_put requests %u, completions %u)", c->peer.node,
				 r ? tool_strerror(r) : "--timeout passed", wf_ok ? "in" : "missing",
				 put_comps, rp_reqs, rp_comps);
			goto out;
		}
		if (weft_rdv_is_bye(c->win, half_desc.tag, &e)) {
			done = true;
		} else if (e.type == WEFT_ENT_DATA && !(e.flags & WEFT_ENT_F_READ)) {
			wf_entries++;
			r = weft_fifo_rx_add(&rx, &e);
			if (r < 0) {
				tool_err(tool, "write_fifo: a DATA entry that does not fit (offset %"
					 PRIu64 ", %" PRIu64 " B of %" PRIu64 ")", e.offset,
					 e.length, e.total);
				goto out;
			}
			if (r == 1)
				wf_ok = e.total == s && tool_pat_diff(rxbuf, s, SEED_WF) < 0;
		} else if (e.type == WEFT_ENT_COMPLETION && (e.flags & WEFT_ENT_F_TARGET) &&
			   !(e.flags & WEFT_ENT_F_READ)) {
			put_comps++;
			put_ok = e.status == 0 && e.length == s &&
				 tool_pat_diff(c->buf, s, SEED_PUT) < 0;
		} else if (e.type == WEFT_ENT_READ_REQ) {
			rp_reqs++;
			if (e.total != s) {
				tool_err(tool, "read_put: request for %" PRIu64 " B, not %" PRIu64,
					 e.total, s);
				goto out;
			}
			while ((r = weft_win_put_reply(c->win, &e, reply, c->mine.rcxt[0],
						       WEFT_COMP_TARGET)) == -EAGAIN)
				weft_win_wait(c->win, 10);
			if (r) {
				tool_err(tool, "read_put: answering with put_reply: %s",
					 tool_strerror(r));
				goto out;
			}
		} else if (e.type == WEFT_ENT_COMPLETION && (e.flags & WEFT_ENT_F_TARGET)) {
			rp_comps++;
		} else {
			others++;
		}
	}
	tool_linger(c, &half_desc);
	bool pass = wf_ok && put_ok && put_comps == 1 && rp_reqs == 1 && rp_comps == 1 &&
		    others == 0;
	snprintf(text, sizeof(text), "write_fifo: %u DATA entries, %" PRIu64 " B reassembled "
		 "%s; put: %u TARGET completion(s), %" PRIu64 " B placed %s; read_put: %u "
		 "READ_REQ answered by put_reply, %u TARGET completion(s); %u other entries",
		 wf_entries, s, wf_ok ? "byte-exact" : "WRONG", put_comps, s,
		 put_ok ? "byte-exact" : "WRONG", rp_reqs, rp_comps, others);
	snprintf(fields, sizeof(fields), "\"bytes\":%" PRIu64 ",\"write_fifo\":{\"entries\":%u,"
		 "\"verified\":%s},\"put\":{\"completions\":%u,\"verified\":%s},"
		 "\"read_put\":{\"requests\":%u,\"completions\":%u},\"entries\":%u", s,
		 wf_entries, wf_ok ? "true" : "false", put_comps, put_ok ? "true" : "false",
		 rp_reqs, rp_comps, others);
	rc = verdict(c, "half", "server", pass, text, fields);
out:
	weft_fifo_rx_reset(&rx);
	free(rxbuf);
	free(reply);
	return rc;
}

/* Wait for the SOURCE completion of tid; DATA entries with the READ flag
 * before it go to rx (read_fifo).  0 with *comp, or -1. */
static int half_wait(struct tool_ctx *c, const char *what, uint32_t tid,
		     struct weft_fifo_rx *rx, unsigned int *data, struct weft_entry *comp)
{
	uint64_t end = deadline_of(c);
	struct weft_entry e;
	int r;

	for (;;) {
		r = next_entry(c, &half_desc, &e, end);
		if (r <= 0) {
			tool_err(half_desc.name, "%s: no SOURCE completion: %s", what,
				 r ? tool_strerror(r) : "--timeout passed");
			return -1;
		}
		if (e.type == WEFT_ENT_PACKET)
			continue;       /* a repeated rendezvous reply */
		if (rx && e.type == WEFT_ENT_DATA && (e.flags & WEFT_ENT_F_READ) && e.tid == tid) {
			(*data)++;
			if (weft_fifo_rx_add(rx, &e) < 0) {
				tool_err(half_desc.name, "%s: a DATA entry that does not fit", what);
				return -1;
			}
			continue;
		}
		if (e.type == WEFT_ENT_COMPLETION && (e.flags & WEFT_ENT_F_SOURCE) && e.tid == tid) {
			*comp = e;
			return 0;
		}
		tool_err(half_desc.name, "%s: unexpected entry (type %d, flags 0x%x, tid %u)",
			 what, e.type, e.flags, e.tid);
		return -1;
	}
}

static int half_client(struct tool_ctx *c)
{
	const char *tool = half_desc.name;
	uint64_t s = c->o.max_size, reg = REGION(s);
	uint8_t *putbuf = malloc(s), *rxbuf = malloc(s);
	struct weft_fifo_rx rx = { .buf = rxbuf, .cap = s };
	struct weft_entry put_c, rf_c, rp_c;
	unsigned int rf_data = 0;
	char text[768], fields[512];
	int r, rc = -1;

	if (!putbuf || !rxbuf)
		goto out;
	if (c->peer.buf_len < 2 * reg) {
		tool_err(tool, "the server registered %" PRIu64 " B, less than --size needs "
			 "(give the same --size on both sides)", c->peer.buf_len);
		goto out;
	}
	/* 1. write_fifo: our [0, S) into the server's receive FIFO. */
	tool_pat_fill(c->buf, s, SEED_WF);
	struct weft_rdma wf = { .node = c->peer.node, .window = c->peer.window,
				.local_rcxt = c->mine.rcxt[0], .local_pvo = c->buf_pvo,
				.length = s, .user_cookie = 1 };
	r = weft_win_write_fifo(c->win, &wf);
	if (r) {
		tool_err(tool, "write_fifo: %s", tool_strerror(r));
		goto out;
	}
	/* 2. put: our user memory placed at the server's [0, S). */
	tool_pat_fill(putbuf, s, SEED_PUT);
	struct weft_rdma put = { .node = c->peer.node, .window = c->peer.window,
				 .local_rcxt = c->mine.rcxt[0], .remote_rcxt = c->peer.rcxt[0],
				 .remote_rcxt_key = c->peer.key[0], .notify = WEFT_COMP_BOTH,
				 .remote_pvo = c->peer.buf_pvo, .length = s, .user_cookie = 2 };
	while ((r = weft_win_put(c->win, &put, putbuf)) == -EAGAIN)
		weft_win_wait(c->win, 10);
	if (r || half_wait(c, "put", put.tid, NULL, NULL, &put_c)) {
		if (r)
			tool_err(tool, "put: %s", tool_strerror(r));
		goto out;
	}
	/* 3. read_fifo: the server's [S, 2S) into our receive FIFO. */
	struct weft_rdma rf = { .node = c->peer.node, .window = c->peer.window,
				.local_rcxt = c->mine.rcxt[0], .remote_rcxt = c->peer.rcxt[0],
				.remote_rcxt_key = c->peer.key[0], .notify = WEFT_COMP_SOURCE,
				.remote_pvo = c->peer.buf_pvo + reg, .length = s,
				.user_cookie = 3 };
	r = weft_win_read_fifo(c->win, &rf);
	if (r || half_wait(c, "read_fifo", rf.tid, &rx, &rf_data, &rf_c)) {
		if (r)
			tool_err(tool, "read_fifo: %s", tool_strerror(r));
		goto out;
	}
	bool rf_ok = rx.got == s && tool_pat_diff(rxbuf, s, SEED_RF) < 0;
	/* 4. read_put: the server's program answers into our [S, 2S). */
	memset(c->buf + reg, 0, s);
	struct weft_rdma rp = { .node = c->peer.node, .window = c->peer.window,
				.local_rcxt = c->mine.rcxt[0], .notify = WEFT_COMP_BOTH,
				.local_pvo = c->buf_pvo + reg, .remote_pvo = c->peer.buf_pvo + reg,
				.length = s, .user_cookie = 4 };
	r = weft_win_read_put(c->win, &rp);
	if (r || half_wait(c, "read_put", rp.tid, NULL, NULL, &rp_c)) {
		if (r)
			tool_err(tool, "read_put: %s", tool_strerror(r));
		goto out;
	}
	bool rp_ok = rp_c.status == 0 && (rp_c.flags & WEFT_ENT_F_READ) &&
		     tool_pat_diff(c->buf + reg, s, SEED_RP) < 0;
	bool put_ok = put_c.status == 0 && put_c.length == s;
	r = bye(c, tool, half_desc.tag, c->peer.node, c->peer.window);
	bool pass = r == 0 && put_ok && rf_ok && rf_c.status == 0 && rp_ok;
	snprintf(text, sizeof(text), "write_fifo: %" PRIu64 " B posted; put: SOURCE completion "
		 "(%s); read_fifo: %u DATA entries then the completion, %" PRIu64 " B %s; "
		 "read_put: SOURCE completion (%s), %" PRIu64 " B placed %s",
		 s, weft_status_name(put_c.status), rf_data, rx.got,
		 rf_ok ? "byte-exact" : "WRONG", weft_status_name(rp_c.status), s,
		 rp_ok ? "byte-exact" : "WRONG");
	snprintf(fields, sizeof(fields), "\"bytes\":%" PRIu64 ",\"put\":{\"completion\":%s},"
		 "\"read_fifo\":{\"entries\":%u,\"verified\":%s},\"read_put\":{\"verified\":%s}",
		 s, put_ok ? "true" : "false", rf_data, rf_ok ? "true" : "false",
		 rp_ok ? "true" : "false");
	rc = verdict(c, "half", "client", pass, text, fields);
out:
	weft_fifo_rx_reset(&rx);
	free(putbuf);
	free(rxbuf);
	return rc;
}

static const struct tool_desc half_desc = {
	.name = "weft-ops half",
	.summary = "The four half-RDMA modes between a client and a server: write_fifo (client\n"
		   "memory into the server's receive FIFO), put (client user memory placed in\n"
		   "the server's buffer), read_fifo (server buffer into the client's receive\n"
		   "FIFO), read_put (the server's program answers with put_reply into the\n"
		   "client's buffer).  Both sides check their data byte by byte.",
	.extra_help = "Tool options:\n"
		      "  --size N             bytes per mode (default 20000, at most 122880; the\n"
		      "                       same on both sides)\n",
	.tag = TAG_HALF,
	.two_node = true,
	.nr_rcxt = 1,
	.buf_size = half_buf,
	.def_max_size = 20000,
	.options = half_options,
	.option = half_option,
	.server_prepare = half_prepare,
	.server = half_server,
	.client = half_client,
};

/* ---- conditional RDMA --------------------------------------------------------- */

/* Both buffers: member i at i * REGION(S), the signal at members * REGION(S). */
static size_t cond_buf(const struct tool_opts *o)
{
	return (size_t)(COND_MAX * REGION(o->max_size) + 4096);
}

static const struct option cond_options[] = {
	{ "size", required_argument, NULL, OPT_SIZE },
	{ "members", required_argument, NULL, OPT_MEMBERS },
	{ NULL, 0, NULL, 0 },
};

static int cond_option(struct tool_opts *o, const struct option *opt, const char *v)
{
	char *end;
	long n;

	if (opt->val == OPT_SIZE)
		return size_option(o, cond_desc.name, v, 1u << 20);
	n = strtol(v, &end, 0);
	if (*end || n < 1 || n > (long)COND_MAX) {
		tool_err(cond_desc.name, "--members needs 1..%u", COND_MAX);
		return -1;
	}
	o->peer_mode = (uint32_t)n;
	return 0;
}

static int cond_prepare(struct tool_ctx *c)
{
	memset(c->buf, 0, c->buf_len);
	return 0;
}

static bool cond_data_ok(const uint8_t *buf, uint64_t s, unsigned int members)
{
	for (unsigned int i = 0; i < members; i++)
		if (tool_pat_diff(buf + i * REGION(s), s, SEED_MEMBER + i) >= 0)
			return false;
	return true;
}

static int cond_server(struct tool_ctx *c)
{
	const char *tool = cond_desc.name;
	unsigned int members = c->peer.mode ? c->peer.mode : COND_DEF, before = 0, member_comps = 0, others = 0;
	uint64_t s = c->o.max_size, end = deadline_of(c);
	bool done = false, signal = false, data_at_signal = false, sig_ok = false;
	uint64_t seen = 0;
	struct weft_entry e;
	char text[512], fields[512];
	int r;

	if (peer_size(c, &cond_desc))
		return -1;
	if (members < 1 || members > COND_MAX) {
		tool_err(tool, "the client announced %u member writes (1..%u)", members, COND_MAX);
		return -1;
	}
	while (!done || !signal) {
		r = next_entry(c, &cond_desc, &e, end);
		if (r <= 0) {
			tool_err(tool, "serving node %u: %s (%u member completions, signal %s)",
				 c->peer.node, r ? tool_strerror(r) : "--timeout passed",
				 member_comps, signal ? "in" : "missing");
			return -1;
		}
		if (weft_rdv_is_bye(c->win, cond_desc.tag, &e)) {
			done = true;
		} else if (e.type == WEFT_ENT_COMPLETION && (e.flags & WEFT_ENT_F_TARGET) &&
			   e.user_cookie == COOKIE_SIGNAL) {
			if (signal) {
				others++;
				continue;
			}
			signal = true;
			before = member_comps;
			/* What the signal promises: every member's data is in. */
			data_at_signal = cond_data_ok(c->buf, s, members);
			sig_ok = e.status == 0 &&
				 tool_pat_diff(c->buf + members * REGION(s), SIGNAL_LEN,
					       SEED_SIGNAL) < 0;
		} else if (e.type == WEFT_ENT_COMPLETION && (e.flags & WEFT_ENT_F_TARGET) &&
			   (e.user_cookie & ~0xffull) == COOKIE_MEMBER &&
			   (e.user_cookie & 0xff) < members && e.status == 0 &&
			   !(seen & (1ull << (e.user_cookie & 0xff)))) {
			seen |= 1ull << (e.user_cookie & 0xff);
			member_comps++;
		} else {
			others++;
		}
	}
	tool_linger(c, &cond_desc);
	bool pass = before == members && member_comps == members && data_at_signal && sig_ok &&
		    others == 0;
	snprintf(text, sizeof(text), "the signal's TARGET completion came after %u of %u member "
		 "writes' completions; at the signal all %u member buffers (%" PRIu64 " B each) "
		 "were %s, the signal's %u B %s; %u other entries", before, members, members, s,
		 data_at_signal ? "byte-exact" : "NOT in place", SIGNAL_LEN,
		 sig_ok ? "byte-exact" : "WRONG", others);
	snprintf(fields, sizeof(fields), "\"members\":%u,\"before_signal\":%u,"
		 "\"member_completions\":%u,\"data_at_signal\":%s,\"signal_verified\":%s,"
		 "\"entries\":%u", members, before, member_comps,
		 data_at_signal ? "true" : "false", sig_ok ? "true" : "false", others);
	return verdict(c, "cond", "server", pass, text, fields);
}

static int cond_client(struct tool_ctx *c)
{
	const char *tool = cond_desc.name;
	unsigned int members = c->o.peer_mode ? c->o.peer_mode : COND_DEF, comps = 0, nq = 0;
	uint64_t s = c->o.max_size, reg = REGION(s), end;
	struct weft_entry e, q;
	char text[512], fields[512];
	int r;

	if (c->peer.nr_rcxt < members + 1 || c->peer.buf_len < members * reg + SIGNAL_LEN) {
		tool_err(tool, "the server has too few rCxts or too small a buffer (give the "
			 "same --size on both sides)");
		return -1;
	}
	for (unsigned int i = 0; i < members; i++)
		tool_pat_fill(c->buf + i * reg, s, SEED_MEMBER + i);
	tool_pat_fill(c->buf + members * reg, SIGNAL_LEN, SEED_SIGNAL);
	r = weft_win_cond(c->win, COND_QUEUE, members);
	for (unsigned int i = 0; i <= members && r == 0; i++) {
		bool sig = i == members;
		struct weft_rdma w = { .node = c->peer.node, .window = c->peer.window,
				       .local_rcxt = c->mine.rcxt[i], .remote_rcxt = c->peer.rcxt[i],
				       .remote_rcxt_key = c->peer.key[i],
				       .notify = sig ? WEFT_COMP_TARGET : WEFT_COMP_BOTH,
				       .local_pvo = c->buf_pvo + i * reg,
				       .remote_pvo = c->peer.buf_pvo + i * reg,
				       .length = sig ? SIGNAL_LEN : s,
				       .user_cookie = sig ? COOKIE_SIGNAL : COOKIE_MEMBER + i };
		while ((r = weft_win_rdma_write(c->win, &w)) == -EAGAIN)
			weft_win_wait(c->win, 10);
	}
	if (r == 0)
		r = weft_win_cond_ctl(c->win, WEFT_COND_OP_QUERY, COND_QUEUE, 0);
	if (r) {
		tool_err(tool, "posting the conditional RDMA: %s", tool_strerror(r));
		return -1;
	}
	memset(&q, 0, sizeof(q));
	end = deadline_of(c);
	while (comps < members || nq < 2) {
		r = next_entry(c, &cond_desc, &e, end);
		if (r <= 0) {
			tool_err(tool, "%u of %u member SOURCE completions, %u of 2 COND results: %s",
				 comps, members, nq, r ? tool_strerror(r) : "--timeout passed");
			return -1;
		}
		if (e.type == WEFT_ENT_PACKET) {
			continue;       /* a repeated rendezvous reply */
		} else if (e.type == WEFT_ENT_COND) {
			q = e;
			nq++;
		} else if (e.type == WEFT_ENT_COMPLETION && (e.flags & WEFT_ENT_F_SOURCE) &&
			   e.status == 0) {
			comps++;
		} else {
			tool_err(tool, "unexpected entry (type %d, flags 0x%x, status %s)", e.type,
				 e.flags, weft_status_name(e.status));
			return -1;
		}
	}
	r = bye(c, tool, cond_desc.tag, c->peer.node, c->peer.window);
	bool pass = r == 0 && q.status == 0 && q.cond.expect == members;
	snprintf(text, sizeof(text), "queue %u: %u member writes of %" PRIu64 " B and a signal "
		 "of %u B posted; %u member SOURCE completions; query: expect %u tagged %u done "
		 "%u fired %u", COND_QUEUE, members, s, SIGNAL_LEN, comps, q.cond.expect,
		 q.cond.tagged, q.cond.done, q.cond.fired);
	snprintf(fields, sizeof(fields), "\"members\":%u,\"completions\":%u,\"query\":"
		 "{\"expect\":%u,\"tagged\":%u,\"done\":%u,\"fired\":%u}", members, comps,
		 q.cond.expect, q.cond.tagged, q.cond.done, q.cond.fired);
	return verdict(c, "cond", "client", pass, text, fields);
}

static const struct tool_desc cond_desc = {
	.name = "weft-ops cond",
	.summary = "Conditional RDMA: the client posts a COND for --members writes, the writes,\n"
		   "then a signal write; the adapter sends the signal only after the writes'\n"
		   "completions.  The server checks that the signal arrived after every member\n"
		   "write, with all their data in place.",
	.extra_help = "Tool options:\n"
		      "  --members N          member writes (1..7, default 3; client)\n"
		      "  --size N             bytes per member write (default 30000; the same on\n"
		      "                       both sides)\n",
	.tag = TAG_COND,
	.two_node = true,
	.nr_rcxt = COND_MAX + 1,
	.buf_size = cond_buf,
	.def_max_size = 30000,
	.options = cond_options,
	.option = cond_option,
	.server_prepare = cond_prepare,
	.server = cond_server,
	.client = cond_client,
};

/* ---- broadcast and multicast --------------------------------------------------- */

struct bc_opts {
	const char *name, *op;
	bool target, source, non_member;
	uint16_t targets[WEFT_BCAST_MAX_TARGETS], others[WEFT_BCAST_MAX_TARGETS];
	unsigned int nr_targets, nr_others;
	int group;
	unsigned int ack_timeout_ms, tries;
};

static int node_list(const char *tool, const char *opt, const char *v, uint16_t *out,
		     unsigned int *n)
{
	char *end;

	*n = 0;
	while (v && *v) {
		long x = strtol(v, &end, 0);

		if (end == v || x < 0 || x > 0xEFFF || *n == WEFT_BCAST_MAX_TARGETS ||
		    (*end && *end != ',')) {
			tool_err(tool, "%s needs node ids separated by commas", opt);
			return -1;
		}
		out[(*n)++] = (uint16_t)x;
		v = *end ? end + 1 : end;
	}
	return 0;
}

static void bc_usage(const struct bc_opts *b, FILE *f)
{
	bool m = b->group >= 0;

	fprintf(f, "Usage: %s (--target%s | --source %s--targets LIST%s --peer-window W) "
		"[options]\n", b->name, m ? " [--non-member]" : "", m ? "--group G " : "",
		m ? " [--others LIST]" : "");
	fprintf(f, "%s\n\n", m ?
		"A multicast RDMA write (into the members' receive FIFOs) to group G: every\n"
		"member checks the data and acknowledges; a non-member checks that nothing\n"
		"arrived.  Join the members on the switch first (weft-cluster faults mcast\n"
		"join G NODE)." :
		"A broadcast RDMA write (into every target's receive FIFO): each target checks\n"
		"the data byte by byte and acknowledges; the source re-sends by unicast, after\n"
		"--ack-timeout, to the targets that did not acknowledge, and only to them.");
	fprintf(f,
		"Options:\n"
		"  --help               this text\n"
		"  --json               machine-readable output\n"
		"  --dev NAME           adapter (default weft0)\n"
		"  --job ID             job id / window key (default 0x7765; same on every node)\n"
		"  --timeout MS         how long a role waits for its peers (default 30000)\n"
		"  --target             wait for the write, check it, acknowledge it, until the\n"
		"                       source's BYE\n"
		"  --source             post the write and collect the acknowledgements\n"
		"  --targets LIST       source: nodes that must acknowledge (e.g. 1,2,3)\n"
		"  --peer-window W      source: the targets' window (the same on every target)\n"
		"  --size N             bytes (default 10000, at most 65536)\n"
		"  --ack-timeout MS     source: re-send to the silent targets after (default 3000)\n"
		"  --tries N            source: sends per target at most (default 4)\n");
	if (m)
		fprintf(f,
			"  --group G            source: multicast group 0..255 (address 0xF000 + G)\n"
			"  --others LIST        source: non-members to end with a BYE\n"
			"  --non-member         target: nothing may arrive\n");
}

/* A target: reassemble, check, acknowledge every complete transfer (again
 * for a re-sent one), until the source's BYE. */
static int bc_target(struct tool_ctx *c, const struct bc_opts *b)
{
	uint64_t s = c->o.max_size, end = deadline_of(c);
	uint8_t *buf = malloc(s);
	struct weft_fifo_rx rx = { .buf = buf, .cap = s };
	unsigned int data = 0, delivered = 0, dups = 0, acks = 0, others = 0, bad = 0;
	uint64_t cookie = 0;
	const char *via = "none";
	struct weft_entry e;
	char text[512], fields[512];
	int r, rc = -1;

	if (!buf)
		goto out;
	for (;;) {
		r = next_entry(c, NULL, &e, end);
		if (r <= 0) {
			tool_err(b->name, "%s (%u transfers, %u acknowledgements)",
				 r ? tool_strerror(r) : "no BYE from the source within --timeout",
				 delivered, acks);
			goto out;
		}
		if (weft_rdv_is_bye(c->win, TAG_BCAST, &e))
			break;
		if (e.type != WEFT_ENT_DATA) {
			others++;
			continue;
		}
		data++;
		r = weft_fifo_rx_add(&rx, &e);
		if (r < 0 || e.total != s) {
			bad++;
			continue;
		}
		if (r == 0)
			continue;
		if (tool_pat_diff(buf, s, SEED_BCAST) >= 0) {
			bad++;
		} else if (delivered && e.user_cookie == cookie) {
			dups++;         /* re-sent: our acknowledgement was lost */
		} else {
			delivered++;
			cookie = e.user_cookie;
			via = (e.flags & WEFT_ENT_F_BROADCAST) ? "broadcast" :
			      e.src_node == c->mine.node ? "loopback" : "group or unicast";
		}
		weft_fifo_rx_reset(&rx);
		while ((r = weft_bcast_ack(c->win, &e)) == -EAGAIN)
			weft_win_wait(c->win, 10);
		if (r) {
			tool_err(b->name, "acknowledging: %s", tool_strerror(r));
			goto out;
		}
		acks++;
	}
	tool_linger(c, &(struct tool_desc){ .name = b->name, .tag = TAG_BCAST });
	bool pass = b->non_member ? data == 0 : delivered == 1 && bad == 0;
	if (b->non_member)
		snprintf(text, sizeof(text), "not a member: %u DATA entries arrived (none "
			 "expected)", data);
	else
		snprintf(text, sizeof(text), "%" PRIu64 " B delivered %u time(s) byte-exact "
			 "(first by %s), %u re-sent cop%s ignored, %u acknowledgement(s) sent, "
			 "%u bad", s, delivered, via, dups, dups == 1 ? "y" : "ies", acks, bad);
	snprintf(fields, sizeof(fields), "\"member\":%s,\"bytes\":%" PRIu64 ",\"data_entries\":%u,"
		 "\"delivered\":%u,\"duplicates\":%u,\"acks\":%u,\"bad\":%u,\"first_via\":\"%s\","
		 "\"entries\":%u", b->non_member ? "false" : "true", s, data, delivered, dups, acks,
		 bad, via, others);
	rc = verdict(c, b->op, b->non_member ? "non-member" : "target", pass, text, fields);
out:
	weft_fifo_rx_reset(&rx);
	free(buf);
	return rc;
}

static int bc_source(struct tool_ctx *c, const struct bc_opts *b)
{
	uint64_t s = c->o.max_size, end = deadline_of(c);
	static struct weft_bcast bc;
	struct weft_entry e;
	char text[1024], fields[1024];
	size_t n;
	int r;

	tool_pat_fill(c->buf, s, SEED_BCAST);
	memset(&bc, 0, sizeof(bc));
	bc.fifo = 1;
	bc.rdma = (struct weft_rdma){
		.node = b->group >= 0 ? (uint16_t)(0xF000u + (unsigned int)b->group) : WEFT_BCAST_NODE,
		.window = (uint16_t)c->o.peer_window, .local_rcxt = c->mine.rcxt[0],
		.local_pvo = c->buf_pvo, .length = s, .user_cookie = tool_now_ns() | 1 };
	memcpy(bc.targets, b->targets, b->nr_targets * sizeof(bc.targets[0]));
	bc.nr_targets = b->nr_targets;
	bc.timeout_ns = (uint64_t)b->ack_timeout_ms * 1000000ull;
	bc.max_tries = b->tries;
	r = weft_bcast_post(c->win, &bc);
	if (r) {
		tool_err(b->name, "posting the %s write: %s", b->op, tool_strerror(r));
		return -1;
	}
	while (bc.state == WEFT_BCAST_POSTED && weft_dev_now_ns(c->dev) < end) {
		r = tool_poll_wait(c, &e, 50);
		if (r < 0) {
			tool_err(b->name, "%s", tool_strerror(r));
			return -1;
		}
		weft_bcast_progress(c->win, &bc, r ? &e : NULL);
	}
	r = 0;
	for (unsigned int i = 0; i < b->nr_targets; i++)
		r |= bye(c, b->name, TAG_BCAST, b->targets[i], (uint16_t)c->o.peer_window);
	for (unsigned int i = 0; i < b->nr_others; i++)
		r |= bye(c, b->name, TAG_BCAST, b->others[i], (uint16_t)c->o.peer_window);
	char to[32];
	if (b->group >= 0)
		snprintf(to, sizeof(to), "group %d", b->group);
	else
		snprintf(to, sizeof(to), "every node");
	n = (size_t)snprintf(text, sizeof(text), "%" PRIu64 " B to %s: %u of %u targets "
			     "acknowledged, %u unicast re-send(s); sends per target:", s, to,
			     bc.acked, bc.nr_targets, bc.retries);
	for (unsigned int i = 0; i < bc.nr_targets && n < sizeof(text); i++)
		n += (size_t)snprintf(text + n, sizeof(text) - n, " node%u=%u", bc.targets[i],
				      bc.tries[i]);
	n = (size_t)snprintf(fields, sizeof(fields), "\"bytes\":%" PRIu64 ",\"address\":%u,"
			     "\"acked\":%u,\"retries\":%u,\"tries\":{", s, bc.rdma.node, bc.acked,
			     bc.retries);
	for (unsigned int i = 0; i < bc.nr_targets && n < sizeof(fields); i++)
		n += (size_t)snprintf(fields + n, sizeof(fields) - n, "%s\"%u\":%u", i ? "," : "",
				      bc.targets[i], bc.tries[i]);
	if (n < sizeof(fields))
		snprintf(fields + n, sizeof(fields) - n, "}");
	return verdict(c, b->op, "source", bc.state == WEFT_BCAST_DONE && r == 0, text, fields);
}

enum {
	BC_HELP = 'h', BC_JSON = TOOL_OPT_BASE + 0x40, BC_TARGET, BC_SOURCE, BC_DEV, BC_TARGETS,
	BC_SIZE, BC_JOB, BC_TIMEOUT, BC_PEER_WINDOW, BC_ACK_TIMEOUT, BC_TRIES,
	/* mcast only, from here on */
	BC_NON_MEMBER, BC_OTHERS, BC_GROUP,
};

static const struct option bc_options[] = {
	{ "help", no_argument, NULL, BC_HELP },
	{ "json", no_argument, NULL, BC_JSON },
	{ "target", no_argument, NULL, BC_TARGET },
	{ "source", no_argument, NULL, BC_SOURCE },
	{ "dev", required_argument, NULL, BC_DEV },
	{ "targets", required_argument, NULL, BC_TARGETS },
	{ "size", required_argument, NULL, BC_SIZE },
	{ "job", required_argument, NULL, BC_JOB },
	{ "timeout", required_argument, NULL, BC_TIMEOUT },
	{ "peer-window", required_argument, NULL, BC_PEER_WINDOW },
	{ "ack-timeout", required_argument, NULL, BC_ACK_TIMEOUT },
	{ "tries", required_argument, NULL, BC_TRIES },
	{ "non-member", no_argument, NULL, BC_NON_MEMBER },
	{ "others", required_argument, NULL, BC_OTHERS },
	{ "group", required_argument, NULL, BC_GROUP },
	{ NULL, 0, NULL, 0 },
};

struct bc_parse {
	struct bc_opts *b;
	struct tool_opts *o;
	bool group_set;
};

/* One option of bcast or mcast: 0, 1 (--help printed) or 2. */
static int bc_option(void *arg, const struct option *opt, const char *v)
{
	struct bc_parse *p = arg;
	struct bc_opts *b = p->b;
	/* The numeric options and their upper bounds. */
	static const long hi[] = {
		[BC_JOB - BC_JOB] = 0x7fffffffL, [BC_TIMEOUT - BC_JOB] = 0x7fffffffL,
		[BC_PEER_WINDOW - BC_JOB] = 127, [BC_ACK_TIMEOUT - BC_JOB] = 0x7fffffffL,
		[BC_TRIES - BC_JOB] = 64,
	};
	uint64_t sz;
	long n = 0;

	if (opt->val >= BC_JOB && opt->val <= BC_TRIES &&
	    tool_int_option(b->name, opt, v, hi[opt->val - BC_JOB], &n))
		return 2;
	if (opt->val == BC_GROUP && tool_int_option(b->name, opt, v, 255, &n))
		return 2;
	switch (opt->val) {
	case BC_HELP:
		bc_usage(b, stdout);
		return 1;
	case BC_JSON:
		p->o->json = true;
		break;
	case BC_TARGET:
		b->target = true;
		break;
	case BC_SOURCE:
		b->source = true;
		break;
	case BC_NON_MEMBER:
		b->non_member = true;
		break;
	case BC_DEV:
		p->o->dev = v;
		break;
	case BC_TARGETS:
		return node_list(b->name, "--targets", v, b->targets, &b->nr_targets) ? 2 : 0;
	case BC_OTHERS:
		return node_list(b->name, "--others", v, b->others, &b->nr_others) ? 2 : 0;
	case BC_SIZE:
		if (tool_parse_size(v, &sz) || sz == 0 || sz > 65536) {
			tool_err(b->name, "--size needs 1..65536 bytes");
			return 2;
		}
		p->o->max_size = sz;
		break;
	case BC_JOB:
		p->o->job = (uint32_t)n;
		break;
	case BC_TIMEOUT:
		p->o->timeout_ms = (int)n;
		break;
	case BC_PEER_WINDOW:
		p->o->peer_window = (int)n;
		break;
	case BC_ACK_TIMEOUT:
		b->ack_timeout_ms = (unsigned int)n;
		break;
	case BC_TRIES:
		b->tries = (unsigned int)n;
		break;
	case BC_GROUP:
		b->group = (int)n;
		p->group_set = true;
		break;
	}
	return 0;
}

static int bc_main(int argc, char **argv, bool mcast)
{
	struct bc_opts b = { .name = mcast ? "weft-ops mcast" : "weft-ops bcast",
			     .op = mcast ? "mcast" : "bcast", .group = mcast ? 0 : -1,
			     .ack_timeout_ms = 3000, .tries = 4 };
	struct option opts[sizeof(bc_options) / sizeof(bc_options[0])];
	struct tool_ctx c;
	struct bc_parse p = { .b = &b, .o = &c.o };
	char err[256];
	int rc = 1;

	memset(&c, 0, sizeof(c));
	c.o = (struct tool_opts){ .dev = "weft0", .job = 0x7765, .peer_window = -1,
				  .timeout_ms = 30000, .max_size = 10000 };
	/* bcast takes the table up to the mcast-only options. */
	memcpy(opts, bc_options, sizeof(opts));
	for (unsigned int k = 0; !mcast && opts[k].name; k++)
		if (opts[k].val == BC_NON_MEMBER)
			memset(&opts[k], 0, sizeof(opts[k]));
	rc = tool_getopt(b.name, argc, argv, opts, bc_option, &p);
	if (rc)
		return rc == 1 ? 0 : 2;
	rc = 1;
	if (b.target == b.source) {
		tool_err(b.name, "give exactly one of --target or --source");
		return 2;
	}
	if (b.source && (b.nr_targets == 0 || c.o.peer_window < 0 || (mcast && !p.group_set))) {
		tool_err(b.name, "--source needs --targets LIST%s and --peer-window W",
			 mcast ? ", --group G" : "");
		return 2;
	}
	if (c.o.job == 0) {
		tool_err(b.name, "--job must be nonzero");
		return 2;
	}
	c.dev = weft_dev_open(c.o.dev, err, sizeof(err));
	if (!c.dev) {
		tool_err(b.name, "%s", err);
		return 1;
	}
	struct weft_win_attr wa = { .job_id = c.o.job, .flags = b.source ? WEFT_WIN_F_BCAST : 0 };
	int r;
	c.win = weft_win_open(c.dev, &wa, &r);
	if (!c.win) {
		tool_err(b.name, "opening a window: %s", tool_strerror(r));
		goto out;
	}
	c.mine.node = weft_win_node(c.win);
	c.mine.window = (uint16_t)weft_win_id(c.win);
	if (b.source) {
		c.buf_len = (size_t)REGION(c.o.max_size);
		c.buf = weft_dev_alloc(c.dev, c.buf_len);
		if (!c.buf) {
			tool_err(b.name, "cannot allocate %zu bytes of buffer", c.buf_len);
			goto out;
		}
		r = weft_mr_reg(c.dev, c.o.job, c.buf, c.buf_len, &c.buf_pvo, &c.buf_handle);
		if (!r)
			r = weft_rcxt_alloc(c.win, &c.mine.rcxt[0], &c.mine.key[0]);
		if (r) {
			tool_err(b.name, "registering the buffer or allocating an rCxt: %s",
				 tool_strerror(r));
			goto out;
		}
		rc = bc_source(&c, &b) ? 1 : 0;
	} else {
		rc = bc_target(&c, &b) ? 1 : 0;
	}
out:
	if (c.buf_handle)
		weft_mr_dereg(c.dev, c.buf_handle);
	if (c.buf)
		weft_dev_free(c.dev, c.buf, c.buf_len);
	if (c.win)
		weft_win_close(c.win);
	weft_dev_close(c.dev);
	return rc;
}

/* ---- main ------------------------------------------------------------------------ */

static void usage(FILE *f)
{
	fprintf(f,
		"Usage: weft-ops OPERATION ROLE [options]   (weft-ops OPERATION --help)\n"
		"Run a libweft operation between real nodes and check it byte by byte.\n\n"
		"Operations and roles:\n"
		"  third-party  --target | --source | --manager --peer A --peer-window WA\n"
		"               --source-node C --source-window WC\n"
		"  half         --server | --client --peer N --peer-window W\n"
		"  cond         --server | --client --peer N --peer-window W [--members N]\n"
		"  bcast        --target | --source --targets LIST --peer-window W\n"
		"  mcast        --target [--non-member] | --source --group G --targets LIST\n"
		"               [--others LIST] --peer-window W\n"
		"Every role prints PASS or FAIL (one JSON object with --json) and exits 0\n"
		"only if its checks held; 1 on a failed check or error, 2 on bad usage.\n");
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		usage(stderr);
		return 2;
	}
	if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
		usage(stdout);
		return 0;
	}
	if (!strcmp(argv[1], "third-party")) {
		for (int i = 2; i + 1 < argc; i++)
			if (!strcmp(argv[i], "--backend") && !strcmp(argv[i + 1], "sim")) {
				tool_err(tp_desc.name, "needs three nodes: run its roles on a "
					 "cluster (--backend sim has two)");
				return 2;
			}
		return tool_main(&tp_desc, argc - 1, argv + 1);
	}
	if (!strcmp(argv[1], "half"))
		return tool_main(&half_desc, argc - 1, argv + 1);
	if (!strcmp(argv[1], "cond"))
		return tool_main(&cond_desc, argc - 1, argv + 1);
	if (!strcmp(argv[1], "bcast") || !strcmp(argv[1], "mcast"))
		return bc_main(argc - 1, argv + 1, argv[1][0] == 'm');
	tool_err("weft-ops", "unknown operation '%s' (third-party, half, cond, bcast, mcast; "
		 "see --help)", argv[1]);
	return 2;
}
