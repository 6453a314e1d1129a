/* SPDX-License-Identifier: MIT */
/*
 * Shared set-up of the libweft tools.  Two-node tools: the server opens
 * its window, registers its buffer, allocates rCxts and waits for the
 * client's rendezvous hello (FIFO packets, no TCP); the client sends its
 * description to (peer node, peer window) and receives the server's.
 * With --backend sim both ends run in this process, on two simulated
 * adapters (server on node 0, client on node 1).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common.h"

#define PEER_MAGIC 0x52454550u

uint64_t tool_now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

uint8_t tool_pat(uint64_t i, uint32_t seed)
{
	uint64_t x = (i + 1) * 0x9e3779b97f4a7c15ull ^ seed;
	x ^= x >> 29;
	return (uint8_t)(x * 0xbf58476d1ce4e5b9ull >> 56);
}

void tool_pat_fill(uint8_t *p, size_t n, uint32_t seed)
{
	for (size_t i = 0; i < n; i++)
		p[i] = tool_pat(i, seed);
}

long long tool_pat_diff(const uint8_t *p, size_t n, uint32_t seed)
{
	for (size_t i = 0; i < n; i++)
		if (p[i] != tool_pat(i, seed))
			return (long long)i;
	return -1;
}

void tool_err(const char *tool, const char *fmt, ...)
{
	va_list ap;
	fprintf(stderr, "%s: error: ", tool);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

const char *tool_strerror(int r)
{
	if (r == -ESTALE)
		return "adapter recovered: window invalidated";
	if (r == -EPIPE)
		return "window fatal error: window invalidated";
	return strerror(r < 0 ? -r : r);
}

int tool_parse_size(const char *s, uint64_t *out)
{
	char *end;
	errno = 0;
	unsigned long long v = strtoull(s, &end, 0);
	if (errno || end == s)
		return -1;
	if (*end == 'k' || *end == 'K')
		v <<= 10, end++;
	else if (*end == 'm' || *end == 'M')
		v <<= 20, end++;
	else if (*end == 'g' || *end == 'G')
		v <<= 30, end++;
	if (*end)
		return -1;
	*out = v;
	return 0;
}

static void usage(const struct tool_desc *d, FILE *f)
{
	fprintf(f, "Usage: %s [options]%s\n%s\n\n", d->name,
		d->two_node ? "  (--server | --client --peer NODE)" : "", d->summary);
	fprintf(f,
		"Common options:\n"
		"  --help               this text\n"
		"  --json               machine-readable output\n"
		"  --backend B          kernel (default) or sim (in-process simulator)\n"
		"  --dev NAME           adapter (default weft0)\n"
		"  --job ID             job id / window key (default 0x7765; same on both nodes)\n"
		"  --timeout MS         rendezvous timeout (default 30000)\n");
	if (d->two_node)
		fprintf(f,
			"  --server             wait for a client\n"
			"  --client             connect to a server\n"
			"  --peer NODE          server's node id (client)\n"
			"  --peer-window W      server's window (default 0: its first window)\n"
			"  --loss PPM           sim backend: fabric loss in parts per million\n"
			"  --routes N           sim backend: routes per node pair (reordering)\n"
			"With --backend sim, server and client run in this process on two\n"
			"simulated adapters; --server/--client/--peer are not needed.\n");
	if (d->stripe)
		fprintf(f,
			"  --stripe DEV         also use DEV, a second adapter of this node (both\n"
			"                       sides): a window, rCxts and the buffer there too\n"
			"                       (sim backend: two nodes of two adapters each)\n");
	if (d->extra_help)
		fprintf(f, "%s", d->extra_help);
}

/* The rCxts each side of tool d allocates with options o. */
static unsigned int rcxt_want(const struct tool_desc *d, const struct tool_opts *o)
{
	unsigned int n = d->rcxt_count ? d->rcxt_count(o) : d->nr_rcxt;

	return n < TOOL_MAX_RCXT ? n : TOOL_MAX_RCXT;
}

/* --stripe: a window and rCxts on the second adapter.  The buffer's
 * registration through the first adapter is node-global: its PVO is valid
 * through the second adapter too (docs/driver.md, "Node-global tables"). */
static int setup_stripe(struct tool_ctx *c, const struct tool_desc *d)
{
	struct weft_win_attr wa = { .job_id = c->o.job };
	int r;

	c->win2 = weft_win_open(c->dev2, &wa, &r);
	if (!c->win2) {
		tool_err(d->name, "opening a window on the second adapter: %s", tool_strerror(r));
		return -1;
	}
	weft_win_set_retry_budget(c->win2, (uint64_t)c->o.timeout_ms * 1000000ull);
	c->mine.node2 = weft_win_node(c->win2);
	c->mine.window2 = (uint16_t)weft_win_id(c->win2);
	for (unsigned int i = 0; i < rcxt_want(d, &c->o); i++) {
		r = weft_rcxt_alloc(c->win2, &c->mine.rcxt2[i], &c->mine.key2[i]);
		if (r) {
			tool_err(d->name, "allocating an rCxt on the second adapter: %s",
				 tool_strerror(r));
			return -1;
		}
		c->mine.nr_rcxt2++;
	}
	return 0;
}

static int setup(struct tool_ctx *c, const struct tool_desc *d)
{
	int r;
	struct weft_win_attr wa = { .job_id = c->o.job };
	c->win = weft_win_open(c->dev, &wa, &r);
	if (!c->win) {
		tool_err(d->name, "opening a window: %s", tool_strerror(r));
		return -1;
	}
	/* A reliable operation that gets no completion gives up in time. */
	weft_win_set_retry_budget(c->win, (uint64_t)c->o.timeout_ms * 1000000ull);
	memset(&c->mine, 0, sizeof(c->mine));
	c->mine.magic = PEER_MAGIC;
	c->mine.node = weft_win_node(c->win);
	c->mine.window = (uint16_t)weft_win_id(c->win);
	c->mine.mode = c->o.server ? 0 : c->o.peer_mode;
	c->mine.count = c->o.server ? 0 : c->o.count;
	c->buf_len = d->buf_size ? d->buf_size(&c->o) : 0;
	if (c->buf_len) {
		c->buf = weft_dev_alloc(c->dev, c->buf_len);
		if (!c->buf) {
			tool_err(d->name, "cannot allocate %zu bytes of buffer", c->buf_len);
			return -1;
		}
		r = weft_mr_reg(c->dev, c->o.job, c->buf, c->buf_len, &c->buf_pvo, &c->buf_handle);
		if (r) {
			tool_err(d->name, "registering %zu bytes: %s", c->buf_len, tool_strerror(r));
			return -1;
		}
		c->mine.buf_pvo = c->buf_pvo;
		c->mine.buf_len = c->buf_len;
	}
	for (unsigned int i = 0; i < rcxt_want(d, &c->o); i++) {
		r = weft_rcxt_alloc(c->win, &c->mine.rcxt[i], &c->mine.key[i]);
		if (r) {
			tool_err(d->name, "allocating an rCxt: %s", tool_strerror(r));
			return -1;
		}
		c->mine.nr_rcxt++;
	}
	return c->dev2 ? setup_stripe(c, d) : 0;
}

static void teardown(struct tool_ctx *c)
{
	if (c->win2)
		weft_win_close(c->win2);
	c->win2 = NULL;
	if (c->buf_handle)
		weft_mr_dereg(c->dev, c->buf_handle);
	if (c->buf)
		weft_dev_free(c->dev, c->buf, c->buf_len);
	if (c->win)
		weft_win_close(c->win);
	c->buf = NULL;
	c->win = NULL;
	c->buf_handle = 0;
}

static int check_peer(struct tool_ctx *c, const struct tool_desc *d, size_t len)
{
	if (len != sizeof(c->peer) || c->peer.magic != PEER_MAGIC ||
	    c->peer.nr_rcxt > TOOL_MAX_RCXT || c->peer.nr_rcxt2 > TOOL_MAX_RCXT) {
		tool_err(d->name, "peer sent a malformed rendezvous description");
		return -1;
	}
	if (c->peer.nr_rcxt < rcxt_want(d, &c->o)) {
		tool_err(d->name, "the peer holds %u rCxts and this run needs %u: give both sides "
			 "the same --min-size and --depth", c->peer.nr_rcxt, rcxt_want(d, &c->o));
		return -1;
	}
	return 0;
}

static int run_server(struct tool_ctx *c, const struct tool_desc *d)
{
	if (setup(c, d))
		return 1;
	if (d->server_prepare && d->server_prepare(c))
		return 1;
	size_t len = 0;
	uint16_t pn, pw;
	int r = weft_rdv_serve(c->win, d->tag, &c->mine, sizeof(c->mine), &c->peer,
			       sizeof(c->peer), &len, &pn, &pw, c->o.timeout_ms);
	if (r) {
		tool_err(d->name, "waiting for a client on node %u window %u: %s",
			 c->mine.node, c->mine.window, tool_strerror(r));
		return 1;
	}
	if (check_peer(c, d, len))
		return 1;
	r = d->server(c);
	return r ? 1 : 0;
}

static int run_client(struct tool_ctx *c, const struct tool_desc *d)
{
	if (setup(c, d))
		return 1;
	size_t len = 0;
	int r = weft_rdv_connect(c->win, d->tag, (uint16_t)c->o.peer_node,
				 (uint16_t)c->o.peer_window, &c->mine, sizeof(c->mine), &c->peer,
				 sizeof(c->peer), &len, c->o.timeout_ms);
	if (r) {
		tool_err(d->name, "no answer from node %d window %d: %s", c->o.peer_node,
			 c->o.peer_window, tool_strerror(r));
		return 1;
	}
	if (check_peer(c, d, len))
		return 1;
	if (c->dev2 && c->peer.nr_rcxt2 < rcxt_want(d, &c->o)) {
		tool_err(d->name, "--stripe: the server has no second adapter (give --stripe there too)");
		return 1;
	}
	r = d->client(c);
	return r ? 1 : 0;
}

int tool_serve_until_bye(struct tool_ctx *c, const struct tool_desc *d)
{
	struct weft_entry e;
	for (;;) {
		int r = tool_poll_wait(c, &e, 1000);
		if (r < 0) {
			tool_err(d->name, "serving node %u window %u: %s", c->peer.node,
				 c->peer.window, tool_strerror(r));
			return r;
		}
		if (r == 0)
			continue;
		if (weft_rdv_is_bye(c->win, d->tag, &e))
			return tool_linger(c, d);
		weft_rdv_handle(c->win, d->tag, &e, &c->mine, sizeof(c->mine));
	}
}

int tool_linger(struct tool_ctx *c, const struct tool_desc *d)
{
	/* Our acknowledgement of the BYE may be lost: answer repeats until
	 * the client has been quiet for 500 ms. */
	struct weft_entry e;
	uint64_t quiet = weft_dev_now_ns(c->dev);
	while (weft_dev_now_ns(c->dev) - quiet < 500000000ull) {
		int r = weft_win_poll(c->win, &e);
		if (r < 0)
			return 0;
		if (r == 0) {
			weft_win_wait(c->win, 100);
			continue;
		}
		if (weft_rdv_is_bye(c->win, d->tag, &e))
			quiet = weft_dev_now_ns(c->dev);
	}
	return 0;
}

void tool_bye(struct tool_ctx *c, const struct tool_desc *d)
{
	uint64_t st, rc, sc;
	/* Nothing can be said through a window the adapter invalidated. */
	if (weft_win_state(c->win, &st, &rc, &sc) == 0 && st != 1 /* valid */)
		return;
	/* For as long as any other exchange may take: a BYE lost for
	 * more than a few seconds under load left the server waiting. */
	int r = weft_rdv_bye(c->win, d->tag, c->peer.node, c->peer.window, c->o.timeout_ms);
	if (r)
		tool_err(d->name, "server did not acknowledge the end: %s", tool_strerror(r));
}

int tool_mode_option(struct tool_opts *o, const char *tool, const char *v, const char *a,
		     const char *b)
{
	if (strcmp(v, a) && strcmp(v, b) && strcmp(v, "both")) {
		tool_err(tool, "--mode must be %s, %s or both", a, b);
		return -1;
	}
	o->mode = v;
	return 0;
}

int tool_poll_wait(struct tool_ctx *c, struct weft_entry *e, int wait_ms)
{
	int r = weft_win_poll(c->win, e);
	if (r != 0)
		return r;
	r = weft_win_wait(c->win, wait_ms);
	return r < 0 ? r : 0;
}

int tool_rop_run(struct tool_ctx *c, struct weft_rop *rop, const struct tool_desc *d)
{
	int r = weft_win_rop_post(c->win, rop);
	if (r)
		return r;
	/* Until the op's own WEFT_ENT_ROP entry is taken: an op that
	 * finishes inside a wait (a completion taken while its retry was
	 * queued) leaves that entry for a later poll, which must not meet it
	 * once rop's storage (often the caller's stack) is gone.  A poll that
	 * finds nothing has no entry left to give. */
	struct weft_entry e;
	for (;;) {
		r = weft_win_poll(c->win, &e);
		if (r < 0)
			return r;
		if (r == 0) {
			if (rop->state != WEFT_ROP_POSTED)
				break;
			r = weft_win_wait(c->win, 1000);
			if (r < 0)
				return r;
			continue;
		}
		if (e.type == WEFT_ENT_PACKET)
			weft_rdv_handle(c->win, d->tag, &e, &c->mine, sizeof(c->mine));
		else if (e.type == WEFT_ENT_ROP && e.rop == rop)
			break;
	}
	return rop->state == WEFT_ROP_DONE ? 0 : (rop->error ? rop->error : -EIO);
}

struct sim_thread {
	struct tool_ctx c;
	const struct tool_desc *d;
	int rc;
};

static void *server_thread(void *arg)
{
	struct sim_thread *t = arg;
	t->rc = run_server(&t->c, t->d);
	teardown(&t->c);
	weft_dev_close(t->c.dev2);
	weft_dev_close(t->c.dev);
	t->c.dev = NULL;
	return NULL;
}

int tool_int_option(const char *tool, const struct option *opt, const char *v, long hi,
		    long *out)
{
	char *end;

	errno = 0;
	*out = strtol(v, &end, 0);
	if (errno || end == v || *end || *out < 0 || *out > hi) {
		tool_err(tool, "--%s: bad value '%s' (0..%ld)", opt->name, v, hi);
		return -1;
	}
	return 0;
}

int tool_getopt(const char *tool, int argc, char **argv, const struct option *opts,
		int (*fn)(void *arg, const struct option *opt, const char *val), void *arg)
{
	int code, idx, r;

	opterr = 0;
	optind = 1;
	while ((code = getopt_long(argc, argv, ":h", opts, &idx)) != -1) {
		const struct option *opt = NULL;

		if (code == '?' || code == ':') {
			tool_err(tool, "%s %s (see --help)",
				 code == '?' ? "unknown option" : "missing value for",
				 argv[optind - 1]);
			return 2;
		}
		/* -h has no long index: find it by its code. */
		for (const struct option *o = opts; o->name && !opt; o++)
			if (o->val == code && (code != 'h' || !strcmp(o->name, "help")))
				opt = o;
		r = fn(arg, opt, optarg);
		if (r)
			return r;
	}
	if (optind < argc) {
		tool_err(tool, "unexpected argument '%s' (see --help)", argv[optind]);
		return 2;
	}
	return 0;
}

/* ---- tool_main ------------------------------------------------------------ */

enum {
	OPT_HELP = 'h',
	OPT_JSON = 0x100, OPT_SERVER, OPT_CLIENT, OPT_BACKEND, OPT_DEV, OPT_STRIPE,
	OPT_JOB, OPT_PEER, OPT_PEER_WINDOW, OPT_TIMEOUT, OPT_LOSS, OPT_ROUTES,
};

static const struct option common_options[] = {
	{ "help", no_argument, NULL, OPT_HELP },
	{ "json", no_argument, NULL, OPT_JSON },
	{ "server", no_argument, NULL, OPT_SERVER },
	{ "client", no_argument, NULL, OPT_CLIENT },
	{ "backend", required_argument, NULL, OPT_BACKEND },
	{ "dev", required_argument, NULL, OPT_DEV },
	{ "stripe", required_argument, NULL, OPT_STRIPE },
	{ "job", required_argument, NULL, OPT_JOB },
	{ "peer", required_argument, NULL, OPT_PEER },
	{ "peer-window", required_argument, NULL, OPT_PEER_WINDOW },
	{ "timeout", required_argument, NULL, OPT_TIMEOUT },
	{ "loss", required_argument, NULL, OPT_LOSS },
	{ "routes", required_argument, NULL, OPT_ROUTES },
};
#define NR_COMMON (sizeof(common_options) / sizeof(common_options[0]))
#define TOOL_MAX_OPTIONS 32u

struct parse_state {
	const struct tool_desc *d;
	struct tool_opts *o;
};

/* One option of tool_main's table: 0, 1 (--help printed) or 2. */
static int common_option(void *arg, const struct option *opt, const char *v)
{
	struct parse_state *ps = arg;
	const struct tool_desc *d = ps->d;
	struct tool_opts *o = ps->o;
	/* The numeric options and their upper bounds. */
	static const long hi[] = {
		[OPT_JOB - OPT_JOB] = 0x7fffffffL, [OPT_PEER - OPT_JOB] = 0xEFFF,
		[OPT_PEER_WINDOW - OPT_JOB] = 127, [OPT_TIMEOUT - OPT_JOB] = 0x7fffffffL,
		[OPT_LOSS - OPT_JOB] = 1000000, [OPT_ROUTES - OPT_JOB] = 16,
	};
	long n = 0;

	if (opt->val >= OPT_JOB && opt->val <= OPT_ROUTES &&
	    tool_int_option(d->name, opt, v, hi[opt->val - OPT_JOB], &n))
		return 2;
	switch (opt->val) {
	case OPT_HELP:
		usage(d, stdout);
		return 1;
	case OPT_JSON:
		o->json = true;
		break;
	case OPT_SERVER:
		o->server = true;
		break;
	case OPT_CLIENT:
		o->client = true;
		break;
	case OPT_BACKEND:
		if (strcmp(v, "sim") && strcmp(v, "kernel")) {
			tool_err(d->name, "--backend must be kernel or sim, not '%s'", v);
			return 2;
		}
		o->sim = !strcmp(v, "sim");
		break;
	case OPT_DEV:
		o->dev = v;
		break;
	case OPT_STRIPE:
		o->stripe_dev = v;
		break;
	case OPT_JOB:
		o->job = (uint32_t)n;
		break;
	case OPT_PEER:
		o->peer_node = (int)n;
		break;
	case OPT_PEER_WINDOW:
		o->peer_window = (int)n;
		break;
	case OPT_TIMEOUT:
		o->timeout_ms = (int)n;
		break;
	case OPT_LOSS:
		o->loss_ppm = (uint32_t)n;
		break;
	case OPT_ROUTES:
		o->routes = (uint32_t)n;
		break;
	default:
		return d->option(o, opt, v) ? 2 : 0;
	}
	return 0;
}

/* The defaults of every option (tools with their own parser start here). */
void tool_opts_init(const struct tool_desc *d, struct tool_opts *o)
{
	*o = (struct tool_opts){
		.dev = "weft0", .job = 0x7765, .peer_node = -1, .peer_window = 0,
		.timeout_ms = 30000, .routes = 1,
		.min_size = d->def_min_size, .max_size = d->def_max_size,
		.iters = d->def_iters, .depth = d->def_depth, .mode = d->def_mode,
		.rel_timeout_ns = 5000000,
	};
}

/* The options of d into *o: 0, 1 (--help printed: exit 0) or 2 (usage). */
static int parse_options(const struct tool_desc *d, int argc, char **argv,
			 struct tool_opts *o)
{
	struct option all[NR_COMMON + TOOL_MAX_OPTIONS + 1];
	struct parse_state ps = { .d = d, .o = o };
	unsigned int n = 0;

	tool_opts_init(d, o);
	for (unsigned int i = 0; i < NR_COMMON; i++)
		if (d->stripe || common_options[i].val != OPT_STRIPE)
			all[n++] = common_options[i];
	for (const struct option *t = d->options; t && t->name && n < NR_COMMON + TOOL_MAX_OPTIONS;
	     t++)
		all[n++] = *t;
	memset(&all[n], 0, sizeof(all[n]));
	return tool_getopt(d->name, argc, argv, all, common_option, &ps);
}

/* One-node tools: d->single on the adapter (or a one-node sim). */
static int run_single(const struct tool_desc *d, const struct tool_opts *o)
{
	struct weft_simnet *net = NULL;
	struct tool_ctx c = { .o = *o, .out = stdout };
	char err[256];
	int rc;

	if (o->sim) {
		struct weft_simnet_attr na = { .nodes = 1, .seed = 1 };

		net = weft_simnet_new(&na, err, sizeof(err));
		if (!net) {
			tool_err(d->name, "sim backend: %s", err);
			return 1;
		}
		c.dev = weft_simnet_open(net, 0, err, sizeof(err));
	} else {
		c.dev = weft_dev_open(o->dev, err, sizeof(err));
	}
	if (!c.dev) {
		tool_err(d->name, "%s", err);
		weft_simnet_free(net);
		return 1;
	}
	rc = d->single(&c) ? 1 : 0;
	teardown(&c);
	weft_dev_close(c.dev);
	weft_simnet_free(net);
	return rc;
}

/* Two-node tools on the sim backend: the server in a thread on node 0, the
 * client here on node 1.  With --stripe, two nodes of two adapters each,
 * indexes 0, 1 (server) and 2, 3 (client). */
static int run_sim_pair(const struct tool_desc *d, const struct tool_opts *o)
{
	unsigned int per = o->stripe_dev ? 2 : 1;
	struct weft_simnet_attr na = { .nodes = 2 * per, .adapters = per, .seed = 42,
				       .drop_ppm = o->loss_ppm,
				       .routes = o->routes, .delay_ns = 1000,
				       .jitter_ns = o->routes > 1 ? 20000 : 0,
				       .mem_size = 2 * (d->buf_size ? d->buf_size(o) : 0) +
						   (64ull << 20) };
	struct tool_ctx c = { .o = *o, .out = stdout };
	struct sim_thread st;
	char err[256];
	pthread_t th;
	int rc;

	struct weft_simnet *net = weft_simnet_new(&na, err, sizeof(err));
	if (!net) {
		tool_err(d->name, "sim backend: %s", err);
		return 1;
	}
	memset(&st, 0, sizeof(st));
	st.d = d;
	st.c.o = *o;
	st.c.server = true;
	st.c.out = stdout;
	st.c.dev = weft_simnet_open(net, 0, err, sizeof(err));
	c.dev = weft_simnet_open(net, per, err, sizeof(err));
	if (per == 2) {
		st.c.dev2 = weft_simnet_open(net, 1, err, sizeof(err));
		c.dev2 = weft_simnet_open(net, 3, err, sizeof(err));
	}
	if (!st.c.dev || !c.dev || (per == 2 && (!st.c.dev2 || !c.dev2))) {
		tool_err(d->name, "sim backend: %s", err);
		weft_dev_close(st.c.dev2);
		weft_dev_close(c.dev2);
		weft_dev_close(st.c.dev);
		weft_dev_close(c.dev);
		weft_simnet_free(net);
		return 1;
	}
	if (pthread_create(&th, NULL, server_thread, &st)) {
		tool_err(d->name, "cannot start the server thread");
		return 1;
	}
	c.o.peer_node = 0;
	rc = run_client(&c, d);
	teardown(&c);
	weft_dev_close(c.dev2);
	weft_dev_close(c.dev);
	pthread_join(th, NULL);
	weft_simnet_free(net);
	return rc ? rc : st.rc;
}

/* Two-node tools on the kernel backend: this side's role. */
static int run_node(const struct tool_desc *d, const struct tool_opts *o)
{
	struct tool_ctx c = { .o = *o, .out = stdout, .server = o->server };
	char err[256];
	int rc;

	if (o->server == o->client) {
		tool_err(d->name, "give exactly one of --server or --client --peer NODE");
		return 2;
	}
	if (o->client && o->peer_node < 0) {
		tool_err(d->name, "--client needs --peer NODE");
		return 2;
	}
	c.dev = weft_dev_open(o->dev, err, sizeof(err));
	if (!c.dev) {
		tool_err(d->name, "%s", err);
		return 1;
	}
	if (o->stripe_dev) {
		c.dev2 = weft_dev_open(o->stripe_dev, err, sizeof(err));
		if (!c.dev2) {
			tool_err(d->name, "--stripe: %s", err);
			weft_dev_close(c.dev);
			return 1;
		}
	}
	rc = o->server ? run_server(&c, d) : run_client(&c, d);
	teardown(&c);
	weft_dev_close(c.dev2);
	weft_dev_close(c.dev);
	return rc;
}

int tool_run(const struct tool_desc *d, const struct tool_opts *o)
{
	if (o->job == 0) {
		tool_err(d->name, "--job must be nonzero");
		return 2;
	}
	if (!d->two_node)
		return run_single(d, o);
	return o->sim ? run_sim_pair(d, o) : run_node(d, o);
}

int tool_main(const struct tool_desc *d, int argc, char **argv)
{
	struct tool_opts o;
	int r = parse_options(d, argc, argv, &o);

	if (r)
		return r == 1 ? 0 : 2;
	return tool_run(d, &o);
}
